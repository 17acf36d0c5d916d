"""Evidence behind the numbers of our tables that differ from the paper: records and their tables.

An evidence record is one JSON file, ``results/evidence/<name>.json``, that answers one question about a gap
between our tables and the paper's, with its provenance (commit, host, versions, seeds) and the sources it
was built from. Kinds built here:

- ``run_groups``: groups of our TM's run records (results/README.md) compared side by side, e.g. one setting
  run with 2 threads and with 1, or under two dataset protocols: per group the final and last-10 MAE, the
  training diagnostics (literals per clause, Type Ia / Ib / II feedback) over the epochs, time and load; and,
  where a seed was run twice, whether the two runs are the same run (identical per-epoch metrics).
- ``protocols``: our records of each experiment's main setting under the paper's preparation and under the
  clean one (the authors' questionable choices fixed), per implementation and metric, with what the two
  preparations differ in.
- ``baselines``: simple predictors fitted on the training rows of a dataset under the readings of the paper's
  wording that fit it (a split, a feature set), with their test MAE beside the paper's and our records'.

Other kinds are built beside this module and rendered by it: ``time_model`` (:mod:`.evidence_cost`, what the
paper's Table 4 times imply under our cost model), ``mlp_stage`` and ``convergence`` (:mod:`.evidence_novelty`) and
``host_speedups`` (:mod:`.evidence_host`, pyTsetlinMachine and our GPU builds timed on one GPU machine) and
``gpu_fill`` (:mod:`.evidence_fill`, the GPU threads each build launches along a clause sweep) and ``error_split``
(:mod:`.evidence_errors`, which split of the errors between two classes each accuracy and F1 pair implies) and
``implied_times`` (:mod:`.evidence_implied`, the pyTsetlinMachine epoch each of the paper's speed-ups implies).
What all share (schema, header, provenance, reading, number formats) lives in :mod:`.evidence_common`.

    python -m asynctm.artifacts.evidence runs --name NAME --question TEXT --results results \\
        --group 'LABEL=GLOB' [--group ...] [--repeat 'LABEL=LABEL' ...] --out results/evidence/NAME.json
    python -m asynctm.artifacts.evidence blogfeedback --data-dir data --results results \\
        --out results/evidence/blogfeedback_bound.json [--split-seeds 0 1 2 3 4] [--seed 0] [--threads 1]
    python -m asynctm.artifacts.evidence bike-sharing --data-dir data --results results \\
        --out results/evidence/bike_sharing_leak_baselines.json [--seed 0] [--threads 1]
    python -m asynctm.artifacts.evidence protocols --results results --clean results/evidence/protocol_clean \\
        --data-dir data --out results/evidence/protocol_paper_vs_clean.json
    python -m asynctm.artifacts.evidence render --evidence results/evidence --tables-dir paper_tables
    python -m asynctm.artifacts.evidence check --evidence results/evidence --results results

``check`` compares every file an evidence record cites with its sha256 (run records, the records of the folders
beside the evidence records, other evidence records, the paper's numbers) against the file there now, and names each
evidence record whose sources changed or went, with the fix: rebuild it. ``render`` writes
``paper_tables/evidence_<name>.md`` for every evidence record; the same records give the same
bytes (no timestamps, no host names in the tables: those live in the records). Run records are read through the
record store's gate (asynctm.store), as the tables read them. Bad input (a run record the gate refuses, an unreadable
or incomplete evidence record, a glob that matches nothing, a missing dataset) stops with one line naming the file
and the field (the gate's RecordError or EvidenceError), and writes nothing.
"""

from __future__ import annotations

import argparse
import glob as globbing
import sys
from pathlib import Path

import numpy as np

from ..io import write_text_atomic
from .evidence_common import (
    HEADER,
    LAST,
    SCHEMA,
    EvidenceError,
    _field,
    _mean_sd,
    _num,
    _pm,
    _sha256,
    _sig,
    check_out,
    citation_roots,
    citations,
    folder_records,
    main_params,
    paper_implementation,
    paper_number,
    read_config,
    read_json_object,
    read_reference,
    read_run_record,
    relative,
    run_command,
    setting_records,
    stale_sources,
    write_record,
)
from .evidence_common import provenance as _provenance
from .evidence_cost import render_same_gpu, render_time_model
from .evidence_errors import render_error_split
from .evidence_fill import render_gpu_fill
from .evidence_host import render_host_speedups
from .evidence_implied import render_implied
from .evidence_novelty import render_convergence, render_mlp_stage
from .evidence_split import render_split_spread
from .render import dataset_label

EPOCHS_SHOWN = (1, 2, 5, 10, 20, 50, 100)  # the per-epoch table's rows (those a run has)
DIAGNOSTICS = ("literals_per_clause", "positive_literals_per_clause", "negated_literals_per_clause",
               "type_ia_feedback", "type_ib_feedback", "type_ii_feedback")


def provenance(what: str, seeds=None, code=()) -> dict:
    """The record's provenance (:func:`evidence_common.provenance`), with this module's code among its digests."""
    return _provenance(what, seeds, (Path(__file__), *code))


# -- run groups ----------------------------------------------------------------------------------------------

def read_run(path: Path, root: Path) -> dict:
    """One TM run record (read through the record store's gate, below the results root its path names: a run group
    may read records of several roots below ``root``), reduced to what a run group needs; a record the gate refuses
    raises its RecordError, one that is not a regression TM run record EvidenceError, naming the file and the
    field."""
    rec = read_run_record(path)
    epochs = _field(rec, "epochs", path)
    if not isinstance(epochs, list) or not epochs or any(not isinstance(e, dict) or "mae" not in e for e in epochs):
        raise EvidenceError(f"{path}: field 'epochs' needs an 'mae' in every entry (a regression run); "
                            "pass regression records only")
    prov = _field(rec, "provenance", path)
    baseline = (rec.get("dataset") or {}).get("constant_baseline") or {}
    # records of runs before the training diagnostics existed have none: their groups show MAE and time only
    diag = all(isinstance(e.get("diagnostics"), dict) and all(k in e["diagnostics"] for k in DIAGNOSTICS)
               for e in epochs)
    return {"path": relative(path, root), "sha256": _sha256(path), "experiment": _field(rec, "experiment", path),
            "impl": _field(rec, "impl", path), "params": _field(rec, "params", path),
            "seed": int(_field(rec, "seed", path)), "protocol": _field(rec, "dataset.protocol", path),
            "n_features": _field(rec, "dataset.n_features", path), "n_train": _field(rec, "dataset.n_train", path),
            "n_test": _field(rec, "dataset.n_test", path), "threads": prov.get("threads"),
            "cpu_model": prov.get("cpu_model"), "git_commit": prov.get("git_commit"),
            "git_dirty": prov.get("git_dirty"), "load": prov.get("load_average_1min_at_end"),
            "s_epoch": _field(rec, "timing.train_s_mean", path), "constant_mae": baseline.get("mae"),
            "variant": {k: rec["hyperparameters"][k] for k in ("tally", "regression_rule", "order")
                        if k in (rec.get("hyperparameters") or {})},
            "mae": [float(e["mae"]) for e in epochs],
            "diagnostics": ({k: [float(e["diagnostics"][k]) for e in epochs] for k in DIAGNOSTICS}
                            if diag else None)}


def summarise_group(label: str, runs: list[dict]) -> dict:
    """Mean and sample sd over a group's runs (one per seed), and the per-epoch means over them."""
    if not runs:
        raise EvidenceError(f"group {label!r}: no run records; check its glob")
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise EvidenceError(f"group {label!r}: seed {max(seeds, key=seeds.count)} appears twice "
                            f"({', '.join(r['path'] for r in runs if seeds.count(r['seed']) > 1)}); give a "
                            "repeated run a group of its own")
    n_epochs = {len(r["mae"]) for r in runs}
    if len(n_epochs) != 1:
        raise EvidenceError(f"group {label!r}: runs of {sorted(n_epochs)} epochs ({runs[0]['path']}, ...); "
                            "a group holds runs of one setting")
    settings = {(r["experiment"], r["impl"], r["params"], r["protocol"]) for r in runs}
    if len(settings) != 1:
        raise EvidenceError(f"group {label!r}: runs of several settings {sorted(settings)}; one group per setting")
    experiment, impl, params, protocol = settings.pop()
    n = n_epochs.pop()
    last = min(LAST, n)
    with_diag = all(r["diagnostics"] is not None for r in runs)
    out = {"label": label, "experiment": experiment, "impl": impl, "params": params, "protocol": protocol,
           "n_epochs": n, "seeds": sorted(seeds), "runs": [{k: r[k] for k in ("path", "sha256", "seed")}
                                                          for r in sorted(runs, key=lambda r: r["seed"])],
           "threads": sorted({str(r["threads"]) for r in runs}),
           "cpu_models": sorted({str(r["cpu_model"]) for r in runs}),
           "git_commits": sorted({str(r["git_commit"]) for r in runs}),
           "git_dirty_max": max((r["git_dirty"] for r in runs if r["git_dirty"] is not None), default=None),
           "variant": runs[0]["variant"], "n_features": runs[0]["n_features"],
           "n_train": runs[0]["n_train"], "n_test": runs[0]["n_test"],
           "load_range": [min(r["load"] for r in runs), max(r["load"] for r in runs)]
           if all(r["load"] is not None for r in runs) else None,
           "final_mae": _mean_sd([r["mae"][-1] for r in runs]),
           "last10_mae": _mean_sd([float(np.mean(r["mae"][-last:])) for r in runs]),
           "constant_mae": _mean_sd([r["constant_mae"] for r in runs]),
           "s_epoch": _mean_sd([r["s_epoch"] for r in runs]),
           "per_seed": [{"seed": r["seed"], "final_mae": r["mae"][-1], "last10_mae": float(np.mean(r["mae"][-last:])),
                         "s_epoch": r["s_epoch"], "load": r["load"]} for r in sorted(runs, key=lambda r: r["seed"])],
           "per_epoch": {"mae": [float(v) for v in np.mean([r["mae"] for r in runs], axis=0)]},
           "diagnostics_last10": None}
    if with_diag:
        for key in DIAGNOSTICS:
            out["per_epoch"][key] = [float(v) for v in np.mean([r["diagnostics"][key] for r in runs], axis=0)]
        out["diagnostics_last10"] = {key: _mean_sd([float(np.mean(r["diagnostics"][key][-last:])) for r in runs])
                                     for key in DIAGNOSTICS}
    return out


def compare_repeats(label_a: str, runs_a: list[dict], label_b: str, runs_b: list[dict]) -> list[dict]:
    """For each seed in both groups: whether the two runs are one run (identical per-epoch MAE), the epochs at
    which they first differ, and both final MAEs."""
    by_seed = {r["seed"]: r for r in runs_b}
    out = []
    for a in sorted(runs_a, key=lambda r: r["seed"]):
        b = by_seed.get(a["seed"])
        if b is None:
            continue
        n = min(len(a["mae"]), len(b["mae"]))
        first = next((i + 1 for i in range(n) if a["mae"][i] != b["mae"][i]), None)
        out.append({"a": label_a, "b": label_b, "seed": a["seed"], "a_path": a["path"], "b_path": b["path"],
                    "identical": first is None and len(a["mae"]) == len(b["mae"]),
                    "first_differing_epoch": first, "a_final_mae": a["mae"][-1], "b_final_mae": b["mae"][-1]})
    if not out:
        raise EvidenceError(f"repeat {label_a!r} vs {label_b!r}: no seed is in both groups; check their globs")
    return out


def _parse_pairs(items, what: str) -> list[tuple[str, str]]:
    out = []
    for item in items or ():
        label, sep, value = item.partition("=")
        if not sep or not label.strip() or not value.strip():
            raise EvidenceError(f"--{what} {item!r}: expected LABEL=VALUE")
        out.append((label.strip(), value.strip()))
    return out


def build_run_groups(name: str, question: str, results, groups, repeats=(), code=()) -> dict:
    """The ``run_groups`` evidence record: ``groups`` is [(label, glob relative to ``results``)], ``repeats``
    [(label, label)] of groups whose common seeds are compared run against run."""
    results = Path(results)
    runs = {}
    for label, pattern in groups:
        if label in runs:
            raise EvidenceError(f"--group {label!r} is given twice; labels must differ")
        files = sorted(Path(p) for p in globbing.glob(str(results / pattern)))
        if not files:
            raise EvidenceError(f"--group {label}={pattern}: no record under {results} matches; check the glob")
        runs[label] = [read_run(p, results) for p in files]
    summaries = [summarise_group(label, group) for label, group in runs.items()]
    pairs = []
    for a, b in repeats:
        for label in (a, b):
            if label not in runs:
                raise EvidenceError(f"--repeat {a}={b}: no group labelled {label!r}; name two --group labels")
        pairs += compare_repeats(a, runs[a], b, runs[b])
    seeds = sorted({s for g in summaries for s in g["seeds"]})
    return {"schema": SCHEMA, "kind": "run_groups", "name": name, "question": question,
            "provenance": provenance(f"summary of {sum(len(g) for g in runs.values())} run records (the records "
                                     "carry each run's own provenance)", seeds, code),
            "groups": summaries, "repeats": pairs}


# -- baselines: BlogFeedback ---------------------------------------------------------------------------------

def _mae(y_true, y_pred) -> float:
    return float(np.mean(np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))))


def fit_baselines(X_train, y_train, X_test, y_test, seed: int) -> list[dict]:
    """Test MAE of the training median and of scikit-learn's HistGradientBoostingRegressor (default
    hyperparameters, ``random_state=seed``; its early stopping, on by default above 10,000 rows, holds out part
    of the training rows, never test rows) with the squared-error loss (its default) and with the absolute
    error, the metric the paper reports."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    median = float(np.median(y_train))
    rows = [{"model": "training median", "parameters": {"value": median}, "mae": _mae(y_test, np.full(len(y_test),
                                                                                                  median))}]
    for loss in ("squared_error", "absolute_error"):
        model = HistGradientBoostingRegressor(loss=loss, random_state=seed)
        model.fit(X_train, y_train)
        rows.append({"model": "HistGradientBoostingRegressor",
                     "parameters": {"loss": loss, "random_state": seed, "n_iter": int(model.n_iter_),
                                    "early_stopping": bool(model.do_early_stopping_)},
                     "mae": _mae(y_test, model.predict(X_test))})
    return rows


def _baseline_rows(reading: str, split_seed, features: str, Xtr, ytr, Xte, yte, seed: int) -> list[dict]:
    """:func:`fit_baselines` on one reading's split and feature set, each row with its targets' statistics."""
    stats = {"n_train": len(ytr), "n_test": len(yte), "test_target_mean": float(np.mean(yte)),
             "test_target_zero_fraction": float(np.mean(np.asarray(yte) == 0)),
             "train_target_mean": float(np.mean(ytr))}
    return [{"reading": reading, "split_seed": split_seed, "features": features, "n_features": int(Xtr.shape[1]),
             **stats, **row} for row in fit_baselines(Xtr, ytr, Xte, yte, seed)]


def _check_file_order(ds, y, n_train: int, processed: Path, raw_file: Path) -> None:
    if not (np.array_equal(ds.y_train, y[:n_train]) and np.array_equal(ds.y_test, y[n_train:])):
        raise EvidenceError(f"{processed}: its targets are not the file-order split of {raw_file}; prepare the "
                            "dataset again")


BASELINES_WHAT = ("training median and HistGradientBoostingRegressor fitted on training rows only (no hyperparameter "
                  "chosen on test rows)")


def _our_records(results: Path, config_path, experiment: str) -> list[dict]:
    """Final MAE of our TM records of an experiment's main setting (as ``config_path`` names it), per
    implementation."""
    params = main_params(read_config(config_path), config_path, experiment)
    return [{**row, "params": params, "final_mae": _mean_sd([float(_field(r, "final.mae", p)) for p, r in recs])}
            for row, recs in setting_records(results, experiment, params)]


def _paper_numbers(reference: Path, dataset: str) -> list[dict]:
    """The paper's MAEs for ``dataset`` (paper_tables/reference/paper_numbers.csv)."""
    frame = read_reference(reference)
    rows = frame[(frame["dataset"] == dataset) & (frame["metric"] == "mae")]
    return [paper_number(r) for r in rows.itertuples()]


def build_blogfeedback(data_dir, results, reference, split_seeds=(0, 1, 2, 3, 4), seed: int = 0,
                       config="config/config.yaml") -> dict:
    """The ``baselines`` evidence record for BlogFeedback: the readings of the paper's "the first 20,000 data
    samples ... 80% of the samples for training and the rest for evaluation" (Sec. 4.1) that our data layer can
    form, each with the training median and gradient boosting on the binarized features our TM gets and on the
    raw ones.

    - file order (ours): the first 16,000 of those rows train, the last 4,000 test; the binarized features are
      exactly our processed dataset's (``<data_dir>/processed/blogfeedback/paper``);
    - random 80/20 of the same 20,000 rows (one split per ``split_seeds``), the thermometer thresholds refitted
      on each split's training rows by the same rule.
    """
    from ..datasets import blogfeedback, thermometer
    from ..datasets.base import load_processed

    data_dir, results = Path(data_dir), Path(results)
    processed = data_dir / "processed" / "blogfeedback" / "paper"
    raw = data_dir / "raw" / "blogfeedback"
    if not (processed / "meta.json").is_file():
        raise EvidenceError(f"{processed}/meta.json: BlogFeedback is not prepared there; run "
                            "`snakemake --cores all data/processed/blogfeedback/paper/meta.json` (with data_mirror)")
    if not (raw / "blogData_train.csv").is_file():
        raise EvidenceError(f"{raw}/blogData_train.csv: the raw BlogFeedback file is not there; run the same "
                            "snakemake target")
    ds = load_processed(processed)
    X_raw, y = blogfeedback.load_table(raw)
    n_train = blogfeedback.N_TRAIN
    _check_file_order(ds, y, n_train, processed, raw / "blogData_train.csv")
    order = "file order: first 16,000 rows train, last 4,000 test (our records)"
    rows = _baseline_rows(order, None, "binarized (our TM's input)", np.asarray(ds.X_train, np.float32), ds.y_train,
                          np.asarray(ds.X_test, np.float32), ds.y_test, seed)
    rows += _baseline_rows(order, None, "raw", X_raw[:n_train], y[:n_train], X_raw[n_train:], y[n_train:], seed)
    names = [f"x{j + 1}" for j in range(X_raw.shape[1])]
    for s in split_seeds:
        perm = np.random.default_rng(s).permutation(len(y))
        tr, te = np.sort(perm[:n_train]), np.sort(perm[n_train:])
        bits, _ = thermometer.encode(X_raw, thermometer.quantile_thresholds(X_raw[tr], blogfeedback.MAX_THRESHOLDS),
                                     names)
        reading = "random 80/20 of the same 20,000 rows (numpy default_rng(split seed).permutation)"
        rows += _baseline_rows(reading, int(s), "binarized (our TM's rule, thresholds from these training rows)",
                               bits[tr].astype(np.float32), y[tr], bits[te].astype(np.float32), y[te], seed)
        rows += _baseline_rows(reading, int(s), "raw", X_raw[tr], y[tr], X_raw[te], y[te], seed)
    return {"schema": SCHEMA, "kind": "baselines", "name": "blogfeedback_bound", "experiment": "blogfeedback",
            "question": "What test MAE do a constant and an off-the-shelf regressor reach on the BlogFeedback split "
                        "our records use, and on the other splits the paper's wording allows?",
            "provenance": provenance(BASELINES_WHAT, [seed, *split_seeds],
                                     code=[Path(blogfeedback.__file__), Path(thermometer.__file__)]),
            "data": {"processed": processed.as_posix(), "processed_sha256": {p.name: _sha256(p) for p in
                                                                             sorted(processed.glob("*.npz"))},
                     "raw_sha256": _sha256(raw / "blogData_train.csv"), "rows": len(y)},
            "rows": rows, "paper": _paper_numbers(reference, "blogfeedback"),
            "ours": _our_records(results, config, "blogfeedback")}


def build_bike_sharing(data_dir, results, reference, seed: int = 0, config="config/config.yaml") -> dict:
    """The ``baselines`` evidence record for Bike Sharing's leak: under protocol ``paper`` the features hold
    ``casual`` and ``registered``, whose sum is the target; protocol ``clean`` drops them
    (:mod:`asynctm.datasets.bike_sharing`). The training median and gradient boosting on each protocol's binarized
    features (exactly our processed datasets) and raw features, on the split our records use."""
    from ..datasets import bike_sharing
    from ..datasets.base import load_processed

    data_dir, results = Path(data_dir), Path(results)
    raw = data_dir / "raw" / "bike_sharing"
    if not (raw / "hour.csv").is_file():
        raise EvidenceError(f"{raw}/hour.csv: the raw Bike Sharing file is not there; run `snakemake --cores all "
                            "data/processed/bike_sharing/paper/meta.json` (with data_mirror)")
    rows, digests = [], {}
    for protocol in ("paper", "clean"):
        processed = data_dir / "processed" / "bike_sharing" / protocol
        if not (processed / "meta.json").is_file():
            raise EvidenceError(f"{processed}/meta.json: Bike Sharing ({protocol}) is not prepared there; run "
                                f"`snakemake --cores all data/processed/bike_sharing/{protocol}/meta.json`")
        ds = load_processed(processed)
        X_raw, y, names = bike_sharing.load_table(raw, protocol)
        n_train, _ = bike_sharing.split_sizes(len(y))
        _check_file_order(ds, y, n_train, processed, raw / "hour.csv")
        digests[protocol] = {p.name: _sha256(p) for p in sorted(processed.glob("*.npz"))}
        reading = f"protocol {protocol} ({', '.join(names)})"
        for features, Xtr, Xte in (("binarized (our TM's input)", np.asarray(ds.X_train, np.float32),
                                    np.asarray(ds.X_test, np.float32)),
                                   ("raw", X_raw[:n_train], X_raw[n_train:])):
            rows += _baseline_rows(reading, None, features, Xtr, ds.y_train, Xte, ds.y_test, seed)
    return {"schema": SCHEMA, "kind": "baselines", "name": "bike_sharing_leak_baselines", "experiment": "bike_sharing",
            "question": "How much do casual and registered (whose sum is the target) give away? The training median "
                        "and gradient boosting with them (protocol paper) and without them (protocol clean), on the "
                        "split our records use",
            "provenance": provenance(BASELINES_WHAT, [seed], code=[Path(bike_sharing.__file__)]),
            "data": {"processed_sha256": digests, "raw_sha256": _sha256(raw / "hour.csv")},
            "rows": rows, "paper": _paper_numbers(reference, "bike_sharing"),
            "ours": _our_records(results, config, "bike_sharing")}


# -- protocols: the paper's preparation against the clean one ------------------------------------------------

PROTOCOL_META_KEYS = ("split", "vocabulary", "source_features", "n_features", "counts")


def _metric_runs(folder: Path, results: Path, metric: str, epochs_read: int | None = None) -> list[dict]:
    """The complete TM run records of ``folder`` (one setting), each reduced to its per-epoch ``metric`` (its first
    ``epochs_read`` epochs where given: the window of a reduced run it is compared with)."""
    runs = []
    for path, rec in folder_records(folder, results, fix="rerun it or move it away"):
        epochs = _field(rec, "epochs", path)
        if not isinstance(epochs, list) or not epochs or any(metric not in e for e in epochs):
            raise EvidenceError(f"{path}: field 'epochs' needs a {metric!r} in every entry; rerun this record")
        prov = _field(rec, "provenance", path)
        runs.append({"path": path.relative_to(results).as_posix(), "sha256": _sha256(path),
                     "seed": int(_field(rec, "seed", path)), "protocol": _field(rec, "dataset.protocol", path),
                     "n_features": _field(rec, "dataset.n_features", path),
                     "n_train": _field(rec, "dataset.n_train", path), "n_test": _field(rec, "dataset.n_test", path),
                     "git_commit": prov.get("git_commit"), "git_dirty": prov.get("git_dirty"),
                     "threads": prov.get("threads"), "values": [float(e[metric]) for e in epochs[:epochs_read]]})
    return runs


def _reduced_folder(impl_dir: Path, params: str) -> tuple[Path, int] | None:
    """A clean-protocol run of the main setting reduced to fewer epochs: the one folder of ``impl_dir`` named as
    ``params`` with a smaller ``_e<k>``, and its k; None where there is none."""
    stem, _, main_epochs = params.rpartition("_e")
    found = [(p, int(p.name[len(stem) + 2:])) for p in impl_dir.iterdir()
             if p.is_dir() and p.name.startswith(f"{stem}_e") and p.name[len(stem) + 2:].isdigit()]
    found = [(p, k) for p, k in found if k < int(main_epochs)]
    if len(found) > 1:
        raise EvidenceError(f"{impl_dir}: {len(found)} reduced runs of the main setting {params} "
                            f"({', '.join(sorted(p.name for p, _ in found))}); keep one")
    return found[0] if found else None


def _protocol_group(runs: list[dict], protocol: str, where: Path) -> dict:
    if not runs:
        raise EvidenceError(f"{where}: no run records; run them first or leave this setting out")
    found = {r["protocol"] for r in runs}
    if found != {protocol}:
        raise EvidenceError(f"{where}: field 'dataset.protocol' is {sorted(found)}, expected {protocol!r}; these "
                            "records belong to another protocol's folder")
    last = [float(np.mean(r["values"][-LAST:])) for r in runs]
    return {"protocol": protocol, "seeds": sorted(r["seed"] for r in runs),
            "distinct_runs": len({tuple(r["values"]) for r in runs}), "n_epochs": len(runs[0]["values"]),
            "last10": _mean_sd(last), "final": _mean_sd([r["values"][-1] for r in runs]),
            "n_features": runs[0]["n_features"], "n_train": runs[0]["n_train"], "n_test": runs[0]["n_test"],
            "git_commits": sorted({str(r["git_commit"]) for r in runs}),
            "git_dirty_max": max((r["git_dirty"] or 0 for r in runs), default=0),
            "threads": sorted({str(r["threads"]) for r in runs}),
            "runs": [{k: r[k] for k in ("path", "sha256", "seed")} for r in sorted(runs, key=lambda r: r["seed"])]}


def _protocol_meta(data_dir: Path, dataset: str) -> dict:
    """What the two preparations of ``dataset`` differ in (the processed datasets' meta.json): {key: [paper,
    clean]} for the keys of PROTOCOL_META_KEYS whose values differ."""
    metas = {}
    for protocol in ("paper", "clean"):
        path = data_dir / "processed" / dataset / protocol / "meta.json"
        metas[protocol] = read_json_object(path, "processed dataset's meta.json (snakemake --cores all data)",
                                           fix="prepare the dataset again (snakemake --cores all data)")
    return {k: [metas["paper"].get(k), metas["clean"].get(k)] for k in PROTOCOL_META_KEYS
            if metas["paper"].get(k) != metas["clean"].get(k)}


def build_protocols(results, clean, data_dir, reference, config="config/config.yaml") -> dict:
    """The ``protocols`` evidence record: per experiment run under both protocols, per implementation with records
    under ``clean`` (<clean>/<experiment>/<impl>/<params>/seed<k>.json), its metrics under the paper's preparation
    (the committed records of the main setting) and the clean one, and what the two preparations differ in."""
    results, clean, data_dir = Path(results), Path(clean), Path(data_dir)
    cfg = read_config(config)
    frame = read_reference(reference, "; pass --reference paper_tables/reference/paper_numbers.csv")
    rows, datasets = [], {}
    for experiment in sorted(p.name for p in clean.iterdir() if p.is_dir()):
        settings = (cfg.get("experiments") or {}).get(experiment)
        if settings is None:
            raise EvidenceError(f"{clean / experiment}: no experiment {experiment!r} in {config}; move the folder away")
        task = settings["task"]
        metrics = ("mae",) if task == "regression" else ("accuracy", "f1")
        dataset = settings["dataset"]
        if dataset not in datasets:
            datasets[dataset] = _protocol_meta(data_dir, dataset)
        for impl_dir in sorted(p for p in (clean / experiment).iterdir() if p.is_dir()):
            params = main_params(cfg, config, experiment, impl_dir.name)
            folder, epochs_read = impl_dir / params, None
            if not folder.is_dir():
                reduced = _reduced_folder(impl_dir, params)
                if reduced is None:
                    raise EvidenceError(f"{impl_dir}: no records of the main setting {params} (or of it with fewer "
                                        "epochs); the table compares the main setting only")
                folder, epochs_read = reduced
            paper_impl = paper_implementation(impl_dir.name)
            for metric in metrics:
                ref = frame[(frame["dataset"] == dataset) & (frame["implementation"] == paper_impl)
                            & (frame["metric"] == metric)]
                paper_dir = results / experiment / impl_dir.name
                paper_run = _protocol_group(_metric_runs(paper_dir / params, results, metric, epochs_read), "paper",
                                            paper_dir)
                clean_run = _protocol_group(_metric_runs(folder, clean, metric), "clean", folder)
                if epochs_read is not None and paper_run["n_epochs"] != epochs_read:
                    raise EvidenceError(f"{results / experiment / impl_dir.name / params}: its records hold "
                                        f"{paper_run['n_epochs']} epochs, fewer than the reduced clean run's "
                                        f"{epochs_read}; rerun them")
                rows.append({"experiment": experiment, "dataset": dataset, "impl": impl_dir.name, "params": params,
                             **({} if epochs_read is None else {"epochs_read": epochs_read,
                                                                 "clean_params": folder.name}),
                             "metric": metric, "paper_protocol": paper_run, "clean_protocol": clean_run,
                             "the_paper": [paper_number(r) for r in ref.itertuples()]})
    if not rows:
        raise EvidenceError(f"{clean}: no clean-protocol records (<experiment>/<impl>/<params>/seed<k>.json)")
    seeds = sorted({s for r in rows for g in ("paper_protocol", "clean_protocol") for s in r[g]["seeds"]})
    return {"schema": SCHEMA, "kind": "protocols", "name": "protocol_paper_vs_clean",
            "question": "How much of each number rests on the authors' preparation? Our records under the paper's "
                        "protocol (the authors' inputs) against the clean one (their questionable choices fixed), at "
                        "each experiment's main setting",
            "provenance": provenance("summary of run records (each carries its own provenance)", seeds),
            "datasets": datasets, "rows": rows}


def _describe_change(key: str, values: list) -> str:
    paper, clean = values
    if key == "source_features" and isinstance(paper, list) and isinstance(clean, list):
        dropped = [f for f in paper if f not in clean]
        added = [f for f in clean if f not in paper]
        return "; ".join(([f"drops {', '.join(dropped)}"] if dropped else []) +
                         ([f"adds {', '.join(added)}"] if added else []))
    if key == "counts" and isinstance(paper, dict) and isinstance(clean, dict):
        return (f"train / test rows {paper.get('train')} / {paper.get('test')} -> "
                f"{clean.get('train')} / {clean.get('test')}")
    return f"{key.replace('_', ' ')}: {paper} -> {clean}"


def render_protocols(ev: dict, source: str) -> str:
    md = [HEADER.format(source=source), "", f"#### Evidence: {ev['question']}", "",
          "What the clean protocol changes (the processed datasets' meta.json, paper -> clean):", ""]
    for dataset, changes in ev["datasets"].items():
        text = "; ".join(_describe_change(k, v) for k, v in changes.items()) or "nothing in the recorded keys"
        md.append(f"- **{dataset_label(dataset)}**: {text}.")
    md += ["", "| experiment | implementation | metric | paper protocol (ours) | clean protocol (ours) | "
           "clean - paper | the paper | seeds (distinct runs) paper / clean | features paper / clean |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in ev["rows"]:
        a, b = r["paper_protocol"], r["clean_protocol"]
        diff = None if a["last10"][0] is None or b["last10"][0] is None else b["last10"][0] - a["last10"][0]
        paper = ", ".join(_pm([p["mean"], p["std"]]) + ("" if p["implementation"] == r["impl"] else
                                                         f" ({p['implementation']})") for p in r["the_paper"]) or "–"
        dirty = " (modified checkout)" if a["git_dirty_max"] or b["git_dirty_max"] else ""
        reduced = "" if "epochs_read" not in r else f" (first {r['epochs_read']} epochs)"
        md.append(f"| {dataset_label(r['experiment'])} | {r['impl']}{reduced} | {r['metric']} | "
                  f"{_pm(a['last10'])} | {_pm(b['last10'])}{dirty} | {'–' if diff is None else f'{diff:+.2f}'} | "
                  f"{paper} | {len(a['seeds'])} ({a['distinct_runs']}) / {len(b['seeds'])} ({b['distinct_runs']}) | "
                  f"{a['n_features']} / {b['n_features']} |")
    md += ["", f"Each seed's mean over its last {LAST} epochs, then mean ± sample standard deviation (ddof=1) over "
           "the seeds; accuracy and F1 in %, MAE in the target's units. The paper: its number for the same "
           "implementation, or for our builds its asynchronous GPU TM's (tm_gpu). Distinct runs: records whose "
           "per-epoch metrics differ (records of pyTsetlinMachine made before its seeds were honoured may repeat one "
           "run). The clean protocol's test rows differ from the paper protocol's where the split changes, so a "
           "difference is the preparation's effect on what is measured, not only on the model.", ""]
    reduced = sorted({(r["experiment"], r["impl"], r["epochs_read"], r["clean_params"]) for r in ev["rows"]
                      if "epochs_read" in r})
    if reduced:
        md += ["Reduced clean runs (a protocol reduced to fewer epochs where the full one did not fit): "
               + "; ".join(f"{dataset_label(e)} {impl}, {k} epochs ({p})" for e, impl, k, p in reduced)
               + ". Both protocols are read over those first epochs there: each seed's mean over the last "
               f"{LAST} of them, the paper protocol's records of the full run cut at the same epoch.", ""]
    runs = {run["path"] for r in ev["rows"] for g in ("paper_protocol", "clean_protocol") for run in r[g]["runs"]}
    md += [f"Built from {len(runs)} run records; each holds its own provenance.", ""]
    return "\n".join(md)


# -- rendering -------------------------------------------------------------------------------------------------

def _events(group: dict) -> str:
    d = group.get("diagnostics_last10")
    if not d:
        return "–"
    return " / ".join(f"{d[k][0]:.0f}" for k in ("type_ia_feedback", "type_ib_feedback", "type_ii_feedback"))


def _setting(group: dict) -> str:
    variant = ", ".join(f"{k} {v}" for k, v in sorted(group["variant"].items()))
    return f"{group['impl']} {group['params']}, protocol {group['protocol']}" + (f", {variant}" if variant else "")


def render_run_groups(ev: dict, source: str) -> str:
    groups = ev["groups"]
    exp = dataset_label(groups[0]["experiment"])
    md = [HEADER.format(source=source), "", f"#### Evidence ({exp}): {ev['question']}", "",
          "| group | setting | seeds | features | threads | processor | commit | final MAE | last-10 MAE | "
          "training-median MAE | literals/clause | Type Ia / Ib / II per epoch | s/epoch | load |",
          "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for g in groups:
        lit = (g["diagnostics_last10"] or {}).get("literals_per_clause")
        spread = g["s_epoch"]
        load = g["load_range"]
        commits = ", ".join(c[:7] for c in g["git_commits"]) + (
            f" (+{g['git_dirty_max']} modified files)" if g["git_dirty_max"] else "")
        md.append(f"| {g['label']} | {_setting(g)} | {len(g['seeds'])} | {g['n_features']} | "
                  f"{', '.join(g['threads'])} | {', '.join(g['cpu_models'])} | {commits} | {_pm(g['final_mae'])} | "
                  f"{_pm(g['last10_mae'])} | {_num(g['constant_mae'][0])} | {_pm(lit, 1) if lit else '–'} | "
                  f"{_events(g)} | {_sig(spread[0])}{f' ± {_sig(spread[1], 2)}' if spread[1] is not None else ''} | "
                  f"{f'{load[0]:.1f}-{load[1]:.1f}' if load else '–'} |")
    md += ["", f"Mean ± sample standard deviation (ddof=1) over the seeds. final: after the last epoch; last-10: each "
           f"seed's mean over its last {LAST} epochs. training-median MAE: the test MAE of predicting the training "
           "targets' median (the records' constant baseline). literals/clause and Type Ia / Ib / II: included "
           f"literals per clause and feedback events per epoch, each seed's mean over its last {LAST} epochs "
           "(kernels/README.md, \"Training diagnostics\"). s/epoch: timing.train_s_mean; load: the 1-minute load "
           "average at the end of the runs (a busy machine slows the runs, and with several threads changes how "
           "their clauses interleave).", ""]
    with_diag = [g for g in groups if g["per_epoch"].get("literals_per_clause")]
    if groups:
        shown = [e for e in EPOCHS_SHOWN if all(e <= g["n_epochs"] for g in groups)]
        md += ["Per epoch, mean over each group's seeds: test MAE" + (", literals per clause, and Type Ia / Ib / II "
               "feedback events of that epoch" if with_diag else "") + ".", "",
               "| epoch | " + " | ".join(f"{g['label']}: MAE" + (" | literals/clause | Ia / Ib / II"
                                                                 if g in with_diag else "") for g in groups) + " |",
               "|---:|" + "".join("---:|" + ("---:|---:|" if g in with_diag else "") for g in groups)]
        for e in shown:
            cells = []
            for g in groups:
                p = g["per_epoch"]
                cells.append(_num(p["mae"][e - 1]))
                if g in with_diag:
                    cells += [f"{p['literals_per_clause'][e - 1]:.1f}",
                              " / ".join(f"{p[k][e - 1]:.0f}" for k in ("type_ia_feedback", "type_ib_feedback",
                                                                         "type_ii_feedback"))]
            md.append(f"| {e} | " + " | ".join(cells) + " |")
        md.append("")
    all_seeds = sorted({p["seed"] for g in groups for p in g["per_seed"]})
    md += ["Per seed: last-10 MAE, s/epoch and the 1-minute load average at the end of the run.", "",
           "| group | " + " | ".join(f"seed {k}" for k in all_seeds) + " |", "|---|" + "---:|" * len(all_seeds)]
    for g in groups:
        by_seed = {p["seed"]: p for p in g["per_seed"]}
        cells = []
        for k in all_seeds:
            p = by_seed.get(k)
            cells.append("–" if p is None else f"{p['last10_mae']:.2f} ({_sig(p['s_epoch'])} s, load "
                         f"{_num(p.get('load'), 1)})")
        md.append(f"| {g['label']} | " + " | ".join(cells) + " |")
    md.append("")
    if ev.get("repeats"):
        md += ["The same seed run twice (same code, data and settings): identical per-epoch MAE means one "
               "deterministic run.", "", "| run | again | seed | identical | first differing epoch | final MAE | "
               "final MAE again |", "|---|---|---:|---|---:|---:|---:|"]
        for r in ev["repeats"]:
            md.append(f"| {r['a']} | {r['b']} | {r['seed']} | {'yes' if r['identical'] else 'no'} | "
                      f"{r['first_differing_epoch'] or '–'} | {_num(r['a_final_mae'])} | {_num(r['b_final_mae'])} |")
        md.append("")
    runs = sum(len(g["runs"]) for g in groups)
    folders = sorted({r["path"].rsplit("/", 1)[0] for g in groups for r in g["runs"]})
    md += [f"Built from {runs} run records ({', '.join(folders)}); each record holds its own provenance.", ""]
    return "\n".join(md)


def render_baselines(ev: dict, source: str) -> str:
    exp = dataset_label(ev["experiment"])
    md = [HEADER.format(source=source), "", f"#### Evidence ({exp}): {ev['question']}", ""]
    md += ["| data (split, protocol) | features | predictor | split seeds | train / test rows | test MAE | "
           "test target mean | test targets = 0 |", "|---|---|---|---:|---:|---:|---:|---:|"]
    keys = []
    for r in ev["rows"]:
        key = (r["reading"], r["features"], r["model"], r["parameters"].get("loss"))
        if key not in keys:
            keys.append(key)
    for key in keys:
        rows = [r for r in ev["rows"] if (r["reading"], r["features"], r["model"], r["parameters"].get("loss")) == key]
        model = key[2] + (f" ({key[3]})" if key[3] else "")
        seeds = [r["split_seed"] for r in rows if r["split_seed"] is not None]
        md.append(f"| {key[0]} | {key[1]} | {model} | {', '.join(map(str, seeds)) or '–'} | "
                  f"{rows[0]['n_train']} / {rows[0]['n_test']} | {_pm(_mean_sd([r['mae'] for r in rows]))} | "
                  f"{_pm(_mean_sd([r['test_target_mean'] for r in rows]))} | "
                  f"{_pm(_mean_sd([100 * r['test_target_zero_fraction'] for r in rows]), 1)} % |")
    md += ["", "Mean ± sample standard deviation (ddof=1) over the split seeds where a reading has several. Every "
           "predictor is fitted on the training rows only, with fixed hyperparameters (scikit-learn's defaults, "
           f"random_state {ev['provenance']['seeds'][0]}); no choice is made on test rows.", ""]
    if ev.get("paper") or ev.get("ours"):
        md += ["For comparison, test MAE:", "", "| source | implementation | records | MAE |", "|---|---|---:|---:|"]
        for p in ev.get("paper", []):
            md.append(f"| paper ({p['source']}) | {p['implementation']} | – | {_pm([p['mean'], p['std']])} |")
        for o in ev.get("ours", []):
            md.append(f"| ours ({o['params']}) | {o['impl']} | {o['records']} | {_pm(o['final_mae'])} |")
        md.append("")
    return "\n".join(md)



RENDERERS = {"run_groups": render_run_groups, "baselines": render_baselines, "protocols": render_protocols,
             "mlp_stage": render_mlp_stage, "convergence": render_convergence, "time_model": render_time_model,
             "host_speedups": render_host_speedups, "split_spread": render_split_spread, "same_gpu": render_same_gpu,
             "gpu_fill": render_gpu_fill, "error_split": render_error_split,
             "implied_times": render_implied}


def render(evidence_dir, tables_dir) -> list[Path]:
    """Write ``evidence_<name>.md`` into ``tables_dir`` for every evidence record in ``evidence_dir`` (all are
    checked before any table is written)."""
    evidence_dir, tables_dir = Path(evidence_dir), Path(tables_dir)
    paths = sorted(evidence_dir.glob("*.json"))
    if not paths:
        raise EvidenceError(f"{evidence_dir}: no evidence records (*.json) there; build them first")
    out = []
    for path in paths:
        ev = read_json_object(path, "evidence record", fix="rebuild this evidence record")
        for key in ("schema", "kind", "name", "question", "provenance"):
            if key not in ev:
                raise EvidenceError(f"{path}: field {key!r} is missing; rebuild this evidence record")
        if ev["schema"] != SCHEMA or ev["kind"] not in RENDERERS:
            raise EvidenceError(f"{path}: field 'schema'/'kind' is {ev['schema']!r}/{ev['kind']!r}, expected "
                                f"{SCHEMA}/one of {sorted(RENDERERS)}; rebuild this evidence record")
        if ev["name"] != path.stem:
            raise EvidenceError(f"{path}: field 'name' is {ev['name']!r}, not the file's name; rename one of them")
        try:
            text = RENDERERS[ev["kind"]](ev, path.as_posix())
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise EvidenceError(f"{path}: field {exc} is missing or malformed; rebuild this evidence record") from None
        out.append((tables_dir / f"evidence_{ev['name']}.md", text))
    for target, text in out:
        write_text_atomic(target, text)
    return [p for p, _ in out]


def stale_citations(evidence_dir, results, repo=None) -> list[str]:
    """One line per evidence record in ``evidence_dir`` that cites a file no longer there with the content it read
    (:func:`.evidence_common.stale_sources`), with the fix: rebuild it."""
    evidence_dir = Path(evidence_dir)
    roots, digests, lines = citation_roots(evidence_dir, results, repo), {}, []
    for path in sorted(evidence_dir.glob("*.json")):
        ev = read_json_object(path, "evidence record", fix="rebuild this evidence record")
        what = stale_sources(ev, roots, digests)
        if what:
            lines.append(f"{path}: cites files that no longer hold what it read: {what}; rebuild it with the "
                         f"command in its provenance ({ev.get('provenance', {}).get('command', 'docs/results.md')})")
    return lines


# -- command line ----------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    runs = sub.add_parser("runs", help="a run_groups evidence record from TM run records")
    runs.add_argument("--name", required=True)
    runs.add_argument("--question", required=True)
    runs.add_argument("--results", required=True, help="the root the globs are relative to")
    runs.add_argument("--group", action="append", required=True, help="LABEL=GLOB (relative to --results)")
    runs.add_argument("--repeat", action="append", default=[], help="LABEL=LABEL: compare these groups' common seeds")
    runs.add_argument("--out", required=True)
    blog = sub.add_parser("blogfeedback", help="the BlogFeedback baselines evidence record")
    bike = sub.add_parser("bike-sharing", help="the Bike Sharing leak baselines evidence record")
    prot = sub.add_parser("protocols", help="the paper-vs-clean protocol evidence record")
    blog.add_argument("--split-seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    prot.add_argument("--clean", required=True, help="the clean protocol's records: <clean>/<experiment>/<impl>/...")
    for p in (blog, bike, prot):
        p.add_argument("--data-dir", required=True, help="the data folder (processed/<dataset>/<protocol>/)")
        p.add_argument("--results", required=True, help="our committed records (the paper protocol's)")
        p.add_argument("--reference", default="paper_tables/reference/paper_numbers.csv")
        p.add_argument("--config", default="config/config.yaml", help="names the main setting of our records")
        p.add_argument("--out", required=True)
    for baselines in (blog, bike):
        baselines.add_argument("--seed", type=int, default=0, help="the regressors' random_state")
        baselines.add_argument("--threads", type=int, default=1, help="OpenMP threads for the regressor")

    check = sub.add_parser("check", help="whether the files every evidence record cites still hold what it read")
    check.add_argument("--evidence", required=True)
    check.add_argument("--results", required=True, help="the results root the cited run records lie below")
    rend = sub.add_parser("render", help="paper_tables/evidence_<name>.md from every evidence record")
    rend.add_argument("--evidence", required=True)
    rend.add_argument("--tables-dir", required=True)
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    """The work of one command line (``main``'s subcommands)."""
    if args.command == "runs":
        ev = build_run_groups(args.name, args.question, args.results, _parse_pairs(args.group, "group"),
                              _parse_pairs(args.repeat, "repeat"))
        check_out(args.out, args.name, hint=" (--name)")
        write_record(args.out, ev)
    elif args.command in ("blogfeedback", "bike-sharing"):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(args.threads):
            ev = (build_blogfeedback(args.data_dir, args.results, args.reference, args.split_seeds, args.seed,
                                     args.config)
                  if args.command == "blogfeedback" else
                  build_bike_sharing(args.data_dir, args.results, args.reference, args.seed, args.config))
        check_out(args.out, ev["name"])
        ev["provenance"]["threads"] = args.threads
        write_record(args.out, ev)
    elif args.command == "protocols":
        ev = build_protocols(args.results, args.clean, args.data_dir, args.reference, args.config)
        check_out(args.out, ev["name"])
        write_record(args.out, ev)
    elif args.command == "check":
        stale = stale_citations(args.evidence, args.results)
        if stale:
            raise EvidenceError("\n".join(stale))
        n = sum(len(citations(read_json_object(p, "evidence record"))) for p in Path(args.evidence).glob("*.json"))
        print(f"{args.evidence}: every one of the {n} files the evidence records cite holds what they read")
    else:
        for path in render(args.evidence, args.tables_dir):
            print(path)


if __name__ == "__main__":
    sys.exit(main())
