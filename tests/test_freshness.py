"""golden_set's freshness policy warns a week before the benchmark refuses the set, and fails when it does.

Dagster's own evaluator (the one its daemon runs) is asked about a materialization of
golden_set at ages around the two windows, at the boundary and one second either side; the
benchmark's age gate (`gates.check_age`) is asked about a build of the same age.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import dagster as dg
import pytest

from goldenset.bench.gates import MAX_AGE_DAYS, check_age
from goldenset.bench.golden import Build
from goldenset.errors import GoldenSetTooOld
from goldenset.settings import Settings
from goldenset_dagster.definitions import build_definitions

DAY = 86400
WARN_AT = (MAX_AGE_DAYS - 7) * DAY


def _states(ages: list[int]) -> list[str]:
    """Dagster's freshness state of golden_set materialized `age` seconds before now, for each age."""
    from dagster._core.definitions import freshness_evaluator
    from dagster._core.definitions.freshness_evaluator import TimeWindowFreshnessPolicyEvaluator
    from dagster._core.loader import LoadingContextForTest

    node = build_definitions(Settings.resolve()).resolve_asset_graph().get(dg.AssetKey("golden_set"))
    states = []
    with dg.instance_for_test() as instance, pytest.MonkeyPatch.context() as mp:
        instance.report_runless_asset_event(dg.AssetMaterialization("golden_set"))
        stored = instance.get_latest_materialization_event(dg.AssetKey("golden_set")).timestamp
        for age in ages:
            mp.setattr(freshness_evaluator, "get_current_timestamp", lambda age=age: stored + age)
            evaluated = TimeWindowFreshnessPolicyEvaluator().evaluate_freshness(LoadingContextForTest(instance), node)
            states.append(asyncio.run(evaluated).value)
    return states


def _refused(age: int) -> bool:
    built = datetime(2026, 11, 1, 2, 0, 0)
    try:
        check_age(Build(1, built, "f" * 64, None), now=built + timedelta(seconds=age))
    except GoldenSetTooOld:
        return True
    return False


@pytest.mark.slow
def test_golden_set_warns_a_week_before_the_benchmark_refuses_it_and_fails_from_its_last_day():
    fail_at = MAX_AGE_DAYS * DAY
    ages = [WARN_AT - 1, WARN_AT, WARN_AT + 1, fail_at - 1, fail_at, fail_at + 1]
    assert _states(ages) == ["PASS", "WARN", "WARN", "WARN", "FAIL", "FAIL"]
    # The benchmark refuses a set older than MAX_AGE_DAYS: by then the UI says FAIL, and WARN a week before.
    assert [_refused(a) for a in ages] == [False, False, False, False, False, True]
