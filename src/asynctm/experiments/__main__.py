"""Command line of the experiment runs (called by workflow/rules/experiments.smk).

    python -m asynctm.experiments tm  --settings JSON --data-dir data --out REC.json [--log L] [--threads N]
                                      [--stop-at UNIX_TIME]
    python -m asynctm.experiments svm --settings JSON --data-dir data --out REC.json [--log L] [--threads N]
    python -m asynctm.experiments mlp --settings JSON --scores SCORES.npz --out REC.json [--log L]
    python -m asynctm.experiments plan [--config config/config.yaml] [--gpu]   # list the requested records
    python -m asynctm.experiments plan --status     # present / missing records, grouped, estimated cost
    python -m asynctm.experiments plan --estimate   # the missing ones, estimated time, totals per impl
    python -m asynctm.experiments plan --busy       # records timed on a busy machine, and how to re-time them

``--settings`` is the JSON made by :mod:`asynctm.experiments.plan` (the rules pass it). Errors are printed
as one line naming the problem (the traceback goes to the log); the exit status is 1. A ``tm`` run paused by
``--stop-at`` (no time for its next epoch; its checkpoint resumes it) exits with :data:`EXIT_PAUSED`.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from ..io import is_disk_full
from ..jobs import JobLog
from .run import EXIT_PAUSED


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.experiments", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("tm", "svm", "mlp"):
        p = sub.add_parser(name)
        p.add_argument("--settings", required=True, help="the run's settings as JSON")
        p.add_argument("--out", required=True, help="the record to write (atomically, last)")
        p.add_argument("--log", help="the progress log")
        if name == "mlp":
            p.add_argument("--scores", required=True, help="the TM run's seed<k>.scores.npz")
        else:
            p.add_argument("--data-dir", required=True, help="the folder holding processed/<dataset>/<protocol>/")
            p.add_argument("--threads", type=int, default=None, help="CPU threads (tm_cpu, svm)")
        if name == "tm":
            p.add_argument("--stop-at", type=float, default=None, metavar="UNIX_TIME",
                           help="pause (checkpoint saved, exit status 75) before an epoch that would end after then")
    p = sub.add_parser("plan")
    p.add_argument("--config", default="config/config.yaml")
    p.add_argument("--gpu", action="store_true", help="plan as if this host had a GPU")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--status", action="store_true",
                       help="every requested record, grouped: present, missing, estimated cost, totals")
    shown.add_argument("--estimate", action="store_true",
                       help="the missing records with their estimated time, and totals per implementation")
    shown.add_argument("--busy", action="store_true",
                       help="the present records timed on a busy machine, and the command that times them again")
    p.add_argument("--cores", type=int, default=None, help="cores for the wall-time totals (default: this host's)")
    p.add_argument("--data-dir", default=None, help="the processed datasets' folder (default: the config's data_dir)")
    p.add_argument("--budget-hours", type=float, default=None,
                   help="run_budget_hours to plan with (default: the config's); inf: every missing run")
    p.add_argument("--full-protocol", action="store_true",
                   help="plan without the config's reduced protocols: what the full protocol would cost")
    args = ap.parse_args(argv)

    if args.cmd == "plan":
        from ..config_check import ConfigError, load_config

        try:
            config = load_config(args.config)  # the schema next to it, then task, T, protocols, sweeps
        except ConfigError as exc:
            print(f"asynctm.experiments plan: invalid configuration {args.config}:\n{exc}", file=sys.stderr)
            return 1
        from ..store import RecordError

        try:
            return _plan(args, config)
        except RecordError as exc:  # a record the gate refuses: nothing is estimated from it
            print(f"asynctm.experiments plan: {exc}", file=sys.stderr)
            return 1

    from . import run

    try:
        settings = json.loads(args.settings)
        if args.cmd == "tm":
            run.run_tm(settings, args.data_dir, args.out, args.log, threads=args.threads, stop_at=args.stop_at)
        elif args.cmd == "svm":
            run.run_svm(settings, args.data_dir, args.out, args.log, threads=args.threads)
        else:
            run.run_mlp(settings, args.scores, args.out, args.log)
    except run.RunPaused as exc:  # --stop-at came: the log says where, the checkpoint resumes it
        print(f"asynctm.experiments {args.cmd} paused ({args.out}): {exc}; no record written", file=sys.stderr)
        return EXIT_PAUSED
    except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (run.RunInterrupted): the log says where it stopped
        signum = getattr(exc, "signum", 2)
        print(f"asynctm.experiments {args.cmd} interrupted ({args.out}): {exc or 'SIGINT'}; no record written",
              file=sys.stderr)
        return 128 + signum
    except Exception as exc:  # noqa: BLE001 - one clear line for the user, the traceback for the log
        full = is_disk_full(exc)
        if args.log:
            try:
                JobLog(args.log, append=True).traceback()
            except OSError:
                full = True  # nor can the log be written
        else:
            traceback.print_exc()
        if full:
            print(f"asynctm.experiments {args.cmd} failed ({args.out}): the disk is full ({exc}); free space on "
                  f"{Path(args.out).resolve().parent} (a checkpoint beside the record, if any, resumes the run) "
                  "and rerun", file=sys.stderr)
            return 1
        print(f"asynctm.experiments {args.cmd} failed ({args.out}): {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _plan(args, config) -> int:
    """The plan command's listing, status and estimates for a loaded configuration."""
    from .plan import record_path, requested_runs

    if args.busy:
        from .estimate import busy_records, render_busy

        print(render_busy(busy_records(config, requested_runs(config, host_gpu=args.gpu))))
        return 0
    if args.status or args.estimate:
        from . import estimate

        if args.budget_hours is not None:
            config["run_budget_hours"] = args.budget_hours
        if args.full_protocol:
            config["reduced"] = {}
        runs = requested_runs(config, host_gpu=args.gpu)
        timings = estimate.load_timings(config["results_dir"], config.get("estimate_benchmarks"),
                                        args.data_dir or config.get("data_dir"))
        rows = estimate.status(config, runs, timings)
        estimate.budget(config, rows)
        print(estimate.render(config, rows, timings, args.cores or estimate.default_cores(), show_present=args.status))
        return 0
    for run in requested_runs(config, host_gpu=args.gpu):
        print(record_path(config, run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
