"""The paper's figures from the run records: time and MAE against the number of clauses (clause sweeps)
and over the epochs (main setting), one line per implementation.

Each figure function takes the records, the config dict and whether this host has a GPU and returns a
``Figure`` (a matplotlib figure and its caption). ``save`` writes PNG and PDF byte-stably: a fixed style
(independent of the user's matplotlibrc), no timestamps or software names in the files' metadata. A PDF embeds the
subset of its font that fontTools cuts, so its bytes also follow the installed fontTools release (the drawing, and
the PNG, do not): a rebuild after a fontTools upgrade may rewrite every PDF with nothing else changed.
An implementation without records is left out of the plot and named in the caption with the reason. Our GPU
kernels are two implementations, each a line of its own: tm_gpu, the paper's design (one thread per clause), and
tm_gpu_warp, a warp per clause (another kernel schedule, whose times are not the paper's design's). A GPU build's
records of each GPU model are a line of their own where a figure has records of several (one line never joins two
GPUs' times), labelled with the GPU's name. Times per epoch leave each run's first epoch out (store.STEADY_NOTE);
a point built on records run from a checkout with uncommitted code changes is named in the caption.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import matplotlib
import matplotlib.figure
import matplotlib.style
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import FixedLocator, FuncFormatter, LogFormatter, MaxNLocator, NullLocator

from ..experiments import plan
from ..store import HOST_RULE_SHORT, STEADY_NOTE, dirty
from . import render
from .records import busy_load_text, disturbed, epochs_frame, select
from .render import mean_std
from .tables import TIME, host

COLUMN_WIDTH_IN = 3.3
STYLE = {
    "figure.figsize": (COLUMN_WIDTH_IN, 2.3),
    "figure.dpi": 100,
    "savefig.dpi": 300,
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 6.5,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "legend.frameon": False,
    "svg.hashsalt": "asynctm",
    "pdf.compression": 6,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "path.simplify": False,
}
PDF_METADATA = {"CreationDate": None, "Creator": None, "Producer": None}
PNG_METADATA = {"Software": None}

IMPL_STYLE = {  # label, colour, marker
    "tm_gpu": ("ours, GPU", "#2ca02c", "o"),
    "tm_gpu_warp": ("ours, GPU, a warp per clause", "#17becf", "D"),
    "tm_cpu": ("ours, CPU", "#1f77b4", "s"),
    "pytm_indexed": ("pyTM indexed", "#d62728", "^"),
    "pytm_nonindexed": ("pyTM non-indexed", "#ff7f0e", "v"),
}
LEGEND_INSIDE_MAX = 4  # lines a legend inside the axes may name; with more it goes below them
# A GPU build on a second, third ... GPU model of one figure (the first keeps the styles above)
OTHER_GPU_STYLES = (("#9467bd", "P"), ("#8c564b", "X"), ("#e377c2", "*"))


@dataclass
class Figure:
    name: str
    figure: matplotlib.figure.Figure
    caption: str


@dataclass
class Series:
    """One implementation's line: x, mean, sample std (NaN with one seed), the records behind it."""

    impl: str
    gpu: str | None = None  # a GPU build: the GPU's name
    x: list = field(default_factory=list)
    mean: list = field(default_factory=list)
    std: list = field(default_factory=list)
    records: int = 0

    @property
    def name(self) -> str:
        return f"{self.impl} ({self.gpu})" if self.gpu else self.impl


def _by_gpu(impl: str, recs: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    """``recs`` split by GPU model (a GPU build; every other implementation: one group, ``None``)."""
    if impl not in plan.GPU_IMPLS or recs.empty:
        return [(None, recs)]
    gpu = recs["gpu_name"].map(lambda v: v if isinstance(v, str) else "")
    return [(g or None, recs[gpu == g]) for g in sorted(set(gpu))]


@contextmanager
def _style():
    """Matplotlib's defaults plus STYLE, whatever the user's matplotlibrc says (artists read rcParams
    when created and when saved, so figures are built and saved inside this)."""
    with matplotlib.style.context("default"), matplotlib.rc_context(STYLE):
        yield


def legend_below(fig, labelled: dict) -> None:
    """One legend below the figure's axes (``labelled``: label -> handle, in order), as many columns as the
    longest label lets fit (at most 4), the figure made taller by its rows."""
    if not labelled:
        return
    width, height = fig.get_size_inches()
    col_in = max(1.7, 0.05 * max(map(len, labelled)) + 0.3)  # inches per column at the legend's 6.5 pt
    ncol = max(1, min(4, len(labelled), int(width // col_in)))
    fig.legend(list(labelled.values()), list(labelled), loc="outside lower center", ncol=ncol)
    fig.set_size_inches(width, height + 0.25 * -(-len(labelled) // ncol))


def _new_figure():
    """A figure on an Agg canvas of its own (no pyplot: no global figure state, no GUI backend)."""
    fig = matplotlib.figure.Figure(layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _spans_decades(values) -> bool:
    v = [x for x in values if render.finite(x) and x > 0]
    return bool(v) and max(v) / min(v) > 10


def _clause_label(c: int) -> str:
    return f"{c // 1000}k" if c >= 1000 and c % 1000 == 0 else str(c)


def _draw(ax, series: list[Series], xlabel: str, ylabel: str, log_x2: bool, markers: bool,
          from_zero: bool, claims=()) -> None:
    """Lines (markers and error bars for sweeps, bands for epochs); log y where the values span more than a
    decade, else from zero when ``from_zero`` (times); log2 x with a tick per clause count for sweeps."""
    gpus = sorted({s.gpu for s in series if s.gpu})
    for s in series:
        label, colour, marker = IMPL_STYLE[s.impl]
        if len(gpus) > 1 and s.gpu:  # several GPU models: each its own line, named
            own = sorted({x.gpu for x in series if x.impl == s.impl and x.gpu})
            i = own.index(s.gpu)
            if i:  # the build's second, third ... GPU: another style than its first
                offset = plan.GPU_IMPLS.index(s.impl) if s.impl in plan.GPU_IMPLS else 0
                colour, marker = OTHER_GPU_STYLES[(i - 1 + offset) % len(OTHER_GPU_STYLES)]
            label = f"{label} ({s.gpu.removeprefix('NVIDIA ')})"
        x, mean, std = np.asarray(s.x, float), np.asarray(s.mean, float), np.asarray(s.std, float)
        ax.plot(x, mean, color=colour, marker=marker if markers else None, label=label)
        if np.isfinite(std).any():  # several seeds: ± one sample standard deviation
            spread = np.nan_to_num(std)
            if markers:
                ax.errorbar(x, mean, yerr=spread, fmt="none", ecolor=colour, capsize=2, lw=0.8)
            else:
                ax.fill_between(x, mean - spread, mean + spread, color=colour, alpha=0.2, lw=0)
    for claim in claims:  # the paper's claimed behaviour, drawn beside ours (a grey dashed line or a marker)
        ax.plot(claim.x, claim.y, color="0.45", ls="--" if len(claim.x) > 1 else "none", lw=1.0,
                marker=None if len(claim.x) > 1 else "*", markersize=9, label=claim.label, zorder=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if _spans_decades([v for s in series for v in s.mean]):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        # the minor ticks matplotlib labels (where an axis spans few decades) as plain numbers too, not 6x10^1
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    elif from_zero and series:
        ax.set_ylim(bottom=0)
    if log_x2:
        ax.set_xscale("log", base=2)
        ticks = sorted({int(v) for s in series for v in s.x})
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([_clause_label(t) for t in ticks], rotation=45 if len(ticks) > 6 else 0)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if len(series) + len(claims) > LEGEND_INSIDE_MAX:  # many lines: below the axes, where the legend hides no point
        handles, labels = ax.get_legend_handles_labels()
        legend_below(ax.figure, dict(zip(labels, handles)))
    elif series:
        ax.legend(loc="best")
    else:
        ax.text(0.5, 0.5, "no records", ha="center", va="center", transform=ax.transAxes)


def _gaps(config, experiment, impls, have: set[str], host_gpu: bool) -> list[str]:
    """'impl (reason)' for each implementation the figure asks for (``impls``) that has no line; for
    regression also the paper's indexed machine, which cannot run."""
    regression = experiment in config["experiments"] and plan.task(config, experiment) == "regression"
    wanted = set(impls) | ({"pytm_indexed"} if regression else set())
    return [f"{impl} ({plan.gap_reason(config, experiment, impl, host_gpu, requested=list(impls))})"
            for impl in plan.TM_IMPLS if impl in wanted and impl not in have]


def _concat(frames: list[pd.DataFrame], records: pd.DataFrame) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames).sort_values("path") if frames else records[:0]


def _caption(title: str, paper_caption: str, what: str, series: list[Series], not_run: list[str],
             missing: list[str], used: pd.DataFrame, config: dict, timed: bool = False,
             dirty_points: list[str] | None = None) -> str:
    counts = ", ".join(f"{s.name} {s.records}" for s in series) or "none"
    lines = [title, f"Counterpart of the paper's figure \"{paper_caption.rstrip('.')}\".", what,
             f"Records used: {len(used)} complete run records at {config.get('scale', 'paper')} scale "
             f"({counts})."]
    if not_run:
        lines.append("Not run: " + "; ".join(not_run) + ".")
    if missing:
        lines.append("Missing points: " + "; ".join(missing) + ".")
    n_dirty = sum(dirty(v) for v in used["git_dirty"]) if "git_dirty" in used else 0
    if n_dirty:
        lines.append(f"Dirty tree: {n_dirty} of {len(used)} records ran with uncommitted code changes "
                     "(provenance.git_dirty > 0)" + (": " + "; ".join(dirty_points) if dirty_points else "") + ".")
    busy = disturbed(used) if timed else None
    if busy is not None and busy.any():
        lines.append(f"Timed on a busy machine: {int(busy.sum())} of {len(used)} records ({busy_load_text(used[busy])}"
                     "), so their times are longer than a quiet machine's: "
                     + ", ".join(sorted(used.loc[busy, "path"])) + ".")
    lines.append(render.hardware(used))
    return "\n".join(lines) + "\n"


def _time_growth(series: list[Series], hosts: dict[int, set]) -> str:
    """A caption's sentence: each line's time at its most clauses over its time at its fewest (the paper's
    "almost constant time" claim is about this ratio), where the line's records come from one host (``hosts``:
    per line, the :func:`~.tables.host` of its records, as the tables' time ratios pair them)."""
    parts = []
    for s in series:
        if len(s.x) < 2:
            continue
        lo, hi = int(np.argmin(s.x)), int(np.argmax(s.x))
        n = len(hosts.get(id(s), ()))
        parts.append(f"{s.name} {s.mean[hi] / s.mean[lo]:.2f}x ({s.x[lo]} to {s.x[hi]} clauses)" if n == 1 else
                     f"{s.name} not computed (records from {n} hosts)")
    return (" Time per epoch at the most clauses over the time at the fewest, per line whose records come from "
            f"{HOST_RULE_SHORT}: " + "; ".join(parts) + "." if parts else "")


def _first_epochs(series: list[Series], firsts: dict[int, list[tuple[float, float]]]) -> str:
    """A caption's sentence keeping the left-out first epochs in view: per line, the range of its points' first
    epoch (mean over seeds) and of that over the later epochs' mean (``firsts``: per line, (first, later))."""
    parts = []
    for s in series:
        pairs = [(f, r) for f, r in firsts.get(id(s), []) if render.finite(f) and render.finite(r) and r > 0]
        if not pairs:
            continue
        lo, hi = min(f for f, _ in pairs), max(f for f, _ in pairs)
        ratios = [f / r for f, r in pairs]
        span = render.sig(lo, 2) if lo == hi else f"{render.sig(lo, 2)}-{render.sig(hi, 2)}"
        low, high = render.speedup_text(min(ratios)), render.speedup_text(max(ratios))
        times = f"{low}x" if low == high else f"{low}-{high}x"
        parts.append(f"{s.name} {span} s ({times} the later epochs' mean)")
    return " First epochs, left out: " + "; ".join(parts) + "." if parts else ""


# The paper's claims on the time of its design (one thread per clause) across clauses, in its words: "almost
# constant for reasonable clause amounts (employing from 20 to 7,000 clauses on a Tesla V100 GPU)" and "for
# sufficiently large clause numbers, computation time increases approximately proportionally" (abstract); on
# SemEval, "the execution time increases only by 40% when the number of clauses goes from 20 to 2,560" (Sec. 4.3;
# also paper_tables/reference/paper_numbers.csv). The claims page judges them (config claims).
PAPER_FLAT_UP_TO = 7000
PAPER_INCREASE = {"semeval": (20, 2560, 1.40)}


@dataclass
class Claim:
    x: list
    y: list
    label: str


def _paper_claims(series: list[Series], experiment: str) -> list[Claim]:
    """The paper's claimed shape for its design, anchored at a paper's-design line's (tm_gpu) smallest point:
    flat up to PAPER_FLAT_UP_TO clauses, then proportional; SemEval's +40 % as a marker. None without that line."""
    lines = [s for s in series if s.impl == "tm_gpu" and s.x]
    if not lines:
        return []
    line = max(lines, key=lambda s: (len(s.x), -min(s.x)))  # one GPU's line: the one with most points
    x0, y0 = min(zip(line.x, line.mean))
    top = max(max(s.x) for s in series if s.x)
    xs = sorted({x0, *[c for c in (PAPER_FLAT_UP_TO, top) if c > x0]})
    ys = [y0 * max(1.0, x / max(PAPER_FLAT_UP_TO, x0)) for x in xs]
    claims = [Claim(xs, ys, f"the paper's claim: flat to {PAPER_FLAT_UP_TO:,} clauses, then proportional")]
    if experiment in PAPER_INCREASE:
        lo, hi, factor = PAPER_INCREASE[experiment]
        at = dict(zip(line.x, line.mean))
        if lo in at:
            claims.append(Claim([hi], [at[lo] * factor], f"the paper's claim: +{factor - 1:.0%} from {lo} to {hi:,}"))
    return claims


def _claims_caption(claims: list[Claim]) -> str:
    if not claims:
        return ""
    return (" Grey: the paper's claim for its design, anchored at the first point of our tm_gpu line with the most "
            "points: " + "; ".join(c.label.removeprefix("the paper's claim: ") for c in claims) + ".")


def _versus_clauses(records, config, host_gpu, name, experiment, column, ylabel, title, paper_caption, what,
                    from_zero=True):
    """A clause-sweep figure: ``column`` (one value per record) against clauses, one line per sweep impl."""
    sweep = plan.sweep(config, experiment)
    if sweep is None:
        sweep = plan.Sweep(experiment, (), (), (), 0, ())
    series, used, missing, dirty_points = [], [], [], []
    hosts: dict[int, set] = {}  # per line (id of its Series): the hosts of its records
    firsts: dict[int, list] = {}  # per line: (first epoch, later epochs' mean) of each point, means over seeds
    for impl in sweep.impls:
        lines: dict[str | None, Series] = {}
        absent = []
        for clauses, params in zip(sweep.clauses, sweep.params):
            if not sweep.runs(impl, clauses):
                continue
            found = False
            for gpu, recs in _by_gpu(impl, select(records, experiment, impl, params, sweep.seeds)):
                mean, std = mean_std(recs[column].tolist() if column in recs else [])
                if not render.finite(mean):
                    continue
                s = lines.setdefault(gpu, Series(impl, gpu=gpu))
                s.x.append(clauses)
                s.mean.append(mean)
                s.std.append(std)
                s.records += len(recs)
                hosts.setdefault(id(s), set()).update(host(r) for r in recs.itertuples())
                if column == TIME:
                    firsts.setdefault(id(s), []).append((mean_std(recs["train_s_first"].tolist())[0], mean))
                n_dirty = sum(dirty(v) for v in recs["git_dirty"]) if "git_dirty" in recs else 0
                if n_dirty:
                    dirty_points.append(f"{s.name} at {clauses} clauses ({n_dirty} of {len(recs)})")
                used.append(recs)
                found = True
            if not found:
                absent.append(f"{impl} at {clauses} clauses (no record)")
        if lines:  # an implementation with no point at all is a gap, named in the caption
            series += [lines[k] for k in sorted(lines)]
            missing += absent
    claims = _paper_claims(series, experiment) if column == TIME else []
    with _style():
        fig, ax = _new_figure()
        _draw(ax, series, "clauses (log₂ scale)", ylabel, log_x2=True, markers=True, from_zero=from_zero, claims=claims)
    not_run = _gaps(config, experiment, sweep.impls, {s.impl for s in series}, host_gpu)
    if sweep.clauses:
        limits = "".join(f"; {impl} up to {limit} clauses (config sweeps.{experiment}.max_clauses: beyond it a "
                         f"run costs hours, see plan --estimate)" for impl, limit in sweep.max_clauses
                         if impl in sweep.impls and limit < max(sweep.clauses))
        setting = (f"Sweep: clauses {', '.join(map(str, sweep.clauses))}{limits}; {sweep.epochs} epochs per run; "
                   f"seeds {', '.join(map(str, sweep.seeds))}; error bars: ± sample standard deviation over seeds "
                   "where a point has several.")
    else:
        setting = f"The config has no clause sweep for {experiment}."
    if column.startswith("train_s"):
        setting += _time_growth(series, hosts) + _first_epochs(series, firsts) + _claims_caption(claims)
    return Figure(name, fig, _caption(title, paper_caption, f"{what} {setting}", series, not_run, missing,
                                      _concat(used, records), config, timed=column.startswith("train_s"),
                                      dirty_points=dirty_points))


def _over_epochs(records, config, host_gpu, name, experiment, column, ylabel, title, paper_caption, what,
                 from_zero=True):
    """A main-setting figure: the per-epoch ``column`` against the epoch, one line per implementation."""
    configured = experiment in config["experiments"]
    main = plan.main_params(config, experiment) if configured else ""
    impls = plan.tm_impls(config, experiment) if configured else []
    series, used, reduced, dirty_points = [], [], [], []
    for impl in impls:
        # each implementation's own main-setting records: a reduced protocol (config reduced) runs fewer
        recs = select(records, experiment, impl, plan.main_params(config, experiment, impl),
                      plan.run_seeds(config, experiment, impl))
        drawn = len(series)
        for gpu, group_recs in _by_gpu(impl, recs):
            epochs = epochs_frame(group_recs)
            if group_recs.empty or column not in epochs:
                continue
            s = Series(impl, gpu=gpu, records=len(group_recs))
            n_dirty = sum(dirty(v) for v in group_recs["git_dirty"]) if "git_dirty" in group_recs else 0
            if n_dirty:
                dirty_points.append(f"{s.name} ({n_dirty} of {len(group_recs)})")
            for epoch, group in epochs.groupby("epoch", sort=True):
                mean, std = mean_std(group[column].tolist())
                s.x.append(int(epoch))
                s.mean.append(mean)
                s.std.append(std)
            series.append(s)
            used.append(group_recs)
        if len(series) == drawn:
            continue
        labels = sorted({str(v) for v in recs["protocol_scope"] if isinstance(v, str) and v})
        if labels:
            reduced.append(f"{impl} ran a reduced protocol: {'; '.join(labels)}.")
    with _style():
        fig, ax = _new_figure()
        _draw(ax, series, "epoch", ylabel, log_x2=False, markers=False, from_zero=from_zero)
    used = _concat(used, records)
    not_run = _gaps(config, experiment, impls, {s.impl for s in series}, host_gpu)
    setting = (f"The config has no experiment {experiment}." if not configured else
               f"Main setting {main}; seeds {', '.join(map(str, plan.seeds(config)))}; band: ± sample "
               "standard deviation over seeds where there are several." + "".join(f" {r}" for r in reduced))
    return Figure(name, fig, _caption(title, paper_caption, f"{what} {setting}", series, not_run, [], used,
                                      config, timed=column.startswith("train_s"), dirty_points=dirty_points))


TIME_WHAT = (f"Execution time: training time per epoch ({STEADY_NOTE}; a run of one epoch keeps it). Each GPU build "
             "is a line of its own: tm_gpu, the paper's design (one thread per clause), and tm_gpu_warp, a warp per "
             "clause.")
EPOCH_TIME_WHAT = ("Execution time: training time of each epoch (epochs[].train_s). Epoch 1 also compiles, allocates "
                   "and warms up: the tables' s/epoch leave it out.")


def _time_vs_clauses(records, config, host_gpu, name, experiment, dataset, paper_caption, note="") -> Figure:
    """Training time per epoch against the number of clauses (the paper's execution-time figures)."""
    return _versus_clauses(records, config, host_gpu, name, experiment, TIME, "training time per epoch (s)",
                           f"Execution time vs. number of clauses, {dataset}.", paper_caption, note + TIME_WHAT)


# The figures by name: each takes (records, config, host_gpu) and returns a Figure.
fig_bbc_time_vs_clauses = partial(_time_vs_clauses, name="fig_bbc_time_vs_clauses", experiment="bbc_sport",
                                  dataset="BBC Sport", paper_caption="Execution time vs. #clauses on BBC Sports.")
fig_semeval_time_vs_clauses = partial(_time_vs_clauses, name="fig_semeval_time_vs_clauses", experiment="semeval",
                                      dataset="SemEval", paper_caption="Execution time vs. #clauses on SEMEVAL.")
fig_bike_time_vs_clauses = partial(_time_vs_clauses, name="fig_bike_time_vs_clauses", experiment="bike_sharing",
                                   dataset="Bike Sharing", paper_caption="Execution time vs. #clauses on Bike Sharing.")
fig_imdb_time_vs_clauses = partial(
    _time_vs_clauses, name="fig_imdb_time_vs_clauses", experiment="imdb", dataset="IMDb",
    paper_caption="Execution time vs. #clauses on IMDb.",
    note="The paper's IMDb figure is commented out of its source; its Sec. 4.5 cites it as Fig. 7 (up to 15,000 "
         "clauses). ")
fig_bike_mae_vs_clauses = partial(
    _versus_clauses, name="fig_bike_mae_vs_clauses", experiment="bike_sharing", column="mae",
    ylabel="test MAE (bikes)", title="Test MAE vs. number of clauses, Bike Sharing.",
    paper_caption="MAE vs. #clauses on Bike Sharing.",
    what="MAE: test mean absolute error after the last epoch (final.mae; mean over seeds).", from_zero=False)
fig_semeval_time_per_epoch = partial(
    _over_epochs, name="fig_semeval_time_per_epoch", experiment="semeval", column="train_s",
    ylabel="training time (s)", title="Training time of each epoch, SemEval.",
    paper_caption="Per Epoch Execution time over epochs on SEMEVAL.", what=EPOCH_TIME_WHAT)
fig_bike_time_per_epoch = partial(
    _over_epochs, name="fig_bike_time_per_epoch", experiment="bike_sharing", column="train_s",
    ylabel="training time (s)", title="Training time of each epoch, Bike Sharing.",
    paper_caption="Per Epoch Execution time over epochs on Bike Sharing.", what=EPOCH_TIME_WHAT)
fig_bike_mae_over_epochs = partial(
    _over_epochs, name="fig_bike_mae_over_epochs", experiment="bike_sharing", column="mae",
    ylabel="test MAE (bikes)", title="Test MAE after each epoch, Bike Sharing.",
    paper_caption="MAE over epochs on Bike Sharing.",
    what="MAE: test mean absolute error after each epoch (epochs[].mae).", from_zero=False)

FIGURE_FUNCTIONS = {f.keywords["name"]: f for f in (
    fig_bbc_time_vs_clauses, fig_semeval_time_per_epoch, fig_semeval_time_vs_clauses, fig_bike_mae_vs_clauses,
    fig_bike_time_vs_clauses, fig_bike_mae_over_epochs, fig_bike_time_per_epoch, fig_imdb_time_vs_clauses)}


def save(figure: Figure, paths: dict) -> list[str]:
    """The figure's PNG and PDF without timestamps or software names (the same figure gives the same bytes) and its
    caption, each written atomically to ``paths`` (by role: png, pdf, caption); returns the paths, sorted."""
    from ..io import atomic_open, write_text_atomic

    with _style():
        for fmt, metadata in (("png", PNG_METADATA), ("pdf", PDF_METADATA)):
            with atomic_open(paths[fmt], "wb") as fh:
                figure.figure.savefig(fh, format=fmt, metadata=metadata)
    write_text_atomic(paths["caption"], figure.caption)
    return sorted(map(str, paths.values()))
