"""The projects, the tasks their developers ask, and the task variants that normalise to one query."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass

PROJECT_RULES = {
    "data-tools": ("rules/house-style", "rules/cite-sources", "rules/python-311"),
    "web-api": ("rules/house-style", "rules/cite-sources", "rules/no-secrets"),
    "cli-kit": ("rules/house-style", "rules/cite-sources", "rules/python-311"),
    "ops-runbooks": ("rules/house-style", "rules/cite-sources", "rules/no-secrets"),
    "support": ("rules/support-tone", "rules/no-secrets"),
}

PROJECT_WEIGHTS = {"data-tools": 4, "web-api": 3, "cli-kit": 2, "ops-runbooks": 2, "support": 2}

# Tasks people ask, each with the documents that answer it as the logs' index saw
# them: qualified names under stdlib/ (names this Python does not document are
# dropped at run time), or doc_ids of the support-policies section (policies.py).
# The support team's refund questions are answered by the 2022 page: the only refund
# page that index held.
TASKS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "data-tools": (
        ("Parse a CSV file with a custom delimiter", ("csv.reader", "csv.Dialect", "csv.register_dialect")),
        ("Detect the dialect of an unknown CSV file", ("csv.Sniffer", "csv.Sniffer.sniff")),
        ("Write rows to a CSV file", ("csv.writer", "csv.excel")),
        ("Raise the CSV field size limit for huge cells", ("csv.field_size_limit",)),
        (
            "Compute the median and standard deviation of a column",
            ("statistics.median", "statistics.stdev", "statistics.pstdev"),
        ),
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
        (
            "Load a list of tuples into an in-memory SQLite database",
            ("sqlite3.connect", "sqlite3.Connection.executemany", "sqlite3.Cursor.executemany"),
        ),
        ("Fetch query results from SQLite in batches", ("sqlite3.Cursor.fetchmany", "sqlite3.Cursor.fetchall")),
    ),
    "web-api": (
        (
            "Parse query string parameters from a URL",
            ("urllib.parse.parse_qs", "urllib.parse.parse_qsl", "urllib.parse.urlparse"),
        ),
        ("Build a URL with encoded query parameters", ("urllib.parse.urlencode", "urllib.parse.quote_plus")),
        ("Join a base URL with a relative path", ("urllib.parse.urljoin",)),
        ("Percent-encode a path segment", ("urllib.parse.quote", "urllib.parse.unquote")),
        (
            "Serialize a datetime field to JSON",
            ("json.JSONEncoder", "json.JSONEncoder.default", "datetime.datetime.isoformat"),
        ),
        ("Return pretty-printed JSON with sorted keys", ("json.dumps",)),
        ("Handle an invalid JSON request body", ("json.JSONDecodeError", "json.loads")),
        (
            "Parse an ISO 8601 timestamp with a timezone offset",
            ("datetime.datetime.fromisoformat", "datetime.timezone"),
        ),
        ("Get the current time in UTC", ("datetime.datetime.now", "datetime.datetime.utcnow", "datetime.timezone")),
        (
            "Convert a Unix timestamp to a datetime",
            ("datetime.datetime.fromtimestamp", "datetime.datetime.utcfromtimestamp"),
        ),
        (
            "Convert a local timestamp to UTC",
            ("datetime.datetime.astimezone", "datetime.timezone", "datetime.datetime.utcoffset"),
        ),
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
        (
            "Show default values in the --help output",
            ("argparse.ArgumentDefaultsHelpFormatter", "argparse.HelpFormatter"),
        ),
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
        (
            "Write logs to a file and to the console",
            ("logging.FileHandler", "logging.StreamHandler", "logging.Logger.addHandler"),
        ),
        ("Silence a noisy third-party logger", ("logging.getLogger", "logging.Logger.setLevel", "logging.disable")),
        ("Log a fatal error before exiting", ("logging.critical", "logging.fatal", "logging.exception")),
        ("Archive a directory as a tar.gz file", ("shutil.make_archive", "tarfile.open", "tarfile.TarFile.add")),
        ("Safely extract a tar archive", ("tarfile.TarFile.extractall", "tarfile.TarFile.extract", "tarfile.TarInfo")),
        ("List the files inside a zip archive", ("zipfile.ZipFile.namelist", "zipfile.ZipFile.infolist")),
        (
            "Check whether a file is a valid zip archive",
            ("zipfile.is_zipfile", "zipfile.BadZipFile", "zipfile.BadZipfile"),
        ),
        ("Delete a directory tree", ("shutil.rmtree",)),
        ("Check free disk space on a volume", ("shutil.disk_usage",)),
        ("Copy a file to another folder", ("shutil.copy", "shutil.copy2", "shutil.copyfile")),
        ("Copy a directory while preserving metadata", ("shutil.copytree", "shutil.copystat")),
        ("Move a file across file systems", ("shutil.move",)),
        ("Verify a backup file with a SHA-256 checksum", ("hashlib.file_digest", "hashlib.sha256")),
        ("Decompress a gzip log file", ("gzip.open", "gzip.decompress")),
        ("Back up a SQLite database while it is in use", ("sqlite3.Connection.backup",)),
        (
            "Compute the time between two log timestamps",
            ("datetime.timedelta", "datetime.datetime.strptime", "datetime.timedelta.total_seconds"),
        ),
        ("Keep the last N log lines in memory", ("collections.deque",)),
    ),
    "support": (
        ("How many days does a customer have to request a refund?", ("policies/refunds-2022.md",)),
        (
            "Can a customer get a refund after cancelling an annual plan?",
            ("policies/refunds-2022.md", "policies/cancellations.md"),
        ),
        ("How do I cancel a subscription before it renews?", ("policies/cancellations.md",)),
        ("Is a customer owed service credits after an outage?", ("policies/service-credits.md",)),
        ("How long do we keep customer data after an account is closed?", ("legal/data-retention.md",)),
        ("Can a customer get a VAT invoice for an old payment?", ("policies/invoices.md",)),
    ),
}


@dataclass(frozen=True)
class Task:
    """A question a project asks, in its canonical wording, and the documents that answer it."""

    project: str
    text: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class ProjectTasks:
    """A project's tasks and how often each is asked (a Zipf-like popularity, drawn once)."""

    project: str
    tasks: tuple[Task, ...]
    weights: tuple[float, ...]

    def draw(self, rng: random.Random) -> Task:
        """One task, by popularity."""
        return rng.choices(self.tasks, self.weights)[0]

    def most_asked(self, n: int) -> tuple[Task, ...]:
        """The n most popular tasks (ties: table order)."""
        order = sorted(range(len(self.tasks)), key=lambda i: (-self.weights[i], i))
        return tuple(self.tasks[i] for i in order[:n])


def doc_id_of(name: str) -> str:
    """The doc_id a TASKS entry names: a doc_id as it is, a qualified stdlib name under stdlib/."""
    return name if "/" in name else "stdlib/" + name


def named_doc_ids() -> frozenset[str]:
    """Every doc_id some task of TASKS names."""
    return frozenset(doc_id_of(n) for project in TASKS.values() for _, names in project for n in names)


def resolve_tasks(known: Collection[str]) -> dict[str, tuple[Task, ...]]:
    """TASKS with the answers this Python documents (`known` doc_ids); tasks left with none are dropped."""
    out: dict[str, tuple[Task, ...]] = {}
    for project in sorted(TASKS):
        kept = []
        for text, names in TASKS[project]:
            answers = tuple(dict.fromkeys(doc_id_of(n) for n in names if doc_id_of(n) in known))
            if answers:
                kept.append(Task(project, text, answers))
        out[project] = tuple(kept)
    return out


def draw_popularity(rng: random.Random, tasks: Mapping[str, tuple[Task, ...]]) -> dict[str, ProjectTasks]:
    """Shuffle each project's tasks into a popularity order: the k-th most asked weighs 1 / k^0.9."""
    out: dict[str, ProjectTasks] = {}
    for project in sorted(tasks):
        order = list(range(len(tasks[project])))
        rng.shuffle(order)
        weights = [0.0] * len(order)
        for popularity, idx in enumerate(order):
            weights[idx] = 1.0 / (popularity + 1) ** 0.9
        out[project] = ProjectTasks(project, tasks[project], tuple(weights))
    return out


# --------------------------------------------------------------------------- variants

_FULLWIDTH = {c: chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
_FULLWIDTH[0x20] = "\u3000"

VARIANT_KINDS = ("same", "lower", "double_space", "padded", "tab", "upper_first_word", "fullwidth", "ligature")
VARIANT_WEIGHTS = (61, 16, 8, 4, 2, 4, 1, 3)


def variant(task: str, kind: str) -> str:
    """The task as a developer typed it: another case, spacing, a full-width form or a ligature."""
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
