"""The ``asynctm`` command (asynctm.cli): one subcommand per stage, each the command line the workflow's rules call,
with --help; an unknown subcommand is one line."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

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


def test_a_job_that_fails_ends_with_one_line_naming_its_log(tmp_path):
    """Given --log, a subcommand runs as a job of the workflow (asynctm.jobs.run_job): its failure's last line."""
    log = tmp_path / "logs" / "table.log"
    r = _run("artifacts", "table3_performance", "--results", str(tmp_path / "none"), "--config",
             str(tmp_path / "missing.yaml"), "--out", str(tmp_path), "--log", str(log))
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == f"asynctm artifacts table3_performance failed; see {log}"
    assert log.is_file()


def test_the_artifacts_config_job_writes_the_settings_as_yaml_and_removes_its_stamp(tmp_path):
    from asynctm.artifacts.rules import config_text

    settings = {"scale": "paper", "seeds": [0, 1], "tm": {"s": 3.9}}
    stamp = tmp_path / "stamp"
    stamp.touch()
    out = tmp_path / "artifacts_config.yaml"
    r = _run("artifacts", "config", "--settings", json.dumps(settings), "--out", str(out), "--stale", str(stamp),
             "--log", str(tmp_path / "config.log"))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == config_text(settings) and not stamp.exists()


def test_a_value_written_into_a_rule_command_is_one_shell_word_that_snakemake_leaves_as_it_is():
    from asynctm.jobs import shell_word

    settings = json.dumps({"a b": "it's"})
    command = f"echo {shell_word(settings)} {{x}}".format(x="job")  # Snakemake formats the command per job
    assert shlex.split(command) == ["echo", settings, "job"]


def test_the_console_script_is_found_beside_the_interpreter_without_an_activated_environment():
    from asynctm.jobs import console_script_on_path

    environ = {"PATH": "/usr/bin"}
    found = console_script_on_path(environ)
    assert environ["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert found == str(Path(sys.executable).parent / "asynctm")
    console_script_on_path(environ)
    assert environ["PATH"].count(str(Path(sys.executable).parent)) == 1  # once, however often the Snakefile is read
