"""`python -m goldenset_dagster ...` is the `goldenset` command."""

from goldenset_dagster.cli import entry

entry()
