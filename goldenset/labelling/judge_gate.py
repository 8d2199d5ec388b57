"""The judge's gate (contracts 8.3 and 13.2): the sample that measures a judge, its figures, the decision.

A judge annotator's labels join the golden set only while it agrees with people. It is
measured where it is used: on the **audit** (contract 12.1), the random sample of golden
queries whose pairs people label in full (uniform, or active with known chances that the
figures weigh by), so the pairs the gate reads are a random sample of the pairs the metrics
read and not the pairs that happened to be labelled last.

Decisions
---------
- **The sample is a cluster sample by query.** The audits read are every audit (`audits` =
  0, the default) or the latest `audits` of them (largest pool_id: the latest drawn; by time,
  never by queue order). A query drawn by one of them is *audited* at this build by 12.1's
  test, the one `goldenset.labelling.audit.latest_audit` (and so PPI) applies: every pair
  asked for it (`audit_pairs` of the audits read) whose document is active in this build's
  snapshot has a golden_set row with source human in this build (any version; a human label
  that a fresh log label outranks, 7.3 step 3, is not one). A query still being labelled is
  not read (the order people label a query's pairs in is not random). The judge's sample:
  every pair of an audited query that takes part in this build (7.3: the query golden, the
  document active) on which its current label and the human label (from human lines alone)
  stand at the same doc_version, whether the audit asked for it or people had labelled it
  before the draw: the queries are drawn at random, their pairs are all taken, and the
  bootstrap resamples queries. Taking only the pairs the audit asked for would leave out the
  pairs labelled before the draw, which the queue's priority chose.
- **Weights: the design of each draw** (`query_weights`). An active audit (12.1) draws query
  q with its own chance pi(q), larger where the judge was unsure, so reading its queries as
  a uniform audit's would describe the queries drawn, not the golden set. Each audited
  query's pairs count with a weight w(q) in every figure (ratio estimators,
  goldenset.labelling.judge_agreement), and the bootstrap carries it:
  w(q) = [a uniform audit read drew q] + sum over the active audits k read that drew q of
  pibar_k / pi_k(q), with pibar_k = n_k / N_k the audit's mean chance (its expected size over
  its population). Why this form: the uniform audits read, whatever their sizes and seeds,
  together give every query of their population one same chance of being drawn by at least
  one of them (nothing in a uniform draw tells queries apart), so 1 for each query they drew
  has the same expectation for every query, and each pair is read once as before weights; an
  active audit's term has expectation pibar_k for every query of its population (pi_k(q) x
  pibar_k / pi_k(q)). The expected weight of every query is therefore one constant, so each
  weighted sum estimates that constant times the population's sum, and each ratio the
  population's figure. Only expectations are added, so nothing assumes the audits were drawn
  independently (they are not: every pool draws with seed 0 unless told otherwise), which
  rules out the union's chance 1 - prod(1 - pi_k(q)). pibar_k scales an active audit to weigh
  as a uniform audit of its expected size would (1/pi_k alone would let one active audit
  outweigh every uniform one by N/n). Rejected: the weight of the latest audit that drew q
  (a query a uniform audit drew and the active one did not then weighs 1 however small its
  active chance was, so the expected weight is no longer constant and the figures lean
  towards the queries the active audit shunned); reading only the latest audit when designs
  differ (it throws away audited queries people labelled). Only uniform audits read: every
  weight is 1 and the figures are exactly the unweighted ones.
- **No audit yet.** When no audit was drawn, or no pair of an audited query carries the
  judge's label at the human label's version, the gate reads every pair that takes part in
  this build on which the judge's current label and the human label stand at the same
  doc_version (all of them, no window), `sample` = `shared`, and status, its JSON and the
  asset check say it is not a random sample. The same rule decides on it: the lower bound
  (a non-random sample earns no more trust than a random one). Pairs outside the golden set
  (a query no longer golden, a document no longer active) are never read: no metric reads
  them.
- **Labels are compared by name.** Kappa's categories are label names, so with one rubric
  per task (9.5) the labels of several rubrics are pooled by name (`relevant` of one rubric
  and of another are one category).
- **The decision.** A judge takes part when n >= `min_pairs` and the lower bound of kappa's
  95% bootstrap interval over queries is >= `min_kappa` (floats compared as they are; the
  bound comes from `goldenset.labelling.judge_agreement.bootstrap_kappa`, B = `resamples` (2000)
  with seed `seed` (0), so a rebuild on unchanged input decides the same). No interval (fewer
  than 2 queries, kappa undefined): held back.
- **Every setting is a build input.** Each field of `JudgeGate` enters the build's input
  signature through `JudgeGate.signature()` (goldenset.build.input_signature), and so do the
  audits (`audit_signature`): a changed setting or a new audit is never a "repeat".
  `GATE_SETTINGS` lists the fields and the variables and flags that set them; a test
  enumerates it.
- **GOLDENSET_JUDGE_WINDOW** (the latest W shared pairs of contract 13.2 before v5) is no
  longer read: the queue's order made its window an unrepresentative sample. Set, it is a
  no-op with a warning (`deprecated_settings`) naming what replaced it, so a nightly job that
  sets it keeps running and is told.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

from goldenset.connection import Connection
from goldenset.errors import GoldensetError, UsageError
from goldenset.labelling.agreement import round_half_away
from goldenset.labelling.audit import ACTIVE
from goldenset.labelling.judge_agreement import JudgeAgreement, judge_agreement
from goldenset.schema import active_documents
from goldenset.units import percent

ENV_MIN_PAIRS = "GOLDENSET_JUDGE_MIN_PAIRS"
ENV_MIN_KAPPA = "GOLDENSET_JUDGE_MIN_KAPPA"
ENV_AUDITS = "GOLDENSET_JUDGE_AUDITS"
ENV_WINDOW = "GOLDENSET_JUDGE_WINDOW"  # deprecated: read only to warn

SAMPLE_AUDIT = "audit"
SAMPLE_SHARED = "shared"


@dataclass(frozen=True)
class GateSetting:
    """One setting of the gate: its `JudgeGate` field, and the variable and build flag that set it (if any)."""

    field: str
    env: str | None
    flag: str | None


GATE_SETTINGS: tuple[GateSetting, ...] = (
    GateSetting("min_pairs", ENV_MIN_PAIRS, "--judge-min-pairs"),
    GateSetting("min_kappa", ENV_MIN_KAPPA, "--judge-min-kappa"),
    GateSetting("audits", ENV_AUDITS, "--judge-audits"),
    # Fixed for the command line (contract 13.2); library callers (the gate study) may set them.
    GateSetting("resamples", None, None),
    GateSetting("seed", None, None),
)


@dataclass(frozen=True)
class JudgeGate:
    """When a judge's labels may join the golden set (contracts 8.3, 13.2)."""

    min_pairs: int = 50
    min_kappa: float = 0.6
    audits: int = 0  # read the latest this many audits; 0 reads every audit
    resamples: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        for name, low in (("min_pairs", 0), ("audits", 0), ("resamples", 1), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UsageError(f"{_named(name)} must be a whole number >= {low}, got {value!r}")
        if isinstance(self.min_kappa, bool) or not isinstance(self.min_kappa, int | float):
            raise UsageError(f"{_named('min_kappa')} must be a number, got {self.min_kappa!r}")
        if not math.isfinite(self.min_kappa):
            raise UsageError(f"{_named('min_kappa')} must be a finite number, got {self.min_kappa!r}")

    def signature(self) -> str:
        """Every setting, by name: the part of a build's input signature the gate's settings make."""
        return "\x1f".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))

    @classmethod
    def from_environment(
        cls,
        min_pairs: int | None = None,
        min_kappa: float | None = None,
        audits: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> JudgeGate:
        """Flags if given, else GOLDENSET_JUDGE_MIN_PAIRS / _MIN_KAPPA / _AUDITS, else 50, 0.6 and 0 (every audit)."""
        env = os.environ if environ is None else environ

        def read(value, name, cast, default):
            if value is not None:
                return value
            text = env.get(name)
            if not text:
                return default
            try:
                return cast(text)
            except ValueError:
                raise UsageError(f"{name} must be a number, got {text!r}") from None

        return cls(
            read(min_pairs, ENV_MIN_PAIRS, int, cls.min_pairs),
            read(min_kappa, ENV_MIN_KAPPA, float, cls.min_kappa),
            read(audits, ENV_AUDITS, int, cls.audits),
        )


def _named(field: str) -> str:
    """How a message names a gate setting: its flag and variable, else its field."""
    setting = next(s for s in GATE_SETTINGS if s.field == field)
    return f"{setting.flag} ({setting.env})" if setting.flag else f"the judge gate's {field}"


def deprecated_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """Warnings for gate variables that are set but no longer read."""
    env = os.environ if environ is None else environ
    if env.get(ENV_WINDOW):
        return [
            f"{ENV_WINDOW}={env[ENV_WINDOW]} is no longer read: the judge's gate reads its labels on the audit "
            f"(contract 13.2), not its latest shared pairs; unset it, and set {ENV_AUDITS}=K (or --judge-audits K) "
            "to read only the latest K audits"
        ]
    return []


def admits(n: int, kappa_lo: float | None, gate: JudgeGate) -> bool:
    """The gate's decision: at least `min_pairs` pairs and a lower bound of kappa's interval >= `min_kappa`."""
    return n >= gate.min_pairs and kappa_lo is not None and kappa_lo >= gate.min_kappa


def audit_signature(con: Connection) -> str:
    """Every audit's asked pairs, as one hash: a new audit changes the gate's sample, so the build's inputs."""
    return con.execute(
        "SELECT coalesce(md5(string_agg(pool_id::VARCHAR || chr(31) || query_id || chr(31) || doc_id || chr(31) "
        "|| doc_version, chr(30) ORDER BY pool_id, query_id, doc_id)), '') || '/' || "
        "(SELECT coalesce(string_agg(pool_id::VARCHAR, ',' ORDER BY pool_id), '') FROM audit_samples) "
        "FROM audit_pairs"
    ).fetchall()[0][0]


# --------------------------------------------------------------------------- the sample, in the build

# The audited queries of the audits read, from the merge's temp tables: _mhg holds the pairs of
# this build's golden_set rows with source human (12.1's test), _mhl the human label (from
# human lines alone) of every pair that takes part in this build, _mpart those pairs' current labels.
_AUDITED = """
CREATE OR REPLACE TEMP TABLE _gaudit AS
WITH w AS (SELECT pool_id FROM audit_samples QUALIFY $k = 0 OR row_number() OVER (ORDER BY pool_id DESC) <= $k),
pending AS (
  SELECT a.query_id FROM audit_pairs a
  WHERE a.pool_id IN (SELECT pool_id FROM w)
    AND a.doc_id IN (SELECT doc_id FROM {active})
    AND NOT EXISTS (SELECT 1 FROM _mhg h WHERE h.query_id = a.query_id AND h.doc_id = a.doc_id)
)
SELECT DISTINCT query_id FROM audit_queries
WHERE pool_id IN (SELECT pool_id FROM w) AND query_id NOT IN (SELECT query_id FROM pending)
"""
# Every draw of an audited query by an audit read, with what its weight needs (13.2).
_DRAWS = """
WITH w AS (SELECT pool_id FROM audit_samples QUALIFY $k = 0 OR row_number() OVER (ORDER BY pool_id DESC) <= $k)
SELECT q.query_id, s.design, s.requested, s.population, q.inclusion, q.pool_id
FROM audit_queries q JOIN audit_samples s USING (pool_id)
WHERE q.pool_id IN (SELECT pool_id FROM w) AND q.query_id IN (SELECT query_id FROM _gaudit)
ORDER BY q.query_id, q.pool_id
"""
_SHARED = """
SELECT j.query_id, j.label, h.label, h.grade >= 1 FROM _mpart j
JOIN _mhl h ON h.query_id = j.query_id AND h.doc_id = j.doc_id AND h.doc_version = j.doc_version
WHERE j.kind = 'judge' AND j.annotator = ? {audited}
ORDER BY j.query_id, j.doc_id
"""


@dataclass(frozen=True)
class JudgeOutcome:
    """One judge annotator at the gate: the sample it was measured on, the figures, the decision."""

    annotator: str
    sample: str  # SAMPLE_AUDIT or SAMPLE_SHARED
    audits: int  # audits the gate read (0: none drawn)
    agreement: JudgeAgreement
    passed: bool
    labels: int

    @property
    def n(self) -> int:
        return self.agreement.n

    @property
    def kappa(self) -> float | None:
        return None if self.agreement.kappa is None else float(self.agreement.kappa)


def query_weights(draws: Iterable[tuple[str, str, int, int, float, int]]) -> dict[str, Fraction]:
    """Each audited query's weight w(q) (contract 13.2), from its draws by the audits read.

    `draws`: (query_id, design, requested, population, inclusion, pool_id) per draw. w(q) = 1 when
    a uniform audit drew q (however many did), plus, for each active audit k that drew q,
    (n_k / N_k) / pi_k(q) in double precision (n_k = min(requested, population), N_k = population,
    pi_k(q) = inclusion; each division rounded to the nearest double), the doubles added exactly.
    """
    uniform: set[str] = set()
    active: dict[str, Fraction] = {}
    for query_id, design, requested, population, inclusion, pool_id in draws:
        if design != ACTIVE:
            uniform.add(query_id)
            continue
        if inclusion is None or not 0 < inclusion <= 1 or population < 1:
            raise GoldensetError(
                f"audit of pool {pool_id} drew query {query_id!r} with inclusion probability {inclusion!r} "
                f"(population {population}): the judge's gate cannot weigh it; draw the audit again "
                "(goldenset pool --audit N --active --judge NAME)"
            )
        term = Fraction((min(requested, population) / population) / inclusion)
        active[query_id] = active.get(query_id, Fraction(0)) + term
    return {q: (1 if q in uniform else 0) + active.get(q, Fraction(0)) for q in sorted(uniform | set(active))}


def gate_judges(con: Connection, gate: JudgeGate, content_sha: str) -> list[JudgeOutcome]:
    """Each judge annotator with a current label, measured and decided (inside the merge: reads its temp tables)."""
    names = [
        r[0]
        for r in con.execute("SELECT DISTINCT annotator FROM _mcur WHERE kind = 'judge' ORDER BY annotator").fetchall()
    ]
    if not names:
        return []
    con.execute(_AUDITED.replace("{active}", active_documents("$sha")), {"k": gate.audits, "sha": content_sha})
    audits = con.execute(
        "SELECT count(*) FROM (SELECT pool_id FROM audit_samples "
        "QUALIFY ? = 0 OR row_number() OVER (ORDER BY pool_id DESC) <= ?)",
        [gate.audits, gate.audits],
    ).fetchall()[0][0]
    out = []
    try:
        weights = query_weights(con.execute(_DRAWS, {"k": gate.audits}).fetchall())
        for name in names:
            weighted: dict[str, Fraction] | None = weights
            sample = SAMPLE_AUDIT
            pairs = con.execute(
                _SHARED.format(audited="AND j.query_id IN (SELECT query_id FROM _gaudit)"), [name]
            ).fetchall()
            if not pairs:
                sample, weighted = SAMPLE_SHARED, None  # not a sample of any design: unweighted
                pairs = con.execute(_SHARED.format(audited=""), [name]).fetchall()
            agreement = judge_agreement(pairs, gate.resamples, gate.seed, weights=weighted)
            labels = con.execute(
                "SELECT count(*) FROM _mcur WHERE kind = 'judge' AND annotator = ?", [name]
            ).fetchall()[0][0]
            passed = admits(agreement.n, agreement.kappa_lo, gate)
            out.append(JudgeOutcome(name, sample, int(audits), agreement, passed, int(labels)))
    finally:
        con.execute("DROP TABLE IF EXISTS _gaudit")
    return out


def outcome_row(build_id: int, outcome: JudgeOutcome, gate: JudgeGate) -> list[Any]:
    """The `build_judges` row of one judge, in `BUILD_JUDGE_COLUMNS` order."""
    a = outcome.agreement

    def f(x):
        return None if x is None else float(x)

    return [
        build_id,
        outcome.annotator,
        a.n,
        f(a.kappa),
        outcome.passed,
        outcome.labels,
        gate.min_pairs,
        gate.min_kappa,
        outcome.sample,
        outcome.audits,
        a.queries,
        a.kappa_lo,
        a.kappa_hi,
        f(a.po),
        f(a.pe),
        f(a.prevalence),
        f(a.ac1),
        gate.audits,
        gate.resamples,
        gate.seed,
    ]


BUILD_JUDGE_COLUMNS = (
    "build_id",
    "annotator",
    "n",
    "kappa",
    "passed",
    "labels",
    "min_pairs",
    "min_kappa",
    "sample",
    "audits",
    "queries",
    "kappa_lo",
    "kappa_hi",
    "po",
    "pe",
    "prevalence",
    "ac1",
    "audit_window",
    "bootstrap_resamples",
    "bootstrap_seed",
)


# --------------------------------------------------------------------------- reading the gate back


def _r(x: float | None) -> float | None:
    """An agreement figure rounded as 7.5 and 8.2 round: half away from zero to 4 decimals, applied to the
    shortest decimal that reads back as the stored double (its `repr`, as calibration's `round4`).

    Not the double's exact binary value: a figure that is exactly a tie (po = 12001/20000 = 0.60005) is
    stored as the double nearest it, which may lie a hair below the tie; its repr is the tie itself,
    so it rounds away from zero (0.6001, not 0.6), as 7.5 rounds the exact figure.
    """
    return None if x is None else round_half_away(Fraction(repr(x)))


def _t(x: float | None) -> str:
    return "n/a" if x is None else f"{_r(x):.4f}"


def _pct(x: float | None) -> str:
    """A share in prose (contract 15.9, units): a percentage with one decimal, `n/a` for a null."""
    return "n/a" if x is None else percent(x)


@dataclass(frozen=True)
class GateRow:
    """One judge's `build_judges` row of a build, as status and judge health read it."""

    annotator: str
    n: int
    kappa: float | None
    passed: bool
    labels: int
    min_pairs: int
    min_kappa: float
    sample: str | None  # None: a row of a build from before contract v5 (the window rule)
    audits: int | None
    queries: int | None
    kappa_lo: float | None
    kappa_hi: float | None
    po: float | None
    pe: float | None
    prevalence: float | None
    ac1: float | None

    def measured(self) -> str:
        """`kappa K (95% interval LO to HI) on N pairs of Q audited queries (agreement ..., AC1 A)`."""
        interval = (
            f" (95% interval {_t(self.kappa_lo)} to {_t(self.kappa_hi)})"
            if self.kappa_lo is not None and self.kappa_hi is not None
            else " (no interval)"
            if self.sample is not None
            else ""
        )
        if self.sample == SAMPLE_AUDIT:
            where = f"on {self.n} pairs of {self.queries} audited queries"
        elif self.sample == SAMPLE_SHARED:
            where = f"on {self.n} shared pairs of {self.queries} queries, not a random sample"
        else:
            where = f"on {self.n} shared pairs"
        figures = ""
        if self.sample is not None and self.n:
            figures = (
                f" (agreement {_pct(self.po)} at chance {_pct(self.pe)}, relevant share {_pct(self.prevalence)}, "
                f"AC1 {_t(self.ac1)})"
            )
        return f"kappa {_t(self.kappa)}{interval} {where}{figures}"

    def why(self) -> str:
        """The status line of a judge held back: its figures, what the gate needs, the labels held back."""
        needs = "a lower bound >= " if self.sample is not None else ""
        return (
            f"{self.measured()}; needs {needs}{self.min_kappa:g} on >= {self.min_pairs} pairs; "
            f"{self.labels} labels held back"
        )

    def admitted(self) -> str:
        """The status line of a judge the gate admitted: its figures and what the gate needs."""
        return f"{self.measured()}; needs a lower bound >= {self.min_kappa:g} on >= {self.min_pairs} pairs"

    def to_json(self) -> dict[str, Any]:
        """Every figure (agreement figures rounded as 7.5 rounds them), keyed as contract 13.3 lists them."""
        values = (self.sample, self.audits, self.n, self.queries)
        figures = (self.kappa, self.kappa_lo, self.kappa_hi, self.po, self.pe, self.prevalence, self.ac1)
        return dict(zip(GATE_JSON_KEYS, (*values, *map(_r, figures), self.min_kappa, self.min_pairs), strict=True))


# The gate's keys in `status --json` (judge_health, judges_held_back), in this order.
GATE_JSON_KEYS = (
    "sample",
    "audits",
    "n",
    "queries",
    "kappa",
    "kappa_lo",
    "kappa_hi",
    "po",
    "pe",
    "prevalence",
    "ac1",
    "min_kappa",
    "min_pairs",
)
_NEW_COLUMNS = ("sample", "audits", "queries", "kappa_lo", "kappa_hi", "po", "pe", "prevalence", "ac1")


def gate_rows(con: Connection, build_id: int) -> list[GateRow]:
    """The gate's rows of `build_id`, by annotator (a warehouse opened read-only before v5 gives nulls)."""
    have = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = 'build_judges'"
        ).fetchall()
    }
    extra = ", ".join(c if c in have else f"NULL AS {c}" for c in _NEW_COLUMNS)
    rows = con.execute(
        f"SELECT annotator, n, kappa, passed, labels, min_pairs, min_kappa, {extra} FROM build_judges "
        "WHERE build_id = ? ORDER BY annotator",
        [build_id],
    ).fetchall()
    return [
        GateRow(a, int(n), k, bool(p), int(lab), int(mp), float(mk), s, au, q, lo, hi, po, pe, prev, ac1)
        for a, n, k, p, lab, mp, mk, s, au, q, lo, hi, po, pe, prev, ac1 in rows
    ]
