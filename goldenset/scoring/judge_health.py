"""Judge health over time (contract 13): each `judge label` run's figures, the gate's figures, the warnings.

Agreement must be measured on a random sample (the audit) and re-checked at every build, not
certified once, and the rate of unsupported citations (a supporting span that is not in the
passage) is the most useful health signal. So:

- every `judge label` run records its figures in `judge_runs` (answers by kind through
  the invalid reasons, the hallucinated-span rate, transport errors, the scorer version:
  model and prompt version), whether or not it ends incomplete;
- the build's gate measures each judge on the audited queries' pairs (goldenset.labelling.judge_gate:
  kappa with its bootstrap interval over queries, the prevalence of relevant pairs, Gwet's
  AC1), stored per build in `build_judges`;
- `judge_health` turns the latest build's gate and the latest two runs of each judge into
  warnings, which `goldenset status` prints and the `judge_health` asset check reports.

Decisions
---------
- **Incomplete.** A run is incomplete when (invalid answers + transport errors) / rows
  asked exceeds `max_unusable` (default 0.5; strictly above, so exactly half is
  complete). A run that asked nothing is complete. The usable lines are written and the
  run recorded before the command exits 6: it fails on policy, never on missing data.
- **Warnings**, each one line naming the judge: the gate read a sample that is not random
  (no pair of an audited query carries its label: it read the pairs it shares with humans); kappa's lower
  bound below the gate's minimum (only when the sample holds at least the gate's minimum
  pairs; fewer is the gate's ordinary "not enough pairs yet", which status already names,
  with every figure); the latest run's
  hallucinated-span rate above `max_hallucinated` (default 0.05, strictly above); its
  change since the judge's previous run above `max_change` in absolute value (default
  0.05, strictly above). Rates compare exactly as stored (doubles).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from goldenset.connection import Connection
from goldenset.errors import JudgeRunIncomplete, UsageError
from goldenset.labelling.judge_gate import GATE_JSON_KEYS, SAMPLE_SHARED, GateRow, gate_rows
from goldenset.warehouse import transaction

DEFAULT_MAX_UNUSABLE = 0.5
DEFAULT_MAX_HALLUCINATED = 0.05
DEFAULT_MAX_CHANGE = 0.05


def check_share(value: float, option: str) -> float:
    """A share option in [0, 1]; UsageError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise UsageError(f"{option} must be a share between 0 and 1, got {value!r}")
    return float(value)


def unusable_share(scored: int, invalid: int, errors: int) -> float:
    """(invalid + errors) / scored; 0 when nothing was asked."""
    return (invalid + errors) / scored if scored else 0.0


@dataclass(frozen=True)
class JudgeRun:
    """One recorded `judge label` run."""

    run_id: int
    annotator: str
    started_at: datetime
    finished_at: datetime
    scorer_version: str
    scored: int
    answers: int
    labels_written: int
    invalid: dict[str, int]
    errors: int
    hallucinated_span_rate: float
    unusable_share: float
    incomplete: bool


def record_run(
    con: Connection,
    report: Any,
    *,
    started_at: datetime,
    finished_at: datetime,
    scorer_version: str,
    max_unusable: float = DEFAULT_MAX_UNUSABLE,
) -> JudgeRun:
    """Store a `judge label` report (goldenset.scoring.judge_label.JudgeLabelReport) as a `judge_runs` row."""
    invalid = dict(report.invalid)
    share = unusable_share(report.scored, sum(invalid.values()), report.errors)
    with transaction(con):
        run_id = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM judge_runs").fetchall()[0][0]
        run = JudgeRun(
            run_id=int(run_id),
            annotator=report.annotator,
            started_at=started_at,
            finished_at=finished_at,
            scorer_version=scorer_version,
            scored=report.scored,
            answers=report.answers,
            labels_written=report.labels_written,
            invalid=invalid,
            errors=report.errors,
            hallucinated_span_rate=report.hallucinated_span_share,
            unusable_share=share,
            incomplete=share > max_unusable,
        )
        con.execute(
            "INSERT INTO judge_runs (run_id, annotator, started_at, finished_at, scorer_version, scored, answers, "
            "labels_written, invalid, errors, hallucinated_span_rate, unusable_share, incomplete) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run.run_id,
                run.annotator,
                run.started_at,
                run.finished_at,
                run.scorer_version,
                run.scored,
                run.answers,
                run.labels_written,
                json.dumps(run.invalid),
                run.errors,
                run.hallucinated_span_rate,
                run.unusable_share,
                run.incomplete,
            ],
        )
    return run


def raise_if_incomplete(run: JudgeRun, max_unusable: float = DEFAULT_MAX_UNUSABLE) -> None:
    """JudgeRunIncomplete (exit 6) when the run's unusable share is above `max_unusable`."""
    if run.unusable_share > max_unusable:
        bad = sum(run.invalid.values()) + run.errors
        raise JudgeRunIncomplete(
            f"judge run {run.run_id} of {run.annotator} is incomplete: {bad} of {run.scored} answers unusable "
            f"({run.unusable_share:.1%} > {max_unusable:.0%}: {sum(run.invalid.values())} invalid, {run.errors} "
            f"transport errors); {run.labels_written} label lines were written. Check the judge (model, prompt, "
            "endpoint) and run `goldenset judge label` again"
        )


@dataclass
class JudgeHealth:
    """One judge's health: its latest runs, the latest build's gate, and the warnings."""

    annotator: str
    runs: int = 0
    latest_run: int | None = None
    scorer_version: str | None = None
    hallucinated_span_rate: float | None = None
    previous_rate: float | None = None
    gate: GateRow | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def rate_change(self) -> float | None:
        if self.hallucinated_span_rate is None or self.previous_rate is None:
            return None
        return self.hallucinated_span_rate - self.previous_rate

    @property
    def held_back(self) -> bool | None:
        return None if self.gate is None else not self.gate.passed

    def to_json(self) -> dict[str, Any]:
        gate = self.gate.to_json() if self.gate is not None else dict.fromkeys(GATE_JSON_KEYS)
        return {
            "annotator": self.annotator,
            "runs": self.runs,
            "latest_run": self.latest_run,
            "scorer_version": self.scorer_version,
            "hallucinated_span_rate": _r(self.hallucinated_span_rate),
            "previous_rate": _r(self.previous_rate),
            "rate_change": _r(self.rate_change),
            **gate,
            "held_back": self.held_back,
            "warnings": list(self.warnings),
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def judge_health(
    con: Connection,
    *,
    max_hallucinated: float = DEFAULT_MAX_HALLUCINATED,
    max_change: float = DEFAULT_MAX_CHANGE,
) -> list[JudgeHealth]:
    """Every judge with a recorded run or a gate row in the latest build, by annotator, with its warnings."""
    out: dict[str, JudgeHealth] = {}
    runs = con.execute(
        "SELECT annotator, run_id, scorer_version, hallucinated_span_rate, "
        "row_number() OVER (PARTITION BY annotator ORDER BY run_id DESC) AS back, "
        "count(*) OVER (PARTITION BY annotator) AS n FROM judge_runs QUALIFY back <= 2 ORDER BY annotator, run_id DESC"
    ).fetchall()
    for annotator, run_id, version, rate, back, n in runs:
        h = out.setdefault(annotator, JudgeHealth(annotator, runs=int(n)))
        if back == 1:
            h.latest_run, h.scorer_version, h.hallucinated_span_rate = int(run_id), version, float(rate)
        else:
            h.previous_rate = float(rate)
    build = con.execute("SELECT labels_build_id FROM golden_builds ORDER BY build_id DESC LIMIT 1").fetchone()
    for row in gate_rows(con, build[0]) if build is not None else []:
        out.setdefault(row.annotator, JudgeHealth(row.annotator)).gate = row
    for h in out.values():
        h.warnings = _warnings(h, max_hallucinated, max_change)
    return [out[a] for a in sorted(out)]


def _warnings(h: JudgeHealth, max_hallucinated: float, max_change: float) -> list[str]:
    w = []
    g = h.gate
    if g is not None and g.sample == SAMPLE_SHARED and g.n:
        why = (
            "no audit drawn yet"
            if not g.audits
            else "none of its labels is on a pair of an audited query yet (at the human label's version)"
        )
        what = (
            "draw one (goldenset pool --audit 40) and label its pairs"
            if not g.audits
            else "label the audit's pairs, and let the judge label them (goldenset judge label)"
        )
        w.append(
            f"judge {h.annotator}: {why}, so the gate read the {g.n} pairs it shares with humans "
            f"({g.queries} queries), not a random sample; {what}"
        )
    if g is not None and not g.passed and g.n >= g.min_pairs:
        if g.sample is None:  # a build from before contract v5: its point kappa decided
            bound = " is below"
        else:
            bound = ": its lower bound is below" if g.kappa_lo is not None else ": it has no interval to clear"
        w.append(
            f"judge {h.annotator}: {g.measured()}{bound} the gate's {g.min_kappa:g}; its labels are held back "
            "from the golden set"
        )
    if h.hallucinated_span_rate is not None and h.hallucinated_span_rate > max_hallucinated:
        w.append(
            f"judge {h.annotator}: {h.hallucinated_span_rate:.1%} hallucinated spans in run {h.latest_run} "
            f"(above {max_hallucinated:.0%})"
        )
    change = h.rate_change
    if change is not None and abs(change) > max_change:
        w.append(
            f"judge {h.annotator}: hallucinated-span rate moved {change:+.1%} since its previous run "
            f"({h.previous_rate:.1%} to {h.hallucinated_span_rate:.1%}; more than {max_change:.0%})"
        )
    return w
