"""Evidence behind gaps of Tables 3 and 5: the novelty MLP stage (20 Newsgroups, BBC Sport) and how the TMs converge
along their epochs (WSD Apple and Java, IMDb: accuracy; Bike Sharing: MAE). Evidence records as
:mod:`asynctm.artifacts.evidence` (schema, kind, name, question, provenance, sources; rendered by its ``render``
command), of two further kinds:

- ``mlp_stage``: the second stage of novelty detection rerun, without retraining a TM, on the class sums each TM
  run saved (``seed<k>.scores.npz``), with the pipeline's own function
  (:func:`asynctm.experiments.novelty.run_mlp_novelty`) under the readings the paper's wording ("a Multilayer
  Perceptron with hidden layer sizes (100, 30) and RELU activation functions, trained using stochastic gradient
  descent", Sec. 4.2) leaves open and the saved sums allow:

  * the MLP seed: the configuration's (the authors' ``random_state=42``) and others; one seed draws both the split
    of the MLP's rows and the MLP's initial weights, as in the authors' script;
  * the share of the MLP's rows held out for its test: 20 % (the authors) and others (``--test-sizes``);
  * ``pipeline``: the stage as configured (config ``mlp_novelty``, the authors' arguments);
    ``authors_csv``: the rows as the authors' ``classification_novelty.py`` read its csv, whose
    ``pandas.read_csv`` took the first row (a novel document) as the header and dropped it;
    ``sklearn_defaults``: only what the paper states ((100, 30), ReLU, SGD), scikit-learn's defaults for what it
    does not (learning rate, iterations, L2 penalty, tolerance);
  * which F1: of the class known (the authors' ``f1_score(Y_test, y_pred)``, the pipeline's ``f1``), of the class
    novel, or macro-averaged (the stage's ``f1_macro`` is their mean, so F1 of novel = 2 ``f1_macro`` - ``f1``).

  Per implementation (TM build and setting): every fit (TM seed x MLP seed), the mean over the TM seeds at each MLP
  seed (the number a table cell of these TM runs would show under that seed) and the range of those means, and
  whether the paper's number lies within that range. What the saved sums fix, so that no rerun here can vary it,
  is listed in the record (``fixed``): which classes are known, the epoch whose sums were saved, the documents
  scored, the TM's own settings. The defaults make 2,640 fits (two experiments, four builds, five TM seeds, eleven
  MLP seeds, two shares, three readings): about 11 CPU minutes on one thread.
- ``convergence``: the per-epoch test accuracy (and F1) of classification TM run records, or the test MAE of
  regression ones (lower is better there: the best epoch is the lowest MAE): per run the epoch of the
  best accuracy, the mean of the last 10 epochs (the tables' number), the means over epochs 41-50 and 91-100, the
  least-squares slope over the last 20 epochs, and the best-epoch accuracy, which is chosen on the test set and so
  is no fair number to report: it only shows what the trajectory reaches. Over the seeds, a trend (the slope, and
  late minus early) counts where its mean lies beyond two standard errors of zero.

    python -m asynctm.artifacts.evidence_novelty mlp-stage --results results \\
        --out results/evidence/newsgroups20_mlp_stage.json [--experiments newsgroups20 bbc_sport] \\
        [--mlp-seeds 0 1 ... 9] [--test-sizes 0.2 0.5] [--readings pipeline authors_csv sklearn_defaults] [--threads 1]
    python -m asynctm.artifacts.evidence_novelty convergence --results results \\
        --out results/evidence/wsd_pytm_convergence.json [--experiments wsd_apple wsd_java]

Run records (the TM runs', the MLP stage's) are read through the record store's gate (asynctm.store). Bad input (a
record the gate refuses, a missing or incomplete scores file, an unknown reading) stops with one line naming the file
and the field, and writes nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from .evidence_common import (
    HEADER,
    LAST,
    NOT_TM,
    SCHEMA,
    EvidenceError,
    _mean_sd,
    _num,
    _pm,
    _sha256,
    check_out,
    dotted_field,
    folder_records,
    read_config,
    read_reference,
    read_run_record,
    relative,
    run_command,
    run_record_files,
    write_record,
)
from .evidence_common import provenance as _provenance
from .reference import DEFAULT_REFERENCE
from .render import dataset_label


def provenance(what: str, seeds=None, code=()) -> dict:
    """The record's provenance (:func:`evidence_common.provenance`), with this module's code among its digests."""
    return _provenance(what, seeds, (Path(__file__), *code), program="asynctm.artifacts.evidence_novelty")

MLP_DIR = "mlp_novelty"
# The paper's column a build is compared with: pyTsetlinMachine's two, and the CUDA TM for each of our builds.
PAPER_IMPL = {"pytm_indexed": "pytm_indexed", "pytm_nonindexed": "pytm_nonindexed"}
CUDA_TM = "tm_gpu"

# -- the MLP stage -------------------------------------------------------------------------------------------------

READINGS = {
    "pipeline": "the stage as configured (config mlp_novelty: the authors' classification_novelty.py arguments)",
    "authors_csv": ("the rows as the authors' script read its csv: pandas.read_csv took the first row (a novel "
                    "document) as the header and dropped it"),
    "sklearn_defaults": ("only what the paper states ((100, 30), ReLU, SGD); scikit-learn's MLPClassifier defaults "
                         "for what it does not (learning_rate_init, max_iter, alpha, tol)"),
}
METRICS = ("accuracy", "f1_known", "f1_novel", "f1_macro")
F1_KINDS = ("f1_known", "f1_novel", "f1_macro")
FIXED = [
    {"what": "which classes are known and which novel",
     "why": "fixed when the TM trains on the known classes; the saved class sums are those of that TM"},
    {"what": "the epoch whose class sums are used",
     "why": "the scores file holds the last epoch's sums only (as the authors' noveltyscore.py wrote its csv)"},
    {"what": "which documents are scored",
     "why": "the scores file holds the known classes' test documents and every novel document"},
    {"what": "the TM's settings (clauses, T, s, epochs)",
     "why": "they made the saved sums; varying them means retraining the TM"},
    {"what": "feature scaling and a stratified split",
     "why": "the stage's function always standardises on its training part and splits unstratified, as the "
            "authors' script; varying them would not be the pipeline's stage"},
]


def _get(record: dict, dotted: str, path: Path, what: str):
    return dotted_field(record, dotted, path, f"this is not a complete {what}, rerun its run")


def _paper(reference, dataset: str, impl: str, metrics=("accuracy", "f1"), table: str = "Table 3") -> dict:
    """{metric: [mean, sd]} of the paper's ``table`` for ``impl``'s column (None where it has none)."""
    from .reference import paper_value

    frame = read_reference(reference)
    column = PAPER_IMPL.get(impl, CUDA_TM)
    out = {}
    for metric in metrics:
        mean, sd = paper_value(frame, table, dataset, column, metric)
        out[metric] = None if math.isnan(mean) else [mean, None if math.isnan(sd) else sd]
    return {"column": column, **out}


def stage_params(config) -> dict:
    """The configuration's ``mlp_novelty`` (validated by the stage's own resolve_params)."""
    from ..experiments.novelty import resolve_params

    cfg = read_config(config)
    try:
        params = cfg["mlp_novelty"]
        resolve_params(params)
    except (KeyError, TypeError) as exc:
        raise EvidenceError(f"{config}: field 'mlp_novelty' is missing or malformed ({exc}); pass the pipeline's "
                            "config/config.yaml") from None
    except ValueError as exc:
        raise EvidenceError(f"{config}: field 'mlp_novelty': {exc}; correct it") from None
    return dict(params)


def reading_params(reading: str, base: dict) -> dict:
    """The stage's parameters under ``reading`` (seed and test_size are set per fit)."""
    if reading == "sklearn_defaults":
        from sklearn.neural_network import MLPClassifier

        defaults = MLPClassifier().get_params()
        return {**base, **{k: defaults[k] for k in ("learning_rate_init", "max_iter", "alpha", "tol")}}
    if reading in READINGS:
        return dict(base)
    raise EvidenceError(f"--readings {reading!r}: unknown reading; choose from {sorted(READINGS)}")


def reading_scores(reading: str, scores: dict) -> dict:
    """The class sums the stage gets under ``reading``."""
    if reading == "authors_csv":
        return {**scores, "novel_sums": scores["novel_sums"][1:]}
    return scores


def _group_inputs(results: Path, experiment: str) -> list[dict]:
    """Per ``<impl>.<params>`` folder of an experiment's MLP records: its records and the scores they came from."""
    from ..experiments.novelty import load_scores

    root = results / experiment / MLP_DIR
    folders = sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []
    if not folders:
        raise EvidenceError(f"{root}: no MLP stage records there; run the experiment's novelty rules first or drop "
                            f"{experiment} from --experiments")
    groups = []
    for folder in folders:
        impl, dot, params = folder.name.partition(".")
        if not dot:
            raise EvidenceError(f"{folder}: not named <impl>.<params>; move it out of {root}")
        runs = []
        # through the record store's gate, which makes sure of each record's kind and that its seed is its file's
        for path, rec in folder_records(folder, results, kind=MLP_DIR, fix="pass MLP stage records only"):
            seed = rec["seed"]
            final = {k: float(_get(rec, f"final.{k}", path, "MLP stage record"))
                     for k in ("accuracy", "f1", "f1_macro")}
            scores_path = results / experiment / impl / params / f"seed{seed}.scores.npz"
            try:
                scores = load_scores(scores_path)
            except (OSError, ValueError) as exc:
                raise EvidenceError(f"{str(exc).splitlines()[0]}; rerun the TM run {scores_path.parent}/seed{seed}"
                                    ".json (it writes the scores)") from None
            runs.append({"seed": seed, "record": path, "scores_path": scores_path, "scores": scores, "final": final})
        if not runs:
            raise EvidenceError(f"{folder}: no seed<k>.json records there; run its rules or remove the folder")
        groups.append({"experiment": experiment, "impl": impl, "params": params, "runs": runs})
    return groups


def _fit_metrics(scores: dict, params: dict) -> dict:
    from ..experiments.novelty import run_mlp_novelty

    try:
        out = run_mlp_novelty(scores, params)
    except ValueError as exc:
        raise EvidenceError(f"the MLP stage refused these class sums ({exc})") from None
    final = out["final"]
    return {"accuracy": final["accuracy"], "f1_known": final["f1"], "f1_novel": 2.0 * final["f1_macro"] - final["f1"],
            "f1_macro": final["f1_macro"], "n_iter": out["implementation"]["n_iter"],
            "converged": out["implementation"]["converged"]}


def summarise_cells(cells: list[dict], paper: dict) -> dict:
    """Per metric over one reading and split: each MLP seed's mean over the TM seeds, their range, the spread of the
    single fits, and whether the paper's number lies within the range of the means."""
    out = {}
    for metric in METRICS:
        means = [float(np.mean(c[metric])) for c in cells]
        sds = [float(np.std(c[metric], ddof=1)) if len(c[metric]) > 1 else None for c in cells]
        fits = [v for c in cells for v in c[metric]]
        target = paper.get("accuracy" if metric == "accuracy" else "f1")
        within = None if target is None else bool(min(means) <= target[0] <= max(means))
        out[metric] = {"cell_means": means, "range": [min(means), max(means)],
                       "config_seed_mean": means[0], "tm_seed_sd": sds,
                       "fits": {"min": min(fits), "max": max(fits), "mean_sd": _mean_sd(fits), "n": len(fits),
                                "at_or_above_paper": None if target is None else sum(v >= target[0] for v in fits)},
                       "paper": None if target is None else target[0], "paper_within_range": within}
    return out


def _verdict(summaries: list[dict], paper: dict) -> dict:
    """Whether any reading and split gives the paper's accuracy and F1 within its range of means, the nearest mean,
    and over every single fit: the best, and how many reach the paper's number (per metric)."""
    out = {}
    for paper_metric, metrics in (("accuracy", ("accuracy",)), ("f1", F1_KINDS)):
        target = paper.get(paper_metric)
        if target is None:
            out[paper_metric] = None
            continue
        within, nearest, best = [], None, None
        reach = {metric: 0 for metric in metrics}
        n_fits = sum(s["metrics"][metrics[0]]["fits"]["n"] for s in summaries)
        for s in summaries:
            for metric in metrics:
                m = s["metrics"][metric]
                reach[metric] += m["fits"]["at_or_above_paper"]
                if best is None or m["fits"]["max"] > best["value"]:
                    best = {"reading": s["reading"], "test_size": s["test_size"], "metric": metric,
                            "value": m["fits"]["max"]}
                if m["paper_within_range"]:
                    within.append({"reading": s["reading"], "test_size": s["test_size"], "metric": metric})
                for seed, mean in zip(s["mlp_seeds"], m["cell_means"], strict=True):
                    gap = mean - target[0]
                    if nearest is None or abs(gap) < abs(nearest["gap"]):
                        nearest = {"reading": s["reading"], "test_size": s["test_size"], "metric": metric,
                                   "mlp_seed": seed, "mean": mean, "gap": gap}
        out[paper_metric] = {"paper": target[0], "within": within, "nearest": nearest, "best_fit": best,
                             "fits_at_or_above_paper": reach, "n_fits": n_fits}
    return out


def build_mlp_stage(results, config="config/config.yaml", reference=DEFAULT_REFERENCE,
                    experiments=("newsgroups20", "bbc_sport"), mlp_seeds=tuple(range(10)), test_sizes=(0.2, 0.5),
                    readings=tuple(READINGS), name="newsgroups20_mlp_stage", log=None) -> dict:
    """The ``mlp_stage`` evidence record (module docstring). ``log``: a callable told each group's progress."""
    from ..experiments import metrics as metrics_module
    from ..experiments import novelty

    results = Path(results)
    base = stage_params(config)
    resolved = novelty.resolve_params(base)  # the stage's seed and held-out share, defaults filled in
    for reading in readings:
        reading_params(reading, base)  # an unknown reading stops before any fit
    seeds = list(dict.fromkeys([resolved["seed"], *map(int, mlp_seeds)]))
    sizes = list(dict.fromkeys([resolved["test_size"], *map(float, test_sizes)]))
    for ts in sizes:
        if not 0 < ts < 1:
            raise EvidenceError(f"--test-sizes {ts}: a share of the rows must lie in (0, 1)")
    inputs = [g for experiment in experiments for g in _group_inputs(results, experiment)]
    groups, sources = [], []
    for g in inputs:
        paper = _paper(reference, g["experiment"], g["impl"])
        tm_seeds = [r["seed"] for r in g["runs"]]
        summaries, reproduced = [], []
        for reading in readings:
            params = reading_params(reading, base)
            for ts in sizes:
                cells = []
                for ms in seeds:
                    fits = [_fit_metrics(reading_scores(reading, r["scores"]), {**params, "seed": ms, "test_size": ts})
                            for r in g["runs"]]
                    cell = {"mlp_seed": ms, **{k: [f[k] for f in fits] for k in (*METRICS, "n_iter", "converged")}}
                    cells.append(cell)
                    if reading == "pipeline" and ms == seeds[0] and ts == sizes[0]:
                        for r, f in zip(g["runs"], fits, strict=True):
                            rec = r["final"]
                            diff = max(abs(rec["accuracy"] - f["accuracy"]), abs(rec["f1"] - f["f1_known"]),
                                       abs(rec["f1_macro"] - f["f1_macro"]))
                            reproduced.append({"tm_seed": r["seed"], "max_abs_diff": diff, "same": diff < 1e-9})
                summaries.append({"reading": reading, "test_size": ts, "mlp_seeds": seeds, "cells": cells,
                                  "not_converged": sum(not c for cell in cells for c in cell["converged"]),
                                  "metrics": summarise_cells(cells, paper)})
        record_means = {"accuracy": _mean_sd([r["final"]["accuracy"] for r in g["runs"]]),
                        "f1_known": _mean_sd([r["final"]["f1"] for r in g["runs"]])}
        groups.append({"experiment": g["experiment"], "impl": g["impl"], "params": g["params"], "tm_seeds": tm_seeds,
                       "n_known": len(g["runs"][0]["scores"]["known_sums"]),
                       "n_novel": len(g["runs"][0]["scores"]["novel_sums"]),
                       "paper": paper, "records": record_means, "reproduced": reproduced,
                       "summaries": summaries, "verdict": _verdict(summaries, paper)})
        for r in g["runs"]:
            sources += [{"path": relative(r["record"], results), "sha256": _sha256(r["record"]),
                         "role": "MLP stage record"},
                        {"path": relative(r["scores_path"], results), "sha256": _sha256(r["scores_path"]),
                         "role": "the TM run's class sums"}]
        if log:
            log(f"{g['experiment']} {g['impl']}.{g['params']}: {len(readings) * len(sizes) * len(seeds)} x "
                f"{len(tm_seeds)} fits")
    return {"schema": SCHEMA, "kind": "mlp_stage", "name": name,
            "question": "Does the novelty MLP stage, rerun on the saved class sums under the readings the paper's "
                        "wording leaves open (MLP seed, held-out share, rows, unstated MLP settings, which F1), give "
                        "the paper's accuracy and F1?",
            "provenance": provenance("the pipeline's MLP stage (asynctm.experiments.novelty.run_mlp_novelty) refitted "
                                     "on the class sums the TM runs saved; no TM retrained", seeds,
                                     code=[Path(__file__), Path(novelty.__file__), Path(metrics_module.__file__)]),
            "stage": {"function": "asynctm.experiments.novelty.run_mlp_novelty", "config": str(config),
                      "mlp_novelty": base},
            "readings": [{"key": k, "description": READINGS[k], "params": _jsonable(reading_params(k, base))}
                         for k in readings],
            "mlp_seeds": seeds, "test_sizes": sizes, "seed_note": "one seed draws the split of the MLP's rows and "
            "its initial weights (the stage's random_state), as in the authors' script",
            "f1_note": "f1_known: F1 of the class known (the authors' f1_score, the pipeline's f1); f1_novel: F1 of "
                       "the class novel (2 f1_macro - f1_known); f1_macro: their mean",
            "fixed": FIXED, "groups": groups, "sources": sources}


def _jsonable(params: dict) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}


# -- convergence -----------------------------------------------------------------------------------------------

EARLY = (41, 50)  # the means over epochs 41-50 and 91-100 (the last 10 of a 100-epoch run)
LATE = (91, 100)
SLOPE_LAST = 20  # the slope over the last 20 epochs
TREND_SE = 2.0  # a trend over the seeds: a mean beyond 2 standard errors of the mean (sd / sqrt(seeds))
# The test metric followed along the epochs, per task: which way is better, what else every epoch holds, the paper's
# table of it, and the words the rendered page uses.
CURVE_METRICS = {"accuracy": {"higher": True, "also": ("f1",), "table": "Table 3", "label": "accuracy",
                              "slope_unit": "pp/epoch", "reach": "at or above", "sign": "≥"},
                 "mae": {"higher": False, "also": (), "table": "Table 5", "label": "MAE", "slope_unit": "per epoch",
                         "reach": "at or below", "sign": "≤"}}


def _window(values, first: int, last: int):
    return float(np.mean(values[first - 1:last])) if len(values) >= last else None


def _slope(values, n: int):
    if len(values) < max(n, 2):
        return None
    y = np.asarray(values[-n:], dtype=np.float64)
    return float(np.polyfit(np.arange(len(values) - n + 1, len(values) + 1, dtype=np.float64), y, 1)[0])


def read_tm_run(path: Path, root: Path) -> dict:
    """One TM run record (through the record store's gate, below the results root ``root``), reduced to its per-epoch
    test metric (:data:`CURVE_METRICS`: accuracy and F1 of a classification run, MAE of a regression run)."""
    what = "TM run record"
    rec = read_run_record(path, root)
    epochs = _get(rec, "epochs", path, what)
    metric = next((m for m, spec in CURVE_METRICS.items() if isinstance(epochs, list) and epochs and all(
        isinstance(e, dict) and all(k in e for k in (m, *spec["also"])) for e in epochs)), None)
    if metric is None:
        raise EvidenceError(f"{path}: field 'epochs' needs an 'accuracy' and an 'f1' (a classification run) or an "
                            "'mae' (a regression run) in every entry; pass TM run records only")
    return {"path": relative(path, root), "sha256": _sha256(path), "seed": int(_get(rec, "seed", path, what)),
            "n_train": _get(rec, "dataset.n_train", path, what), "n_test": _get(rec, "dataset.n_test", path, what),
            "metric": metric, "values": [float(e[metric]) for e in epochs],
            "f1": [float(e["f1"]) for e in epochs] if "f1" in CURVE_METRICS[metric]["also"] else None}


def summarise_convergence(runs: list[dict], paper: dict, metric: str = "accuracy") -> dict:
    """Per run and over the runs: best epoch, last-10, the two windows, the slope over the last epochs, and the epochs
    that reach the paper's number (``metric``'s way: at or above an accuracy, at or below an MAE)."""
    higher = CURVE_METRICS[metric]["higher"]
    target = (paper.get(metric) or [None])[0]
    best_of = np.argmax if higher else np.argmin

    def reaches(v) -> bool:
        return v >= target if higher else v <= target

    per_seed = []
    for r in sorted(runs, key=lambda r: r["seed"]):
        values = r["values"]
        last = min(LAST, len(values))
        best = int(best_of(values))
        early, late = _window(values, *EARLY), _window(values, *LATE)
        per_seed.append({"seed": r["seed"], "path": r["path"], "n_epochs": len(values), "best_epoch": best + 1,
                         "best": values[best], "final": values[-1], "last10": float(np.mean(values[-last:])),
                         "last10_f1": None if r["f1"] is None else float(np.mean(r["f1"][-last:])),
                         "last10_sd": float(np.std(values[-last:], ddof=1)) if last > 1 else None,
                         "mean_41_50": early, "mean_91_100": late,
                         "late_minus_early": None if early is None or late is None else late - early,
                         "slope_last20": _slope(values, SLOPE_LAST),
                         "epochs_reaching_paper": None if target is None else int(sum(map(reaches, values)))})
    curve = np.mean([r["values"] for r in runs], axis=0) if len({len(r["values"]) for r in runs}) == 1 else None
    summary = {k: _mean_sd([p[k] for p in per_seed]) for k in
               ("best", "last10", "last10_f1", "last10_sd", "mean_41_50", "mean_91_100", "late_minus_early",
                "slope_last20", "final")}
    slopes = [p["slope_last20"] for p in per_seed if p["slope_last20"] is not None]
    gains = [p["late_minus_early"] for p in per_seed if p["late_minus_early"] is not None]
    trend = _trend(slopes, ("rising", "falling", "flat"))
    out = {"per_seed": per_seed, "summary": summary, "best_epochs": [p["best_epoch"] for p in per_seed],
           "seeds_slope_positive": sum(s > 0 for s in slopes), "seeds_late_above_early": sum(g > 0 for g in gains),
           "trend_last20": trend, "late_vs_early": _trend(gains, ("higher", "lower", "same")),
           "still_improving": None if trend is None else trend == ("rising" if higher else "falling"),
           "mean_curve": None}
    if curve is not None:
        n = len(curve)
        windows = [[i + 1, min(i + 10, n), float(np.mean(curve[i:i + 10]))] for i in range(0, n, 10)]
        at_paper = [] if target is None else [i + 1 for i, v in enumerate(curve) if reaches(v)]
        out["mean_curve"] = {"values": [float(v) for v in curve], "best_epoch": int(best_of(curve)) + 1,
                             "best": float(curve[best_of(curve)]), "windows": windows,
                             "reaches_paper": None if target is None else bool(at_paper),
                             "epochs_reaching_paper": len(at_paper),
                             "first_last_reaching_paper": [at_paper[0], at_paper[-1]] if at_paper else None}
    return out


def _trend(values, words) -> str | None:
    """``words[0]`` where the seeds' mean is above zero by more than TREND_SE standard errors, ``words[1]`` where it
    is below by as much, else ``words[2]`` (None for fewer than two seeds)."""
    if len(values) < 2:
        return None
    mean, se = float(np.mean(values)), float(np.std(values, ddof=1)) / math.sqrt(len(values))
    if mean > TREND_SE * se:
        return words[0]
    if mean < -TREND_SE * se:
        return words[1]
    return words[2]


def build_convergence(results, reference=DEFAULT_REFERENCE, experiments=("wsd_apple", "wsd_java"),
                      name="wsd_pytm_convergence", config=None, also=()) -> dict:
    """The ``convergence`` evidence record: every TM implementation and setting of ``experiments`` (with
    ``config``, a configuration file: only each implementation's main setting there, and the ``also`` folders,
    ``<impl>/<params>`` below each experiment). One metric for all: the experiments are all classification or all
    regression."""
    results = Path(results)
    main = th = None
    if config is not None:
        from ..experiments import plan
        from .claims import ClaimsConfigError, Thresholds

        cfg = read_config(config)
        try:
            main = {(e, i): plan.main_params(cfg, e, i) for e in experiments for i in cfg["impls"]}
            th = Thresholds.from_config(cfg, str(config)) if "claims" in cfg else None  # no verdicts: no comparison
        except (KeyError, TypeError, ValueError, ClaimsConfigError) as exc:
            raise EvidenceError(f"{config}: cannot read the main settings of {', '.join(experiments)} or the "
                                f"verdicts' thresholds ({exc}); pass --config config/config.yaml") from None
    groups, sources, metrics = [], [], {}
    for experiment in experiments:
        root = results / experiment
        folders = sorted(p for p in root.glob("*/*") if p.is_dir() and p.parent.name not in NOT_TM
                         and (main is None or main.get((experiment, p.parent.name)) == p.name
                              or f"{p.parent.name}/{p.name}" in also))
        if not folders:
            raise EvidenceError(f"{root}: no TM run records there; run the experiment first or drop it from "
                                "--experiments")
        for folder in folders:
            files = run_record_files(folder)
            if not files:
                continue
            runs = [read_tm_run(p, results) for p in files]
            if len({r["seed"] for r in runs}) != len(runs):
                raise EvidenceError(f"{folder}: field 'seed' repeats across its records; one record per seed")
            metric = metrics.setdefault("metric", runs[0]["metric"])
            if any(r["metric"] != metric for r in runs):
                raise EvidenceError(f"{folder}: its records mix classification and regression runs (field 'epochs'); "
                                    "build the evidence of each task apart (--experiments)")
            impl, spec = folder.parent.name, CURVE_METRICS[metric]
            paper = _paper(reference, experiment, impl, (metric, *spec["also"]), spec["table"])
            group = {"experiment": experiment, "impl": impl, "params": folder.name,
                     "seeds": sorted(r["seed"] for r in runs), "n_train": runs[0]["n_train"],
                     "n_test": runs[0]["n_test"], "paper": paper, **summarise_convergence(runs, paper, metric)}
            if th is not None:
                group["last10_vs_paper"] = versus_paper(th, metric, group["summary"]["last10"], paper.get(metric))
            groups.append(group)
            sources += [{"path": r["path"], "sha256": r["sha256"], "role": "TM run record"} for r in runs]
    if not groups:
        raise EvidenceError(f"{results}: no TM run records for {', '.join(experiments)}; run them first")
    return {"schema": SCHEMA, "kind": "convergence", "name": name, "metric": metrics["metric"],
            "question": _convergence_question(experiments, metrics["metric"], also),
            "provenance": provenance(f"per-epoch test {CURVE_METRICS[metrics['metric']]['label']} of the run "
                                     "records (each carries its own provenance)",
                                     sorted({s for g in groups for s in g["seeds"]}),
                                     code=[Path(__file__)]),
            "windows": {"last": LAST, "early": list(EARLY), "late": list(LATE), "slope_last": SLOPE_LAST},
            "best_epoch_note": "the best epoch is chosen on the test set: not a fair number to report, only what the "
                               "trajectory reaches",
            "groups": groups, "sources": sources}


def versus_paper(th, metric: str, ours, paper) -> dict | None:
    """The last-10 mean over the seeds against the paper's number by the tables' rule (config claims.spread, as
    :mod:`.claims` judges a Table 3 or 5 cell): ``diff``, ``tolerance`` and ``within``; None where either is missing."""
    from .claims import agreement

    if not ours or not paper or ours[0] is None or paper[0] is None:
        return None
    diff, tol, within = agreement(th, metric, float(ours[0]), ours[1], float(paper[0]), paper[1])
    return {"diff": diff, "tolerance": tol, "within": within}


def _improving_cell(g: dict) -> str:
    """The 'still improving' cell: the trend over the last epochs, or a dash where a run is too short for one."""
    if g["trend_last20"] is None:
        return "– (too few epochs)"
    return (f"{_yes(g['still_improving'])}: {g['trend_last20']}, late {g['late_vs_early']} "
            f"({g['seeds_slope_positive']} of {len(g['seeds'])} slopes > 0)")


def _convergence_question(experiments, metric: str = "accuracy", also=()) -> str:
    if all(e.startswith("wsd_") for e in experiments):
        return ("Where do the TMs' test accuracies on WSD stand along their 100 epochs: at which epoch are they best, "
                "do they still improve at the end, and is the paper's number within reach of the trajectory?")
    labels = ", ".join(dataset_label(e) for e in experiments)
    what = "accuracies" if metric == "accuracy" else f"{CURVE_METRICS[metric]['label']}s"
    settings = "each implementation's main setting" + "".join(f", and {a}" for a in also)
    return (f"Where do the TMs' test {what} on {labels} stand along their epochs ({settings}): at which epoch are they "
            "best, do they still improve at the end, and is the paper's number within reach of the trajectory?")


# -- rendering -------------------------------------------------------------------------------------------------

def _range(r, decimals: int = 2) -> str:
    return f"{_num(r[0], decimals)}–{_num(r[1], decimals)}"


def _sd_range(sds) -> str:
    sds = [x for x in sds if x is not None]
    return _range([min(sds), max(sds)]) if sds else "–"


def _yes(flag) -> str:
    return "–" if flag is None else ("**yes**" if flag else "no")


def render_mlp_stage(ev: dict, source: str) -> str:
    seeds = ev["mlp_seeds"]
    md = [HEADER.format(source=source), "", f"#### Evidence (novelty MLP stage): {ev['question']}", "",
          f"The pipeline's MLP stage ({ev['stage']['function']}) refitted on the class sums each TM run saved, no TM "
          f"retrained, for every TM seed and MLP seed {', '.join(map(str, seeds))} ({ev['seed_note']}). A cell is "
          "the mean over the TM seeds at one MLP seed, the number a table cell of these runs would show; the range "
          f"is over the {len(seeds)} MLP seeds, and so is the range of the sample sd (ddof=1) over the TM seeds. A "
          "fit not converged stopped at max_iter (scikit-learn's ConvergenceWarning). Readings:", ""]
    md += [f"- `{r['key']}`: {r['description']}" for r in ev["readings"]]
    md += ["", f"F1: {ev['f1_note']}. The paper's F1 is compared with each.", ""]
    for experiment in dict.fromkeys(g["experiment"] for g in ev["groups"]):
        groups = [g for g in ev["groups"] if g["experiment"] == experiment]
        md += [f"{dataset_label(experiment)}:", "",
               "| build (TM setting) | reading | held out | accuracy: at seed "
               f"{seeds[0]} | accuracy: range | accuracy: sd over the TM seeds | paper | within | "
               "F1 known: range | F1 novel: range | F1 macro: range | paper F1 | within (F1 known / novel / macro) | "
               "fits not converged |",
               "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|"]
        for g in groups:
            for s in g["summaries"]:
                m = s["metrics"]
                acc_paper = (g["paper"].get("accuracy") or [None])[0]
                f1_paper = (g["paper"].get("f1") or [None])[0]
                md.append(f"| {g['impl']} ({g['params']}) | {s['reading']} | {100 * s['test_size']:.0f} % | "
                          f"{_num(m['accuracy']['config_seed_mean'])} | {_range(m['accuracy']['range'])} | "
                          f"{_sd_range(m['accuracy']['tm_seed_sd'])} | "
                          f"{_num(acc_paper)} | {_yes(m['accuracy']['paper_within_range'])} | "
                          + " | ".join(_range(m[k]["range"]) for k in F1_KINDS)
                          + f" | {_num(f1_paper)} | "
                          + " / ".join(_yes(m[k]["paper_within_range"]) for k in F1_KINDS)
                          + f" | {s['not_converged']} of {len(s['cells']) * len(g['tm_seeds'])} |")
        md.append("")
        md += ["Per build: whether any reading and held-out share gives the paper's number within its range, the "
               "nearest cell (mean over the TM seeds at one MLP seed), the single fits' range under the pipeline's "
               "reading, the single fits (one TM seed, one MLP seed; every reading and share) at or above the paper's "
               "number and the best of them, and the stage rerun at the configuration's seed and share against the "
               "records.", "",
               "| build | TM seeds | paper accuracy | within (reading, held out) | nearest accuracy cell | paper F1 | "
               "within (reading, held out, F1) | nearest F1 cell | single fits, pipeline 20 %: accuracy / F1 known "
               "| single fits ≥ paper: accuracy / F1 known (best fit) | records reproduced |",
               "|---|---:|---:|---|---|---:|---|---|---|---|---|"]
        for g in groups:
            v = g["verdict"]
            pipe = next((s for s in g["summaries"] if s["reading"] == "pipeline"
                         and s["test_size"] == ev["test_sizes"][0]), None)
            fits = "–" if pipe is None else " / ".join(_range([pipe["metrics"][k]["fits"]["min"],
                                                               pipe["metrics"][k]["fits"]["max"]])
                                                       for k in ("accuracy", "f1_known"))
            same = sum(r["same"] for r in g["reproduced"])
            reach = "–"
            if v["accuracy"] and v["f1"]:
                best = v["accuracy"]["best_fit"]
                reach = (f"{v['accuracy']['fits_at_or_above_paper']['accuracy']} / "
                         f"{v['f1']['fits_at_or_above_paper']['f1_known']} of {v['accuracy']['n_fits']} "
                         f"({_num(best['value'])}, {best['reading']} {100 * best['test_size']:.0f} %)")
            cells = []
            for key in ("accuracy", "f1"):
                if v[key] is None:
                    cells += ["–", "–", "–"]
                    continue
                within = "; ".join(f"{w['reading']} {100 * w['test_size']:.0f} %"
                                   + (f" {w['metric']}" if key == "f1" else "") for w in v[key]["within"]) or "none"
                n = v[key]["nearest"]
                cells += [_num(v[key]["paper"]), within,
                          f"{_num(n['mean'])} ({n['reading']}, {100 * n['test_size']:.0f} %, seed {n['mlp_seed']}"
                          + (f", {n['metric']}" if key == "f1" else "") + f"; {n['gap']:+.2f})"]
            md.append(f"| {g['impl']} | {len(g['tm_seeds'])} | " + " | ".join(cells) + f" | {fits} | {reach} | "
                      f"{same} of {len(g['reproduced'])} |")
        md.append("")
    md += ["Fixed by the saved class sums (no rerun here varies them):", ""]
    md += [f"- {f['what']}: {f['why']}." for f in ev["fixed"]]
    n_fits = sum(len(s["cells"]) * len(g["tm_seeds"]) for g in ev["groups"] for s in g["summaries"])
    md += ["", f"{n_fits} fits from {len(ev['sources'])} files (MLP stage records and the class sums they were "
           "trained on); the record lists them with their sha256.", ""]
    return "\n".join(md)


def render_convergence(ev: dict, source: str) -> str:
    w, m = ev["windows"], CURVE_METRICS[ev["metric"]]
    name, f1 = m["label"], "f1" in m["also"]
    versus = any("last10_vs_paper" in g for g in ev["groups"])  # records built with the verdicts' thresholds
    md = [HEADER.format(source=source), "", f"#### Evidence (convergence): {ev['question']}", "",
          f"| data | build (setting) | seeds | test rows | last-10 {name} | " + ("last-10 F1 | " if f1 else "")
          + f"paper {name} | " + ("paper F1 | " if f1 else "")
          + (f"last-10 {name} within the paper's spread (the tables' rule) | " if versus else "")
          + f"epochs {w['early'][0]}-{w['early'][1]} | epochs {w['late'][0]}-{w['late'][1]} | late − early | slope, "
          f"last {w['slope_last']} epochs ({m['slope_unit']}) | sd over the last {w['last']} epochs | best-epoch "
          f"{name} (not fair) | best epochs | still improving |",
          "|---|---|---:|---:|---:|" + ("---:|" if f1 else "") + "---:|" + ("---:|" if f1 else "")
          + ("---|" if versus else "") + "---:|---:|---:|---:|---:|---:|---|---|"]
    for g in ev["groups"]:
        s = g["summary"]
        paper = [(g["paper"].get(k) or [None, None]) for k in (ev["metric"], "f1")]
        label = dataset_label(g["experiment"])
        md.append(f"| {label} | {g['impl']} ({g['params']}) | {len(g['seeds'])} | {g['n_test']} | "
                  f"{_pm(s['last10'])} | " + (f"{_pm(s['last10_f1'])} | " if f1 else "") + f"{_pm(paper[0])} | "
                  + (f"{_pm(paper[1])} | " if f1 else "") + (f"{_versus_cell(g.get('last10_vs_paper'))} | "
                                                              if versus else "")
                  + f"{_pm(s['mean_41_50'])} | {_pm(s['mean_91_100'])} | {_pm(s['late_minus_early'])} | "
                  f"{_pm(s['slope_last20'], 3)} | {_pm(s['last10_sd'])} | {_pm(s['best'])} | "
                  f"{', '.join(map(str, g['best_epochs']))} | {_improving_cell(g)} |")
    best, improving = ("best", "rising") if m["higher"] else ("lowest", "falling")
    md += ["", "Mean ± sample standard deviation (ddof=1) over the seeds of each run's number. last-10: each run's "
           f"mean over its last {w['last']} epochs (the tables' number). slope: least-squares slope of a run's test "
           f"{name} over its last {w['slope_last']} epochs. still improving: yes where that slope is {improving} "
           "(its mean over the seeds more than two standard errors " + ("above" if m["higher"] else "below")
           + " zero; " + ("falling: below" if m["higher"] else "rising: above") + "; else flat); late − "
           f"early: higher, lower or the same by the same rule. Best-epoch {name}: each run's {best} test {name} over "
           "its epochs; the epoch is chosen on the test set, so it is not a fair number to report: it shows only what "
           "the trajectory reaches." + (
               f" Within the paper's spread: the last-10 {name} against the paper's by the rule the claims page "
               "judges a table cell with (|Δ| at most the tolerance, from both standard deviations and the floor of "
               "config claims.spread)." if versus else ""), ""]
    shown = [g for g in ev["groups"] if g["mean_curve"]]
    if shown:
        md += [f"Mean test {name} over the seeds, per 10 epochs (mean over the window of the per-epoch means), and "
               "the best epoch of that mean curve (also chosen on the test set):", "",
               "| epochs | " + " | ".join(f"{dataset_label(g['experiment'])} {_build(g, ev)}" for g in shown) + " |",
               "|---|" + "---:|" * len(shown)]
        n_windows = max(len(g["mean_curve"]["windows"]) for g in shown)
        for i in range(n_windows):
            first = next(g["mean_curve"]["windows"][i] for g in shown if i < len(g["mean_curve"]["windows"]))
            md.append(f"| {first[0]}-{first[1]} | " + " | ".join(
                _num(g["mean_curve"]["windows"][i][2]) if i < len(g["mean_curve"]["windows"]) else "–"
                for g in shown) + " |")
        md.append("| best epoch (its mean) | " + " | ".join(
            f"{g['mean_curve']['best_epoch']} ({_num(g['mean_curve']['best'])})" for g in shown) + " |")
        md.append(f"| epochs {m['reach']} the paper (first-last) | " + " | ".join(
            "–" if g["mean_curve"]["reaches_paper"] is None else
            f"{g['mean_curve']['epochs_reaching_paper']}" + (
                " ({}-{})".format(*g["mean_curve"]["first_last_reaching_paper"])
                if g["mean_curve"]["first_last_reaching_paper"] else "") for g in shown) + " |")
        md.append("")
    md += [f"Per run: best epoch (its {name}), last-10 {name}, slope over the last "
           f"{w['slope_last']} epochs, and the epochs {m['reach']} the paper's {name}.", "",
           f"| data | build | seed | best epoch ({name}) | last-10 | epochs 41-50 | epochs 91-100 | slope | "
           f"epochs {m['sign']} paper |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for g in ev["groups"]:
        for p in g["per_seed"]:
            md.append(f"| {dataset_label(g['experiment'])} | {_build(g, ev)} | {p['seed']} | {p['best_epoch']} "
                      f"({_num(p['best'])}) | {_num(p['last10'])} | {_num(p['mean_41_50'])} | "
                      f"{_num(p['mean_91_100'])} | {_num(p['slope_last20'], 3)} | "
                      f"{'–' if p['epochs_reaching_paper'] is None else p['epochs_reaching_paper']} |")
    md += ["", f"Built from {len(ev['sources'])} run records; each record holds its own provenance.", ""]
    return "\n".join(md)


def _versus_cell(v: dict | None) -> str:
    if not v:
        return "–"
    return f"{_yes(v['within'])} (Δ {v['diff']:+.2f}, tolerance {_num(v['tolerance'])})"


def _build(g: dict, ev: dict) -> str:
    """A group's build, with its setting where the record holds another setting of the same build and data."""
    twins = sum((o["experiment"], o["impl"]) == (g["experiment"], g["impl"]) for o in ev["groups"])
    return g["impl"] + (f" ({g['params']})" if twins > 1 else "")


# -- command line ----------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_novelty",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    mlp = sub.add_parser("mlp-stage", help="the novelty MLP stage refitted on the saved class sums")
    conv = sub.add_parser("convergence", help="per-epoch test accuracy (or MAE) of the TM records")
    for p, name, experiments in ((mlp, "newsgroups20_mlp_stage", ["newsgroups20", "bbc_sport"]),
                                 (conv, "wsd_pytm_convergence", ["wsd_apple", "wsd_java"])):
        p.add_argument("--results", required=True)
        p.add_argument("--out", required=True, help=f"the evidence record, named <name>.json (default {name}.json)")
        p.add_argument("--name", default=name)
        p.add_argument("--experiments", nargs="+", default=experiments)
        p.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    mlp.add_argument("--config", default="config/config.yaml", help="its mlp_novelty is the stage's setting")
    conv.add_argument("--config", default=None, help="a configuration file: only each implementation's main setting")
    conv.add_argument("--also", nargs="+", default=[], metavar="IMPL/PARAMS",
                      help="with --config: these settings too (folders below each experiment)")
    mlp.add_argument("--mlp-seeds", type=int, nargs="+", default=list(range(10)),
                     help="MLP seeds besides the configuration's")
    mlp.add_argument("--test-sizes", type=float, nargs="+", default=[0.2, 0.5],
                     help="shares of the MLP's rows held out (the configuration's always)")
    mlp.add_argument("--readings", nargs="+", default=list(READINGS), choices=list(READINGS))
    mlp.add_argument("--threads", type=int, default=1, help="BLAS threads for the MLP fits")
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    """The work of one command line (``main``'s subcommands)."""
    check_out(args.out, args.name, hint=" (--name)")
    if args.command == "mlp-stage":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(args.threads):
            ev = build_mlp_stage(args.results, args.config, args.reference, args.experiments, args.mlp_seeds,
                                 args.test_sizes, args.readings, args.name,
                                 log=lambda line: print(line, file=sys.stderr))
        ev["provenance"]["threads"] = args.threads
    else:
        ev = build_convergence(args.results, args.reference, args.experiments, args.name, args.config, args.also)
    write_record(args.out, ev)


if __name__ == "__main__":
    sys.exit(main())
