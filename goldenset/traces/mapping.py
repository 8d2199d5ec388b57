"""The mapping file: how a team's spans and annotations become contract lines (contract section 14).

A YAML file validated by pydantic; every field has a default, so no file at all is
the mapping below. A bad file is one line naming the field and the fix, never a
traceback. Decisions:

- `verdicts.kinds` lists the annotator kinds whose annotations are verdicts; `LLM`
  may not be listed there: an LLM's opinion becomes a judge label line (section 8)
  through `judge`, or nothing, never silently an agent's verdict.
- A label mapped to nothing and no score rule matching is `unknown_label` (a reject),
  so a new label in the annotation tool is seen rather than dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from goldenset.errors import InputError
from goldenset.labelling.annotator import ANNOTATOR_PATTERN, is_annotator_name

Verdict = Literal["helped", "noise", "wrong"]
AnnotatorKind = Literal["HUMAN", "CODE", "LLM"]


def _always_values() -> list[str | int | bool]:
    return [True, "true", "always"]


def _default_labels() -> dict[str, Verdict]:
    return {
        "relevant": "helped",
        "helped": "helped",
        "irrelevant": "noise",
        "noise": "noise",
        "wrong": "wrong",
        "contradicted": "wrong",
    }


def _human() -> list[AnnotatorKind]:
    return ["HUMAN"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectRule(_Strict):
    """Where a serve's project comes from: a span attribute, else a resource attribute, else `default`."""

    attribute: str = Field(default="service.name", min_length=1)
    default: str | None = Field(default=None, min_length=1)


class AlwaysRule(_Strict):
    """Documents injected without ranking: metadata `key` holding one of `values` marks channel `always`."""

    key: str = Field(min_length=1)
    values: list[str | int | bool] = Field(default_factory=_always_values, min_length=1)


class ScoreRule(_Strict):
    """An annotation score >= `min` (the first rule that matches, in order) gives `verdict`."""

    min: float
    verdict: Verdict


class VerdictRules(_Strict):
    """Document annotations to verdicts."""

    names: list[str] = Field(default_factory=list, description="annotation names read; empty: every name")
    labels: dict[str, Verdict] = Field(default_factory=_default_labels)
    scores: list[ScoreRule] = Field(default_factory=list)
    kinds: list[AnnotatorKind] = Field(default_factory=_human, min_length=1)

    @field_validator("kinds")
    @classmethod
    def _no_llm(cls, kinds: list[str]) -> list[str]:
        if "LLM" in kinds:
            raise ValueError("LLM annotations are never verdicts; import them as judge label lines with `judge:`")
        return kinds


class JudgeRule(_Strict):
    """LLM document annotations to judge label lines (contract 8.3): label map and the rubric's names."""

    rubric: str = Field(min_length=1)
    annotator: str = Field(min_length=1)
    labels: dict[str, str] = Field(min_length=1, description="annotation label -> rubric label")
    decided_by: dict[str, str] = Field(min_length=1, description="rubric label -> the dimension that decides it")
    names: list[str] = Field(default_factory=list)

    @field_validator("annotator")
    @classmethod
    def _annotator_name(cls, v: str) -> str:
        if not is_annotator_name(v):
            raise ValueError(f"annotator must match {ANNOTATOR_PATTERN}, got {v!r}")
        return v

    @model_validator(mode="after")
    def _every_label_decided(self) -> JudgeRule:
        missing = sorted(set(self.labels.values()) - set(self.decided_by))
        if missing:
            raise ValueError(f"decided_by names no dimension for rubric label {missing[0]!r}")
        return self


class Mapping(_Strict):
    """The whole mapping file."""

    project: ProjectRule = ProjectRule()
    session_attribute: str = Field(default="session.id", min_length=1)
    doc_version_key: str = Field(
        default="version", min_length=1, description="document metadata key holding its version"
    )
    always: AlwaysRule | None = None
    verdicts: VerdictRules = VerdictRules()
    judge: JudgeRule | None = None


def load_mapping(path: Path | None) -> Mapping:
    """The mapping in `path` (YAML), or the defaults when None; InputError with one line when invalid."""
    if path is None:
        return Mapping()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"mapping file {path} cannot be read ({exc.strerror or exc}); check the path") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise InputError(f"mapping file {path} is not valid YAML{at}; fix the syntax") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(
            f"mapping file {path} must hold a mapping of keys (project, verdicts, ...), not a list or text"
        )
    try:
        return Mapping.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown key; see the mapping reference for the keys allowed"
        raise InputError(f"mapping file {path}: {where}: {msg}") from None
