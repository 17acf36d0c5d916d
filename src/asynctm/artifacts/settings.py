"""What the config asks for: each experiment's main setting, the clause-sweep points, the seeds, and why an
implementation has no record (the gaps the tables and figures show instead of numbers).

The params folders, seeds and smoke shrinking are those of ``asynctm.experiments.plan``, the module the
experiment rules use, so the artifacts look for exactly the records the pipeline writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from asynctm.experiments import plan

# Display order everywhere: the paper's three columns (indexed, non-indexed, CUDA), then our CPU build.
TM_IMPLS = ("pytm_indexed", "pytm_nonindexed", "tm_gpu", "tm_cpu")

REASON_NO_GPU = plan.NOT_RUN["no_gpu"]  # "not run: no GPU on this host"
REASON_NO_INDEX = plan.NOT_RUN["no_index"]  # "not run: pyTsetlinMachine's regression machine has no index"
REASON_GPU_OFF = "not run: tm_gpu disabled by the config (gpu: false)"
REASON_NO_DATA = "not run: its dataset is not in the config's datasets"
REASON_NOT_REQUESTED = "not run: not requested by the config"
REASON_NO_RECORD = "not run: no record"

tm_params = plan.tm_params_name
svm_params = plan.svm_params  # the params folder of an experiment's SVM records


def is_smoke(config: dict) -> bool:
    return plan.is_smoke(config)


def main_params(config: dict, name: str, impl: str | None = None) -> str:
    """The params folder of the experiment's main setting (the one Tables 3-5 report); with ``impl``: that
    implementation's, whose epochs a reduced protocol (config ``reduced``) cuts."""
    return plan.main_params(config, name, impl)


def seeds(config: dict, name: str | None = None, impl: str | None = None) -> list[int]:
    """The config's seeds; with ``name`` and ``impl``: those of that implementation's main-setting runs (a
    reduced protocol may run fewer)."""
    if name is not None and impl is not None and name in config.get("experiments", {}):
        return sorted(int(k) for k in plan.run_seeds(config, name, impl))
    return sorted(int(k) for k in plan.seeds(config))


def task(config: dict, name: str) -> str:
    return config["experiments"][name]["task"]


def impls(config: dict, name: str) -> list[str]:
    """The TM implementations the config runs for an experiment (regression has no indexed machine)."""
    wanted = set(config.get("impls", TM_IMPLS))
    return [i for i in TM_IMPLS if i in wanted and plan.impl_skip_reason(task(config, name), i) is None]


def svm_requested(config: dict, name: str) -> bool:
    return bool(plan.experiment(config, name)["svm"])


@dataclass(frozen=True)
class Sweep:
    """A clause sweep of one experiment: a run per (impl, clauses, seed), ``params`` by clauses."""

    experiment: str
    clauses: tuple[int, ...]
    impls: tuple[str, ...]
    seeds: tuple[int, ...]
    epochs: int
    params: tuple[str, ...]


def sweep(config: dict, name: str) -> Sweep | None:
    """The experiment's clause sweep at the configured scale (None: the config has none)."""
    if name not in config.get("sweeps", {}) or name not in config["experiments"]:
        return None
    points = plan.sweep_points(config, name)
    parsed = [plan.parse_tm_params(p) for p in points["params"]]
    order = sorted(range(len(parsed)), key=lambda i: parsed[i]["clauses"])
    return Sweep(name, tuple(parsed[i]["clauses"] for i in order),
                 tuple(i for i in TM_IMPLS if i in points["impls"]), tuple(sorted(points["seeds"])),
                 parsed[0]["epochs"] if parsed else 0, tuple(points["params"][i] for i in order))


def gap_reason(config: dict, name: str, impl: str, host_gpu: bool, requested=None) -> str:
    """Why an implementation has no (usable) record for an experiment; ``requested``: the impls the
    artifact's runs ask for (default: the config's ``impls``)."""
    experiments = config.get("experiments", {})
    if impl == "pytm_indexed" and name in experiments and task(config, name) == "regression":
        return REASON_NO_INDEX
    if impl == "tm_gpu":
        if not host_gpu:
            return REASON_NO_GPU
        if config.get("gpu") is False:
            return REASON_GPU_OFF
    if name not in experiments:
        return REASON_NOT_REQUESTED
    if "datasets" in config and experiments[name]["dataset"] not in config["datasets"]:
        return REASON_NO_DATA
    if impl == "svm":
        return REASON_NO_RECORD if svm_requested(config, name) else REASON_NOT_REQUESTED
    if requested is None:
        requested = impls(config, name)
    if impl in TM_IMPLS and impl not in requested:
        return REASON_NOT_REQUESTED
    return REASON_NO_RECORD
