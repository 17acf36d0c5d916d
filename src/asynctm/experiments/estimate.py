"""How long the runs the configuration asks for take, estimated from the timings of the runs already made.

A missing TM run's time is estimated from the records of the same dataset (and protocol) and implementation
under ``results_dir`` (paper scale; ``results/smoke`` is never used):

    time = overhead + epochs x per-epoch time x (clauses / their clauses) x (training examples / theirs)

where the per-epoch time is that of the records at the nearest clause count (by ratio), averaged over their
seeds, counting training and the per-epoch test evaluation (``timing.train_s_total + eval_s_total``, over
their epochs), and the overhead is the rest of their wall time (loading data, set-up, writing). Both
libraries visit every clause of every class for every training example, so a linear scaling in clauses and
examples is the first-order model; it is rough far from the measured clause count (the records' clause
count is printed beside each estimate). Between two measured clause counts (of one training-set size) the
per-epoch time and the overhead are interpolated linearly in clauses instead, which also holds where the time
does not grow with the clauses (the paper's GPU design below a full GPU). Where no record of that dataset and
implementation exists, the committed benchmark results (``estimate_benchmarks``, e.g.
``benchmarks/results/*.json``: median epoch, training only, possibly on a subsample of the training examples) are
used the same way; otherwise the estimate is unknown. SVM and novelty-MLP runs take the mean wall time of their
records of the same dataset.

The estimate is for the host the records ran on (named in the report); ``tm_cpu`` runs use all cores, the
pyTsetlinMachine and MLP runs one. :func:`budget` decides which missing runs the default target starts
(config ``run_budget_hours``); :func:`render` prints ``plan --estimate`` and ``plan --status``, and
:func:`render_busy` ``plan --busy``: the present records whose time was taken on a busy machine.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import store
from . import plan

# Benchmark settings (benchmarks/bench_tm.py) whose dataset record does not name its dataset and protocol.
_BENCH_DATASETS = {"apple": ("wsd_apple", "paper"), "bike": ("bike_sharing", "paper"),
                   "semeval": ("semeval", "paper"), "imdb": ("imdb", "paper")}
BENCH_TM = "benchmarks/bench_tm.py"  # the ``generated_by`` of the benchmark records read here
ONE_THREAD = ("pytm_indexed", "pytm_nonindexed", "mlp_novelty")


@dataclass
class Reference:
    """Measured timings of one implementation on one dataset at one clause count."""

    clauses: int | None
    epoch_s: float
    overhead_s: float
    n_train: int | None
    source: str  # "records" or "benchmark <name>"
    count: int
    cpu: str | None
    between: tuple[int, int] | None = None  # interpolated between these measured clause counts


@dataclass
class Estimate:
    seconds: float | None  # None: unknown
    basis: str


@dataclass
class Timings:
    """The references for estimates: ``tm[(dataset, protocol, impl)]``, ``other[(dataset, protocol, kind)]``,
    and the training-set sizes known from records or processed datasets."""

    tm: dict = field(default_factory=dict)
    other: dict = field(default_factory=dict)
    n_train: dict = field(default_factory=dict)
    cpus: set = field(default_factory=set)


def _key(ds: dict) -> tuple[str, str]:
    return ds.get("name"), ds.get("protocol")


def _records(results_dir: Path):
    """The paper-scale records below ``results_dir`` (the ablation's left out), each read through the record
    store's gate (asynctm.store): a refused record raises its one-line RecordError instead of estimating anything."""
    for _, rec in store.read_records(results_dir):
        if rec["scale"] == "paper":
            yield rec


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_timings(results_dir, benchmarks_dir=None, data_dir=None) -> Timings:
    """Collect the references from the records under ``results_dir``, the benchmark JSONs in
    ``benchmarks_dir`` (None: none) and the training-set sizes of the processed datasets in ``data_dir``."""
    t = Timings()
    groups: dict = {}
    for rec in _records(Path(results_dir)):
        ds = rec.get("dataset") or {}
        key = _key(ds)
        if ds.get("max_train") is None and _finite(ds.get("n_train")):
            t.n_train[key] = int(ds["n_train"])
        prov = rec.get("provenance") or {}
        wall = prov.get("wall_s")
        if rec.get("kind") == "tm":
            timing, epochs = rec.get("timing") or {}, rec.get("epochs") or []
            train, evaluate = timing.get("train_s_total"), timing.get("eval_s_total", 0.0)
            clauses = (rec.get("hyperparameters") or {}).get("n_clauses")
            if not (epochs and _finite(train) and _finite(evaluate) and _finite(clauses)):
                continue
            overhead = max(0.0, wall - train - evaluate) if _finite(wall) else 0.0
            groups.setdefault((*key, rec["impl"], int(clauses)), []).append(
                ((train + evaluate) / len(epochs), overhead, ds.get("n_train"), prov.get("cpu_model")))
        elif rec.get("kind") in ("svm", "mlp_novelty") and _finite(wall):
            t.other.setdefault((*key, rec["kind"]), []).append(wall)
            t.cpus.add(prov.get("cpu_model"))
    for (name, protocol, impl, clauses), rows in groups.items():
        n = len(rows)
        cpus = sorted({r[3] for r in rows if r[3]})
        t.cpus.update(cpus)
        t.tm.setdefault((name, protocol, impl), []).append(Reference(
            clauses, sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n,
            rows[0][2] if _finite(rows[0][2]) else None, "records", n, "; ".join(cpus) or None))
    if benchmarks_dir is not None:
        _load_benchmarks(Path(benchmarks_dir), t)
    if data_dir is not None:
        for meta in sorted(Path(data_dir).glob("processed/*/*/meta.json")):
            try:
                counts = json.loads(meta.read_text()).get("counts") or {}
            except (OSError, ValueError):
                continue
            if _finite(counts.get("train")):
                t.n_train.setdefault((meta.parent.parent.name, meta.parent.name), int(counts["train"]))
    return t


def _bench_impl(result: dict, threads: int) -> str | None:
    meta = result.get("metadata") or {}
    if meta.get("peer") == "asynctm" and meta.get("backend") == "cpu":
        return "tm_cpu" if meta.get("threads") == threads else None
    if meta.get("peer") == "pytm":
        return "pytm_indexed" if meta.get("indexed") else "pytm_nonindexed"
    return None


def _load_benchmarks(folder: Path, t: Timings) -> None:
    """The newest benchmark measurement of each (dataset, implementation) not covered by records."""
    newest: dict = {}
    for path in sorted(folder.glob("*.json")):
        try:
            bench = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        # Only benchmarks/bench_tm.py's records (CPU, ours and pyTsetlinMachine); the folder also holds the GPU
        # campaign's benchmark and one-off measurements, in other layouts.
        if not isinstance(bench, dict) or bench.get("generated_by") != BENCH_TM or not isinstance(
                bench.get("settings"), list):
            continue
        when = str(bench.get("time_utc") or bench.get("date_utc") or "")
        cpu = (bench.get("cpu") or {}).get("model")
        for setting in bench["settings"]:
            ds = setting.get("dataset") or {}
            src = ds.get("source") or {}
            key = ((src["dataset"], src["protocol"]) if "dataset" in src and "protocol" in src
                   else _BENCH_DATASETS.get(setting.get("setting")))
            clauses = (setting.get("hyperparameters") or {}).get("n_clauses")
            if key is None or not _finite(clauses):
                continue
            results = setting.get("results") or []
            threads = max([(r.get("metadata") or {}).get("threads") or 0 for r in results
                           if (r.get("metadata") or {}).get("peer") == "asynctm"] or [0])
            for r in results:
                impl = _bench_impl(r, threads)
                if impl is None or not _finite(r.get("median_epoch_s")):
                    continue
                if (*key, impl) in t.tm and t.tm[(*key, impl)][0].source == "records":
                    continue
                full = ds.get("max_train") is None and not ds.get("subsample")
                if full and _finite(ds.get("n_train")):
                    t.n_train.setdefault(key, int(ds["n_train"]))
                ref = Reference(int(clauses), float(r["median_epoch_s"]), 0.0,
                                int(ds["n_train"]) if _finite(ds.get("n_train")) else None,
                                f"benchmark {path.stem}", 1, cpu)
                if when >= newest.get((*key, impl, int(clauses)), ("", None))[0]:
                    newest[(*key, impl, int(clauses))] = (when, ref)
    for (name, protocol, impl, _), (_, ref) in sorted(newest.items()):
        if not any(r.source == "records" for r in t.tm.get((name, protocol, impl), [])):
            t.tm.setdefault((name, protocol, impl), []).append(ref)
            t.cpus.add(ref.cpu)


def _nearest(refs: list[Reference], clauses: int) -> Reference:
    return min(refs, key=lambda r: (abs(math.log(clauses / r.clauses)), -r.clauses))


def _between(refs: list[Reference], clauses: int) -> Reference | None:
    """A reference at ``clauses`` interpolated linearly between the nearest measured counts below and above it (of one
    training-set size and source); None where no two such counts bracket it."""
    below = max((r for r in refs if r.clauses < clauses), key=lambda r: r.clauses, default=None)
    above = min((r for r in refs if r.clauses > clauses), key=lambda r: r.clauses, default=None)
    if below is None or above is None or (below.n_train, below.source) != (above.n_train, above.source):
        return None
    w = (clauses - below.clauses) / (above.clauses - below.clauses)
    return Reference(clauses, below.epoch_s + w * (above.epoch_s - below.epoch_s),
                     below.overhead_s + w * (above.overhead_s - below.overhead_s), below.n_train,
                     below.source, below.count + above.count, below.cpu, between=(below.clauses, above.clauses))


def estimate_run(config: dict, run: dict, timings: Timings) -> Estimate:
    """The estimated wall time of one run (``plan.requested_runs`` entry)."""
    if plan.is_smoke(config):
        return Estimate(None, "smoke scale: not estimated (the timings are of paper-scale runs)")
    exp = plan.experiment(config, run["experiment"])
    key = (exp["dataset"], exp["protocol"])
    if run["kind"] in ("svm", "mlp_novelty"):
        walls = timings.other.get((*key, run["kind"]))
        if not walls:
            return Estimate(None, f"no {run['kind']} record of {exp['dataset']}")
        return Estimate(sum(walls) / len(walls), f"mean of {len(walls)} record(s)")
    refs = timings.tm.get((*key, run["impl"]))
    if not refs:
        return Estimate(None, f"no {run['impl']} record of {exp['dataset']}")
    p = plan.parse_tm_params(run["params"])
    ref = _between(refs, p["clauses"]) or _nearest(refs, p["clauses"])
    n = timings.n_train.get(key)
    if ref.n_train is None or n is None:
        return Estimate(None, f"{ref.source}: training-set size unknown (prepare the data first)")
    scale = p["clauses"] / ref.clauses * n / ref.n_train
    seconds = ref.overhead_s + p["epochs"] * ref.epoch_s * scale
    what = f"{ref.count} record(s)" if ref.source == "records" else f"{ref.source}, training only"
    basis = (f"{what} at n{ref.clauses}" if ref.between is None
             else f"{what} at n{ref.between[0]} and n{ref.between[1]}, interpolated")
    if n != ref.n_train:
        basis += f" on {ref.n_train} examples"
    return Estimate(seconds, basis + (f", x{scale:.3g}" if abs(scale - 1) > 1e-9 else ""))


def run_threads(config: dict, impl: str, cores: int, experiment: str | None = None) -> int:
    if impl in ONE_THREAD or impl in plan.GPU_IMPLS:
        return 1
    if impl == "tm_cpu":
        return min(cores, config.get("cpu_threads") or cores)
    # svm: ThunderSVM's CPU build on every core; scikit-learn, where the experiment names it, on one
    if experiment is not None and plan.experiment(config, experiment).get("svm_library") == "sklearn":
        return 1
    return cores


# -- status of every requested record ----------------------------------------------------------------------

@dataclass
class Row:
    """One (experiment, impl, params) group of requested records."""

    experiment: str
    impl: str
    params: str
    kind: str
    present: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    each: Estimate | None = None
    started: list = field(default_factory=list)  # missing seeds the default target starts (within budget)

    @property
    def missing_s(self) -> float | None:
        return None if self.each is None or self.each.seconds is None else self.each.seconds * len(self.missing)


def status(config: dict, runs: list[dict], timings: Timings, exists=None) -> list[Row]:
    """The requested records grouped by (experiment, impl, params), in plan order, with seeds present and
    missing and the estimate of one missing run."""
    exists = exists or (lambda path: Path(path).is_file())
    rows: dict = {}
    for run in runs:
        key = (run["experiment"], run["impl"], run["params"])
        row = rows.setdefault(key, Row(*key, run["kind"]))
        (row.present if exists(plan.record_path(config, run)) else row.missing).append(run["seed"])
    for row in rows.values():
        if row.missing:
            row.each = estimate_run(config, {"experiment": row.experiment, "impl": row.impl,
                                             "params": row.params, "kind": row.kind}, timings)
    def order(row):
        p = plan.parse_tm_params(row.params.partition(".")[2] if row.kind == "mlp_novelty" else row.params) \
            if row.kind != "svm" else {"clauses": 0, "epochs": 0}
        tm_impl = row.params.partition(".")[0] if row.kind == "mlp_novelty" else ""
        return row.experiment, row.impl, tm_impl, p["clauses"], p["epochs"]

    return sorted(rows.values(), key=order)


def budget(config: dict, rows: list[Row]) -> None:
    """Mark (``Row.started``) the missing runs the default target starts: at paper scale, cheapest estimate
    first while their estimated total stays within ``run_budget_hours`` (runs without an estimate never; an
    MLP stage only with its TM run); at smoke scale, or with an infinite budget, every missing run."""
    for row in rows:
        row.started = []
    hours = float(config.get("run_budget_hours", 0.0))
    if plan.is_smoke(config) or math.isinf(hours):
        for row in rows:
            row.started = list(row.missing)
        return
    left = hours * 3600.0
    runs = sorted(((row.each.seconds, row.kind == "mlp_novelty", i, seed) for i, row in enumerate(rows)
                   if row.missing and row.each.seconds is not None for seed in row.missing))
    tm_ready = {(r.experiment, r.impl, r.params, s) for r in rows for s in r.present}
    for mlp_pass in (False, True):
        for seconds, is_mlp, i, seed in runs:
            row = rows[i]
            if is_mlp != mlp_pass or seconds > left:
                continue
            if is_mlp:
                tm_impl, _, tm_params = row.params.partition(".")
                if (row.experiment, tm_impl, tm_params, seed) not in tm_ready:
                    continue
            left -= seconds
            row.started.append(seed)
            tm_ready.add((row.experiment, row.impl, row.params, seed))
    for row in rows:
        row.started.sort()


def started_paths(config: dict, rows: list[Row]) -> set[str]:
    return {plan.record_path(config, {"experiment": r.experiment, "impl": r.impl, "params": r.params, "seed": s})
            for r in rows for s in r.started}


# -- text ------------------------------------------------------------------------------------------------------

def budget_note(config: dict, rows: list[Row]) -> str:
    """What the default target runs and what it leaves, per experiment with the command that runs it: printed
    by the workflow at the start (workflow/rules/common.smk)."""
    missing = sum(len(r.missing) for r in rows)
    started = [(r, s) for r in rows for s in r.started]
    if not missing:
        return f"Every requested run has its record ({sum(len(r.present) for r in rows)}); nothing to train."
    known = [r.each.seconds for r, _ in started if r.each.seconds is not None]
    unknown = len(started) - len(known)
    cost = ([f"estimated {duration(sum(known))}"] if known else []) + ([f"{unknown} with no estimate"] if unknown
                                                                       else [])
    hours = float(config.get("run_budget_hours", 0.0))
    out = [f"{missing} of {sum(len(r.present) + len(r.missing) for r in rows)} requested runs have no record; the "
           f"default target starts {len(started)} of them ({'; '.join([*cost, f'run_budget_hours: {hours:g}'])})."]
    left: dict = {}
    for r in rows:
        n = len(r.missing) - len(r.started)
        if n <= 0:
            continue
        e = left.setdefault(r.experiment, {"runs": 0, "unknown": 0, "s": 0.0, "targets": set()})
        e["runs"] += n
        e["targets"].add(target_of(config, r))
        if r.each.seconds is None:
            e["unknown"] += n
        else:
            e["s"] += r.each.seconds * n
    if left:
        out.append("Not started (over the budget, or no estimate yet), per experiment; each runs with the command:")
        for name, e in sorted(left.items()):
            cost = [f"estimated {duration(e['s'])}"] if e["runs"] > e["unknown"] else []
            cost += [f"{e['unknown']} with no estimate"] if e["unknown"] else []
            out.append(f"  {name}: {e['runs']} runs, {', '.join(cost)}  ->  .venv/bin/snakemake --cores all "
                       + " ".join(sorted(e["targets"])))
        out.append("  all of them: .venv/bin/snakemake --cores all --config run_budget_hours=inf   (per run: "
                   "python -m asynctm.experiments plan --estimate)")
    return "\n".join(out)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def seed_list(seeds: list[int]) -> str:
    seeds = sorted(seeds)
    if not seeds:
        return "-"
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def target_of(config: dict, row: Row) -> str:
    """The Snakemake target that runs a group: its experiment's, else its sweep's."""
    if row.kind != "tm" or row.params == plan.main_params(config, row.experiment, row.impl):
        return f"exp_{row.experiment}"
    return f"sweep_{row.experiment}"


def _table(header: list[str], lines: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in lines)) if lines else len(h) for i, h in enumerate(header)]

    def fmt(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
                         ).rstrip()

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in lines)]


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


def totals(config: dict, rows: list[Row], cores: int) -> list[str]:
    """Per implementation: missing runs, how many have no estimate, estimated run hours and wall hours on
    ``cores`` cores: runs on fewer threads than cores share the machine, and no schedule ends before the
    longest single run does (one 1-thread run of 1 h takes 1 h on any number of cores)."""
    per: dict = {}
    for row in rows:
        if not row.missing:
            continue
        t = per.setdefault(row.impl, [0, 0, 0.0, 0.0, 0.0])
        t[0] += len(row.missing)
        if row.each.seconds is None:
            t[1] += len(row.missing)
        else:
            t[2] += row.missing_s
            t[3] += row.missing_s * run_threads(config, row.impl, cores, row.experiment) / cores
            t[4] = max(t[4], row.each.seconds)

    def line(impl, n, u, s, shared, longest):
        known = n > u  # hours only where some run has an estimate
        w = max(shared, longest)
        return [impl, str(n), str(u), f"{s / 3600:.1f}" if known else "-", f"{w / 3600:.1f}" if known else "-"]

    lines = [line(impl, *v) for impl, v in sorted(per.items())]
    if per:
        lines.append(line("all", *(sum(v[i] for v in per.values()) for i in range(4)),
                          max(v[4] for v in per.values())))
    return _table(["impl", "missing runs", "no estimate", "run hours", f"wall hours on {_cores(cores)}"], lines,
                  {1, 2, 3, 4})


def render(config: dict, rows: list[Row], timings: Timings, cores: int, *, show_present: bool) -> str:
    """``plan --status`` (every group, ``show_present``) or ``plan --estimate`` (the missing ones)."""
    n_present = sum(len(r.present) for r in rows)
    n_missing = sum(len(r.missing) for r in rows)
    hours = float(config.get("run_budget_hours", 0.0))
    out = [f"{n_present + n_missing} records requested under {plan.results_root(config)}/ (scale "
           f"{config.get('scale', 'paper')}): {n_present} present, {n_missing} missing."]
    lines = []
    for r in rows:
        if not (show_present or r.missing):
            continue
        start = ("all" if r.started == r.missing else seed_list(r.started)) if r.started else "-"
        lines.append([r.experiment, r.impl, r.params, seed_list(r.present), seed_list(r.missing),
                      duration(r.each.seconds) if r.missing else "", duration(r.missing_s) if r.missing else "",
                      start if r.missing else "", r.each.basis if r.missing else ""])
    if lines:
        out += ["", *_table(["experiment", "impl", "params", "present", "missing", "each", "missing total",
                             "started", "estimated from"], lines, {5, 6})]
    if n_missing:
        out += ["", "Missing runs by implementation, estimated:", *totals(config, rows, cores)]
    else:
        out += ["", "Every requested record is present: nothing to run."]
    cpus = sorted(c for c in timings.cpus if c)
    from ..backends.cpu import cpu_model

    out += ["", f"Estimates: the runs' per-epoch times on {', '.join(cpus) or 'no recorded host'}, scaled to each "
            "run's clauses, examples and epochs (asynctm.experiments.estimate); this host: "
            f"{cpu_model()}, {_cores(cores)}. pyTsetlinMachine and MLP runs use 1 core, tm_cpu and svm all.",
            f"'started': the missing seeds the default target runs (run_budget_hours: {hours:g}, cheapest first; "
            "no estimate: never). The others run with:",
            "  .venv/bin/snakemake --cores all --config run_budget_hours=inf      # every missing run",
            "  .venv/bin/snakemake --cores all exp_<experiment>   (or sweep_<experiment>, or a record's path)"]
    return "\n".join(out)


# Kinds whose time the tables and figures report (TM s/epoch, SVM fit); the MLP stage's fit time enters none.
TIMED_KINDS = ("tm", "svm")


def busy_records(config: dict, runs: list[dict]) -> list[dict]:
    """The requested records on disk that were timed on a busy machine (``asynctm.store.busy``): their metrics
    stand, their times are left out of the tables' ratios until they are timed again."""
    out = []
    for run in runs:
        path = Path(plan.record_path(config, run))
        if not path.is_file():
            continue
        rec = store.read_record(path, plan.results_root(config))
        prov = rec.get("provenance") or {}
        load, cores = prov.get("load_average_1min_at_end"), prov.get("logical_cores")
        if rec.get("kind") in TIMED_KINDS and store.busy(load, cores):
            out.append({"path": path.as_posix(), "load": float(load), "cores": int(cores),
                        "cpu": prov.get("cpu_model") or "unknown CPU", "threads": prov.get("threads")})
    return out


def render_busy(busy: list[dict]) -> str:
    """``plan --busy``: each record timed on a busy machine, and the one command that times them again."""
    if not busy:
        return "No requested record was timed on a busy machine: every time enters the tables' ratios."
    lines = [[f"{b['load']:.2f}", str(b["cores"]), str(b["threads"]), b["cpu"], b["path"]] for b in busy]
    return "\n".join([
        f"{len(busy)} requested record(s) timed on a busy machine (1-minute load average at the end above the "
        "cores + 1): their metrics stand, their times are left out of the tables' ratios.", "",
        *_table(["load", "cores", "threads", "CPU", "record"], lines, {0, 1, 2}), "",
        "Time them again with nothing else running on this machine (each record, and what is built from it, is "
        "replaced when its run ends; docs/running.md, 'Rerunning and changing settings'):",
        "  .venv/bin/snakemake --cores all tables figures report --config run_missing=false --forcerun "
        + " ".join(b["path"] for b in busy)])


def default_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
