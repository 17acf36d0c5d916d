#!/usr/bin/env python
"""Per-epoch training time and test accuracy (or MAE) of our Tsetlin Machine against the paper's baselines.

One command, one process, per setting: our CPU build with 1 thread and with all cores, pyTsetlinMachine
``indexed=True`` and ``indexed=False`` (1 thread, as in the paper), pyTsetlinMachineParallel on all cores (in
a worker process run by its own virtual environment, ``benchmarks/setup_pytm_parallel.sh``), tmu on its CPU
clause bank and green-tsetlin at each of our thread counts (``tmu_cpu``, ``green_tsetlin``: worker processes of
their own environments, ``benchmarks/setup_tm_peers.sh``, driven by ``benchmarks/worker_peers.py``), and, when a
CUDA GPU is present, our CUDA backend and PyTsetlinMachineCUDA. Identical hyperparameters and data for all
(mapping and the differences by design: :mod:`asynctm.peers`, and ``worker_peers.py`` for tmu and
green-tsetlin). Prints a table and writes ``benchmarks/results/<name>.json``, then its Markdown table
``<name>.md`` (``benchmarks/report.py``, which renders it again from the JSON alone).

    python benchmarks/bench_tm.py                          # apple and bike, default epochs
    python benchmarks/bench_tm.py --settings all --seeds 0,1,2   # all four settings (the speed goals' table)
    python benchmarks/bench_tm.py --settings apple --epochs 20
    python benchmarks/bench_tm.py --quick                  # a smoke run: few epochs, subsampled data

Settings: ``apple`` (experiment ``wsd_apple``), ``bike`` (``bike_sharing``, regression), ``semeval``
(``semeval``, the authors' preparation, 102,176 sparse features) and ``imdb`` (``imdb``, 5,000 n-gram
features, subsampled by default); ``all`` is the four. Their data are the processed datasets of the pipeline
(``<data-dir>/processed/<dataset>/<protocol>``, ``snakemake --cores all data``) and their hyperparameters
the experiment's in ``config/config.yaml`` (:func:`asynctm.experiments.plan.experiment`); only what is the
benchmark's own is here: epochs timed, subsamples, when the metric is taken, and the speed goal against one
peer (``goal``). The loading, training, timing and pooling over seeds are :mod:`asynctm.benchmarking`'s; the
verdicts and the table ``report.py``'s; this script adds the command line and the record around them.

Timing: wall clock (``time.perf_counter``) around one ``fit_epoch`` call, i.e. the library's
``fit(X, y, epochs=1, incremental=True)``, which is how the paper's authors drove pyTsetlinMachine
(pyTsetlinMachineParallel: timed the same way inside its worker). Each implementation first trains one
warm-up epoch (reported apart: it includes one-time costs such as compiling our kernels or encoding the
data); then the timed epochs run *round-robin* (epoch k of every implementation, then epoch k+1), so a burst
of load from elsewhere hits all implementations alike. With ``--seeds`` every implementation does this once
per seed; the median epoch is over all seeds' timed epochs and the metric is the mean over seeds after the
same number of epochs. The test metric is taken outside the timed region, after every epoch (``--eval
every``) or after the last one only (``--eval final``, the default for IMDb, where pyTM's predict is slow).
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from asynctm import benchmarking
from asynctm.benchmarking import PEERS
from asynctm.provenance import code_digests, cpu_info, git_info, gpu_info, versions

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))  # report.py beside this script, also when it is loaded from elsewhere (tests)
import report  # noqa: E402  (found through the sys.path entry just above)
import worker_peers  # noqa: E402  (likewise)

DEFAULT_OUT = HERE / "results"
DEFAULT_CONFIG = REPO / "config" / "config.yaml"
PARALLEL_VENV = HERE / ".venv-pytmparallel"  # git-ignored: built by setup_pytm_parallel.sh
PARALLEL_SETUP = HERE / "setup_pytm_parallel.sh"
PARALLEL_WORKER = HERE / "pytm_parallel_worker.py"

# The benchmark's own settings; dataset and hyperparameters are the experiment's (config/config.yaml).
# epochs / quick_epochs: timed epochs after the warm-up; max_train / max_test (and their --quick values): the
# default subsample (None: all rows); evaluate: test metric after "every" epoch or the "final" one only; goal:
# the CPU speed goal (median epoch of ours on all cores against the peer on one thread, at equal accuracy:
# report.metric_ok).
SETTINGS = {
    "apple": {"experiment": "wsd_apple", "epochs": 10, "quick_epochs": 2, "max_train": None, "max_test": None,
              "evaluate": "every", "goal": {"peer": "pyTM indexed", "min_speedup": 25.0}},
    "bike": {"experiment": "bike_sharing", "epochs": 5, "quick_epochs": 2, "quick_max_train": 2000,
             "max_train": None, "max_test": None, "evaluate": "every",
             "goal": {"peer": "pyTM RTM (no index)", "min_speedup": 10.0}},
    # pyTM indexed: ~60-100 s an epoch on the 6,000 training sentences
    "semeval": {"experiment": "semeval", "epochs": 2, "quick_epochs": 1, "quick_max_train": 500,
                "quick_max_test": 500, "max_train": None, "max_test": None, "evaluate": "every",
                "goal": {"peer": "pyTM indexed", "min_speedup": 40.0}},
    # pyTM indexed ~0.1 s per example and epoch: ~4-5 min for 1 + 2 epochs on 1,000 reviews
    "imdb": {"experiment": "imdb", "epochs": 2, "quick_epochs": 1, "quick_max_train": 200, "quick_max_test": 200,
             "max_train": 1000, "max_test": 1000, "evaluate": "final",
             "goal": {"peer": "pyTM indexed", "min_speedup": 25.0}},
}
ALL_SETTINGS = ("apple", "bike", "semeval", "imdb")
# tmu and green-tsetlin (the worker peers) run only when named: they take dense input, and a dense SemEval is
# gigabytes in their workers (tmu: uint32).
DEFAULT_PEERS = ",".join(p for p in PEERS if p not in benchmarking.WORKER_PEERS)


# --- a setting: its experiment, sizes and verdict ------------------------------------------------------------

def experiment(config: dict, name: str) -> dict:
    """The experiment a setting runs, from the loaded configuration."""
    from asynctm.experiments import plan

    return plan.experiment(config, SETTINGS[name]["experiment"])


def setting_sizes(spec: dict, args) -> tuple[int, int | None, int | None]:
    """Timed epochs, max_train, max_test for a setting under the command line (0 = no limit)."""
    epochs = args.epochs if args.epochs is not None else (spec["quick_epochs"] if args.quick else spec["epochs"])

    def limit(cli, quick_key, key):
        if cli is not None:
            return cli or None
        if args.quick and spec.get(quick_key) is not None:
            return spec[quick_key]
        return spec.get(key)

    return epochs, limit(args.max_train, "quick_max_train", "max_train"), limit(args.max_test, "quick_max_test",
                                                                               "max_test")


def run_setting(name: str, args, config: dict, gpu: bool) -> dict:
    """One setting measured by :func:`asynctm.benchmarking.run_setting`, with its comparison and goal."""
    spec = SETTINGS[name]
    exp = experiment(config, name)
    epochs, max_train, max_test = setting_sizes(spec, args)
    parallel = benchmarking.ParallelEnv(python=Path(args.pytm_parallel_python), worker=PARALLEL_WORKER,
                                        setup=PARALLEL_SETUP, build_missing=args.setup_pytm_parallel)
    opts = benchmarking.Options(data_dir=Path(args.data_dir), seeds=list(args.seeds_list), subsample_seed=args.seed,
                                threads=args.threads_list, peers=args.peers_set, gpu=gpu,
                                parallel_threads=args.parallel_threads, parallel=parallel,
                                workers=worker_peers.factories({"tmu_cpu": args.tmu_python, "tmu_cuda": args.tmu_python,
                                                                "green_tsetlin": args.green_tsetlin_python}))
    evaluate = args.eval or spec.get("evaluate", "every")
    setting = benchmarking.run_setting(name, exp, epochs, max_train, max_test, evaluate, opts)
    setting["comparison"] = report.compare(exp["task"], setting["results"], spec.get("goal"))
    return setting


def write_json(path: Path, record: dict) -> None:
    from asynctm.io import write_json_atomic

    write_json_atomic(path, record, sort_keys=False)


# --- command line -------------------------------------------------------------------------------------------

def _int_list(text: str, what: str, p) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        p.error(f"{what} must be comma-separated integers, got {text!r}")


def parse_args(argv=None):
    from asynctm.backends.cpu import default_threads

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--settings", default="apple,bike",
                   help="comma-separated, of: " + ", ".join(SETTINGS) + "; or all (= " + ",".join(ALL_SETTINGS) + ")")
    p.add_argument("--epochs", type=int, default=None,
                   help="timed epochs after the warm-up epoch (default per setting: apple 10, bike 5, semeval 2, "
                        "imdb 2; --quick: 2, 2, 1, 1)")
    p.add_argument("--threads", default=None,
                   help=f"thread counts for our CPU build, comma-separated (default: 1,{default_threads()})")
    p.add_argument("--seed", type=int, default=42,
                   help="the subsample draw, and the training seed unless --seeds is given (default 42)")
    p.add_argument("--seeds", default=None,
                   help="training seeds, comma-separated (e.g. 0,1,2): every implementation trains once per seed; "
                        "times pooled, metrics averaged over seeds (default: --seed)")
    p.add_argument("--quick", action="store_true", help="few epochs and subsampled data (smoke test)")
    p.add_argument("--max-train", type=int, default=None,
                   help="subsample the training set to N rows (recorded; 0: all rows; default per setting: imdb 1000)")
    p.add_argument("--max-test", type=int, default=None,
                   help="subsample the test set to N rows (recorded; 0: all rows; default per setting: imdb 1000)")
    p.add_argument("--eval", choices=("every", "final"), default=None,
                   help="test metric after every epoch or after the last only (default per setting: imdb final, "
                        "others every)")
    p.add_argument("--peers", default=DEFAULT_PEERS,
                   help="which implementations: asynctm (CPU), pytm, pytm_parallel, tmu_cpu, green_tsetlin, "
                        "asynctm_cuda, pytm_cuda, tmu_cuda (GPU ones only when a GPU is present; default all but "
                        "tmu_cpu, tmu_cuda and green_tsetlin)")
    p.add_argument("--parallel-threads", type=int, default=None,
                   help=f"OpenMP threads of pyTsetlinMachineParallel (default: all usable cores, {default_threads()})")
    p.add_argument("--pytm-parallel-python",
                   default=os.environ.get("ASYNCTM_PYTM_PARALLEL_PYTHON", str(PARALLEL_VENV / "bin" / "python")),
                   help="python of pyTsetlinMachineParallel's own environment (default: $ASYNCTM_PYTM_PARALLEL_PYTHON "
                        "or benchmarks/.venv-pytmparallel/bin/python)")
    p.add_argument("--setup-pytm-parallel", action="store_true",
                   help="build that environment first (benchmarks/setup_pytm_parallel.sh) when it is missing")
    for peer, flag, var in (("tmu_cpu", "tmu", "ASYNCTM_TMU_PYTHON"),
                            ("green_tsetlin", "green-tsetlin", "ASYNCTM_GREEN_TSETLIN_PYTHON")):
        env = worker_peers.ENVS[peer]
        p.add_argument(f"--{flag}-python", default=os.environ.get(var, str(env.python)),
                       help=f"python of {env.library}'s own environment (default: ${var} or "
                            f"{env.python.relative_to(REPO)}; `{env.setup_command}` builds it)")
    p.add_argument("--data-dir", default="data",
                   help="the pipeline's data folder: processed datasets in <data-dir>/processed/<dataset>/<protocol> "
                        "(default data; `snakemake --cores all data` prepares them)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG),
                   help="the pipeline configuration whose experiments give the hyperparameters "
                        "(default config/config.yaml)")
    p.add_argument("--out-dir", default=str(DEFAULT_OUT))
    p.add_argument("--name", default=None, help="results file name without .json / .md (default from the settings)")
    args = p.parse_args(argv)
    names = [s.strip() for s in args.settings.split(",") if s.strip()]
    args.settings_list = []
    for s in names:
        for t in (ALL_SETTINGS if s == "all" else (s,)):
            if t not in SETTINGS:
                p.error(f"unknown setting {t!r}; known: {', '.join(SETTINGS)}, all")
            if t not in args.settings_list:
                args.settings_list.append(t)
    if not args.settings_list:
        p.error("--settings is empty")
    if args.epochs is not None and args.epochs < 1:
        p.error("--epochs must be >= 1")
    for opt in ("max_train", "max_test"):
        if getattr(args, opt) is not None and getattr(args, opt) < 0:
            p.error(f"--{opt.replace('_', '-')} must be >= 0 (0: all rows)")
    threads = _int_list(args.threads, "--threads", p) if args.threads else [1, default_threads()]
    args.threads_list = sorted(set(threads))
    if not args.threads_list or any(t < 1 for t in args.threads_list):
        p.error("--threads must be positive")
    if args.parallel_threads is None:
        args.parallel_threads = default_threads()
    elif args.parallel_threads < 1:
        p.error("--parallel-threads must be positive")
    args.seeds_list = _int_list(args.seeds, "--seeds", p) if args.seeds else [args.seed]
    if not args.seeds_list or len(set(args.seeds_list)) != len(args.seeds_list):
        p.error("--seeds must list distinct integers")
    args.peers_set = {s.strip() for s in args.peers.split(",") if s.strip()}
    known = set(PEERS)
    if args.peers_set - known:
        p.error(f"unknown peers {sorted(args.peers_set - known)}; known: {', '.join(sorted(known))}")
    return args


def default_name(args, gpu: bool) -> str:
    base = "all" if args.settings_list == list(ALL_SETTINGS) else "_".join(args.settings_list)
    return (base + ("_quick" if args.quick else "") + ("_gpu" if gpu else "")
            + (f"_{len(args.seeds_list)}seeds" if len(args.seeds_list) > 1 else ""))


def main(argv=None) -> int:
    from asynctm.backends import cuda_available
    from asynctm.config_check import ConfigError, load_config

    args = parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    gpu = cuda_available()
    name = args.name or default_name(args, gpu)
    record = {
        "generated_by": "benchmarks/bench_tm.py",
        "name": name,
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d"),
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": git_info(),
        "code": code_digests(),
        "versions": versions(),
        "cpu": cpu_info(),
        "gpu": gpu_info(),
        "threads": {"asynctm_cpu": args.threads_list, "pyTsetlinMachine": 1,
                    "pyTsetlinMachineParallel": args.parallel_threads if "pytm_parallel" in args.peers_set else None,
                    "tmu": 1 if "tmu_cpu" in args.peers_set else None,
                    "green_tsetlin": args.threads_list if "green_tsetlin" in args.peers_set else None,
                    "env": {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "ASYNCTM_", "GOMP_"))}},
        "config": str(args.config),
        "seed": args.seed,
        "seeds": args.seeds_list,
        "quick": args.quick,
        "timing": "wall clock per fit_epoch call (library fit(X, y, epochs=1, incremental=True); "
                  "pyTsetlinMachineParallel timed inside its worker process; tmu: one fit(X, y) call, "
                  "green-tsetlin: one executor train_epoch(), each timed inside its worker process); "
                  "one warm-up epoch per implementation "
                  "and seed reported apart; timed epochs round-robin across implementations; median over all "
                  "seeds' timed epochs; test metric outside the timed region, mean over seeds",
        "load_average_start": list(os.getloadavg()),
        "settings": [],
    }
    for s in args.settings_list:
        setting = run_setting(s, args, config, gpu)
        record["settings"].append(setting)
        report.print_table(setting)
    record["load_average_end"] = list(os.getloadavg())
    out = Path(args.out_dir) / f"{name}.json"
    write_json(out, record)
    report.write_markdown(out.with_suffix(".md"), record)
    print(f"\nwrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
