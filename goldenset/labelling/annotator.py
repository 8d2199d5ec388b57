"""The annotator-name rule, defined once: an annotator's name names its label files.

So it is what a file name can safely hold everywhere: 1 to 64 of letters, digits, '.',
'_' and '-'. The labelling page, the Label Studio import, the judge and the trace
mapping all check names with `is_annotator_name` (before, the judge's copy had no
length limit).
"""

from __future__ import annotations

import re

from goldenset.errors import UsageError

ANNOTATOR_PATTERN = "[A-Za-z0-9._-]{1,64}"
_ANNOTATOR = re.compile(ANNOTATOR_PATTERN)


def is_annotator_name(name: object) -> bool:
    """Whether `name` is a string that may name an annotator (and so a label file)."""
    return isinstance(name, str) and _ANNOTATOR.fullmatch(name) is not None


def check_annotator_name(name: str, named: str, why: str, fix: str) -> str:
    """Return `name` when it may name an annotator; else UsageError (exit 2): "NAMED 'name' must match
    PATTERN (WHY); FIX", so each caller says what the name is for and what to type instead."""
    if not is_annotator_name(name):
        raise UsageError(f"{named} {name!r} must match {ANNOTATOR_PATTERN} ({why}); {fix}")
    return name
