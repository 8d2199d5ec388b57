"""The corpus: stdlib docstrings and house rules, the reindex plan, and the two snapshots it makes.

The stdlib documents are the docstrings of ~25 standard-library modules and of their
public functions, classes and (for a few central classes) methods, as this Python
holds them. The house rules are injected into every serve with channel `always`.
"""

from __future__ import annotations

import importlib
import inspect
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any


@dataclass(frozen=True)
class Doc:
    """A document of the corpus as first indexed; `module` groups near-miss neighbours."""

    doc_id: str
    module: str
    title: str
    text: str


MODULES = (
    "argparse",
    "bisect",
    "collections",
    "csv",
    "datetime",
    "difflib",
    "fnmatch",
    "functools",
    "gzip",
    "hashlib",
    "heapq",
    "itertools",
    "json",
    "logging",
    "pathlib",
    "random",
    "re",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "tarfile",
    "textwrap",
    "urllib.parse",
    "zipfile",
)

# Classes whose own public methods are documents too.
METHOD_CLASSES = (
    "argparse.ArgumentParser",
    "collections.Counter",
    "collections.deque",
    "csv.Sniffer",
    "datetime.date",
    "datetime.datetime",
    "datetime.timedelta",
    "difflib.SequenceMatcher",
    "itertools.chain",
    "json.JSONDecoder",
    "json.JSONEncoder",
    "logging.Handler",
    "logging.Logger",
    "pathlib.Path",
    "pathlib.PurePath",
    "re.Match",
    "re.Pattern",
    "sqlite3.Connection",
    "sqlite3.Cursor",
    "statistics.NormalDist",
    "tarfile.TarFile",
    "textwrap.TextWrapper",
    "zipfile.ZipFile",
)

RULES = (
    Doc(
        "rules/house-style",
        "rules",
        "House style for answers",
        "Answer with the smallest working example first, then explain. Use the standard "
        "library before adding a dependency, and name the module and function you rely on.",
    ),
    Doc(
        "rules/cite-sources",
        "rules",
        "Cite the documentation",
        "Every claim about an API must cite the documentation page it comes from, by its "
        "qualified name (for example json.dumps). Do not invent parameters.",
    ),
    Doc(
        "rules/no-secrets",
        "rules",
        "Never log or echo secrets",
        "Tokens, passwords and connection strings never appear in logs, examples or error "
        "messages. Redact them as *** and read them from the environment.",
    ),
    Doc(
        "rules/python-311",
        "rules",
        "Target Python 3.11",
        "Code must run on Python 3.11 or later. Prefer pathlib over os.path, f-strings over "
        "%-formatting, and type hints on public functions.",
    ),
    Doc(
        "rules/support-tone",
        "rules",
        "Answer customers plainly",
        "Quote the policy that applies and the date it took effect. Never promise a refund, credit or "
        "exception the policy does not grant; escalate to a team lead instead.",
    ),
)

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


# The first embedding of the corpus is most of the demo's time (MiniLM on a CPU, every
# batch padded to its longest text), so the corpus keeps what the tasks need: each listed
# class's methods that some task names, plus a few others as near misses, and each
# docstring cut to an excerpt, as an index chunks a long page.
METHOD_NEAR_MISSES = 4
EXCERPT_CHARS = 600


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Whole lines of the text up to `limit` characters; the first line at least, cut to the limit."""
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    out = lines[0][:limit]
    for line in lines[1:]:
        if len(out) + 1 + len(line) > limit:
            break
        out += "\n" + line
    return out.rstrip()


def stdlib_docs(wanted: Collection[str] = ()) -> tuple[Doc, ...]:
    """A document per documented module, public class or function, and some methods of the listed classes.

    Methods: those in `wanted` (doc_ids some task names) and the first METHOD_NEAR_MISSES
    others of each class, alphabetically. Sorted by doc_id.
    """
    docs: dict[str, Doc] = {}

    def add(qual: str, module: str, obj: Any) -> bool:
        text = inspect.getdoc(obj)
        doc_id = "stdlib/" + qual
        if not text or not text.strip() or doc_id in docs:
            return False
        docs[doc_id] = Doc(doc_id, module, qual, excerpt(text))
        return True

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
                # Without __all__, dir() also lists what the module imported from elsewhere.
                owner = getattr(obj, "__module__", "") or ""
                if not (owner == name or owner.lstrip("_") == name or owner.startswith(name + ".")):
                    continue
            add(f"{name}.{attr}", name, obj)
    for qual in METHOD_CLASSES:
        modname, clsname = qual.rsplit(".", 1)
        cls = getattr(importlib.import_module(modname), clsname, None)
        if cls is None:
            continue
        others = 0
        for attr in sorted(vars(cls)):
            if attr.startswith("_"):
                continue
            obj = getattr(cls, attr, None)
            if obj is None or not inspect.isroutine(obj):
                continue
            if f"stdlib/{qual}.{attr}" in wanted:
                add(f"{qual}.{attr}", modname, obj)
            elif others < METHOD_NEAR_MISSES and add(f"{qual}.{attr}", modname, obj):
                others += 1
    return tuple(docs[k] for k in sorted(docs))


def revise(text: str, version: str) -> str:
    """The text of a document after an editor revised it."""
    first, _, rest = text.partition("\n")
    note = f"(Revised in {version}: clarified the wording and the examples.)"
    return f"{first}\n\n{note}\n{rest}".rstrip() + "\n"


# --------------------------------------------------------------------------- the reindex plan


@dataclass(frozen=True)
class Reindex:
    """What happens to documents during the month and at the reindex (v1 -> v2); the sets are disjoint.

    retired_v1: retired before the v1 snapshot, served until their retire day.
    revised_mid: at v2 in corpus-v1, served at v1 until their revise day, then at v2.
    bumped_v2 / retired_v2 / superseded: what the reindex changes.
    added_v2: only indexed by the reindex, so never served.
    """

    superseded: Mapping[str, str]
    retired_v1: tuple[str, ...]
    revised_mid: tuple[str, ...]
    bumped_v2: tuple[str, ...]
    retired_v2: tuple[str, ...]
    added_v2: tuple[str, ...]
    retire_day: Mapping[str, int] = field(default_factory=dict)
    revise_day: Mapping[str, int] = field(default_factory=dict)

    def servable(self, doc_id: str, day: int) -> bool:
        """Whether the index held the document on that day."""
        if doc_id in self.added_v2:
            return False
        if doc_id in self.retire_day:
            return day < self.retire_day[doc_id]
        return True

    def served_version(self, doc_id: str, day: int) -> str:
        """The version a serve on that day carried."""
        if doc_id in self.revise_day and day >= self.revise_day[doc_id]:
            return "v2"
        return "v1"


class _Picker:
    """Draws disjoint sets of documents: each pick leaves out what earlier picks took."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.taken: set[str] = set()

    def pick(self, pool: Sequence[str], k: int) -> tuple[str, ...]:
        free = [d for d in pool if d not in self.taken]
        chosen = sorted(self.rng.sample(free, min(k, len(free))))
        self.taken.update(chosen)
        return tuple(chosen)


def plan_reindex(
    rng: random.Random, docs: Sequence[Doc], relevant: Sequence[str], popular: Sequence[str], days: int
) -> Reindex:
    """Choose the month's retirements and revisions and the reindex's bumps, retirements, supersessions, additions.

    `relevant`: documents some task is answered by (sorted); `popular`: those of each
    project's three most asked tasks, so that the mid-month history surely shows in the logs.
    """
    by_id = {d.doc_id: d for d in docs}
    n_docs = len(docs)
    picker = _Picker(rng)
    superseded: dict[str, str] = {}
    for old, new in PREFERRED_SUPERSEDED:
        if old in by_id and new in by_id and old not in picker.taken and new not in picker.taken:
            superseded[old] = new
            picker.taken.update((old, new))
    for old in picker.pick(relevant, max(0, 3 - len(superseded))):
        siblings = [d.doc_id for d in docs if d.module == by_id[old].module and d.doc_id not in picker.taken]
        if siblings:
            superseded[old] = rng.choice(siblings)
            picker.taken.add(superseded[old])
    retired_v1 = picker.pick(popular, 3)
    revised_mid = picker.pick(popular, 3)
    bumped_v2 = picker.pick(relevant, max(2, round(n_docs * 0.018)))
    retired_v2 = picker.pick(relevant, max(1, round(n_docs * 0.01)))
    relevant_set = set(relevant)
    others = [d.doc_id for d in docs if d.doc_id not in relevant_set]
    added_v2 = picker.pick(others, max(1, round(n_docs * 0.012)))
    return Reindex(
        superseded=superseded,
        retired_v1=retired_v1,
        revised_mid=revised_mid,
        bumped_v2=bumped_v2,
        retired_v2=retired_v2,
        added_v2=added_v2,
        retire_day={d: max(1, days // 3) + i for i, d in enumerate(retired_v1)},
        revise_day={d: max(1, days // 2) + i for i, d in enumerate(revised_mid)},
    )


# --------------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class CorpusRow:
    """One row of a corpus snapshot file (contract section 2)."""

    doc_id: str
    version: str
    status: str
    title: str
    text: str
    superseded_by: str | None
    updated_at: str

    def to_json(self) -> dict[str, Any]:
        """The row as written: its fields are the file's keys, in the file's key order."""
        return asdict(self)


@dataclass(frozen=True)
class Snapshots:
    """The index the logs were served from (before) and the index after the reindex (after), by doc_id."""

    before: tuple[CorpusRow, ...]
    after: tuple[CorpusRow, ...]

    def merged(self, before: Collection[CorpusRow], after: Collection[CorpusRow]) -> Snapshots:
        """These snapshots with more rows (another section of the corpus), still sorted by doc_id."""
        return Snapshots(
            tuple(sorted((*self.before, *before), key=lambda r: r.doc_id)),
            tuple(sorted((*self.after, *after), key=lambda r: r.doc_id)),
        )


def _row(doc: Doc, updated_at: str) -> CorpusRow:
    return CorpusRow(doc.doc_id, "v1", "active", doc.title, doc.text, None, updated_at)


def _before(doc: Doc, plan: Reindex, start: date, updated_at: str) -> CorpusRow:
    """The document in corpus-v1: as written, retired in mid-month, or revised in mid-month."""
    row = _row(doc, updated_at)
    if doc.doc_id in plan.retired_v1:
        # The first retirement also lost its text: a retired row may have none.
        text = "" if doc.doc_id == plan.retired_v1[0] else row.text
        day = (start + timedelta(days=plan.retire_day[doc.doc_id])).isoformat()
        row = CorpusRow(row.doc_id, row.version, "retired", row.title, text, None, day)
    if doc.doc_id in plan.revised_mid:
        day = (start + timedelta(days=plan.revise_day[doc.doc_id])).isoformat()
        row = CorpusRow(row.doc_id, "v2", row.status, row.title, revise(doc.text, "v2"), None, day)
    return row


def _after(doc: Doc, before: CorpusRow, plan: Reindex, end: date) -> CorpusRow:
    """The document in corpus-v2: what the reindex bumped, retired or superseded, else unchanged."""
    version, status, text, superseded_by, updated_at = (
        before.version,
        before.status,
        before.text,
        before.superseded_by,
        before.updated_at,
    )
    if doc.doc_id in plan.bumped_v2:
        version, text, updated_at = "v2", revise(doc.text, "v2"), end.isoformat()
    if doc.doc_id in plan.retired_v2:
        status, updated_at = "retired", end.isoformat()
    if doc.doc_id in plan.superseded:
        superseded_by, updated_at = plan.superseded[doc.doc_id], end.isoformat()
    if doc.doc_id in plan.added_v2:
        updated_at = end.isoformat()
    return CorpusRow(doc.doc_id, version, status, before.title, text, superseded_by, updated_at)


def snapshots(rules: Collection[Doc], docs: Sequence[Doc], plan: Reindex, start: date, end: date) -> Snapshots:
    """Both corpus snapshots, sorted by doc_id; rules never change, documents follow the plan."""
    # Every document was last touched well before the window, unless the plan says otherwise.
    untouched = (start - timedelta(days=90)).isoformat()
    before = [_row(r, untouched) for r in rules]
    after = list(before)
    for doc in docs:
        row = _before(doc, plan, start, untouched)
        if doc.doc_id not in plan.added_v2:
            before.append(row)
        after.append(_after(doc, row, plan, end))
    return Snapshots(tuple(sorted(before, key=lambda r: r.doc_id)), tuple(sorted(after, key=lambda r: r.doc_id)))
