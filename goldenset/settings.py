"""Where things are and how the program runs: one `Settings`, resolved once, passed on.

Everything a deployment writes (warehouse, Dagster instance, exports, reports,
benchmark indexes) lives under GOLDENSET_HOME. Its default is the `var/` folder
of the project checkout when goldenset runs from one (an editable install), else
the user's data directory (`~/.local/share/goldenset` on Linux). It never
depends on the working directory, so a cron job started in `~` writes where the
UI reads.

Each setting is: the command-line flag, else its own environment variable, else
its default (for a path, its place under the home). Relative values are taken
relative to the working directory of the command, as any flag is. `VARIABLES` is
the one table of them (field, variable, default, meaning): `Settings.resolve`
reads it, the demo clears the path variables it names, and the settings reference
is generated from it (`markdown_reference`).

Decisions: the environment is read when `Settings.resolve` is called, never when a
module is imported; the Dagster code location resolves its settings when it loads
and the `build` command passes its own to `build_definitions(settings)`, so no flag
travels through `os.environ`. `scoped_environment` lets an in-process caller (the
demo) run commands against another environment without writing the process's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from goldenset.errors import UsageError

ENV_HOME = "GOLDENSET_HOME"
ENV_LOCK_TIMEOUT = "GOLDENSET_LOCK_TIMEOUT"
ENV_INGEST_WORKERS = "GOLDENSET_INGEST_WORKERS"
DEFAULT_LOCK_TIMEOUT = 30.0


@dataclass(frozen=True)
class Variable:
    """One setting: its `Settings` field, its environment variable, its default and what it means.

    For a path, `default` is its place under the home; for anything else, the value's text.
    """

    name: str
    env: str
    kind: Literal["home", "path", "seconds", "count", "text"]
    default: str
    help: str
    flag: str = ""  # the command-line flag that sets it (named beside the variable in messages)


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "home", ENV_HOME, "home", "", "Where all state lives (default: the checkout's var/, else the user data dir)."
    ),
    Variable("logs", "GOLDENSET_LOGS", "path", "logs", "Serve-log directory (dt=YYYY-MM-DD folders).", flag="--logs"),
    Variable("corpus", "GOLDENSET_CORPUS", "path", "corpus.jsonl", "Corpus snapshot file.", flag="--corpus"),
    Variable("db", "GOLDENSET_DB", "path", "goldenset.duckdb", "The DuckDB warehouse.", flag="--db"),
    Variable(
        "labels", "GOLDENSET_LABELS", "path", "labels", "Label-file directory (dt=YYYY-MM-DD folders).", flag="--labels"
    ),
    Variable(
        "rubric",
        "GOLDENSET_RUBRIC",
        "path",
        "rubric.yaml",
        "Labelling rubric: a YAML file, or a folder of them, one per task (the default falls back to the folder "
        "rubrics/ when rubric.yaml is absent).",
        flag="--rubric",
    ),
    Variable("dagster_home", "DAGSTER_HOME", "path", "dagster", "The Dagster instance the UI shows."),
    Variable("exports", "GOLDENSET_EXPORT_DIR", "path", "export", "Where the golden set asset exports BEIR files."),
    Variable("reports", "GOLDENSET_REPORTS", "path", "reports", "Benchmark reports, one folder per run."),
    Variable("bench_index", "GOLDENSET_BENCH_INDEX", "path", "bench-index", "The benchmark's cached lexical index."),
    Variable("staging", "GOLDENSET_STAGING", "path", "staging", "Log days staged as Parquet by parallel workers."),
    Variable("trace_export", "GOLDENSET_TRACE_EXPORT", "path", "trace_export", "Where trace exports are dropped."),
    Variable("trace_mapping", "GOLDENSET_TRACE_MAPPING", "path", "trace-mapping.yaml", "The trace import's mapping."),
    Variable(
        "trace_spool",
        "GOLDENSET_TRACE_SPOOL",
        "path",
        "trace_spool",
        "Where `traces serve` keeps acknowledged spans until they are merged into LOGS.",
    ),
    Variable(
        "trace_max_body",
        "GOLDENSET_TRACE_MAX_BODY",
        "count",
        str(16 << 20),
        "Largest OTLP request body `traces serve` takes, in bytes, as sent and decompressed (413 past it).",
        "--max-body",
    ),
    Variable(
        "trace_spool_limit",
        "GOLDENSET_TRACE_SPOOL_LIMIT",
        "count",
        str(256 << 20),
        "Bytes of spans `traces serve` holds waiting for the merge; past it, it answers 503.",
        "--spool-limit",
    ),
    Variable(
        "trace_token_file",
        "GOLDENSET_TRACE_TOKEN_FILE",
        "text",
        "",
        "A file holding the bearer token `traces serve` requires (empty: none).",
        "--token-file",
    ),
    Variable(
        "lock_timeout",
        ENV_LOCK_TIMEOUT,
        "seconds",
        "30",
        "Seconds to wait for another process writing the DuckDB file.",
    ),
    Variable(
        "ingest_workers",
        ENV_INGEST_WORKERS,
        "count",
        "0",
        "Processes that stage log days in parallel; 0 ingests straight into the warehouse.",
        "--workers",
    ),
    Variable("nightly_cron", "GOLDENSET_NIGHTLY_CRON", "text", "0 2 * * *", "When the nightly schedule runs (cron)."),
    Variable(
        "staged_cron",
        "GOLDENSET_STAGED_CRON",
        "text",
        "0 1 * * *",
        "When the staged nightly schedule (its alternative, for GOLDENSET_INGEST_WORKERS above 0) runs (cron).",
    ),
    Variable("schedule_tz", "GOLDENSET_SCHEDULE_TZ", "text", "UTC", "The time zone of the nightly cron."),
    Variable(
        "owners",
        "GOLDENSET_OWNERS",
        "text",
        "team:goldenset",
        "Who owns the pipeline's assets in the Dagster UI: emails or team:NAME, comma-separated.",
    ),
    Variable(
        "dense_model",
        "GOLDENSET_DENSE_MODEL",
        "text",
        "",
        "A sentence-transformers directory to embed with (empty: the packaged all-MiniLM-L6-v2).",
    ),
)
_BY_NAME = {v.name: v for v in VARIABLES}
PATH_NAMES = tuple(v.name for v in VARIABLES if v.kind == "path")

# The environment settings are read from: the process's, unless a caller scoped another.
_environment: ContextVar[Mapping[str, str] | None] = ContextVar("goldenset_environment", default=None)

Origin = Literal["flag", "variable", "default"]
# Where each path setting this command resolved came from, and the path it resolved to: what
# `named` reads, so a message deep in the library names what the user did.
_resolved: ContextVar[Mapping[str, tuple[Origin, Path]] | None] = ContextVar("goldenset_resolved", default=None)


def _note(name: str, origin: Origin, path: Path) -> None:
    _resolved.set({**(_resolved.get() or {}), name: (origin, path)})


def same_path(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same place once `~` is expanded and each is resolved."""
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError):
        return str(a) == str(b)


@dataclass(frozen=True)
class Named:
    """A path setting as a message names it: as the user gave it, and what to change.

    `origin` None: the path did not come from this command's settings (a library caller's
    own path), so the message names the path alone and both ways to set it.
    """

    name: str
    path: Path
    origin: Origin | None

    def __str__(self) -> str:
        var = _BY_NAME[self.name]
        if self.origin == "flag":
            return f"{var.flag} {self.path}"
        if self.origin == "variable":
            return f"{var.env}={self.path}"
        if self.origin == "default":
            return f"{self.path} (the default)"
        return str(self.path)

    @property
    def fix(self) -> str:
        """What the user changes: the flag they gave, the variable they set (or the flag), else either."""
        var = _BY_NAME[self.name]
        if self.origin == "flag":
            return var.flag
        if self.origin == "variable":
            return f"{var.env} (or {var.flag})"
        return f"{var.flag} or {var.env}"


def named(name: str, path: str | Path | None = None) -> Named:
    """How a message names path setting `name`: `--db PATH` when the flag gave it, `GOLDENSET_DB=PATH`
    when its variable did, `PATH (the default)` otherwise (contract 17.2).

    Reads what this command's settings resolution recorded; `path` is the value the message is
    about (default: the resolved one). A `path` the resolution did not give has no origin.
    """
    recorded = (_resolved.get() or {}).get(name)
    if recorded is None:
        return Named(name, Path(path) if path is not None else default_path(name), None)
    origin, value = recorded
    if path is None:
        return Named(name, value, origin)
    return Named(name, Path(path), origin if same_path(path, value) else None)


def environment() -> Mapping[str, str]:
    """The environment settings are read from now: `os.environ`, or the one `scoped_environment` set."""
    scoped = _environment.get()
    return os.environ if scoped is None else scoped


@contextmanager
def scoped_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Read settings from `values` instead of `os.environ` inside the block (this thread and task only)."""
    token = _environment.set(dict(values))
    try:
        yield
    finally:
        _environment.reset(token)


class Settings(BaseModel):
    """Every setting of one command or code location, resolved once (flag, else variable, else default).

    `from_environment` names the fields whose value came from their variable, so the Dagster
    resources can refer to the variable (`EnvVar`) rather than copy its value into run config.
    """

    model_config = ConfigDict(frozen=True)

    home: Path
    logs: Path
    corpus: Path
    db: Path
    labels: Path
    rubric: Path
    dagster_home: Path
    exports: Path
    reports: Path
    bench_index: Path
    staging: Path
    trace_export: Path
    trace_mapping: Path
    trace_spool: Path
    trace_max_body: int = 16 << 20
    trace_spool_limit: int = 256 << 20
    trace_token_file: str = ""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ingest_workers: int = 0
    nightly_cron: str = "0 2 * * *"
    staged_cron: str = "0 1 * * *"
    schedule_tz: str = "UTC"
    owners: str = "team:goldenset"
    dense_model: str = ""
    from_environment: frozenset[str] = frozenset()

    @classmethod
    def resolve(cls, environ: Mapping[str, str] | None = None, **flags: Any) -> Settings:
        """Each field from its flag in `flags` (None or empty: not given), else its variable, else its default.

        UsageError names the variable (or flag) whose value cannot be read.
        """
        env = environment() if environ is None else environ
        unknown = sorted(set(flags) - set(_BY_NAME))
        if unknown:
            raise TypeError(f"no such setting: {', '.join(unknown)}")
        values: dict[str, Any] = {}
        from_env: set[str] = set()
        home_text = env.get(ENV_HOME)
        values["home"] = Path(home_text).expanduser().resolve() if home_text else default_home()
        if home_text:
            from_env.add("home")
        for var in VARIABLES[1:]:
            flag = flags.get(var.name)
            given = flag is not None and flag != ""
            text = env.get(var.env) or None
            if var.kind == "path":
                if flag is not None and flag != "":
                    values[var.name] = Path(flag).expanduser()
                    _note(var.name, "flag", values[var.name])
                elif text:
                    values[var.name] = Path(text).expanduser()
                    from_env.add(var.name)
                    _note(var.name, "variable", values[var.name])
                else:
                    values[var.name] = _under_home(values["home"], var)
                    _note(var.name, "default", values[var.name])
            elif var.kind == "seconds":
                values[var.name] = _seconds(flag if given else text, var)
                from_env.update([var.name] if not given and text else [])
            elif var.kind == "count":
                values[var.name] = _count(flag if given else text, var)
                from_env.update([var.name] if not given and text else [])
            else:
                values[var.name] = str(flag) if given else (text if text is not None else var.default)
                from_env.update([var.name] if not given and text else [])
        return cls(**values, from_environment=frozenset(from_env))

    @staticmethod
    def variable(name: str) -> Variable:
        """The row of `VARIABLES` for field `name`."""
        return _BY_NAME[name]

    @property
    def paths(self) -> Paths:
        """The inputs and the warehouse, as the build and the commands take them."""
        return Paths(logs=self.logs, corpus=self.corpus, db=self.db, labels=self.labels, rubric=self.rubric)


def _seconds(value: str | float | None, var: Variable) -> float:
    if value is None or value == "":
        return float(var.default)
    try:
        return max(0.0, float(value))
    except ValueError:
        raise UsageError(f"{var.env} must be a number of seconds, got {value!r}") from None


def _count(value: str | int | None, var: Variable) -> int:
    if value is None or value == "":
        return int(var.default)
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        also = f" (or {var.flag})" if var.flag else ""
        raise UsageError(f"{var.env}{also} must be a whole number >= 0, got {value!r}")
    return number


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


# The functions below read one setting from the current environment, for the commands
# that take one or two flags; each is `Settings.resolve` narrowed to what it returns.


def home() -> Path:
    """GOLDENSET_HOME if set (made absolute), else default_home()."""
    value = environment().get(ENV_HOME)
    return Path(value).expanduser().resolve() if value else default_home()


def default_path(name: str) -> Path:
    """Where `name` lives when neither its flag nor its variable is given."""
    return _under_home(home(), _BY_NAME[name])


# The rubric's default place: HOME/rubric.yaml, or the folder HOME/rubrics when only it exists
# (contract 9.5: one rubric per task; the demo writes that folder).
RUBRIC_FOLDER = "rubrics"


def _under_home(home_dir: Path, var: Variable) -> Path:
    path = home_dir / var.default
    if var.name == "rubric" and not path.exists() and (home_dir / RUBRIC_FOLDER).is_dir():
        return home_dir / RUBRIC_FOLDER
    return path


def env_var(name: str) -> str:
    return _BY_NAME[name].env


def resolve(name: str, flag: str | Path | None = None) -> Path:
    """The flag value if given, else the environment variable, else the place under the home.

    Records where the value came from, for `named`.
    """
    origin: Origin
    if flag:
        path, origin = Path(flag).expanduser(), "flag"
    elif value := environment().get(_BY_NAME[name].env):
        path, origin = Path(value).expanduser(), "variable"
    else:
        path, origin = default_path(name), "default"
    _note(name, origin, path)
    return path


def lock_timeout(flag: float | None = None) -> float:
    """Seconds a command waits for another process's write to finish (GOLDENSET_LOCK_TIMEOUT)."""
    var = _BY_NAME["lock_timeout"]
    return _seconds(flag if flag is not None else environment().get(var.env), var)


def ingest_workers(flag: int | None = None) -> int:
    """Processes that stage log days in parallel (GOLDENSET_INGEST_WORKERS); 0 ingests straight into the warehouse."""
    var = _BY_NAME["ingest_workers"]
    return _count(flag if flag is not None else environment().get(var.env), var)


def count(name: str, flag: int | None = None) -> int:
    """A whole-number setting: the flag if given, else its variable, else its default."""
    var = _BY_NAME[name]
    return _count(flag if flag is not None else environment().get(var.env), var)


def text(name: str, flag: str | None = None) -> str:
    """A text setting: the flag if given (even empty), else its variable, else its default."""
    var = _BY_NAME[name]
    if flag is not None:
        return flag
    return environment().get(var.env) or var.default


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
    """One line per path: its variable and its default, for help texts."""
    return "\n".join(f"{env_var(name)}: {default_path(name)}" for name in PATH_NAMES)


def markdown_reference() -> str:
    """The settings as a Markdown table (variable, default, meaning), generated from `VARIABLES`."""
    rows = ["| Variable | Default | Meaning |", "| --- | --- | --- |"]
    for var in VARIABLES:
        if var.kind == "home":
            default = "the checkout's `var/`, else the user data directory"
        elif var.kind == "path":
            default = f"`HOME/{var.default}`"
        else:
            default = f"`{var.default}`" if var.default else "(empty)"
        rows.append(f"| `{var.env}` | {default} | {var.help} |")
    return "\n".join(rows) + "\n"
