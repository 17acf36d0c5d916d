# Tables 3-5 of the paper and the results summary, ours next to the paper's published numbers
# (paper_tables/reference/), built by `asynctm artifacts` (one process per job) from the run
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

from asynctm.artifacts import catalog
from asynctm.artifacts.tables import HOST_TIMING_TABLES, SVM_GPU_BUILDS
from asynctm.artifacts.rules import (
    artifact_command,
    changed_stamp,
    config_text,
    inputs_manifest_path,
    record_input_with_stamp,
)

PAPER_NUMBERS = "paper_tables/reference/paper_numbers.csv"
# The config the artifacts are built from as Snakemake sees it (--config overrides included), cut to the
# keys they read, so that e.g. another data_mirror does not rebuild them.
ARTIFACTS_CONFIG = f"{TABLES_DIR}/artifacts_config.yaml"
ARTIFACTS_CONFIG_KEYS = (
    "scale",
    "results_dir",
    "gpu",
    "datasets",
    "seeds",
    "impls",
    "tm",
    "experiments",
    "sweeps",
    "reduced",
    "svm",
    "smoke",
)
ARTIFACTS_LOGS = f"logs/artifacts/{config['scale']}"
# The same-host timing run (pyTsetlinMachine beside our builds on one machine: asynctm.artifacts.evidence_host), read by
# Tables 3 and 5 where the main records of a build of ours and its baseline ran on different hosts.
_HOST_TIMING = lambda name: (
    [p for p in (f"{RESULTS}/evidence/host_speedups.json",) if Path(p).is_file()] if name in HOST_TIMING_TABLES else []
)
# Whether ThunderSVM's GPU builds run on the GPU hosts (benchmarks/thundersvm_gpu_builds.py), read by Table 4's note.
_SVM_GPU_BUILDS = lambda name: (
    [p for p in (SVM_GPU_BUILDS,) if Path(p).is_file()] if name == "table4_svm_time" else []
)


# Written by a rule, never while the workflow is read (a dry run or a refused run writes nothing): where the file
# on disk holds other settings than this invocation's, its input gains a stamp that does not exist yet, so the rule
# runs and writes it (only when its content changes, so its time says when the settings last changed), and the
# artifacts built from it follow. The stamp, not a param, says when: the settings are written into the command.
_ARTIFACTS_CONFIG_JSON = json.dumps(
    {key: config[key] for key in ARTIFACTS_CONFIG_KEYS if key in config}, sort_keys=True
)
_ARTIFACTS_CONFIG_TEXT = config_text(json.loads(_ARTIFACTS_CONFIG_JSON))


rule artifacts_config:
    input:
        stale=lambda wc: changed_stamp("artifacts_config", ARTIFACTS_CONFIG, _ARTIFACTS_CONFIG_TEXT),
    output:
        ARTIFACTS_CONFIG,
    log:
        f"{ARTIFACTS_LOGS}/artifacts_config.log",
    conda:
        ENV
    shell:
        f"asynctm artifacts config --settings {word(_ARTIFACTS_CONFIG_JSON)} --out {{output:q}}"
        " --stale {input.stale:q} --log {log:q}"


for _name in catalog.TABLES:

    rule:
        name:
            _name
        input:
            unpack(record_input_with_stamp(_name, config, record_paths, RESULTS, TABLES_DIR)),
            config=ARTIFACTS_CONFIG,
            reference=PAPER_NUMBERS,
            host_timing=_HOST_TIMING(_name),
            svm_gpu_builds=_SVM_GPU_BUILDS(_name),
        output:
            csv=report(f"{TABLES_DIR}/{_name}.csv", category="Tables", caption=f"../report/{_name}.rst"),
            md=f"{TABLES_DIR}/{_name}.md",
            tex=f"{TABLES_DIR}/{_name}.tex",
            caption=f"{TABLES_DIR}/{_name}.caption.txt",
            inputs=inputs_manifest_path(_name, TABLES_DIR),
        log:
            f"{ARTIFACTS_LOGS}/{_name}.log",
        conda:
            ENV
        params:
            artifact=_name,
            host_gpu=HOST_GPU,  # words the gap of a missing tm_gpu run; a param, so a change rebuilds
        shell:
            # the name through params: a job evaluates this again when it runs, when _name holds the loop's last
            artifact_command("{params.artifact}", RESULTS, TABLES_DIR, HOST_GPU)


rule results_summary:
    input:
        unpack(record_input_with_stamp("results_summary", config, record_paths, RESULTS, TABLES_DIR)),
        config=ARTIFACTS_CONFIG,
        reference=PAPER_NUMBERS,
    output:
        md=f"{TABLES_DIR}/results_summary.md",
        inputs=inputs_manifest_path("results_summary", TABLES_DIR),
    log:
        f"{ARTIFACTS_LOGS}/results_summary.log",
    conda:
        ENV
    params:
        host_gpu=HOST_GPU,
    shell:
        artifact_command("results_summary", RESULTS, TABLES_DIR, HOST_GPU)


# Every table (CSV, Markdown, LaTeX, caption) and the results summary.
rule tables:
    input:
        [
            path
            for name in [*catalog.TABLES, *catalog.SUMMARIES]
            for path in catalog.output_paths(name, TABLES_DIR).values()
        ],
