"""Provenance: a run that replaces a committed record still ran committed code."""

import subprocess

from asynctm import provenance


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_git_info_counts_code_changes_not_committed_results(tmp_path, monkeypatch):
    (tmp_path / "results" / "x").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    record, code = tmp_path / "results" / "x" / "seed0.json", tmp_path / "src" / "m.py"
    record.write_text("{}")
    code.write_text("a = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    monkeypatch.delenv("ASYNCTM_SOURCE_COMMIT", raising=False)
    assert provenance.git_info()["tracked_files_modified"] == 0
    record.unlink()  # a rerun replaces a committed record
    assert provenance.git_info()["tracked_files_modified"] == 0
    code.write_text("a = 2\n")
    info = provenance.git_info()
    assert info["tracked_files_modified"] == 1 and len(info["commit"]) == 40


def test_the_campaigns_source_commit_wins_over_a_git_in_the_copy(tmp_path, monkeypatch):
    """On a GPU machine the copy's .git may be older than the copied files: the commit the campaign staged counts."""
    (tmp_path / "m.py").write_text("a = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "init")
    (tmp_path / "m.py").write_text("a = 2\n")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    monkeypatch.setenv("ASYNCTM_SOURCE_COMMIT", "f" * 40)
    monkeypatch.setenv("ASYNCTM_SOURCE_DIRTY", "0")
    assert provenance.git_info() == {"commit": "f" * 40, "tracked_files_modified": 0}
    monkeypatch.delenv("ASYNCTM_SOURCE_COMMIT")
    assert provenance.git_info()["tracked_files_modified"] == 1


def test_physical_cores_count_distinct_cores_of_the_sysfs_topology(tmp_path):
    from asynctm.provenance import physical_cores

    # 4 logical CPUs, two threads on each of 2 cores; a CPU without topology (offline) is skipped
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{core}\n")
    (tmp_path / "cpu4").mkdir()
    (tmp_path / "cpufreq").mkdir()
    assert physical_cores(tmp_path) == 2
    assert physical_cores(tmp_path / "missing") is None
