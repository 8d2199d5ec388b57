"""The reference retriever: BM25 (bm25s) and dense (sentence-transformers) fused by RRF.

It searches the active documents of the corpus snapshot; a document is indexed
as its title and text joined by a newline.

- lexical: a bm25s index on disk under INDEX_DIR/bm25/<key>, key = sha256 of the
  indexed (doc_id, text hash) pairs, so the index is rebuilt only when indexed
  content changes. A missing index directory is built when `build_index` is on
  (default); one that exists but cannot be loaded is corrupt and the component
  is down (delete the directory to rebuild). With `build_index` off a missing
  index is down too, as in a deployment where indexing is another job's work.
- dense: document vectors come from the warehouse's embedding_cache keyed by
  (model, text hash), so a reindex embeds only new or changed texts. Cosine
  similarity of unit vectors.
- fusion: reciprocal rank fusion, score = sum over components of
  1 / (rrf_k + rank), rrf_k = 60 (Cormack et al. 2009), each component asked
  for max(k, candidates) documents. Ties go to the larger doc_id, trec_eval's
  order, so a written run file reads back identically.

Neither side swallows an error: each raises, and an empty list means "nothing
matched".
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from goldenset.embeddings import embed_cached
from goldenset.errors import GoldensetError, UsageError
from goldenset.retrieval.retriever import Hit, RetrieverContext

RRF_K = 60
CANDIDATES = 100
_DOC_IDS = "doc_ids.json"


class ComponentError(GoldensetError):
    """A component of the reference retriever cannot answer."""


def _doc_text(doc) -> str:
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


def _order(scored) -> list[Hit]:
    by_doc = sorted(scored, key=lambda p: p[0], reverse=True)
    return sorted(by_doc, key=lambda p: -p[1])


class HybridRetriever:
    """BM25 + dense retrieval over a corpus snapshot, fused by reciprocal rank fusion."""

    def __init__(
        self,
        ctx: RetrieverContext,
        *,
        rrf_k: int = RRF_K,
        candidates: int = CANDIDATES,
        build_index: bool = True,
        write_cache: bool = True,
    ):
        docs = sorted(ctx.corpus.active.values(), key=lambda d: d.doc_id)
        self.doc_ids = [d.doc_id for d in docs]
        self.texts = [_doc_text(d) for d in docs]
        self.con = ctx.con
        self.embedder = ctx.embedder
        self.index_root = Path(ctx.index_dir)
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.build_index = build_index
        self.write_cache = write_cache
        self._disabled: set[str] = set()
        self._bm25 = None
        self._bm25_ids: list[str] | None = None
        self._vectors: np.ndarray | None = None
        self._query_vectors: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ protocol
    def prepare_queries(self, queries: list[str]) -> None:
        """Embed every query of a run in one batched call (optional protocol method, see retriever.py).

        One model call per query cost a call's overhead and no batching for each; what
        `search` then reads is the same vector the cache would give it.
        """
        if "dense" in self._disabled or not queries:
            return
        self._load_vectors()
        todo = sorted(set(queries) - set(self._query_vectors))
        if todo:
            vecs = embed_cached(self.con, todo, self.embedder, write=self.write_cache)
            self._query_vectors.update(zip(todo, vecs, strict=True))

    def components(self) -> list[str]:
        return [c for c in ("lexical", "dense") if c not in self._disabled]

    def disable(self, names) -> None:
        self._disabled.update(n for n in names if n in ("lexical", "dense"))

    def config(self) -> dict:
        return {
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
            "build_index": self.build_index,
            "dense_model": self.embedder.name,
            "disabled": sorted(self._disabled),
            "lexical_index": str(self.lexical_index_dir),
        }

    def search_component(self, name: str, query: str, k: int) -> list[Hit]:
        if name == "lexical":
            return self._lexical(query, k)
        if name == "dense":
            return self._dense(query, k)
        raise UsageError(f"the reference retriever has no component {name!r}; it has lexical and dense")

    def search(self, query: str, k: int) -> list[Hit]:
        parts = self.components()
        if not parts:
            raise ComponentError("every component is disabled; nothing can be searched")
        fused: dict[str, float] = {}
        for name in parts:
            for rank, (doc, _) in enumerate(self.search_component(name, query, max(k, self.candidates)), start=1):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (self.rrf_k + rank)
        return _order(fused.items())[:k]

    # ------------------------------------------------------------------ lexical
    @property
    def lexical_index_dir(self) -> Path:
        h = hashlib.sha256()
        for doc_id, text in zip(self.doc_ids, self.texts, strict=True):
            h.update(f"{doc_id}\x1f{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n".encode())
        return self.index_root / "bm25" / h.hexdigest()[:16]

    def _load_lexical(self):
        if self._bm25 is not None:
            return self._bm25
        import bm25s

        path = self.lexical_index_dir
        if not path.exists():
            if not self.build_index:
                raise ComponentError(f"no lexical index at {path} (build_index is off); build it first")
            self._build_lexical(path)
        try:
            ids = json.loads((path / _DOC_IDS).read_text(encoding="utf-8"))
            bm25 = bm25s.BM25.load(str(path), load_corpus=False)
        except Exception as exc:
            raise ComponentError(
                f"lexical index at {path} is incomplete or corrupt ({type(exc).__name__}: {exc}); "
                "delete that directory to rebuild it"
            ) from exc
        if not isinstance(ids, list) or len(ids) != len(self.doc_ids):
            raise ComponentError(f"lexical index at {path} does not match the corpus; delete it to rebuild")
        self._bm25, self._bm25_ids = bm25, ids
        return bm25

    def _build_lexical(self, path: Path) -> None:
        import bm25s

        if not self.doc_ids:
            raise ComponentError("the corpus has no active document, so there is no lexical index to build")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=path.parent))
        try:
            bm25 = bm25s.BM25()
            bm25.index(bm25s.tokenize(self.texts, stopwords="en", show_progress=False), show_progress=False)
            bm25.save(str(tmp), show_progress=False)
            # Written last: an index without its doc id list is incomplete.
            (tmp / _DOC_IDS).write_text(json.dumps(self.doc_ids), encoding="utf-8")
            tmp.rename(path)  # atomic: readers see a whole index or none
        except FileExistsError:
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent build won; use its copy
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _lexical(self, query: str, k: int) -> list[Hit]:
        import bm25s

        bm25 = self._load_lexical()
        ids = self._bm25_ids or []  # set together with the index by _load_lexical
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in bm25.vocab_dict]
        if not tokens:
            return []
        n = min(k, len(ids))
        docs, scores = bm25.retrieve([tokens], k=n, show_progress=False)
        # BM25 pads with zero-score documents; those did not match at all.
        return _order((ids[int(i)], float(s)) for i, s in zip(docs[0], scores[0], strict=True) if s > 0)[:k]

    # ------------------------------------------------------------------ dense
    def _load_vectors(self) -> np.ndarray:
        if self._vectors is None:
            if not self.doc_ids:
                raise ComponentError("the corpus has no active document to embed")
            self._vectors = embed_cached(self.con, self.texts, self.embedder, write=self.write_cache)
        return self._vectors

    def _dense(self, query: str, k: int) -> list[Hit]:
        vectors = self._load_vectors()
        qv = self._query_vectors.get(query)
        if qv is None:
            qv = embed_cached(self.con, [query], self.embedder, write=self.write_cache)[0]
        sims = vectors @ qv
        # doc_ids are sorted ascending, so -index sorts ties by doc_id descending.
        order = np.lexsort((-np.arange(len(sims)), -sims))[:k]
        return [(self.doc_ids[int(i)], float(sims[i])) for i in order]

    def reindex(self) -> dict:
        """Build what is missing (lexical index, document vectors); return what it cost."""
        before = self.embedder.texts_embedded
        self._load_lexical()
        self._load_vectors()
        return {"lexical_index": str(self.lexical_index_dir), "texts_embedded": self.embedder.texts_embedded - before}


def hybrid(ctx: RetrieverContext) -> HybridRetriever:
    """Factory of the reference retriever; options: rrf_k, candidates, build_index."""
    opts = dict(ctx.options)
    allowed = {"rrf_k", "candidates", "build_index"}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise UsageError(f"unknown option(s) {unknown} for the reference retriever; it takes {sorted(allowed)}")
    return HybridRetriever(ctx, **opts)
