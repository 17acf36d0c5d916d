"""Command line of the GPU campaign (see :mod:`asynctm.campaign` and docs/gpu-and-clusters.md).

    python -m asynctm.campaign stage [--config KEY=VALUE ...] [--wheels DIR] [--sdist FILE] [--dest DIR]
    python -m asynctm.campaign commands            # the device-tool calls to make, in order
    python3 -m asynctm.campaign step NAME [--budget S] [--until T] [--later S] [--out DIR] [--no-install]
                                     [--select TEXT] [--threads-per-clause K|auto]               # on the GPU
    python -m asynctm.campaign unpack FOLDER [--into TREE] [--overwrite]
    python -m asynctm.campaign remaining [--gpu NAME] [--threads-per-clause K] [--config KEY=VALUE ...]
    python -m asynctm.campaign goals               # the benchmark's comparisons, seeds pooled per GPU and code

Errors are printed as one line naming the problem; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..provenance import REPO as REPO_ROOT
from . import EXTRA_CALL, EXTRA_CALL_MARGIN_S, EXTRA_CALL_MIN_LEFT_S, STAGE_DIR
from .lease import call_commands, device_command, lease_calls

# The device tool's fixed arguments: the staged folder travels as a carried path; one command may run 600 s.
DEVICE_CALL = 'kind="nvidia-h100-x1" (or "nvidia-h200"), carry=["' + STAGE_DIR + '"]'


def commands(say=print, tree: Path | None = None) -> None:
    from ..provenance import git_info

    git = git_info()
    calls_of_lease, why = lease_calls(tree or REPO_ROOT)
    say("# 1. here: commit, then stage (the records name the commit; the staged folder must be current)")
    say("python -m asynctm.campaign stage --config data_dir=data")
    say(f"# 2. the device tool's run, once per line below, with {DEVICE_CALL}; the second call at once after")
    say("#    the first (the machine goes back after 30 s idle); then here, for each reply:")
    say("#    python -m asynctm.campaign unpack <files_at of that reply>")
    say("#    (a step that stopped at its budget is continued by calling it again: recorded runs are skipped)")
    say("#    The sweeps and paper steps take one thread or a warp per clause per experiment from the GPU tests")
    say("#    and benchmark of this code: the first call's, or an earlier lease's unpacked here (--threads-per-clause")
    say("#    auto; their log and records say which). If the machine went back between the calls, unpack the first")
    say("#    reply before the second: its results then travel with the checkout (a paused run starts again).")
    say(f"# The lease's calls: {why}.")
    for i, (timeout, command) in enumerate(call_commands(calls_of_lease, git["commit"],
                                                         git["tracked_files_modified"]), 1):
        say(f"# call {i}: timeout_s={timeout}")
        say(command)
    say(f"# then, only where the last reply's lease.budget_left_s (B) is at least {EXTRA_CALL_MIN_LEFT_S}: one more "
        f"call at once, with N = B - {EXTRA_CALL_MARGIN_S} and timeout_s = N + 30, then the device tool's give_back")
    say(device_command("N", EXTRA_CALL, git["commit"], git["tracked_files_modified"]))
    say("# 3. here: snakemake --cores all tables figures --config run_missing=false; commit results/, "
        "benchmarks/results/, paper_tables/ and figures/")


def _threads(text: str) -> int | str:
    """``--threads-per-clause``: 1 (tm_gpu, the paper's design), 32 (tm_gpu_warp, a warp per clause) or auto."""
    from ..experiments import plan

    if text == "auto":
        return text
    builds = {str(k): k for k in plan.GPU_THREADS_PER_CLAUSE.values()}
    if text not in builds:
        raise argparse.ArgumentTypeError(
            "the threads per clause of a GPU build: " + ", ".join(
                f"{k} ({impl})" for impl, k in plan.GPU_THREADS_PER_CLAUSE.items()) + f" or auto, not {text!r}")
    return builds[text]


def parser() -> argparse.ArgumentParser:
    """The command line's parser (the device calls' step commands are parsed by it in the tests)."""
    ap = argparse.ArgumentParser(prog="python -m asynctm.campaign", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("stage", help="stage wheels, sdist and datasets into one folder that travels")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                   help="overrides of config/config.yaml, as snakemake --config (e.g. data_dir=data)")
    p.add_argument("--configfile", default=None)
    p.add_argument("--wheels", default=None, help="folder of PyCUDA wheels (default ../shared/gpu/wheels-cp312)")
    p.add_argument("--sdist", default=None, help="PyTsetlinMachineCUDA-0.1.9.tar.gz (default: pip download)")
    p.add_argument("--dest", default=None, help=f"the staged folder (default {STAGE_DIR}/ in the checkout)")
    p.add_argument("--no-cpu-peers", action="store_true",
                   help="do not build pyTsetlinMachine's wheels for the GPU machine (the host_peers step then skips "
                        "it)")
    sub.add_parser("commands", help="print the device-tool commands, in order")
    p = sub.add_parser("step", help="run one step on the GPU machine")
    p.add_argument("name")
    p.add_argument("--budget", type=float, default=None, help="seconds for the whole step (default 480; with "
                   "--until and no --budget: until then)")
    p.add_argument("--until", type=float, default=None,
                   help="UNIX time at which the step ends if its budget has not ended it before (the device call's "
                        "end, shared by its steps)")
    p.add_argument("--later", type=float, default=0.0, metavar="S",
                   help="sweeps, paper: seconds this step gets in the lease's next call on this machine; a run that "
                        "needs more than this call has left starts where both together fit, pauses at this call's "
                        "end and resumes in the next")
    p.add_argument("--out", default=None, help="where the tarball and log go (default $OUT, else campaign-out/)")
    p.add_argument("--campaign-dir", default=None, help=f"the staged folder (default {STAGE_DIR}/)")
    p.add_argument("--work-dir", default=None, help="scratch folder (default /tmp/asynctm-campaign/<step>)")
    p.add_argument("--no-install", action="store_true", help="PyCUDA is importable already: skip pip")
    p.add_argument("--tree", default=None, help="the checkout whose records count as done (default: this one)")
    p.add_argument("--select", default=None,
                   help="gpu_tests: a pytest -k expression; bench, sweeps, paper: comma-separated experiments")
    p.add_argument("--threads-per-clause", type=_threads, default=None,
                   help="sweeps, paper: the GPU runs' build by its threads per clause, 1 (tm_gpu, the paper's "
                        "design) or 32 (tm_gpu_warp), or auto: per experiment from this commit's GPU tests and "
                        "benchmark; without it, each experiment's recorded build, else 1")
    p = sub.add_parser("unpack", help="put the returned tarballs into results/ and benchmarks/results/")
    p.add_argument("folder")
    p.add_argument("--into", default=None, help="the tree to unpack into (default: this checkout)")
    p.add_argument("--overwrite", action="store_true", help="replace existing files that differ")
    p = sub.add_parser("remaining", help="the GPU runs without a record, and their estimated device time")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="overrides of config/config.yaml")
    p.add_argument("--configfile", default=None)
    p.add_argument("--gpu", default=None, help="the GPU whose benchmark estimates runs without a record (default: "
                   "that of the newest GPU benchmark here)")
    p.add_argument("--threads-per-clause", type=_threads, default="auto",
                   help="estimate the sweeps and paper runs in this build, 1 (tm_gpu) or 32 (tm_gpu_warp) threads "
                        "per clause, or auto: as their steps would choose them from the GPU tests, benchmarks and "
                        "records here (the default)")
    sub.add_parser("goals", help="benchmarks/results/goals_<gpu>_<code>.{json,md}: the GPU benchmark's comparisons "
                   "with every seed of one GPU and one code (the kernels and backends), pooled")
    return ap


def main(argv=None) -> int:
    from .stage import StageError
    from .unpack import UnpackError

    ap = parser()
    args = ap.parse_args(argv)
    try:
        if args.cmd == "stage":
            from .stage import load_config, stage

            stage(load_config(args.config, args.configfile), dest=Path(args.dest) if args.dest else None,
                  wheels=Path(args.wheels) if args.wheels else None, sdist=Path(args.sdist) if args.sdist else None,
                  cpu_peer_wheels=not args.no_cpu_peers)
        elif args.cmd == "commands":
            commands()
        elif args.cmd == "goals":
            from .goals import write

            write(REPO_ROOT)
        elif args.cmd == "remaining":
            from .remaining import remaining, render
            from .stage import load_config

            print(render(remaining(load_config(args.config, args.configfile), gpu=args.gpu,
                                   threads=args.threads_per_clause)), end="")
        elif args.cmd == "step":
            from .steps import DEFAULT_BUDGET_S, run_step

            budget = args.budget if args.budget is not None else (math.inf if args.until else DEFAULT_BUDGET_S)
            return run_step(args.name, campaign_dir=Path(args.campaign_dir) if args.campaign_dir else None,
                            out_dir=Path(args.out) if args.out else None, budget_s=budget, until=args.until,
                            do_install=not args.no_install, work_dir=Path(args.work_dir) if args.work_dir else None,
                            select=args.select, tree=Path(args.tree) if args.tree else None,
                            threads_per_clause=args.threads_per_clause, later_s=args.later)
        else:
            from .unpack import unpack

            unpack(args.folder, into=args.into, overwrite=args.overwrite)
    except (StageError, UnpackError, FileNotFoundError) as exc:
        print(f"asynctm.campaign {args.cmd}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
