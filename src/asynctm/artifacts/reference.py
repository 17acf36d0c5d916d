"""The paper's published numbers (paper_tables/reference/paper_numbers.csv, transcribed once by hand)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[3]
DEFAULT_REFERENCE = REPO / "paper_tables" / "reference" / "paper_numbers.csv"
COLUMNS = ["dataset", "implementation", "metric", "mean", "std", "unit", "source", "note"]


def load_reference(path=DEFAULT_REFERENCE) -> pd.DataFrame:
    """The reference table; ``mean`` and ``std`` as floats (NaN where the paper gives none)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"the paper's reference numbers are not at {path} (pass --reference)")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(frame.columns) != COLUMNS:
        raise ValueError(f"{path}: columns must be {COLUMNS}, got {list(frame.columns)}")
    for column in ("mean", "std"):
        frame[column] = pd.to_numeric(frame[column].replace("", math.nan), errors="raise")
    if frame["mean"].isna().any():
        raise ValueError(f"{path}: every row needs a mean (row {int(frame['mean'].isna().idxmax()) + 2})")
    duplicated = frame.duplicated(["dataset", "implementation", "metric", "source"])
    if duplicated.any():
        raise ValueError(f"{path}: duplicate row {frame[duplicated].iloc[0].tolist()}")
    return frame


def paper_value(reference: pd.DataFrame, source: str, dataset: str, implementation: str,
                metric: str) -> tuple[float, float]:
    """(mean, std) of one published number; (NaN, NaN) where the paper has none."""
    hit = reference[(reference["source"] == source) & (reference["dataset"] == dataset)
                    & (reference["implementation"] == implementation) & (reference["metric"] == metric)]
    if hit.empty:
        return math.nan, math.nan
    return float(hit["mean"].iloc[0]), float(hit["std"].iloc[0])
