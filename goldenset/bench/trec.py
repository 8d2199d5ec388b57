"""TREC run and qrels files: read with trec_eval's rules, write runs it reads back the same.

Run lines are `query_id Q0 doc_id rank score tag` (six fields separated by white
space); qrels lines are `query_id iteration doc_id relevance`, or BEIR's
`query-id<TAB>corpus-id<TAB>score` under its header line (read_qrels tells them
apart by the first line). As in trec_eval,
the rank column is ignored: a query's documents are ordered by score
descending, ties by doc_id descending (byte order). A document listed twice for
one query, in a run or in qrels, is refused (trec_eval stops with "duplicate
docs" too). Blank lines are skipped; any other malformed line is refused with a
one-line reason naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from goldenset.errors import InputError

Run = dict[str, list[str]]
Qrels = dict[str, dict[str, int]]


def trec_order(scored: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Order (doc_id, score) pairs as trec_eval ranks them: score descending, then doc_id descending."""
    # Two stable sorts: the secondary key first. str comparison is code-point order,
    # which equals the byte order of UTF-8 that trec_eval's strcmp sees.
    by_doc = sorted(scored, key=lambda p: p[0], reverse=True)
    return sorted(by_doc, key=lambda p: -p[1])


def _lines(path: Path, what: str):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} file {path} cannot be read: {exc}") from exc
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield n, line


def read_run(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    """Read a TREC run file into {query_id: [(doc_id, score), ...]} in trec_eval's rank order."""
    path = Path(path)
    scored: dict[str, dict[str, tuple[float, int]]] = {}
    for n, line in _lines(path, "run"):
        fields = line.split()
        if len(fields) != 6:
            raise InputError(
                f"run {path} line {n}: expected 6 fields `query_id Q0 doc_id rank score tag`, "
                f"got {len(fields)}: {line.strip()!r}"
            )
        qid, _, doc, _, score_text, _ = fields
        try:
            score = float(score_text)
        except ValueError:
            raise InputError(f"run {path} line {n}: score {score_text!r} is not a number") from None
        if math.isnan(score):
            raise InputError(f"run {path} line {n}: score is NaN; give every document a number")
        docs = scored.setdefault(qid, {})
        if doc in docs:
            raise InputError(
                f"run {path} line {n}: query {qid} lists document {doc} twice "
                f"(first on line {docs[doc][1]}); trec_eval refuses duplicate docs too, keep one"
            )
        docs[doc] = (score, n)
    return {q: trec_order((d, s) for d, (s, _) in docs.items()) for q, docs in scored.items()}


def ranked_lists(run: Mapping[str, Sequence[tuple[str, float]]]) -> Run:
    """Drop the scores of an ordered run: {query_id: [doc_id, ...]}."""
    return {q: [d for d, _ in hits] for q, hits in run.items()}


BEIR_HEADER = ("query-id", "corpus-id", "score")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def read_qrels(path: str | Path) -> Qrels:
    """Read qrels into {query_id: {doc_id: relevance}}: a TREC qrels file or BEIR's `qrels/*.tsv`.

    The format is read from the content: a first line that is BEIR's header
    `query-id<TAB>corpus-id<TAB>score` (what `goldenset export` writes to
    qrels/test.tsv) makes the file BEIR, whose every other line is three
    tab-separated fields; anything else is TREC, four fields separated by white
    space. Relevance is an integer in both; negative values are kept (trec_eval
    reads them as "in the pool, not judged").
    """
    path = Path(path)
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    beir = None
    for n, line in _lines(path, "qrels"):
        if beir is None:
            # A byte-order mark is what spreadsheet tools put before a header.
            beir = tuple(f.strip() for f in line.lstrip("\ufeff").split("\t")) == BEIR_HEADER
            if beir:
                continue
        if beir:
            qid, doc, rel_text = _beir_fields(path, n, line)
        else:
            qid, doc, rel_text = _trec_fields(path, n, line)
        # ASCII digits only: Python's int() also takes "1_0" and other scripts' digits.
        if not _INTEGER.fullmatch(rel_text):
            raise InputError(f"qrels {path} line {n}: relevance {rel_text!r} is not an integer")
        rel = int(rel_text)
        if (qid, doc) in seen:
            raise InputError(
                f"qrels {path} line {n}: query {qid} judges document {doc} twice "
                f"(first on line {seen[(qid, doc)]}); keep one judgment"
            )
        seen[(qid, doc)] = n
        qrels.setdefault(qid, {})[doc] = rel
    return qrels


def _trec_fields(path: Path, n: int, line: str) -> tuple[str, str, str]:
    fields = line.split()
    if len(fields) == 4:
        return fields[0], fields[2], fields[3]
    hint = ""
    if tuple(fields) == BEIR_HEADER:
        hint = "; a BEIR header separates its three names with tabs"
    elif len(line.split("\t")) == 3:
        hint = "; for BEIR qrels start the file with the header `query-id<TAB>corpus-id<TAB>score`"
    raise InputError(
        f"qrels {path} line {n}: expected 4 fields `query_id iteration doc_id relevance`, "
        f"got {len(fields)}: {line.strip()!r}{hint}"
    )


def _beir_fields(path: Path, n: int, line: str) -> tuple[str, str, str]:
    fields = [f.strip() for f in line.split("\t")]
    if len(fields) != 3 or not fields[0] or not fields[1]:
        raise InputError(
            f"qrels {path} line {n}: expected 3 tab-separated fields `query-id corpus-id score` "
            f"(BEIR, as the header says), got {line.strip()!r}"
        )
    if any(ch.isspace() for ch in fields[0] + fields[1]):
        # A TREC run cannot name such an id (its fields are split on white space).
        raise InputError(
            f"qrels {path} line {n}: id with white space in {line.strip()!r}; "
            "no TREC run can name it, rename the query or document"
        )
    return fields[0], fields[1], fields[2]


def write_run(path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> Path:
    """Write an ordered run as a TREC run file; scores are rewritten so trec_eval keeps our order.

    The written score of rank r is (n - r + 1) for a list of n: strictly
    decreasing, so no tie can reorder what the retriever ranked.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = tag.replace(" ", "_") or "goldenset"
    with path.open("w", encoding="utf-8") as fh:
        for qid in sorted(run):
            hits = run[qid]
            for rank, (doc, _) in enumerate(hits, start=1):
                fh.write(f"{qid} Q0 {doc} {rank} {len(hits) - rank + 1} {tag}\n")
    return path


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    """Write qrels as a TREC qrels file (iteration 0), sorted by query and document."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for qid in sorted(qrels):
            for doc in sorted(qrels[qid]):
                fh.write(f"{qid} 0 {doc} {qrels[qid][doc]}\n")
    return path
