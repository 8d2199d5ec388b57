"""Scores that stand in for a person: the scorer protocol shared by scorers, the judge and calibration.

A scorer is any object with `name` and `version` (strings) and
`score(query, passage)` returning a float or a `Score`, raising on failure.
Optional: `config() -> dict` (part of the cache key), `prepare()` (slow set-up,
run once before the first timed call) and `reads_corpus` (True when the score
depends on the corpus snapshot, so the corpus fingerprint joins the cache key).

Three outcomes are kept apart and never turned into one another: a score; an
*invalid* answer (`InvalidScore`: the scorer answered, but not in the asked
shape, e.g. a judge's hallucinated span); an *error* (anything else raised, a
timeout, a number that is not finite). Neither of the last two is ever scored 0.

Modules: `scorers` (built-ins, plug-ins, the score cache, `score_pairs`),
`pairs` (what is scored, read from the warehouse), `judge` (the LLM judge
client and its answer checks), `calibrate` (cutoffs, band, bootstrap, slices,
holdout, repeats: the arithmetic), `report` (the `--json` object), `plot` (the
PNG), `policy` (the manifest and `--check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from goldenset.errors import GoldensetError


@dataclass(frozen=True)
class Score:
    """One score with the optional fields a richer scorer gives (a judge's rationale and span)."""

    value: float
    label: str | None = None
    rationale: str | None = None
    span: str | None = None


class ScorerError(GoldensetError):
    """A scorer could not answer (transport failure after retries, bad set-up); an *error*, never a 0."""


class InvalidScore(GoldensetError):
    """A scorer answered, but the answer breaks its contract (8.3's reasons); kept apart from errors."""

    def __init__(self, reason: str, detail: str = "", raw: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.raw = raw


@runtime_checkable
class Scorer(Protocol):
    """What `--scorer` resolves to: a name, a version and `score(query, passage)`."""

    name: str
    version: str

    def score(self, query: str, passage: str) -> float | Score: ...


__all__ = ["InvalidScore", "Score", "Scorer", "ScorerError"]
