# The tally ablation (config `ablation`; kernels/README.md, "Tallies" and "Example order"): our TM with
# asynchronous and synchronous voting tallies (regression also with both update rules), in each example order,
# one record per run under {RESULTS}/ablation/<experiment>/<impl>/<params>/<tally>_<rule>[_staggered][_warp]/seed<k>.json
# (results/README.md), then one table and three figures built from those records alone. Not in the default target:
#   snakemake --cores all ablation
# Include after common.smk (RESULTS, TABLES_DIR, FIGURES_DIR, TM_RUN).
from asynctm.artifacts import ablation as ABLATION
from asynctm.artifacts import rules as RULES

_ABL_RUN = f"{RESULTS}/{PLAN.ABLATION_DIR}/{{experiment}}/{{impl}}/{{params}}/{{variant}}/seed{{seed}}"
ABLATION_RUNS = PLAN.ablation_runs(config)
# The artifacts' declared inputs, which the CLI reads alone: the requested records (with run_missing: false, only
# those on disk: nothing is trained) and every other ablation record on disk (e.g. made on a GPU host).
ABLATION_RECORDS = sorted(
    {
        p
        for p in (PLAN.ablation_record_path(config, r) for r in ABLATION_RUNS)
        if config["run_missing"] or Path(p).is_file()
    }
    | {p.as_posix() for p in ABLATION.record_files(RESULTS)}
)


rule run_ablation:
    input:
        # As run_tm: the processed dataset, only while the record is missing.
        meta=lambda wc: [] if Path(f"{_ABL_RUN}.json".format(**wc)).is_file() else [processed_meta(wc.experiment)],
    output:
        record=f"{_ABL_RUN}.json",
    log:
        f"{_ABL_RUN}.log",
    wildcard_constraints:
        experiment="|".join(EXPERIMENTS),
        impl="|".join(PLAN.OUR_IMPLS),
        params=r"n\d+_T\d+_s[^/]+_e\d+",
        variant=r"(async|sync)_(linear|quadratic)(_staggered)?(_warp)?",
        seed=r"\d+",
    conda:
        ENV
    threads: config["ablation"]["threads"]
    resources:
        gpu=lambda wc: int(wc.impl == "tm_gpu"),
    params:
        settings=lambda wc: json.dumps(
            PLAN.ablation_run_settings(config, wc.experiment, wc.impl, wc.params, wc.variant, int(wc.seed)),
            sort_keys=True,
        ),
    shell:
        TM_RUN


rule ablation_artifacts:
    input:
        records=ABLATION_RECORDS,
        stale=lambda wc: RULES.stale_stamp("ablation", TABLES_DIR, ABLATION_RECORDS),
    output:
        table=f"{TABLES_DIR}/ablation.md",
        csv=f"{TABLES_DIR}/ablation.csv",
        figures=[
            f"{FIGURES_DIR}/{name}.{ext}"
            for name in (
                "fig_ablation_literals_over_epochs",
                "fig_ablation_metric_over_epochs",
                "fig_ablation_vs_clauses",
            )
            for ext in ("png", "pdf", "caption.txt")
        ],
        inputs=RULES.inputs_manifest_path("ablation", TABLES_DIR),
    log:
        f"{RESULTS}/{PLAN.ABLATION_DIR}/artifacts.log",
    conda:
        ENV
    shell:
        f"asynctm ablation --results {word(RESULTS)} --tables-dir {word(TABLES_DIR)} --figures-dir {word(FIGURES_DIR)}"
        " --inputs-manifest {output.inputs:q} --stale {input.stale:q} --log {log:q} --records {input.records:q}"


# The records, the table and the figures of the ablation.
rule ablation:
    input:
        rules.ablation_artifacts.output,
