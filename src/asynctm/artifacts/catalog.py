"""The artifacts by name: the experiments and records each one reads, and the files it writes.

Pure Python (no pandas, no matplotlib), so the Snakemake rules can import it to declare inputs and outputs
without slowing the DAG down; the CLI and the tests use the same lists.
"""

from __future__ import annotations

from pathlib import Path

from ..experiments import plan

# Datasets in the order of the paper's tables.
TABLE3_DATASETS = ("bbc_sport", "newsgroups20", "semeval", "imdb", "wsd_java", "wsd_apple")
TABLE4_DATASETS = TABLE3_DATASETS + ("bike_sharing", "blogfeedback")
TABLE5_DATASETS = ("bike_sharing", "blogfeedback")

# name -> (experiments it reads, the records it uses there): "tm" = the TM runs at the main setting, "tm_ours"
# = only tm_gpu and tm_cpu of those, "mlp" = the novelty MLP on those, "svm" = the SVM baseline, "sweep" =
# the clause sweep's TM runs. Seeds: the config's (sweeps: the sweep's).
TABLES = {
    "table3_performance": (TABLE3_DATASETS, ("tm", "mlp")),
    "table4_svm_time": (TABLE4_DATASETS, ("svm", "tm_ours")),
    "table5_regression": (TABLE5_DATASETS, ("tm",)),
}
SUMMARIES = {"results_summary": (TABLE4_DATASETS, ("tm", "mlp", "svm"))}
FIGURES = {
    "fig_bbc_time_vs_clauses": (("bbc_sport",), ("sweep",)),
    "fig_semeval_time_per_epoch": (("semeval",), ("tm",)),
    "fig_semeval_time_vs_clauses": (("semeval",), ("sweep",)),
    "fig_bike_mae_vs_clauses": (("bike_sharing",), ("sweep",)),
    "fig_bike_time_vs_clauses": (("bike_sharing",), ("sweep",)),
    "fig_bike_mae_over_epochs": (("bike_sharing",), ("tm",)),
    "fig_bike_time_per_epoch": (("bike_sharing",), ("tm",)),
    "fig_imdb_time_vs_clauses": (("imdb",), ("sweep",)),
}
ARTIFACTS = {**TABLES, **SUMMARIES, **FIGURES}
# What reproduced (claims.py): one verdict per claim of the paper, and the forest plot of every Table 3/5 cell (also
# the tally ablation's records under <results>/ablation/, which the rule declares itself). Kept out of ARTIFACTS,
# whose members share the tables' and figures' build and rules: these read the config's `claims:` thresholds too.
CLAIMS = {
    "claims": (TABLE4_DATASETS, ("tm", "mlp", "sweep", "svm")),
    "fig_claims_forest": (TABLE4_DATASETS, ("tm", "mlp", "sweep", "svm")),
}
ALL = {**ARTIFACTS, **CLAIMS}

SUFFIXES = {
    **{name: {"csv": ".csv", "md": ".md", "tex": ".tex", "caption": ".caption.txt"} for name in TABLES},
    **{name: {"md": ".md"} for name in SUMMARIES},
    **{name: {"png": ".png", "pdf": ".pdf", "caption": ".caption.txt"} for name in FIGURES},
    "claims": {"md": ".md", "csv": ".csv", "readme": "_readme.md"},
    "fig_claims_forest": {"png": ".png", "pdf": ".pdf", "caption": ".caption.txt"},
}


def check_name(name: str) -> None:
    if name not in ALL:
        raise ValueError(f"unknown artifact {name!r}; known: {', '.join(ALL)}")


def output_paths(name: str, out_dir) -> dict[str, str]:
    """The files an artifact writes into ``out_dir``, by role (csv, md, tex, png, pdf, caption)."""
    check_name(name)
    return {role: (Path(out_dir) / f"{name}{suffix}").as_posix() for role, suffix in SUFFIXES[name].items()}


def experiments(name: str, config: dict) -> list[str]:
    """The configured experiments an artifact reads."""
    check_name(name)
    return [e for e in ALL[name][0] if e in config.get("experiments", {})]


def _uses(role: str, config: dict, experiment: str, impl: str, params: str, seed: int) -> bool:
    if role == "sweep":
        sweep = plan.sweep(config, experiment)
        return (sweep is not None and params in sweep.params and seed in sweep.seeds
                and sweep.runs(impl, plan.parse_tm_params(params)["clauses"]))
    if role in ("tm", "tm_ours"):
        wanted = plan.TM_IMPLS if role == "tm" else plan.OUR_IMPLS
        return (impl in wanted and params == plan.main_params(config, experiment, impl)
                and seed in plan.run_seeds(config, experiment, impl))
    if role == "mlp":  # the MLP stage on the class sums of a TM run: that TM's params and seeds
        tm, _, tm_params = params.partition(".")
        return (impl == "mlp_novelty" and tm in plan.TM_IMPLS
                and tm_params == plan.main_params(config, experiment, tm)
                and seed in plan.run_seeds(config, experiment, tm))
    if seed not in plan.seeds(config):
        return False
    if role == "svm":
        return impl == "svm" and params == plan.svm_params(config, experiment)
    raise ValueError(f"unknown record role {role!r}")


def reads(name: str, config: dict, record_path) -> bool:
    """Whether ``.../<experiment>/<impl>/<params>/seed<k>.json`` is a record this artifact uses."""
    parts = Path(record_path).parts
    if len(parts) < 4 or not parts[-1].startswith("seed") or not parts[-1].endswith(".json"):
        return False
    experiment, impl, params = parts[-4:-1]
    try:
        seed = int(parts[-1][len("seed"):-len(".json")])
    except ValueError:
        return False
    if experiment not in experiments(name, config):
        return False
    return any(_uses(role, config, experiment, impl, params, seed) for role in ALL[name][1])
