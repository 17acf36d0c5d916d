"""The paper's eight datasets: declared raw sources, verified fetching, paper-faithful preparation.

``DATASETS`` (:mod:`.registry`) maps each dataset name (as used in the config and in ``data/raw/<name>``,
``data/processed/<name>/<protocol>``) to its module; modules are imported on first access, so one
dataset's missing optional dependency never breaks the others. Every module follows the contract in
:mod:`asynctm.datasets.base`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .base import ProcessedDataset, load_processed, save_processed
from .registry import DATASETS, get_module


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
