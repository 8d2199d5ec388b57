"""Scorers plugged in by import path (`score_plugins:<factory>`) for the tests.

`constant` answers options["value"]; `counting` answers 1, 2, 3 ... across calls
(so a cache hit shows: the count does not move); `rich` answers a Score with a
label and rationale. The others fail on purpose: `raising`, `sleepy` (past any
short timeout), `nan`, `infinite`, `text`, `nameless` (no version) and `broken`
(its factory raises, as a plug-in missing its weights would). `table` answers
options["scores"][passage] (a list: the k-th call for a passage answers item k
modulo its length, so --repeats sees a spread) and raises KeyError for a passage
it has no score for.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

from goldenset.scoring import Score


class _Base:
    name = "plugin"
    version = "1"

    def __init__(self, ctx):
        self.ctx = ctx
        self.options = dict(ctx.options)


class Constant(_Base):
    def score(self, query, passage):
        return float(self.options.get("value", 0.5))


class Counting(_Base):
    name = "counting"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.calls = itertools.count(1)

    def score(self, query, passage):
        return float(next(self.calls))


class Rich(_Base):
    name = "rich"

    def score(self, query, passage):
        return Score(0.75, label="partial", rationale="half of it", span=passage[:5])


class Raising(_Base):
    def score(self, query, passage):
        raise ValueError("boom on purpose")


class Sleepy(_Base):
    def score(self, query, passage):
        time.sleep(float(self.options.get("seconds", 5)))
        return 1.0


class NaN(_Base):
    def score(self, query, passage):
        return float("nan")


class Infinite(_Base):
    def score(self, query, passage):
        return float("inf")


class Text(_Base):
    def score(self, query, passage):
        return "0.9"


class Nameless:
    name = "nameless"

    def __init__(self, ctx):
        pass

    def score(self, query, passage):
        return 1.0


class Table(_Base):
    name = "table"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.calls: Counter[str] = Counter()

    def score(self, query, passage):
        values = self.options["scores"][passage]
        if not isinstance(values, list):
            return float(values)
        k = self.calls[passage]
        self.calls[passage] += 1
        return float(values[k % len(values)])


def broken(ctx):
    raise RuntimeError("no weights at /models/missing")


table = Table
constant, counting, rich, raising, sleepy, nan, infinite, text, nameless = (
    Constant,
    Counting,
    Rich,
    Raising,
    Sleepy,
    NaN,
    Infinite,
    Text,
    Nameless,
)
