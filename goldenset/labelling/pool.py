"""The pool and the labelling queue (contract 7.4): rank, pool, queue what needs a label.

`run_pool` asks each ranker for its top `depth` documents for every golden query of the
latest build (query text: the golden set's `task`) over the active documents of that
build's own snapshot (read back from `corpus_documents`, never the corpus file, so the
pool matches the build). Rankers: `lexical` and `dense` (the reference retriever's
components, `search_component`), `core` (the reference retriever's `search`: it has no
graph or boosts inside, those are the benchmark's re-ranking rows), or `module:factory`
(another retriever: its `search`). It then replaces `labelling_queue`, in one transaction
with its `pool_runs` row, by

- `stale`: each `relabel_queue` row with reason `version_changed`, at the current version;
- `successor`: (query, S) for a golden query holding a ranked-channel judgment (any
  verdict, before the `retired` filter: the `judgments` view's `channel = 'ranked'` rows of
  that query_id, near-duplicate merges not applied) or an annotator's current label
  (`current_labels`, any kind) on a document D that the snapshot gives `superseded_by` S,
  S active, and no golden_set row for (query, S) at any version. It keeps its place when
  some such D is judged relevant for the query (`_RELEVANT`); otherwise it goes after
  every pooled pair (changed in v5, issue 38: 8 of a user's first 10 queue rows were
  successors of documents judged noise for other packages' questions, above every pooled
  pair; the successor of a document judged not relevant is likely not relevant either);
- `pooled`: every other returned pair without a golden_set row at the document's current
  version.

A pair appears once, under the first reason that applies; priority orders reason (stale,
successor of a relevant document, audit, pooled, the other successors), best_rank ascending
with nulls last, more rankers first, query_id, doc_id (code-point order).

Decisions
---------
- **What a ranker returned.** Its list is cut to `depth` after dropping repeats of a
  document (the first place counts); rank is the 1-based place in that list. Documents that
  are not active in the build's snapshot (a plug-in searching its own index) cannot be
  queued: they are left out and counted per ranker as `outside_snapshot`.
- **Left out as already labelled** (`already_labelled`) counts the distinct returned pairs
  that have a golden_set row at the document's current version. Every distinct returned
  pair is exactly one of `returned_stale`, `returned_successor`, `already_labelled` or
  `pooled`, so those four add up to `returned_distinct`.
- **Never judged** (`pooled_never_judged`) counts pooled pairs (query_id, doc_id) for which
  no serve of that query_id holds a winning verdict on that document, on either channel.
- **Superseded labels.** A pair whose label is stale only as `superseded` is never `stale`;
  if a ranker returns it and its golden_set row is at an older version it is `pooled` (the
  letter of "no row at the document's current version"); at the current version it is
  already labelled. Successors are not followed further: S needs only to be active.
- **Human labels since the build** do not keep a pair out: only the golden set does, so the
  queue is a function of the build and the rankers.
- **Queries embedded once.** Before the rankers search, each retriever that has the optional
  `prepare_queries` (the reference retriever: its dense side) gets every golden task in one
  call, as `bench run` does: one model call per query cost seconds each on a loaded CPU.
- **Audit** (`--audit N`, contract 12.1): goldenset.labelling.audit draws the sample among
  the golden queries some rubric judges and turns pairs of drawn queries into reason
  `audit`, between successor and pooled; a later pool without `--audit` queues the latest
  audit's pairs still without a human row again. The report and the queue counts name
  `audit` only for a pool that drew an audit or queued such a pair. The `of these` line
  counts each returned pair under the reason it is queued with after the audit took its
  pairs (pooled ones, and ones only a log or judge row labels), so `pooled` there is what
  stays pooled and the five terms add up to the distinct pairs.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import pyarrow as pa

from goldenset.build_record import BuildRecord, load_build
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot, Document
from goldenset.embeddings import Embedder
from goldenset.errors import GoldensetError, UsageError
from goldenset.labelling import active_audit, strategies
from goldenset.labelling import audit as audit_sample
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet
from goldenset.retrieval.rankings import load_run_rankers
from goldenset.retrieval.retriever import REFERENCE, Hit, RetrieverContext, build_retriever, check_hits, load_factory
from goldenset.warehouse import transaction

COMPONENTS = ("lexical", "dense")
CORE = "core"
DEFAULT_RANKERS = ("lexical", "dense", "core")
DEFAULT_DEPTH = 5
# `pool --from-run` without --budget queues every unjudged pair of the runs' top --depth (14,107
# for two runs at depth 24 over 548 queries). Above this many pooled pairs it says so and gives
# the same pool with `--budget LARGE_POOL` (contract 11.1): about a day of one annotator at two
# labels a minute, a round the feedback strategy learns from before the next one is drawn.
LARGE_POOL = 1000
REASONS = ("stale", "successor", "pooled")
# Reasons whose queue rows a ranker may not have returned: the queue line says how many it did.
NOTED = ("stale", "successor", audit_sample.REASON)
# Priority order of every reason; `audit` appears only in a pool that drew an audit sample.
ORDER = ("stale", "successor", audit_sample.REASON, "pooled")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class QueueRow:
    """One row of `labelling_queue`."""

    pool_id: int
    query_id: str
    doc_id: str
    doc_version: str
    reason: str
    rankers: tuple[str, ...]
    best_rank: int | None
    priority: int
    pooled_at: datetime
    project: str
    task: str


@dataclass(frozen=True)
class PoolReport:
    """The pool's arithmetic, as stored in `pool_runs.report` and printed by `goldenset pool`."""

    build_id: int
    rankers: tuple[str, ...]
    depth: int
    queries: int
    returned: dict[str, int]
    outside_snapshot: dict[str, int]
    shared: tuple[tuple[str, str, int], ...]
    returned_distinct: int
    returned_stale: int
    returned_successor: int
    already_labelled: int
    pooled: int
    pooled_never_judged: int
    queue: dict[str, int]
    # Returned pairs queued as audit (None when the queue counts no `audit`): the fifth term of `of these`.
    returned_audit: int | None = None
    # The strategy that ordered the pooled pairs (strategies.py), with its round and state; None: plain depth.
    strategy: dict[str, Any] | None = None
    audit: dict[str, Any] | None = None  # the audit's design and pairs, for a pool that drew one
    # Contract 9.5: pairs not queued because no rubric judges their query's project, by project
    # (None when the rubrics judge every project).
    no_rubric: dict[str, int] | None = None
    # Queued pairs some ranker returned, by reason (stale and successor rows are queued whether a
    # ranker returned them or not; `returned_stale` counts the returned ones before the rubrics
    # and the budget): what the queue line names, so it cannot be read against the returned line.
    queue_returned: dict[str, int] | None = None

    @property
    def returned_total(self) -> int:
        """Pairs returned by all rankers before removing duplicates."""
        return sum(self.returned.values())

    def to_json(self) -> dict[str, Any]:
        """The `pool_runs.report` object (key names documented in docs/concepts/pooling.md)."""
        return (
            {
                "build_id": self.build_id,
                "rankers": list(self.rankers),
                "depth": self.depth,
                "queries": self.queries,
                "returned": dict(self.returned),
                "outside_snapshot": dict(self.outside_snapshot),
                "returned_total": self.returned_total,
                "returned_distinct": self.returned_distinct,
                "shared": [{"a": a, "b": b, "pairs": n} for a, b, n in self.shared],
                "returned_stale": self.returned_stale,
                "returned_successor": self.returned_successor,
                **({"returned_audit": self.returned_audit} if self.returned_audit is not None else {}),
                "already_labelled": self.already_labelled,
                "pooled": self.pooled,
                "pooled_never_judged": self.pooled_never_judged,
                "queue": {**self.queue, "total": sum(self.queue.values())},
                **({"strategy": self.strategy} if self.strategy is not None else {}),
            }
            | ({"audit": self.audit} if self.audit is not None else {})
            | ({"no_rubric": dict(self.no_rubric)} if self.no_rubric is not None else {})
            | ({"queue_returned": dict(self.queue_returned)} if self.queue_returned is not None else {})
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PoolReport:
        """The report back from its `pool_runs.report` object (what to_json wrote)."""
        queue = {k: int(v) for k, v in data["queue"].items() if k != "total"}
        return cls(
            build_id=data["build_id"],
            rankers=tuple(data["rankers"]),
            depth=data["depth"],
            queries=data["queries"],
            returned=dict(data["returned"]),
            outside_snapshot=dict(data.get("outside_snapshot", {})),
            shared=tuple((s["a"], s["b"], s["pairs"]) for s in data["shared"]),
            returned_distinct=data["returned_distinct"],
            returned_stale=data["returned_stale"],
            returned_successor=data["returned_successor"],
            returned_audit=data.get("returned_audit"),
            already_labelled=data["already_labelled"],
            pooled=data["pooled"],
            pooled_never_judged=data["pooled_never_judged"],
            queue=queue,
            no_rubric=dict(data["no_rubric"]) if "no_rubric" in data else None,
            queue_returned=dict(data["queue_returned"]) if "queue_returned" in data else None,
        )

    def _returned_note(self, reason: str) -> str:
        """For stale, successor and audit rows of the queue: how many a ranker returned (the rest it did not)."""
        if self.queue_returned is None or reason not in NOTED or not self.queue.get(reason):
            return ""
        return f" ({self.queue_returned.get(reason, 0)} a ranker returned)"

    def lines(self) -> list[str]:
        """The arithmetic in words, one line per step."""
        r = self.returned
        outside = sum(self.outside_snapshot.values())
        out = [
            f"{_plural(self.queries, 'golden query', 'golden queries')} x "
            f"{_plural(len(self.rankers), 'ranker', 'rankers')}, top {self.depth} each "
            f"(golden build {self.build_id})",
            "returned: " + " + ".join(f"{name} {r[name]}" for name in self.rankers) + f" = {self.returned_total} pairs",
        ]
        if outside:
            out.append(
                f"left out as not active in the build's snapshot: {outside} "
                "(" + ", ".join(f"{n} {c}" for n, c in self.outside_snapshot.items() if c) + ")"
            )
        out += [
            f"distinct: {self.returned_total} - {self.returned_total - self.returned_distinct} duplicates "
            f"= {self.returned_distinct} pairs",
            f"of these: {self.already_labelled} already labelled (golden set row at the current version) "
            f"+ {self.returned_stale} queued as stale + {self.returned_successor} queued as successor "
            + (f"+ {self.returned_audit} queued as audit " if self.returned_audit is not None else "")
            + f"+ {self.pooled} pooled = {self.returned_distinct}",
            f"pooled pairs the log never judged: {self.pooled_never_judged} of {self.pooled}",
            "queue: "
            + " + ".join(f"{n} {k}{self._returned_note(k)}" for k, n in self.queue.items())
            + f" = {sum(self.queue.values())} pairs",
        ]
        if self.strategy is not None:
            s = self.strategy
            out.append(
                f"strategy {s['name']}, round {s['round']}"
                + (f", seed {s['seed']}" if "seed" in s else "")
                + (f": pooled pairs capped at --budget {s['budget']}" if s.get("budget") else "")
                + (f" ({s['pooled_before_budget']} before the cap)" if "pooled_before_budget" in s else "")
            )
        if self.no_rubric is not None:
            left = sum(self.no_rubric.values())
            out.append(
                f"not queued, no rubric judges their project: {left}"
                + (" (" + ", ".join(f"{p} {n}" for p, n in self.no_rubric.items()) + ")" if left else "")
            )
        if self.audit is not None:
            a = self.audit
            how = (
                f"actively by judge {a['judge']}'s uncertainty, {min(a['requested'], a['population'])} expected"
                if a.get("design") == audit_sample.ACTIVE
                else "uniformly"
            )
            out.append(
                f"audit: {a['sample_size']} of {a['population']} golden queries drawn {how} (seed {a['seed']}), "
                f"{a['pairs']} pairs asked"
            )
        return out


@dataclass(frozen=True)
class PoolResult:
    """A committed pool: its id, when it ran, the queue it wrote and its report."""

    pool_id: int
    pooled_at: datetime
    build_id: int
    rankers: tuple[str, ...]
    depth: int
    queue: tuple[QueueRow, ...]
    report: PoolReport

    def to_json(self) -> dict[str, Any]:
        """What `goldenset pool --json` prints: pool_id, pooled_at, then the report's keys."""
        return {"pool_id": self.pool_id, "pooled_at": _iso(self.pooled_at), **self.report.to_json()}


def large_pool_note(
    result: PoolResult,
    from_run: Sequence[str],
    *,
    rankers: str | None = None,
    strategy: str | None = None,
    budget: int | None = None,
) -> str | None:
    """For a `--from-run` pool without `budget` that queued more than LARGE_POOL pooled pairs:
    the count, and the same pool with `--budget LARGE_POOL` (contract 11.1); else None."""
    pooled = result.report.queue.get("pooled", 0)
    if not from_run or budget is not None or pooled <= LARGE_POOL:
        return None
    options = [f"--rankers {rankers}"] if rankers else []
    options += [f"--from-run {r}" for r in from_run] + [f"--depth {result.depth}"]
    options += [f"--strategy {strategy}"] if strategy else []
    command = "goldenset pool " + " ".join(options) + f" --budget {LARGE_POOL}"
    return (
        f"large pool: {pooled} pooled pairs queued; `{command}` queues the {LARGE_POOL} most promising "
        f"of them instead, and the next pool, after they are labelled, the next {LARGE_POOL}"
    )


# --------------------------------------------------------------------------- rankers


def parse_rankers(text: str) -> tuple[str, ...]:
    """`lexical,dense,core` as a tuple; white space around names is dropped."""
    names = tuple(n.strip() for n in text.split(","))
    if not text.strip() or any(not n for n in names):
        raise UsageError(
            f"--rankers {text!r} has an empty name; list rankers separated by commas, e.g. lexical,dense,core"
        )
    return names


def check_rankers(rankers: str | Sequence[str], depth: int) -> tuple[str, ...]:
    """The ranker names (a sequence, or one comma-separated string) and depth; UsageError naming a bad value."""
    names = parse_rankers(rankers) if isinstance(rankers, str) else tuple(rankers)
    if not names:
        raise UsageError("no ranker given; use lexical, dense, core or module:factory")
    for name in names:
        if name not in (*COMPONENTS, CORE) and ":" not in name:
            raise UsageError(f"unknown ranker {name!r}; use lexical, dense, core or a retriever as module:factory")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(f"ranker {repeated[0]!r} is listed twice; name each ranker once")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"--depth must be an integer >= 1, got {depth!r}")
    return names


Search = Callable[[str, int], Any]


def _make_rankers(names: tuple[str, ...], ctx: RetrieverContext, tasks: Sequence[str] = ()) -> dict[str, Search]:
    """One search function per ranker; the reference retriever is built once for all three of its rankers.

    Each retriever built that has `prepare_queries` is given `tasks`, every query it will be asked
    (the reference retriever only when a ranker of its uses the dense side: dense or core).
    """
    built: dict[str, Any] = {}

    def retriever(spec: str, ranker: str):
        if spec not in built:
            factory = load_factory(spec)
            try:
                built[spec] = build_retriever(factory, spec, ctx)
            except GoldensetError:
                raise
            except Exception as exc:
                raise GoldensetError(f"ranker {ranker!r} could not be built: {_first_line(exc)}") from exc
        return built[spec]

    out: dict[str, Search] = {}
    for name in names:
        if name in COMPONENTS:
            out[name] = _component(retriever(REFERENCE, name), name)
        elif name == CORE:
            out[name] = retriever(REFERENCE, name).search
        else:
            out[name] = retriever(name, name).search
    for spec, built_retriever in built.items():
        prepare = getattr(built_retriever, "prepare_queries", None)
        # The reference retriever's lexical side alone embeds nothing: no vectors for it.
        lexical_only = spec == REFERENCE and set(names) & {*COMPONENTS, CORE} == {"lexical"}
        if callable(prepare) and tasks and not lexical_only:
            try:
                prepare(list(tasks))
            except GoldensetError:
                raise
            except Exception as exc:
                raise GoldensetError(f"ranker {spec!r} failed preparing the queries: {_first_line(exc)}") from exc
    return out


def _component(ref: Any, name: str) -> Search:
    """The reference retriever's component `name` alone, as a search function."""

    def search(query: str, k: int) -> Any:
        return ref.search_component(name, query, k)

    return search


def _ranked(search: Search, name: str, query_id: str, task: str, depth: int) -> list[str]:
    """The ranker's top `depth` distinct doc_ids; GoldensetError naming the ranker when it fails."""
    # A stored benchmark run (--from-run) answers by query_id: its ranking, not a new search.
    by_query = getattr(search, "for_query", None)
    try:
        raw = by_query(query_id, depth) if by_query is not None else search(task, depth)
        hits: list[Hit] = check_hits(raw, f"ranker {name!r}")
    except Exception as exc:  # any failure of a ranker is reported with its name and the query
        raise GoldensetError(f"ranker {name!r} failed on query {query_id} ({task!r}): {_first_line(exc)}") from exc
    seen: list[str] = []
    for doc_id, _ in hits:
        if doc_id not in seen:
            seen.append(doc_id)
    return seen[:depth]


# --------------------------------------------------------------------------- the build's state


def build_snapshot(con: Connection, build: BuildRecord) -> CorpusSnapshot:
    """The corpus snapshot `build` used, read back from `corpus_documents`."""
    rows = con.execute(
        "SELECT doc_id, version, status, text, title, updated_at, superseded_by FROM corpus_documents "
        "WHERE content_sha256 = ? ORDER BY doc_id",
        [build.corpus_content_sha256],
    ).fetchall()
    snapshot = CorpusSnapshot(
        tuple(Document(*r) for r in rows), f"snapshot {build.corpus_content_sha256[:16]} of build {build.build_id}"
    )
    if snapshot.content_sha256 != build.corpus_content_sha256:
        raise GoldensetError(
            f"the stored snapshot of build {build.build_id} does not match its recorded identity "
            f"{build.corpus_content_sha256[:16]}; run `goldenset build` to make a new build"
        )
    return snapshot


@dataclass
class _State:
    """What the queue rules read from the warehouse for the latest build."""

    queries: dict[str, tuple[str, str]]  # query_id -> (project, task)
    golden: set[tuple[str, str, str]]  # (query_id, doc_id, doc_version)
    golden_pairs: set[tuple[str, str]]
    stale: list[tuple[str, str, str]]  # (query_id, doc_id, current_version)
    sources: set[tuple[str, str]]  # (query_id, D): ranked judgments and current labels
    judged: set[tuple[str, str]]  # (query_id, doc_id) with any winning verdict
    relevant: set[tuple[str, str]] = field(default_factory=set)  # (query_id, D) judged relevant (_RELEVANT)


_GOLDEN_QUERIES = "SELECT query_id, min(project), min(task) FROM golden_set GROUP BY query_id ORDER BY query_id"
_GOLDEN_ROWS = "SELECT query_id, doc_id, doc_version FROM golden_set"
_STALE = "SELECT query_id, doc_id, current_version FROM relabel_queue WHERE reason = 'version_changed'"
_SUCCESSOR_SOURCES = """
SELECT DISTINCT query_id, doc_id FROM judgments
WHERE channel = 'ranked' AND query_id IN (SELECT query_id FROM golden_set)
UNION
SELECT DISTINCT query_id, doc_id FROM current_labels WHERE query_id IN (SELECT query_id FROM golden_set)
"""
_JUDGED = "SELECT DISTINCT query_id, doc_id FROM judgments WHERE query_id IN (SELECT query_id FROM golden_set)"
# (query, D) judged relevant, for the successors of D (contract 7.4, changed in v5): the golden set's
# label of the pair when it has one (any version, any source), else any ranked-channel `helped`
# verdict or annotator's current label of grade >= 1 on it.
_RELEVANT = """
SELECT DISTINCT query_id, doc_id FROM golden_set WHERE relevance >= 1
UNION
SELECT DISTINCT e.query_id, e.doc_id FROM (
  SELECT query_id, doc_id FROM judgments WHERE channel = 'ranked' AND verdict = 'helped'
  UNION ALL
  SELECT query_id, doc_id FROM current_labels WHERE grade >= 1
) e
WHERE e.query_id IN (SELECT query_id FROM golden_set)
  AND NOT EXISTS (SELECT 1 FROM golden_set g WHERE g.query_id = e.query_id AND g.doc_id = e.doc_id)
"""


def _read_state(con: Connection) -> _State:
    queries = {q: (p, t) for q, p, t in con.execute(_GOLDEN_QUERIES).fetchall()}
    golden = {(q, d, v) for q, d, v in con.execute(_GOLDEN_ROWS).fetchall()}
    return _State(
        queries=queries,
        golden=golden,
        golden_pairs={(q, d) for q, d, _ in golden},
        stale=[(q, d, v) for q, d, v in con.execute(_STALE).fetchall()],
        sources={(q, d) for q, d in con.execute(_SUCCESSOR_SOURCES).fetchall()},
        judged={(q, d) for q, d in con.execute(_JUDGED).fetchall()},
        relevant={(q, d) for q, d in con.execute(_RELEVANT).fetchall()},
    )


# --------------------------------------------------------------------------- the pool


@dataclass
class _Pair:
    rankers: set[str] = field(default_factory=set)
    best_rank: int | None = None

    def add(self, ranker: str, rank: int) -> None:
        self.rankers.add(ranker)
        self.best_rank = rank if self.best_rank is None else min(self.best_rank, rank)


@dataclass
class _Returned:
    """What the rankers returned: each pair's rankers and best rank, and the counts per ranker."""

    names: tuple[str, ...]
    pairs: dict[tuple[str, str], _Pair]
    returned: dict[str, int]
    outside: dict[str, int]
    by_ranker: dict[str, set[tuple[str, str]]]
    # query_id -> ranker -> its active doc_ids in rank order (what a strategy draws from)
    lists: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @classmethod
    def collect(
        cls, searches: dict[str, Search], queries: dict[str, tuple[str, str]], active: dict[str, Document], depth: int
    ) -> _Returned:
        """Ask every ranker for every query, in query_id order, then ranker order."""
        names = tuple(searches)
        out = cls(names, {}, dict.fromkeys(names, 0), dict.fromkeys(names, 0), {n: set() for n in names})
        for qid, (_, task) in queries.items():
            for name in names:
                for rank, doc_id in enumerate(_ranked(searches[name], name, qid, task, depth), start=1):
                    if doc_id not in active:
                        out.outside[name] += 1
                        continue
                    out.returned[name] += 1
                    out.by_ranker[name].add((qid, doc_id))
                    out.lists.setdefault(qid, {}).setdefault(name, []).append(doc_id)
                    out.pairs.setdefault((qid, doc_id), _Pair()).add(name, rank)
        return out

    def rankers_of(self, pair: tuple[str, str], order: tuple[str, ...]) -> tuple[str, ...]:
        """The rankers that returned `pair`, in `order` (the --rankers order); () when none did."""
        p = self.pairs.get(pair)
        return tuple(n for n in order if p is not None and n in p.rankers)

    def best_rank(self, pair: tuple[str, str]) -> int | None:
        """The best rank any ranker gave `pair`, None when none returned it."""
        p = self.pairs.get(pair)
        return p.best_rank if p else None


Chosen = list[tuple[tuple[str, str], tuple[str, str]]]  # ((query_id, doc_id), (reason, doc_version)), by priority


def _assign(
    state: _State,
    snapshot: CorpusSnapshot,
    returned: _Returned,
    build_id: int,
    names: tuple[str, ...],
    depth: int,
    audit: tuple[audit_sample.AuditDesign | None, set[tuple[str, str]]] | None = None,
) -> tuple[Chosen, PoolReport]:
    """Give each pair the first reason that applies, order them by priority, and count the pool.

    `audit`: the design of the audit the pool draws (None when it draws none) and the pairs to ask
    (a new audit's, or the latest audit's pending ones); None: no pair to ask.
    """
    active = snapshot.active
    docs = {d.doc_id: d for d in snapshot.documents}
    chosen: dict[tuple[str, str], tuple[str, str]] = {}
    for qid, doc_id, version in state.stale:
        chosen.setdefault((qid, doc_id), ("stale", version))
    of_relevant: set[tuple[str, str]] = set()  # successors of a document judged relevant for the query
    for qid, d in sorted(state.sources):
        source = docs.get(d)
        if source is None or source.superseded_by is None or qid not in state.queries:
            continue
        successor = active.get(source.superseded_by)
        if successor is None or (qid, successor.doc_id) in state.golden_pairs:
            continue
        chosen.setdefault((qid, successor.doc_id), ("successor", successor.version))
        if (qid, d) in state.relevant:
            of_relevant.add((qid, successor.doc_id))
    for qid, doc_id in returned.pairs:
        version = active[doc_id].version
        if (qid, doc_id) not in chosen and (qid, doc_id, version) not in state.golden:
            chosen[(qid, doc_id)] = ("pooled", version)
    reasons: tuple[str, ...] = REASONS
    audit_json = None
    if audit is not None:
        design, asked = audit
        chosen = audit_sample.assign(chosen, asked, {d: active[d].version for _, d in asked})
        reasons = ORDER
        audit_json = design.to_json() if design is not None else None
    # Each returned pair under the reason it is queued with, or already labelled: they add up to the distinct.
    counts = dict.fromkeys(("stale", "successor", audit_sample.REASON, "pooled", "already_labelled"), 0)
    never_judged = 0
    for pair in returned.pairs:
        reason = chosen[pair][0] if pair in chosen else "already_labelled"
        counts[reason] += 1
        never_judged += reason == "pooled" and pair not in state.judged

    order = {r: i for i, r in enumerate(ORDER)}

    def priority(item: tuple[tuple[str, str], tuple[str, str]]):
        pair, (reason, _) = item
        best = returned.best_rank(pair)
        # A successor of no document judged relevant for the query replaces a label that said
        # "not this one": it goes after every pooled pair (contract 7.4, changed in v5).
        rank = len(ORDER) if reason == "successor" and pair not in of_relevant else order[reason]
        return (rank, best is None, best or 0, -len(returned.rankers_of(pair, names)), pair[0], pair[1])

    ranked = sorted(chosen.items(), key=priority)
    report = PoolReport(
        build_id=build_id,
        rankers=names,
        depth=depth,
        queries=len(state.queries),
        returned=returned.returned,
        outside_snapshot=returned.outside,
        shared=tuple((a, b, len(returned.by_ranker[a] & returned.by_ranker[b])) for a, b in combinations(names, 2)),
        returned_distinct=len(returned.pairs),
        returned_stale=counts["stale"],
        returned_successor=counts["successor"],
        already_labelled=counts["already_labelled"],
        pooled=counts["pooled"],
        pooled_never_judged=never_judged,
        queue={r: sum(1 for _, (reason, _) in ranked if reason == r) for r in reasons},
        returned_audit=counts[audit_sample.REASON] if audit is not None else None,
        audit=audit_json,
    )
    return ranked, report


def _final_counts(report: PoolReport, chosen: Chosen, returned: _Returned) -> PoolReport:
    """The queued pairs a ranker returned, by reason, and the audit's pairs as queued: after the rubrics and the
    budget, the numbers the queue holds (`audit.pairs` equals the rows of `audit_pairs`)."""
    queued_returned = [reason for pair, (reason, _) in chosen if pair in returned.pairs]
    report = replace(report, queue_returned={r: queued_returned.count(r) for r in report.queue})
    if report.audit is None:
        return report
    return replace(report, audit=report.audit | {"pairs": sum(1 for _, (r, _) in chosen if r == audit_sample.REASON)})


def _judged_only(chosen: Chosen, report: PoolReport, state: _State, rubrics: RubricSet) -> tuple[Chosen, PoolReport]:
    """Leave out the pairs of projects no rubric judges, counting them by project (contract 9.5)."""
    kept: Chosen = []
    left: dict[str, int] = {}
    for item in chosen:
        project = state.queries[item[0][0]][0]
        if rubrics.for_project(project) is None:
            left[project] = left.get(project, 0) + 1
        else:
            kept.append(item)
    queue = {r: sum(1 for _, (reason, _) in kept if reason == r) for r in report.queue}
    return kept, replace(report, queue=queue, no_rubric=dict(sorted(left.items())))


def _audit_options(
    con: Connection, audit: int | None, seed: int, active_judge: str | None
) -> tuple[tuple[int, int] | None, tuple[active_audit.JudgeRates, dict[tuple[str, str], int]] | None]:
    """The audit's size and seed, and for an active one the judge's rates: checked before the rankers run."""
    sampling = audit_sample.check_audit(audit, seed, active_judge)
    return sampling, (active_audit.judge_rates(con, active_judge) if sampling and active_judge else None)


def _draw_audit(
    con: Connection,
    state: _State,
    returned: _Returned,
    snapshot: CorpusSnapshot,
    sampling: tuple[int, int] | None,
    judged: tuple[active_audit.JudgeRates, dict[tuple[str, str], int]] | None,
    rubrics: RubricSet | None,
) -> tuple[audit_sample.AuditDesign | None, set[tuple[str, str]] | None]:
    """The audit the pool draws (uniform, or active by the judge's uncertainty) among the golden queries some
    rubric judges, and the pairs it asks; without --audit, no design and the latest audit's pending pairs
    (None when there are none)."""
    if sampling is None:
        pending = audit_sample.pending_pairs(con, state.queries, snapshot.active)
        return None, (pending or None)
    human = audit_sample.human_rows(con)
    population = [q for q, (project, _) in state.queries.items() if _judged(rubrics, project)]
    versions = {d: snapshot.active[d].version for _, d in returned.pairs}
    if judged is None:
        design = audit_sample.draw(population, *sampling)
    else:
        u = active_audit.uncertainty(population, returned.pairs, versions, human, *judged)
        design = audit_sample.draw_active_design(population, *sampling, judged[0].judge, u)
    return design, audit_sample.asked_pairs(design, returned.pairs, versions, human)


def _judged(rubrics: RubricSet | None, project: str) -> bool:
    """Some rubric judges the project (contract 9.5): always without rubrics or when they judge every one."""
    return rubrics is None or not rubrics.judges_by_project or rubrics.for_project(project) is not None


def run_pool(
    con: Connection,
    corpus: CorpusSnapshot | None = None,
    embedder: Embedder | None = None,
    *,
    rankers: str | Sequence[str] | None = DEFAULT_RANKERS,
    depth: int = DEFAULT_DEPTH,
    index_dir: str | os.PathLike[str],
    now: datetime | None = None,
    from_run: str | Sequence[str] | None = None,
    strategy: str | None = None,
    budget: int | None = None,
    seed: int = 0,
    audit: int | None = None,
    rubrics: RubricSet | None = None,
    active_judge: str | None = None,
) -> PoolResult:
    """Pool the rankers over the latest build's golden queries and replace the labelling queue.

    `corpus` None reads the build's own snapshot (one passed in must be that one); `embedder`
    None makes the packaged model, loaded only if `dense` or `core` runs or the strategy is
    `feedback`. `strategy` None is `feedback` with a `budget`, `depth` (contract 7.4) without.
    NoBuild before the first build; UsageError for an unknown ranker or a depth below 1;
    GoldensetError naming a ranker that fails. `audit` N draws an audit of N golden queries
    with `seed` (goldenset.labelling.audit), by judge `active_judge`'s uncertainty when given
    (contract 12.1). `rubrics` (contract 9.5): a pair is queued only when some rubric judges
    its query's project; the others are counted by project (`no_rubric`). None queues all.
    """
    build = load_build(con)
    strategy = strategies.resolve(strategy, budget)
    run_rankers = load_run_rankers(con, [from_run] if isinstance(from_run, str) else list(from_run or ()))
    # --from-run alone pools the runs; with --rankers, the runs and the rankers together.
    if not run_rankers:
        names = check_rankers(DEFAULT_RANKERS if rankers is None else rankers, depth)
    else:
        names = check_rankers(rankers, depth) if rankers else ()
        clash = sorted(set(names) & set(run_rankers))
        if clash:
            raise UsageError(f"ranker {clash[0]!r} is both in --rankers and a --from-run retriever; name it once")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise UsageError(f"--depth must be an integer >= 1, got {depth!r}")
    sampling, judged = _audit_options(con, audit, seed, active_judge)
    snapshot = build_snapshot(con, build)
    if corpus is not None and corpus.content_sha256 != snapshot.content_sha256:
        raise GoldensetError(
            f"the corpus passed ({corpus.source}) is not the snapshot golden build {build.build_id} used; "
            "pool over the build's own snapshot (pass no corpus) or run `goldenset build` first"
        )
    ctx = RetrieverContext(snapshot, con, embedder or Embedder(), Path(index_dir), {})
    state = _read_state(con)
    searches = _make_rankers(names, ctx, [task for _, task in state.queries.values()])
    searches.update(run_rankers)
    names = (*names, *run_rankers)
    returned = _Returned.collect(searches, state.queries, snapshot.active, depth)
    design, asked = _draw_audit(con, state, returned, snapshot, sampling, judged, rubrics)
    audit_pairs = None if asked is None else (design, asked)
    chosen, report = _assign(state, snapshot, returned, build.build_id, names, depth, audit_pairs)
    if rubrics is not None and rubrics.judges_by_project:
        chosen, report = _judged_only(chosen, report, state, rubrics)
    if strategy != strategies.DEFAULT_STRATEGY or budget is not None:
        tasks = {q: task for q, (_, task) in state.queries.items()}
        chosen, report = strategies.apply(
            con, chosen, report, returned.lists, names, snapshot, strategy, budget, seed, ctx.embedder, tasks
        )
        if asked is not None:  # the strategy counts its own three reasons; the audit's rows stay as they were
            report = replace(report, queue={r: sum(1 for _, (x, _) in chosen if x == r) for r in ORDER})
    report = _final_counts(report, chosen, returned)
    pooled_at = now or utcnow()
    with transaction(con):
        pool_id = con.execute("SELECT coalesce(max(pool_id), 0) + 1 FROM pool_runs").fetchall()[0][0]
        rows = tuple(
            QueueRow(
                pool_id=pool_id,
                query_id=qid,
                doc_id=doc_id,
                doc_version=version,
                reason=reason,
                rankers=returned.rankers_of((qid, doc_id), names),
                best_rank=returned.best_rank((qid, doc_id)),
                priority=i,
                pooled_at=pooled_at,
                project=state.queries[qid][0],
                task=state.queries[qid][1],
            )
            for i, ((qid, doc_id), (reason, version)) in enumerate(chosen, start=1)
        )
        con.execute("DELETE FROM labelling_queue")
        con.register("_pool_queue", _queue_table(rows))
        try:
            con.execute("INSERT INTO labelling_queue BY NAME SELECT * FROM _pool_queue")
        finally:
            con.unregister("_pool_queue")
        con.execute(
            "INSERT INTO pool_runs (pool_id, pooled_at, build_id, rankers, depth, report) VALUES (?, ?, ?, ?, ?, ?)",
            [pool_id, pooled_at, build.build_id, list(names), depth, json.dumps(report.to_json())],
        )
        if design is not None:
            queued = ((r.query_id, r.doc_id, r.doc_version) for r in rows if r.reason == audit_sample.REASON)
            audit_sample.store(con, pool_id, build.build_id, pooled_at, design, queued)
    return PoolResult(pool_id, pooled_at, build.build_id, names, depth, rows, report)


def _queue_table(rows: Iterable[QueueRow]) -> pa.Table:
    rows = list(rows)
    return pa.table(
        {
            "pool_id": pa.array([r.pool_id for r in rows], pa.int64()),
            "query_id": pa.array([r.query_id for r in rows], pa.string()),
            "doc_id": pa.array([r.doc_id for r in rows], pa.string()),
            "doc_version": pa.array([r.doc_version for r in rows], pa.string()),
            "reason": pa.array([r.reason for r in rows], pa.string()),
            "rankers": pa.array([list(r.rankers) for r in rows], pa.list_(pa.string())),
            "best_rank": pa.array([r.best_rank for r in rows], pa.int32()),
            "priority": pa.array([r.priority for r in rows], pa.int64()),
            "pooled_at": pa.array([r.pooled_at for r in rows], pa.timestamp("us")),
            "project": pa.array([r.project for r in rows], pa.string()),
            "task": pa.array([r.task for r in rows], pa.string()),
        }
    )


# --------------------------------------------------------------------------- reading the queue


def queue_summary(con: Connection) -> dict[str, Any]:
    """Queue size by reason and the latest pool's report, as JSON-ready values (for asset metadata).

    The sizes are goldenset.counts' `labelling_queue` and `labelling_queue_by_reason`, the
    names `status --json` shows them under.
    """
    from goldenset.counts import labelling_queue_by_reason

    by_reason = labelling_queue_by_reason(con)
    latest = con.execute("SELECT max(build_id) FROM golden_builds").fetchall()[0][0]
    row = con.execute(
        "SELECT pool_id, pooled_at, build_id, rankers, depth, report FROM pool_runs ORDER BY pool_id DESC LIMIT 1"
    ).fetchone()
    summary: dict[str, Any] = {
        "labelling_queue": sum(by_reason.values()),
        "labelling_queue_by_reason": by_reason,
        "pool_id": None,
        "pooled_at": None,
        "build_id": None,
        "latest_build_id": latest,
        "rankers": None,
        "depth": None,
        "report": None,
    }
    if row is not None:
        pool_id, pooled_at, build_id, names, depth, report = row
        summary.update(
            pool_id=pool_id,
            pooled_at=_iso(pooled_at),
            build_id=build_id,
            rankers=list(names),
            depth=depth,
            report=json.loads(report),
        )
    return summary


@dataclass(frozen=True)
class QueueTask:
    """A queued pair with what an annotator sees: the query and the document at its current version."""

    pool_id: int
    priority: int
    reason: str
    query_id: str
    project: str
    task: str
    doc_id: str
    doc_version: str
    title: str | None
    text: str
    rankers: tuple[str, ...]
    best_rank: int | None

    def pair_fields(self) -> dict[str, Any]:
        """The queued pair as every export writes it (JSONL lines and Label Studio tasks alike),
        so the two formats cannot drift apart on what identifies a pair."""
        return {
            "pool_id": self.pool_id,
            "priority": self.priority,
            "reason": self.reason,
            "query_id": self.query_id,
            "project": self.project,
            "task": self.task,
            "doc_id": self.doc_id,
            "doc_version": self.doc_version,
        }


def queue_tasks(con: Connection) -> list[QueueTask]:
    """The labelling queue in priority order, with each document's title and text at the queued version."""
    if con.execute("SELECT count(*) FROM pool_runs").fetchall()[0][0] == 0:
        raise GoldensetError("no labelling queue yet: run `goldenset pool` first")
    rows = con.execute(
        """
        SELECT q.pool_id, q.priority, q.reason, q.query_id, q.project, q.task, q.doc_id, q.doc_version,
               d.title, d.text, q.rankers, q.best_rank
        FROM labelling_queue q
        JOIN pool_runs p ON p.pool_id = q.pool_id
        JOIN golden_builds b ON b.build_id = p.build_id
        LEFT JOIN corpus_documents d ON d.content_sha256 = b.corpus_content_sha256
             AND d.doc_id = q.doc_id AND d.version = q.doc_version
        ORDER BY q.priority
        """
    ).fetchall()
    return [
        QueueTask(
            pool_id=r[0],
            priority=r[1],
            reason=r[2],
            query_id=r[3],
            project=r[4],
            task=r[5],
            doc_id=r[6],
            doc_version=r[7],
            title=r[8],
            text=r[9] or "",
            rankers=tuple(r[10] or ()),
            best_rank=r[11],
        )
        for r in rows
    ]


def rubric_json(rubric: Rubric) -> dict[str, Any]:
    """The rubric as annotators need it: name, task, as_of, dimensions with tests, labels with admissible decided_by."""
    as_of = rubric.as_of.isoformat() if isinstance(rubric.as_of, date) else rubric.as_of
    return {
        "name": rubric.name,
        "task": rubric.task,
        "as_of": as_of,
        "dimensions": [{"name": d.name, "test": d.test} for d in rubric.dimensions],
        "labels": [
            lab.to_json() | {"decided_by": list(rubric.admissible_decided_by(lab.name))} for lab in rubric.labels
        ],
    }


def task_json(task: QueueTask, rubric: Rubric) -> dict[str, Any]:
    """One line of `pool export --format jsonl`."""
    return {
        **task.pair_fields(),
        "title": task.title,
        "text": task.text,
        "rankers": list(task.rankers),
        "best_rank": task.best_rank,
        "rubric": rubric_json(rubric),
    }


@dataclass(frozen=True)
class QueueExport:
    """What an export wrote: its files, the tasks written, and tasks left out for want of a rubric (by project)."""

    files: tuple[Path, ...]
    n_tasks: int
    # Label Studio with several rubrics: (rubric, tasks, tasks file, config file) per rubric.
    parts: tuple[tuple[str, int, Path, Path], ...] = ()
    no_rubric: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What `pool export` prints."""
        s = "s" if self.n_tasks != 1 else ""
        if self.parts:
            out = [
                f"wrote {n} task{'s' if n != 1 else ''} of rubric {name} to {tasks} and its labelling config to {config}"
                for name, n, tasks, config in self.parts
            ]
        elif len(self.files) > 1:
            out = [f"wrote {self.n_tasks} task{s} to {self.files[0]} and the labelling config to {self.files[1]}"]
        else:
            out = [f"wrote {self.n_tasks} task{s} to {self.files[0]}"]
        if self.no_rubric:
            left = sum(self.no_rubric.values())
            out.append(
                f"left out {left} queued pair{'s' if left != 1 else ''} no rubric judges ("
                + ", ".join(f"{p} {n}" for p, n in self.no_rubric.items())
                + "); add a rubric for the project and export again"
            )
        return out


def write_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` to `path` through a temporary file and a rename, so a reader never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{ts.microsecond:06d}" if ts.microsecond else "") + "Z"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
