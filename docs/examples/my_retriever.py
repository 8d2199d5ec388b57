"""Word overlap between the query and a document's title and text: one part, no model."""

import re


def words(text):
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


class Overlap:
    def __init__(self, ctx):
        self.min_shared = int(ctx.options.get("min_shared", 1))
        self.docs = {d.doc_id: words(f"{d.title or ''} {d.text}") for d in ctx.corpus.active.values()}

    def components(self):
        return ["overlap"]

    def search_component(self, name, query, k):
        q = words(query)
        hits = [(doc_id, float(len(q & w))) for doc_id, w in self.docs.items() if len(q & w) >= self.min_shared]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]

    def search(self, query, k):
        return self.search_component("overlap", query, k)


def make(ctx):
    return Overlap(ctx)
