"""The library installs and runs without the pipeline: core dependencies NumPy, SciPy and scikit-learn (plus a C++
compiler at run time), the pipeline's in the "pipeline" extra, which the "test" extra (the README's set-up)
includes; importing the estimators imports nothing of the pipeline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.helpers import REPO

CORE = {"numpy", "scipy", "scikit-learn"}
# What only the pipeline needs (Snakemake, tables, figures, datasets, configuration, the baselines).
PIPELINE = {"pandas", "matplotlib", "nltk", "pyyaml", "jsonschema", "fastjsonschema", "snakemake",
            "pytsetlinmachine", "thundersvm-cpu"}
PIPELINE_MODULES = ["yaml", "snakemake", "matplotlib", "nltk", "jsonschema", "fastjsonschema", "pyTsetlinMachine",
                    "thundersvm", "asynctm.config_check", "asynctm.datasets", "asynctm.experiments"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_core_dependencies_are_the_libraries_and_the_pipeline_is_an_extra_the_tests_include():
    project = _project()
    extras = project["optional-dependencies"]
    assert {_name(r) for r in project["dependencies"]} == CORE
    assert {_name(r) for r in extras["pipeline"]} == PIPELINE
    # the test extra (the README's `pip install -e '.[test]'`) installs the pipeline's requirements, pin for pin
    assert set(extras["pipeline"]) <= set(extras["test"]), sorted(set(extras["pipeline"]) - set(extras["test"]))
    assert {_name(r) for r in extras["test"]} >= PIPELINE | {"pytest"}


def test_importing_the_library_imports_nothing_of_the_pipeline():
    code = ("import sys\n"
            "import asynctm, asynctm.estimators, asynctm.booleanize, asynctm.rules, asynctm.limits\n"
            "from asynctm import TMClassifier, TMRegressor\n"
            f"print([m for m in {PIPELINE_MODULES!r} if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_pipeline_reads_the_kernels_bounds_from_the_library():
    from asynctm import config_check, limits

    assert config_check.T_MAX is limits.T_MAX and config_check.INT32_MAX is limits.INT32_MAX


TRAIN = """
import importlib.util, json, sys
missing = [m for m in ("pandas", "yaml", "snakemake", "matplotlib", "nltk", "jsonschema", "fastjsonschema")
           if importlib.util.find_spec(m) is None]
import numpy as np
from asynctm import TMClassifier, TMRegressor
from asynctm.booleanize import Booleanizer
from asynctm.rules import RuleModel

rng = np.random.default_rng(0)
X = rng.integers(0, 2, (300, 8)).astype(np.uint8)
y = np.where(X[:, 0] ^ X[:, 1], "odd", "even")
clf = TMClassifier(20, 15, 3.9, backend="cpu", n_threads=1, seed=1).fit(X, y, epochs=10)
clf.save(sys.argv[1])
same = TMClassifier.load(sys.argv[1]).predict(X).tolist() == clf.predict(X).tolist()
rules = RuleModel(json.loads(json.dumps(clf.export_rules()))).predict(X.tolist()) == clf.predict(X).tolist()
Xr = rng.normal(size=(200, 2))
reg = TMRegressor(20, 10, 3.0, booleanize=4, backend="cpu", n_threads=1, seed=1).fit(Xr, Xr[:, 0], epochs=3)
print(json.dumps({"missing": missing, "accuracy": clf.score(X, y), "same": same, "rules": rules,
                  "pipeline": [m for m in sys.modules if m.startswith(("asynctm.config_check", "asynctm.datasets"))],
                  "regression": len(reg.predict(Xr))}))
"""


@pytest.mark.slow
def test_a_fresh_venv_installs_the_library_alone_and_trains_a_model(tmp_path):
    """pip install of the project, no extras, in a new virtual environment: NumPy, SciPy and scikit-learn come
    from the package index, nothing of the pipeline does, and a model trains, saves, loads and exports."""
    source = tmp_path / "project"  # a copy: the build writes its own folders, never into the working tree
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "src" / "asynctm", source / "src" / "asynctm",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              str(source)], capture_output=True, text=True, check=False, env=env, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    run = subprocess.run([str(python), "-c", TRAIN, str(tmp_path / "model.npz")], capture_output=True, text=True,
                         check=False, env=env, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    import json

    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert sorted(result["missing"]) == ["fastjsonschema", "jsonschema", "matplotlib", "nltk", "pandas", "snakemake",
                                         "yaml"], result
    assert result["same"] and result["rules"] and result["pipeline"] == [] and result["regression"] == 200
    assert result["accuracy"] > 0.9  # noise-free XOR, one thread, a seed: a fixed outcome
