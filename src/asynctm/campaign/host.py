"""``step host_peers``: the GPU machine's own CPU cores time pyTsetlinMachine while its GPU times our builds.

The paper's speed-ups pair its GPU with one core of the same machine's CPU. Here a GPU machine is lent now and
then, and every pyTsetlinMachine record ran on a CPU machine, so no speed-up of a GPU build over pyTsetlinMachine
can be taken from the records of one host. This step takes them on one host, in one device call:

- one worker process per pyTsetlinMachine run (``indexed=True`` and ``False`` for classification, the regression
  machine, which has no index, for regression), each pinned to a core of its own from :data:`FIRST_CPU_CORE` on,
  training the experiment's main setting (config/config.yaml) from a fresh model, unit by unit, until the call's
  end; a unit is an epoch, or, where an epoch takes minutes (:data:`PARTS`), one of that many consecutive parts of
  the first epoch's examples (the part's rows, each part fitted once; the time per epoch is then estimated from
  them);
- meanwhile, on core :data:`GPU_CORE`, our GPU builds one after the other (``tm_gpu``: a thread per clause, the
  paper's design; ``tm_gpu_warp``: a warp per clause), each after a warm-up fit that compiles its kernels, from a
  fresh model for up to :data:`GPU_EPOCHS` epochs.

Every worker rewrites its JSON after every unit, so a worker stopped at the call's end keeps what it finished.
The step then writes ``benchmarks/results/campaign/host_peers_<gpu>_<time>/<experiment>_<impl>.json`` (the raw
units of each worker, with the cores it asked for and got, its CPU time beside its wall time, and the load) and
packs them; :mod:`asynctm.artifacts.evidence_host` pairs them into per-epoch times and speed-ups, here.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

GPU_CORE = 0  # our GPU builds' host thread; core 1 is left to the step itself and the system
FIRST_CPU_CORE = 2
# An epoch of pyTsetlinMachine on IMDb takes 7-15 minutes on one core (our records): its first epoch is timed in
# consecutive parts of the examples instead (each a tenth), and its time per epoch estimated from them.
PARTS = {"imdb": 10}
GPU_EPOCHS = 4  # at most, per GPU build and experiment: the first and three more
GPU_JOB_S = 45.0  # a GPU build's epochs after the first stop once they have taken this long
WORKER_MARGIN_S = 5.0  # a worker starts a unit only where its last unit's time fits before --until less this
SEED = 0


def cpu_impls(task: str) -> tuple[str, ...]:
    """pyTsetlinMachine's runs of a task (classification and novelty: both; the regression machine has no index:
    plan.impl_skip_reason)."""
    return ("pytm_nonindexed",) if task == "regression" else ("pytm_indexed", "pytm_nonindexed")


def jobs(config: dict, experiments: list[str], order=()) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(CPU jobs, GPU jobs) as (experiment, impl): every experiment's pyTsetlinMachine runs, longest first, and
    our GPU builds in ``order`` (the steps' PAPER_ORDER: the most valuable first), then the others."""
    from ..experiments import plan

    cpu = [(name, impl) for name in experiments for impl in cpu_impls(plan.task(config, name))]
    cpu.sort(key=lambda job: -PARTS.get(job[0], 1))
    order = [e for e in order if e in experiments] + [e for e in experiments if e not in order]
    gpu = [(name, impl) for name in order for impl in plan.GPU_IMPLS]
    return cpu, gpu


def load_now() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


# -- the worker (one process per run) --------------------------------------------------------------------------


def worker(campaign_dir: Path, experiment: str, impl: str, cpu: int | None, until: float, out: Path,
           gpu_epochs: int = GPU_EPOCHS, gpu_job_s: float = GPU_JOB_S, backend: str = "cuda") -> dict:
    """Train ``impl`` on ``experiment``'s main setting, unit by unit, rewriting ``out`` after each."""
    from ..experiments import plan
    from ..experiments.run import dataset_summary, load_dataset
    from ..io import write_json_atomic
    from ..provenance import cpu_info, gpu_info, host_id, versions
    from .bench import _peer
    from .stage import load_campaign

    asked, pinned = ([cpu] if cpu is not None else None), None
    if asked is not None:
        try:
            os.sched_setaffinity(0, asked)
        except OSError as exc:
            pinned = f"{type(exc).__name__}: {exc}"
    config = load_campaign(campaign_dir)["config"]
    params = plan.main_params(config, experiment, impl)
    settings = plan.tm_run_settings(config, experiment, impl, params, SEED)
    h, task = settings["hyperparameters"], settings["task"]
    ds = load_dataset(Path(campaign_dir) / "data", settings)
    gpu = impl in plan.GPU_IMPLS
    peer_task = "regression" if task == "regression" else "classification"

    def fresh():
        return _peer(impl, peer_task, h, SEED, gpu_backend=backend)

    record = {"experiment": experiment, "impl": impl, "params": params, "seed": SEED, "task": task,
              "hyperparameters": h, "dataset": dataset_summary(ds, settings), "started_utc": _utc(), "cpu_asked": asked,
              "cpu_affinity": sorted(os.sched_getaffinity(0)), "pin_error": pinned, "host_id": host_id(),
              "cpu": cpu_info(), "logical_cores": os.cpu_count(), "gpu": gpu_info() if gpu else None,
              "versions": versions(), "load_at_start": load_now(),
              "backend": backend if gpu else "cpu (pyTsetlinMachine)", "parts": 1 if gpu else PARTS.get(experiment, 1),
              "units": [], "warmup": None, "stopped": None}
    n = ds.X_train.shape[0]
    if gpu:
        # Compile the kernels (and take every one-time cost) on a throwaway model, so the first timed epoch of
        # the fresh model below is an epoch's work, as pyTsetlinMachine's first epoch is.
        t0 = time.perf_counter()
        warm = fresh()
        rows = min(n, 4 * int(h["batch_size"]))
        warm.fit_epoch(ds.X_train[:rows], ds.y_train[:rows])
        warm.close()
        record["warmup"] = {"rows": rows, "wall_s": time.perf_counter() - t0}
    peer = fresh()
    parts = record["parts"]
    bounds = [round(i * n / parts) for i in range(parts + 1)]
    slices = ([(ds.X_train[a:b], ds.y_train[a:b]) for a, b in zip(bounds[:-1], bounds[1:])] if parts > 1
              else [(ds.X_train, ds.y_train)])
    last = 0.0
    t_first = None
    epoch = 0
    while True:
        epoch += 1
        for part, (X, y) in enumerate(slices, start=1):
            if time.time() + last + WORKER_MARGIN_S > until:
                record["stopped"] = (f"the call's end: no time for epoch {epoch}"
                                     + (f" part {part} of {parts}" if parts > 1 else ""))
                break
            # A unit still running when the call ends leaves its start on record (the step stops the worker)
            record["unit_running"] = {"epoch": epoch, "part": part, "started_utc": _utc()}
            write_json_atomic(out, record)
            c0, t0 = time.process_time(), time.perf_counter()
            peer.fit_epoch(X, y)
            wall = time.perf_counter() - t0
            record.pop("unit_running")
            record["units"].append({"epoch": epoch, "part": part, "rows": int(X.shape[0]), "wall_s": wall,
                                    "cpu_s": time.process_time() - c0, "load": load_now(), "at_utc": _utc()})
            last = wall
            t_first = t_first if t_first is not None else time.time()
            write_json_atomic(out, record)
        if record["stopped"] or parts > 1:
            if parts > 1 and not record["stopped"]:
                record["stopped"] = f"every part of epoch 1 timed ({parts} parts)"
            break
        if gpu and (epoch >= gpu_epochs or (epoch >= 2 and time.time() - t_first > gpu_job_s)):
            record["stopped"] = f"{epoch} epochs timed"
            break
    record["load_at_end"] = load_now()
    record["ended_utc"] = _utc()
    peer.close()
    write_json_atomic(out, record)
    return record


def _utc() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the step ---------------------------------------------------------------------------------------------------


def step_host_peers(step, select: str | None = None, order=(), stop_margin_s: float = 20.0) -> None:
    """Start the CPU workers on their cores, run the GPU workers one after the other on :data:`GPU_CORE` (in
    ``order``), wait for the CPU workers until the step's end less ``stop_margin_s``, pack."""
    config = step.config
    experiments = [e for e in step.campaign.get("experiments") or sorted(config["experiments"])
                   if not select or e in select.split(",")]
    cpu_jobs, gpu_jobs = jobs(config, experiments, order)
    cores = sorted(os.sched_getaffinity(0))
    free = [c for c in cores if c >= FIRST_CPU_CORE]
    if len(free) < len(cpu_jobs):
        step.say(f"{len(free)} cores for {len(cpu_jobs)} pyTsetlinMachine runs: the last "
                 f"{len(cpu_jobs) - len(free)} are left out")
        for job in cpu_jobs[len(free) :]:
            step.skip("/".join(job), f"no core of its own ({len(cores)} logical cores)")
        cpu_jobs = cpu_jobs[: len(free)]
    folder = f"benchmarks/results/campaign/host_peers_{_slug(step)}_{step.stamp}"
    (step.work / folder).mkdir(parents=True, exist_ok=True)
    until = step.deadline - stop_margin_s
    step.manifest.update(host_peers={"folder": folder, "cores": len(cores), "gpu_core": GPU_CORE,
                                     "cpu_jobs": ["/".join(j) for j in cpu_jobs],
                                     "gpu_jobs": ["/".join(j) for j in gpu_jobs], "load_at_start": load_now()})
    step.say(f"{len(cpu_jobs)} pyTsetlinMachine runs on cores {free[0] if free else '-'}.."
             f"{free[len(cpu_jobs) - 1] if cpu_jobs else '-'}, {len(gpu_jobs)} GPU runs on core {GPU_CORE}, "
             f"until {until - time.time():.0f} s from now")

    def command(name: str, impl: str, core: int | None) -> list[str]:
        out = step.work / folder / f"{name}_{impl}.json"
        return [step.python, "-m", "asynctm.campaign.host", "--campaign-dir", str(step.campaign_dir), "--experiment",
                name, "--impl", impl, "--until", f"{until:.1f}", "--out", str(out)] + (
            ["--cpu", str(core)] if core is not None else [])

    def ended(name: str, impl: str, rc: int | None) -> None:
        step.say(f"{name}/{impl}: exit {rc}")
        if rc == 0:
            step.manifest["done"].append(f"{name}/{impl}")
        else:
            step.manifest["skipped"].append({"run": f"{name}/{impl}", "reason": f"exit {rc}"})

    procs = []
    logs = step.work / folder / "logs"
    logs.mkdir(exist_ok=True)
    try:
        for (name, impl), core in zip(cpu_jobs, free):
            log = open(logs / f"{name}_{impl}.log", "w")
            procs.append(((name, impl), subprocess.Popen(command(name, impl, core), env=step.env, stdout=log,
                                                         stderr=subprocess.STDOUT, process_group=0), log))
        gpu_core = GPU_CORE if GPU_CORE in cores else None
        for name, impl in gpu_jobs:
            if step.remaining() < stop_margin_s + 15:
                step.skip(f"{name}/{impl}", "no time left in the call")
                continue
            ended(name, impl, step.child(command(name, impl, gpu_core), logs / f"{name}_{impl}.log"))
        step.pack()
        for (name, impl), proc, _ in procs:
            try:
                rc = proc.wait(timeout=max(0.0, step.remaining()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 15)
                rc = proc.wait()
            ended(name, impl, rc)
    finally:
        for _, proc, log in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
            log.close()
    step.manifest["host_peers"]["load_at_end"] = load_now()


def _slug(step) -> str:
    from . import slug

    return slug((step.gpu or {}).get("name", "no_gpu"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.campaign.host",
                                 description="one run of the host_peers step (started by the step)")
    ap.add_argument("--campaign-dir", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--impl", required=True)
    ap.add_argument("--cpu", type=int, default=None, help="the core to pin this process to")
    ap.add_argument("--until", type=float, required=True, help="UNIX time by which the last unit must end")
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu-epochs", type=int, default=GPU_EPOCHS)
    ap.add_argument("--gpu-job-s", type=float, default=GPU_JOB_S)
    ap.add_argument("--backend", choices=("cuda", "cpu"), default="cuda",
                    help="our builds' backend: cuda, or cpu to rehearse the step on a machine without a GPU (the "
                         "record says so)")
    a = ap.parse_args(argv)
    if not math.isfinite(a.until):
        ap.error("--until must be a finite UNIX time")
    worker(Path(a.campaign_dir), a.experiment, a.impl, a.cpu, a.until, Path(a.out), a.gpu_epochs, a.gpu_job_s,
           a.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
