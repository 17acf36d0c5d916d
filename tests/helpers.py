"""What the tests share besides fixtures: the repository root, a copy of the workflow, the benchmark scripts as modules,
the dataset mirror's place, a tiny processed dataset with its configuration, complete synthetic run records (written
where the results layout puts them) and spoiled ones the record gate refuses. Test modules import these from here
(``from tests.helpers import REPO``); the fixtures of tests/conftest.py are built on them."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the repository root (tests/ is its child)


# What a copy of the workflow needs (tests that run snakemake in a temporary folder).
WORKFLOW_FILES = ("Snakefile", "config", "workflow", "profiles", "paper_tables/reference")


def load_benchmark_script(name: str):
    """A script of benchmarks/ (not a package) as a module, ``<name>_under_test``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_under_test", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_workflow(dest: Path, copy=shutil.copy) -> Path:
    """Copy the workflow's files (WORKFLOW_FILES) into ``dest``; ``copy`` copies the single files (folders keep
    their files' times)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        (shutil.copytree if src.is_dir() else copy)(src, dest / name)
    return dest


def mirror_path() -> Path:
    return Path(os.environ.get("ASYNCTM_DATA_MIRROR", REPO.parent / "shared" / "datasets")).resolve()


def valid_tm_record(record: dict) -> dict:
    """A synthetic TM record (a test's own fields) made complete, so that the record gate (asynctm.store) accepts
    it: the required fields it lacks are added, ``hyperparameters`` get the clauses, T, s and epochs its params name,
    and its times agree with its epochs. Values the test set are kept."""
    import math

    from asynctm.experiments import plan

    rec = json.loads(json.dumps(record))
    named = plan.parse_tm_params(rec["params"])
    epochs = rec.setdefault("epochs", [])
    for i, epoch in enumerate(epochs):
        epoch.setdefault("epoch", i + 1)
        epoch.setdefault("train_s", 0.5)
        epoch.setdefault("eval_s", 0.1)
    rec.setdefault("schema", 1)
    rec.setdefault("status", "complete")
    rec.setdefault("kind", "tm")
    rec.setdefault("scale", "paper")
    rec.setdefault("dataset", {"name": rec["experiment"], "protocol": "paper"})
    hyper = rec.setdefault("hyperparameters", {})
    for key, value in (("n_clauses", named["clauses"]), ("T", named["T"]), ("s", named["s"]),
                       ("epochs", len(epochs) or named["epochs"])):
        hyper.setdefault(key, value)
    metric = "mae" if rec.get("task") == "regression" else "accuracy"
    last = epochs[-1] if epochs else {}
    final = rec.setdefault("final", {k: v for k, v in last.items()
                                     if k not in ("epoch", "train_s", "eval_s", "diagnostics")})
    final.setdefault(metric, 50.0)
    if rec.get("task") != "regression":
        final.setdefault("f1", final[metric])
    total = math.fsum(e["train_s"] for e in epochs)
    timing = rec.setdefault("timing", {})
    timing["train_s_total"] = total
    timing["train_s_mean"] = total / len(epochs) if epochs else timing.get("train_s_mean", 0.5)
    prov = rec.setdefault("provenance", {})
    prov.setdefault("git_commit", "0" * 40)
    prov.setdefault("cpu_model", "Test CPU")
    prov.setdefault("gpu", None)
    return rec


def valid_run_record(record: dict) -> dict:
    """A synthetic run record of a TM (:func:`valid_tm_record`) or of the novelty MLP stage (impl ``mlp_novelty``,
    params ``<tm impl>.<tm params>``) made complete, so that the record gate (asynctm.store) accepts it; values the
    test set are kept."""
    if record.get("impl") != "mlp_novelty":
        return valid_tm_record(record)
    rec = json.loads(json.dumps(record))
    for key, value in (("schema", 1), ("status", "complete"), ("kind", "mlp_novelty"), ("scale", "paper"),
                       ("task", "novelty"), ("dataset", {"name": rec["experiment"], "protocol": "paper"}),
                       ("hyperparameters", {}), ("timing", {"fit_s": 0.1}),
                       ("provenance", {"git_commit": "0" * 40, "cpu_model": "Test CPU", "gpu": None})):
        rec.setdefault(key, value)
    final = rec.setdefault("final", {})
    final.setdefault("accuracy", 50.0)
    final.setdefault("f1", 50.0)
    return rec


def write_run_record(root: Path, record: dict) -> Path:
    """``record`` made complete (:func:`valid_run_record`) and written where the results layout puts it below the
    results root ``root`` (``<experiment>/<impl>/<params>/seed<seed>.json``); its path."""
    rec = valid_run_record(record)
    path = Path(root) / rec["experiment"] / rec["impl"] / rec["params"] / f"seed{rec['seed']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


# Ways to spoil a run record that the record gate refuses and a reader of its own would let through (or word
# differently): the regular expression of the gate's line after "<path>: " for each.
SPOILED = {"truncated": r"\(the file\): truncated \(", "schema-invalid": r"final\.\w+: -1\.0 is less than the minimum",
           "off its path": r"seed: the record says \d+ but its path says \d+"}


def spoil_run_record(path: Path, how: str) -> str:
    """Spoil the record file at ``path`` in one of the ways of :data:`SPOILED`; the regular expression of the whole
    line the gate then gives (the file, the field, the problem and its fix)."""
    text = Path(path).read_text()
    if how == "truncated":
        text = text[: text.index(",", len(text) // 2) + 1]  # cut between two values: it ends early
    else:
        rec = json.loads(text)
        if how == "schema-invalid":
            rec["final"][next(iter(rec["final"]))] = -1.0
        else:
            rec["seed"] += 7
        text = json.dumps(rec)
    Path(path).write_text(text)
    return rf"{re.escape(str(path))}: {SPOILED[how]}[^\n]*; fix: [^\n]+"


def tiny_wsd_apple(tmp_path: Path) -> tuple[Path, Path]:
    """A synthetic XOR dataset saved as the registry's wsd_apple/paper, and config/config.yaml with 10 clauses,
    T=10, s=3 for wsd_apple (the schema beside it, so it is checked as the pipeline checks it)."""
    import numpy as np
    import scipy.sparse as sp
    import yaml

    from asynctm.datasets import ProcessedDataset, save_processed

    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(160, 12), dtype=np.uint8)
    y = (X[:, 0] ^ X[:, 1]).astype(np.int64)
    ds = ProcessedDataset(name="wsd_apple", protocol="paper", task="classification", X_train=sp.csr_matrix(X[:120]),
                          y_train=y[:120], X_test=sp.csr_matrix(X[120:]), y_test=y[120:],
                          feature_names=[f"f{i}" for i in range(12)], class_names=["a", "b"],
                          meta={"raw_digest": "synthetic", "split": "synthetic XOR, file order"})
    save_processed(ds, tmp_path / "data" / "processed" / "wsd_apple" / "paper")
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["experiments"]["wsd_apple"].update(clauses=10, T=10, s=3.0)
    conf = tmp_path / "config"
    conf.mkdir()
    (conf / "config.yaml").write_text(yaml.safe_dump(cfg))
    shutil.copy(REPO / "workflow" / "schemas" / "config.schema.yaml", conf / "schema.yaml")
    return tmp_path / "data", conf / "config.yaml"
