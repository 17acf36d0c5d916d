"""The pipeline's configuration, checked up front: command-line values typed, then the schema, then meaning.

Snakemake's ``--config KEY=VALUE`` parser hands list items and mapping values over as strings
(``'seeds=[0,1]'`` gives ``['0', '1']``, ``'tm={epochs: 5}'`` gives ``{'epochs': '5'}``).
:func:`coerce` reads such strings as YAML wherever ``workflow/schemas/config.schema.yaml`` expects a number, a
boolean or null there, so every override the documentation shows validates.

:func:`semantic_errors` then refuses what the schema cannot express, before anything is fetched or
trained: an experiment whose task does not fit its dataset, a ``T`` beyond what the kernels' 32-bit
arithmetic holds, a protocol its dataset does not have, a sweep of an experiment that does not exist.
Each problem is one line naming the key and the allowed values.

Every line also says where the setting came from (:class:`Source`: ``--config``, or a config file and its
line), and an unknown key names the closest valid one, so a misspelt key is fixed without reading the schema.
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import date, datetime
from pathlib import Path

import yaml

# The kernels' 32-bit bounds (T, clause counts), defined on the library side so that the estimators enforce the
# same ones without importing the pipeline.
from .limits import INT32_MAX, T_MAX


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
    if isinstance(value, (date, datetime)) and "string" in _types(schema):  # an unquoted YAML timestamp
        return value.isoformat()
    return value


# The configuration's JSON Schema, with the workflow (snakemake-workflows' place for it).
SCHEMA_PATH = "workflow/schemas/config.schema.yaml"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / SCHEMA_PATH


def load_schema(path: str | os.PathLike = SCHEMA_PATH) -> dict:
    return yaml.safe_load(Path(path).read_text())


def coerce_config(config: dict, schema_path: str | os.PathLike = SCHEMA_PATH) -> None:
    """Type the command-line strings of ``config`` in place (Snakemake's ``config`` object)."""
    typed = coerce(dict(config), load_schema(schema_path))
    config.clear()
    config.update(typed)


def _dotted(keys) -> str:
    return ".".join(str(k) for k in keys) or "(top level)"


def _short(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut to ``limit`` characters (a message that quotes a long value stays readable)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# Keys an earlier version of the configuration had, and what takes their place.
REMOVED_KEYS = {
    ("gpu_threads_per_clause",): "the GPU builds are implementations now: tm_gpu runs the paper's design (one "
                                 "thread per clause), tm_gpu_warp ours (a warp per clause); name them in impls",
}


def _unknown_key(keys: list, key, allowed: list[str]) -> str:
    removed = REMOVED_KEYS.get((*map(str, keys), str(key)))
    if removed:
        return f"config {_dotted([*keys, key])}: no longer a setting; {removed}"
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    fix = (f"did you mean {_dotted([*keys, close[0]])}?" if close
           else f"the keys here are: {', '.join(allowed)}" if allowed else "nothing may be set here")
    return f"config {_dotted([*keys, key])}: unknown key; {fix}"


def schema_errors(config: dict, schema: dict, sources: list[Source] = ()) -> list[str]:
    """One line per place where ``config`` breaks the JSON Schema: the key path, what is wrong, the fix where
    the schema names one (the closest valid key or value), and where the setting came from (``sources``,
    highest precedence first; see :func:`config_sources`). Never the schema itself."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    lines = []
    for err in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]):
        keys = list(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = sorted(err.schema.get("properties") or {})
            patterns = list(err.schema.get("patternProperties") or {})
            for key in sorted((k for k in err.instance if k not in allowed
                               and not any(re.search(p, str(k)) for p in patterns)), key=str):
                lines.append(_unknown_key(keys, key, allowed) + where(sources, [*keys, key]))
            continue
        fix = f"; use {DEADLINE_FORMS}" if keys == ["deadline"] else ""
        if err.validator == "enum" and isinstance(err.instance, str):
            close = difflib.get_close_matches(err.instance, [v for v in err.validator_value if isinstance(v, str)],
                                              n=1, cutoff=0.6)
            fix = f"; did you mean {close[0]!r}?" if close else ""
        # A key that propertyNames refuses is the instance: its own line is where it is set.
        at = [*keys, err.instance] if "propertyNames" in err.schema_path and isinstance(err.instance, str) else keys
        lines.append(f"config {_dotted(keys)}: {_short(err.message)}{fix}{where(sources, at)}")
    return lines


# --- where a setting came from ------------------------------------------------------------------------------


def shown_path(path: str | os.PathLike) -> str:
    """``path`` relative to the working directory when it lies below it (as a person would type it)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def read_config_file(path: str | os.PathLike) -> dict:
    """A config file's settings; :class:`ConfigError` (one line: the file, the line, the fix) when the file is
    missing, is not valid YAML (JSON is YAML too) or does not hold a mapping of settings."""
    return _read(path)[0]


def _read(path) -> tuple[dict, str]:
    shown = shown_path(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"config file {shown}: cannot read it ({e.strerror or e}); check the path") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {shown}: not UTF-8 text ({e.reason}); save it as UTF-8") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        context = ""
        if e.context and e.context_mark is not None and (mark is None or e.context_mark.line != mark.line):
            context = f" ({e.context} that starts at line {e.context_mark.line + 1})"
        raise ConfigError(f"config file {shown}{at}: not valid YAML: {_short(e.problem or e)}{context}; fix that "
                          "line (or the indentation, bracket or quote just before it)") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {shown}: not valid YAML ({_short(e)}); fix the file") from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"config file {shown}: expected a mapping of settings (key: value lines), got {got}; "
                          "see config/config.yaml for the layout")
    return data, text


class Source:
    """One layer of the configuration: a config file (``path``, with its text for line numbers) or the command
    line's ``--config`` (``path`` None). Snakemake lays them over each other: the workflow's configfile, then
    each ``--configfile`` in order, then ``--config``."""

    def __init__(self, data: dict, path: str | os.PathLike | None = None, text: str | None = None):
        self.data = data if isinstance(data, dict) else {}
        self.path = Path(path) if path is not None else None
        self.text = text
        self._root = None

    def has(self, keys) -> bool:
        node = self.data
        for key in keys:
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                node = node[key]
            else:
                return False
        return True

    def line(self, keys) -> int | None:
        """The 1-based line where ``keys`` is set in the file (the key, or the list item), if it can be found."""
        if self.text is None:
            return None
        if self._root is None:
            try:
                self._root = yaml.compose(self.text, Loader=yaml.SafeLoader) or False
            except yaml.YAMLError:
                self._root = False
        node, line = self._root, None
        for key in keys:
            if isinstance(node, yaml.MappingNode):
                found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and _same_key(k, key)]
                if not found:
                    return line
                node, line = found[-1][1], found[-1][0].start_mark.line + 1
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def where(self, keys) -> str:
        if self.path is None:
            return "from --config"
        line = self.line(keys)
        return f"{shown_path(self.path)}, line {line}" if line else shown_path(self.path)


def _same_key(node: yaml.ScalarNode, key) -> bool:
    if node.value == str(key):
        return True
    try:
        return yaml.safe_load(node.value) == key
    except yaml.YAMLError:
        return False


def config_sources(files=(), overrides: dict | None = None, default: str | os.PathLike | None = None) -> list[Source]:
    """The layers of a Snakemake configuration, highest precedence first: ``overrides`` (``--config``), the
    ``files`` (``--configfile``, later ones win) and the workflow's ``default`` configfile. A file that cannot
    be read is left out (Snakemake has read it already)."""
    sources = [Source(dict(overrides))] if overrides else []
    for path in [*reversed(list(files)), *([default] if default is not None else [])]:
        try:
            data, text = _read(path)
        except ConfigError:
            continue
        sources.append(Source(data, path, text))
    return sources


def where(sources: list[Source], keys) -> str:
    """`` (from --config)`` or `` (FILE, line N)``: the source that sets ``keys`` (or the nearest key above)."""
    keys = list(keys)
    for n in range(len(keys), 0, -1):
        for source in sources:
            if source.has(keys[:n]):
                return f" ({source.where(keys[:n])})"
    return ""


# --- meaning ------------------------------------------------------------------------------------------------


def semantic_errors(config: dict, sources: list[Source] = ()) -> list[str]:
    """Problems the schema cannot see, one line each, naming the key and the allowed values (and, given the
    ``sources``, where the key was set)."""
    return [f"{line}{where(sources, keys)}" for keys, line in _semantic_problems(config)]


def _semantic_problems(config: dict) -> list[tuple[tuple, str]]:
    """``(key path, line)`` of each problem the schema cannot see."""
    from .datasets import DATASETS

    errors = []
    modules = {}

    def module(name):
        if name not in modules:
            modules[name] = DATASETS[name] if name in DATASETS else None
        return modules[name]

    def problem(keys, message):
        errors.append((keys, f"config {_dotted(keys)}: {message}"))

    for name, protocols in sorted((config.get("protocols") or {}).items()):
        mod = module(name)
        for p in protocols or ():
            if mod is not None and p not in mod.PROTOCOLS:
                problem(("protocols", name),
                        f"dataset {name} has no protocol {p!r}; allowed: {', '.join(mod.PROTOCOLS)}")
    experiments = config.get("experiments") or {}
    for name, exp in experiments.items():
        if not isinstance(exp, dict):
            continue
        mod = module(exp.get("dataset"))
        if mod is not None:
            task = exp.get("task")
            if task is not None and task != mod.TASK:
                problem(("experiments", name, "task"), f"{task!r} does not fit dataset {mod.NAME} "
                        f"(a {mod.TASK} dataset); allowed: {mod.TASK}")
            protocol = exp.get("protocol")
            if protocol is not None and protocol not in mod.PROTOCOLS:
                problem(("experiments", name, "protocol"), f"dataset {mod.NAME} has no protocol {protocol!r}; "
                        f"allowed: {', '.join(mod.PROTOCOLS)}")
        T = exp.get("T")
        if isinstance(T, int) and not isinstance(T, bool) and not 1 <= T <= T_MAX:
            problem(("experiments", name, "T"), f"{T} is out of range; allowed: 1 to {T_MAX} "
                    "(2^30 - 1: the kernels compute 2T in 32-bit integers)")
        clauses = exp.get("clauses")
        if isinstance(clauses, int) and clauses > INT32_MAX:
            problem(("experiments", name, "clauses"), f"{clauses} is out of range; allowed: 1 to {INT32_MAX}")
    late = deadline_problem(config.get("deadline"))
    if late:
        problem(("deadline",), late)
    # Sweeps and reduced protocols name experiments: a typo would silently run nothing.
    for key in ("sweeps", "reduced"):
        for name in sorted(config.get(key) or {}):
            if name not in experiments:
                problem((key, name), f"there is no experiment {name!r}; allowed: {', '.join(sorted(experiments))}")
            elif key == "sweeps":
                points = (config[key][name] or {}).get("clauses") or ()
                big = [c for c in points if isinstance(c, int) and c > INT32_MAX]
                if big:
                    problem(("sweeps", name, "clauses"), f"{big[0]} is out of range; allowed: 1 to {INT32_MAX}")
    return errors


# --- the deadline -------------------------------------------------------------------------------------------

#: The forms of config ``deadline``; the refusal of any other value names them.
DEADLINE_FORMS = ("an ISO-8601 time with its timezone (2026-11-27T18:00:00+00:00, or Z for UTC) or a duration "
                  "from the start of the command (3h, 45m, 5400s, 3h50m)")
_NUMBER = r"\s*(\d+(?:\.\d*)?|\.\d+)\s*"
_DURATION = re.compile("".join(f"(?:{_NUMBER}{unit})?" for unit in "dhms") + r"\s*", re.IGNORECASE)
_UNIT_S = (86400.0, 3600.0, 60.0, 1.0)


def resolve_deadline(value, now: float) -> float | None:
    """Config ``deadline`` as a UNIX time (None: no deadline): a wall-clock time as it is, a duration counted from
    ``now``; :class:`ConfigError` (one line naming the key and the accepted forms) for anything else."""
    problem = deadline_problem(value)
    if problem:
        raise ConfigError(f"config deadline: {problem}")
    if value is None:
        return None
    text = value.isoformat() if isinstance(value, datetime) else value.strip()
    seconds = _duration_s(text)
    return now + seconds if seconds is not None else datetime.fromisoformat(text).timestamp()


def _duration_s(text: str) -> float | None:
    """The seconds of a duration such as ``3h50m`` (None: not one)."""
    parts = _DURATION.fullmatch(text)
    if not parts or all(n is None for n in parts.groups()):
        return None
    return sum(float(n) * unit for n, unit in zip(parts.groups(), _UNIT_S) if n is not None)


def deadline_problem(value) -> str | None:
    """What is wrong with a config ``deadline`` (None: nothing), as the rest of its one-line refusal."""
    if value is None:
        return None
    if isinstance(value, datetime):  # an unquoted YAML timestamp in a config file
        value = value.isoformat()
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"{value!r} is not a deadline; use {DEADLINE_FORMS}"
    if not isinstance(value, str):
        return f"{value!r} has no unit; use {DEADLINE_FORMS}"
    seconds = _duration_s(value.strip())
    if seconds is not None:
        return None if seconds > 0 else f"{value!r} is no time at all; use {DEADLINE_FORMS}"
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        return f"{value!r} is not a deadline; use {DEADLINE_FORMS}"
    if at.tzinfo is None:
        return f"{value!r} has no timezone; use {DEADLINE_FORMS}"
    return None


def check_config(config: dict, schema: dict | None = None, sources: list[Source] = ()) -> None:
    """Raise :class:`ConfigError` listing every problem (schema first, when given, then meaning), each line
    naming where the setting came from when ``sources`` are given (:func:`config_sources`)."""
    errors = schema_errors(config, schema, sources) if schema is not None else []
    if not errors:
        errors = semantic_errors(config, sources)
    if errors:
        raise ConfigError("\n".join(errors))


def load_config(path: str | os.PathLike = "config/config.yaml",
                schema_path: str | os.PathLike | None = None) -> dict:
    """Read a config file and check it as the Snakefile does (with the schema given, else a ``schema.yaml`` next to
    the file, else the workflow's, :data:`SCHEMA_FILE`)."""
    path = Path(path)
    config, text = _read(path)
    if schema_path is None:
        schema_path = next((p for p in (path.parent / "schema.yaml", SCHEMA_FILE) if p.is_file()), SCHEMA_FILE)
    schema_path = Path(schema_path)
    schema = load_schema(schema_path) if schema_path.is_file() else None
    check_config(config, schema, [Source(config, path, text)])
    return config
