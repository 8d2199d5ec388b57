"""Scorers (contract 8.1): dense, bm25, judge and `module:factory`; the score cache; `score_pairs`.

- `dense`: cosine of the packaged MiniLM embeddings of query and passage (unit
  vectors, so a dot product), embeddings reused through `embedding_cache`.
- `bm25`: the BM25 score of the passage for the query over the active
  documents of the corpus snapshot, with the benchmark's lexical settings
  (bm25s tokenizer, English stop words, bm25s' defaults: Lucene variant, k1 1.5,
  b 0.75). The statistics (document count, document frequencies, average
  length) are those of the benchmark's index: the active documents, each
  indexed as title and text joined by a newline. The passage is scored as the
  text it is, as if it were one more document of that corpus, without changing
  the statistics: score = sum over query tokens (repeats count, as in bm25s) of
  idf(df) x tf / (tf + k1 (1 - b + b dl / avgdl)), idf = ln(1 + (N - df + 0.5) /
  (df + 0.5)); a token no active document holds adds 0, as in the benchmark's
  search. So an active document's text and a retired version's text are scored
  by one rule (a retired version does not lose, or win, by not being indexed).
- `judge`: the LLM judge (judge.py); an invalid answer raises `InvalidScore`,
  kept apart from errors.
- `module:factory`: a callable taking a `ScorerContext` (the corpus snapshot,
  `options` from --scorer-config) returning an object with `name`, `version`
  and `score(query, passage)`.

A call that raises, runs past the timeout or gives a number that is not finite
is an *error*: listed with its reason, never scored, never cached. Scores and
invalid answers are cached in `score_cache` by (scorer, version, canonical
config, corpus fingerprint for scorers that read the corpus, sha256 of query,
sha256 of passage, repeat number); rows are only ever added (INSERT OR IGNORE).
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from goldenset import plugins
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot
from goldenset.embeddings import Embedder, default_model_path, embed_cached, text_sha256
from goldenset.errors import GoldensetError, UsageError
from goldenset.scoring import InvalidScore, Score, Scorer, ScorerError
from goldenset.scoring.calibrate import ErrorPair, ScoredPair

BUILTINS = ("dense", "bm25", "judge")
DEFAULT_TIMEOUT = 30.0


@dataclass
class ScorerContext:
    """What building a scorer gets: the corpus snapshot, --scorer-config options, the warehouse, judge settings."""

    corpus: CorpusSnapshot | None = None
    options: dict[str, Any] = field(default_factory=dict)
    con: Connection | None = None
    embedder: Embedder | None = None
    judge: Any = None  # judge.JudgeSettings
    timeout: float = DEFAULT_TIMEOUT
    write_cache: bool = True


# --------------------------------------------------------------------------- built-ins
class DenseScorer:
    """Cosine of the MiniLM embeddings of query and passage."""

    name = "dense"
    version = "cosine-1"
    reads_corpus = False

    def __init__(self, embedder: Embedder, con: Connection | None = None, write_cache: bool = True):
        self.embedder = embedder
        self.con = con
        self.write_cache = write_cache
        self._vectors: dict[str, np.ndarray] = {}  # filled by prefetch

    def config(self) -> dict[str, Any]:
        return {"model": self.embedder.name}

    def prepare(self) -> None:
        self.embedder.load()

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed every text a run will score in one batched pass (through the cache).

        One model call per pair ran the model on two texts at a time: no batching and a
        call's overhead per pair. `score` reads these vectors first.
        """
        todo = sorted(set(texts) - set(self._vectors))
        if not todo:
            return
        if self.con is None:
            vecs = self.embedder.embed(todo)
        else:
            cur = self.con.cursor()
            try:
                vecs = embed_cached(cur, todo, self.embedder, write=self.write_cache)
            finally:
                cur.close()
        self._vectors.update(zip(todo, vecs, strict=True))

    def score(self, query: str, passage: str) -> float:
        qv, pv = self._vectors.get(query), self._vectors.get(passage)
        if qv is not None and pv is not None:
            return float(np.dot(qv.astype(np.float64), pv.astype(np.float64)))
        if self.con is None:
            vecs = self.embedder.embed([query, passage])
        else:
            # A cursor per call: a call abandoned at its timeout may still be running in its thread.
            cur = self.con.cursor()
            try:
                vecs = embed_cached(cur, [query, passage], self.embedder, write=self.write_cache)
            finally:
                cur.close()
        return float(np.dot(vecs[0].astype(np.float64), vecs[1].astype(np.float64)))


def _doc_text(doc) -> str:
    # As the benchmark's lexical index holds a document (bench/reference.py).
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


class BM25Scorer:
    """BM25 of the passage against the statistics of the benchmark's index of the active documents."""

    name = "bm25"
    version = "lucene-1"
    reads_corpus = True
    k1 = 1.5
    b = 0.75

    def __init__(self, corpus: CorpusSnapshot):
        self.corpus = corpus
        self._df: dict[str, int] | None = None
        self._n = 0
        self._avgdl = 0.0

    @property
    def corpus_fingerprint(self) -> str:
        return self.corpus.fingerprint

    def config(self) -> dict[str, Any]:
        import bm25s

        return {"method": "lucene", "k1": self.k1, "b": self.b, "stopwords": "en", "bm25s": bm25s.__version__}

    @staticmethod
    def tokens(texts: Sequence[str]) -> list[list[str]]:
        """The benchmark's tokenizer: bm25s, English stop words, no stemming."""
        import bm25s

        return bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)

    def prepare(self) -> None:
        if self._df is not None:
            return
        docs = sorted(self.corpus.active.values(), key=lambda d: d.doc_id)
        if not docs:
            raise ScorerError(
                "bm25: the corpus has no active document, so there are no statistics to score "
                "against; load a corpus with active documents"
            )
        toks = self.tokens([_doc_text(d) for d in docs])
        df: Counter[str] = Counter()
        for t in toks:
            df.update(set(t))
        self._n = len(toks)
        self._avgdl = sum(len(t) for t in toks) / len(toks)
        self._df = dict(df)

    def idf(self, token: str) -> float:
        self.prepare()
        df = (self._df or {}).get(token, 0)
        return math.log(1 + (self._n - df + 0.5) / (df + 0.5)) if df else 0.0

    def score(self, query: str, passage: str) -> float:
        self.prepare()
        q, p = self.tokens([query, passage])
        tf = Counter(p)
        dl = len(p)
        # avgdl 0 means every active document is only stop words: length cannot normalise.
        norm = self.k1 * (1 - self.b + self.b * dl / self._avgdl) if self._avgdl else self.k1
        total = 0.0
        for t in q:
            f = tf.get(t, 0)
            if f:
                total += self.idf(t) * f / (f + norm)
        return total


class JudgeScorer:
    """The LLM judge as a scorer: the 0/1/2 score as a float, invalid answers raised as InvalidScore."""

    name = "judge"
    reads_corpus = False

    def __init__(self, client):
        self.client = client
        self.version = client.version

    def config(self) -> dict[str, Any]:
        s = self.client.settings
        # The URL is part of it: two servers may serve different weights under one model name.
        return {"url": s.url, "model": s.model, "task": s.task, "as_of": s.as_of}

    def prepare(self) -> None:
        # One GET before the first pair: a server that is down stops the run with one line.
        self.client.probe()

    def score(self, query: str, passage: str) -> Score:
        from goldenset.scoring.judge import InvalidAnswer

        got = self.client.ask(query, passage)
        if isinstance(got, InvalidAnswer):
            raise InvalidScore(got.reason, got.detail, got.raw)
        return Score(float(got.score), None, got.rationale, got.span)

    def close(self) -> None:
        self.client.close()


class PluginScorer:
    """A `module:factory` scorer, with the cache identity the factory's spec and options give it."""

    reads_corpus = True

    def __init__(self, spec: str, impl: Any, ctx: ScorerContext):
        self.spec = spec
        self.impl = impl
        self.name = impl.name
        self.version = impl.version
        self.options = dict(ctx.options)
        self.corpus_fingerprint = ctx.corpus.fingerprint if ctx.corpus is not None else ""

    def config(self) -> dict[str, Any]:
        return {"factory": self.spec, "options": self.options}

    def prepare(self) -> None:
        prep = getattr(self.impl, "prepare", None)
        if callable(prep):
            prep()

    def score(self, query: str, passage: str) -> Any:
        return self.impl.score(query, passage)


@functools.cache
def _embedder_for(model_path: str) -> Embedder:
    return Embedder(model_path)


def shared_embedder() -> Embedder:
    """One Embedder per model path in a process: a second `dense` scorer does not load the model again."""
    return _embedder_for(default_model_path())


def load_factory(spec: str) -> Callable[[ScorerContext], Any]:
    """Import `module:factory` for --scorer (the working directory first); UsageError naming what does not resolve."""
    return plugins.load_factory(
        spec, f"--scorer {spec!r}", f"--scorer {spec!r} is not known; use dense, bm25, judge or module:factory"
    )


def build_scorer(spec: str, ctx: ScorerContext) -> Scorer:
    """Resolve --scorer: a built-in name or `module:factory`."""
    if spec in BUILTINS and ctx.options:
        raise UsageError(
            f"--scorer-config is for module:factory scorers; {spec} takes no options (got {sorted(ctx.options)})"
        )
    if spec == "dense":
        return DenseScorer(ctx.embedder or shared_embedder(), ctx.con, ctx.write_cache)
    if spec == "bm25":
        if ctx.corpus is None:
            raise UsageError("--scorer bm25 needs a corpus snapshot; run `goldenset build` first")
        return BM25Scorer(ctx.corpus)
    if spec == "judge":
        if ctx.judge is None:
            raise UsageError("--scorer judge needs --judge-url and --judge-model")
        from goldenset.scoring.judge import JudgeClient

        return JudgeScorer(JudgeClient(ctx.judge, timeout=ctx.timeout))
    factory = load_factory(spec)
    try:
        impl = factory(ctx)
    except GoldensetError:
        raise
    except Exception as exc:
        raise ScorerError(
            f"--scorer {spec!r} could not be built: {_first_line(exc)}; check its --scorer-config "
            "and what it needs to start"
        ) from exc
    for attr in ("name", "version"):
        if not isinstance(getattr(impl, attr, None), str) or not getattr(impl, attr):
            raise UsageError(f"--scorer {spec!r} returned {type(impl).__name__} without a string `{attr}`")
    if not callable(getattr(impl, "score", None)):
        raise UsageError(f"--scorer {spec!r} returned {type(impl).__name__} without score(query, passage)")
    return PluginScorer(spec, impl, ctx)


# --------------------------------------------------------------------------- the cache
@dataclass(frozen=True)
class CacheKey:
    """Who scored: (scorer, version, canonical config, corpus fingerprint or '')."""

    scorer: str
    version: str
    config: str
    corpus_fingerprint: str


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, no NaN: one text per configuration."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"scorer configuration {value!r} is not plain JSON ({exc}); use JSON values only") from exc


def cache_key(scorer: Any) -> CacheKey:
    """The cache identity of a scorer (its config() and corpus_fingerprint when it has them)."""
    config = scorer.config() if callable(getattr(scorer, "config", None)) else {}
    fingerprint = getattr(scorer, "corpus_fingerprint", "") if getattr(scorer, "reads_corpus", False) else ""
    return CacheKey(str(scorer.name), str(scorer.version), canonical_json(config), fingerprint or "")


Cached = Score | InvalidScore


def _read_cache(con: Connection, key: CacheKey, passage_hashes: list[str]) -> dict[tuple[str, str, int], Cached]:
    rows = con.execute(
        "SELECT query_sha256, passage_sha256, repeat_no, value, label, rationale, span, invalid_reason "
        "FROM score_cache WHERE scorer = ? AND version = ? AND config = ? AND corpus_fingerprint = ? "
        "AND list_contains(?, passage_sha256)",
        [key.scorer, key.version, key.config, key.corpus_fingerprint, passage_hashes],
    ).fetchall()
    out: dict[tuple[str, str, int], Cached] = {}
    for q, p, r, value, label, rationale, span, invalid in rows:
        out[(q, p, int(r))] = (
            InvalidScore(invalid, rationale or "") if invalid else Score(value, label, rationale, span)
        )
    return out


def _write_cache(con: Connection, key: CacheKey, q: str, p: str, repeat: int, got: Cached) -> None:
    value: float | None
    label: str | None
    rationale: str | None
    span: str | None
    invalid: str | None
    if isinstance(got, InvalidScore):
        # An invalid answer keeps what was wrong with it in `rationale` (the schema says so).
        value, label, rationale, span, invalid = None, None, got.detail, None, got.reason
    else:
        value, label, rationale, span, invalid = got.value, got.label, got.rationale, got.span, None
    # OR IGNORE: a row is never overwritten; a concurrent run may have stored it first.
    con.execute(
        "INSERT OR IGNORE INTO score_cache (scorer, version, config, corpus_fingerprint, query_sha256, "
        "passage_sha256, repeat_no, value, label, rationale, span, invalid_reason, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            key.scorer,
            key.version,
            key.config,
            key.corpus_fingerprint,
            q,
            p,
            repeat,
            value,
            label,
            rationale,
            span,
            invalid,
            datetime.now(UTC).replace(tzinfo=None),
        ],
    )


# --------------------------------------------------------------------------- scoring pairs
@dataclass(frozen=True)
class PairInput:
    """One pair to score: ids, the query (the golden task) and the passage, with its label for calibration."""

    query_id: str
    doc_id: str
    query: str
    passage: str
    project: str = ""
    acceptable: bool = False
    labelled_at: datetime | None = None


@dataclass(frozen=True)
class PairScore:
    """A pair's scores, one per repeat."""

    pair: PairInput
    scores: tuple[Score, ...]

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(s.value for s in self.scores)


@dataclass(frozen=True)
class PairInvalid:
    """A pair whose scorer answered in a shape its contract refuses (e.g. a judge's hallucinated span)."""

    pair: PairInput
    reason: str
    detail: str


@dataclass(frozen=True)
class PairError:
    """A pair the scorer could not score: raised, timed out, or not a finite number."""

    pair: PairInput
    reason: str


@dataclass
class ScoreRun:
    """What `score_pairs` did: scores, invalid answers and errors kept apart, and what the cache saved."""

    key: CacheKey
    repeats: int
    scored: list[PairScore] = field(default_factory=list)
    invalid: list[PairInvalid] = field(default_factory=list)
    errors: list[PairError] = field(default_factory=list)
    cache_hits: int = 0
    computed: int = 0

    @property
    def hallucinated_span_share(self) -> float:
        """The judge's health figure: hallucinated spans among answers (scored + invalid); 0 when none."""
        answers = len(self.scored) + len(self.invalid)
        return sum(1 for x in self.invalid if x.reason == "hallucinated_span") / answers if answers else 0.0

    def invalid_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter(x.reason for x in self.invalid)
        return dict(sorted(counts.items()))

    def calibration_pairs(self) -> list[ScoredPair]:
        """The scored pairs for calibrate (the mean of the repeats as the score)."""
        return [
            ScoredPair.from_repeats(
                s.pair.query_id, s.pair.doc_id, s.pair.project, s.values, s.pair.acceptable, s.pair.labelled_at
            )
            for s in self.scored
        ]

    def error_pairs(self) -> list[ErrorPair]:
        """Errors and invalid answers (reason `invalid answer: <reason>`) by (query_id, doc_id): calibrate's errors."""
        out = [ErrorPair(e.pair.query_id, e.pair.doc_id, e.reason) for e in self.errors] + [
            ErrorPair(i.pair.query_id, i.pair.doc_id, f"invalid answer: {i.reason}") for i in self.invalid
        ]
        return sorted(out, key=lambda e: (e.query_id, e.doc_id))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def call_scorer(scorer: Any, query: str, passage: str, timeout: float) -> Score | InvalidScore | str:
    """One timed call: a Score, an InvalidScore, or the reason it is an error (a string)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = scorer.score(query, passage)
        except BaseException as exc:  # everything a plug-in raises is its error, reported not re-raised
            box["error"] = exc

    # A daemon thread: a call past its timeout is abandoned, and must not keep the process alive.
    worker = threading.Thread(target=target, daemon=True, name=f"score-{scorer.name}")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return f"timed out after {timeout:g} s"
    if "error" in box:
        exc = box["error"]
        return exc if isinstance(exc, InvalidScore) else f"raised {_first_line(exc)}"
    value = box.get("value")
    score = value if isinstance(value, Score) else Score(value)  # type: ignore[arg-type]
    v = score.value
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return f"returned {type(v).__name__} {v!r:.40}, not a number"
    if not math.isfinite(float(v)):
        return f"not a finite number: {float(v)!r}"
    return Score(float(v), score.label, score.rationale, score.span)


def score_pairs(
    con: Connection,
    scorer: Any,
    pairs: Sequence[PairInput],
    repeats: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[int, int], None] | None = None,
    write: bool = True,
) -> ScoreRun:
    """Score every pair `repeats` times through the cache; errors and invalid answers kept apart.

    A pair stops at its first error or invalid answer (its other repeats are not
    asked). Pairs with the same query and passage texts share cached scores.
    `con` None scores without a cache; `write` False reads it without adding to
    it (a read-only connection).
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise UsageError(f"--repeats {repeats!r} is not a number of repeats; use a positive integer, e.g. 3")
    if not (isinstance(timeout, (int, float)) and timeout > 0 and math.isfinite(timeout)):
        raise UsageError(f"--timeout {timeout!r} must be a positive number of seconds, e.g. 30")
    key = cache_key(scorer)
    run = ScoreRun(key, repeats)
    hashes = [(text_sha256(p.query), text_sha256(p.passage)) for p in pairs]
    cache = _read_cache(con, key, sorted({h[1] for h in hashes})) if con is not None and pairs else {}
    prepare = getattr(scorer, "prepare", None)
    if callable(prepare) and pairs:
        try:
            prepare()  # slow set-up (a model load) is not charged to the first pair's timeout
        except GoldensetError:
            raise
        except Exception as exc:
            raise ScorerError(f"scorer {key.scorer!r} could not start: {_first_line(exc)}") from exc
    prefetch = getattr(scorer, "prefetch", None)
    if callable(prefetch):
        # Every text of the pairs the score cache does not answer, embedded in one batched pass.
        todo = [
            t
            for pair, (qh, ph) in zip(pairs, hashes, strict=True)
            if any(cache.get((qh, ph, r)) is None for r in range(repeats))
            for t in (pair.query, pair.passage)
        ]
        if todo:
            try:
                prefetch(todo)
            except GoldensetError:
                raise
            except Exception as exc:
                raise ScorerError(f"scorer {key.scorer!r} could not start: {_first_line(exc)}") from exc
    for n, (pair, (qh, ph)) in enumerate(zip(pairs, hashes, strict=True), start=1):
        got: list[Score] = []
        for r in range(repeats):
            hit = cache.get((qh, ph, r))
            if hit is not None:
                run.cache_hits += 1
                outcome: Score | InvalidScore | str = hit
            else:
                run.computed += 1
                outcome = call_scorer(scorer, pair.query, pair.passage, timeout)
                if not isinstance(outcome, str):
                    cache[(qh, ph, r)] = outcome
                    if con is not None and write:
                        _write_cache(con, key, qh, ph, r, outcome)
            if isinstance(outcome, str):
                run.errors.append(PairError(pair, outcome))
                break
            if isinstance(outcome, InvalidScore):
                run.invalid.append(PairInvalid(pair, outcome.reason, outcome.detail))
                break
            got.append(outcome)
        else:
            run.scored.append(PairScore(pair, tuple(got)))
        if progress is not None:
            progress(n, len(pairs))
    return run
