"""Dense scoring embeds each distinct text once, in batches, not two texts per pair (issue 22)."""

from __future__ import annotations

import numpy as np

from goldenset.embeddings import Embedder
from goldenset.scoring.scorers import DenseScorer, PairInput, score_pairs
from goldenset.warehouse import connect


def test_every_distinct_text_of_a_calibration_is_embedded_once_in_one_batched_pass(
    embedder, minilm, tmp_path, monkeypatch
):
    assert embedder.batch_size == 32
    before = embedder.texts_embedded
    calls: list[int] = []
    original = Embedder._encode

    def counting(self, model, texts):
        calls.append(len(texts))
        return original(self, model, texts)

    monkeypatch.setattr(Embedder, "_encode", counting)
    queries = ["how do refunds work", "reset a forgotten password"]
    passages = [f"passage number {n} about refunds and passwords" for n in range(20)]
    pairs = [PairInput(f"q{qi}", f"d{pi}", q, p) for qi, q in enumerate(queries) for pi, p in enumerate(passages)]
    con = connect(tmp_path / "g.duckdb")
    try:
        run = score_pairs(con, DenseScorer(embedder, con), pairs)
    finally:
        con.close()
    # 2 queries + 20 passages = 22 distinct texts, fewer than one batch of 32: one call, each text once.
    assert calls == [22] and embedder.texts_embedded - before == 22
    assert run.computed == 40
    # The scores are the cosines of the model's own vectors, computed here independently.
    qv = minilm.encode(queries, normalize_embeddings=True)
    pv = minilm.encode(passages, normalize_embeddings=True)
    expected = {(f"q{qi}", f"d{pi}"): float(np.dot(qv[qi], pv[pi])) for qi in range(2) for pi in range(20)}
    got = {(s.pair.query_id, s.pair.doc_id): s.values[0] for s in run.scored}
    assert got.keys() == expected.keys()
    assert max(abs(got[k] - expected[k]) for k in expected) < 1e-5
