"""The Snakemake workflow: DAG, lint, config validation, and the data rules end to end on the mirror.

Each test runs Snakemake in a throw-away copy of the workflow files (Snakefile, config/, workflow/,
profiles/), so nothing touches the repository's data/ or logs/.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asynctm.datasets import DATASETS, load_processed
from asynctm.datasets.fetch import read_manifest


def snakemake(workdir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir, capture_output=True, text=True, timeout=timeout,
    )


def set_config(workdir: Path, **changes) -> None:
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config.update(changes)
    path.write_text(yaml.safe_dump(config))


def test_dry_run_lists_fetch_and_prepare_for_all_eight(workdir):
    r = snakemake(workdir, "-n")
    assert r.returncode == 0, r.stderr + r.stdout
    out = r.stdout + r.stderr
    fetched = set(re.findall(r"output: data/raw/(\w+)/MANIFEST\.json", out))
    prepared = set(re.findall(r"output: data/processed/(\w+)/(?:paper|clean)/meta\.json", out))
    assert fetched == prepared == set(DATASETS) and len(DATASETS) == 8
    for name in ("bike_sharing", "wsd_apple", "wsd_java"):
        assert f"data/processed/{name}/clean/meta.json" in out


def test_lint_is_clean(workdir):
    r = snakemake(workdir, "--lint")
    assert r.returncode == 0 and "Congratulations, your workflow is in a good condition" in r.stdout + r.stderr, (
        r.stdout + r.stderr
    )


@pytest.mark.parametrize(
    "config, message",
    [
        ("protocols={'bike_sharing': ['papr']}", r"'papr' is not one of \['paper', 'clean'\]"),
        ("datasets=[bike_sharing,mnist]", r"'mnist' is not one of"),
        ("data_mirorr=x", r"config data_mirorr: unknown key; did you mean data_mirror\? \(from --config\)"),
        ("data_mirror=no/such/folder", r"data_mirror='no/such/folder' is not a folder"),
    ],
)
def test_bad_config_gives_a_clear_error(workdir, config, message):
    r = snakemake(workdir, "-n", "--config", config)
    assert r.returncode != 0
    assert re.search(message, r.stderr + r.stdout), r.stderr + r.stdout


def test_subset_by_config(workdir):
    r = snakemake(workdir, "-n", "--config", "datasets=[wsd_java]")
    assert r.returncode == 0, r.stderr
    assert set(re.findall(r"output: data/\w+/(\w+)/", r.stdout + r.stderr)) == {"wsd_java"}


# Counts of every dataset as the default configuration builds it (train/test sizes, features).
EXPECTED_COUNTS = {
    ("bike_sharing", "paper"): ({"train": 13_904, "test": 3_475}, 1_389),
    ("bike_sharing", "clean"): ({"train": 13_904, "test": 3_475}, 291),
    ("blogfeedback", "paper"): ({"train": 16_000, "test": 4_000}, None),
    ("bbc_sport", "paper"): ({"train": 194, "test": 195, "novel": 147}, None),
    ("newsgroups20", "paper"): ({"train": 941, "test": 942, "novel": 994}, None),
    ("semeval", "paper"): ({"train": 6_000, "test": 2_000}, 102_176),
    ("semeval", "clean"): ({"train": 8_000, "test": 2_717}, None),
    ("imdb", "paper"): ({"train": 25_000, "test": 25_000}, 5_000),
    ("wsd_apple", "paper"): ({"train": 1_784, "test": 1_032}, 3_000),
    ("wsd_apple", "clean"): ({"train": 1_784, "test": 1_032}, 3_000),
    ("wsd_java", "paper"): ({"train": 3_726, "test": 1_929}, 3_000),
    ("wsd_java", "clean"): ({"train": 3_726, "test": 1_929}, 3_000),
}


@pytest.mark.slow
def test_data_rules_and_the_smoke_dag_end_to_end_on_the_mirror(workdir, mirror):
    """The whole data pipeline, all eight datasets, then the whole smoke-scale DAG on them (every
    experiment, sweep and implementation this host can run), as `snakemake --cores all` runs it."""
    set_config(workdir, data_mirror=str(mirror))
    r = snakemake(workdir, "data")
    assert r.returncode == 0, r.stderr + r.stdout
    processed = workdir / "data" / "processed"
    built = {(p.parent.parent.name, p.parent.name) for p in processed.glob("*/*/meta.json")}
    assert built == set(EXPECTED_COUNTS)
    for (name, protocol), (counts, n_features) in EXPECTED_COUNTS.items():
        meta = json.loads((processed / name / protocol / "meta.json").read_text())
        assert meta["protocol"] == protocol
        assert meta["counts"] == counts, (name, protocol)
        if n_features is not None:
            assert meta["n_features"] == n_features, (name, protocol)
        assert meta["raw_digest"] == read_manifest(workdir / "data" / "raw" / name)["raw_digest"]
    ds = load_processed(processed / "bike_sharing" / "paper")
    assert ds.X_train.shape == (13_904, 1_389)
    assert "raw digest" in (workdir / "logs" / "data" / "fetch_bike_sharing.log").read_text()
    # Nothing left to do, and a rerun from scratch is byte-identical.
    again = snakemake(workdir, "-n", "data")
    assert "Nothing to be done" in again.stdout + again.stderr
    meta = (processed / "wsd_apple" / "paper" / "meta.json").read_bytes()
    # (The target goes first: --forcerun takes every argument after it.)
    r = snakemake(workdir, "data/processed/wsd_apple/paper/meta.json", "--forcerun", "prepare")
    assert r.returncode == 0, r.stderr
    assert (processed / "wsd_apple" / "paper" / "meta.json").read_bytes() == meta
    check_smoke_dag(workdir)


def check_smoke_dag(workdir: Path) -> None:
    r = snakemake(workdir, "--config", "scale=smoke", timeout=1800)  # ~5 min idle; a busy machine takes 3x
    assert r.returncode == 0, r.stderr[-5000:] + r.stdout[-3000:]
    smoke = workdir / "results" / "smoke"
    records = sorted(smoke.glob("*/*/*/seed*.json"))
    impls = {p.parent.parent.name for p in records}
    assert {p.parent.parent.parent.name for p in records} == set(DATASETS)  # one experiment per dataset
    assert impls >= {"tm_cpu", "pytm_indexed", "pytm_nonindexed", "svm", "mlp_novelty"}
    for p in records:
        rec = json.loads(p.read_text())
        assert rec["status"] == "complete" and rec["scale"] == "smoke", p
        assert (p.with_suffix(".log")).is_file(), p
    tables = workdir / "results" / "smoke" / "paper_tables"
    figures = workdir / "results" / "smoke" / "figures"
    assert {p.name for p in tables.glob("*.csv")} == {"table3_performance.csv", "table4_svm_time.csv",
                                                      "table5_regression.csv", "claims.csv"}
    assert (tables / "claims.md").is_file() and (figures / "fig_claims_forest.png").is_file()
    assert len(list(figures.glob("*.png"))) == len(list(figures.glob("*.pdf"))) == 9
    # Reruns are free: nothing left to do.
    again = snakemake(workdir, "-n", "--config", "scale=smoke")
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]


def test_a_bad_mirror_file_fails_the_fetch_job_cleanly(workdir, tmp_path):
    bad = tmp_path / "bad-mirror" / "bike_sharing"
    bad.mkdir(parents=True)
    (bad / "hour.csv").write_text("instant,cnt\n1,16\n")
    set_config(workdir, data_mirror=str(bad.parent), datasets=["bike_sharing"])
    r = snakemake(workdir, "data/raw/bike_sharing/MANIFEST.json")
    assert r.returncode != 0
    log = (workdir / "logs" / "data" / "fetch_bike_sharing.log").read_text()
    assert "checksum mismatch for hour.csv" in log and "expected sha256 e03de4ee" in log
    raw = workdir / "data" / "raw" / "bike_sharing"
    assert not raw.exists() or not any(raw.iterdir())


def test_slurm_profile_dry_run(workdir):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    r = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "-n", "--config",
                        "scale=smoke"], cwd=workdir, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "run_tm" in r.stdout + r.stderr


def test_profiles_are_valid_yaml(repo_root):
    default = yaml.safe_load((repo_root / "profiles" / "default" / "config.yaml").read_text())
    slurm = yaml.safe_load((repo_root / "profiles" / "slurm" / "config.yaml").read_text())
    assert default["cores"] == "all"
    assert slurm["executor"] == "slurm" and {"slurm_partition", "runtime", "mem_mb"} <= set(slurm["default-resources"])
