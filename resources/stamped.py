"""The base of the resources every job uses: starting one stamps the run with what launched it."""

from __future__ import annotations

import dagster as dg


class StampedResource(dg.ConfigurableResource):
    """A resource whose start sets its run's `goldenset/trigger` (goldenset_dagster.jobs.stamp_trigger).

    A run launched in the UI or by a backfill carries only Dagster's own tags; the first
    resource its steps start gives it the trigger they imply, so that every run can be
    filtered by `goldenset/trigger`. The warehouse, the log folder and the label folder
    derive from it: every job uses one of them.
    """

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        from goldenset_dagster.jobs import stamp_trigger

        stamp_trigger(context.instance, context.run)
