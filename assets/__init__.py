"""Thin Dagster assets over the goldenset library."""
