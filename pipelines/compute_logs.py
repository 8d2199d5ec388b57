"""Step output kept as Dagster keeps it, with a line where a step printed nothing.

Dagster's UI shows an empty capture (a step that printed nothing on stdout or stderr) as
"No log file available": its API turns an empty file into no file. A run whose steps
print nothing (every command-line run: their console logger is quiet; the stdout of a run
launched in the UI) then looks as if its logs were lost. This manager is Dagster's local
one, which writes one line into a capture that stayed empty once the capture ends, so the
UI shows that line instead.

The instance settings name it (`compute_logs:` in GOLDENSET_HOME/dagster/dagster.yaml, the
repository's dagster.yaml and docs/deploy/dagster.yaml). Without `base_dir` it keeps the
files where Dagster's default would, under the instance's home (`goldenset_dagster.instance`).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from contextlib import contextmanager

import dagster as dg
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._serdes import ConfigurableClassData

NO_OUTPUT = {
    ComputeIOType.STDOUT: "no output: nothing was printed on stdout while the steps ran\n",
    ComputeIOType.STDERR: "no output: nothing was printed on stderr while the steps ran\n",
}


class ComputeLogManager(LocalComputeLogManager):
    """LocalComputeLogManager, with a line in each capture that ends empty."""

    @classmethod
    def config_type(cls):
        return {
            "base_dir": dg.Field(dg.StringSource, is_required=False),
            "polling_timeout": dg.Field(dg.Float, is_required=False),
        }

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value) -> ComputeLogManager:
        config = dict(config_value)
        if "base_dir" not in config:
            from goldenset_dagster.instance import instance_home

            config["base_dir"] = str(instance_home() / "storage")
        return cls(inst_data=inst_data, **config)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Generator[CapturedLogContext, None, None]:
        try:
            with super().capture_logs(log_key) as context:
                yield context
        finally:
            self._say_when_empty(log_key)

    def _say_when_empty(self, log_key: Sequence[str]) -> None:
        for io_type, line in NO_OUTPUT.items():
            path = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[io_type])
            if os.path.isfile(path) and os.path.getsize(path) == 0:
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(line)
