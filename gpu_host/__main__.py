"""Command line of the GPU campaign (see :mod:`gpu_host` and docs/gpu-and-clusters.md).

    python -m gpu_host stage [--config KEY=VALUE ...] [--wheels DIR] [--sdist FILE] [--dest DIR]
    python -m gpu_host commands [--calls FILE]   # the device-tool calls to make, in order
    python3 -m gpu_host step NAME [--budget S] [--until T] [--later S] [--select TEXT] [--impl IMPL]  # there
    python -m gpu_host unpack FOLDER [--into TREE] [--overwrite]

Errors are printed as one line naming the problem; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from asynctm.provenance import REPO

from . import CALLS_FILE, STAGE_DIR

PACK_S = 30  # per step of a call: the last step's children are killed at the call's end, then it packs


class CallsError(ValueError):
    """The calls file is not a list of calls that fit a lease."""


def load_calls(path: Path | None = None) -> tuple[dict, list[tuple[int, list[str]]]]:
    """The lease settings and its calls ``(seconds, ["STEP [SECONDS] [OPTIONS]", ...])`` of :data:`CALLS_FILE`,
    checked: known steps, every call within the command limit, all of them within the lease."""
    import yaml

    from .steps import STEPS

    path = Path(path) if path else REPO / CALLS_FILE
    try:
        doc = yaml.safe_load(path.read_text())
        lease = {k: int(doc[k]) for k in ("lease_s", "start_s", "command_limit_s")}
        lease["stage"] = str(doc.get("stage") or "")  # the stage command's options beyond data_dir, if any
        calls = [(int(c["seconds"]), [str(s) for s in c["steps"]]) for c in doc["calls"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise CallsError(f"{path} is not a calls list (lease_s, start_s, command_limit_s, calls: [{{seconds, steps}}])"
                         f": {type(exc).__name__}: {exc}; edit {path}") from None
    for seconds, steps in calls:
        unknown = [s.split()[0] for s in steps if not s.split() or s.split()[0] not in STEPS]
        if unknown or not steps:
            raise CallsError(f"{path}: a call has no steps or unknown ones ({', '.join(unknown)}); the steps are "
                             f"{', '.join(STEPS)}; edit {path}")
        if seconds + PACK_S * len(steps) > lease["command_limit_s"]:
            raise CallsError(f"{path}: a call of {seconds} s with {len(steps)} steps runs past the command limit "
                             f"({lease['command_limit_s']} s with {PACK_S} s per step to pack); edit {path}")
    if lease["start_s"] + sum(s for s, _ in calls) > lease["lease_s"]:
        raise CallsError(f"{path}: the calls take {sum(s for s, _ in calls)} s and the start {lease['start_s']} s, "
                         f"more than the lease's {lease['lease_s']} s; edit {path}")
    return lease, calls


def call_commands(calls, commit: str | None = None, dirty: int | None = None,
                  limit_s: int = 600) -> list[tuple[int, str]]:
    """``(timeout_s, command)`` of each device call, its steps sharing its end. A call's last step that opens the next
    call too gets ``--later`` with that call's seconds: it may start runs that continue there."""
    env = f" ASYNCTM_SOURCE_COMMIT={commit} ASYNCTM_SOURCE_DIRTY={dirty}" if commit else ""
    out = []
    for i, (seconds, steps) in enumerate(calls):
        nxt = calls[i + 1] if i + 1 < len(calls) else None
        later = nxt[0] if nxt and nxt[1][0].split()[0] == steps[-1].split()[0] else 0
        words = []
        for j, entry in enumerate(steps):
            name, *rest = entry.split()
            budget = f" --budget {rest.pop(0)}" if rest and rest[0].isdigit() else ""
            last = f" --later {later}" if later and j == len(steps) - 1 else ""
            words.append(f"python3 -m gpu_host step {name}{budget} --until $END{last}"
                         + "".join(f" {r}" for r in rest))
        out.append((min(seconds + PACK_S * len(steps), limit_s),
                    f"export PYTHONPATH=src{env}; END=$(( $(date +%s) + {seconds} )); " + "; ".join(words)))
    return out


def commands(say=print, calls_file: Path | None = None) -> None:
    from asynctm.provenance import git_info

    git = git_info()
    lease, calls = load_calls(calls_file)
    say("# 1. here: commit, then stage (the records name the commit; the staged folder must be current)")
    say("python -m gpu_host stage --config data_dir=data" + (f" {lease['stage']}" if lease["stage"] else ""))
    say(f'# 2. the device tool\'s run, once per line below, with kind="nvidia-h100-x1" (or "nvidia-h200"), '
        f'carry=["{STAGE_DIR}"]; each call at once after the one')
    say("#    before (the machine goes back when idle); then here, for each reply:")
    say("#    python -m gpu_host unpack <files_at of that reply>")
    say("#    (a step that stopped at its budget is continued by calling it again: recorded runs are skipped)")
    say(f"# The lease's calls ({calls_file or CALLS_FILE}):")
    for i, (timeout, command) in enumerate(call_commands(calls, git["commit"], git["tracked_files_modified"],
                                                         lease["command_limit_s"]), 1):
        say(f"# call {i}: timeout_s={timeout}")
        say(command)
    say("# 3. here: snakemake --cores all tables figures --config run_missing=false; commit results/, "
        "benchmarks/results/, paper_tables/ and figures/")


def parser() -> argparse.ArgumentParser:
    """The command line's parser (the device calls' step commands are parsed by it in the tests)."""
    from asynctm.experiments.plan import GPU_IMPLS

    ap = argparse.ArgumentParser(prog="python -m gpu_host", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("stage", help="stage wheels, sdist and datasets into one folder that travels")
    p.add_argument("--config", nargs="*", action="extend", default=[], metavar="KEY=VALUE",
                   help="overrides of config/config.yaml, as snakemake --config (e.g. data_dir=data); "
                        "repeated, they add up")
    p.add_argument("--wheels", default=None, help="folder of PyCUDA wheels (default ../shared/gpu/wheels-cp312)")
    p.add_argument("--sdist", default=None, help="PyTsetlinMachineCUDA-0.1.9.tar.gz (default: pip download)")
    p.add_argument("--dest", default=None, help=f"the staged folder (default {STAGE_DIR}/ in the checkout)")
    p.add_argument("--no-cpu-peers", action="store_true", help="build no pyTsetlinMachine wheels for host_peers")
    p.add_argument("--thundersvm-wheel", default=None,
                   help="ThunderSVM's GPU build for the svm step (benchmarks/thundersvm_gpu_wheel.py)")
    p.add_argument("--tmu", action="store_true",
                   help="stage tmu 0.8.3 with the NumPy < 2 it needs, packed, for the bench step's tmu_cuda")
    p = sub.add_parser("commands", help="print the device-tool commands, in order")
    p.add_argument("--calls", default=None, help=f"the calls of a lease (default {CALLS_FILE})")
    p = sub.add_parser("step", help="run one step on the GPU machine")
    p.add_argument("name")
    p.add_argument("--budget", type=float, default=None, help="seconds for the step (default 480, or until --until)")
    p.add_argument("--until", type=float, default=None, help="UNIX time at which the step ends (the call's end)")
    p.add_argument("--later", type=float, default=0.0, metavar="S",
                   help="sweeps, paper, ablation: seconds this step gets in the next call on this machine (a run "
                        "may start where both fit, pause at this call's end and resume there)")
    p.add_argument("--out", default=None, help="where the tarball and log go (default $OUT, else campaign-out/)")
    p.add_argument("--campaign-dir", default=None, help=f"the staged folder (default {STAGE_DIR}/)")
    p.add_argument("--work-dir", default=None, help="scratch folder (default /tmp/asynctm-campaign/<step>)")
    p.add_argument("--no-install", action="store_true", help="PyCUDA is importable already: skip pip")
    p.add_argument("--tree", default=None, help="the checkout whose records count as done (default: this one)")
    p.add_argument("--select", default=None, help="gpu_tests: a pytest -k expression; the others: experiments, "
                                                  "comma-separated; sweeps, paper, ablation: EXPERIMENT:CLAUSES for "
                                                  "one clause count, the runs in the order of the terms")
    p.add_argument("--impl", default=None, help=f"sweeps, paper: only this GPU build ({', '.join(GPU_IMPLS)}); "
                                                "bench: only these builds, comma-separated")
    p.add_argument("--rerun", action="store_true",
                   help="sweeps, paper, ablation: run the selected runs even where the checkout has their records "
                        "(a clause sweep's time ratios pair points of one host); unpack them with --overwrite")
    p = sub.add_parser("unpack", help="put the returned tarballs into results/ and benchmarks/results/")
    p.add_argument("folder")
    p.add_argument("--into", default=None, help="the tree to unpack into (default: this checkout)")
    p.add_argument("--overwrite", action="store_true", help="replace existing files that differ")
    return ap


def main(argv=None) -> int:
    from .stage import StageError
    from .unpack import UnpackError

    args = parser().parse_args(argv)
    path = {k: Path(v) if v else None for k, v in vars(args).items()
            if k in ("dest", "wheels", "sdist", "calls", "out", "campaign_dir", "work_dir", "tree")}
    try:
        if args.cmd == "stage":
            from .stage import load_config, stage

            stage(load_config(args.config), dest=path["dest"], wheels=path["wheels"], sdist=path["sdist"],
                  cpu_peer_wheels=not args.no_cpu_peers,
                  thundersvm_wheel=Path(args.thundersvm_wheel) if args.thundersvm_wheel else None, tmu=args.tmu)
        elif args.cmd == "commands":
            commands(calls_file=path["calls"])
        elif args.cmd == "step":
            from .steps import DEFAULT_BUDGET_S, run_step

            budget = args.budget if args.budget is not None else (math.inf if args.until else DEFAULT_BUDGET_S)
            return run_step(args.name, campaign_dir=path["campaign_dir"], out_dir=path["out"], budget_s=budget,
                            until=args.until, do_install=not args.no_install, work_dir=path["work_dir"],
                            select=args.select, tree=path["tree"], impl=args.impl, later_s=args.later, rerun=args.rerun)
        else:
            from .unpack import unpack

            unpack(args.folder, into=args.into, overwrite=args.overwrite)
    except (StageError, UnpackError, CallsError, FileNotFoundError) as exc:
        print(f"gpu_host {args.cmd}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
