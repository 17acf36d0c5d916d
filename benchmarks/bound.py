#!/usr/bin/env python
"""How close our CPU builds come to what the host allows: per setting and build of a benchmark, the achieved
per-epoch time against the cost model's bound (``asynctm.costmodel``) on the host's measured limits.

    python benchmarks/bound.py benchmarks/results/<bench>.json --limits benchmarks/results/host_limits_<host>.json \\
        [--results results] [--data-dir data] [--classes SETTING=K ...] [--out-dir benchmarks/results]

Reads a ``bench_tm.py`` record and a ``host_limits.py`` record of the same host model (CPU model and usable
cores; anything else is refused) and writes ``<bench>_bound.json`` and ``<bench>_bound.md`` beside the benchmark
(or in ``--out-dir``). Only our builds (``asynctm``, CPU backend) are bounded: the peers run other algorithms.

Feedback events: a benchmark record keeps none, so they are estimated from the run records of the same
experiment and hyperparameters (``<results>/<experiment>/tm_cpu/n<clauses>_T<T>_s<s>_e*/seed*.json``, their
``diagnostics``): the mean Type Ia / Ib / II events per clause visit over the epochs the benchmark timed (warm-up
epoch 1, then epochs 2 .. timed + 1), scaled to the benchmark's training examples and clauses. The output names
the records, the epochs and the rates used.

Two bounds per row: **least work** (each evaluation reads the fewest words the counters allow, feedback acts in
no chunk beyond its always-run tests) and **all work** (every word read, every chunk updated); each is the largest
of compulsory bytes / bandwidth, word operations / word throughput and scalar operations / scalar throughput for
the row's thread count. ``fraction`` = bound / achieved: 1 would be the host's limit.

GPU benchmark records (``benchmarks/bench_gpu.py``, ``gpu_<gpu>_<commit>.json``: per setting the results by build)
are bounded on a GPU's limits (``benchmarks/gpu_limits.py``, of the same GPU model; anything else is refused):
our two GPU builds (``tm_gpu``, one thread per clause, the paper's design; ``tm_gpu_warp``, a warp per clause),
not the authors' code (``pytm_cuda``). The work is the same epoch counted with the GPU's chunks
(``costmodel.GPU_CHUNK_WORDS``), so both builds share one bound; the feedback events come from the tm_cpu run
records as above (one algorithm on both). Written as ``bound_<bench>.json`` / ``.md``: not ``gpu_*.json``, which
``asynctm.artifacts.evidence_cost`` reads as GPU benchmark records.
"""

from __future__ import annotations

import argparse
import glob
import math
import sys
from pathlib import Path

from asynctm.artifacts.evidence_common import _sha256, dotted_field, read_json_object

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

EVENT_KEYS = ("type_ia_feedback", "type_ib_feedback", "type_ii_feedback")


class BoundError(ValueError):
    """Input the bounds cannot be computed from; the message names the file, the field and the fix."""


def _read(path: Path, what: str) -> dict:
    return read_json_object(path, what, BoundError)


def _get(obj: dict, dotted: str, path: Path, fix: str):
    return dotted_field(obj, dotted, path, fix, BoundError)


def experiment_of(setting: dict) -> str:
    """The experiment a benchmark setting ran: bench_tm.py's setting names map through its SETTINGS; the GPU
    benchmarks name the experiment itself."""
    name = setting["setting"]
    try:
        from bench_tm import SETTINGS
    except Exception:  # noqa: BLE001 - bench_tm needs the pipeline; without it the names are taken as they are
        SETTINGS = {}
    return SETTINGS.get(name, {}).get("experiment", name)


def _s_name(s: float) -> str:
    return f"{float(s):g}"


def event_rates(results: Path, experiment: str, hp: dict, n_classes: int, epochs: list[int]) -> dict:
    """Mean Type Ia / Ib / II events per clause visit over ``epochs`` in the run records of ``experiment`` at the
    benchmark's clauses, T and s (the folder with the most epochs), with the records used."""
    pattern = f"{experiment}/tm_cpu/n{hp['n_clauses']}_T{hp['T']}_s{_s_name(hp['s'])}_e*"
    folders = sorted(Path(p) for p in glob.glob(str(results / pattern)) if Path(p).is_dir())
    if not folders:
        raise BoundError(f"{results / pattern}: no run records of this setting, so no feedback counts; run the "
                         f"experiment's tm_cpu records or pass --results")
    folder = max(folders, key=lambda p: int(p.name.rsplit("_e", 1)[1]) if p.name.rsplit("_e", 1)[1].isdigit() else 0)
    rates = {k: [] for k in EVENT_KEYS}
    used, missing = [], []
    for path in sorted(folder.glob("seed*.json")):
        rec = _read(path, "run record")
        n = _get(rec, "dataset.n_train", path, "rerun its run")
        by_epoch = {e.get("epoch"): e for e in _get(rec, "epochs", path, "rerun its run")}
        visits = float(n) * hp["n_clauses"] * n_classes
        took = False
        for k in epochs:
            e = by_epoch.get(k)
            diag = (e or {}).get("diagnostics")
            if not isinstance(diag, dict) or any(key not in diag for key in EVENT_KEYS):
                missing.append(k)
                continue
            for key in EVENT_KEYS:
                rates[key].append(float(diag[key]) / visits)
            took = True
        if took:
            used.append({"path": path.as_posix(), "sha256": _sha256(path), "n_train": n})
    if not used:
        raise BoundError(f"{folder}: no record has diagnostics for epochs {epochs[0]}-{epochs[-1]}; rerun the "
                         "records with the current code (they count feedback events)")
    return {"records": used, "epochs": epochs, "epochs_missing": sorted(set(missing)),
            "per_visit": {k: float(sum(v) / len(v)) for k, v in rates.items()},
            "samples": len(rates[EVENT_KEYS[0]])}


def classes_of(setting: dict, experiment: str, data_dir: Path | None, given: dict) -> tuple[int, str]:
    """Classes of a setting: 1 for regression, else --classes, else the processed dataset's class names."""
    if setting["setting"] in given:
        return given[setting["setting"]], "--classes"
    if setting.get("task") == "regression":
        return 1, "regression: one output"
    why = ""
    if data_dir is not None:
        try:
            from asynctm.config_check import load_config
            from asynctm.datasets import class_count
            from asynctm.experiments.plan import experiment as plan_experiment

            n, meta = class_count(data_dir, plan_experiment(load_config(HERE.parent / "config" / "config.yaml"),
                                                            experiment))
            return n, meta.as_posix()
        except Exception as exc:  # noqa: BLE001 - any failure here is a missing class count, reported below
            why = f" ({exc})"
    raise BoundError(f"setting {setting['setting']!r}: the number of classes is unknown{why}; pass --classes "
                     f"{setting['setting']}=K or --data-dir with its processed dataset")


def _setting_inputs(setting: dict, bench_path: Path, hp: dict, ds: dict, results: Path, data_dir: Path | None,
                    classes: dict, fix: str) -> dict:
    """A setting's experiment, classes, sizes and estimated feedback events per epoch (from its run records)."""
    experiment = experiment_of(setting)
    n_classes, classes_from = classes_of(setting, experiment, data_dir, classes)
    timed = int(_get(setting, "epochs.timed", bench_path, fix))
    warm = int((setting.get("epochs") or {}).get("warmup", 1))
    rates = event_rates(results, experiment, hp, n_classes, list(range(warm + 1, warm + timed + 1)))
    n, F = int(ds["n_train"]), int(ds["n_features"])
    visits = float(n) * hp["n_clauses"] * n_classes
    return {"experiment": experiment, "n_classes": n_classes, "classes_from": classes_from, "rates": rates,
            "n": n, "F": F, "events": {k: rates["per_visit"][k] * visits for k in EVENT_KEYS}}


def _costs(hp: dict, inputs: dict, threads: int, chunk_words: int):
    """The epoch's least and all work (``asynctm.costmodel.epoch_cost``)."""
    from asynctm import costmodel as cm

    events = inputs["events"]
    common = {"append_negated": hp.get("append_negated", True), "state_bits": hp.get("state_bits", 8),
              "type_ia": events["type_ia_feedback"], "type_ib": events["type_ib_feedback"],
              "type_ii": events["type_ii_feedback"], "batch_size": hp.get("batch_size", 100),
              "boost_true_positive": hp.get("boost_true_positive", True), "threads": threads,
              "chunk_words": chunk_words}
    args = (inputs["n"], hp["n_clauses"], inputs["F"], inputs["n_classes"])
    return (cm.epoch_cost(*args, eval_words="min", acting=0.0, **common),
            cm.epoch_cost(*args, eval_words="max", acting=1.0, **common))


def _bounds(row: dict, least, most, host, achieved: float, cpu_per_thread: float | None, cpu: bool = True) -> None:
    """``row["least_work"]`` and ``row["all_work"]``: each bound, its fraction of ``achieved`` (and on a CPU of the
    CPU seconds per thread), the limiting term and the counts."""
    from asynctm import costmodel as cm

    for tag, cost in (("least_work", least), ("all_work", most)):
        terms = cm.bound_terms(cost, host)
        bound = cm.bound_s(cost, host)
        row[tag] = {"bound_s": bound, "fraction": bound / achieved,
                    "fraction_of_cpu_s": bound / cpu_per_thread if cpu_per_thread else None,
                    "limit": cm.limiting_term(cost, host),
                    "terms_s": terms, "word_ops": cost.word_ops, "scalar_ops": cost.scalar_ops,
                    "bytes_compulsory": cost.bytes_compulsory, "bytes_streamed": cost.bytes_streamed}
        if not cpu:  # a GPU epoch's CPU seconds are the host's, waiting
            del row[tag]["fraction_of_cpu_s"]


def _feedback_source(rates: dict) -> dict:
    return {"records": [u["path"] for u in rates["records"]],
            "epochs": f"{rates['epochs'][0]}-{rates['epochs'][-1]}",
            "epochs_missing": rates["epochs_missing"], "samples": rates["samples"],
            "records_n_train": sorted({u["n_train"] for u in rates["records"]}),
            "per_visit": rates["per_visit"]}


def bound_rows(bench: dict, bench_path: Path, limits: dict, results: Path, data_dir: Path | None,
               classes: dict, clock: str = "cpu") -> list[dict]:
    from asynctm import costmodel as cm

    rows = []
    for setting in _get(bench, "settings", bench_path, "rerun bench_tm.py"):
        name = setting.get("setting")
        hp = _get(setting, "hyperparameters", bench_path, "rerun bench_tm.py")
        ds = _get(setting, "dataset", bench_path, "rerun bench_tm.py")
        ours = [r for r in setting.get("results", []) if r.get("peer") == "asynctm"
                and (r.get("options") or {}).get("backend") == "cpu" and r.get("median_epoch_s")]
        if not ours:
            continue
        inputs = _setting_inputs(setting, bench_path, hp, ds, results, data_dir, classes, "rerun bench_tm.py")
        n, F, events = inputs["n"], inputs["F"], inputs["events"]
        for r in ours:
            threads = int(r["options"].get("n_threads") or 1)
            try:
                host = cm.host_from_limits(limits, threads, clock)
            except ValueError as exc:
                raise BoundError(f"host limits: {exc}; run benchmarks/host_limits.py --threads {threads} (or pass "
                                 "--clock wall for a record without CPU-clock rates)") from None
            least, most = _costs(hp, inputs, threads, cm.CPU_CHUNK_WORDS)
            achieved = float(r["median_epoch_s"])
            cpu = sorted(float(v) for v in r.get("epoch_cpu_s") or [])
            cpu_per_thread = cpu[len(cpu) // 2] / threads if cpu else None  # the median epoch's CPU s per thread
            row = {"setting": name, "experiment": inputs["experiment"], "label": r.get("label"), "threads": threads,
                   "n_train": n, "n_features": F, "n_classes": inputs["n_classes"],
                   "classes_from": inputs["classes_from"], "n_clauses": hp["n_clauses"],
                   "words": least.sizes["words"],
                   "achieved_median_epoch_s": achieved, "epochs_timed": len(r.get("epoch_s") or []),
                   "cpu_per_wall": r.get("cpu_per_wall"), "cpu_s_per_thread": cpu_per_thread,
                   "events_per_epoch": events}
            _bounds(row, least, most, host, achieved, cpu_per_thread)
            row["feedback_source"] = _feedback_source(inputs["rates"])
            rows.append(row)
    if not rows:
        raise BoundError(f"{bench_path}: no timed result of our CPU build (peer asynctm, backend cpu); pass a "
                         "bench_tm.py record that ran asynctm")
    return rows


def check_same_host(bench: dict, bench_path: Path, limits: dict, limits_path: Path) -> None:
    b, h = bench.get("cpu") or {}, limits.get("cpu") or {}
    for key in ("model", "usable_cores"):
        if b.get(key) is None or h.get(key) is None:
            raise BoundError(f"{bench_path if b.get(key) is None else limits_path}: field 'cpu.{key}' is missing; "
                             "rerun what writes it")
    if (b["model"], b["usable_cores"]) != (h["model"], h["usable_cores"]):
        raise BoundError(f"{limits_path}: measured on {h['model']} ({h['usable_cores']} cores), the benchmark ran on "
                         f"{b['model']} ({b['usable_cores']} cores); run benchmarks/host_limits.py on the benchmark's "
                         "host model (or the benchmark on this one)")


def _g(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g}"


def _pct(b: dict) -> str:
    cpu = b.get("fraction_of_cpu_s")
    return f"{b['fraction']:.1%}" + (f" ({cpu:.1%})" if cpu is not None else "")


def markdown(out: dict) -> str:
    lim = out["host_limits"]
    md = [f"<!-- generated by benchmarks/bound.py from {out['benchmark']['path']} and {lim['path']}; do not edit by "
          "hand -->", "", f"# Achieved per-epoch time against the cost model's bound: {out['benchmark']['name']}", "",
          f"Host: {lim['cpu_model']} ({lim['usable_cores']} cores); limits measured {lim['time_utc']} "
          f"(1-minute load {lim['load']}), by the {lim['clock']} clock"
          + (" (work per CPU second of the slowest thread: the limits when our threads have their cores)"
             if lim["clock"] == "cpu" else "") + f". Benchmark: {out['benchmark']['time_utc']}, 1-, 5-, 15-minute "
          f"load {', '.join(f'{v:.2f}' for v in out['benchmark']['load_average_start'] or [])} at its start.", "",
          "| threads | copy GB/s | triad GB/s | word ops G/s | scalar ops G/s |", "|---:|---:|---:|---:|---:|"]
    for t, m in sorted(lim["measurements"].items(), key=lambda kv: int(kv[0])):
        md.append(f"| {t} | {m['copy_bytes_s'] / 1e9:.1f} | {m['triad_bytes_s'] / 1e9:.1f} | "
                  f"{m['word_ops_s'] / 1e9:.1f} | {m['scalar_ops_s'] / 1e9:.1f} |")
    md += ["", "| setting | build | examples x clauses x words | Ia / Ib / II per epoch (estimated) | achieved s/epoch "
           "| CPU s/epoch per thread | bound, least work (limit) | fraction | bound, all work (limit) | fraction |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in out["rows"]:
        ev = r["events_per_epoch"]
        lw, aw = r["least_work"], r["all_work"]
        md.append(f"| {r['setting']} | {r['label']} | {r['n_train']:,} x {r['n_clauses'] * r['n_classes']:,} x "
                  f"{r['words']:,} | {' / '.join(f'{ev[k]:,.0f}' for k in EVENT_KEYS)} | "
                  f"{_g(r['achieved_median_epoch_s'])} | {_g(r['cpu_s_per_thread'])} | "
                  f"{_g(lw['bound_s'])} ({lw['limit']}) | {_pct(lw)} | {_g(aw['bound_s'])} ({aw['limit']}) | "
                  f"{_pct(aw)} |")
    md += ["", "Bound: the largest of compulsory bytes / bandwidth (the faster of copy and triad), 32-bit word "
           "operations / word throughput and scalar operations (draws included) / scalar throughput, for the "
           "row's thread count (`asynctm.costmodel`). Least work: each clause evaluation reads one word, except "
           "the Ia + II visits that must output 1, which read all; feedback runs only its always-run tests. All "
           "work: every evaluation reads every word and every feedback chunk updates. fraction = bound / achieved "
           "(in brackets: bound / the median epoch's CPU seconds per thread, which a busy machine inflates less "
           "than the wall clock; the benchmark's cpu/wall per row says how much CPU it got).",
           "", "Feedback events are not in the benchmark record; they are estimated from the run records of the "
           "same experiment and hyperparameters: the mean events per clause visit over the epochs the benchmark "
           "timed, scaled to its examples and clauses:", ""]
    md += _feedback_lines(out["rows"])
    md.append("")
    return "\n".join(md)


def _feedback_lines(rows: list[dict]) -> list[str]:
    md, seen = [], set()
    for r in rows:
        src = r["feedback_source"]
        if r["setting"] in seen:
            continue
        seen.add(r["setting"])
        rate = src["per_visit"]
        folder = src["records"][0].rsplit("/", 1)[0] if src["records"] else "–"
        scaled = "" if src["records_n_train"] == [r["n_train"]] else (
            f"; the records trained on {', '.join(f'{v:,}' for v in src['records_n_train'])} examples, the benchmark "
            f"on {r['n_train']:,} (rates per visit carried over)")
        md.append(f"- {r['setting']}: {len(src['records'])} records in `{folder}`, epochs {src['epochs']} "
                  f"({src['samples']} record-epochs), Ia / Ib / II per visit "
                  f"{' / '.join(f'{rate[k]:.4f}' for k in EVENT_KEYS)}{scaled}.")
    return md


# -- GPU benchmark records (bench_gpu.py: per setting a mapping of builds) ---------------------------------

GPU_FIX = "rerun the GPU benchmark"
PER_CLAUSE = {1: "one thread per clause", 32: "a warp per clause"}


def is_gpu_benchmark(bench: dict) -> bool:
    """A GPU benchmark record keeps each setting's results by build (a mapping); bench_tm.py's, as a list."""
    return any(isinstance(s, dict) and isinstance(s.get("results"), dict) for s in bench.get("settings") or [])


def gpu_builds(setting: dict) -> list[tuple[str, dict, int, str]]:
    """Our GPU builds in a setting's results, timed: ``(build, result, threads per clause, where that came from)``.
    A result that names its peer is ours when it is asynctm on backend cuda; a record that predates the names is
    read by its builds' names (``asynctm.experiments.plan.GPU_THREADS_PER_CLAUSE``: tm_gpu, tm_gpu_warp). The
    authors' code (pytm_cuda) and CPU builds are left out."""
    from asynctm.experiments.plan import GPU_THREADS_PER_CLAUSE

    out = []
    if not isinstance(setting.get("results"), dict):
        return out
    for key, r in setting["results"].items():
        if not isinstance(r, dict) or not r.get("median_epoch_s"):
            continue
        opts = r.get("options") or {}
        if r.get("peer") is not None or opts:
            if r.get("peer") != "asynctm" or opts.get("backend") != "cuda":
                continue
            out.append((key, r, int(opts.get("gpu_threads_per_clause") or 1), "options.gpu_threads_per_clause"))
        elif key in GPU_THREADS_PER_CLAUSE:
            out.append((key, r, GPU_THREADS_PER_CLAUSE[key], "the build's name"))
    return out


def check_same_gpu(bench: dict, bench_path: Path, limits: dict, limits_path: Path) -> None:
    from asynctm import costmodel as cm

    if cm.GPU_LIMITS_KEY not in (limits.get("measurements") or {}):
        raise BoundError(f"{limits_path}: not a GPU's limits record (no measurements.{cm.GPU_LIMITS_KEY}), and the "
                         "benchmark ran on a GPU; run benchmarks/gpu_limits.py on its GPU host and pass that record")
    b, g = (bench.get("gpu") or {}).get("name"), (limits.get("gpu") or {}).get("name")
    if not b or not g:
        raise BoundError(f"{bench_path if not b else limits_path}: field 'gpu.name' is missing; rerun "
                         f"{'the GPU benchmark' if not b else 'benchmarks/gpu_limits.py'}")
    if b != g:
        raise BoundError(f"{limits_path}: measured on {g}, the benchmark ran on {b}; run benchmarks/gpu_limits.py on "
                         "the benchmark's GPU model (or pass that GPU's limits record)")


def _chain(hp: dict, inputs: dict, per_clause: int, achieved: float, limits: dict, shared: bool = False) -> dict:
    """One clause group's critical path (``asynctm.costmodel.chain_rounds``, least evaluation work): its rounds per
    epoch, the achieved seconds per round and, where the limits record measured a dependent load (``chase_s``), the
    bound rounds x that latency and its fraction. A build that keeps the automata in shared memory (``shared``)
    reads them without that latency, so it gets no such bound."""
    from asynctm import costmodel as cm

    ev = inputs["events"]
    c = cm.chain_rounds(inputs["n"], hp["n_clauses"], inputs["F"], inputs["n_classes"], threads_per_clause=per_clause,
                        append_negated=hp.get("append_negated", True), type_ia=ev["type_ia_feedback"],
                        type_ib=ev["type_ib_feedback"], type_ii=ev["type_ii_feedback"])
    gpu = (limits.get("measurements") or {}).get(cm.GPU_LIMITS_KEY, {})
    threads = int(hp["n_clauses"]) * int(inputs["n_classes"]) * per_clause
    out = {"rounds": c["rounds"], "rounds_per_visit": c["rounds_per_visit"], "parts": c["parts"],
           "achieved_s_per_round": achieved / c["rounds"], "threads": threads,
           "resident_share": threads / gpu["threads"] if gpu.get("threads") else None}
    chase = gpu.get("chase_s")
    if isinstance(chase, (int, float)) and chase > 0 and not shared:
        out.update(latency_s=chase, bound_s=c["rounds"] * chase, fraction=c["rounds"] * chase / achieved)
    return out


def gpu_bound_rows(bench: dict, bench_path: Path, limits: dict, results: Path, data_dir: Path | None,
                   classes: dict) -> list[dict]:
    """Per setting and GPU build of ours, the bound on the GPU's limits: the epoch's work with the GPU's chunks
    (``GPU_CHUNK_WORDS``: one 1/s draw per 2 words) and ``threads=1`` (the GPU build keeps no per-thread copies of
    the tallies, ``TM_TALLY_VIEWS 0``, and adds each change at once, which the visits' operations count; the
    model's tally-sync term stays that of one CPU thread, a small over-count)."""
    from asynctm import costmodel as cm

    try:
        host = cm.gpu_host_from_limits(limits)
    except ValueError as exc:
        raise BoundError(f"GPU limits: {exc}; rerun benchmarks/gpu_limits.py") from None
    rows = []
    for setting in _get(bench, "settings", bench_path, GPU_FIX):
        builds = gpu_builds(setting)
        if not builds:
            continue
        hp = _get(setting, "hyperparameters", bench_path, GPU_FIX)
        ds = _get(setting, "dataset", bench_path, GPU_FIX)
        inputs = _setting_inputs(setting, bench_path, hp, ds, results, data_dir, classes, GPU_FIX)
        least, most = _costs(hp, inputs, 1, cm.GPU_CHUNK_WORDS)
        for key, r, per_clause, per_clause_from in builds:
            achieved = float(r["median_epoch_s"])
            row = {"setting": setting.get("setting"), "experiment": inputs["experiment"], "build": key,
                   "label": r.get("label") or key, "threads_per_clause": per_clause,
                   "threads_per_clause_from": per_clause_from, "n_train": inputs["n"], "n_features": inputs["F"],
                   "n_classes": inputs["n_classes"], "classes_from": inputs["classes_from"],
                   "n_clauses": hp["n_clauses"], "words": least.sizes["words"], "achieved_median_epoch_s": achieved,
                   "epochs_timed": len(r.get("epoch_s") or []), "events_per_epoch": inputs["events"]}
            _bounds(row, least, most, host, achieved, None, cpu=False)
            row["chain"] = _chain(hp, inputs, per_clause, achieved, limits,
                                  shared=bool((r.get("options") or {}).get("gpu_shared_state")))
            row["feedback_source"] = _feedback_source(inputs["rates"])
            rows.append(row)
    if not rows:
        raise BoundError(f"{bench_path}: no timed result of our GPU builds (peer asynctm, backend cuda); pass a GPU "
                         "benchmark record that ran one of them")
    return rows


def build_gpu(bench: dict, bench_path: Path, limits: dict, limits_path: Path, results: Path, data_dir: Path | None,
              classes: dict) -> dict:
    from asynctm import costmodel as cm
    from asynctm.provenance import git_info

    check_same_gpu(bench, bench_path, limits, limits_path)
    rows = gpu_bound_rows(bench, bench_path, limits, results, data_dir, classes)
    m = limits["measurements"][cm.GPU_LIMITS_KEY]
    return {"generated_by": "benchmarks/bound.py", "git": git_info(),
            "benchmark": {"path": bench_path.as_posix(), "sha256": _sha256(bench_path), "name": bench.get("name"),
                          "time_utc": bench.get("started_utc") or bench.get("time_utc"),
                          "gpu": bench["gpu"]["name"]},
            "gpu_limits": {"path": limits_path.as_posix(), "sha256": _sha256(limits_path),
                           "gpu": limits["gpu"]["name"], "description": limits["gpu"].get("description"),
                           "host_id": limits.get("host_id"), "time_utc": limits.get("time_utc"),
                           "measurements": {k: m[k] for k in (*cm.LIMIT_FIELDS, "draws_s") if k in m}},
            "model": f"asynctm.costmodel.epoch_cost with chunk_words=GPU_CHUNK_WORDS ({cm.GPU_CHUNK_WORDS}) and "
                     "threads=1 (least work: eval_words='min', acting=0; all work: eval_words='max', acting=1), "
                     "bound_s on gpu_host_from_limits; the same work for every number of threads per clause",
            "feedback": "estimated from the tm_cpu run records of the same experiment and hyperparameters: the CPU "
                        "and GPU builds run one algorithm (kernels/tm.cu), so the events per clause visit carry over",
            "rows": rows}


def _gpu_pct(b: dict) -> str:
    f = b["fraction"]
    return f"{100 * f:.2g}%" if f < 0.01 else f"{f:.1%}"  # a GPU's fractions can be small: two digits


def gpu_markdown(out: dict) -> str:
    lim, m = out["gpu_limits"], out["gpu_limits"]["measurements"]
    md = [f"<!-- generated by benchmarks/bound.py from {out['benchmark']['path']} and {lim['path']}; do not edit by "
          "hand -->", "", f"# Achieved per-epoch time against the cost model's bound: {out['benchmark']['name']}", "",
          f"GPU: {lim['description'] or lim['gpu']}; limits measured {lim['time_utc']} on host {lim['host_id']} "
          f"(`benchmarks/gpu_limits.py`: CUDA events, the best launch). Benchmark: {out['benchmark']['time_utc']} on "
          f"{out['benchmark']['gpu']}.", "",
          "| copy GB/s | triad GB/s | word ops G/s | scalar ops G/s | draws G/s |", "|---:|---:|---:|---:|---:|",
          f"| {m['copy_bytes_s'] / 1e9:.0f} | {m['triad_bytes_s'] / 1e9:.0f} | {m['word_ops_s'] / 1e9:.0f} | "
          f"{m['scalar_ops_s'] / 1e9:.0f} | {_g(m['draws_s'] / 1e9) if m.get('draws_s') else '–'} |",
          "", "| setting | build | examples x clauses x words | Ia / Ib / II per epoch (estimated) | achieved s/epoch "
          "| bound, least work (limit) | fraction | bound, all work (limit) | fraction |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in out["rows"]:
        ev = r["events_per_epoch"]
        lw, aw = r["least_work"], r["all_work"]
        per = PER_CLAUSE.get(r["threads_per_clause"], f"{r['threads_per_clause']} threads per clause")
        md.append(f"| {r['setting']} | {r['build']} ({per}) | {r['n_train']:,} x {r['n_clauses'] * r['n_classes']:,} "
                  f"x {r['words']:,} | {' / '.join(f'{ev[k]:,.0f}' for k in EVENT_KEYS)} | "
                  f"{_g(r['achieved_median_epoch_s'])} | {_g(lw['bound_s'])} ({lw['limit']}) | {_gpu_pct(lw)} | "
                  f"{_g(aw['bound_s'])} ({aw['limit']}) | {_gpu_pct(aw)} |")
    md += ["", "One clause group's chain (`asynctm.costmodel.chain_rounds`): every group visits the epoch's examples "
           "in order, reading and updating its words in rounds of threads x 2 words, each round waiting for the one "
           "before; per visit one round, the Ia + II visits (clause output 1) all the clause's rounds, and every "
           "feedback event all of them again (the events spread evenly over the groups). More threads per clause "
           "shorten the chain; more clauses do not, until their threads fill the GPU (threads: clauses x classes x "
           "threads per clause, beside the threads the GPU keeps resident), after which the chain no longer sets the "
           "time. Its bound: rounds x the latency of one dependent load that hits the L2 cache (gpu_limits.py's "
           "chase_s; – where the limits record has none, or where the build keeps the automata in shared memory, "
           "`_shared`, and reads them without it).", "",
           "| setting | build | threads (of resident) | rounds per visit | chain rounds per epoch | achieved µs per "
           "round | chain bound | fraction |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in out["rows"]:
        c = r["chain"]
        per = PER_CLAUSE.get(r["threads_per_clause"], f"{r['threads_per_clause']} threads per clause")
        bound = f"{_g(c['bound_s'])} | {_gpu_pct(c)}" if "bound_s" in c else "– | –"
        share = f" ({_gpu_pct({'fraction': c['resident_share']})})" if c.get("resident_share") else ""
        md.append(f"| {r['setting']} | {r['build']} ({per}) | {c['threads']:,}{share} | {c['rounds_per_visit']:,} | "
                  f"{c['rounds']:,.0f} | "
                  f"{_g(1e6 * c['achieved_s_per_round'])} | {bound} |")
    md += ["", "Bound: the largest of compulsory bytes / bandwidth (the faster of copy and triad), 32-bit word "
           "operations / word throughput and scalar operations (draws included) / scalar throughput, of the whole GPU "
           "(`asynctm.costmodel`, with the GPU's chunks of 2 words: one 1/s draw per chunk). Our GPU builds (one "
           "thread, a warp or a block per clause) do the same work, so they share a bound; what differs is how much "
           "of the GPU they keep busy. Least work: each clause evaluation reads one word, except the Ia + II visits "
           "that must output 1, which read all; feedback runs only its always-run tests. All work: every evaluation "
           "reads every word and every feedback chunk updates. fraction = bound / achieved (1 would be the GPU's "
           "limit). The scalar rate is that of the draws' 64-bit operations, which a GPU does in several 32-bit "
           "instructions: a row limited by scalar may have a bound too high by that much.", "",
           "Feedback events are not in the benchmark record; they are estimated from the tm_cpu run records of the "
           "same experiment and hyperparameters (the CPU and GPU builds run one algorithm, `kernels/tm.cu`, so the "
           "events per clause visit carry over): the mean events per visit over the epochs the benchmark timed, "
           "scaled to its examples and clauses:", ""]
    md += _feedback_lines(out["rows"])
    md.append("")
    return "\n".join(md)


def build(bench_path: Path, limits_path: Path, results: Path, data_dir: Path | None, classes: dict,
          clock: str = "cpu") -> dict:
    from asynctm import costmodel as cm
    from asynctm.provenance import git_info

    bench, limits = _read(bench_path, "benchmark record"), _read(limits_path, "host limits record")
    if is_gpu_benchmark(bench):
        return build_gpu(bench, bench_path, limits, limits_path, results, data_dir, classes)
    if cm.GPU_LIMITS_KEY in (limits.get("measurements") or {}):
        raise BoundError(f"{limits_path}: a GPU's limits (benchmarks/gpu_limits.py), and {bench_path} ran on CPU "
                         "threads; pass the host_limits.py record of its CPU host")
    check_same_host(bench, bench_path, limits, limits_path)
    rows = bound_rows(bench, bench_path, limits, results, data_dir, classes, clock)
    loads = [m.get("load_1min_before") for m in (limits.get("measurements") or {}).values()]
    return {"generated_by": "benchmarks/bound.py", "git": git_info(),
            "benchmark": {"path": bench_path.as_posix(), "sha256": _sha256(bench_path), "name": bench.get("name"),
                          "time_utc": bench.get("time_utc"), "load_average_start": bench.get("load_average_start")},
            "host_limits": {"path": limits_path.as_posix(), "sha256": _sha256(limits_path),
                            "cpu_model": limits["cpu"]["model"], "usable_cores": limits["cpu"]["usable_cores"],
                            "time_utc": limits.get("time_utc"),
                            "load": ", ".join(f"{v:.2f}" for v in loads if isinstance(v, (int, float))) or "–",
                            "clock": clock,
                            "measurements": {t: {k: m[k] for k in cm.LIMIT_FIELDS}
                                             for t, m in limits[cm.CLOCKS[clock]].items()}},
            "model": "asynctm.costmodel.epoch_cost (least work: eval_words='min', acting=0; all work: "
                     "eval_words='max', acting=1), bound_s",
            "rows": rows}


def main(argv=None) -> int:
    from asynctm.io import write_json_atomic, write_text_atomic

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("benchmark", help="a bench_tm.py record, or a GPU benchmark record (gpu_<gpu>_<commit>.json)")
    p.add_argument("--limits", required=True,
                   help="a host_limits.py record of the same host model, or for a GPU record a gpu_limits.py record "
                        "of the same GPU model")
    p.add_argument("--results", default="results", help="the run records, for the feedback counts (default results)")
    p.add_argument("--data-dir", default=None, help="processed datasets, for the number of classes")
    p.add_argument("--classes", action="append", default=[], help="SETTING=K: the classes of a setting")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="the host's limits per CPU second of its threads (default: on a shared machine the wall clock "
                        "also counts other processes' time) or by the wall clock; CPU records only")
    p.add_argument("--out-dir", default=None,
                   help="where <name>_bound.json/.md (bound_<name>.json/.md for a GPU record) go (default: beside the "
                        "benchmark)")
    args = p.parse_args(argv)
    try:
        classes = {}
        for item in args.classes:
            key, sep, value = item.partition("=")
            if not sep or not value.isdigit() or int(value) < 1:
                raise BoundError(f"--classes {item!r}: expected SETTING=K with K a positive integer")
            classes[key] = int(value)
        bench_path = Path(args.benchmark)
        out = build(bench_path, Path(args.limits), Path(args.results), Path(args.data_dir) if args.data_dir else None,
                    classes, args.clock)
    except BoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out_dir = Path(args.out_dir) if args.out_dir else bench_path.parent
    # a GPU record's bounds are not named gpu_*.json, the GPU benchmark records' pattern (asynctm.artifacts.
    # evidence_cost reads every such file)
    gpu = "gpu_limits" in out
    stem = f"bound_{bench_path.stem}" if gpu else bench_path.stem + "_bound"
    text = gpu_markdown(out) if gpu else markdown(out)
    write_json_atomic(out_dir / f"{stem}.json", out, sort_keys=False)
    write_text_atomic(out_dir / f"{stem}.md", text)
    print(text)
    print(f"wrote {out_dir / (stem + '.json')} and {out_dir / (stem + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
