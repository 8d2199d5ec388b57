"""A Markdown report as one self-contained HTML page: tables styled, plots inline.

People would rather look at a benchmark report than read its Markdown source: `report.html`
is written next to `report.md`, from the same text, so the two cannot differ. Images the
Markdown names by a relative path in its own folder (the plot) are embedded as data URIs, so
the page is one file that opens anywhere (a mail attachment, a CI artifact) without its
folder. Rendered with markdown-it-py (CommonMark plus tables; installed with rich); raw HTML in
the Markdown is escaped, never passed through.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

# Nothing runs past the page or its box at any width (tests/test_report_layout.py measures
# 1280 and 800 px): long words (a run id, a path, a config value) break; code blocks wrap;
# a table wider than the page scrolls inside its own box instead of widening the page.
_STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d232b; max-width: 60rem;
       margin: 1.5rem auto; padding: 0 1rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: .6rem 0; display: block; max-width: 100%; overflow-x: auto;
        overflow-wrap: normal; }
pre { white-space: pre-wrap; }
blockquote ul { margin: 0; padding-left: 1.2rem; }
th, td { border: 1px solid #d8dde3; padding: .2rem .6rem; }
th { background: #f2f4f7; }
td { font-variant-numeric: tabular-nums; }
blockquote { margin: .6rem 0; padding: .4rem .8rem; background: #fdf3e7; border-left: 4px solid #c77700; }
img { max-width: 100%; height: auto; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
"""
_IMG = re.compile(r'<img src="([^":]+\.png)"')


def markdown_page(markdown: str, title: str, folder: Path) -> str:
    """The HTML page of `markdown`, its relative PNG images from `folder` embedded."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)

    def inline(match: re.Match[str]) -> str:
        path = folder / match.group(1)
        if path.parent != folder or not path.is_file():  # only a file of the report's own folder
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}"'

    body = _IMG.sub(inline, body)
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )


def write_html_next_to(md: Path, title: str) -> Path:
    """Write `<md stem>.html` beside the Markdown report `md`; return its path."""
    out = md.with_suffix(".html")
    out.write_text(markdown_page(md.read_text(encoding="utf-8"), title, md.parent), encoding="utf-8")
    return out
