"""Any measure by name: ir_measures parses it, trec_eval's own code computes it (contract 16.5).

`bench run --measure nDCG@20 --measure R@100` stores, beside the pinned metrics (which stay
computed by `metrics.py` and gated as before), the value of each named measure for every
row and measured query, under ir_measures' canonical name (`str(measure)`: `nDCG@20`,
`R@100`, `P(rel=2)@5`). No gate and no verdict reads a named measure.

Decisions
---------
- **Parsing**: `ir_measures.parse_measure`. A name it cannot parse is a usage error (exit
  2) quoting the name; so is a measure its pytrec_eval backend does not compute (Judged@k,
  ERR@k, ...): the values must come from one trusted implementation, trec_eval's own C code,
  not from whichever provider happens to be installed. Names are kept once each, in the
  order given.
- **Computed by** `ir_measures.pytrec_eval.iter_calc(measures, qrels, run)`: the run is
  each measured query's ranked list, the order the pinned metrics read, as {doc_id: score}
  with the score of rank r being n - r + 1 for a list of n (as `bench run` writes its TREC
  files: strictly decreasing, so trec_eval keeps the order); a query whose list is empty is
  in the run as an empty dict (pytrec_eval scores it 0).
- **Queries**: the row's measured queries (the `skip_no_relevant` policy), so a named
  measure's mean is over the same queries as the pinned metrics'.
- **Relevance**: the qrels are the golden set's grades as they are (0 judged not relevant,
  1 to 3 relevant). goldenset counts grade >= 1 as relevant; ir_measures' measures take
  `rel=` (default 1, the same), so `P@5` is goldenset's precision@5 and `P(rel=2)@5`
  counts only grade 2 and above. nDCG takes the grades as gains, as goldenset's ndcg@k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from goldenset.errors import GoldensetError, UsageError

Ranked = Sequence[str]


def _parse(name: str):
    import ir_measures

    try:
        measure = ir_measures.parse_measure(name.strip())
    except Exception as exc:  # NameError, ValueError, SyntaxError: any way a name fails to parse
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise UsageError(
            f"--measure {name!r} is not a measure ir_measures can parse ({reason}); "
            "write it as ir_measures does, e.g. nDCG@20, R@100 or P(rel=2)@5"
        ) from None
    if not ir_measures.pytrec_eval.supports(measure):
        raise UsageError(
            f"--measure {name!r} is not one trec_eval computes (ir_measures' pytrec_eval backend); "
            "name a trec_eval measure such as nDCG@20, R@100, P(rel=2)@5, AP or RR"
        )
    return measure


def parse_measures(names: Sequence[str]) -> list[str]:
    """ir_measures' canonical names of `names`, each once, in order; UsageError for the first that fails."""
    out: list[str] = []
    for name in names:
        canonical = str(_parse(name))
        if canonical not in out:
            out.append(canonical)
    return out


def compute(
    names: Sequence[str],
    lists: Mapping[str, Ranked],
    qrels: Mapping[str, Mapping[str, int]],
    queries: Sequence[str],
) -> dict[str, dict[str, float]]:
    """{query_id: {canonical name: value}} for every query of `queries` and every named measure."""
    if not names or not queries:
        return {q: {} for q in queries}
    import ir_measures

    measures = [_parse(n) for n in names]
    run = {
        q: {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
        for q in queries
        for ranked in [lists.get(q, ())]
    }
    judged = {q: {doc: int(g) for doc, g in qrels[q].items()} for q in queries}
    out: dict[str, dict[str, float]] = {q: {} for q in queries}
    for value in ir_measures.pytrec_eval.iter_calc(measures, judged, run):
        out[value.query_id][str(value.measure)] = float(value.value)
    missing = [(q, n) for q in queries for n in map(str, measures) if n not in out[q]]
    if missing:
        q, n = missing[0]
        raise GoldensetError(f"trec_eval returned no {n} for query {q}; nothing was stored")
    return out
