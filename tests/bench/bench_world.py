"""The benchmark's test world: a real warehouse built by the real pipeline from tiny logs.

Every test gets its own DuckDB file under tmp_path; nothing reads /work/shared.
The embedding model is loaded once per session (it costs seconds on two cores).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.helpers import World, copy_built_folder

DATA = Path(__file__).parent / "data"

# doc_id, title, text
DOCS = [
    ("webhooks/retries", "Webhook retries", "Retry failed webhook deliveries with exponential backoff and jitter."),
    ("webhooks/signing", "Webhook signing", "Sign webhook payloads with HMAC so receivers can verify the sender."),
    ("billing/refunds", "Refund policy", "Refunds are issued to the original payment method within ten days."),
    ("billing/invoices", "Invoices", "Invoices are generated monthly and list every charge and refund."),
    ("auth/password-reset", "Password reset", "Users reset a forgotten password through a one-time emailed link."),
    ("auth/tokens", "API tokens", "API tokens expire after ninety days; rotate them before expiry."),
    ("ops/rate-limits", "Rate limiting", "Requests above the rate limit get HTTP 429 with a Retry-After header."),
    ("ops/rollback", "Deploy rollback", "Roll back a failed deploy by redeploying the previous release tag."),
    ("db/migrations", "Database migrations", "Write reversible schema migrations and run them before the deploy."),
    ("db/backups", "Backups", "Nightly database backups are kept for thirty days and restored weekly."),
    ("search/indexing", "Search indexing", "The search index is rebuilt when documents change in the corpus."),
    ("search/pagination", "Pagination", "List endpoints paginate with an opaque cursor instead of offsets."),
    ("mail/templates", "Email templates", "Email templates live in the mail service and support localisation."),
    ("time/zones", "Time zones", "Store timestamps in UTC and convert to the user's zone when displaying."),
    ("uploads/files", "File uploads", "Uploads above fifty megabytes go through resumable multipart requests."),
    ("obs/errors", "Error monitoring", "Unhandled exceptions are reported to the error tracker with context."),
]

# task, helped doc_ids, noise/wrong doc_ids
QUERIES = [
    ("Add retries to the webhook sender", ["webhooks/retries", "webhooks/signing"], ["ops/rate-limits"]),
    ("How do refunds work", ["billing/refunds", "billing/invoices"], ["mail/templates"]),
    ("Reset a user's password", ["auth/password-reset", "mail/templates"], ["auth/tokens"]),
    ("Rotate expiring API tokens", ["auth/tokens"], ["auth/password-reset"]),
    ("Roll back a broken deploy", ["ops/rollback", "db/migrations"], ["db/backups"]),
    ("Paginate the list endpoint", ["search/pagination"], ["search/indexing"]),
]


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def write_corpus(
    path: Path, docs=DOCS, *, superseded: dict[str, str] | None = None, versions: dict[str, str] | None = None
) -> Path:
    superseded = superseded or {}
    versions = versions or {}
    with path.open("w", encoding="utf-8") as fh:
        for doc_id, title, text in docs:
            fh.write(
                json.dumps(
                    {
                        "doc_id": doc_id,
                        "version": versions.get(doc_id, "1"),
                        "status": "active",
                        "title": title,
                        "text": text,
                        "superseded_by": superseded.get(doc_id),
                    }
                )
                + "\n"
            )
    return path


def write_logs(root: Path, queries=QUERIES, *, day: str = "2026-11-28", serve_prefix: str = "s") -> Path:
    part = root / f"dt={day}"
    part.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, (task, helped, noise) in enumerate(queries, start=1):
        sid = f"{serve_prefix}-{n:03d}"
        items = [
            {"doc_id": d, "doc_version": "1", "channel": "ranked", "rank": r, "score": 1.0 / r}
            for r, d in enumerate(helped + noise, start=1)
        ]
        lines.append(
            {
                "event": "serve",
                "serve_id": sid,
                "ts": f"{day}T10:{n:02d}:00Z",
                "project": "demo",
                "task": task,
                "items": items,
            }
        )
        for d in helped:
            lines.append(
                {"event": "verdict", "serve_id": sid, "doc_id": d, "verdict": "helped", "ts": f"{day}T11:{n:02d}:00Z"}
            )
        for i, d in enumerate(noise):
            lines.append(
                {
                    "event": "verdict",
                    "serve_id": sid,
                    "doc_id": d,
                    "verdict": "noise" if i % 2 == 0 else "wrong",
                    "ts": f"{day}T11:{n:02d}:30Z",
                }
            )
    (part / "part-0001.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return root


def build_golden(
    tmp: Path, *, built_at: datetime | None = None, docs=DOCS, queries=QUERIES, superseded: dict[str, str] | None = None
) -> World:
    """Run the real ingest, snapshot and build on tiny files under tmp."""
    from goldenset import warehouse
    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import store_snapshot

    world = World(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    write_corpus(world.corpus, docs, superseded=superseded)
    write_logs(world.logs, queries)
    con = warehouse.connect(world.db)
    try:
        ingest_all(con, world.logs)
        store_snapshot(con, read_corpus(world.corpus), now=built_at)
        build_golden_set(con, now=built_at)
    finally:
        con.close()
    return world


def copy_golden(template: World, tmp: Path) -> World:
    """The World build_golden would have made at `tmp`, copied from `template` in milliseconds."""
    world = World(tmp)
    copy_built_folder(template.root, tmp, world.db, template.corpus, world.corpus)
    return world


def days_ago(n: float) -> datetime:
    return utcnow() - timedelta(days=n)


def rebuild(g: World, *, more_queries=None, day: str = "2026-11-29") -> int:
    """Build again: unchanged input is a `repeat` build sharing the last labels; new log lines are not."""
    from goldenset import warehouse
    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.ingest import ingest_all
    from goldenset.snapshots import store_snapshot

    if more_queries:
        write_logs(g.logs, more_queries, day=day, serve_prefix=f"s{day}")
    con = warehouse.connect(g.db)
    try:
        ingest_all(con, g.logs)
        store_snapshot(con, read_corpus(g.corpus))
        return build_golden_set(con).record.build_id
    finally:
        con.close()


# The packaged rubric's labels (goldenset/data/support-policies.yaml): grade and an admissible decided_by.
RUBRIC_LABELS = {"relevant": (2, "answerability"), "partial": (1, "coverage"), "irrelevant": (0, "answerability")}


def relabel(g: World, labels: list[tuple[str, str, str]], *, annotator: str = "ana") -> int:
    """Label (task, doc_id, label) pairs as a human would (contract 7.2 lines), then build again.

    The lines go through the real label ingest and build, so the golden set holds them as
    contract 7.3 says: the human label replaces the log label of its pair.
    """
    from importlib.resources import files

    from goldenset import warehouse
    from goldenset.build import build_golden_set
    from goldenset.labelling.ingest import ingest_labels
    from goldenset.labelling.rubric import load_rubric

    root = g.labels
    part = root / "dt=2026-11-30"
    part.mkdir(parents=True, exist_ok=True)
    con = warehouse.connect(g.db)
    try:
        qids = dict(con.execute("SELECT DISTINCT task, query_id FROM golden_set").fetchall())
        lines = []
        for n, (task, doc_id, label) in enumerate(labels):
            lines.append(
                json.dumps(
                    {
                        "event": "label",
                        "query_id": qids[task],
                        "doc_id": doc_id,
                        "doc_version": "1",
                        "label": label,
                        "decided_by": RUBRIC_LABELS[label][1],
                        "annotator": annotator,
                        "rubric": "support-policies",
                        "ts": f"2026-11-30T09:{n:02d}:00Z",
                    }
                )
            )
        path = part / f"{annotator}-{len(list(part.iterdir())):04d}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        rubric = load_rubric(str(files("goldenset") / "data" / "support-policies.yaml"))
        ingest_labels(con, root, rubric)
        return build_golden_set(con).record.build_id
    finally:
        con.close()
