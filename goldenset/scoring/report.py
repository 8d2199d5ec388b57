"""The `--json` object of `goldenset calibrate` (contract 8.2), from a `Calibration`.

Keys in the contract's order; rates, shares and percentiles rounded to 4 decimals
half away from zero (`round4`); cutoffs and cost exact. Keys beyond the contract's
appear only with the options that make them: `bootstrap.single.cutoff_interval`
(--bootstrap), `slice_summary` and `warnings` (--by project), `holdout`
(--holdout-after), `repeats` (--repeats N > 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from goldenset.scoring.calibrate import Band, Calibration, CutoffRow, Single, round4


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
