"""The benchmark's gates: refuse what it cannot trust (exit 3, 4), warn about what it can't fix.

Order, so that the lowest exit code wins: errors (exit 1: no build, unreadable
corpus) and usage (2: bad retriever path or k, a retriever that cannot search) come
first, then the age gate (3), then the component probes (4). Drift and fingerprint changes only warn.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from goldenset.bench.golden import Build
from goldenset.bench.runs import BenchmarkRun
from goldenset.clock import utcnow
from goldenset.errors import GoldenSetTooOld, UsageError

MAX_AGE_DAYS = 30
DRIFT_WARN = 0.05


def check_age(build: Build, max_age_days: float = MAX_AGE_DAYS, now: datetime | None = None) -> timedelta:
    """Refuse (GoldenSetTooOld, exit 3) a golden set built more than max_age_days ago."""
    if max_age_days < 0:
        raise UsageError(f"--max-age-days must be 0 or more, got {max_age_days}")
    age = (now or utcnow()) - build.built_at
    if age > timedelta(days=max_age_days):
        days = age.total_seconds() / 86400
        raise GoldenSetTooOld(
            f"golden set build {build.build_id} is {days:.1f} days old (built {build.built_at:%Y-%m-%d %H:%M} UTC), "
            f"more than --max-age-days {max_age_days:g}: run `goldenset build`, or raise --max-age-days"
        )
    return age


def drift_warning(drift: float, build: Build) -> str | None:
    """The warning printed at the top when the corpus drifted more than 5% since the build."""
    if drift > DRIFT_WARN:
        return (
            f"WARNING: corpus drift since golden build {build.build_id} is {drift:.1%} (> {DRIFT_WARN:.0%}): "
            "labels may point at documents that changed; rebuild the golden set to refresh them"
        )
    return None


def fingerprint_warning(runs: Sequence[BenchmarkRun]) -> str | None:
    """The warning printed at the top when compared runs searched different corpora."""
    fps = {r.run_id: r.corpus_fingerprint for r in runs}
    if len(set(fps.values())) > 1:
        detail = ", ".join(f"{rid} {fp[:12]}" for rid, fp in fps.items())
        return (
            f"WARNING: the runs searched different corpora (fingerprints {detail}): "
            "differences mix the retriever change with the corpus change"
        )
    return None


def build_warning(runs: Sequence[BenchmarkRun]) -> str | None:
    """The warning printed when compared runs were measured against different labels.

    Two builds hold the same labels when they share labels_build_id (a `repeat` build
    points at the build it repeats), so runs on them are not warned about. A run whose
    labels build is unknown is told apart by its build id, as before labels_build_id was kept.
    """
    labels = {r.run_id: r.labels_build_id if r.labels_build_id is not None else r.build_id for r in runs}
    if len(set(labels.values())) > 1:
        detail = ", ".join(
            f"{r.run_id} build {r.build_id}"
            + (f" (labels of build {r.labels_build_id})" if r.labels_build_id not in (None, r.build_id) else "")
            for r in runs
        )
        return f"WARNING: the runs were measured against different golden builds ({detail}): the labels differ"
    return None
