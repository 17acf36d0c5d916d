"""benchmarks/thundersvm_gpu_builds.py: reading what a shared library links and which cuSPARSE routines it calls,
on small libraries built here (a stand-in cuSPARSE with a CUDA 10 soname, and a library that calls it)."""

from __future__ import annotations

import shutil
import subprocess
import zipfile

import pytest

from tests.helpers import load_benchmark_script

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("readelf") is None,
                                reason="needs a C compiler and readelf (binutils)")


@pytest.fixture(scope="module")
def check():
    return load_benchmark_script("thundersvm_gpu_builds")


def _library(tmp_path, calls: list[str], soname: str):
    """A libthundersvm.so that needs ``soname`` and calls ``calls`` (undefined there, defined in the stand-in)."""
    (tmp_path / "cusparse.c").write_text("".join(f"int {c}(void) {{ return 0; }}\n" for c in calls))
    subprocess.run(["cc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(tmp_path / soname),
                    str(tmp_path / "cusparse.c")], check=True)
    body = "".join(f"int {c}(void);\n" for c in calls) + "int svm(void) { return 0" + "".join(
        f" + {c}()" for c in calls) + "; }\n"
    (tmp_path / "svm.c").write_text(body)
    lib = tmp_path / "libthundersvm.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "svm.c"), str(tmp_path / soname)],
                   check=True)
    return lib


def test_a_build_calling_csrmm2_against_cuda_10_does_not_run_on_cuda_11(check, tmp_path):
    lib = _library(tmp_path, ["cusparseCreate", "cusparseScsrmm2"], "libcusparse.so.10.0")
    out = check.inspect(lib)
    assert out["cuda_libraries"] == ["libcusparse.so.10.0"]
    assert out["cusparse_calls"] == ["cusparseCreate", "cusparseScsrmm2"]
    assert out["calls_removed_in_cuda_11"] == ["cusparseScsrmm2"]
    assert out["runs_on_cuda_11_or_later"] is False
    build = {"file": "x.whl", **out}
    assert check.answer([build]) == "no: x.whl needs libcusparse.so.10.0 and calls cusparseScsrmm2"


def test_a_build_with_current_calls_and_library_runs(check, tmp_path):
    out = check.inspect(_library(tmp_path, ["cusparseCreate", "cusparseSpMM"], "libcusparse.so.12"))
    assert out["calls_removed_in_cuda_11"] == [] and out["runs_on_cuda_11_or_later"] is True
    assert check.answer([{"file": "y.whl", **out}]) == "yes: y.whl"


def test_the_library_is_found_in_a_wheel_and_a_missing_one_named(check, tmp_path):
    wheel = tmp_path / "t.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("thundersvm/libthundersvm.so", b"\x7fELF")
        z.writestr("thundersvm/__init__.py", "")
    assert check.extract_library(wheel, tmp_path / "x").read_bytes() == b"\x7fELF"
    empty = tmp_path / "e.whl"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("thundersvm/__init__.py", "")
    with pytest.raises(check.CheckError, match="ships no libthundersvm.so"):
        check.extract_library(empty, tmp_path / "y")


def test_a_build_from_source_is_recorded_apart_from_the_published_ones(check, tmp_path, monkeypatch):
    import json

    def wheel(name, lib, summary=None):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as z:
            z.write(lib, "thundersvm/libthundersvm.so")
            if summary:
                z.writestr("thundersvm-0.dist-info/METADATA", f"Name: thundersvm\nSummary: {summary}\n")
        return path

    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    published = wheel("published.whl", _library(tmp_path / "old", ["cusparseScsrmm2"], "libcusparse.so.9.0"))
    source = wheel("thundersvm-0.3.4+src.abc.whl", _library(tmp_path / "new", ["cusparseSpMM"], "libcusparse.so.12"),
                   summary="ThunderSVM GPU build from source abc")
    monkeypatch.setattr(check, "GPU_PACKAGES", ("published",))
    monkeypatch.setattr(check, "download", lambda package, dest: published)
    out = tmp_path / "check.json"
    assert check.main(["--out", str(out), "--source-wheel", str(source)]) == 0
    rec = json.loads(out.read_text())
    assert rec["answer"].startswith("no: published.whl") and rec["source_answer"] == f"yes: {source.name}"
    assert rec["source_builds"][0]["summary"] == "ThunderSVM GPU build from source abc"
    assert check.main(["--out", str(out), "--source-wheel", str(tmp_path / "absent.whl")]) == 1
