"""Queries of the records' frame for the tables and figures: one cell's records (:func:`select`), the TM records'
per-epoch entries (:func:`epochs_frame`), and which times were taken on a busy machine (:func:`disturbed`,
:func:`busy_load_text`).

The frame itself, one row per run record, and what a record says (its host, whether it ran on a busy machine or
from modified code, its steady per-epoch time) come from the record store (asynctm.store: ``load_records``,
``host_identity``, ``busy``, ``dirty``, ...), which reads every record through its gate.
"""

from __future__ import annotations

import pandas as pd

from ..store import busy


def busy_load_text(busy_rows: pd.DataFrame) -> str:
    """How busy the machine was for these (disturbed) records, e.g. '1-minute load average 3.1-3.5 at the end on
    2 cores'."""
    low, high = (f"{float(v):.1f}" for v in (busy_rows["load_at_end"].min(), busy_rows["load_at_end"].max()))
    return (f"1-minute load average {low if low == high else f'{low}-{high}'} at the end on "
            f"{int(busy_rows['logical_cores'].max())} cores")


def disturbed(frame: pd.DataFrame) -> pd.Series:
    """True where a record's time was taken on a busy machine (see :func:`asynctm.store.busy`)."""
    if frame.empty or "load_at_end" not in frame:
        return pd.Series(False, index=frame.index)
    return pd.Series([busy(load, cores) for load, cores in zip(frame["load_at_end"], frame["logical_cores"])],
                     index=frame.index)


def select(records: pd.DataFrame, experiment: str, impl: str, params: str, seeds=None) -> pd.DataFrame:
    """The records of one cell (experiment, impl, params), restricted to ``seeds``, sorted by seed."""
    if records.empty:
        return records
    mask = (records["experiment"] == experiment) & (records["impl"] == impl) & (records["params"] == params)
    if seeds is not None:
        mask &= records["seed"].isin(list(seeds))
    return records[mask].sort_values("seed", kind="stable")


def epochs_frame(records: pd.DataFrame) -> pd.DataFrame:
    """The TM records' per-epoch entries, one row per (record, epoch): identification columns, ``epoch``,
    ``train_s`` and the per-epoch metrics."""
    rows = []
    for rec in records.itertuples(index=False):
        for entry in rec.epochs or []:
            rows.append({"experiment": rec.experiment, "impl": rec.impl, "params": rec.params,
                         "seed": rec.seed, **entry})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["experiment", "impl", "params", "seed", "epoch", "train_s"])
    frame["epoch"] = frame["epoch"].astype(int)
    return frame.sort_values(["experiment", "impl", "params", "seed", "epoch"], kind="stable").reset_index(drop=True)
