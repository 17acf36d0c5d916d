"""The same-host benchmark: one run of pyTsetlinMachine on a core of a GPU machine, or of our GPU build beside it.

The paper's speed-ups pair its GPU with one core of the same machine; every pyTsetlinMachine record of the pipeline
ran on a CPU machine. One process of this script trains one implementation on one experiment's main setting (seed
:data:`SEED`) from a fresh model, unit by unit until ``--until``, rewriting ``--out`` after every unit (the raw units,
the cores asked for and got, CPU beside wall time, the load), so a run stopped at the end keeps what it finished:

- pyTsetlinMachine (indexed and not for classification; the regression machine, which has no index, for regression:
  :func:`cpu_impls`) pinned to a core of its own (``--cpu``); a unit is an epoch or, where an epoch takes many
  minutes on one core (:data:`PARTS`), one of that many consecutive parts of the first epoch's examples;
- our GPU builds, after a warm-up fit that compiles their kernels, for up to :data:`GPU_EPOCHS` epochs.

    python benchmarks/bench_host.py --data-dir data --experiment imdb --impl pytm_indexed --cpu 2 --until T --out F
    python benchmarks/bench_host.py --campaign-dir .campaign ...   # a lent GPU host

On a lent GPU host ``python -m gpu_host step host_peers`` starts one process per pyTsetlinMachine run, each on a
core of its own from :data:`FIRST_CPU_CORE` on, and meanwhile our GPU builds one after the other on
:data:`GPU_CORE` (:func:`jobs`), into ``benchmarks/results/campaign/host_peers_<gpu>_<time>/<experiment>_<impl>.json``;
:mod:`asynctm.artifacts.evidence_host` pairs them into speed-ups.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or loaded from its file
    sys.path.append(str(Path(__file__).resolve().parent))
import bench_gpu  # noqa: E402 (the GPU benchmark beside this script: the peers, the inputs)

GPU_CORE = 0  # our GPU builds' host thread; core 1 is left to the step itself and the system
FIRST_CPU_CORE = 2
# An epoch of pyTsetlinMachine takes many minutes on one core on these: the first is timed in consecutive parts
PARTS = {"imdb": 10, "newsgroups20": 4}
GPU_EPOCHS = 4  # at most, per GPU build and experiment
GPU_JOB_S = 45.0  # a GPU build's epochs after the first stop once they have taken this long
WORKER_MARGIN_S = 5.0  # a worker starts a unit only where its last unit's time fits before --until less this
SEED = 0


def cpu_impls(task: str) -> tuple[str, ...]:
    """pyTsetlinMachine's runs of a task (the regression machine has no index: plan.impl_skip_reason)."""
    return ("pytm_nonindexed",) if task == "regression" else ("pytm_indexed", "pytm_nonindexed")


def jobs(config: dict, experiments: list[str], order=()) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(CPU jobs, GPU jobs) as (experiment, impl): pyTsetlinMachine's runs, longest first, and our GPU builds in
    ``order`` (the most valuable first), then the others."""
    from asynctm.experiments import plan

    cpu = sorted(((n, i) for n in experiments for i in cpu_impls(plan.task(config, n))),
                 key=lambda job: -PARTS.get(job[0], 1))
    order = [e for e in order if e in experiments] + [e for e in experiments if e not in order]
    return cpu, [(name, impl) for name in order for impl in plan.GPU_IMPLS]


def load_now() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def _utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def worker(config: dict, data_dir: Path, experiment: str, impl: str, cpu: int | None, until: float, out: Path) -> dict:
    """Train ``impl`` on ``experiment``'s main setting, unit by unit, rewriting ``out`` after each."""
    from asynctm.experiments import plan
    from asynctm.experiments.run import dataset_summary, load_dataset
    from asynctm.io import write_json_atomic
    from asynctm.provenance import cpu_info, gpu_info, host_id, versions

    pinned = None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, [cpu])
        except OSError as exc:
            pinned = f"{type(exc).__name__}: {exc}"
    params = plan.main_params(config, experiment, impl)
    settings = plan.tm_run_settings(config, experiment, impl, params, SEED)
    h, task, gpu = settings["hyperparameters"], settings["task"], impl in plan.GPU_IMPLS
    ds = load_dataset(data_dir, settings)
    parts, n = 1 if gpu else PARTS.get(experiment, 1), ds.X_train.shape[0]
    record = {"experiment": experiment, "impl": impl, "params": params, "seed": SEED, "task": task,
              "hyperparameters": h, "dataset": dataset_summary(ds, settings), "started_utc": _utc(),
              "cpu_asked": None if cpu is None else [cpu], "cpu_affinity": sorted(os.sched_getaffinity(0)),
              "pin_error": pinned, "host_id": host_id(), "cpu": cpu_info(), "logical_cores": os.cpu_count(),
              "gpu": gpu_info() if gpu else None, "versions": versions(), "load_at_start": load_now(),
              "backend": "cuda" if gpu else "cpu (pyTsetlinMachine)", "parts": parts, "units": [], "warmup": None,
              "stopped": None}
    if gpu:  # compile the kernels on a throwaway model: the fresh model's first epoch is then an epoch's work
        t0, rows = time.perf_counter(), min(n, 4 * int(h["batch_size"]))
        warm = bench_gpu.peer(impl, task, h, SEED)
        warm.fit_epoch(ds.X_train[:rows], ds.y_train[:rows])
        warm.close()
        record["warmup"] = {"rows": rows, "wall_s": time.perf_counter() - t0}
    model = bench_gpu.peer(impl, task, h, SEED)
    bounds = [round(i * n / parts) for i in range(parts + 1)]
    slices = [(ds.X_train[a:b], ds.y_train[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    last, t_first, epoch = 0.0, None, 0
    while not record["stopped"]:
        epoch += 1
        for part, (X, y) in enumerate(slices, start=1):
            if time.time() + last + WORKER_MARGIN_S > until:
                record["stopped"] = f"the call's end: no time for epoch {epoch}" + (
                    f" part {part} of {parts}" if parts > 1 else "")
                break
            record["unit_running"] = {"epoch": epoch, "part": part, "started_utc": _utc()}  # stays if it is killed
            write_json_atomic(out, record)
            c0, t0 = time.process_time(), time.perf_counter()
            model.fit_epoch(X, y)
            last = time.perf_counter() - t0
            record.pop("unit_running")
            record["units"].append({"epoch": epoch, "part": part, "rows": int(X.shape[0]), "wall_s": last,
                                    "cpu_s": time.process_time() - c0, "load": load_now(), "at_utc": _utc()})
            t_first = t_first or time.time()
            write_json_atomic(out, record)
        if record["stopped"]:
            break
        if parts > 1:
            record["stopped"] = f"every part of epoch 1 timed ({parts} parts)"
        elif gpu and (epoch >= GPU_EPOCHS or epoch >= 2 and time.time() - t_first > GPU_JOB_S):
            record["stopped"] = f"{epoch} epochs timed"
    record.update(load_at_end=load_now(), ended_utc=_utc())
    model.close()
    write_json_atomic(out, record)
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_host.py", description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", help="the pipeline's processed datasets (a GPU workstation)")
    where.add_argument("--campaign-dir", help="the folder gpu_host staged (.campaign: a lent GPU host)")
    ap.add_argument("--config", default=str(bench_gpu.REPO / "config" / "config.yaml"),
                    help="with --data-dir: the pipeline configuration (default config/config.yaml)")
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--impl", required=True, help="pytm_indexed, pytm_nonindexed or one of our GPU builds")
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin this process to")
    ap.add_argument("--until", type=float, required=True, help="UNIX time by which the last unit must end")
    ap.add_argument("--out", required=True, help="the run's JSON, rewritten after every unit")
    a = ap.parse_args(argv)
    config, data_dir = bench_gpu.inputs(a)
    if a.experiment not in config["experiments"]:
        raise SystemExit(f"--experiment {a.experiment}: not an experiment of the configuration; one of "
                         f"{', '.join(sorted(config['experiments']))}")
    worker(config, data_dir, a.experiment, a.impl, a.cpu, a.until, Path(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
