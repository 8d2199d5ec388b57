"""The reports of `goldenset calibrate`: the `--json` object (contract 8.2) and the Markdown + HTML report.

Keys in the contract's order; rates, shares and percentiles rounded to 4 decimals
half away from zero (`round4`); cutoffs and cost exact. Keys beyond the contract's
appear only with the options that make them: `bootstrap.single.cutoff_interval`
(--bootstrap), `slice_summary` and `warnings` (--by project), `holdout`
(--holdout-after), `repeats` (--repeats N > 1).

Decisions (the report to look at):

- Every calibration writes `<plot stem>.md` and `<plot stem>.html` beside its plot (the
  plot's folder and name, so `--plot` moves all three): the Markdown holds what the
  readable output prints (the cutoff rows around the chosen ones, the single cutoff, the
  band, and the bootstrap, slices, holdout, repeats and error pairs when asked), and the
  plot by its file name; the HTML is the same text rendered by `goldenset.html_report`,
  the plot inline as a data URI, so the page is one self-contained file.
- Numbers read as in the terminal: rates to 4 decimals, cutoffs as Python prints them,
  "none passes" for the cutoff above every score.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goldenset import units
from goldenset.scoring.calibrate import Band, Calibration, CutoffRow, Measurement, Single, round4

SHOWN_AROUND = 2  # cutoff rows shown on each side of a chosen cutoff (--json lists them all)


def row_json(r: CutoffRow) -> dict[str, Any]:
    """One cutoff row: counts exact, rates rounded to 4 decimals."""
    return {
        "cutoff": r.cutoff,
        "false_passes": r.false_passes,
        "false_fails": r.false_fails,
        "false_pass_rate": round4(r.false_pass_rate),
        "false_fail_rate": round4(r.false_fail_rate),
    }


def _single_json(s: Single) -> dict[str, Any]:
    return {**row_json(s.row), "cost": s.cost}


def _band_json(b: Band | None) -> dict[str, Any] | None:
    return None if b is None else {"low": b.low, "high": b.high, "review_share": round4(b.review_share)}


def _rates_json(d: Mapping[str, float]) -> dict[str, float]:
    return {k: round4(v) for k, v in d.items()}


def to_json(cal: Calibration) -> dict[str, Any]:
    """The `--json` object of 8.2, keys in the contract's order; extras (holdout, ...) after them."""
    m = cal.measurement
    out: dict[str, Any] = {
        "scorer": cal.scorer,
        "version": cal.version,
        "against": cal.against,
        "pairs": m.pairs,
        "acceptable": m.acceptable,
        "unacceptable": m.unacceptable,
        "errors": len(cal.errors),
        "error_pairs": [{"query_id": e.query_id, "doc_id": e.doc_id, "reason": e.reason} for e in cal.errors],
        "cutoffs": [row_json(r) for r in m.cutoffs],
        "single": _single_json(m.single),
        "band": _band_json(m.band),
        "band_note": m.band_note,
    }
    if cal.bootstrap is not None:
        b = cal.bootstrap
        out["bootstrap"] = {
            "n": b.n,
            "seed": b.seed,
            "single": {
                "false_pass_rate": [round4(x) for x in b.false_pass_rate],
                "false_fail_rate": [round4(x) for x in b.false_fail_rate],
                "other_cutoff_share": round4(b.other_cutoff_share),
                "cutoff_interval": list(b.cutoff_interval),
            },
        }
    if cal.slices is not None:
        out["slices"] = {
            name: {
                "pairs": s.pairs,
                "acceptable": s.acceptable,
                "unacceptable": s.unacceptable,
                "single": _single_json(s.single),
                "band": _band_json(s.band),
                "band_note": s.band_note,
            }
            for name, s in cal.slices.items()
        }
        ss = cal.slice_summary or {}
        out["slice_summary"] = {
            "cutoff": ss["cutoff"],
            "weights": ss["weights"],
            "macro": _rates_json(ss["macro"]),
            "traffic_weighted": _rates_json(ss["traffic_weighted"]),
            "by_slice": {n: _rates_json(v) for n, v in ss["by_slice"].items()},
        }
    if cal.holdout is not None:
        h = cal.holdout
        out["holdout"] = {
            "after": h.after.isoformat(),
            "chosen_on": h.chosen_on,
            "undated": h.undated,
            "pairs": h.pairs,
            "acceptable": h.acceptable,
            "unacceptable": h.unacceptable,
            "single": _single_json(h.single),
            "band": _band_json(h.band),
        }
    if cal.stability is not None:
        out["repeats"] = {
            "n": cal.repeats,
            "unstable": sum(1 for x in cal.stability if x.unstable),
            "pairs": [
                {
                    "query_id": x.query_id,
                    "doc_id": x.doc_id,
                    "mean": x.mean,
                    "min": x.min,
                    "max": x.max,
                    "passes": dict(x.passes),
                    "of": x.n,
                    "unstable": x.unstable,
                }
                for x in cal.stability
            ],
        }
    if cal.slices is not None or cal.warnings:
        out["warnings"] = list(cal.warnings)
    return out


# --------------------------------------------------------------------------- the report to look at
def shown_rows(m: Measurement) -> list[int | None]:
    """Indices of the cutoff rows near the chosen ones, None where rows are left out."""
    chosen = {m.cutoffs.index(m.single.row), m.cutoffs.index(m.high)}
    if m.low is not None:
        chosen.add(m.cutoffs.index(m.low))
    keep = sorted({j for i in chosen for j in range(i - SHOWN_AROUND, i + SHOWN_AROUND + 1) if 0 <= j < len(m.cutoffs)})
    shown: list[int | None] = []
    previous = -1
    for j in keep:
        if j != previous + 1:
            shown.append(None)
        shown.append(j)
        previous = j
    if previous < len(m.cutoffs) - 1:
        shown.append(None)
    return shown


def _cut(c: float | None) -> str:
    return "none passes" if c is None else repr(float(c))


def _cell(value: object) -> str:
    # A '|' inside a cell would end it; a line break would end the row.
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def _rate(k: int, n: int, rate: float) -> str:
    # A rate in prose: a percentage beside its counts (goldenset.units); the JSON keeps the fraction.
    return units.rate(k, n, rate)


def calibration_markdown(cal: Calibration, build_id: int, plot_name: str | None = None) -> str:
    """The calibration as a Markdown report: what the readable output prints, and the plot by name."""
    m = cal.measurement
    r = cal.costs.cost_ratio
    lines = [
        f"# Calibration of {cal.scorer} {cal.version}",
        "",
        f"Against {cal.against} labels of build {build_id}: {m.pairs} pairs scored ({m.acceptable} acceptable, "
        f"{m.unacceptable} unacceptable), {len(cal.errors)} error pair{'s' if len(cal.errors) != 1 else ''}.",
        "",
        f"## Cutoffs around the chosen ones ({len(m.cutoffs)} in all; `--json` lists every one)",
        "",
    ]
    marks: dict[int, list[str]] = {}
    for name, row in (("single", m.single.row), ("low", m.low), ("high", m.high)):
        if row is not None:
            marks.setdefault(m.cutoffs.index(row), []).append(name)
    rows = []
    for i in shown_rows(m):
        if i is None:
            rows.append(["...", "", "", "", "", "", ""])
            continue
        c = m.cutoffs[i]
        rows.append(
            [
                _cut(c.cutoff),
                str(c.false_passes),
                str(c.false_fails),
                f"{c.false_pass_rate:.4f}",
                f"{c.false_fail_rate:.4f}",
                f"{r * c.false_passes + c.false_fails:g}",
                ", ".join(marks.get(i, [])),
            ]
        )
    lines += _table(["cutoff", "FP", "FF", "FP rate", "FF rate", "cost", "chosen"], rows)
    lines += ["", "FP: false passes (unacceptable pairs passing), FF: false fails (acceptable pairs failing).", ""]
    s = m.single.row
    lines += [
        f"**Single cutoff {_cut(s.cutoff)}**: cost {m.single.cost} (R {r:g}); false-pass rate "
        f"{_rate(s.false_passes, m.unacceptable, s.false_pass_rate)}, false-fail rate "
        f"{_rate(s.false_fails, m.acceptable, s.false_fail_rate)}.",
        "",
    ]
    limits = f"A {cal.costs.max_false_pass:g}, B {cal.costs.max_false_fail:g}"
    if m.band is not None:
        top = "none" if m.band.high is None else repr(m.band.high)
        lines.append(
            f"**Review band [{m.band.low!r}, {top})**: {m.band.review} of {m.pairs} pairs "
            f"({units.percent(m.band.review_share)}) go to review ({limits})."
        )
    else:
        lines.append(f"**No review band**: {m.band_note} ({limits}).")
    if plot_name:
        lines += ["", f"![false-pass and false-fail rates against the cutoff]({plot_name})"]
    lines += _bootstrap_md(cal) + _slices_md(cal) + _holdout_md(cal) + _repeats_md(cal) + _errors_md(cal)
    if cal.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in cal.warnings]
    return "\n".join(lines) + "\n"


def _bootstrap_md(cal: Calibration) -> list[str]:
    b = cal.bootstrap
    if b is None:
        return []
    lo, hi = b.cutoff_interval
    return [
        "",
        f"## Bootstrap, {b.n} resamples (seed {b.seed}): rates at the single cutoff",
        "",
        *_table(
            ["rate", "2.5%", "25%", "50%", "75%", "97.5%"],
            [
                ["false-pass", *(f"{x:.4f}" for x in b.false_pass_rate)],
                ["false-fail", *(f"{x:.4f}" for x in b.false_fail_rate)],
            ],
        ),
        "",
        f"Resamples choosing another single cutoff: {units.percent(b.other_cutoff_share)}; their own cutoffs' 95% interval "
        f"[{_cut(lo)}, {_cut(hi)}].",
    ]


def slice_cells(cal: Calibration) -> list[list[str]]:
    """One row of text per project slice, as both the terminal table and the report show it."""
    rows = []
    for name, s in (cal.slices or {}).items():
        top = "none" if s.band is None or s.band.high is None else repr(s.band.high)
        band = (
            s.band_note
            if s.band is None
            else f"[{s.band.low!r}, {top}): {units.percent(s.band.review_share)} to review"
        )
        rows.append(
            [
                name,
                str(s.pairs),
                str(s.acceptable),
                str(s.unacceptable),
                _cut(s.single.row.cutoff),
                f"{s.single.row.false_pass_rate:.4f}",
                f"{s.single.row.false_fail_rate:.4f}",
                band or "",
            ]
        )
    return rows


def _slices_md(cal: Calibration) -> list[str]:
    if cal.slices is None:
        return []
    rows = slice_cells(cal)
    ss = cal.slice_summary or {}
    return [
        "",
        "## By project, each chosen on its own pairs",
        "",
        *_table(["project", "pairs", "acc", "unacc", "single", "FP rate", "FF rate", "band"], rows),
        "",
        f"At the global single cutoff {_cut(ss.get('cutoff'))}: macro false-pass "
        f"{units.percent(ss['macro']['false_pass_rate'])}, false-fail "
        f"{units.percent(ss['macro']['false_fail_rate'])}; weighted by {ss['weights']} false-pass "
        f"{units.percent(ss['traffic_weighted']['false_pass_rate'])}, false-fail "
        f"{units.percent(ss['traffic_weighted']['false_fail_rate'])}.",
    ]


def _holdout_md(cal: Calibration) -> list[str]:
    h = cal.holdout
    if h is None:
        return []
    s = h.single.row
    band = (
        "" if h.band is None else f"; {h.band.review} of them ({units.percent(h.band.review_share)}) fall in the band"
    )
    return [
        "",
        "## Holdout",
        "",
        f"Chosen on {h.chosen_on} pairs labelled before {h.after.isoformat()} ({h.undated} undated left out); on "
        f"the {h.pairs} labelled from then on, the single cutoff {_cut(s.cutoff)} has false-pass rate "
        f"{_rate(s.false_passes, h.unacceptable, s.false_pass_rate)}, false-fail rate "
        f"{_rate(s.false_fails, h.acceptable, s.false_fail_rate)}{band}.",
    ]


def _repeats_md(cal: Calibration) -> list[str]:
    if cal.stability is None:
        return []
    rows = cal.stability
    unstable = sum(1 for x in rows if x.unstable)
    names = [name for name, _ in rows[0].passes] if rows else []
    return [
        "",
        f"## Repeats: {cal.repeats} scores per pair, calibrated on the mean",
        "",
        f"{unstable} unstable pair{'s' if unstable != 1 else ''} (repeats on both sides of a chosen cutoff) "
        f"{'go' if unstable != 1 else 'goes'} to review. Repeats passing each cutoff (of {cal.repeats}):",
        "",
        *_table(
            ["query_id", "doc_id", "mean", "range", *names, "review"],
            [
                [
                    x.query_id,
                    x.doc_id,
                    f"{x.mean:.4g}",
                    f"{x.min:.4g}-{x.max:.4g}",
                    *(str(k) for _, k in x.passes),
                    "yes" if x.unstable else "",
                ]
                for x in rows
            ],
        ),
    ]


def _errors_md(cal: Calibration) -> list[str]:
    if not cal.errors:
        return []
    n = len(cal.errors)
    return [
        "",
        f"## {n} error pair{'s' if n != 1 else ''}: not scored, never counted as a low score",
        "",
        *_table(["query_id", "doc_id", "reason"], [[e.query_id, e.doc_id, e.reason] for e in cal.errors]),
    ]


def write_calibration_report(cal: Calibration, build_id: int, plot: Path) -> Path:
    """Write `<plot stem>.md` and `.html` beside the plot (the plot inline in the HTML); return the HTML's path."""
    from goldenset.html_report import write_html_next_to

    md = plot.with_suffix(".md")
    md.write_text(calibration_markdown(cal, build_id, plot.name), encoding="utf-8")
    return write_html_next_to(md, f"calibration of {cal.scorer} {cal.version}")
