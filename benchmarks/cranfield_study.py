"""What every Cranfield study shares: the truth, the rankers, the judges, the pipeline, the report.

The studies (`cranfield_pooling.py`, `cranfield_coverage.py`, `ppi_simulation.py` and those that
follow) measure goldenset against Cranfield's graded human judgments. `cranfield_collection.py`
reads the collection's files and writes goldenset's inputs; this module holds the rest of what
each study needs, once:

- **Truth**: `full_qrels` (every judgment, graded, by query_id) and `truth_matrix` (binary,
  query x document, codes 1-4 relevant).
- **Rankers outside the pipeline**, for the studies that simulate audits and judges with
  numpy: `bm25_scores` (bm25s with the benchmark's lexical settings; k1 and b can vary),
  `dense_scores` (the packaged MiniLM, cosine), `top` (ties broken by document position, so
  lists are reproducible), `pooled` (the union of several top-k lists) and `ndcg`.
- **Judges**: `kappa` (contract 7.5 on two classes), `accuracy_for_kappa` (a simulated judge
  of a given kappa) and `calibrated_cut` (a real score cut at its calibrated threshold).
- **The pipeline, as a user runs it**: `Home` (one GOLDENSET_HOME driven through `python -m
  goldenset`, one process per command, or in process for the tests), `prepare_workdir`.
- **Reporting**: `mean_interval` and `paired_t` (Student's t, as `bench compare`), `fmt`,
  `pct`, `table`, and `study_main`, the one `main` of the pipeline studies (figures as
  Markdown and JSON side by side, a pipeline error exit 1, a collection error exit 2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import cranfield_collection as cc
import duckdb
import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
Qrels = dict[str, dict[str, int]]


# --------------------------------------------------------------------------- truth


def full_qrels(collection: cc.Collection) -> Qrels:
    """Every Cranfield judgment as graded qrels by query_id and doc_id (grades of cranfield_collection)."""
    by_number = {q.number: q for q in collection.queries}
    out: Qrels = {}
    for (q, d), code in collection.codes.items():
        out.setdefault(by_number[q].query_id, {})[cc.doc_id(d)] = cc.GRADE_OF_CODE[code]
    return out


def truth_matrix(collection: cc.Collection) -> np.ndarray:
    """Query x document binary relevance: Cranfield codes 1-4."""
    index = {d.number: i for i, d in enumerate(collection.docs)}
    rel = np.zeros((len(collection.queries), len(collection.docs)), dtype=np.int8)
    for (q, d), code in collection.codes.items():
        if cc.GRADE_OF_CODE[code] >= 1:
            rel[q - 1, index[d]] = 1
    return rel


# --------------------------------------------------------------------------- rankers


def _texts(collection: cc.Collection) -> list[str]:
    return [f"{d.title} {d.text}".strip() for d in collection.docs]


def bm25_scores(collection: cc.Collection, k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """Query x document BM25 scores over title + abstract (bm25s, English stop words; its defaults k1, b)."""
    import bm25s

    texts = _texts(collection)
    bm25 = bm25s.BM25(k1=k1, b=b)
    bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    scores = np.zeros((len(collection.queries), len(texts)))
    for i, q in enumerate(collection.queries):
        tokens = bm25s.tokenize([q.text], stopwords="en", return_ids=False, show_progress=False)[0]
        scores[i] = bm25.get_scores(tokens)
    return scores


def dense_scores(collection: cc.Collection) -> np.ndarray:
    """Query x document cosine of the packaged MiniLM's unit vectors."""
    from goldenset.embeddings import Embedder

    embedder = Embedder()
    return embedder.embed([q.text for q in collection.queries]) @ embedder.embed(_texts(collection)).T


def top(scores: np.ndarray, depth: int) -> np.ndarray:
    """The `depth` best document indices per query; ties broken by document position (reproducible)."""
    return np.argsort(-scores, axis=1, kind="stable")[:, : min(depth, scores.shape[1])]


def pooled(shape: tuple[int, int], *tops: np.ndarray) -> np.ndarray:
    """Query x document mask of the pairs some ranker returned in its top k."""
    mask = np.zeros(shape, dtype=bool)
    rows = np.arange(shape[0])[:, None]
    for t in tops:
        mask[rows, t] = True
    return mask


class TwoRankers(NamedTuple):
    """Cranfield ranked by BM25 and by the packaged model and pooled at a depth: the simulations' start."""

    collection: cc.Collection
    bm25: np.ndarray
    cosine: np.ndarray
    top_bm25: np.ndarray
    top_dense: np.ndarray
    rel: np.ndarray  # Cranfield's relevance, query x document
    pooled: np.ndarray  # the pairs either ranker's top `depth` holds
    truth: np.ndarray  # rel on the pooled pairs, 0 elsewhere (what an annotator of the pool would say)


def two_rankers(path: Path, depth: int) -> TwoRankers:
    """Read the collection at `path`, rank it both ways and pool both tops at `depth`."""
    collection = cc.read_collection(path)
    bm25, cosine = bm25_scores(collection), dense_scores(collection)
    top_bm25, top_dense = top(bm25, depth), top(cosine, depth)
    rel = truth_matrix(collection)
    both = pooled(rel.shape, top_bm25, top_dense)
    return TwoRankers(collection, bm25, cosine, top_bm25, top_dense, rel, both, np.where(both, rel, 0))


def ndcg(top_k: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """nDCG@k per query with binary gains, the ideal ordering taken over the labels of the query."""
    k = top_k.shape[1]
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    gains = np.take_along_axis(labels, top_k, axis=1)
    dcg = (gains * discount).sum(axis=1)
    ideal = np.array([discount[: min(int(r), k)].sum() for r in labels.sum(axis=1)])
    return np.divide(dcg, ideal, out=np.zeros_like(dcg, dtype=float), where=ideal > 0)


# --------------------------------------------------------------------------- judges


def kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two binary label vectors (contract 7.5's formula); nan when chance agreement is 1."""
    po = float(np.mean(a == b))
    pa, pb = float(np.mean(a)), float(np.mean(b))
    pe = pa * pb + (1 - pa) * (1 - pb)
    return (po - pe) / (1 - pe) if pe < 1 else math.nan


def accuracy_for_kappa(prevalence: float, target: float) -> float:
    """The symmetric accuracy whose expected kappa against labels of this prevalence is `target` (bisection)."""

    def expected(acc: float) -> float:
        p = prevalence
        q = p * acc + (1 - p) * (1 - acc)
        pe = p * q + (1 - p) * (1 - q)
        return (acc - pe) / (1 - pe)

    lo, hi = 0.5, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected(mid) < target else (lo, mid)
    return (lo + hi) / 2


def calibrated_cut(scores: np.ndarray, truth: np.ndarray) -> float:
    """The cut minimising R x false passes + false fails with R = relevant / irrelevant pairs (contract 8.2's
    `single` at that cost ratio: the false-pass rate plus the false-fail rate, Youden's J); ties to the higher cut.

    R = 1 would pass nothing here (a fifth of the pooled pairs are relevant, so calling every pair
    irrelevant has the fewest errors), a judge that says nothing; equal weight to the two error
    rates is the calibration a judge of relevance needs.
    """
    positives, negatives = int(truth.sum()), int((truth == 0).sum())
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], truth[order]
    # Passing the top i pairs (score >= s[i-1]): false passes = negatives among them, false fails = the rest.
    fp = np.cumsum(t == 0)
    fn = positives - np.cumsum(t == 1)
    cost = fp / max(negatives, 1) + fn / max(positives, 1)
    last_of_score = np.r_[s[1:] != s[:-1], True]  # a cut passes every pair of its score
    candidates = np.flatnonzero(last_of_score)
    # The lowest cost; on a tie the higher cut (fewer pairs passing), i.e. the earliest candidate.
    costs = cost[candidates]
    best = candidates[int(np.flatnonzero(costs == costs.min())[0])]
    return float(s[best])


# --------------------------------------------------------------------------- the pipeline


class PipelineError(RuntimeError):
    """A goldenset command that did not exit 0."""


@dataclass
class Inputs:
    root: Path
    corpus: Path
    rubric: Path
    logs: Path
    full_qrels: Path


@dataclass
class Home:
    """One GOLDENSET_HOME, driven through `python -m goldenset` in separate processes."""

    path: Path
    inputs: Inputs
    commands: list[dict] = field(default_factory=list)
    # Each command through goldenset's CLI entry point in this process (settings scoped to this
    # home), not a new interpreter: the same commands and exit codes without paying Python's,
    # Dagster's and torch's start-up once per command. For the tests; the studies' default is
    # one process per command, as a user runs them.
    in_process: bool = False

    @property
    def db(self) -> Path:
        return self.path / "goldenset.duckdb"

    @property
    def labels(self) -> Path:
        return self.path / "labels"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOLDENSET_") and k != "DAGSTER_HOME"}
        env["GOLDENSET_HOME"] = str(self.path)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        return env

    def run(self, *args: str | Path) -> str:
        argv = [sys.executable, "-m", "goldenset", *map(str, args)]
        shown = f"GOLDENSET_HOME={self.path} python -m goldenset " + " ".join(map(str, args))
        print(f"$ {shown}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        if self.in_process:
            proc = self._run_here(argv[3:])
        else:
            proc = subprocess.run(argv, env=self.env(), capture_output=True, text=True, cwd=self.path.parent)
        seconds = time.monotonic() - t0
        self.commands.append({"command": shown, "exit": proc.returncode, "seconds": round(seconds, 1)})
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise PipelineError(f"`{shown}` exited {proc.returncode}:\n{tail}")
        return proc.stdout

    def _run_here(self, args: list[str]) -> subprocess.CompletedProcess:
        """`python -m goldenset ARGS` run by its entry point in this process, output captured."""
        from contextlib import redirect_stderr, redirect_stdout
        from io import StringIO

        from goldenset.settings import scoped_environment
        from goldenset_dagster.cli import main as goldenset_main

        out, err = StringIO(), StringIO()
        with scoped_environment(self.env()), redirect_stdout(out), redirect_stderr(err):
            code = goldenset_main(args)
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    # ------------------------------------------------------------------ commands
    def rubric_check(self) -> str:
        return self.run("rubric", "check", self.inputs.rubric).strip()

    def build(self) -> str:
        i = self.inputs
        return self.run("build", "--logs", i.logs, "--corpus", i.corpus, "--labels", self.labels, "--rubric", i.rubric)

    def bench_run(self, retriever: str | None = None) -> str:
        args: list[str | Path] = ["bench", "run", "--corpus", self.inputs.corpus]
        if retriever:
            args += ["--retriever", retriever]
        out = self.run(*args)
        last = [line for line in out.splitlines() if line.startswith("run_id: ")]
        if not last:
            raise PipelineError(f"bench run printed no `run_id:` line:\n{out[-2000:]}")
        return last[-1].split(": ", 1)[1].strip()

    def compare(self, a: str, b: str) -> dict:
        return json.loads(self.run("bench", "compare", a, b, "--json"))

    def eval_full(self, run_id: str) -> dict:
        """The run's core row against every Cranfield judgment (trec_eval policy: queries in both)."""
        run_file = self.path / "reports" / run_id / "core.run"
        return json.loads(
            self.run("bench", "eval", "--run", run_file, "--qrels", self.inputs.full_qrels, "--k", "5", "--json")
        )

    def pool(self, rankers: str, depth: int) -> dict:
        return json.loads(self.run("pool", "--rankers", rankers, "--depth", str(depth), "--json"))

    def pool_export(self, out: Path) -> list[dict]:
        self.run("pool", "export", "--out", out, "--format", "jsonl", "--rubric", self.inputs.rubric)
        return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]

    # ------------------------------------------------------------------ reading the warehouse
    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        con = duckdb.connect(str(self.db), read_only=True)
        try:
            return con.execute(sql, params or []).fetchall()
        finally:
            con.close()

    def rankings(self, run_id: str) -> dict[str, list[str]]:
        """A stored run's deciding-row ranking, query_id -> doc_ids in rank order."""
        out: dict[str, list[str]] = {}
        for q, d in self.query(
            "SELECT query_id, doc_id FROM benchmark_rankings WHERE run_id = ? ORDER BY query_id, rank", [run_id]
        ):
            out.setdefault(q, []).append(d)
        return out


def prepare_workdir(workdir: Path, script: str) -> None:
    """Empty a workdir this script made before (its marker file says so); refuse any other non-empty folder."""
    marker = workdir / f".{Path(script).stem}"
    if workdir.exists() and any(workdir.iterdir()):
        if not marker.exists():
            raise SystemExit(
                f"error: {workdir} is not empty and was not made by this script; give an empty or new --workdir"
            )
        for child in workdir.iterdir():
            if child != marker:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    workdir.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"made by benchmarks/{Path(script).name}; rerunning it empties this folder\n")


# --------------------------------------------------------------------------- statistics and report


def mean_interval(values: Sequence[float]) -> dict:
    """Mean and its 95% Student's t interval (n - 1 degrees of freedom); (-inf, inf) below two values."""
    n = len(values)
    mean = sum(values) / n if n else math.nan
    if n < 2:
        return {"n": n, "mean": mean, "lo": -math.inf, "hi": math.inf}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    if sd == 0.0:
        return {"n": n, "mean": mean, "lo": mean, "hi": mean}
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "lo": mean - half, "hi": mean + half}


def paired_t(a: dict[str, float], b: dict[str, float]) -> dict:
    """B - A on the common queries: mean, 95% Student's t interval, MDE (80% power), verdict, as bench compare."""
    common = sorted(set(a) & set(b))
    diffs = [b[q] - a[q] for q in common]
    n = len(diffs)
    m = mean_interval(diffs)
    mean, lo, hi = m["mean"], m["lo"], m["hi"]
    if n < 2 or lo == hi:
        verdict = "indistinguishable" if mean == 0 or n < 2 else ("better" if mean > 0 else "worse")
        return {"n": n, "diff": mean, "lo": mean, "hi": mean, "mde": None, "verdict": verdict}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    mde = (float(stats.t.ppf(0.975, n - 1)) + float(stats.t.ppf(0.80, n - 1))) * sd / math.sqrt(n)
    verdict = "indistinguishable" if lo <= 0.0 <= hi else ("better" if lo > 0 else "worse")
    return {"n": n, "diff": mean, "lo": lo, "hi": hi, "mde": mde, "verdict": verdict}


def fmt(x: float | None, digits: int = 4) -> str:
    """A figure to `digits` decimals; `n/a` for a missing or undefined one."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def pct(x: float | None, digits: int = 0) -> str:
    """A share as a percentage; `n/a` for a missing or undefined one."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100 * x:.{digits}f}%"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def pipeline_arguments(parser: argparse.ArgumentParser, script: str) -> None:
    """The arguments every pipeline study takes: the collection, its workdir, the report, --in-process."""
    stem = Path(script).stem
    parser.add_argument("collection", help="folder with cran.all.1400, cran.qry and cranqrel")
    parser.add_argument("--workdir", required=True, help="where inputs and every GOLDENSET_HOME go (emptied on rerun)")
    parser.add_argument("--report", help=f"Markdown report path (default WORKDIR/{stem}.md; JSON next to it)")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run each goldenset command in this process through its entry point (the tests' shortcut); "
        "default: one process per command, as a user runs them",
    )


def simulation_main(
    args: argparse.Namespace, run: Callable[[argparse.Namespace], dict], markdown, indent: int = 2
) -> int:
    """Run an in-process simulation: its figures to --out (JSON), its tables to --markdown, the tables and
    the seconds it took printed."""
    out = run(args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=indent) + "\n", encoding="utf-8")
    tables = markdown(out)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(tables, encoding="utf-8")
    print(tables, end="")
    print(f"({out['seconds']} s)")
    return 0


def study_main(args: argparse.Namespace, script: str, run: Callable[[argparse.Namespace], dict], markdown) -> int:
    """Run a pipeline study and write its report (Markdown, printed too) and its figures (JSON beside it)."""
    try:
        figures = run(args)
    except PipelineError as exc:
        print(f"pipeline error: {exc}", file=sys.stderr)
        return 1
    except cc.CollectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = markdown(figures)
    out = Path(args.report) if args.report else Path(args.workdir) / f"{Path(script).stem}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")
    print(text)
    print(f"report: {out} (figures: {out.with_suffix('.json')})", file=sys.stderr)
    return 0
