"""Where the retriever protocol lived before 0.3: kept so that plug-ins written against it import.

The protocol, `RetrieverContext` and the loaders live in `goldenset.retrieval.retriever`, the
one home of retrieval that the benchmark and the labelling loop both use.
"""

from goldenset.retrieval.retriever import Hit, Retriever, RetrieverContext

__all__ = ["Hit", "Retriever", "RetrieverContext"]
