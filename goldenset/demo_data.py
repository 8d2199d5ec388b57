"""Deterministic sample data for the demo: a month of serve logs and two corpus snapshots.

`write_demo_data(root)` writes

    root/logs/dt=YYYY-MM-DD/part-0001.jsonl          every day
    root/logs/dt=YYYY-MM-DD/part-0002.jsonl.gz       about one day in four (a second replica)
    root/corpus-v1.jsonl                             the index the logs were served from
    root/corpus-v2.jsonl                             the index after a reindex (drift ~4%)

The corpus is real text: the docstrings of ~25 standard-library modules and of their
public functions, classes and (for a few central classes) methods, as this Python
holds them, plus a handful of house-rule documents that every serve injects with
channel `always`. Four projects ask developer tasks that are hand-matched to the
documents that answer them; a toy ranker mixes those with near-miss documents from
the same module and random ones, and developers mark some items helped/noise/wrong,
mostly in line with relevance.

The data exercises every rule of CONTRACT.md sections 1-3 at least once: task
variants that normalise to one query (case, spacing, tabs, a full-width form, an
NFKC ligature), late verdicts landing in the next day's file, verdicts read before
their serve, re-marked verdicts (later ts wins; a tie goes to the later line; an
older verdict delivered a day late loses), orphan verdicts, verdicts for a doc the
serve did not serve, identical duplicate serves (keys and items reordered, another
offset for the same instant, another session_id), one conflicting duplicate serve,
a few malformed lines (one per rejection reason), blank and white-space-only lines,
a UTF-8 BOM, CRLF line endings, timestamps with `Z`, `+02:00`, `-05:00` and a
7-digit fraction, documents retired before the corpus snapshot (served early in
the month), documents revised in mid-month (served at v1, then v2), and a reindex
that bumps versions, retires, supersedes and adds documents so that some labels
go stale.

Same seed, days and end date: byte-identical files (the stdlib docstrings are those
of the running Python, so another Python version gives another, equally valid, corpus).
Run `python -m goldenset.demo_data ROOT` to write the data and print a summary.
"""

from __future__ import annotations

import gzip
import importlib
import inspect
import random
import sys
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

import orjson

__all__ = ["DemoData", "write_demo_data", "MALFORMED_KINDS"]


@dataclass(frozen=True)
class DemoData:
    """Where the demo data went and what it holds.

    n_serves: distinct serves a build accepts (duplicates and rejected lines excluded).
    n_verdicts: valid verdict lines (orphans, re-marks and unserved-doc verdicts included).
    n_malformed: lines that break a per-line rule of the contract (see MALFORMED_KINDS).
    The remaining fields are what a build over these logs must count as well:
    n_conflicting_serves: valid serve lines rejected as `conflicting_duplicate_serve`
    (so rejected_records holds n_malformed + n_conflicting_serves rows);
    n_duplicate_serves: identical re-sent serve lines (counted once);
    n_orphan_verdicts / n_unserved_item_verdicts / n_unjudged_items as in golden_builds.
    """

    logs: Path
    corpus_before: Path
    corpus_after: Path
    n_serves: int
    n_verdicts: int
    n_malformed: int
    n_conflicting_serves: int = 0
    n_duplicate_serves: int = 0
    n_orphan_verdicts: int = 0
    n_unserved_item_verdicts: int = 0
    n_unjudged_items: int = 0
    n_lines: int = 0


# The deliberate malformed lines, one each, with the reason a build must give.
MALFORMED_KINDS: dict[str, str] = {
    "truncated_line": "invalid_json",
    "nan_score": "invalid_json",
    "json_array": "not_an_object",
    "unknown_event": "unknown_event",
    "verdict_without_ts": "missing_field",
    "ts_without_offset": "invalid_field",
    "rank_as_string": "invalid_field",
    "verdict_maybe": "invalid_field",
}

# --------------------------------------------------------------------------- corpus

MODULES = (
    "argparse", "bisect", "collections", "csv", "datetime", "difflib", "fnmatch",
    "functools", "gzip", "hashlib", "heapq", "itertools", "json", "logging",
    "pathlib", "random", "re", "shutil", "sqlite3", "statistics", "string",
    "tarfile", "textwrap", "urllib.parse", "zipfile",
)

# Classes whose own public methods are documents too.
METHOD_CLASSES = (
    "argparse.ArgumentParser", "collections.Counter", "collections.deque",
    "csv.Sniffer", "datetime.date", "datetime.datetime", "datetime.timedelta",
    "difflib.SequenceMatcher", "itertools.chain", "json.JSONDecoder",
    "json.JSONEncoder", "logging.Handler", "logging.Logger", "pathlib.Path",
    "pathlib.PurePath", "re.Match", "re.Pattern", "sqlite3.Connection",
    "sqlite3.Cursor", "statistics.NormalDist", "tarfile.TarFile",
    "textwrap.TextWrapper", "zipfile.ZipFile",
)

RULES = (
    ("rules/house-style", "House style for answers",
     "Answer with the smallest working example first, then explain. Use the standard "
     "library before adding a dependency, and name the module and function you rely on."),
    ("rules/cite-sources", "Cite the documentation",
     "Every claim about an API must cite the documentation page it comes from, by its "
     "qualified name (for example json.dumps). Do not invent parameters."),
    ("rules/no-secrets", "Never log or echo secrets",
     "Tokens, passwords and connection strings never appear in logs, examples or error "
     "messages. Redact them as *** and read them from the environment."),
    ("rules/python-311", "Target Python 3.11",
     "Code must run on Python 3.11 or later. Prefer pathlib over os.path, f-strings over "
     "%-formatting, and type hints on public functions."),
)

PROJECT_RULES = {
    "data-tools": ("rules/house-style", "rules/cite-sources", "rules/python-311"),
    "web-api": ("rules/house-style", "rules/cite-sources", "rules/no-secrets"),
    "cli-kit": ("rules/house-style", "rules/cite-sources", "rules/python-311"),
    "ops-runbooks": ("rules/house-style", "rules/cite-sources", "rules/no-secrets"),
}

PROJECT_WEIGHTS = {"data-tools": 4, "web-api": 3, "cli-kit": 2, "ops-runbooks": 2}

# Tasks a developer would ask, each with the documents that answer it (qualified
# names under stdlib/). Names this Python does not document are dropped at run time.
TASKS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "data-tools": (
        ("Parse a CSV file with a custom delimiter", ("csv.reader", "csv.Dialect", "csv.register_dialect")),
        ("Detect the dialect of an unknown CSV file", ("csv.Sniffer", "csv.Sniffer.sniff")),
        ("Write rows to a CSV file", ("csv.writer", "csv.excel")),
        ("Raise the CSV field size limit for huge cells", ("csv.field_size_limit",)),
        ("Compute the median and standard deviation of a column", ("statistics.median", "statistics.stdev", "statistics.pstdev")),
        ("Fit a linear regression to two lists of numbers", ("statistics.linear_regression", "statistics.correlation")),
        ("Split measurements into quartiles", ("statistics.quantiles", "statistics.NormalDist.quantiles")),
        ("Group consecutive records by key", ("itertools.groupby",)),
        ("Flatten a list of lists", ("itertools.chain", "itertools.chain.from_iterable")),
        ("Iterate over pairs of adjacent items", ("itertools.pairwise",)),
        ("Build a running total of a list", ("itertools.accumulate",)),
        ("Find the 10 largest values without sorting everything", ("heapq.nlargest", "heapq.nsmallest")),
        ("Merge several sorted files into one sorted stream", ("heapq.merge",)),
        ("Keep a list sorted while inserting new items", ("bisect.insort", "bisect.bisect_left", "bisect.insort_left")),
        ("Count word frequencies in a text file", ("collections.Counter", "collections.Counter.most_common")),
        ("Compress a JSON export with gzip", ("gzip.open", "gzip.GzipFile", "json.dump")),
        ("Compare two text files and show a unified diff", ("difflib.unified_diff", "difflib.context_diff")),
        ("Sample rows reproducibly with a fixed seed", ("random.seed", "random.sample", "random.Random")),
        ("Load a list of tuples into an in-memory SQLite database", ("sqlite3.connect", "sqlite3.Connection.executemany", "sqlite3.Cursor.executemany")),
        ("Fetch query results from SQLite in batches", ("sqlite3.Cursor.fetchmany", "sqlite3.Cursor.fetchall")),
    ),
    "web-api": (
        ("Parse query string parameters from a URL", ("urllib.parse.parse_qs", "urllib.parse.parse_qsl", "urllib.parse.urlparse")),
        ("Build a URL with encoded query parameters", ("urllib.parse.urlencode", "urllib.parse.quote_plus")),
        ("Join a base URL with a relative path", ("urllib.parse.urljoin",)),
        ("Percent-encode a path segment", ("urllib.parse.quote", "urllib.parse.unquote")),
        ("Serialize a datetime field to JSON", ("json.JSONEncoder", "json.JSONEncoder.default", "datetime.datetime.isoformat")),
        ("Return pretty-printed JSON with sorted keys", ("json.dumps",)),
        ("Handle an invalid JSON request body", ("json.JSONDecodeError", "json.loads")),
        ("Parse an ISO 8601 timestamp with a timezone offset", ("datetime.datetime.fromisoformat", "datetime.timezone")),
        ("Get the current time in UTC", ("datetime.datetime.now", "datetime.datetime.utcnow", "datetime.timezone")),
        ("Convert a Unix timestamp to a datetime", ("datetime.datetime.fromtimestamp", "datetime.datetime.utcfromtimestamp")),
        ("Convert a local timestamp to UTC", ("datetime.datetime.astimezone", "datetime.timezone", "datetime.datetime.utcoffset")),
        ("Cache expensive lookups in memory", ("functools.lru_cache", "functools.cache")),
        ("Validate an email address with a regex", ("re.fullmatch", "re.compile", "re.Pattern.fullmatch")),
        ("Extract all numbers from a string", ("re.findall", "re.finditer")),
        ("Hash a password with a salt", ("hashlib.pbkdf2_hmac",)),
        ("Generate a random API token", ("random.SystemRandom", "random.randbytes", "random.getrandbits")),
        ("Preserve function metadata in a decorator", ("functools.wraps", "functools.update_wrapper")),
        ("Dispatch a handler on the argument type", ("functools.singledispatch", "functools.singledispatchmethod")),
        ("Log each request with a timestamp", ("logging.Formatter", "logging.basicConfig", "logging.Logger.info")),
        ("Compute an ETag for a response body", ("hashlib.sha1", "hashlib.new", "hashlib.md5")),
    ),
    "cli-kit": (
        ("Add a --verbose flag to a command line tool", ("argparse.ArgumentParser", "argparse.Action")),
        ("Support --color and --no-color boolean flags", ("argparse.BooleanOptionalAction",)),
        ("Show default values in the --help output", ("argparse.ArgumentDefaultsHelpFormatter", "argparse.HelpFormatter")),
        ("Accept an input file argument that can also be stdin", ("argparse.FileType",)),
        ("Exit with a usage error from argparse", ("argparse.ArgumentParser.error", "argparse.ArgumentError")),
        ("Find an executable on the PATH", ("shutil.which",)),
        ("Wrap output to the terminal width", ("shutil.get_terminal_size", "textwrap.fill", "textwrap.wrap")),
        ("Truncate long text with an ellipsis", ("textwrap.shorten",)),
        ("Remove common indentation from a multi-line string", ("textwrap.dedent", "textwrap.indent")),
        ("Suggest a command when the user makes a typo", ("difflib.get_close_matches", "difflib.SequenceMatcher")),
        ("Match file names against a glob pattern", ("fnmatch.fnmatch", "fnmatch.filter", "pathlib.PurePath.match")),
        ("Walk a directory tree and list all Python files", ("pathlib.Path.rglob", "pathlib.Path.glob")),
        ("Fill a message template with variables", ("string.Template",)),
        ("Capitalize each word in a title", ("string.capwords",)),
        ("Create a hard link to a file", ("pathlib.Path.hardlink_to", "pathlib.Path.link_to")),
        ("Read and write a text file with a path object", ("pathlib.Path.read_text", "pathlib.Path.write_text")),
        ("Create a config directory and its parents if missing", ("pathlib.Path.mkdir", "pathlib.Path.home")),
    ),
    "ops-runbooks": (
        ("Write logs to a file and to the console", ("logging.FileHandler", "logging.StreamHandler", "logging.Logger.addHandler")),
        ("Silence a noisy third-party logger", ("logging.getLogger", "logging.Logger.setLevel", "logging.disable")),
        ("Log a fatal error before exiting", ("logging.critical", "logging.fatal", "logging.exception")),
        ("Archive a directory as a tar.gz file", ("shutil.make_archive", "tarfile.open", "tarfile.TarFile.add")),
        ("Safely extract a tar archive", ("tarfile.TarFile.extractall", "tarfile.TarFile.extract", "tarfile.TarInfo")),
        ("List the files inside a zip archive", ("zipfile.ZipFile.namelist", "zipfile.ZipFile.infolist")),
        ("Check whether a file is a valid zip archive", ("zipfile.is_zipfile", "zipfile.BadZipFile", "zipfile.BadZipfile")),
        ("Delete a directory tree", ("shutil.rmtree",)),
        ("Check free disk space on a volume", ("shutil.disk_usage",)),
        ("Copy a file to another folder", ("shutil.copy", "shutil.copy2", "shutil.copyfile")),
        ("Copy a directory while preserving metadata", ("shutil.copytree", "shutil.copystat")),
        ("Move a file across file systems", ("shutil.move",)),
        ("Verify a backup file with a SHA-256 checksum", ("hashlib.file_digest", "hashlib.sha256")),
        ("Decompress a gzip log file", ("gzip.open", "gzip.decompress")),
        ("Back up a SQLite database while it is in use", ("sqlite3.Connection.backup",)),
        ("Compute the time between two log timestamps", ("datetime.timedelta", "datetime.datetime.strptime", "datetime.timedelta.total_seconds")),
        ("Keep the last N log lines in memory", ("collections.deque",)),
    ),
}

# The reindex marks deprecated APIs and old spellings as superseded by their
# replacement (those this Python documents; random siblings only if fewer than 3).
PREFERRED_SUPERSEDED = (
    ("stdlib/datetime.datetime.utcnow", "stdlib/datetime.datetime.now"),
    ("stdlib/datetime.datetime.utcfromtimestamp", "stdlib/datetime.datetime.fromtimestamp"),
    ("stdlib/pathlib.Path.link_to", "stdlib/pathlib.Path.hardlink_to"),
    ("stdlib/logging.fatal", "stdlib/logging.critical"),
    ("stdlib/zipfile.BadZipfile", "stdlib/zipfile.BadZipFile"),
    ("stdlib/shutil.copy", "stdlib/shutil.copy2"),
)


@dataclass
class _Doc:
    doc_id: str
    module: str
    title: str
    text: str


def _stdlib_docs() -> list[_Doc]:
    docs: dict[str, _Doc] = {}

    def add(qual: str, module: str, obj) -> None:
        text = inspect.getdoc(obj)
        if text and text.strip():
            doc_id = "stdlib/" + qual
            docs.setdefault(doc_id, _Doc(doc_id, module, qual, text))

    for name in MODULES:
        mod = importlib.import_module(name)
        add(name, name, mod)
        public = getattr(mod, "__all__", None)
        from_all = public is not None
        if public is None:
            public = [n for n in dir(mod) if not n.startswith("_")]
        for attr in sorted(set(public)):
            obj = getattr(mod, attr, None)
            if obj is None or inspect.ismodule(obj):
                continue
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            if not from_all:
                owner = getattr(obj, "__module__", "") or ""
                if not (owner == name or owner.lstrip("_") == name or owner.startswith(name + ".")):
                    continue
            add(f"{name}.{attr}", name, obj)
    for qual in METHOD_CLASSES:
        modname, clsname = qual.rsplit(".", 1)
        cls = getattr(importlib.import_module(modname), clsname, None)
        if cls is None:
            continue
        for attr in sorted(vars(cls)):
            if attr.startswith("_"):
                continue
            obj = getattr(cls, attr, None)
            if obj is not None and inspect.isroutine(obj):
                add(f"{qual}.{attr}", modname, obj)
    return [docs[k] for k in sorted(docs)]


def _revise(text: str, version: str) -> str:
    """The text of a document after an editor revised it."""
    first, _, rest = text.partition("\n")
    note = f"(Revised in {version}: clarified the wording and the examples.)"
    return f"{first}\n\n{note}\n{rest}".rstrip() + "\n"


# --------------------------------------------------------------------------- tasks

_FULLWIDTH = {c: chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
_FULLWIDTH[0x20] = "\u3000"


def _variant(task: str, kind: str) -> str:
    words = task.split(" ")
    if kind == "lower":
        return task.lower()
    if kind == "double_space" and len(words) > 2:
        i = 1 + len(task) % (len(words) - 1)
        return " ".join(words[:i]) + "  " + " ".join(words[i:])
    if kind == "padded":
        return "  " + task + " "
    if kind == "tab" and len(words) > 1:
        return words[0] + "\t" + " ".join(words[1:])
    if kind == "upper_first_word":
        return words[0].upper() + " " + " ".join(words[1:])
    if kind == "fullwidth":
        return task.translate(_FULLWIDTH)
    if kind == "ligature" and "fi" in task:
        return task.replace("fi", "\ufb01")  # NFKC folds the ligature back to "fi"
    return task


_VARIANT_KINDS = ("same", "lower", "double_space", "padded", "tab", "upper_first_word", "fullwidth", "ligature")
_VARIANT_WEIGHTS = (61, 16, 8, 4, 2, 4, 1, 3)

# --------------------------------------------------------------------------- lines

_UTC = timezone.utc


def _ts(instant: datetime, style: str = "Z") -> str:
    if style == "+02:00":
        return (instant + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
    if style == "-05:00":
        return (instant - timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%S") + "-05:00"
    if style == "frac7":
        return instant.strftime("%Y-%m-%dT%H:%M:%S") + f".{instant.microsecond:06d}7Z"
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def _dumps(obj) -> str:
    return orjson.dumps(obj).decode("utf-8")


@dataclass
class _Serve:
    serve_id: str
    instant: datetime
    ts: str
    project: str
    session_id: str
    task: str
    canonical: str
    items: list[dict]
    relevant: frozenset
    day: int

    def record(self) -> dict:
        return {
            "event": "serve", "serve_id": self.serve_id, "ts": self.ts,
            "project": self.project, "session_id": self.session_id,
            "task": self.task, "items": self.items,
        }


class _Log:
    """Lines per (day, part) with the instant they were written, then written in order."""

    def __init__(self, days: int) -> None:
        self.days = days
        self.lines: dict[tuple[int, int], list[tuple[datetime, int, str]]] = {}
        self.seq = 0

    def put(self, day: int, part: int, instant: datetime, line: str) -> None:
        day = min(day, self.days - 1)
        self.seq += 1
        self.lines.setdefault((day, part), []).append((instant, self.seq, line))


# --------------------------------------------------------------------------- main


def write_demo_data(root: Path, *, seed: int = 7, days: int = 30, end: date | None = None) -> DemoData:
    """Write demo serve logs and two corpus snapshots under `root` (see the module doc).

    Days run from end - days + 1 to end (default: today's UTC date). Same arguments
    give byte-identical files. Needs days >= 2 (verdicts land in later files).
    """
    if days < 2:
        raise ValueError("days must be at least 2")
    root = Path(root)
    if end is None:
        end = datetime.now(_UTC).date()
    start = end - timedelta(days=days - 1)
    rng = random.Random(seed)

    # ---- corpus -----------------------------------------------------------------
    stdlib = _stdlib_docs()
    by_id = {d.doc_id: d for d in stdlib}
    tasks: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for project in sorted(TASKS):
        kept = []
        for text, quals in TASKS[project]:
            rel = tuple(dict.fromkeys("stdlib/" + q for q in quals if "stdlib/" + q in by_id))
            if rel:
                kept.append((text, rel))
        tasks[project] = kept
    relevant_ids = sorted({d for p in tasks.values() for _, rel in p for d in rel})
    relevant_set = set(relevant_ids)
    n_docs = len(stdlib)

    task_weights = {}
    for project in sorted(tasks):
        order = list(range(len(tasks[project])))
        rng.shuffle(order)
        weights = [0.0] * len(order)
        for popularity, idx in enumerate(order):
            weights[idx] = 1.0 / (popularity + 1) ** 0.9
        task_weights[project] = weights

    # The documents of each project's three most asked tasks: the mid-month history
    # picks from these so that it surely shows up in the logs.
    popular_ids = sorted({d for p in sorted(tasks) for w, i in
                          sorted(((-w, i) for i, w in enumerate(task_weights[p])))[:3]
                          for d in tasks[p][i][1]})

    # The reindex (v1 -> v2) and the history before v1, all disjoint.
    taken: set[str] = set()

    def pick(pool: list[str], k: int) -> list[str]:
        pool = [d for d in pool if d not in taken]
        chosen = sorted(rng.sample(pool, min(k, len(pool))))
        taken.update(chosen)
        return chosen

    superseded: dict[str, str] = {}
    for old, new in PREFERRED_SUPERSEDED:
        if old in by_id and new in by_id and old not in taken and new not in taken:
            superseded[old] = new
            taken.update((old, new))
    for old in pick(relevant_ids, max(0, 3 - len(superseded))):
        siblings = [d.doc_id for d in stdlib if d.module == by_id[old].module and d.doc_id not in taken]
        if siblings:
            superseded[old] = rng.choice(siblings)
            taken.add(superseded[old])
    retired_v1 = pick(popular_ids, 3)                 # retired before the v1 snapshot
    revised_mid = pick(popular_ids, 3)                # v2 in corpus-v1, served v1 then v2
    bumped_v2 = pick(relevant_ids, max(2, round(n_docs * 0.018)))
    retired_v2 = pick(relevant_ids, max(1, round(n_docs * 0.01)))
    others = [d.doc_id for d in stdlib if d.doc_id not in relevant_set]
    added_v2 = pick(others, max(1, round(n_docs * 0.012)))  # not indexed before the reindex
    retire_day = {d: max(1, days // 3) + i for i, d in enumerate(retired_v1)}
    revise_day = {d: max(1, days // 2) + i for i, d in enumerate(revised_mid)}

    before_window = (start - timedelta(days=90)).isoformat()
    corpus_v1: list[dict] = []
    corpus_v2: list[dict] = []
    for doc_id, title, text in RULES:
        row = {"doc_id": doc_id, "version": "v1", "status": "active", "title": title,
               "text": text, "superseded_by": None, "updated_at": before_window}
        corpus_v1.append(row)
        corpus_v2.append(dict(row))
    for d in stdlib:
        row = {"doc_id": d.doc_id, "version": "v1", "status": "active", "title": d.title,
               "text": d.text, "superseded_by": None, "updated_at": before_window}
        if d.doc_id in retired_v1:
            row["status"] = "retired"
            row["updated_at"] = (start + timedelta(days=retire_day[d.doc_id])).isoformat()
            if d.doc_id == retired_v1[0]:
                row["text"] = ""
        if d.doc_id in revised_mid:
            row["version"] = "v2"
            row["text"] = _revise(d.text, "v2")
            row["updated_at"] = (start + timedelta(days=revise_day[d.doc_id])).isoformat()
        new = dict(row)
        if d.doc_id in bumped_v2:
            new["version"] = "v2"
            new["text"] = _revise(d.text, "v2")
            new["updated_at"] = end.isoformat()
        if d.doc_id in retired_v2:
            new["status"] = "retired"
            new["updated_at"] = end.isoformat()
        if d.doc_id in superseded:
            new["superseded_by"] = superseded[d.doc_id]
            new["updated_at"] = end.isoformat()
        if d.doc_id not in added_v2:
            corpus_v1.append(row)
        else:
            new["updated_at"] = end.isoformat()
        corpus_v2.append(new)
    corpus_v1.sort(key=lambda r: r["doc_id"])
    corpus_v2.sort(key=lambda r: r["doc_id"])

    def servable(doc_id: str, day: int) -> bool:
        if doc_id in added_v2:
            return False
        if doc_id in retire_day:
            return day < retire_day[doc_id]
        return True

    def served_version(doc_id: str, day: int) -> str:
        if doc_id in revise_day and day >= revise_day[doc_id]:
            return "v2"
        return "v1"

    module_docs: dict[str, list[str]] = {}
    for d in stdlib:
        module_docs.setdefault(d.module, []).append(d.doc_id)
    all_docs = [d.doc_id for d in stdlib]

    # ---- serves -----------------------------------------------------------------
    log = _Log(days)
    used_ids: set[str] = set()

    def new_id(prefix: str, bits: int) -> str:
        while True:
            value = f"{prefix}{rng.getrandbits(bits):0{bits // 4}x}"
            if value not in used_ids:
                used_ids.add(value)
                return value

    two_part_days = sorted(rng.sample(range(days), max(1, days // 4)))
    two_part = set(two_part_days)
    projects = sorted(PROJECT_WEIGHTS)
    project_w = [PROJECT_WEIGHTS[p] for p in projects]

    serves: list[_Serve] = []
    for day in range(days):
        the_date = start + timedelta(days=day)
        busy = the_date.weekday() < 5 or days < 7
        n_today = rng.randint(12, 19) if busy else rng.randint(3, 7)
        made = 0
        while made < n_today:
            project = rng.choices(projects, project_w)[0]
            session = new_id("sess-", 24)
            size = min(n_today - made, rng.choice((1, 1, 2, 2, 3, 4)))
            clock = datetime.combine(the_date, time(6, 0), _UTC) + timedelta(seconds=rng.randint(0, 13 * 3600))
            task_idx = rng.choices(range(len(tasks[project])), task_weights[project])[0]
            for n_in_session in range(size):
                if clock.hour >= 20:  # the session ran into the evening: cut short
                    break
                if n_in_session and rng.random() < 0.5:  # asked something else
                    task_idx = rng.choices(range(len(tasks[project])), task_weights[project])[0]
                canonical, rel = tasks[project][task_idx]
                kind = rng.choices(_VARIANT_KINDS, _VARIANT_WEIGHTS)[0]
                style = rng.choices(("Z", "+02:00", "-05:00"), (78, 18, 4))[0]
                items: list[dict] = [
                    {"doc_id": r, "doc_version": "v1", "channel": "always"} for r in PROJECT_RULES[project]
                ]
                rel_now = [d for d in rel if servable(d, day)]
                chosen = [d for d in rel_now if rng.random() < 0.85] or rel_now[:1]
                k = rng.randint(4, 6)
                near = [d for d in module_docs[by_id[rel[0]].module] if d not in rel and servable(d, day)]
                scored = [(0.74 + rng.gauss(0, 0.1), d) for d in chosen]
                picked = set(chosen)
                while len(scored) < k:
                    if near and rng.random() < 0.6:
                        d, base = rng.choice(near), 0.58
                    else:
                        d, base = rng.choice(all_docs), 0.40
                    if d in picked or not servable(d, day):
                        continue
                    picked.add(d)
                    scored.append((base + rng.gauss(0, 0.1), d))
                scored.sort(key=lambda t: (-t[0], t[1]))
                for rank, (score, d) in enumerate(scored, start=1):
                    items.append({"doc_id": d, "doc_version": served_version(d, day), "channel": "ranked",
                                  "rank": rank, "score": round(min(0.99, max(0.05, score)), 3)})
                serves.append(_Serve(new_id("s-", 40), clock, _ts(clock, style), project, session,
                                     _variant(canonical, kind), canonical, items, frozenset(rel), day))
                made += 1
                clock += timedelta(seconds=rng.randint(90, 1500))

    # Make sure the rarer task variants occur at least once.
    later = [s for s in serves if s.day >= 1]
    with_fi = [s for s in later if "fi" in s.canonical]
    forced = rng.sample(later, 2)
    forced[0].task = _variant(forced[0].canonical, "fullwidth")
    forced[1].task = _variant(forced[1].canonical, "tab")
    if with_fi:
        s = rng.choice(with_fi)
        s.task = _variant(s.canonical, "ligature")

    def part_for(day: int) -> int:
        return 2 if day in two_part and rng.random() < 0.5 else 1

    has_part2: set[int] = set()
    for s in serves:
        part = 2 if s.day in two_part and s.day not in has_part2 else part_for(s.day)
        if part == 2:
            has_part2.add(s.day)
        log.put(s.day, part, s.instant, _dumps(s.record()))

    # ---- verdicts -----------------------------------------------------------------
    n_verdicts = 0
    judged: set[tuple[str, str]] = set()

    def put_verdict(serve_id: str, doc_id: str, verdict: str, instant: datetime, *,
                    style: str = "Z", day: int | None = None, part: int | None = None) -> None:
        nonlocal n_verdicts
        if day is None:
            day = (instant.date() - start).days
        if part is None:
            part = part_for(day)
        log.put(day, part, instant, _dumps({"event": "verdict", "serve_id": serve_id, "doc_id": doc_id,
                                            "verdict": verdict, "ts": _ts(instant, style)}))
        n_verdicts += 1

    def draw(relevant: bool, channel: str) -> str:
        if channel == "always":
            return rng.choices(("helped", "noise"), (70, 30))[0]
        if relevant:
            return rng.choices(("helped", "noise", "wrong"), (85, 10, 5))[0]
        return rng.choices(("noise", "wrong", "helped"), (78, 12, 10))[0]

    def day_of(instant: datetime) -> int:
        return (instant.date() - start).days

    # Re-marks: the later ts wins; forced once each: a tie on the instant (the later
    # line wins), an older verdict delivered a day late (it loses), a change of mind
    # the next day.
    remark_kinds = ["tie", "late_old", "next_day"]
    for s in serves:
        for item in s.items:
            doc_id = item["doc_id"]
            ranked = item["channel"] == "ranked"
            p = (0.7 if item["rank"] <= 3 else 0.45) if ranked else 0.12
            if rng.random() >= p:
                continue
            verdict = draw(doc_id in s.relevant, item["channel"])
            judged.add((s.serve_id, doc_id))
            at = s.instant + timedelta(seconds=rng.randint(20, 2400))
            if s.day < days - 1 and rng.random() < 0.06:  # judged the next morning
                at = datetime.combine(s.instant.date() + timedelta(days=1), time(7, 0), _UTC) \
                    + timedelta(seconds=rng.randint(0, 3 * 3600))
            style = rng.choices(("Z", "+02:00", "-05:00", "frac7"), (80, 14, 4, 2))[0]
            if style == "frac7":
                at = at.replace(microsecond=rng.randint(1, 999_999))
            remark = ranked and rng.random() < 0.04
            kind = "later"
            if ranked and remark_kinds and day_of(at) < days - 2:
                remark, kind = True, remark_kinds.pop(0)
            if not remark:
                put_verdict(s.serve_id, doc_id, verdict, at, style=style)
                continue
            first = "noise" if verdict == "helped" else "helped"
            if kind == "tie":  # the same instant written two ways, same file
                part = part_for(day_of(at))
                put_verdict(s.serve_id, doc_id, first, at, part=part)
                put_verdict(s.serve_id, doc_id, verdict, at, style="+02:00", part=part)
            elif kind == "late_old":
                put_verdict(s.serve_id, doc_id, verdict, at + timedelta(seconds=600), style=style)
                put_verdict(s.serve_id, doc_id, first, at, day=day_of(at) + 1, part=1)
            elif kind == "next_day":
                put_verdict(s.serve_id, doc_id, first, at, style=style)
                put_verdict(s.serve_id, doc_id, verdict, at + timedelta(days=1))
            else:
                put_verdict(s.serve_id, doc_id, first, at, style=style)
                put_verdict(s.serve_id, doc_id, verdict, at + timedelta(seconds=rng.randint(60, 3600)))

    # ---- the special cases ------------------------------------------------------
    not_last = [s for s in serves if s.day < days - 1]
    dup_b, conflict = rng.sample(not_last, 2)
    rest = [s for s in serves if s is not dup_b and s is not conflict]
    dup_a, dup_c, unserved_a, unserved_b, unserved_c, bad_verdict = rng.sample(rest, 6)

    # Identical duplicates: a client retry re-sent the serve.
    rec = dup_a.record()
    log.put(dup_a.day, 1, dup_a.instant + timedelta(seconds=1), _dumps(dict(reversed(list(rec.items())))))
    rec = dup_b.record()
    rec["items"] = list(reversed(rec["items"]))
    rec["ts"] = _ts(dup_b.instant, "+02:00" if dup_b.ts.endswith("Z") else "Z")  # same instant
    log.put(dup_b.day + 1, 1, dup_b.instant + timedelta(days=1), _dumps(dict(sorted(rec.items()))))
    rec = dup_c.record()
    rec["session_id"] = new_id("sess-", 24)
    rec = {k: rec[k] for k in ("items", "task", "project", "ts", "serve_id", "event", "session_id")}
    log.put(dup_c.day, 1, dup_c.instant + timedelta(seconds=30), _dumps(rec))
    n_duplicates = 3

    # A conflicting duplicate: the same serve_id reused for another task the next day.
    rec = conflict.record()
    others_tasks = [t for t, _ in tasks[conflict.project] if t != conflict.canonical]
    rec["task"] = rng.choice(others_tasks)
    log.put(conflict.day + 1, 1, conflict.instant + timedelta(days=1), _dumps(rec))

    # Orphans: verdicts for serves that never reached the log.
    n_orphans = 0
    for day in sorted(rng.randrange(days) for _ in range(3)):
        at = datetime.combine(start + timedelta(days=day), time(12, 0), _UTC) + timedelta(seconds=rng.randint(0, 4 * 3600))
        put_verdict(new_id("s-", 40), rng.choice(relevant_ids), "helped", at)
        n_orphans += 1

    # Verdicts naming a doc the serve did not serve.
    n_unserved = 0
    for s in (unserved_a, unserved_b, unserved_c):
        served = {i["doc_id"] for i in s.items}
        doc_id = next(d for d in (rng.choice(all_docs) for _ in range(100)) if d not in served)
        put_verdict(s.serve_id, doc_id, rng.choice(("helped", "noise")), s.instant + timedelta(minutes=7))
        n_unserved += 1

    # Malformed lines, one per kind; the serves among them use fresh ids.
    def noon(day: int) -> datetime:
        return datetime.combine(start + timedelta(days=day), time(11, 0), _UTC) + timedelta(seconds=rng.randint(0, 5 * 3600))

    def bad_serve(day: int, at: datetime) -> dict:
        project = rng.choice(projects)
        text, rel = tasks[project][0]
        return {"event": "serve", "serve_id": new_id("s-", 40), "ts": _ts(at), "project": project,
                "session_id": new_id("sess-", 24), "task": text,
                "items": [{"doc_id": rel[0], "doc_version": served_version(rel[0], day),
                           "channel": "ranked", "rank": 1, "score": 0.71}]}

    malformed_days = [(i * (days - 1)) // 7 for i in range(8)]
    n_malformed = 0
    for kind, day in zip(MALFORMED_KINDS, malformed_days):
        at = noon(day)
        rec = bad_serve(day, at)
        if kind == "truncated_line":
            full = _dumps(rec)
            line = full[: len(full) // 2]
        elif kind == "nan_score":
            line = _dumps(rec).replace('"score":0.71', '"score":NaN')
        elif kind == "json_array":
            line = _dumps(["serve", rec["serve_id"], rec["ts"], rec["project"], rec["task"]])
        elif kind == "unknown_event":
            line = _dumps({"event": "click", "serve_id": rec["serve_id"], "ts": rec["ts"], "doc_id": rec["items"][0]["doc_id"]})
        elif kind == "verdict_without_ts":
            item = bad_verdict.items[-1]
            line = _dumps({"event": "verdict", "serve_id": bad_verdict.serve_id, "doc_id": item["doc_id"], "verdict": "noise"})
            day, at = bad_verdict.day, bad_verdict.instant + timedelta(minutes=3)
        elif kind == "ts_without_offset":
            rec["ts"] = at.strftime("%Y-%m-%dT%H:%M:%S")
            line = _dumps(rec)
        elif kind == "rank_as_string":
            rec["items"][0]["rank"] = "1"
            line = _dumps(rec)
        elif kind == "verdict_maybe":
            item = bad_verdict.items[-2]
            line = _dumps({"event": "verdict", "serve_id": bad_verdict.serve_id, "doc_id": item["doc_id"],
                           "verdict": "maybe", "ts": _ts(bad_verdict.instant + timedelta(minutes=4))})
            day, at = bad_verdict.day, bad_verdict.instant + timedelta(minutes=4)
        else:  # pragma: no cover
            raise AssertionError(kind)
        log.put(day, 1, at, line)
        n_malformed += 1

    # Blank and white-space-only lines.
    for day in range(0, days, 3):
        log.put(day, 1, noon(day), rng.choice(("", "   ", "\t", " \t ")))

    # ---- write ------------------------------------------------------------------
    logs = root / "logs"
    n_lines = 0
    for (day, part) in sorted(log.lines):
        entries = sorted(log.lines[(day, part)], key=lambda e: (e[0], e[1]))
        folder = logs / f"dt={(start + timedelta(days=day)).isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        newline = "\r\n" if (day == days // 2 and part == 1) else "\n"
        text = newline.join(e[2] for e in entries) + newline
        if day == 0 and part == 1:
            text = "\ufeff" + text
        data = text.encode("utf-8")
        n_lines += len(entries)
        if part == 1:
            (folder / "part-0001.jsonl").write_bytes(data)
        else:
            (folder / "part-0002.jsonl.gz").write_bytes(gzip.compress(data, compresslevel=6, mtime=0))

    root.mkdir(parents=True, exist_ok=True)
    before, after = root / "corpus-v1.jsonl", root / "corpus-v2.jsonl"
    before.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in corpus_v1))
    after.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in corpus_v2))

    unjudged = sum(1 for s in serves for i in s.items if (s.serve_id, i["doc_id"]) not in judged)
    return DemoData(
        logs=logs, corpus_before=before, corpus_after=after,
        n_serves=len(serves), n_verdicts=n_verdicts, n_malformed=n_malformed,
        n_conflicting_serves=1, n_duplicate_serves=n_duplicates,
        n_orphan_verdicts=n_orphans, n_unserved_item_verdicts=n_unserved,
        n_unjudged_items=unjudged, n_lines=n_lines,
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m goldenset.demo_data ROOT", file=sys.stderr)
        return 2
    demo = write_demo_data(Path(args[0]))
    for name, value in vars(demo).items():
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
