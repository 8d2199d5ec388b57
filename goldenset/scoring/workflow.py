"""Calibrating a scorer on the latest build, and re-checking a stored policy (what `goldenset calibrate` runs).

`calibrate_latest` reads the latest build's pairs (pairs.golden_pairs), builds the
scorer (`--scorer`), scores every pair through the score cache, and calibrates
(calibrate.calibrate). `check_latest` rebuilds a policy's scorer from the policy
itself, scores today's pairs of the same kind, and re-measures the stored cutoffs
(policy.check_policy).

Decisions:

- Order of refusals (section 6: the lowest non-zero exit code wins): no build (1),
  no pair of the kind asked for (1, "nothing to calibrate"), then the scorer is
  built (an unknown one is 2; one that cannot start, 1), then scoring; no pair with
  a score is 1, "nothing to calibrate".
- The corpus a scorer reads (bm25's statistics, a plug-in's context) is the latest
  build's own snapshot, read back from the warehouse: the one its pairs were
  chosen on, whatever the corpus file holds now. So `calibrate` takes no --corpus.
- Error pairs are the pairs whose passage no loaded snapshot holds, the scorer's
  errors and its invalid answers (reason `invalid answer: <reason>`), sorted by
  (query_id, doc_id).
- The judge is told the rubric's task and as_of (the same prompt `judge label`
  sends); a judge policy re-checks with the url, model, task and as_of it stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from goldenset import progress
from goldenset.build_record import load_build
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot
from goldenset.errors import GoldensetError, InputError, UsageError
from goldenset.scoring.calibrate import Calibration, Costs, ErrorPair, calibrate
from goldenset.scoring.judge import JudgeSettings
from goldenset.scoring.pairs import golden_pairs, project_traffic
from goldenset.scoring.policy import PolicyCheck, check_policy, check_to_json, policy_manifest, policy_scorer
from goldenset.scoring.scorers import DEFAULT_TIMEOUT, ScorerContext, ScoreRun, build_scorer, score_pairs

Progress = Callable[[int, int], None]
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class CalibrationRequest:
    """What `goldenset calibrate --scorer S ...` asks for."""

    scorer: str
    against: str = "human"
    costs: Costs = field(default_factory=Costs)
    bootstrap_n: int | None = None
    seed: int = 0
    by_project: bool = False
    holdout_after: date | None = None
    repeats: int = 1
    timeout: float = DEFAULT_TIMEOUT
    options: Mapping[str, Any] = field(default_factory=dict)
    judge: JudgeSettings | None = None


@dataclass(frozen=True)
class CalibrationOutcome:
    """A calibration with what it was made of: the score run and the build it was chosen on."""

    calibration: Calibration
    run: ScoreRun
    build_id: int

    @property
    def config(self) -> dict[str, Any]:
        """The scorer's configuration, as the cache key holds it."""
        return json.loads(self.run.key.config)

    def manifest(self, created_at: datetime | None = None) -> dict[str, Any]:
        """The policy manifest of this calibration."""
        return policy_manifest(self.calibration, config=self.config, build_id=self.build_id, created_at=created_at)


@dataclass(frozen=True)
class PolicyRecheck:
    """A stored policy re-measured on the latest build's pairs."""

    check: PolicyCheck
    policy: Mapping[str, Any]
    run: ScoreRun
    build_id: int
    errors: tuple[ErrorPair, ...]

    def to_json(self) -> dict[str, Any]:
        """`calibrate --check POLICY --json`: whether it holds, on what, each test, today's rates at its cutoffs."""
        body = check_to_json(self.check)
        return {
            "holds": body.pop("holds"),
            "scorer": self.policy["scorer"],
            "version": self.policy["version"],
            "scorer_version": self.run.key.version,
            "against": self.policy.get("against", "human"),
            "build_id": self.build_id,
            "chosen_on_build_id": (self.policy.get("chosen_on") or {}).get("build_id"),
            **body,
            "errors": len(self.errors),
            "error_pairs": [{"query_id": e.query_id, "doc_id": e.doc_id, "reason": e.reason} for e in self.errors],
        }


def _snapshot(con: Connection, spec: str, build) -> CorpusSnapshot | None:
    if spec in ("dense", "judge"):
        return None  # neither reads the corpus; reading every text back would cost for nothing
    from goldenset.labelling.pool import build_snapshot

    return build_snapshot(con, build)


def _score(
    con: Connection,
    spec: str,
    options: Mapping[str, Any],
    judge: JudgeSettings | None,
    against: str,
    repeats: int,
    timeout: float,
    progress: Progress | None,
) -> tuple[ScoreRun, list[ErrorPair], int]:
    build = load_build(con)
    pairs, missing = golden_pairs(con, against)
    if not pairs and not missing:
        fix = (
            "label pairs (goldenset pool, then goldenset label serve) and build again"
            if against == "human"
            else "build from a log with verdicts"
        )
        raise GoldensetError(
            f"nothing to calibrate: the latest build ({build.build_id}) has no golden_set row "
            f"with source {against}; {fix}"
        )
    ctx = ScorerContext(
        corpus=_snapshot(con, spec, build), options=dict(options), con=con, judge=judge, timeout=timeout
    )
    scorer = build_scorer(spec, ctx)
    try:
        run = score_pairs(con, scorer, pairs, repeats=repeats, timeout=timeout, progress=progress)
    finally:
        close = getattr(scorer, "close", None)
        if callable(close):
            close()
    errors = sorted(missing + run.error_pairs(), key=lambda e: (e.query_id, e.doc_id))
    if not run.scored:
        first = errors[0].reason if errors else "no pair"
        n = len(pairs) + len(missing)
        raise GoldensetError(
            f"nothing to calibrate: none of the {n} {against} pair{'s' if n != 1 else ''} got a "
            f"score (the first error: {first}); fix the scorer or raise --timeout"
        )
    return run, errors, build.build_id


def calibration_request(
    scorer: str | None,
    *,
    against: str | None = None,
    cost_ratio: float | None = None,
    max_false_pass: float | None = None,
    max_false_fail: float | None = None,
    bootstrap_n: int | None = None,
    seed: int | None = None,
    by: str | None = None,
    holdout_after: date | None = None,
    repeats: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    options: Mapping[str, Any] | None = None,
    judge_url: str | None = None,
    judge_model: str | None = None,
    rubric: Path | None = None,
) -> CalibrationRequest:
    """The request `calibrate --scorer S` makes, each option not given at its default (contract 8.2).

    UsageError (exit 2) for a missing scorer, an unknown `by`, judge options given to
    another scorer, a judge without url and model, or fewer than one repeat. The judge is
    told the task and as_of of `rubric` (else GOLDENSET_RUBRIC's, else HOME's), which must
    be closed (the prompt `judge label` sends); the rubric is read only for the judge.
    """
    if scorer is None:
        raise UsageError(
            "pass --scorer S (dense, bm25, judge or module:factory) to calibrate, or --check POLICY "
            "to re-measure a stored policy"
        )
    if by not in (None, "project"):
        raise UsageError(f"--by {by!r} is not known; use --by project")
    if scorer != "judge" and (judge_url or judge_model):
        raise UsageError(f"--judge-url and --judge-model are for --scorer judge, not {scorer!r}; drop them")
    judge = None
    if scorer == "judge":
        if not judge_url or not judge_model:
            raise UsageError(
                "--scorer judge needs --judge-url and --judge-model (or GOLDENSET_JUDGE_URL and GOLDENSET_JUDGE_MODEL)"
            )
        judge = _judge_settings(judge_url, judge_model, rubric)
    request = CalibrationRequest(
        scorer=scorer,
        against=against or "human",
        costs=Costs(
            1.0 if cost_ratio is None else cost_ratio,
            0.05 if max_false_pass is None else max_false_pass,
            0.05 if max_false_fail is None else max_false_fail,
        ),
        bootstrap_n=bootstrap_n,
        seed=0 if seed is None else seed,
        by_project=by == "project",
        holdout_after=holdout_after,
        repeats=1 if repeats is None else repeats,
        timeout=timeout,
        options=dict(options or {}),
        judge=judge,
    )
    if request.repeats < 1:
        raise UsageError(f"--repeats {repeats!r} is not a number of repeats; use a positive integer, e.g. 3")
    return request


def _judge_settings(url: str, model: str, rubric: Path | None) -> JudgeSettings:
    """The judge at `url` serving `model`, told the task and as_of of the closed rubric at `rubric`."""
    from goldenset import settings
    from goldenset.labelling.rubric_set import load_rubrics

    closed = load_rubrics(settings.resolve("rubric", rubric)).require_closed().only("calibrate --scorer judge")
    as_of = None if closed.as_of is None else str(closed.as_of)
    return JudgeSettings(url, model, task=closed.task, as_of=as_of)


def calibrate_latest(
    con: Connection, request: CalibrationRequest, *, progress: Progress | None = None
) -> CalibrationOutcome:
    """Score the latest build's pairs with `request.scorer` and choose its cutoffs (contract 8.2)."""
    r = request
    run, errors, build_id = _score(con, r.scorer, r.options, r.judge, r.against, r.repeats, r.timeout, progress)
    cal = calibrate(
        run.calibration_pairs(),
        scorer=run.key.scorer,
        version=run.key.version,
        against=r.against,
        errors=errors,
        costs=r.costs,
        bootstrap_n=r.bootstrap_n,
        seed=r.seed,
        by_project=r.by_project,
        traffic=project_traffic(con) if r.by_project else None,
        holdout_after=r.holdout_after,
    )
    return CalibrationOutcome(cal, run, build_id)


def judge_settings_of(policy: Mapping[str, Any]) -> JudgeSettings:
    """The judge a judge policy was chosen with: its url, model, task and as_of."""
    config = policy.get("config") or {}
    url, model = config.get("url"), config.get("model")
    if not isinstance(url, str) or not isinstance(model, str):
        raise InputError(
            f"judge policy config {config!r} lacks url and model; write the policy again with "
            "`goldenset calibrate --scorer judge`"
        )
    return JudgeSettings(url, model, task=config.get("task"), as_of=config.get("as_of"))


def check_latest(
    con: Connection, policy: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT, progress: Progress | None = None
) -> PolicyRecheck:
    """Re-score the latest build's pairs with the policy's own scorer and re-measure its cutoffs."""
    spec, options = policy_scorer(policy)
    judge = judge_settings_of(policy) if spec == "judge" else None
    against = str(policy.get("against", "human"))
    run, errors, build_id = _score(con, spec, options, judge, against, 1, timeout, progress)
    check = check_policy(
        policy, run.calibration_pairs(), scorer_version=run.key.version, scorer_config=json.loads(run.key.config)
    )
    return PolicyRecheck(check, policy, run, build_id, tuple(errors))


def default_plot_path(reports: Path, outcome: CalibrationOutcome, now: datetime | None = None) -> Path:
    """REPORTS/calibration/<scorer>-<against>-build<N>-<UTC time>[-k].png: a new file per run."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    cal = outcome.calibration
    stem = _UNSAFE.sub("_", f"{cal.scorer}-{cal.against}-build{outcome.build_id}-{stamp}")
    path = reports / "calibration" / f"{stem}.png"
    k = 1
    while path.exists():  # two runs in one second: keep both
        k += 1
        path = reports / "calibration" / f"{stem}-{k}.png"
    return path


@contextmanager
def scoring_progress(description: str) -> Iterator[Progress]:
    """A `score_pairs` progress callback that reports one goldenset.progress step, opened at the first pair."""
    state: dict[str, Any] = {"done": 0}
    stack = ExitStack()

    def report(n: int, total: int) -> None:
        if "advance" not in state:
            state["advance"] = stack.enter_context(progress.step(description, total))
        state["advance"](n - state["done"])
        state["done"] = n

    with stack:
        yield report
