"""Why an agreement table is empty, and which pairs would fill it (`goldenset labels agreement`, contract 15.9).

Contract 7.5 leaves out entries with n = 0, so a table can come back empty, and an empty table
said nothing: a user who labelled the labelling queue found the agent-vs-human table empty and
had to guess that the queue's pairs are never at the version the agent judged (the pool queues
pairs the golden set does not hold at the current version, which log-judged pairs are not).
A note says why, in one sentence, and what to label, with how many pairs would do.

Decisions
---------
- **Annotators**: empty when no pair holds the current labels of two annotators at one
  doc_version. The pairs that would fill it are those exactly one annotator labelled (at their
  current label's version); a second annotator's label on one makes an entry. A team with
  `--overlap` plans such pairs.
- **Agent**: empty when no annotator's current label stands at the doc_version of the agent's
  verdict on its pair. The why names the first that applies: no annotator label at all; no
  label on a pair the agent judged (a judgment that survived filters 1-3); labels on judged
  pairs, all at another version. The pairs that would fill it are the log's golden rows at
  the document's current version (`golden_set` rows with source `log` and no stale reason):
  a label made now is at the current version, the version the agent judged them at. The pool
  never queues them (they hold a golden row at the current version); an audit
  (`goldenset pool --audit N`, contract 12.1) asks every pair a ranker returned for a drawn
  query, log-judged ones included.
- A table that has entries has no note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from goldenset.labelling.agreement import AgentLabel, LabelLine, human_current


@dataclass(frozen=True)
class TableNote:
    """Why one table of the agreement report is empty, and what would fill it."""

    table: str  # "annotators" or "agent"
    why: str
    fill: str
    pairs: int  # pairs whose label would fill it

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "why": self.why, "fill": self.fill, "pairs": self.pairs}

    def line(self) -> str:
        return f"{self.table} table empty: {self.why}; {self.fill}"


def agreement_notes(
    report: dict[str, list], lines: Iterable[LabelLine], agent_labels: Iterable[AgentLabel], log_judged_pairs: int
) -> list[TableNote]:
    """A note for each empty table of `report` (agreement_report's object), in the report's order."""
    human = human_current(lines)
    notes = []
    if not report["annotators"]:
        notes.append(_annotators_note(human))
    if not report["agent"]:
        notes.append(_agent_note(human, list(agent_labels), log_judged_pairs))
    return notes


def _annotators_note(human: list[LabelLine]) -> TableNote:
    names = sorted({x.annotator for x in human})
    by_pair: dict[tuple[str, str, str], set[str]] = {}
    for x in human:
        by_pair.setdefault((x.query_id, x.doc_id, x.doc_version), set()).add(x.annotator)
    single = sum(1 for who in by_pair.values() if len(who) == 1)
    if not names:
        why = "no annotator has a label line yet"
    elif len(names) == 1:
        why = f"only {names[0]} has labels; agreement needs two annotators' labels on one pair at one version"
    else:
        why = "no pair holds two annotators' current labels at the same doc_version"
    fill = (
        f"a second annotator's label on any of the {single} pair(s) one annotator labelled would fill it "
        "(`goldenset label serve --team --overlap 0.1` plans pairs for two annotators)"
    )
    return TableNote("annotators", why, fill, single)


def _agent_note(human: list[LabelLine], agent: list[AgentLabel], log_judged_pairs: int) -> TableNote:
    judged = {(a.query_id, a.doc_id) for a in agent}
    on_judged = [x for x in human if (x.query_id, x.doc_id) in judged]
    if not human:
        why = "no annotator has a label line yet"
    elif not on_judged:
        why = (
            f"none of the {len(human)} annotator label(s) is on a pair the agent judged (a log verdict that "
            "survived filters 1-3): the labelling queue pools pairs the log never judged at the current version"
        )
    else:
        why = (
            f"{len(on_judged)} annotator label(s) are on pairs the agent judged, but none at the doc_version "
            "the agent judged"
        )
    fill = (
        f"label log-judged pairs: {log_judged_pairs} golden row(s) from the log are at the document's current "
        "version, the version a label made now shares with the agent's verdict; `goldenset pool --audit N` "
        "queues every pair a ranker returns for N drawn golden queries, log-judged ones included"
    )
    return TableNote("agent", why, fill, log_judged_pairs)
