"""The metrics of the run records (results/README.md): accuracy and F1 in percent, MAE and RMSE in target units."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

F1_KINDS = ("macro", "binary")


def classification_metrics(y_true, y_pred, f1: str = "macro") -> dict:
    """``accuracy``, ``f1_macro``, ``f1_binary`` (F1 of class index 1) and ``f1`` (the paper's choice), in %."""
    if f1 not in F1_KINDS:
        raise ValueError(f"f1 must be one of {F1_KINDS}, got {f1!r}")
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    out = {
        "accuracy": 100.0 * float(accuracy_score(y_true, y_pred)),
        "f1_macro": 100.0 * float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
    }
    labels = np.unique(np.concatenate([y_true, y_pred]))
    out["f1_binary"] = (100.0 * float(f1_score(y_true, y_pred, pos_label=1, average="binary", zero_division=0))
                        if set(labels.tolist()) <= {0, 1} else None)
    out["f1"] = out["f1_macro"] if f1 == "macro" else out["f1_binary"]
    return out


def classification_metric_names(f1: str = "macro") -> dict:
    return {"accuracy": "test accuracy (%)", "f1_macro": "macro-averaged F1 (%)",
            "f1_binary": "F1 of class index 1 (%)",
            "f1": f"the F1 the paper reports here: {'macro-averaged' if f1 == 'macro' else 'of class index 1'} (%)"}


def regression_metrics(y_true, y_pred) -> dict:
    err = np.asarray(y_pred, dtype=np.float64) - np.asarray(y_true, dtype=np.float64)
    return {"mae": float(np.mean(np.abs(err))), "rmse": float(np.sqrt(np.mean(err**2)))}


REGRESSION_METRIC_NAMES = {"mae": "test mean absolute error (target units)",
                           "rmse": "test root mean squared error (target units)"}


def evaluate(task: str, y_true, y_pred, f1: str = "macro") -> tuple[dict, dict]:
    """``(metrics, their names)`` of a record for ``task`` (regression, or classification and novelty)."""
    if task == "regression":
        return regression_metrics(y_true, y_pred), dict(REGRESSION_METRIC_NAMES)
    return classification_metrics(y_true, y_pred, f1), classification_metric_names(f1)
