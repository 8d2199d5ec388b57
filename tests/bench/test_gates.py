"""The gates with really broken parts: a dense model that does not exist, a corrupt or missing
lexical index, an empty corpus, a part that swallows its error. No mocks."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta

import pytest
from bench_world import DOCS, QUERIES, build_golden, days_ago, write_corpus

from goldenset import warehouse
from goldenset.bench.gates import check_age
from goldenset.bench.golden import Build
from goldenset.bench.runner import BenchConfig
from goldenset.bench.service import run_and_store
from goldenset.corpus import read_corpus
from goldenset.embeddings import Embedder
from goldenset.errors import ComponentDown, GoldensetError, GoldenSetTooOld, NoBuild, UsageError
from goldenset.retrieval.reference import HybridRetriever
from goldenset.retrieval.retriever import RetrieverContext, probe_component

US = timedelta(microseconds=1)


def _config(g, **kw):
    return BenchConfig(index_dir=g.index_dir, **kw)


def _run(g, embedder=None, **kw):
    return run_and_store(g.db, g.corpus, _config(g, **kw), report_dir=g.root / "report", embedder=embedder)


def _count_runs(db):
    con = warehouse.connect(db, read_only=True)
    try:
        return con.execute("SELECT count(*) FROM benchmark_runs").fetchone()[0]
    finally:
        con.close()


def test_golden_set_older_than_max_age_is_refused_with_exit_3(tmp_path):
    g = build_golden(tmp_path / "g", built_at=days_ago(31))
    with pytest.raises(GoldenSetTooOld) as exc:
        _run(g, retriever="bench_plugins:keywords")
    assert exc.value.exit_code == 3
    assert str(exc.value).startswith("golden set build 1 is 31.0 days old")
    assert "more than --max-age-days 30" in str(exc.value)
    assert _count_runs(g.db) == 0


@pytest.mark.parametrize(
    ("age", "refused"), [(timedelta(days=30) - US, False), (timedelta(days=30), False), (timedelta(days=30) + US, True)]
)
def test_a_golden_set_exactly_max_age_days_old_is_not_too_old(age, refused):
    # "More than --max-age-days": 30 days to the microsecond passes, a microsecond more is refused.
    built = datetime(2026, 11, 1, 2, 0, 0)
    build = Build(1, built, "f" * 64, None)
    if refused:
        with pytest.raises(GoldenSetTooOld):
            check_age(build, 30, now=built + age)
    else:
        assert check_age(build, 30, now=built + age) == age


@pytest.mark.slow
def test_max_age_days_can_be_raised(tmp_path):
    g = build_golden(tmp_path / "g", built_at=days_ago(31))
    result = _run(g, retriever="bench_plugins:keywords", max_age_days=45)
    assert result.run.n_queries == len(QUERIES)


def test_age_gate_is_checked_before_the_probes_so_exit_3_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "no-such-model"))
    g = build_golden(tmp_path / "g", built_at=days_ago(40))
    with pytest.raises(GoldenSetTooOld):
        _run(g)


def test_a_dense_model_path_that_does_not_exist_is_component_down_exit_4(tmp_path, monkeypatch, goldens):
    missing = tmp_path / "no-such-model"
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(missing))
    g = goldens(tmp_path / "g")
    with pytest.raises(ComponentDown) as exc:
        _run(g)
    assert exc.value.exit_code == 4
    assert str(exc.value) == (
        f"COMPONENT DOWN: dense: dense model '{missing}' does not exist; set GOLDENSET_DENSE_MODEL to a "
        "sentence-transformers model directory or unset it to use the packaged model"
    )
    assert _count_runs(g.db) == 0


def test_a_model_directory_without_a_model_is_component_down(tmp_path, monkeypatch, goldens):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(broken))
    g = goldens(tmp_path / "g")
    with pytest.raises(ComponentDown) as exc:
        _run(g)
    assert str(exc.value).startswith(f"COMPONENT DOWN: dense: dense model '{broken}' cannot be loaded: ")


def test_allow_degraded_runs_without_the_dense_side_and_stamps_the_run(tmp_path, monkeypatch, goldens):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "no-such-model"))
    g = goldens(tmp_path / "g")
    result = _run(g, allow_degraded=True)
    run = result.run
    assert run.degraded and run.down_components == ["dense"]
    assert run.warnings[0].startswith("DEGRADED: ran with dense down (dense model")
    assert run.retriever_config["retriever"]["disabled"] == ["dense"]
    con = warehouse.connect(g.db, read_only=True)
    try:
        degraded, warnings = con.execute(
            "SELECT degraded, warnings FROM benchmark_runs WHERE run_id = ?", [run.run_id]
        ).fetchone()
    finally:
        con.close()
    assert degraded is True and json.loads(warnings)[0].startswith("DEGRADED")
    assert result.report.read_text().startswith("# DEGRADED · Retrieval benchmark")


def _index_lexical(g, embedder):
    con = warehouse.connect(g.db)
    try:
        ctx = RetrieverContext(read_corpus(g.corpus), con, embedder, g.index_dir)
        r = HybridRetriever(ctx)
        assert probe_component(r, "lexical", "webhook retries").up
        return r.lexical_index_dir
    finally:
        con.close()


def test_a_corrupt_lexical_index_is_component_down_not_rebuilt_silently(golden, embedder):
    index = _index_lexical(golden, embedder)
    (index / "vocab.index.json").unlink()
    with pytest.raises(ComponentDown) as exc:
        _run(golden, embedder)
    lines = str(exc.value).splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"COMPONENT DOWN: lexical: lexical index at {index} is incomplete or corrupt (")
    assert lines[0].endswith("delete that directory to rebuild it")


def test_an_index_without_its_doc_id_list_is_incomplete(golden, embedder):
    index = _index_lexical(golden, embedder)
    (index / "doc_ids.json").unlink()
    with pytest.raises(ComponentDown, match="COMPONENT DOWN: lexical: lexical index at .* is incomplete"):
        _run(golden, embedder)


def test_a_missing_lexical_index_is_down_when_indexing_is_not_the_benchmarks_job(golden, embedder):
    with pytest.raises(ComponentDown) as exc:
        _run(golden, embedder, retriever_config={"build_index": False})
    assert str(exc.value).startswith("COMPONENT DOWN: lexical: no lexical index at ")
    assert "(build_index is off)" in str(exc.value)


def test_a_deleted_index_directory_is_rebuilt_for_the_same_content(golden, embedder):
    index = _index_lexical(golden, embedder)
    shutil.rmtree(index)
    assert _index_lexical(golden, embedder) == index and index.is_dir()


def test_a_corpus_without_active_documents_downs_every_component_of_the_retriever(tmp_path, goldens):
    g = goldens(tmp_path / "g")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"doc_id": "gone", "version": "1", "status": "retired", "text": ""}) + "\n")
    with pytest.raises(ComponentDown) as exc:
        run_and_store(g.db, empty, _config(g), report_dir=tmp_path / "r", embedder=Embedder())
    lines = str(exc.value).splitlines()
    # Graph and boosts are not components of the retriever: never a COMPONENT DOWN line.
    assert [line.split(":")[1].strip() for line in lines] == ["lexical", "dense"]
    assert lines[0] == (
        "COMPONENT DOWN: lexical: the corpus has no active document, so there is no lexical index to build"
    )
    assert lines[1] == "COMPONENT DOWN: dense: the corpus has no active document to embed"


def test_a_part_that_swallows_its_error_and_returns_nothing_is_down(golden):
    with pytest.raises(ComponentDown) as exc:
        _run(golden, retriever="bench_plugins:empty")
    assert str(exc.value).startswith("COMPONENT DOWN: keywords: returned no result for the probe query ")


def test_a_part_that_raises_is_down_with_its_reason(golden):
    with pytest.raises(ComponentDown) as exc:
        _run(golden, retriever="bench_plugins:exploding")
    assert str(exc.value) == "COMPONENT DOWN: keywords: index server unreachable at 10.0.0.7:9200"


ONE_HELPED = [(task, helped[:1], noise) for task, helped, noise in QUERIES]
GRAPH_LINE = (
    "WARNING: graph has nothing to learn from: no two active documents helped on the same query, so "
    "the graph has no edge; row +graph left out (it would rank as core), rows +graph+boosts and "
    "+graph+boosts honest rank with the boosts alone"
)


@pytest.mark.slow
def test_one_helped_document_per_query_leaves_out_plus_graph_for_a_plugin_with_one_warning(tmp_path, goldens):
    g = goldens(tmp_path / "g", queries=ONE_HELPED)
    run = _run(g, retriever="bench_plugins:keywords").run
    assert run.rows == ["core", "+graph+boosts", "+graph+boosts honest"]
    assert run.warnings == [GRAPH_LINE]
    assert not run.degraded and run.down_components == []
    assert run.retriever_config["graph"]["enabled"] is False and run.retriever_config["boosts"]["enabled"] is True
    assert _count_runs(g.db) == 1


@pytest.mark.slow
def test_one_helped_document_per_query_does_not_refuse_the_reference_retriever(tmp_path, embedder, goldens):
    g = goldens(tmp_path / "g", queries=ONE_HELPED)
    run = _run(g, embedder).run
    assert run.warnings == [GRAPH_LINE] and not run.degraded
    assert "+graph" not in run.values and run.n_queries == len(QUERIES)


def test_without_a_graph_the_boosts_rows_rank_with_the_boosts_alone(tmp_path, goldens):
    # Each query's one helped document helped on that query only: the leave-one-out row has
    # nothing left to boost and ranks as core, the full row boosts every query's own document.
    g = goldens(tmp_path / "g", queries=ONE_HELPED)
    run = _run(g, retriever="bench_plugins:worst").run
    assert run.means("+graph+boosts honest") == run.means("core")
    assert run.means("+graph+boosts")["mrr"] > run.means("core")["mrr"]


def test_allow_degraded_names_only_the_retrievers_parts_when_the_graph_is_empty_too(tmp_path, monkeypatch, goldens):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "no-such-model"))
    g = goldens(tmp_path / "g", queries=ONE_HELPED)
    run = _run(g, allow_degraded=True).run
    assert run.degraded and run.down_components == ["dense"]
    assert run.warnings[0].startswith("DEGRADED: ran with dense down (") and "graph" not in run.warnings[0]
    assert run.warnings[1:] == [GRAPH_LINE]


def test_nothing_to_boost_leaves_out_every_reference_row(tmp_path, goldens):
    # The corpus moved on since the build: the only document that ever helped is retired now.
    queries = [("Rotate expiring API tokens", ["auth/tokens"], ["auth/password-reset"])]
    g = goldens(tmp_path / "g", queries=queries)
    write_corpus(g.corpus, [d for d in DOCS if d[0] != "auth/tokens"])
    run = _run(g, retriever="bench_plugins:keywords").run
    assert run.rows == ["core"] and not run.degraded
    assert run.warnings[1:] == [
        "WARNING: graph and boosts have nothing to learn from: no active document has a `helped` verdict, so "
        "nothing would be boosted; rows +graph, +graph+boosts, +graph+boosts honest left out "
        "(reference only; core decides)"
    ]
    assert run.warnings[0].startswith("WARNING: corpus drift")


def test_unreadable_judgments_leave_out_the_reference_rows_but_not_core(golden):
    from goldenset.bench.runner import learn_features

    con = warehouse.connect(golden.db)
    try:
        con.execute("DROP VIEW judgments")
        features = learn_features(con, read_corpus(golden.corpus))
    finally:
        con.close()
    assert features.rows == ("core",) and features.feedback is None
    assert features.warning.startswith("WARNING: graph and boosts cannot read the judgments view (")
    assert features.warning.endswith(
        "; rows +graph, +graph+boosts, +graph+boosts honest left out (reference only; core decides)"
    )


def test_a_full_graph_keeps_every_row_without_a_warning(golden):
    run = _run(golden, retriever="bench_plugins:keywords").run
    assert run.rows == ["core", "+graph", "+graph+boosts", "+graph+boosts honest"] and run.warnings == []


def test_corpus_drift_above_five_percent_warns_at_the_top(tmp_path, goldens):
    g = goldens(tmp_path / "g")
    changed = [(d, t, x + " Revised." if i < 2 else x) for i, (d, t, x) in enumerate(DOCS)]
    write_corpus(g.corpus, changed)
    run = _run(g, retriever="bench_plugins:keywords").run
    assert run.warnings[0].startswith("WARNING: corpus drift since golden build 1 is 12.5% (> 5%)")
    assert run.corpus_drift == pytest.approx(2 / 16)


def test_drift_of_five_percent_or_less_does_not_warn(golden):
    run = _run(golden, retriever="bench_plugins:keywords").run
    assert run.warnings == [] and run.corpus_drift == 0.0


def test_no_build_yet_is_an_error_not_a_refusal(tmp_path):
    with pytest.raises(NoBuild, match="run `goldenset build` first"):
        run_and_store(tmp_path / "none.duckdb", tmp_path / "c.jsonl", BenchConfig(index_dir=tmp_path))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_colon", "is not an import path; use `module:factory`"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        ("bench_plugins:missing", "module 'bench_plugins' has no 'missing'"),
        ("bench_plugins:not_callable", "'not_callable' is not callable"),
    ],
)
def test_a_bad_retriever_import_path_is_a_usage_error(golden, spec, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _run(golden, retriever=spec)


def test_a_retriever_that_fails_during_the_run_is_an_error_naming_the_query_and_stores_nothing(golden):
    from goldenset.errors import GoldensetError

    with pytest.raises(GoldensetError) as exc:
        _run(golden, retriever="bench_plugins:fails_on_search")
    assert type(exc.value) is GoldensetError and exc.value.exit_code == 1
    message = str(exc.value)
    assert message.startswith("retriever failed on query ") and "\n" not in message
    assert message.endswith("): search backend went away; nothing was stored, fix the retriever and run again")
    assert _count_runs(golden.db) == 0


# Contract section 6: when several exit codes apply, the lowest non-zero one wins. Each case
# breaks two or three rules at once; 3 against 4 is test_age_gate_is_checked_before_the_probes.
@pytest.mark.parametrize(
    "retriever, k_values, expected",
    [
        ("no_colon", (5,), 2),  # bad retriever path (2) + too old (3) + dense down (4)
        ("bench_plugins:speechless", (5,), 2),  # retriever without search() (2) + too old (3) + dense down (4)
        ("bench_plugins:keywords", (0,), 2),  # bad k (2) + too old (3)
        (None, (5,), 3),  # too old (3) + dense down (4)
    ],
)
def test_the_lowest_exit_code_wins_when_several_apply(tmp_path, monkeypatch, retriever, k_values, expected):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "no-such-model"))
    g = build_golden(tmp_path / "g", built_at=days_ago(40))
    kw = {"retriever": retriever} if retriever else {}
    with pytest.raises(GoldensetError) as exc:
        _run(g, k_values=k_values, **kw)
    assert exc.value.exit_code == expected
    assert _count_runs(g.db) == 0


def test_no_build_is_exit_1_before_any_usage_error(tmp_path):
    # No build (1) + bad retriever path (2) + bad k (2): the error wins.
    with pytest.raises(NoBuild) as exc:
        run_and_store(
            tmp_path / "none.duckdb",
            tmp_path / "c.jsonl",
            BenchConfig(index_dir=tmp_path, retriever="no_colon", k_values=(0,)),
        )
    assert exc.value.exit_code == 1
