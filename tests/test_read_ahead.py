"""Reading a log file's next chunk while the last one is validated changes nothing but the time."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest

from goldenset.logfiles import LogFile, NotPlainText, TextStream, read_ahead


def _numbers(n: int, fail_at: int | None = None, seen: list | None = None):
    try:
        for i in range(n):
            if i == fail_at:
                raise NotPlainText(f"fault at {i}")
            yield i, threading.current_thread().name
    finally:
        if seen is not None:
            seen.append("closed")


def test_every_item_arrives_in_order_taken_in_another_thread():
    got = list(read_ahead(_numbers(50)))
    assert [i for i, _ in got] == list(range(50))
    assert all(name.startswith("read-ahead") for _, name in got)


def test_an_error_is_raised_where_its_item_was_due_and_not_before():
    out = []
    with pytest.raises(NotPlainText, match="fault at 3"):
        for i, _ in read_ahead(_numbers(10, fail_at=3)):
            out.append(i)
    assert out == [0, 1, 2]


def test_a_caller_that_stops_early_closes_the_source():
    seen: list = []
    for i, _ in read_ahead(_numbers(10, seen=seen)):
        if i == 2:
            break
    assert seen == ["closed"]


def test_a_caller_that_raises_closes_the_source_and_keeps_its_own_error():
    seen: list = []
    with pytest.raises(ValueError, match="caller"):
        for i, _ in read_ahead(_numbers(10, fail_at=4, seen=seen)):
            if i == 3:
                raise ValueError("caller")  # the read ahead of item 4 failed too; the caller's error is the one
    assert seen == ["closed"]


@pytest.mark.parametrize("gz", [False, True])
def test_a_file_read_ahead_gives_the_same_chunks_hash_and_counts(tmp_path: Path, gz: bool):
    lines = [f'{{"event":"verdict","serve_id":"s{i}","n":"{"x" * (i % 97)}"}}' for i in range(20_000)]
    data = ("\n".join(lines) + "\n").encode()
    day = tmp_path / "dt=2026-11-01"
    day.mkdir()
    name = "part.jsonl.gz" if gz else "part.jsonl"
    (day / name).write_bytes(gzip.compress(data) if gz else data)
    f = LogFile(day / name, "2026-11-01", name)

    def read(ahead: bool):
        stream = TextStream(f, chunk_bytes=4096)
        chunks = read_ahead(stream.chunks()) if ahead else stream.chunks()
        got = [(first, bytes(text)) for first, text in chunks]
        return got, stream.content_sha256, stream.lines_total, stream.text_bytes

    plain, ahead = read(False), read(True)
    assert ahead == plain
    assert len(plain[0]) > 10  # many chunks, so the next was read while one was held
    assert b"\n".join(text for _, text in plain[0]).decode().split("\n") == lines
