"""The Jinja environment of goldenset's HTML pages, made once: the labelling page and the set explorer.

Both render the templates of goldenset/templates autoescaped, with StrictUndefined, so a template
that names a value its route did not pass fails loudly instead of printing nothing.
"""

from __future__ import annotations

import jinja2

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("goldenset", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
