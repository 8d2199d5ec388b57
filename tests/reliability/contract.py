"""The contract's corpus formulas (section 2), written out here so tests hold the code to them."""

from __future__ import annotations

import hashlib


def contract_fingerprint(rows: list[dict]) -> str:
    """Contract section 2, read literally: sha256 hex of the UTF-8 text of one line
    `doc_id \\x1f version \\x1f sha256hex(text) \\n` per active document, by doc_id in
    code-point order (which is the order of their UTF-8 bytes)."""
    active = sorted((r for r in rows if r["status"] == "active"), key=lambda r: r["doc_id"].encode("utf-8"))
    text = "".join(
        r["doc_id"] + "\x1f" + r["version"] + "\x1f" + hashlib.sha256(r["text"].encode("utf-8")).hexdigest() + "\n"
        for r in active
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def contract_drift(older: list[dict], newer: list[dict]) -> float:
    """(active doc_ids added + removed + kept with another version or text) / active documents of the older."""
    old = {r["doc_id"]: (r["version"], r["text"]) for r in older if r["status"] == "active"}
    new = {r["doc_id"]: (r["version"], r["text"]) for r in newer if r["status"] == "active"}
    if not old:
        return 0.0 if not new else 1.0
    changed = len(new.keys() - old.keys()) + len(old.keys() - new.keys())
    changed += sum(1 for d in old.keys() & new.keys() if old[d] != new[d])
    return changed / len(old)
