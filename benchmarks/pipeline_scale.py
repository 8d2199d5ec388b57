"""Scale benchmark: the pipeline against a hand-written DuckDB SQL script, same files.

    python benchmarks/pipeline_scale.py --items 1000000 [--workdir /tmp/gs-bench]

Prints ratios (pipeline / baseline, nightly / full, unchanged / full), never
absolute pass/fail: the numbers depend on the machine, the ratios much less.
The baseline reads the same JSON Lines with DuckDB's read_json and computes the
same golden set with window functions, but without line-level validation,
quarantine or history: the floor any implementation pays to read the data.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import orjson

ITEMS_PER_SERVE = 8
JUDGED_SHARE = 0.6


def generate(root: Path, items: int, days: int, docs: int, seed: int = 1) -> tuple[Path, Path]:
    """Write `items` served items over `days` log days, and a corpus of `docs` documents."""
    rng = random.Random(seed)
    logs = root / "logs"
    serves = items // ITEMS_PER_SERVE
    per_day = serves // days
    start = datetime(2026, 10, 1)
    tasks = [f"task number {i} about topic {i % 97}" for i in range(max(serves // 4, 1))]
    n = 0
    for day in range(days):
        dt = (start + timedelta(days=day)).date().isoformat()
        folder = logs / f"dt={dt}"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "part-0001.jsonl", "wb") as fh:
            for _ in range(per_day):
                n += 1
                ts = start + timedelta(days=day, seconds=rng.randrange(86400))
                doc_ids = rng.sample(range(docs), ITEMS_PER_SERVE)
                items = [{"doc_id": "rules/style", "doc_version": "1", "channel": "always"}] + [
                    {"doc_id": f"doc-{d}", "doc_version": "1", "channel": "ranked", "rank": r, "score": 0.5}
                    for r, d in enumerate(doc_ids[1:], start=1)]
                sid = f"s-{n}"
                task = rng.choice(tasks)
                fh.write(orjson.dumps({"event": "serve", "serve_id": sid, "ts": ts.isoformat() + "Z",
                                       "project": f"p{n % 5}", "task": task, "items": items}) + b"\n")
                for it in items:
                    if rng.random() < JUDGED_SHARE:
                        v = rng.choice(("helped", "noise", "noise", "wrong"))
                        vts = ts + timedelta(seconds=rng.randrange(1, 3600))
                        fh.write(orjson.dumps({"event": "verdict", "serve_id": sid, "doc_id": it["doc_id"],
                                               "verdict": v, "ts": vts.isoformat() + "Z"}) + b"\n")
    corpus = root / "corpus.jsonl"
    with open(corpus, "wb") as fh:
        fh.write(orjson.dumps({"doc_id": "rules/style", "version": "1", "status": "active", "text": "rule"}) + b"\n")
        for d in range(docs):
            status = "retired" if d % 50 == 0 else "active"
            fh.write(orjson.dumps({"doc_id": f"doc-{d}", "version": "2" if d % 40 == 0 else "1",
                                   "status": status, "text": f"document {d}"}) + b"\n")
    return logs, corpus


BASELINE_SQL = """
CREATE TABLE raw AS SELECT * FROM read_json(?, format='newline_delimited', union_by_name=true,
  columns={event:'VARCHAR', serve_id:'VARCHAR', ts:'VARCHAR', project:'VARCHAR', task:'VARCHAR',
           doc_id:'VARCHAR', verdict:'VARCHAR',
           items:'STRUCT(doc_id VARCHAR, doc_version VARCHAR, channel VARCHAR, rank BIGINT)[]'});
CREATE TABLE corpus AS SELECT * FROM read_json(?, format='newline_delimited');
CREATE TABLE serves AS SELECT serve_id, ts::TIMESTAMPTZ AS ts, project,
  array_to_string(string_split_regex(lower(trim(task)), '\\s+'), ' ') AS qnorm, task, items
  FROM raw WHERE event = 'serve' QUALIFY row_number() OVER (PARTITION BY serve_id) = 1;
CREATE TABLE v AS SELECT serve_id, doc_id, verdict FROM raw WHERE event = 'verdict'
  QUALIFY row_number() OVER (PARTITION BY serve_id, doc_id ORDER BY ts::TIMESTAMPTZ DESC) = 1;
CREATE TABLE j AS SELECT s.serve_id, s.ts, s.project, s.qnorm, i.doc_id, i.doc_version, i.channel, v.verdict
  FROM (SELECT serve_id, ts, project, qnorm, unnest(items) AS i FROM serves) s
  JOIN v ON v.serve_id = s.serve_id AND v.doc_id = s.i.doc_id;
CREATE TABLE labels AS SELECT * FROM (
  SELECT j.*, row_number() OVER (PARTITION BY j.project, j.qnorm, j.doc_id ORDER BY j.ts DESC, j.serve_id DESC) AS rn
  FROM j JOIN corpus c ON c.doc_id = j.doc_id AND c.status = 'active' WHERE channel = 'ranked')
  WHERE rn = 1 AND (project, qnorm) IN (SELECT project, qnorm FROM j WHERE verdict = 'helped');
"""


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/goldenset-bench"))
    args = ap.parse_args()

    from goldenset.build import build_golden_set
    from goldenset.checks import BuildChecks
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import snapshot_corpus
    from goldenset.warehouse import connect

    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    gen_s, (logs, corpus) = timed(lambda: generate(args.workdir, args.items, args.days + 1, args.docs))
    last_day = sorted(p.name for p in logs.iterdir())[-1]
    held_back = args.workdir / last_day
    shutil.move(str(logs / last_day), held_back)  # the "new day" for the nightly measurement
    print(f"generated {args.items:,} served items over {args.days} days (+1 held back) in {gen_s:.1f}s")

    base = duckdb.connect(str(args.workdir / "baseline.duckdb"))
    base_s, _ = timed(lambda: _run_baseline(base, logs, corpus))
    base.close()

    con = connect(args.workdir / "goldenset.duckdb")
    checks = BuildChecks()

    def full():
        ingest_all(con, logs)
        snapshot_corpus(con, corpus)
        return build_golden_set(con, checks=checks)

    full_s, res = timed(full)
    unchanged_s, _ = timed(full)
    shutil.move(str(held_back), logs / last_day)
    nightly_s, _ = timed(full)
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    print(f"baseline SQL script      {base_s:7.1f}s")
    print(f"full build               {full_s:7.1f}s   ratio to baseline {full_s / base_s:5.2f}")
    print(f"unchanged rebuild        {unchanged_s:7.1f}s   ratio to full     {unchanged_s / full_s:5.3f}")
    print(f"nightly (one new day)    {nightly_s:7.1f}s   ratio to full     {nightly_s / full_s:5.3f}")
    print(f"peak RSS of this process {rss_gb:7.2f} GB; golden set: {res.counts['n_queries']:,} queries")


def _run_baseline(con, logs: Path, corpus: Path) -> None:
    for stmt in (s for s in BASELINE_SQL.split(";") if s.strip()):
        if "read_json(?" in stmt and "corpus" in stmt.split("AS")[0]:
            con.execute(stmt, [str(corpus)])
        elif "read_json(?" in stmt:
            con.execute(stmt, [str(logs / "*" / "*.jsonl")])
        else:
            con.execute(stmt)


if __name__ == "__main__":
    main()
