"""The forest plot of the claims page (figures/fig_claims_forest.*): every accuracy and F1 cell of Table 3 and MAE
cell of Table 5, ours minus the paper's, with both spreads as error bars, one row per dataset x implementation x
metric, the zero line, each row coloured by its verdict (claims.py; config ``claims.spread``)."""

from __future__ import annotations

from matplotlib.lines import Line2D

from . import catalog
from .claims import (
    PERCENT_METRICS,
    UNTESTABLE,
    VERDICT_COLOURS,
    VERDICTS,
    WARP,
    Row,
    Thresholds,
    _finite,
    verdict_rows,
)
from .figures import Figure, _new_figure, _style, legend_below, save
from .render import dataset_label

IMPL_SHORT = {"pytm_indexed": "pyTM indexed", "pytm_nonindexed": "pyTM non-indexed",
              "tm_gpu": "TM GPU (paper's design)", "tm_gpu_warp": "TM GPU warp (ours, beside)"}
METRIC_SHORT = {"accuracy": "accuracy", "f1": "F1", "mae": "MAE"}
ROW_IN = 0.16  # inches per row
WIDTH_IN = 6.8


def _cells(rows: list[Row], table: str, metrics) -> list[Row]:
    return [r for r in rows if r.level == "cell" and r.claim == table and r.metric in metrics]


def _panel(ax, cells: list[Row], xlabel: str, title: str) -> None:
    n = len(cells)
    for i, r in enumerate(cells):
        y = n - 1 - i
        colour = VERDICT_COLOURS[r.verdict]
        if _finite(r.diff):
            if _finite(r.paper_sd) and r.paper_sd > 0:
                ax.errorbar(r.diff, y, xerr=r.paper_sd, fmt="none", ecolor="#444444", elinewidth=0.6, capsize=2,
                            capthick=0.6, zorder=2)
            if _finite(r.ours_sd) and r.ours_sd > 0:
                ax.errorbar(r.diff, y, xerr=r.ours_sd, fmt="none", ecolor=colour, elinewidth=2.4, alpha=0.55, zorder=3)
            ax.plot([r.diff], [y], marker="D" if r.implementation == WARP else "o", color=colour, markersize=3.5,
                    markerfacecolor="white" if r.implementation == WARP else colour, zorder=4, linestyle="none")
        else:
            ax.text(0.01, y, UNTESTABLE, color=VERDICT_COLOURS[UNTESTABLE], fontsize=5.5, va="center",
                    transform=ax.get_yaxis_transform())
    ax.axvline(0.0, color="black", linewidth=0.8, zorder=1)
    labels = [f"{dataset_label(r.dataset)} · {IMPL_SHORT.get(r.implementation, r.implementation)} · "
              f"{METRIC_SHORT.get(r.metric, r.metric)}" for r in cells]
    ax.set_yticks(range(n - 1, -1, -1), labels)
    ax.tick_params(axis="y", labelsize=5.5, length=0)
    ax.set_ylim(-0.7, n - 0.3)
    for i in range(1, n):  # a faint rule between datasets
        if cells[i].dataset != cells[i - 1].dataset:
            ax.axhline(n - i - 0.5, color="#bbbbbb", linewidth=0.5)
    finite = [abs(r.diff) + max(r.ours_sd if _finite(r.ours_sd) else 0, r.paper_sd if _finite(r.paper_sd) else 0)
              for r in cells if _finite(r.diff)]
    span = max(finite, default=1.0) * 1.1 or 1.0
    ax.set_xlim(-span, span)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="y", visible=False)


def forest_figure(rows: list[Row], ev, th: Thresholds, config: dict) -> Figure:
    """The forest plot and its caption."""
    t3 = _cells(rows, "T3", PERCENT_METRICS)
    t5 = _cells(rows, "T5", ("mae",))
    with _style():
        fig, ax = _new_figure()
        fig.delaxes(ax)
        height = ROW_IN * (len(t3) + len(t5)) + 1.6
        fig.set_size_inches(WIDTH_IN, height)
        grid = fig.add_gridspec(2, 1, height_ratios=[max(len(t3), 1) + 3, max(len(t5), 1) + 3])
        ax3, ax5 = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
        _panel(ax3, t3, "ours − paper (percentage points)", "Table 3: accuracy and F1")
        _panel(ax5, t5, "ours − paper (MAE, target units)", "Table 5: MAE")
        handles = {v: Line2D([], [], color=VERDICT_COLOURS[v], marker="o", linestyle="none") for v in VERDICTS
                   if any(r.verdict == v for r in t3 + t5)}
        handles["our sd (thick), the paper's sd (thin, capped)"] = Line2D([], [], color="#444444", linewidth=0.6)
        legend_below(fig, handles)
    spread = th["spread"]
    counted = [r for r in t3 + t5 if r.counts]
    beside = [r for r in t3 + t5 if not r.counts]
    n_records = len({p for r in t3 + t5 for p in r.paths})
    dirty = sum(r.dirty_records for r in t3 + t5)
    caption = " ".join([
        "Every accuracy and F1 cell of Table 3 and MAE cell of Table 5: ours minus the paper's (ours: the mean over "
        "seeds of each run's mean over its last 10 epochs; the final value of the novelty MLP stage), with our sample "
        "sd (thick bar) and the paper's sd (thin, capped) around the difference; one row per dataset × "
        "implementation × metric; colour: the cell's verdict (reproduced: |Δ| ≤ max("
        f"{spread['k']:g}·√(sd²+sd²), {spread['floor_points']:g} points, or for MAE "
        f"{100 * spread['floor_mae_relative']:g} % of the paper's value); config claims.spread).",
        f"Cells: {len(counted)} of the paper's tables ({_tally(counted)}); hollow diamonds: our faster GPU build "
        f"(tm_gpu_warp, a warp per clause) against the paper's CUDA numbers, beside ({_tally(beside)}).",
        f"Records: {n_records} run records" + (f", {dirty} of them from a modified checkout." if dirty else "."),
        "Details: paper_tables/claims.md.",
    ])
    return Figure("fig_claims_forest", fig, caption + "\n")


def _tally(rows: list[Row]) -> str:
    counts = {v: sum(1 for r in rows if r.verdict == v) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "none"


def build(results_dir, config: dict, out_dir, reference, records=None) -> list[str]:
    """Draw the forest plot (``fig_claims_forest``) of the claims page's rows into ``out_dir``; returns the files
    written."""
    rows, ev, th = verdict_rows(results_dir, config, reference, records)
    return save(forest_figure(rows, ev, th, config), catalog.output_paths("fig_claims_forest", out_dir))
