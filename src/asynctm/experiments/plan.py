"""Which runs the configuration asks for, with which settings, under which name (config/config.yaml,
results/README.md); and, for a run without a record, why (the gaps the tables and figures show).

The one answer to those questions: the Snakemake rules use it to list targets and pass each job its
settings, the runner to check them, and the tables and figures (asynctm.artifacts) to find the records of
each cell, so that the record path, the parameters it encodes, the hyperparameters actually trained and the
records a table reads agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..backends import ORDERS, TALLIES, UPDATE_RULES
from ..costmodel import literal_words

# The Tsetlin Machine implementations, in the order the tables and figures show them: the paper's three
# columns (pyTsetlinMachine indexed and non-indexed, the CUDA TM: our kernels with the paper's design, one thread
# per clause), then our own builds: the GPU kernels with a warp of threads per clause, and the CPU build.
TM_IMPLS = ("pytm_indexed", "pytm_nonindexed", "tm_gpu", "tm_gpu_warp", "tm_cpu")
OUR_IMPLS = ("tm_gpu", "tm_gpu_warp", "tm_cpu")  # our TM: the kernels of kernels/ on a GPU and on CPU threads
WARP = 32  # threads per clause of the GPU build's other schedule, a warp per clause (kernels/README.md)
# The GPU builds and their threads per clause (kernels/README.md, "Threads per clause"): tm_gpu is the paper's
# design, one thread per clause; tm_gpu_warp gives each clause a warp. A record's impl says which it ran.
GPU_THREADS_PER_CLAUSE = {"tm_gpu": 1, "tm_gpu_warp": WARP}
GPU_IMPLS = tuple(GPU_THREADS_PER_CLAUSE)
# The GPU benchmark's wide builds (config gpu_benchmark.wide_build): more of our GPU builds that the benchmark times,
# a group of several warps per clause for wide inputs, one build per size the config lists; settings of the
# benchmark, not implementations of the tables (no records, so not in GPU_THREADS_PER_CLAUSE). WIDE_BUILD, a block of
# 128 threads per clause, keeps the name the benchmark records have given it from the start; the other sizes are
# named after their threads (tm_gpu_block256: a block of 256). A size the config lists under shared_state is timed
# with each clause's automata in its block's shared memory, named with SHARED_SUFFIX (tm_gpu_block64_shared,
# tm_gpu_block_shared, ...; kernels/README.md, "Automata in shared memory").
WIDE_BUILD = "tm_gpu_block"
WIDE_BUILD_SIZES = (64, 128, 256, 512, 1024)  # the sizes the config may list (kernels/README.md)
SHARED_SUFFIX = "_shared"


def wide_build_name(threads: int, shared: bool = False) -> str:
    """The benchmark's name of the wide build with ``threads`` threads per clause (``shared``: and the automata in
    shared memory)."""
    name = WIDE_BUILD if int(threads) == 128 else f"{WIDE_BUILD}{int(threads)}"
    return name + SHARED_SUFFIX if shared else name


# every wide build's name -> its threads per clause, and the names of those that keep the automata in shared memory
WIDE_BUILDS = {wide_build_name(k, shared): k for shared in (False, True) for k in WIDE_BUILD_SIZES}
WIDE_SHARED = frozenset(wide_build_name(k, True) for k in WIDE_BUILD_SIZES)
TM_SETTINGS = ("epochs", "state_bits", "boost_true_positive", "batch_size", "append_negated")

_TM_PARAMS = re.compile(r"^n(?P<clauses>\d+)_T(?P<T>\d+)_s(?P<s>\d+(?:\.\d+)?(?:e[+-]?\d+)?)_e(?P<epochs>\d+)$")

# Why an implementation has no (usable) record for an experiment: the gap's words in tables and figures.
REASON_NO_INDEX = "not run: pyTsetlinMachine's regression machine has no index"
REASON_NO_GPU = "not run: needs a GPU host, and this one has none (config impls, gpu)"
REASON_GPU_OFF = "not run: the GPU builds are disabled by the config (gpu: false)"
REASON_NO_DATA = "not run: its dataset is not in the config's datasets"
REASON_NOT_REQUESTED = "not run: not requested by the config"
REASON_NO_RECORD = "not run: no record"


class PlanError(ValueError):
    """A record path or configuration that names an impossible run."""


def tm_params_name(clauses: int, T: int, s: float, epochs: int) -> str:
    return f"n{int(clauses)}_T{int(T)}_s{float(s):g}_e{int(epochs)}"


def parse_tm_params(name: str) -> dict:
    m = _TM_PARAMS.match(name)
    if not m:
        raise PlanError(f"TM parameters {name!r} do not read n<clauses>_T<T>_s<s>_e<epochs> (e.g. n300_T50_s5_e100)")
    return {"clauses": int(m["clauses"]), "T": int(m["T"]), "s": float(m["s"]), "epochs": int(m["epochs"])}


def svm_params_name(params: dict) -> str:
    return f"{params['kernel']}_C{float(params['C']):g}"


def svm_settings(config: dict, name: str) -> dict:
    """The SVM hyperparameters of an experiment (config ``svm``: one set for regression, one for the rest)."""
    return dict(config["svm"]["regression" if experiment(config, name)["task"] == "regression" else "classification"])


def svm_params(config: dict, name: str) -> str:
    """The params folder of an experiment's SVM records, e.g. ``linear_C1``."""
    return svm_params_name(svm_settings(config, name))


def impl_skip_reason(task: str, impl: str) -> str | None:
    """Why an implementation cannot run a task at all (None: it can)."""
    if impl == "pytm_indexed" and task == "regression":
        return REASON_NO_INDEX
    if impl == "mlp_novelty" and task != "novelty":
        raise PlanError("mlp_novelty runs on novelty experiments only")
    return None


def task(config: dict, name: str) -> str:
    """The experiment's task: classification, novelty or regression."""
    return config["experiments"][name]["task"]


def experiment(config: dict, name: str) -> dict:
    """The experiment's settings: the shared ``tm`` settings overridden by the experiment's own."""
    if name not in config["experiments"]:
        raise PlanError(f"unknown experiment {name!r}; config/config.yaml defines: "
                        f"{', '.join(sorted(config['experiments']))}")
    exp = {**config["tm"], **config["experiments"][name]}
    exp.setdefault("f1", "macro")
    exp.setdefault("svm", False)
    exp["name"] = name
    return exp


def _even(task: str, clauses: int) -> int:
    # Classification teams are half positive, half negative: an even number per class.
    return max(2, clauses - clauses % 2) if task != "regression" else clauses


def _check_clauses(exp: dict, clauses: int) -> None:
    if exp["task"] != "regression" and clauses % 2:
        raise PlanError(f"experiment {exp['name']}: {clauses} clauses per class is odd; classification needs an "
                        "even number (half positive, half negative)")


def wide_build_sizes(config: dict) -> tuple[int, ...]:
    """The threads per clause of the GPU benchmark's wide builds (config
    ``gpu_benchmark.wide_build.threads_per_clause``: a list of sizes, or one size in a campaign staged before the
    list), in the config's order; none where the config has no wide build."""
    wide = (config.get("gpu_benchmark") or {}).get("wide_build")
    if not wide:
        return ()
    sizes = wide["threads_per_clause"]
    return tuple(int(k) for k in (sizes if isinstance(sizes, list | tuple) else [sizes]))


def wide_shared_sizes(config: dict) -> tuple[int, ...]:
    """The sizes of the wide builds that the GPU benchmark also times with the automata in shared memory (config
    ``gpu_benchmark.wide_build.shared_state``, a list of sizes; none where it has none)."""
    wide = (config.get("gpu_benchmark") or {}).get("wide_build") or {}
    return tuple(int(k) for k in wide.get("shared_state") or ())


def wide_builds(config: dict, n_features: int, append_negated: bool) -> dict[str, int]:
    """The GPU benchmark's wide builds (:func:`wide_build_name` -> threads per clause) on a setting of ``n_features``
    features; none where the benchmark does not time them: its clauses have fewer literal words (32 literals each,
    the negations with ``append_negated``) than the config's ``gpu_benchmark.wide_build.min_literal_words``, or the
    config has no wide build. The sizes of ``shared_state`` follow, each with the automata in shared memory."""
    sizes = wide_build_sizes(config)
    if not sizes or literal_words(n_features, append_negated) < int(config["gpu_benchmark"]["wide_build"]
                                                                     ["min_literal_words"]):
        return {}
    shared = {wide_build_name(k, True): k for k in wide_shared_sizes(config)}
    return {**{wide_build_name(k): k for k in sizes}, **shared}


def is_smoke(config: dict) -> bool:
    return config.get("scale", "paper") == "smoke"


def results_root(config: dict) -> str:
    return f"{config['results_dir']}/smoke" if is_smoke(config) else config["results_dir"]


def reduced_protocol(config: dict, name: str, impl: str | None) -> dict | None:
    """``{"seeds", "epochs"}`` of the reduced protocol an implementation runs an experiment's main setting
    under (config ``reduced``), or None: the full protocol. Paper scale only (smoke shrinks everything)."""
    entry = (config.get("reduced") or {}).get(name)
    if impl is None or is_smoke(config) or not entry or impl not in entry["impls"]:
        return None
    full = experiment(config, name)["epochs"]
    if entry["epochs"] >= full:
        raise PlanError(f"config reduced.{name}.epochs is {entry['epochs']}, not fewer than the experiment's "
                        f"{full}; lower it, or drop {impl} from reduced.{name}.impls to run the full protocol")
    return {"seeds": [int(k) for k in entry["seeds"]], "epochs": int(entry["epochs"])}


def main_params(config: dict, name: str, impl: str | None = None) -> str:
    """The params directory of an experiment's main setting at the configured scale (with ``impl``: of that
    implementation, whose epochs a reduced protocol may cut)."""
    exp = experiment(config, name)
    clauses, epochs = exp["clauses"], exp["epochs"]
    if is_smoke(config):
        clauses = _even(exp["task"], min(clauses, config["smoke"]["max_clauses"]))
        epochs = config["smoke"]["epochs"]
    reduced = reduced_protocol(config, name, impl)
    if reduced:
        epochs = reduced["epochs"]
    _check_clauses(exp, clauses)
    return tm_params_name(clauses, exp["T"], exp["s"], epochs)


def run_seeds(config: dict, name: str, impl: str) -> list[int]:
    """The seeds of an implementation's main-setting runs: the config's, or its reduced protocol's."""
    reduced = reduced_protocol(config, name, impl)
    return reduced["seeds"] if reduced else seeds(config)


def protocol_scope(config: dict, name: str, impl: str, params: str) -> dict | None:
    """The ``protocol_scope`` of a TM run's record: what reduced protocol it runs under and what the full
    one is (results/README.md); None for a run of the full protocol (no such field in its record)."""
    reduced = reduced_protocol(config, name, impl)
    if reduced is None or parse_tm_params(params)["epochs"] != reduced["epochs"]:
        return None
    full = {"seeds": seeds(config), "epochs": experiment(config, name)["epochs"]}
    return {"name": "reduced", **reduced, "full": full,
            # The seed count is not in it: a table's n says how many seeds a cell has, and records of a reduced
            # protocol that later ran more seeds describe it alike.
            "description": f"the first {reduced['epochs']} epochs of each seed (full protocol: "
                           f"{len(full['seeds'])} seeds x {full['epochs']} epochs; config reduced.{name})"}


def sweep_points(config: dict, name: str) -> dict:
    """``{"impls", "seeds", "params": [...], "max_clauses": {impl: clauses}}`` of an experiment's clause sweep at
    the configured scale (an implementation runs only the points up to its ``max_clauses``, see
    :func:`sweep_params`)."""
    sweep = config["sweeps"][name]
    exp = experiment(config, name)
    if is_smoke(config):
        clauses = [_even(exp["task"], c) for c in config["smoke"]["sweep_clauses"]]
        epochs, seeds = config["smoke"]["epochs"], config["smoke"]["seeds"]
    else:
        clauses, epochs, seeds = sweep["clauses"], sweep["epochs"], sweep["seeds"]
    for c in clauses:
        _check_clauses(exp, c)
    return {"impls": list(sweep["impls"]), "seeds": list(seeds),
            "params": [tm_params_name(c, exp["T"], exp["s"], epochs) for c in dict.fromkeys(clauses)],
            "max_clauses": dict(sweep.get("max_clauses") or {})}


def within_sweep_limit(max_clauses: dict, impl: str, clauses: int) -> bool:
    """Whether a sweep's ``max_clauses`` lets ``impl`` run its point at ``clauses`` (no limit: every point)."""
    limit = max_clauses.get(impl)
    return limit is None or clauses <= limit


def sweep_params(points: dict, impl: str) -> list[str]:
    """The sweep points (params) an implementation runs: all of them, or those up to its ``max_clauses``."""
    return [p for p in points["params"]
            if within_sweep_limit(points.get("max_clauses", {}), impl, parse_tm_params(p)["clauses"])]


def seeds(config: dict) -> list[int]:
    return list(config["smoke"]["seeds"] if is_smoke(config) else config["seeds"])


WARP_SUFFIX = "_warp"  # an ablation variant's folder with a warp per clause (ablation_variant)


def record_threads_per_clause(record: dict) -> int:
    """Threads per clause a GPU record ran with: its hyperparameters name them only when not 1."""
    return int((record.get("hyperparameters") or {}).get("threads_per_clause", 1))


def tm_run_settings(config: dict, name: str, impl: str, params: str, seed: int) -> dict:
    """Everything the runner needs for one TM run (the record repeats it)."""
    if impl not in TM_IMPLS:
        raise PlanError(f"{impl!r} is not a TM implementation ({', '.join(TM_IMPLS)})")
    exp = experiment(config, name)
    reason = impl_skip_reason(exp["task"], impl)
    if reason:
        raise PlanError(f"{name}/{impl}: {reason}")
    p = parse_tm_params(params)
    _check_clauses(exp, p["clauses"])
    hyper = {"n_clauses": p["clauses"], "T": p["T"], "s": p["s"], "epochs": p["epochs"],
             **{k: exp[k] for k in TM_SETTINGS if k != "epochs"}}
    k = GPU_THREADS_PER_CLAUSE.get(impl, 1)
    if k != 1:  # only a warp's: the settings of every other run stay as they were
        hyper["threads_per_clause"] = k
    return {"kind": "tm", "experiment": name, "impl": impl, "params": params, "seed": int(seed),
            "scale": config.get("scale", "paper"), "task": exp["task"], "dataset": exp["dataset"],
            "protocol": exp["protocol"], "f1": exp["f1"], "hyperparameters": hyper, **_limits(config),
            **_scope(protocol_scope(config, name, impl, params))}


def _scope(scope: dict | None) -> dict:
    # Only runs of a reduced protocol carry the key: the settings (Snakemake params) of full runs stay as they were.
    return {} if scope is None else {"protocol_scope": scope}


def svm_run_settings(config: dict, name: str, params: str, seed: int) -> dict:
    exp = experiment(config, name)
    svm = svm_settings(config, name)
    if params != svm_params_name(svm):
        raise PlanError(f"{name}/svm/{params}: the config's SVM settings give {svm_params_name(svm)!r}")
    return {"kind": "svm", "experiment": name, "impl": "svm", "params": params, "seed": int(seed),
            "scale": config.get("scale", "paper"), "task": exp["task"], "dataset": exp["dataset"],
            "protocol": exp["protocol"], "f1": exp["f1"], "hyperparameters": svm, **_limits(config),
            **({"library": exp["svm_library"]} if exp.get("svm_library") else {})}


def mlp_run_settings(config: dict, name: str, params: str, seed: int) -> dict:
    exp = experiment(config, name)
    if exp["task"] != "novelty":
        raise PlanError(f"{name}: mlp_novelty runs on novelty experiments only (task is {exp['task']})")
    tm_impl, _, tm_params = params.partition(".")
    if tm_impl not in TM_IMPLS:
        raise PlanError(f"{name}/mlp_novelty/{params}: params must read <tm impl>.<tm params>, "
                        f"e.g. tm_cpu.{main_params(config, name)}")
    parse_tm_params(tm_params)
    return {"kind": "mlp_novelty", "experiment": name, "impl": "mlp_novelty", "params": params, "seed": int(seed),
            "scale": config.get("scale", "paper"), "task": exp["task"], "dataset": exp["dataset"],
            "protocol": exp["protocol"], "tm_impl": tm_impl, "tm_params": tm_params,
            "hyperparameters": dict(config["mlp_novelty"]),
            **_scope(protocol_scope(config, name, tm_impl, tm_params))}


def _limits(config: dict) -> dict:
    if is_smoke(config):
        return {"max_train": config["smoke"]["max_train"], "max_test": config["smoke"]["max_test"]}
    return {"max_train": None, "max_test": None}


def gpu_requested(config: dict, host_gpu: bool) -> bool:
    return host_gpu if config.get("gpu", "auto") == "auto" else bool(config["gpu"])


def active_experiments(config: dict) -> list[str]:
    """The experiments whose dataset is among config ``datasets`` (the others cannot run)."""
    return [n for n in config["experiments"] if experiment(config, n)["dataset"] in config["datasets"]]


def requested_runs(config: dict, host_gpu: bool) -> list[dict]:
    """Every run the default target asks for: ``{experiment, impl, params, seed, kind}``, sorted, unique."""
    use_gpu = gpu_requested(config, host_gpu)
    runs = {}

    def add(name, impl, params, seed, kind):
        runs[(name, impl, params, seed)] = {"experiment": name, "impl": impl, "params": params, "seed": seed,
                                            "kind": kind}

    def runnable(name, impls):
        return [i for i in impls if impl_skip_reason(task(config, name), i) is None and (use_gpu or i not in GPU_IMPLS)]

    unknown = sorted(set(config.get("reduced") or {}) - set(config["experiments"]))
    if unknown:
        raise PlanError(f"config reduced names unknown experiments: {', '.join(unknown)}; config/config.yaml "
                        f"defines: {', '.join(sorted(config['experiments']))}")
    active = active_experiments(config)
    for name in active:
        exp = experiment(config, name)
        for impl in runnable(name, config["impls"]):
            main = main_params(config, name, impl)
            for seed in run_seeds(config, name, impl):
                add(name, impl, main, seed, "tm")
                if exp["task"] == "novelty":
                    add(name, "mlp_novelty", f"{impl}.{main}", seed, "mlp_novelty")
        if exp["svm"]:
            for seed in seeds(config):
                add(name, "svm", svm_params(config, name), seed, "svm")
    for name in [n for n in config.get("sweeps", {}) if n in active]:
        pts = sweep_points(config, name)
        for impl in runnable(name, pts["impls"]):
            for params in sweep_params(pts, impl):
                for seed in pts["seeds"]:
                    add(name, impl, params, seed, "tm")
    return [runs[k] for k in sorted(runs)]


def record_path(config: dict, run: dict) -> str:
    return f"{results_root(config)}/{run['experiment']}/{run['impl']}/{run['params']}/seed{run['seed']}.json"


# -- what the tables and figures report (asynctm.artifacts) ---------------------------------------------------

def tm_impls(config: dict, name: str) -> list[str]:
    """The TM implementations the config runs for an experiment, in TM_IMPLS order (regression has no indexed
    machine); unlike requested_runs, whether this host has a GPU does not matter."""
    wanted = set(config.get("impls", TM_IMPLS))
    return [i for i in TM_IMPLS if i in wanted and impl_skip_reason(task(config, name), i) is None]


@dataclass(frozen=True)
class Sweep:
    """A clause sweep of one experiment: a run per (impl, clauses, seed), ``params`` by clauses."""

    experiment: str
    clauses: tuple[int, ...]
    impls: tuple[str, ...]
    seeds: tuple[int, ...]
    epochs: int
    params: tuple[str, ...]
    max_clauses: tuple[tuple[str, int], ...] = ()  # (impl, clauses): that impl runs only the points up to it

    def runs(self, impl: str, clauses: int) -> bool:
        """Whether ``impl`` runs the point at ``clauses`` (config sweeps.<experiment>.max_clauses)."""
        return impl in self.impls and within_sweep_limit(dict(self.max_clauses), impl, clauses)


def sweep(config: dict, name: str) -> Sweep | None:
    """The experiment's clause sweep at the configured scale, ordered by clauses (None: the config has none)."""
    if name not in config.get("sweeps", {}) or name not in config["experiments"]:
        return None
    points = sweep_points(config, name)
    parsed = [parse_tm_params(p) for p in points["params"]]
    order = sorted(range(len(parsed)), key=lambda i: parsed[i]["clauses"])
    return Sweep(name, tuple(parsed[i]["clauses"] for i in order),
                 tuple(i for i in TM_IMPLS if i in points["impls"]), tuple(sorted(points["seeds"])),
                 parsed[0]["epochs"] if parsed else 0, tuple(points["params"][i] for i in order),
                 tuple(sorted(points["max_clauses"].items())))


def gap_reason(config: dict, name: str, impl: str, host_gpu: bool, requested=None) -> str:
    """Why an implementation has no (usable) record for an experiment; ``requested``: the impls the
    artifact's runs ask for (default: tm_impls)."""
    experiments = config.get("experiments", {})
    if impl == "pytm_indexed" and name in experiments and task(config, name) == "regression":
        return REASON_NO_INDEX
    if impl in GPU_IMPLS:
        if not host_gpu:
            return REASON_NO_GPU
        if config.get("gpu") is False:
            return REASON_GPU_OFF
    if name not in experiments:
        return REASON_NOT_REQUESTED
    if "datasets" in config and experiments[name]["dataset"] not in config["datasets"]:
        return REASON_NO_DATA
    if impl == "svm":
        return REASON_NO_RECORD if experiment(config, name)["svm"] else REASON_NOT_REQUESTED
    if requested is None:
        requested = tm_impls(config, name)
    if impl in TM_IMPLS and impl not in requested:
        return REASON_NOT_REQUESTED
    return REASON_NO_RECORD


# -- the tally ablation (config ``ablation``; kernels/README.md, "Tallies") ------------------------------------

ABLATION_DIR = "ablation"


def ablation_variant(tally: str, rule: str, order: str = "dataset", threads: int = 1) -> str:
    """The folder of one variant: ``<tally>_<regression_rule>``, with ``_staggered`` for that example order and
    ``_warp`` for the GPU build with a warp per clause (any other count but one: ``_<k>threads``, which no
    configuration asks for)."""
    return (f"{tally}_{rule}" + ("" if order == "dataset" else f"_{order}")
            + ("" if threads == 1 else WARP_SUFFIX if threads == WARP else f"_{threads}threads"))


def ablation_variants(config: dict, name: str) -> list[str]:
    """The variants an ablation experiment runs (:func:`ablation_variant`): in each configured example order,
    each tally with the linear rule, and for regression experiments each tally with each configured rule; with
    impl tm_gpu, each of these at each of the ablation's ``gpu_threads_per_clause`` (default one)."""
    abl = config["ablation"]
    rules = abl["regression_rules"] if experiment(config, name)["task"] == "regression" else ["linear"]
    threads = abl.get("gpu_threads_per_clause", [1]) if abl["impl"] == "tm_gpu" else [1]
    return [ablation_variant(tally, rule, order, int(k)) for k in threads for order in abl.get("orders", ["dataset"])
            for tally in abl["tallies"] for rule in rules]


def parse_ablation_variant(variant: str) -> dict:
    """The estimator switches of a variant: ``tally`` and ``regression_rule``, ``order`` where it is not the
    dataset order (so that the settings of the dataset-order runs read as they did before the order existed), and
    ``threads_per_clause`` where it is a warp's."""
    warp = variant.count("_") > 1 and variant.endswith(WARP_SUFFIX)
    parts = variant.removesuffix(WARP_SUFFIX).split("_") if warp else variant.split("_")
    tally, rule, order = (parts + ["dataset"])[:3] if len(parts) in (2, 3) else ("", "", "")
    if (tally not in TALLIES or rule not in UPDATE_RULES or order not in ORDERS
            or ablation_variant(tally, rule, order, WARP if warp else 1) != variant):
        raise PlanError(f"ablation variant {variant!r} does not read "
                        "<async|sync>_<linear|quadratic>[_staggered][_warp]")
    return {"tally": tally, "regression_rule": rule, **({"order": order} if order != "dataset" else {}),
            **({"threads_per_clause": WARP} if warp else {})}


def ablation_runs(config: dict) -> list[dict]:
    """Every run of the ablation: ``{experiment, impl, params, variant, seed}``, the main settings (at the
    configured scale) of its experiments and the points of its clause sweep, sorted, unique."""
    abl = config["ablation"]
    impl = abl["impl"]
    named = [*abl["experiments"], *([abl["sweep"]["experiment"]] if abl.get("sweep") else [])]
    unknown = sorted(set(named) - set(config["experiments"]))
    if unknown:
        raise PlanError(f"config ablation names unknown experiments: {', '.join(unknown)}; config/config.yaml "
                        f"defines: {', '.join(sorted(config['experiments']))}")
    runs = {}

    def add(name, params, seeds):
        for variant in ablation_variants(config, name):
            for seed in seeds:
                runs[(name, params, variant, int(seed))] = {"experiment": name, "impl": impl, "params": params,
                                                             "variant": variant, "seed": int(seed)}

    smoke = is_smoke(config)
    for name in abl["experiments"]:
        add(name, main_params(config, name), config["smoke"]["seeds"] if smoke else abl["seeds"])
    sweep = abl.get("sweep")
    if sweep:
        name = sweep["experiment"]
        exp = experiment(config, name)
        clauses = [_even(exp["task"], c) for c in config["smoke"]["sweep_clauses"]] if smoke else sweep["clauses"]
        epochs = config["smoke"]["epochs"] if smoke else exp["epochs"]
        for c in dict.fromkeys(clauses):
            _check_clauses(exp, c)
            add(name, tm_params_name(c, exp["T"], exp["s"], epochs), config["smoke"]["seeds"] if smoke else
                sweep["seeds"])
    return [runs[k] for k in sorted(runs)]


def ablation_record_path(config: dict, run: dict) -> str:
    return (f"{results_root(config)}/{ABLATION_DIR}/{run['experiment']}/{run['impl']}/{run['params']}/"
            f"{run['variant']}/seed{run['seed']}.json")


def ablation_run_settings(config: dict, name: str, impl: str, params: str, variant: str, seed: int) -> dict:
    """The runner's settings of one ablation run: a TM run whose hyperparameters add ``tally`` and
    ``regression_rule``, ``order`` where it is staggered and ``threads_per_clause`` where it is a warp's (the
    variant alone sets a GPU run's threads per clause; the record repeats them)."""
    if impl not in ("tm_cpu", "tm_gpu"):  # tm_gpu's variants name a warp per clause themselves (_warp)
        raise PlanError(f"the ablation runs our TM only (tm_cpu or tm_gpu), not {impl!r}")
    switches = parse_ablation_variant(variant)
    if experiment(config, name)["task"] != "regression" and switches["regression_rule"] != "linear":
        raise PlanError(f"{name}: the regression rule applies to regression experiments only ({variant!r})")
    if "threads_per_clause" in switches and impl != "tm_gpu":
        raise PlanError(f"{name}: a warp per clause is the GPU build's schedule; {impl} has none ({variant!r})")
    settings = tm_run_settings(config, name, impl, params, seed)
    settings["hyperparameters"].pop("threads_per_clause", None)  # the variant says
    settings["hyperparameters"].update(switches)
    return settings
