"""Unattended runs say what they are doing: plain progress lines off a terminal, full-width tables (issue 22)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from goldenset import progress
from goldenset_dagster.cli import main
from tests.helpers import ranked, serve, verdict, write_log

DATA = Path(__file__).parent / "data" / "conformance"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_prints_at_most_every_ten_seconds_with_rate_and_time_left():
    clock, lines = Clock(), []
    reporter = progress.PlainReporter(lines.append, clock=clock)
    handle = reporter.start("embedding texts", 5000)
    clock.now += 4
    reporter.advance(handle, 100)  # 4 s in: too early for a line
    clock.now += 6
    reporter.advance(handle, 1100)  # 10 s in: 1,200 done, 120/s, 3,800 left -> 31.67 s -> 32s
    clock.now += 5
    reporter.advance(handle, 600)  # 5 s after the last line: nothing
    clock.now += 5
    reporter.advance(handle, 600)  # 20 s in: 2,400 done, 120/s, 2,600 left -> 21.67 s -> 22s
    clock.now += 50
    reporter.advance(handle, 2600)  # 70 s in: all done, 5000/70 = 71.43/s, nothing left
    reporter.finish(handle)
    assert lines == [
        "embedding texts: 1,200/5,000 (24%), 120.0/s, 32s left",
        "embedding texts: 2,400/5,000 (48%), 120.0/s, 22s left",
        "embedding texts: 5,000/5,000 (100%), 71.4/s",
        "embedding texts: 5,000 done in 1m10s",
    ]


def test_a_short_step_prints_nothing_and_a_step_without_total_counts_up():
    clock, lines = Clock(), []
    reporter = progress.PlainReporter(lines.append, clock=clock)
    short = reporter.start("ingesting files", 3)
    clock.now += 2
    reporter.advance(short, 3)
    reporter.finish(short)
    assert lines == []
    open_ended = reporter.start("scoring pairs", None)
    clock.now += 12
    reporter.advance(open_ended, 30)
    assert lines == ["scoring pairs: 30 done, 2.5/s"]


@pytest.mark.slow
def test_tables_to_a_pipe_take_the_width_of_their_content(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "logs"
    shutil.copytree(DATA / "logs", logs)
    name = "part-0002-from-the-eu-west-frontend-replica-with-a-long-name.jsonl"
    raw = '{"event": "serve", "serve_id": "broken' + "x" * 60
    write_log(
        logs,
        "2026-11-06",
        name,
        [
            serve("long-1", "2026-11-06T10:00:00Z", "a task", [ranked("d1", 1)]),
            verdict("long-1", "d1", "helped", "2026-11-06T10:01:00Z"),
            raw,
        ],
    )
    db = tmp_path / "g.duckdb"
    build = ["build", "--logs", str(logs), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)]
    assert main([*build, "--block-rejected-share", "0.5"]) == 0
    capsys.readouterr()
    assert main(["rejects", "--db", str(db), "--file", f"dt=2026-11-06/{name}"]) == 0
    rows = [x for x in capsys.readouterr().out.splitlines() if "invalid_json" in x]
    # One row, on one line, holding the whole file name and the whole raw line (under --width 120).
    assert len(rows) == 1
    assert f"dt=2026-11-06/{name}" in rows[0] and raw in rows[0]
    assert len(rows[0]) > 80


def test_a_table_off_a_terminal_is_as_wide_as_its_content_its_title_on_one_line_and_no_line_padded():
    from rich.table import Table

    from goldenset.consoles import ContentWidthConsole

    file = io.StringIO()
    con = ContentWidthConsole(file=file, highlight=False)
    title = "agreement between annotators (labels as build 3 read them)"
    t = Table(title=title, title_justify="left")
    t.add_column("a")
    t.add_column("b")
    t.add_row("ana", "ben")
    t.add_row("x", "a cell of thirty-two characters.")
    con.print(t)
    con.print("a message", markup=False)
    lines = file.getvalue().split("\n")
    assert lines[0] == title  # one line, no blanks after it
    assert lines[-2:] == ["a message", ""]
    assert all(line == line.rstrip() for line in lines)
    # The borders are the widest lines: 2 + len("ana") + 3 + 32 + 2 columns, the content's width.
    table_lines = lines[1:-2]
    assert {len(line) for line in table_lines} == {2 + 3 + 3 + 32 + 2}
    # A title narrower than its table is not padded out to the table's width either.
    file.seek(0)
    file.truncate()
    t.title = "short"
    con.print(t)
    assert file.getvalue().split("\n")[0] == "short"
