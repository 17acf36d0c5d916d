# Tables 3-5 of the paper and the README's results block, ours next to the paper's published numbers
# (paper_tables/reference/), built by `python -m asynctm.artifacts` (one process per job) from the run
# records. Outputs: {TABLES_DIR}/<name>.{csv,md,tex,caption.txt} (paper_tables/ beside reference/ at paper
# scale, results/smoke/paper_tables/ at smoke scale); `snakemake tables` builds all.
#
# Uses from common.smk / experiments.smk: RESULTS (records root of this scale), TABLES_DIR (output folder),
# record_paths(experiments=...) (the records this config requests) and HOST_GPU. A rule's records are its
# declared inputs and the CLI reads those alone (asynctm.artifacts.rules): the requested records of the cells
# it reports and every other record on disk under RESULTS for those cells (e.g. tm_gpu records made on a GPU
# host and copied in, where this one has none), so a record that appears, changes or goes rebuilds it. A
# missing run shows as a gap that says why.
import json
from pathlib import Path

import yaml

from asynctm.artifacts import catalog
from asynctm.artifacts.rules import cli_args, record_input
from asynctm.io import write_text_atomic

PAPER_NUMBERS = "paper_tables/reference/paper_numbers.csv"
# The config the artifacts are built from as Snakemake sees it (--config overrides included), cut to the
# keys they read, so that e.g. another data_mirror does not rebuild them.
ARTIFACTS_CONFIG = f"{TABLES_DIR}/artifacts_config.yaml"
ARTIFACTS_CONFIG_KEYS = ("scale", "results_dir", "gpu", "datasets", "seeds", "impls", "tm", "experiments", "sweeps",
                         "reduced", "svm", "smoke")
ARTIFACTS_LOGS = f"logs/artifacts/{config['scale']}"


# Written while the workflow is read, and only when its content changes (so its time says when the settings
# last changed): a rule would keep a stale file on a checkout, where Snakemake holds no record of the params that
# made it, and the tables would then be built with settings the config no longer has.
_ARTIFACTS_CONFIG_TEXT = yaml.safe_dump(
    json.loads(json.dumps({key: config[key] for key in ARTIFACTS_CONFIG_KEYS if key in config})), sort_keys=True
)
if not Path(ARTIFACTS_CONFIG).is_file() or Path(ARTIFACTS_CONFIG).read_text() != _ARTIFACTS_CONFIG_TEXT:
    write_text_atomic(ARTIFACTS_CONFIG, _ARTIFACTS_CONFIG_TEXT)


for _name in catalog.TABLES:

    rule:
        name:
            _name
        input:
            records=record_input(_name, config, record_paths, RESULTS),
            config=ARTIFACTS_CONFIG,
            reference=PAPER_NUMBERS,
        output:
            csv=report(f"{TABLES_DIR}/{_name}.csv", category="Tables", caption=f"../report/{_name}.rst"),
            md=f"{TABLES_DIR}/{_name}.md",
            tex=f"{TABLES_DIR}/{_name}.tex",
            caption=f"{TABLES_DIR}/{_name}.caption.txt",
        params:
            artifact=_name,
            host_gpu=HOST_GPU,  # words the gap of a missing tm_gpu run; a param, so a change rebuilds
        log:
            f"{ARTIFACTS_LOGS}/{_name}.log",
        run:
            JOBS.run_module("asynctm.artifacts", *cli_args(params.artifact, results=RESULTS,
                            config_file=input.config, reference=input.reference, out_dir=Path(output.csv).parent,
                            host_gpu=params.host_gpu, records=input.records), log=log[0])


rule results_summary:
    input:
        records=record_input("results_summary", config, record_paths, RESULTS),
        config=ARTIFACTS_CONFIG,
        reference=PAPER_NUMBERS,
    output:
        md=f"{TABLES_DIR}/results_summary.md",
    params:
        host_gpu=HOST_GPU,
    log:
        f"{ARTIFACTS_LOGS}/results_summary.log",
    run:
        JOBS.run_module("asynctm.artifacts", *cli_args("results_summary", results=RESULTS, config_file=input.config,
                        reference=input.reference, out_dir=Path(output.md).parent, host_gpu=params.host_gpu,
                        records=input.records), log=log[0])


# Every table (CSV, Markdown, LaTeX, caption) and the results block.
rule tables:
    input:
        [
            path
            for name in [*catalog.TABLES, *catalog.SUMMARIES]
            for path in catalog.output_paths(name, TABLES_DIR).values()
        ],
