"""The annotator-name rule, defined once: an annotator's name names its label files.

So it is what a file name can safely hold everywhere: 1 to 64 of letters, digits, '.',
'_' and '-'. The labelling page, the Label Studio import, the judge and the trace
mapping all check names with `is_annotator_name` (before, the judge's copy had no
length limit).
"""

from __future__ import annotations

import re

ANNOTATOR_PATTERN = "[A-Za-z0-9._-]{1,64}"
_ANNOTATOR = re.compile(ANNOTATOR_PATTERN)


def is_annotator_name(name: object) -> bool:
    """Whether `name` is a string that may name an annotator (and so a label file)."""
    return isinstance(name, str) and _ANNOTATOR.fullmatch(name) is not None
