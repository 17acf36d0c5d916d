"""The results layout (results/README.md, "Layout"): where run records lie below a results root, what a record's path
says, and which files below a root are records.

    <root>/<experiment>/<impl>/<params>/seed<k>.json                        a run's record
    <root>/ablation/<experiment>/<impl>/<params>/<variant>/seed<k>.json     a run of the tally ablation

Every reader lists the record files through :func:`record_files`, :func:`ablation_files` or :func:`main_files`
and reads a path with :func:`layout`; the names in those paths (implementations, settings folders, ablation
variants) are asynctm.experiments.plan's, which names the runs the configuration asks for. :class:`RecordError`
(raised through :func:`refuse`) is the one error of a record that may not count, wherever it is read.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..experiments.plan import ABLATION_DIR, TM_IMPLS

# The kind of record each implementation writes.
KIND_OF_IMPL = {**{impl: "tm" for impl in TM_IMPLS}, "svm": "svm", "mlp_novelty": "mlp_novelty"}
SEED_FILE = re.compile(r"^seed(\d+)\.json$")  # a file named like a record
CANONICAL_SEED_FILE = re.compile(r"^seed(0|[1-9]\d*)\.json$")  # one name per seed: seed0.json, never seed00.json

FIX_RERUN = "move the file out of results/ and run its rule again (snakemake --cores all <its path>)"


class RecordError(ValueError):
    """A run record that may not count, wherever it is read; the message is one line: the file, the field and the
    fix."""


def refuse(path, field: str, problem: str, fix: str = FIX_RERUN):
    """Raise the RecordError of the record at ``path``."""
    raise RecordError(f"{path}: {field}: {problem}; fix: {fix}")


def layout(rel, path=None) -> dict:
    """What a record's path below its results root says: ``{experiment, impl, params, variant, seed}``
    (``variant`` None outside the ablation). Raises RecordError, naming ``path`` (default ``rel``), for another
    layout or a non-canonical file name."""
    rel = Path(rel)
    path = rel if path is None else path
    name = rel.name
    if not SEED_FILE.match(name):
        refuse(path, "file name", "a record's file is named seed<k>.json", "rename or remove it")
    if not CANONICAL_SEED_FILE.match(name):
        k = int(SEED_FILE.match(name).group(1))
        refuse(path, "file name", f"not the canonical name of seed {k} (seed{k}.json), so it would count seed {k} "
               f"twice", f"remove it, or rename it to seed{k}.json if no such file is there")
    parts = rel.parts
    if len(parts) == 4:
        experiment, impl, params, variant = *parts[:3], None
    elif len(parts) == 6 and parts[0] == ABLATION_DIR:
        experiment, impl, params, variant = parts[1:5]
    else:
        refuse(path, "path", "not <experiment>/<impl>/<params>/seed<k>.json nor "
               f"{ABLATION_DIR}/<experiment>/<impl>/<params>/<variant>/seed<k>.json below the results folder",
               "move it to its place")
    return {"experiment": experiment, "impl": impl, "params": params, "variant": variant,
            "seed": int(CANONICAL_SEED_FILE.match(name).group(1))}


def root_of(path) -> Path:
    """The results root a record file lies below, read from its path: four folders up, six in the ablation."""
    path = Path(path)
    parts = path.parts
    return path.parents[5] if len(parts) >= 6 and parts[-6] == ABLATION_DIR else path.parents[3]


def record_files(root, experiments=None, ablation: bool = True) -> list[Path]:
    """Every file named like a record (seed<k>.json) below ``root``, sorted: in the experiments' folders
    (``experiments`` None: every folder but the ablation's and hidden ones) and, with ``ablation``, in the
    ablation's; non-canonical names included, which the gate then refuses."""
    root = Path(root)
    if experiments is None:
        experiments = [p.name for p in root.iterdir() if p.is_dir() and p.name != ABLATION_DIR
                       and not p.name.startswith(".")] if root.is_dir() else []
    files = [p for name in experiments for p in (root / name).glob("*/*/seed*.json")]
    if ablation:
        files += (root / ABLATION_DIR).glob("*/*/*/*/seed*.json")
    return sorted(p for p in files if SEED_FILE.match(p.name))


def ablation_files(root) -> list[Path]:
    """The tally ablation's record files below ``root`` (``<root>/ablation/...``), sorted."""
    return record_files(root, experiments=[], ablation=True)


def main_files(root, experiments=None, files=None) -> list[Path]:
    """The record files outside the ablation below ``root``, sorted: of ``experiments`` (None: all), from ``files``
    (paths below ``root``, e.g. a Snakemake rule's declared inputs) where given, else from the disk."""
    if files is None:
        return record_files(root, experiments, ablation=False)
    root = Path(root)
    return sorted(p for p in map(Path, files)
                  if SEED_FILE.match(p.name) and (experiments is None or p.relative_to(root).parts[0] in experiments))
