"""The clock, defined once: now in UTC, naive, as the warehouse stores every timestamp.

DuckDB's TIMESTAMP has no zone; every timestamp goldenset writes is UTC by this rule.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now in UTC, naive, as the warehouse stores timestamps."""
    return datetime.now(UTC).replace(tzinfo=None)
