"""One unit convention for shares (docs/reference/counts.md, "Units").

A share (a count over a count: a rate, a drift, a coverage) is a fraction between 0 and 1
wherever it is data: JSON, the warehouse's columns, Dagster metadata values, exported files,
and the cells of a table of figures (metric tables, calibration's cutoffs), which a reader
compares with the JSON digit for digit. Where a person reads it in prose (a sentence a command
prints, a status row, a check's description, the page, a report's text, a plot's label) it is
a percentage with `%`, beside the counts it comes from when it has them: "17 of 32 pairs
(53.1%)". No key of data ever carries a percentage (no `_pct`). The contract's own formats
keep their precision (10.3's whole percents, `round(100 x cov)`).
"""

from __future__ import annotations


def percent(share: float, digits: int = 1) -> str:
    """A share as a person reads it: 0.53125 -> "53.1%" (rounded to `digits` decimals)."""
    return f"{share:.{digits}%}"


def of(k: int, n: int, share: float, what: str = "", digits: int = 1) -> str:
    """A count over a count and its share: "17 of 32 pairs (53.1%)"."""
    return f"{k} of {n}{' ' + what if what else ''} ({percent(share, digits)})"


def rate(k: int, n: int, share: float, digits: int = 1) -> str:
    """A rate and the counts it comes from: "3.7% (1 of 27)"."""
    return f"{percent(share, digits)} ({k} of {n})"
