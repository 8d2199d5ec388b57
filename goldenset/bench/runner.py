"""Running the benchmark: gates, the four rows, metrics; what `bench run` and the asset call.

Rows (one search per query, the rows re-rank its result):

- `core`: the retriever alone, graph and boosts off; blind to the labels by
  construction. The deciding row.
- `+graph`: the graph hop on top (reference only: learns from every verdict).
- `+graph+boosts`: what users see (reference only, same reason).
- `+graph+boosts honest`: graph and boosts learned without the verdicts of the
  evaluated query (leave-one-out by query_id).

Depth: each query asks for max(100, largest k) documents; MRR and MAP read that deep.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from goldenset.bench import feedback as fb
from goldenset.bench import gates, golden
from goldenset.bench.metrics import benchmark_metrics, evaluate
from goldenset.bench.retriever import (
    REFERENCE, ComponentStatus, RetrieverContext, build_retriever, check_hits, component_down,
    load_factory, probe_all, probe_component,
)
from goldenset.bench.runs import ROWS, BenchmarkRun, new_run_id
from goldenset.bench.trec import ranked_lists
from goldenset.corpus import CorpusSnapshot, active_signature, drift
from goldenset.embeddings import Embedder
from goldenset.errors import GoldensetError, UsageError

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

    def effective_depth(self) -> int:
        if any(k < 1 for k in self.k_values) or not self.k_values:
            raise UsageError(f"k values must be integers >= 1, got {list(self.k_values)}")
        depth = self.depth if self.depth is not None else max(MIN_DEPTH, *self.k_values)
        if depth < max(self.k_values):
            raise UsageError(f"--depth {depth} is below the largest k {max(self.k_values)}; raise --depth")
        return depth


@dataclass
class Gated:
    """A retriever that passed the gates, with what the gates found."""

    retriever: object
    build: golden.Build
    statuses: list[ComponentStatus]
    feedback: fb.Feedback | None
    warnings: list[str]
    drift: float

    @property
    def down(self) -> list[str]:
        return [s.name for s in self.statuses if not s.up]


def _feedback_statuses(con, corpus: CorpusSnapshot) -> tuple[fb.Feedback | None, list[ComponentStatus]]:
    try:
        learned = fb.Feedback.from_warehouse(con, corpus.active)
    except Exception as exc:  # the probe reports it; a broken judgments view means both are down
        reason = f"cannot learn from judgments: {str(exc).splitlines()[0]}"
        return None, [ComponentStatus("graph", False, reason), ComponentStatus("boosts", False, reason)]
    statuses = []
    for name, probe in (("graph", learned.probe_graph), ("boosts", learned.probe_boosts)):
        statuses.append(probe_component(_Probe(probe), name, ""))
    return learned, statuses


class _Probe:
    """Adapts a feedback probe to the component protocol so it is probed like any part."""

    def __init__(self, fn):
        self.fn = fn

    def search_component(self, name, query, k):
        return self.fn()[:k]


def open_gates(con, corpus: CorpusSnapshot, embedder: Embedder, config: BenchConfig,
               now: datetime | None = None) -> Gated:
    """Run the gates in exit-code order: usage (2), age (3), probes (4); collect the warnings."""
    build = golden.latest_build(con)
    config.effective_depth()
    factory = load_factory(config.retriever)
    gates.check_age(build, config.max_age_days, now)
    ctx = RetrieverContext(corpus, con, embedder, Path(config.index_dir), dict(config.retriever_config))
    retriever = build_retriever(factory, config.retriever, ctx)
    statuses = probe_all(retriever, corpus)
    learned, more = _feedback_statuses(con, corpus)
    statuses += more
    down = [s for s in statuses if not s.up]
    base_up = [s for s in statuses if s.up and s.name not in ("graph", "boosts")]
    if down and (not config.allow_degraded or not base_up):
        raise component_down(statuses)
    warnings = []
    if down:
        warnings.append(
            "DEGRADED: ran with " + ", ".join(f"{s.name} down ({s.reason})" for s in down)
            + "; these numbers do not measure the full retriever"
        )
        disable = getattr(retriever, "disable", None)
        if callable(disable):
            disable([s.name for s in down])
    d = drift(golden.build_signature(con, build), active_signature(corpus))
    w = gates.drift_warning(d, build)
    if w:
        warnings.insert(0, w)
    return Gated(retriever, build, statuses, learned, warnings, d)


def run_benchmark(con, corpus: CorpusSnapshot, embedder: Embedder, config: BenchConfig,
                  now: datetime | None = None,
                  progress: Callable[[int, int], None] | None = None) -> BenchmarkRun:
    """Gate, search every golden query once, score the four rows; the caller stores the run."""
    started = now or gates.utcnow()
    gated = open_gates(con, corpus, embedder, config, now)
    depth = config.effective_depth()
    gq = golden.load_qrels(con, config.exclude_stale)
    metrics = benchmark_metrics(config.k_values)
    learned = gated.feedback
    use_graph = "graph" not in gated.down and learned is not None
    use_boosts = "boosts" not in gated.down and learned is not None
    queries = [q for q in sorted(gq.qrels) if q not in gq.queries_without_relevant]
    if not queries:
        # A table of n/a is not a measurement; say why instead.
        raise GoldensetError(
            f"golden build {gated.build.build_id} has no query with a relevant label to measure"
            + (" once stale labels are left out; drop --exclude-stale" if gq.stale_excluded else "")
            + "; `goldenset status` shows the funnel")
    lists: dict[str, dict[str, list[tuple[str, float]]]] = {row: {} for row in ROWS}
    for i, qid in enumerate(queries, start=1):
        try:
            hits = check_hits(gated.retriever.search(gq.tasks[qid], depth), "search()")
        except GoldensetError as exc:
            raise GoldensetError(f"retriever failed on query {qid} ({gq.tasks[qid]!r}): {exc}") from exc
        hits = _first_occurrence(hits)[:depth]
        variants = {
            "core": hits,
            "+graph": fb.rerank(hits, learned, graph=use_graph, boosts=False, depth=depth),
            "+graph+boosts": fb.rerank(hits, learned, graph=use_graph, boosts=use_boosts, depth=depth),
            "+graph+boosts honest": fb.rerank(hits, learned, graph=use_graph, boosts=use_boosts,
                                              depth=depth, exclude_query=qid),
        }
        for row, ranked in variants.items():
            lists[row][qid] = ranked
        if progress:
            progress(i, len(queries))
    values = {row: evaluate(ranked_lists(lists[row]), gq.qrels, metrics) for row in ROWS}
    notes = [f"{gq.stale_labels} stale label(s) in the golden set, "
             + ("left out (--exclude-stale)" if gq.stale_excluded else "included in the qrels")]
    if gq.queries_without_relevant:
        notes.append(f"{len(gq.queries_without_relevant)} query(ies) skipped: no relevant label left")
    notes.append(LEAKAGE_NOTE)
    retriever_config = {"options": copy.deepcopy(config.retriever_config)}
    cfg = getattr(gated.retriever, "config", None)
    if callable(cfg):
        retriever_config["retriever"] = cfg()
    retriever_config["graph"] = {"seeds": fb.GRAPH_SEEDS, "hop_decay": fb.HOP_DECAY, "enabled": use_graph}
    retriever_config["boosts"] = {"strength": fb.BOOST_STRENGTH, "enabled": use_boosts}
    return BenchmarkRun(
        run_id=new_run_id(started), started_at=started, build_id=gated.build.build_id,
        corpus_fingerprint=corpus.fingerprint, retriever=config.retriever, retriever_config=retriever_config,
        degraded=bool(gated.down), warnings=gated.warnings, k_values=tuple(config.k_values), depth=depth,
        exclude_stale=config.exclude_stale, stale_labels=gq.stale_labels, corpus_drift=gated.drift,
        down_components=gated.down, metric_names=[m.name for m in metrics], values=values, notes=notes,
        ranked=lists,
    )


def _first_occurrence(hits):
    # A retriever listing a document twice keeps its first (best) place; metrics
    # must never count one document twice.
    seen, out = set(), []
    for d, s in hits:
        if d not in seen:
            seen.add(d)
            out.append((d, s))
    return out
