"""The label-file directory and the rubric as a resource."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from goldenset import settings
from goldenset.labelling.rubric_set import RubricSet, load_rubrics
from goldenset.logfiles import list_partitions
from goldenset_dagster.resources.stamped import StampedResource


class LabelSource(StampedResource):
    """LABELS/dt=YYYY-MM-DD/*.jsonl[.gz] and the rubric they are checked against (contract 7)."""

    path: str = Field(
        default_factory=lambda: str(settings.default_path("labels")),
        description="LABELS directory (GOLDENSET_LABELS, else GOLDENSET_HOME/labels); missing means no labels yet.",
    )
    rubric_path: str = Field(
        default_factory=lambda: str(settings.default_path("rubric")),
        description="Rubric YAML file or folder of them (GOLDENSET_RUBRIC, else GOLDENSET_HOME/rubric.yaml).",
    )

    @property
    def root(self) -> Path:
        return Path(self.path)

    def exists(self) -> bool:
        return self.root.is_dir()

    def partitions(self) -> list[str]:
        return list_partitions(self.root) if self.exists() else []

    def rubric(self) -> RubricSet:
        """The rubric file, or the folder's rubrics, validated and closed (RubricError naming the file otherwise)."""
        return load_rubrics(self.rubric_path).require_closed()

    def rubric_text(self, rubric: RubricSet) -> str | None:
        """What a build records of the rubrics (a file's text, a folder's record), if still what `rubric` read."""
        from goldenset.errors import GoldensetError

        try:
            now = load_rubrics(self.rubric_path)
        except GoldensetError:
            return None
        return now.content if now.content_sha256 == rubric.content_sha256 else None
