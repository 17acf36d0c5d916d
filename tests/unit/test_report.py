"""The HTML report (asynctm.artifacts.report): built from the committed tables, figures and records, it opens on
the verdicts on the paper's claims and their forest plot, then the results summary, Tables 3-5, the figures and the
provenance; it is self-contained, byte-stable, prints nothing but its path, and a real headless Chromium loads it in
a 1,400 px window with every figure shown, no table wider than the window and no broken link."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlparse

import pytest

from asynctm.artifacts import catalog
from asynctm.artifacts.report import md_table_to_html
from tests.helpers import REPO

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections, self.ids, self.hrefs, self.imgs, self.tables = [], set(), [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "a":
            self.hrefs.append(a.get("href", ""))
        elif tag == "img":
            self.imgs.append(a.get("src", ""))
        elif tag == "table":
            self.tables.append(a.get("id"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The report of the committed paper-scale artifacts, written beside copies of them."""
    root = tmp_path_factory.mktemp("report")
    shutil.copytree(REPO / "paper_tables", root / "paper_tables", ignore=shutil.ignore_patterns("report.html"))
    shutil.copytree(REPO / "figures", root / "figures")
    out = root / "paper_tables"
    args = [sys.executable, "-m", "asynctm.artifacts.report", "--tables", str(out), "--figures",
            str(root / "figures"), "--results", str(REPO / "results"), "--config", str(out / "artifacts_config.yaml")]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out, args, r


def test_the_report_builds_quietly_and_byte_stably(built):
    out, args, first = built
    assert first.stderr == "" and first.stdout.strip() == str(out / "report.html")
    page = (out / "report.html").read_bytes()
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and (out / "report.html").read_bytes() == page
    assert not list(out.glob(".report.html.*"))  # no temporary file left


def test_the_report_opens_on_the_verdicts_then_summary_tables_figures_and_provenance(built):
    out, _, _ = built
    text = (out / "report.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    assert page.sections == ["claims", "summary", "tables", "figures", "provenance"]
    assert [t for t in page.tables if t][:2] == ["claims-table", "summary-table"]
    assert [t for t in page.tables if t in catalog.TABLES] == list(catalog.TABLES)
    assert len(page.imgs) == len(catalog.FIGURES) + 1 and all(s.startswith("data:image/png;base64,") for s in page.imgs)
    assert set(catalog.FIGURES) | {"fig_claims_forest"} <= page.ids
    # every claim's verdict, coloured by its class
    import csv

    verdicts = [r for r in csv.DictReader((out / "claims.csv").open()) if r["level"] == "claim"]
    assert verdicts and all(f"class=v-{r['verdict'].replace(' ', '-')}>{r['verdict']}" in text for r in verdicts)
    # Ours beside the paper's, with the gaps' reasons: every cell of the committed Markdown tables is a cell here.
    import html

    from asynctm.artifacts.report import _split_md_row

    for name in catalog.TABLES:
        rows = [ln for ln in (out / f"{name}.md").read_text().splitlines() if ln.startswith("|")]
        for line in rows[2:]:
            for cell in _split_md_row(line):
                assert f">{html.escape(cell)}</td>" in text, (name, cell)
    assert "not run: " in text  # gaps say why
    # How each number was produced: every record's commit and the protocol.
    commits = {json.loads(p.read_text())["provenance"]["git_commit"][:10]
               for p in (REPO / "results" / "wsd_apple").glob("*/*/seed*.json")}
    assert commits and all(c in text for c in commits)
    assert "dataset protocol" in text and "Smoke scale" not in text


def test_every_link_of_the_report_resolves(built):
    out, _, _ = built
    page = _Page()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    assert page.hrefs
    for href in page.hrefs:
        url = urlparse(href)
        assert not url.scheme and not url.netloc, f"the report links outside itself: {href}"
        if url.path:
            assert (out / unquote(url.path)).is_file(), f"broken link {href}"
        if url.fragment:
            assert url.fragment in page.ids, f"broken anchor {href}"


def test_smoke_report_says_its_numbers_are_not_comparable(built, tmp_path):
    from asynctm.artifacts import load_config
    from asynctm.artifacts.report import build_report

    out, _, _ = built
    config = load_config(REPO / "paper_tables" / "artifacts_config.yaml")
    config.update(scale="smoke", smoke={"epochs": 2, "max_clauses": 20, "max_train": 300, "seeds": [0]})
    text = build_report(out, out.parent / "figures", [], config)
    assert "Smoke scale." in text and "not comparable to the paper" in text
    assert "2 epochs, at most 20 clauses, at most 300 training examples" in text


def test_markdown_tables_keep_escaped_bars_and_alignment():
    html = md_table_to_html("| a | b |\n|---|---:|\n| x \\| y | 1 |\n", "t")
    assert "<td>x | y</td>" in html and "<td class=r>1</td>" in html and "<th class=r>b</th>" in html
    # a long note moves into a footnote below its table (the table stays narrow), an equal one keeps its number
    long = "a note " * 20
    html = md_table_to_html(f"| a | note |\n|---|---|\n| x | {long} |\n| y | {long} |\n| z | short |\n", "t")
    assert html.count('<a href="#t-fn1">[1]</a>') == 2 and '<td>short</td>' in html
    assert f'<tr id="t-fn1"><td>[1]</td><td>{long.strip()}</td></tr>' in html


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    reason = "Chromium is not installed (apt-get install -y chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must have it")
    pytest.skip(reason)


# Runs after load in a copy of the page: what a reader would see, written into the DOM for --dump-dom.
CHECK = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const summary = document.getElementById("summary-table");
  const wide = [...document.querySelectorAll("table")].filter(t => t.getBoundingClientRect().right > window.innerWidth);
  const first = document.querySelector("section");
  const out = {
    title: document.title,
    first_section: first ? first.id : null,
    summary_rows: summary ? summary.querySelectorAll("tbody tr").length : 0,
    summary_visible: summary ? summary.getBoundingClientRect().height > 0 : false,
    images: imgs.length,
    images_shown: imgs.filter(i => i.complete && i.naturalWidth > 100 && i.getBoundingClientRect().width > 100).length,
    tables: document.querySelectorAll("table").length,
    too_wide: wide.map(t => t.id || t.className),
  };
  const pre = document.createElement("pre");
  pre.id = "report-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def test_headless_chromium_shows_the_summary_and_every_figure(built, tmp_path):
    chromium = _chromium()
    out, _, _ = built
    check = out / "report-check.html"
    check.write_text((out / "report.html").read_text(encoding="utf-8").replace("</body>", CHECK + "\n</body>"),
                     encoding="utf-8")
    r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        "--virtual-time-budget=10000", "--window-size=1400,1000", "--dump-dom", check.as_uri()],
                       capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="report-check">(.*?)</pre>', r.stdout)
    assert found, f"Chromium printed no check result (exit {r.returncode}):\n{r.stderr[-3000:]}"
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert seen["title"] == "asynctm results (paper scale)"
    assert seen["first_section"] == "claims" and seen["summary_visible"] and seen["summary_rows"] >= 1
    assert seen["images"] == len(catalog.FIGURES) + 1 and seen["images_shown"] == len(catalog.FIGURES) + 1, seen
    assert seen["too_wide"] == [], f"tables wider than a 1,400 px window: {seen['too_wide']}"
    assert seen["tables"] >= 1 + len(catalog.TABLES) + 1
    assert "Failed to load resource" not in r.stderr and "Not allowed to load local resource" not in r.stderr
