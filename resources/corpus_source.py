"""The corpus snapshot file as a resource."""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.corpus import CorpusSnapshot, read_corpus, stat_signature


class CorpusSource(dg.ConfigurableResource):
    """The file that says what the index holds now (GOLDENSET_CORPUS, else GOLDENSET_HOME/corpus.jsonl)."""

    path: str = Field(
        default_factory=lambda: str(settings.default_path("corpus")),
        description="Corpus snapshot: .jsonl, .jsonl.gz or .parquet, one document a row.",
    )

    def read(self) -> CorpusSnapshot:
        return read_corpus(self.path)

    def stat(self) -> tuple[int, float] | None:
        return stat_signature(self.path)
