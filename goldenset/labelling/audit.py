"""The audit sample: a uniform random sample of golden queries whose pooled pairs humans label in full.

`goldenset pool --audit N [--seed S]` draws N of the latest build's golden queries (the
query is the sampling unit: a per-query metric needs every pooled pair of its query
labelled) and queues, with reason `audit`, every pair of a drawn query that the pool
returned and that has no human label at the document's current version. The design
(unit, population size, sample size, seed, the pool and build it belongs to), the drawn
queries and the pairs asked for are stored with the pool run (`audit_samples`,
`audit_queries`, `audit_pairs`), so an estimate uses exactly the sample that was drawn.

Decisions
---------
- **The draw.** The population is the golden query_ids of the pool's build, sorted in
  code-point order; the sample is `numpy.random.default_rng(seed).choice(N, size=n,
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
  without --audit does not replace it.
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

UNIT = "query"
REASON = "audit"


@dataclass(frozen=True)
class AuditDesign:
    """What was drawn: the unit, the population, the sample (in draw order) and the seed."""

    population: int
    requested: int
    seed: int
    queries: tuple[str, ...]
    unit: str = UNIT

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
        }


def check_audit(n: int | None, seed: int | None) -> tuple[int, int] | None:
    """The sample size and seed (a fresh one when None: recorded, so the draw stays reproducible); None without
    --audit. The seed is the pool's `--seed`, which the pool's strategies share."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UsageError(f"--audit must be an integer >= 1 (queries to sample), got {n!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise UsageError(f"--seed must be an integer >= 0, got {seed!r}")
    return n, (seed if seed is not None else secrets.randbits(63))


def draw(query_ids: Iterable[str], n: int, seed: int) -> AuditDesign:
    """A uniform random sample of n of the query_ids, without replacement (see the module's decisions)."""
    population = sorted(set(query_ids))
    size = min(n, len(population))
    picked = np.random.default_rng(seed).choice(len(population), size=size, replace=False)
    return AuditDesign(len(population), n, seed, tuple(population[int(i)] for i in picked))


Pair = tuple[str, str]


def assign(
    design: AuditDesign,
    chosen: dict[Pair, tuple[str, str]],
    returned: Iterable[Pair],
    versions: Mapping[str, str],
    human: set[tuple[str, str, str]],
) -> dict[Pair, tuple[str, str]]:
    """`chosen` with the audit's pairs given reason `audit`: returned pairs of drawn queries no human label
    holds at the document's current version, unless already queued as stale or successor."""
    drawn = set(design.queries)
    out = dict(chosen)
    for qid, doc_id in returned:
        if qid not in drawn:
            continue
        version = versions[doc_id]
        if (qid, doc_id, version) in human:
            continue
        reason = out.get((qid, doc_id), ("pooled", version))[0]
        if reason == "pooled":
            out[(qid, doc_id)] = (REASON, version)
    return out


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
        "INSERT INTO audit_samples (pool_id, build_id, drawn_at, unit, population, requested, sample_size, seed) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            pool_id,
            build_id,
            drawn_at,
            design.unit,
            design.population,
            design.requested,
            design.sample_size,
            design.seed,
        ],
    )
    queries = pa.table(
        {
            "pool_id": pa.array([pool_id] * design.sample_size, pa.int64()),
            "query_id": pa.array(list(design.queries), pa.string()),
            "draw": pa.array(list(range(1, design.sample_size + 1)), pa.int64()),
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
    for name, table, target in (("_audit_q", queries, "audit_queries"), ("_audit_p", asked, "audit_pairs")):
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
        "SELECT pool_id, build_id, drawn_at, unit, population, requested, seed FROM audit_samples "
        "ORDER BY pool_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise GoldensetError("no audit sample yet: run `goldenset pool --audit N`, then label its `audit` pairs")
    pool_id, build_id, drawn_at, unit, population, requested, seed = row
    queries = tuple(
        q
        for (q,) in con.execute(
            "SELECT query_id FROM audit_queries WHERE pool_id = ? ORDER BY draw", [pool_id]
        ).fetchall()
    )
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
    design = AuditDesign(int(population), int(requested), int(seed), queries, unit)
    return Audit(int(pool_id), int(build_id), drawn_at, design, asked, tuple(q for q in queries if q not in pending))
