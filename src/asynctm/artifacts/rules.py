"""Glue for the Snakemake rules of workflow/rules/tables.smk and figures.smk (kept here so that those
files hold rules only): their input functions and the arguments of the CLI."""

from __future__ import annotations

from . import catalog


def record_input(name: str, config: dict, record_paths):
    """A Snakemake input function: of the records the config requests (``record_paths``, from
    experiments.smk), those the artifact reads (its experiments' main setting with their svm and
    mlp_novelty records, or their clause sweep; the config's seeds)."""

    def records(wildcards):
        paths = record_paths(experiments=catalog.experiments(name, config))
        return sorted(str(p) for p in paths if catalog.reads(name, config, p))

    return records


def cli_args(name: str, *, results, config_file, out_dir, host_gpu: bool, reference=None) -> list[str]:
    """The arguments of ``python -m asynctm.artifacts NAME ...`` (run by the rules through common.smk's
    ``logged_cli``, which sends its output and errors to the job's log)."""
    args = [name, "--results", str(results), "--config", str(config_file), "--out", str(out_dir),
            "--host-gpu", "yes" if host_gpu else "no"]
    if reference is not None:
        args += ["--reference", str(reference)]
    return args
