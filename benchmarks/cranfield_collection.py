"""The Cranfield collection read, and written as goldenset's inputs (corpus, serve log, rubric).

Helper of `cranfield_pooling.py`. Formats read (the files of the classic
distribution, e.g. ir_datasets' `cranfield`):

- `cran.all.1400`: documents, `.I n` then fields `.T` (title), `.A` (authors),
  `.B` (bibliography), `.W` (abstract), each running to the next field marker.
- `cran.qry`: queries, `.I n` then `.W` (the question). The `.I` numbers are
  not the query numbers of the judgments: `cranqrel` numbers queries 1, 2, 3 ...
  in file order (`.I 001` is query 1, `.I 004` is query 3), so query q is the
  q-th query of the file.
- `cranqrel`: `query doc code` per line, white-space separated (some lines end in
  a space or `\\r`). `cranqrel.readme` gives Cleverdon's codes: 1 a complete
  answer; 2 a high degree of relevance (the research impracticable or much harder
  without it); 3 useful (background, or methods for some aspects); 4 minimum
  interest (e.g. historical); 5 no interest (never included). The file also holds
  one `-1` line per query, a code the readme does not define: read as judged
  and not relevant.

Grades (the rubric's labels, and the golden set's `grade`):

| Cranfield code | grade | rubric label | agent verdict in the simulated log |
| --- | --- | --- | --- |
| 1, 2 | 2 | `relevant` | `helped` |
| 3, 4 | 1 | `partial` | `helped` |
| -1 (judged, not relevant) | 0 | `irrelevant` | `wrong` |
| no line (never judged) | 0 | `irrelevant` | `noise` |

So binary relevance is "any code 1-4", as trec_eval reads the file (relevance >
0), and nDCG counts codes 1-2 twice codes 3-4. A pair Cranfield never judged is
not relevant: Cranfield's judges saw candidate lists built by their own
searches, so an unjudged pair is the collection's "not relevant" (its usual
reading, which trec_eval shares by scoring unjudged documents 0).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

PROJECT = "cranfield"
RUBRIC_NAME = "cranfield"
ANNOTATOR = "cranfield-qrels"
DOC_VERSION = "1"

# code -> grade; a code outside this table is refused with its file and line.
GRADE_OF_CODE = {1: 2, 2: 2, 3: 1, 4: 1, -1: 0}
LABEL_OF_GRADE = {2: "relevant", 1: "partial", 0: "irrelevant"}

RUBRIC_YAML = """\
# The Cranfield judgments as a goldenset rubric (contract 7.1). Two tests, three labels;
# every pass/fail assignment matches exactly one label (goldenset rubric check).
name: cranfield
task: >
  An aeronautics researcher asks a question and is given abstracts from the Cranfield
  collection of 1,400 papers; an abstract is relevant when the researcher needs it.
dimensions:
  on_topic: The paper is of some use for the question, as background, for methods or as a complete answer (Cranfield codes 1-4).
  substantial: The paper answers the question completely, or the research would be impracticable or take much extra work without it (Cranfield codes 1-2).
labels:
  relevant:   {grade: 2, pass: [on_topic, substantial]}
  partial:    {grade: 1, pass: [on_topic], fail: [substantial]}
  irrelevant: {grade: 0, fail: [on_topic]}
"""

# label -> (decided_by, dimensions): decided_by must be admissible under 7.1 (a failed
# clause dimension, or for the pass-only `relevant` the one closest to failing).
LINE_OF_LABEL = {
    "relevant": ("substantial", {"on_topic": "pass", "substantial": "pass"}),
    "partial": ("substantial", {"on_topic": "pass", "substantial": "fail"}),
    "irrelevant": ("on_topic", {"on_topic": "fail", "substantial": "fail"}),
}


class CollectionError(ValueError):
    """A Cranfield file that does not have the expected shape."""


@dataclass(frozen=True)
class Doc:
    number: int
    title: str
    text: str

    @property
    def doc_id(self) -> str:
        return doc_id(self.number)


@dataclass(frozen=True)
class Query:
    number: int  # the qrels' query number: position in cran.qry, from 1
    marker: str  # the .I value in cran.qry
    text: str  # white space folded to single spaces

    @property
    def query_id(self) -> str:
        return query_id(PROJECT, self.text)


@dataclass(frozen=True)
class Collection:
    docs: list[Doc]
    queries: list[Query]
    codes: dict[tuple[int, int], int]  # (query number, doc number) -> Cranfield code

    def grade(self, query: int, doc: int) -> int:
        """The graded relevance of a pair: 0 when Cranfield never judged it."""
        code = self.codes.get((query, doc))
        return 0 if code is None else GRADE_OF_CODE[code]

    def relevant(self, query: int) -> set[int]:
        return {d for (q, d), c in self.codes.items() if q == query and GRADE_OF_CODE[c] >= 1}


def doc_id(number: int) -> str:
    # Zero-padded so that code-point order (ties, priorities) is the numeric order.
    return f"cran-{number:04d}"


def doc_number(value: str) -> int:
    if not value.startswith("cran-"):
        raise CollectionError(f"doc_id {value!r} is not a Cranfield document (cran-NNNN)")
    return int(value[5:])


def query_id(project: str, task: str) -> str:
    """Contract section 3, computed here independently of the pipeline."""
    normalised = " ".join(unicodedata.normalize("NFKC", task).casefold().split())
    return hashlib.sha256(f"{project}\x1f{normalised}".encode()).hexdigest()[:16]


def _records(path: Path) -> list[tuple[str, dict[str, str]]]:
    """Split a SMART-format file into (.I value, {field letter: text}) records."""
    records: list[tuple[str, dict[str, str]]] = []
    field: str | None = None
    lines: dict[str, list[str]] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8", errors="strict").splitlines(), start=1):
        line = raw.rstrip("\r")
        if line.startswith(".I"):
            parts = line.split()
            if len(parts) != 2:
                raise CollectionError(f"{path}:{n}: expected '.I <number>', got {line!r}")
            if records:
                records[-1] = (records[-1][0], {k: " ".join(" ".join(v).split()) for k, v in lines.items()})
            records.append((parts[1], {}))
            lines, field = {}, None
        elif len(line) == 2 and line[0] == "." and line[1] in "TAWB":
            if not records:
                raise CollectionError(f"{path}:{n}: field {line!r} before the first .I")
            field = line[1]
            lines.setdefault(field, [])
        elif field is not None:
            lines[field].append(line)
        elif line.strip():
            raise CollectionError(f"{path}:{n}: text outside a field: {line!r}")
    if records:
        records[-1] = (records[-1][0], {k: " ".join(" ".join(v).split()) for k, v in lines.items()})
    return records


def read_collection(folder: Path) -> Collection:
    """Read cran.all.1400, cran.qry and cranqrel from a folder."""
    docs = []
    for marker, fields in _records(folder / "cran.all.1400"):
        docs.append(Doc(int(marker), fields.get("T", ""), fields.get("W", "")))
    if len({d.number for d in docs}) != len(docs):
        raise CollectionError(f"{folder / 'cran.all.1400'}: a document number appears twice")
    queries = []
    for position, (marker, fields) in enumerate(_records(folder / "cran.qry"), start=1):
        text = fields.get("W", "")
        if not text:
            raise CollectionError(f"{folder / 'cran.qry'}: query .I {marker} has no .W text")
        queries.append(Query(position, marker, text))
    known_docs = {d.number for d in docs}
    codes: dict[tuple[int, int], int] = {}
    qrels = folder / "cranqrel"
    for n, line in enumerate(qrels.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3:
            raise CollectionError(f"{qrels}:{n}: expected 'query doc code', got {line!r}")
        q, d, c = (int(p) for p in parts)
        if c not in GRADE_OF_CODE:
            raise CollectionError(f"{qrels}:{n}: code {c} is not one of {sorted(GRADE_OF_CODE)}")
        if not 1 <= q <= len(queries) or d not in known_docs:
            raise CollectionError(f"{qrels}:{n}: query {q} or document {d} is not in the collection")
        codes[(q, d)] = c  # a repeated pair: the later line wins (none in the distribution)
    return Collection(docs, queries, codes)


def write_corpus(collection: Collection, path: Path) -> None:
    """Contract section 2: one active document a line, version 1."""
    with open(path, "w", encoding="utf-8") as fh:
        for d in collection.docs:
            fh.write(
                json.dumps(
                    {"doc_id": d.doc_id, "version": DOC_VERSION, "status": "active", "title": d.title, "text": d.text}
                )
                + "\n"
            )


def write_rubric(path: Path) -> None:
    path.write_text(RUBRIC_YAML, encoding="utf-8")


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_serve_log(
    collection: Collection, served: dict[int, list[tuple[str, float]]], logs: Path, start: datetime, days: int
) -> dict[str, int]:
    """Contract section 1: one serve per query of what one ranker served, and a verdict per item.

    Query i is served on day (i - 1) % days at `start` + 7 min x (i - 1) // days;
    each verdict comes 45 minutes after its serve and is written in the partition
    of its own day, so late ones land in the next day's folder, as in production. Returns counts of what was written.
    """
    counts = {
        "serves": 0,
        "items": 0,
        "helped": 0,
        "helped_grade2": 0,
        "noise": 0,
        "wrong": 0,
        "queries_without_hits": 0,
    }
    files: dict[str, list[str]] = {}
    for q in collection.queries:
        hits = served.get(q.number, [])
        if not hits:
            counts["queries_without_hits"] += 1
            continue
        i = q.number - 1
        ts = start + timedelta(days=i % days, minutes=7 * (i // days))
        sid = f"s-{q.number:03d}"
        items = [
            {"doc_id": doc, "doc_version": DOC_VERSION, "channel": "ranked", "rank": r, "score": round(s, 6)}
            for r, (doc, s) in enumerate(hits, start=1)
        ]
        serve = {
            "event": "serve",
            "serve_id": sid,
            "ts": _ts(ts),
            "project": PROJECT,
            "session_id": f"sess-{q.number:03d}",
            "task": q.text,
            "items": items,
        }
        files.setdefault(ts.date().isoformat(), []).append(json.dumps(serve))
        counts["serves"] += 1
        vts = ts + timedelta(minutes=45)
        for doc, _ in hits:
            n = doc_number(doc)
            code = collection.codes.get((q.number, n))
            if code is None:
                verdict = "noise"
            elif GRADE_OF_CODE[code] >= 1:
                verdict = "helped"
            else:
                verdict = "wrong"
            counts[verdict] += 1
            counts["helped_grade2"] += code is not None and GRADE_OF_CODE[code] == 2
            counts["items"] += 1
            files.setdefault(vts.date().isoformat(), []).append(
                json.dumps({"event": "verdict", "serve_id": sid, "doc_id": doc, "verdict": verdict, "ts": _ts(vts)})
            )
    for day, lines in sorted(files.items()):
        folder = logs / f"dt={day}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "part-0001.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return counts


def label_line(collection: Collection, query: Query, task: dict, ts: datetime) -> dict:
    """The annotator's answer (contract 7.2) for one exported queue task, from Cranfield's judgments."""
    grade = collection.grade(query.number, doc_number(task["doc_id"]))
    label = LABEL_OF_GRADE[grade]
    decided_by, dimensions = LINE_OF_LABEL[label]
    return {
        "event": "label",
        "query_id": task["query_id"],
        "doc_id": task["doc_id"],
        "doc_version": task["doc_version"],
        "label": label,
        "decided_by": decided_by,
        "annotator": ANNOTATOR,
        "rubric": RUBRIC_NAME,
        "ts": _ts(ts),
        "dimensions": dimensions,
        "kind": "human",
        "note": f"cranqrel: query {query.number} doc {doc_number(task['doc_id'])} "
        f"code {collection.codes.get((query.number, doc_number(task['doc_id'])), 'none')}",
    }


def write_full_qrels(collection: Collection, path: Path) -> int:
    """Every Cranfield judgment as TREC qrels over goldenset's ids (query_id 0 doc_id grade)."""
    n = 0
    by_number = {q.number: q for q in collection.queries}
    with open(path, "w", encoding="utf-8") as fh:
        for (q, d), code in sorted(collection.codes.items()):
            fh.write(f"{by_number[q].query_id} 0 {doc_id(d)} {GRADE_OF_CODE[code]}\n")
            n += 1
    return n
