"""Reading the labelling loop's tables back as typed records (for agreement, the page, the judge)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from goldenset.build_record import load_build
from goldenset.connection import Connection
from goldenset.labelling.agreement import AgentLabel, HumanLabel, LabelLine, LineOrder
from goldenset.schema import KNOWN_VERSIONS_SQL


@dataclass(frozen=True)
class AgreementInputs:
    """What agreement (7.5) compares, as the latest build ingested and merged the labels."""

    build_id: int
    lines: list[LabelLine]
    agent_labels: list[AgentLabel]
    human_labels: list[HumanLabel]
    # Golden rows from the log at the document's current version: the pairs a label made now
    # would compare with the agent's verdict on (goldenset.labelling.agreement_notes).
    log_judged_pairs: int = 0


def agreement_inputs(con: Connection) -> AgreementInputs:
    """Accepted label lines whose version a build's snapshot holds, the agent's labels, the 7.3 human labels."""
    build = load_build(con)
    rows = con.execute(
        f"""SELECT h.annotator, h.kind, h.query_id, h.doc_id, h.doc_version, h.label, h.decided_by, h.ts,
                   h.dt, h.file_name, h.line, q.project
            FROM human_labels h
            LEFT JOIN (SELECT DISTINCT query_id, project FROM golden_set_by_build WHERE build_id = ?) q USING (query_id)
            WHERE (h.doc_id, h.doc_version) IN ({KNOWN_VERSIONS_SQL})
            ORDER BY h.dt, h.file_name, h.line""",
        [build.labels_build_id],
    ).fetchall()
    lines = [
        LabelLine(a, k, q, d, v, label, by, ts.replace(tzinfo=UTC), LineOrder(dt, f, n), project)
        for a, k, q, d, v, label, by, ts, dt, f, n, project in rows
    ]

    def pairs(sql: str) -> list[tuple]:  # (query_id, doc_id, doc_version, X) of the labels' build, in pair order
        return con.execute(sql + " ORDER BY query_id, doc_id", [build.labels_build_id]).fetchall()

    agent = [
        AgentLabel(*row)
        for row in pairs("SELECT query_id, doc_id, doc_version, verdict FROM build_agent_labels WHERE build_id = ?")
    ]
    human = [
        HumanLabel(*row)
        for row in pairs(
            "SELECT query_id, doc_id, doc_version, label FROM build_human_labels WHERE build_id = ? AND source = 'human'"
        )
    ]
    (log_judged,) = con.execute(
        "SELECT count(*) FROM golden_set WHERE source = 'log' AND stale_reason IS NULL"
    ).fetchall()[0]
    return AgreementInputs(build.build_id, lines, agent, human, int(log_judged))
