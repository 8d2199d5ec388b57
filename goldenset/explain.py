"""Why a query is (not) in the golden set: `goldenset explain` and the explorer's query page (contract 15).

`explain(con, query_id)` gathers, for one query, every fact the set's rules read about it and
returns one JSON-ready dict (the explorer renders the same dict); `explain_lines` prints it one
fact a line. Everything is read, nothing written: it runs on a read-only connection (the
working tables it makes are TEMP, which DuckDB allows there) and takes no writer's lock.

Decisions
---------
- **The decisions are the warehouse's now**: the filters of section 3 are applied again, for
  this query only, to every line ingested, against the snapshot of the latest build. That is
  what the latest build did unless lines were ingested after it (a blocked build, a `forget`):
  the explanation then says so (`notes`), since the next build will decide as shown.
- **Near-duplicate merges** (the optional embedding step) are not replayed: the query is the
  one of section 3's exact normalisation, and a note says when the latest build merged.
- **Left the set**: the build where it left is the largest `valid_to_build` of its label
  history when no version is open; the rule that removed it is the first that applies now:
  no accepted serve left, no judgment, every judgment dropped by `always_served` or
  `retired`, or `no_positive` (with the judgments and human labels it read).
- **Benchmark runs**: the latest `EXPLAIN_RUNS` runs by (started_at, run_id), newest first,
  each with the query's metrics on the deciding row (`core`) and its stored ranking.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from goldenset.connection import Connection
from goldenset.errors import InputError, NoBuild, UsageError
from goldenset.labelling.merge import stage_human_labels
from goldenset.records import normalise_task, query_id
from goldenset.schema import ACCEPTED_LINE, WINNING_VERDICT

EXPLAIN_RUNS = 3
QUERY_ID = re.compile("[0-9a-f]{16}")
DECIDING_ROW = "core"

# The accepted serves of the query: the accepted line of each serve_id that has a line of it.
_SERVES = f"""
CREATE OR REPLACE TEMP TABLE _xs AS
SELECT * FROM (
  SELECT l.* FROM log_serves l
  SEMI JOIN (SELECT DISTINCT serve_id FROM log_serves WHERE query_id = $q) k ON k.serve_id = l.serve_id
  {ACCEPTED_LINE})
WHERE query_id = $q
"""
# Every served item with its winning verdict, how many verdict lines it had, and the filter
# that decided it (section 3, in order); `lost_to` is the serve whose judgment won a repeat.
_ITEMS = f"""
CREATE OR REPLACE TEMP TABLE _xi AS
WITH v AS (SELECT serve_id, doc_id, verdict, ts FROM log_verdicts WHERE serve_id IN (SELECT serve_id FROM _xs)
           {WINNING_VERDICT}),
n AS (SELECT serve_id, doc_id, count(*) AS lines,
             list(struct_pack(verdict := verdict, ts := ts) ORDER BY ts, dt, file_name, line) AS history
      FROM log_verdicts WHERE serve_id IN (SELECT serve_id FROM _xs) GROUP BY ALL),
i AS (
  SELECT s.serve_id, s.ts AS serve_ts, i.doc_id, i.doc_version, i.channel, i.rank, v.verdict, v.ts AS verdict_ts,
         coalesce(n.lines, 0) AS verdict_lines, n.history AS verdict_history, d.doc_id IS NOT NULL AS active, d.version AS current_version,
         d.superseded_by
  FROM _xs s JOIN log_serve_items i ON i.source_file = s.source_file AND i.line = s.line
  LEFT JOIN v ON v.serve_id = s.serve_id AND v.doc_id = i.doc_id
  LEFT JOIN n ON n.serve_id = s.serve_id AND n.doc_id = i.doc_id
  LEFT JOIN (SELECT doc_id, version, superseded_by FROM corpus_documents
             WHERE content_sha256 = $sha AND status = 'active') d ON d.doc_id = i.doc_id)
SELECT *, CASE WHEN verdict IS NULL THEN NULL
               ELSE first_value(serve_id) OVER (PARTITION BY doc_id, verdict IS NOT NULL AND channel = 'ranked' AND active
                                                ORDER BY serve_ts DESC, serve_id DESC) END AS winner
FROM i
"""


def resolve_query(con: Connection, query: str | None, task: str | None, project: str | None) -> str:
    """The query_id named by QUERY_ID, or by --task (and --project when several projects have it)."""
    if query is not None and task is None:
        if not QUERY_ID.fullmatch(query):
            raise UsageError(f"query id {query!r} is not 16 lowercase hex digits; or give the text with --task")
        return query
    if task is None or query is not None:
        raise UsageError("give a QUERY_ID or --task TEXT (exactly one)")
    norm = normalise_task(task)
    if project is not None:
        return query_id(project, norm)
    projects = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT project FROM log_serves WHERE task_norm = ? ORDER BY project", [norm]
        ).fetchall()
    ]
    if len(projects) > 1:
        raise UsageError(f"task {task!r} was served in {len(projects)} projects ({', '.join(projects)}); add --project")
    if not projects:
        raise InputError(f"no serve carries a task that normalises to {norm!r}; check the text, or give a QUERY_ID")
    return query_id(projects[0], norm)


def explain(con: Connection, qid: str, runs: int = EXPLAIN_RUNS) -> dict[str, Any]:
    """Everything the set's rules read about query `qid`, as one JSON-ready dict (contract 15)."""
    build = _latest_build(con)
    out: dict[str, Any] = {"query_id": qid, "build": build, "notes": _notes(con, build)}
    out.update(_identity(con, qid))
    try:
        con.execute(_SERVES, {"q": qid})
        con.execute(_ITEMS, {"sha": build["corpus_content_sha256"]})
        out["serves"] = _serves(con)
        out["filters"] = _filters(con, qid, build["corpus_content_sha256"])
    finally:
        for t in ("_xs", "_xi", "_hpos_vote"):
            con.execute("DROP TABLE IF EXISTS " + t)
    out["labels"] = _rows(
        con,
        "SELECT doc_id, doc_version, source, verdict, label, grade, relevance, serve_id, decided_by, annotators, "
        "judged_at, stale_reason FROM golden_set WHERE query_id = ? ORDER BY doc_id",
        qid,
    )
    out["history"] = _rows(
        con,
        "SELECT doc_id, source, verdict, label, doc_version, stale_reason, valid_from_build, valid_to_build "
        "FROM label_history WHERE query_id = ? ORDER BY valid_from_build, doc_id",
        qid,
    )
    out["changes"] = _rows(
        con,
        "SELECT doc_id, from_build, to_build, change, old_value, new_value FROM label_changes "
        "WHERE query_id = ? ORDER BY to_build, doc_id, change",
        qid,
    )
    out["human_lines"] = _rows(
        con,
        "SELECT annotator, kind, doc_id, doc_version, label, grade, decided_by, ts, source_file, line "
        "FROM current_labels WHERE query_id = ? ORDER BY doc_id, ts, annotator",
        qid,
    )
    out["stale"] = _rows(
        con,
        "SELECT doc_id, reason, judged_version, current_version, superseded_by, first_flagged_build "
        "FROM relabel_queue WHERE query_id = ? ORDER BY doc_id",
        qid,
    )
    out.update(_pools(con, qid))
    out["benchmark"] = _benchmark(con, qid, runs)
    out["left"] = _left(out)
    out["status"] = "in" if out["labels"] else ("left" if out["history"] else "never")
    if not (out["serves"] or out["history"] or out["human_lines"]):
        raise InputError(
            f"no serve, label or label history names query {qid}; check the id (`goldenset explain --task TEXT` "
            "finds a query by its text)"
        )
    return out


def _latest_build(con: Connection) -> dict[str, Any]:
    upgraded = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'golden_builds' AND column_name = 'contract_version'"
    ).fetchall()[0][0]
    if not upgraded:
        raise InputError(
            "this warehouse was made by an older goldenset and has not been opened for writing since; "
            "run `goldenset build` once (it upgrades the warehouse), then explain again"
        )
    rows = _rows(
        con,
        "SELECT build_id, built_at, labels_build_id, corpus_content_sha256, near_duplicate_merges, contract_version "
        "FROM golden_builds ORDER BY build_id DESC LIMIT 1",
    )
    if not rows:
        raise NoBuild("no golden set has been built yet: run `goldenset build` first")
    return rows[0]


def _notes(con: Connection, build: dict[str, Any]) -> list[str]:
    notes = []
    if con.execute("SELECT EXISTS (SELECT 1 FROM log_dirty)").fetchall()[0][0]:
        notes.append(
            f"log lines were ingested after build {build['build_id']}: the decisions below are what the next "
            "build will make, the labels what build " + str(build["build_id"]) + " holds"
        )
    if build["near_duplicate_merges"]:
        notes.append(
            f"build {build['build_id']} merged {build['near_duplicate_merges']} near-duplicate task(s): "
            "explain follows the exact normalisation only"
        )
    return notes


def _identity(con: Connection, qid: str) -> dict[str, Any]:
    """Project, the display text (the golden set's, else the display rule over its serves), its raw variants."""
    raw = con.execute(
        "SELECT task, project, count(*) AS serves, min(ts), max(ts), max((ts, serve_id)) AS latest "
        "FROM (SELECT * FROM log_serves WHERE serve_id IN (SELECT serve_id FROM log_serves WHERE query_id = ?) "
        + ACCEPTED_LINE
        + ") WHERE query_id = ? GROUP BY task, project ORDER BY serves DESC, latest DESC",
        [qid, qid],
    ).fetchall()
    golden = con.execute("SELECT project, task, kept_by FROM golden_queries WHERE query_id = ?", [qid]).fetchall()
    project = golden[0][0] if golden else (raw[0][1] if raw else None)
    task = golden[0][1] if golden else _display([(r[0], r[2], tuple(r[5])) for r in raw])
    variants = [{"task": r[0], "serves": r[2], "first_seen": _plain(r[3]), "last_seen": _plain(r[4])} for r in raw]
    return {"project": project, "task": task, "kept_by": golden[0][2] if golden else None, "variants": variants}


def _display(variants: list[tuple[str, int, tuple]]) -> str | None:
    """The display rule (contract 3, changed in v5) over (raw task, serves, latest (ts, serve_id)) variants."""
    from goldenset.records import display_task

    forms: dict[str, tuple[int, tuple]] = {}
    for task, n, latest in variants:
        form = display_task(task)
        had, seen = forms.get(form, (0, latest))
        forms[form] = (had + n, max(seen, latest))
    if not forms:
        return None
    return max(forms.items(), key=lambda kv: kv[1])[0]


def _serves(con: Connection) -> list[dict[str, Any]]:
    serves = _rows(con, "SELECT serve_id, ts, task, source_file, line FROM _xs ORDER BY ts, serve_id")
    items = _rows(
        con,
        "SELECT serve_id, doc_id, doc_version, channel, rank, verdict, verdict_ts, verdict_lines, verdict_history, "
        + _DECISION
        + ", "
        "CASE WHEN verdict IS NOT NULL AND channel = 'ranked' AND active AND winner <> serve_id THEN winner END "
        "AS lost_to FROM _xi ORDER BY serve_ts, serve_id, channel DESC, rank, doc_id",
    )
    by_serve: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        by_serve.setdefault(it.pop("serve_id"), []).append(it)
    for s in serves:
        s["items"] = by_serve.get(s["serve_id"], [])
    return serves


_DECISION = """CASE WHEN verdict IS NULL THEN 'unjudged' WHEN channel = 'always' THEN 'always_served'
                    WHEN NOT active THEN 'retired' WHEN winner <> serve_id THEN 'repeats' ELSE 'kept' END AS decision"""


def _filters(con: Connection, qid: str, sha: str) -> list[dict[str, Any]]:
    """Each filter's decision for the query, with the rows that decided it."""

    def pairs(where: str) -> list[dict[str, Any]]:
        return _rows(
            con,
            "SELECT serve_id, doc_id, doc_version, verdict, winner FROM (SELECT *, " + _DECISION + " FROM _xi) "
            "WHERE " + where + " ORDER BY doc_id, serve_ts DESC, serve_id DESC",
        )

    judged = pairs("decision <> 'unjudged'")
    steps: list[dict[str, Any]] = [{"step": "judged", "rows": judged}]
    for step in ("always_served", "retired", "repeats"):
        steps.append({"step": step, "dropped": pairs(f"decision = '{step}'")})
    kept = pairs("decision = 'kept'")
    stage_human_labels(con, sha)
    human = _rows(
        con,
        "SELECT doc_id, doc_version, current_version, label, grade, annotators, judged_at FROM _hpos_vote "
        "WHERE query_id = ? ORDER BY doc_id",
        qid,
    )
    for h in human:
        h["positive"] = h["grade"] >= 1 and h["doc_version"] == h["current_version"]
        h["why"] = (
            "a human positive"
            if h["positive"]
            else ("grade below 1" if h["grade"] < 1 else "labelled at another version than the current one")
        )
    log_positive = [k for k in kept if k["verdict"] == "helped"]
    human_positive = [h for h in human if h["positive"]]
    passed = bool(kept) and bool(log_positive or human_positive)
    steps.append(
        {
            "step": "no_positive",
            "tested": bool(kept),
            "passed": passed,
            "kept_by": ("log" if log_positive else "human") if passed else None,
            "left": kept,
            "log_positives": log_positive,
            "human_labels": human,
        }
    )
    return steps


def _pools(con: Connection, qid: str) -> dict[str, Any]:
    queue = _rows(
        con,
        "SELECT pool_id, doc_id, doc_version, reason, priority, best_rank FROM labelling_queue WHERE query_id = ? "
        "ORDER BY priority",
        qid,
    )
    audits = _rows(
        con,
        "SELECT a.pool_id, a.draw, s.drawn_at, s.sample_size, s.population, "
        "(SELECT count(*) FROM audit_pairs p WHERE p.pool_id = a.pool_id AND p.query_id = a.query_id) AS pairs "
        "FROM audit_queries a JOIN audit_samples s USING (pool_id) WHERE a.query_id = ? ORDER BY a.pool_id",
        qid,
    )
    return {"queue": queue, "audits": audits}


def _benchmark(con: Connection, qid: str, runs: int) -> list[dict[str, Any]]:
    latest = _rows(
        con,
        "SELECT run_id, started_at, build_id, retriever FROM benchmark_runs ORDER BY started_at DESC, run_id DESC "
        "LIMIT ?",
        runs,
    )
    for r in latest:
        metrics = con.execute(
            "SELECT metric, value FROM benchmark_results WHERE run_id = ? AND row_name = ? AND query_id = ? "
            "ORDER BY metric",
            [r["run_id"], DECIDING_ROW, qid],
        ).fetchall()
        r["measured"] = bool(metrics)
        r["metrics"] = {m: v for m, v in metrics}
        r["ranking"] = _rows(
            con,
            "SELECT k.rank, k.doc_id, g.grade FROM benchmark_rankings k LEFT JOIN golden_set g "
            "ON g.query_id = k.query_id AND g.doc_id = k.doc_id WHERE k.run_id = ? AND k.query_id = ? ORDER BY k.rank",
            r["run_id"],
            qid,
        )
    return latest


def _left(x: dict[str, Any]) -> dict[str, Any] | None:
    """For a query with no label now: the build where it left (null if it never was in), the rule and the rows."""
    if x["labels"]:
        return None
    ends = [h["valid_to_build"] for h in x["history"] if h["valid_to_build"] is not None]
    build = max(ends) if ends else None
    removed = [c for c in x["changes"] if build is not None and c["to_build"] == build]
    steps = {s["step"]: s for s in x["filters"]}
    if not x["serves"]:
        rows: list[dict[str, Any]]
        rule, rows = "no accepted serve carries it any more (its log files were forgotten or rewritten)", []
    elif not steps["judged"]["rows"]:
        rule, rows = "no judgment: no item of its serves has a verdict", []
    elif not steps["no_positive"]["tested"]:
        last = "retired" if steps["retired"]["dropped"] else "always_served"
        rule, rows = f"{last}: every judgment left was dropped by it", steps[last]["dropped"]
    else:
        rule = "no_positive: no judgment left is helped and no human label is a positive"
        rows = steps["no_positive"]["left"] + steps["no_positive"]["human_labels"]
    return {"build_id": build, "rule": rule, "rows": rows, "removed": removed}


def _rows(con: Connection, sql: str, *params: Any) -> list[dict[str, Any]]:
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [{k: _plain(v) for k, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def _plain(v: Any) -> Any:
    """Timestamps as ISO 8601 UTC text (JSON has no time); structs as dicts."""
    if isinstance(v, datetime):
        return v.isoformat().replace("+00:00", "") + "Z"
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


# --------------------------------------------------------------------------- one fact a line

_SHOWN_METRICS = re.compile(r"(recall@\d+|ndcg@10|mrr|map|judged@\d+)")


def explain_lines(x: dict[str, Any]) -> list[str]:
    """The explanation as text, one fact a line (what `goldenset explain` prints)."""
    lines = [f"query {x['query_id']} ({x['project'] or 'no project'}): {x['task']!r}"]
    lines.append(_status_line(x))
    lines += [f"note: {n}" for n in x["notes"]]
    for v in x["variants"]:
        lines.append(f"raw text {v['task']!r}: {v['serves']} serve(s), {v['first_seen']} to {v['last_seen']}")
    for s in x["serves"]:
        lines.append(f"serve {s['serve_id']} at {s['ts']} ({s['source_file']}:{s['line']})")
        lines += [f"  {_item_line(it)}" for it in s["items"]]
    lines += _filter_lines(x["filters"])
    for lab in x["labels"]:
        lines.append(f"label {lab['doc_id']}@{lab['doc_version']}: {_label_text(lab)}")
    for c in x["changes"]:
        was = f"{c['old_value']} -> {c['new_value']}" if c["change"] != "added" else str(c["new_value"])
        if c["change"] == "removed":
            was = str(c["old_value"])
        lines.append(f"change at build {c['to_build']}: {c['doc_id']} {c['change']} {was}")
    for h in x["human_lines"]:
        lines.append(
            f"{h['kind']} line by {h['annotator']}: {h['doc_id']}@{h['doc_version']} {h['label']} (grade {h['grade']}, "
            f"decided by {h['decided_by']}) at {h['ts']} ({h['source_file']}:{h['line']})"
        )
    for st in x["stale"]:
        succ = f", superseded by {st['superseded_by']}" if st["superseded_by"] else ""
        lines.append(
            f"stale {st['doc_id']}: {st['reason']} (judged at {st['judged_version']}, now {st['current_version']}"
            f"{succ}) since build {st['first_flagged_build']}"
        )
    for q in x["queue"]:
        lines.append(
            f"queued {q['doc_id']}@{q['doc_version']}: {q['reason']} (priority {q['priority']}, pool {q['pool_id']})"
        )
    for a in x["audits"]:
        lines.append(
            f"audit of pool {a['pool_id']}: drawn {a['draw']} of {a['sample_size']} (population {a['population']}), "
            f"{a['pairs']} pair(s) asked"
        )
    lines += [_run_line(r) for r in x["benchmark"]]
    if x["left"] is not None:
        lines.append(_out_line(x["left"]))
    return lines


def _status_line(x: dict[str, Any]) -> str:
    build = x["build"]["build_id"]
    if x["status"] == "in":
        by = "a log helped" if x["kept_by"] == "log" else "a human positive only"
        return f"in the golden set of build {build}, kept by {by}"
    if x["status"] == "left":
        return f"not in the golden set of build {build}: it left at build {x['left']['build_id']}"
    return f"not in the golden set of build {build}, nor of any earlier build"


def _out_line(left: dict[str, Any]) -> str:
    if left["build_id"] is None:
        return f"why it is not in the set: {left['rule']}"
    return f"left the set at build {left['build_id']}: {left['rule']}"


def _item_line(it: dict[str, Any]) -> str:
    where = f"ranked #{it['rank']}" if it["channel"] == "ranked" else "always"
    said = "no verdict" if it["verdict"] is None else it["verdict"]
    if it["verdict_lines"] > 1:
        said += " (verdicts: " + ", ".join(f"{h['verdict']} at {h['ts']}" for h in it["verdict_history"]) + ")"
    lost = f" to {it['lost_to']}" if it["lost_to"] else ""
    return f"{it['doc_id']}@{it['doc_version']} {where}: {said} -> {it['decision']}{lost}"


def _filter_lines(filters: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in filters:
        if f["step"] == "judged":
            out.append(f"judged: {len(f['rows'])} judgment(s)")
        elif f["step"] != "no_positive":
            pairs = ", ".join(f"{r['serve_id']}/{r['doc_id']}" for r in f["dropped"]) or "none"
            out.append(f"filter {f['step']}: dropped {len(f['dropped'])} ({pairs})")
        else:
            out.append("filter no_positive: " + _no_positive_text(f))
            for h in f["human_labels"]:
                out.append(
                    f"  human label {h['doc_id']}@{h['doc_version']} (current {h['current_version']}): {h['label']} "
                    f"(grade {h['grade']}, {h['annotators']} annotator(s)): {h['why']}"
                )
    return out


def _no_positive_text(f: dict[str, Any]) -> str:
    if not f["tested"]:
        return "not reached: no judgment left after repeats"
    if f["log_positives"]:
        docs = ", ".join(f"{r['doc_id']} (serve {r['serve_id']})" for r in f["log_positives"])
        return f"passed by a log helped: {docs}"
    if f["passed"]:
        docs = ", ".join(h["doc_id"] for h in f["human_labels"] if h["positive"])
        return f"passed by a human positive only (no helped judgment left): {docs}"
    return f"dropped: none of its {len(f['left'])} judgment(s) left is helped and no human label is a positive"


def _label_text(lab: dict[str, Any]) -> str:
    stale = f", stale: {lab['stale_reason']}" if lab["stale_reason"] else ""
    if lab["source"] == "log":
        return f"log {lab['verdict']} (serve {lab['serve_id']}, {lab['judged_at']}){stale}"
    return (
        f"{lab['source']} {lab['label']} (grade {lab['grade']}, decided by {lab['decided_by']}, "
        f"{lab['annotators']} annotator(s), {lab['judged_at']}){stale}"
    )


def _run_line(r: dict[str, Any]) -> str:
    head = f"run {r['run_id']} ({r['retriever']}, build {r['build_id']})"
    if not r["measured"]:
        return head + ": not measured (not a golden query with a relevant label in that build)"
    shown = ", ".join(f"{m} {v:.4f}" for m, v in r["metrics"].items() if _SHOWN_METRICS.fullmatch(m))
    ranking = ", ".join(
        f"{k['rank']} {k['doc_id']}" + (f" (grade {k['grade']})" if k["grade"] is not None else "")
        for k in r["ranking"][:5]
    )
    return f"{head}: {shown}; ranked {ranking}"
