"""Shared fixtures of every test folder (unit/, workflow/, gpu/): the repository root and the offline dataset mirror.

The mirror is ``$ASYNCTM_DATA_MIRROR`` if set, else ``<repo>/../shared/datasets`` (where CI puts
it); tests that need it skip with the reason when it is absent. What the tests import (the repository root,
copy_workflow, ...) is in tests/helpers.py.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO, copy_workflow, mirror_path


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
    """Tests marked `gpu` skip cleanly on machines without a CUDA GPU (CI, laptops). The mark, not the keyword: a
    test's keywords hold its folders' names too, and every test of tests/gpu/ would have "gpu" among them."""
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not marked or gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU here (PyCUDA, the driver or a device is missing)")
    for item in marked:
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
    from a broken rule (gpu_host.steps.merge_junit)."""
    if request.node.get_closest_marker("learning") is not None:
        record_property("learning", "1")


@pytest.fixture
def record_scores(record_property):
    """``record_scores(name=[...], ...)``: a learning test's scores as a JSON property ``scores`` of the JUnit XML,
    pass or fail, which come back in the GPU campaign's merged JUnit report (gpu_host.steps)."""
    return lambda **scores: record_property("scores", json.dumps(scores))


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend_name(request) -> str:
    """Run a test on the CPU build and, where a GPU exists, on the CUDA build."""
    return request.param
