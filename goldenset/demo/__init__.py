"""Deterministic sample data for the demo: a month of serve logs and two corpus snapshots.

`write_demo_data(root)` writes

    root/logs/dt=YYYY-MM-DD/part-0001.jsonl          every day
    root/logs/dt=YYYY-MM-DD/part-0002.jsonl.gz       about one day in four (a second replica)
    root/corpus-v1.jsonl                             the index the logs were served from
    root/corpus-v2.jsonl                             the index after a reindex (drift ~4%)
    root/late-verdicts.jsonl                         a verdict not in the logs yet (see `flipped`)

The corpus is real text: the docstrings of ~25 standard-library modules and of their
public functions, classes and (for a few central classes) some methods, as this Python
holds them (cut to excerpts), a handful of house-rule documents that every serve
injects with channel `always`, and a small support-policies section (`policies/`,
`legal/`) whose refund policy changed: the reindex adds the page in force and
supersedes the 2022 page without retiring it, and the dense score prefers the stale
one (see `policies`). Four projects ask developer tasks and a fifth, `support`, asks
policy questions, each hand-matched to the documents that answer them; a toy ranker
mixes those with near-miss documents from the same module and random ones, and
agents mark some items helped/noise/wrong, mostly in line with relevance.

The data exercises every rule of CONTRACT.md sections 1-3 at least once: task
variants that normalise to one query (case, spacing, tabs, a full-width form, an
NFKC ligature), late verdicts landing in the next day's file, verdicts read before
their serve, re-marked verdicts (later ts wins; a tie goes to the later line; an
older verdict delivered a day late loses), orphan verdicts, verdicts for a doc the
serve did not serve, identical duplicate serves (keys and items reordered, another
offset for the same instant, another session_id), one conflicting duplicate serve,
a few malformed lines (one per rejection reason), blank and white-space-only lines,
a UTF-8 BOM, CRLF line endings, timestamps with `Z`, `+02:00`, `-05:00` and a
7-digit fraction, documents retired before the corpus snapshot (served early in
the month), documents revised in mid-month (served at v1, then v2), and a reindex
that bumps versions, retires, supersedes and adds documents so that some labels
go stale.

Same seed, days and end date: byte-identical files (the stdlib docstrings are those
of the running Python, so another Python version gives another, equally valid, corpus).
Run `python -m goldenset.demo ROOT` to write the data and print a summary.

One module per concept: `corpus` (documents, the reindex plan, the snapshots),
`policies` (the support-policies section), `tasks`, `serves`, `verdicts`, `faults`
(duplicates, stray verdicts, malformed lines), `flipped` (a verdict the agent takes back
after people labelled the page: the query only their label keeps), `logbook` (timestamps
and the files),
`generate` (`write_demo_data`), and `annotators` (two simulated people who label the
support project's queue by the support-policies rubric, for the demo's labelling loop).
"""

from goldenset.demo.faults import MALFORMED_KINDS
from goldenset.demo.generate import DemoData, write_demo_data
from goldenset.demo.tasks import TASKS

__all__ = ["MALFORMED_KINDS", "TASKS", "DemoData", "write_demo_data"]
