"""Command line: build one of the paper's artifacts from the run records.

    python -m asynctm.artifacts ARTIFACT --results DIR --config FILE --out DIR [--host-gpu yes|no|auto]
        [--reference CSV] [--records FILE...] [--log FILE] [--inputs-manifest FILE] [--stale STAMP...]
    python -m asynctm.artifacts config --settings JSON --out FILE [--log FILE] [--stale STAMP...]
    python -m asynctm.artifacts list

ARTIFACT: table3_performance, table4_svm_time, table5_regression, results_summary, a figure
(fig_bbc_time_vs_clauses, ...), or the verdicts on the paper's claims: claims (claims.md, claims.csv,
claims_readme.md) and fig_claims_forest (their forest plot), which also read the ablation's records and the
config's `claims:` thresholds (`list` prints them all). --config: the pipeline config (the Snakemake rules
pass the effective one they wrote); --records: read only these record files below --results (the rules
pass their declared inputs; default: every record there); --host-gpu: whether this host has a GPU, which
only words the gap of a missing tm_gpu run (auto: ask PyCUDA). Prints the files written; exit status 1 with
an `error:` line when a record is malformed or an input is missing. --inputs-manifest and --stale: the
workflow's bookkeeping after a build (asynctm.artifacts.rules). `config` writes the settings the artifacts are
built from (the rules' artifacts_config.yaml and claims_config.yaml), JSON in, YAML out.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..io import write_text_atomic
from ..jobs import JobLog
from ..store import RecordError
from . import ARTIFACTS, CLAIMS, build, load_config
from .rules import add_job_args, config_text, finish_job, run_logged


def _host_gpu(value: str) -> bool:
    if value == "auto":
        try:
            from asynctm.backends import cuda_available

            return cuda_available()
        except Exception:  # noqa: BLE001 - no usable PyCUDA or driver means no GPU
            return False
    return value == "yes"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asynctm.artifacts", description=__doc__.split("\n")[0])
    parser.add_argument("artifact", choices=[*ARTIFACTS, *CLAIMS, "config", "list"],
                        metavar="ARTIFACT", help="what to build (`list`: print the names)")
    parser.add_argument("--results", help="the records root (results/ or results/smoke/)")
    parser.add_argument("--config", help="the pipeline config YAML")
    parser.add_argument("--out", help="the folder to write into")
    parser.add_argument("--host-gpu", choices=["yes", "no", "auto"], default="auto")
    parser.add_argument("--reference", default=None, help="the paper's numbers (default: "
                        "paper_tables/reference/paper_numbers.csv of this checkout)")
    parser.add_argument("--records", nargs="*", default=None, help="the record files to read (below --results; "
                        "default: every record there)")
    parser.add_argument("--log", default=None, help="the job's log (the files written, or the error)")
    parser.add_argument("--settings", default=None, help="config: the settings to write to --out, as JSON")
    add_job_args(parser)
    args = parser.parse_args(argv)
    if args.artifact == "list":
        print("\n".join([*ARTIFACTS, *CLAIMS]))
        return 0
    if args.artifact == "config":
        if args.settings is None or args.out is None:
            parser.error("config needs --settings and --out")
        write_text_atomic(args.out, config_text(json.loads(args.settings)))
        JobLog(args.log)(args.out, stream=sys.stdout)
        finish_job(args)
        return 0
    missing = [f"--{name}" for name in ("results", "config", "out") if getattr(args, name) is None]
    if missing:
        parser.error(f"{args.artifact} needs {', '.join(missing)}")
    return run_logged(args, lambda: build(args.artifact, args.results, load_config(args.config), args.out,
                                          _host_gpu(args.host_gpu), args.reference, records=args.records),
                      (RecordError, OSError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
