"""The sentence-embedding model as a resource (loaded on first use, never at import)."""

from __future__ import annotations

import dagster as dg
from pydantic import Field, PrivateAttr

from goldenset.embeddings import Embedder, embed_cached


class EmbedderResource(dg.ConfigurableResource):
    """Dense embeddings for the benchmark and query merging (GOLDENSET_DENSE_MODEL).

    An empty `model_path` means GOLDENSET_DENSE_MODEL if set, else the packaged
    all-MiniLM-L6-v2.
    """

    model_path: str = Field(
        default="",
        description="sentence-transformers model directory; empty: "
        "GOLDENSET_DENSE_MODEL, else the packaged all-MiniLM-L6-v2.",
    )
    batch_size: int = Field(default=32, description="Texts embedded per batch.")

    _embedder: Embedder | None = PrivateAttr(default=None)

    def get_embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.model_path or None, batch_size=self.batch_size)
        return self._embedder

    def embed(self, texts):
        return self.get_embedder().embed(texts)

    def embed_cached(self, con, texts, write: bool = True):
        return embed_cached(con, texts, self.get_embedder(), write=write)
