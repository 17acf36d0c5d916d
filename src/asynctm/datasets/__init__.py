"""The paper's eight datasets: declared raw sources, verified fetching, paper-faithful preparation.

``DATASETS`` maps each dataset name (as used in the config and in ``data/raw/<name>``,
``data/processed/<name>/<protocol>``) to its module; modules are imported on first access, so one
dataset's missing optional dependency never breaks the others. Every module follows the contract in
:mod:`asynctm.datasets.base`.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from .base import ProcessedDataset, load_processed, save_processed

# The datasets, each a module of that name under asynctm.datasets; the paper's order (Table 1, then the text tasks).
_MODULES = ("bike_sharing", "blogfeedback", "bbc_sport", "newsgroups20", "semeval", "imdb", "wsd_apple", "wsd_java")


class _LazyRegistry(Mapping):
    """A read-only ``name -> module`` mapping that imports a module when it is first looked up."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in _MODULES:
            raise KeyError(f"unknown dataset {name!r}; known: {', '.join(_MODULES)}")
        return importlib.import_module(f"{__name__}.{name}")

    def __iter__(self):
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


DATASETS: Mapping[str, ModuleType] = _LazyRegistry()


def get_module(name: str) -> ModuleType:
    """The dataset module registered under ``name`` (ValueError with the known names if none)."""
    try:
        return DATASETS[name]
    except KeyError as e:
        raise ValueError(e.args[0]) from None


def prepare_dataset(name: str, raw_dir: str | os.PathLike, protocol: str, out_dir: str | os.PathLike) -> Path:
    """Verify ``raw_dir`` against the declared hashes, prepare ``protocol``, save atomically.

    Returns the written ``meta.json``. The raw digest and the member hashes go into the meta, so
    every processed folder names exactly the raw data it came from.
    """
    from .fetch import verify

    mod = get_module(name)
    if protocol not in mod.PROTOCOLS:
        raise ValueError(f"{name}: unknown protocol {protocol!r}; choose one of {', '.join(mod.PROTOCOLS)}")
    manifest = verify(mod, raw_dir)
    ds = mod.prepare(raw_dir, protocol)
    if ds.protocol != protocol or ds.name != name:
        raise RuntimeError(f"{name}: prepare returned {ds.name}/{ds.protocol} for {name}/{protocol}")
    ds.meta = {**ds.meta, "raw_digest": manifest["raw_digest"], "raw_members": manifest["members"],
               "generated_by": f"asynctm.datasets prepare {name} --protocol {protocol}"}
    save_processed(ds, out_dir)
    return Path(out_dir) / "meta.json"


def class_count(data_dir: str | os.PathLike, experiment: dict) -> tuple[int, Path]:
    """The class count of a plan experiment's processed dataset (its meta.json's ``class_names``) and that file;
    ValueError naming the file and the fix where it is missing, unreadable or names no classes."""
    dataset, protocol = experiment["dataset"], experiment.get("protocol", "paper")
    meta = Path(data_dir) / "processed" / dataset / protocol / "meta.json"
    fix = f"build the dataset (snakemake --cores all {meta.as_posix()})"
    try:
        names = json.loads(meta.read_text(encoding="utf-8")).get("class_names")
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"{meta}: no readable processed dataset meta ({type(exc).__name__}); {fix}") from None
    if not names:
        raise ValueError(f"{meta}: no class_names; {fix}")
    return len(names), meta


__all__ = ["DATASETS", "ProcessedDataset", "class_count", "get_module", "load_processed", "prepare_dataset",
           "save_processed"]
