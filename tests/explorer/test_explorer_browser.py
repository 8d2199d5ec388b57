"""The set explorer walked end to end in a real headless Chromium, beside the labelling page.

One browser session walks the queries (filters, search), a query that only a human positive
keeps, one that left the set, the builds with their funnel, and the comparison of the two
runs (the plot's bars link to the queries). Screenshots land in tmp_path, and in the folder
EXPLORER_SCREENSHOTS names when set (how docs/guides/img/ is refreshed).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from story_world import QID

from goldenset.explorer.routes import PREFIX, explorer_routes
from goldenset.labelling.page import create_app, open_session
from tests.helpers import RUBRIC_PATH, WAIT_SECONDS, browser_wait, element_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def explorer_url(story) -> Iterator[str]:
    """`label serve` of annotator ana over the story world, the explorer mounted, on 127.0.0.1."""
    session = open_session("ana", db=story.db, labels=story.labels, rubric=RUBRIC_PATH)
    app = create_app(session, allowed_hosts=["127.0.0.1"], extra_routes=explorer_routes(story.db), explorer_link=PREFIX)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)
        sock.close()


def _shots(tmp_path: Path) -> list[Path]:
    folders = [tmp_path / "shots"]
    if os.environ.get("EXPLORER_SCREENSHOTS"):
        folders.append(Path(os.environ["EXPLORER_SCREENSHOTS"]))
    for f in folders:
        f.mkdir(parents=True, exist_ok=True)
    return folders


def _shot(driver, folders: list[Path], name: str) -> None:
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, min(max(700, height + 40), 2400))
    for f in folders:
        assert driver.save_screenshot(str(f / f"{name}.png"))


def _rows(driver, table_id: str) -> list[str]:
    return driver.execute_script(
        f"return Array.from(document.querySelectorAll('#{table_id} tbody tr')).map(r => r.dataset.query);"
    )


def test_a_person_walks_the_set_a_query_the_builds_and_a_comparison(explorer_url, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    shots = _shots(tmp_path)
    browser.get(explorer_url + "/")
    browser.find_element(By.ID, "nav-set").click()
    browser_wait(browser, lambda d: element_text(d, "count") is not None, "the queries page")
    # Two queries in the set (RESET, GDB), three that left (REFUND at 3, EXPENSES and VPN at 2).
    assert element_text(browser, "count") == "5 queries shown, 2 of them in the set"
    assert _rows(browser, "queries")[2:] == [QID["REFUND"], QID["EXPENSES"], QID["VPN"]]
    _shot(browser, shots, "explorer-queries")

    Select(browser.find_element(By.ID, "filter-status")).select_by_value("left")
    browser.find_element(By.ID, "filter-go").click()
    browser_wait(browser, lambda d: "status=left" in d.current_url, "the filtered list")
    assert sorted(_rows(browser, "queries")) == sorted([QID["REFUND"], QID["EXPENSES"], QID["VPN"]])

    search = browser.find_element(By.ID, "filter-q")
    search.clear()
    search.send_keys("gnu debugger")
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("")
    browser.find_element(By.ID, "filter-go").click()
    browser_wait(browser, lambda d: _rows(d, "queries") == [QID["GDB"]], "the search to find GDB")
    browser.find_element(By.LINK_TEXT, QID["GDB"]).click()
    browser_wait(browser, lambda d: element_text(d, "query-id") == QID["GDB"], "GDB's page")
    assert element_text(browser, "query-status") == "in the golden set of build 3, kept by a human positive only"
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#timeline tbody tr')).map("
        "r => Array.from(r.cells).map(c => c.textContent.trim()));"
    )
    # deb/gdb: the log's helped in build 1 was already replaced by ana's label; it stays.
    assert cells == [["deb/gdb", *["human:relevant"] * 3], ["deb/lldb", *["noise"] * 3]]
    assert "noise" in element_text(browser, "serves") and "helped" in element_text(browser, "serves")
    _shot(browser, shots, "explorer-query-kept-by-human")

    browser.get(f"{explorer_url}/set/query/{QID['REFUND']}")
    browser_wait(browser, lambda d: element_text(d, "why-out") is not None, "REFUND's page")
    assert element_text(browser, "why-out") == (
        "Left the set at build 3: no_positive: no judgment left is helped and no human label is a positive"
    )
    refund = browser.execute_script(
        "return Array.from(document.querySelectorAll('#timeline tbody tr td')).map(c => c.textContent.trim());"
    )
    # Columns start at build 2, the first that held a label of REFUND.
    assert refund == ["d-refund", "human:partial", "·"]
    _shot(browser, shots, "explorer-query-left")

    browser.find_element(By.ID, "nav-builds").click()
    browser_wait(browser, lambda d: element_text(d, "build-2") is not None, "the builds page")
    assert "2 queries (3 judgments)" in element_text(browser, "build-2")
    _shot(browser, shots, "explorer-builds")

    browser.find_element(By.ID, "nav-runs").click()
    browser_wait(browser, lambda d: element_text(d, "runs") is not None, "the runs page")
    Select(browser.find_element(By.ID, "compare-a")).select_by_value("run-1-words")
    Select(browser.find_element(By.ID, "compare-b")).select_by_value("run-2-reverse")
    browser.find_element(By.ID, "compare-go").click()
    browser_wait(browser, lambda d: element_text(d, "verdict") is not None, "the comparison")
    # Both runs measured RESET and GDB; words ranks their relevant document first, reverse does not.
    bars = browser.find_elements(By.CSS_SELECTOR, "#difference-plot rect.diff-bar")
    assert sorted(b.get_attribute("data-query") for b in bars) == sorted([QID["RESET"], QID["GDB"]])
    assert browser.find_element(By.ID, "interval") and browser.find_element(By.ID, "mean")
    # The two runs' means with their intervals, as the comparison of several runs draws them.
    assert browser.find_elements(By.CSS_SELECTOR, "#n-run-comparison svg")
    assert browser.find_element(By.ID, "compare-more").get_attribute("href").endswith("/set/runs#compare-runs")
    judged = browser.execute_script(
        "return Array.from(document.querySelectorAll('#judged tbody tr')).map(r => r.dataset.side);"
    )
    assert judged == ["A", "B"]
    _shot(browser, shots, "explorer-compare")
    browser.execute_script(
        f"document.querySelector('#difference-plot rect[data-query=\"{QID['RESET']}\"]').parentNode"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    browser_wait(browser, lambda d: element_text(d, "query-id") == QID["RESET"], "RESET's page from its bar")

    browser.find_element(By.ID, "nav-runs").click()
    browser_wait(browser, lambda d: element_text(d, "compare-runs") is not None, "the runs page")
    for box in browser.find_elements(By.CSS_SELECTOR, "#compare-runs-form input[name=run]"):
        box.click()
    browser.find_element(By.ID, "compare-runs-go").click()
    browser_wait(browser, lambda d: element_text(d, "summary") is not None, "the comparison of several runs")
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#summary tbody tr')).map(r => r.dataset.run);"
    )
    assert sorted(rows) == ["run-1-words", "run-2-reverse"]
    assert browser.find_elements(By.CSS_SELECTOR, "#n-run-comparison svg")
