"""goldenset: a retrieval-evaluation golden set kept current from serve logs."""

__version__ = "0.1.0"
