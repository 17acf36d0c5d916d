"""The gate every run record passes before it counts, and reading records through it.

:func:`check_record` refuses a record (:class:`~asynctm.store.layout.RecordError`, one line: the file, the field and
the fix) that fails its JSON Schema (workflow/schemas/record.schema.yaml, versioned; results/SCHEMA.md is generated
from it) or what a schema cannot say: a canonical seed file name (``seed0.json``, never ``seed00.json``, so one record
per seed), the record agreeing with its path (experiment, impl, params, seed; the ablation's variant) and with the
configuration (task, dataset, protocol, scale, kind, the hyperparameters the path does not name, a reduced protocol
where the config declares one), every value finite and in its domain, its times consistent with each other.
:func:`read_record` and :func:`read_records` read record files through it (a record that passed once is not checked
again while its file is unchanged); :func:`problems` and :func:`gate` give the verdict on every record below a
results root.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import yaml

from ..experiments.plan import (
    GPU_THREADS_PER_CLAUSE,
    TM_SETTINGS,
    PlanError,
    ablation_variant,
    experiment,
    parse_tm_params,
    svm_params_name,
)
from .layout import FIX_RERUN, KIND_OF_IMPL, RecordError, layout, main_files, record_files, refuse, root_of

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "record.schema.yaml"
# A run's train_s_total is the sum of its epochs' train_s and train_s_mean that over the epochs: the writer computes
# both from the same floats, so they agree to rounding; more than this relative difference is an edited record.
TIME_SUM_RTOL = 1e-6

_fail = refuse


@lru_cache(maxsize=1)
def schema() -> dict:
    """The record's JSON Schema (workflow/schemas/record.schema.yaml)."""
    try:
        return yaml.safe_load(SCHEMA_FILE.read_text())
    except OSError as exc:
        raise RecordError(f"{SCHEMA_FILE}: the record schema cannot be read ({exc.strerror}); fix: restore it from "
                          "git (git checkout -- workflow/schemas/record.schema.yaml)") from None


@lru_cache(maxsize=1)
def _validator():
    """The full validator, which words the first error of a record that fails."""
    import jsonschema

    return jsonschema.Draft7Validator(schema())


@lru_cache(maxsize=1)
def _fast_check():
    """A compiled validator (fastjsonschema) that only says whether a record passes: the gate reads every record
    at each start of the workflow, and the full one takes seconds on hundreds of records with their epochs."""
    import fastjsonschema

    return fastjsonschema.compile(schema())


def _dotted(error) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path]
    return ".".join(parts).replace(".[", "[") or "(the record)"


def _nonfinite(node, where: str):
    """The first NaN or infinity in a JSON tree (its dotted place), or None."""
    if isinstance(node, float) and not math.isfinite(node):
        return where
    if isinstance(node, dict):
        for key, value in node.items():
            found = _nonfinite(value, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(node, list):
        for i, value in enumerate(node):
            found = _nonfinite(value, f"{where}[{i}]")
            if found:
                return found
    return None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_schema(record: dict, path) -> None:
    if not isinstance(record, dict):
        _fail(path, "(the record)", "not a JSON object")
    version = record.get("schema")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        _fail(path, "schema", f"version {version} is newer than this checkout reads ({SCHEMA_VERSION})",
              "update the checkout (git pull) or move the record out of results/")
    found = _nonfinite(record, "")
    if found:
        _fail(path, found, "not a finite number (NaN or infinity)")
    import fastjsonschema

    try:
        _fast_check()(record)
    except fastjsonschema.JsonSchemaException:
        error = min(_validator().iter_errors(record), key=lambda e: list(map(str, e.absolute_path)), default=None)
        if error is not None:
            _fail(path, _dotted(error), error.message.replace("\n", " "))
    implementation = record.get("implementation")
    if implementation and not isinstance(implementation, dict):
        _fail(path, "implementation", f"{implementation!r} is not an object")


def _check_path(record: dict, path, where: dict) -> None:
    for key in ("experiment", "impl", "params", "seed"):
        if record[key] != where[key]:
            _fail(path, key, f"the record says {record[key]!r} but its path says {where[key]!r}",
                  "move it to the folder its content names, or run its rule again")
    kind = KIND_OF_IMPL.get(record["impl"])
    if kind is None:
        _fail(path, "impl", f"{record['impl']!r} is not an implementation of this pipeline "
              f"({', '.join(KIND_OF_IMPL)})", "move it out of results/")
    if record["kind"] != kind:
        _fail(path, "kind", f"{record['kind']!r} but impl {record['impl']} makes {kind!r} records")


def _check_tm(record: dict, path, where: dict) -> None:
    hyper = record["hyperparameters"]
    try:
        named = parse_tm_params(record["params"])
    except PlanError:
        _fail(path, "params", f"{record['params']!r} does not read n<clauses>_T<T>_s<s>_e<epochs>", "move it")
    for key, value in (("n_clauses", named["clauses"]), ("T", named["T"]), ("s", named["s"]),
                       ("epochs", named["epochs"])):
        if not isinstance(hyper.get(key), (int, float)) or float(hyper[key]) != float(value):
            _fail(path, f"hyperparameters.{key}", f"{hyper.get(key)!r} but its folder {record['params']} says {value}",
                  "move it to the folder of its setting, or run its rule again")
    epochs = record.get("epochs")
    if not isinstance(epochs, list) or not epochs:
        _fail(path, "epochs", "a TM record holds one entry per epoch")
    if len(epochs) != named["epochs"]:
        _fail(path, "epochs", f"{len(epochs)} entries but its setting trains {named['epochs']} epochs")
    for i, epoch in enumerate(epochs):
        if epoch.get("epoch") != i + 1:
            _fail(path, f"epochs[{i}].epoch", f"{epoch.get('epoch')!r}, not {i + 1} (epochs count from 1)")
        for key, value in epoch.items():  # a metric is a number (null: not measured); objects are diagnostics
            if not (value is None or _number(value) or isinstance(value, dict)):
                _fail(path, f"epochs[{i}].{key}", f"{value!r} is not a number")
    timing = record["timing"]
    for key in ("train_s_mean", "train_s_total"):
        if key not in timing:
            _fail(path, f"timing.{key}", "missing")
    total = math.fsum(e["train_s"] for e in epochs)
    if not math.isclose(timing["train_s_total"], total, rel_tol=TIME_SUM_RTOL, abs_tol=1e-9):
        _fail(path, "timing.train_s_total", f"{timing['train_s_total']!r} but its epochs' train_s add up to {total!r}")
    if not math.isclose(timing["train_s_mean"], total / len(epochs), rel_tol=TIME_SUM_RTOL, abs_tol=1e-9):
        _fail(path, "timing.train_s_mean",
              f"{timing['train_s_mean']!r} but its epochs' mean is {total / len(epochs)!r}")
    metric = "mae" if record["task"] == "regression" else "accuracy"
    if metric not in record["final"]:
        _fail(path, f"final.{metric}", "missing")
    if record["task"] != "regression" and "f1" not in record["final"]:
        _fail(path, "final.f1", "missing")
    threads = int(hyper.get("threads_per_clause", 1))
    if where["variant"] is not None:
        if record["impl"] not in GPU_THREADS_PER_CLAUSE and threads != 1:
            _fail(path, "hyperparameters.threads_per_clause",
                  f"{threads}, but {record['impl']} runs one thread per clause (a warp per clause is the GPU build's)",
                  "move it to the folder of the implementation that ran it")
        expected = ablation_variant(str(hyper.get("tally")), str(hyper.get("regression_rule")),
                                    str(hyper.get("order", "dataset")), threads)
        if expected != where["variant"]:
            _fail(path, "hyperparameters", f"tally, rule, order and threads per clause make variant {expected!r}, "
                  f"its folder is {where['variant']!r}", "move it to its variant's folder, or run its rule again")
    elif record["impl"] in GPU_THREADS_PER_CLAUSE and threads != GPU_THREADS_PER_CLAUSE[record["impl"]]:
        _fail(path, "hyperparameters.threads_per_clause",
              f"{threads}, but {record['impl']} runs {GPU_THREADS_PER_CLAUSE[record['impl']]} per clause",
              "move it to the folder of the implementation that ran it")


def _check_other_kinds(record: dict, path) -> None:
    timing = record["timing"]
    if "fit_s" not in timing:
        _fail(path, "timing.fit_s", "missing")
    final = record["final"]
    need = ["mae"] if record["task"] == "regression" else ["accuracy", "f1"]
    for key in need:
        if key not in final:
            _fail(path, f"final.{key}", "missing")
    if record["kind"] == "svm":
        hyper = record["hyperparameters"]
        try:
            name = svm_params_name(hyper)
        except (KeyError, TypeError, ValueError):
            _fail(path, "hyperparameters", "an SVM record names its kernel and C")
        if name != record["params"]:
            _fail(path, "hyperparameters", f"kernel and C make {name!r}, its folder is {record['params']!r}",
                  "move it to the folder of its setting")
    else:
        tm_impl, _, tm_params = record["params"].partition(".")
        try:
            parse_tm_params(tm_params)
        except PlanError:
            tm_impl = None
        if KIND_OF_IMPL.get(tm_impl) != "tm":
            _fail(path, "params", f"{record['params']!r} does not read <tm impl>.<tm params>", "move it")


def _check_config(record: dict, path, where: dict, config: dict) -> None:
    name = record["experiment"]
    if name not in config["experiments"]:
        _fail(path, "experiment", f"{name!r} is not an experiment of the configuration "
              f"({', '.join(sorted(config['experiments']))})", "move it out of results/, or configure the experiment")
    exp = experiment(config, name)
    scale = config.get("scale", "paper")
    checks = [("scale", record["scale"], scale), ("task", record["task"], exp["task"]),
              ("dataset.name", record["dataset"]["name"], exp["dataset"]),
              ("dataset.protocol", record["dataset"]["protocol"], exp["protocol"])]
    for field, ours, configured in checks:
        if ours != configured:
            _fail(path, field, f"{ours!r} but the configuration runs {configured!r} here",
                  "move it out of this results folder (it belongs to another setting), or run its rule again")
    if record["kind"] == "tm":
        hyper = record["hyperparameters"]
        for key in TM_SETTINGS:
            if key != "epochs" and key in hyper and hyper[key] != exp[key]:
                _fail(path, f"hyperparameters.{key}", f"{hyper[key]!r} but the configuration says {exp[key]!r}",
                      "move it out of results/ (it ran another setting), or run its rule again")
        scope = record.get("protocol_scope")
        if isinstance(scope, dict) and scope.get("epochs") not in (None, len(record["epochs"])):
            _fail(path, "protocol_scope.epochs", f"{scope.get('epochs')!r} but the record has "
                  f"{len(record['epochs'])} epochs")


def check_record(record: dict, rel, config: dict | None = None, path=None) -> None:
    """Refuse (RecordError, one line) a record that may not count. ``rel``: its path below the results root,
    which it must agree with; ``config``: the pipeline's configuration it must agree with (None: the record and
    its path alone, e.g. for a tarball from a GPU host); ``path``: the file named in the message (default
    ``rel``)."""
    path = rel if path is None else path
    where = layout(rel, path)
    _check_schema(record, path)
    _check_path(record, path, where)
    if record["kind"] == "tm":
        _check_tm(record, path, where)
    else:
        if where["variant"] is not None:
            _fail(path, "kind", "the ablation holds TM records only", "move it out of results/ablation/")
        _check_other_kinds(record, path)
    if config is not None:
        _check_config(record, path, where, config)


# -- reading -----------------------------------------------------------------------------------------------------

def read_record(path, root=None, config: dict | None = None) -> dict:
    """The record at ``path``, checked by :func:`check_record` against its place below the results root ``root``
    (None: the root its path names, four folders up, six in the ablation) and ``config`` (None: none)."""
    path = Path(path)
    root = root_of(path) if root is None else root
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = path.resolve().relative_to(Path(root).resolve())
    return _read(path, rel, _config_key(config), config)


def read_records(root, experiments=None, files=None, config: dict | None = None):
    """``(path, record)`` of every record outside the ablation below ``root`` (:func:`~.layout.main_files`: only
    ``experiments``, only ``files``), sorted by path, each through the gate: a refused one raises its RecordError."""
    for path in main_files(root, experiments, files):
        yield path, read_record(path, root, config)


_CACHE: dict = {}


def _config_key(config):
    return None if config is None else json.dumps(config, sort_keys=True, default=str)


def _read(path: Path, rel: Path, key, config) -> dict:
    try:
        stat = path.stat()
        text = path.read_bytes()
    except OSError as exc:
        raise RecordError(f"{path}: (the file): unreadable ({exc.strerror}); fix: {FIX_RERUN}") from None
    cache_key = (str(path), stat.st_size, stat.st_mtime_ns, key)
    if cache_key in _CACHE:
        return json.loads(text)
    try:
        record = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        what = "truncated" if isinstance(exc, json.JSONDecodeError) and exc.pos >= len(text.rstrip()) else "not JSON"
        raise RecordError(f"{path}: (the file): {what} ({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
                          f"fix: {FIX_RERUN}") from None
    check_record(record, rel, config, path=path)
    _CACHE[cache_key] = True
    return record


def problems(root, config: dict | None = None, files=None, most: int | None = None) -> list[str]:
    """The gate's one-line refusal of each record (``files``, default every record file of the configured
    experiments and the ablation below ``root``) that may not count; empty when all pass."""
    root = Path(root)
    if files is None:
        files = record_files(root, list(config["experiments"]) if config is not None else None)
    out = []
    key = _config_key(config)
    for path in map(Path, files):
        try:
            _read(path, path.relative_to(root), key, config)
        except RecordError as exc:
            out.append(str(exc))
            if most is not None and len(out) >= most:
                break
    return out


def gate(root, config: dict | None = None, files=None) -> None:
    """Raise RecordError naming every refused record (one line each, the first few) below ``root``."""
    found = problems(root, config, files)
    if found:
        shown = found[:5]
        more = f"\n(and {len(found) - len(shown)} more refused records)" if len(found) > len(shown) else ""
        raise RecordError("\n".join(shown) + more)
