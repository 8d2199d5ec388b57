"""Running the benchmark: gates, the rows, metrics; what `bench run` and the asset call.

Rows (one search per query, the rows re-rank its result):

- `core`: the retriever alone, graph and boosts off; blind to the labels by
  construction. The deciding row.
- `+graph`: the graph hop on top (reference only: learns from every verdict).
- `+graph+boosts`: what users see (reference only, same reason).
- `+graph+boosts honest`: graph and boosts learned without the verdicts of the
  evaluated query (leave-one-out by query_id).

Graph and boosts are reference features learned from verdicts, not parts of the
retriever under test: only the retriever's own components are probed, and only
they can refuse a run (exit 4) or degrade it. When a feature has nothing to learn
from, the rows it would feed are left out with one warning line saying why:
no edge in the graph leaves out `+graph` (it would rank exactly as `core`), and
the `+graph+boosts` rows rank with the boosts alone, as production would; nothing
to boost (no active document ever helped) leaves out all three reference rows.

Depth: each query asks for max(100, largest k) documents; MRR and MAP read that deep.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from goldenset import progress
from goldenset.bench import coverage, gates, golden
from goldenset.bench import feedback as fb
from goldenset.bench.estimate import run_estimates
from goldenset.bench.measures import compute as compute_measures
from goldenset.bench.measures import parse_measures
from goldenset.bench.metrics import QueryPolicy, benchmark_metrics, evaluate, select_queries
from goldenset.bench.runs import DECIDING_ROW, ROWS, BenchmarkRun, new_run_id
from goldenset.bench.trec import ranked_lists
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot, active_signature, drift
from goldenset.embeddings import Embedder
from goldenset.errors import GoldensetError, UsageError
from goldenset.retrieval.retriever import (
    REFERENCE,
    ComponentStatus,
    RetrieverContext,
    build_retriever,
    check_hits,
    component_down,
    load_factory,
    probe_all,
)

DEFAULT_K = (5, 24)
MIN_DEPTH = 100

LEAKAGE_NOTE = (
    "Leakage: core learns nothing from verdicts. +graph and +graph+boosts learn from every verdict, the "
    "evaluated query's own included, so they are reference only. The honest row leaves the evaluated query's "
    "own verdicts (all its serves, by query_id) out of both the graph and the boosts. What still leaks into "
    "it: verdicts of other queries that ask the same thing in other words (another query_id); verdicts "
    "logged after the evaluated serves (no time split); and exposure: only documents production served "
    "were ever judged, which favours whatever production already ranks high."
)
GRAPH_ROWS = ("+graph", "+graph+boosts", "+graph+boosts honest")
BOOST_ROWS = ("+graph+boosts", "+graph+boosts honest")


@dataclass(frozen=True)
class BenchConfig:
    """Everything `bench run` and the asset can set."""

    retriever: str = REFERENCE
    retriever_config: dict = field(default_factory=dict)
    k_values: tuple[int, ...] = DEFAULT_K
    depth: int | None = None
    exclude_stale: bool = False
    max_age_days: float = gates.MAX_AGE_DAYS
    allow_degraded: bool = False
    index_dir: Path = Path("var/bench-index")
    # The fifth gate on a single run: warn when the deciding row's judged@k is below this.
    coverage_floor: float = coverage.DEFAULT_FLOOR
    # `--estimate ppi --judge NAME` (contract 12.2): prediction-powered estimates beside the means,
    # with `--design` and `--ppi-lambda` (None: tuned, PPI++).
    estimate_judge: str | None = None
    estimate_design: str = "finite"
    estimate_lambda: float | None = None
    # `--measure NAME` (contract 16.5): ir_measures' names, computed by trec_eval beside the metrics.
    measures: tuple[str, ...] = ()

    def effective_depth(self) -> int:
        if any(k < 1 for k in self.k_values) or not self.k_values:
            raise UsageError(f"k values must be integers >= 1, got {list(self.k_values)}")
        depth = self.depth if self.depth is not None else max(MIN_DEPTH, *self.k_values)
        if depth < max(self.k_values):
            raise UsageError(f"--depth {depth} is below the largest k {max(self.k_values)}; raise --depth")
        return depth


@dataclass(frozen=True)
class Features:
    """What graph and boosts learned from the verdicts, and the reference rows they can feed."""

    feedback: fb.Feedback | None
    graph: bool
    boosts: bool
    rows: tuple[str, ...]  # every row measured, core first
    warning: str | None  # the one line saying which rows were left out and why


def learn_features(con: Connection, corpus: CorpusSnapshot) -> Features:
    """Learn graph and boosts from the judgments; leave out the rows they cannot feed, saying why."""
    try:
        learned = fb.Feedback.from_warehouse(con, corpus.active)
    except duckdb.Error as exc:
        # Reference rows only: a judgments view that cannot be read must not stop the deciding row.
        reason = f"cannot read the judgments view ({(str(exc).splitlines() or [type(exc).__name__])[0]})"
        return Features(None, False, False, ("core",), _left_out(GRAPH_ROWS, f"graph and boosts {reason}"))
    boosts_gap = learned.boosts_gap()
    if boosts_gap is not None:
        return Features(
            learned,
            False,
            False,
            ("core",),
            _left_out(GRAPH_ROWS, f"graph and boosts have nothing to learn from: {boosts_gap}"),
        )
    graph_gap = learned.graph_gap()
    if graph_gap is not None:
        rows = tuple(r for r in ROWS if r != "+graph")
        warning = (
            f"WARNING: graph has nothing to learn from: {graph_gap}; row +graph left out (it would rank "
            f"as core), rows {' and '.join(BOOST_ROWS)} rank with the boosts alone"
        )
        return Features(learned, False, True, rows, warning)
    return Features(learned, True, True, ROWS, None)


def _left_out(rows: tuple[str, ...], why: str) -> str:
    return f"WARNING: {why}; rows {', '.join(rows)} left out (reference only; core decides)"


@dataclass
class Gated:
    """A retriever that passed the gates, with what the gates found."""

    retriever: Any
    build: golden.Build
    statuses: list[ComponentStatus]  # the retriever's own components only
    features: Features
    warnings: list[str]
    drift: float

    @property
    def down(self) -> list[str]:
        return [s.name for s in self.statuses if not s.up]


def open_gates(
    con: Connection,
    corpus: CorpusSnapshot,
    embedder: Embedder,
    config: BenchConfig,
    now: datetime | None = None,
) -> Gated:
    """Run the gates in exit-code order: usage (2), age (3), probes (4); collect the warnings.

    Only the retriever's components (its `components()`) are probed: one that errors
    or returns nothing refuses the run (exit 4) unless allow_degraded, and even then
    when every one is down. Graph and boosts never refuse; see learn_features.
    """
    build = golden.latest_build(con)
    config.effective_depth()
    parse_measures(config.measures)
    factory = load_factory(config.retriever)
    # The retriever is built before the age gate: a factory whose object cannot search is
    # wrong usage (2), which must win over a golden set that is too old (3). Building it
    # only constructs; its parts are first touched by the probes, after the age gate.
    ctx = RetrieverContext(corpus, con, embedder, Path(config.index_dir), dict(config.retriever_config))
    retriever = build_retriever(factory, config.retriever, ctx)
    gates.check_age(build, config.max_age_days, now)
    statuses = probe_all(retriever, corpus)
    down = [s for s in statuses if not s.up]
    if down and (not config.allow_degraded or len(down) == len(statuses)):
        raise component_down(statuses)
    warnings = []
    if down:
        warnings.append(
            "DEGRADED: ran with "
            + ", ".join(f"{s.name} down ({s.reason})" for s in down)
            + "; these numbers do not measure the full retriever"
        )
        disable = getattr(retriever, "disable", None)
        if callable(disable):
            disable([s.name for s in down])
    features = learn_features(con, corpus)
    if features.warning:
        warnings.append(features.warning)
    d = drift(golden.build_signature(con, build), active_signature(corpus))
    w = gates.drift_warning(d, build)
    if w:
        warnings.insert(0, w)
    return Gated(retriever, build, statuses, features, warnings, d)


def run_benchmark(
    con: Connection,
    corpus: CorpusSnapshot,
    embedder: Embedder,
    config: BenchConfig,
    now: datetime | None = None,
) -> BenchmarkRun:
    """Gate, search every golden query once, score the rows; the caller stores the run.

    Reports the step "benchmark queries" (one advance per query) through goldenset.progress.
    """
    started = now or utcnow()
    gated = open_gates(con, corpus, embedder, config, now)
    depth = config.effective_depth()
    gq = golden.load_qrels(con, config.exclude_stale)
    metrics = benchmark_metrics(config.k_values)
    features = gated.features
    queries = _measured_queries(gq, gated.build.build_id)
    _prepare_queries(gated.retriever, [gq.tasks[qid] for qid in queries])
    lists = _search(gated.retriever, gq.tasks, queries, features, depth)
    values = {
        row: evaluate(ranked_lists(lists[row]), gq.qrels, metrics, policy=QueryPolicy.SKIP_NO_RELEVANT)
        for row in features.rows
    }
    measures = parse_measures(config.measures)
    for row in features.rows:
        for qid, named in compute_measures(measures, ranked_lists(lists[row]), gq.qrels, list(values[row])).items():
            values[row][qid].update(named)
    estimates = None
    if config.estimate_judge is not None:
        estimates = run_estimates(
            con,
            config.estimate_judge,
            {row: ranked_lists(lists[row]) for row in features.rows},
            {row: list(values[row]) for row in features.rows},
            metrics,
            exclude_stale=config.exclude_stale,
            design=config.estimate_design,
            lam=config.estimate_lambda,
        )
    run = BenchmarkRun(
        run_id=new_run_id(started),
        started_at=started,
        build_id=gated.build.build_id,
        labels_build_id=gated.build.labels_build_id,
        corpus_fingerprint=corpus.fingerprint,
        retriever=config.retriever,
        retriever_config=_retriever_config(config, gated.retriever, features),
        degraded=bool(gated.down),
        warnings=gated.warnings,
        k_values=tuple(config.k_values),
        depth=depth,
        exclude_stale=config.exclude_stale,
        stale_labels=gq.stale_labels,
        corpus_drift=gated.drift,
        down_components=gated.down,
        metric_names=[m.name for m in metrics],
        values=values,
        notes=_notes(gq),
        skipped_queries=len(gq.queries_without_relevant),
        ranked=lists,
        estimates=estimates,
        measures=measures,
    )
    check = coverage.check_run(run, DECIDING_ROW, coverage.Thresholds(floor=config.coverage_floor).floor)
    run.coverage_warnings = check.lines + check.commands
    return run


def _measured_queries(gq: golden.GoldenQrels, build_id: int) -> list[str]:
    """The golden queries the run searches: those with a label of grade >= 1 (the query policy).

    Only those are searched, so the written run files evaluate (bench eval) to the stored means.
    None is an error: a table of n/a is not a measurement, so say why instead.
    """
    queries = list(select_queries({q: () for q in gq.qrels}, gq.qrels, QueryPolicy.SKIP_NO_RELEVANT).evaluated)
    if not queries:
        raise GoldensetError(
            f"golden build {build_id} has no query with a relevant label to measure"
            + (" once stale labels are left out; drop --exclude-stale" if gq.stale_excluded else "")
            + "; `goldenset status` shows the funnel"
        )
    return queries


def _prepare_queries(retriever: Any, tasks: list[str]) -> None:
    """Let a retriever that embeds queries do it for the whole run in one batch (optional for a plug-in)."""
    prepare = getattr(retriever, "prepare_queries", None)
    if not callable(prepare):
        return
    try:
        prepare(tasks)
    except Exception as exc:
        reason = (str(exc).splitlines() or [""])[0] or type(exc).__name__
        raise GoldensetError(
            f"retriever failed preparing the run's queries: {reason}; nothing was stored, fix the retriever "
            "and run again"
        ) from exc


def _search(
    retriever: Any, tasks: Mapping[str, str], queries: list[str], features: Features, depth: int
) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Search each query once and derive every feature row's ranked list from the same hits.

    Reports the step "benchmark queries" (one advance per query). A plug-in's own error
    (ConnectionError, ...) is a run failure, exit 1, with nothing stored.
    """
    lists: dict[str, dict[str, list[tuple[str, float]]]] = {row: {} for row in features.rows}
    with progress.step("benchmark queries", total=len(queries)) as advance:
        for qid in queries:
            try:
                hits = check_hits(retriever.search(tasks[qid], depth), "search()")
            except Exception as exc:
                reason = (str(exc).splitlines() or [""])[0] or type(exc).__name__
                raise GoldensetError(
                    f"retriever failed on query {qid} ({tasks[qid]!r}): {reason}; "
                    "nothing was stored, fix the retriever and run again"
                ) from exc
            hits = _first_occurrence(hits)[:depth]
            for row in features.rows:
                lists[row][qid] = _variant(row, hits, features, depth, qid)
            advance(1)
    return lists


def _notes(gq: golden.GoldenQrels) -> list[str]:
    """What the run's report says about the golden set it was measured on, the leakage note last."""
    notes = [
        f"{gq.stale_labels} stale label(s) in the golden set, "
        + ("left out (--exclude-stale)" if gq.stale_excluded else "included in the qrels")
    ]
    if gq.overruled:
        notes.append(
            f"{len(gq.overruled)} query(ies) skipped: no label with grade >= 1 "
            "(every positive overruled by a human or judge label)"
        )
    if gq.stale_positives_only:
        notes.append(
            f"{len(gq.stale_positives_only)} query(ies) skipped: every label with grade >= 1 is stale "
            "and --exclude-stale left it out"
        )
    notes.append(LEAKAGE_NOTE)
    return notes


def _retriever_config(config: BenchConfig, retriever: Any, features: Features) -> dict[str, Any]:
    """The run's record of how it retrieved: the options, the retriever's own config, graph and boosts."""
    retriever_config: dict[str, Any] = {"options": copy.deepcopy(config.retriever_config)}
    cfg = getattr(retriever, "config", None)
    if callable(cfg):
        retriever_config["retriever"] = cfg()
    retriever_config["graph"] = {"seeds": fb.GRAPH_SEEDS, "hop_decay": fb.HOP_DECAY, "enabled": features.graph}
    retriever_config["boosts"] = {"strength": fb.BOOST_STRENGTH, "enabled": features.boosts}
    return retriever_config


def _variant(
    row: str, hits: list[tuple[str, float]], features: Features, depth: int, qid: str
) -> list[tuple[str, float]]:
    if row == "core":
        return hits
    boosts = features.boosts and row in BOOST_ROWS
    exclude = qid if row.endswith(" honest") else None
    return fb.rerank(hits, features.feedback, graph=features.graph, boosts=boosts, depth=depth, exclude_query=exclude)


def _first_occurrence(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    # A retriever listing a document twice keeps its first (best) place; metrics
    # must never count one document twice.
    seen: set[str] = set()
    out = []
    for d, s in hits:
        if d not in seen:
            seen.add(d)
            out.append((d, s))
    return out
