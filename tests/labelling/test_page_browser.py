"""The labelling page end to end in a real headless Chromium: three pairs labelled with the keyboard only."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def serving(db: Path, labels: Path) -> Iterator[tuple[str, LabellingSession]]:
    """A fresh run of ana's page (open_session reads the queue and LABELS) on 127.0.0.1, served by uvicorn."""
    session = open_session("ana", db=db, labels=labels, rubric=RUBRIC_PATH)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(create_app(session, allowed_hosts=["127.0.0.1"]), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", session
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)
        sock.close()


@pytest.fixture
def page_server(tmp_path) -> Iterator[tuple[str, LabellingSession, Path]]:
    """The page of annotator ana on 127.0.0.1 and a free port, served by uvicorn in a thread."""
    db = page_warehouse(tmp_path / "g.duckdb")
    labels = tmp_path / "labels"
    # The first queued pair was labelled before: the page lists it as labelled, under its number.
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
    with serving(db, labels) as (url, session):
        yield url, session, labels


def test_three_pairs_labelled_with_the_keyboard_write_three_exact_lines_and_n_writes_nothing(page_server, browser):
    from selenium.webdriver.common.keys import Keys

    url, session, labels = page_server
    # The front page is the queue view; its link opens the first pair to do, pair 2 (pair 1 is labelled).
    browser.get(url + "/")
    browser_wait(browser, lambda d: element_text(d, "continue") is not None, "the queue view")
    browser.execute_script("document.getElementById('continue').click()")
    browser_wait(browser, lambda d: shown_item(d) == "1", "the first unlabelled pair")
    assert element_text(browser, "already-count") == "1" and element_text(browser, "queued-count") == "5"
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
    browser_wait(browser, lambda d: shown_item(d) == "2", "the second pair")
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
    browser_wait(browser, lambda d: shown_item(d) == "3", "the third pair")

    # Pair 3: answerability and recency fail -> irrelevant; `d` moves decided_by to recency.
    press_keys(browser, "fpf")
    # Enter before every test is answered submits nothing and says what is left.
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: "coverage, entity unanswered" in element_text(d, "hint"), "the unanswered hint")
    assert shown_item(browser) == "3"
    press_keys(browser, "pp")
    browser_wait(browser, lambda d: element_text(d, "label-shown") == "irrelevant", "the live label")
    press_keys(browser, "d")
    browser_wait(
        browser,
        lambda d: d.execute_script("return document.getElementById('decided-by').value") == "recency",
        "decided_by to move",
    )
    press_keys(browser, Keys.ENTER)
    browser_wait(browser, lambda d: shown_item(d) == "4", "the fourth pair")

    # Pair 4: n passes over it without a line.
    press_keys(browser, "pf")
    press_keys(browser, "n")
    browser_wait(browser, lambda d: d.execute_script("return !!document.getElementById('done')"), "the end page")
    done = " ".join(element_text(browser, "done").split())
    assert "3 of 5 queued pairs labelled this session, 1 before; 1 passed over" in done
    # The queue view says what became of each pair, under the queue's numbers (its priorities).
    browser.get(url + "/?status=passed+over")
    browser_wait(browser, lambda d: element_text(d, "row-5") is not None, "the pair passed over")
    assert "passed over" in element_text(browser, "row-5") and element_text(browser, "row-1") is None

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


def _rows(driver) -> dict[str, str]:
    """The queue view's rows: pair number -> the row's text."""
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#queue-table tbody tr')]"
        ".map(r => [r.id.replace('row-', ''), r.innerText.replace(/\\s+/g, ' ').trim()]))"
    )


def test_numbers_survive_a_restart_and_a_labelled_pair_reopens_to_be_corrected(tmp_path, browser):
    from selenium.webdriver.common.keys import Keys

    db = page_warehouse(tmp_path / "g.duckdb")
    labels = tmp_path / "labels"
    with serving(db, labels) as (url, _):
        browser.get(url + "/pair/3")
        browser_wait(browser, lambda d: shown_item(d) == "2", "pair 3")
        press_keys(browser, "pppfp")  # partial, decided by coverage
        browser_wait(browser, lambda d: element_text(d, "label-shown") == "partial", "the live label")
        press_keys(browser, Keys.ENTER)
        browser_wait(browser, lambda d: shown_item(d) == "3", "the next pair, 4")
        browser.get(url + "/")
        browser_wait(browser, lambda d: element_text(d, "row-3") is not None, "the queue view")
        before = _rows(browser)

    # A new run of the page: the same queue under the same numbers, the labelled pair still listed.
    with serving(db, labels) as (url, session):
        assert session.already_labelled == 1
        browser.get(url + "/")
        browser_wait(browser, lambda d: element_text(d, "row-3") is not None, "the queue view after the restart")
        after = _rows(browser)
        assert list(after) == list(before) == ["1", "2", "3", "4", "5"]
        assert "labelled" in after["3"] and "partial" in after["3"]
        assert [after[n].split(" ")[0] for n in after] == [before[n].split(" ")[0] for n in before]
        assert element_text(browser, "labelling-queue") == "5"
        # The link to the first pair to do sits above the table.
        assert browser.execute_script(
            "return document.getElementById('continue').compareDocumentPosition("
            "document.getElementById('queue-table')) & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        # Reopen pair 3 from the queue view and correct it: a new line, the old one kept.
        browser.execute_script("document.getElementById('reopen-3').click()")
        browser_wait(browser, lambda d: shown_item(d) == "2", "pair 3 reopened")
        assert "You labelled this pair partial" in " ".join(element_text(browser, "previous").split())
        press_keys(browser, "ppppp")
        browser_wait(browser, lambda d: element_text(d, "label-shown") == "relevant", "the corrected label")
        press_keys(browser, Keys.ENTER)
        browser_wait(browser, lambda d: element_text(d, "saved") is not None, "the saved banner")
        assert "replacing partial" in " ".join(element_text(browser, "saved").split())
        browser.get(url + "/")
        browser_wait(browser, lambda d: element_text(d, "row-3") is not None, "the queue view")
        assert "relevant" in _rows(browser)["3"]
    (file,) = sorted(labels.glob("dt=*/page-ana.jsonl"))
    lines = [json.loads(x) for x in file.read_text(encoding="utf-8").splitlines()]
    _, qid, doc_id, version, *_ = PAGE_QUEUE[2]
    assert [(x["query_id"], x["doc_id"], x["doc_version"], x["label"]) for x in lines] == [
        (qid, doc_id, version, "partial"),
        (qid, doc_id, version, "relevant"),
    ]
