"""Fixtures for scorers and the judge: worlds copied from templates, a started judge stub, a closed port."""

from __future__ import annotations

import json
import socket

import pytest
from judge_stub import JudgeStub
from world import World, build_world, copy_world, pool_world

from tests.helpers import isolated_settings


@pytest.fixture(scope="session")
def worlds(tmp_path_factory):
    """`worlds(root, lines)`: what `build_world(root, lines)` makes, at the cost of a copy;
    with pooled=True, also pooled by `pool_world` (the 12 pairs of fixed_rankers.py queued);
    with audits=[(N, seed), ...], pooled once per audit, in that order, each drawing it.

    Each distinct list of label lines is built once per session (per xdist worker) into a
    template under tmp_path_factory, with the settings a test gets (tests.helpers), and
    copied per test; a test changes only its own copy.
    """
    templates: dict[str, World] = {}

    def make(root, lines: list[dict] | None = None, pooled: bool = False, audits=()) -> World:
        key = json.dumps([lines or [], pooled, list(audits)], sort_keys=True)
        if key not in templates:
            base = tmp_path_factory.mktemp("world-template")
            with isolated_settings(base / "home"):
                world = build_world(base / "w", lines)
                if pooled and not audits:
                    pool_world(world)
                for audit in audits:
                    pool_world(world, audit)
            templates[key] = world
        return copy_world(templates[key], root)

    return make


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
