"""benchmarks/library_table.py: the library comparison in docs/library.md is what the generator renders from the
committed benchmark record, and a record it cannot use (a peer missing, another library version) or a page
without the markers is refused with one line, writing nothing."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys

import pytest

from tests.helpers import REPO

SCRIPT = REPO / "benchmarks" / "library_table.py"


@pytest.fixture(scope="module")
def table():
    spec = importlib.util.spec_from_file_location("library_table_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def record(table):
    return json.loads(table.RECORD.read_text())


def _apple(record: dict) -> dict:
    return next(s for s in record["settings"] if s["setting"] == "apple")


def test_committed_block_is_the_rendering_of_the_committed_record(table, record):
    doc = table.DOC.read_text()
    block = table.render(record, table.RECORD)
    assert table.current_block(doc, "docs/library.md") == block
    assert table.main(["--check"]) == 0
    # every timed row of the record is in the table, with its median and accuracy as the record has them
    for r in _apple(record)["results"]:
        if r["peer"] == "pytm" and r["options"].get("indexed") is False:
            continue
        assert f"| {r['median_epoch_s']:.3f} |" in block and f"| {r['final_metric']:.2f} |" in block
    assert doc.index("## Other Tsetlin Machine libraries") < doc.index(table.START)
    assert "## Quick start" in doc and "## Determinism" in doc  # the rest of the page is kept


@pytest.mark.parametrize("peer", ["asynctm", "pytm", "tmu_cpu", "green_tsetlin"])
def test_a_record_lacking_a_peer_fails_with_one_line(table, record, peer, tmp_path):
    rec = copy.deepcopy(record)
    setting = _apple(rec)
    setting["results"] = [r for r in setting["results"] if r["peer"] != peer]
    path = tmp_path / "record.json"
    path.write_text(json.dumps(rec))
    doc = tmp_path / "library.md"
    doc.write_text(f"before\n{table.START}\nold\n{table.END}\nafter\n")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--record", str(path), "--doc", str(doc)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and peer in lines[0] and "--peers" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert doc.read_text() == f"before\n{table.START}\nold\n{table.END}\nafter\n"  # nothing written


def test_a_skipped_peer_names_its_reason(table, record, tmp_path):
    rec = copy.deepcopy(record)
    setting = _apple(rec)
    setting["results"] = [r for r in setting["results"] if r["peer"] != "tmu_cpu"]
    setting["skipped"] = [{"label": "tmu CPU", "reason": "FileNotFoundError: build tmu's environment with `bash "
                           "benchmarks/setup_tm_peers.sh tmu`", "seeds": [0]}]
    with pytest.raises(table.TableError, match="setup_tm_peers.sh tmu") as err:
        table.render(rec, tmp_path / "r.json")
    assert "\n" not in str(err.value)


def test_another_library_version_is_refused(table, record, tmp_path):
    rec = copy.deepcopy(record)
    for r in _apple(rec)["results"]:
        if r["peer"] == "green_tsetlin":
            r["metadata"]["version"] = "9.9.9"
    with pytest.raises(table.TableError, match="green-tsetlin ran version 9.9.9.*checked against"):
        table.render(rec, tmp_path / "r.json")


def test_splice_keeps_the_page_and_needs_the_markers(table, record, tmp_path):
    block = table.render(record, table.RECORD)
    doc = f"# Title\n\ntext\n\n{table.START}\nstale\n{table.END}\n\n## After\n"
    new = table.splice(doc, block, "x.md")
    assert new.startswith("# Title\n\ntext\n\n") and new.endswith("\n\n## After\n")
    assert table.current_block(new, "x.md") == block
    with pytest.raises(table.TableError, match="x.md: needs one"):
        table.splice("# no markers\n", block, "x.md")
    stale = tmp_path / "library.md"
    stale.write_text(doc)
    assert table.main(["--check", "--doc", str(stale)]) == 1
    assert table.main(["--doc", str(stale)]) == 0 and table.main(["--check", "--doc", str(stale)]) == 0
    assert stale.read_text() == new


# --- the benchmark peers the table needs (benchmarks/worker_peers.py) ---------------------------------------

def _worker_peers():
    if "worker_peers" not in sys.modules:  # registered first: its dataclass looks its module up there
        spec = importlib.util.spec_from_file_location("worker_peers", REPO / "benchmarks" / "worker_peers.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["worker_peers"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["worker_peers"]


def test_a_peer_without_its_environment_is_skipped_with_the_setup_command(tmp_path):
    from asynctm import benchmarking

    workers = _worker_peers().factories({"tmu_cpu": tmp_path / "no-venv" / "bin" / "python",
                                         "green_tsetlin": tmp_path / "no-venv" / "bin" / "python"})
    plan = benchmarking.planned_runners("classification", [1], {"tmu_cpu", "green_tsetlin"}, gpu=False)
    assert [r["peer"] for r in plan] == ["tmu_cpu", "green_tsetlin"]
    hp = {"n_clauses": 10, "T": 10, "s": 3.0, "state_bits": 8, "boost_true_positive": True, "append_negated": True,
          "batch_size": 100}
    for runner, name in zip(plan, ("tmu", "green_tsetlin")):
        with pytest.raises(FileNotFoundError, match=f"bash benchmarks/setup_tm_peers.sh {name}`$"):
            benchmarking.build_peer(runner, "classification", hp, 0, workers=workers)
    with pytest.raises(ValueError, match="no regression machine"):
        workers["green_tsetlin"]("regression", 10, 10, 3.0, seed=0)


@pytest.mark.parametrize("peer", ["tmu_cpu", "green_tsetlin"])
def test_worker_peer_round_trip_when_its_environment_exists(peer):
    """Seed 0 (which both libraries refuse as it is) trains and predicts through the worker; only where
    benchmarks/setup_tm_peers.sh has been run."""
    import numpy as np

    mod = _worker_peers()
    if not mod.ENVS[peer].python.exists():
        pytest.skip(f"no {mod.ENVS[peer].library} environment: {mod.ENVS[peer].setup_command}")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (200, 8)).astype(np.uint8)
    y = np.where(X[:, 0] ^ X[:, 1], "b", "a")
    p = mod.factories()[peer]("classification", 20, 10, 3.0, seed=0)
    try:
        for _ in range(3):
            p.fit_epoch(X, y)
        assert p.last_epoch_s > 0 and set(p.predict(X)) <= {"a", "b"}
        meta = p.metadata()
        assert meta["version"] == mod.ENVS[peer].version and meta["hyperparameters"]["n_clauses"] == 20
        args = meta["library_arguments"]
        assert (args["seed"] if peer == "tmu_cpu" else args["trainer"]["seed"]) == 1  # ours + 1
    finally:
        p.close()
