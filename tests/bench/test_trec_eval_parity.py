"""`bench eval` held to trec_eval's own C code (pytrec_eval) on random runs and qrels.

The oracle is pytrec_eval, which links trec_eval's measure code: per query it gives
what trec_eval computes (and it evaluates exactly the queries that are in both the run
and the qrels). pytrec_eval does not average; trec_eval.c and meas_avg.c do, and
that rule is re-stated here, independently of goldenset: the mean is the sum over the
evaluated queries divided by their number, or, with -c, by the number of qrels
queries (a qrels query missing from the run adds 0). Nothing expected here is
computed by goldenset's code.

noise@k and hole@k have no trec_eval equivalent; they are pinned by hand at the end.
"""

from __future__ import annotations

import json
import re

import pytest
import pytrec_eval
from bench_world import DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from goldenset import warehouse
from goldenset.bench import metrics as M
from goldenset.bench import trec
from goldenset.bench.service import evaluate_run_file
from goldenset.cli.bench import app as bench_app
from goldenset.errors import InputError, UsageError
from tests.helpers import examples

# Ids that make byte order matter: case, digits before letters, prefixes, non-ASCII.
DOCS = ["a", "ab", "a1", "b", "B", "Z", "10", "9", "é", "ß-2", "d.x", "zz"]
QUERIES = ["q1", "q2", "q3", "Q1", "10", "q-é"]
# Few distinct values, so ties are the rule; -0.0 equals 0.0 for trec_eval too.
SCORES = [3.0, 2.5, 1.0, 0.5, 0.0, -0.0, -1.0]
DEFAULT_NAMES = ["recall@5", "recall@10", "recall@24", "precision@5", "precision@10", "ndcg@10", "mrr", "map"]

runs = st.dictionaries(
    st.sampled_from(QUERIES),
    st.dictionaries(st.sampled_from(DOCS), st.sampled_from(SCORES), max_size=len(DOCS)),
    max_size=len(QUERIES),
)


def trec_eval_can_read(rels) -> bool:
    # trec_eval sizes a table by the query's highest relevance + 1: when every judgment
    # is -2 or lower it stops ("Can't calculate measure"), and pytrec_eval corrupts
    # memory. goldenset scores such a query (test_a_query_judged_only_below_minus_one...).
    return not rels or max(rels.values()) >= -1


# Graded, with the negative values trec_eval reads as "in the pool, not judged".
judgments = st.dictionaries(st.sampled_from(DOCS), st.integers(-2, 3), max_size=8).filter(trec_eval_can_read)
qrels_sets = st.dictionaries(st.sampled_from(QUERIES), judgments.filter(bool), max_size=len(QUERIES))
# None: the default metric set; else --k values, some beyond any list, repeats allowed.
cutoffs = st.none() | st.lists(st.integers(1, 30), min_size=1, max_size=4)

cli = CliRunner()


def expected_names(ks):
    if ks is None:
        return DEFAULT_NAMES
    ks = sorted(set(ks))
    return [f"recall@{k}" for k in ks] + [f"precision@{k}" for k in ks] + ["ndcg@10", "mrr", "map"]


def trec_eval_name(name: str) -> str:
    family, _, k = name.partition("@")
    return {"recall": f"recall_{k}", "precision": f"P_{k}", "ndcg": f"ndcg_cut_{k}", "mrr": "recip_rank", "map": "map"}[
        family
    ]


def trec_eval_per_query(run, qrels, names):
    """{query: {our name: trec_eval's value}} for the queries trec_eval evaluates."""
    recall = sorted({n.split("@")[1] for n in names if n.startswith("recall@")}, key=int)
    precision = sorted({n.split("@")[1] for n in names if n.startswith("precision@")}, key=int)
    measures = {"ndcg_cut.10", "recip_rank", "map", f"recall.{','.join(recall)}", f"P.{','.join(precision)}"}
    got = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return {q: {n: values[trec_eval_name(n)] for n in names} for q, values in got.items()}


def trec_eval_means(run, qrels, names, *, complete=False):
    per_query = trec_eval_per_query(run, qrels, names)
    if not per_query:
        return {}, per_query  # trec_eval 9 stops: "No queries with both results and relevance info"
    n = len([q for q in qrels if qrels[q]]) if complete else len(per_query)
    return {name: sum(v[name] for v in per_query.values()) / n for name in names}, per_query


def write_run(path, run, rnd):
    # Lines shuffled and the rank column made up: trec_eval reads neither.
    lines = [f"{q} Q0 {d} {rnd.randint(0, 99)} {s!r} tag" for q, docs in run.items() for d, s in docs.items()]
    rnd.shuffle(lines)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def write_qrels(path, qrels, fmt):
    with path.open("w", encoding="utf-8") as fh:
        if fmt == "beir":
            fh.write("query-id\tcorpus-id\tscore\n")
        for q, rels in qrels.items():
            for d, r in rels.items():
                fh.write(f"{q}\t{d}\t{r}\n" if fmt == "beir" else f"{q} 0 {d} {r}\n")
    return path


def in_the_file(run):
    # A query without lines is not in a run file at all.
    return {q: docs for q, docs in run.items() if docs}


def files(tmp_path_factory, run, qrels, fmt, rnd):
    tmp = tmp_path_factory.mktemp("parity")
    return write_run(tmp / "x.run", run, rnd), write_qrels(tmp / ("test.tsv" if fmt == "beir" else "qrels"), qrels, fmt)


# ------------------------------------------------------------------------------------------ ties
def test_trec_eval_breaks_ties_by_doc_id_descending_in_byte_order(tmp_path):
    tied = ["a", "ab", "b", "B", "9", "10", "é"]
    expected = ["é", "b", "ab", "a", "B", "9", "10"]
    # trec_eval's rank of each document: 1 / recip_rank with only that document relevant.
    run = {f"probe{i}": dict.fromkeys(tied, 1.0) for i in range(len(tied))}
    qrels = {f"probe{i}": {d: 1} for i, d in enumerate(tied)}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert sorted(tied, key=lambda d: 1 / rr[f"probe{tied.index(d)}"]["recip_rank"]) == expected
    path = tmp_path / "tied.run"
    path.write_text("".join(f"q Q0 {d} {r} 1.0 t\n" for r, d in enumerate(tied, start=1)), encoding="utf-8")
    assert [d for d, _ in trec.read_run(path)["q"]] == expected


@given(
    scored=st.dictionaries(st.sampled_from(DOCS), st.sampled_from(SCORES), min_size=1),
    rnd=st.randoms(use_true_random=False),
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_run_files_are_ranked_exactly_as_trec_eval_ranks_them(tmp_path, scored, rnd):
    docs = list(scored)
    run = {f"probe{i}": scored for i in range(len(docs))}
    qrels = {f"probe{i}": {d: 1} for i, d in enumerate(docs)}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    trec_eval_order = sorted(docs, key=lambda d: 1 / rr[f"probe{docs.index(d)}"]["recip_rank"])
    path = write_run(tmp_path / "x.run", {"q": scored}, rnd)
    assert [d for d, _ in trec.read_run(path)["q"]] == trec_eval_order


# ------------------------------------------------------------------------ per query, every policy
@given(
    run=st.dictionaries(
        st.sampled_from(QUERIES), st.dictionaries(st.sampled_from(DOCS), st.sampled_from(SCORES), max_size=len(DOCS))
    ),
    qrels=st.dictionaries(st.sampled_from(QUERIES), judgments),
    ks=cutoffs,
)
def test_every_query_scores_what_trec_eval_scores_it_including_empty_lists_and_no_relevant(run, qrels, ks):
    # Library level: empty ranked lists and queries left with no judgment, which no file can hold.
    names = expected_names(ks)
    ranked = {q: [d for d, _ in trec.trec_order(docs.items())] for q, docs in run.items()}
    ours = M.evaluate(ranked, qrels, [M.get_metric(n) for n in names], policy=M.QueryPolicy.TREC_EVAL)
    oracle = trec_eval_per_query(run, qrels, names)
    assert sorted(ours) == sorted(oracle)
    for q in oracle:
        assert ours[q] == pytest.approx(oracle[q], abs=1e-12), q


@given(run=runs, qrels=qrels_sets, ks=cutoffs)
def test_complete_policy_scores_queries_missing_from_the_run_as_trec_eval_c_does(run, qrels, ks):
    names = expected_names(ks)
    ranked = {q: [d for d, _ in trec.trec_order(docs.items())] for q, docs in run.items()}
    ours = M.evaluate(ranked, qrels, [M.get_metric(n) for n in names], policy=M.QueryPolicy.COMPLETE)
    # trec_eval 10 -c evaluates an empty ranking for each qrels query missing from the run.
    oracle = trec_eval_per_query({**{q: {} for q in qrels}, **run}, qrels, names)
    assert sorted(ours) == sorted(qrels)
    for q in qrels:
        assert ours[q] == pytest.approx(oracle[q], abs=1e-12), q


@given(run=runs, qrels=qrels_sets)
def test_skip_no_relevant_policy_is_trec_eval_restricted_to_queries_with_a_relevant_document(run, qrels):
    ranked = {q: [d for d, _ in trec.trec_order(docs.items())] for q, docs in run.items()}
    ours = M.evaluate(ranked, qrels, [M.get_metric(n) for n in DEFAULT_NAMES], policy=M.QueryPolicy.SKIP_NO_RELEVANT)
    oracle = trec_eval_per_query(run, qrels, DEFAULT_NAMES)
    with_relevant = {q: v for q, v in oracle.items() if any(r >= 1 for r in qrels[q].values())}
    assert sorted(ours) == sorted(with_relevant)
    for q in with_relevant:
        assert ours[q] == pytest.approx(with_relevant[q], abs=1e-12), q


# ---------------------------------------------------------------- bench eval: library function
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    run=runs,
    qrels=qrels_sets,
    ks=cutoffs,
    fmt=st.sampled_from(["trec", "beir"]),
    complete=st.booleans(),
    rnd=st.randoms(use_true_random=False),
)
def test_evaluate_run_file_means_equal_trec_eval(tmp_path_factory, run, qrels, ks, fmt, complete, rnd):
    run_path, qrels_path = files(tmp_path_factory, run, qrels, fmt, rnd)
    policy = M.QueryPolicy.COMPLETE if complete else M.QueryPolicy.TREC_EVAL
    names = expected_names(ks)
    means, per_query = trec_eval_means(in_the_file(run), qrels, names, complete=complete)
    if not per_query:
        # trec_eval 9: "No queries with both results and relevance info", -c or not.
        with pytest.raises(InputError, match="check that the query ids match"):
            evaluate_run_file(run_path, qrels_path, run_path.parent / "no.duckdb", policy=policy, k_values=ks)
        return
    result = evaluate_run_file(run_path, qrels_path, run_path.parent / "no.duckdb", policy=policy, k_values=ks)
    assert list(result.json_metrics) == names
    assert result.n_queries == (len(qrels) if complete else len(per_query))
    for name in names:
        assert result.means[name] == pytest.approx(means[name], abs=1e-12), name


# --------------------------------------------------------------------------- bench eval: the CLI
@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    run=runs,
    qrels=qrels_sets,
    ks=cutoffs,
    fmt=st.sampled_from(["trec", "beir"]),
    complete=st.booleans(),
    rnd=st.randoms(use_true_random=False),
)
def test_bench_eval_json_equals_trec_eval_to_four_decimals(tmp_path_factory, run, qrels, ks, fmt, complete, rnd):
    run_path, qrels_path = files(tmp_path_factory, run, qrels, fmt, rnd)
    args = [
        "eval",
        "--run",
        str(run_path),
        "--qrels",
        str(qrels_path),
        "--db",
        str(run_path.parent / "no.duckdb"),
        "--json",
        *(["--complete"] if complete else []),
        *[a for k in ks or () for a in ("--k", str(k))],
    ]
    result = cli.invoke(bench_app, args)
    means, per_query = trec_eval_means(in_the_file(run), qrels, expected_names(ks), complete=complete)
    if not per_query:
        assert isinstance(result.exception, InputError), result.output
        return
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    assert list(got) == expected_names(ks)
    for name, value in means.items():
        # printed rounded to 4 decimals: within half a unit of the last digit
        assert abs(got[name] - value) <= 5e-5 + 1e-12, (name, got[name], value)


def test_bench_eval_on_trec_eval_test_files_matches_out_test_a_with_the_complete_flag_too():
    # qrels.test judges every query of results.test, so -c changes nothing there.
    plain = json.loads(
        cli.invoke(
            bench_app, ["eval", "--run", str(DATA / "results.test"), "--qrels", str(DATA / "qrels.test"), "--json"]
        ).output
    )
    complete = json.loads(
        cli.invoke(
            bench_app,
            ["eval", "--run", str(DATA / "results.test"), "--qrels", str(DATA / "qrels.test"), "--json", "--complete"],
        ).output
    )
    assert plain == complete
    assert plain["map"] == 0.1785 and plain["mrr"] == 0.4064


# -------------------------------------------------------------- the golden set, export and run
def golden_qrels_of(path):
    """A TREC qrels file read by hand (not by goldenset) for the oracle."""
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, r = line.split()
        out.setdefault(q, {})[d] = int(r)
    return out


def run_lines_of(path):
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def test_bench_eval_reads_the_beir_qrels_that_goldenset_export_writes(golden, tmp_path):
    from goldenset.export import export_build

    con = warehouse.connect(golden.db)
    try:
        export_build(con, tmp_path / "export")
    finally:
        con.close()
    tsv, trec_file = tmp_path / "export" / "qrels" / "test.tsv", tmp_path / "export" / "qrels.trec"
    assert tsv.read_text(encoding="utf-8").startswith("query-id\tcorpus-id\tscore\n")
    qrels = golden_qrels_of(trec_file)
    # Every query ranks the same three documents, tied: trec_eval's doc id order decides.
    run_path = tmp_path / "tied.run"
    run_path.write_text(
        "".join(f"{q} Q0 {d} 1 1.0 t\n" for q in qrels for d in ("webhooks/retries", "auth/tokens", "billing/refunds"))
    )
    outputs = [
        json.loads(
            cli.invoke(bench_app, ["eval", "--run", str(run_path), "--json", "--k", "1", "--k", "3", *extra]).output
        )
        for extra in (["--qrels", str(tsv)], ["--qrels", str(trec_file)], ["--db", str(golden.db)])
    ]
    assert outputs[0] == outputs[1] == outputs[2]
    means, _ = trec_eval_means(run_lines_of(run_path), qrels, expected_names([1, 3]))
    for name, value in means.items():
        assert abs(outputs[0][name] - value) <= 5e-5 + 1e-12, name


@pytest.mark.slow
def test_bench_run_skips_a_golden_query_left_without_a_relevant_label_and_bench_eval_averages_it_in(tmp_path, goldens):
    # "auth/tokens" superseded: its labels are stale; with --exclude-stale the query
    # "Rotate expiring API tokens" keeps only its noise label.
    g = goldens(tmp_path / "g", superseded={"auth/tokens": "auth/password-reset"})
    report = tmp_path / "report"
    ran = cli.invoke(
        bench_app,
        [
            "run",
            "--db",
            str(g.db),
            "--corpus",
            str(g.corpus),
            "--index-dir",
            str(g.index_dir),
            "--retriever",
            "bench_plugins:keywords",
            "--report",
            str(report),
            "--exclude-stale",
        ],
    )
    assert ran.exit_code == 0, ran.output
    assert "1 query(ies) skipped: every label with grade >= 1 is stale and --exclude-stale left it out" in printed(ran)
    rid = re.search(r"^run_id: (\S+)$", ran.output, re.M).group(1)
    con = warehouse.connect(g.db, read_only=True)
    try:
        assert con.execute(
            "SELECT n_queries, skipped_queries FROM benchmark_runs WHERE run_id = ?", [rid]
        ).fetchone() == (5, 1)
    finally:
        con.close()
    qrels = golden_qrels_of(report / "qrels.trec")
    no_relevant = [q for q, rels in qrels.items() if not any(r >= 1 for r in rels.values())]
    core = run_lines_of(report / "core.run")
    assert len(no_relevant) == 1 and no_relevant[0] not in core and len(core) == 5
    # The same run plus the skipped query: bench eval averages it in, as trec_eval does.
    run_path = tmp_path / "plus.run"
    run_path.write_text((report / "core.run").read_text() + f"{no_relevant[0]} Q0 auth/password-reset 1 1 t\n")
    out = cli.invoke(bench_app, ["eval", "--run", str(run_path), "--db", str(g.db), "--exclude-stale", "--json"])
    assert out.exit_code == 0, out.output
    means, per_query = trec_eval_means(run_lines_of(run_path), qrels, DEFAULT_NAMES)
    assert len(per_query) == 6
    got = json.loads(out.output)
    for name, value in means.items():
        assert abs(got[name] - value) <= 5e-5 + 1e-12, name
    table = printed(cli.invoke(bench_app, ["eval", "--run", str(run_path), "--db", str(g.db), "--exclude-stale"]))
    assert ": 6 queries" in table
    assert "1 query(ies) judged with no relevant document: averaged in, 0 on every trec_eval metric" in table


# ----------------------------------------------------- noise@k and hole@k: no trec_eval, by hand
HAND_RUN = (
    "q1 Q0 a 1 3 t\n"  # relevant
    "q1 Q0 b 2 2 t\n"  # judged 0: noise
    "q1 Q0 c 3 1 t\n"  # never judged: hole
    "q1 Q0 d 4 1 t\n"  # judged -1 (in the pool, not judged): hole; tied with c, ranked before it
    "q2 Q0 x 1 1 t\n"  # judged 0: noise
    "q2 Q0 y 2 1 t\n"  # never judged: hole; tied with x, ranked before it
    "q3 Q0 z 1 1 t\n"  # q3 is not in the qrels: ignored by every policy
)
HAND_QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 d -1\nq1 0 e 2\nq2 0 x 0\nq4 0 w 1\n"
# Ranked: q1 = a b d c, q2 = y x (no relevant document), q4 missing from the run.


@pytest.fixture
def hand_files(tmp_path):
    """The tiny run and qrels above, as files."""
    (tmp_path / "hand.run").write_text(HAND_RUN)
    (tmp_path / "hand.qrels").write_text(HAND_QRELS)
    return tmp_path / "hand.run", tmp_path / "hand.qrels"


@pytest.mark.parametrize(
    "policy, expected",
    [
        # q1: noise@5 1/5, hole@5 2/5, noise@10 1/10, hole@10 2/10, mrr 1, map (1/1)/2
        # q2: noise@5 1/5, hole@5 1/5, noise@10 1/10, hole@10 1/10, mrr 0, map 0; q4: all 0
        (
            M.QueryPolicy.TREC_EVAL,
            {"noise@5": 0.2, "hole@5": 0.3, "noise@10": 0.1, "hole@10": 0.15, "mrr": 0.5, "map": 0.25},
        ),
        (
            M.QueryPolicy.COMPLETE,
            {"noise@5": 0.4 / 3, "hole@5": 0.2, "noise@10": 0.2 / 3, "hole@10": 0.1, "mrr": 1 / 3, "map": 0.5 / 3},
        ),
        (
            M.QueryPolicy.SKIP_NO_RELEVANT,
            {"noise@5": 0.2, "hole@5": 0.4, "noise@10": 0.1, "hole@10": 0.2, "mrr": 1.0, "map": 0.5},
        ),
    ],
)
def test_noise_and_hole_means_by_hand_under_each_policy(hand_files, policy, expected):
    result = evaluate_run_file(*hand_files, hand_files[0].parent / "no.duckdb", policy=policy)
    for name, value in expected.items():
        assert result.means[name] == pytest.approx(value, abs=1e-12), name


def test_noise_and_hole_follow_k_by_hand(hand_files):
    result = evaluate_run_file(*hand_files, hand_files[0].parent / "no.duckdb", k_values=[2, 1])
    # q1 top 2 = a b; q2 top 2 = y x; top 1: a, y
    assert {n: v for n, v in result.means.items() if n.startswith(("noise", "hole"))} == pytest.approx(
        {"noise@1": 0.0, "noise@2": 0.5, "hole@1": 0.5, "hole@2": 0.25}, abs=1e-12
    )
    assert list(result.json_metrics) == ["recall@1", "recall@2", "precision@1", "precision@2", "ndcg@10", "mrr", "map"]


def printed(result) -> str:
    # The console wraps long lines at its width; compare the words.
    return " ".join(result.output.split())


def test_bench_eval_table_counts_each_kind_of_query_the_policy_decided_about(hand_files):
    run, qrels = hand_files
    plain = cli.invoke(bench_app, ["eval", "--run", str(run), "--qrels", str(qrels)])
    assert plain.exit_code == 0, plain.output
    assert f"{run} against {qrels}: 2 queries" in printed(plain)
    for line in (
        "1 query(ies) judged with no relevant document: averaged in, 0 on every trec_eval metric",
        "1 qrels query(ies) missing from the run, ignored",
        "1 run query(ies) not in the qrels, ignored",
        "as trec_eval does without -c",
    ):
        assert line in printed(plain)
    complete = cli.invoke(bench_app, ["eval", "--run", str(run), "--qrels", str(qrels), "--complete"])
    assert f"{run} against {qrels}: 3 queries" in printed(complete)
    assert "1 qrels query(ies) missing from the run, scored 0 (--complete)" in printed(complete)
    assert "as trec_eval -c does" in printed(complete)


def test_a_query_judged_only_below_minus_one_scores_0_where_trec_eval_stops(tmp_path):
    # trec_eval 9.0.8 and 10.0 exit 4 ("Can't calculate measure 'map'") on such a query;
    # it has no relevant document, so it is averaged in at 0 like any other.
    run, qrels = tmp_path / "x.run", tmp_path / "x.qrels"
    run.write_text("q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\n")
    qrels.write_text("q1 0 a 1\nq2 0 b -2\n")
    result = evaluate_run_file(run, qrels, tmp_path / "no.duckdb")
    assert result.n_queries == 2
    assert result.means["mrr"] == 0.5 and result.means["hole@5"] == pytest.approx(0.1)


def test_bench_eval_k_below_one_is_a_usage_error(hand_files):
    result = cli.invoke(bench_app, ["eval", "--run", str(hand_files[0]), "--qrels", str(hand_files[1]), "--k", "0"])
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == "cut-off --k 0 is not a whole number >= 1; give --k 5 or another positive k"


def test_bench_eval_names_the_qrels_file_and_line_it_cannot_read(hand_files, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1\td1\t1\n")
    result = cli.invoke(bench_app, ["eval", "--run", str(hand_files[0]), "--qrels", str(bad)])
    assert isinstance(result.exception, InputError)
    assert str(result.exception).startswith(f"qrels {bad} line 1: expected 4 fields")
