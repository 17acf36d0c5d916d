# What reproduced: one verdict per claim of the paper, built by `asynctm artifacts claims` from the run
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

from asynctm.artifacts import ablation as CLAIMS_ABLATION
from asynctm.artifacts import catalog
from asynctm.artifacts.rules import (
    artifact_command,
    changed_stamp,
    config_text,
    declared_records,
    inputs_manifest_path,
    with_stamp,
)

# The config the verdicts are built from: the artifacts' keys plus the thresholds and the ablation's settings.
CLAIMS_CONFIG = f"{TABLES_DIR}/claims_config.yaml"
_CLAIMS_CONFIG_KEYS = (*ARTIFACTS_CONFIG_KEYS, "ablation", "claims")
# As artifacts_config (tables.smk): the stamp, not a param, says when the settings changed.
_CLAIMS_CONFIG_JSON = json.dumps({key: config[key] for key in _CLAIMS_CONFIG_KEYS if key in config}, sort_keys=True)
_CLAIMS_CONFIG_TEXT = config_text(json.loads(_CLAIMS_CONFIG_JSON))


rule claims_config:
    input:
        stale=lambda wc: changed_stamp("claims_config", CLAIMS_CONFIG, _CLAIMS_CONFIG_TEXT),
    output:
        CLAIMS_CONFIG,
    log:
        f"{ARTIFACTS_LOGS}/claims_config.log",
    conda:
        ENV
    shell:
        f"asynctm artifacts config --settings {word(_CLAIMS_CONFIG_JSON)} --out {{output:q}}"
        " --stale {input.stale:q} --log {log:q}"


# The records a claims artifact reads (the cells it reports, requested or on disk, and the ablation's on disk); its
# job (asynctm.artifacts.rules.artifact_command) reads exactly those, and the page the evidence under
# {RESULTS}/evidence.
_CLAIMS_RECORDS = lambda name: sorted(
    set(declared_records(name, config, record_paths, RESULTS))
    | {p.as_posix() for p in CLAIMS_ABLATION.record_files(RESULTS)}
)


# Where each gap stands (explained or open) and the evidence records it cites: results/evidence/explanations.yaml;
# and whether ThunderSVM's GPU builds run on the GPU hosts (tables.smk's SVM_GPU_BUILDS), which Table 4's SVM cells
# name.
_CLAIMS_EVIDENCE = lambda wc: sorted(
    [str(p) for p in Path(RESULTS, "evidence").glob("*") if p.suffix in (".json", ".yaml")]
    + [p for p in (SVM_GPU_BUILDS,) if Path(p).is_file()]
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
    conda:
        ENV
    shell:
        artifact_command("claims", RESULTS, TABLES_DIR, host_gpu=False)


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
    conda:
        ENV
    shell:
        artifact_command("fig_claims_forest", RESULTS, FIGURES_DIR, host_gpu=False)


# The verdicts page, its CSV, the README's block and the forest plot.
rule claims:
    input:
        [
            path
            for name in catalog.CLAIMS
            for path in catalog.output_paths(name, TABLES_DIR if name == "claims" else FIGURES_DIR).values()
        ],
