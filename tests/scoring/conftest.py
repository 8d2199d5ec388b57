"""Fixtures for scorers and the judge: a started judge stub, a closed port."""

from __future__ import annotations

import socket

import pytest
from judge_stub import JudgeStub


@pytest.fixture
def judge_stub():
    """A judge stub listening on 127.0.0.1 with an empty script."""
    stub = JudgeStub().start()
    yield stub
    stub.stop()


@pytest.fixture
def closed_port_url() -> str:
    """The URL of a 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
