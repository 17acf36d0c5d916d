"""Shared fixtures: the repository root and the offline dataset mirror.

The mirror is ``$ASYNCTM_DATA_MIRROR`` if set, else ``<repo>/../shared/datasets`` (where CI puts
it); tests that need it skip with the reason when it is absent.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A copy of the workflow in a temporary folder."""
    return copy_workflow(tmp_path)


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = mirror_path()
    if not path.is_dir():
        pytest.skip(f"dataset mirror not found at {path} (set ASYNCTM_DATA_MIRROR to its folder)")
    return path


def gpu_available() -> bool:
    from asynctm.backends import cuda_available

    return cuda_available()  # never raises: no PyCUDA or driver means no GPU


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` skip cleanly on machines without a CUDA GPU (CI, laptops)."""
    if not any("gpu" in item.keywords for item in items) or gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU here (PyCUDA, the driver or a device is missing)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _quick_scontrol(tmp_path_factory) -> Path | None:
    """A folder with an ``scontrol`` that fails ``scontrol show config`` at once and hands every other command to
    the real one; None where SLURM's scontrol is not installed."""
    real = shutil.which("scontrol")
    if real is None:
        return None
    folder = tmp_path_factory.mktemp("quick-scontrol")
    stub = folder / "scontrol"
    stub.write_text('#!/bin/sh\nif [ "$1" = show ] && [ "$2" = config ]; then exit 1; fi\n'
                    f'exec {shlex.quote(real)} "$@"\n')
    stub.chmod(0o755)
    return folder


@pytest.fixture(autouse=True)
def _no_wait_for_an_absent_slurm_controller(request, _quick_scontrol, monkeypatch):
    """Every snakemake command imports the SLURM executor plugin (installed for the SLURM tests), which asks
    ``scontrol show config`` for a help text; where SLURM is installed but no controller answers, that waits out
    SLURM's MessageTimeout, about 9 s per command. The tests' commands get an answer at once (a failure: the
    plugin then words its help generically). The SLURM tests, whose cluster answers, keep the real scontrol."""
    if _quick_scontrol is not None and request.node.path.name != "test_slurm.py":
        monkeypatch.setenv("PATH", f"{_quick_scontrol}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture(autouse=True)
def _learning_bar_in_the_junit_xml(request, record_property):
    """A `learning` test says so in the JUnit XML (a property), where the GPU campaign tells a missed learning bar
    from a broken rule (asynctm.campaign.steps.junit_failures)."""
    if request.node.get_closest_marker("learning") is not None:
        record_property("learning", "1")


@pytest.fixture
def record_scores(record_property):
    """``record_scores(name=[...], ...)``: a learning test's scores as a JSON property ``scores`` of the JUnit XML,
    pass or fail, which the GPU campaign keeps in its manifest (asynctm.campaign.steps.junit_scores)."""
    return lambda **scores: record_property("scores", json.dumps(scores))


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend_name(request) -> str:
    """Run a test on the CPU build and, where a GPU exists, on the CUDA build."""
    return request.param


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
