"""Glue for the Snakemake rules of workflow/rules/tables.smk, figures.smk, report.smk and ablation.smk (kept
here so that those files hold rules only): the records each artifact declares as its inputs, and the
arguments of the CLI.

Every record an artifact reads is a declared input, so Snakemake rebuilds the artifact when one appears,
changes or goes: the records this configuration requests (on disk, or started by this invocation within the
budget), and every other record on disk under the results root for a cell the artifact reports (e.g. tm_gpu
records made on a GPU host and copied in, where this host has none and so requests none).
"""

from __future__ import annotations

from pathlib import Path

from . import catalog


def records_on_disk(name: str, config: dict, results) -> list[str]:
    """The record files under ``results`` that artifact ``name`` reads (catalog.reads), whoever made them."""
    root = Path(results)
    return sorted(p.as_posix() for exp in catalog.experiments(name, config)
                  for p in (root / exp).glob("*/*/seed*.json") if catalog.reads(name, config, p.relative_to(root)))


def declared_records(name: str, config: dict, record_paths, results) -> list[str]:
    """The records artifact ``name`` reads: of those the config requests (``record_paths``, from common.smk),
    the ones it uses, plus :func:`records_on_disk`."""
    requested = record_paths(experiments=catalog.experiments(name, config))
    return sorted({str(p) for p in requested if catalog.reads(name, config, p)}
                  | set(records_on_disk(name, config, results)))


def record_input(name: str, config: dict, record_paths, results):
    """A Snakemake input function giving :func:`declared_records` (evaluated when the DAG is built)."""

    def records(wildcards):
        return declared_records(name, config, record_paths, results)

    return records


def report_record_input(config: dict, record_paths, results):
    """The report's input function: the records of every table and figure (it gives the provenance of each)."""

    def records(wildcards):
        return sorted({p for name in catalog.ARTIFACTS for p in declared_records(name, config, record_paths, results)})

    return records


def cli_args(name: str, *, results, config_file, out_dir, host_gpu: bool, records, reference=None) -> list[str]:
    """The arguments of ``python -m asynctm.artifacts NAME ...``: it reads exactly ``records`` (the rule's
    declared inputs) below ``results``."""
    args = [name, "--results", str(results), "--config", str(config_file), "--out", str(out_dir),
            "--host-gpu", "yes" if host_gpu else "no"]
    if reference is not None:
        args += ["--reference", str(reference)]
    return [*args, "--records", *map(str, records)]
