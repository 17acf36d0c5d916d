"""benchmarks/thundersvm_gpu_wheel.py: ThunderSVM's GPU build from its source, packed as a ``thundersvm`` wheel.

The build itself needs nvcc and CUDA's libraries (not in CI); these tests cover what surrounds it: the source taken
from a git repository at a commit or from a folder, the one change made to it, and the wheel, which pip installs
and whose RECORD names the library with its hash (how asynctm.baselines.thundersvm tells the GPU build)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile

import pytest

from tests.helpers import load_benchmark_script

CMAKE = """if (CUDA_VERSION VERSION_LESS "11.0")
  set(CUDA_NVCC_FLAGS ${CUDA_NVCC_FLAGS} -std=c++11 -Wno-deprecated-gpu-targets)
else ()
  set(CUDA_NVCC_FLAGS ${CUDA_NVCC_FLAGS} -std=c++14 -Wno-deprecated-gpu-targets)
endif ()
"""


@pytest.fixture(scope="module")
def wheel_mod():
    return load_benchmark_script("thundersvm_gpu_wheel")


def _source(root):
    (root / "python" / "thundersvm").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(CMAKE)
    (root / "python" / "setup.py").write_text('setuptools.setup(name="thundersvm" + build_tag, version="0.3.4")\n')
    (root / "python" / "thundersvm" / "__init__.py").write_text("from .thundersvm import *\n")
    (root / "python" / "thundersvm" / "thundersvm.py").write_text("lib_path = None\n")
    return root


def test_the_source_comes_from_a_commit_or_a_folder_and_gets_cxx17_for_nvcc(wheel_mod, tmp_path):
    repo = _source(tmp_path / "repo")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "CMakeLists.txt").write_text("changed later\n")
    subprocess.run([*git, "commit", "-qam", "second"], check=True)
    (tmp_path / "a").mkdir()
    assert wheel_mod.fetch_source(str(repo), first, tmp_path / "a") == first
    tree = tmp_path / "a" / "src"
    assert (tree / "CMakeLists.txt").read_text() == CMAKE  # the commit asked for, not the newest
    changes = wheel_mod.prepare(tree)
    assert len(changes) == 1 and "-std=c++17" in (tree / "CMakeLists.txt").read_text()
    assert "-std=c++11" in (tree / "CMakeLists.txt").read_text()  # CUDA before 11 untouched
    assert wheel_mod.prepare(tree) == [] and wheel_mod.setup_version(tree) == "0.3.4"
    (tmp_path / "b").mkdir()
    assert wheel_mod.fetch_source(str(_source(tmp_path / "plain")), None, tmp_path / "b") == "unknown"
    with pytest.raises(wheel_mod.BuildError, match="not a git repository"):
        wheel_mod.fetch_source(str(tmp_path / "plain"), first, tmp_path / "b")
    (tmp_path / "other").mkdir()
    (tmp_path / "c").mkdir()
    with pytest.raises(wheel_mod.BuildError, match="does not look like ThunderSVM's source"):
        wheel_mod.fetch_source(str(tmp_path / "other"), None, tmp_path / "c")


def test_the_wheel_installs_and_its_record_names_the_library_with_its_hash(wheel_mod, tmp_path):
    src = _source(tmp_path / "src")
    lib = tmp_path / "libthundersvm.so"
    lib.write_bytes(b"\x7fELF stand-in")
    wheel = wheel_mod.write_wheel(src / "python" / "thundersvm", lib, "0.3.4+src.abc1234.cuda13.0.sm90",
                                  tmp_path / "out", "from source abc1234")
    assert wheel.name == "thundersvm-0.3.4+src.abc1234.cuda13.0.sm90-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as z:
        record = z.read("thundersvm-0.3.4+src.abc1234.cuda13.0.sm90.dist-info/RECORD").decode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(lib.read_bytes()).digest()).rstrip(b"=").decode()
    assert f"thundersvm/libthundersvm.so,sha256={digest},{len(lib.read_bytes())}" in record.splitlines()
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True)
    assert (site / "thundersvm" / "libthundersvm.so").read_bytes() == lib.read_bytes()
    assert (site / "thundersvm-0.3.4+src.abc1234.cuda13.0.sm90.dist-info" / "METADATA").is_file()


def test_bad_input_is_one_line(wheel_mod, tmp_path, capsys, monkeypatch):
    assert wheel_mod.main(["--source", str(tmp_path), "--arch", "sm90", "--out", str(tmp_path / "o")]) == 2
    monkeypatch.setattr(wheel_mod.shutil, "which", lambda name, *a, **k: None)
    assert wheel_mod.main(["--source", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--arch" in err[0] and "nvcc not found" in err[1]
    assert not (tmp_path / "o").exists()
