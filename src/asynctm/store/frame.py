"""Run records as rows: the pandas DataFrame the tables, figures and claims read (:func:`load_records`), the tally
ablation's rows (:func:`ablation_rows`), and what a record says beyond its fields: the host it ran on
(:func:`host_identity`), whether its time was taken on a busy machine (:func:`busy`) or from modified code
(:func:`dirty`), its steady per-epoch time (:func:`steady_epoch_time`) and its reduced protocol
(:func:`reduced_protocol`).

Every record is read through the gate (asynctm.store.gate), so a row never has to check what the gate checked: a
refused record raises its one-line RecordError instead of becoming a row. pandas is imported only to build a frame.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..experiments.plan import ABLATION_DIR, GPU_IMPLS, record_threads_per_clause
from .gate import read_record, read_records
from .layout import ablation_files, refuse

# The columns of the frame, in order (metrics: every key of `final` becomes a column of its own).
BASE_COLUMNS = [
    "path", "experiment", "impl", "params", "seed", "kind", "task", "scale",
    "train_s_mean", "train_s_total", "fit_s", "epochs",
    "library", "library_version", "device", "threads",
    "cpu_model", "logical_cores", "gpu_name", "gpu_driver", "gpu_cuda",
    "seeded", "protocol_scope", "full_protocol_runs", "full_protocol_epochs", "resumed", "load_at_end", "constant_mae",
    "train_s_first", "train_s_steady", "n_epochs", "git_dirty", "host_id", "host", "host_label", "platform",
    "started_utc",
]
LAST_EPOCHS = 10  # Tables 3 and 5 report the final epoch and the mean of this many last epochs (last10_<metric>)

# Per-epoch times in the tables and figures: the mean of epochs 2..n (``train_s_steady``). The first epoch also
# pays for one-off work (on a GPU: compiling and loading the kernels, allocating and uploading; on the CPU: caches
# and pages), so a mean over all epochs of a short run (a sweep's 5) measures that set-up as much as training. A
# record of one epoch keeps it (``n_epochs`` says so).
STEADY_NOTE = ("s/epoch: the mean per-epoch training time over epochs 2..n of each run (epochs[].train_s; the first "
               "epoch, which also compiles, allocates and warms up, is left out), averaged over seeds")


def steady_epoch_time(times: list[float]) -> float:
    """The mean of the epochs' training times after the first (the first alone where there is one)."""
    rest = times[1:] or times[:1]
    return math.fsum(rest) / len(rest)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def dirty(value) -> bool:
    """Whether a record's ``provenance.git_dirty`` says its code had uncommitted changes (a count above 0, or
    true); False where it is 0, false or unknown."""
    return value is True or (_number(value) and math.isfinite(value) and value > 0)


def host_identity(prov: dict) -> tuple[str, str, str | None]:
    """``(key, label, host_id)`` of the machine a record ran on. Records that carry ``provenance.host_id``
    (asynctm.provenance.host_id) are one host where their ids are equal. Older records have none, and their CPU
    model alone does not tell hosts apart (a virtual machine's generic name, e.g. "Intel(R) Xeon(R) Processor",
    covers many): they are one host only where CPU model, logical cores, GPU, platform and the UTC day the run
    started all agree (:data:`HOST_RULE`)."""
    gpu = (prov.get("gpu") or {}).get("name") if isinstance(prov.get("gpu"), dict) else None
    cpu = str(prov.get("cpu_model") or "unknown CPU")
    cores = prov.get("logical_cores")
    cores_text = f"{cores} cores" if _number(cores) else "cores unknown"
    host_id = prov.get("host_id")
    if isinstance(host_id, str) and host_id:
        return f"id {host_id}", f"{cpu} ({cores_text}, host {host_id[:12]})", host_id
    day = str(prov.get("started_utc") or "")[:10] or "day unknown"
    parts = [cpu, cores_text, gpu or "no GPU", str(prov.get("platform") or "platform unknown"), day]
    return "|".join(parts), f"{cpu} ({cores_text}{', ' + gpu if gpu else ''}, {day})", None


HOST_RULE_SHORT = ("one host: the same provenance.host_id, or without one the same CPU model, logical cores, GPU, "
                   "platform and UTC day the run started")
HOST_RULE = ("records of one host: the same provenance.host_id, or, for records without one (written before it "
             "existed), the same CPU model, logical cores, GPU, platform and UTC day the run started (a CPU model "
             "name alone, such as a virtual machine's \"Intel(R) Xeon(R) Processor\", covers different hosts)")


# A time measured while the machine ran more than its cores plus one (1-minute load average at the end of the
# run) shared its cores with other work: such a record's accuracy stands, its time does not enter a ratio.
DISTURBED_LOAD_ABOVE_CORES = 1.0


def busy(load, cores) -> bool:
    """Whether a run that ended at this 1-minute load average on this many cores was timed on a busy machine
    (see DISTURBED_LOAD_ABOVE_CORES); False where either is unknown."""
    return bool(_number(load) and _number(cores) and float(load) > float(cores) + DISTURBED_LOAD_ABOVE_CORES)


def last_epochs_means(epochs: list[dict], last: int = LAST_EPOCHS) -> dict:
    """``{"last10_<metric>": mean}``: each per-epoch metric averaged over the last ``last`` epochs (all of
    them when there are fewer), NaN where none of those epochs has a value."""
    window = epochs[-last:]
    keys = sorted({k for e in window for k in e} - {"epoch", "train_s", "eval_s"})
    out = {}
    for key in keys:
        values = [e[key] for e in window if key in e and math.isfinite(e[key])]
        out[f"last{last}_{key}"] = math.fsum(values) / len(values) if values else math.nan
    return out


def _seeded(impl: dict):
    """``implementation.seeded``: False where the library cannot be seeded (its runs repeat one run); None
    where the record does not say."""
    value = impl.get("seeded")
    return value if isinstance(value, bool) else None


def reduced_protocol(record: dict) -> str | None:
    """What reduced protocol a record ran under (None: the full protocol): its ``protocol_scope``'s
    ``description`` (experiments.plan.protocol_scope), else its ``name``."""
    scope = record.get("protocol_scope")
    if not isinstance(scope, dict):
        return None
    label = str(scope.get("description") or scope.get("name") or "reduced protocol").strip()
    # Records written before the description left out the seed count ("2 seeds x the first 5 epochs (...)") read
    # as the current ones do, so that records of one reduced protocol with more seeds share one label.
    return _OLD_REDUCED.sub(r"the first \1 epochs of each seed", label)


_OLD_REDUCED = re.compile(r"^\d+ seeds? x the first (\d+) epochs")


def _full_protocol(record: dict) -> dict:
    """The full protocol a reduced record stands in for (``protocol_scope.full``: its seeds and epochs), for
    the tables' estimate of its cost; None where the record does not say."""
    scope = record.get("protocol_scope")
    full = scope.get("full") if isinstance(scope, dict) else None
    seeds = full.get("seeds") if isinstance(full, dict) else None
    epochs = full.get("epochs") if isinstance(full, dict) else None
    return {"full_protocol_runs": len(seeds) if isinstance(seeds, list) else None,
            "full_protocol_epochs": epochs if isinstance(epochs, int) and not isinstance(epochs, bool) else None}


def _resumed(record: dict) -> int:
    """How many times the run was resumed from a checkpoint (``resume.count``; 0 when absent)."""
    resume = record.get("resume")
    count = resume.get("count") if isinstance(resume, dict) else None
    return int(count) if isinstance(count, int) and not isinstance(count, bool) else 0


def _constant_mae(record: dict) -> float | None:
    """The test MAE of predicting the training median (regression records since the dataset summary has it)."""
    value = ((record.get("dataset") or {}).get("constant_baseline") or {}).get("mae")
    return float(value) if _number(value) else None


def _metrics(values: dict) -> dict:
    """Metrics as floats (null: NaN); the gate let through numbers and nulls only."""
    return {key: float("nan") if value is None else float(value) for key, value in values.items()}


def record_row(record: dict, rel) -> dict:
    """The frame's row of one record that passed the gate; ``rel``: its path below the results root."""
    kind = record["kind"]
    fields = {key: record[key] for key in ("experiment", "impl", "params", "task")}
    impl = record.get("implementation") or {}
    prov = record["provenance"]
    gpu = prov["gpu"]
    row = {
        "path": Path(rel).as_posix(), **fields, "seed": record["seed"], "kind": kind, "scale": record.get("scale"),
        "train_s_mean": math.nan, "train_s_total": math.nan, "fit_s": math.nan, "epochs": None,
        "library": impl.get("library"), "library_version": impl.get("version"), "device": impl.get("device"),
        "library_forced_by": impl.get("forced_by"),
        "threads_per_clause": record_threads_per_clause(record) if fields["impl"] in GPU_IMPLS else None,
        "threads": prov.get("threads"), "cpu_model": prov.get("cpu_model"),
        "logical_cores": prov.get("logical_cores"),
        "gpu_name": (gpu or {}).get("name"), "gpu_driver": (gpu or {}).get("driver"),
        "gpu_cuda": (gpu or {}).get("cuda"),
        "seeded": _seeded(impl), "protocol_scope": reduced_protocol(record), **_full_protocol(record),
        "resumed": _resumed(record),
        "load_at_end": prov.get("load_average_1min_at_end") if _number(prov.get("load_average_1min_at_end")) else None,
        "constant_mae": _constant_mae(record),
        "train_s_first": math.nan, "train_s_steady": math.nan, "n_epochs": None,
        "git_dirty": prov.get("git_dirty"), "platform": prov.get("platform"), "started_utc": prov.get("started_utc"),
    }
    row["host"], row["host_label"], row["host_id"] = host_identity(prov)
    timing = record["timing"]
    if kind == "tm":
        row["train_s_mean"] = float(timing["train_s_mean"])
        row["train_s_total"] = float(timing["train_s_total"])
        # nested objects (e.g. the training diagnostics of our TM) are not metrics: left out here
        rows = [_metrics({k: v for k, v in epoch.items() if not isinstance(v, dict)}) for epoch in record["epochs"]]
        row["epochs"] = rows
        times = [float(e["train_s"]) for e in record["epochs"]]
        row.update(train_s_first=times[0], train_s_steady=steady_epoch_time(times), n_epochs=len(times))
        row.update(last_epochs_means(rows))
    else:
        row["fit_s"] = float(timing["fit_s"])
    final = _metrics(record["final"])
    return {**row, **{key: value for key, value in final.items() if key not in row}}


def load_records(results_dir, experiments=None, files=None):
    """Every record under ``results_dir`` outside the ablation (optionally only those experiments) as a pandas
    DataFrame, one row each, sorted by experiment, impl, params and seed; TM records keep their per-epoch list in
    the ``epochs`` column. ``files``: read only these record files (below ``results_dir``; the Snakemake rules pass
    their declared inputs) instead of every record there."""
    import pandas as pd

    results_dir = Path(results_dir)
    rows = [record_row(record, path.relative_to(results_dir))
            for path, record in read_records(results_dir, experiments, files)]
    frame = pd.DataFrame(rows)
    for column in BASE_COLUMNS:
        if column not in frame:
            frame[column] = pd.Series(dtype=object)
    if frame.empty:
        return frame[BASE_COLUMNS]
    frame["seed"] = frame["seed"].astype(int)
    metric_columns = sorted(c for c in frame.columns if c not in BASE_COLUMNS)
    frame = frame[BASE_COLUMNS + metric_columns]
    return frame.sort_values(["experiment", "impl", "params", "seed"], kind="stable").reset_index(drop=True)


def ablation_rows(results, files=None) -> list[dict]:
    """One dict per record of the tally ablation under ``results/ablation`` (``files``: only these), sorted by
    path: its place (experiment, impl, params, variant), settings, epochs, mean epoch time and machine. The
    ablation compares the training diagnostics, so a record whose epochs lack them or their metric (a run from
    before the diagnostics) is refused here, with one line."""
    results = Path(results)
    rows = []
    for path in ablation_files(results) if files is None else sorted(map(Path, files)):
        if len(path.parts) < 6 or path.parts[-6] != ABLATION_DIR:
            refuse(path, "path", f"not a record of the tally ablation ({ABLATION_DIR}/<experiment>/<impl>/<params>/"
                   "<variant>/seed<k>.json)", "name the ablation's records only")
        rec = read_record(path, results)
        experiment, impl, params, variant = path.parts[-5:-1]  # the gate checked them against the record
        h = rec["hyperparameters"]
        metric = "mae" if rec["task"] == "regression" else "accuracy"
        epochs = rec["epochs"]
        for i, epoch in enumerate(epochs):
            for key in (metric, "diagnostics"):
                if key not in epoch:
                    refuse(path, f"epochs[{i}].{key}", "missing: the ablation compares each epoch's metric and "
                           "training diagnostics (a run from before the diagnostics)", "move it out of results/ and "
                           "run its rule again")
        gpu_threads = record_threads_per_clause(rec) if impl == "tm_gpu" else 1
        prov = rec["provenance"]
        rows.append({"experiment": experiment, "impl": impl, "params": params, "variant": variant,
                     "order": h.get("order", "dataset"), "clauses": int(h["n_clauses"]),
                     "seed": int(rec["seed"]), "task": rec["task"], "metric": metric, "epochs": epochs,
                     "train_s_mean": float(rec["timing"]["train_s_mean"]), "threads": prov.get("threads"),
                     "cpu_model": prov.get("cpu_model"),
                     "gpu": (prov.get("gpu") or {}).get("name") if impl == "tm_gpu" else None,
                     "gpu_threads": gpu_threads if impl == "tm_gpu" else None,
                     "load": prov.get("load_average_1min_at_end"), "scale": rec.get("scale"),
                     "path": "/".join((ABLATION_DIR, *path.parts[-5:]))})
    return rows
