"""The README's first command: the demo runs the whole labelling loop and the calibration case.

The demo runs once for the module (it embeds the corpus with the real model); each test
reads what it left: its printed steps, the files under its home and the warehouse.
Expected values come from the files and from the model directly, not from the demo code.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

from goldenset.settings import VARIABLES
from goldenset_dagster.cli import main
from tests.helpers import DEMO_OUTPUT, demo_world

# Every test here reads a world or a study run built once per module: seconds before the first.
pytestmark = pytest.mark.slow

CASE_QUESTION = "How many days does a customer have to request a refund?"
STALE = "policies/refunds-2022.md"
IN_FORCE = "policies/refunds-current.md"
LABEL_REASONS = {
    "invalid_json",
    "unknown_event",
    "missing_field",
    "invalid_field",
    "label_contradicts_rubric",
    "unknown_document_version",
}
# Every path setting's variable (the demo scopes them; none may be left set after it).
PATH_VARIABLES = tuple(v.env for v in VARIABLES if v.kind == "path")


def query_id(project: str, task: str) -> str:
    """The contract's query_id, computed here from its definition."""
    norm = " ".join(unicodedata.normalize("NFKC", task).casefold().split())
    return hashlib.sha256(f"{project}\x1f{norm}".encode()).hexdigest()[:16]


CASE = query_id("support", CASE_QUESTION)
# The question whose only helped the agent takes back after the people labelled its page (goldenset/demo/flipped.py).
FLIPPED_QUESTION = "Does a cancelled plan stay active until the end of the billing period?"
FLIPPED = query_id("support", FLIPPED_QUESTION)
CANCELLATIONS = "policies/cancellations.md"


@dataclass(frozen=True)
class Ran:
    """What the demo left: its exit code, what it printed, its home, and the home it was not given."""

    exit_code: int
    out: str
    root: Path
    elsewhere: Path
    env_after: dict[str, str]

    def con(self) -> duckdb.DuckDBPyConnection:
        return duckdb.connect(str(self.root / "goldenset.duckdb"), read_only=True)

    def label_file(self, annotator: str) -> Path:
        (path,) = self.root.glob(f"labels/dt=*/{annotator}.jsonl")
        return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[Ran]:
    """The demo run once with --dir, while GOLDENSET_HOME points somewhere else (tests.helpers.demo_world,
    made once per test run and shared with tests/test_docs_blocks.py)."""
    base = demo_world(tmp_path_factory)
    ran = json.loads((base / DEMO_OUTPUT).read_text())
    yield Ran(ran["exit_code"], ran["out"], base / "demo-home", base / "elsewhere", ran["env_after"])


def _shown_commands(out: str) -> list[str]:
    return [line.split("   #")[0].strip() for line in out.splitlines() if line.startswith("$ ")]


def test_the_demo_prints_every_step_as_the_command_a_user_runs(demo):
    assert demo.exit_code == 0
    shown = _shown_commands(demo.out)
    root = str(demo.root)
    assert shown == [
        f"$ goldenset rubric check {root}/rubrics",
        shown[1],  # the packaged open rubric, wherever the package is installed
        "$ goldenset build",
        "$ cp corpus-v2.jsonl corpus.jsonl",
        "$ goldenset build --trigger reindex",
        "$ goldenset pool",
        f"$ goldenset pool export --out {root}/queue.jsonl",
        f"$ cp late-verdicts.jsonl logs/{demo.label_file('ana').parent.name}/part-0003.jsonl",  # the demo's day
        "$ goldenset build",
        "$ goldenset rejects --file 'labels/*' --width 40",
        f"$ goldenset explain --task '{FLIPPED_QUESTION}' --project support",
        "$ goldenset labels agreement",
        "$ goldenset bench run",
        "$ goldenset calibrate --scorer dense",
    ]
    assert shown[1].startswith("$ goldenset rubric check ") and shown[1].endswith("/goldenset/data/open-rubric.yaml")


def test_the_closed_rubric_passes_the_check_and_the_open_one_lists_its_fall_throughs_and_collision(demo):
    out = demo.out
    closed = out.index(f"$ goldenset rubric check {demo.root}/rubrics")
    opened = out.index("open-rubric.yaml", closed)
    # python-stdlib: 3 dimensions, 3 labels; support-policies: 5 dimensions, 3 labels.
    assert "  closed: 8 assignments, 3 labels\n" in out[closed:opened]
    assert "  closed: 32 assignments, 3 labels\n" in out[closed:opened]
    # Worked out by hand from open-rubric.yaml (answerability, authority, recency, coverage), in binary order.
    after = out[opened:].splitlines()[1:4]
    assert after == [
        "fail: [recency, coverage] -> partial, outdated",
        "fail: [authority] -> no label",
        "fail: [authority, coverage] -> no label",
    ]
    assert sorted(p.name for p in (demo.root / "rubrics").iterdir()) == ["python-stdlib.yaml", "support-policies.yaml"]


def test_the_demo_ships_a_rubric_for_each_of_its_projects_and_each_pair_is_exported_under_its_own(demo):
    import yaml

    claimed = {}
    for path in sorted((demo.root / "rubrics").iterdir()):
        rubric = yaml.safe_load(path.read_text(encoding="utf-8"))
        claimed.update(dict.fromkeys(rubric["projects"], rubric["name"]))
    stdlib = {"data-tools", "web-api", "cli-kit", "ops-runbooks"}
    assert claimed == dict.fromkeys(stdlib, "python-stdlib") | {"support": "support-policies"}
    with demo.con() as con:
        projects = {p for (p,) in con.execute("SELECT DISTINCT project FROM golden_set").fetchall()}
    assert projects == set(claimed)
    tasks = [json.loads(line) for line in (demo.root / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {t["project"] for t in tasks} == projects  # every project's pairs were queued
    for t in tasks:
        assert t["rubric"]["name"] == claimed[t["project"]], t["query_id"]
    # The stdlib pairs carry the stdlib rubric's tests, not support's `authority`.
    first = next(t for t in tasks if t["project"] in stdlib)
    assert [d["name"] for d in first["rubric"]["dimensions"]] == ["answerability", "api_match", "coverage"]


def test_builds_are_manual_then_reindex_then_the_build_that_merges_the_labels(demo):
    with demo.con() as con:
        assert con.execute("SELECT trigger FROM golden_builds ORDER BY build_id").fetchall() == [
            ("manual",),
            ("reindex",),
            ("manual",),
        ]
    # The demo prints the command that records what each build records (a plain
    # `goldenset build` records manual), then the trigger the build recorded.
    printed = demo.out.splitlines()
    builds = [i for i, line in enumerate(printed) if line.startswith("$ goldenset build")]
    assert [printed[i].split("#")[0].strip() for i in builds] == [
        "$ goldenset build",
        "$ goldenset build --trigger reindex",
        "$ goldenset build",
    ]
    assert [printed[i + 1].split(":")[0] for i in builds] == [
        "build 1 (manual)",
        "build 2 (reindex)",
        "build 3 (manual)",
    ]
    with demo.con() as con:
        ((queries, helped),) = con.execute(
            "SELECT n_queries, n_helped FROM golden_builds WHERE build_id = 2"
        ).fetchall()
        assert queries > 20 and helped > 0
        reasons = {r for (r,) in con.execute("SELECT DISTINCT reason FROM relabel_queue").fetchall()}
        assert reasons == {"superseded", "version_changed"}
        changes = {c for (c,) in con.execute("SELECT DISTINCT change FROM label_changes WHERE to_build = 2").fetchall()}
        assert "removed" in changes and "stale_changed" in changes
        reasons = {r for (r,) in con.execute("SELECT DISTINCT reason FROM rejected_records").fetchall()}
        assert {"invalid_json", "conflicting_duplicate_serve"} <= reasons


def test_the_pool_queues_stale_successor_and_pooled_pairs_and_the_export_holds_them(demo):
    with demo.con() as con:
        (report,) = con.execute("SELECT report FROM pool_runs WHERE pool_id = 1 AND build_id = 2").fetchone()
        # One pool, for build 2; the build that merged the labels does not pool again.
        assert con.execute("SELECT build_id FROM pool_runs ORDER BY pool_id").fetchall() == [(2,)]
    queue = json.loads(report)["queue"]
    assert queue["stale"] > 0 and queue["successor"] > 0 and queue["pooled"] > 0
    exported = [json.loads(line) for line in (demo.root / "queue.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(exported) == queue["total"]
    assert [t["priority"] for t in exported] == list(range(1, len(exported) + 1))
    reasons = "".join({"stale": "t", "successor": "s", "pooled": "p"}[t["reason"]] for t in exported)
    # Stale, the successors of documents judged relevant, pooled, then the other successors (7.4).
    assert re.fullmatch("t+s*p+s*", reasons), reasons
    late = [(t["query_id"], t["doc_id"]) for t in exported[reasons.rindex("p") + 1 :]]
    with demo.con() as con:
        for query, successor in late:  # what each replaces has no relevant label in build 2 for the query
            relevant = con.execute(
                "SELECT count(*) FROM golden_set_by_build g JOIN corpus_documents d ON d.doc_id = g.doc_id "
                "WHERE g.build_id = 2 AND g.query_id = ? AND g.relevance = 1 AND d.superseded_by = ?",
                [query, successor],
            ).fetchone()[0]
            assert relevant == 0, (query, successor)
    # The page in force replaced the one the agents judged: queued as its successor.
    assert {(t["query_id"], t["doc_id"], t["reason"]) for t in exported} >= {(CASE, IN_FORCE, "successor")}
    assert f"wrote {len(exported)} tasks to {demo.root}/queue.jsonl" in demo.out


def _valid_lines(path: Path, rejected: set[int]) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(text) for n, text in enumerate(lines, start=1) if n not in rejected]


def test_two_annotators_write_label_lines_and_the_bad_ones_are_rejected_with_their_reasons(demo):
    ana, ben = demo.label_file("ana"), demo.label_file("ben")
    assert ana.parent == ben.parent and ana.parent.name == f"dt={datetime.now(UTC).date().isoformat()}"
    with demo.con() as con:
        rows = con.execute(
            "SELECT source_file, line, reason, raw FROM rejected_records "
            "WHERE source_file LIKE 'labels/%' ORDER BY line"
        ).fetchall()
    ben_lines = ben.read_text(encoding="utf-8").splitlines()
    assert sorted(r[2] for r in rows) == sorted(LABEL_REASONS)  # one of each, nothing else
    for source_file, line, _, raw in rows:
        assert source_file == f"labels/{ben.parent.name}/ben.jsonl"
        assert raw == ben_lines[line - 1]
    good_ana = _valid_lines(ana, set())
    good_ben = _valid_lines(ben, {r[1] for r in rows})
    # They answered queued pairs of every reason, at the version the queue asked for.
    queued = {
        (t["query_id"], t["doc_id"], t["doc_version"]): t["reason"]
        for t in map(json.loads, (demo.root / "queue.jsonl").read_text(encoding="utf-8").splitlines())
    }
    answered = {queued.get((x["query_id"], x["doc_id"], x["doc_version"])) for x in good_ana}
    assert {"stale", "successor", "pooled"} <= answered
    assert len(good_ana) > len(good_ben) > 10
    assert {line["annotator"] for line in good_ana} == {"ana"} and {line["annotator"] for line in good_ben} == {"ben"}
    assert all(line["rubric"] == "support-policies" and line["event"] == "label" for line in good_ana + good_ben)


def test_human_labels_join_the_golden_set_and_overrule_the_agents_on_the_superseded_page(demo):
    pairs = {(line["query_id"], line["doc_id"]) for line in _valid_lines(demo.label_file("ana"), set())}
    with demo.con() as con:
        (n_human,) = con.execute("SELECT n_human_labels FROM golden_builds WHERE build_id = 3").fetchone()
        human = {
            (q, d): rest
            for q, d, *rest in con.execute(
                "SELECT query_id, doc_id, label, grade, decided_by, stale_reason FROM golden_set WHERE source = 'human'"
            ).fetchall()
        }
        history = con.execute(
            "SELECT source, valid_from_build FROM label_history WHERE query_id = ? AND doc_id = ? "
            "ORDER BY valid_from_build",
            [CASE, STALE],
        ).fetchall()
    # ben labelled a subset of ana's pairs, so ana's pairs are every labelled pair.
    assert n_human == len(human) == len(pairs) and set(human) == pairs
    assert human[(CASE, STALE)] == ["irrelevant", 0, "recency", "superseded"]
    assert human[(CASE, IN_FORCE)][:2] == ["relevant", 2]
    assert [s for s, _ in history][0] == "log" and history[-1] == ("human", 3)


def _kappa(a: list[str], b: list[str]) -> tuple[Fraction, Fraction, Fraction]:
    n = len(a)
    po = Fraction(sum(x == y for x, y in zip(a, b, strict=True)), n)
    pe = sum(Fraction(a.count(k), n) * Fraction(b.count(k), n) for k in set(a) | set(b))
    return po, pe, (po - pe) / (1 - pe)


def test_agreement_prints_the_kappa_of_the_two_label_files(demo):
    with demo.con() as con:
        rejected = {
            n for (n,) in con.execute("SELECT line FROM rejected_records WHERE source_file LIKE 'labels/%'").fetchall()
        }
    ana = {
        (x["query_id"], x["doc_id"], x["doc_version"]): x["label"] for x in _valid_lines(demo.label_file("ana"), set())
    }
    ben = {
        (x["query_id"], x["doc_id"], x["doc_version"]): x["label"]
        for x in _valid_lines(demo.label_file("ben"), rejected)
    }
    shared = sorted(ana.keys() & ben.keys())
    po, pe, kappa = _kappa([ana[k] for k in shared], [ben[k] for k in shared])
    assert 0 < kappa < 1, "the annotators disagree on some pairs, not all"
    row = re.search(r"ana\s*│\s*ben\s*│\s*(\d+)\s*│\s*([\d.]+)\s*│\s*([\d.]+)\s*│\s*(-?[\d.]+)", demo.out)
    assert row is not None
    assert int(row[1]) == len(shared)
    assert [float(row[i]) for i in (2, 3, 4)] == pytest.approx([float(po), float(pe), float(kappa)], abs=6e-5)
    assert "pair(s) annotators disagree on" in demo.out


def test_a_benchmark_run_is_stored_on_the_grown_golden_set(demo):
    with demo.con() as con:
        runs = con.execute("SELECT run_id, build_id FROM benchmark_runs").fetchall()
    assert len(runs) == 1 and runs[0][1] == 3
    assert f"run_id: {runs[0][0]}" in demo.out


def test_calibration_scores_the_superseded_page_above_the_page_in_force_under_dense(demo, minilm):
    shown = re.search(
        rf"the superseded page {STALE} scores ([\d.]+) and the page in force {IN_FORCE} ([\d.]+)", demo.out
    )
    assert shown is not None
    stale, in_force = float(shown[1]), float(shown[2])
    assert stale > in_force
    # The same cosines from the packaged model directly, over the texts the corpus holds.
    corpus = {r["doc_id"]: r for r in map(json.loads, (demo.root / "corpus.jsonl").read_text("utf-8").splitlines())}
    q, s, f = minilm.encode([CASE_QUESTION, corpus[STALE]["text"], corpus[IN_FORCE]["text"]], normalize_embeddings=True)
    assert (stale, in_force) == pytest.approx((float(q @ s), float(q @ f)), abs=6e-5)
    # Whatever cutoff calibrate chose, it cannot pass the page in force and fail the superseded one.
    single = re.search(r"single cutoff (\S+):", demo.out)
    assert single is not None
    cutoff = None if single[1] == "none" else float(single[1])
    assert not (cutoff is not None and in_force >= cutoff > stale)
    assert list((demo.root / "reports" / "calibration").glob("dense-human-build3-*.png"))


def test_the_demo_home_holds_everything_and_answers_status_afterwards(demo, monkeypatch, capsys):
    assert not demo.elsewhere.exists(), "nothing goes to the GOLDENSET_HOME the demo was not given"
    assert (demo.root / "dagster" / "dagster.yaml").is_file()
    monkeypatch.setenv("GOLDENSET_HOME", str(demo.root))
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "golden set: build 3" in capsys.readouterr().out


def test_the_demo_leaves_the_environment_as_it_found_it(demo):
    assert demo.env_after.get("GOLDENSET_HOME") == str(demo.elsewhere)
    assert not set(demo.env_after) & set(PATH_VARIABLES)


def test_the_demo_refuses_to_replace_a_warehouse_it_did_not_make(tmp_path, capsys):
    (tmp_path / "goldenset.duckdb").write_bytes(b"someone's real warehouse")
    assert main(["demo", "--dir", str(tmp_path)]) == 1
    assert "was not made by the demo" in capsys.readouterr().err
    assert (tmp_path / "goldenset.duckdb").read_bytes() == b"someone's real warehouse"


def test_the_benchmark_says_once_per_cut_off_when_its_top_k_is_partly_unjudged(demo):
    # judged@k recomputed here in SQL from the stored ranking and the golden set: per query the
    # top k's documents with a golden row over min(k, documents returned), averaged.
    with demo.con() as con:
        (run_id,) = con.execute("SELECT run_id FROM benchmark_runs").fetchone()
        coverage = {
            k: con.execute(
                "SELECT avg(judged / n) FROM (SELECT r.query_id, count(g.doc_id) AS judged, count(*) AS n "
                "FROM benchmark_rankings r LEFT JOIN (SELECT DISTINCT query_id, doc_id FROM golden_set) g "
                "ON g.query_id = r.query_id AND g.doc_id = r.doc_id WHERE r.run_id = ? AND r.rank <= ? "
                "GROUP BY r.query_id)",
                [run_id, k],
            ).fetchone()[0]
            for k in (5, 24)
        }
    below = [k for k, c in coverage.items() if c < 0.8]
    assert below, f"the demo's data should show the warning once: coverage {coverage}"
    for k in below:
        line = (
            f"BIASED: run {run_id}'s top {k} is {coverage[k]:.0%} judged, below the floor of 80%; "
            "its unjudged documents count as misses."
        )
        assert demo.out.count(line) == 1
    assert demo.out.count("BIASED: ") == len(below)
    with demo.con() as con:
        (queries,) = con.execute(
            "SELECT count(DISTINCT query_id) FROM benchmark_rankings WHERE run_id = ?", [run_id]
        ).fetchone()
    # The budget: the fewest labels that lift each flagged k to the floor, (0.80 - c) x queries x k up.
    budget = max(math.ceil(round((0.8 - coverage[k]) * queries * k, 6)) for k in below)
    command = f"goldenset pool --from-run {run_id} --depth {max(below)} --budget {budget}"
    assert demo.out.count(f"To close it: `{command}` (it queues at most {budget} pooled pairs: ") == 1


def test_the_demo_records_each_command_once_as_a_run_of_its_job(demo):
    """One run per command, one materialization per change, the checks once per run (the UI walk found two of each)."""
    import dagster as dg

    from goldenset.checks import CHECKS

    with dg.DagsterInstance.from_config(str(demo.root / "dagster")) as instance:
        runs = list(reversed(instance.get_runs()))
        assert [(r.job_name, r.status.value, r.tags["goldenset/trigger"]) for r in runs] == [
            ("refresh_golden_set", "SUCCESS", "cli"),  # build
            ("rebuild_golden_set", "SUCCESS", "cli"),  # the reindex: no log file to read
            ("pool_labelling_queue", "SUCCESS", "cli"),
            ("refresh_golden_set", "SUCCESS", "cli"),  # the labels merge
            ("retrieval_benchmark_job", "SUCCESS", "cli"),
        ]
        assert all(r.remote_job_origin is not None for r in runs)  # on the Overview timeline

        def in_runs(key: str) -> list[str]:
            return [r.run_id for r in instance.fetch_materializations(dg.AssetKey(key), limit=50).records]

        builds = [r.run_id for r in runs if r.job_name.endswith("golden_set")]
        assert sorted(in_runs("golden_set")) == sorted(builds)
        assert in_runs("labelling_queue") == [runs[2].run_id] and in_runs("retrieval_benchmark") == [runs[4].run_id]
        for asset, checks, run_ids in (
            ("golden_set", [c.name for c in CHECKS] + ["judge_health"], builds),
            ("retrieval_benchmark", ["golden_set_fresh", "retrieval_components_up"], [runs[4].run_id]),
        ):
            for check in checks:
                history = instance.event_log_storage.get_asset_check_execution_history(
                    dg.AssetCheckKey(dg.AssetKey(asset), check), limit=50
                )
                assert sorted(h.run_id for h in history) == sorted(run_ids), check
        # The corpus as each build read it: the reindex is the second fingerprint.
        seen = [
            r.asset_observation.metadata["fingerprint"].value
            for r in reversed(instance.fetch_observations(dg.AssetKey("corpus_file"), limit=10).records)
        ]
    assert len(seen) == 3 and seen[0] != seen[1] == seen[2]


def _utc(ts: str) -> str:
    return datetime.fromisoformat(ts).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _log_records(root: Path) -> list[dict]:
    """The parseable lines of every plain log file (the malformed ones skipped; no gzip replica holds the story)."""
    out = []
    for path in sorted(root.glob("logs/dt=*/*.jsonl")):
        for text in path.read_text(encoding="utf-8-sig").splitlines():
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
    return out


def test_the_query_whose_only_helped_the_agent_took_back_stays_by_the_peoples_label(demo):
    import yaml

    # The logs: one serve asked the question; the agent marked the cancellation page helped (its only
    # helped), and the late file, now in the last day's folder, re-marks that item noise.
    records = _log_records(demo.root)
    (sid,) = [x["serve_id"] for x in records if x.get("event") == "serve" and x.get("task") == FLIPPED_QUESTION]
    verdicts = sorted(
        (_utc(x["ts"]), x["doc_id"], x["verdict"])
        for x in records
        if x.get("event") == "verdict" and x.get("serve_id") == sid
    )
    (late_file,) = demo.root.glob("logs/dt=*/part-0003.jsonl")
    (late,) = [json.loads(t) for t in late_file.read_text(encoding="utf-8").splitlines()]
    assert late["serve_id"] == sid and (late["doc_id"], late["verdict"]) == (CANCELLATIONS, "noise")
    on_page = [(ts, v) for ts, d, v in verdicts if d == CANCELLATIONS]
    assert [v for _, v in on_page] == ["helped", "noise"] and on_page[-1][0] == _utc(late["ts"])
    assert [d for _, d, v in verdicts if v == "helped"] == [CANCELLATIONS]  # the only helped, now taken back
    # The people: both annotators labelled the page relevant at v2, the version the corpus holds now.
    corpus = {r["doc_id"]: r for r in map(json.loads, (demo.root / "corpus.jsonl").read_text("utf-8").splitlines())}
    assert corpus[CANCELLATIONS]["version"] == "v2"
    with demo.con() as con:
        rejected = {
            n for (n,) in con.execute("SELECT line FROM rejected_records WHERE source_file LIKE 'labels/%'").fetchall()
        }
    said = {
        x["annotator"]: (x["label"], x["doc_version"])
        for name, bad in (("ana", set()), ("ben", rejected))  # only ben's file holds bad lines
        for x in _valid_lines(demo.label_file(name), bad)
        if x.get("query_id") == FLIPPED and x.get("doc_id") == CANCELLATIONS
    }
    assert said == {"ana": ("relevant", "v2"), "ben": ("relevant", "v2")}
    rubric = yaml.safe_load((demo.root / "rubrics" / "support-policies.yaml").read_text(encoding="utf-8"))
    grade = rubric["labels"]["relevant"]["grade"]
    assert grade >= 1
    # So no helped is left and a human positive is (contract 3, filter 4, v5): builds 1 and 2 kept
    # the query by the log's helped (stale at 2: the page moved to v2), build 3 by the people's label.
    with demo.con() as con:
        kept_by = con.execute("SELECT kept_by FROM golden_queries WHERE query_id = ?", [FLIPPED]).fetchall()
        history = con.execute(
            "SELECT valid_from_build, valid_to_build, source, verdict, label, doc_version, stale_reason "
            "FROM label_history WHERE query_id = ? AND doc_id = ? ORDER BY valid_from_build",
            [FLIPPED, CANCELLATIONS],
        ).fetchall()
    assert kept_by == [("human",)]
    assert history == [
        (1, 2, "log", "helped", None, "v1", None),
        (2, 3, "log", "helped", None, "v1", "version_changed"),
        (3, None, "human", None, "relevant", "v2", None),
    ]
    # And the demo's `explain` says so, one fact a line.
    start = demo.out.index(f"$ goldenset explain --task '{FLIPPED_QUESTION}'")
    told = demo.out[start : demo.out.index("== 6.", start)].splitlines()
    helped_at, noise_at = (ts for ts, _ in on_page)
    # The people's positives on the query, in doc_id order: which pairs the demo's annotators reach
    # depends on the queue's order (contract 7.4), so they are read here, not written out.
    with demo.con() as con:
        sql = "SELECT doc_id FROM golden_set WHERE query_id = ? AND source = 'human' AND grade >= 1 ORDER BY doc_id"
        positives = [d for (d,) in con.execute(sql, [FLIPPED]).fetchall()]
    assert CANCELLATIONS in positives
    for line in (
        f"query {FLIPPED} (support): {FLIPPED_QUESTION!r}",
        "in the golden set of build 3, kept by a human positive only",
        f"  {CANCELLATIONS}@v1 ranked #1: noise (verdicts: helped at {helped_at}, noise at {noise_at}) -> kept",
        f"filter no_positive: passed by a human positive only (no helped judgment left): {', '.join(positives)}",
        f"  human label {CANCELLATIONS}@v2 (current v2): relevant (grade {grade}, 2 annotator(s)): a human positive",
        f"change at build 3: {CANCELLATIONS} verdict_changed log:helped -> human:relevant",
    ):
        assert line in told, line
