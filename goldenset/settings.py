"""Where things are: one home for all state, each path overridable on its own.

Everything a deployment writes (warehouse, Dagster instance, exports, reports,
benchmark indexes) lives under GOLDENSET_HOME. Its default is the `var/` folder
of the project checkout when goldenset runs from one (an editable install), else
the user's data directory (`~/.local/share/goldenset` on Linux). It never
depends on the working directory, so a cron job started in `~` writes where the
UI reads.

Each path is: the command-line flag, else its own environment variable, else
its place under the home. Relative values are taken relative to the working
directory of the command, as any flag is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENV_HOME = "GOLDENSET_HOME"
ENV_LOCK_TIMEOUT = "GOLDENSET_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 30.0

# name -> (environment variable, place under the home)
_PLACES: dict[str, tuple[str, str]] = {
    "logs": ("GOLDENSET_LOGS", "logs"),
    "corpus": ("GOLDENSET_CORPUS", "corpus.jsonl"),
    "db": ("GOLDENSET_DB", "goldenset.duckdb"),
    "labels": ("GOLDENSET_LABELS", "labels"),
    "rubric": ("GOLDENSET_RUBRIC", "rubric.yaml"),
    "dagster_home": ("DAGSTER_HOME", "dagster"),
    "exports": ("GOLDENSET_EXPORT_DIR", "export"),
    "reports": ("GOLDENSET_REPORTS", "reports"),
    "bench_index": ("GOLDENSET_BENCH_INDEX", "bench-index"),
    "staging": ("GOLDENSET_STAGING", "staging"),
    "trace_export": ("GOLDENSET_TRACE_EXPORT", "trace_export"),
    "trace_mapping": ("GOLDENSET_TRACE_MAPPING", "trace-mapping.yaml"),
}
ENV_INGEST_WORKERS = "GOLDENSET_INGEST_WORKERS"


def _checkout_root() -> Path | None:
    """The project checkout this code runs from, if it runs from one."""
    root = Path(__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    try:
        if pyproject.is_file() and 'name = "goldenset"' in pyproject.read_text(encoding="utf-8"):
            return root
    except OSError:
        return None
    return None


def default_home() -> Path:
    """The home when GOLDENSET_HOME is not set: the checkout's var/, else the user data dir."""
    root = _checkout_root()
    if root is not None:
        return root / "var"
    import platformdirs

    return Path(platformdirs.user_data_dir("goldenset", appauthor=False))


def home() -> Path:
    """GOLDENSET_HOME if set (made absolute), else default_home()."""
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser().resolve() if value else default_home()


def default_path(name: str) -> Path:
    """Where `name` lives when neither its flag nor its variable is given."""
    return home() / _PLACES[name][1]


def env_var(name: str) -> str:
    return _PLACES[name][0]


def resolve(name: str, flag: str | Path | None = None) -> Path:
    """The flag value if given, else the environment variable, else the place under the home."""
    if flag:
        return Path(flag).expanduser()
    value = os.environ.get(_PLACES[name][0])
    if value:
        return Path(value).expanduser()
    return default_path(name)


def lock_timeout(flag: float | None = None) -> float:
    """Seconds a command waits for another process's write to finish (GOLDENSET_LOCK_TIMEOUT)."""
    if flag is not None:
        return max(0.0, float(flag))
    value = os.environ.get(ENV_LOCK_TIMEOUT)
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            from goldenset.errors import UsageError

            raise UsageError(f"{ENV_LOCK_TIMEOUT} must be a number of seconds, got {value!r}") from None
    return DEFAULT_LOCK_TIMEOUT


def ingest_workers(flag: int | None = None) -> int:
    """Processes that stage log days in parallel (GOLDENSET_INGEST_WORKERS); 0 ingests straight into the warehouse."""
    value: int | str | None = flag if flag is not None else os.environ.get(ENV_INGEST_WORKERS)
    if value is None or value == "":
        return 0
    try:
        workers = int(value)
    except ValueError:
        workers = -1
    if workers < 0:
        from goldenset.errors import UsageError

        raise UsageError(f"{ENV_INGEST_WORKERS} (or --workers) must be a whole number >= 0, got {value!r}")
    return workers


ENV_COVERAGE_MAX_GAP = "GOLDENSET_COVERAGE_MAX_GAP"
ENV_COVERAGE_FLOOR = "GOLDENSET_COVERAGE_FLOOR"


def _share(flag: float | None, env: str, default: float, option: str) -> float:
    if flag is not None:
        return float(flag)
    value = os.environ.get(env)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        from goldenset.errors import UsageError

        raise UsageError(f"{env} (or {option}) must be a share between 0 and 1, got {value!r}") from None


def coverage_max_gap(flag: float | None = None) -> float:
    """Largest judged@k difference between two compared runs before BIASED (GOLDENSET_COVERAGE_MAX_GAP, 0.10)."""
    return _share(flag, ENV_COVERAGE_MAX_GAP, 0.10, "--coverage-max-gap")


def coverage_floor(flag: float | None = None) -> float:
    """Lowest judged@k a run may have before BIASED (GOLDENSET_COVERAGE_FLOOR, 0.80)."""
    return _share(flag, ENV_COVERAGE_FLOOR, 0.80, "--coverage-floor")


@dataclass(frozen=True)
class Paths:
    """The inputs and the warehouse of one command."""

    logs: Path
    corpus: Path
    db: Path
    labels: Path | None = None
    rubric: Path | None = None


def resolve_paths(
    logs: str | None = None,
    corpus: str | None = None,
    db: str | None = None,
    labels: str | None = None,
    rubric: str | None = None,
) -> Paths:
    """Flag values if given, else the environment, else the home's defaults."""
    return Paths(
        logs=resolve("logs", logs),
        corpus=resolve("corpus", corpus),
        db=resolve("db", db),
        labels=resolve("labels", labels),
        rubric=resolve("rubric", rubric),
    )


def describe_defaults() -> str:
    """One line per path: its variable and its default, for help texts and the README."""
    return "\n".join(f"{var}: {default_path(name)}" for name, (var, _) in _PLACES.items())
