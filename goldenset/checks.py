"""What a build must satisfy before it is published, and what only earns a warning.

The checks are declared once here (`CHECKS`: name, blocking, description); the
Dagster asset reads its check specs from this table and the build evaluates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goldenset.build_record import BuildRecord, FunnelStep


@dataclass(frozen=True)
class CheckSpec:
    """A build check: its name, whether failing it blocks publishing, and what it holds."""

    name: str
    blocking: bool
    description: str

    @property
    def severity(self) -> str:
        return "ERROR" if self.blocking else "WARN"


FUNNEL_ADDS_UP = CheckSpec(
    "funnel_adds_up", True, "Each step's judgments_left = the previous step's left - its dropped."
)
REJECTED_SHARE = CheckSpec(
    "rejected_share", True, "Log lines rejected at ingest stay at or under the blocking share (default 10%)."
)
REJECTED_SHARE_WARNING = CheckSpec(
    "rejected_share_warning", False, "Log lines rejected at ingest stay at or under the warning share (default 1%)."
)
NOT_EMPTY = CheckSpec("golden_set_not_empty", False, "At least one golden row survives the filters and the merge.")
ACTIVE_DOCUMENTS = CheckSpec(
    "labels_point_at_active_documents", True, "Every label's document is active in the snapshot."
)
LABEL_LINES_REJECTED = CheckSpec(
    "label_lines_rejected",
    False,
    "No label line is rejected, held back lines (unknown_document_version) included (count and reasons; "
    "`goldenset rejects` lists them).",
)
CHECKS: tuple[CheckSpec, ...] = (
    FUNNEL_ADDS_UP,
    REJECTED_SHARE,
    REJECTED_SHARE_WARNING,
    NOT_EMPTY,
    ACTIVE_DOCUMENTS,
    LABEL_LINES_REJECTED,
)


@dataclass(frozen=True)
class BuildChecks:
    """Thresholds for the build checks (shares are fractions of log lines read)."""

    warn_rejected_share: float = 0.01
    block_rejected_share: float = 0.10


@dataclass(frozen=True)
class CheckOutcome:
    """What one check found: passed or not, a one-line detail, expected and actual figures."""

    spec: CheckSpec
    passed: bool
    detail: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def blocking(self) -> bool:
        return self.spec.blocking

    @property
    def severity(self) -> str:
        return self.spec.severity


def emptied_by(funnel: list[FunnelStep]) -> str | None:
    """The funnel step that left no judgment, when there were judgments to begin with."""
    if not funnel or funnel[0].judgments_left == 0:
        return None
    for step in funnel[1:]:
        if step.judgments_left == 0:
            return step.step
    return None


_WHY = {
    "always_served": "every judged item was served on the `always` channel (never ranked)",
    "retired": "every ranked judgment names a document that is not active in the corpus snapshot "
    "(check that --corpus is the index the log was served from)",
    "repeats": "nothing survived the repeats step",
    "no_positive": "no query has a `helped` judgment",
}


def empty_reason(funnel: list[FunnelStep], record: BuildRecord) -> str:
    """Why the golden set is empty, naming the funnel step that emptied it."""
    step = emptied_by(funnel)
    if step is not None:
        judged = funnel[0].judgments_left
        return f"the golden set is empty: {judged} judgments, all dropped by `{step}`: {_WHY.get(step, step)}"
    if record.lines_read == 0:
        return "the golden set is empty: no log line has been read"
    return (
        "the golden set is empty: no verdict matches an item of an accepted serve "
        f"({record.orphan_verdicts} orphan verdicts, {record.unserved_item_verdicts} on unserved items, "
        f"{record.unjudged_items} unjudged items)"
    )


def label_rejects_line(rejected: int, reasons: dict[str, int]) -> str:
    """One line on rejected label lines, as the build's warning and its check say it."""
    detail = ", ".join(f"{k} {v}" for k, v in reasons.items())
    return (
        f"{rejected} label line(s) rejected" + (f" ({detail})" if detail else "") + "; `goldenset rejects` lists them"
    )


def evaluate_checks(
    cfg: BuildChecks,
    funnel: list[FunnelStep],
    record: BuildRecord,
    labels_missing_document: int,
    label_reasons: dict[str, int] | None = None,
) -> list[CheckOutcome]:
    """Evaluate every check of CHECKS on a computed (not yet published) build."""
    out = []

    broken = [
        f"{step.step}: {prev.judgments_left} - {step.judgments_dropped} != {step.judgments_left}"
        for prev, step in zip(funnel, funnel[1:], strict=False)
        if step.judgments_left != prev.judgments_left - step.judgments_dropped
    ]
    out.append(
        CheckOutcome(
            FUNNEL_ADDS_UP,
            not broken,
            "the filter funnel adds up" if not broken else "funnel does not add up: " + "; ".join(broken),
            {"broken_steps": len(broken)},
        )
    )

    # goldenset.counts names each figure: the share is of log lines rejected at ingest (a
    # conflicting duplicate serve, found at build, is a rejected line but not in the share).
    # Shares in data are fractions, like their thresholds (docs/reference/counts.md, Units).
    read, rejected = record.lines_read, record.lines_rejected
    share = rejected / read if read else 0.0
    block = share > cfg.block_rejected_share
    warn = share > cfg.warn_rejected_share
    figures = {"log_lines_rejected_at_ingest": rejected, "log_lines_read": read, "rejected_share": share}
    out.append(
        CheckOutcome(
            REJECTED_SHARE,
            not block,
            f"{rejected:,} of {read:,} log lines rejected at ingest ({share:.1%}), above the blocking share "
            f"{cfg.block_rejected_share:.0%} (--block-rejected-share changes it); `goldenset rejects` lists them"
            if block
            else f"{rejected:,} of {read:,} log lines rejected at ingest ({share:.2%})",
            {**figures, "block_above": cfg.block_rejected_share},
        )
    )
    out.append(
        CheckOutcome(
            REJECTED_SHARE_WARNING,
            not warn,
            f"{share:.2%} of log lines rejected at ingest, above the {cfg.warn_rejected_share:.0%} warning line; "
            "`goldenset rejects` lists them"
            if warn
            else f"rejected share {share:.2%} within {cfg.warn_rejected_share:.0%}",
            {**figures, "warn_above": cfg.warn_rejected_share},
        )
    )

    n_labels = record.n_labels
    out.append(
        CheckOutcome(
            NOT_EMPTY,
            n_labels > 0,
            f"{n_labels} golden rows over {record.n_queries} queries" if n_labels else empty_reason(funnel, record),
            {"golden_rows": n_labels, "n_queries": record.n_queries, "emptied_by": emptied_by(funnel) or ""},
        )
    )

    out.append(
        CheckOutcome(
            ACTIVE_DOCUMENTS,
            labels_missing_document == 0,
            "every label's document is active in the snapshot"
            if labels_missing_document == 0
            else f"{labels_missing_document} labels point at documents not active in the snapshot",
            {"labels_missing_document": labels_missing_document},
        )
    )

    rejected_labels = record.label_lines_rejected
    reasons = dict(label_reasons or {})
    out.append(
        CheckOutcome(
            LABEL_LINES_REJECTED,
            rejected_labels == 0,
            label_rejects_line(rejected_labels, reasons)
            if rejected_labels
            else f"no label line rejected ({record.label_lines_read} read)",
            # `rejected`, `lines_read` and `reasons` are contract 9.4's; the rest name the same
            # figures as every other screen does (goldenset.counts).
            {
                "rejected": rejected_labels,
                "lines_read": record.label_lines_read,
                "reasons": reasons,
                "label_lines_rejected": rejected_labels,
                "label_lines_read": record.label_lines_read,
                "label_lines_held_back": reasons.get("unknown_document_version", 0),
            },
        )
    )
    return out
