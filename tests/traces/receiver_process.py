"""`goldenset traces serve` as a real process for the tests: started on a free port, killed or stopped.

A fresh interpreter (`python -m goldenset`), its own GOLDENSET_HOME, no GOLDENSET_* variable of the
outer shell; it starts in about 0.6 CPU seconds (the receiver imports neither Dagster nor torch).
The URL is read from the line the command prints once the spool is claimed and the socket bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

READY_SECONDS = 60.0


class ReceiverProcess:
    """One `goldenset traces serve --port 0` process."""

    def __init__(self, workdir: Path, *args: str, **env: str):
        self.workdir = Path(workdir)
        self.home = self.workdir / "home"
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("GOLDENSET_", "OTEL_"))}
        environ.update(GOLDENSET_HOME=str(self.home), **env)
        stamp = time.monotonic_ns()
        # Files, not pipes: nobody reads the merge lines as they come, and a full pipe would block them.
        self.out_path = self.workdir / f"receiver-{stamp}.stdout"
        self.log = self.workdir / f"receiver-{stamp}.stderr"
        with self.out_path.open("w") as out, self.log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "goldenset", "traces", "serve", "--port", "0", *args],
                cwd=self.workdir,
                env=environ,
                stdout=out,
                stderr=err,
            )
        self.url = self._wait_url()
        self.endpoint = self.url  # what an OTLP exporter's `endpoint` takes (the full /v1/traces URL)

    def _wait_url(self) -> str:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            for line in self.output().splitlines():
                if line.startswith("receiving OTLP/HTTP spans at "):
                    return line.split(" at ", 1)[1].strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"traces serve did not start: {self.output()} {self.stderr()}")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def output(self) -> str:
        return self.out_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL, as `kill -9`: no shutdown, no final merge."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> int:
        """SIGTERM, as systemd stops a service: the receiver merges what it holds and exits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)
