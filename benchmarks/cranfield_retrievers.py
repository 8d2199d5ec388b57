"""Retrievers for the Cranfield studies: the reference retriever's lexical or dense side alone.

`cranfield_retrievers:lexical_only` is the ranker the simulated production
served from (BM25, bm25s, English stop words, title + text), measured by
`goldenset bench run --retriever` like any plug-in (with this folder on
PYTHONPATH). It is the reference retriever with `dense` disabled: its fusion of
one list keeps the lexical order, so its run is exactly what `lexical` returns.
"""

from __future__ import annotations

from goldenset.retrieval.reference import hybrid
from goldenset.retrieval.retriever import RetrieverContext


def lexical_only(ctx: RetrieverContext):
    """The reference retriever with its dense component switched off."""
    retriever = hybrid(ctx)
    retriever.disable(["dense"])
    return retriever


def dense_only(ctx: RetrieverContext):
    """The reference retriever with its lexical component switched off (the pool's `dense` ranker)."""
    retriever = hybrid(ctx)
    retriever.disable(["lexical"])
    return retriever
