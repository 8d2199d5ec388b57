"""The retriever under test: its protocol, loading it by `module:factory`, probing its parts.

A retriever is any object with

- `search(query, k) -> list[(doc_id, score)]`, best first;
- `components() -> list[str]`, the names of its parts;
- `search_component(name, query, k) -> list[(doc_id, score)]`, one part alone.

Optional: `config() -> dict` (recorded with the run), `disable(names)` (run
without parts that are down, for --allow-degraded), `probe_query(name) -> str`
(the query that must find something; by default words of a corpus document) and
`prepare_queries(queries)` (called once before a run with every query it will search,
so a retriever can embed them in one batch).

The parts named by `components()` are what the benchmark probes before a run: a
part that raises or finds nothing for its probe query is down (exit 4, or a
DEGRADED run with --allow-degraded). They are the only thing that can refuse a
run; graph and boosts (feedback.py) are layers learned from verdicts, not parts.

A part that fails must raise. Returning [] means "found nothing", so a part that
swallows its own error and returns [] turns an outage into a false green.

`module:factory` names a callable taking a RetrieverContext and returning a
retriever; the reference is `goldenset.retrieval.reference:hybrid`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from goldenset import plugins
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot
from goldenset.embeddings import Embedder
from goldenset.errors import ComponentDown, GoldensetError, UsageError

Hit = tuple[str, float]
REFERENCE = "goldenset.retrieval.reference:hybrid"
PROBE_K = 5
_PROBE_WORDS = 12


@runtime_checkable
class Retriever(Protocol):
    def search(self, query: str, k: int) -> list[Hit]: ...

    def components(self) -> list[str]: ...

    def search_component(self, name: str, query: str, k: int) -> list[Hit]: ...


@dataclass
class RetrieverContext:
    """What a factory gets: the corpus to search, the warehouse, the embedder, a cache dir, options."""

    corpus: CorpusSnapshot
    con: Connection
    embedder: Embedder
    index_dir: Path
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ComponentStatus:
    """The outcome of probing one component."""

    name: str
    up: bool
    reason: str = ""
    hits: int = 0

    @property
    def line(self) -> str:
        return f"COMPONENT DOWN: {self.name}: {self.reason}"


def load_factory(spec: str) -> Callable[[RetrieverContext], Any]:
    """Import `module:factory` (the working directory first); UsageError when malformed or unresolved."""
    return plugins.load_factory(
        spec,
        f"retriever {spec!r}",
        f"retriever {spec!r} is not an import path; use `module:factory`, e.g. {REFERENCE}",
    )


def build_retriever(factory: Callable[[RetrieverContext], Any], spec: str, ctx: RetrieverContext):
    """Call the factory and check that what it returns speaks the protocol."""
    retriever = factory(ctx)
    missing = [m for m in ("search", "components", "search_component") if not callable(getattr(retriever, m, None))]
    if missing:
        raise UsageError(f"retriever {spec!r} returned {type(retriever).__name__} without {', '.join(missing)}()")
    return retriever


def default_probe_query(corpus: CorpusSnapshot) -> str:
    """A query that must find something: title and first words of the first active document."""
    for doc in sorted(corpus.active.values(), key=lambda d: d.doc_id):
        words = " ".join(filter(None, [doc.title or "", doc.text])).split()
        if words:
            return " ".join(words[:_PROBE_WORDS])
    return "document"


def check_hits(hits: Any, where: str) -> list[Hit]:
    """Validate a result list: (str doc_id, finite float score) pairs; GoldensetError otherwise."""
    if not isinstance(hits, (list, tuple)):
        raise GoldensetError(f"{where} returned {type(hits).__name__}, not a list of (doc_id, score)")
    out: list[Hit] = []
    for item in hits:
        try:
            doc, score = item
            score = float(score)
        except (TypeError, ValueError):
            raise GoldensetError(f"{where} returned {item!r}, not a (doc_id, score) pair") from None
        if not isinstance(doc, str) or not doc or math.isnan(score):
            raise GoldensetError(f"{where} returned {item!r}, not a (doc_id, score) pair")
        out.append((doc, score))
    return out


def probe_component(retriever, name: str, query: str) -> ComponentStatus:
    """Run one component alone on the probe query: up only if it answers with at least one hit."""
    try:
        hits = check_hits(retriever.search_component(name, query, PROBE_K), f"component {name!r}")
    except Exception as exc:  # a probe reports every failure; it must not crash the gate
        reason = (str(exc).splitlines() or [type(exc).__name__])[0] or type(exc).__name__
        return ComponentStatus(name, False, reason)
    if not hits:
        return ComponentStatus(name, False, f"returned no result for the probe query {query!r}")
    return ComponentStatus(name, True, hits=len(hits))


def probe_all(retriever, corpus: CorpusSnapshot) -> list[ComponentStatus]:
    """Probe every component the retriever names, each with its probe query."""
    try:
        names = list(retriever.components())
    except Exception as exc:
        return [ComponentStatus("components", False, f"components() failed: {exc}")]
    custom = getattr(retriever, "probe_query", None)
    statuses = []
    for name in names:
        query = custom(name) if callable(custom) else default_probe_query(corpus)
        statuses.append(probe_component(retriever, name, query))
    return statuses


def component_down(statuses: list[ComponentStatus]) -> ComponentDown:
    """One `COMPONENT DOWN: <name>: <reason>` line per component that is down."""
    return ComponentDown("\n".join(s.line for s in statuses if not s.up))


def parse_retriever_config(text: str | None, option: str) -> dict:
    """A retriever factory's options from their JSON text: empty means none, else a JSON object (`option` names the source)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} must be a JSON object, got {text!r} ({exc.msg})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} must be a JSON object, got {text!r}")
    return value
