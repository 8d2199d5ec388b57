"""The labelling page end to end in a real headless Chromium: three pairs labelled with the keyboard only."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from goldenset.labelling.page import LabellingSession, create_app, open_session

# The warehouse is the one the page tests use (tests/helpers.py).
from tests.helpers import (
    DIMS,
    PAGE_QUEUE,
    RUBRIC_PATH,
    WAIT_SECONDS,
    browser_wait,
    dimensions,
    element_text,
    label_line,
    page_warehouse,
    press_keys,
    shown_item,
    write_labels,
)

pytestmark = pytest.mark.browser

_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


@pytest.fixture
def page_server(tmp_path) -> Iterator[tuple[str, LabellingSession, Path]]:
    """The page of annotator ana on 127.0.0.1 and a free port, served by uvicorn in a thread."""
    db = page_warehouse(tmp_path / "g.duckdb")
    labels = tmp_path / "labels"
    # The first queued pair was labelled before: the page leaves it out.
    write_labels(
        labels,
        "2026-11-20",
        "earlier.jsonl",
        [
            label_line(
                qid,
                doc_id,
                "relevant",
                "2026-11-20T09:00:00Z",
                version=version,
                decided_by="answerability",
                dimensions=dimensions(),
            )
            for _, qid, doc_id, version, *_ in PAGE_QUEUE[:1]
        ],
    )
    session = open_session("ana", db=db, labels=labels, rubric=RUBRIC_PATH)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(create_app(session, allowed_hosts=["127.0.0.1"]), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", session, labels
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)
        sock.close()


def test_three_pairs_labelled_with_the_keyboard_write_three_exact_lines_and_n_writes_nothing(page_server, browser):
    from selenium.webdriver.common.keys import Keys

    url, session, labels = page_server
    # The front page is the queue view; its link opens the first pair to do, pair 1.
    browser.get(url + "/")
    browser_wait(browser, lambda d: element_text(d, "continue") is not None, "the queue view")
    browser.execute_script("document.getElementById('continue').click()")
    browser_wait(browser, lambda d: shown_item(d) == "0", "the first unlabelled pair")
    assert element_text(browser, "already-count") == "1" and element_text(browser, "queued-count") == "4"
    assert (
        element_text(browser, "doc-id") == "policies/refunds-v2.md" and element_text(browser, "reason") == "successor"
    )

    # Pair 1: every test passes -> relevant, decided_by defaults to the first dimension.
    press_keys(browser, "pppp")
    browser_wait(
        browser, lambda d: element_text(d, "label-shown") == "relevant or irrelevant", "the labels still possible"
    )
    press_keys(browser, "p")
    browser_wait(browser, lambda d: element_text(d, "label-shown") == "relevant", "the live label")
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: shown_item(d) == "1", "the second pair")
    assert element_text(browser, "labelled-count") == "1"

    # Pair 2: coverage fails -> partial, decided by coverage (the only admissible one); a note typed in.
    press_keys(browser, "pppfp")
    browser_wait(browser, lambda d: element_text(d, "label-shown") == "partial", "the live label")
    assert browser.execute_script("return [...document.getElementById('decided-by').options].map(o => o.value)") == [
        "coverage"
    ]
    press_keys(browser, "c")
    browser_wait(browser, lambda d: d.switch_to.active_element.get_attribute("id") == "note", "the note to take focus")
    browser.switch_to.active_element.send_keys("states 10 business days", Keys.ESCAPE)
    browser_wait(browser, lambda d: d.switch_to.active_element.get_attribute("id") != "note", "the note to let go")
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: shown_item(d) == "2", "the third pair")

    # Pair 3: answerability and recency fail -> irrelevant; `d` moves decided_by to recency.
    press_keys(browser, "fpf")
    # Enter before every test is answered submits nothing and says what is left.
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: "coverage, entity unanswered" in element_text(d, "hint"), "the unanswered hint")
    assert shown_item(browser) == "2"
    press_keys(browser, "pp")
    browser_wait(browser, lambda d: element_text(d, "label-shown") == "irrelevant", "the live label")
    press_keys(browser, "d")
    browser_wait(
        browser,
        lambda d: d.execute_script("return document.getElementById('decided-by').value") == "recency",
        "decided_by to move",
    )
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: shown_item(d) == "3", "the fourth pair")

    # Pair 4: n passes over it without a line.
    press_keys(browser, "pf")
    press_keys(browser, "n")
    browser_wait(browser, lambda d: d.execute_script("return !!document.getElementById('done')"), "the end page")
    assert "3 of 4 queued pairs labelled this session; 1 passed over" in " ".join(element_text(browser, "done").split())
    # The queue view says what became of each pair, in the URL's 1-based numbers.
    browser.get(url + "/?status=passed+over")
    browser_wait(browser, lambda d: element_text(d, "row-4") is not None, "the pair passed over")
    assert "passed over" in element_text(browser, "row-4") and element_text(browser, "row-1") is None

    files = sorted(labels.glob("dt=*/page-ana.jsonl"))
    assert len(files) == 1
    lines = [json.loads(x) for x in files[0].read_text(encoding="utf-8").splitlines()]
    stamps = [line.pop("ts") for line in lines]
    assert all(_TS.fullmatch(ts) for ts in stamps), stamps
    assert {files[0].parent.name} == {f"dt={ts[:10]}" for ts in stamps}

    def expect(item: int, label: str, decided_by: str, fails: str, note: str | None = None) -> dict:
        _, qid, doc_id, version, *_ = PAGE_QUEUE[item + 1]
        line = {
            "event": "label",
            "query_id": qid,
            "doc_id": doc_id,
            "doc_version": version,
            "label": label,
            "decided_by": decided_by,
            "annotator": "ana",
            "rubric": "support-policies",
            "dimensions": {d: "fail" if d in fails.split() else "pass" for d in DIMS},
        }
        return line | ({"note": note} if note else {}) | {"kind": "human"}

    expected = [
        expect(0, "relevant", "answerability", ""),
        expect(1, "partial", "coverage", "coverage", "states 10 business days"),
        expect(2, "irrelevant", "recency", "answerability recency"),
    ]
    assert lines == expected
    # Fields in the contract's order (ts sits between rubric and dimensions).
    assert [list(x) for x in lines] == [list(e) for e in expected]
