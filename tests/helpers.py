"""Small writers for hand-made logs and corpora (shared by the test modules)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def serve(serve_id, ts, task, items, project="billing", **extra) -> dict:
    return {"event": "serve", "serve_id": serve_id, "ts": ts, "project": project, "task": task, "items": items, **extra}


def ranked(doc_id, rank, version="v1") -> dict:
    return {"doc_id": doc_id, "doc_version": version, "channel": "ranked", "rank": rank}


def always(doc_id, version="v1") -> dict:
    return {"doc_id": doc_id, "doc_version": version, "channel": "always"}


def verdict(serve_id, doc_id, v, ts) -> dict:
    return {"event": "verdict", "serve_id": serve_id, "doc_id": doc_id, "verdict": v, "ts": ts}


def write_log(root: Path, dt: str, name: str, records) -> Path:
    """Write records (dicts, or raw strings written as they are) as one log file."""
    folder = Path(root) / f"dt={dt}"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records)
    path = folder / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def doc(doc_id, version="v1", status="active", text=None, superseded_by=None, title=None) -> dict:
    return {
        "doc_id": doc_id,
        "version": version,
        "status": status,
        "text": f"text of {doc_id} {version}" if text is None else text,
        "title": title or doc_id,
        "superseded_by": superseded_by,
    }


def write_corpus(path: Path, docs) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def split_whitespace() -> str:
    """Every character `str.split()` splits on, computed over all code points (the contract's
    task normalisation is defined by `str.split()`, so tests draw white space from this, never
    from a hand-made list)."""
    return "".join(c for c in map(chr, range(sys.maxunicode + 1)) if f"a{c}b".split() == ["a", "b"])
