"""The audit sample: a random sample of golden queries whose pooled pairs humans label in full.

`goldenset pool --audit N [--seed S]` draws N of the latest build's golden queries (the
query is the sampling unit: a per-query metric needs every pooled pair of its query
labelled) and queues, with reason `audit`, every pair of a drawn query that the pool
returned and that has no human label at the document's current version. The design
(unit, population size, sample size, seed, the pool and build it belongs to), the drawn
queries and the pairs asked for are stored with the pool run (`audit_samples`,
`audit_queries`, `audit_pairs`), so an estimate uses exactly the sample that was drawn.

Decisions
---------
- **The population** is the golden query_ids of the pool's build whose project some rubric
  judges (contract 9.5; all of them without rubrics): a query no rubric judges gets no pair
  queued, so it would count as audited at once while no person ever checked its truth.
- **The draw.** The population is sorted in code-point order; the sample is `numpy.random.default_rng(seed).choice(N, size=n,
  replace=False)` applied to that list, kept in draw order. n > N draws every query (a
  census; the design records the n actually drawn and the n asked). The seed is the pool's
  `--seed` (default 0, shared with the pool's strategies); a library caller passing None
  gets a seed drawn from the operating system, recorded, so the sample stays reproducible.
- **Precedence.** stale, successor, audit, pooled: a pair already queued as stale or
  successor keeps that reason (it is asked either way). A returned pair of a drawn query
  is `audit` when no golden_set row with source `human` holds it at the document's current
  version, whether the pair is unlabelled (it would be `pooled`) or holds only a log or
  judge label (it would be left out as already labelled): an agent's verdict or a judge
  label is what the audit checks, so it is asked again.
- **Audited.** A drawn query is audited once every pair asked for it has a golden_set row
  with source `human` (at any version); pairs whose document is no longer active in the
  latest build cannot be labelled or ranked and are not required. A drawn query with no
  pair to ask (humans had labelled all of them) is audited from the start.
- **Which audit.** Estimates use the latest pool run that drew an audit; a later pool
  without --audit does not replace it, and queues its pairs still without a human row again
  (reason `audit`, `pending_pairs`): a later pool used to drop an asked pair once an admitted
  judge's row covered it (already labelled), and the audit could then never complete.
- **Two designs.** `uniform` (the draw above: every query has the chance n/N) and `active`
  (`--active --judge NAME`: Poisson sampling with a chance per query that follows the
  judge's uncertainty, goldenset.labelling.active_audit). Each drawn query's chance is
  stored (`audit_queries.inclusion`), and an active audit's whole population with its
  uncertainties and chances (`audit_population`), so an estimate weighs each audited
  query by the inverse of its chance and the draw can be repeated from the warehouse.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from goldenset.connection import Connection
from goldenset.errors import GoldensetError, UsageError
from goldenset.labelling import active_audit

UNIT = "query"
REASON = "audit"
UNIFORM = "uniform"
ACTIVE = "active"


@dataclass(frozen=True)
class AuditDesign:
    """What was drawn: the unit, the population, the sample (in draw order), the seed and the design."""

    population: int
    requested: int
    seed: int
    queries: tuple[str, ...]
    unit: str = UNIT
    design: str = UNIFORM
    # Per drawn query, in draw order: the probability the design drew it with (uniform: n/N each).
    inclusion: tuple[float, ...] = ()
    judge: str | None = None  # active: whose labels set the probabilities
    uniform_share: float | None = None  # active: s (goldenset.labelling.active_audit)
    # Active: every query of the population, (query_id, uncertainty, inclusion, drawn), in code-point order.
    population_rows: tuple[tuple[str, float, float, bool], ...] = ()

    @property
    def sample_size(self) -> int:
        return len(self.queries)

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "population": self.population,
            "requested": self.requested,
            "sample_size": self.sample_size,
            "seed": self.seed,
            "design": self.design,
            "judge": self.judge,
            "uniform_share": self.uniform_share,
        }


def check_audit(n: int | None, seed: int | None, active_judge: str | None = None) -> tuple[int, int] | None:
    """The sample size and seed (a fresh one when None: recorded, so the draw stays reproducible); None without
    --audit. The seed is the pool's `--seed`, which the pool's strategies share. `active_judge`: the judge of
    `--active --judge NAME`, which needs --audit."""
    if n is None:
        if active_judge is not None:
            raise UsageError("--active draws an audit: add --audit N (the expected number of queries)")
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"--audit must be an integer >= 1 (queries to sample), got {n!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise UsageError(f"--seed must be an integer >= 0, got {seed!r}")
    return n, (seed if seed is not None else secrets.randbits(63))


def check_active(active: bool, judge: str | None) -> str | None:
    """`pool --active --judge NAME`: the judge's name, None for a uniform audit; UsageError for half of it."""
    if active and not judge:
        raise UsageError("--active needs --judge NAME, the judge annotator whose labels set the probabilities")
    if judge and not active:
        raise UsageError("--judge only applies to an active audit; add --active (and --audit N)")
    return judge if active else None


def draw(query_ids: Iterable[str], n: int, seed: int) -> AuditDesign:
    """A uniform random sample of n of the query_ids, without replacement (see the module's decisions)."""
    population = sorted(set(query_ids))
    size = min(n, len(population))
    picked = np.random.default_rng(seed).choice(len(population), size=size, replace=False)
    share = size / len(population) if population else 1.0
    return AuditDesign(len(population), n, seed, tuple(population[int(i)] for i in picked), inclusion=(share,) * size)


def draw_active_design(query_ids: Iterable[str], n: int, seed: int, judge: str, u: Mapping[str, float]) -> AuditDesign:
    """An active sample (goldenset.labelling.active_audit), drawn queries in code-point order."""
    sample = active_audit.draw_active(query_ids, n, seed, u)
    chance = dict(zip(sample.population, sample.inclusion, strict=True))
    drawn = set(sample.drawn)
    return AuditDesign(
        len(sample.population),
        n,
        seed,
        sample.drawn,
        design=ACTIVE,
        inclusion=tuple(chance[q] for q in sample.drawn),
        judge=judge,
        uniform_share=active_audit.UNIFORM_SHARE,
        population_rows=tuple(
            (q, unc, p, q in drawn)
            for q, unc, p in zip(sample.population, sample.uncertainty, sample.inclusion, strict=True)
        ),
    )


Pair = tuple[str, str]


def asked_pairs(
    design: AuditDesign, returned: Iterable[Pair], versions: Mapping[str, str], human: set[tuple[str, str, str]]
) -> set[Pair]:
    """The pairs a new audit asks: returned pairs of drawn queries no human label holds at the document's
    current version."""
    drawn = set(design.queries)
    return {(q, d) for q, d in returned if q in drawn and (q, d, versions[d]) not in human}


def assign(
    chosen: dict[Pair, tuple[str, str]], asked: Iterable[Pair], versions: Mapping[str, str]
) -> dict[Pair, tuple[str, str]]:
    """`chosen` with the asked pairs given reason `audit` at the document's current version, unless already
    queued as stale or successor (whether pooled, left out as already labelled, or not returned at all)."""
    out = dict(chosen)
    for qid, doc_id in sorted(asked):
        version = versions[doc_id]
        if out.get((qid, doc_id), ("pooled", version))[0] == "pooled":
            out[(qid, doc_id)] = (REASON, version)
    return out


_PENDING = """
SELECT a.query_id, a.doc_id FROM audit_pairs a
WHERE a.pool_id = (SELECT max(pool_id) FROM audit_samples)
  AND NOT EXISTS (SELECT 1 FROM golden_set h WHERE h.source = 'human'
                  AND h.query_id = a.query_id AND h.doc_id = a.doc_id)
"""


def pending_pairs(con: Connection, golden: Iterable[str], active: Iterable[str]) -> set[Pair]:
    """The latest audit's pairs still to ask (contract 12.1), which every later pool queues again: its
    `audit_pairs` rows of a golden query whose document is active in the build's snapshot and that no
    golden_set row with source human holds (any version). Empty when no audit was drawn."""
    queries, docs = set(golden), set(active)
    return {(q, d) for q, d in con.execute(_PENDING).fetchall() if q in queries and d in docs}


def human_rows(con: Connection) -> set[tuple[str, str, str]]:
    """(query_id, doc_id, doc_version) of every golden_set row with source human."""
    rows = con.execute("SELECT query_id, doc_id, doc_version FROM golden_set WHERE source = 'human'").fetchall()
    return {(q, d, v) for q, d, v in rows}


def store(
    con: Connection,
    pool_id: int,
    build_id: int,
    drawn_at: datetime,
    design: AuditDesign,
    pairs: Iterable[tuple[str, str, str]],
) -> None:
    """Write the design, the drawn queries and the pairs asked for; the caller holds the transaction."""
    pairs = sorted(pairs)
    con.execute(
        "INSERT INTO audit_samples (pool_id, build_id, drawn_at, unit, population, requested, sample_size, seed, "
        "design, judge, uniform_share) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            pool_id,
            build_id,
            drawn_at,
            design.unit,
            design.population,
            design.requested,
            design.sample_size,
            design.seed,
            design.design,
            design.judge,
            design.uniform_share,
        ],
    )
    queries = pa.table(
        {
            "pool_id": pa.array([pool_id] * design.sample_size, pa.int64()),
            "query_id": pa.array(list(design.queries), pa.string()),
            "draw": pa.array(list(range(1, design.sample_size + 1)), pa.int64()),
            "inclusion": pa.array(list(design.inclusion), pa.float64()),
        }
    )
    rows = design.population_rows
    population = pa.table(
        {
            "pool_id": pa.array([pool_id] * len(rows), pa.int64()),
            "query_id": pa.array([r[0] for r in rows], pa.string()),
            "uncertainty": pa.array([r[1] for r in rows], pa.float64()),
            "inclusion": pa.array([r[2] for r in rows], pa.float64()),
            "drawn": pa.array([r[3] for r in rows], pa.bool_()),
        }
    )
    asked = pa.table(
        {
            "pool_id": pa.array([pool_id] * len(pairs), pa.int64()),
            "query_id": pa.array([p[0] for p in pairs], pa.string()),
            "doc_id": pa.array([p[1] for p in pairs], pa.string()),
            "doc_version": pa.array([p[2] for p in pairs], pa.string()),
        }
    )
    for name, table, target in (
        ("_audit_q", queries, "audit_queries"),
        ("_audit_p", asked, "audit_pairs"),
        ("_audit_u", population, "audit_population"),
    ):
        con.register(name, table)
        try:
            con.execute(f"INSERT INTO {target} BY NAME SELECT * FROM {name}")
        finally:
            con.unregister(name)


# --------------------------------------------------------------------------- reading an audit back


@dataclass(frozen=True)
class Audit:
    """The latest audit as the latest build sees it: the design, the pairs asked, which queries are audited."""

    pool_id: int
    build_id: int
    drawn_at: datetime
    design: AuditDesign
    asked: frozenset[Pair]
    audited: tuple[str, ...]  # drawn queries humans labelled in full, in draw order

    @property
    def active(self) -> bool:
        return self.design.design == ACTIVE

    def inclusion(self) -> dict[str, float]:
        """query_id -> the probability the design drew it with, for every drawn query."""
        return dict(zip(self.design.queries, self.design.inclusion, strict=True))

    @property
    def pending(self) -> tuple[str, ...]:
        done = set(self.audited)
        return tuple(q for q in self.design.queries if q not in done)

    def to_json(self) -> dict[str, Any]:
        return {
            "pool_id": self.pool_id,
            "build_id": self.build_id,
            **self.design.to_json(),
            "pairs_asked": len(self.asked),
            "audited": len(self.audited),
            "pending": len(self.pending),
        }


def latest_audit(con: Connection) -> Audit:
    """The latest pool run's audit; GoldensetError naming `pool --audit` when none was drawn."""
    row = con.execute(
        "SELECT pool_id, build_id, drawn_at, unit, population, requested, seed, design, judge, uniform_share "
        "FROM audit_samples ORDER BY pool_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise GoldensetError("no audit sample yet: run `goldenset pool --audit N`, then label its `audit` pairs")
    pool_id, build_id, drawn_at, unit, population, requested, seed, kind, judge, share = row
    drawn = con.execute(
        "SELECT query_id, inclusion FROM audit_queries WHERE pool_id = ? ORDER BY draw", [pool_id]
    ).fetchall()
    queries = tuple(q for q, _ in drawn)
    asked = frozenset(
        (q, d)
        for q, d in con.execute("SELECT query_id, doc_id FROM audit_pairs WHERE pool_id = ?", [pool_id]).fetchall()
    )
    # Required: asked pairs whose document is active in the latest build; met: a human row holds the pair.
    open_rows = con.execute(
        """
        SELECT a.query_id FROM audit_pairs a
        WHERE a.pool_id = ?
          AND a.doc_id IN (SELECT d.doc_id FROM corpus_documents d
                           WHERE d.status = 'active' AND d.content_sha256 =
                             (SELECT corpus_content_sha256 FROM golden_builds ORDER BY build_id DESC LIMIT 1))
          AND NOT EXISTS (SELECT 1 FROM golden_set g WHERE g.source = 'human'
                          AND g.query_id = a.query_id AND g.doc_id = a.doc_id)
        """,
        [pool_id],
    ).fetchall()
    pending = {q for (q,) in open_rows}
    design = AuditDesign(
        int(population),
        int(requested),
        int(seed),
        queries,
        unit,
        design=kind or UNIFORM,
        inclusion=tuple(float(p) for _, p in drawn),
        judge=judge,
        uniform_share=share,
    )
    return Audit(int(pool_id), int(build_id), drawn_at, design, asked, tuple(q for q in queries if q not in pending))
