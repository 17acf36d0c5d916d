"""The cluster path on a real SLURM: the pipeline through `--profile profiles/slurm` on a one-node cluster.

The cluster is the one `.ci/slurm-up.sh` starts on localhost (munge, slurmctld, slurmd; no accounting
database, so the executor plugin reads job states with squeue). In CI (`CI=true`) this test starts it
with that script and fails, saying what failed, when it does not come up; elsewhere it runs against a
cluster that already answers and skips, with the reason, where none does.

What it shows: a smoke-scale slice of the DAG (raw mirror -> processed data -> a tm_cpu run -> Table 3)
runs end to end through the profile; every job went through `sbatch` with the resources the profile
declares (read back from slurmctld); a training job killed with `scancel` fails the run without leaving
a record behind, and rerunning the same command redoes only what is missing and completes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
RECORD = "results/smoke/wsd_apple/tm_cpu/n20_T50_s5_e2/seed0.json"
TARGET = "results/smoke/paper_tables/table3_performance.csv"
# No accounting here: job states come from squeue; a short first status check keeps the run quick.
PLUGIN_ARGS = ("--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
               "--slurm-no-account")
RUN_TIMEOUT = 300


def unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"SLURM cluster for the profiles/slurm test: {reason}", pytrace=False)
    pytest.skip(reason)


def run(*cmd: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)


def node_of_partition(partition: str) -> dict[str, str]:
    """The first node of the partition as `scontrol show node` fields ({} when there is none)."""
    r = run("sinfo", "-h", "-p", partition, "-N", "-o", "%N")
    names = r.stdout.split()
    if r.returncode != 0 or not names:
        return {}
    show = run("scontrol", "show", "node", "-o", names[0]).stdout
    return dict(re.findall(r"(\S+?)=(\S*)", show))


@pytest.fixture(scope="module")
def cluster(repo_root) -> dict:
    """A SLURM cluster that takes jobs of the profile's size, in the profile's partition."""
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        unavailable("snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')")
    profile = yaml.safe_load((repo_root / "profiles" / "slurm" / "config.yaml").read_text())
    res = profile["default-resources"]
    if IN_CI:
        cmd = [str(repo_root / ".ci" / "slurm-up.sh")]
        if os.geteuid() != 0:
            cmd = ["sudo", "-n", *cmd]
        try:
            up = run(*cmd, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            unavailable(f"{' '.join(cmd)} could not run: {e}")
        if up.returncode != 0:
            unavailable(f"{' '.join(cmd)} failed (exit {up.returncode}): {(up.stderr or up.stdout).strip()}")
    for tool in ("sbatch", "squeue", "scontrol", "scancel", "sinfo"):
        if shutil.which(tool) is None:
            unavailable(f"'{tool}' not found: no SLURM client here (CI starts one with .ci/slurm-up.sh)")
    ping = run("scontrol", "ping")
    if "is UP" not in ping.stdout:
        said = (ping.stdout + ping.stderr).strip().splitlines()
        unavailable(f"no SLURM controller answers 'scontrol ping' ({said[0] if said else 'no output'}); "
                    "start one with: sudo .ci/slurm-up.sh")
    node = node_of_partition(res["slurm_partition"])
    if not node:
        unavailable(f"the cluster has no partition '{res['slurm_partition']}' (profiles/slurm's slurm_partition)")
    state = node.get("State", "")
    if not state.startswith(("IDLE", "MIXED", "ALLOCATED", "COMPLETING")):
        unavailable(f"node {node.get('NodeName')} is {state}, not up (scontrol show node {node.get('NodeName')})")
    if int(node["CPUTot"]) < res["cpus_per_task"] or int(node["RealMemory"]) < res["mem_mb"]:
        unavailable(f"node {node['NodeName']} has {node['CPUTot']} CPUs and {node['RealMemory']} MB, less than "
                    f"one profiles/slurm job asks ({res['cpus_per_task']} CPUs, {res['mem_mb']} MB)")
    return res


def snakemake_cmd(mirror: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", TARGET, "--profile", "profiles/slurm", *PLUGIN_ARGS, *extra,
            "--config", "scale=smoke", f"data_mirror={mirror}", "datasets=[wsd_apple]", "impls=[tm_cpu]"]


def jobs_on_cluster() -> dict[str, dict[str, str]]:
    """Every job slurmctld still holds, as `scontrol show job` fields, by job id."""
    out = run("scontrol", "show", "job", "-o").stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\S+?)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def submitted(log: str) -> dict[str, Path]:
    """The SLURM job ids Snakemake's log says it submitted, with each job's SLURM output file."""
    return {jid: Path(path) for jid, path in re.findall(r"submitted with SLURM jobid (\d+) \(log: (.+?)\)", log)}


def minutes(limit: str) -> int:
    """SLURM's [D-]HH:MM:SS time limit in minutes."""
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 1440 + h * 60 + m + (s > 0)


def check_resources(job: dict[str, str], res: dict) -> None:
    """The job went through sbatch with profiles/slurm's default resources."""
    assert job["BatchFlag"] == "1", job  # a batch script, i.e. sbatch
    assert job["Partition"] == res["slurm_partition"], job
    assert int(job["NumCPUs"]) == res["cpus_per_task"], job
    assert job["MinMemoryNode"] == f"{res['mem_mb']}M", job
    assert minutes(job["TimeLimit"]) == res["runtime"], job


@pytest.mark.slow
def test_profile_runs_on_a_real_slurm_and_recovers_from_a_killed_job(cluster, workdir, mirror):
    res = cluster
    before = set(jobs_on_cluster())
    # 1. Start the run (no retries, so the kill shows), wait for the training job, kill it.
    log1 = workdir / "run1.log"
    with log1.open("w") as out:
        proc = subprocess.Popen(snakemake_cmd(mirror, "--retries", "0"), cwd=workdir, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
        killed = None
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while killed is None and proc.poll() is None and time.monotonic() < deadline:
                for jid, job in jobs_on_cluster().items():
                    if jid not in before and job.get("Comment", "").startswith("rule_run_tm_") \
                            and job["JobState"] == "RUNNING":
                        assert run("scancel", jid).returncode == 0
                        killed = jid
                        break
                time.sleep(0.2)
            rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
    text1 = log1.read_text()
    assert killed is not None, "the run_tm job was never seen RUNNING:\n" + text1[-4000:]
    assert rc != 0, "the run survived its killed job:\n" + text1[-4000:]
    first = submitted(text1)
    assert killed in first
    jobs = jobs_on_cluster()
    assert jobs[killed]["JobState"] == "CANCELLED", jobs[killed]
    assert f"JOB {killed} ON {jobs[killed]['BatchHost']} CANCELLED" in first[killed].read_text()
    assert not (workdir / RECORD).exists(), "a killed run left a record behind"
    # Raw data, processed data and the artifacts config were done on the cluster before the kill.
    assert (workdir / "data" / "processed" / "wsd_apple" / "paper" / "meta.json").is_file()

    # 2. The same command again (the profile as it is, retries included) redoes what is missing.
    r = subprocess.run(snakemake_cmd(mirror), cwd=workdir, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    text2 = r.stdout + r.stderr
    assert r.returncode == 0, text2[-5000:]
    second = submitted(text2)
    jobs = jobs_on_cluster()
    rules = [jobs[j]["Comment"] for j in second]
    assert sorted(c.split("_wildcards_")[0] for c in rules) == ["rule_run_tm", "rule_table3_performance"], rules
    for jid in [*first, *second]:
        assert jid not in before, jid
        check_resources(jobs[jid], res)
        if jid != killed:
            assert jobs[jid]["JobState"] == "COMPLETED" and jobs[jid]["ExitCode"] == "0:0", jobs[jid]
    record = json.loads((workdir / RECORD).read_text())
    assert record["status"] == "complete" and record["scale"] == "smoke"
    assert (workdir / TARGET).read_text().count("\n") >= 2  # a header and wsd_apple's row

    # 3. Nothing left to do.
    again = subprocess.run(snakemake_cmd(mirror, "-n"), cwd=workdir, capture_output=True, text=True, timeout=120)
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
