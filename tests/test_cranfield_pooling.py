"""benchmarks/cranfield_pooling.py end to end on a hand-made mini-collection in Cranfield's formats.

tests/data/cranfield-mini holds 12 abstracts and 4 queries (cran.qry numbers them
.I 001, 002, 004, 008; cranqrel calls them 1-4, by position). What it implies,
worked out by hand from the files:

- The lexical ranker (BM25 over title + text) returns only documents sharing a
  word with the query, and no query shares a word with more than 5 documents, so
  the log served exactly those: query 1 (lift / wing / propeller / slipstream)
  docs 1, 2, 12 (12 through "wing"); query 2 (heat conduction in composite slabs)
  docs 4, 5; query 3 (surface roughness, boundary layer transition, flat plate)
  docs 7, 8, 9, 12 (12 through "surface"); query 4 (buckling of cylindrical
  shells) doc 12 (through "buckling").
- Verdicts from cranqrel: helped = served and code 1-4: (1,1) (1,2) (2,4) (2,5)
  (3,7) (3,8) (3,9) = 7; wrong = code -1: (1,12) (4,12) = 2; noise = unjudged:
  (3,12) = 1.
- Query 4 has no helped document, so `no_positive` drops it; its relevant docs
  10 and 11 are out of the loop's reach. Golden queries: 1, 2, 3.
- Relevant documents of the golden queries: 1-3, 4-6, 7-9 = 9; the log has 7.
  The two it misses, doc 3 (an airscrew paraphrase of query 1, code 1) and doc 6
  (a paraphrase of query 2, code 2), share no word with their query: the lexical
  ranker can never return them, at any depth, so pooling with lexical alone queues
  nothing. Each is the closest text to its query in meaning, which the dense
  ranker (and core, which fuses it with the lexical one) puts in its top 5 of 12:
  every pool with dense or core finds both, both grade 2.
- Recall@5 of the lexical ranker: 1 against the log (it built it); against
  Cranfield (and against the grown pool, which now holds every relevant document
  of the golden queries) 2/3, 2/3, 3/3 -> 7/9.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path

import pytest

from tests.helpers import run_study

# Every test here reads a world or a study run built once per module: seconds before the first.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "cranfield_pooling.py"
MINI = Path(__file__).resolve().parent / "data" / "cranfield-mini"
POOLS = ["lexical,dense,core", "dense", "lexical"]
MAIN = "lexical+dense+core@10"

SERVED = {1: {1, 2, 12}, 2: {4, 5}, 3: {7, 8, 9, 12}, 4: {12}}
QUERY_TEXT = {
    1: "what is the lift increase of a wing in a propeller slipstream .",
    2: "what problems of heat conduction in composite slabs have been solved so far .",
}


def cranqrel_codes() -> dict[tuple[int, int], int]:
    codes = {}
    for line in (MINI / "cranqrel").read_text().splitlines():
        if line.strip():
            q, d, c = (int(x) for x in line.split())
            codes[(q, d)] = c
    return codes


def relevant_by_query() -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for (q, d), c in cranqrel_codes().items():
        if 1 <= c <= 4:
            out.setdefault(q, set()).add(d)
    return out


def query_id(text: str) -> str:
    normalised = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha256(f"cranfield\x1f{normalised}".encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory):
    """The script run once on the mini-collection, in this process (tests.helpers.run_study; the
    goldenset commands inside it in this process too); its report and figures."""
    work = tmp_path_factory.mktemp("cranfield")
    report = work / "out" / "report.md"
    argv = [
        str(MINI),
        "--workdir",
        str(work / "run"),
        "--report",
        str(report),
        "--depths",
        "5,10",
        "--measure",
        "main",
        # The commands in the script's process: what they print and exit with is what is read
        # here, not how each is started (the study's default, a process per command, costs
        # Python's, Dagster's and torch's start-up 25 times).
        "--in-process",
    ]
    for rankers in POOLS:
        argv += ["--rankers", rankers]
    proc = run_study(SCRIPT, argv, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        "stdout": proc.stdout,
        "markdown": report.read_text(),
        "figures": json.loads(report.with_suffix(".json").read_text()),
        "work": work / "run",
    }


def pool(figures: dict, name: str) -> dict:
    return next(p for p in figures["pools"] if p["name"] == name)


def test_the_report_is_printed_and_written(mini_run):
    assert mini_run["markdown"].strip() == mini_run["stdout"].strip()


def test_the_report_has_every_section_and_pool(mini_run):
    md = mini_run["markdown"]
    for heading in (
        "# Pooling on Cranfield",
        "## Pools",
        f"## Benchmark before and after the labels of {MAIN}",
        "## Minimum detectable effect",
        "## Every pool, after its labels",
        "## Caveat: recall against a pool one ranker built is optimistic",
        "## Checks",
        "## Rerun",
    ):
        assert heading in md
    names = [f"{r.replace(',', '+')}@{d}" for r in POOLS for d in (5, 10)]
    assert [p["name"] for p in mini_run["figures"]["pools"]] == names
    for p in mini_run["figures"]["pools"]:
        per = "n/a" if p["relevant_found"] == 0 else f"{p['queued'] / p['relevant_found']:.1f}"
        assert (
            f"| {p['name']} | {p['returned_distinct']} | {p['already_labelled']} | {p['queued']} | "
            f"{p['relevant_found']} ({p['relevant_found_grade2']}) | {per} |"
        ) in md
    for metric in ("recall@5", "ndcg@10", "mrr", "map"):
        assert sum(line.startswith(f"| {metric} |") for line in md.splitlines()) == 3  # before/after x2, MDE
    assert "checks hold" in md and "FAILED" not in md


def test_the_figures_hold_every_number_with_its_interval(mini_run):
    fig = mini_run["figures"]
    main = pool(fig, MAIN)
    for side in (fig["before"]["core"], fig["before"]["lexical"], main["core"], main["lexical"]):
        for metric in fig["metrics"]:
            assert {"n", "mean", "lo", "hi"} <= set(side[metric])
            assert side[metric]["lo"] <= side[metric]["mean"] <= side[metric]["hi"]
    for metric in fig["metrics"]:
        for compared in (main["before_vs_after"], main["lexical_vs_core"], fig["before"]["lexical_vs_core"]):
            assert {"diff", "lo", "hi", "mde", "n", "verdict"} <= set(compared[metric])
        assert fig["before"]["truth_core"][metric] is not None
        assert {"diff", "lo", "hi", "mde", "n", "verdict"} <= set(fig["before"]["truth_lexical_vs_core"][metric])
    assert [c for c in fig["checks"] if not c["ok"]] == []


def test_the_log_and_golden_set_are_what_the_files_imply(mini_run):
    fig = mini_run["figures"]
    relevant = relevant_by_query()
    codes = cranqrel_codes()
    helped = sum(len(SERVED[q] & relevant[q]) for q in SERVED)
    wrong = sum(codes.get((q, d)) == -1 for q in SERVED for d in SERVED[q])
    golden = [q for q in SERVED if SERVED[q] & relevant[q]]
    assert (helped, wrong, golden) == (7, 2, [1, 2, 3])
    assert fig["log"]["helped"] == helped and fig["log"]["wrong"] == wrong
    assert fig["log"]["noise"] == sum(len(s) for s in SERVED.values()) - helped - wrong == 1
    c = fig["collection"]
    assert c["golden_queries"] == len(golden)
    assert c["dropped_no_positive"] == 1 and c["relevant_of_dropped_queries"] == len(relevant[4]) == 2
    assert c["relevant_of_golden_queries"] == sum(len(relevant[q]) for q in golden) == 9
    assert c["log_unlogged_relevant"] == 9 - helped == 2


@pytest.mark.parametrize(
    "name, found",
    [
        ("lexical@5", 0),
        ("lexical@10", 0),  # the lexical ranker never returns docs 3 and 6
        ("dense@5", 2),
        ("dense@10", 2),
        ("lexical+dense+core@5", 2),
        (MAIN, 2),
    ],
)
def test_relevant_found_counts_match_the_mini_collection(mini_run, name, found):
    relevant = relevant_by_query()
    unlogged = {(q, d) for q in (1, 2, 3) for d in relevant[q] - SERVED[q]}
    assert unlogged == {(1, 3), (2, 6)}
    p = pool(mini_run["figures"], name)
    assert p["relevant_found"] == found
    assert p["relevant_found_grade2"] == found  # docs 3 and 6 are codes 1 and 2: grade 2
    assert p["relevant_labelled"] == 7 + found
    if name.startswith("lexical@"):
        assert p["queued"] == 0 and p["judgments_per_relevant"] is None
    else:
        assert p["judgments_per_relevant"] == p["queued"] / found


def test_the_annotator_labels_exactly_the_unlogged_relevant_pairs_relevant(mini_run):
    files = list((mini_run["work"] / "pools").glob("lexical-dense-core-d10/home/labels/dt=*/*.jsonl"))
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    main = pool(mini_run["figures"], MAIN)
    assert len(lines) == main["queued"] == main["build"]["n_human_labels"]
    relevant = {(x["query_id"], x["doc_id"]) for x in lines if x["label"] != "irrelevant"}
    assert relevant == {(query_id(QUERY_TEXT[1]), "cran-0003"), (query_id(QUERY_TEXT[2]), "cran-0006")}
    assert main["build"]["human_relevant"] == 2 and main["n_queries"] == 3


def test_recall_against_the_one_ranker_pool_is_optimistic(mini_run):
    fig = mini_run["figures"]
    main = pool(fig, MAIN)
    assert fig["before"]["lexical"]["recall@5"]["mean"] == 1.0
    assert main["lexical"]["recall@5"]["mean"] == pytest.approx(7 / 9)
    assert fig["before"]["truth_lexical"]["recall@5"] == pytest.approx(7 / 9, abs=5e-5)
    # The grown pool holds every relevant document of the golden queries: recall now is Cranfield's.
    assert main["core"]["recall@5"]["mean"] == pytest.approx(fig["before"]["truth_core"]["recall@5"], abs=5e-5)
    truth_diff = fig["before"]["truth_lexical_vs_core"]["recall@5"]["diff"]
    assert truth_diff == pytest.approx(fig["before"]["truth_core"]["recall@5"] - 7 / 9, abs=5e-5)
