# The asynctm pipeline: raw data -> processed datasets -> run records -> tables and figures.
# Stages live in workflow/rules/*.smk; settings in config/config.yaml (documented in config/README.md).
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


# `--config gpu=true` arrives as a string; accept it as the boolean it means.
for _key in ("gpu", "run_missing"):
    if isinstance(config.get(_key), str) and config[_key].lower() in ("true", "false"):
        config[_key] = config[_key].lower() == "true"

validate(config, "config/schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"


# The processed datasets only: `snakemake --cores all data`.
rule data:
    input:
        processed_datasets(),


rule all:
    default_target: True
    input:
        processed_datasets(),
        record_paths(),
        rules.tables.input,
        rules.figures.input,
