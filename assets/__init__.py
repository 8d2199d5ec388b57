"""Thin Dagster assets over the goldenset library."""

from __future__ import annotations

import dagster as dg

from goldenset.errors import DatabaseBusy, GoldensetError

# A transient failure (the DuckDB file held by another writer past the wait) is retried
# by the step itself; a refusal would fail the same way again and is not retried.
BUSY_RETRIES = 2
BUSY_RETRY_SECONDS = 15


def fail_or_retry(exc: Exception) -> Exception:
    """The Dagster exception to raise for a library error: a retry when transient, else a final failure."""
    if isinstance(exc, DatabaseBusy):
        return dg.RetryRequested(max_retries=BUSY_RETRIES, seconds_to_wait=BUSY_RETRY_SECONDS)
    if isinstance(exc, GoldensetError):
        return dg.Failure(description=str(exc), allow_retries=False)
    return exc


def percent(share: float) -> dg.MetadataValue:
    """A share shown as a percentage, rounded for reading."""
    return dg.MetadataValue.float(round(100.0 * share, 2))


def short_fingerprint(fp: str | None) -> str:
    """The first 16 hex digits: enough to tell snapshots apart at a glance."""
    return (fp or "")[:16]
