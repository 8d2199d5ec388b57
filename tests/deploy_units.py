"""The sample deployment files of docs/deploy, read the way systemd and cron read them.

The files name a fixed layout: state in /srv/goldenset, the virtualenv's programs in
/opt/goldenset/venv/bin, secrets in /etc/goldenset. A test moves each of those under its
own folder (the programs to the ones this Python installed) and starts exactly the
command with exactly the environment the file gives, plus what systemd or cron adds.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "docs" / "deploy"
STATE, PROGRAMS, SECRETS = "/srv/goldenset", "/opt/goldenset/venv/bin", "/etc/goldenset"
# What systemd gives a system service (systemd.exec(5)) and cron a job (crontab(5)), besides HOME.
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
CRON_PATH = "/usr/bin:/bin"


@dataclass(frozen=True)
class Layout:
    """Where a test puts what the files place in /srv, /opt and /etc, and the service user's home."""

    home: Path
    etc: Path
    user_home: Path
    programs: Path = Path(sys.executable).parent

    def place(self, text: str) -> str:
        return text.replace(STATE, str(self.home)).replace(PROGRAMS, str(self.programs)).replace(SECRETS, str(self.etc))

    def base_env(self, path: str) -> dict[str, str]:
        env = {"PATH": path, "HOME": str(self.user_home), "LOGNAME": "goldenset", "USER": "goldenset"}
        if os.environ.get("PYTHONPATH"):  # only when the suite runs the code from a path rather than an install
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env


def make_layout(root: Path) -> Layout:
    layout = Layout(home=root / "srv-goldenset", etc=root / "etc-goldenset", user_home=root / "home-goldenset")
    for d in (layout.home, layout.etc, layout.user_home):
        d.mkdir(parents=True)
    return layout


def unit_lines(name: str) -> list[tuple[str, str]]:
    """(key, value) of every setting in a unit file, in order."""
    out = []
    for line in (DEPLOY / name).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def _env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


def service_command(name: str, layout: Layout) -> tuple[list[str], dict[str, str]]:
    """ExecStart= of a unit and the environment systemd starts it with (Environment=, EnvironmentFile=)."""
    env = layout.base_env(SYSTEMD_PATH)
    argv: list[str] = []
    for key, value in unit_lines(name):
        value = layout.place(value)
        if key == "Environment":
            for assignment in shlex.split(value):
                k, _, v = assignment.partition("=")
                env[k] = v
        elif key == "EnvironmentFile":
            optional = value.startswith("-")
            path = Path(value.lstrip("-"))
            if path.exists() or not optional:
                env.update(_env_file(path))
        elif key == "ExecStart":
            argv = shlex.split(value)
    return argv, env


def cron_command(layout: Layout) -> tuple[str, str, dict[str, str]]:
    """(schedule, command, environment) of the crontab's one job, as cron runs it with /bin/sh."""
    (job,) = [
        line
        for line in (DEPLOY / "crontab").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    fields = job.split(None, 5)
    env = {**layout.base_env(CRON_PATH), "SHELL": "/bin/sh"}
    return " ".join(fields[:5]), layout.place(fields[5]), env
