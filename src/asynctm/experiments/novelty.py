"""Novelty detection, second stage (Table 3, BBC Sport and 20 Newsgroups): an MLP on a TM's class sums.

The first stage is an ordinary TM run on the two known classes; it saves, next to its record,
``seed<k>.scores.npz`` (:func:`save_scores`): the clipped class sums ``(n, 2)`` of the known-class test
documents, their class indices, and the class sums ``(m, 2)`` of the documents of the novel class(es).

:func:`run_mlp_novelty` then follows the authors' scripts (cair/ICML-Massively-Parallel-and-Asynchronous-
Tsetlin-Machine-Architecture, ``experiments/noveltyscore.py`` writes the sums of the *last* epoch to a csv,
``experiments/classification_novelty.py`` trains the MLP):

1. rows: the novel documents first, label 0 (``novel``), then the known-class test documents, label 1
   (``known``), the same order and labels as the authors' csv; features: the two class sums, as float64;
2. ``train_test_split(test_size=0.2, shuffle=True, random_state=42)``, not stratified (as the authors);
3. ``StandardScaler`` **fit on the 80% training part** and applied to both parts: that is what the authors'
   ``classification_novelty.py`` does (``scaler.fit(X_train)``), and it keeps the test part out of the fit;
4. ``MLPClassifier(hidden_layer_sizes=(100, 30), activation="relu", solver="sgd", learning_rate_init=0.1,
   alpha=1e-4, max_iter=300, tol=1e-4, random_state=42)`` (the authors' arguments, which the paper's text
   summarises as "(100, 30), RELU, stochastic gradient descent");
5. reported on the 20% test part: ``accuracy`` and ``f1`` = F1 of the class ``known`` (the authors'
   ``f1_score(Y_test, y_pred)``, ``pos_label=1`` = known), plus ``f1_macro`` (and ``f1_binary`` = ``f1``).

The split and MLP seed is ``params["seed"]`` (42, fixed as the authors'), not the TM run's seed: the spread
over seeds comes from the TM runs. One difference from the authors is deliberate: their
``pandas.read_csv(infile)`` takes the csv's first row (one novel document) as the header and drops it; we use
every document.
"""

from __future__ import annotations

import numbers
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np

from ..io import atomic_open
from .metrics import classification_metric_names, classification_metrics

SCORE_KEYS = ("known_sums", "known_labels", "novel_sums")
LABELS = {0: "novel", 1: "known"}
_PARAM_KEYS = {"hidden_layer_sizes", "learning_rate_init", "alpha", "max_iter", "test_size", "seed",
               "activation", "solver", "tol"}
_DEFAULTS = {"hidden_layer_sizes": (100, 30), "learning_rate_init": 0.1, "alpha": 1e-4, "max_iter": 300,
             "test_size": 0.2, "seed": 42, "activation": "relu", "solver": "sgd", "tol": 1e-4}


# -- the scores file ------------------------------------------------------------------------------------------
def _check_sums(name: str, a, where: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"{where}: {name} must have shape (n, 2) (the sums of the 2 known classes), "
                         f"got {a.shape}")
    if a.shape[0] < 1:
        raise ValueError(f"{where}: {name} has no rows")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{where}: {name} must be numeric, got dtype {a.dtype}")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}: {name} contains NaN or infinite values")
        if not np.all(a == np.round(a)):
            raise ValueError(f"{where}: {name} must hold integer class sums")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{where}: {name} does not fit in int32")
    return a.astype(np.int32)


def check_scores(known_sums, known_labels, novel_sums, where: str = "scores") -> dict:
    """Validated ``{known_sums: int32 (n, 2), known_labels: int64 (n,), novel_sums: int32 (m, 2)}``;
    errors name ``where`` (a file, for :func:`load_scores`)."""
    known = _check_sums("known_sums", known_sums, where)
    novel = _check_sums("novel_sums", novel_sums, where)
    labels = np.asarray(known_labels)
    if labels.ndim != 1 or labels.shape[0] != known.shape[0]:
        raise ValueError(f"{where}: known_labels must be 1-D with one label per row of known_sums "
                         f"({known.shape[0]}), got shape {labels.shape}")
    if labels.dtype.kind not in "biu" and not (labels.dtype.kind == "f" and np.all(np.isfinite(labels))
                                                and np.all(labels == np.round(labels))):
        raise ValueError(f"{where}: known_labels must be integer class indices, got dtype {labels.dtype}")
    return {"known_sums": known, "known_labels": labels.astype(np.int64), "novel_sums": novel}


def save_scores(path, known_sums, known_labels, novel_sums) -> None:
    """Write ``seed<k>.scores.npz`` (results/README.md) atomically, after validating it."""
    arrays = check_scores(known_sums, known_labels, novel_sums, where=str(path))
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_scores(path) -> dict:
    """Read and validate a ``seed<k>.scores.npz``; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such scores file")
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in SCORE_KEYS if k not in z.files]
            if missing:
                raise ValueError(f"{path}: missing array(s) {missing}; a scores file holds {list(SCORE_KEYS)}")
            arrays = {k: z[k] for k in SCORE_KEYS}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable .npz scores file ({type(exc).__name__}: {exc})") from exc
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: not a readable .npz scores file ({exc})") from exc
    return check_scores(arrays["known_sums"], arrays["known_labels"], arrays["novel_sums"], where=str(path))


# -- the MLP stage --------------------------------------------------------------------------------------------
def resolve_params(params: dict) -> dict:
    """Config ``mlp_novelty`` (plus optional ``activation``, ``solver``, ``tol``) over the authors' defaults."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    unknown = set(params) - _PARAM_KEYS
    if unknown:
        raise ValueError(f"unknown mlp_novelty parameter(s) {sorted(unknown)}; known: {sorted(_PARAM_KEYS)}")
    p = {**_DEFAULTS, **params}
    sizes = p["hidden_layer_sizes"]
    if isinstance(sizes, numbers.Integral):
        sizes = (sizes,)
    sizes = tuple(sizes)
    if not sizes or any(isinstance(h, bool) or not isinstance(h, numbers.Integral) or h < 1 for h in sizes):
        raise ValueError(f"hidden_layer_sizes must be positive integers, got {p['hidden_layer_sizes']!r}")
    p["hidden_layer_sizes"] = tuple(int(h) for h in sizes)
    for key in ("max_iter", "seed"):
        v = p[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < (1 if key == "max_iter" else 0):
            raise ValueError(f"{key} must be a {'positive' if key == 'max_iter' else 'non-negative'} integer, "
                             f"got {v!r}")
        p[key] = int(v)
    for key in ("learning_rate_init", "alpha", "tol"):
        v = p[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v < 0 \
                or (key == "learning_rate_init" and v == 0):
            raise ValueError(f"{key} must be a finite number {'> 0' if key == 'learning_rate_init' else '>= 0'}, "
                             f"got {v!r}")
        p[key] = float(v)
    ts = p["test_size"]
    if isinstance(ts, bool) or not isinstance(ts, numbers.Real) or not 0 < ts < 1:
        raise ValueError(f"test_size must be a fraction in (0, 1), got {ts!r}")
    p["test_size"] = float(ts)
    return p


def _blas_threads() -> int | None:
    try:
        from threadpoolctl import threadpool_info

        counts = [int(p["num_threads"]) for p in threadpool_info() if p.get("user_api") == "blas"]
        return max(counts) if counts else None
    except Exception:  # noqa: BLE001 - informative only
        return None


def novelty_dataset(scores) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: the novel rows (label 0) then the known rows (label 1), features the two class sums."""
    s = check_scores(scores["known_sums"], scores["known_labels"], scores["novel_sums"])
    X = np.concatenate([s["novel_sums"], s["known_sums"]]).astype(np.float64)
    y = np.concatenate([np.zeros(len(s["novel_sums"]), np.int64), np.ones(len(s["known_sums"]), np.int64)])
    return X, y


def run_mlp_novelty(scores, params: dict) -> dict:
    """The MLP stage on one TM run's class sums; the record parts ``{implementation, hyperparameters, final,
    metric_names, timing: {fit_s}}``. ``scores``: a mapping with ``known_sums``, ``known_labels``,
    ``novel_sums`` (e.g. :func:`load_scores`); ``params``: config ``mlp_novelty``."""
    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    p = resolve_params(params)
    X, y = novelty_dataset(scores)
    n_novel, n_known = int((y == 0).sum()), int((y == 1).sum())
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=p["test_size"], shuffle=True,
                                                        random_state=p["seed"])
    if len(np.unique(y_train)) < 2:
        raise ValueError(f"the {len(y_train)} training rows hold one class only; need both known and novel rows")
    scaler = StandardScaler()
    scaler.fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    mlp = MLPClassifier(hidden_layer_sizes=p["hidden_layer_sizes"], activation=p["activation"], solver=p["solver"],
                        learning_rate_init=p["learning_rate_init"], alpha=p["alpha"], max_iter=p["max_iter"],
                        tol=p["tol"], random_state=p["seed"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        mlp.fit(X_train, y_train)
        fit_s = time.perf_counter() - t0
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    pred = mlp.predict(X_test)

    final = classification_metrics(y_test, pred, "binary")  # class index 1 = known: f1 = F1 of "known"
    names = classification_metric_names("binary")
    names["f1"] = "F1 of the class \"known\" (%), as the paper reports"
    names["f1_binary"] = "F1 of the class \"known\" (class index 1) (%)"
    names["accuracy"] = "accuracy of known vs novel on the held-out 20% (%)"
    names["f1_macro"] = "macro-averaged F1 over known and novel (%)"
    hyper = {"hidden_layer_sizes": list(p["hidden_layer_sizes"]), "activation": p["activation"],
             "solver": p["solver"], "learning_rate_init": p["learning_rate_init"], "alpha": p["alpha"],
             "max_iter": p["max_iter"], "tol": p["tol"], "random_state": p["seed"], "test_size": p["test_size"],
             "split_seed": p["seed"], "stratified": False, "scaler": "StandardScaler fit on the training part"}
    args = {k: (list(v) if isinstance(v, tuple) else v) for k, v in mlp.get_params().items()}
    impl = {"library": "scikit-learn", "version": sklearn.__version__, "class": "MLPClassifier",
            "library_arguments": args, "device": "CPU", "threads": _blas_threads(),
            "threads_note": "MLPClassifier is numpy code; its matrix products run on the BLAS threads counted here",
            "features": "the TM's two clipped class sums per document, float64, standardised",
            "labels": {str(k): v for k, v in LABELS.items()},
            "row_order": "novel documents first, then known-class test documents (as the authors)",
            "scaler": ("StandardScaler fit on the 80% training part, applied to both parts (as the authors' "
                       "classification_novelty.py)"),
            "split": f"train_test_split(test_size={p['test_size']}, shuffle=True, random_state={p['seed']}), "
                     "not stratified",
            "n_known": n_known, "n_novel": n_novel, "n_train": int(len(y_train)), "n_test": int(len(y_test)),
            "n_test_known": int((y_test == 1).sum()), "n_test_novel": int((y_test == 0).sum()),
            "n_iter": int(mlp.n_iter_), "converged": converged,
            "deviation_from_authors": ("all documents are used; the authors' pandas.read_csv took the first csv "
                                       "row (a novel document) as the header and dropped it")}
    return {"implementation": impl, "hyperparameters": hyper, "final": final, "metric_names": names,
            "timing": {"fit_s": fit_s}}
