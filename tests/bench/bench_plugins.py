"""Retrievers plugged in by import path (`bench_plugins:<factory>`) for the tests.

`keywords` is a small honest retriever (no model, fast). `perfect` and `worst`
cheat on purpose, reading the golden labels, to give runs a known difference.
`empty` swallows its failure and returns []; `exploding` raises; `fails_on_search`
passes its probes and fails during the run.
"""

from __future__ import annotations

import re


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class Keywords:
    """Score = shared words between query and title+text; one component."""

    def __init__(self, ctx):
        self.docs = {d.doc_id: _words(f"{d.title or ''} {d.text}") for d in ctx.corpus.active.values()}

    def components(self):
        return ["keywords"]

    def search_component(self, name, query, k):
        q = _words(query)
        scored = [(d, float(len(q & w))) for d, w in self.docs.items() if q & w]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]

    def search(self, query, k):
        return self.search_component("keywords", query, k)


def keywords(ctx):
    return Keywords(ctx)


class _Labelled(Keywords):
    def __init__(self, ctx, best_first: bool):
        super().__init__(ctx)
        rows = ctx.con.execute("SELECT task, doc_id FROM golden_set WHERE relevance = 1").fetchall()
        self.helped = {}
        for task, doc in rows:
            self.helped.setdefault(task, set()).add(doc)
        self.best_first = best_first

    def search(self, query, k):
        good = sorted(self.helped.get(query, set()))
        rest = sorted(d for d in self.docs if d not in good)
        ranked = good + rest if self.best_first else rest + good
        return [(d, float(len(ranked) - i)) for i, d in enumerate(ranked)][:k]


def perfect(ctx):
    return _Labelled(ctx, True)


def worst(ctx):
    return _Labelled(ctx, False)


class Empty(Keywords):
    def search_component(self, name, query, k):
        try:
            raise ConnectionError("index server unreachable")
        except ConnectionError:
            return []  # the anti-pattern under test: an outage that reads as "found nothing"


def empty(ctx):
    return Empty(ctx)


class Exploding(Keywords):
    def search_component(self, name, query, k):
        raise ConnectionError("index server unreachable at 10.0.0.7:9200")


def exploding(ctx):
    return Exploding(ctx)


class FailsOnSearch(Keywords):
    """Every part answers its probe, then the third search of the run fails."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.searches = 0

    def search(self, query, k):
        self.searches += 1
        if self.searches == 3:
            raise ConnectionError("search backend went away\nsecond line of a traceback")
        return super().search(query, k)


def fails_on_search(ctx):
    return FailsOnSearch(ctx)


not_callable = 42


def speechless(ctx):
    """A factory whose retriever cannot search: wrong usage of the plug-in protocol (exit 2)."""
    return object()
