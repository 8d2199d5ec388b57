"""Every shell block of docs/ runs in a test, or says why not (issue 38).

A shell block is a fenced block of `bash`, `console`, `sh` or `shell` anywhere under docs/
(indented ones in lists too). It is *marked not run* when the line before its opening fence
(blank lines aside) is `<!-- not run: REASON -->`, or its own first line is the comment
`# not run: REASON` (bash and sh blocks), REASON saying why (a server that runs until
stopped, an endpoint this machine lacks, the paths of a deployment, an install), and *run by
another test* when that line is `<!-- run by tests/PATH.py ... -->` naming a test file that
exists (the traces receiver's recipes, which need a server and an exporter). Every other block
runs here, and a block holding something the runner cannot run must be marked:
`test_every_shell_block_runs_or_says_why_not` fails on it, without running anything.

What runs: each page's blocks in page order, on a copy of the demo's home (`goldenset demo`,
made once per test run and shared with tests/test_demo.py) made for that page, so a page starts
from the demo's state whatever the page before it did. The working directory holds `docs` (a
link to the repository's docs/, for the examples a page names) and a copy of each Python file
of docs/examples (what a page asks its reader to save). The commands the runner knows:
`goldenset ARGS` and `python -m goldenset ARGS`, each a real `goldenset` process (forked from
tests/forkserver.py's server, as the reliability tests' commands are), which must exit 0;
`export NAME=VALUE` (for the rest of the block); `A && B`; comments. In a `console` block only
the lines after `$ ` are commands (the rest is output). A command a page already ran, with the
same arguments and variables, is not run again: a page that shows `goldenset pool` twice
pools once.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import copy_demo_home, demo_world

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LANGUAGES = ("bash", "console", "sh", "shell")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[A-Za-z]*)\s*$")
MARK = re.compile(r"^\s*<!-- not run: (?P<reason>.*?) -->\s*$")
# A block another test runs as shown (the receiver's recipes need a server and an exporter):
# `<!-- run by tests/PATH.py ... -->`, naming a test file that exists.
# The same said inside the block, as its first line (a comment the reader sees): `# not run: REASON`.
MARK_INSIDE = re.compile(r"^#\s*not run:\s*(?P<reason>.*?)\s*$")
RUN_BY = re.compile(r"^\s*<!-- run by (?P<test>tests/\S+?\.py)\b.*-->\s*$")
COMMAND_SECONDS = 240.0  # a command that runs longer is a server left unmarked, or a hang


@dataclass
class Block:
    """A shell block: where it is, its language, its text, and why it is not run (None: it runs)."""

    page: str
    line: int
    lang: str
    text: str
    reason: str | None = None
    run_by: str | None = None  # the test file that runs it instead (RUN_BY)
    commands: list[list[str]] = field(default_factory=list)  # argv of each command, exports as ["export", ...]
    unsupported: str | None = None  # the first command the runner cannot run

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _open_quote(text: str) -> bool:
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return True
    return False


def _logical_lines(block_lines: list[str], console: bool) -> list[str]:
    """The block's commands as lines: in a console block only those after `$ `; a line ending in a
    backslash, or with a quote still open, goes on on the next one."""
    out: list[str] = []
    pending: str | None = None
    for line in block_lines:
        if pending is None:
            if console and not line.startswith("$ "):
                continue  # output
            pending = line[2:] if console else line
        else:
            pending = f"{pending}\n{line}"
        if pending.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1]
            continue
        if not _open_quote(pending):
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _split(line: str) -> list[list[str]]:
    """A command line as commands: `&&` separates them; any other shell operator is kept as a token."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token == "&&":
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _unsupported(argv: list[str]) -> bool:
    if argv[0] == "goldenset" or argv[:3] == ["python", "-m", "goldenset"]:
        return any(token in (";", "&", "|", "||", ">", ">>", "<", "(", ")") for token in argv)
    return not (argv[0] == "export" and len(argv) > 1 and all("=" in a for a in argv[1:]))


def parse(page: str, text: str) -> list[Block]:
    """The shell blocks of a page's text, each with its marker and its commands."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.group("indent"), fence.group("lang")
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if lang in LANGUAGES:
            body = [x[len(indent) :] if x.startswith(indent) else x.lstrip() for x in lines[i + 1 : end]]
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            first = next((x for x in body if x.strip()), "")
            mark = MARK.match(before) or (MARK_INSIDE.match(first.strip()) if lang != "console" else None)
            run_by = RUN_BY.match(before)
            block = Block(page, i + 1, lang, "\n".join(body), mark.group("reason").strip() if mark else None)
            block.run_by = run_by.group("test") if run_by else None
            for logical in _logical_lines(body, lang == "console"):
                if _open_quote(logical):
                    block.unsupported = block.unsupported or f"{logical} (a quote left open)"
                    continue
                for argv in _split(logical):
                    block.commands.append(argv)
                    if block.unsupported is None and _unsupported(argv):
                        block.unsupported = " ".join(argv)
            blocks.append(block)
        i = end + 1
    return blocks


def _pages() -> dict[str, list[Block]]:
    return {
        str(p.relative_to(ROOT)): parse(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
        for p in sorted(DOCS.rglob("*.md"))
    }


def _runs_here(block: Block) -> bool:
    return block.reason is None and block.run_by is None


def _runnable_pages() -> list[str]:
    return [page for page, blocks in _pages().items() if any(_runs_here(b) for b in blocks)]


def test_every_shell_block_runs_or_says_why_not():
    problems = []
    for page, blocks in _pages().items():
        for b in blocks:
            if b.reason is not None and not b.reason:
                problems.append(f"{b.where}: `<!-- not run: -->` needs a reason")
            elif b.run_by is not None and not (ROOT / b.run_by).is_file():
                problems.append(f"{b.where}: `<!-- run by {b.run_by} -->` names no test file")
            elif _runs_here(b) and b.unsupported is not None:
                problems.append(
                    f"{b.where}: this test cannot run `{b.unsupported}`; make the block run as written, or "
                    "mark it with `<!-- not run: REASON -->` on the line before its fence"
                )
        text = (ROOT / page).read_text(encoding="utf-8").splitlines()
        marked = {b.line for b in blocks if not _runs_here(b)}
        fenced = False  # (a marker shown inside a code block is an example, not a marker)
        for n, line in enumerate(text, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            following = next((k for k in range(n, len(text)) if text[k].strip()), None)
            marker = MARK.match(line) or RUN_BY.match(line)
            if not fenced and marker and (following is None or following + 1 not in marked):
                problems.append(f"{page}:{n}: a marker that no shell block follows")
    assert not problems, "\n".join(problems)


def test_the_checker_names_an_unmarked_block_it_cannot_run_and_reads_what_it_can():
    text = (
        "```bash\npip install goldenset   # an install\n```\n\n"
        "<!-- not run: installs -->\n```sh\npip install goldenset\n```\n\n"
        '- In a list:\n\n  ```console\n  $ goldenset status --json\n  {"build_id": 1}\n'
        '  $ goldenset sql "SELECT 1\n    AS one" && goldenset rejects  # two\n  ```\n\n'
        "```bash\nexport GOLDENSET_DB=x.duckdb\ngoldenset status | head\n```\n"
        "```sh\n# not run: serves the page until Ctrl+C\ngoldenset label serve\n```\n"
    )
    first, marked, listed, piped, inside = parse("page.md", text)
    assert (inside.reason, inside.commands) == ("serves the page until Ctrl+C", [["goldenset", "label", "serve"]])
    assert (first.reason, first.unsupported) == (None, "pip install goldenset")
    assert (marked.reason, marked.unsupported) == ("installs", "pip install goldenset")
    assert listed.unsupported is None and listed.commands == [
        ["goldenset", "status", "--json"],
        ["goldenset", "sql", "SELECT 1\n  AS one"],  # (the list's indent taken off)
        ["goldenset", "rejects"],
    ]
    assert piped.commands[0] == ["export", "GOLDENSET_DB=x.duckdb"]
    assert piped.unsupported == "goldenset status | head"


# --------------------------------------------------------------------------- running them


@pytest.fixture(scope="session")
def demo_folder(tmp_path_factory) -> Path:
    return demo_world(tmp_path_factory)


def _work_folder(root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    (work / "docs").symlink_to(DOCS)
    for example in sorted((DOCS / "examples").glob("*.py")):
        shutil.copy(example, work / example.name)
    return work


@pytest.mark.slow
@pytest.mark.parametrize("page", _runnable_pages())
def test_the_pages_shell_blocks_run_on_the_demos_home(page, demo_folder, tmp_path):
    from tests.reliability.harness import CliWorld

    world = CliWorld(_work_folder(tmp_path), copy_demo_home(demo_folder, tmp_path / "home"))
    done: set[tuple] = set()
    for block in _pages()[page]:
        if not _runs_here(block):
            continue
        env: dict[str, str] = {}
        for argv in block.commands:
            if argv[0] == "export":
                env.update(a.split("=", 1) for a in argv[1:])
                continue
            args = argv[1:] if argv[0] == "goldenset" else argv[3:]
            key = (tuple(args), tuple(sorted(env.items())))
            if key in done:
                continue
            proc = world.run(*args, timeout=COMMAND_SECONDS, GOLDENSET_LOCK_TIMEOUT="30", **env)
            assert proc.returncode == 0, (
                f"{block.where}: `{shlex.join(argv)}` exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
            done.add(key)
    assert done, f"{page}: no command ran"
