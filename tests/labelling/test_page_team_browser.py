"""The labelling page in a real headless Chromium: a draft survives a restart; a team member's name form and cookie."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
import uvicorn

from goldenset.labelling.page import create_app, open_session
from goldenset.labelling.team_page import TeamApp, open_team
from tests.helpers import (
    RUBRIC_PATH,
    WAIT_SECONDS,
    browser_wait,
    element_text,
    page_warehouse,
    press_keys,
    shown_item,
)

pytestmark = pytest.mark.browser


def serve(app: Any, port: int = 0) -> tuple[str, Callable[[], None]]:
    """Serve `app` with uvicorn in a thread on 127.0.0.1:port; the URL and a function that stops it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the same port again after a stop
    sock.bind(("127.0.0.1", port))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(WAIT_SECONDS)
        sock.close()

    return f"http://127.0.0.1:{sock.getsockname()[1]}", stop


def _checked(driver) -> dict[str, str]:
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#questions input:checked')]"
        ".map(i => [i.name.slice(4), i.value]))"
    )


def test_answers_and_note_typed_before_a_restart_come_back_and_are_dropped_once_written(tmp_path, browser):
    from selenium.webdriver.common.keys import Keys

    db = page_warehouse(tmp_path / "g.duckdb")
    labels = tmp_path / "labels"
    url, stop = serve(create_app(open_session("ana", db=db, labels=labels, rubric=RUBRIC_PATH)))
    port = int(url.rsplit(":", 1)[1])
    try:
        browser.get(url + "/pair/2")
        browser_wait(browser, lambda d: shown_item(d) == "1", "pair 2")
        press_keys(browser, "pf")
        press_keys(browser, "c")
        browser_wait(browser, lambda d: d.switch_to.active_element.get_attribute("id") == "note", "the note")
        browser.switch_to.active_element.send_keys("the page names no SLA", Keys.ESCAPE)
    finally:
        stop()  # the server goes away with nothing written
    assert not labels.exists()

    url, stop = serve(create_app(open_session("ana", db=db, labels=labels, rubric=RUBRIC_PATH)), port)
    try:
        browser.get(url + "/pair/2")  # a new run of the page: a new token, a form served empty
        browser_wait(browser, lambda d: shown_item(d) == "1", "pair 2 again")
        assert _checked(browser) == {"answerability": "pass", "authority": "fail"}
        assert browser.execute_script("return document.getElementById('note').value") == "the page names no SLA"
        assert browser.execute_script("return document.getElementById('draft-note').hidden") is False
        # Enter with tests unanswered names them; nothing is sent.
        press_keys(browser, Keys.ENTER)
        browser_wait(browser, lambda d: "recency, coverage, entity unanswered" in element_text(d, "hint"), "the hint")
        press_keys(browser, "ppp")
        browser_wait(browser, lambda d: element_text(d, "label-shown") == "irrelevant", "the live label")
        press_keys(browser, Keys.ENTER)
        browser_wait(browser, lambda d: shown_item(d) == "2", "the next pair")
        # Written: the browser keeps nothing for that pair any more.
        assert browser.execute_script("return localStorage.length") == 0
        browser.get(url + "/pair/2")
        browser_wait(browser, lambda d: shown_item(d) == "1", "pair 2, labelled")
        assert _checked(browser) == {} and browser.execute_script("return document.getElementById('draft-note').hidden")
    finally:
        stop()
    (f,) = labels.glob("dt=*/page-ana.jsonl")
    (line,) = [json.loads(x) for x in f.read_text().splitlines()]
    assert (line["doc_id"], line["label"], line["note"]) == (
        "policies/refunds-v2.md",
        "irrelevant",
        "the page names no SLA",
    )
    assert line["dimensions"]["authority"] == "fail"


def test_a_team_member_chooses_a_name_once_and_the_browser_keeps_it(tmp_path, browser):
    page = open_team(db=page_warehouse(tmp_path / "g.duckdb"), labels=tmp_path / "labels", rubric=RUBRIC_PATH)
    url, stop = serve(TeamApp(page, allowed_hosts=["127.0.0.1"]))
    try:
        browser.get(url + "/")
        browser_wait(browser, lambda d: element_text(d, "who-form") is not None, "the name form")
        field = browser.find_element("id", "name")
        field.send_keys("a b")
        browser.find_element("id", "start").click()
        # The browser holds the annotator rule too (pattern): the form is not sent.
        assert browser.execute_script("return document.getElementById('name').validity.patternMismatch") is True
        assert element_text(browser, "who-form") is not None and page.sessions == {}
        field.clear()
        field.send_keys("ana")
        browser.find_element("id", "start").click()
        browser_wait(browser, lambda d: element_text(d, "annotator") == "ana", "the queue view as ana")
        browser.get(url + "/pair/1")  # the cookie names her on every page
        browser_wait(browser, lambda d: shown_item(d) == "0", "pair 1")
        assert element_text(browser, "annotator") == "ana" and list(page.sessions) == ["ana"]
        assert page.team.panel().annotators[0].labelling == 1  # opening the pair leased it to her
    finally:
        stop()
