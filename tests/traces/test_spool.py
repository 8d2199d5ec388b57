"""The receiver's spool as a library: the limit at its boundary, recovery, numbering, the merge's order."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from goldenset.errors import SpoolBusy, SpoolFull
from goldenset.quarantine import list_rejects
from goldenset.traces import spool as spool_module
from goldenset.traces.mapping import Mapping
from goldenset.traces.spool import (
    Spool,
    import_spool,
    merge_segments,
    receiver_running,
    recover,
    sealed_segments,
    spool_rejects,
    waiting_files,
)
from goldenset.warehouse import connect

TRACE = "5b8efff798038103d269b633813fc60c"


def request(span_id: str, version: str = "1", doc: str = "pol-1") -> bytes:
    """One OTLP JSON request line: a retriever span of 2026-12-01 with one document."""
    attrs = [
        ("openinference.span.kind", "RETRIEVER"),
        ("input.value", "refund window?"),
        ("retrieval.documents.0.document.id", doc),
        ("retrieval.documents.0.document.metadata", json.dumps({"version": version})),
    ]
    span = {
        "traceId": TRACE,
        "spanId": span_id,
        "startTimeUnixNano": "1796119200000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs],
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "billing"}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()


@pytest.fixture
def spool(tmp_path):
    s = Spool(tmp_path / "spool", limit=1 << 20)
    s.claim()
    yield s
    s.release()


def no_rejects(names, rejects):
    assert rejects == []


def merge_all(root: Path, logs: Path, max_bytes: int = 1 << 20, keep=no_rejects) -> list:
    done = []
    while (result := merge_segments(root, Mapping(), logs, None, lambda d, t: None, keep, max_bytes)) is not None:
        done.append(result)
    return done


def lines(logs: Path) -> list[dict]:
    return [json.loads(x) for p in sorted(logs.glob("dt=*/traces.jsonl")) for x in p.read_text().splitlines()]


@pytest.mark.parametrize(
    ("limit", "outcomes"),
    [
        (8, ["full", "taken", "taken"]),  # the 9 bytes of the first line do not fit in 8
        (9, ["taken", "full", "full"]),  # exactly full after the first
        (10, ["taken", "taken", "full"]),  # exactly full after the second
        (11, ["taken", "taken", "taken"]),
    ],
)
def test_the_spool_takes_a_line_that_fills_it_exactly_and_refuses_one_byte_more(tmp_path, limit, outcomes):
    s = Spool(tmp_path / "spool", limit=limit)
    s.claim()
    got = []
    try:
        for line in (b"12345678", b"", b""):  # 9, 1 and 1 bytes with their newlines
            try:
                s.append(line)
                got.append("taken")
            except SpoolFull as exc:
                got.append("full")
                assert f"past its limit of {limit}" in str(exc)
        assert s.size == sum(n for n, o in zip((9, 1, 1), got, strict=True) if o == "taken")
    finally:
        s.release()
    assert got == outcomes


def test_an_acknowledged_line_is_on_disk_before_append_returns(spool):
    spool.append(b'{"a": 1}')
    [open_segment] = spool.root.glob("open-*.jsonl")
    assert open_segment.read_bytes() == b'{"a": 1}\n'
    sealed = spool.seal()
    assert sealed is not None and sealed.name == "segment-000000000001.jsonl" and not open_segment.exists()


def test_recovery_seals_what_a_killed_receiver_left_open_and_cuts_its_torn_last_line(tmp_path):
    root = tmp_path / "spool"
    root.mkdir()
    (root / "open-000000000003.jsonl").write_bytes(b'{"whole": 1}\n{"whole": 2}\n{"torn')
    (root / "open-000000000004.jsonl").write_bytes(b'{"only torn')
    assert [p.name for p in recover(root)] == ["segment-000000000003.jsonl"]
    assert (root / "segment-000000000003.jsonl").read_bytes() == b'{"whole": 1}\n{"whole": 2}\n'
    assert sorted(p.name for p in root.iterdir()) == ["segment-000000000003.jsonl"]


def test_segment_numbers_are_never_given_twice_even_once_every_segment_is_merged(spool, tmp_path):
    spool.append(request("00f067aa0ba902b7"))
    spool.seal()
    merge_all(spool.root, tmp_path / "logs")
    assert sealed_segments(spool.root) == []
    spool.append(request("00f067aa0ba902b8"))
    assert [p.name for p in [spool.seal()] if p] == ["segment-000000000002.jsonl"]


def test_the_merge_takes_the_oldest_segments_first_so_a_later_copy_of_a_span_wins(spool, tmp_path):
    for version in ("1", "2", "3"):
        spool.append(request("00f067aa0ba902b7", version=version))
        spool.seal()
    one_line = len(request("00f067aa0ba902b7")) + 1
    # A batch of at most one segment's bytes: three merges, each rewriting the day file.
    done = merge_all(spool.root, tmp_path / "logs", max_bytes=one_line)
    assert [r.files_read for r in done] == [1, 1, 1]
    [line] = lines(tmp_path / "logs")
    assert line["items"][0]["doc_version"] == "3"


def test_merging_the_same_segments_again_after_a_crash_writes_the_same_bytes(spool, tmp_path):
    spool.append(request("00f067aa0ba902b7"))
    spool.append(request("zz"))
    spool.seal()
    kept = tmp_path / "kept"
    shutil.copytree(spool.root, kept)
    keep = spool_rejects(spool.root, now=lambda: datetime(2026, 12, 1, tzinfo=UTC))
    merge_all(spool.root, tmp_path / "logs", keep=keep)
    first = (tmp_path / "logs" / "dt=2026-12-01" / "traces.jsonl").read_bytes()
    reject_file = spool.root / "rejects" / "segment-000000000001.jsonl"
    rejects = reject_file.read_bytes()
    # A crash before the delete: the segment is still there and is merged again.
    shutil.copy(kept / "segment-000000000001.jsonl", spool.root)
    merge_all(spool.root, tmp_path / "logs", keep=keep)
    assert (tmp_path / "logs" / "dt=2026-12-01" / "traces.jsonl").read_bytes() == first
    assert reject_file.read_bytes() == rejects


def test_a_second_receiver_on_the_same_spool_is_refused_naming_the_first(spool, tmp_path, monkeypatch):
    monkeypatch.setattr(spool_module, "CLAIM_SECONDS", 0.0)
    assert receiver_running(spool.root)
    with pytest.raises(SpoolBusy, match=r"another `goldenset traces serve` \(PID \d+\) uses the spool"):
        Spool(spool.root, limit=100).claim()


def test_the_pipeline_merges_a_stopped_receivers_open_segments_but_never_a_running_ones(tmp_path):
    root = tmp_path / "spool"
    running = Spool(root, limit=1 << 20)
    running.claim()
    running.append(request("00f067aa0ba902b7"))
    db = tmp_path / "g.duckdb"
    con = connect(db)
    try:
        assert [p.name for p in waiting_files(root)] == []  # the open segment is the running receiver's
        done = import_spool(con, root, Mapping(), tmp_path / "logs", None, lambda d, t: None, 1 << 20, wait=0)
        assert done.segments == 0 and lines(tmp_path / "logs") == []
        # Killed: the flock goes with the process; what it acknowledged waits in its open segment.
        import os

        assert running._claim_fd is not None
        os.close(running._claim_fd)
        running._claim_fd = None
        assert not receiver_running(root)
        assert [p.name for p in waiting_files(root)] == ["open-000000000001.jsonl"]
        spool_rejects(root)(["spool/segment-000000000000.jsonl"], [_row()])
        done = import_spool(con, root, Mapping(), tmp_path / "logs", None, lambda d, t: None, 1 << 20, wait=0)
        assert (done.segments, done.serves, done.rejects_flushed) == (1, 1, 1)
        assert [r.source_file for r in list_rejects(con)[0]] == ["traces/spool/segment-000000000000.jsonl"]
    finally:
        con.close()
    assert [x["serve_id"] for x in lines(tmp_path / "logs")] == [f"{TRACE}-00f067aa0ba902b7"]
    assert waiting_files(root) == []


def _row():
    from goldenset.traces.importer import RejectRow

    return RejectRow("spool/segment-000000000000.jsonl", 1, "invalid_field", "a bad id", "{}")


def test_a_lost_sequence_file_never_gives_a_merged_segments_number_again(tmp_path):
    # `sequence` is gone and segment 5 waits; the receiver merges (deletes) it before its first request.
    root = tmp_path / "spool"
    root.mkdir()
    (root / "segment-000000000005.jsonl").write_bytes(request("00f067aa0ba902b7") + b"\n")
    s = Spool(root, limit=1 << 20)
    s.claim()
    try:
        assert [r.files_read for r in merge_all(root, tmp_path / "logs")] == [1]
        assert sealed_segments(root) == []
        s.append(request("00f067aa0ba902b8"))
        sealed = s.seal()
    finally:
        s.release()
    assert sealed is not None and sealed.name == "segment-000000000006.jsonl"
