"""The scale benchmark's tiny mode runs end to end and prints every figure (no time is asserted).

Under the `ci` and `dev` Hypothesis profiles the tiny run leaves out the staged builds
(`--no-staged`): they were 24 of its 67 s (each staged build starts a Python per worker), and
tests/test_staging.py already holds a staged build equal to a direct one. The `thorough` profile
(`make test-thorough`) runs them as well.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import thorough

ROOT = Path(__file__).resolve().parents[1]
NUMBER = r"[0-9][0-9,]*(\.[0-9]+)?"
# Every line the benchmark prints, with the figures it must carry.
STAGED = ("staged 1", "staged 2", "staged speed-up")
FIGURES = {
    "served items": rf"served items +{NUMBER} \({NUMBER} serves x 5, 3 days, {NUMBER} GB of logs",
    "script": rf"baseline SQL script +{NUMBER} s +peak RSS +{NUMBER} GB",
    "script, bounded": rf"script, 2 GiB limit +{NUMBER} s +peak RSS +{NUMBER} GB +full build / this {NUMBER}",
    "full": rf"full build +{NUMBER} s +peak RSS +{NUMBER} GB +ratio to script {NUMBER}",
    "staged 1": rf"full, staged x1 proc +{NUMBER} s +peak RSS +{NUMBER} GB +ratio to script {NUMBER}, to direct {NUMBER}",
    "staged 2": rf"full, staged x2 proc +{NUMBER} s +peak RSS +{NUMBER} GB +ratio to script {NUMBER}, to direct {NUMBER}",
    "staged speed-up": rf"staged speed-up 2 procs +{NUMBER}x over 1 process",
    "unchanged": rf"unchanged rebuild +{NUMBER} s +peak RSS +{NUMBER} GB +{NUMBER}% of full",
    "nightly": rf"nightly on +3 days +{NUMBER} s +peak RSS +{NUMBER} GB +{NUMBER}% of full +\(median of 2: {NUMBER}, {NUMBER} s\)",
    "backfill": rf"backfill to +6 days +{NUMBER} s +peak RSS +{NUMBER} GB",
    "nightly on history": rf"nightly on +6 days +{NUMBER} s +peak RSS +{NUMBER} GB +ratio to nightly on 3 days {NUMBER}"
    rf" +\(median of 2: {NUMBER}, {NUMBER} s\)",
    "cost per item": rf"cost per served item +full build {NUMBER} us, script {NUMBER} us",
    "labels": rf"golden set labels +build {NUMBER}, script {NUMBER}",
    "fresh": r"nightly equals a fresh full build of the same logs: yes",
}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/time").exists(), reason="needs /usr/bin/time (Debian's `time` package)")
def test_tiny_benchmark_prints_every_figure(tmp_path):
    work, figures = tmp_path / "bench", tmp_path / "figures.json"
    staged = thorough()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "pipeline_scale.py"),
            "--tiny",
            "--staged" if staged else "--no-staged",
            "--workdir",
            str(work),
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        # A guard against a hang, not a time bound: about 11 builds (9 without the staged ones),
        # each a process paying Python's and Dagster's start-up (the data is tiny), took 100 s
        # alone and over 900 s on two cores shared with five other jobs.
        timeout=2400,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = {name: pattern for name, pattern in FIGURES.items() if staged or name not in STAGED}
    missing = [name for name, pattern in expected.items() if not re.search(pattern, proc.stdout)]
    assert not missing, f"figures missing: {missing}\n{proc.stdout}"
    assert staged or "staged" not in proc.stdout
    result = json.loads(figures.read_text())
    assert set(result["runs"]) == {
        "script",
        "script_bounded",
        "full",
        *(("staged_1", "staged_2") if staged else ()),
        "unchanged",
        "nightly",
        "backfill",
        "nightly_history",
    }
    assert all(r["seconds"] > 0 and r["peak_rss_bytes"] > 0 for r in result["runs"].values())
    # Each nightly ran twice from the same warehouse (restored between runs); the figure is the
    # middle run (of two, the slower).
    for name in ("nightly", "nightly_history"):
        repeats = result["runs"][name]["repeats"]
        assert len(repeats) == 2 and result["runs"][name]["seconds"] == sorted(repeats)[1]
    assert result["labels"] > 0 and result["script_labels"] > 0
    # Staged ingestion publishes the same golden set as direct ingestion.
    assert result["staged_labels"] == ({"1": result["labels"], "2": result["labels"]} if staged else {})
    # The nightlies (folded or recomputed) publish what one full build of the same logs does.
    assert result["nightly_equals_fresh"] is True
    assert not work.exists(), "the generated data is deleted unless --keep"


def test_the_baseline_script_is_the_four_filters_over_read_json():
    sql = (ROOT / "benchmarks" / "baseline.sql").read_text()
    assert "read_json(getvariable('logs')" in sql
    for step in ("judged", "always_served", "retired", "repeats", "no_positive"):
        assert f"('{step}'" in sql


@pytest.mark.slow
def test_statement_times_prints_each_statement_of_an_ingestion(tmp_path):
    from tests.helpers import write_one_serve

    logs = tmp_path / "logs"
    write_one_serve(logs, "d1", "fix it", "2026-11-01T09:05:00Z")
    script = str(ROOT / "benchmarks" / "statement_times.py")
    out = subprocess.run(
        [sys.executable, script, "ingest", str(logs), "--top", "50"], capture_output=True, text=True, check=True
    ).stdout
    assert re.match(rf"ingest {NUMBER} s, close {NUMBER} s, SQL {NUMBER} s\n", out)
    assert re.search(rf"\n +{NUMBER} s +x1 +CREATE OR REPLACE TEMP TABLE _p AS ", out)
    assert re.search(rf"\n +{NUMBER} s +x1 +INSERT INTO log_serves BY NAME", out)


@pytest.mark.slow
def test_ppi_simulation_runs_on_the_mini_collection_and_agrees_with_the_library(tmp_path):
    # The script checks its vectorised estimator against goldenset.bench.ppi on the first audit of
    # every setting and raises when they differ; on the four-query mini collection it audits 3.
    out = tmp_path / "ppi.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ppi_simulation.py"), "--samples", "50", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["queries"] == 4 and {r["n"] for r in result["results"]} == {3}
    assert [r["judge"] for r in result["results"]] == [
        "simulated kappa 0.3",
        "simulated kappa 0.5",
        "simulated kappa 0.7",
        "simulated, wrong on 30% of pairs",
        "dense score >= calibrated cut",
        "bm25 score >= calibrated cut",
    ]
    assert "| judge | kappa | rho | floor | n | coverage human |" in proc.stdout
    assert "**Active against uniform audits at the same expected budget (PPI++)**" in proc.stdout
    # Every part of every row carries the judge's correlation and its floor, sqrt(1 - rho^2).
    for r in result["results"]:
        for part in ("mean", "difference"):
            m = r[part]
            if m["correlation"] is not None:
                assert m["width_bound"] == pytest.approx((1 - m["correlation"] ** 2) ** 0.5)
            # The active audit drew about n queries on average (Poisson sampling: n expected).
            assert 0 < m["active"]["drawn_mean"] <= 4
