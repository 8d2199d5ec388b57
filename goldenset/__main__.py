"""`python -m goldenset ...` is the `goldenset` command."""

from goldenset.cli import entry

entry()
