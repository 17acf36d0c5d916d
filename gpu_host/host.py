"""``step host_peers``: the GPU machine's own CPU cores time pyTsetlinMachine while its GPU times our builds.

The paper's speed-ups pair its GPU with one core of the same machine; every pyTsetlinMachine record here ran on a CPU
machine, so this step takes both on one host, in one device call:

- one worker process per pyTsetlinMachine run (indexed and not for classification, the regression machine, which has
  no index, for regression), each pinned to a core of its own from :data:`FIRST_CPU_CORE` on, training the
  experiment's main setting from a fresh model unit by unit until the call's end; a unit is an epoch or, where an
  epoch takes minutes (:data:`PARTS`), one of that many consecutive parts of the first epoch's examples;
- meanwhile, on core :data:`GPU_CORE`, our GPU builds one after the other, each after a warm-up fit that compiles
  its kernels, from a fresh model for up to :data:`GPU_EPOCHS` epochs.

Every worker rewrites its JSON after every unit, so one stopped at the call's end keeps what it finished:
``benchmarks/results/campaign/host_peers_<gpu>_<time>/<experiment>_<impl>.json`` (the raw units, the cores asked for
and got, CPU beside wall time, the load), which :mod:`asynctm.artifacts.evidence_host` pairs into speed-ups here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

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


def worker(campaign_dir: Path, experiment: str, impl: str, cpu: int | None, until: float, out: Path) -> dict:
    """Train ``impl`` on ``experiment``'s main setting, unit by unit, rewriting ``out`` after each."""
    from asynctm.experiments import plan
    from asynctm.experiments.run import dataset_summary, load_dataset
    from asynctm.io import write_json_atomic
    from asynctm.provenance import cpu_info, gpu_info, host_id, versions

    from . import bench_gpu
    from .stage import load_campaign

    pinned = None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, [cpu])
        except OSError as exc:
            pinned = f"{type(exc).__name__}: {exc}"
    config = load_campaign(campaign_dir)["config"]
    params = plan.main_params(config, experiment, impl)
    settings = plan.tm_run_settings(config, experiment, impl, params, SEED)
    h, task, gpu = settings["hyperparameters"], settings["task"], impl in plan.GPU_IMPLS
    ds = load_dataset(Path(campaign_dir) / "data", settings)
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
        warm = bench_gpu().peer(impl, task, h, SEED)
        warm.fit_epoch(ds.X_train[:rows], ds.y_train[:rows])
        warm.close()
        record["warmup"] = {"rows": rows, "wall_s": time.perf_counter() - t0}
    model = bench_gpu().peer(impl, task, h, SEED)
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


def step_host_peers(step, select: str | None = None, order=(), stop_margin_s: float = 20.0) -> None:
    """Start the CPU workers on their cores, run the GPU workers one after the other on :data:`GPU_CORE` (in
    ``order``), wait for the CPU workers until the step's end less ``stop_margin_s``."""
    from asynctm.provenance import slug

    experiments = [e for e in step.campaign.get("experiments") or sorted(step.config["experiments"])
                   if not select or e in select.split(",")]
    cpu_jobs, gpu_jobs = jobs(step.config, experiments, order)
    cores = sorted(os.sched_getaffinity(0))
    free = [c for c in cores if c >= FIRST_CPU_CORE]
    for job in cpu_jobs[len(free):]:
        step.skip("/".join(job), f"no core of its own ({len(cores)} logical cores)")
    cpu_jobs = cpu_jobs[: len(free)]
    folder = step.work / f"benchmarks/results/campaign/host_peers_{slug((step.gpu or {}).get('name', 'no_gpu'))}_" \
                         f"{step.stamp}"
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    until = step.deadline - stop_margin_s
    step.manifest["host_peers"] = {"folder": folder.relative_to(step.work).as_posix(), "cores": len(cores),
                                   "gpu_core": GPU_CORE, "cpu_jobs": ["/".join(j) for j in cpu_jobs],
                                   "gpu_jobs": ["/".join(j) for j in gpu_jobs], "load_at_start": load_now()}
    step.say(f"{len(cpu_jobs)} pyTsetlinMachine runs on cores {free[: len(cpu_jobs)]}, {len(gpu_jobs)} GPU runs on "
             f"core {GPU_CORE}, until {until - time.time():.0f} s from now")

    def command(name: str, impl: str, core: int | None) -> list[str]:
        return [sys.executable, "-m", "gpu_host.host", "--campaign-dir", str(step.campaign_dir),
                "--experiment", name, "--impl", impl, "--until", f"{until:.1f}", "--out",
                str(folder / f"{name}_{impl}.json"), *(["--cpu", str(core)] if core is not None else [])]

    def ended(name: str, impl: str, rc: int | None) -> None:
        step.say(f"{name}/{impl}: exit {rc}")
        if rc == 0:
            step.manifest["done"].append(f"{name}/{impl}")
        else:
            step.manifest["skipped"].append({"run": f"{name}/{impl}", "reason": f"exit {rc}"})

    logs = folder / "logs"
    with ThreadPoolExecutor(1) as pool:  # the CPU workers side by side, until the step's end, meanwhile the GPU's
        cpu = pool.submit(step.children, [(command(n, i, core), logs / f"{n}_{i}.log", None)
                                          for (n, i), core in zip(cpu_jobs, free)])
        for name, impl in gpu_jobs:
            if step.remaining() < stop_margin_s + 15:
                step.skip(f"{name}/{impl}", "no time left in the call")
            else:
                ended(name, impl, step.child(command(name, impl, GPU_CORE if GPU_CORE in cores else None),
                                             logs / f"{name}_{impl}.log"))
        step.pack()
        for (name, impl), rc in zip(cpu_jobs, cpu.result()):
            ended(name, impl, rc)
    step.manifest["host_peers"]["load_at_end"] = load_now()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpu_host.host", description="one run of the host_peers step")
    ap.add_argument("--campaign-dir", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--impl", required=True)
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin this process to")
    ap.add_argument("--until", type=float, required=True, help="UNIX time by which the last unit must end")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    worker(Path(a.campaign_dir), a.experiment, a.impl, a.cpu, a.until, Path(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
