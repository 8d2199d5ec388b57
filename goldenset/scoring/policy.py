"""Policy manifests (a calibration's chosen cutoffs, stored as JSON) and `calibrate --check`.

A manifest records the scorer, its version and config, the cutoffs (single, band,
high, low), the costs, what it was chosen on (golden build, pair counts, holdout
date), the rates at the cutoffs, the bootstrap's percentiles when there was one,
and created_at. `check_policy` re-measures the stored cutoffs on today's pairs:
see PolicyCheck for when a policy holds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goldenset.errors import InputError, UsageError
from goldenset.scoring.calibrate import (
    PERCENTILES,
    Calibration,
    CutoffRow,
    ScoredPair,
    aware,
    check_pairs,
    exact_decimal,
    rates_at,
    round4,
)
from goldenset.scoring.report import row_json
from goldenset.scoring.scorers import BUILTINS

POLICY_VERSION = 1


@dataclass(frozen=True)
class PolicyCheckItem:
    """One test a stored policy must still pass: the measured value, its limit, whether it holds."""

    name: str
    measured: float | str | None
    limit: float | str | None
    holds: bool


@dataclass(frozen=True)
class PolicyCheck:
    """A stored policy re-measured on today's pairs.

    It *holds* when every item holds: the false-pass rate at high <= A, the
    false-fail rate at low <= B, and, when the policy stored a bootstrap, both
    rates at the single cutoff no higher than the stored 97.5th percentile
    (rounded to 4 decimals, as stored). Rates that got better never fail it. A
    scorer version or configuration (e.g. another dense model) other than the
    policy's fails it too: the cutoffs belong to the scorer they were chosen on.
    """

    holds: bool
    pairs: int
    acceptable: int
    unacceptable: int
    single: CutoffRow
    high: CutoffRow
    low: CutoffRow | None
    checks: tuple[PolicyCheckItem, ...]


def policy_manifest(
    cal: Calibration, *, config: Mapping[str, Any], build_id: int | None, created_at: datetime | None = None
) -> dict[str, Any]:
    """The versioned policy (JSON object) of a calibration: what was chosen, on what, at what cost."""
    m = cal.measurement
    created = aware(created_at) if created_at is not None else datetime.now(UTC)
    boot = None
    if cal.bootstrap is not None:
        b = cal.bootstrap
        boot = {
            "n": b.n,
            "seed": b.seed,
            "false_pass_rate": [round4(x) for x in b.false_pass_rate],
            "false_fail_rate": [round4(x) for x in b.false_fail_rate],
            "cutoff_interval": list(b.cutoff_interval),
        }
    return {
        "policy_version": POLICY_VERSION,
        "scorer": cal.scorer,
        "version": cal.version,
        "config": dict(config),
        "against": cal.against,
        "cutoffs": {
            "single": m.single.row.cutoff,
            "band": None if m.band is None else {"low": m.band.low, "high": m.band.high},
            "high": m.high.cutoff,
            "low": None if m.low is None else m.low.cutoff,
        },
        "costs": {
            "cost_ratio": cal.costs.cost_ratio,
            "max_false_pass": cal.costs.max_false_pass,
            "max_false_fail": cal.costs.max_false_fail,
        },
        "chosen_on": {
            "build_id": build_id,
            "pairs": m.pairs,
            "acceptable": m.acceptable,
            "unacceptable": m.unacceptable,
            "errors": len(cal.errors),
            "holdout_after": None if cal.holdout is None else cal.holdout.after.isoformat(),
        },
        "rates": {
            "single": {
                "false_pass_rate": round4(m.single.row.false_pass_rate),
                "false_fail_rate": round4(m.single.row.false_fail_rate),
            },
            "high": {"false_pass_rate": round4(m.high.false_pass_rate)},
            "low": None if m.low is None else {"false_fail_rate": round4(m.low.false_fail_rate)},
        },
        "bootstrap": boot,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def write_policy(manifest: Mapping[str, Any], path: str | Path) -> Path:
    """Write a policy manifest as indented JSON (one file per policy; a new choice is a new file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def _cutoff_value(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def validate_policy(policy: Any, where: str = "policy") -> dict[str, Any]:
    """Check a manifest's shape; InputError naming the first problem."""

    def bad(problem: str) -> InputError:
        return InputError(f"{where}: {problem}; write the policy again with `goldenset calibrate`")

    if not isinstance(policy, dict):
        raise bad(f"expected a JSON object, got {type(policy).__name__}")
    if policy.get("policy_version") != POLICY_VERSION:
        raise bad(f"policy_version is {policy.get('policy_version')!r}, this goldenset reads {POLICY_VERSION}")
    for key in ("scorer", "version", "config", "cutoffs", "costs", "created_at"):
        if key not in policy:
            raise bad(f"missing key {key!r}")
    cut, costs = policy["cutoffs"], policy["costs"]
    if not isinstance(cut, dict) or not all(k in cut and _cutoff_value(cut[k]) for k in ("single", "high", "low")):
        raise bad(f"cutoffs {cut!r} must hold single, high and low (numbers or null)")
    if not isinstance(costs, dict):
        raise bad(f"costs {costs!r} must be an object")
    for k in ("max_false_pass", "max_false_fail"):
        v = costs.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
            raise bad(f"costs.{k} is {v!r}, not a rate from 0 to 1")
    boot = policy.get("bootstrap")
    if boot is not None:
        for k in ("false_pass_rate", "false_fail_rate"):
            v = boot.get(k) if isinstance(boot, dict) else None
            if not (isinstance(v, list) and len(v) == len(PERCENTILES)):
                raise bad(f"bootstrap.{k} must list {len(PERCENTILES)} percentiles, got {v!r}")
    return policy


def read_policy(path: str | Path) -> dict[str, Any]:
    """Read and validate a policy manifest file."""
    path = Path(path)
    try:
        policy = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"policy {path} does not exist; pass the file `calibrate --policy` wrote") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"policy {path} is unreadable: {exc}; write it again with `goldenset calibrate`") from exc
    return validate_policy(policy, f"policy {path}")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def check_policy(
    policy: Mapping[str, Any],
    pairs: Sequence[ScoredPair],
    *,
    scorer_version: str | None = None,
    scorer_config: Mapping[str, Any] | None = None,
) -> PolicyCheck:
    """Re-measure a stored policy's cutoffs on today's pairs and say whether its rates still hold."""
    policy = validate_policy(dict(policy))
    check_pairs(pairs)
    cut, costs = policy["cutoffs"], policy["costs"]
    single, high = rates_at(pairs, cut["single"]), rates_at(pairs, cut["high"])
    low = None if cut["low"] is None else rates_at(pairs, cut["low"])
    a, b = exact_decimal(costs["max_false_pass"]), exact_decimal(costs["max_false_fail"])
    items = [
        PolicyCheckItem(
            "false_pass_rate_at_high", round4(high.false_pass_rate), costs["max_false_pass"], high.exact_rates()[0] <= a
        )
    ]
    if low is not None:
        items.append(
            PolicyCheckItem(
                "false_fail_rate_at_low",
                round4(low.false_fail_rate),
                costs["max_false_fail"],
                low.exact_rates()[1] <= b,
            )
        )
    boot = policy.get("bootstrap")
    if boot is not None:
        for name, measured, stored in (
            ("false_pass_rate_at_single", single.false_pass_rate, boot["false_pass_rate"]),
            ("false_fail_rate_at_single", single.false_fail_rate, boot["false_fail_rate"]),
        ):
            top = stored[-1]
            items.append(PolicyCheckItem(name, round4(measured), top, round4(measured) <= top))
    if scorer_version is not None:
        items.append(
            PolicyCheckItem("scorer_version", scorer_version, policy["version"], scorer_version == policy["version"])
        )
    if scorer_config is not None:
        # Compared as canonical JSON: key order and spacing are not a different scorer.
        today, stored = _canonical(scorer_config), _canonical(policy["config"])
        items.append(PolicyCheckItem("scorer_config", today, stored, today == stored))
    n_acc = sum(p.acceptable for p in pairs)
    return PolicyCheck(
        all(i.holds for i in items), len(pairs), n_acc, len(pairs) - n_acc, single, high, low, tuple(items)
    )


def check_to_json(check: PolicyCheck) -> dict[str, Any]:
    """`calibrate --check POLICY --json`: whether it holds, each test, today's rates at the stored cutoffs."""
    return {
        "holds": check.holds,
        "pairs": check.pairs,
        "acceptable": check.acceptable,
        "unacceptable": check.unacceptable,
        "checks": [{"name": i.name, "measured": i.measured, "limit": i.limit, "holds": i.holds} for i in check.checks],
        "single": row_json(check.single),
        "high": row_json(check.high),
        "low": None if check.low is None else row_json(check.low),
    }


def policy_scorer(policy: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The --scorer spec and --scorer-config options that rebuild a stored policy's scorer.

    A judge policy's url, model, task and as_of are in its config; the caller
    turns them into JudgeSettings (`judge_settings`).
    """
    config = policy.get("config") or {}
    if isinstance(config, dict) and "factory" in config:
        return str(config["factory"]), dict(config.get("options") or {})
    name = policy.get("scorer")
    if name not in BUILTINS:
        raise UsageError(
            f"policy scorer {name!r} is neither built in nor a module:factory plug-in; "
            "write the policy again with `goldenset calibrate`"
        )
    return str(name), {}
