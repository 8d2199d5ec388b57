"""Scale benchmark: `goldenset build` as a user runs it against a hand-written DuckDB script.

    python benchmarks/pipeline_scale.py --items 10000000 --workdir /tmp/gs-bench
    python benchmarks/pipeline_scale.py --tiny          # seconds; what CI runs

Generates N served items (serves of 5 items) over --days log days, plus the days
the incremental figures need, then times separate processes under /usr/bin/time -v
on the same files:

1. the baseline: benchmarks/baseline.sql (the four filters straight from read_json,
   no validation, quarantine or history), run by benchmarks/run_sql.py, with DuckDB's
   default memory limit (80% of the machine), then again under the pipeline's own
   (GOLDENSET_DUCKDB_MEMORY_LIMIT, default 2 GiB, insertion order off), the bound that
   keeps the build under 3 GB at 10 M items;
2. `python -m goldenset build --logs L --corpus C --db D` on the --days days (full);
3. the same again (unchanged rebuild);
4. after one new day (nightly on top of --days days);
5. after the days up to --history-days (a backfill, reported but not a target),
   then one more new day (nightly on top of --history-days days);
6. with --staged (the default): the full build of the --days days again, each on a
   fresh warehouse and home, staged as Parquet by 1 and then 2 worker processes
   (`build --workers N`), the scale-out path's backfill.

It prints wall time and peak RSS of each, the ratios the scale targets are stated
in (full / script, unchanged / full, nightly / full, nightly at --history-days /
nightly at --days) and the cost per served item. The machine is shared, so only
ratios from one run are comparable; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb

from goldenset.warehouse import DEFAULT_MEMORY_LIMIT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_logs import ITEMS_PER_SERVE, Plan, day_name, write_corpus, write_logs  # noqa: E402

HERE = Path(__file__).resolve().parent
TIME = "/usr/bin/time"


@dataclass
class Run:
    """One timed process."""

    name: str
    seconds: float
    peak_rss_bytes: int
    output: str
    repeats: list[float] = field(default_factory=list)  # every run's seconds, when repeated (seconds: the median)


def timed(name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """Run argv under /usr/bin/time -v; wall time measured here, peak RSS from time's report."""
    if not Path(TIME).exists():
        raise SystemExit(f"{TIME} is missing: install Debian's `time` package (apt-get install time)")
    report = cwd / f".time-{name}.txt"
    t = time.perf_counter()
    proc = subprocess.run([TIME, "-v", "-o", str(report), *argv], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report.read_text())
    report.unlink()
    return Run(name, seconds, int(m.group(1)) * 1024 if m else 0, proc.stdout + proc.stderr)


def timed_from_same_state(
    name: str, argv: list[str], cwd: Path, env: dict[str, str], state: list[Path], repeat: int
) -> Run:
    """Run argv `repeat` times, each from the same `state` (files and folders restored between
    runs, written to disk before each run); the median run, with every run's time.

    A nightly moves by a tenth between runs on a shared machine; the median of a few says more
    about a ratio of two nightlies than one run of each.
    """
    if repeat <= 1:
        return timed(name, argv, cwd, env)
    saved = cwd / f".before-{name}"
    shutil.rmtree(saved, ignore_errors=True)
    saved.mkdir()
    present = [p for p in state if p.exists()]
    for p in present:
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, saved / p.name)
    runs = []
    try:
        for i in range(repeat):
            if i:
                for p in state:
                    if p.is_dir():
                        shutil.rmtree(p)
                    elif p.exists():
                        p.unlink()
                for p in present:
                    (shutil.copytree if (saved / p.name).is_dir() else shutil.copy2)(saved / p.name, p)
            os.sync()
            runs.append(timed(name, argv, cwd, env))
    finally:
        shutil.rmtree(saved, ignore_errors=True)
    median = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
    return Run(name, median.seconds, max(r.peak_rss_bytes for r in runs), median.output, [r.seconds for r in runs])


def move_days(pool: Path, logs: Path, days: range) -> None:
    for day in days:
        src = pool / day_name(day)
        if src.exists():
            shutil.move(str(src), logs / day_name(day))


def labels_in(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM golden_set").fetchone()[0]
    finally:
        con.close()


_LATEST_FUNNEL = (
    "SELECT step, judgments_dropped, judgments_left, units_left FROM filter_funnel "
    "WHERE build_id = (SELECT max(build_id) FROM golden_builds) ORDER BY step_order"
)
_LATEST_COUNTS = (
    "SELECT n_queries, n_projects, n_helped, n_noise, n_wrong, n_stale, unjudged_items, orphan_verdicts, "
    "unserved_item_verdicts, lines_read, lines_rejected, conflicting_serves FROM golden_builds "
    "ORDER BY build_id DESC LIMIT 1"
)
# The golden set as a multiset: its size and the sum of its rows' hashes.
_GOLDEN_SUM = "SELECT count(*), sum(hash(g)::HUGEINT) FROM golden_set g"


def _latest(db: Path) -> dict[str, list]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            name: con.execute(sql).fetchall()
            for name, sql in (("golden set", _GOLDEN_SUM), ("funnel", _LATEST_FUNNEL), ("counts", _LATEST_COUNTS))
        }
    finally:
        con.close()


def differences(db: Path, fresh: Path) -> list[str]:
    """What the latest builds of two warehouses disagree on: golden set rows, funnel, counts."""
    a, b = _latest(db), _latest(fresh)
    return [f"the {name} differs ({a[name]} against {b[name]})" for name in a if a[name] != b[name]]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description="Time goldenset build against a hand-written DuckDB script.")
    ap.add_argument("--items", type=int, default=1_000_000, help="served items over --days days")
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument(
        "--history-days",
        type=int,
        default=None,
        help="second nightly on top of this many days (default 2 x --days; 0 skips it)",
    )
    ap.add_argument("--docs", type=int, default=None, help="corpus size (default items / 100, at least 1,000)")
    ap.add_argument("--gzip-every", type=int, default=0, help="gzip every k-th day's main file (0: none)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goldenset-bench"))
    ap.add_argument("--tiny", action="store_true", help="a few thousand items over 3 days: seconds, for CI")
    ap.add_argument(
        "--staged",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the full build staged by 1 and 2 worker processes",
    )
    ap.add_argument(
        "--check-fresh",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the last nightly, build a fresh warehouse on the same logs and compare (default: with --tiny)",
    )
    ap.add_argument(
        "--repeat-nightly",
        type=int,
        default=1,
        help="run each nightly this many times from the same warehouse and report the median (default 1; 2 with --tiny)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated data and databases")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.tiny:
        args.items, args.days, args.gzip_every = 3_000, 3, 2
        args.repeat_nightly = max(args.repeat_nightly, 2)
    history = 2 * args.days if args.history_days is None else args.history_days
    if history and history <= args.days:
        ap.error("--history-days must exceed --days")
    docs = args.docs or max(args.items // 100, 1_000)
    serves_per_day = max(args.items // ITEMS_PER_SERVE // args.days, 1)

    work = args.workdir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    pool, logs = work / "pool", work / "logs"
    logs.mkdir(parents=True)
    corpus = work / "corpus.jsonl"
    total_days = (history + 1) if history else args.days + 1
    t = time.perf_counter()
    write_logs(pool, Plan(serves_per_day, total_days, docs, gzip_every=args.gzip_every))
    write_corpus(corpus, docs)
    gen_s = time.perf_counter() - t
    move_days(pool, logs, range(args.days))
    log_bytes = sum(p.stat().st_size for p in logs.rglob("*") if p.is_file())
    items = serves_per_day * args.days * ITEMS_PER_SERVE
    print(
        f"served items             {items:,} ({serves_per_day * args.days:,} serves x {ITEMS_PER_SERVE}, "
        f"{args.days} days, {log_bytes / 1e9:.2f} GB of logs, {docs:,} documents; generated in {gen_s:.0f} s)"
    )

    # All of the build's state (Dagster instance included) under the work directory.
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(GOLDENSET_HOME=str(work / "home"), PYTHONUNBUFFERED="1")
    py = sys.executable
    base_db, db = work / "baseline.duckdb", work / "goldenset.duckdb"
    baseline = [
        py,
        str(HERE / "run_sql.py"),
        str(HERE / "baseline.sql"),
        "--db",
        str(base_db),
        "--var",
        f"logs={logs}/dt=*/*.jsonl*",
        "--var",
        f"corpus={corpus}",
    ]
    script = timed("script", baseline, work, env)
    base_db.unlink()
    # The bound the build runs under (GOLDENSET_DUCKDB_MEMORY_LIMIT, else the default).
    bound = os.environ.get("GOLDENSET_DUCKDB_MEMORY_LIMIT") or f"{DEFAULT_MEMORY_LIMIT}B"
    bound_name = os.environ.get("GOLDENSET_DUCKDB_MEMORY_LIMIT") or f"{DEFAULT_MEMORY_LIMIT / 2**30:g} GiB"
    script_bounded = timed("script_bounded", [*baseline, "--memory-limit", bound], work, env)
    build = [py, "-m", "goldenset", "build", "--logs", str(logs), "--corpus", str(corpus), "--db", str(db)]
    full = timed("full", build, work, env)
    labels = labels_in(db)
    script_labels = labels_in(base_db)
    staged: dict[int, Run] = {}
    staged_labels: dict[int, int] = {}
    if args.staged:
        for workers in (1, 2):
            home = work / f"home-staged-{workers}"
            staged_db = work / f"staged-{workers}.duckdb"
            staged_env = {**env, "GOLDENSET_HOME": str(home)}
            argv_staged = [*build[:-1], str(staged_db), "--workers", str(workers)]
            staged[workers] = timed(f"staged_{workers}", argv_staged, work, staged_env)
            staged_labels[workers] = labels_in(staged_db)
            shutil.rmtree(home / "staging", ignore_errors=True)
            staged_db.unlink()
    unchanged = timed("unchanged", build, work, env)
    # The state a nightly starts from: the warehouse (and its WAL, if one was left) and the home.
    state = [db, db.with_name(db.name + ".wal"), work / "home"]
    move_days(pool, logs, range(args.days, args.days + 1))
    nightly = timed_from_same_state("nightly", build, work, env, state, args.repeat_nightly)
    runs = [script, script_bounded, full, *staged.values(), unchanged, nightly]
    backfill = nightly_h = None
    if history:
        move_days(pool, logs, range(args.days + 1, history))
        backfill = timed("backfill", build, work, env)
        move_days(pool, logs, range(history, history + 1))
        nightly_h = timed_from_same_state("nightly_history", build, work, env, state, args.repeat_nightly)
        runs += [backfill, nightly_h]

    fresh_diff = None
    if args.check_fresh if args.check_fresh is not None else args.tiny:
        # The nightly builds (folded or recomputed) must publish what one full build of
        # the same logs publishes.
        fresh_db = work / "fresh.duckdb"
        fresh_env = {**env, "GOLDENSET_HOME": str(work / "home-fresh")}
        timed("fresh", [*build[:-1], str(fresh_db)], work, fresh_env)
        fresh_diff = differences(db, fresh_db)

    def repeats(r: Run) -> str:
        return f"  (median of {len(r.repeats)}: {', '.join(f'{t:.1f}' for t in r.repeats)} s)" if r.repeats else ""

    def gb(r: Run) -> str:
        return f"peak RSS {r.peak_rss_bytes / 1e9:5.2f} GB"

    print(f"baseline SQL script      {script.seconds:8.1f} s   {gb(script)}")
    print(
        f"{'script, ' + bound_name + ' limit':<25}{script_bounded.seconds:8.1f} s   {gb(script_bounded)}   "
        f"full build / this {full.seconds / script_bounded.seconds:.2f}"
    )
    print(
        f"full build               {full.seconds:8.1f} s   {gb(full)}   ratio to script {full.seconds / script.seconds:.2f}"
    )
    for workers, r in staged.items():
        print(
            f"full, staged x{workers} proc    {r.seconds:8.1f} s   {gb(r)}   ratio to script "
            f"{r.seconds / script.seconds:.2f}, to direct {r.seconds / full.seconds:.2f}"
        )
    if len(staged) == 2:
        print(f"staged speed-up 2 procs  {staged[1].seconds / staged[2].seconds:.2f}x over 1 process")
    print(
        f"unchanged rebuild        {unchanged.seconds:8.1f} s   {gb(unchanged)}   "
        f"{100 * unchanged.seconds / full.seconds:.1f}% of full"
    )
    print(
        f"nightly on {args.days:>3} days       {nightly.seconds:8.1f} s   {gb(nightly)}   "
        f"{100 * nightly.seconds / full.seconds:.1f}% of full{repeats(nightly)}"
    )
    if history:
        print(f"backfill to {history:>3} days      {backfill.seconds:8.1f} s   {gb(backfill)}")
        print(
            f"nightly on {history:>3} days       {nightly_h.seconds:8.1f} s   {gb(nightly_h)}   "
            f"ratio to nightly on {args.days} days {nightly_h.seconds / nightly.seconds:.2f}{repeats(nightly_h)}"
        )
    print(
        f"cost per served item     full build {1e6 * full.seconds / items:.2f} us, "
        f"script {1e6 * script.seconds / items:.2f} us"
    )
    print(f"golden set labels        build {labels:,}, script {script_labels:,}")
    for workers, n in staged_labels.items():
        print(
            f"                         staged x{workers} {n:,}" + ("" if n == labels else "  (DIFFERS from the build)")
        )
    if fresh_diff is not None:
        print(
            "nightly equals a fresh full build of the same logs: "
            + ("yes" if not fresh_diff else "NO: " + "; ".join(fresh_diff))
        )
    result = {
        "nightly_equals_fresh": None if fresh_diff is None else not fresh_diff,
        "items": items,
        "days": args.days,
        "history_days": history,
        "log_bytes": log_bytes,
        "docs": docs,
        "labels": labels,
        "script_labels": script_labels,
        "staged_labels": {str(k): v for k, v in staged_labels.items()},
        "runs": {r.name: {k: v for k, v in asdict(r).items() if k != "output"} for r in runs},
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


if __name__ == "__main__":
    main()
