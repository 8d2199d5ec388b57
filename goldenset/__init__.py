"""goldenset: a retrieval-evaluation golden set kept current from serve logs."""

from importlib.metadata import PackageNotFoundError, version

try:
    # One source of truth: the version in pyproject.toml, as the installed package records it.
    __version__ = version("goldenset")
except PackageNotFoundError:  # a checkout run without installing it
    __version__ = "0+unknown"
