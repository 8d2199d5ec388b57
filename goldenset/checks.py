"""What a build must satisfy before it is published, and what only earns a warning."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BuildChecks:
    """Thresholds for the build checks (shares are fractions of non-blank lines read)."""

    warn_rejected_share: float = 0.01
    block_rejected_share: float = 0.10


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    blocking: bool  # a failure stops the build from being published
    severity: str  # "ERROR" or "WARN" when it fails
    detail: str
    metadata: dict = field(default_factory=dict)


def evaluate_checks(cfg: BuildChecks, funnel, counts: dict) -> list[CheckOutcome]:
    """Evaluate every build check on the computed funnel and counts."""
    out = []

    broken = []
    for prev, step in zip(funnel, funnel[1:]):
        if step.judgments_left != prev.judgments_left - step.judgments_dropped:
            broken.append(
                f"{step.step}: {prev.judgments_left} - {step.judgments_dropped} != {step.judgments_left}"
            )
    out.append(CheckOutcome(
        "funnel_adds_up", not broken, True, "ERROR",
        "the filter funnel adds up" if not broken else "funnel does not add up: " + "; ".join(broken),
        {"broken_steps": len(broken)},
    ))

    read, rejected = counts["lines_read"], counts["lines_rejected"]
    share = rejected / read if read else 0.0
    block = share > cfg.block_rejected_share
    warn = share > cfg.warn_rejected_share
    out.append(CheckOutcome(
        "rejected_share", not block, True, "ERROR",
        f"{rejected} of {read} lines rejected ({share:.1%}, blocking above {cfg.block_rejected_share:.0%})"
        if block else f"{rejected} of {read} lines rejected ({share:.2%})",
        {"rejected": rejected, "lines_read": read, "share": share,
         "block_above": cfg.block_rejected_share},
    ))
    out.append(CheckOutcome(
        "rejected_share_warning", not warn, False, "WARN",
        f"{share:.2%} of lines rejected, above the {cfg.warn_rejected_share:.0%} warning line"
        if warn else f"rejected share {share:.2%} within {cfg.warn_rejected_share:.0%}",
        {"share": share, "warn_above": cfg.warn_rejected_share},
    ))

    n_labels = counts["n_helped"] + counts["n_noise"] + counts["n_wrong"]
    out.append(CheckOutcome(
        "golden_set_not_empty", n_labels > 0, False, "WARN",
        f"{n_labels} labels over {counts['n_queries']} queries" if n_labels
        else "the golden set is empty: no query kept a helped judgment",
        {"labels": n_labels, "queries": counts["n_queries"]},
    ))

    missing = counts["labels_missing_document"]
    out.append(CheckOutcome(
        "labels_point_at_active_documents", missing == 0, True, "ERROR",
        "every label's document is active in the snapshot" if missing == 0
        else f"{missing} labels point at documents not active in the snapshot",
        {"labels_missing_document": missing},
    ))
    return out
