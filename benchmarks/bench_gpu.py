"""The GPU benchmark: our CUDA builds and PyTsetlinMachineCUDA on the same GPU, in one process.

    python benchmarks/bench_gpu.py --data-dir data --out-dir benchmarks/results --name NAME   # a GPU workstation
    python benchmarks/bench_gpu.py --campaign-dir .campaign --out-dir ... --name NAME   # a lent GPU host (gpu_host)

On a GPU workstation it reads the pipeline's processed datasets (``--data-dir``, made by ``snakemake --cores all
data``) and the configuration (``--config``, checked as the pipeline checks it); on a lent GPU host the folder that
``python -m gpu_host stage`` made (its configuration and datasets); ``python -m gpu_host step bench`` runs it there.

The GPU settings of the benchmark harness :mod:`asynctm.benchmarking` (its per-epoch loop and pooling of seeds): ours
as ``tm_gpu`` (one thread per clause, the paper's design) and ``tm_gpu_warp`` (a warp per clause) beside
PyTsetlinMachineCUDA, the wide builds (a block per clause, config ``gpu_benchmark.wide_build``) on wide inputs, and
our CPU build where the accuracies are compared with it. tmu's CUDA clause bank (``tmu_cuda``: a worker process of
tmu's own environment, ``benchmarks/worker_peers.py``, ``--tmu-python``) runs only where named in ``--impls``. Per
setting (an experiment's main setting, data from the staged folders) and seed, one warm-up epoch (compilation,
encoding and upload, reported apart), then the timed epochs (:func:`timed_epochs`) round-robin, the metric after each
outside the timed region, the literals per clause after the last; the median epoch over all seeds, the metric averaged
over seeds, the speed-up over PyTsetlinMachineCUDA and, for :data:`GOAL_SETTINGS`, the goal (ours >= 2x at accuracy
within 1 point). Writes ``<name>.json`` and ``<name>.md`` after every setting; no round starts where it would end
after ``--deadline``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from asynctm import benchmarking
from asynctm.experiments import plan
from asynctm.experiments.run import dataset_summary, load_dataset
from asynctm.io import atomic_open, write_json_atomic

REPO = Path(__file__).resolve().parents[1]
GENERATOR = "benchmarks/bench_gpu.py"  # the records' generated_by (benchmarks/report.py renders them with markdown())

# Timed epochs after the warm-up (paper scale; smoke scale: 1) and the seeds; one seed and one timed epoch where
# PyTsetlinMachineCUDA's epochs are long, so that the benchmark fits one call. Where it is not among the builds timed
# (--impls), a setting gets at least OURS_TIMED_EPOCHS: our builds' epochs are short there, and the step's deadline
# still stops the rounds where the budget runs out.
TIMED_EPOCHS = {"wsd_apple": 10, "semeval": 1, "imdb": 1, "bike_sharing": 10}
OURS_TIMED_EPOCHS = 5
SEEDS = (0, 1, 2)
SEEDS_BY_SETTING = {"semeval": (0,), "imdb": (0,)}
GOAL_SETTINGS = ("wsd_apple", "semeval", "imdb")
GOAL_SPEEDUP = 2.0
GOAL_POINTS = 1.0
# The builds and their labels, in the order of the tables. The wide builds (config gpu_benchmark.wide_build, one per
# size it lists; plan.WIDE_BUILDS) run only on the settings whose clauses have the literal words the config asks
# for (plan.wide_builds); tm_gpu_block, 128 threads, keeps the label of the records that have it from the start.
IMPLS = {"tm_gpu": "ours (asynctm, CUDA)", "tm_gpu_warp": "ours (asynctm, CUDA, a warp per clause)",
         **{name: "ours (asynctm, CUDA, a block per clause)" if name == plan.WIDE_BUILD else
            f"ours (asynctm, CUDA, {'a block of ' if k >= 128 else ''}{k} threads per clause"
            f"{', automata in shared memory' if name in plan.WIDE_SHARED else ''})"
            for name, k in plan.WIDE_BUILDS.items()},
         "pytm_cuda": "PyTsetlinMachineCUDA", "tmu_cuda": "tmu 0.8.3 (CUDA clause bank)",
         "tm_cpu": "ours (asynctm, CPU threads)"}
# Timed only where named (--impls): tmu lives in an environment of its own (NumPy < 2), and its epochs are long.
NAMED_ONLY = ("tmu_cuda",)
SLOW_PEERS = ("pytm_cuda", "tmu_cuda")  # where one of them is timed, a setting gets TIMED_EPOCHS
OURS_GPU = dict(plan.GPU_THREADS_PER_CLAUSE)  # our GPU implementations and their threads per clause
CPU_SETTINGS = ("wsd_apple",)  # our CPU build beside them: tm_gpu's accuracy within the spread of tm_cpu's
HYPERPARAMETERS = ("n_clauses", "T", "s", *benchmarking.TM_SETTINGS)


def runner(impl: str) -> dict:
    """The harness's runner (:func:`asynctm.benchmarking.build_peer`) of ``impl``."""
    if impl in OURS_GPU or impl in plan.WIDE_BUILDS:
        threads = OURS_GPU.get(impl) or plan.WIDE_BUILDS[impl]
        options = {"backend": "cuda", "gpu_threads_per_clause": threads}
        if impl in plan.WIDE_SHARED:
            options["gpu_shared_state"] = True
        return {"label": impl, "peer": "asynctm", "options": options}
    if impl == "tm_cpu":
        return {"label": impl, "peer": "asynctm", "options": {"backend": "cpu"}}
    if impl in ("pytm_indexed", "pytm_nonindexed"):
        return {"label": impl, "peer": "pytm", "options": {"indexed": impl == "pytm_indexed"}}
    if impl == "tmu_cuda":
        return {"label": impl, "peer": "tmu_cuda", "options": {}}
    return {"label": impl, "peer": "pytm_cuda", "options": {}}


def timed_epochs(name: str, impls, smoke: bool = False) -> int:
    """The timed epochs of setting ``name`` with the builds ``impls``: :data:`TIMED_EPOCHS` (5 where it has none)
    where PyTsetlinMachineCUDA or tmu is timed, at least :data:`OURS_TIMED_EPOCHS` where only our builds are; 1 at
    smoke scale."""
    if smoke:
        return 1
    n = TIMED_EPOCHS.get(name, 5)
    return n if any(p in impls for p in SLOW_PEERS) else max(n, OURS_TIMED_EPOCHS)


def peer(impl: str, task: str, h: dict, seed: int):
    """The peer of ``impl`` with an experiment's hyperparameters ``h`` (a novelty experiment: its classifier)."""
    task = "regression" if task == "regression" else "classification"
    return benchmarking.build_peer(runner(impl), task, {k: h[k] for k in HYPERPARAMETERS}, seed)


def literals_per_clause(peer) -> dict | None:
    """Included literals per clause over every clause: ``{"mean", "mean_nonempty", "empty_clauses", "clauses"}``;
    None for a library in a worker process (tmu), whose automata stay there."""
    if peer.peer in benchmarking.WORKER_PEERS:
        return None
    if peer.peer == "asynctm":
        counts = np.asarray(peer.model.clauses_, dtype=bool).sum(axis=-1).ravel()
    else:
        counts = _pytm_cuda_literal_counts(peer.model)
    counts = np.asarray(counts, dtype=np.int64)
    nonempty = counts[counts > 0]
    return {"mean": float(counts.mean()), "mean_nonempty": float(nonempty.mean()) if nonempty.size else 0.0,
            "empty_clauses": int((counts == 0).sum()), "clauses": int(counts.size)}


def _pytm_cuda_literal_counts(model) -> np.ndarray:
    """PyTsetlinMachineCUDA's include bits: its TA state (classes, clauses, chunks, state bits) from the GPU, the last
    state-bit plane is the action (include) bit; bits past its number of literals are masked."""
    import pycuda.driver as cuda

    C, nc = int(model.number_of_classes), int(model.number_of_clauses)
    chunks, bits, n_lit = int(model.number_of_ta_chunks), int(model.number_of_state_bits), int(model.number_of_features)
    ta = np.empty(C * nc * chunks * bits, dtype=np.uint32)
    cuda.memcpy_dtoh(ta, model.ta_state_gpu)
    include = ta.reshape(C, nc, chunks, bits)[:, :, :, bits - 1].copy()
    if n_lit % 32:
        include[:, :, -1] &= np.uint32((1 << (n_lit % 32)) - 1)
    return np.unpackbits(include.view(np.uint8), axis=-1).reshape(C * nc, -1).sum(axis=1)


def result(rows: list[dict]) -> dict:
    """One implementation over its seeds (:func:`asynctm.benchmarking.aggregate`), with the timed epochs every seed
    has, the literals per clause and each seed's row."""
    res = benchmarking.aggregate(rows)
    res.setdefault("per_seed", [{k: v for k, v in r.items() if k not in ("label", "peer", "options", "metadata")}
                                for r in rows])
    timed = [len(r["epoch_s"]) for r in rows if r["epoch_s"]]
    counted = [r["literals_per_clause"] for r in rows if r.get("literals_per_clause")]
    return {"median_epoch_s": None, "final_metric": None, "final_metric_std": 0.0, **res,
            "timed_epochs": min(timed) if timed else 0,
            "literals_per_clause": float(np.mean([c["mean"] for c in counted])) if counted else None,
            "literals_per_nonempty_clause": float(np.mean([c["mean_nonempty"] for c in counted])) if counted else None}


def run_setting(config: dict, data_dir: Path, name: str, seeds, epochs: int, deadline: float, say=print,
                impls=tuple(IMPLS), workers: dict | None = None) -> dict:
    """One setting, every implementation of ``impls`` that runs there; ``workers``: the factories of the peers in
    worker processes (:func:`worker_peers.factories`)."""
    from asynctm.peers import dense01

    base = plan.tm_run_settings(config, name, "tm_gpu", plan.main_params(config, name), seeds[0])
    h, task = base["hyperparameters"], ("regression" if base["task"] == "regression" else "classification")
    ds = load_dataset(data_dir, base)
    y_dtype = np.float64 if task == "regression" else None
    data = {"X_train": ds.X_train, "X_test": ds.X_test, "y_train": np.asarray(ds.y_train, dtype=y_dtype),
            "y_test": np.asarray(ds.y_test, dtype=y_dtype)}
    dense = {"X_train": dense01(ds.X_train), "X_test": dense01(ds.X_test)}
    say(f"== {name}: {ds.X_train.shape[0]} train x {ds.X_train.shape[1]} features, {h['n_clauses']} clauses, "
        f"T={h['T']}, s={h['s']}; 1 warm-up + {epochs} timed epochs x seeds {list(seeds)}")
    wide = plan.wide_builds(config, ds.X_train.shape[1], h["append_negated"])
    runners = [runner(i) for i in IMPLS if i in impls and (i != "tm_cpu" or name in CPU_SETTINGS)
               and (i not in plan.WIDE_BUILDS or i in wide)]
    per: dict[str, list[dict]] = {}
    skipped, stopped = {}, None
    for i, seed in enumerate(seeds):
        # a seed starts only where its warm-up and one timed round (the last seed's) would end before the deadline
        last = [rows[-1] for rows in per.values() if rows and rows[-1]["seed"] == seeds[i - 1]] if i else []
        if last and time.time() + sum(r["warmup_s"] + (r["epoch_s"] or [0.0])[0] for r in last) > deadline:
            stopped = f"the step's budget would have run out in seed {seed}'s first epochs"
            break
        rows, skips = benchmarking.train_seed(task, data, dense, runners, {k: h[k] for k in HYPERPARAMETERS}, seed,
                                              epochs, "every", workers=workers, deadline=deadline,
                                              finish=lambda p: {"literals_per_clause": literals_per_clause(p)})
        for r in rows:
            per.setdefault(r["label"], []).append(r)
        skipped.update({sk["label"]: sk["reason"] for sk in skips})
        if any(len(r["epoch_s"]) < epochs for r in rows):
            stopped = f"the step's budget ran out in seed {seed}'s timed epochs"
            break
    results = {impl: result(rows) for impl, rows in per.items()}
    key = "mae" if base["task"] == "regression" else "accuracy"
    out = {"setting": name, "task": base["task"], "metric": key, "dataset": dataset_summary(ds, base),
           "hyperparameters": h, "epochs": {"warmup": 1, "timed": epochs}, "seeds": list(seeds),
           "stopped": stopped, "skipped": skipped, "results": results,
           "comparison": compare(name, base["task"], key, results)}
    timed_wide = [build for build in wide if build in impls]
    if timed_wide:  # the config's wide build, with the sizes timed here (a record before the list: one size)
        out["wide_build"] = {**config["gpu_benchmark"]["wide_build"],
                             "threads_per_clause": [wide[b] for b in timed_wide if b not in plan.WIDE_SHARED],
                             "shared_state": [wide[b] for b in timed_wide if b in plan.WIDE_SHARED]}
    return out


def compare(name: str, task: str, key: str, results: dict) -> dict:
    """tm_gpu against PyTsetlinMachineCUDA (the top-level keys; the goal), the same for tm_gpu_warp and each wide
    build (under their names), the warp build's speed-up over the one-thread build and each wide build's over the
    warp build (``wide_speedups_vs_warp``, by build; a record from before several sizes has ``wide_speedup_vs_warp``,
    tm_gpu_block's alone)."""
    out = _versus(name, task, results, "tm_gpu")
    warp, one = results.get("tm_gpu_warp"), results.get("tm_gpu")
    if warp:
        out["tm_gpu_warp"] = _versus(name, task, results, "tm_gpu_warp")
        if one and one["median_epoch_s"] and warp["median_epoch_s"]:
            out["warp_speedup_vs_one_thread"] = one["median_epoch_s"] / warp["median_epoch_s"]
    for build in [b for b in plan.WIDE_BUILDS if results.get(b)]:
        out[build] = _versus(name, task, results, build)
        if warp and warp["median_epoch_s"] and results[build]["median_epoch_s"]:
            out.setdefault("wide_speedups_vs_warp", {})[build] = (warp["median_epoch_s"]
                                                                  / results[build]["median_epoch_s"])
    tmu = results.get("tmu_cuda")
    if tmu and tmu["median_epoch_s"]:  # each of our GPU builds against tmu's CUDA clause bank, by build
        for build in [b for b in (*OURS_GPU, *plan.WIDE_BUILDS) if (results.get(b) or {}).get("median_epoch_s")]:
            out.setdefault("speedups_vs_tmu_cuda", {})[build] = tmu["median_epoch_s"] / results[build]["median_epoch_s"]
    return out


def _versus(name: str, task: str, results: dict, impl: str) -> dict:
    ours, peer = results.get(impl), results.get("pytm_cuda")
    out = {"speedup_vs_pytm_cuda": None, "metric_minus_pytm_cuda": None, "goal": None}
    if ours and name in CPU_SETTINGS:
        # our mean within mean ± one sample standard deviation of another implementation's seeds
        spread = {}
        for other_impl in ("tm_cpu", "pytm_cuda"):
            other = results.get(other_impl)
            if other and other["final_metric"] is not None and ours["final_metric"] is not None:
                lo = other["final_metric"] - other["final_metric_std"]
                hi = other["final_metric"] + other["final_metric_std"]
                spread[other_impl] = {"range": [lo, hi], "within": bool(lo <= ours["final_metric"] <= hi)}
        out["tm_gpu_within_spread"] = spread
    if not ours or not peer or not ours["median_epoch_s"] or not peer["median_epoch_s"]:
        return out
    n = min(ours["timed_epochs"], peer["timed_epochs"])
    out["speedup_vs_pytm_cuda"] = peer["median_epoch_s"] / ours["median_epoch_s"]
    if ours["final_metric"] is not None and peer["final_metric"] is not None:
        out["metric_minus_pytm_cuda"] = ours["final_metric"] - peer["final_metric"]
    if name in GOAL_SETTINGS and task != "regression":
        within = out["metric_minus_pytm_cuda"] is not None and abs(out["metric_minus_pytm_cuda"]) <= GOAL_POINTS
        fast = out["speedup_vs_pytm_cuda"] >= GOAL_SPEEDUP
        out["goal"] = {"rule": f"ours >= {GOAL_SPEEDUP:g}x PyTsetlinMachineCUDA's median epoch, accuracy within "
                               f"{GOAL_POINTS:g} point after the same {n} timed epochs (mean over seeds)",
                       "seeds": len(ours["seeds"]), "speed_met": fast, "accuracy_within": within,
                       "met": bool(fast and within)}
    return out


def goal_miss(c: dict, key: str) -> str:
    """Why a comparison missed its goal, in words (empty where it met it): too slow, or the metric outside the
    bound on which side."""
    goal = c["goal"]
    if goal["met"]:
        return ""
    why = [] if goal["speed_met"] else [f"{c['speedup_vs_pytm_cuda']:.2f}x, below {GOAL_SPEEDUP:g}x"]
    d = c["metric_minus_pytm_cuda"]
    if not goal["accuracy_within"]:
        why.append(f"no {key} to compare" if d is None else
                   f"{key} {abs(d):.2f} points {'above' if d > 0 else 'below'} PyTsetlinMachineCUDA's, outside "
                   f"{GOAL_POINTS:g} point either way")
    return f" ({'; '.join(why)})"


def markdown(record: dict) -> str:
    gpu = record.get("gpu") or {}
    lines = [f"# GPU speed per epoch: `{record['name']}`", "",
             f"- GPU: {gpu.get('name', '?')}, driver {gpu.get('driver', '?')}, CUDA {gpu.get('cuda', '?')}, "
             f"nvcc {gpu.get('nvcc', '?')}",
             f"- date (UTC): {record['date_utc']}; commit `{(record['git'].get('commit') or '?')[:12]}`",
             "- median over all seeds' timed epochs after 1 warm-up epoch each; metric: mean over seeds after "
             "the same epochs; literals per clause: mean included literals over all clauses after the last epoch",
             ""]
    for s in record["settings"]:
        key = s["metric"]
        h = s["hyperparameters"]
        lines += [f"## {s['setting']}", "",
                  f"{s['dataset']['n_train']:,} train / {s['dataset']['n_test']:,} test, "
                  f"{s['dataset']['n_features']:,} features; {h['n_clauses']} clauses, T = {h['T']}, s = {h['s']}; "
                  f"seeds {s['seeds']}" + (f"; stopped: {s['stopped']}" if s["stopped"] else ""), "",
                  f"| implementation | median s/epoch | warm-up s | {key} | literals per clause | epochs |",
                  "|---|---:|---:|---:|---:|---:|"]
        for impl, label in IMPLS.items():
            r = s["results"].get(impl)
            if r is None and impl not in s["skipped"]:
                continue  # not part of this run (tm_cpu outside CPU_SETTINGS; a build added after the record)
            if r is None:
                lines.append(f"| {label} | – | – | – | – | {s['skipped'][impl][:160]} |")
                continue
            med = f"{r['median_epoch_s']:.4f}" if r["median_epoch_s"] else "–"
            metric = ("–" if r["final_metric"] is None
                      else f"{r['final_metric']:.2f} ± {r['final_metric_std']:.2f}")
            lits = "–" if r["literals_per_clause"] is None else f"{r['literals_per_clause']:.1f}"
            lines.append(f"| {label} | {med} | {r['warmup_s']:.2f} | {metric} | {lits} | {r['timed_epochs']} |")
        lines.append("")
        for ours in (*OURS_GPU, *plan.WIDE_BUILDS):
            c = s["comparison"] if ours == "tm_gpu" else s["comparison"].get(ours)
            if not c:
                continue
            for impl, w in (c.get("tm_gpu_within_spread") or {}).items():
                lines.append(f"{IMPLS[ours]}: {key} within {IMPLS[impl]}'s mean ± sd over seeds "
                             f"[{w['range'][0]:.2f}, {w['range'][1]:.2f}]: {'yes' if w['within'] else 'no'}.")
            if c["speedup_vs_pytm_cuda"] is not None:
                k = plan.WIDE_BUILDS.get(ours, 0)
                who = {"tm_gpu": "ours", "tm_gpu_warp": "ours with a warp per clause"}.get(
                    ours, f"ours with {'a block per clause (' if k >= 128 else '('}{k} threads"
                          f"{', automata in shared memory' if ours in plan.WIDE_SHARED else ''})")
                lines.append(f"Speed-up of {who} over PyTsetlinMachineCUDA: "
                             f"{c['speedup_vs_pytm_cuda']:.2f}x; {key} difference {c['metric_minus_pytm_cuda']:+.2f}.")
                if c["goal"]:
                    n = c["goal"]["seeds"]
                    lines.append(f"Goal ({c['goal']['rule']}): **{'met' if c['goal']['met'] else 'not met'}**"
                                 + goal_miss(c, key)
                                 + (f" with {n} seed{'s' if n > 1 else ''} of the {len(SEEDS)} it asks for."
                                    if n < len(SEEDS) else "."))
        if s["comparison"].get("speedups_vs_tmu_cuda"):
            lines.append("Speed-up over tmu's CUDA clause bank: " + ", ".join(
                f"{IMPLS[b]} {x:.2f}x" for b, x in s["comparison"]["speedups_vs_tmu_cuda"].items()) + ".")
        if s["comparison"].get("warp_speedup_vs_one_thread"):
            lines.append(f"A warp per clause against one thread per clause: "
                         f"{s['comparison']['warp_speedup_vs_one_thread']:.2f}x the speed.")
        if s["comparison"].get("wide_speedup_vs_warp"):  # a record from before several sizes: tm_gpu_block's
            w = s["wide_build"]
            lines.append(f"A block per clause ({w['threads_per_clause']} threads; timed where a clause has at least "
                         f"{w['min_literal_words']:,} literal words) against a warp per clause: "
                         f"{s['comparison']['wide_speedup_vs_warp']:.2f}x the speed.")
        if s["comparison"].get("wide_speedups_vs_warp"):
            lines.append(f"A block per clause (timed where a clause has at least "
                         f"{s['wide_build']['min_literal_words']:,} literal words) against a warp per clause: " +
                         ", ".join(f"{plan.WIDE_BUILDS[b]} threads{' (shared)' if b in plan.WIDE_SHARED else ''} "
                                   f"{x:.2f}x"
                                   for b, x in s["comparison"]["wide_speedups_vs_warp"].items()) + " the speed.")
        lines.append("")
    return "\n".join(lines)


def inputs(args) -> tuple[dict, Path]:
    """The configuration and the processed datasets' folder: a staged folder's (``--campaign-dir``: its
    ``campaign.json`` and ``data/``), else ``--config`` checked as the pipeline checks it and ``--data-dir``.
    A missing or malformed one stops with one line naming it and the fix."""
    if args.campaign_dir:
        path = Path(args.campaign_dir) / "campaign.json"
        try:
            config = json.loads(path.read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a staged campaign ({type(exc).__name__}: {exc}); run `python -m gpu_host "
                             "stage` and carry its folder along, or pass --data-dir on a GPU workstation") from None
        return config, Path(args.campaign_dir) / "data"
    from asynctm.config_check import ConfigError, load_config

    try:
        config = load_config(args.config)
    except (ConfigError, OSError) as exc:
        raise SystemExit(f"{args.config}: {exc}") from None
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir}: no such folder; prepare the datasets with `.venv/bin/snakemake --cores all "
                         "data --config data_mirror=../shared/datasets` or pass their folder with --data-dir")
    return config, Path(args.data_dir)


def workers(args) -> dict | None:
    """The worker peers' factories where tmu_cuda is timed (``benchmarks/worker_peers.py``, found beside this
    script), with ``--tmu-python``."""
    if "tmu_cuda" not in args.impls.split(","):
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import worker_peers

    return worker_peers.factories({"tmu_cuda": args.tmu_python} if args.tmu_python else {})


def main(argv=None) -> int:
    from asynctm.provenance import code_digests, cpu_info, git_info, gpu_info, versions

    ap = argparse.ArgumentParser(prog="python benchmarks/bench_gpu.py", description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", help="the pipeline's processed datasets (a GPU workstation)")
    where.add_argument("--campaign-dir", help="the folder gpu_host staged (.campaign: a lent GPU host)")
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"),
                    help="with --data-dir: the pipeline configuration (default config/config.yaml)")
    ap.add_argument("--out-dir", required=True, help="where <name>.json and <name>.md go")
    ap.add_argument("--name", required=True)
    ap.add_argument("--deadline", type=float, default=float("inf"), help="UNIX time after which no epoch starts")
    ap.add_argument("--settings", default=",".join(TIMED_EPOCHS), help="comma-separated experiments")
    ap.add_argument("--impls", default=",".join(i for i in IMPLS if i not in NAMED_ONLY),
                    help=f"the builds to time, comma-separated (default all but {', '.join(NAMED_ONLY)})")
    ap.add_argument("--tmu-python", default=os.environ.get("ASYNCTM_TMU_PYTHON"),
                    help="with tmu_cuda: the python of tmu's environment (default $ASYNCTM_TMU_PYTHON or "
                         "benchmarks/.venv-tmu/bin/python; `bash benchmarks/setup_tm_peers.sh tmu` builds it, PyCUDA "
                         "added there)")
    args = ap.parse_args(argv)
    config, data_dir = inputs(args)
    smoke = plan.is_smoke(config)
    record = {"generated_by": GENERATOR, "name": args.name,
              "command": ["python", GENERATOR, *(sys.argv[1:] if argv is None else argv)],
              "date_utc": datetime.now(UTC).strftime("%Y-%m-%d"),
              "started_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "git": git_info(),
              "code": code_digests(), "versions": versions(), "cpu": cpu_info(), "gpu": gpu_info(),
              "scale": config.get("scale", "paper"),
              "timing": "wall clock around one fit_epoch call (both libraries synchronise the GPU before returning); "
                        "1 warm-up epoch per implementation and seed reported apart; timed epochs round-robin",
              "settings": []}
    out = Path(args.out_dir) / f"{args.name}.json"
    factories = workers(args)
    for name in [n for n in args.settings.split(",") if n in plan.active_experiments(config)]:
        if time.time() > args.deadline:
            record["settings"].append({"setting": name, "stopped": "not started: the step's budget ran out"})
            break
        seeds = plan.seeds(config) if smoke else list(SEEDS_BY_SETTING.get(name, SEEDS))
        record["settings"].append(run_setting(config, data_dir, name, seeds,
                                              timed_epochs(name, args.impls.split(","), smoke), args.deadline,
                                              impls=args.impls.split(","), workers=factories))
        done = {**record, "settings": [s for s in record["settings"] if "results" in s]}
        write_json_atomic(out, done, sort_keys=False)
        with atomic_open(out.with_suffix(".md")) as fh:
            fh.write(markdown(done))
        print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
