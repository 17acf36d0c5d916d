# Shared helpers for the .smk files: config lookups and input functions. Each rule's shell command calls the
# console script, `asynctm <subcommand> ... --log LOG` (asynctm.cli), so `snakemake -p` prints each job's command;
# given a log it runs as a job (asynctm.jobs, which says how: its own log, a failure that names the log, the deadline).
import json
import os
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

from asynctm import jobs as JOBS

DATA = config["data_dir"]
DATASET_NAMES = list(config["datasets"])
PROTOCOLS = {name: config["protocols"].get(name, ["paper"]) for name in DATASET_NAMES}
PROTOCOL_NAMES = sorted({p for ps in PROTOCOLS.values() for p in ps})

if config["data_mirror"] is not None and not Path(config["data_mirror"]).is_dir():
    raise WorkflowError(
        f"config data_mirror={config['data_mirror']!r} is not a folder (relative paths start at the "
        "working directory); fix it, or leave data_mirror unset to download from the official URLs"
    )


# The console script lives beside the interpreter that runs snakemake (.venv/bin/asynctm): the jobs find it there
# without an activated environment.
if JOBS.console_script_on_path() is None:
    raise WorkflowError(
        f"the console script asynctm is not installed beside {sys.executable} nor on PATH; install the package "
        "into this environment: pip install -e '.[pipeline]'"
    )


def processed_datasets():
    """The meta.json of every configured dataset and protocol (each marks a finished folder)."""
    return [
        f"{DATA}/processed/{name}/{protocol}/meta.json"
        for name, protocols in PROTOCOLS.items()
        for protocol in protocols
    ]


# A workflow has one onstart: add other start-up steps here. It runs after Snakemake installs its own
# SIGTERM handler (which waits for running jobs), so this one replaces it.
onstart:
    JOBS.install_signal_handlers()


# The deadline (config deadline): resolved once, here in the main process (a duration counts from now), and handed
# through the environment to the job processes, which read this file again later (asynctm.jobs). No job starts
# after it, and a TM run pauses with its checkpoint a margin before it (its --stop-at, added by asynctm.cli).
from asynctm.config_check import resolve_deadline

if workflow.is_main_process:
    _deadline = JOBS.share_deadline(resolve_deadline(config["deadline"], time.time()))
    if _deadline is not None:
        print(JOBS.deadline_note(_deadline), file=sys.stderr)


# The software of every job: the project's conda environment (workflow/envs/asynctm.yaml is environment.yml; a path
# relative to the .smk files). Without --use-conda the jobs run in snakemake's own environment.
ENV = "../envs/asynctm.yaml"

# The workflow's own values in a command (a folder, the mirror, the artifacts' settings) are written in as the
# workflow is read (f-strings of word(...), quoted and with braces doubled), so that it names nothing else from
# outside its rule, as snakemake --lint asks. They are no params (a folder is no setting of a job, and its outputs'
# paths name it), since a new param would redo the finished jobs of a checkout whose metadata predates it.
word = JOBS.shell_word


# The fetch command's mirror option; the pipeline reaches a mirror only through config.
MIRROR_ARGS = "" if config["data_mirror"] is None else f" --mirror {word(config['data_mirror'])}"


# -- experiments (workflow/rules/experiments.smk; record layout: results/README.md) -----------------------
from asynctm.backends import cuda_available
from asynctm.experiments import estimate as ESTIMATE
from asynctm.experiments import plan as PLAN

HOST_GPU = cuda_available()
SMOKE = PLAN.is_smoke(config)
RESULTS = PLAN.results_root(config)
# Tables (and the report beside them) in paper_tables/, figures in figures/ at paper scale (committed); the
# same two folders under <results>/smoke/ at smoke scale, so smoke numbers never mix with the paper's.
_ARTIFACTS_ROOT = f"{RESULTS}/" if SMOKE else ""
TABLES_DIR = f"{_ARTIFACTS_ROOT}paper_tables"
FIGURES_DIR = f"{_ARTIFACTS_ROOT}figures"
EXPERIMENTS = list(config["experiments"])
NOVELTY = [n for n in EXPERIMENTS if PLAN.experiment(config, n)["task"] == "novelty"]
RUNS = PLAN.requested_runs(config, HOST_GPU)

# gpu: true requests tm_gpu runs even where this host has no GPU (e.g. a cluster's login node): each
# such job fails with a clear error if the machine it runs on has none.
_inactive = sorted(set(EXPERIMENTS) - set(PLAN.active_experiments(config)))
if _inactive:
    print(
        f"Note: experiments not requested because config datasets leaves out their data: {', '.join(_inactive)}",
        file=sys.stderr,
    )


# The record gate (asynctm.store): every record below the results folder is checked before anything reads it
# (estimates, tables, figures, report), so a bad record stops the invocation here, with one line per record, before
# any job starts and so before any committed artifact could be removed.
from asynctm import store as STORE

if workflow.is_main_process:
    try:
        STORE.gate(RESULTS, config)
    except STORE.RecordError as _e:
        raise WorkflowError(f"run records refused (nothing was run, written or removed):\n{_e}") from None


# The budget (config run_budget_hours): of the missing runs, the default target starts only the cheapest
# within it (asynctm.experiments.estimate, from the timings of the records and benchmarks); the rest is
# listed here with its estimate and the command that runs it. exp_*, sweep_* and record targets take RUNS.
PLAN_ROWS = ESTIMATE.status(
    config, RUNS, ESTIMATE.load_timings(config["results_dir"], config["estimate_benchmarks"], DATA)
)
ESTIMATE.budget(config, PLAN_ROWS)
STARTED = ESTIMATE.started_paths(config, PLAN_ROWS)
if workflow.is_main_process and config["run_missing"]:
    print(ESTIMATE.budget_note(config, PLAN_ROWS), file=sys.stderr)


def record_paths(experiments=None, impls=None, kinds=None):
    """The records this configuration requests (optionally only some experiments, impls or kinds) that are
    on disk or that the budget starts; with config run_missing: false, only those on disk (nothing is trained)."""
    paths = [
        PLAN.record_path(config, r)
        for r in RUNS
        if (experiments is None or r["experiment"] in experiments)
        and (impls is None or r["impl"] in impls)
        and (kinds is None or r["kind"] in kinds)
    ]
    return [p for p in paths if Path(p).is_file() or (config["run_missing"] and p in STARTED)]


def processed_meta(experiment):
    exp = PLAN.experiment(config, experiment)
    return f"{DATA}/processed/{exp['dataset']}/{exp['protocol']}/meta.json"


def run_data_input(wildcards):
    """A run's input: its processed dataset, but only while its record is missing or is forced to rerun
    (--forcerun/-R naming the record or its rule, --forceall, --force on it as a target: the data is then
    prepared first, in the same invocation). A finished record (e.g. committed, on a fresh clone) otherwise
    never waits for, nor is redone because of, the data being rebuilt."""
    run = {
        "experiment": wildcards.experiment,
        "impl": getattr(wildcards, "impl", "svm"),
        "params": wildcards.params,
        "seed": wildcards.seed,
    }
    record = PLAN.record_path(config, run)
    if Path(record).is_file() and not _forced(record, {"run_svm"} if run["impl"] == "svm" else _TM_RULES):
        return []
    return [processed_meta(wildcards.experiment)]


def _mlp_tm_record(wildcards):
    """The record of the TM run whose class sums an MLP novelty stage trains on."""
    return PLAN.record_path(
        config,
        {
            "experiment": wildcards.experiment,
            "impl": wildcards.tm_impl,
            "params": wildcards.tm_params,
            "seed": wildcards.seed,
        },
    )


def mlp_scores_path(wildcards):
    """The class sums (written beside the TM run's record) that an MLP novelty stage trains on."""
    return _mlp_tm_record(wildcards).removesuffix(".json") + ".scores.npz"


def mlp_scores_input(wildcards):
    """An MLP stage's input: its TM run's class sums, but only while the MLP record is missing, or it or its TM
    run is missing or forced to rerun (then the TM run, if needed, comes first and the stage follows it). A
    finished pair (e.g. committed, on a fresh clone, where checkout order sets the files' times) is otherwise
    never redone because the scores file happens to be newer than the record."""
    tm_record = _mlp_tm_record(wildcards)
    record = PLAN.record_path(
        config,
        {
            "experiment": wildcards.experiment,
            "impl": "mlp_novelty",
            "params": f"{wildcards.tm_impl}.{wildcards.tm_params}",
            "seed": wildcards.seed,
        },
    )
    if (
        Path(record).is_file()
        and Path(tm_record).is_file()
        and not (_forced(record, {"run_mlp_novelty"}) or _forced(tm_record, _TM_RULES))
    ):
        return {}
    return {"scores": mlp_scores_path(wildcards)}


_TM_RULES = {"run_tm", "run_tm_novelty"}


def _forced(path, rules):
    """Whether this invocation's command line forces the job that writes ``path`` (a job of one of ``rules``)
    to run again."""
    dag = workflow.dag_settings
    path = os.path.normpath(path)
    forcerun = {os.path.normpath(str(f)) for f in dag.forcerun}
    return (
        dag.forceall
        or path in forcerun
        or bool(forcerun & set(rules))
        or (dag.forcetargets and path in {os.path.normpath(str(t)) for t in dag.targets})
    )


def tm_threads(wildcards):
    if wildcards.impl == "tm_cpu":
        return config["cpu_threads"] or workflow.cores
    return 1


def tm_settings(wildcards):
    return json.dumps(
        PLAN.tm_run_settings(config, wildcards.experiment, wildcards.impl, wildcards.params, int(wildcards.seed)),
        sort_keys=True,
    )


# The command of a TM run (run_tm, run_tm_novelty, run_ablation). Under a deadline asynctm.cli adds its --stop-at.
TM_RUN = (
    f"asynctm run tm --settings {{params.settings:q}} --data-dir {word(DATA)} --out {{output.record:q}}"
    " --threads {threads} --log {log:q}"
)
