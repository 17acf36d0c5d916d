# Experiments: one record per run, results/<experiment>/<impl>/<params>/seed<k>.json (results/README.md).
# What runs and with which settings comes from asynctm.experiments.plan (config/config.yaml); each job
# calls `asynctm run`, which writes the record last and atomically. A run's processed
# dataset is its input only while its record is missing (run_data_input): a committed record is not redone
# because a fresh clone rebuilt the data.
_EXP = "|".join(EXPERIMENTS)
_NONNOVEL = "|".join(n for n in EXPERIMENTS if n not in NOVELTY) or "^$"
_NOVEL = "|".join(NOVELTY) or "^$"
_TM_IMPL = "|".join(PLAN.TM_IMPLS)
_RUN = f"{RESULTS}/{{experiment}}/{{impl}}/{{params}}/seed{{seed}}"


# Our TM (tm_gpu, tm_gpu_warp, tm_cpu) and pyTsetlinMachine (pytm_indexed, pytm_nonindexed), classification and
# regression experiments. GPU jobs hold the `gpu` resource so that timing runs never share a GPU.
rule run_tm:
    input:
        meta=run_data_input,
    output:
        record=f"{_RUN}.json",
    log:
        f"{_RUN}.log",
    wildcard_constraints:
        experiment=_NONNOVEL,
        impl=_TM_IMPL,
        seed=r"\d+",
    conda:
        ENV
    threads: tm_threads
    resources:
        gpu=lambda wc: int(wc.impl in PLAN.GPU_IMPLS),
    params:
        settings=tm_settings,
    shell:
        TM_RUN


# Novelty experiments: as run_tm, plus the class sums of the known-class test and the novel documents.
rule run_tm_novelty:
    input:
        meta=run_data_input,
    output:
        record=f"{_RUN}.json",
        scores=f"{_RUN}.scores.npz",
    log:
        f"{_RUN}.log",
    wildcard_constraints:
        experiment=_NOVEL,
        impl=_TM_IMPL,
        seed=r"\d+",
    conda:
        ENV
    threads: tm_threads
    resources:
        gpu=lambda wc: int(wc.impl in PLAN.GPU_IMPLS),
    params:
        settings=tm_settings,
    shell:
        TM_RUN


# The SVM baseline of Table 4 (ThunderSVM GPU, else ThunderSVM CPU, else scikit-learn: the record says which).
rule run_svm:
    input:
        meta=run_data_input,
    output:
        record=f"{RESULTS}/{{experiment}}/svm/{{params}}/seed{{seed}}.json",
    log:
        f"{RESULTS}/{{experiment}}/svm/{{params}}/seed{{seed}}.log",
    wildcard_constraints:
        experiment=_EXP,
        seed=r"\d+",
    conda:
        ENV
    # ThunderSVM on every core; scikit-learn (an experiment's svm_library) is single-threaded
    threads: lambda wc: ESTIMATE.run_threads(config, "svm", workflow.cores, wc.experiment)
    params:
        settings=lambda wc: json.dumps(
            PLAN.svm_run_settings(config, wc.experiment, wc.params, int(wc.seed)), sort_keys=True
        ),
    shell:
        f"asynctm run svm --settings {{params.settings:q}} --data-dir {word(DATA)} --out {{output.record:q}}"
        " --threads {threads} --log {log:q}"


# Novelty detection, second stage: an MLP on the class sums of one TM run (params = <tm impl>.<tm params>).
rule run_mlp_novelty:
    input:
        unpack(mlp_scores_input),
    output:
        record=f"{RESULTS}/{{experiment}}/mlp_novelty/{{tm_impl}}.{{tm_params}}/seed{{seed}}.json",
    log:
        f"{RESULTS}/{{experiment}}/mlp_novelty/{{tm_impl}}.{{tm_params}}/seed{{seed}}.log",
    wildcard_constraints:
        experiment=_NOVEL,
        tm_impl=_TM_IMPL,
        seed=r"\d+",
    conda:
        ENV
    params:
        settings=lambda wc: json.dumps(
            PLAN.mlp_run_settings(config, wc.experiment, f"{wc.tm_impl}.{wc.tm_params}", int(wc.seed)),
            sort_keys=True,
        ),
        scores=mlp_scores_path,
    shell:
        "asynctm run mlp --settings {params.settings:q} --scores {params.scores:q} --out {output.record:q}"
        " --log {log:q}"


# Every requested run; and one target per experiment (its main setting, all impls and seeds, svm, mlp)
# and per sweep: e.g. `snakemake --cores all exp_wsd_apple` or `snakemake --cores all sweep_semeval`.
rule experiments:
    input:
        record_paths(),


for _name in EXPERIMENTS:

    rule:
        name:
            f"exp_{_name}"
        input:
            [
                PLAN.record_path(config, r)
                for r in RUNS
                if r["experiment"] == _name
                and (r["kind"] != "tm" or r["params"] == PLAN.main_params(config, _name, r["impl"]))
            ],


for _name in config["sweeps"]:

    rule:
        name:
            f"sweep_{_name}"
        input:
            [
                PLAN.record_path(config, r)
                for r in RUNS
                if r["experiment"] == _name
                and r["kind"] == "tm"
                and r["params"] in PLAN.sweep_points(config, _name)["params"]
            ],
