"""Retrieval, in one home: the retriever protocol, the reference hybrid and stored rankings.

The benchmark measures a retriever and the labelling loop pools with retrievers and with
stored runs, so both need these; living in either package made the two import each other.

- `retriever`: the protocol, `RetrieverContext` (what a `module:factory` plug-in receives),
  loading a plug-in and probing its parts;
- `reference`: the reference hybrid (BM25 and dense fused by RRF);
- `rankings`: a benchmark run's stored deciding-row ranking, written by `bench run` and read
  by `pool --from-run` and `bench compare --rescore`.

It imports nothing from `goldenset.bench` or `goldenset.labelling`.
"""
