# What reproduced: one verdict per claim of the paper, built by `python -m asynctm.artifacts claims` from the run
# records (the main experiments' and the tally ablation's), the paper's numbers and the thresholds of config
# `claims:` (each with its reason). Outputs: {TABLES_DIR}/claims.{md,csv}, {TABLES_DIR}/claims_readme.md (the
# README's block between <!-- claims:start --> and <!-- claims:end -->) and the forest plot of every Table 3/5 cell,
# {FIGURES_DIR}/fig_claims_forest.{png,pdf,caption.txt}; `snakemake --cores all claims` builds them.
#
# Include after tables.smk (ARTIFACTS_CONFIG_KEYS, ARTIFACTS_LOGS, PAPER_NUMBERS) and before
# report.smk (the report opens on these verdicts). Records: as tables.smk says, plus every ablation record on disk
# under {RESULTS}/ablation (the ablation is not in the default target: its records are made by `snakemake ablation`).
import json
from pathlib import Path

import yaml

from asynctm.artifacts import ablation as CLAIMS_ABLATION
from asynctm.artifacts import catalog
from asynctm.artifacts.rules import (
    changed_stamp,
    cli_args,
    declared_records,
    inputs_manifest_path,
    remove_stamps,
    run_artifact,
    with_stamp,
)
from asynctm.io import write_text_atomic

# The config the verdicts are built from: the artifacts' keys plus the thresholds and the ablation's settings.
CLAIMS_CONFIG = f"{TABLES_DIR}/claims_config.yaml"
_CLAIMS_CONFIG_KEYS = (*ARTIFACTS_CONFIG_KEYS, "ablation", "claims")
_CLAIMS_CONFIG_TEXT = yaml.safe_dump(
    json.loads(json.dumps({key: config[key] for key in _CLAIMS_CONFIG_KEYS if key in config})), sort_keys=True
)


rule claims_config:
    input:
        stale=lambda wc: changed_stamp("claims_config", CLAIMS_CONFIG, _CLAIMS_CONFIG_TEXT),
    output:
        CLAIMS_CONFIG,
    log:
        f"{ARTIFACTS_LOGS}/claims_config.log",
    run:
        write_text_atomic(output[0], _CLAIMS_CONFIG_TEXT)
        remove_stamps(input.stale)


# The records a claims artifact reads (the cells it reports, requested or on disk, and the ablation's on disk), and
# its CLI's arguments: it reads exactly those records (and, for the page, the evidence under {RESULTS}/evidence).
_CLAIMS_RECORDS = lambda name: sorted(
    set(declared_records(name, config, record_paths, RESULTS))
    | {p.as_posix() for p in CLAIMS_ABLATION.record_files(RESULTS)}
)
_CLAIMS_CLI = lambda name, input, out_dir: cli_args(
    name,
    results=RESULTS,
    config_file=input.config,
    reference=input.reference,
    out_dir=out_dir,
    host_gpu=False,
    records=input.records,
)


# Where each gap stands (explained or open) and the evidence records it cites: results/evidence/explanations.yaml.
_CLAIMS_EVIDENCE = lambda wc: sorted(
    str(p) for p in Path(RESULTS, "evidence").glob("*") if p.suffix in (".json", ".yaml")
)


rule claims_page:
    input:
        unpack(with_stamp("claims", TABLES_DIR, lambda wc: _CLAIMS_RECORDS("claims"))),
        config=CLAIMS_CONFIG,
        reference=PAPER_NUMBERS,
        evidence=_CLAIMS_EVIDENCE,
    output:
        **catalog.output_paths("claims", TABLES_DIR),
        inputs=inputs_manifest_path("claims", TABLES_DIR),
    log:
        f"{ARTIFACTS_LOGS}/claims.log",
    run:
        # fmt: off
        # Kept as written: Snakemake reruns a finished job when the text of its run block changes.
        run_artifact(JOBS, "asynctm.artifacts", _CLAIMS_CLI("claims", input, Path(output.md).parent), log[0],
                     output.inputs, input.records, input.stale)
        # fmt: on


rule fig_claims_forest:
    input:
        unpack(with_stamp("fig_claims_forest", TABLES_DIR, lambda wc: _CLAIMS_RECORDS("fig_claims_forest"))),
        config=CLAIMS_CONFIG,
        reference=PAPER_NUMBERS,
        evidence=_CLAIMS_EVIDENCE,
    output:
        **catalog.output_paths("fig_claims_forest", FIGURES_DIR),
        inputs=inputs_manifest_path("fig_claims_forest", TABLES_DIR),
    log:
        f"{ARTIFACTS_LOGS}/fig_claims_forest.log",
    run:
        # fmt: off
        # Kept as written: Snakemake reruns a finished job when the text of its run block changes.
        run_artifact(JOBS, "asynctm.artifacts", _CLAIMS_CLI("fig_claims_forest", input, Path(output.png).parent),
                     log[0], output.inputs, input.records, input.stale)
        # fmt: on


# The verdicts page, its CSV, the README's block and the forest plot.
rule claims:
    input:
        [
            path
            for name in catalog.CLAIMS
            for path in catalog.output_paths(name, TABLES_DIR if name == "claims" else FIGURES_DIR).values()
        ],
