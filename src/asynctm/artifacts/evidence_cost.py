"""What the paper's per-epoch times imply: the cost model (:mod:`asynctm.costmodel`) calibrated on datasets whose
size we know, then inverted on SemEval and IMDb (an evidence record of kind ``time_model``).

The paper's times (``paper_tables/reference/paper_numbers.csv``): Table 4 gives the CUDA TM's seconds (per epoch
by magnitude, on Google Colab); Table 3 the indexed pyTsetlinMachine's time as a multiple of the CUDA time, so its
per-epoch time is Table 4's time x Table 3's speed-up (this assumes Colab's GPU ran as fast as Table 3's V100).

For each design the paper timed, the model counts the work of an epoch from the sizes (examples, clauses,
features) and the feedback events per clause visit of our run records (the same algorithm), and seconds per
operation are calibrated:

- ``pytm_indexed``: one core, the whole epoch's operations, with pyTsetlinMachine's 1/s draws
  (about ``L ln(s/(s-1))`` per Type I event); checked against our pyTsetlinMachine records;
- ``cuda_paper_code``: one thread per clause, so the critical path is one clause's share of the epoch, with
  PyTsetlinMachineCUDA's ``curand_uniform`` per literal; checked against PyTsetlinMachineCUDA in our GPU
  benchmarks;
- ``cuda_one_thread``: the same critical path with our kernel's draws; checked against our one-thread GPU
  records (``tm_gpu``).

The check (seconds per operation of our own runs across datasets, on one device) says how far the model is from
constant; its spread (largest over smallest) widens every implied size below. The paper's seconds per operation on
each dataset, at our sizes, show where its time is out of line with the rest. Inverting the model on the
calibration datasets' seconds per operation (WSD Apple and Java: the authors' own files, so our sizes are theirs)
gives the feature count at the paper's stated examples, and the example count at its stated features, that the
paper's SemEval and IMDb times would take.

    python -m asynctm.artifacts.evidence_cost --out results/evidence/table4_time_model.json \\
        [--results results] [--reference paper_tables/reference/paper_numbers.csv] [--gpu-benchmark PATH ...]

The second record of this module (kind ``same_gpu``, ``--out results/evidence/table4_same_gpu.json``) asks of the
Table 4 cells where our GPU time is far from the paper's how much of the gap is the GPU and how much the code: per
dataset and GPU, the authors' CUDA code (PyTsetlinMachineCUDA) and our two GPU builds timed side by side in one GPU
benchmark process (``benchmarks/results/gpu_*.json``: each file's median epoch after a warm-up; the median over the
files of a GPU), beside the paper's Table 4 time. The authors' code on our GPU over the paper's time is what the
GPU (and whatever else differed on the paper's Colab machine) changes; our one-thread build over the authors' code
on one GPU is what our implementation of the same design changes.
"""

from __future__ import annotations

import argparse
import glob as globbing
import math
import re
import sys
from functools import partial
from pathlib import Path

import numpy as np

from .. import costmodel as cm
from ..io import write_json_atomic
from . import evidence_common as common
from .evidence_common import HEADER, SCHEMA, EvidenceError, _sha256, folder_records, run_command, run_record_files
from .evidence_common import provenance as _provenance
from .render import dataset_label

KIND = "time_model"
NAME = "table4_time_model"
EVENT_KEYS = ("type_ia_feedback", "type_ib_feedback", "type_ii_feedback")
QUESTION = ("Do the paper's per-epoch times for SemEval and IMDb (Table 4's CUDA TM; Table 3's indexed "
            "pyTsetlinMachine) fit the sizes it states? Calibrated on WSD Apple and Java, which feature count (at "
            "the stated examples) or example count (at the stated features) would they take?")

# What the paper states about the two datasets (asynchronous-tm-icml2021.tex, Sec. 4 and 4.3) and what the
# authors' code adds where the paper is silent; the training fraction is the authors' split.
STATED = {
    "semeval": {"examples": 10717, "examples_source": "Sec. 4.3: \"The dataset has 10,717 examples\"",
                "features": 102176, "features_source": "Sec. 4: \"6 to 102,176 features\" (the largest: SemEval's "
                                                       "unigrams and bigrams, as the authors' code builds them)",
                "train_fraction": 0.75, "train_source": "the authors' 75/25 train_test_split"},
    "imdb": {"examples": 50000, "examples_source": "Sec. 4.3: \"50,000 highly polar movie reviews\"",
             "features": 5000, "features_source": "not stated in the paper (\"unigrams and bigrams\"); the authors' "
                                                  "code keeps the top 5,000 (SelectKBest)",
             "train_fraction": 0.5, "train_source": "the standard (Keras) 25,000 / 25,000 split"},
}
CALIBRATION = ("wsd_apple", "wsd_java")
TARGETS = ("semeval", "imdb")
# Classes of the datasets used here: all four are binary tasks (asynctm.datasets: two senses of "apple" and of
# "java", Cause-Effect or not, positive or negative).
CLASSES = {"wsd_apple": 2, "wsd_java": 2, "semeval": 2, "imdb": 2}

DESIGNS = {
    "pytm_indexed": {"label": "pyTsetlinMachine, indexed (one CPU core)", "draw_scheme": "pytm",
                     "per_clause": False, "chunk_words": cm.CPU_CHUNK_WORDS,
                     "paper": "Table 4 CUDA time x Table 3 speed-up (CUDA over indexed)",
                     "check": "our pytm_indexed run records (one core)", "records": "pytm_indexed"},
    "cuda_paper_code": {"label": "CUDA TM, the authors' design (one thread per clause, a curand draw per literal)",
                        "draw_scheme": "per_literal", "per_clause": True, "chunk_words": cm.GPU_CHUNK_WORDS,
                        "paper": "Table 4 CUDA time (Google Colab)",
                        "check": "PyTsetlinMachineCUDA in our GPU benchmarks (gpu_*.json)", "records": None},
    "cuda_one_thread": {"label": "CUDA TM, our one-thread-per-clause kernel (tm_gpu)", "draw_scheme": "pool",
                        "per_clause": True, "chunk_words": cm.GPU_CHUNK_WORDS,
                        "paper": "Table 4 CUDA time (Google Colab)",
                        "check": "our tm_gpu run records (one thread per clause)", "records": "tm_gpu"},
}
# Per-epoch feedback events of the paper's runs, from ours: all epochs (the paper's times are averages), and the
# event-heavy early and the calm late epochs as the range.
EVENT_VARIANTS = {"all epochs": None, "epochs 2-6": (2, 6), "last 10 epochs": (-10, None)}
CENTRAL_VARIANT = "all epochs"
SPREAD_TAGS = ("", "_slower", "_faster")  # calibrated; seconds per operation x and / the model's spread
_PARAMS = re.compile(r"^n(\d+)_T(\d+)_s([0-9.]+)_e(\d+)$")


class TimeModelError(EvidenceError):
    """Input the record cannot be built from; the message names the file and the field, and the fix."""


def _read_benchmark(path: Path) -> dict:
    """A GPU benchmark record (benchmarks/results/gpu_*.json: not a run record); a bad one raises TimeModelError in
    one line."""
    return common.read_json_object(path, "GPU benchmark record", TimeModelError,
                                   fix="rerun the GPU campaign's bench step that wrote it, or leave the file out")


def provenance(what: str, code=()) -> dict:
    """The record's provenance (:func:`evidence_common.provenance`), with this module's code among its digests."""
    return _provenance(what, None, (Path(__file__), *code), program="asynctm.artifacts.evidence_cost")


# -- reading ------------------------------------------------------------------------------------------------------

def _folders(results: Path, experiment: str, impl: str) -> list[Path]:
    return sorted(p for p in (results / experiment / impl).glob("n*_T*_s*_e*") if p.is_dir() and _PARAMS.match(p.name))


def _records(folder: Path, results: Path) -> list[tuple[Path, dict]]:
    """The TM run records of one setting's folder below ``results``, through the record store's gate (which makes
    sure of their dataset, hyperparameters and epochs)."""
    return folder_records(folder, results, fix="remove it or rerun its run", error=TimeModelError)


def main_folder(results: Path, experiment: str, impl: str, like: Path | None = None) -> Path | None:
    """The folder of ``impl``'s records of an experiment: the one with most records, then most epochs (``like``:
    only folders with the same clauses, T and s)."""
    folders = _folders(results, experiment, impl)
    if like is not None:
        key = _PARAMS.match(like.name).groups()[:3]
        folders = [f for f in folders if _PARAMS.match(f.name).groups()[:3] == key]
    if not folders:
        return None
    return max(folders, key=lambda f: (len(run_record_files(f)), int(_PARAMS.match(f.name).group(4))))


def setting(results: Path, experiment: str, sources: list) -> dict:
    """Sizes, hyperparameters and per-epoch feedback events per clause visit of an experiment, from its tm_cpu
    records (the main folder)."""
    folder = main_folder(results, experiment, "tm_cpu")
    if folder is None:
        raise TimeModelError(f"{results / experiment / 'tm_cpu'}: no tm_cpu run records; run the experiment's tm_cpu "
                            "records (they hold the feedback counts)")
    recs = _records(folder, results)
    if not recs:
        raise TimeModelError(f"{folder}: no seed*.json run records; run them")
    path, first = recs[0]
    n, F = first["dataset"].get("n_train"), first["dataset"].get("n_features")
    if not n or not F:
        raise TimeModelError(f"{path}: field 'dataset.n_train'/'dataset.n_features' is missing; rerun its run")
    hp = first["hyperparameters"]
    classes = CLASSES.get(experiment, 2)
    visits = float(n) * hp["n_clauses"] * classes
    per_epoch = []  # [seed][epoch] -> (Ia, Ib, II) per visit
    for p, rec in recs:
        rows = []
        for e in rec["epochs"]:
            d = e.get("diagnostics")
            if not isinstance(d, dict) or any(k not in d for k in EVENT_KEYS):
                raise TimeModelError(f"{p}: field 'epochs[{e.get('epoch')}].diagnostics' lacks the feedback counts; "
                                    "rerun the record with the current code")
            rows.append([float(d[k]) / visits for k in EVENT_KEYS])
        per_epoch.append(rows)
        sources.append({"path": p.as_posix(), "sha256": _sha256(p)})
    length = min(len(r) for r in per_epoch)
    rates = np.asarray([r[:length] for r in per_epoch]).mean(axis=0)  # (epochs, 3), mean over seeds
    return {"experiment": experiment, "folder": folder.as_posix(), "seeds": len(recs), "n_train": int(n),
            "n_features": int(F), "n_clauses": int(hp["n_clauses"]), "s": float(hp["s"]), "classes": classes,
            "state_bits": int(hp.get("state_bits", 8)), "append_negated": bool(hp.get("append_negated", True)),
            "boost": bool(hp.get("boost_true_positive", True)), "rates_by_epoch": rates.tolist()}


def rates(st: dict, epochs) -> list[float]:
    """Mean per-visit Type Ia / Ib / II over ``epochs``: None (all), (first, last) 1-based inclusive, (-k, None)
    the last k, or a list of epoch numbers."""
    r = np.asarray(st["rates_by_epoch"])
    if epochs is None:
        sel = r
    elif isinstance(epochs, tuple) and epochs[0] < 0:
        sel = r[epochs[0]:]
    elif isinstance(epochs, tuple):
        sel = r[epochs[0] - 1:epochs[1]]
    else:
        sel = r[[e - 1 for e in epochs if 1 <= e <= len(r)]]
    if len(sel) == 0:
        raise TimeModelError(f"{st['folder']}: the records have no epochs {epochs}; rerun them with more epochs")
    return sel.mean(axis=0).tolist()


# -- the model ----------------------------------------------------------------------------------------------------

def design_ops(design: str, st: dict, rate: list[float], n: float | None = None, F: float | None = None) -> float:
    """Operations of one epoch of ``design`` (a clause's share for the one-thread-per-clause designs) at ``n``
    training examples and ``F`` features (default: the setting's), with ``rate`` events per clause visit."""
    d = DESIGNS[design]
    n = st["n_train"] if n is None else n
    F = st["n_features"] if F is None else F
    visits = float(n) * st["n_clauses"] * st["classes"]
    cost = cm.epoch_cost(round(n), st["n_clauses"], round(F), st["classes"],
                         append_negated=st["append_negated"], state_bits=st["state_bits"],
                         type_ia=rate[0] * visits, type_ib=rate[1] * visits, type_ii=rate[2] * visits,
                         boost_true_positive=st["boost"], draw_scheme=d["draw_scheme"], s=st["s"],
                         chunk_words=d["chunk_words"], eval_words="max")
    return (cm.per_clause(cost) if d["per_clause"] else cost).ops


def invert(fn, target: float, lo: float = 1.0, hi: float = 1e10) -> float | None:
    """The integer x in [lo, hi] where the increasing ``fn(x)`` first reaches ``target`` (None outside)."""
    if fn(lo) >= target:
        return lo if fn(lo) == target else None
    if fn(hi) < target:
        return None
    while hi - lo > 1:
        mid = math.floor(math.sqrt(lo * hi)) if hi > 4 * lo else (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        if fn(mid) >= target:
            hi = mid
        else:
            lo = mid
    return float(hi)


# -- the times ----------------------------------------------------------------------------------------------------

def paper_times(reference: Path, datasets) -> dict:
    """Per dataset the paper's per-epoch seconds of each design (None where it gives none)."""
    from .reference import paper_value

    frame = common.read_reference(reference, error=TimeModelError)
    out = {}
    for ds in datasets:
        gpu, _ = paper_value(frame, "Table 4", ds, "tm_gpu", "train_time")
        speedup, _ = paper_value(frame, "Table 3", ds, "tm_gpu", "speedup")
        if not math.isfinite(gpu):
            raise TimeModelError(f"{reference}: no Table 4 tm_gpu train_time row for {ds}; restore the reference table")
        out[ds] = {"cuda_paper_code": gpu, "cuda_one_thread": gpu,
                   "pytm_indexed": gpu * speedup if math.isfinite(speedup) else None,
                   "table4_s": gpu, "table3_speedup": speedup if math.isfinite(speedup) else None}
    return out


def _span(epochs) -> str:
    return f"{min(epochs)}" if min(epochs) == max(epochs) else f"{min(epochs)}-{max(epochs)}"


def _epochs_after_first(rec: dict) -> tuple[list[int], list[float]]:
    ep = [e for e in rec["epochs"] if e.get("epoch", 0) > 1] or rec["epochs"]
    return [int(e["epoch"]) for e in ep], [float(e["train_s"]) for e in ep]


def record_checks(results: Path, st: dict, impl: str, design: str, sources: list) -> list[dict]:
    """Seconds per operation of our run records of ``impl`` (epochs after the first), per device."""
    folder = main_folder(results, st["experiment"], impl, like=Path(st["folder"]))
    if folder is None:
        return []
    by_device: dict = {}
    for path, rec in _records(folder, results):
        prov = rec.get("provenance") or {}
        device = (prov.get("gpu") or {}).get("name") or prov.get("cpu_model") or "unknown device"
        epochs, times = _epochs_after_first(rec)
        own = [e.get("diagnostics") for e in rec["epochs"] if e.get("epoch") in epochs]
        if impl.startswith("tm_gpu") and all(isinstance(d, dict) and all(k in d for k in EVENT_KEYS) for d in own):
            visits = float(st["n_train"]) * st["n_clauses"] * st["classes"]
            rate = np.mean([[d[k] / visits for k in EVENT_KEYS] for d in own], axis=0).tolist()
            events_from = "the record's own diagnostics"
        else:
            rate = rates(st, epochs)
            events_from = "tm_cpu records, same epochs"
        ops = design_ops(design, st, rate)
        by_device.setdefault(device, []).append((float(np.mean(times)), ops, epochs, events_from))
        sources.append({"path": path.as_posix(), "sha256": _sha256(path)})
    out = []
    for device, runs in by_device.items():
        t, ops = float(np.mean([r[0] for r in runs])), float(np.mean([r[1] for r in runs]))
        out.append({"dataset": st["experiment"], "device": device, "source": folder.as_posix(), "runs": len(runs),
                    "epochs": _span(runs[0][2]), "events_from": runs[0][3], "time_s": t,
                    "ops": ops, "ns_per_op": 1e9 * t / ops})
    return out


def benchmark_checks(paths: list[Path], st: dict, sources: list) -> list[dict]:
    """Seconds per operation of PyTsetlinMachineCUDA (``pytm_cuda``) in GPU benchmark records, per GPU."""
    by_gpu: dict = {}
    for path in paths:
        bench = _read_benchmark(path)
        gpu = (bench.get("gpu") or {}).get("name") or "unknown GPU"
        for s in bench.get("settings") or []:
            r = (s.get("results") or {}).get("pytm_cuda")
            if s.get("setting") != st["experiment"] or not r:
                continue
            warm = int((s.get("epochs") or {}).get("warmup", 1))
            for seed in r.get("per_seed") or []:
                times = [float(t) for t in seed.get("epoch_s") or []]
                if times:
                    entry = by_gpu.setdefault(gpu, {"times": [], "epochs": set(), "files": set()})
                    entry["times"] += times
                    entry["epochs"] |= set(range(warm + 1, warm + len(times) + 1))
                    entry["files"].add(path.as_posix())
            sources.append({"path": path.as_posix(), "sha256": _sha256(path)})
    out = []
    for gpu, e in by_gpu.items():
        epochs = sorted(e["epochs"])
        ops = design_ops("cuda_paper_code", st, rates(st, epochs))
        t = float(np.median(e["times"]))
        out.append({"dataset": st["experiment"], "device": gpu, "source": ", ".join(sorted(e["files"])),
                    "runs": len(e["times"]), "epochs": _span(epochs),
                    "events_from": "tm_cpu records, same epochs", "time_s": t, "ops": ops,
                    "ns_per_op": 1e9 * t / ops})
    return out


# -- the same-GPU record ----------------------------------------------------------------------------------------------

SAME_GPU_NAME = "table4_same_gpu"
SAME_GPU_QUESTION = ("Where our GPU time is far from the paper's Table 4 time, is it the GPU or the code? The authors' "
                     "CUDA code (PyTsetlinMachineCUDA) and our GPU builds, timed side by side on one GPU, beside the "
                     "paper's time.")
SAME_GPU_IMPLS = ("pytm_cuda", "tm_gpu", "tm_gpu_warp")
SAME_GPU_RULE = ("Per dataset and GPU: each benchmark file's median epoch after a warm-up epoch, the authors' code and "
                 "ours timed in one process on one GPU (benchmarks/results/gpu_*.json); the median over the files of "
                 "that GPU. The authors' code on our GPU over the paper's time is what the GPU (and whatever else "
                 "differed on the paper's Colab machine) changes; our one-thread build (the paper's design) over the "
                 "authors' code on one GPU is what our implementation of that design changes. Their product is our "
                 "time over the paper's.")


def build_same_gpu(reference, gpu_benchmarks) -> dict:
    """The ``same_gpu`` evidence record from GPU benchmark records holding PyTsetlinMachineCUDA."""
    rows: dict = {}
    sources = []
    for path in map(Path, gpu_benchmarks):
        bench = _read_benchmark(path)
        gpu = (bench.get("gpu") or {}).get("name") or "unknown GPU"
        sources.append({"path": path.as_posix(), "sha256": _sha256(path)})
        for s in bench.get("settings") or []:
            res = s.get("results") if isinstance(s, dict) else None
            if not isinstance(res, dict) or not all(isinstance(res.get(i, {}), dict) for i in SAME_GPU_IMPLS):
                raise TimeModelError(f"{path}: field 'settings' holds an entry without a 'results' mapping of "
                                     "implementations; pass GPU benchmark records (benchmarks/results/gpu_*.json)")
            if not (res.get("pytm_cuda") or {}).get("median_epoch_s"):
                continue
            if not isinstance(s.get("setting"), str):
                raise TimeModelError(f"{path}: a setting without its name (field 'setting'); pass GPU "
                                     "benchmark records")
            row = rows.setdefault((s["setting"], gpu), {"files": [], **{i: [] for i in SAME_GPU_IMPLS}})
            row["files"].append(path.as_posix())
            for impl in SAME_GPU_IMPLS:
                if (t := (res.get(impl) or {}).get("median_epoch_s")) is not None:
                    row[impl].append(float(t))
    if not rows:
        raise TimeModelError("no GPU benchmark record with PyTsetlinMachineCUDA (results.pytm_cuda) among "
                             f"{len(sources)} file(s); run the GPU campaign's bench step and pass its records")
    paper = paper_times(reference, sorted({ds for ds, _ in rows}))
    out = []
    for (ds, gpu), row in sorted(rows.items()):
        med = {i: float(np.median(row[i])) if row[i] else None for i in SAME_GPU_IMPLS}
        paper_s = paper[ds]["table4_s"]
        out.append({"dataset": ds, "gpu": gpu, "files": row["files"], "paper_s": paper_s,
                    **{f"{i}_s": med[i] for i in SAME_GPU_IMPLS},
                    "authors_over_paper": med["pytm_cuda"] / paper_s,
                    "tm_gpu_over_authors": med["tm_gpu"] / med["pytm_cuda"] if med["tm_gpu"] else None,
                    "tm_gpu_over_paper": med["tm_gpu"] / paper_s if med["tm_gpu"] else None})
    return {"schema": SCHEMA, "kind": "same_gpu", "name": SAME_GPU_NAME, "question": SAME_GPU_QUESTION,
            "rule": SAME_GPU_RULE,
            "provenance": {**provenance("same_gpu"), "sources": sources}, "rows": out}


def render_same_gpu(ev: dict, source: str) -> str:
    md = [HEADER.format(source=source), "", f"#### Evidence (Table 4 times): {ev['question']}", "", ev["rule"], "",
          "| dataset | GPU | benchmark files | paper (Table 4) s | PyTsetlinMachineCUDA s | its time / paper's | "
          "tm_gpu s | tm_gpu / PyTsetlinMachineCUDA | tm_gpu / paper's | tm_gpu_warp s |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in ev["rows"]:
        cells = [_n(r[k]) for k in ("paper_s", "pytm_cuda_s", "authors_over_paper", "tm_gpu_s", "tm_gpu_over_authors",
                                    "tm_gpu_over_paper", "tm_gpu_warp_s")]
        md.append(f"| {dataset_label(r['dataset'])} | {r['gpu']} | {len(r['files'])} | "
                  + " | ".join(cells) + " |")
    return "\n".join(md) + "\n"


# -- the record -----------------------------------------------------------------------------------------------------

def _spread(checks: list[dict]) -> dict:
    """Largest over smallest seconds per operation of our runs, on the device with most datasets checked."""
    by_device: dict = {}
    for c in checks:
        by_device.setdefault(c["device"], []).append(c)
    if not by_device:
        return {"device": None, "datasets": [], "factor": None}
    device, rows = max(by_device.items(), key=lambda kv: len(kv[1]))
    ns = [r["ns_per_op"] for r in rows]
    return {"device": device, "datasets": [r["dataset"] for r in rows], "factor": max(ns) / min(ns)}


def build_time_model(results, reference, gpu_benchmarks=(), calibration=CALIBRATION, targets=TARGETS,
                     stated=None, name: str = NAME) -> dict:
    """The ``time_model`` evidence record (see the module's docstring)."""
    results, reference = Path(results), Path(reference)
    stated = STATED if stated is None else stated
    for t in targets:
        if t not in stated:
            raise TimeModelError(f"target {t!r}: no stated sizes for it (STATED); add them or drop the target")
    if not reference.is_file():
        raise TimeModelError(f"{reference}: the paper's reference numbers are not there; pass --reference "
                            "paper_tables/reference/paper_numbers.csv")
    sources: list = [{"path": reference.as_posix(), "sha256": _sha256(reference)}]
    datasets = list(dict.fromkeys([*calibration, *targets]))
    settings = {ds: setting(results, ds, sources) for ds in datasets}
    times = paper_times(reference, datasets)
    bench_paths = [Path(p) for p in gpu_benchmarks]
    designs = []
    for key, d in DESIGNS.items():
        checks = []
        for ds in datasets:  # the model checked on our run records of the design, or on the GPU benchmarks
            checks += (record_checks(results, settings[ds], d["records"], key, sources) if d["records"]
                       else benchmark_checks(bench_paths, settings[ds], sources))
        spread = _spread(checks)
        factor = spread["factor"] or 1.0
        paper = []
        for ds in datasets:
            t = times[ds][key]
            if t is None:
                continue
            ops = {v: design_ops(key, settings[ds], rates(settings[ds], ep)) for v, ep in EVENT_VARIANTS.items()}
            paper.append({"dataset": ds, "time_s": t, "ops": ops,
                          "ns_per_op": {v: 1e9 * t / o for v, o in ops.items()}})
        by_ds = {p["dataset"]: p for p in paper}
        for p in paper:  # the paper's time against the model calibrated on each calibration dataset
            p["time_over_model"] = {c: by_ds[p["dataset"]]["ns_per_op"][CENTRAL_VARIANT]
                                    / by_ds[c]["ns_per_op"][CENTRAL_VARIANT] for c in calibration if c in by_ds}
        implied = []
        for tg in targets:
            if tg not in by_ds:
                continue
            st, s = settings[tg], stated[tg]
            n_stated = round(s["examples"] * s["train_fraction"])
            for cal in calibration:
                if cal not in by_ds:
                    continue
                for v, ep in EVENT_VARIANTS.items():
                    rate = rates(st, ep)
                    sec_per_op = 1e-9 * by_ds[cal]["ns_per_op"][v]
                    row = {"target": tg, "calibration": cal, "events": v, "time_s": by_ds[tg]["time_s"],
                           "stated_train_examples": n_stated, "stated_features": s["features"]}
                    # the operations as a function of the feature count (at n examples) or of the example count
                    fns = {"features_at_stated_examples": partial(design_ops, key, st, rate, n_stated),
                           "features_at_our_examples": partial(design_ops, key, st, rate, None),
                           "examples_at_stated_features": partial(design_ops, key, st, rate, F=s["features"])}
                    # the calibrated seconds per operation, and the same off by the model's spread either way
                    for tag, k in (("", sec_per_op), ("_slower", sec_per_op * factor),
                                   ("_faster", sec_per_op / factor)):
                        for q, fn in fns.items():
                            row[q + tag] = invert(fn, by_ds[tg]["time_s"] / k)
                    implied.append(row)
        summary = []
        for tg in targets:
            rows = [r for r in implied if r["target"] == tg]
            if not rows:
                continue
            central = [r for r in rows if r["calibration"] == calibration[0] and r["events"] == CENTRAL_VARIANT]
            for q in ("features_at_stated_examples", "features_at_our_examples", "examples_at_stated_features"):
                vals = [r[q + tag] for r in rows for tag in SPREAD_TAGS if r[q + tag] is not None]
                summary.append({"target": tg, "quantity": q, "central": central[0][q] if central else None,
                                "low": min(vals) if vals else None, "high": max(vals) if vals else None,
                                "open_ended": any(r[q + tag] is None for r in rows for tag in SPREAD_TAGS)})
        designs.append({"key": key, **{k: d[k] for k in ("label", "paper", "check", "draw_scheme", "per_clause")},
                        "checks": checks, "spread": spread, "paper_times": paper, "implied": implied,
                        "summary": summary})
    unique = list({src["path"]: src for src in sources}.values())  # a file read twice has one digest
    ev = {"schema": SCHEMA, "kind": KIND, "name": name, "question": QUESTION,
          "provenance": provenance("the cost model (asynctm.costmodel) calibrated on our records and benchmarks and "
                                   "on the paper's times, then inverted; nothing trained", code=[Path(cm.__file__)]),
          "sources": unique, "stated": {t: stated[t] for t in targets}, "calibration": list(calibration),
          "targets": list(targets), "event_variants": dict(EVENT_VARIANTS),
          "settings": {ds: {k: v for k, v in st.items() if k != "rates_by_epoch"}
                       | {"rates": {v: rates(st, ep) for v, ep in EVENT_VARIANTS.items()}}
                       for ds, st in settings.items()},
          "paper_times": times, "designs": designs}
    return ev


# -- rendering ------------------------------------------------------------------------------------------------------

def _n(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _range(s: dict) -> str:
    lo, hi = _n(s["low"]), _n(s["high"])
    return f"{_n(s['central'])} ({lo}-{hi}{', open-ended' if s['open_ended'] else ''})"


def render_time_model(ev: dict, source: str) -> str:
    md = [HEADER.format(source=source), "", f"#### Evidence (Table 4 times): {ev['question']}", ""]
    md += ["Sizes (our records; WSD Apple and Java are the authors' own files, so these are the paper's sizes too) "
           "and feedback events per clause visit (mean of our tm_cpu records over all epochs):", "",
           "| dataset | training examples | features | words | clauses x classes | Ia / Ib / II per visit |",
           "|---|---:|---:|---:|---:|---:|"]
    for ds, st in ev["settings"].items():
        r = st["rates"][CENTRAL_VARIANT]
        md.append(f"| {dataset_label(ds)} | {st['n_train']:,} | {st['n_features']:,} | "
                  f"{cm.literal_words(st['n_features'], st['append_negated']):,} | {st['n_clauses']:,} x "
                  f"{st['classes']} | {' / '.join(f'{x:.4f}' for x in r)} |")
    md += ["", "Stated by the paper: " + "; ".join(
        f"{dataset_label(t)}: {s['examples']:,} examples ({s['examples_source']}), training {s['train_fraction']:.0%} "
        f"({s['train_source']}), {s['features']:,} features ({s['features_source']})"
        for t, s in ev["stated"].items()) + ".", ""]
    for d in ev["designs"]:
        md += [f"##### {d['label']}", "", f"Paper's time: {d['paper']}. Model check: {d['check']}.", ""]
        if d["checks"]:
            md += ["| our run | device | epochs | runs | s/epoch | operations | ns per operation |",
                   "|---|---|---:|---:|---:|---:|---:|"]
            for c in d["checks"]:
                md.append(f"| {dataset_label(c['dataset'])} | {c['device']} | {c['epochs']} | {c['runs']} | "
                          f"{_n(c['time_s'])} | {c['ops']:.3g} | {c['ns_per_op']:.3g} |")
            sp = d["spread"]
            spread_on = ", ".join(map(dataset_label, sp["datasets"]))
            md += ["", f"The model's spread on our runs ({sp['device']}, {spread_on}): "
                   f"largest / smallest ns per operation = {sp['factor']:.2f}; it widens the ranges below.", ""]
        else:
            md += ["No run of ours checks this design (no records or benchmarks of it).", ""]
        cal = ev["calibration"]
        md += ["| paper | s/epoch | operations at our sizes | ns per operation | " +
               " | ".join(f"time / model calibrated on {dataset_label(c)}" for c in cal) + " |",
               "|---|---:|---:|---:|" + "---:|" * len(cal)]
        for p in d["paper_times"]:
            md.append(f"| {dataset_label(p['dataset'])} | {_n(p['time_s'])} | {p['ops'][CENTRAL_VARIANT]:.3g} | "
                      f"{p['ns_per_op'][CENTRAL_VARIANT]:.3g} | "
                      + " | ".join(_n(p["time_over_model"].get(c)) for c in cal) + " |")
        md += ["", f"What the paper's times would take (central: calibrated on {dataset_label(cal[0])}, events of all "
               "epochs; range: both calibrations, the three event variants, and the model's spread):", "",
               "| dataset | features at the stated training examples | features at our training examples | "
               "training examples at the stated features |", "|---|---:|---:|---:|"]
        for tg in ev["targets"]:
            rows = {s["quantity"]: s for s in d["summary"] if s["target"] == tg}
            if not rows:
                continue
            st = ev["stated"][tg]
            n_st = round(st["examples"] * st["train_fraction"])
            md.append(f"| {dataset_label(tg)} (stated: {n_st:,} training examples, {st['features']:,} features; ours: "
                      f"{ev['settings'][tg]['n_train']:,}, {ev['settings'][tg]['n_features']:,}) | "
                      f"{_range(rows['features_at_stated_examples'])} | {_range(rows['features_at_our_examples'])} | "
                      f"{_range(rows['examples_at_stated_features'])} |")
        md.append("")
    md += ["Operations: `asynctm.costmodel.epoch_cost` (every evaluation reads all words, every feedback chunk "
           "acts), with the design's 1/s draws; for the one-thread-per-clause designs one clause's share (the "
           "critical path; on a GPU with fewer cores than clause threads, e.g. IMDb's 14,000 on a V100's 5,120 cores, "
           "an epoch takes longer than that, so the paper's time would be further below what the sizes take). "
           "Feedback events per clause visit are our records' and are kept when the sizes change. "
           "pyTsetlinMachine's paper time assumes Table 4's Colab GPU ran as fast as Table 3's V100. "
           "open-ended: some variant's time is beyond what any size up to 10^10 reaches, or below the work of a "
           "single feature or example.", ""]
    md.append(f"Built from {len(ev['sources'])} files (run records, benchmarks, the reference table); the record "
              "lists them with their sha256.")
    md.append("")
    return "\n".join(md)


# -- command line ---------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help=f"the evidence record, named {NAME}.json or {SAME_GPU_NAME}.json")
    ap.add_argument("--results", default="results", help="the run records (default results)")
    ap.add_argument("--reference", default="paper_tables/reference/paper_numbers.csv")
    ap.add_argument("--gpu-benchmark", action="append", default=None,
                    help="GPU benchmark records with PyTsetlinMachineCUDA (default benchmarks/results/gpu_*.json)")
    return run_command(_command, ap.parse_args(argv), TimeModelError)


def _command(args) -> None:
    common.check_out(args.out, NAME, SAME_GPU_NAME, error=TimeModelError)
    benches = args.gpu_benchmark
    if benches is None:
        benches = sorted(globbing.glob("benchmarks/results/gpu_*.json"))
    write_json_atomic(args.out, build_same_gpu(args.reference, benches) if Path(args.out).stem == SAME_GPU_NAME
                      else build_time_model(args.results, args.reference, benches))
    print(args.out)


if __name__ == "__main__":
    sys.exit(main())
