"""The pipeline's configuration, checked up front: command-line values typed, then the schema, then meaning.

Snakemake's ``--config KEY=VALUE`` parser hands list items and mapping values over as strings
(``'seeds=[0,1]'`` gives ``['0', '1']``, ``'tm={epochs: 5}'`` gives ``{'epochs': '5'}``).
:func:`coerce` reads such strings as YAML wherever ``config/schema.yaml`` expects a number, a boolean or
null there, so every override the documentation shows validates.

:func:`semantic_errors` then refuses what the schema cannot express, before anything is fetched or
trained: an experiment whose task does not fit its dataset, a ``T`` beyond what the kernels' 32-bit
arithmetic holds, a protocol its dataset does not have, a sweep of an experiment that does not exist.
Each problem is one line naming the key and the allowed values.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

# The kernels compute |target - v| and 2T in 32-bit signed integers (kernels/tm.cu, the update draw):
# T up to 2^30 - 1 keeps both in range. The estimators enforce the same bound.
T_MAX = 2**30 - 1
INT32_MAX = 2**31 - 1  # clause counts are 32-bit ints in the kernels


class ConfigError(ValueError):
    """The configuration asks for something impossible; the message has one line per problem."""


# --- typing command-line values ---------------------------------------------------------------------------


def _types(schema: dict) -> set:
    t = schema.get("type")
    if t is None:
        return set()
    return {t} if isinstance(t, str) else set(t)


def _accepts_string(schema: dict, value: str) -> bool:
    if "enum" in schema:
        return value in schema["enum"]
    types = _types(schema)
    return not types or "string" in types


def _typed(schema: dict, value):
    """``value`` (a string from the command line) as the YAML scalar it spells, when the schema wants that."""
    types = _types(schema)
    if "null" in types and value in ("null", "~"):
        return None
    if _accepts_string(schema, value):
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    if "enum" in schema:
        return parsed if parsed in schema["enum"] and not isinstance(parsed, str) else value
    wanted = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    if any(wanted[t](parsed) for t in types if t in wanted):
        return parsed
    return value


def _sub_schema(schema: dict, key) -> dict | None:
    props = schema.get("properties", {})
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def coerce(value, schema: dict | None):
    """``value`` with every string that the schema wants as a number, boolean or null read as YAML."""
    if schema is None:
        return value
    if isinstance(value, dict):
        return {k: coerce(v, _sub_schema(schema, k)) for k, v in value.items()}
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return [coerce(v, items) for v in value]
    if isinstance(value, str):
        return _typed(schema, value)
    return value


def load_schema(path: str | os.PathLike = "config/schema.yaml") -> dict:
    return yaml.safe_load(Path(path).read_text())


def coerce_config(config: dict, schema_path: str | os.PathLike = "config/schema.yaml") -> None:
    """Type the command-line strings of ``config`` in place (Snakemake's ``config`` object)."""
    typed = coerce(dict(config), load_schema(schema_path))
    config.clear()
    config.update(typed)


def schema_errors(config: dict, schema: dict) -> list[str]:
    """One line per place where ``config`` breaks the JSON Schema (the key path, then what is wrong)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    lines = []
    for err in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        lines.append(f"config {where}: {err.message}")
    return lines


# --- meaning ------------------------------------------------------------------------------------------------


def semantic_errors(config: dict) -> list[str]:
    """Problems the schema cannot see, one line each, naming the key and the allowed values."""
    from .datasets import DATASETS

    errors = []
    modules = {}

    def module(name):
        if name not in modules:
            modules[name] = DATASETS[name] if name in DATASETS else None
        return modules[name]

    for name, protocols in sorted((config.get("protocols") or {}).items()):
        mod = module(name)
        for p in protocols or ():
            if mod is not None and p not in mod.PROTOCOLS:
                errors.append(f"config protocols.{name}: dataset {name} has no protocol {p!r}; "
                              f"allowed: {', '.join(mod.PROTOCOLS)}")
    experiments = config.get("experiments") or {}
    for name, exp in experiments.items():
        if not isinstance(exp, dict):
            continue
        mod = module(exp.get("dataset"))
        if mod is not None:
            task = exp.get("task")
            if task is not None and task != mod.TASK:
                errors.append(f"config experiments.{name}.task: {task!r} does not fit dataset {mod.NAME} "
                              f"(a {mod.TASK} dataset); allowed: {mod.TASK}")
            protocol = exp.get("protocol")
            if protocol is not None and protocol not in mod.PROTOCOLS:
                errors.append(f"config experiments.{name}.protocol: dataset {mod.NAME} has no protocol "
                              f"{protocol!r}; allowed: {', '.join(mod.PROTOCOLS)}")
        T = exp.get("T")
        if isinstance(T, int) and not isinstance(T, bool) and not 1 <= T <= T_MAX:
            errors.append(f"config experiments.{name}.T: {T} is out of range; allowed: 1 to {T_MAX} "
                          "(2^30 - 1: the kernels compute 2T in 32-bit integers)")
        clauses = exp.get("clauses")
        if isinstance(clauses, int) and clauses > INT32_MAX:
            errors.append(f"config experiments.{name}.clauses: {clauses} is out of range; allowed: 1 to {INT32_MAX}")
    # Sweeps and reduced protocols name experiments: a typo would silently run nothing.
    for key in ("sweeps", "reduced"):
        for name in sorted(config.get(key) or {}):
            if name not in experiments:
                errors.append(f"config {key}.{name}: there is no experiment {name!r}; allowed: "
                              f"{', '.join(sorted(experiments))}")
            elif key == "sweeps":
                points = (config[key][name] or {}).get("clauses") or ()
                big = [c for c in points if isinstance(c, int) and c > INT32_MAX]
                if big:
                    errors.append(f"config sweeps.{name}.clauses: {big[0]} is out of range; allowed: 1 to {INT32_MAX}")
    return errors


def check_config(config: dict, schema: dict | None = None) -> None:
    """Raise :class:`ConfigError` listing every problem (schema first, when given, then meaning)."""
    errors = schema_errors(config, schema) if schema is not None else []
    if not errors:
        errors = semantic_errors(config)
    if errors:
        raise ConfigError("\n".join(errors))


def load_config(path: str | os.PathLike = "config/config.yaml",
                schema_path: str | os.PathLike | None = None) -> dict:
    """Read a config file and check it as the Snakefile does (schema next to it unless given)."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ConfigError(f"config {path}: cannot read it ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config {path}: not valid YAML ({' '.join(str(e).split())})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"config {path}: expected a mapping of settings, got {type(config).__name__}")
    schema_path = Path(schema_path) if schema_path is not None else path.parent / "schema.yaml"
    schema = load_schema(schema_path) if schema_path.is_file() else None
    check_config(config, schema)
    return config
