"""Dagster wiring: Definitions, jobs, schedules and sensors. Logic lives in `goldenset`."""
