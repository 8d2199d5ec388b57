"""The Dagster UI read in a real headless Chromium after command-line builds: what a person sees.

Two `goldenset build`s from the command line, then the webserver on the same instance (as
`dagster dev` in a deployment shares it) and Debian's Chromium: the job page lists the
command line's runs, the `rejected_share` check names its unit, and a log day's counts add up.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from goldenset_dagster.cli import main
from goldenset_dagster.instance import get_instance
from tests.helpers import browser_wait

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conformance"

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ui_after_builds(tmp_path, isolated_home):
    db = tmp_path / "g.duckdb"
    argv = ["build", "--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)]
    assert main(argv) == 0 and main(argv) == 0
    with get_instance() as instance:
        runs = [(r.job_name, r.run_id) for r in instance.get_runs()]
    env = {
        **os.environ,
        "DAGSTER_HOME": str(isolated_home / "dagster"),
        "GOLDENSET_HOME": str(isolated_home),
        "GOLDENSET_DB": str(db),
        "GOLDENSET_LOGS": str(DATA / "logs"),
        "GOLDENSET_CORPUS": str(DATA / "corpus.jsonl"),
        "HF_HUB_OFFLINE": "1",
    }
    port = _free_port()
    log = (tmp_path / "webserver.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (tmp_path / "webserver.log").read_text()[-2000:]
            try:
                urllib.request.urlopen(url + "/server_info", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the webserver did not answer within 180 s"
                time.sleep(1)
        yield url, runs
    finally:
        os.killpg(server.pid, 9)
        server.wait(30)
        log.close()


def _body(driver) -> str:
    return driver.execute_script("return document.body ? document.body.innerText : ''") or ""


def test_the_ui_lists_cli_runs_names_units_and_adds_up_counts(browser, ui_after_builds):  # noqa: F811
    url, runs = ui_after_builds
    # The first build ingests (refresh_golden_set); the second has no new file (rebuild_golden_set).
    assert [job for job, _ in sorted(runs, key=lambda r: r[0], reverse=True)] == [
        "refresh_golden_set",
        "rebuild_golden_set",
    ]

    # Each job's page lists its command-line run (it said it had never run), with the trigger tag.
    for job, run_id in runs:
        browser.get(url + f"/locations/goldenset/jobs/{job}/runs")
        browser_wait(browser, lambda d, run_id=run_id: run_id[:8] in _body(d), f"the CLI run on {job}'s page")
        assert "goldenset/trigger: manual" in _body(browser)
        assert "You have not materialized any assets with this job yet" not in _body(browser)
        assert "goldenset/pid" not in _body(browser) and "goldenset/host" not in _body(browser)

    # The rejected_share check: its share and threshold in one unit (fractions), named.
    browser.get(url + "/assets/golden_set?view=checks&checkDetail=rejected_share")
    browser_wait(browser, lambda d: "block_above" in _body(d), "the check's metadata")
    assert "rejected_share" in _body(browser) and "_pct" not in _body(browser)

    # A log day: 13 lines = 2 serves + 8 verdicts + 2 rejected + 1 blank (the conformance README).
    browser.get(url + "/assets/serve_log?view=partitions&partition=2026-11-01")
    browser_wait(browser, lambda d: "blank_lines" in _body(d), "the partition's metadata")
    assert "2 of 2 lines rejected at ingest" in _body(browser)
