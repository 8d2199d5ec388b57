"""The Dagster UI read in a real headless Chromium after command-line runs: what a person sees.

Two `goldenset build`s and a `labels import` from the command line, then `dagster dev` (the
webserver and the daemon) on the same instance, as a deployment shares it, once for the
module, and Debian's Chromium: the command line's runs are on their job pages and the
Overview timeline, filtered by their trigger; a quiet run's output says so; golden_set shows
its owners, its freshness and metadata keys clear of their values; the corpus shows its
observations; and a full refresh is one click, Launch Run on refresh_now's Launchpad (its time,
click to success, is printed). With GOLDENSET_SCREENSHOTS=FOLDER the screens the UI guide shows
are written there (`GOLDENSET_SCREENSHOTS=docs/images/dagster-ui`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import browser_wait, isolated_settings

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conformance"
SHOTS = os.environ.get("GOLDENSET_SCREENSHOTS")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class UI:
    """`dagster dev` on the instance of the command-line runs: its address and those runs (job, run id)."""

    url: str
    runs: list[tuple[str, str]]

    def graphql(self, query: str) -> dict:
        request = urllib.request.Request(
            self.url + "/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
        )
        return json.loads(urllib.request.urlopen(request, timeout=60).read())["data"]


def _commands(root: Path) -> list[tuple[str, str]]:
    """Run the command line's part in this process; the runs it made."""
    from goldenset_dagster.cli import main
    from goldenset_dagster.instance import get_instance

    db = root / "g.duckdb"
    build = ["build", "--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)]
    assert main(build) == 0 and main(build) == 0
    rubric = ["--labels", str(root / "labels"), "--rubric", str(DATA / "rubric.yaml")]
    assert main(["labels", "import", str(DATA / "labels" / "dt=2026-11-03" / "part-0001.jsonl"), *rubric]) == 0
    with get_instance() as instance:
        return [(r.job_name, r.run_id) for r in instance.get_runs()]


@pytest.fixture(scope="module")
def ui(tmp_path_factory) -> Iterator[UI]:
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    root = tmp_path_factory.mktemp("ui")
    home = root / "goldenset-home"
    with isolated_settings(home), pytest.MonkeyPatch.context() as mp, set_defs_state_storage(None):
        mp.chdir(root)
        runs = _commands(root)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GOLDENSET_", "DAGSTER_"))},
        "DAGSTER_HOME": str(home / "dagster"),
        "GOLDENSET_HOME": str(home),
        "GOLDENSET_DB": str(root / "g.duckdb"),
        "GOLDENSET_LOGS": str(DATA / "logs"),
        "GOLDENSET_CORPUS": str(DATA / "corpus.jsonl"),
        "GOLDENSET_LABELS": str(root / "labels"),
        "GOLDENSET_RUBRIC": str(DATA / "rubric.yaml"),
        "HF_HUB_OFFLINE": "1",
        # The daemon evaluates freshness every 30 s by default: the test waits for its first word.
        "FRESHNESS_DAEMON_INTERVAL_SECONDS": "5",
    }
    port = _free_port()
    log = (root / "dev.log").open("w")
    dev = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # SIGINT at its default, as in a terminal (a run launched with `&` inherits it ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert dev.poll() is None, (root / "dev.log").read_text()[-2000:]
            try:
                urllib.request.urlopen(url + "/server_info", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "dagster dev did not answer within 300 s"
                time.sleep(1)
        yield UI(url, runs)
    finally:
        os.killpg(dev.pid, signal.SIGINT)
        try:
            dev.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
            dev.wait(30)
        log.close()


def _body(driver) -> str:
    return driver.execute_script("return document.body ? document.body.innerText : ''") or ""


def _open(driver, ui: UI, path: str, shown: str, what: str) -> str:
    """Open `path` (the community pop-up dismissed) and wait until `shown` is on the page."""
    driver.get(ui.url + "/server_info")
    driver.execute_script("window.localStorage.setItem('communityNux', JSON.stringify(true))")
    driver.get(ui.url + path)
    browser_wait(driver, lambda d: shown in _body(d), what)
    return _body(driver)


def _shot(driver, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        time.sleep(1)  # the last requests of the page settle
        driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def test_the_ui_lists_cli_runs_names_units_and_adds_up_counts(browser, ui):
    assert sorted(job for job, _ in ui.runs) == ["import_labels", "rebuild_golden_set", "refresh_golden_set"]
    # Each job's page lists its command-line run, with the trigger tag.
    for job, run_id in ui.runs:
        _open(browser, ui, f"/locations/goldenset/jobs/{job}/runs", run_id[:8], f"the CLI run on {job}'s page")
        assert "goldenset/trigger: cli" in _body(browser)
        assert "goldenset/pid" not in _body(browser) and "goldenset/host" not in _body(browser)

    # The rejected_share check: its share and threshold in one unit (fractions), named.
    _open(browser, ui, "/assets/golden_set?view=checks&checkDetail=rejected_share", "block_above", "the check")
    assert "rejected_share" in _body(browser) and "_pct" not in _body(browser)

    # A log day: 13 lines = 2 serves + 8 verdicts + 2 rejected + 1 blank (the conformance README).
    _open(browser, ui, "/assets/serve_log?view=partitions&partition=2026-11-01", "blank_lines", "the partition")
    assert "2 of 2 lines rejected at ingest" in _body(browser)


def test_every_command_run_is_on_the_overview_timeline_and_filtered_by_its_trigger(browser, ui):
    # The timeline's own query keeps runs with a repository origin (useRunsForTimeline).
    runs = ui.graphql(
        "{ runsOrError(filter: {statuses: [SUCCESS]}) { ... on Runs { results { runId jobName "
        "repositoryOrigin { repositoryName repositoryLocationName } startTime endTime } } } }"
    )["runsOrError"]["results"]
    listed = {r["runId"]: r for r in runs}
    for job, run_id in ui.runs:
        run = listed[run_id]
        assert run["repositoryOrigin"] == {"repositoryName": "__repository__", "repositoryLocationName": "goldenset"}
        assert run["startTime"] is not None and run["endTime"] is not None, job
    page = _open(browser, ui, "/overview/timeline", "refresh_golden_set", "the timeline's job rows")
    assert {"refresh_golden_set", "rebuild_golden_set", "import_labels"} <= set(page.split())
    if SHOTS:  # the last hour, where the runs are
        from selenium.webdriver.common.by import By

        next(b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == "1hr").click()
    _shot(browser, "overview-timeline")

    # The guide's link: the runs the command line started, "Launched by" its user.
    page = _open(browser, ui, "/runs?q[]=tag%3Agoldenset%2Ftrigger%3Dcli", "refresh_golden_set", "the filtered runs")
    for _, run_id in ui.runs:
        assert run_id[:8] in page
    assert page.count("user: cli:") == len(ui.runs)
    _shot(browser, "runs-by-trigger")


def test_a_quiet_runs_output_says_no_output_not_no_log_file(browser, ui):
    run_id = dict(ui.runs)["rebuild_golden_set"]
    events = ui.graphql(
        f'{{ logsForRun(runId: "{run_id}") {{ ... on EventConnection {{ events {{ __typename '
        "... on LogsCapturedEvent { fileKey } } } } }"
    )["logsForRun"]["events"]
    (file_key,) = [e["fileKey"] for e in events if e["__typename"] == "LogsCapturedEvent"]
    logs = ui.graphql(f'{{ capturedLogs(logKey: ["{run_id}", "compute_logs", "{file_key}"]) {{ stdout stderr }} }}')
    assert logs["capturedLogs"] == {
        "stdout": "no output: nothing was printed on stdout while the steps ran\n",
        "stderr": "no output: nothing was printed on stderr while the steps ran\n",
    }
    from selenium.webdriver.common.by import By

    _open(browser, ui, f"/runs/{run_id}?logFileKey={file_key}", "RUN_SUCCESS", "the run's events")
    for stream in ("stdout", "stderr"):
        next(b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == stream).click()
        browser_wait(browser, lambda d, s=stream: f"nothing was printed on {s}" in _body(d), f"the run's {stream}")
        assert "No log file available" not in _body(browser)


def test_golden_set_shows_its_owners_and_freshness_and_the_corpus_its_observations(browser, ui):
    # The daemon evaluates freshness every 5 s here (30 by default): wait for its first word.
    page = _open(browser, ui, "/assets/golden_set", "Owners", "the asset's definition")
    deadline = time.monotonic() + 180
    while "Passing" not in page:
        assert time.monotonic() < deadline, "no freshness state within 180 s"
        time.sleep(5)
        page = _open(browser, ui, "/assets/golden_set", "Owners", "the asset's definition")
    assert "goldenset" in page.split("Owners", 1)[1][:200] and "Freshness policy" in page
    _shot(browser, "golden-set-overview")
    page = _open(browser, ui, "/assets/corpus_file?view=events", "fingerprint", "the corpus's observations")
    assert "Observed in run" in page and "active_docs" in page
    _shot(browser, "corpus-file-observations")


@pytest.mark.parametrize("width", [1280, 800])
def test_no_metadata_key_runs_into_its_value(browser, ui, width):
    browser.set_window_size(width, 1000)
    _open(browser, ui, "/assets/golden_set?view=events", "corpus_active_docs", "the build's metadata")
    overflowing = browser.execute_script(
        """
        const out = [];
        for (const row of document.querySelectorAll('table tr')) {
          const cell = row.querySelector('td');
          if (cell && cell.scrollWidth > cell.clientWidth + 1) out.push(cell.innerText);
        }
        return out;
        """
    )
    assert overflowing == []


def _click(browser, text: str) -> None:
    """Click the enabled button showing `text`, found afresh each try: React may re-render it meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def clicked(d) -> bool:
        try:
            for b in d.find_elements(By.TAG_NAME, "button"):
                if text in (b.text or "") and b.is_enabled():
                    b.click()
                    return True
        except StaleElementReferenceException:
            pass
        return False

    browser_wait(browser, clicked, f"the button {text!r}, enabled")


def test_the_partitioned_refresh_asks_for_days_with_no_warning_first(browser, ui):
    # Materialize all on refresh_golden_set opens Dagster's dialog of days at once: no warning about an
    # upstream asset never materialized (trace_export feeds the log folder, not serve_log).
    _open(browser, ui, "/locations/goldenset/jobs/refresh_golden_set?default_range=*", "Materialize", "the job")
    _click(browser, "Materialize all")
    browser_wait(browser, lambda d: "Launch backfill" in _body(browser), "the backfill dialog")
    assert "have not been materialized" not in _body(browser)
    _shot(browser, "full-refresh-dialog")


def test_a_full_refresh_is_one_click_on_refresh_now(browser, ui):
    before = {r["runId"] for r in _runs(ui)}
    _open(browser, ui, "/locations/goldenset/jobs/refresh_now/playground", "Launch Run", "the Launchpad")
    _shot(browser, "refresh-now-launchpad")
    clicked, clicked_at = time.monotonic(), time.time()
    _click(browser, "Launch Run")  # the one click
    while True:
        new = [r for r in _runs(ui) if r["runId"] not in before]
        ours = [r for r in new if r["jobName"] == "refresh_now"]
        if ours and ours[0]["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() - clicked < 300, "the refresh did not end within 300 s of the click"
        time.sleep(0.5)
    took, run = time.monotonic() - clicked, ours[0]
    tags = lambda r: {t["key"]: t["value"] for t in r["tags"]}  # noqa: E731
    requested = [r for r in new if tags(r).get("goldenset/requested_by") == run["runId"]]
    print(
        f"full refresh: Launch Run to {run['status']} in {took:.1f} s (run created "
        f"{run['creationTime'] - clicked_at:.1f} s after the click, started {run['startTime'] - clicked_at:.1f} s, "
        f"ran {run['endTime'] - run['startTime']:.1f} s)"
    )
    assert run["status"] == "SUCCESS" and tags(run)["goldenset/trigger"] == "ui"
    # The build it ran is a refresh or a rebuild of its own, tagged with the click's trigger; the trace
    # import, with nothing in its folder, was skipped with a note, not run.
    assert [(r["jobName"], r["status"], tags(r)["goldenset/trigger"]) for r in requested] in (
        [("refresh_golden_set", "SUCCESS", "ui")],
        [("rebuild_golden_set", "SUCCESS", "ui")],
    )
    messages = ui.graphql(
        f'{{ logsForRun(runId: "{run["runId"]}") {{ ... on EventConnection {{ events {{ ... on MessageEvent '
        "{ message } } } } }"
    )["logsForRun"]["events"]
    assert any(m.get("message", "").startswith("trace import skipped: no span files in") for m in messages)
    _open(browser, ui, f"/runs/{run['runId']}", "RUN_SUCCESS", "the run's events")
    _shot(browser, "refresh-now-run")


def _runs(ui: UI) -> list[dict]:
    query = (
        "{ runsOrError { ... on Runs { results { runId jobName status creationTime startTime endTime "
        "tags { key value } } } } }"
    )
    return ui.graphql(query)["runsOrError"]["results"]
