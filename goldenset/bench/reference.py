"""Where the reference retriever lived before 0.3: `--retriever goldenset.bench.reference:hybrid` still loads.

The reference hybrid lives in `goldenset.retrieval.reference` (the default `--retriever` is
`goldenset.retrieval.reference:hybrid`); runs stored under the old name keep it.
"""

from goldenset.retrieval.reference import HybridRetriever, hybrid

__all__ = ["HybridRetriever", "hybrid"]
