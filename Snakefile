# The asynctm pipeline: raw data -> processed datasets -> run records -> tables and figures.
# Stages live in workflow/rules/*.smk; settings in config/config.yaml (documented in config/README.md).
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "config/schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"


rule all:
    default_target: True
    input:
        processed_datasets(),
