"""The golden query's display text (contract section 3, changed in v5), held to a plain reading of the rule."""

from __future__ import annotations

import unicodedata
from datetime import datetime, timedelta

import duckdb
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from goldenset.display import stage_display_texts
from goldenset.records import display_task, normalise_task

T0 = datetime(2026, 11, 1, 9, 0, 0)


def test_the_display_form_folds_width_and_space_and_keeps_case():
    assert display_task("\uff37hich  version of\ttransformers\u3000?") == "Which version of transformers ?"
    assert display_task(" GDB\n") == "GDB"
    assert display_task("\ufb01x it") == "fix it"  # the NFKC ligature
    # The display form of a text is a text of the same query.
    for t in ("\uff37hich  X", " a\u2003B ", "\ufb01"):
        assert normalise_task(display_task(t)) == normalise_task(t)


def _by_the_rule(serves: list[tuple[str, str, datetime, str]]) -> dict[str, str]:
    """The rule as the contract writes it, for (query_id, task, ts, serve_id) serves."""
    forms: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
    for qid, task, ts, sid in serves:
        form = " ".join(unicodedata.normalize("NFKC", task).split())
        forms.setdefault((qid, form), []).append((ts, sid))
    best: dict[str, tuple[int, tuple[datetime, str], str]] = {}
    for (qid, form), seen in forms.items():
        key = (len(seen), max(seen), form)
        if qid not in best or key[:2] > best[qid][:2]:
            best[qid] = key
    return {qid: key[2] for qid, key in best.items()}


_CON = duckdb.connect()  # one in-memory database for every example: a connection costs 0.1 s


def _staged(serves) -> dict[str, str]:
    con = _CON
    con.execute("CREATE OR REPLACE TEMP TABLE s (query_id VARCHAR, task VARCHAR, serve_ts TIMESTAMP, serve_id VARCHAR)")
    con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)", serves)
    stage_display_texts(con, "SELECT * FROM s")
    return dict(con.execute("SELECT query_id, task FROM _qdisplay").fetchall())


_TEXTS = st.sampled_from(["Reset it", "reset it", "Reset  it", "\uff32eset it", "Reset\tit", "RESET IT", "\ufb01x"])


@st.composite
def _serves(draw):
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        qid = draw(st.sampled_from(["q1", "q2"]))
        minutes = draw(st.integers(0, 3))  # few distinct times: ties on ts are common
        sid = draw(st.sampled_from(["s1", "s2", "s10", "s9", "sA"])) + f"-{i}"
        out.append((qid, draw(_TEXTS), T0 + timedelta(minutes=minutes), sid))
    return out


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_serves())
# A tie on serves goes to the form with the later serve: the full-width one (11:00).
@example(
    [("q1", "Reset it", T0, "s1"), ("q1", "\uff32eset  it", T0, "s0"), ("q1", "reset it", T0 + timedelta(1), "s2")]
)
# Two serves of the plain form beat one later serve of the capitals.
@example([("q1", "RESET IT", T0 + timedelta(1), "s3"), ("q1", "Reset it", T0, "s1"), ("q1", "Reset\tit", T0, "s2")])
# Same time, same count: the larger serve_id in code-point order (s9 > s10).
@example([("q1", "reset it", T0, "s10"), ("q1", "Reset it", T0, "s9")])
def test_the_display_text_is_the_form_of_the_most_serves_then_of_the_latest_serve(serves):
    assert _staged(serves) == _by_the_rule(serves)


def test_at_the_tie_the_latest_serve_decides_and_one_more_serve_outweighs_it():
    tie = [("q", "Reset it", T0, "s1"), ("q", "reset it", T0 + timedelta(seconds=1), "s2")]
    assert _staged(tie) == {"q": "reset it"}
    assert _staged([*tie, ("q", "Reset  it", T0, "s0")]) == {"q": "Reset it"}
    assert _staged([("q", "Reset it", T0, "s2"), ("q", "reset it", T0, "s10")]) == {"q": "Reset it"}
