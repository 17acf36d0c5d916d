"""Errors a person can act on: a misspelt config key, a broken config file, an unknown target and Ctrl-C each end
in one line (plus the valid names, for a target) that names the problem and the fix, with no traceback and no
JSON schema. The snakemake commands are dry runs in a copy of the workflow (tests.helpers.copy_workflow); the Ctrl-C
tests stop a real run."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from asynctm.config_check import (
    ConfigError,
    Source,
    config_sources,
    load_config,
    load_schema,
    read_config_file,
    schema_errors,
    where,
)
from asynctm.messages import stop_line, unknown_target_lines
from tests.helpers import REPO, copy_workflow

# What must never reach a person for these mistakes: tracebacks and stack frames, the schema, Snakemake's
# exception names and its raw texts.
NOISE = ("Traceback", 'File "', "Failed validating", "$schema", "'properties'", "WorkflowError", "RuleException",
         "MissingRuleException", "No rule to produce", "Error in rule", "did not complete successfully")

# Snakemake's own preface lines, printed before the workflow is read.
PREFACE = ("Using workflow specific profile", "Config file config/config.yaml is extended")


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "-n", *args], cwd=workdir,
                          capture_output=True, text=True, timeout=300)


def problem_lines(r: subprocess.CompletedProcess) -> list[str]:
    """The lines of a refused command after Snakemake's preface."""
    return [line for line in (r.stdout + r.stderr).splitlines() if line.strip() and not line.startswith(PREFACE)]


def assert_clean(out: str) -> None:
    for noise in NOISE:
        assert noise not in out, (noise, out[-3000:])


# --- configuration -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, line", [
    (["run_missng=false"], "config run_missng: unknown key; did you mean run_missing? (from --config)"),
    (["tm={epoch: 5}"], "config tm.epoch: unknown key; did you mean tm.epochs? (from --config)"),
    (["impls=[tm_cpuu]"], ("config impls.0: 'tm_cpuu' is not one of ['tm_gpu', 'tm_cpu', 'pytm_indexed', "
                           "'pytm_nonindexed', 'tm_gpu_warp']; did you mean 'tm_cpu'? (from --config)")),
], ids=["top-level key", "nested key", "value"])
def test_a_misspelt_config_override_names_the_closest_valid_one(workdir, overrides, line):
    r = snakemake(workdir, "--config", *overrides)
    assert r.returncode == 1, r.stderr[-3000:]
    assert problem_lines(r) == [line], r.stderr[-3000:]
    assert_clean(r.stdout + r.stderr)
    assert not (workdir / "data").exists() and not (workdir / "results").exists()


def test_a_misspelt_key_in_a_configfile_names_the_file_and_line(workdir):
    (workdir / "mine.yaml").write_text("# my settings\nrun_missing: false\nscael: smoke\ntm:\n  epochs: 5\n"
                                       "  boost_true_postive: false\n")
    r = snakemake(workdir, "--configfile", "mine.yaml")
    assert r.returncode == 1, r.stderr[-3000:]
    assert problem_lines(r) == [
        "config scael: unknown key; did you mean scale? (mine.yaml, line 3)",
        "config tm.boost_true_postive: unknown key; did you mean tm.boost_true_positive? (mine.yaml, line 6)",
    ], r.stderr[-3000:]
    assert_clean(r.stdout + r.stderr)


def test_a_yaml_error_in_the_config_file_names_its_line(workdir):
    config = workdir / "config" / "config.yaml"
    lines = config.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith("scale:"))
    lines[n] = "scale: paper: smoke"
    config.write_text("\n".join(lines) + "\n")
    r = snakemake(workdir)
    assert r.returncode == 1, r.stderr[-3000:]
    [line] = problem_lines(r)
    assert line.startswith(f"config file config/config.yaml, line {n + 1}, column ") and "not valid YAML" in line
    assert "fix that line" in line
    assert_clean(r.stdout + r.stderr)


def test_each_layer_of_the_configuration_is_named_where_it_sets_a_key(tmp_path):
    (tmp_path / "a.yaml").write_text("seeds: [0, 1]\ntm:\n  epochs: 5\n")
    (tmp_path / "b.yaml").write_text("# later files win\ntm:\n  state_bits: 8\nimpls:\n  - tm_cpu\n  - pytm\n")
    sources = config_sources([tmp_path / "a.yaml", tmp_path / "b.yaml"], {"run_missing": False},
                             REPO / "config" / "config.yaml")
    assert [s.path.name if s.path else "--config" for s in sources] == ["--config", "b.yaml", "a.yaml", "config.yaml"]
    assert where(sources, ["run_missing"]) == " (from --config)"
    assert where(sources, ["impls", 1]).endswith("b.yaml, line 6)")
    assert where(sources, ["tm", "state_bits"]).endswith("b.yaml, line 3)")
    assert where(sources, ["tm", "epochs"]).endswith("a.yaml, line 3)")
    assert where(sources, ["seeds", 1]).endswith("a.yaml, line 1)")
    n = next(i for i, line in enumerate((REPO / "config" / "config.yaml").read_text().splitlines())
             if line.startswith("scale:"))
    assert where(sources, ["scale"]).endswith(f"config/config.yaml, line {n + 1})")
    assert where(sources, ["nowhere"]) == ""


def test_schema_errors_never_quote_the_schema_and_name_every_unknown_key():
    schema = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update({"seedz": [0], "xyzzy": 1})
    config["tm"]["epoch"] = 5
    lines = schema_errors(config, schema, [Source({"seedz": [0], "xyzzy": 1, "tm": {"epoch": 5}})])
    assert lines[0] == "config seedz: unknown key; did you mean seeds? (from --config)"
    # No close match: the valid keys at that level are the fix.
    assert lines[1].startswith("config xyzzy: unknown key; the keys here are: ") and "run_missing" in lines[1]
    assert lines[2] == "config tm.epoch: unknown key; did you mean tm.epochs? (from --config)"
    assert len(lines) == 3 and all("\n" not in line and "description" not in line for line in lines)


def test_the_plan_command_names_the_file_and_line_of_a_misspelt_key(tmp_path):
    text = (REPO / "config" / "config.yaml").read_text().replace("\nrun_missing:", "\nrun_misssing:", 1)
    assert "run_misssing:" in text
    (tmp_path / "config.yaml").write_text(text)
    n = next(i for i, line in enumerate(text.splitlines()) if line.startswith("run_misssing:"))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "config.yaml", REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert str(err.value) == (f"config run_misssing: unknown key; did you mean run_missing? "
                              f"({tmp_path / 'config.yaml'}, line {n + 1})")


def test_a_config_file_that_cannot_be_read_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^config file \S+missing\.yaml: cannot read it \(No such file or "
                                          r"directory\); check the path$"):
        read_config_file(tmp_path / "missing.yaml")
    (tmp_path / "tab.yaml").write_text("seeds:\n\t- 0\n")
    with pytest.raises(ConfigError, match=r"tab\.yaml, line 2, column 1: not valid YAML: found character '\\t'"):
        read_config_file(tmp_path / "tab.yaml")
    (tmp_path / "list.yaml").write_text("- seeds\n")
    with pytest.raises(ConfigError, match=r"expected a mapping of settings \(key: value lines\), got a list"):
        read_config_file(tmp_path / "list.yaml")


# --- targets -----------------------------------------------------------------------------------------------


def test_an_unknown_target_names_the_closest_valid_targets(workdir):
    r = snakemake(workdir, "exp_wsd_banana", "paper_tables/table3_performanse.md")
    assert r.returncode == 1, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert_clean(out)
    # The last lines of Snakemake's log (stdout in a dry run, stderr otherwise).
    log = r.stdout if "Unknown target" in r.stdout else r.stderr
    *_, first, second, names = log.rstrip().splitlines()
    assert first.startswith("Unknown target 'exp_wsd_banana': no rule has this name; did you mean "), first
    assert "exp_wsd_apple" in first and "exp_wsd_java" in first
    assert second.startswith("Unknown target 'paper_tables/table3_performanse.md': no rule writes this file; "
                             "did you mean paper_tables/table3_performance.md"), second
    valid = names.removeprefix("Valid targets: ").split(", ")
    assert names.startswith("Valid targets: ") and valid == sorted(valid)
    for target in ("all", "data", "tables", "figures", "report", "ablation", "exp_wsd_apple", "sweep_semeval"):
        assert target in valid, (target, names)


def test_unknown_target_lines_without_a_close_match_point_to_the_valid_names():
    assert unknown_target_lines(["zzz"], ["all", "tables"]) == [
        "Unknown target 'zzz': no rule has this name; name one of the targets below, or the path of an output file",
        "Valid targets: all, tables",
    ]


# --- Ctrl-C ------------------------------------------------------------------------------------------------


def _sigint_default():
    # A shell's background job starts with SIGINT ignored: give snakemake the default disposition.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_planning_ends_with_one_line(tmp_path):
    """Ctrl-C before any job has started (here while the Snakefile is read: a copy that waits there)."""
    copy_workflow(tmp_path)
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text(snakefile.read_text() + "\nimport sys, time\nprint('planning', file=sys.stderr, flush=True)\n"
                         "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=_sigint_default)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "planning":
                break
        proc.send_signal(signal.SIGINT)
        out = "".join(lines) + proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert_clean(out)
    assert "KeyboardInterrupt" not in out
    assert out.rstrip().splitlines()[-1] == stop_line([], planning=True), out[-3000:]


def test_ctrl_c_during_a_run_ends_with_what_stopped_and_how_to_resume(tmp_path):
    """SIGINT to snakemake while a run_tm job trains (as tests/workflow/test_interrupt.py): the output ends with the
    stop line, after every job process has ended, and no "Error in rule" block or stack frame comes before it."""
    pytest.importorskip("pyTsetlinMachine.tm", reason="pyTsetlinMachine is not installed")
    from tests.workflow.test_interrupt import RECORD, _snakemake_args, _write_dataset

    copy_workflow(tmp_path)
    _write_dataset(tmp_path, 2000, 3000)
    log = tmp_path / RECORD.replace(".json", ".log")
    proc = subprocess.Popen(_snakemake_args(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=_sigint_default)
    try:
        deadline = time.monotonic() + 120
        while not (log.is_file() and "epoch" in log.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert_clean(out)
    assert out.rstrip().splitlines()[-1] == stop_line(["run_tm"], planning=False), out[-3000:]
    assert "to resume, run the same command again (no --unlock needed)" in stop_line(["run_tm"], planning=False)
    assert not (tmp_path / RECORD).exists()
    assert not any((tmp_path / ".snakemake" / "locks").glob("*"))
