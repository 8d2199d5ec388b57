"""A real Phoenix server for the tests, started from its own virtual environment.

`arize-phoenix` conflicts with the project's dependencies and takes minutes to
install, so it lives in a venv of its own: GOLDENSET_PHOENIX_VENV, else the
checkout's var/phoenix-venv (CI creates it in the background: .ci/run). Without it
the `phoenix` tests skip and say why. The server listens on 127.0.0.1 on free ports,
keeps its database in a temporary folder, and is told not to fetch anything.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
ENV_VENV = "GOLDENSET_PHOENIX_VENV"
READY_SECONDS = 180


def phoenix_venv() -> Path:
    return Path(os.environ.get(ENV_VENV) or ROOT / "var" / "phoenix-venv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PhoenixServer:
    """`phoenix serve` as a subprocess; `url` once ready."""

    def __init__(self, venv: Path, workdir: Path):
        self.port, self.grpc_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "phoenix.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_WORKING_DIR=str(workdir),
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            PHOENIX_TELEMETRY_ENABLED="false",
        )
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(venv / "bin" / "phoenix"), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix serve exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise RuntimeError(f"phoenix serve not ready after {READY_SECONDS} s: {self.tail()}")

    def tail(self) -> str:
        return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
