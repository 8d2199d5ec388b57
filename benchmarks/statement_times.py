"""Time each SQL statement of an ingestion or of one build, measured alone, in one process.

    python benchmarks/statement_times.py ingest LOGS [--top 30]
        ingests every day of LOGS into a fresh warehouse (a temporary file)
    python benchmarks/statement_times.py build WAREHOUSE [--top 30]
        builds once on a copy of WAREHOUSE (the corpus snapshot it holds; whatever was
        ingested since its last build is what the build folds)
    python benchmarks/statement_times.py export WAREHOUSE [--top 30]
        exports the latest build of a copy of WAREHOUSE into a temporary folder

It prints the total, then each statement's text (its first 100 characters) with its time
summed over its runs and how often it ran, costliest first. The per-statement figures of
the "Where the time goes" section of docs/performance.md come from this.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goldenset.build import build_golden_set  # noqa: E402
from goldenset.export import export_build  # noqa: E402
from goldenset.ingest import ingest_all  # noqa: E402
from goldenset.warehouse import connect  # noqa: E402


class TimedConnection:
    """A DuckDB connection whose `execute` calls are timed, by statement text."""

    def __init__(self, con):
        self._con = con
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.runs: Counter[str] = Counter()

    def execute(self, sql, *args):
        t0 = time.perf_counter()
        result = self._con.execute(sql, *args)
        key = " ".join(str(sql).split())[:100]
        self.seconds[key] += time.perf_counter() - t0
        self.runs[key] += 1
        return result

    def __getattr__(self, name):
        return getattr(self._con, name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("ingest", "build", "export"))
    ap.add_argument("path", type=Path, help="LOGS folder (ingest) or warehouse file (build, export)")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "timed.duckdb"
        if args.what != "ingest":
            shutil.copy(args.path, db)
            wal = args.path.with_name(args.path.name + ".wal")
            if wal.exists():
                shutil.copy(wal, db.with_name(db.name + ".wal"))
        con = TimedConnection(connect(db))
        t0 = time.perf_counter()
        if args.what == "ingest":
            ingest_all(con, args.path)
        elif args.what == "build":
            build_golden_set(con)
        else:
            export_build(con, Path(tmp) / "export")
        t1 = time.perf_counter()
        con.close()
        t2 = time.perf_counter()
    print(f"{args.what} {t1 - t0:.2f} s, close {t2 - t1:.2f} s, SQL {sum(con.seconds.values()):.2f} s")
    for key, seconds in sorted(con.seconds.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{seconds:7.2f} s  x{con.runs[key]:<4} {key}")


if __name__ == "__main__":
    main()
