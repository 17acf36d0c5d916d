"""The pipeline's deadline (config ``deadline``): its forms and their one-line refusal, its resolution once per
snakemake command (the main process; its jobs read the Snakefile again later), no job started after it, and a real
snakemake run that pauses at it with its checkpoint and resumes with the same command, equal epoch by epoch to an
uninterrupted run. A made-up processed dataset in a copy of the workflow (as test_interrupt.py), one thread."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import UTC, datetime

import numpy as np
import pytest
import yaml

from asynctm import cli, jobs
from asynctm.config_check import (
    DEADLINE_FORMS,
    ConfigError,
    check_config,
    coerce,
    load_schema,
    resolve_deadline,
)
from asynctm.experiments.run import checkpoint_path
from tests.helpers import REPO, copy_workflow

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
EPOCHS = 4
RECORD = f"results/smoke/wsd_apple/tm_cpu/n20_T50_s5_e{EPOCHS}/seed0.json"
CONFIG = ["scale=smoke", "impls=[tm_cpu]", "cpu_threads=1", f"smoke={{epochs: {EPOCHS}}}"]


# -- its forms ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, due", [
    ("2026-11-27T18:00:00+00:00", datetime(2026, 11, 27, 18, tzinfo=UTC).timestamp()),
    ("2026-11-27T19:30:00+01:30", datetime(2026, 11, 27, 18, tzinfo=UTC).timestamp()),
    ("2026-11-27T18:00:00Z", datetime(2026, 11, 27, 18, tzinfo=UTC).timestamp()),
    ("3h", 1000 + 3 * 3600.0),
    ("45m", 1000 + 45 * 60.0),
    ("5400s", 1000 + 5400.0),
    ("3h50m", 1000 + 3 * 3600.0 + 50 * 60),
    ("1d 2h 3m 4s", 1000 + 86400.0 + 2 * 3600 + 3 * 60 + 4),
    ("1.5h", 1000 + 5400.0),
    (None, None),
])
def test_the_deadline_forms(value, due):
    assert resolve_deadline(value, now=1000.0) == due


def test_a_duration_counts_from_the_start_and_a_time_is_absolute():
    assert resolve_deadline("3h50m", now=1000.0) == 1000.0 + 13800
    at = datetime(2026, 11, 27, 18, tzinfo=UTC).timestamp()
    assert resolve_deadline("2026-11-27T18:00:00+00:00", now=1000.0) == at
    assert resolve_deadline(None, now=1000.0) is None


@pytest.mark.parametrize("value", ["3 hours", "tomorrow", "h", "3h3h", "0s", "2026-11-27", "2026-11-27T18:00:00",
                                   "", 5400, True, [3]])
def test_a_malformed_deadline_is_refused_in_one_line_naming_the_key_and_the_forms(value):
    with pytest.raises(ConfigError) as info:
        resolve_deadline(value, now=1000.0)
    message = str(info.value)
    assert "\n" not in message and message.startswith("config deadline: ") and message.endswith(DEADLINE_FORMS)
    # the pipeline's check says the same, and the schema lets every form through to it (or words its own refusal)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    with pytest.raises(ConfigError) as checked:
        check_config({**config, "deadline": value}, load_schema(SCHEMA))
    assert str(checked.value).splitlines() == [message] or (
        len(str(checked.value).splitlines()) == 1 and str(checked.value).endswith(f"; use {DEADLINE_FORMS}"))


def test_an_unquoted_yaml_timestamp_in_a_config_file_is_a_time():
    value = yaml.safe_load("deadline: 2026-11-27T18:00:00+00:00")["deadline"]
    assert isinstance(value, datetime)
    typed = coerce({"deadline": value}, load_schema(SCHEMA))["deadline"]
    assert resolve_deadline(typed, now=1000.0) == value.timestamp()


def test_snakemake_refuses_a_malformed_deadline_in_one_line(tmp_path):
    work = copy_workflow(tmp_path / "w")
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "-n", "--config", "deadline=3 hours"],
                       cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr[-3000:]
    refusals = [line for line in r.stderr.splitlines() if line.startswith("config deadline")]
    assert refusals == [f"config deadline: '3 hours' is not a deadline; use {DEADLINE_FORMS} (from --config)"]
    assert "Traceback" not in r.stderr and not (work / "results").exists()


# -- resolved once -----------------------------------------------------------------------------------------------

def test_the_main_process_resolves_the_deadline_once_and_its_jobs_inherit_it():
    inherited = {jobs.DEADLINE_ENV: "123.0"}  # left by an earlier command: replaced
    first = jobs.share_deadline(resolve_deadline("3h", now=1000.0), inherited)
    assert first == 1000.0 + 3 * 3600
    # A job process reads the Snakefile again, later: it takes the main process's time, not a new one.
    assert jobs.deadline(inherited) == first
    assert jobs.share_deadline(resolve_deadline(None, now=2000.0), inherited) is None
    assert jobs.DEADLINE_ENV not in inherited and jobs.deadline(inherited) is None


def test_stop_at_is_a_margin_before_the_deadline(monkeypatch):
    monkeypatch.delenv(jobs.DEADLINE_ENV, raising=False)
    assert jobs.stop_at_args() == []
    monkeypatch.setenv(jobs.DEADLINE_ENV, "5000.5")
    assert jobs.stop_at_args() == ["--stop-at", f"{5000.5 - jobs.DEADLINE_MARGIN_S:.3f}"]


def test_no_job_starts_once_the_deadline_has_passed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(jobs.DEADLINE_ENV, repr(time.time() - 1))
    log = tmp_path / "job" / "x.log"
    status = cli.main(["run", "tm", "--settings", "{}", "--data-dir", str(tmp_path), "--out", str(tmp_path / "r.json"),
                       "--log", str(log)])
    message = capsys.readouterr().err
    assert status == jobs.EXIT_PAUSED
    assert message.count("\n") == 1 and "asynctm run tm not started: the deadline" in message
    assert "rerun the same command" in message
    assert not log.parent.exists()  # nothing was started, nothing written


def test_a_run_that_cannot_checkpoint_pauses_too_and_its_line_says_it_starts_again(tmp_path, monkeypatch):
    """A peer without checkpoints (none of the pipeline's TM implementations; PyTsetlinMachineCUDA's) still pauses
    before an epoch past its stop time, with nothing to resume from, and the job's line says so."""
    from asynctm import peers
    from asynctm.experiments.run import RunPaused, run_tm

    monkeypatch.setattr(peers.AsyncTMPeer, "checkpoint", lambda self: None)
    monkeypatch.setattr(peers.AsyncTMPeer, "resume_exact", None)
    _write_dataset(tmp_path)
    settings = {"kind": "tm", "experiment": "wsd_apple", "impl": "tm_cpu", "params": f"n20_T10_s3_e{EPOCHS}",
                "seed": 0, "scale": "smoke", "task": "classification", "dataset": "wsd_apple", "protocol": "paper",
                "f1": "macro", "max_train": None, "max_test": None, "checkpoint_every_s": 0,
                "hyperparameters": {"n_clauses": 20, "T": 10, "s": 3.0, "epochs": EPOCHS, "state_bits": 8,
                                    "boost_true_positive": True, "batch_size": 50, "append_negated": True}}
    out, log = tmp_path / "r.json", tmp_path / "r.log"
    with pytest.raises(RunPaused) as info:
        run_tm(settings, tmp_path / "data", out, log, threads=1, stop_at=time.time() - 1)
    assert (info.value.epochs_done, info.value.checkpoint) == (1, None) and not checkpoint_path(out).exists()
    assert jobs.paused_line(log) == (f"paused at the deadline after epoch 1 of {EPOCHS}; rerun the same command to "
                                     "start it again (it has no checkpoint)")


# -- a real run: paused at the deadline, resumed by the same command -----------------------------------------------

def _write_dataset(work):
    """A made-up wsd_apple in the processed layout (the run reads only that): the class is whether 3 of the first 5
    features are set, with 10 % label noise, so the accuracy moves from epoch to epoch."""
    from asynctm.datasets.base import ProcessedDataset, save_processed

    rng = np.random.default_rng(5)
    X = (rng.random((500, 24)) < 0.5).astype(np.uint8)
    y = ((X[:, :5].sum(1) >= 3) ^ (rng.random(500) < 0.1)).astype(np.int64)
    save_processed(ProcessedDataset("wsd_apple", "paper", "classification", X[:400], y[:400], X[400:], y[400:],
                                    [f"f{i}" for i in range(24)], ["a", "b"]),
                   work / "data" / "processed" / "wsd_apple" / "paper")


def _snakemake(work, *config):
    # --allowed-rules run_tm: the made-up processed dataset counts as a source (no fetch, no prepare).
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--allowed-rules", "run_tm", "--config",
                           *CONFIG, *config, "--", RECORD], cwd=work, capture_output=True, text=True, timeout=300)


def _metrics(record):
    return [{k: v for k, v in e.items() if k not in ("train_s", "eval_s")} for e in record["epochs"]]


def test_a_run_pauses_at_the_deadline_and_the_same_command_resumes_it(tmp_path):
    paused, whole = copy_workflow(tmp_path / "paused"), copy_workflow(tmp_path / "whole")
    for work in (paused, whole):
        _write_dataset(work)
    # The stop time (a margin before the deadline) has passed when the run starts, the deadline not (the job starts
    # within seconds): its first epoch (which nothing predicts) runs, then it pauses.
    r = _snakemake(paused, f"deadline={int(jobs.DEADLINE_MARGIN_S * 0.95)}s")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    line = (f"asynctm run tm paused at the deadline after epoch 1 of {EPOCHS}; rerun the same command to resume; "
            f"see {RECORD.removesuffix('.json')}.log")
    assert line in out.splitlines(), out[-3000:]
    assert "Traceback" not in out and 'File "' not in out, out[-3000:]
    assert checkpoint_path(paused / RECORD).is_file() and not (paused / RECORD).exists()

    r = _snakemake(paused)  # the same command, without the deadline
    assert r.returncode == 0, r.stderr[-3000:]
    resumed = json.loads((paused / RECORD).read_text())
    assert resumed["resume"]["after_epochs"] == [1] and not checkpoint_path(paused / RECORD).exists()

    r = _snakemake(whole, "deadline=5h")  # far enough: uninterrupted
    assert r.returncode == 0, r.stderr[-3000:]
    reference = json.loads((whole / RECORD).read_text())
    assert reference["resume"]["count"] == 0
    assert _metrics(resumed) == _metrics(reference)
    assert len({e["accuracy"] for e in reference["epochs"]}) > 1  # the epochs differ: a real comparison

    # Resolved once: the deadline the main process announced at the start (to the second) is the one its job got,
    # although the job's process read the Snakefile again seconds later.
    announced = re.search(r"^Deadline (\S+ \S+) \(config deadline\)", r.stderr, re.M)
    assert announced, r.stderr[-3000:]
    command = reference["provenance"]["command"].split()
    stop_at = float(command[command.index("--stop-at") + 1])
    assert abs(stop_at + jobs.DEADLINE_MARGIN_S - datetime.fromisoformat(announced.group(1)).timestamp()) < 1.0
