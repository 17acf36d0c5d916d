"""Faults a user or a bad download brings: damaged archives, full disks, zip bombs, killed runs, power cuts,
damaged kernel caches and model files. Each ends in one line that names the problem and the fix, and leaves
nothing half-written behind."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from asynctm import io as aio
from asynctm.datasets import DATASETS
from asynctm.datasets.__main__ import main as data_cli
from asynctm.datasets.base import RawFile, Source
from asynctm.datasets.fetch import MANIFEST, STAGING, ExtractionLimitError, FetchError, fetch, unpack
from tests.unit.test_data_fetch import DEAD_URL, sha
from tests.unit.test_data_fetch import dataset as toy

CSV = b"a,b,target\n" + b"1,2,3\n" * 2000


def zip_source(**kw) -> Source:
    return Source(url=DEAD_URL, mirror_path="toy/toy.zip", kind="zip", members=(RawFile("table.csv", sha(CSV)),),
                  **kw)


@pytest.fixture
def mirror(tmp_path) -> Path:
    m = tmp_path / "mirror"
    (m / "toy").mkdir(parents=True)
    with zipfile.ZipFile(m / "toy" / "toy.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("table.csv", CSV)
    return m


def left_in(raw: Path) -> list[str]:
    return sorted(p.name for p in raw.iterdir()) if raw.exists() else []


# --- damaged archives -------------------------------------------------------------------------------------


def test_damaged_deflate_stream_is_one_error_naming_dataset_file_and_fix(tmp_path, mirror):
    archive = mirror / "toy" / "toy.zip"
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo("table.csv")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start:start + 8] = b"\xff" * 8  # garbage inside the compressed data (zlib.error, not BadZipFile)
    archive.write_bytes(bytes(data))
    raw = tmp_path / "raw"
    with pytest.raises(FetchError) as e:
        fetch(toy(zip_source()), raw, mirror)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("toy: cannot unpack mirror file")
    assert "truncated or damaged" in msg and f"replace the mirror file {archive}" in msg
    assert left_in(raw) == []


def test_truncated_zip_names_its_dataset_and_the_fix(tmp_path, mirror):
    archive = mirror / "toy" / "toy.zip"
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(FetchError) as e:
        fetch(toy(zip_source()), tmp_path / "raw", mirror)
    assert str(e.value).startswith("toy: cannot unpack mirror file") and "replace the mirror file" in str(e.value)


def test_checksum_mismatch_says_which_file_to_replace(tmp_path, mirror):
    with zipfile.ZipFile(mirror / "toy" / "toy.zip", "w") as z:
        z.writestr("table.csv", CSV + b"7,8,9\n")
    with pytest.raises(FetchError) as e:
        fetch(toy(zip_source()), tmp_path / "raw", mirror)
    assert f"replace the mirror file {mirror / 'toy' / 'toy.zip'} with the official one" in str(e.value)


def test_corrupt_raw_file_behind_a_valid_manifest_says_how_to_rebuild(tmp_path, mirror):
    from asynctm.datasets.fetch import verify

    raw = tmp_path / "raw"
    fetch(toy(zip_source()), raw, mirror)
    (raw / "table.csv").write_bytes(CSV[:-1])
    with pytest.raises(FetchError) as e:
        verify(toy(zip_source()), raw)
    assert f"delete {raw / MANIFEST}" in str(e.value) and "rerun" in str(e.value)


# --- full disk ----------------------------------------------------------------------------------------------


def _disk_full(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_disk_full_while_unpacking_blames_the_disk_not_the_mirror(tmp_path, mirror, monkeypatch):
    import asynctm.datasets.fetch as fetch_mod

    real_copy = fetch_mod._copy_stream
    monkeypatch.setattr(fetch_mod, "_copy_stream", lambda src, out, budget: (real_copy(src, out, budget),
                                                                             _disk_full()))
    raw = tmp_path / "raw"
    with pytest.raises(FetchError) as e:
        fetch(toy(zip_source()), raw, mirror)
    msg = str(e.value)
    assert "the disk is full" in msg and str(raw) in msg and "free space" in msg
    assert "mirror" not in msg and "damaged" not in msg
    assert left_in(raw) == []


def test_disk_full_while_preparing_is_one_error_line(tmp_path, monkeypatch, capsys):
    import asynctm.datasets as datasets

    monkeypatch.setattr(datasets, "prepare_dataset", _disk_full)
    rc = data_cli(["prepare", "bike_sharing", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 2 and err[1].startswith("error: the disk is full"), err


# --- bounded extraction -------------------------------------------------------------------------------------


def test_every_dataset_declares_its_unpacked_size_bound():
    for name in DATASETS:
        for source in DATASETS[name].SOURCES:
            assert source.max_unpacked is not None and 0 < source.max_unpacked <= 1 << 30, (name, source.url)


def test_a_zip_bomb_stops_at_the_declared_bound(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("table.csv", b"\0" * (64 << 20))  # 64 MiB of zeros: a 64 KiB file
    assert bomb.stat().st_size < 200_000
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ExtractionLimitError, match="declared for this source"):
        unpack(bomb, "zip", dest, (RawFile("table.csv", "0" * 64),), max_bytes=4 << 20)
    # A lying header does not help: the bytes written are counted as they come.
    written = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert written <= 4 << 20


def test_a_zip_bomb_from_the_mirror_leaves_nothing(tmp_path):
    m = tmp_path / "mirror" / "toy"
    m.mkdir(parents=True)
    with zipfile.ZipFile(m / "toy.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("table.csv", b"\0" * (16 << 20))
    raw = tmp_path / "raw"
    with pytest.raises(ExtractionLimitError) as e:
        fetch(toy(zip_source(max_unpacked=1 << 20)), raw, tmp_path / "mirror")
    assert str(e.value).startswith("toy: mirror file") and "1,048,576 bytes declared" in str(e.value)
    assert left_in(raw) == []


def test_a_tar_bomb_is_stopped_before_its_big_member_is_decompressed(tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as t:
        info = tarfile.TarInfo("unwanted/zeros.bin")
        info.size = 32 << 20
        t.addfile(info, io.BytesIO(b"\0" * info.size))
    dest = tmp_path / "out"
    dest.mkdir()
    t0 = time.perf_counter()
    with pytest.raises(ExtractionLimitError, match="unwanted/zeros.bin"):
        unpack(bomb, "tar", dest, (RawFile("table.csv", "0" * 64),), max_bytes=1 << 20)
    assert time.perf_counter() - t0 < 5


# --- leftovers of killed runs -------------------------------------------------------------------------------


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_staging_of_a_killed_fetch_is_removed_by_the_next_one(tmp_path, mirror):
    raw = tmp_path / "raw"
    raw.mkdir()
    host = aio._host()
    dead = raw / f"{STAGING}{host}-{_dead_pid()}-abcd1234"
    (dead / "unpacked").mkdir(parents=True)
    (dead / "unpacked" / "big.bin").write_bytes(b"x" * 1000)
    alive = raw / f"{STAGING}{host}-{os.getppid()}-efgh5678"  # a live process (pytest's parent) owns this one
    alive.mkdir()
    foreign_new = raw / f"{STAGING}otherhost-1-ijkl9012"
    foreign_new.mkdir()
    foreign_old = raw / f"{STAGING}otherhost-2-mnop3456"
    foreign_old.mkdir()
    old = time.time() - 2 * aio.STALE_AFTER_S
    os.utime(foreign_old, (old, old))
    legacy_old = raw / f"{STAGING}q1w2e3r4"  # a name from before owners were recorded
    legacy_old.mkdir()
    os.utime(legacy_old, (old, old))
    log = []
    fetch(toy(zip_source()), raw, mirror, log=log.append)
    assert not dead.exists() and not foreign_old.exists() and not legacy_old.exists()
    assert alive.exists() and foreign_new.exists()
    assert sum("left behind by an interrupted fetch" in m for m in log) == 3
    assert (raw / "table.csv").read_bytes() == CSV


def test_staging_folders_name_their_owner(tmp_path):
    d = aio.make_staging_dir(tmp_path, ".x-")
    assert d.name.startswith(f".x-{aio._host()}-{os.getpid()}-")
    assert aio.remove_stale(tmp_path, ".x-") == [] and d.exists()  # this process is alive


# --- power cuts ----------------------------------------------------------------------------------------------


def test_atomic_open_flushes_file_and_folder_around_the_rename(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", "dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file"))
        return real_fsync(fd)

    def replace(a, b):
        events.append(("replace", Path(b).name))
        return real_replace(a, b)

    monkeypatch.setattr(aio.os, "fsync", fsync)
    monkeypatch.setattr(aio.os, "replace", replace)
    aio.write_json_atomic(tmp_path / "record.json", {"a": 1})
    assert events == [("fsync", "file"), ("replace", "record.json"), ("fsync", "dir")], events
    assert json.loads((tmp_path / "record.json").read_text()) == {"a": 1}


# --- damaged kernel cache ------------------------------------------------------------------------------------

# The kernels of a tiny model, loaded and run the way the estimators do (without importing scikit-learn).
LOAD = """
import numpy as np
from asynctm.backends.cpu import CpuBackend
from tests_cfg import CFG
be = CpuBackend(CFG, n_threads=1)
be.init_state()
print("loaded", be.class_sums(np.zeros((3, 1), dtype=np.uint32)).shape)
"""
CFG_SOURCE = ("from asynctm.backends import KernelConfig\n"
              "CFG = KernelConfig(n_classes=2, n_clauses=4, n_literals=4, T=3, s=3.0)\n")


def _cfg():
    from asynctm.backends import KernelConfig

    return KernelConfig(n_classes=2, n_clauses=4, n_literals=4, T=3, s=3.0)


def load_in_subprocess(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    # A damaged library would crash the process that loads it (SIGBUS, SIGTRAP): never this one.
    (tmp_path / "tests_cfg.py").write_text(CFG_SOURCE)
    return subprocess.run([sys.executable, "-c", LOAD], env={**os.environ, **env, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def good_library(tmp_path_factory) -> bytes:
    """The library of the tiny model, compiled once for real (built, not loaded, here)."""
    from asynctm.backends.cpu import build_library

    cache = tmp_path_factory.mktemp("real-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASYNCTM_CACHE_DIR", str(cache))
        return build_library(_cfg()).read_bytes()


@pytest.fixture
def fake_compiler_env(tmp_path, good_library, monkeypatch) -> dict:
    """A cache whose "compiler" copies the real build (a rebuild in milliseconds, not a compile), with the
    tiny model's library built in it; set here and returned for subprocesses."""
    from asynctm.backends.cpu import build_library

    (tmp_path / "good.so").write_bytes(good_library)
    cxx = tmp_path / "fake-cxx"
    cxx.write_text(f'#!/bin/sh\nfor a; do out="$a"; done\ncp "{tmp_path / "good.so"}" "$out"\n')
    cxx.chmod(0o755)
    env = {"ASYNCTM_CACHE_DIR": str(tmp_path / "cache"), "CXX": str(cxx)}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    build_library(_cfg())
    return env


DAMAGES = {
    "truncated": lambda b: b[: len(b) // 5],
    "byte-damaged": lambda b: b[: len(b) // 2] + bytes(x ^ 0xFF for x in b[len(b) // 2: len(b) // 2 + 4096])
    + b[len(b) // 2 + 4096:],
    "empty": lambda b: b"",
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_cached_library_is_rebuilt_with_one_notice(tmp_path, fake_compiler_env, damage):
    from asynctm.backends.cpu import cache_entry_ok

    cpu = Path(fake_compiler_env["ASYNCTM_CACHE_DIR"]) / "cpu"
    (lib,) = cpu.glob("tm_*.so")
    assert cache_entry_ok(lib)
    good = lib.read_bytes()
    lib.write_bytes(DAMAGES[damage](good))
    assert not cache_entry_ok(lib)
    # A compile killed earlier left its build folder; a live one (this process) must survive.
    killed = cpu / f".build-{aio._host()}-{_dead_pid()}-x1y2z3w4"
    killed.mkdir()
    (killed / "tm.cu").write_text("// half a build")
    live = aio.make_staging_dir(cpu, ".build-")
    r = load_in_subprocess(tmp_path, fake_compiler_env)
    assert r.returncode == 0 and "loaded (2, 3)" in r.stdout, (r.returncode, r.stderr[-2000:])
    notices = [line for line in r.stderr.splitlines() if "rebuilding it" in line]
    assert len(notices) == 1 and str(lib) in notices[0], r.stderr
    assert lib.read_bytes() == good and cache_entry_ok(lib)
    assert not killed.exists() and live.exists()


def test_a_library_without_its_digest_is_rebuilt(tmp_path, fake_compiler_env):
    cpu = Path(fake_compiler_env["ASYNCTM_CACHE_DIR"]) / "cpu"
    (digest,) = cpu.glob("tm_*.so.sha256")
    digest.unlink()  # a build interrupted between the library and its digest
    r = load_in_subprocess(tmp_path, fake_compiler_env)
    assert r.returncode == 0 and "has no recorded sha256" in r.stderr and digest.exists(), r.stderr


def test_disk_full_while_building_the_kernel_cache_is_one_clear_error(tmp_path, monkeypatch):
    import asynctm.backends.cpu as cpu
    from asynctm.backends import BackendUnavailableError

    monkeypatch.setenv("ASYNCTM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu, "make_staging_dir", _disk_full)
    with pytest.raises(BackendUnavailableError) as e:
        cpu.build_library(_cfg())
    assert str(e.value).startswith("the disk is full") and "ASYNCTM_CACHE_DIR" in str(e.value)


def test_an_unloadable_library_is_a_clear_error(tmp_path):
    from asynctm.backends import BackendUnavailableError
    from asynctm.backends.cpu import _load

    empty = tmp_path / "tm_empty.so"
    empty.write_bytes(b"")
    with pytest.raises(BackendUnavailableError, match="cannot load the CPU kernel library .* delete it"):
        _load(empty)


# --- model files and parameters ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory) -> dict:
    from asynctm import TMClassifier, TMRegressor

    d = tmp_path_factory.mktemp("models")
    X = np.array([[0, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 1]] * 8, dtype=np.uint8)
    TMClassifier(n_clauses=4, T=3, s=3.0, backend="cpu", n_threads=1, seed=1).fit(X, X[:, 0], epochs=1).save(
        d / "clf.npz")
    TMRegressor(n_clauses=4, T=3, s=3.0, backend="cpu", n_threads=1, seed=1).fit(X, X[:, 1] * 2.0, epochs=1).save(
        d / "reg.npz")
    return {"clf": d / "clf.npz", "reg": d / "reg.npz"}


def _arrays(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _rewrite(tmp_path, source: Path, **changes) -> Path:
    arrays = _arrays(source)
    for k, v in changes.items():
        if v is None:
            del arrays[k]
        else:
            arrays[k] = v
    out = tmp_path / "changed.npz"
    np.savez(out, **arrays)
    return out


def _damaged_member(tmp_path, source: Path) -> Path:
    data = bytearray(source.read_bytes())
    at = data.index(b"ta_state.npy") + 200  # inside that member's data (stored uncompressed)
    data[at:at + 16] = bytes(b ^ 0x5A for b in data[at:at + 16])
    out = tmp_path / "damaged.npz"
    out.write_bytes(bytes(data))
    return out


MODEL_FAULTS = {
    "truncated": (lambda tp, src: (tp / "t.npz").write_bytes(src.read_bytes()[:300]) and tp / "t.npz",
                  "not a NumPy .npz archive, or a damaged one"),
    "foreign-text": (lambda tp, src: (tp / "t.npz").write_text("hello, not a model\n") and tp / "t.npz",
                     "not a NumPy .npz archive"),
    "single-npy": (lambda tp, src: (np.save(tp / "t.npy", np.arange(3)), tp / "t.npy")[1], "a single NumPy array"),
    "damaged-member": (_damaged_member, "'ta_state' array is damaged"),
    "missing-array": (lambda tp, src: _rewrite(tp, src, ta_state=None), "has no 'ta_state' array"),
    "bad-json": (lambda tp, src: _rewrite(tp, src, params=np.array("{not json")), "parameters are not valid JSON"),
    "bad-params": (lambda tp, src: _rewrite(tp, src, params=np.array(json.dumps({"T": 2**40}))),
                   "parameters are invalid \\(T must be at most"),
    "unknown-param": (lambda tp, src: _rewrite(tp, src, params=np.array(json.dumps({"colour": 1}))),
                      "parameters are invalid"),
    "unsorted-classes": (lambda tp, src: _rewrite(tp, src, classes=np.array([1, 0])), "sorted and distinct"),
    "duplicate-classes": (lambda tp, src: _rewrite(tp, src, classes=np.array([0, 0])), "sorted and distinct"),
    "float-states": (lambda tp, src: _rewrite(tp, src, ta_state=_arrays(src)["ta_state"].astype(np.float64)),
                     "TA states must be integers"),
    "negative-states": (lambda tp, src: _rewrite(tp, src, ta_state=_arrays(src)["ta_state"].astype(np.int64) - 9),
                        "32-bit words"),
    "feature-count": (lambda tp, src: _rewrite(tp, src, n_features_in=np.array(40)),
                      "40 features \\(80 literals\\) need \\(8, 8, 3\\)"),
    "float-feature-count": (lambda tp, src: _rewrite(tp, src, n_features_in=np.array(3.0)), "one integer"),
    "bad-seed": (lambda tp, src: _rewrite(tp, src, seed=np.array("-1")), "seed '-1'"),
    "other-kind": (lambda tp, src: _rewrite(tp, src, kind=np.array("TMRegressor")), "holds a TMRegressor"),
}


@pytest.mark.parametrize("fault", MODEL_FAULTS)
def test_a_damaged_foreign_or_inconsistent_model_file_is_one_value_error(tmp_path, saved_models, fault):
    from asynctm import TMClassifier

    make, message = MODEL_FAULTS[fault]
    path = make(tmp_path, saved_models["clf"])
    with pytest.raises(ValueError, match=message) as e:
        TMClassifier.load(path)
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)
    assert "pickled" not in str(e.value) or "NumPy .npz" in str(e.value)


def test_an_inconsistent_regressor_range_is_refused(tmp_path, saved_models):
    from asynctm import TMRegressor

    assert TMRegressor.load(saved_models["reg"]).y_max_ == 2.0
    with pytest.raises(ValueError, match="y_range must be two finite numbers, the smaller first"):
        TMRegressor.load(_rewrite(tmp_path, saved_models["reg"], y_range=np.array([2.0, 0.0])))


@pytest.mark.parametrize("params, message", [
    ({"T": 2**40}, "T must be at most 2\\^30 - 1 = 1073741823"),
    ({"T": 2**30}, "T must be at most"),
    ({"n_clauses": 2**32}, "n_clauses must be at most 2\\^31 - 1"),
    ({"n_threads": 2**31}, "n_threads must be at most 2\\^31 - 1"),
])
def test_parameters_beyond_the_kernels_integers_are_refused_up_front(params, message):
    from asynctm import TMClassifier, TMRegressor

    X = np.array([[0, 1], [1, 0]] * 4, dtype=np.uint8)
    for cls in (TMClassifier, TMRegressor):  # fit checks the parameters before anything else (scikit-learn's rule)
        with pytest.raises(ValueError, match=message):
            cls(**params).fit(X, X[:, 0], epochs=1)
    TMClassifier(T=2**30 - 1)._validate_params()  # the largest T the kernels hold


@pytest.mark.parametrize("y", [[0, "a"] * 16, np.array([0, "a"] * 16, dtype=object), (1.5, "x") * 16])
def test_mixed_int_and_str_labels_are_a_clear_error(y):
    from asynctm import TMClassifier

    X = np.array([[0, 1], [1, 0]] * 16, dtype=np.uint8)
    with pytest.raises(ValueError, match="y mixes strings and numbers"):
        TMClassifier(n_clauses=4, backend="cpu", n_threads=1).fit(X, y, epochs=1)


def test_a_killed_process_not_yet_reaped_counts_as_gone(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])  # not waited for: a zombie once it exits
    stat = Path(f"/proc/{p.pid}/stat")
    deadline = time.time() + 30
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z" and time.time() < deadline:
        time.sleep(0.05)
    try:
        left = tmp_path / f".fetch-{aio._host()}-{p.pid}-abcdefgh"
        left.mkdir()
        assert aio.remove_stale(tmp_path, ".fetch-") == [left] and not left.exists()
    finally:
        p.wait()


def test_a_killed_prepare_leaves_no_staging_after_the_next_one(tmp_path):
    from asynctm.datasets.base import ProcessedDataset, load_processed, save_processed

    out = tmp_path / "processed" / "toy" / "paper"
    out.parent.mkdir(parents=True)
    left = out.parent / f".paper.tmp-{aio._host()}-{_dead_pid()}-abcdefgh"
    left.mkdir()
    (left / "train.npz").write_bytes(b"half")
    X = np.array([[0, 1], [1, 0]], dtype=np.uint8)
    y = np.array([0, 1])
    save_processed(ProcessedDataset("toy", "paper", "classification", X, y, X, y, ["a", "b"], ["0", "1"]), out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["paper"]
    assert load_processed(out).X_train.tolist() == X.tolist()


def test_a_concurrent_fetch_installing_the_same_folder_first_is_accepted(tmp_path, monkeypatch):
    import shutil as _shutil

    import asynctm.datasets.fetch as fetch_mod
    from asynctm.datasets.base import RawFolder, digest_lines

    docs = {"1.txt": b"one\n", "2.txt": b"two\n"}
    m = tmp_path / "mirror" / "toy"
    m.mkdir(parents=True)
    with zipfile.ZipFile(m / "docs.zip", "w") as z:
        for k, v in docs.items():
            z.writestr(f"docs/{k}", v)
    src = Source(url=DEAD_URL, mirror_path="toy/docs.zip", kind="zip",
                 members=(RawFolder("docs", digest_lines({k: sha(v) for k, v in docs.items()})),))
    raw = tmp_path / "raw"
    real_replace = os.replace

    def racing_replace(a, b):
        if Path(b) == raw / "docs" and not Path(b).exists():  # another fetch wins the race
            _shutil.copytree(Path(a), raw / "docs")
        return real_replace(a, b)

    monkeypatch.setattr(fetch_mod.os, "replace", racing_replace)
    fetch(toy(src), raw, tmp_path / "mirror")
    assert sorted(p.name for p in (raw / "docs").iterdir()) == ["1.txt", "2.txt"]
    assert left_in(raw) == [MANIFEST, "docs"]


def test_a_run_that_fills_the_disk_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    import errno

    from asynctm.experiments import __main__ as cli
    from asynctm.experiments import run

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run, "run_tm", full)
    out = tmp_path / "results" / "x" / "seed0.json"
    code = cli.main(["tm", "--settings", "{}", "--data-dir", str(tmp_path), "--out", str(out),
                     "--log", str(tmp_path / "seed0.log")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert "the disk is full" in err[0] and "free space on" in err[0] and str(out.parent) in err[0]
    assert not out.exists()
