"""Evidence behind a gap that the test split alone can make: how far an experiment's accuracy moves when only the
train/test split of the same rows changes. An evidence record as :mod:`asynctm.artifacts.evidence` (schema, kind,
name, question, provenance; rendered by its ``render`` command), of kind ``split_spread``:

The paper protocol's split of an experiment (SemEval: the authors' ``train_test_split(test_size=0.25)`` of
TRAIN_FILE.TXT, called without a ``random_state``, so each of their runs was tested on other rows than ours) is
drawn again from the same processed rows (training and test rows together: the features, vocabulary and
encoding stay the paper protocol's) once per split seed, with the same test share and shuffling, and our CPU build
trains at the experiment's main setting (config/config.yaml) on each. Per split: the mean over the last 10 epochs of
accuracy and F1, as the tables take them. Over the splits: mean, sample standard deviation and range, beside our
committed records of every implementation on the pipeline's one split, the paper's numbers, and the sampling
standard deviation of an accuracy measured on that many test rows (sqrt(p (1 - p) / n)). No hyperparameter is chosen
here: every split trains the configured setting.

    python -m asynctm.artifacts.evidence_split --data-dir data --results results \\
        --out results/evidence/semeval_split_spread.json [--experiment semeval] [--split-seeds 0 1 2 3 4] \\
        [--seed 0] [--threads 2] [--epochs N]

``--epochs`` shortens the training below the main setting's (a reduced protocol: the record and its table say
so). Bad input (a missing dataset or record, an experiment that is not classification) stops with one line naming
the file or field and the fix, and writes nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from .evidence_common import (
    HEADER,
    LAST,
    SCHEMA,
    EvidenceError,
    _mean_sd,
    _pm,
    check_out,
    main_params,
    paper_implementation,
    paper_number,
    read_config,
    read_reference,
    reading_experiment,
    run_command,
    setting_records,
    write_record,
)
from .evidence_common import provenance as _provenance
from .render import dataset_label

DEFAULT_REFERENCE = Path("paper_tables/reference/paper_numbers.csv")
METRICS = ("accuracy", "f1")


def _settings(config_path, experiment: str, seed: int, epochs: int | None) -> tuple[dict, str]:
    """The run settings of ``experiment``'s main setting for our CPU build (asynctm.experiments.plan), and its
    params folder; ``epochs`` (if given) shortens the training."""
    from ..experiments import plan

    config = read_config(config_path)
    params = main_params(config, config_path, experiment)
    with reading_experiment(config_path, experiment):
        settings = plan.tm_run_settings(config, experiment, "tm_cpu", params, seed)
    if settings["task"] != "classification":
        raise EvidenceError(f"--experiment {experiment}: its task is {settings['task']}; the split spread is "
                            "measured for classification experiments")
    full = settings["hyperparameters"]["epochs"]
    if epochs is not None:
        if not 1 <= epochs <= full:
            raise EvidenceError(f"--epochs {epochs}: must lie in 1..{full} (the main setting's epochs)")
        settings["hyperparameters"] = {**settings["hyperparameters"], "epochs": epochs}
    return settings, params


def _resplit(ds, split_seed: int):
    """The processed rows (training and test together, in that order) split again as the authors split:
    sklearn's train_test_split with the paper protocol's test share, shuffled, ``random_state=split_seed``."""
    import scipy.sparse as sp
    from sklearn.model_selection import train_test_split

    X = (sp.vstack([ds.X_train, ds.X_test]).tocsr() if sp.issparse(ds.X_train)
         else np.concatenate([ds.X_train, ds.X_test]))
    y = np.concatenate([ds.y_train, ds.y_test])
    n_test = ds.X_test.shape[0]
    tr, te = train_test_split(np.arange(len(y)), test_size=n_test, random_state=split_seed, shuffle=True)
    return X[tr], y[tr], X[te], y[te]


def _train(settings: dict, threads: int, X_train, y_train, X_test, y_test, say) -> list[dict]:
    """Per-epoch test metrics of our CPU build trained with ``settings`` (asynctm.experiments.run's peer)."""
    from ..experiments.metrics import evaluate
    from ..experiments.run import make_tm_peer

    peer = make_tm_peer(settings, threads)
    try:
        peer.prepare(X_train, y_train)
        epochs = []
        for epoch in range(1, settings["hyperparameters"]["epochs"] + 1):
            t0 = time.perf_counter()
            peer.fit_epoch(X_train, y_train)
            train_s = time.perf_counter() - t0
            m, _ = evaluate("classification", y_test, peer.predict(X_test), settings["f1"])
            epochs.append({"epoch": epoch, "train_s": train_s, **{k: float(m[k]) for k in METRICS}})
        say(f"  last epoch: accuracy {epochs[-1]['accuracy']:.2f}, F1 {epochs[-1]['f1']:.2f}")
        return epochs
    finally:
        peer.close()


def _records(results: Path, experiment: str, params: str) -> list[dict]:
    """Our committed records of the main setting, per implementation: last-10 accuracy and F1 over the seeds."""
    out = []
    for row, recs in setting_records(results, experiment, params):
        for metric in METRICS:
            try:
                row[metric] = _mean_sd([float(np.mean([e[metric] for e in r["epochs"][-LAST:]])) for _, r in recs])
            except (KeyError, TypeError) as exc:
                raise EvidenceError(f"{recs[0][0].parent}: field 'epochs' lacks {exc} in a record; rerun it") from None
        row["n_test"] = int(recs[0][1]["dataset"]["n_test"])
        out.append(row)
    if not out:
        raise EvidenceError(f"{results / experiment}: no records of the main setting {params}; run them first")
    return out


def build_split_spread(data_dir, results, reference=DEFAULT_REFERENCE, experiment: str = "semeval",
                       split_seeds=(0, 1, 2, 3, 4), seed: int = 0, threads: int = 2, epochs: int | None = None,
                       config="config/config.yaml", name: str | None = None, say=print) -> dict:
    """The ``split_spread`` evidence record (module docstring)."""
    from ..experiments.run import load_dataset

    results = Path(results)
    settings, params = _settings(config, experiment, seed, epochs)
    try:
        ds = load_dataset(data_dir, settings)
    except (FileNotFoundError, OSError, ValueError) as exc:
        raise EvidenceError(f"{exc}") from None
    frame = read_reference(reference, "; pass --reference paper_tables/reference/paper_numbers.csv")
    ours = _records(results, experiment, params)  # through the record gate before any training: a bad record stops it
    splits = []
    for k in split_seeds:
        say(f"split random_state={k}: training {settings['impl']} {params} for "
            f"{settings['hyperparameters']['epochs']} epochs on {threads} thread(s)")
        X_train, y_train, X_test, y_test = _resplit(ds, k)
        per_epoch = _train(settings, threads, X_train, y_train, X_test, y_test, say)
        splits.append({"split_seed": int(k), "n_train": int(len(y_train)), "n_test": int(len(y_test)),
                       **{f"{m}_last10": float(np.mean([e[m] for e in per_epoch[-LAST:]])) for m in METRICS},
                       "per_epoch": per_epoch})
    summary = {m: {"mean_sd": _mean_sd([s[f"{m}_last10"] for s in splits]),
                   "range": [min(s[f"{m}_last10"] for s in splits), max(s[f"{m}_last10"] for s in splits)]}
               for m in METRICS}
    dataset = settings["dataset"]
    paper = [{"metric": r.metric, **paper_number(r)}
             for r in frame[(frame["dataset"] == dataset) & frame["metric"].isin(METRICS)].itertuples()]
    p = summary["accuracy"]["mean_sd"][0] / 100.0
    n_test = ds.X_test.shape[0]
    full = settings["hyperparameters"]["epochs"] if epochs is None else None
    return {"schema": SCHEMA, "kind": "split_spread", "name": name or f"{experiment}_split_spread",
            "question": f"How far does {dataset_label(experiment)}'s accuracy move when only the "
                        "train/test split of the same rows changes? (The authors drew their split without a "
                        "random_state, so their runs were tested on other rows than ours.)",
            "provenance": {**_provenance(f"our CPU build trained on {len(splits)} splits of the paper protocol's "
                                         "rows", [seed, *split_seeds], (Path(__file__),),
                                         "asynctm.artifacts.evidence_split"),
                           "threads": threads},
            "experiment": experiment, "dataset": dataset, "params": params, "impl": settings["impl"],
            "hyperparameters": settings["hyperparameters"], "reduced_epochs": None if full else epochs,
            "data": {"protocol": settings["protocol"], "n_rows": int(ds.X_train.shape[0] + n_test),
                     "n_test": int(n_test), "n_features": int(ds.X_train.shape[1]),
                     "split": ds.meta.get("split")},
            "splits": splits, "summary": summary,
            "sampling_sd_accuracy": 100.0 * math.sqrt(p * (1.0 - p) / n_test),
            "ours_on_the_pipeline_split": ours, "the_paper": paper}


def render_split_spread(ev: dict, source: str) -> str:
    label = dataset_label(ev["experiment"])
    h = ev["hyperparameters"]
    reduced = f", reduced to {ev['reduced_epochs']} epochs" if ev.get("reduced_epochs") else ""
    md = [HEADER.format(source=source), "", f"#### Evidence ({label}): {ev['question']}", "",
          f"Our CPU build ({ev['impl']}, {ev['params']}{reduced}: {h['n_clauses']} clauses, T {h['T']}, s {h['s']}) "
          f"trained on {len(ev['splits'])} splits of the same {ev['data']['n_rows']:,} rows "
          f"({ev['data']['n_test']:,} test rows each, {ev['data']['n_features']:,} features, the paper protocol's "
          f"preparation; the pipeline's split: {ev['data']['split']}).", "",
          "| split (random_state) | accuracy | F1 |", "|---|---:|---:|"]
    for s in ev["splits"]:
        md.append(f"| {s['split_seed']} | {s['accuracy_last10']:.2f} | {s['f1_last10']:.2f} |")
    acc, f1 = ev["summary"]["accuracy"], ev["summary"]["f1"]
    md.append(f"| **over the splits** | **{_pm(acc['mean_sd'])}** (range {acc['range'][0]:.2f}-{acc['range'][1]:.2f}) "
              f"| **{_pm(f1['mean_sd'])}** (range {f1['range'][0]:.2f}-{f1['range'][1]:.2f}) |")
    md += ["", f"On the pipeline's one split (our records of the main setting, every implementation; sampling standard "
           f"deviation of an accuracy on {ev['data']['n_test']:,} test rows: {ev['sampling_sd_accuracy']:.2f} points):",
           "", "| implementation | seeds | accuracy | F1 | the paper's accuracy | the paper's F1 |",
           "|---|---:|---:|---:|---:|---:|"]
    paper = {(p["implementation"], p["metric"]): p for p in ev["the_paper"]}
    for r in ev["ours_on_the_pipeline_split"]:
        impl = paper_implementation(r["impl"])
        cells = []
        for metric in METRICS:
            p = paper.get((impl, metric))
            cells.append("–" if p is None else _pm([p["mean"], p["std"]]) + ("" if impl == r["impl"] else f" ({impl})"))
        md.append(f"| {r['impl']} | {r['records']} | {_pm(r['accuracy'])} | {_pm(r['f1'])} | {' | '.join(cells)} |")
    md += ["", f"Each split's (and each seed's) mean over its last {LAST} epochs; mean ± sample standard deviation "
           "(ddof=1) over the splits (seeds); accuracy and F1 in %. Training seed "
           f"{ev['provenance']['seeds'][0]} on every split, the configured setting throughout (nothing chosen on "
           "test rows).", ""]
    return "\n".join(md)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_split", description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True, help="the evidence record, named <name>.json")
    ap.add_argument("--experiment", default="semeval")
    ap.add_argument("--name", default=None, help="default <experiment>_split_spread")
    ap.add_argument("--split-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--seed", type=int, default=0, help="the TM's seed on every split")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=None, help="fewer epochs than the main setting (reduced)")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    name = args.name or f"{args.experiment}_split_spread"
    check_out(args.out, name, hint=" (--name)")
    ev = build_split_spread(args.data_dir, args.results, args.reference, args.experiment, args.split_seeds,
                            args.seed, args.threads, args.epochs, args.config, name,
                            say=lambda line: print(line, file=sys.stderr))
    write_record(args.out, ev)


if __name__ == "__main__":
    sys.exit(main())
