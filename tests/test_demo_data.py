"""The demo data generator: deterministic, and every line is valid or deliberately not.

The validator here is a small independent reading of CONTRACT.md sections 1-2, so
that the demo data checks the contract rather than the pipeline's own parser.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import time
import unicodedata
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from goldenset.demo import MALFORMED_KINDS, TASKS, DemoData, write_demo_data

END = date(2026, 11, 28)

# ------------------------------------------------------------------ a tiny validator

TS_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


class Bad(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _no_constant(name):
    raise ValueError(f"constant {name}")


def _no_dupes(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k}")
        out[k] = v
    return out


def parse_ts(value) -> datetime:
    m = TS_RE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise Bad("invalid_field")
    head, frac, tz = value[:19], m.group(1), m.group(2)
    micro = (frac[1:7].ljust(6, "0")) if frac else "000000"
    try:
        return datetime.fromisoformat(f"{head}.{micro}{'+00:00' if tz == 'Z' else tz}").astimezone(UTC)
    except ValueError:
        raise Bad("invalid_field") from None


def nonempty(obj, key) -> bool:
    return isinstance(obj.get(key), str) and obj[key] != ""


def check_line(line: str) -> dict:
    """The record of a valid line; raises Bad(reason) for an invalid one."""
    try:
        obj = json.loads(line, parse_constant=_no_constant, object_pairs_hook=_no_dupes)
    except ValueError:
        raise Bad("invalid_json") from None
    if not isinstance(obj, dict):
        raise Bad("not_an_object")
    event = obj.get("event")
    if event not in ("serve", "verdict"):
        raise Bad("unknown_event")
    required = (
        ("serve_id", "ts", "project", "task", "items") if event == "serve" else ("serve_id", "doc_id", "verdict", "ts")
    )
    if any(obj.get(k) is None for k in required):
        raise Bad("missing_field")
    obj["_instant"] = parse_ts(obj["ts"])
    if event == "verdict":
        if not (
            nonempty(obj, "serve_id") and nonempty(obj, "doc_id") and obj["verdict"] in ("helped", "noise", "wrong")
        ):
            raise Bad("invalid_field")
        return obj
    if not (nonempty(obj, "serve_id") and nonempty(obj, "project")):
        raise Bad("invalid_field")
    if not isinstance(obj["task"], str) or not obj["task"].strip():
        raise Bad("invalid_field")
    items = obj["items"]
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise Bad("invalid_field")
    seen = set()
    for it in items:
        if not (nonempty(it, "doc_id") and nonempty(it, "doc_version")) or it["doc_id"] in seen:
            raise Bad("invalid_field")
        seen.add(it["doc_id"])
        if it.get("channel") not in ("ranked", "always"):
            raise Bad("invalid_field")
        if it["channel"] == "ranked":
            rank = it.get("rank")
            if type(rank) is not int or rank < 1:
                raise Bad("invalid_field")
    return obj


def serve_key(obj: dict):
    items = frozenset(
        (i["doc_id"], i["doc_version"], i["channel"], i.get("rank") if i["channel"] == "ranked" else None)
        for i in obj["items"]
    )
    return (obj["_instant"], obj["project"], obj["task"], items)


def read_lines(logs: Path):
    """(source_file, line_no, text) in the contract's order, blank lines skipped."""
    out = []
    blanks = 0
    for folder in sorted(p for p in logs.iterdir() if p.is_dir() and p.name.startswith("dt=")):
        for f in sorted(folder.iterdir(), key=lambda p: p.name):
            if f.name.endswith(".jsonl.gz"):
                data = gzip.decompress(f.read_bytes())
            elif f.name.endswith(".jsonl"):
                data = f.read_bytes()
            else:
                continue
            text = data.decode("utf-8")
            if text.startswith("\ufeff"):
                text = text[1:]
            parts = text.split("\n")
            if parts and parts[-1] == "":
                parts.pop()
            for n, line in enumerate(parts, start=1):
                if line.endswith("\r"):
                    line = line[:-1]
                if not line.strip():
                    blanks += 1
                    continue
                out.append((f"{folder.name}/{f.name}", n, line))
    return out, blanks


def norm(task: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", task).casefold().split())


def read_corpus(path: Path) -> list[dict]:
    rows = [
        json.loads(line, parse_constant=_no_constant, object_pairs_hook=_no_dupes)
        for line in path.read_text("utf-8").splitlines()
    ]
    for r in rows:
        assert nonempty(r, "doc_id") and nonempty(r, "version")
        assert r["status"] in ("active", "retired")
        assert isinstance(r["text"], str)
        assert r.get("superseded_by") is None or nonempty(r, "superseded_by")
        for opt in ("title", "updated_at"):
            assert r.get(opt) is None or isinstance(r[opt], str)
        if r["status"] == "active":
            assert r["text"].strip()
    ids = [r["doc_id"] for r in rows]
    assert len(ids) == len(set(ids)), "doc_ids must be unique"
    return rows


def fingerprint(rows: list[dict]) -> str:
    lines = "".join(
        f"{r['doc_id']}\x1f{r['version']}\x1f{hashlib.sha256(r['text'].encode()).hexdigest()}\n"
        for r in sorted((r for r in rows if r["status"] == "active"), key=lambda r: r["doc_id"])
    )
    return hashlib.sha256(lines.encode()).hexdigest()


def drift(old: list[dict], new: list[dict]) -> float:
    a = {r["doc_id"]: (r["version"], r["text"]) for r in old if r["status"] == "active"}
    b = {r["doc_id"]: (r["version"], r["text"]) for r in new if r["status"] == "active"}
    changed = len(b.keys() - a.keys()) + len(a.keys() - b.keys()) + sum(1 for k in a.keys() & b.keys() if a[k] != b[k])
    return changed / len(a)


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoData:
    return write_demo_data(tmp_path_factory.mktemp("demo"), end=END)


@pytest.fixture(scope="module")
def parsed(demo):
    lines, blanks = read_lines(demo.logs)
    good, bad = [], []
    for src, n, line in lines:
        try:
            good.append((src, n, check_line(line)))
        except Bad as exc:
            bad.append((src, n, exc.reason, line))
    return {"lines": lines, "blanks": blanks, "good": good, "bad": bad}


@pytest.fixture(scope="module")
def accepted(parsed):
    """serve_id -> (serve record, source), conflicts, identical duplicates."""
    serves: dict[str, tuple[dict, str]] = {}
    conflicts = duplicates = 0
    for src, _, obj in parsed["good"]:
        if obj["event"] != "serve":
            continue
        if obj["serve_id"] in serves:
            if serve_key(serves[obj["serve_id"]][0]) == serve_key(obj):
                duplicates += 1
            else:
                conflicts += 1
            continue
        serves[obj["serve_id"]] = (obj, src)
    return serves, conflicts, duplicates


# ------------------------------------------------------------------ tests


def _all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_deterministic(tmp_path):
    a = write_demo_data(tmp_path / "a", seed=11, end=END)
    b = write_demo_data(tmp_path / "b", seed=11, end=END)
    fa, fb = _all_files(tmp_path / "a"), _all_files(tmp_path / "b")
    assert fa == fb
    assert (a.n_serves, a.n_verdicts, a.n_malformed) == (b.n_serves, b.n_verdicts, b.n_malformed)
    c = write_demo_data(tmp_path / "c", seed=12, end=END)
    assert _all_files(tmp_path / "c") != fa
    assert c.n_malformed == a.n_malformed


def test_layout_and_window(demo):
    folders = sorted(p.name for p in demo.logs.iterdir())
    assert folders[0] == "dt=2026-10-30" and folders[-1] == "dt=2026-11-28"
    assert len(folders) == 30
    for name in folders:
        files = sorted(p.name for p in (demo.logs / name).iterdir())
        assert files in (["part-0001.jsonl"], ["part-0001.jsonl", "part-0002.jsonl.gz"])
    assert demo.corpus_before.name == "corpus-v1.jsonl" and demo.corpus_after.name == "corpus-v2.jsonl"


def test_gzip_second_files(demo):
    gz = sorted(demo.logs.glob("dt=*/part-0002.jsonl.gz"))
    assert gz
    for f in gz:
        text = gzip.decompress(f.read_bytes()).decode("utf-8")
        assert text.count("\n") >= 1
        assert all(check_line(line)["event"] in ("serve", "verdict") for line in text.splitlines() if line.strip())


def test_every_line_valid_or_deliberately_malformed(demo, parsed):
    bad = parsed["bad"]
    assert len(bad) == demo.n_malformed == len(MALFORMED_KINDS)
    assert sorted(r for _, _, r, _ in bad) == sorted(MALFORMED_KINDS.values())
    total = len(parsed["lines"])
    assert total + parsed["blanks"] == demo.n_lines
    assert demo.n_malformed / total < 0.01
    assert total < 3000
    assert parsed["blanks"] >= 3


def test_counts_match(demo, parsed, accepted):
    serves, conflicts, duplicates = accepted
    assert len(serves) == demo.n_serves
    assert 150 <= demo.n_serves <= 600
    assert conflicts == demo.n_conflicting_serves == 1
    assert duplicates == demo.n_duplicate_serves >= 2
    verdicts = [o for _, _, o in parsed["good"] if o["event"] == "verdict"]
    assert len(verdicts) == demo.n_verdicts
    orphans = [v for v in verdicts if v["serve_id"] not in serves]
    assert len(orphans) == demo.n_orphan_verdicts >= 1
    unserved = [
        v
        for v in verdicts
        if v["serve_id"] in serves and v["doc_id"] not in {i["doc_id"] for i in serves[v["serve_id"]][0]["items"]}
    ]
    assert len(unserved) == demo.n_unserved_item_verdicts >= 1
    judged = {(v["serve_id"], v["doc_id"]) for v in verdicts}
    unjudged = sum(1 for sid, (s, _) in serves.items() for i in s["items"] if (sid, i["doc_id"]) not in judged)
    assert unjudged == demo.n_unjudged_items > 0


def test_serves_are_realistic(demo, accepted):
    serves, _, _ = accepted
    v1 = {r["doc_id"]: r for r in read_corpus(demo.corpus_before)}
    for s, _ in serves.values():
        always = [i for i in s["items"] if i["channel"] == "always"]
        ranked = [i for i in s["items"] if i["channel"] == "ranked"]
        assert always and all(i["doc_id"].startswith("rules/") for i in always)
        assert [i["rank"] for i in ranked] == list(range(1, len(ranked) + 1))
        scores = [i["score"] for i in ranked]
        assert scores == sorted(scores, reverse=True)
        for i in s["items"]:
            assert i["doc_id"] in v1, "only documents indexed at the time are served"
            assert i["doc_version"] in ("v1", v1[i["doc_id"]]["version"])
    # Documents retired before the v1 snapshot were served early in the month.
    retired = {d for d, r in v1.items() if r["status"] == "retired"}
    assert any(i["doc_id"] in retired for s, _ in serves.values() for i in s["items"])
    # Documents revised mid-month were served at both versions.
    revised = {d for d, r in v1.items() if r["version"] == "v2"}
    versions = {
        (i["doc_id"], i["doc_version"]) for s, _ in serves.values() for i in s["items"] if i["doc_id"] in revised
    }
    assert {v for _, v in versions} == {"v1", "v2"}


def test_tasks_repeat_with_variants(accepted):
    serves, _, _ = accepted
    canonical = {norm(t) for tasks in TASKS.values() for t, _ in tasks} | {norm(FLIPPED_QUESTION)}
    tasks = [s["task"] for s, _ in serves.values()]
    assert tasks and all(norm(t) in canonical for t in tasks)
    # Variants: more spellings than normalised tasks, and some task served more than once.
    assert len(set(tasks)) > len({norm(t) for t in tasks})
    assert len(tasks) > len(set(tasks))
    per_query = Counter((s["project"], norm(s["task"])) for s, _ in serves.values())
    assert per_query.most_common(1)[0][1] >= 5
    variants: dict[str, set[str]] = {}
    for t in tasks:
        variants.setdefault(norm(t), set()).add(t)
    assert sum(1 for v in variants.values() if len(v) > 1) >= 10
    assert any(any(0xFF01 <= ord(c) <= 0xFF5E for c in t) for t in tasks), "a full-width variant"
    assert any("\ufb01" in t for t in tasks), "an NFKC ligature variant"
    assert any("  " in t.strip() for t in tasks) and any(t != t.strip() for t in tasks)
    assert any(t.islower() for t in tasks)


def test_verdict_edge_cases(parsed, accepted):
    serves, _, _ = accepted
    dt_of = {sid: src.split("/")[0] for sid, (_, src) in serves.items()}
    verdicts = [(src, o) for src, _, o in parsed["good"] if o["event"] == "verdict"]
    # Late verdicts: in a later day's file than their serve.
    assert sum(1 for src, v in verdicts if v["serve_id"] in dt_of and src.split("/")[0] > dt_of[v["serve_id"]]) >= 5
    # Read before their serve (a second file of the same day).
    order = {}
    for pos, (_, _, o) in enumerate(parsed["good"]):
        if o["event"] == "serve":
            order.setdefault(o["serve_id"], pos)
    early = [
        pos
        for pos, (src, _, o) in enumerate(parsed["good"])
        if o["event"] == "verdict" and o["serve_id"] in order and pos < order[o["serve_id"]]
    ]
    assert early
    # Re-marked verdicts, including a tie on the instant and an older one delivered late.
    by_pair: dict[tuple, list] = {}
    for pos, (_, v) in enumerate(verdicts):
        by_pair.setdefault((v["serve_id"], v["doc_id"]), []).append((pos, v))
    remarks = {k: vs for k, vs in by_pair.items() if len(vs) > 1}
    assert len(remarks) >= 3
    assert any(
        len({v["_instant"] for _, v in vs}) == 1 and len({v["verdict"] for _, v in vs}) > 1 for vs in remarks.values()
    )
    assert any(vs[-1][1]["_instant"] < vs[0][1]["_instant"] for vs in remarks.values())
    # Helped / noise / wrong all present, mostly helped or noise.
    c = Counter(v["verdict"] for _, v in verdicts)
    assert c["helped"] > c["wrong"] and c["noise"] > c["wrong"] > 0


def test_timestamp_styles(parsed):
    ts = [o["ts"] for _, _, o in parsed["good"]]
    assert any(t.endswith("Z") for t in ts)
    assert any(t.endswith("+02:00") for t in ts)
    assert any(t.endswith("-05:00") for t in ts)
    assert any("." in t for t in ts)


def test_bom_and_crlf(demo):
    raw = [p.read_bytes() for p in sorted(demo.logs.glob("dt=*/part-0001.jsonl"))]
    assert raw[0].startswith("\ufeff".encode())
    assert any(b"\r\n" in r for r in raw)


def test_corpus_snapshots_and_reindex(demo):
    v1 = read_corpus(demo.corpus_before)
    v2 = read_corpus(demo.corpus_after)
    assert 300 <= len(v1) <= 650
    rules = [r for r in v1 if r["doc_id"].startswith("rules/")]
    assert 3 <= len(rules) <= 5
    a = {r["doc_id"]: r for r in v1}
    b = {r["doc_id"]: r for r in v2}
    assert any(r["status"] == "retired" for r in v1)
    assert all(r["version"] == "v1" or r["version"] == "v2" for r in v1)
    # The reindex: bumps, retirements, supersessions, additions.
    assert sum(1 for d in a if d in b and a[d]["version"] != b[d]["version"]) >= 2
    assert sum(1 for d in a if a[d]["status"] == "active" and b[d]["status"] == "retired") >= 1
    sup = [r for r in v2 if r.get("superseded_by")]
    assert len(sup) >= 2
    assert all(b[r["superseded_by"]]["status"] == "active" for r in sup)
    assert len(b.keys() - a.keys()) >= 1
    assert 0.02 <= drift(v1, v2) <= 0.10
    assert fingerprint(v1) != fingerprint(v2)
    assert fingerprint(v1) == fingerprint(list(reversed(v1)))
    # Real text: standard library docstrings.
    assert "stdlib/json.dumps" in a and "JSON" in a["stdlib/json.dumps"]["text"]


def test_reindex_makes_some_labels_stale(demo, parsed, accepted):
    serves, _, _ = accepted
    b = {r["doc_id"]: r for r in read_corpus(demo.corpus_after)}
    served_version = {
        (sid, i["doc_id"]): i["doc_version"]
        for sid, (s, _) in serves.items()
        for i in s["items"]
        if i["channel"] == "ranked"
    }
    stale = set()
    for _, _, v in parsed["good"]:
        key = (v.get("serve_id"), v.get("doc_id"))
        if v["event"] == "verdict" and v["verdict"] == "helped" and key in served_version:
            row = b.get(v["doc_id"])
            if (
                row
                and row["status"] == "active"
                and (row.get("superseded_by") or row["version"] != served_version[key])
            ):
                stale.add(v["doc_id"])
    assert len(stale) >= 3


def test_fast_and_small_windows(tmp_path):
    t0 = time.perf_counter()
    demo = write_demo_data(tmp_path / "fast", seed=3, end=END)
    assert time.perf_counter() - t0 < 2.0
    assert demo.n_serves > 0
    small = write_demo_data(tmp_path / "small", days=2, end=END)
    assert len(list(small.logs.iterdir())) == 2
    lines, _ = read_lines(small.logs)
    bad = 0
    for _, _, line in lines:
        try:
            check_line(line)
        except Bad:
            bad += 1
    assert bad == small.n_malformed
    with pytest.raises(ValueError):
        write_demo_data(tmp_path / "one", days=1, end=END)


def test_default_end_is_today_utc(tmp_path):
    demo = write_demo_data(tmp_path / "today", days=3)
    today = datetime.now(UTC).date()
    names = sorted(p.name for p in demo.logs.iterdir())
    assert names[-1] in (f"dt={today.isoformat()}", f"dt={date.fromordinal(today.toordinal() - 1).isoformat()}")


# ------------------------------------------------------------------ the support-policies section

STALE = "policies/refunds-2022.md"
IN_FORCE = "policies/refunds-current.md"
CANCELLATIONS = "policies/cancellations.md"
CASE_QUESTION = "How many days does a customer have to request a refund?"
FLIPPED_QUESTION = "Does a cancelled plan stay active until the end of the billing period?"


def test_the_policy_section_lives_under_policies_and_legal_in_both_snapshots(demo):
    v1 = {r["doc_id"]: r for r in read_corpus(demo.corpus_before)}
    v2 = {r["doc_id"]: r for r in read_corpus(demo.corpus_after)}
    section = sorted(d for d in v2 if d.startswith(("policies/", "legal/")))
    assert 6 <= len(section) <= 10
    assert any(d.startswith("legal/") for d in section)
    assert all(v2[d]["status"] == "active" for d in section)
    # The page in force only reached the index at the reindex; every other page was there before.
    assert sorted(d for d in v1 if d.startswith(("policies/", "legal/"))) == [d for d in section if d != IN_FORCE]


def test_the_reindex_supersedes_the_2022_refund_page_but_leaves_it_active(demo):
    v1 = {r["doc_id"]: r for r in read_corpus(demo.corpus_before)}
    v2 = {r["doc_id"]: r for r in read_corpus(demo.corpus_after)}
    assert v1[STALE]["superseded_by"] is None and v1[STALE]["status"] == "active"
    assert v2[STALE]["superseded_by"] == IN_FORCE and v2[STALE]["status"] == "active"
    assert v2[STALE]["text"] == v1[STALE]["text"], "a stale page still in the index, unchanged"
    assert "30 days" in v2[STALE]["text"] and "14 days" in v2[IN_FORCE]["text"]
    assert [d for d, r in v2.items() if r.get("superseded_by") == IN_FORCE] == [STALE]
    # The cancellation page is revised by the reindex, so labels judged on its first version go stale.
    assert (v1["policies/cancellations.md"]["version"], v2["policies/cancellations.md"]["version"]) == ("v1", "v2")


def test_the_support_project_asks_policy_questions_served_from_the_index_it_had(accepted):
    serves, _, _ = accepted
    support = [s for s, _ in serves.values() if s["project"] == "support"]
    assert len(support) >= 20
    served = {i["doc_id"] for s in support for i in s["items"] if i["channel"] == "ranked"}
    assert STALE in served and IN_FORCE not in served
    asked = {norm(s["task"]) for s in support}
    assert norm(CASE_QUESTION) in asked
    # Its only answer in that index was the 2022 page, and the ranker always serves an answer.
    refund_serves = [s for s in support if norm(s["task"]) == norm(CASE_QUESTION)]
    assert refund_serves and all(any(i["doc_id"] == STALE for i in s["items"]) for s in refund_serves)


def test_the_support_project_is_in_the_tasks_it_is_asked_from():
    texts = {t for t, _ in TASKS["support"]}
    assert CASE_QUESTION in texts
    assert all(d.startswith(("policies/", "legal/")) for _, docs in TASKS["support"] for d in docs)


def _cosines(model, query: str, passages: list[str]) -> list[float]:
    vecs = model.encode([query, *passages], normalize_embeddings=True)
    return [float(vecs[0] @ v) for v in vecs[1:]]


def test_the_dense_score_ranks_the_superseded_page_above_the_page_in_force(demo, minilm):
    v2 = {r["doc_id"]: r for r in read_corpus(demo.corpus_after)}
    old, new = v2[STALE], v2[IN_FORCE]
    # As the dense scorer sees a passage (its text) and as the dense ranker indexes it (title and text).
    stale, in_force = _cosines(minilm, CASE_QUESTION, [old["text"], new["text"]])
    assert stale > in_force > 0.5, (stale, in_force)
    stale, in_force = _cosines(
        minilm, CASE_QUESTION, [f"{old['title']}\n{old['text']}", f"{new['title']}\n{new['text']}"]
    )
    assert stale > in_force > 0.5, (stale, in_force)


def test_the_policy_section_is_the_same_whatever_the_seed(tmp_path):
    def section(path: Path) -> list[dict]:
        return [r for r in read_corpus(path) if r["doc_id"].startswith(("policies/", "legal/"))]

    a = write_demo_data(tmp_path / "a", seed=1, end=END)
    b = write_demo_data(tmp_path / "b", seed=2, end=END)
    assert section(a.corpus_after) == section(b.corpus_after)
    assert section(a.corpus_before) == section(b.corpus_before)


# ------------------------------------------------------------------ the simulated annotators


def _queue_pairs() -> list:
    from goldenset.demo.annotators import Pair

    def qid(task: str) -> str:
        return hashlib.sha256(("support\x1f" + norm(task)).encode()).hexdigest()[:16]

    return [
        Pair(
            qid("Can a customer get a refund after cancelling an annual plan?"),
            "support",
            "can a customer get a refund after cancelling an  annual plan?",
            IN_FORCE,
            "v1",
            "Refunds are granted for 14 days.",
            "successor",
        ),
        Pair(
            qid(CASE_QUESTION),
            "support",
            CASE_QUESTION,
            IN_FORCE,
            "v1",
            "Refunds are granted for 14 days.",
            "successor",
        ),
        Pair(qid(CASE_QUESTION), "web-api", CASE_QUESTION, "stdlib/json.loads", "v1", "Deserialize.", "pooled"),
        Pair(qid(CASE_QUESTION), "support", CASE_QUESTION, "stdlib/json.dumps", "v1", "Serialize obj.", "pooled"),
    ]


def test_annotators_label_by_the_rubric_and_mark_the_superseded_page_irrelevant_by_recency(tmp_path):
    from importlib.resources import files

    from goldenset.demo.annotators import Pair, label_sessions
    from goldenset.labelling.rubric import load_rubric

    rubric = load_rubric(files("goldenset") / "data" / "support-policies.yaml")
    queue = _queue_pairs()
    review = [Pair(queue[1].query_id, "support", CASE_QUESTION, STALE, "v1", "within 30 days", "superseded")]
    ana, ben = label_sessions(queue, review, rubric, END, seed=7)
    got = {
        (line.annotator, line.doc_id, line.query_id): (line.label, line.decided_by) for line in ana.lines + ben.lines
    }
    q2, q1 = queue[0].query_id, queue[1].query_id
    assert got[("ana", IN_FORCE, q1)] == ("relevant", "answerability")
    assert got[("ana", "stdlib/json.dumps", q1)] == ("irrelevant", "authority")
    assert got[("ana", STALE, q1)] == got[("ben", STALE, q1)] == ("irrelevant", "recency")
    # The page in force answers the refund half of the annual-plan question only; ben also fails
    # it on `entity`, since it does not name the annual plan.
    assert got[("ana", IN_FORCE, q2)] == ("partial", "coverage")
    assert got[("ben", IN_FORCE, q2)] == ("irrelevant", "entity")
    # Only the support project's pairs: the web-api pair is nobody's.
    assert not any(line.doc_id == "stdlib/json.loads" for line in ana.lines + ben.lines)
    # ben labels the first two thirds of the support pairs (2 of 3), then the review; ana all of them.
    assert [line.doc_id for line in ben.lines] == [IN_FORCE, IN_FORCE, STALE]
    assert [line.doc_id for line in ana.lines] == [IN_FORCE, IN_FORCE, "stdlib/json.dumps", STALE]
    for line in ana.lines + ben.lines:
        record = line.to_json()
        assert record["event"] == "label" and record["rubric"] == "support-policies" and record["kind"] == "human"
        assert set(record["dimensions"]) == {"answerability", "authority", "recency", "coverage", "entity"}


def test_bad_label_lines_break_one_rule_each_and_label_files_are_deterministic(tmp_path):
    from importlib.resources import files

    from goldenset.demo.annotators import LABEL_REJECT_KINDS, bad_label_lines, label_sessions, write_label_file
    from goldenset.labelling.lines import parse_label_line
    from goldenset.labelling.rubric import load_rubric
    from goldenset.records import Rejected

    rubric = load_rubric(files("goldenset") / "data" / "support-policies.yaml")
    ana, ben = label_sessions(_queue_pairs(), [], rubric, END, seed=7)
    bad = bad_label_lines(ben.lines[0])
    assert [b.reason for b in bad] == list(LABEL_REJECT_KINDS.values())
    assert sorted(LABEL_REJECT_KINDS.values()) == sorted(
        {
            "invalid_json",
            "unknown_event",
            "missing_field",
            "invalid_field",
            "label_contradicts_rubric",
            "unknown_document_version",
        }
    )
    for b in bad:
        if b.reason == "unknown_document_version":
            # Valid as a line: only a build, which knows the snapshots, can refuse it.
            assert parse_label_line(b.text.encode(), rubric).doc_version == "v9"
            continue
        with pytest.raises(Rejected) as caught:
            parse_label_line(b.text.encode(), rubric)
        assert caught.value.reason == b.reason, b.kind
    first = write_label_file(tmp_path / "a", END, ben, bad)
    again = write_label_file(tmp_path / "b", END, label_sessions(_queue_pairs(), [], rubric, END, seed=7)[1], bad)
    assert first.path.read_bytes() == again.path.read_bytes()
    assert first.path.relative_to(tmp_path / "a").as_posix() == "dt=2026-11-28/ben.jsonl"
    lines = first.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(ben.lines) + len(bad)


# ------------------------------------------------------------------ the verdict the agent takes back


def _winners(lines: list[dict]) -> dict[tuple[str, str], str]:
    """Section 1's winning verdict per (serve_id, doc_id): the later ts, on a tie the later line."""
    won: dict[tuple[str, str], tuple[datetime, int, str]] = {}
    for pos, v in enumerate(lines):
        key = (v["serve_id"], v["doc_id"])
        if key not in won or (v["_instant"], pos) >= won[key][:2]:
            won[key] = (v["_instant"], pos, v["verdict"])
    return {k: w[2] for k, w in won.items()}


def test_one_support_question_is_served_once_and_its_only_helped_is_taken_back_by_a_late_line(demo, parsed, accepted):
    serves, _, _ = accepted
    (sid,) = [sid for sid, (s, _) in serves.items() if norm(s["task"]) == norm(FLIPPED_QUESTION)]
    served = {i["doc_id"]: i for i in serves[sid][0]["items"]}
    assert serves[sid][0]["project"] == "support" and served[CANCELLATIONS]["doc_version"] == "v1"
    logged = [o for _, _, o in parsed["good"] if o["event"] == "verdict" and o["serve_id"] == sid]
    # In the logs the builds read first: one helped (the cancellation page), one noise.
    assert sorted(_winners(logged).items()) == [
        ((sid, CANCELLATIONS), "helped"),
        ((sid, "policies/invoices.md"), "noise"),
    ]
    # The late line is not under logs/ yet; it goes to the last day's folder, beside its parts 1 and 2.
    assert demo.late_verdicts == demo.logs.parent / "late-verdicts.jsonl"
    assert demo.late_verdicts_into == demo.logs / f"dt={END.isoformat()}" / "part-0003.jsonl"
    assert not demo.late_verdicts_into.exists()
    (late,) = [check_line(x) for x in demo.late_verdicts.read_text(encoding="utf-8").splitlines()]
    assert (late["event"], late["serve_id"], late["doc_id"], late["verdict"]) == (
        "verdict",
        sid,
        CANCELLATIONS,
        "noise",
    )
    assert late["_instant"].date() == END and late["_instant"] > max(v["_instant"] for v in logged)
    # With it, no helped is left for the question: only a person's label can keep it (contract 3, v5).
    assert "helped" not in _winners([*logged, late]).values()
    # The reindex revises the page (v1 to v2, active, not superseded): the log label goes stale as
    # version_changed, and the pool queues the pair at v2.
    v1 = {r["doc_id"]: r for r in read_corpus(demo.corpus_before)}
    v2 = {r["doc_id"]: r for r in read_corpus(demo.corpus_after)}
    assert (v1[CANCELLATIONS]["version"], v2[CANCELLATIONS]["version"]) == ("v1", "v2")
    assert v2[CANCELLATIONS]["status"] == "active" and v2[CANCELLATIONS].get("superseded_by") is None
    assert "stays active until then" in v2[CANCELLATIONS]["text"]  # it answers the question at v2


def test_both_annotators_label_the_cancellation_page_relevant_for_the_flipped_question():
    from importlib.resources import files

    from goldenset.demo.annotators import Pair, label_sessions
    from goldenset.labelling.rubric import load_rubric

    rubric = load_rubric(files("goldenset") / "data" / "support-policies.yaml")
    qid = hashlib.sha256(("support\x1f" + norm(FLIPPED_QUESTION)).encode()).hexdigest()[:16]
    queue = [
        Pair(qid, "support", FLIPPED_QUESTION, CANCELLATIONS, "v2", "the plan stays active until then", "stale"),
        Pair(qid, "support", FLIPPED_QUESTION, "legal/terms-of-service.md", "v1", "These terms govern", "pooled"),
    ]
    ana, ben = label_sessions(queue, [], rubric, END, seed=7)
    # The page says the plan stays active until the end of the period: every test passes. The terms
    # do not say: answerability and coverage fail (irrelevant, decided by answerability).
    got = {(x.annotator, x.doc_id): (x.label, x.doc_version, x.decided_by) for x in ana.lines + ben.lines}
    assert got[("ana", CANCELLATIONS)] == got[("ben", CANCELLATIONS)] == ("relevant", "v2", "answerability")
    assert got[("ana", "legal/terms-of-service.md")] == ("irrelevant", "v1", "answerability")
