"""Log lines as the demo writes them: timestamps, JSON, lines per (day, part), and the files."""

from __future__ import annotations

import gzip
import random
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

TS_STYLES = ("Z", "+02:00", "-05:00", "frac7")


def ts(instant: datetime, style: str = "Z") -> str:
    """The instant written in one of the contract's `ts` styles (`frac7`: a 7-digit fraction)."""
    if style == "+02:00":
        return (instant + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
    if style == "-05:00":
        return (instant - timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%S") + "-05:00"
    if style == "frac7":
        return instant.strftime("%Y-%m-%dT%H:%M:%S") + f".{instant.microsecond:06d}7Z"
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(obj: Any) -> str:
    """One compact JSON line (orjson: no spaces, keys in insertion order)."""
    return orjson.dumps(obj).decode("utf-8")


@dataclass(frozen=True)
class Line:
    """One line of a log file, with the instant it was written (lines are sorted by it)."""

    day: int
    part: int
    instant: datetime
    seq: int
    text: str


class Parts:
    """Which file of a day a line goes to: part 1, or on a few days the gzip replica, part 2."""

    def __init__(self, rng: random.Random, two_part_days: Collection[int]) -> None:
        self.rng = rng
        self.two_part_days = frozenset(two_part_days)

    @classmethod
    def draw(cls, rng: random.Random, days: int) -> Parts:
        """About one day in four gets a second replica."""
        return cls(rng, sorted(rng.sample(range(days), max(1, days // 4))))

    def for_day(self, day: int) -> int:
        """Half the lines of a two-part day go to the replica; the draw happens only on those days."""
        return 2 if day in self.two_part_days and self.rng.random() < 0.5 else 1


class LogBook:
    """Every line of the month, by (day, part); written out in the order of their instants."""

    def __init__(self, start: date, days: int) -> None:
        self.start = start
        self.days = days
        self.lines: list[Line] = []

    def put(self, day: int, part: int, instant: datetime, text: str) -> None:
        """Add a line; a line dated past the window lands in its last day (the log is cut there)."""
        self.lines.append(Line(min(day, self.days - 1), part, instant, len(self.lines) + 1, text))

    def write(self, logs: Path) -> int:
        """Write LOGS/dt=YYYY-MM-DD/part-0001.jsonl (and part-0002.jsonl.gz); return the lines written.

        The first file starts with a UTF-8 BOM and the middle day's first file has CRLF
        line ends, as the contract allows both.
        """
        files: dict[tuple[int, int], list[Line]] = {}
        for line in self.lines:
            files.setdefault((line.day, line.part), []).append(line)
        n_lines = 0
        for day, part in sorted(files):
            entries = sorted(files[(day, part)], key=lambda e: (e.instant, e.seq))
            folder = logs / f"dt={(self.start + timedelta(days=day)).isoformat()}"
            folder.mkdir(parents=True, exist_ok=True)
            newline = "\r\n" if (day == self.days // 2 and part == 1) else "\n"
            text = newline.join(e.text for e in entries) + newline
            if day == 0 and part == 1:
                text = "\ufeff" + text
            data = text.encode("utf-8")
            n_lines += len(entries)
            if part == 1:
                (folder / "part-0001.jsonl").write_bytes(data)
            else:
                (folder / "part-0002.jsonl.gz").write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
        return n_lines
