"""Agreement between annotators, and between the agent and the annotators (contract 7.5).

Cohen's kappa over the pairs (query_id, doc_id) two raters both label at the same
doc_version::

    n  = number of such pairs
    po = share of them with the same label                      (observed agreement)
    pe = sum over labels L of p_a(L) x p_b(L)                   (chance agreement; p_x(L) is
                                                                  rater x's share of the n pairs)
    kappa = (po - pe) / (1 - pe), undefined (null) when pe = 1

(Cohen 1960, "A coefficient of agreement for nominal scales"). Figures are exact fractions;
`round_half_away` turns them into 4-decimal floats only on output. Entries with n = 0 are
left out.

Gwet's AC1, the prevalence-robust agreement the judge's gate reports beside kappa (contract
13.2; the gate's other figures are goldenset.labelling.judge_agreement's):

    AC1 = (po - pe1) / (1 - pe1),  pe1 = sum over labels L of pi(L) x (1 - pi(L)) / (Q - 1)
          pi(L) = (count_a(L) + count_b(L)) / 2n,  Q = labels either rater used, at least 2

Gwet's AC1 (Gwet 2008, "Computing inter-rater reliability and its variance in the presence
of high agreement") is the prevalence-robust figure: when nearly every pair is irrelevant,
Cohen's chance agreement pe nears po and kappa nears 0 however well the raters agree, while
AC1's chance agreement stays small (at most 1/Q), so AC1 stays near po.

Everything here is a pure function over typed records; the warehouse code reads the label
lines, the agent's judgments and the human labels from DuckDB and passes them in.

Decisions
---------
- Only human current labels enter agreement between annotators, disagreements and the agent
  comparison. An annotator's current label on a pair is its latest accepted line whatever its
  kind (7.2), as the merge and the judge's gate read it (8.3); it counts here when that line has
  kind `human`. So a name with lines of both kinds is a human annotator on the pairs where its
  latest line is a human one and is left out of the others, and an older human line of it does
  not stand in where a later judge line of the same name shadows it: such a line does not vote
  in the human label of 7.3 either, and agreement describes the labels the build reads.
- An annotator's current label on a pair is one label at one doc_version. Two annotators
  share a pair only when their current labels are at the same doc_version; a current label at
  another version is not compared (it is not a label of the same passage), and an older line
  at the shared version does not stand in for it.
- Disagreements group the current labels on a pair by doc_version. An entry lists every
  annotator in each group of two or more whose labels are not all equal; annotators alone at
  their version, or in a unanimous group at another version, are left out of that entry.
- The agent's label is its verdict (`helped` is 1, `noise` and `wrong` are 0); a human label
  is 1 when its grade is >= 1. Against "(human label)" the human label of 7.3 counts only
  where it stands at the same doc_version as the agent's judgment, like every other entry.
- **AC1's Q** is the number of labels either rater used on the pairs (at least 2), as irrCAC
  counts categories of raw ratings; a rubric label nobody used on the sample is no choice a
  rater made. With Q >= 2, pe1 <= 1/Q < 1, so AC1 is defined whenever n >= 1.
- Breakdowns (for the human-readable report): a disagreement counts once under the distinct
  decided_by values among its labels, sorted and joined with " / " (`answerability / coverage`
  when the annotators' labels were decided by those two dimensions, `coverage` when every
  label names coverage), and once under its query's project (`(no project)` when the caller
  gave none). Each disagreeing pair counts exactly once in each breakdown, so both add up to
  the number of disagreeing pairs (counting it under each of its dimensions did not, and a
  reader took the sum for the number of pairs). Counts are sorted by count, descending, then
  name. The disagreeing
  annotator pairs list every pair (a, b) that disagrees on at least one shared pair, with
  how many they share and the pairs where their labels differ.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from itertools import combinations
from typing import Any, Literal

from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import LabelGrades

Kind = Literal["human", "judge"]
Verdict = Literal["helped", "noise", "wrong"]
HUMAN_LABEL = "(human label)"
NO_PROJECT = "(no project)"
PLACES = 4


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, order=True)
class LineOrder:
    """Where a line stands: dt, file name, line number; compared in that order (code points)."""

    dt: str  # the partition's dt (its folder name or its date: only the order matters, so use one form)
    file: str  # the file name within the partition
    line: int  # 1-based, as the line stands in the file


@dataclass(frozen=True)
class LabelLine:
    """One accepted label line (contract 7.2), with the query's project when the caller knows it."""

    annotator: str
    kind: Kind
    query_id: str
    doc_id: str
    doc_version: str
    label: str
    decided_by: str
    ts: datetime  # timezone-aware; compared as an instant
    order: LineOrder
    project: str | None = None

    def __post_init__(self) -> None:
        if self.ts.tzinfo is None or self.ts.utcoffset() is None:
            raise ValueError(f"LabelLine.ts must be timezone-aware (UTC), got {self.ts!r}")
        if self.kind not in ("human", "judge"):
            raise ValueError(f"LabelLine.kind must be 'human' or 'judge', got {self.kind!r}")


@dataclass(frozen=True)
class AgentLabel:
    """One judgment of the agent that survived filters 1-3 (always_served, retired, repeats)."""

    query_id: str
    doc_id: str
    doc_version: str
    verdict: Verdict


@dataclass(frozen=True)
class HumanLabel:
    """The human label (7.3) of a pair that takes part in the golden set."""

    query_id: str
    doc_id: str
    doc_version: str
    label: str


@dataclass(frozen=True)
class PairRef:
    """A (query_id, doc_id) pair."""

    query_id: str
    doc_id: str


# --------------------------------------------------------------------------- kappa


@dataclass(frozen=True)
class Agreement:
    """Cohen's kappa over n paired labels, exact: po, pe and kappa (None when pe = 1)."""

    n: int
    po: Fraction
    pe: Fraction
    kappa: Fraction | None

    def to_json(self) -> dict[str, Any]:
        """`n`, `po`, `pe`, `kappa` as the contract prints them: rounded half away from zero, 4 decimals."""
        return {
            "n": self.n,
            "po": round_half_away(self.po),
            "pe": round_half_away(self.pe),
            "kappa": None if self.kappa is None else round_half_away(self.kappa),
        }


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> Agreement:
    """Cohen's kappa of two raters; `a[i]` and `b[i]` are their labels of the same item.

    po = share of items with a[i] == b[i]; pe = sum over labels of p_a x p_b;
    kappa = (po - pe) / (1 - pe), None when pe = 1 (both raters used one and the same label).
    ValueError when the sequences differ in length or are empty (n = 0 has no agreement).
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs paired labels, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("cohen_kappa needs at least one pair")
    po = Fraction(sum(1 for x, y in zip(a, b, strict=True) if x == y), n)
    count_a, count_b = Counter(a), Counter(b)
    pe = Fraction(sum(count_a[label] * count_b[label] for label in count_a), n * n)
    kappa = None if pe == 1 else (po - pe) / (1 - pe)
    return Agreement(n, po, pe, kappa)


def gwet_ac1(a: Sequence[Hashable], b: Sequence[Hashable]) -> Fraction:
    """Gwet's AC1 of two raters; `a[i]` and `b[i]` are their labels of the same item (see the module docstring).

    pe1 = sum over labels of pi x (1 - pi) / (Q - 1), pi = (count_a + count_b) / 2n, Q = the
    labels either rater used (at least 2); AC1 = (po - pe1) / (1 - pe1). Exact. ValueError when
    the sequences differ in length or are empty.
    """
    if len(a) != len(b):
        raise ValueError(f"gwet_ac1 needs paired labels, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("gwet_ac1 needs at least one pair")
    po = Fraction(sum(1 for x, y in zip(a, b, strict=True) if x == y), n)
    counts = Counter(a) + Counter(b)
    q = max(2, len(counts))
    pe = sum((Fraction(c, 2 * n) * (1 - Fraction(c, 2 * n)) for c in counts.values()), Fraction(0)) / (q - 1)
    return (po - pe) / (1 - pe)


def round_half_away(value: Fraction, places: int = PLACES) -> float:
    """`value` rounded half away from zero to `places` decimals, decided on the exact value.

    The same as Decimal's ROUND_HALF_UP applied to the exact number; done in integers because
    a fraction such as 1/3 has no finite Decimal, and dividing first would round twice.
    """
    scaled = abs(value) * 10**places
    units = math.floor(scaled + Fraction(1, 2))
    sign = -1 if value < 0 else 1
    return float(Decimal(sign * units).scaleb(-places))


# --------------------------------------------------------------------------- current labels


def current_labels(lines: Iterable[LabelLine]) -> list[LabelLine]:
    """Each annotator's current label per (query_id, doc_id): the latest ts, ties to the later line.

    Later line means later in (dt, file name, line) order. Pass accepted lines only: a rejected
    line never shadows an accepted one. Sorted by (annotator, query_id, doc_id).
    """
    best: dict[tuple[str, str, str], LabelLine] = {}
    for line in lines:
        key = (line.annotator, line.query_id, line.doc_id)
        held = best.get(key)
        if held is None or (line.ts, line.order) > (held.ts, held.order):
            best[key] = line
    return [best[k] for k in sorted(best)]


def human_current(lines: Iterable[LabelLine]) -> list[LabelLine]:
    """The current labels (7.2: the latest line whatever its kind) that have kind `human`, sorted as
    current_labels sorts them: a human line shadowed by a later judge line of its name is not one."""
    return [line for line in current_labels(lines) if line.kind == "human"]


def _by_pair(current: Iterable[LabelLine]) -> dict[PairRef, list[LabelLine]]:
    groups: dict[PairRef, list[LabelLine]] = defaultdict(list)
    for line in current:
        groups[PairRef(line.query_id, line.doc_id)].append(line)
    return groups


# --------------------------------------------------------------------------- annotator pairs


@dataclass(frozen=True)
class AnnotatorAgreement:
    """Agreement of annotators `a` < `b` (code points) over the pairs they share."""

    a: str
    b: str
    agreement: Agreement

    def to_json(self) -> dict[str, Any]:
        """The contract's entry: a, b, n, po, pe, kappa."""
        return {"a": self.a, "b": self.b, **self.agreement.to_json()}


def _shared(current: Iterable[LabelLine]) -> dict[tuple[str, str], list[tuple[LabelLine, LabelLine]]]:
    """Per annotator pair (a < b), their current labels on every pair both hold at one doc_version."""
    shared: dict[tuple[str, str], list[tuple[LabelLine, LabelLine]]] = defaultdict(list)
    for _, held in sorted(_by_pair(current).items(), key=lambda kv: (kv[0].query_id, kv[0].doc_id)):
        for x, y in combinations(sorted(held, key=lambda line: line.annotator), 2):
            if x.doc_version == y.doc_version:
                shared[(x.annotator, y.annotator)].append((x, y))
    return shared


def annotator_agreement(lines: Iterable[LabelLine]) -> list[AnnotatorAgreement]:
    """Kappa for every two annotators (human lines) sharing at least one pair, sorted by (a, b)."""
    out = []
    for (a, b), pairs in sorted(_shared(human_current(lines)).items()):
        agreement = cohen_kappa([x.label for x, _ in pairs], [y.label for _, y in pairs])
        out.append(AnnotatorAgreement(a, b, agreement))
    return out


# --------------------------------------------------------------------------- agent


@dataclass(frozen=True)
class AgentAgreement:
    """Agreement of the agent's verdicts with one annotator, or with the human label."""

    annotator: str  # an annotator's name, or HUMAN_LABEL
    agreement: Agreement

    def to_json(self) -> dict[str, Any]:
        """The contract's entry: annotator, n, po, pe, kappa."""
        return {"annotator": self.annotator, **self.agreement.to_json()}


def _agent_index(agent_labels: Iterable[AgentLabel]) -> dict[PairRef, AgentLabel]:
    index: dict[PairRef, AgentLabel] = {}
    for label in agent_labels:
        key = PairRef(label.query_id, label.doc_id)
        if key in index:
            # After `repeats` a query keeps one judgment per document; two mean the caller mixed builds.
            raise ValueError(f"two agent labels for query {label.query_id!r}, doc {label.doc_id!r}")
        index[key] = label
    return index


def _binary_kappa(pairs: list[tuple[AgentLabel, str]], rubric: Rubric | LabelGrades) -> Agreement:
    agent = [p.verdict == "helped" for p, _ in pairs]
    human = [rubric.grade_of(label) >= 1 for _, label in pairs]
    return cohen_kappa(agent, human)


def agent_agreement(
    lines: Iterable[LabelLine],
    agent_labels: Iterable[AgentLabel],
    human_labels: Iterable[HumanLabel],
    rubric: Rubric | LabelGrades,
) -> list[AgentAgreement]:
    """Kappa of the agent (helped or not) against each annotator and the human label (grade >= 1 or not).

    Compared where the agent's judgment and the label stand at the same doc_version. Sorted by
    annotator (code points), HUMAN_LABEL last; entries with n = 0 left out.
    """
    agent = _agent_index(agent_labels)
    per_annotator: dict[str, list[tuple[AgentLabel, str]]] = defaultdict(list)
    for line in human_current(lines):
        judged = agent.get(PairRef(line.query_id, line.doc_id))
        if judged is not None and judged.doc_version == line.doc_version:
            per_annotator[line.annotator].append((judged, line.label))
    out = [AgentAgreement(name, _binary_kappa(pairs, rubric)) for name, pairs in sorted(per_annotator.items())]
    merged = []
    for human in sorted(human_labels, key=lambda h: (h.query_id, h.doc_id)):
        judged = agent.get(PairRef(human.query_id, human.doc_id))
        if judged is not None and judged.doc_version == human.doc_version:
            merged.append((judged, human.label))
    if merged:
        out.append(AgentAgreement(HUMAN_LABEL, _binary_kappa(merged, rubric)))
    return out


# --------------------------------------------------------------------------- disagreements


@dataclass(frozen=True)
class AnnotatorLabel:
    """One annotator's current label within a disagreement."""

    annotator: str
    label: str
    doc_version: str
    decided_by: str


@dataclass(frozen=True)
class Disagreement:
    """A pair where annotators at one doc_version do not all give the same label."""

    query_id: str
    doc_id: str
    labels: tuple[AnnotatorLabel, ...]  # by annotator
    project: str | None

    def to_json(self) -> dict[str, Any]:
        """The contract's entry: query_id, doc_id, labels {annotator: label}."""
        return {"query_id": self.query_id, "doc_id": self.doc_id, "labels": {x.annotator: x.label for x in self.labels}}


def _disagreements(current: Iterable[LabelLine]) -> list[Disagreement]:
    out = []
    for pair, held in sorted(_by_pair(current).items(), key=lambda kv: (kv[0].query_id, kv[0].doc_id)):
        by_version: dict[str, list[LabelLine]] = defaultdict(list)
        for line in held:
            by_version[line.doc_version].append(line)
        involved = [
            line
            for group in by_version.values()
            if len(group) >= 2 and len({x.label for x in group}) > 1
            for line in group
        ]
        if involved:
            involved.sort(key=lambda line: line.annotator)
            project = next((x.project for x in involved if x.project is not None), None)
            out.append(
                Disagreement(
                    pair.query_id,
                    pair.doc_id,
                    tuple(AnnotatorLabel(x.annotator, x.label, x.doc_version, x.decided_by) for x in involved),
                    project,
                )
            )
    return out


def disagreements(lines: Iterable[LabelLine]) -> list[Disagreement]:
    """Every (query_id, doc_id) where annotators (human lines) at one doc_version disagree, sorted."""
    return _disagreements(human_current(lines))


# --------------------------------------------------------------------------- report


def agreement_report(
    lines: Iterable[LabelLine],
    agent_labels: Iterable[AgentLabel],
    human_labels: Iterable[HumanLabel],
    rubric: Rubric | LabelGrades,
) -> dict[str, list[dict[str, Any]]]:
    """The object `goldenset labels agreement --json` prints: annotators, agent, disagreements.

    `lines`: accepted label lines (any kind; only human ones count). `agent_labels`: the
    judgments that survived filters 1-3. `human_labels`: the 7.3 human label of every pair
    that takes part in the golden set. `rubric` gives each label's grade.
    """
    lines = list(lines)
    return {
        "annotators": [x.to_json() for x in annotator_agreement(lines)],
        "agent": [x.to_json() for x in agent_agreement(lines, agent_labels, human_labels, rubric)],
        "disagreements": [x.to_json() for x in disagreements(lines)],
    }


@dataclass(frozen=True)
class Count:
    """How many disagreements fall under one key (a decided_by dimension or a project)."""

    key: str
    n: int


@dataclass(frozen=True)
class PairDisagreements:
    """Two annotators (a < b) who disagree: how many pairs they share, and where they differ."""

    a: str
    b: str
    shared: int
    pairs: tuple[PairRef, ...]  # sorted by query_id, doc_id


@dataclass(frozen=True)
class DisagreementBreakdown:
    """Disagreements by decided_by and by project, and the annotator pairs that disagree."""

    total: int
    by_decided_by: tuple[Count, ...]
    by_project: tuple[Count, ...]
    annotator_pairs: tuple[PairDisagreements, ...]  # sorted by (a, b)


DECIDED_BY_JOIN = " / "


def _counts(counter: Counter[str]) -> tuple[Count, ...]:
    return tuple(Count(k, n) for k, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def disagreement_breakdown(lines: Iterable[LabelLine]) -> DisagreementBreakdown:
    """Where annotators disagree (human lines): by decided_by, by project, and by annotator pair."""
    current = human_current(lines)
    found = _disagreements(current)
    by_decided_by: Counter[str] = Counter()
    by_project: Counter[str] = Counter()
    for d in found:
        by_decided_by[DECIDED_BY_JOIN.join(sorted({x.decided_by for x in d.labels}))] += 1
        by_project[d.project if d.project is not None else NO_PROJECT] += 1
    annotator_pairs = []
    for (a, b), shared in sorted(_shared(current).items()):
        differ = tuple(PairRef(x.query_id, x.doc_id) for x, y in shared if x.label != y.label)
        if differ:
            annotator_pairs.append(PairDisagreements(a, b, len(shared), differ))
    return DisagreementBreakdown(len(found), _counts(by_decided_by), _counts(by_project), tuple(annotator_pairs))
