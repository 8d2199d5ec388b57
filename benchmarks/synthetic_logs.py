"""Synthetic serve logs and a corpus for the scale benchmark, deterministic per seed.

Serves of 5 items over daily `dt=` folders, shaped like a busy deployment:

- tasks repeat (a pool of queries drawn with a skew), with case and white-space
  variants that the contract's normalisation folds together;
- about 30% of serves start with an `always` item (a rule), the rest are ranked;
- about 65% of items are judged (helped 30%, noise 55%, wrong 15%), some twice
  (the later verdict wins); most verdicts land minutes after their serve, some the
  next day (they are written to the next day's `part-0002.jsonl`);
- a few orphan verdicts, verdicts for items that were not served, identical retried
  serves, conflicting duplicate serves, blank lines and malformed lines of every
  reject reason (about 2 in 10,000 lines);
- timestamps mostly `Z`, some with fractions or a `+hh:mm` offset.

Each day is generated from its own seed, so days can be written in parallel and a
day's content does not depend on how many days are generated.
"""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing import Pool
from pathlib import Path

import orjson

ITEMS_PER_SERVE = 5
JUDGED = 0.65
VERDICT_MIX = (("helped", 0.30), ("noise", 0.55), ("wrong", 0.15))
REJUDGED = 0.02
ALWAYS_SHARE = 0.30
MALFORMED_SHARE = 0.0002
START = datetime(2026, 10, 1, tzinfo=UTC)

_VERBS = ("Add", "Fix", "Refactor", "Document", "Test", "Speed up", "Remove", "Migrate", "Review", "Debug")
_OBJECTS = (
    "retries to the webhook sender",
    "the refund window check",
    "pagination in the search API",
    "the nightly export job",
    "rate limits for the public API",
    "the login redirect",
    "caching of invoice totals",
    "the Kafka consumer lag alert",
    "schema drift detection",
    "the CSV importer",
    "feature flags for checkout",
    "the audit log writer",
)
_PROJECTS = (
    "billing-api",
    "search",
    "checkout",
    "identity",
    "data-platform",
    "mobile-app",
    "notifications",
    "admin-console",
    "payments",
    "reporting",
    "infra",
    "docs-site",
)
_MALFORMED = (
    '{"event":"serve","serve_id":"s-trunc","ts":"2026-10-01T00:00:00Z","project":"search","ta',
    '{"event":"verdict","serve_id":"s-1","doc_id":"doc-1","verdict":"helped","ts":"2026-10-01T00:00:00Z","w":NaN}',
    '{"event":"serve","serve_id":"s-x","ts":"2026-10-01T00:00:00Z","project":"search","items":[]}',
    '{"event":"verdict","serve_id":"s-1","doc_id":"doc-1","verdict":"maybe","ts":"2026-10-01T00:00:00Z"}',
    '{"event":"verdict","serve_id":"s-1","doc_id":"doc-1","verdict":"noise","ts":"2026-10-01 00:00:00"}',
    '{"event":"click","serve_id":"s-1"}',
    "[1, 2, 3]",
    '{"event":"verdict","serve_id":"","doc_id":"doc-1","verdict":"noise","ts":"2026-10-01T00:00:00Z",}',
    "not json at all",
)


@dataclass(frozen=True)
class Plan:
    """What to generate: `serves_per_day` serves on each of `days` days over `docs` documents."""

    serves_per_day: int
    days: int
    docs: int
    seed: int = 1
    gzip_every: int = 0  # every k-th day's part-0001 is gzipped (0: none)


def day_name(day: int) -> str:
    return "dt=" + (START + timedelta(days=day)).date().isoformat()


def _ts(t: datetime, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.85:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")
    if r < 0.95:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rng.randrange(1000):03d}Z"
    return (t + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")


def _task(q: int, rng: random.Random) -> str:
    text = f"{_VERBS[q % len(_VERBS)]} {_OBJECTS[(q // 10) % len(_OBJECTS)]} (ticket {q})"
    r = rng.random()
    if r < 0.03:
        return text.upper()
    if r < 0.06:
        return text.replace(" ", "  ", 1) + " "
    return text


def _verdict_line(serve_id: str, doc_id: str, verdict: str, ts: str) -> bytes:
    return (
        b'{"event":"verdict","serve_id":"'
        + serve_id.encode()
        + b'","doc_id":"'
        + doc_id.encode()
        + b'","verdict":"'
        + verdict.encode()
        + b'","ts":"'
        + ts.encode()
        + b'"}\n'
    )


def _pick_verdict(rng: random.Random) -> str:
    r = rng.random()
    for name, share in VERDICT_MIX:
        if r < share:
            return name
        r -= share
    return VERDICT_MIX[-1][0]


def write_day(logs: Path, plan: Plan, day: int) -> tuple[int, int]:
    """Write day `day`'s serves (and its late verdicts into the next day); return (serves, lines)."""
    rng = random.Random(plan.seed * 1_000_003 + day)
    # The query pool depends only on the daily volume, so adding days keeps the same shape.
    n_queries = max(plan.serves_per_day * 10, 1)
    day_start = START + timedelta(days=day)
    next_start = day_start + timedelta(days=1)
    today, late = [], []
    serves = 0
    last_serve = None
    for i in range(plan.serves_per_day):
        # Skewed repetition: a few queries are asked often, most rarely.
        q = int(n_queries * rng.random() ** 2)
        t = day_start + timedelta(seconds=rng.randrange(86400))
        serve_id = f"s-{day:03d}-{i:07d}"
        project = _PROJECTS[q % len(_PROJECTS)]
        items = []
        base = (q * 7919) % plan.docs
        n_ranked = ITEMS_PER_SERVE
        if rng.random() < ALWAYS_SHARE:
            items.append({"doc_id": f"rules/r-{q % 40}", "doc_version": "1", "channel": "always"})
            n_ranked -= 1
        picks = rng.sample(range(8), n_ranked)
        for rank, j in enumerate(sorted(picks), start=1):
            d = (base + j * 31) % plan.docs
            items.append(
                {
                    "doc_id": f"doc-{d}",
                    "doc_version": "1",
                    "channel": "ranked",
                    "rank": rank,
                    "score": round(1.0 - rank * 0.1 - rng.random() * 0.05, 3),
                }
            )
        rec = {
            "event": "serve",
            "serve_id": serve_id,
            "ts": _ts(t, rng),
            "project": project,
            "session_id": f"sess-{rng.randrange(10**6)}",
            "task": _task(q, rng),
            "items": items,
        }
        line = orjson.dumps(rec) + b"\n"
        today.append(line)
        serves += 1
        r = rng.random()
        if r < 0.002:
            today.append(line)  # a retried, identical serve
        elif r < 0.0021 and last_serve is not None:
            # The same serve_id with other content: a conflicting duplicate.
            dup = orjson.loads(last_serve)
            dup["ts"] = _ts(t, rng)
            today.append(orjson.dumps(dup) + b"\n")
        last_serve = line
        for it in items:
            if rng.random() >= JUDGED:
                continue
            for _ in range(2 if rng.random() < REJUDGED else 1):
                delay = rng.expovariate(1 / 1200) if rng.random() < 0.95 else rng.uniform(3600, 6 * 3600)
                vt = t + timedelta(seconds=1 + delay)
                out = today if vt < next_start else late
                out.append(_verdict_line(serve_id, it["doc_id"], _pick_verdict(rng), _ts(vt, rng)))
        r = rng.random()
        if r < 0.001:
            today.append(_verdict_line(f"s-unknown-{day}-{i}", "doc-1", "helped", _ts(t, rng)))
        elif r < 0.002:
            today.append(_verdict_line(serve_id, "doc-never-served", "noise", _ts(t, rng)))
        if rng.random() < MALFORMED_SHARE * 3:
            today.append(rng.choice(_MALFORMED).encode() + b"\n")
        if rng.random() < 0.0005:
            today.append(b"\n")
    folder = logs / day_name(day)
    folder.mkdir(parents=True, exist_ok=True)
    data = b"".join(today)
    if plan.gzip_every and day % plan.gzip_every == plan.gzip_every - 1:
        (folder / "part-0001.jsonl.gz").write_bytes(gzip.compress(data, compresslevel=1))
    else:
        (folder / "part-0001.jsonl").write_bytes(data)
    if day + 1 < plan.days and late:
        nxt = logs / day_name(day + 1)
        nxt.mkdir(parents=True, exist_ok=True)
        (nxt / "part-0002.jsonl").write_bytes(b"".join(late))
    return serves, len(today) + len(late)


def _write_day(args):
    return write_day(*args)


def write_logs(logs: Path, plan: Plan, processes: int = 2) -> tuple[int, int]:
    """Write every day of `plan` under `logs`; return (serves, lines)."""
    jobs = [(logs, plan, day) for day in range(plan.days)]
    if processes > 1 and plan.days > 1:
        with Pool(processes) as pool:
            results = pool.map(_write_day, jobs)
    else:
        results = [_write_day(j) for j in jobs]
    return sum(r[0] for r in results), sum(r[1] for r in results)


def write_corpus(path: Path, docs: int) -> None:
    """The snapshot: `docs` documents (2% retired, 3% at a newer version, 0.5% superseded) and the rules."""
    lines = []
    for r in range(40):
        lines.append(
            orjson.dumps(
                {
                    "doc_id": f"rules/r-{r}",
                    "version": "1",
                    "status": "active",
                    "title": f"Rule {r}",
                    "text": f"Always do rule {r}.",
                }
            )
        )
    for d in range(docs):
        rec = {
            "doc_id": f"doc-{d}",
            "version": "2" if d % 33 == 0 else "1",
            "status": "retired" if d % 50 == 7 else "active",
            "title": f"Document {d}",
            "text": f"Document {d}: how {_OBJECTS[d % len(_OBJECTS)]} works, with examples.",
            "superseded_by": f"doc-{(d + 1) % docs}" if d % 200 == 11 else None,
        }
        lines.append(orjson.dumps(rec))
    path.write_bytes(b"\n".join(lines) + b"\n")
