"""`make mutants`: apply each reviewed one-line change to the code and check that its tests catch it.

Every `mutants/*.toml` file holds `[[mutant]]` entries, each a rule of the contract broken by
one change of one line: `id` (unique across all files), `section` (the contract section whose
rule it breaks), `rule` (that rule in one line), `file` (from the repository root), `find` (the
exact text, which must occur exactly once in the file), `replace` (what it becomes) and
`tests` (pytest node ids that must fail with the change). For each entry the runner writes the
change into the file, runs the tests, restores the file and reports the outcome; it exits 1
when any entry survived or ended in an error, 2 when the list itself is invalid.

Decisions
---------
- **In place.** Tests run `python -m goldenset` from the editable install, which reads this
  checkout; a mutated copy of the tree would not be what those processes import. So the
  change is written into the file itself and the original bytes (and mtime) are written back
  in a `finally`. SIGTERM is turned into an exception so that `finally` runs too; for a kill
  that skips it (SIGKILL, a power cut) the original is first saved under
  `var/mutants/backup/`, and the next start restores a file it finds still holding that
  mutation (and stops, naming the file, when the file has changed since in some other way).
- **A dirty file is refused.** Before anything runs, a file an entry mutates that differs from
  git's HEAD stops the run: a mutated file left over from some other tool would make every
  verdict wrong. `--allow-dirty` (`make mutants ALLOW_DIRTY=1`) runs on an edited file, for
  the entry you are writing before its commit.
- **Sequential.** Every process that imports the package sees a file mutated in place, so two
  mutants run at once could kill each other's tests; there is no `-j`.
- **Bytecode.** Each run sets PYTHONDONTWRITEBYTECODE=1 (no .pyc of a mutant is ever written)
  and gives the mutated file an mtime distinct from the original's, so no cached .pyc of the
  original can stand in for the mutant; restoring the original mtime keeps the original's
  cached bytecode valid.
- **The command**: `python -m pytest -x -q -p no:cacheprovider -p no:randomly -n 0
  --junitxml=... NODE_IDS` (`-n 0` only when pytest-xdist is installed), with
  HYPOTHESIS_PROFILE=ci unless one is set, so a property test draws the same examples on
  every run, and a timeout (`--timeout`, default 900 s) after which the whole process group
  is killed.
- **Outcomes**, read from pytest's exit code and its JUnit XML: `killed` when a listed test
  failed in its call (an assertion, or an exception the mutant raised inside the test);
  `survived` when the tests passed; `error` otherwise: a timeout, a collection or usage error
  (exit 2 to 5), an error in a fixture's setup or teardown only, or every test skipped. An
  error is not a kill: a mutant that only breaks the test set-up, or a test that could not
  run, shows nothing about the rule, so the entry needs another change or another test.
- **Baseline.** Before any mutant, the selected entries' tests run once on the unmutated
  tree; when they fail the run stops (exit 2): a kill means nothing when the test fails
  anyway. `--no-baseline` skips it.
- **`--check`** runs no test: every file parses, every entry has exactly the seven keys with
  the right types, the ids are unique across files, `find` occurs exactly once in its file
  and differs from `replace`, and each test node id names a test file under `tests/` and a
  function (or a method of a class) defined in it, found with `ast` (a parametrised id's
  `[...]` is not checked). It takes well under a second, and tests/test_mutants.py runs it in
  the normal suite so that a refactor which moves the mutated code fails CI at once.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
BACKUP = ROOT / "var" / "mutants" / "backup"
KEYS = ("id", "section", "rule", "file", "find", "replace", "tests")
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DEFAULT_TIMEOUT = 900.0


class ListError(Exception):
    """The list of mutants cannot be run as it stands (a bad entry, a dirty file, a left-over mutant)."""


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One entry of a mutants/*.toml file."""

    id: str
    section: str
    rule: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    origin: str  # the .toml file it came from, for messages


@dataclasses.dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    outcome: str  # killed, survived, error
    seconds: float
    detail: str = ""


# --------------------------------------------------------------------------- reading the list


def _entry(raw: object, origin: str, index: int) -> Mutant:
    where = f"{origin} entry {index}"
    if not isinstance(raw, dict):
        raise ListError(f"{where}: not a table")
    if isinstance(raw.get("id"), str):
        where = f"{origin} entry {raw['id']!r}"
    missing = [k for k in KEYS if k not in raw]
    unknown = sorted(set(raw) - set(KEYS))
    if missing or unknown:
        raise ListError(f"{where}: missing key(s) {missing}, unknown key(s) {unknown}; the keys are {list(KEYS)}")
    for key in KEYS[:-1]:
        if not isinstance(raw[key], str) or not raw[key]:
            raise ListError(f"{where}: {key} must be a non-empty string, got {raw[key]!r}")
    tests = raw["tests"]
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
        raise ListError(f"{where}: tests must be a non-empty list of pytest node ids, got {tests!r}")
    if not ID_PATTERN.fullmatch(raw["id"]):
        raise ListError(f"{where}: id must match {ID_PATTERN.pattern}")
    return Mutant(**{k: raw[k] for k in KEYS[:-1]}, tests=tuple(tests), origin=origin)


def load(folder: Path = MUTANTS) -> list[Mutant]:
    """Every entry of every folder/*.toml, files in name order; ListError on a bad file or a duplicate id."""
    mutants: list[Mutant] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ListError(f"{path.name}: not valid TOML: {exc}") from None
        unknown = sorted(set(data) - {"mutant"})
        if unknown:
            raise ListError(f"{path.name}: unknown top-level key(s) {unknown}; entries are [[mutant]] tables")
        entries = data.get("mutant", [])
        if not isinstance(entries, list):
            raise ListError(f"{path.name}: entries are [[mutant]] tables")
        for i, raw in enumerate(entries, 1):
            m = _entry(raw, path.name, i)
            if m.id in seen:
                raise ListError(f"duplicate id {m.id!r}: in {seen[m.id]} and in {path.name}")
            seen[m.id] = path.name
            mutants.append(m)
    return mutants


_DEFINED: dict[tuple[Path, int], frozenset[str]] = {}


def _definitions(test_file: Path) -> frozenset[str]:
    """The functions defined at the top of `test_file`, and `Class::method` of its classes (nested too)."""
    key = (test_file, test_file.stat().st_mtime_ns)
    if key not in _DEFINED:  # one parse per file: many entries name tests of one file
        found: set[str] = set()

        def walk(body: list[ast.stmt], prefix: str) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.add(prefix + node.name)
                elif isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}::")

        walk(ast.parse(test_file.read_text(encoding="utf-8")).body, "")
        _DEFINED[key] = frozenset(found)
    return _DEFINED[key]


def node_problem(node_id: str, root: Path = ROOT) -> str | None:
    """Why `node_id` names no test of the repository (None when it does)."""
    path, *names = re.sub(r"\[.*\]$", "", node_id).split("::")
    test_file = root / path
    if not path.startswith("tests/") or ".." in Path(path).parts or not test_file.is_file():
        return f"test {node_id!r}: no file {path} under tests/"
    if not names:
        return f"test {node_id!r}: name a test (FILE::test_name), not a whole file"
    if "::".join(names) not in _definitions(test_file):
        return f"test {node_id!r}: {path} defines no {'::'.join(names)}"
    return None


def find_problem(m: Mutant, root: Path = ROOT) -> str | None:
    """Why the entry's change cannot be applied (None when `find` occurs exactly once in its file)."""
    target = root / m.file
    if ".." in Path(m.file).parts or not target.is_file():
        return f"{m.id} ({m.origin}): no file {m.file}"
    if m.find == m.replace:
        return f"{m.id} ({m.origin}): replace is the same text as find"
    count = target.read_text(encoding="utf-8").count(m.find)
    if count != 1:
        return (
            f"{m.id} ({m.origin}): find occurs {count} times in {m.file}, not once "
            f"(the code moved or changed: update the entry): {m.find!r}"
        )
    return None


def check(mutants: Iterable[Mutant], root: Path = ROOT) -> list[str]:
    """Every problem of the list that running it would meet, one line each; [] when it can run."""
    problems = []
    changes: dict[tuple[str, str, str], str] = {}
    for m in mutants:
        if (p := find_problem(m, root)) is not None:
            problems.append(p)
        key = (m.file, m.find, m.replace)
        if key in changes:
            problems.append(f"{m.id} ({m.origin}): the same change as {changes[key]}")
        changes.setdefault(key, m.id)
        problems += [f"{m.id} ({m.origin}): {p}" for t in m.tests if (p := node_problem(t, root)) is not None]
    return problems


def select(
    mutants: Sequence[Mutant], only: Sequence[str] = (), section: str | None = None, origin: str | None = None
) -> list[Mutant]:
    """The entries named by --only (ids), in --section (the section or a subsection of it), of --file."""
    chosen = list(mutants)
    if origin:
        chosen = [m for m in chosen if m.origin == Path(origin).name]
        if not chosen:
            raise ListError(f"no entry in mutants/{Path(origin).name}")
    if only:
        known = {m.id for m in mutants}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise ListError(f"no entry with id {', '.join(map(repr, unknown))}; `mutants/run.py --list` lists them")
        chosen = [m for m in chosen if m.id in only]
    if section:
        chosen = [m for m in chosen if m.section == section or m.section.startswith(section + ".")]
        if not chosen:
            raise ListError(f"no entry in section {section!r}")
    return chosen


# --------------------------------------------------------------------------- applying a change safely


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mutated(m: Mutant, original: bytes) -> bytes:
    return original.decode("utf-8").replace(m.find, m.replace, 1).encode("utf-8")


def recover(root: Path = ROOT, backup: Path = BACKUP) -> list[str]:
    """Restore every file an interrupted run left mutated; the files restored. ListError when unsure."""
    restored = []
    for record in sorted(backup.glob("*.json")):
        info = json.loads(record.read_text(encoding="utf-8"))
        target, saved = root / info["file"], record.with_suffix(".orig")
        current = _sha(target.read_bytes()) if target.exists() else None
        if current == info["mutated_sha256"] and saved.exists():
            target.write_bytes(saved.read_bytes())
            os.utime(target, ns=(info["mtime_ns"], info["mtime_ns"]))
            restored.append(info["file"])
        elif current != info["original_sha256"]:
            raise ListError(
                f"{info['file']} holds neither its original nor mutant {info['id']}'s text since an interrupted run; "
                f"compare it with {saved} (its original), fix it, then delete {record}"
            )
        saved.unlink(missing_ok=True)
        record.unlink()
    return restored


def dirty_files(files: Iterable[str], root: Path = ROOT) -> list[str]:
    """The files that differ from git's HEAD ([] outside a git checkout, where there is nothing to compare)."""
    names = sorted(set(files))
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *names], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return sorted({line[3:] for line in out.splitlines() if line.strip()})


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):  # pragma: no cover - exercised by a killed run
    raise _Terminated()


def apply_and_run(m: Mutant, run_tests, root: Path = ROOT, backup: Path = BACKUP):
    """Write the mutant into its file, call `run_tests()`, and always write the original back."""
    target = root / m.file
    original = target.read_bytes()
    if original.decode("utf-8").count(m.find) != 1:
        raise ListError(find_problem(m, root) or f"{m.id}: find does not occur once")
    mutated = _mutated(m, original)
    mtime = target.stat().st_mtime_ns
    backup.mkdir(parents=True, exist_ok=True)
    record = backup / f"{m.id}.json"
    record.with_suffix(".orig").write_bytes(original)
    info = {"id": m.id, "file": m.file, "original_sha256": _sha(original), "mutated_sha256": _sha(mutated)}
    record.write_text(json.dumps({**info, "mtime_ns": mtime}), encoding="utf-8")
    try:
        target.write_bytes(mutated)
        # Two seconds away from the original: a .pyc keyed on (mtime in seconds, size) never matches.
        later = max(time.time_ns(), mtime + 2_000_000_000)
        os.utime(target, ns=(later, later))
        return run_tests()
    finally:
        target.write_bytes(original)
        os.utime(target, ns=(mtime, mtime))
        record.with_suffix(".orig").unlink(missing_ok=True)
        record.unlink(missing_ok=True)


# --------------------------------------------------------------------------- running the tests


def pytest_command(node_ids: Sequence[str], junit: Path, env: Mapping[str, str]) -> list[str]:
    """The pytest command line; `-n 0` (no xdist workers) whenever pytest-xdist will be loaded."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if not env.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and importlib.util.find_spec("xdist") is not None:
        cmd += ["-n", "0"]
    return [*cmd, f"--junitxml={junit}", *node_ids]


def _counts(junit: Path) -> dict[str, int]:
    counts = {"tests": 0, "failed": 0, "errors": 0, "skipped": 0}
    if not junit.exists():
        return counts
    for case in ET.parse(junit).getroot().iter("testcase"):
        counts["tests"] += 1
        kinds = {child.tag for child in case}
        counts["failed"] += "failure" in kinds
        counts["errors"] += "error" in kinds
        counts["skipped"] += "skipped" in kinds
    return counts


def _not_passed(junit: Path) -> list[str]:
    """The tests that failed or erred, as `file::name` (to say which when the baseline fails)."""
    if not junit.exists():
        return []
    return [
        f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        for case in ET.parse(junit).getroot().iter("testcase")
        if {child.tag for child in case} & {"failure", "error"}
    ]


def classify(returncode: int | None, counts: dict[str, int]) -> tuple[str, str]:
    """(outcome, detail) of one pytest run; returncode None is a timeout."""
    if returncode is None:
        return "error", "timeout"
    if returncode == 0:
        if counts["tests"] > counts["skipped"]:
            return "survived", f"{counts['tests'] - counts['skipped']} passed"
        return "error", "every listed test was skipped"
    if returncode == 1 and counts["failed"]:
        return "killed", f"{counts['failed']} failed"
    if returncode == 1:
        return "error", "a fixture failed in set-up or teardown; no test failed"
    return "error", f"pytest exit {returncode} (collection or usage error)"


def run_pytest(
    node_ids: Sequence[str],
    timeout: float,
    root: Path = ROOT,
    quiet: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """Run the node ids in a process group of their own; (outcome, detail) as `classify` says."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(extra_env or {}))
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        junit = Path(tmp) / "junit.xml"
        out = subprocess.DEVNULL if quiet else None
        proc = subprocess.Popen(
            pytest_command(node_ids, junit, env), cwd=root, env=env, stdout=out, stderr=out, start_new_session=True
        )
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        outcome, detail = classify(returncode, _counts(junit))
        if outcome != "survived" and (names := _not_passed(junit)):
            detail += ": " + ", ".join(names)
        return outcome, detail


def run_mutant(
    m: Mutant,
    timeout: float = DEFAULT_TIMEOUT,
    root: Path = ROOT,
    backup: Path = BACKUP,
    quiet: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> Outcome:
    """Apply one mutant, run its tests, restore the file: the outcome and the seconds it took."""
    start = time.monotonic()
    outcome, detail = apply_and_run(m, lambda: run_pytest(m.tests, timeout, root, quiet, extra_env), root, backup)
    return Outcome(m, outcome, time.monotonic() - start, detail)


# --------------------------------------------------------------------------- the report


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    # The last cell (the rule) takes the rest of the line.
    return "  ".join([*(c.ljust(w) for c, w in zip(cells, widths, strict=False)), *cells[len(widths) :]]).rstrip()


def report(outcomes: Sequence[Outcome], seconds: float, out: TextIO | None = None) -> int:
    """The summary after the table: counts, then every survivor and error in full; the exit code."""
    out = out or sys.stdout
    counts = {k: sum(o.outcome == k for o in outcomes) for k in ("killed", "survived", "error")}
    print(
        f"\n{len(outcomes)} mutants in {seconds:.0f} s: {counts['killed']} killed, {counts['survived']} survived, "
        f"{counts['error']} error(s)",
        file=out,
    )
    for kind in ("survived", "error"):
        bad = [o for o in outcomes if o.outcome == kind]
        if bad:
            print(f"\n{kind.upper()}:", file=out)
        for o in bad:
            m = o.mutant
            print(f"- {m.id} ({m.origin}, section {m.section}): {m.rule}", file=out)
            print(f"    {m.file}: {m.find!r} -> {m.replace!r}", file=out)
            print(f"    tests: {' '.join(m.tests)}  ({o.detail})", file=out)
    return 1 if counts["survived"] or counts["error"] else 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutants/run.py", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="validate the list only (no test runs)")
    p.add_argument("--list", action="store_true", help="print the entries (id, section, rule) and exit")
    p.add_argument("--only", action="append", default=[], help="run the entry with this id (repeat, or a,b)")
    p.add_argument("--section", help="run the entries of this contract section and its subsections")
    p.add_argument("--file", help="run the entries of this mutants/*.toml file (its name)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per mutant's tests")
    p.add_argument("--no-baseline", action="store_true", help="skip running the tests on the unmutated tree first")
    p.add_argument("--allow-dirty", action="store_true", help="run on files with uncommitted changes")
    p.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    return p


def _prepare(args: argparse.Namespace) -> list[Mutant]:
    chosen = select(load(), [i for group in args.only for i in group.split(",") if i], args.section, args.file)
    problems = check(chosen)
    if problems:
        raise ListError("the entries chosen have problems:\n" + "\n".join(f"- {p}" for p in problems))
    for name in recover():
        print(f"restored {name}: an interrupted run had left it mutated", file=sys.stderr)
    dirty = dirty_files(m.file for m in chosen)
    if dirty and not args.allow_dirty:
        raise ListError(
            f"uncommitted changes in {', '.join(dirty)}: commit or stash them, or run with --allow-dirty "
            "(make mutants ALLOW_DIRTY=1)"
        )
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.check or args.list:
            mutants = load()
            if args.list:
                for m in mutants:
                    print(f"{m.id}\t{m.section}\t{m.rule}")
            problems = check(mutants)
            for p in problems:
                print(p, file=sys.stderr)
            if args.check and not problems:
                by_file = ", ".join(
                    f"{f} {sum(m.origin == f for m in mutants)}" for f in sorted({m.origin for m in mutants})
                )
                print(f"{len(mutants)} mutants, every find text once and every test found ({by_file})")
            return 2 if problems else 0
        chosen = _prepare(args)
    except ListError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    start = time.monotonic()
    if not args.no_baseline:
        tests = list(dict.fromkeys(t for m in chosen for t in m.tests))
        print(f"baseline: {len(tests)} tests on the unmutated tree ...", flush=True)
        outcome, detail = run_pytest(tests, args.timeout * 2, quiet=not args.verbose)
        if outcome != "survived":
            print(f"Error: the tests fail without any mutant ({detail}); fix them first", file=sys.stderr)
            return 2
        print(f"baseline: {detail} in {time.monotonic() - start:.0f} s\n", flush=True)
    widths = (max(len(m.id) for m in chosen), 7, 8, 6)
    print(_row(("id", "section", "outcome", "seconds", "rule"), widths), flush=True)
    outcomes = []
    for m in chosen:
        try:
            o = run_mutant(m, args.timeout, quiet=not args.verbose)
        except (KeyboardInterrupt, _Terminated):
            print(f"interrupted during {m.id}; its file is restored", file=sys.stderr)
            return 130
        outcomes.append(o)
        print(_row((m.id, m.section, o.outcome, f"{o.seconds:.1f}", m.rule), widths), flush=True)
    return report(outcomes, time.monotonic() - start)


if __name__ == "__main__":
    sys.exit(main())
