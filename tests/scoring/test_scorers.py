"""Scorers (contract 8.1): dense on the real model, bm25 against bm25s and by hand, plug-ins, the DuckDB cache."""

from __future__ import annotations

import math
import time
from datetime import datetime

import numpy as np
import pytest
from judge_stub import Reply, good

from goldenset.corpus import CorpusSnapshot, Document
from goldenset.errors import UsageError
from goldenset.scoring import Score, ScorerError
from goldenset.scoring.judge import JudgeSettings
from goldenset.scoring.pairs import golden_pairs, passages, project_traffic
from goldenset.scoring.policy import policy_scorer
from goldenset.scoring.scorers import (
    BM25Scorer,
    PairInput,
    ScorerContext,
    build_scorer,
    cache_key,
    score_pairs,
)

DOCS = (
    Document("billing/refunds", "v2", "active", "Refunds are issued to the original card within 14 days.", "Refunds"),
    Document("billing/refunds-old", "v1", "retired", "Refunds are issued within 30 days by cheque.", "Refunds"),
    Document(
        "billing/invoices", "v1", "active", "Invoices are sent monthly and list every refund and charge.", "Invoices"
    ),
    Document("auth/tokens", "v1", "active", "API tokens expire after ninety days; rotate tokens early.", None),
    Document("ops/limits", "v1", "active", "Requests above the rate limit get HTTP 429.", "Rate limits"),
)
CORPUS = CorpusSnapshot(DOCS, "test")


def pairs_of(*texts, project="p"):
    return [PairInput(f"q{i:02d}", f"d{i:02d}", q, p, project, i % 2 == 0) for i, (q, p) in enumerate(texts)]


def cache_rows(con, **where):
    sql = "SELECT scorer, version, repeat_no, value, label, rationale, span, invalid_reason FROM score_cache"
    if where:
        sql += " WHERE " + " AND ".join(f"{k} = ?" for k in where)
    return con.execute(sql + " ORDER BY scorer, version, repeat_no, value", list(where.values())).fetchall()


def plugin(con, name, corpus=CORPUS, **options):
    return build_scorer(f"score_plugins:{name}", ScorerContext(corpus=corpus, options=options, con=con))


# --------------------------------------------------------------------------- dense
def test_dense_is_the_cosine_of_the_packaged_model_embeddings(embedder, warehouse):
    scorer = build_scorer("dense", ScorerContext(con=warehouse, embedder=embedder))
    q, near, far = "How long do refunds take?", DOCS[0].text, DOCS[4].text
    vecs = embedder.load().encode([q, near, far], convert_to_numpy=True).astype(np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    assert scorer.score(q, near) == pytest.approx(float(vecs[0] @ vecs[1]), abs=1e-5)
    assert scorer.score(q, far) == pytest.approx(float(vecs[0] @ vecs[2]), abs=1e-5)
    assert scorer.score(q, near) > scorer.score(q, far) + 0.2
    assert cache_key(scorer).corpus_fingerprint == ""
    assert cache_key(scorer).config == '{"model":"sentence-transformers/all-MiniLM-L6-v2"}'


def test_a_second_dense_run_scores_nothing_new(embedder, warehouse):
    scorer = build_scorer("dense", ScorerContext(con=warehouse, embedder=embedder))
    pairs = pairs_of(
        ("refund window?", DOCS[0].text), ("token expiry?", DOCS[3].text), ("refund window?", DOCS[0].text)
    )
    first = score_pairs(warehouse, scorer, pairs)
    # The third pair repeats the first one's texts: one computation serves both.
    assert (first.computed, first.cache_hits, len(first.scored)) == (2, 1, 3)
    embedded = embedder.texts_embedded
    second = score_pairs(warehouse, scorer, pairs)
    assert (second.computed, second.cache_hits) == (0, 3)
    assert embedder.texts_embedded == embedded
    assert [s.values for s in second.scored] == [s.values for s in first.scored]
    assert warehouse.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 4


# --------------------------------------------------------------------------- bm25
def test_bm25_of_an_indexed_document_equals_bm25s_on_the_benchmark_index():
    import bm25s

    active = sorted((d for d in DOCS if d.status == "active"), key=lambda d: d.doc_id)
    texts = [f"{d.title}\n{d.text}" if d.title else d.text for d in active]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    scorer = BM25Scorer(CORPUS)
    for query in ("refund card days", "tokens tokens rotate", "rate limit refund invoices"):
        tokens = [
            t
            for t in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
            if t in index.vocab_dict
        ]
        expected = index.get_scores(tokens)
        got = [scorer.score(query, t) for t in texts]
        assert got == pytest.approx([float(x) for x in expected], rel=1e-5)
        assert max(got) > 0


def test_bm25_of_a_retired_passage_uses_the_corpus_statistics_by_hand():
    corpus = CorpusSnapshot(
        (
            Document("a", "v1", "active", "cat sat mat"),
            Document("b", "v1", "active", "dog sat log"),
            Document("c", "v1", "active", "cat cat bird"),
            Document("c", "v0", "retired", "dog cat"),
        ),
        "hand",
    )
    scorer = BM25Scorer(corpus)
    # N = 3 active documents of 3 tokens each: avgdl = 3. df(cat) = 2: idf = ln(1 + 1.5 / 2.5) = ln 1.6.
    # The passage "dog cat": tf(cat) = 1, dl = 2: 1 / (1 + 1.5 (0.25 + 0.75 * 2 / 3)) = 1 / 2.125.
    assert scorer.score("cat", "dog cat") == pytest.approx(math.log(1.6) / 2.125)
    # "dog": df 1, idf = ln(1 + 2.5 / 1.5); a query token twice counts twice, as in bm25s.
    dog = math.log(1 + 2.5 / 1.5) / 2.125
    assert scorer.score("dog cat cat", "dog cat") == pytest.approx(dog + 2 * math.log(1.6) / 2.125)
    # "zebra" is in no active document: it adds nothing, even though the passage holds it.
    assert scorer.score("zebra", "zebra zebra") == 0.0
    assert scorer.score("the cat", "the cat") == scorer.score("cat", "cat")  # stop words are dropped


def test_bm25_cache_key_holds_the_corpus_fingerprint(warehouse):
    scorer = build_scorer("bm25", ScorerContext(corpus=CORPUS, con=warehouse))
    key = cache_key(scorer)
    assert key.corpus_fingerprint == CORPUS.fingerprint != ""
    score_pairs(warehouse, scorer, pairs_of(("refund", DOCS[0].text)))
    other = CorpusSnapshot(DOCS[:3], "smaller")
    run = score_pairs(
        warehouse, build_scorer("bm25", ScorerContext(corpus=other, con=warehouse)), pairs_of(("refund", DOCS[0].text))
    )
    assert (run.computed, run.cache_hits) == (1, 0)  # another corpus, other statistics: not reused


def test_bm25_without_active_documents_cannot_start(warehouse):
    scorer = BM25Scorer(CorpusSnapshot((DOCS[1],), "only retired"))
    with pytest.raises(ScorerError, match="no active document"):
        score_pairs(warehouse, scorer, pairs_of(("refund", "x")))


# --------------------------------------------------------------------------- plug-ins: errors are not scores
@pytest.mark.parametrize(
    ("name", "options", "reason"),
    [
        ("raising", {}, "raised ValueError: boom on purpose"),
        ("nan", {}, "not a finite number: nan"),
        ("infinite", {}, "not a finite number: inf"),
        ("text", {}, "returned str '0.9', not a number"),
        ("sleepy", {"seconds": 5}, "timed out after 0.3 s"),
    ],
)
def test_a_failing_plugin_gives_errors_never_scores(warehouse, name, options, reason):
    pairs = pairs_of(("q1", "p1"), ("q2", "p2"))
    start = time.monotonic()
    run = score_pairs(warehouse, plugin(warehouse, name, **options), pairs, timeout=0.3)
    assert time.monotonic() - start < 3  # an abandoned call does not hold the run up
    assert run.scored == [] and run.invalid == []
    assert [(e.pair.query_id, e.reason) for e in run.errors] == [("q00", reason), ("q01", reason)]
    assert [(e.query_id, e.doc_id, e.reason) for e in run.error_pairs()] == [
        ("q00", "d00", reason),
        ("q01", "d01", reason),
    ]
    assert cache_rows(warehouse) == []  # an error is not cached: the next run asks again


def test_a_plugin_gets_corpus_and_options_and_its_config_is_canonical(warehouse):
    a = plugin(warehouse, "constant", value=0.25, note="x")
    b = plugin(warehouse, "constant", note="x", value=0.25)
    assert a.impl.ctx.corpus is CORPUS and a.impl.options == {"value": 0.25, "note": "x"}
    assert cache_key(a) == cache_key(b)
    assert cache_key(a).config == '{"factory":"score_plugins:constant","options":{"note":"x","value":0.25}}'
    assert cache_key(a).corpus_fingerprint == CORPUS.fingerprint
    score_pairs(warehouse, a, pairs_of(("q", "p")))
    assert (score_pairs(warehouse, b, pairs_of(("q", "p"))).cache_hits) == 1


def test_a_rich_score_keeps_its_label_and_rationale_in_the_cache(warehouse):
    run = score_pairs(warehouse, plugin(warehouse, "rich"), pairs_of(("q", "passage text")))
    assert run.scored[0].scores == (Score(0.75, "partial", "half of it", "passa"),)
    assert cache_rows(warehouse) == [("rich", "1", 0, 0.75, "partial", "half of it", "passa", None)]


# --------------------------------------------------------------------------- the cache
def test_a_new_scorer_version_writes_new_rows_and_keeps_the_old(warehouse):
    scorer = plugin(warehouse, "counting")
    pairs = pairs_of(("q1", "p1"), ("q2", "p2"))
    first = score_pairs(warehouse, scorer, pairs)
    assert [s.values for s in first.scored] == [(1.0,), (2.0,)]
    again = score_pairs(warehouse, scorer, pairs)
    assert (again.computed, again.cache_hits) == (0, 2)
    assert [s.values for s in again.scored] == [(1.0,), (2.0,)]  # cached, the counter did not move
    scorer.version = "2"
    newer = score_pairs(warehouse, scorer, pairs)
    assert (newer.computed, [s.values for s in newer.scored]) == (2, [(3.0,), (4.0,)])
    assert [(r[1], r[3]) for r in cache_rows(warehouse)] == [("1", 1.0), ("1", 2.0), ("2", 3.0), ("2", 4.0)]


def test_a_cached_row_is_never_overwritten(warehouse):
    from goldenset.scoring.scorers import _write_cache

    key = cache_key(plugin(warehouse, "constant"))
    _write_cache(warehouse, key, "qh", "ph", 0, Score(0.1))
    _write_cache(warehouse, key, "qh", "ph", 0, Score(0.9))  # INSERT OR IGNORE: no error, no change
    assert [r[3] for r in cache_rows(warehouse)] == [0.1]


def test_repeats_score_each_pair_n_times_and_are_cached_by_repeat(warehouse):
    scorer = plugin(warehouse, "counting")
    run = score_pairs(warehouse, scorer, pairs_of(("q1", "p1")), repeats=3)
    assert run.scored[0].values == (1.0, 2.0, 3.0)
    assert [r[2] for r in cache_rows(warehouse)] == [0, 1, 2]
    again = score_pairs(warehouse, scorer, pairs_of(("q1", "p1")), repeats=3)
    assert (again.computed, again.cache_hits, again.scored[0].values) == (0, 3, (1.0, 2.0, 3.0))
    (pair,) = again.calibration_pairs()
    assert (pair.score, pair.repeats, pair.acceptable) == (2.0, (1.0, 2.0, 3.0), True)


def test_progress_is_reported_after_each_pair(warehouse):
    seen = []
    score_pairs(
        warehouse,
        plugin(warehouse, "constant"),
        pairs_of(("a", "b"), ("c", "d")),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 2), (2, 2)]


# --------------------------------------------------------------------------- the judge as a scorer
def test_judge_answers_invalid_answers_and_errors_are_kept_apart(warehouse, judge_stub):
    settings = JudgeSettings(judge_stub.url, "stub-model", max_attempts=2, backoff=0.01)
    scorer = build_scorer("judge", ScorerContext(con=warehouse, judge=settings, timeout=5))
    pairs = pairs_of(("refund?", "Refunds take 14 days."), ("tokens?", "Tokens expire."), ("limits?", "HTTP 429."))
    judge_stub.push(
        good(2, "It says so.", "Refunds take 14 days."),
        good(1, "Partly.", "Tokens never expire."),  # not in the passage
        Reply(500, body="down"),
        Reply(500, body="down"),
    )
    run = score_pairs(warehouse, scorer, pairs)
    assert [s.values for s in run.scored] == [(2.0,)]
    assert [(i.pair.query_id, i.reason) for i in run.invalid] == [("q01", "hallucinated_span")]
    assert [e.pair.query_id for e in run.errors] == ["q02"]
    assert "HTTP 500" in run.errors[0].reason
    assert run.hallucinated_span_share == 0.5  # 1 of 2 answers; the error is not an answer
    assert [(e.query_id, e.reason[:20]) for e in run.error_pairs()] == [
        ("q01", "invalid answer: hall"),
        ("q02", "raised ScorerError: "),
    ]
    # The answer and the invalid answer are cached; only the error is asked again.
    judge_stub.push(good(0))
    again = score_pairs(warehouse, scorer, pairs)
    assert (again.computed, again.cache_hits, len(judge_stub.requests)) == (1, 2, 5)
    assert [i.reason for i in again.invalid] == ["hallucinated_span"]
    assert cache_key(scorer).version.startswith("judge-prompt-v")


# --------------------------------------------------------------------------- building scorers
def test_a_plugin_whose_factory_raises_could_not_be_built_and_says_why():
    with pytest.raises(
        ScorerError,
        match=r"--scorer 'score_plugins:broken' could not be built: RuntimeError: "
        r"no weights at /models/missing; check its --scorer-config",
    ):
        build_scorer("score_plugins:broken", ScorerContext())


def test_dense_scorers_of_one_process_share_one_model():
    first = build_scorer("dense", ScorerContext())
    second = build_scorer("dense", ScorerContext())
    assert first.embedder is second.embedder


@pytest.mark.parametrize(
    ("spec", "ctx", "message"),
    [
        ("cosine", ScorerContext(), "--scorer 'cosine' is not known; use dense, bm25, judge or module:factory"),
        ("dense", ScorerContext(options={"k": 1}), "--scorer-config is for module:factory scorers"),
        ("bm25", ScorerContext(), "--scorer bm25 needs a corpus snapshot"),
        ("judge", ScorerContext(), "--scorer judge needs --judge-url and --judge-model"),
        ("no_such_module_xyz:f", ScorerContext(), "cannot import 'no_such_module_xyz'"),
        ("score_plugins:missing", ScorerContext(), "has no 'missing'"),
        ("score_plugins:nameless", ScorerContext(), "without a string `version`"),
    ],
)
def test_a_scorer_that_cannot_be_built_is_a_usage_error(spec, ctx, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_scorer(spec, ctx)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repeats": 0}, "--repeats 0 is not a number of repeats"),
        ({"timeout": 0}, "--timeout 0 must be a positive number"),
    ],
)
def test_bad_repeats_or_timeout_are_usage_errors(warehouse, kwargs, message):
    with pytest.raises(UsageError, match=message):
        score_pairs(warehouse, plugin(warehouse, "constant"), pairs_of(("a", "b")), **kwargs)


# --------------------------------------------------------------------------- pairs from the warehouse
def _load(con, load_id, content, docs):
    con.execute(
        "INSERT INTO corpus_loads (load_id, loaded_at, fingerprint, content_sha256, source) VALUES (?, ?, ?, ?, ?)",
        [load_id, datetime(2026, 11, load_id), f"fp{load_id}", content, "c"],
    )
    for doc_id, version, status, text in docs:
        con.execute(
            "INSERT INTO corpus_documents (content_sha256, doc_id, version, status, text) VALUES (?, ?, ?, ?, ?)",
            [content, doc_id, version, status, text],
        )


def test_the_passage_comes_from_the_latest_snapshot_holding_the_version_active_else_retired(warehouse):
    _load(warehouse, 1, "c1", [("r", "v1", "active", "v1 as first loaded"), ("s", "v1", "retired", "s old")])
    _load(
        warehouse,
        2,
        "c2",
        [
            ("r", "v1", "retired", "v1 retired later"),
            ("r", "v2", "active", "v2 text"),
            ("s", "v1", "retired", "s retired again"),
        ],
    )
    _load(warehouse, 3, "c3", [("r", "v2", "active", "v2 text, reloaded")])
    got = passages(warehouse, [("r", "v1"), ("r", "v2"), ("s", "v1"), ("t", "v1")])
    assert got == {("r", "v1"): "v1 as first loaded", ("r", "v2"): "v2 text, reloaded", ("s", "v1"): "s retired again"}


def test_golden_pairs_read_human_or_log_rows_with_their_passages(warehouse):
    _load(warehouse, 1, "c1", [("d1", "v1", "active", "text one"), ("d2", "v1", "active", "text two")])
    warehouse.execute("INSERT INTO golden_builds (build_id, built_at, labels_build_id) VALUES (1, now(), 1)")
    rows = [  # query_id, doc_id, doc_version, verdict, source, grade
        ("q1", "d1", "v1", None, "human", 2),
        ("q1", "d2", "v1", None, "human", 0),
        ("q2", "d2", "v9", None, "human", 1),
        ("q3", "d1", "v1", "helped", "log", 1),
        ("q3", "d2", "v1", "noise", "log", 0),
    ]
    for qid, did, ver, verdict, source, grade in rows:
        warehouse.execute(
            "INSERT INTO build_labels (valid_from_build, query_id, project, task, doc_id, doc_version, verdict, "
            "judged_at, source, grade) VALUES (1, ?, 'p', ?, ?, ?, ?, ?, ?, ?)",
            [qid, f"task {qid}", did, ver, verdict, datetime(2026, 11, 2), source, grade],
        )
    human, missing = golden_pairs(warehouse, "human")
    assert [(p.query_id, p.doc_id, p.query, p.passage, p.acceptable) for p in human] == [
        ("q1", "d1", "task q1", "text one", True),
        ("q1", "d2", "task q1", "text two", False),
    ]
    assert [(e.query_id, e.reason) for e in missing] == [("q2", "no loaded corpus snapshot holds d2 at version v9")]
    log, _ = golden_pairs(warehouse, "log")
    assert [(p.query_id, p.doc_id, p.acceptable, p.labelled_at) for p in log] == [
        ("q3", "d1", True, datetime(2026, 11, 2)),
        ("q3", "d2", False, datetime(2026, 11, 2)),
    ]


def test_traffic_is_accepted_serves_per_project(warehouse):
    for line, (serve_id, project) in enumerate([("s1", "a"), ("s2", "a"), ("s3", "b"), ("s1", "b")], start=1):
        warehouse.execute(
            "INSERT INTO log_serves (source_file, dt, file_name, line, serve_id, project) "
            "VALUES ('dt=2026-11-01/x.jsonl', '2026-11-01', 'x.jsonl', ?, ?, ?)",
            [line, serve_id, project],
        )
    # s1's second line is a duplicate: only its first (project a) is accepted.
    assert project_traffic(warehouse) == {"a": 2, "b": 1}


def test_a_read_only_run_uses_the_cache_without_adding_to_it(warehouse):
    scorer = plugin(warehouse, "counting")
    score_pairs(warehouse, scorer, pairs_of(("q1", "p1")))
    run = score_pairs(warehouse, scorer, pairs_of(("q1", "p1"), ("q2", "p2")), write=False)
    assert (run.cache_hits, run.computed) == (1, 1)
    assert len(cache_rows(warehouse)) == 1


def test_a_policy_names_the_scorer_that_rebuilds_it():
    assert policy_scorer({"scorer": "dense", "config": {"model": "m"}}) == ("dense", {})
    assert policy_scorer(
        {"scorer": "plugin", "config": {"factory": "score_plugins:constant", "options": {"value": 1}}}
    ) == ("score_plugins:constant", {"value": 1})
    with pytest.raises(UsageError, match="policy scorer 'mystery' is neither built in"):
        policy_scorer({"scorer": "mystery", "config": {}})
