"""Run records (results/README.md) -> one pandas DataFrame row each.

``load_records`` reads ``<results>/<experiment>/<impl>/<params>/seed<k>.json``, skips records whose
``status`` is not ``"complete"``, and checks the shape of the rest: a malformed record is a
``RecordError`` that names the file and what is wrong with it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from .. import store
from ..experiments import plan

KINDS = ("tm", "svm", "mlp_novelty")
SEED_FILE = re.compile(r"^seed(\d+)\.json$")

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


def busy_load_text(busy_rows: pd.DataFrame) -> str:
    """How busy the machine was for these (disturbed) records, e.g. '1-minute load average 3.1-3.5 at the end on
    2 cores'."""
    low, high = (f"{float(v):.1f}" for v in (busy_rows["load_at_end"].min(), busy_rows["load_at_end"].max()))
    return (f"1-minute load average {low if low == high else f'{low}-{high}'} at the end on "
            f"{int(busy_rows['logical_cores'].max())} cores")


def disturbed(frame: pd.DataFrame) -> pd.Series:
    """True where a record's time was taken on a busy machine (see :func:`busy`)."""
    if frame.empty or "load_at_end" not in frame:
        return pd.Series(False, index=frame.index)
    return pd.Series([busy(load, cores) for load, cores in zip(frame["load_at_end"], frame["logical_cores"])],
                     index=frame.index)


# One error class for a record that may not count, wherever it is read (asynctm.store, the gate).
RecordError = store.RecordError


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require(record: dict, dotted: str, path: Path, check=None, what: str = ""):
    node = record
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise RecordError(f"{path}: malformed run record: missing key '{dotted}' (see results/README.md)")
        node = node[part]
    if check is not None and not check(node):
        raise RecordError(f"{path}: malformed run record: '{dotted}' must be {what}, got {node!r}")
    return node


def _finite_number(value) -> bool:
    return _number(value) and math.isfinite(value)


def _metrics(values: dict, path: Path, where: str) -> dict:
    out = {}
    for key, value in values.items():
        if value is not None and not _number(value):
            raise RecordError(f"{path}: malformed run record: metric '{where}.{key}' must be a number or null, "
                              f"got {value!r}")
        out[key] = float("nan") if value is None else float(value)
    return out


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
    """What reduced protocol a record ran under (None: the full protocol). Reads ``protocol_scope`` (a
    string, or an object with ``name``/``description``; ``full``/``paper`` mean the full protocol) and
    ``reduced`` (true, a string or an object)."""
    label = None
    for key in ("protocol_scope", "reduced"):
        value = record.get(key)
        if isinstance(value, dict):
            if value.get("reduced") is False or value.get("scope") in ("full", "paper"):
                continue
            value = (value.get("description") or value.get("name") or value.get("scope")
                     or ", ".join(f"{k} {v}" for k, v in sorted(value.items()) if k != "reduced") or True)
        if value is True:
            label = label or "reduced protocol"
        elif isinstance(value, str) and value.strip() and value.strip().lower() not in ("full", "paper", "none"):
            label = value.strip()
    # Records written before the description left out the seed count ("2 seeds x the first 5 epochs (...)") read
    # as the current ones do, so that records of one reduced protocol with more seeds share one label.
    return _OLD_REDUCED.sub(r"the first \1 epochs of each seed", label) if label else label


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


def parse_record(record, path: Path, rel: Path) -> dict | None:
    """One record's row (None when its status is not complete). ``rel``: its path under the results root,
    which must agree with the record's own experiment, impl, params and seed."""
    if not isinstance(record, dict):
        raise RecordError(f"{path}: malformed run record: not a JSON object")
    status = _require(record, "status", path)
    if status != "complete":
        return None
    _require(record, "schema", path, lambda v: v == 1, "1")
    kind = _require(record, "kind", path, lambda v: v in KINDS, f"one of {KINDS}")
    fields = {key: _require(record, key, path, lambda v: isinstance(v, str) and v != "", "a non-empty string")
              for key in ("experiment", "impl", "params", "task")}
    seed = _require(record, "seed", path, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer")
    in_record = {**fields, "seed": seed}
    in_path = {"experiment": rel.parts[0], "impl": rel.parts[1], "params": rel.parts[2],
               "seed": int(SEED_FILE.match(rel.name).group(1))}
    for key, value in in_path.items():
        if in_record[key] != value:
            raise RecordError(f"{path}: malformed run record: its '{key}' is {in_record[key]!r} but its path "
                              f"says {value!r}")
    final = _metrics(_require(record, "final", path, lambda v: isinstance(v, dict), "an object"), path, "final")
    _require(record, "timing", path, lambda v: isinstance(v, dict), "an object")
    impl = record.get("implementation") or {}
    if not isinstance(impl, dict):
        raise RecordError(f"{path}: malformed run record: 'implementation' must be an object")
    prov = _require(record, "provenance", path, lambda v: isinstance(v, dict), "an object")
    _require(record, "provenance.cpu_model", path)
    gpu = _require(record, "provenance.gpu", path, lambda v: v is None or isinstance(v, dict), "null or an object")

    row = {
        "path": rel.as_posix(), **fields, "seed": seed, "kind": kind, "scale": record.get("scale"),
        "train_s_mean": math.nan, "train_s_total": math.nan, "fit_s": math.nan, "epochs": None,
        "library": impl.get("library"), "library_version": impl.get("version"), "device": impl.get("device"),
        "library_forced_by": impl.get("forced_by"),
        "threads_per_clause": plan.record_threads_per_clause(record) if fields["impl"] in plan.GPU_IMPLS else None,
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
    if kind == "tm":
        row["train_s_mean"] = float(_require(record, "timing.train_s_mean", path, _finite_number, "a number"))
        row["train_s_total"] = float(_require(record, "timing.train_s_total", path, _finite_number, "a number"))
        epochs = _require(record, "epochs", path, lambda v: isinstance(v, list) and len(v) > 0, "a non-empty list")
        rows = []
        for i, epoch in enumerate(epochs):
            where = f"{path}: malformed run record: epochs[{i}]"
            if not isinstance(epoch, dict):
                raise RecordError(f"{where} is not an object")
            if epoch.get("epoch") != i + 1:
                raise RecordError(f"{where}.epoch must be {i + 1} (epochs count from 1), got {epoch.get('epoch')!r}")
            if not _finite_number(epoch.get("train_s")):
                raise RecordError(f"{where}.train_s must be a number, got {epoch.get('train_s')!r}")
            # nested objects (e.g. the training diagnostics of our TM) are not metrics: left out here
            rows.append(_metrics({k: v for k, v in epoch.items() if not isinstance(v, dict)}, path, f"epochs[{i}]"))
        row["epochs"] = rows
        times = [float(e["train_s"]) for e in epochs]
        row.update(train_s_first=times[0], train_s_steady=steady_epoch_time(times), n_epochs=len(times))
        row.update(last_epochs_means(rows))
    else:
        row["fit_s"] = float(_require(record, "timing.fit_s", path, _finite_number, "a number"))
    if kind in ("tm", "mlp_novelty") and fields["task"] != "regression":
        for metric in ("accuracy", "f1"):
            _require(record, f"final.{metric}", path)
    if fields["task"] == "regression" and kind == "tm":
        _require(record, "final.mae", path)
    return {**row, **{key: value for key, value in final.items() if key not in row}}


def record_files(results_dir: Path, experiments=None) -> list[Path]:
    """The record files under a results root (``experiments``: only those first-level folders)."""
    results_dir = Path(results_dir)
    if experiments is None:
        experiments = [p.name for p in results_dir.iterdir() if p.is_dir()] if results_dir.is_dir() else []
    files = []
    for name in sorted(experiments):
        files += [p for p in (results_dir / name).glob("*/*/seed*.json") if SEED_FILE.match(p.name)]
    return sorted(files)


def load_records(results_dir, experiments=None, files=None) -> pd.DataFrame:
    """Every complete record under ``results_dir`` (optionally only those experiments), sorted by
    experiment, impl, params and seed; TM records keep their per-epoch list in the ``epochs`` column.
    ``files``: read only these record files (below ``results_dir``; the Snakemake rules pass their declared
    inputs) instead of every record there."""
    results_dir = Path(results_dir)
    rows = []
    paths = record_files(results_dir, experiments) if files is None else sorted(
        p for p in map(Path, files)
        if SEED_FILE.match(p.name) and (experiments is None or p.relative_to(results_dir).parts[0] in experiments))
    for path in paths:
        record = store.read_record(path, results_dir)  # the gate: refused records never count
        row = parse_record(record, path, path.relative_to(results_dir))
        if row is not None:
            rows.append(row)
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


def select(records: pd.DataFrame, experiment: str, impl: str, params: str, seeds=None) -> pd.DataFrame:
    """The records of one cell (experiment, impl, params), restricted to ``seeds``, sorted by seed."""
    if records.empty:
        return records
    mask = (records["experiment"] == experiment) & (records["impl"] == impl) & (records["params"] == params)
    if seeds is not None:
        mask &= records["seed"].isin(list(seeds))
    return records[mask].sort_values("seed", kind="stable")


def epochs_frame(records: pd.DataFrame) -> pd.DataFrame:
    """The TM records' per-epoch entries, one row per (record, epoch): identification columns, ``epoch``,
    ``train_s`` and the per-epoch metrics."""
    rows = []
    for rec in records.itertuples(index=False):
        for entry in rec.epochs or []:
            rows.append({"experiment": rec.experiment, "impl": rec.impl, "params": rec.params,
                         "seed": rec.seed, **entry})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["experiment", "impl", "params", "seed", "epoch", "train_s"])
    frame["epoch"] = frame["epoch"].astype(int)
    return frame.sort_values(["experiment", "impl", "params", "seed", "epoch"], kind="stable").reset_index(drop=True)
