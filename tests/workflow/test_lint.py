"""Style: ruff (src, gpu_host, tests, benchmarks) and snakefmt (the Snakefile and workflow/) pass with the settings in
pyproject.toml ([tool.ruff], [tool.snakefmt]), run with this virtual environment's own binaries, which the test
extra installs. Where a binary is missing the test skips, saying how to install it; in CI (CI=true) it fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

# Beside the interpreter running the tests, not resolved: .venv/bin/python is a link to the system's Python.
BIN = Path(sys.executable).parent
IN_CI = os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def _tool(name: str) -> Path:
    path = BIN / name
    if not path.is_file():
        reason = f"{name} is not installed beside {sys.executable} ({path}): pip install -e '.[test]' brings it"
        if IN_CI:
            pytest.fail(f"{reason}; CI must have it")
        pytest.skip(reason)
    return path


def _run(*command: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)


def test_ruff_passes_on_the_python_code():
    ruff = _tool("ruff")
    result = _run(ruff, "check", "--no-cache", "--output-format", "concise", "src", "gpu_host", "tests",
                  "benchmarks")
    assert result.returncode == 0, (
        f"ruff check src gpu_host tests benchmarks failed (exit {result.returncode}); fix the lines below "
        f"(`{ruff} check --fix` fixes some):\n{result.stdout}{result.stderr}")


def test_snakefmt_passes_on_the_workflow():
    snakefmt = _tool("snakefmt")
    result = _run(snakefmt, "--check", "Snakefile", "workflow/")
    if result.returncode != 0:
        diff = _run(snakefmt, "--diff", "Snakefile", "workflow/")
        pytest.fail(f"snakefmt --check Snakefile workflow/ failed (exit {result.returncode}): run `{snakefmt} "
                    f"Snakefile workflow/`, then check that `snakemake -n` plans the same jobs."
                    f"\n{result.stdout}{result.stderr}\n{diff.stdout}{diff.stderr}")
