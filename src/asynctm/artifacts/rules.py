"""Glue for the Snakemake rules of workflow/rules/tables.smk and figures.smk (kept here so that those
files hold rules only): their input functions and the call of the CLI in its own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import catalog


def record_input(name: str, config: dict, record_paths):
    """A Snakemake input function: of the records the config requests (``record_paths``, from
    experiments.smk), those the artifact reads (its experiments' main setting with their svm and
    mlp_novelty records, or their clause sweep; the config's seeds)."""

    def records(wildcards):
        paths = record_paths(experiments=catalog.experiments(name, config))
        return sorted(str(p) for p in paths if catalog.reads(name, config, p))

    return records


def run_cli(name: str, *, results, config_file, out_dir, host_gpu: bool, log, reference=None) -> None:
    """``python -m asynctm.artifacts NAME ...`` with this interpreter, output and errors into ``log``."""
    args = [sys.executable, "-m", "asynctm.artifacts", name, "--results", str(results), "--config",
            str(config_file), "--out", str(out_dir), "--host-gpu", "yes" if host_gpu else "no"]
    if reference is not None:
        args += ["--reference", str(reference)]
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        done = subprocess.run(args, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"python -m asynctm.artifacts {name} failed; see {log}")
