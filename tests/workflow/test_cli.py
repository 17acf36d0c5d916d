"""The ``asynctm`` command (asynctm.cli): one subcommand per stage, each the command line the workflow's rules call,
with --help; an unknown subcommand is one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from asynctm import cli


def _run(*args):
    return subprocess.run([sys.executable, "-m", "asynctm", *args], capture_output=True, text=True)


def test_help_lists_every_subcommand():
    r = _run("--help")
    assert r.returncode == 0
    for name in cli.SUBCOMMANDS:
        assert f"  {name} " in r.stdout


@pytest.mark.parametrize("name", list(cli.SUBCOMMANDS))
def test_every_subcommand_has_its_help(name):
    r = _run(name, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:"), r.stdout[:200]


def test_an_unknown_subcommand_is_one_line():
    r = _run("tables-please")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown subcommand 'tables-please'" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_subcommand_gets_its_arguments(tmp_path):
    """`asynctm store check` is `python -m asynctm.store check`: a record it refuses is refused the same way."""
    bad = tmp_path / "results" / "wsd_apple" / "tm_cpu" / "n300_T50_s5_e100"
    bad.mkdir(parents=True)
    (bad / "seed0.json").write_text("{not json")
    via_cli = _run("store", "check", "--results", str(tmp_path / "results"))
    direct = subprocess.run([sys.executable, "-m", "asynctm.store", "check", "--results", str(tmp_path / "results")],
                            capture_output=True, text=True)
    assert via_cli.returncode == direct.returncode != 0
    assert via_cli.stderr == direct.stderr
