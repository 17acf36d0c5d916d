# The asynctm pipeline: raw data -> processed datasets -> run records -> tables and figures.
# Stages live in workflow/rules/*.smk; settings in config/config.yaml (documented in config/README.md).
import os

from snakemake.utils import min_version, validate

from asynctm import messages as MESSAGES
from asynctm.config_check import ConfigError, check_config, coerce_config, config_sources, load_schema, read_config_file

min_version("9.0")

# One line naming the problem and the fix (asynctm.messages): a bad config key names the closest valid one and
# where it was set, an unknown target the closest targets, and Ctrl-C ends with how to resume.
MESSAGES.install(workflow)

# A YAML error in the workflow's config file names its line (Snakemake's message names neither). A
# --configfile that is missing or not YAML stops Snakemake before this file is read: those get its own words.
with MESSAGES.refusing(ConfigError):
    if os.path.exists("config/config.yaml") or not workflow.config_settings.configfiles:
        read_config_file("config/config.yaml")


configfile: "config/config.yaml"


# `--config` hands list items and mapping values over as strings ('seeds=[0,1]'): type them as the
# schema says, then refuse what breaks the schema or cannot run (task vs. dataset, T, protocols, sweeps) up
# front, one line per problem: the key, what is wrong, the fix, and where it was set (--config or a file's line).
coerce_config(config, "workflow/schemas/config.schema.yaml")
with MESSAGES.refusing(ConfigError):
    check_config(
        config,
        load_schema("workflow/schemas/config.schema.yaml"),
        config_sources(workflow.config_settings.configfiles, workflow.config_settings.config, "config/config.yaml"),
    )
validate(config, "workflow/schemas/config.schema.yaml")  # passes now; it fills in the schema's defaults


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"
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
