"""Days as dynamic partitions: two builds that register the same new day at once both go on."""

from __future__ import annotations

import dagster as dg
import pytest
from sqlalchemy.exc import IntegrityError

from goldenset_dagster.partitions import DAYS, register_days

pytestmark = pytest.mark.slow


class _OtherBuildWinsTheInsert:
    """A real instance where another build adds the same days just before this one's insert.

    Dagster's storage reads the known partitions and inserts the rest; when a second process
    inserts between that read and that insert, the storage's unique key refuses the insert
    with sqlite's IntegrityError (seen in CI under load). The other build's insert is real;
    the refusal it causes is raised here as the storage raises it.
    """

    def __init__(self, instance: dg.DagsterInstance):
        self._instance = instance
        self.refused = 0

    def get_dynamic_partitions(self, name: str) -> list[str]:
        return self._instance.get_dynamic_partitions(name)

    def add_dynamic_partitions(self, name: str, keys: list[str]) -> None:
        if not self.refused:
            self._instance.add_dynamic_partitions(name, keys[:1])  # the other build, first to write
            self.refused += 1
            raise IntegrityError(
                "INSERT INTO dynamic_partitions", {}, Exception("UNIQUE constraint failed: dynamic_partitions")
            )
        self._instance.add_dynamic_partitions(name, keys)


def test_a_day_another_build_added_at_the_same_moment_is_not_an_error():
    with dg.instance_for_test() as instance:
        racing = _OtherBuildWinsTheInsert(instance)
        known = register_days(racing, ["2026-11-02", "2026-11-01"])  # type: ignore[arg-type]
        assert racing.refused == 1
        assert known == ["2026-11-01", "2026-11-02"]
        assert instance.get_dynamic_partitions(DAYS) == ["2026-11-01", "2026-11-02"]
