"""`goldenset calibrate`: measure a score against the labels and choose its cutoffs (contract 8.2).

`calibrate --scorer S` scores the latest build's human (or log) pairs and prints the
cutoff table around the chosen cutoffs, the single cutoff, the review band, and, when
asked, the bootstrap, the slices, the holdout and the repeats' stability (`--json`: the
contract's one object). It always writes the plot (default
REPORTS/calibration/<scorer>-<against>-build<N>-<UTC time>.png, its path printed; on
stderr with --json) and, beside it, the report as Markdown and as one HTML page with the
plot inline (same stem, `.md` and `.html`; the HTML's path printed), and writes the policy manifest only with `--policy OUT.json`.
`calibrate --check POLICY` re-scores today's pairs with the policy's own scorer and
says whether its rates still hold: exit 0 when they do, 1 when they do not (a scorer
version or config other than the policy's does not hold either).

Library errors propagate as GoldensetError subclasses for goldenset.cli.app: 1 for no
build, nothing to calibrate, a scorer that cannot start (a missing model, a judge that
cannot be reached); 2 for an unknown scorer or a bad option.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from goldenset import settings, units
from goldenset.cli.options import DbOpt, JudgeModelOpt, JudgeUrlOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import command_group
from goldenset.errors import GoldensetError, UsageError

app = command_group(
    "calibrate",
    "Measure a score against the labels: false-pass and false-fail rates per cutoff, the single cutoff, "
    "a review band, bootstrap, slices; or re-check a stored policy.",
    # One command, no subcommands: it runs with no arguments, and the usage line shows options only.
    no_args_is_help=False,
    subcommand_metavar="",
)

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
SHOWN_ERRORS = 20

# The options, declared once here so the command's signature reads as a list of them.
ScorerOpt = Annotated[
    str | None,
    typer.Option("--scorer", metavar="S", help="dense, bm25, judge, or a scorer plug-in as module:factory."),
]
CheckOpt = Annotated[
    Path | None,
    typer.Option(
        "--check",
        metavar="POLICY",
        help="Re-measure this stored policy on today's labels instead (exit 0 when its rates hold, 1 when not).",
    ),
]
AgainstOpt = Annotated[
    str | None,
    typer.Option(
        "--against",
        metavar="human|log",
        help="human (pairs with a human label; acceptable: grade >= 1) or log (log labels; "
        "acceptable: helped). Default human.",
    ),
]
CostRatioOpt = Annotated[
    float | None,
    typer.Option(
        "--cost-ratio",
        metavar="R",
        help="R: the cost of a false pass over the cost of a false fail; the single cutoff "
        "minimises R x false passes + false fails. Default 1.",
    ),
]
MaxFalsePassOpt = Annotated[
    float | None,
    typer.Option(
        "--max-false-pass",
        metavar="A",
        help="A: the band's high cutoff is the lowest with false-pass rate <= A. Default 0.05.",
    ),
]
MaxFalseFailOpt = Annotated[
    float | None,
    typer.Option(
        "--max-false-fail",
        metavar="B",
        help="B: the band's low cutoff is the highest with false-fail rate <= B. Default 0.05.",
    ),
]
BootstrapOpt = Annotated[
    int | None,
    typer.Option("--bootstrap", metavar="N", help="Resample the scored pairs N times for percentiles of the rates."),
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", metavar="X", help="Seed of numpy's default_rng for --bootstrap. Default 0.")
]
ByOpt = Annotated[
    str | None,
    typer.Option("--by", metavar="project", help="project: also calibrate each project on its own pairs."),
]
HoldoutAfterOpt = Annotated[
    str | None,
    typer.Option(
        "--holdout-after",
        metavar="DATE",
        help="Choose on labels before DATE (YYYY-MM-DD, UTC) and report the rates on the labels from DATE on.",
    ),
]
RepeatsOpt = Annotated[
    int | None,
    typer.Option(
        "--repeats",
        metavar="N",
        help="Score each pair N times; calibrate on the mean, report pairs whose "
        "repeats cross a chosen cutoff. Default 1.",
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", metavar="SECONDS", help="Seconds one score may take; a slower one is an error pair."),
]
ScorerConfigOpt = Annotated[
    str | None,
    typer.Option("--scorer-config", metavar="JSON", help="Options (a JSON object) for a module:factory scorer."),
]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="PNG",
        help="Where the plot goes (else REPORTS/calibration/<scorer>-<against>-build<N>-<time>.png).",
    ),
]
PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", metavar="OUT.json", help="Write the chosen cutoffs as a policy manifest here."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the contract's one JSON object.")]


def _date(value: str) -> date:
    try:
        if _DATE.fullmatch(value):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise UsageError(f"--holdout-after {value!r} is not a date; use YYYY-MM-DD, e.g. 2026-11-01")


def _options(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f"--scorer-config {text!r} is not JSON ({exc}); pass an object, e.g. '{{\"value\": 0.5}}'"
        ) from None
    if not isinstance(value, dict):
        raise UsageError(f"--scorer-config {text!r} is not a JSON object; pass an object, e.g. '{{\"value\": 0.5}}'")
    return value


def _connect(db: str | None, wait: float | None):
    from goldenset.cli.shared import open_warehouse
    from goldenset.warehouse import missing_warehouse

    path = settings.resolve("db", db)
    if not path.exists():
        # Opening for writing would create an empty warehouse; say what to run instead.
        raise missing_warehouse(Path(path))
    # Writable: scores go to the score cache as they come.
    return open_warehouse(path, read_only=False, wait=wait)


@app.callback(invoke_without_command=True)
def calibrate_cmd(
    scorer: ScorerOpt = None,
    check: CheckOpt = None,
    against: AgainstOpt = None,
    cost_ratio: CostRatioOpt = None,
    max_false_pass: MaxFalsePassOpt = None,
    max_false_fail: MaxFalseFailOpt = None,
    bootstrap: BootstrapOpt = None,
    seed: SeedOpt = None,
    by: ByOpt = None,
    holdout_after: HoldoutAfterOpt = None,
    repeats: RepeatsOpt = None,
    timeout: TimeoutOpt = 30.0,
    scorer_config: ScorerConfigOpt = None,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    rubric: RubricOpt = None,
    plot: PlotOpt = None,
    policy: PolicyOpt = None,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Calibrate a scorer on the latest build's labels, or re-check a stored policy (--check)."""
    from goldenset.scoring.workflow import calibrate_latest, calibration_request, scoring_progress

    if check is not None:
        # Every option but --timeout, --json, --db and --wait is the policy's own.
        _refuse_with_check(
            {
                "--scorer": scorer,
                "--against": against,
                "--cost-ratio": cost_ratio,
                "--max-false-pass": max_false_pass,
                "--max-false-fail": max_false_fail,
                "--bootstrap": bootstrap,
                "--seed": seed,
                "--by": by,
                "--holdout-after": holdout_after,
                "--repeats": repeats,
                "--scorer-config": scorer_config,
                "--plot": plot,
                "--policy": policy,
                "--rubric": rubric,
            }
        )
        _check(check, timeout, as_json, db, wait)
        return
    request = calibration_request(
        scorer,
        against=against,
        cost_ratio=cost_ratio,
        max_false_pass=max_false_pass,
        max_false_fail=max_false_fail,
        bootstrap_n=bootstrap,
        seed=seed,
        by=by,
        holdout_after=None if holdout_after is None else _date(holdout_after),
        repeats=repeats,
        timeout=timeout,
        options=_options(scorer_config),
        judge_url=judge_url,
        judge_model=judge_model,
        rubric=settings.resolve("rubric", rubric),
    )
    con = _connect(db, wait)
    try:
        with scoring_progress(f"scoring pairs with {request.scorer}") as report:
            outcome = calibrate_latest(con, request, progress=report)
    finally:
        con.close()
    _write_outputs(outcome, plot, policy, as_json)


def _refuse_with_check(given: dict[str, Any]) -> None:
    """UsageError naming the options given with --check: it re-measures the policy as stored."""
    extra = [flag for flag, value in given.items() if value is not None]
    if extra:
        raise UsageError(
            f"--check re-measures the stored policy with its own scorer, cutoffs and costs; drop {', '.join(extra)}"
        )


def _write_outputs(outcome, plot: Path | None, policy: Path | None, as_json: bool) -> None:
    from goldenset.cli.shared import err, out
    from goldenset.scoring.plot import plot_rates
    from goldenset.scoring.policy import write_policy
    from goldenset.scoring.report import to_json, write_calibration_report
    from goldenset.scoring.workflow import default_plot_path

    cal = outcome.calibration
    if as_json:
        typer.echo(json.dumps(to_json(cal), allow_nan=False))
    else:
        print_calibration(outcome)
    drawn = plot_rates(cal, plot or default_plot_path(settings.resolve("reports"), outcome))
    # The report to look at: the same figures as Markdown and as one HTML page, beside the plot.
    written = [("plot", drawn), ("report", write_calibration_report(cal, outcome.build_id, drawn))]
    if policy is not None:
        written.append(("policy", write_policy(outcome.manifest(), policy)))
    for what, path in written:
        # With --json, stdout holds exactly the JSON object.
        (err if as_json else out).print(f"{what}: {path}", markup=False, soft_wrap=True)


def _check(path: Path, timeout: float, as_json: bool, db: str | None, wait: float | None) -> None:
    from goldenset.scoring.policy import read_policy
    from goldenset.scoring.workflow import check_latest, scoring_progress

    stored = read_policy(path)
    con = _connect(db, wait)
    try:
        with scoring_progress(f"scoring pairs with {stored['scorer']}") as report:
            outcome = check_latest(con, stored, timeout=timeout, progress=report)
    finally:
        con.close()
    if as_json:
        typer.echo(json.dumps(outcome.to_json(), allow_nan=False))
    else:
        print_check(outcome, path)
    if not outcome.check.holds:
        failed = "; ".join(
            f"{i.name} differs from the policy's"
            if i.name == "scorer_config"
            else f"{i.name} {_value(i.measured)} (limit {_value(i.limit)})"
            for i in outcome.check.checks
            if not i.holds
        )
        raise GoldensetError(
            f"policy {path} does not hold on build {outcome.build_id}: {failed}; calibrate "
            "again and review the new cutoffs"
        )


# --------------------------------------------------------------------------- readable output
def _cut(c: float | None) -> str:
    return "none passes" if c is None else repr(float(c))


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "null" if v is None else str(v)


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" if k == 1 else f"{k} {noun}es" if noun.endswith("ss") else f"{k} {noun}s"


def _rate(k: int, n: int, rate: float) -> str:
    # A rate in prose: a percentage beside its counts (goldenset.units); the JSON keeps the fraction.
    return units.rate(k, n, rate)


def print_calibration(outcome) -> None:
    """The readable report of one calibration: table, single, band, bootstrap, slices, holdout, repeats, errors."""
    from goldenset.cli.shared import err, out
    from goldenset.scoring.report import shown_rows

    cal = outcome.calibration
    m = cal.measurement
    n_err = len(cal.errors)
    out.print(
        f"{cal.scorer} {cal.version} against {cal.against} labels of build {outcome.build_id}: {m.pairs} "
        f"pairs scored ({m.acceptable} acceptable, {m.unacceptable} unacceptable), {n_err} "
        f"error{'s' if n_err != 1 else ''}",
        markup=False,
        soft_wrap=True,
    )
    marks: dict[int, list[str]] = {}
    for name, row in (("single", m.single.row), ("low", m.low), ("high", m.high)):
        if row is not None:
            marks.setdefault(m.cutoffs.index(row), []).append(name)
    r = cal.costs.cost_ratio
    t = Table(
        title=f"cutoffs around the chosen ones ({len(m.cutoffs)} in all; --json lists every one)",
        title_justify="left",
        caption="FP: false passes (unacceptable pairs passing), FF: false fails (acceptable pairs failing)",
        caption_justify="left",
    )
    for col in ("cutoff", "FP", "FF", "FP rate", "FF rate", "cost", "chosen"):
        t.add_column(col, justify="left" if col in ("cutoff", "chosen") else "right", no_wrap=True)
    for i in shown_rows(m):
        if i is None:
            t.add_row("...", "", "", "", "", "", "")
            continue
        row = m.cutoffs[i]
        cost = r * row.false_passes + row.false_fails
        t.add_row(
            _cut(row.cutoff),
            str(row.false_passes),
            str(row.false_fails),
            f"{row.false_pass_rate:.4f}",
            f"{row.false_fail_rate:.4f}",
            f"{cost:g}",
            ", ".join(marks.get(i, [])),
        )
    out.print(t)
    s = m.single
    out.print(
        f"single cutoff {_cut(s.row.cutoff)}: cost {s.cost} (R {r:g} x {_n(s.row.false_passes, 'false pass')}"
        f" + {_n(s.row.false_fails, 'false fail')}); false-pass rate "
        f"{_rate(s.row.false_passes, m.unacceptable, s.row.false_pass_rate)}, false-fail rate "
        f"{_rate(s.row.false_fails, m.acceptable, s.row.false_fail_rate)}",
        markup=False,
        soft_wrap=True,
    )
    if m.band is not None:
        top, passing = (
            ("none", "nothing passes") if m.band.high is None else (repr(m.band.high), f"pass at >= {m.band.high!r}")
        )
        out.print(
            f"review band [{m.band.low!r}, {top}): {m.band.review} of {m.pairs} pairs "
            f"({units.percent(m.band.review_share)}) go to review; {passing}, fail below {m.band.low!r} "
            f"(A {cal.costs.max_false_pass:g}, B {cal.costs.max_false_fail:g})",
            markup=False,
            soft_wrap=True,
        )
    else:
        low = "none" if m.low is None else _cut(m.low.cutoff)
        out.print(
            f"no review band: {m.band_note} (low {low}, high {_cut(m.high.cutoff)}; A "
            f"{cal.costs.max_false_pass:g}, B {cal.costs.max_false_fail:g})",
            markup=False,
            soft_wrap=True,
        )
    if cal.bootstrap is not None:
        _print_bootstrap(cal)
    if cal.slices is not None:
        _print_slices(cal)
    if cal.holdout is not None:
        _print_holdout(cal)
    if cal.stability is not None:
        _print_repeats(cal)
    if cal.errors:
        e = Table(
            title=f"{n_err} error pair{'s' if n_err != 1 else ''}: not scored, never counted as a low score",
            title_justify="left",
        )
        for col in ("query_id", "doc_id", "reason"):
            e.add_column(col, overflow="fold")
        for x in cal.errors[:SHOWN_ERRORS]:
            e.add_row(x.query_id, x.doc_id, x.reason)
        out.print(e)
        if n_err > SHOWN_ERRORS:
            out.print(f"{n_err - SHOWN_ERRORS} more: --json lists every error pair", markup=False)
    for w in cal.warnings:
        err.print(f"WARNING: {w}", markup=False, soft_wrap=True)


def _print_bootstrap(cal) -> None:
    from goldenset.cli.shared import out

    b = cal.bootstrap
    t = Table(title=f"bootstrap, {b.n} resamples (seed {b.seed}): rates at the single cutoff", title_justify="left")
    t.add_column("rate")
    for p in ("2.5%", "25%", "50%", "75%", "97.5%"):
        t.add_column(p, justify="right")
    t.add_row("false-pass", *(f"{x:.4f}" for x in b.false_pass_rate))
    t.add_row("false-fail", *(f"{x:.4f}" for x in b.false_fail_rate))
    out.print(t)
    lo, hi = b.cutoff_interval
    out.print(
        f"resamples choosing another single cutoff: {units.percent(b.other_cutoff_share)}; their own cutoffs' 95% "
        f"interval [{_cut(lo)}, {_cut(hi)}]",
        markup=False,
        soft_wrap=True,
    )


def _print_slices(cal) -> None:
    from goldenset.cli.shared import out

    t = Table(title="by project, each chosen on its own pairs", title_justify="left")
    for col in ("project", "pairs", "acc", "unacc", "single", "FP rate", "FF rate", "band"):
        t.add_column(col, justify="left" if col in ("project", "single", "band") else "right")
    from goldenset.scoring.report import slice_cells

    for cells in slice_cells(cal):
        t.add_row(*cells)
    out.print(t)
    ss = cal.slice_summary or {}
    out.print(
        f"at the global single cutoff {_cut(ss.get('cutoff'))}: macro false-pass "
        f"{units.percent(ss['macro']['false_pass_rate'])}, false-fail {units.percent(ss['macro']['false_fail_rate'])}; "
        f"weighted by {ss['weights']} false-pass {units.percent(ss['traffic_weighted']['false_pass_rate'])}, "
        f"false-fail {units.percent(ss['traffic_weighted']['false_fail_rate'])}",
        markup=False,
        soft_wrap=True,
    )


def _print_holdout(cal) -> None:
    from goldenset.cli.shared import out

    h = cal.holdout
    s = h.single.row
    out.print(
        f"holdout: chosen on {h.chosen_on} pairs labelled before {h.after.isoformat()} ({h.undated} undated "
        f"left out); on the {h.pairs} labelled from then on, the single cutoff {_cut(s.cutoff)} has "
        f"false-pass rate {_rate(s.false_passes, h.unacceptable, s.false_pass_rate)}, false-fail rate "
        f"{_rate(s.false_fails, h.acceptable, s.false_fail_rate)}"
        + (
            ""
            if h.band is None
            else f", and {h.band.review} of them ({units.percent(h.band.review_share)}) fall in the band"
        ),
        markup=False,
        soft_wrap=True,
    )


def _print_repeats(cal) -> None:
    from goldenset.cli.shared import out

    rows = cal.stability or ()
    unstable = [x for x in rows if x.unstable]
    out.print(
        f"repeats: {cal.repeats} scores per pair, calibrated on the mean; {len(unstable)} unstable "
        f"pair{'s' if len(unstable) != 1 else ''} (repeats on both sides of a chosen cutoff) "
        f"{'go' if len(unstable) != 1 else 'goes'} to review",
        markup=False,
        soft_wrap=True,
    )
    names = [name for name, _ in rows[0].passes] if rows else []
    t = Table(title=f"pairs nearest the chosen cutoffs: repeats passing each (of {cal.repeats})", title_justify="left")
    for col in ("query_id", "doc_id", "mean", "range", *names, "review"):
        t.add_column(col, justify="left" if col in ("query_id", "doc_id", "range", "review") else "right", no_wrap=True)
    for x in rows:
        t.add_row(
            x.query_id,
            x.doc_id,
            f"{x.mean:.4g}",
            f"{x.min:.4g}-{x.max:.4g}",
            *(str(k) for _, k in x.passes),
            "yes" if x.unstable else "",
        )
    out.print(t)


def print_check(outcome, path: Path) -> None:
    """The readable report of `--check`: each test with today's value and its limit, and the verdict."""
    from goldenset.cli.shared import out

    c = outcome.check
    p = outcome.policy
    verdict = "holds" if c.holds else "DOES NOT HOLD"
    chosen = (p.get("chosen_on") or {}).get("build_id")
    out.print(
        f"policy {path} ({p['scorer']} {p['version']}, chosen on build {chosen}) on build "
        f"{outcome.build_id}: {verdict}",
        markup=False,
        soft_wrap=True,
    )
    out.print(
        f"today: {c.pairs} pairs scored ({c.acceptable} acceptable, {c.unacceptable} unacceptable), "
        f"{len(outcome.errors)} errors",
        markup=False,
        soft_wrap=True,
    )
    t = Table(title="checks", title_justify="left")
    for col in ("check", "today", "limit", "holds"):
        t.add_column(col, no_wrap=col == "check", overflow="fold")
    for i in c.checks:
        if i.name == "scorer_config":
            # The whole configuration is in --json; here only whether it changed.
            t.add_row(i.name, "as stored" if i.holds else "differs (see --json)", "", "yes" if i.holds else "NO")
        else:
            t.add_row(i.name, _value(i.measured), _value(i.limit), "yes" if i.holds else "NO")
    out.print(t)
    r = Table(title="today's rates at the stored cutoffs", title_justify="left")
    for col in ("cutoff", "value", "FP", "FF", "FP rate", "FF rate"):
        r.add_column(col, justify="left" if col in ("cutoff", "value") else "right", no_wrap=True)
    for name, row in (("single", c.single), ("low", c.low), ("high", c.high)):
        if row is not None:
            r.add_row(
                name,
                _cut(row.cutoff),
                str(row.false_passes),
                str(row.false_fails),
                f"{row.false_pass_rate:.4f}",
                f"{row.false_fail_rate:.4f}",
            )
    out.print(r)
