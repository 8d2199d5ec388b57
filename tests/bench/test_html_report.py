"""report.html: the benchmark report as one page to look at, tables and the plot inline."""

from __future__ import annotations

import base64
import re

import pytest

from goldenset.bench.runner import BenchConfig
from goldenset.bench.service import run_and_store
from goldenset.html_report import markdown_page


@pytest.mark.slow
def test_a_run_writes_report_html_beside_report_md_with_its_tables_and_plot_inline(tmp_path, embedder, goldens):
    g = goldens(tmp_path / "g")
    config = BenchConfig(retriever="bench_plugins:keywords", index_dir=g.index_dir)
    result = run_and_store(g.db, g.corpus, config, report_dir=tmp_path / "report", embedder=embedder)
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert tmp_path / "report" / "report.html" in result.files
    # Every metric row of the Markdown table is a row of an HTML table.
    md_rows = [line for line in result.report.read_text().splitlines() if line.startswith("| recall@5 |")]
    assert md_rows and page.count("<td>recall@5</td>") == len(md_rows)
    # The plot is the PNG of the folder, embedded: the page needs no other file.
    png = (tmp_path / "report" / "differences.png").read_bytes()
    assert f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}"' in page
    assert not re.search(r'<img src="(?!data:)', page)


def test_markup_in_the_report_is_escaped_and_images_outside_its_folder_are_not_read(tmp_path):
    inside = b"\x89PNG-inside"
    (tmp_path / "inside.png").write_bytes(inside)
    page = markdown_page(
        "# t\n\n<script>alert(1)</script>\n\n![a](inside.png) ![b](../outside.png)\n", "a <title>", tmp_path
    )
    assert "<script>" not in page and "&lt;script&gt;" in page and "<title>a &lt;title&gt;</title>" in page
    assert f'src="data:image/png;base64,{base64.b64encode(inside).decode()}"' in page
    assert 'src="../outside.png"' in page
