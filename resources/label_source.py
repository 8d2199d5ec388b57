"""The label-file directory and the rubric as a resource."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from goldenset import settings
from goldenset.labelling.rubric import Rubric, load_rubric
from goldenset.logfiles import list_partitions


class LabelSource(dg.ConfigurableResource):
    """LABELS/dt=YYYY-MM-DD/*.jsonl[.gz] and the rubric they are checked against (contract 7)."""

    path: str = Field(
        default_factory=lambda: str(settings.default_path("labels")),
        description="LABELS directory (GOLDENSET_LABELS, else GOLDENSET_HOME/labels); missing means no labels yet.",
    )
    rubric_path: str = Field(
        default_factory=lambda: str(settings.default_path("rubric")),
        description="Rubric YAML (GOLDENSET_RUBRIC, else GOLDENSET_HOME/rubric.yaml).",
    )

    @property
    def root(self) -> Path:
        return Path(self.path)

    def exists(self) -> bool:
        return self.root.is_dir()

    def partitions(self) -> list[str]:
        return list_partitions(self.root) if self.exists() else []

    def rubric(self) -> Rubric:
        """The rubric, validated and closed (RubricError naming the file otherwise)."""
        return load_rubric(self.rubric_path).require_closed()

    def rubric_text(self, rubric: Rubric) -> str | None:
        """The rubric file's text, if its bytes are still those `rubric` was read from."""
        import hashlib

        try:
            raw = Path(self.rubric_path).read_bytes()
        except OSError:
            return None
        return raw.decode("utf-8") if hashlib.sha256(raw).hexdigest() == rubric.content_sha256 else None
