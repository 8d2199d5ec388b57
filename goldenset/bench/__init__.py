"""The retrieval benchmark: a retriever under test, gated, measured against the golden set."""
