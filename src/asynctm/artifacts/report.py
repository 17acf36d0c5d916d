"""One self-contained HTML page of the results: what reproduced (the verdict on each claim of the paper and the
forest plot of Tables 3 and 5), the summary, Tables 3-5, every figure, and how each number was produced.

    python -m asynctm.artifacts.report --tables DIR --figures DIR --config FILE (--records FILE... | --results DIR)
        [--out FILE] [--log FILE]

reads the tables and figures already built (``<tables>/<name>.{csv,md,caption.txt}``,
``<tables>/results_summary.md``, ``<tables>/claims.{csv,md}``, ``<figures>/<name>.{png,caption.txt}``, the forest
plot ``<figures>/fig_claims_forest.{png,caption.txt}``) and the run records they were built
from (``--records``: those files, as the Snakemake rule ``report`` passes its declared inputs; ``--results``:
every record under that root that a table or figure reads; both listed and read through the record store,
asynctm.store, whose gate refuses a bad record with one line), and writes ``<tables>/report.html`` (or ``--out``):
figures embedded as data URIs, links only to the table and figure files (relative to the page). No timestamps:
the same inputs give the same bytes. The rule ``report`` (workflow/rules/report.smk) runs it.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import re
import sys
from collections import Counter
from pathlib import Path

from .. import store
from ..experiments.plan import TM_IMPLS
from . import catalog, load_config, tables
from .render import dataset_label, num
from .rules import add_job_args, run_logged

PAGE = "report.html"
IMPL_LABELS = {**tables.IMPL_LABELS, "mlp_novelty": "novelty MLP"}
# The headline metric of each table in the summary: (CSV column prefix, label, decimals).
SUMMARY_METRICS = {"table3_performance": ("accuracy", "accuracy (%)", 2), "table5_regression": ("mae", "MAE", 2)}

# Every table fits a 1,400 px window: the page is at most 84em (1,344 px at 16 px) wide, a table never wider than
# the page (cells wrap, long words and paths included), and long notes move into footnotes below their table.
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 84em; padding: 0 1em; color: #222; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; max-width: 100%; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.4em; vertical-align: top; overflow-wrap: anywhere; }
th { background: #eee; overflow-wrap: normal; }
td.r, th.r { text-align: right; overflow-wrap: normal; }
table.footnotes { font-size: 0.8em; border: none; }
table.footnotes td { border: none; padding: 0.1em 0.4em; }
table.footnotes td:first-child, td.key { white-space: nowrap; overflow-wrap: normal; }
td.v-reproduced { background: #d4edda; }
td.v-partly-reproduced { background: #fff3cd; }
td.v-not-reproduced { background: #f8d7da; }
td.v-not-testable-here { background: #e2e3e5; }
tr.claim td { font-weight: 600; border-top: 2px solid #888; }
.caveat { background: #fff3cd; border: 1px solid #e0c36a; padding: 0.6em 1em; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption p, .notes p { margin: 0.2em 0; }
code { font-size: 0.95em; }
"""


def _esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value, decimals: int, signed: bool = False) -> str:
    """A CSV cell's number (render.num's Markdown); '–' where it holds none."""
    try:
        return num(float(value), decimals, signed)[0]
    except (TypeError, ValueError):
        return "–"


def _speedup(value) -> str:
    text = _num(value, 1)
    return text if text == "–" else f"{text}×"


# -- inputs ------------------------------------------------------------------------------------------------

def _split_md_row(line: str) -> list[str]:
    """The cells of one Markdown pipe-table row (``\\|`` is a literal bar)."""
    cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


FOOTNOTE_OVER = 60  # a note cell longer than this many characters moves into a footnote below its table


class Footnotes:
    """The long notes of one table, numbered in order of appearance (an equal note keeps its number)."""

    def __init__(self, table_id: str):
        self.table_id, self.notes = table_id, {}

    def cell(self, text: str) -> str:
        """The cell's HTML: short text itself, a long note as a link to its footnote."""
        if len(text) <= FOOTNOTE_OVER:
            return _esc(text)
        n = self.notes.setdefault(text, len(self.notes) + 1)
        return f'<a href="#{_esc(self.table_id)}-fn{n}">[{n}]</a>'

    def html(self) -> str:
        if not self.notes:
            return ""
        rows = "".join(f'<tr id="{_esc(self.table_id)}-fn{n}"><td>[{n}]</td><td>{_esc(text)}</td></tr>'
                       for text, n in self.notes.items())
        return f'<table class="footnotes"><tbody>{rows}</tbody></table>'


def md_table_to_html(markdown: str, table_id: str) -> str:
    """A Markdown pipe table (render.Grid.markdown) as an HTML table; right-aligned columns stay right, a long
    cell of a note column moves into a footnote below the table."""
    lines = [ln for ln in markdown.splitlines() if ln.startswith("|")]
    if len(lines) < 2:
        raise ValueError(f"{table_id}: no Markdown table found")
    header, align = _split_md_row(lines[0]), _split_md_row(lines[1])
    right = [a.endswith(":") for a in align]
    notes = Footnotes(table_id)
    out = [f'<table id="{_esc(table_id)}">', "<thead><tr>"]
    out += [f'<th{" class=r" if r else ""}>{_esc(h)}</th>' for h, r in zip(header, right)]
    out.append("</tr></thead><tbody>")
    for line in lines[2:]:
        cells = _split_md_row(line)
        out.append("<tr>" + "".join(
            f'<td{" class=r" if r else ""}>{notes.cell(c) if h.lower() == "note" else _esc(c)}</td>'
            for c, r, h in zip(cells, right, header)) + "</tr>")
    out.append("</tbody></table>")
    out.append(notes.html())
    return "\n".join(x for x in out if x)


def _read_csv_rows(path: Path) -> list[dict]:
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _summary_preamble(path: Path) -> list[str]:
    """The provenance paragraphs at the top of results_summary.md (records, hardware, the paper's hardware)."""
    text = path.read_text(encoding="utf-8")
    head = text.split("\n#### ", 1)[0]
    return [p.strip() for p in head.split("\n\n") if p.strip() and not p.strip().startswith("<!--")]


def used_records(results_dir, config: dict) -> list[Path]:
    """The record files under ``results_dir`` (asynctm.store.record_files, the ablation's left out) that any table
    or figure reads (catalog.reads)."""
    root = Path(results_dir)
    return [path for path in store.record_files(root, ablation=False)
            if any(catalog.reads(name, config, path.relative_to(root)) for name in catalog.ARTIFACTS)]


# -- sections ----------------------------------------------------------------------------------------------

def _caveat(config: dict) -> str:
    if config.get("scale") != "smoke":
        return ""
    smoke = config.get("smoke", {})
    return ('<p class="caveat"><strong>Smoke scale.</strong> These numbers come from the pipeline shrunk to run in '
            f"minutes ({_esc(smoke.get('epochs', '?'))} epochs, at most {_esc(smoke.get('max_clauses', '?'))} "
            f"clauses, at most {_esc(smoke.get('max_train', '?'))} training examples, seeds "
            f"{_esc(', '.join(map(str, smoke.get('seeds', []))))}). They check that every step runs; they are not "
            "comparable to the paper's numbers, and the differences from the paper mean nothing here.</p>")


def summary_section(tables_dir: Path, config: dict) -> str:
    parts = ['<section id="summary">', "<h2>Results summary</h2>", _caveat(config)]
    # (the smoke caveat of the Markdown summary is the banner above)
    parts += [f"<p>{_esc(p)}</p>" for p in _summary_preamble(tables_dir / "results_summary.md")
              if not p.startswith("Smoke scale:")]
    rows, gaps, cells = [], Counter(), 0
    notes = Footnotes("summary-table")
    for name, (column, label, decimals) in SUMMARY_METRICS.items():
        for row in _read_csv_rows(tables_dir / f"{name}.csv"):
            cells += 1
            if row.get("status") == "not run":
                gaps[row.get("note") or "not run"] += 1
                continue
            # ours: the value the table compares with the paper (Δ): the last-10-epoch mean, else the final one
            ours = row.get(f"{column}_last10_mean") if row.get(f"{column}_compared") == "last10" else \
                row.get(f"{column}_mean")
            rows.append("<tr>" + "".join([
                f"<td>{_esc(dataset_label(row['dataset']))}</td>",
                f"<td>{_esc(IMPL_LABELS.get(row['implementation'], row['implementation']))}</td>",
                f"<td>{_esc(label)}</td>",
                f'<td class=r>{_num(ours, decimals)}</td>',
                f'<td class=r>{_num(row.get(f"{column}_paper"), decimals)}</td>',
                f'<td class=r>{_num(row.get(f"{column}_diff"), decimals, signed=True)}</td>',
                f'<td class=r>{_speedup(row.get("speedup"))}</td>',
                f'<td class=r>{_speedup(row.get("speedup_paper"))}</td>',
                f'<td class=r>{_esc(row.get("n_runs", ""))}</td>',
                f'<td>{notes.cell(row.get("note", ""))}</td>']) + "</tr>")
    parts.append("<p>Each implementation that has records, on its main setting: ours (mean over seeds of each run's "
                 "mean over its last 10 epochs; the final value where a run has no epochs, the novelty MLP stage; "
                 "Tables 3 and 5 below give both) beside the paper's, Δ = ours − paper; speed-up: per-epoch time of "
                 "pyTsetlinMachine over ours on our hardware, beside the paper's (CUDA on its hardware). F1, times and "
                 "spreads are in the tables below.</p>")
    if rows:
        parts += ['<table id="summary-table"><thead><tr><th>Dataset</th><th>Implementation</th><th>metric</th>'
                  "<th class=r>ours</th><th class=r>paper</th><th class=r>Δ</th><th class=r>speed-up</th>"
                  "<th class=r>paper speed-up</th><th class=r>seeds</th><th>note</th></tr></thead><tbody>",
                  *rows, "</tbody></table>", notes.html()]
    else:
        parts.append('<table id="summary-table"><tbody><tr><td>No implementation has a record yet.</td></tr>'
                     "</tbody></table>")
    if gaps:
        listed = "; ".join(f"{_esc(reason)} ({n})"
                           for reason, n in sorted(gaps.items(), key=lambda kv: (-kv[1], kv[0])))
        parts.append(f"<p>Gaps: {sum(gaps.values())} of {cells} dataset × implementation cells of Tables 3 and 5 "
                     f"have no record: {listed}.</p>")
    parts.append("</section>")
    return "\n".join(parts)


CLAIMS_FIGURE = "fig_claims_forest"


def _verdict_class(verdict: str) -> str:
    return "v-" + re.sub(r"[^a-z]+", "-", verdict.lower()).strip("-")


def _claims_cell_class(column: int, verdict: str) -> str:
    """The claim id and the details link stay on one line; the verdict is coloured."""
    return {0: " class=key", 4: f" class={_verdict_class(verdict)}", 6: " class=key"}.get(column, "")


def claims_section(tables_dir: Path, figures_dir: Path, page_dir: Path | None = None) -> str:
    """What reproduced: the verdict of each claim and of its parts (``<tables>/claims.csv``), coloured, what each
    tested in footnotes, then the forest plot of every Table 3/5 cell."""
    from .claims import SHORT

    page_dir = tables_dir if page_dir is None else page_dir
    rows = [r for r in _read_csv_rows(tables_dir / "claims.csv") if r.get("level") in ("claim", "part")]
    notes = Footnotes("claims-table")
    parts = ['<section id="claims">', "<h2>What reproduced</h2>",
             "<p>One verdict per claim of the paper, from the run records, the paper's numbers and the thresholds of "
             "config <code>claims:</code> (each with the reason it was chosen, on the full page). GPU claims are "
             "judged for the paper's design (tm_gpu, one thread per clause); our faster build (tm_gpu_warp, a warp "
             "per clause) and the CPU build are reported beside. The cells of Tables 3-5 are listed one by one on the "
             f'<a href="{_link(tables_dir / "claims.md", page_dir)}">full page</a> '
             f'(<a href="{_link(tables_dir / "claims.csv", page_dir)}">CSV</a>).</p>',
             '<table id="claims-table"><thead><tr><th>Claim</th><th>Part</th><th>Ours</th><th>Threshold</th>'
             "<th>Verdict</th><th>Our builds beside</th><th>Details</th></tr></thead><tbody>"]
    for row in rows:
        verdict = row.get("verdict", "")
        dirty = int(float(row.get("dirty_records") or 0))
        mark = f" † ({dirty} record(s) of a modified checkout)" if dirty and verdict != "not testable here" else ""
        if row["level"] == "claim":
            what = SHORT.get(row["claim"], row["claim"])
            detail = f"{row.get('statement', '')} ({row.get('section', '')}). Tested: {row.get('tested', '')}." + (
                f" {row['note']}" if row.get("note") else "")
            cells = [row["claim"], what, row.get("ours", ""), "", verdict + mark, "", detail]
        else:
            detail = "; ".join(x for x in (f"tested: {row.get('tested', '')}" if row.get("tested") else "",
                                           f"records: {row.get('records', '')}" if row.get("records") else "",
                                           row.get("note", "")) if x)
            cells = [row["claim"], row.get("part", ""), row.get("ours", ""), row.get("threshold", ""),
                     verdict + mark, row.get("beside", ""), detail]
        parts.append(('<tr class="claim">' if row["level"] == "claim" else "<tr>") + "".join(
            f'<td{_claims_cell_class(i, verdict)}>{notes.cell(c) if i == 6 else _esc(c)}</td>'
            for i, c in enumerate(cells)) + "</tr>")
    parts += ["</tbody></table>", notes.html()]
    caption = (figures_dir / f"{CLAIMS_FIGURE}.caption.txt").read_text(encoding="utf-8").strip()
    parts += [*_figure(figures_dir, CLAIMS_FIGURE, page_dir,
                       "Forest plot: ours minus the paper for every cell of Tables 3 and 5", [_esc(caption)]),
              "</section>"]
    return "\n".join(parts)


def _figure(figures_dir: Path, name: str, page_dir: Path, alt: str, paragraphs: list[str]) -> list[str]:
    """A figure embedded as a data URI, its caption's paragraphs (HTML) and links to its files."""
    data = base64.b64encode((figures_dir / f"{name}.png").read_bytes()).decode("ascii")
    return [f'<figure id="{name}">', f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">', "<figcaption>",
            *(f"<p>{p}</p>" for p in paragraphs),
            _files(figures_dir / name, (("pdf", "PDF"), ("png", "PNG")), page_dir), "</figcaption>", "</figure>"]


def _files(stem: Path, formats, page_dir: Path) -> str:
    """'Files: ' and a link to each of ``stem``'s ``formats`` ((extension, label) pairs), relative to the page."""
    return "<p>Files: " + ", ".join(f'<a href="{_link(stem.with_name(f"{stem.name}.{ext}"), page_dir)}">{label}</a>'
                                    for ext, label in formats) + ".</p>"


def _link(target: Path, page_dir: Path) -> str:
    """``target`` relative to the page's folder, with forward slashes (an href)."""
    return Path(os.path.relpath(target, page_dir)).as_posix()


def tables_section(tables_dir: Path, page_dir: Path | None = None) -> str:
    page_dir = tables_dir if page_dir is None else page_dir
    parts = ['<section id="tables">', "<h2>Tables 3-5, ours beside the paper's</h2>"]
    for name in catalog.TABLES:
        caption = (tables_dir / f"{name}.caption.txt").read_text(encoding="utf-8").splitlines()
        parts += [f'<h3 id="{name}-title">{_esc(caption[0])}</h3>',
                  md_table_to_html((tables_dir / f"{name}.md").read_text(encoding="utf-8"), name),
                  '<div class="notes">', *(f"<p>{_esc(line)}</p>" for line in caption[1:] if line.strip()), "</div>",
                  _files(tables_dir / name, (("csv", "CSV"), ("md", "Markdown"), ("tex", "LaTeX")), page_dir)]
    parts.append("</section>")
    return "\n".join(parts)


def figures_section(figures_dir: Path, page_dir: Path | None = None) -> str:
    page_dir = figures_dir if page_dir is None else page_dir
    parts = ['<section id="figures">', "<h2>Figures</h2>"]
    for name in catalog.FIGURES:
        caption = (figures_dir / f"{name}.caption.txt").read_text(encoding="utf-8").splitlines()
        title = caption[0] if caption else name
        parts += _figure(figures_dir, name, page_dir, title,
                         [f"<strong>{_esc(title)}</strong>", *(_esc(line) for line in caption[1:] if line.strip())])
    parts.append("</section>")
    return "\n".join(parts)


def _group_key(record: dict):
    impl = record.get("impl", "?")
    order = TM_IMPLS.index(impl) if impl in TM_IMPLS else len(TM_IMPLS)
    return (record.get("experiment", "?"), order, impl, record.get("params", "?"))


def provenance_section(records: list[Path], config: dict) -> str:
    parts = ['<section id="provenance">', "<h2>How each number was produced</h2>",
             f"<p>Every number above comes from one of the {len(records)} run records below "
             f"(<code>results/&lt;experiment&gt;/&lt;impl&gt;/&lt;params&gt;/seed&lt;k&gt;.json</code>, "
             f"{_esc(config.get('scale', 'paper'))} scale), each written at the end of its run with its provenance: "
             "the commit of the code, the machine, the library and the dataset protocol. The records' layout and "
             "fields: results/README.md; the protocols: config/README.md.</p>"]
    groups: dict[tuple, list[dict]] = {}
    for path in records:
        rec = store.read_record(path)  # through the gate, below the results root its path names
        groups.setdefault(_group_key(rec), []).append(rec)
    commits = Counter()
    if groups:
        parts.append('<table id="provenance-table"><thead><tr><th>Experiment</th><th>Implementation</th>'
                     "<th>params</th><th>seeds</th><th>dataset protocol</th><th>library</th><th>device</th>"
                     "<th>commit</th><th>started (UTC)</th></tr></thead><tbody>")
    for (experiment, _, impl, params), recs in sorted(groups.items()):
        prov = [r.get("provenance", {}) for r in recs]
        impls = [r.get("implementation", {}) for r in recs]
        seeds = ", ".join(str(s) for s in sorted(r.get("seed") for r in recs))
        protocols = sorted({str((r.get("dataset") or {}).get("protocol", "?")) for r in recs})
        libraries = sorted({" ".join(x for x in (str(i.get("library") or ""), str(i.get("version") or "")) if x)
                            for i in impls} - {""})
        devices = sorted({str(i.get("device") or p.get("cpu_model") or "?") for i, p in zip(impls, prov)})
        shas = []
        for p in prov:
            sha = str(p.get("git_commit") or "unknown")[:10] + (" (modified)" if p.get("git_dirty") else "")
            commits[sha] += 1
            shas.append(sha)
        started = sorted(str(p.get("started_utc", "")) for p in prov if p.get("started_utc"))
        when = f"{started[0]} – {started[-1]}" if len(set(started)) > 1 else (started[0] if started else "–")
        parts.append("<tr>" + "".join(f"<td>{_esc(v)}</td>" for v in (
            experiment, IMPL_LABELS.get(impl, impl), params, seeds, ", ".join(protocols), "; ".join(libraries),
            "; ".join(devices), ", ".join(sorted(set(shas))), when)) + "</tr>")
    if groups:
        parts.append("</tbody></table>")
        parts.append("<p>Commits: " + "; ".join(f"<code>{_esc(sha)}</code> ({n} records)"
                                               for sha, n in sorted(commits.items())) + ".</p>")
    protocols = "; ".join(f"{_esc(name)}: {_esc(exp.get('dataset', name))} ({_esc(exp.get('protocol', 'paper'))})"
                          for name, exp in config.get("experiments", {}).items())
    parts += [f"<p>Experiments and the dataset protocol each trains on: {protocols}.</p>", "</section>"]
    return "\n".join(parts)


# -- the page ----------------------------------------------------------------------------------------------

def build_report(tables_dir, figures_dir, records, config: dict, page_dir=None) -> str:
    """The page's HTML, from the built tables and figures and the records they used (paths); links are
    relative to ``page_dir`` (default: the tables' folder, where the page goes)."""
    tables_dir, figures_dir = Path(tables_dir), Path(figures_dir)
    page_dir = tables_dir if page_dir is None else Path(page_dir)
    scale = config.get("scale", "paper")
    records = [Path(p) for p in records]
    body = [f"<h1>Massively parallel and asynchronous Tsetlin Machine: reproduction results ({_esc(scale)} scale)"
            "</h1>",
            '<nav><a href="#claims">What reproduced</a><a href="#summary">Summary</a><a href="#tables">Tables 3-5</a>'
            '<a href="#figures">Figures</a><a href="#provenance">How each number was produced</a></nav>',
            claims_section(tables_dir, figures_dir, page_dir), summary_section(tables_dir, config),
            tables_section(tables_dir, page_dir),
            figures_section(figures_dir, page_dir), provenance_section(records, config)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>asynctm results ({_esc(scale)} scale)</title>\n"
            "<!-- generated by python -m asynctm.artifacts.report from the tables, figures and run records -->\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def write_report(tables_dir, figures_dir, records, config: dict, out=None) -> Path:
    from ..io import write_text_atomic

    out = Path(out) if out is not None else Path(tables_dir) / PAGE
    write_text_atomic(out, build_report(tables_dir, figures_dir, records, config, out.parent))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asynctm.artifacts.report", description=__doc__.split("\n")[0])
    parser.add_argument("--tables", required=True, help="the folder of the built tables (paper_tables/)")
    parser.add_argument("--figures", required=True, help="the folder of the built figures (figures/)")
    parser.add_argument("--config", required=True, help="the pipeline config YAML (artifacts_config.yaml)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--records", nargs="*", help="the run records the tables and figures were built from")
    source.add_argument("--results", help="a records root (results/ or results/smoke/): every record under it "
                        "that a table or figure reads")
    parser.add_argument("--out", default=None, help=f"the page to write (default: TABLES/{PAGE})")
    parser.add_argument("--log", default=None, help="the job's log (the page written, or the error)")
    add_job_args(parser)
    args = parser.parse_args(argv)

    def work() -> list[Path]:
        config = load_config(args.config)
        records = args.records if args.records is not None else used_records(args.results, config)
        return [write_report(args.tables, args.figures, records, config, args.out)]

    return run_logged(args, work, (store.RecordError, OSError, ValueError, KeyError),
                      " (build the tables, figures and claims first: snakemake --cores all tables figures claims)")


if __name__ == "__main__":
    sys.exit(main())
