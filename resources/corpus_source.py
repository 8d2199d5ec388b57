"""The corpus snapshot file as a resource."""

from __future__ import annotations

import dagster as dg

from goldenset.corpus import CorpusSnapshot, read_corpus, stat_signature
from goldenset.settings import DEFAULT_CORPUS


class CorpusSource(dg.ConfigurableResource):
    """The file that says what the index holds now (GOLDENSET_CORPUS)."""

    path: str = DEFAULT_CORPUS

    def read(self) -> CorpusSnapshot:
        return read_corpus(self.path)

    def stat(self) -> tuple[int, float] | None:
        return stat_signature(self.path)
