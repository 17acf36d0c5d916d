"""The same-host benchmark: pyTsetlinMachine on a core of a machine, and our builds beside it on the same machine.

The paper's speed-ups pair its GPU with one core of the same machine; every pyTsetlinMachine record of the pipeline
ran on a CPU machine, and our main records on other machines again. One process of this script trains one
implementation on one experiment's main setting (seed :data:`SEED`) from a fresh model, unit by unit until
``--until``, rewriting ``--out`` after every unit (the raw units, the cores asked for and got, CPU beside wall time,
the load), so a run stopped at the end keeps what it finished:

- pyTsetlinMachine (indexed and not for classification; the regression machine, which has no index, for regression:
  :func:`cpu_impls`) pinned to a core of its own (``--cpu``); a unit is an epoch or, where an epoch takes many
  minutes on one core (:data:`PARTS`), one of that many consecutive parts of the first epoch's examples; at most
  ``--max-epochs`` epochs where given;
- our builds (the GPU builds, and the CPU build on every core the process may use), after a warm-up fit that
  compiles their kernels, for up to :data:`OURS_EPOCHS` epochs.

    python benchmarks/bench_host.py --data-dir data --experiment imdb --impl pytm_indexed --cpu 2 --until T --out F
    python benchmarks/bench_host.py --campaign-dir .campaign ...   # a lent GPU host
    python benchmarks/bench_host.py --data-dir data --cpu-host [--experiments semeval,imdb]   # a CPU machine

On a lent GPU host ``python -m gpu_host step host_peers`` starts one process per pyTsetlinMachine run, each on a
core of its own from :data:`FIRST_CPU_CORE` on, and meanwhile our GPU builds one after the other on
:data:`GPU_CORE` (:func:`jobs`), into ``benchmarks/results/campaign/host_peers_<gpu>_<time>/<experiment>_<impl>.json``.
On a CPU machine ``--cpu-host`` (:func:`cpu_host`) runs pyTsetlinMachine's runs as many at once as the machine has
cores, each pinned to a core of its own, and then, with them ended, our CPU build alone on every core, one
experiment after the other, into ``benchmarks/results/campaign/host_peers_cpu_<cpu>_<time>/``: the two never share a
core. :mod:`asynctm.artifacts.evidence_host` pairs either into speed-ups.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script or loaded from its file
    sys.path.append(str(Path(__file__).resolve().parent))
import bench_gpu  # noqa: E402 (the GPU benchmark beside this script: the peers, the inputs)

GPU_CORE = 0  # our GPU builds' host thread; core 1 is left to the step itself and the system
FIRST_CPU_CORE = 2
# An epoch of pyTsetlinMachine takes many minutes on one core on these: the first is timed in consecutive parts
PARTS = {"imdb": 10, "newsgroups20": 4}
CPU_BUILD = "tm_cpu"  # our CPU build: timed as our GPU builds are, on every core the process may use
OURS_EPOCHS = 4  # at most, per build of ours and experiment
OURS_JOB_S = 45.0  # a build of ours: its epochs after the first stop once they have taken this long
# --cpu-host: pyTsetlinMachine's epochs per run (epochs 2-5 beside our builds' 2-4: the pair takes the epochs both
# have), and the longest any one run may take
CPU_HOST_PYTM_EPOCHS = 5
CPU_HOST_RUN_S = 1800.0
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


def ours(impl: str) -> bool:
    """Whether ``impl`` is a build of ours (a GPU build or the CPU build), timed after a warm-up fit."""
    from asynctm.experiments import plan

    return impl in plan.GPU_IMPLS or impl == CPU_BUILD


def worker(config: dict, data_dir: Path, experiment: str, impl: str, cpu: int | None, until: float, out: Path,
           max_epochs: int | None = None) -> dict:
    """Train ``impl`` on ``experiment``'s main setting, unit by unit, rewriting ``out`` after each; pyTsetlinMachine
    stops after ``max_epochs`` epochs where given."""
    from asynctm.experiments import plan
    from asynctm.experiments.run import dataset_summary, load_dataset
    from asynctm.io import write_json_atomic
    from asynctm.provenance import cpu_info, git_info, gpu_info, host_id, versions

    pinned = None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, [cpu])
        except OSError as exc:
            pinned = f"{type(exc).__name__}: {exc}"
    params = plan.main_params(config, experiment, impl)
    settings = plan.tm_run_settings(config, experiment, impl, params, SEED)
    h, task, gpu, mine = settings["hyperparameters"], settings["task"], impl in plan.GPU_IMPLS, ours(impl)
    ds = load_dataset(data_dir, settings)
    parts, n = 1 if mine else PARTS.get(experiment, 1), ds.X_train.shape[0]
    threads = len(os.sched_getaffinity(0)) if impl == CPU_BUILD else 1
    backend = ("cuda" if gpu else f"cpu (ours, {threads} threads)" if mine else "cpu (pyTsetlinMachine)")
    record = {"experiment": experiment, "impl": impl, "params": params, "seed": SEED, "task": task,
              "hyperparameters": h, "dataset": dataset_summary(ds, settings), "started_utc": _utc(),
              "cpu_asked": None if cpu is None else [cpu], "cpu_affinity": sorted(os.sched_getaffinity(0)),
              "pin_error": pinned, "host_id": host_id(), "cpu": cpu_info(), "logical_cores": os.cpu_count(),
              "gpu": gpu_info() if gpu else None, "versions": versions(), "git": git_info(),
              "load_at_start": load_now(), "backend": backend, "threads": threads, "parts": parts, "units": [],
              "warmup": None, "stopped": None}
    if mine:  # compile the kernels on a throwaway model: the fresh model's first epoch is then an epoch's work
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
        elif mine and (epoch >= OURS_EPOCHS or epoch >= 2 and time.time() - t_first > OURS_JOB_S):
            record["stopped"] = f"{epoch} epochs timed"
        elif not mine and max_epochs and epoch >= max_epochs:
            record["stopped"] = f"{epoch} epochs timed"
    record.update(load_at_end=load_now(), ended_utc=_utc())
    model.close()
    write_json_atomic(out, record)
    return record


def cpu_host(config: dict, data_dir: Path, experiments: list[str], out_root: Path, config_arg: list[str],
             pytm_epochs: int = CPU_HOST_PYTM_EPOCHS, run_s: float = CPU_HOST_RUN_S, say=print) -> Path:
    """The same-host benchmark on a CPU machine: pyTsetlinMachine's runs of ``experiments`` (:func:`jobs`, longest
    first) as many at once as this process may use cores, each pinned to a core of its own, and then our CPU build
    alone on all of them, one experiment after the other; every run at most ``run_s`` seconds. Writes the runs into
    ``out_root/host_peers_cpu_<cpu>_<time>/`` (their logs in its ``logs/``) and the manifest beside that folder, in
    the GPU campaign's layout; returns the manifest's path."""
    from datetime import UTC, datetime

    from asynctm.io import write_json_atomic
    from asynctm.provenance import cpu_info, git_info, host_id, slug

    cpu_jobs, _ = jobs(config, experiments)
    cores = sorted(os.sched_getaffinity(0))
    name = f"host_peers_cpu_{slug(cpu_info().get('model'))}_{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    folder, manifest_path = out_root / name, out_root / f"{name}.json"
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    ours_jobs = [(e, CPU_BUILD) for e in experiments]
    manifest = {"host_peers": {"folder": f"benchmarks/results/campaign/{name}", "host_id": host_id(),
                               "cores": len(cores), "cpu_jobs": ["/".join(j) for j in cpu_jobs],
                               "ours_jobs": ["/".join(j) for j in ours_jobs], "pytm_max_epochs": pytm_epochs,
                               "run_s": run_s, "git": git_info(), "load_at_start": load_now(),
                               "started_utc": _utc()},
                "done": [], "skipped": []}
    write_json_atomic(manifest_path, manifest)

    def child(experiment: str, impl: str, core: int | None) -> None:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--data-dir", str(data_dir), *config_arg,
               "--experiment", experiment, "--impl", impl, "--until", f"{time.time() + run_s:.1f}",
               "--out", str(folder / f"{experiment}_{impl}.json"), *(["--cpu", str(core)] if core is not None else []),
               *(["--max-epochs", str(pytm_epochs)] if not ours(impl) else [])]
        with open(folder / "logs" / f"{experiment}_{impl}.log", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        say(f"{experiment}/{impl}: exit {rc}" + (f" (core {core})" if core is not None else f" ({len(cores)} cores)"))
        if rc == 0:
            manifest["done"].append(f"{experiment}/{impl}")
        else:
            manifest["skipped"].append({"run": f"{experiment}/{impl}", "reason": f"exit {rc}"})

    free: list[int] = list(cores)

    def pinned(job: tuple[str, str]) -> None:
        core = free.pop(0)  # one free core per running job: the pool never runs more jobs than cores
        try:
            child(*job, core)
        finally:
            free.append(core)

    say(f"{len(cpu_jobs)} pyTsetlinMachine runs, {len(cores)} at a time on cores {cores}; then our CPU build on "
        f"{len(cores)} cores: {', '.join(experiments)}")
    with ThreadPoolExecutor(len(cores)) as pool:
        list(pool.map(pinned, cpu_jobs))
    for job in ours_jobs:
        child(*job, None)
    manifest["host_peers"].update(load_at_end=load_now(), ended_utc=_utc())
    write_json_atomic(manifest_path, manifest)
    return manifest_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/bench_host.py", description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", help="the pipeline's processed datasets (a GPU workstation)")
    where.add_argument("--campaign-dir", help="the folder gpu_host staged (.campaign: a lent GPU host)")
    ap.add_argument("--config", default=str(bench_gpu.REPO / "config" / "config.yaml"),
                    help="with --data-dir: the pipeline configuration (default config/config.yaml)")
    ap.add_argument("--experiment", help="one run: the experiment")
    ap.add_argument("--impl", help="one run: pytm_indexed, pytm_nonindexed, tm_cpu or one of our GPU builds")
    ap.add_argument("--cpu", type=int, default=None, help="one run: the core to pin this process to")
    ap.add_argument("--until", type=float, help="one run: UNIX time by which the last unit must end")
    ap.add_argument("--out", help="one run: the run's JSON, rewritten after every unit")
    ap.add_argument("--max-epochs", type=int, default=None, help="one run: pyTsetlinMachine's epochs at most")
    ap.add_argument("--cpu-host", action="store_true",
                    help="a CPU machine: every run of --experiments, pyTsetlinMachine's pinned one per core and then "
                         "our CPU build on all cores, into --out-dir (with --data-dir)")
    ap.add_argument("--experiments", default=None,
                    help="with --cpu-host: comma-separated (default: every experiment of the configuration)")
    ap.add_argument("--out-dir", default=str(bench_gpu.REPO / "benchmarks" / "results" / "campaign"),
                    help="with --cpu-host: where the runs' folder and its manifest go (default: the campaign folder)")
    a = ap.parse_args(argv)
    config, data_dir = bench_gpu.inputs(a)
    if a.cpu_host:
        if a.campaign_dir:
            raise SystemExit("--cpu-host runs on a CPU machine's datasets: pass --data-dir (and --config), not "
                             "--campaign-dir")
        experiments = a.experiments.split(",") if a.experiments else sorted(config["experiments"])
        unknown = [e for e in experiments if e not in config["experiments"]]
        if unknown:
            raise SystemExit(f"--experiments {','.join(unknown)}: not an experiment of the configuration; of "
                             f"{', '.join(sorted(config['experiments']))}")
        cpu_host(config, data_dir, experiments, Path(a.out_dir), ["--config", str(a.config)])
        return 0
    missing = [f"--{k}" for k in ("experiment", "impl", "until", "out") if getattr(a, k) is None]
    if missing:
        raise SystemExit(f"one run needs {', '.join(missing)}; or pass --cpu-host for every run on a CPU machine")
    if a.experiment not in config["experiments"]:
        raise SystemExit(f"--experiment {a.experiment}: not an experiment of the configuration; one of "
                         f"{', '.join(sorted(config['experiments']))}")
    worker(config, data_dir, a.experiment, a.impl, a.cpu, a.until, Path(a.out), a.max_epochs)
    return 0

if __name__ == "__main__":
    sys.exit(main())
