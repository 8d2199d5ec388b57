"""Run a SQL script against a DuckDB file, as its own process: the baseline of the scale benchmark.

    python benchmarks/run_sql.py benchmarks/baseline.sql --db D --var logs='L/dt=*/*.jsonl*' --var corpus=C

Each `--var name=value` is set with SET VARIABLE before the script runs; the script
reads it with getvariable('name'). `--memory-limit` runs it under the bound the pipeline
keeps to (with insertion order off, as the pipeline sets it), spilling past it as DuckDB
does; without it DuckDB takes its default, 80% of the machine's memory. Prints the row
counts of golden_set and filter_funnel.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("script", type=Path)
    ap.add_argument("--db", required=True)
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--memory-limit", help="DuckDB's memory_limit, e.g. 2GiB (default: DuckDB's own)")
    args = ap.parse_args()
    con = duckdb.connect(args.db)
    if args.memory_limit:
        con.execute("SET memory_limit = ?", [args.memory_limit])
        con.execute("SET preserve_insertion_order = false")
    for spec in args.var:
        name, _, value = spec.partition("=")
        if not name.isidentifier():
            ap.error(f"--var {spec!r}: the name must be an identifier")
        con.execute("SET VARIABLE " + name + " = ?", [value])
    con.execute(args.script.read_text())
    n = con.execute("SELECT count(*), count(DISTINCT query_id) FROM golden_set").fetchone()
    print(f"golden_set: {n[0]} labels, {n[1]} queries")
    con.close()


if __name__ == "__main__":
    main()
