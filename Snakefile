# The asynctm pipeline: raw data -> processed datasets -> run records -> tables and figures.
# Stages live in workflow/rules/*.smk; settings in config/config.yaml (documented in config/README.md).
from snakemake.utils import min_version, validate
from snakemake.exceptions import WorkflowError

from asynctm.config_check import ConfigError, check_config, coerce_config

min_version("9.0")


configfile: "config/config.yaml"


# `--config` hands list items and mapping values over as strings ('seeds=[0,1]'): type them as the
# schema says, validate, then refuse what cannot run (task vs. dataset, T, protocols, sweeps) up front.
coerce_config(config, "config/schema.yaml")
validate(config, "config/schema.yaml")
try:
    check_config(config)
except ConfigError as _e:
    raise WorkflowError(f"invalid configuration:\n{_e}") from None


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/ablation.smk"


# The processed datasets only: `snakemake --cores all data`.
rule data:
    input:
        processed_datasets(),


# Data, the records and the tables and figures built from them. Of the missing runs it starts only those within
# config run_budget_hours (record_paths, workflow/rules/common.smk; the rest is listed at the start with the
# command that runs it): `--config run_budget_hours=inf` runs everything. With run_missing: false nothing is
# trained, so no dataset is fetched or prepared either (a run that is started asks for its own data).
rule all:
    default_target: True
    input:
        processed_datasets() if config["run_missing"] else [],
        record_paths(),
        rules.tables.input,
        rules.figures.input,
        rules.report.output,
