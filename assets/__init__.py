"""Thin Dagster assets over the goldenset library."""

from __future__ import annotations

from typing import NoReturn

import dagster as dg
import duckdb

from goldenset.errors import DatabaseBusy, GoldensetError

# A transient failure (the DuckDB file held by another writer past the wait) is retried
# by the step itself; a refusal would fail the same way again and is not retried.
BUSY_RETRIES = 2
BUSY_RETRY_SECONDS = 15


def fail_or_retry(exc: Exception, db_path: str | None = None) -> Exception:
    """The Dagster exception to raise for an error: a retry when transient, else a final failure.

    A DuckDB error at query time (a damaged file, a full disk) is named with the
    warehouse's path and not retried: it would fail the same way again.
    """
    if isinstance(exc, DatabaseBusy):
        return dg.RetryRequested(max_retries=BUSY_RETRIES, seconds_to_wait=BUSY_RETRY_SECONDS)
    if isinstance(exc, GoldensetError):
        return dg.Failure(description=str(exc), allow_retries=False)
    if isinstance(exc, duckdb.Error):
        return dg.Failure(description=damaged_message(db_path, exc), allow_retries=False)
    return exc


def raise_for(exc: Exception, db_path: str | None = None) -> NoReturn:
    """Raise what fail_or_retry makes of `exc`, chained to it; an error it leaves alone is re-raised as is."""
    converted = fail_or_retry(exc, db_path)
    if converted is exc:
        raise exc
    raise converted from exc


def damaged_message(db_path: str | None, exc: Exception) -> str:
    """One line for a DuckDB failure inside the warehouse."""
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    where = f"warehouse {db_path}" if db_path else "the warehouse"
    return (
        f"DuckDB failed reading or writing {where} ({first}); if the file is damaged, restore it from a "
        "backup, or move it aside and build again from the logs"
    )


def short_fingerprint(fp: str | None) -> str:
    """The first 16 hex digits: enough to tell snapshots apart at a glance."""
    return (fp or "")[:16]


def table_metadata(relation: str, row_count: int) -> dict[str, dg.MetadataValue]:
    """`dagster/column_schema` (from the schema catalogue, with each column's meaning) and `dagster/row_count`."""
    from goldenset.schema import RELATIONS

    rel = next(r for r in RELATIONS if r.name == relation)
    return {
        "dagster/column_schema": dg.MetadataValue.table_schema(
            dg.TableSchema(columns=[dg.TableColumn(c.name, c.type, description=c.doc) for c in rel.columns])
        ),
        "dagster/row_count": dg.MetadataValue.int(int(row_count)),
    }


def sample_caption(shown: int, total: int, what: str) -> str:
    """What a sample holds of the whole: "10 of 15 rejected lines" (never a bare, silently cut table)."""
    return f"{shown} of {total} {what}" + (" (all)" if shown == total else f" (the first {shown})")
