#!/usr/bin/env python
"""ThunderSVM's GPU build for a current CUDA, from its source: a ``thundersvm`` wheel for a GPU host.

ThunderSVM's published GPU builds link CUDA 9 or 10 and call cuSPARSE routines removed in CUDA 11
(``thundersvm_gpu_builds.py``), so none runs on our GPU hosts (CUDA 13). Its source has used the generic cuSPARSE API
since CUDA 11 support was merged upstream; under CUDA 13 it needs one change more: C++17 for nvcc (CUDA 13's thrust,
CUB and libcu++ refuse older dialects), which this script makes in the copy it builds (``CXX17_FOR_NVCC``). Then:

1. the source: a ThunderSVM checkout (``--source DIR``; a git repository is read at ``--commit`` with
   ``git archive``) or a git URL (``--source https://github.com/Xtra-Computing/thundersvm``, cloned);
2. cuSPARSE's and cuBLAS's headers and libraries where the toolkit lacks them: NVIDIA's wheels from the package index
   (``--cuda-packages``, for CUDA 13.0 by default), installed into the build folder;
3. ``cmake -DUSE_CUDA=ON`` for one GPU architecture (``--arch 90``: sm_90, H100 and H200) and ``make thundersvm``;
4. a wheel of the distribution ``thundersvm`` (the name of ThunderSVM's GPU build, which
   ``asynctm.baselines.thundersvm`` recognises by its RECORD): ThunderSVM's Python package with the library beside
   it, version ``<setup.py's>+src.<commit>.cuda<version>.sm<arch>``.

    python benchmarks/thundersvm_gpu_wheel.py --source ../thundersvm --arch 90 --out wheels/

The library links cuSPARSE and cuBLAS dynamically (the CUDA runtime statically): the GPU host must have them on its
library path (NVIDIA's ``nvidia-cusparse`` and ``nvidia-cublas`` wheels, or a full toolkit). Needs git, cmake,
make, nvcc and a C++ compiler here; no GPU.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# CUDA 13.0's cuSPARSE and cuBLAS, and what cuBLAS loads (NVIDIA's wheels: headers and libraries in nvidia/cu13).
CUDA_PACKAGES = ("nvidia-cusparse==12.6.3.3", "nvidia-cublas==13.0.2.14", "nvidia-nvjitlink==13.0.88")
# ThunderSVM's CMakeLists asks nvcc for C++14 from CUDA 11 on; CUDA 13's CCCL needs C++17.
CXX17_FOR_NVCC = (re.compile(r"(set\(CUDA_NVCC_FLAGS \$\{CUDA_NVCC_FLAGS\} )-std=c\+\+14"), r"\1-std=c++17")
LIBRARY = "libthundersvm.so"


class BuildError(RuntimeError):
    """The build cannot go on; the message names the problem and the fix."""


def run(cmd: list[str], cwd: Path | None = None, log: Path | None = None) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if log is not None:
        with open(log, "a") as fh:
            fh.write(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}\n")
    if r.returncode != 0:
        why = (r.stderr or r.stdout).strip()[-600:]
        raise BuildError(f"{' '.join(cmd[:3])} ... failed (exit {r.returncode}): {why}")
    return r.stdout


def fetch_source(source: str, commit: str | None, dest: Path) -> str:
    """The ThunderSVM tree at ``dest``; returns its commit (or 'unknown' for a plain folder)."""
    if re.match(r"^(https?|git|ssh)://|^git@", source):
        run(["git", "clone", "-q", source, str(dest / "clone")])
        source = str(dest / "clone")
    src = Path(source)
    if not src.is_dir():
        raise BuildError(f"--source {source}: no such folder; give a ThunderSVM checkout or its git URL")
    tree = dest / "src"
    is_git = subprocess.run(["git", "-C", str(src), "rev-parse", "--git-dir"], capture_output=True).returncode == 0
    if is_git:
        rev = run(["git", "-C", str(src), "rev-parse", commit or "HEAD"]).strip()
        data = subprocess.run(["git", "-C", str(src), "archive", rev], capture_output=True, check=True).stdout
        tree.mkdir()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tree, filter="data")
    else:
        if commit:
            raise BuildError(f"--commit {commit}: {source} is not a git repository")
        shutil.copytree(src, tree)
        rev = "unknown"
    if not (tree / "CMakeLists.txt").is_file() or not (tree / "python" / "thundersvm" / "thundersvm.py").is_file():
        raise BuildError(f"{source} does not look like ThunderSVM's source (no CMakeLists.txt and "
                         "python/thundersvm/thundersvm.py)")
    return rev


def prepare(tree: Path) -> list[str]:
    """The changes this build makes to the copy of the source (C++17 for nvcc); returns what it changed."""
    cmake = tree / "CMakeLists.txt"
    text = cmake.read_text()
    pattern, repl = CXX17_FOR_NVCC
    new, n = pattern.subn(repl, text)
    if n:
        cmake.write_text(new)
    return [f"CMakeLists.txt: nvcc's -std=c++14 -> -std=c++17 ({n} place(s); CUDA 13's thrust, CUB and libcu++ "
            "need C++17)"] if n else []


def setup_version(tree: Path) -> str:
    m = re.search(r"version\s*=\s*[\"']([^\"']+)[\"']", (tree / "python" / "setup.py").read_text())
    return m.group(1) if m else "0"


def nvcc_version() -> str:
    if shutil.which("nvcc") is None:
        raise BuildError("nvcc not found: install the CUDA toolkit (its compiler) or put it on PATH")
    m = re.search(r"release (\d+\.\d+)", run(["nvcc", "--version"]))
    if not m:
        raise BuildError("nvcc --version gave no release number")
    return m.group(1)


def toolkit_root() -> Path:
    """The CUDA toolkit that nvcc belongs to ($CUDA_HOME, else what ``nvcc --dryrun`` says its TOP is: nvcc on PATH
    may be a wrapper script)."""
    if os.environ.get("CUDA_HOME"):
        return Path(os.environ["CUDA_HOME"])
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "empty.cu").write_text("")
        r = subprocess.run(["nvcc", "--dryrun", "-c", "empty.cu"], cwd=tmp, capture_output=True, text=True)
    m = re.search(r"^#\$ TOP=(\S+)$", r.stderr + r.stdout, re.M)
    return Path(m.group(1)).resolve() if m else Path(shutil.which("nvcc")).resolve().parent.parent


def cuda_libraries(work: Path, packages: list[str], log: Path) -> Path | None:
    """A folder with include/cusparse.h and the libraries, from NVIDIA's wheels; None where the toolkit has them."""
    toolkit = toolkit_root()
    if any(toolkit.glob("**/include/cusparse.h")):
        return None
    target = work / "cuda-packages"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), *packages], log=log)
    found = sorted(target.glob("nvidia/cu*/include/cusparse.h"))
    if not found:
        raise BuildError(f"{', '.join(packages)} gave no cusparse.h; pass --cuda-packages for this CUDA version")
    return found[0].parent.parent


def build(tree: Path, work: Path, arch: str, cuda: Path | None, log: Path, jobs: int) -> Path:
    toolkit = toolkit_root()
    out = work / "build"
    out.mkdir()
    args = [str(tree), "-DUSE_CUDA=ON", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_SKIP_RPATH=ON",
            f"-DCUDA_TOOLKIT_ROOT_DIR={toolkit}"]
    nvcc = [f"-gencode=arch=compute_{arch},code=sm_{arch}"]
    if cuda is not None:
        libs = {name: sorted((cuda / "lib").glob(f"lib{name}.so.*")) for name in ("cusparse", "cublas")}
        if not all(libs.values()):
            raise BuildError(f"{cuda / 'lib'} lacks libcusparse or libcublas")
        args += [f"-DCMAKE_CXX_FLAGS=-I{cuda / 'include'}", f"-DCUDA_cusparse_LIBRARY={libs['cusparse'][0]}",
                 f"-DCUDA_cublas_LIBRARY={libs['cublas'][0]}"]
        nvcc.append(f"-I{cuda / 'include'}")
    args.append("-DCUDA_NVCC_FLAGS=" + ";".join(nvcc))
    # CMake's old FindCUDA drops the given CUDA_<lib>_LIBRARY paths on the first configure of a new toolkit root
    subprocess.run(["cmake", *args], cwd=out, capture_output=True)
    run(["cmake", *args], cwd=out, log=log)
    run(["make", f"-j{jobs}", "thundersvm"], cwd=out, log=log)
    lib = out / "lib" / LIBRARY
    if not lib.is_file():
        raise BuildError(f"make ended without {lib}; see {log}")
    return lib


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(package_dir: Path, library: Path, version: str, out_dir: Path, summary: str) -> Path:
    """A wheel of the distribution ``thundersvm``: the Python files of ``package_dir`` and the library beside them."""
    files = {f"thundersvm/{p.name}": p.read_bytes() for p in sorted(package_dir.glob("*.py"))}
    files[f"thundersvm/{LIBRARY}"] = library.read_bytes()
    dist = f"thundersvm-{version}.dist-info"
    files[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: thundersvm\nVersion: {version}\n"
                                 f"Summary: {summary}\n").encode()
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: asynctm benchmarks/thundersvm_gpu_wheel.py\n"
                              b"Root-Is-Purelib: false\nTag: py3-none-linux_x86_64\n")
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"thundersvm-{version}-py3-none-linux_x86_64.whl"
    partial = wheel.with_name(wheel.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    os.replace(partial, wheel)
    return wheel


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="a ThunderSVM checkout (folder) or its git URL")
    ap.add_argument("--commit", default=None, help="the commit to build (a git source; default its HEAD)")
    ap.add_argument("--arch", default="90", help="the GPU architecture, as in sm_<arch> (default 90: H100, H200)")
    ap.add_argument("--cuda-packages", default=",".join(CUDA_PACKAGES),
                    help="NVIDIA's wheels with cuSPARSE's and cuBLAS's headers and libraries, where the toolkit "
                         "lacks them (default: those of CUDA 13.0)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compile jobs")
    ap.add_argument("--out", type=Path, required=True, help="the folder the wheel goes to")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"\d{2,3}a?", args.arch):
        print(f"error: --arch {args.arch!r}: give the number of sm_<arch>, e.g. 90", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="thundersvm-gpu-") as tmp:
        work = Path(tmp)
        log = work / "build.log"
        try:
            cuda_version = nvcc_version()
            rev = fetch_source(args.source, args.commit, work)
            tree = work / "src"
            changes = prepare(tree)
            cuda = cuda_libraries(work, [p for p in args.cuda_packages.split(",") if p], log)
            lib = build(tree, work, args.arch, cuda, log, args.jobs)
            version = f"{setup_version(tree)}+src.{rev[:7]}.cuda{cuda_version}.sm{args.arch}"
            wheel = write_wheel(tree / "python" / "thundersvm", lib, version, args.out,
                                f"ThunderSVM GPU build from source {rev} for CUDA {cuda_version}, sm_{args.arch}; "
                                f"changes: {'; '.join(changes) or 'none'}")
        except (BuildError, OSError, subprocess.CalledProcessError) as exc:
            kept = Path(tempfile.gettempdir()) / "thundersvm-gpu-build.log"
            if log.is_file():
                shutil.copyfile(log, kept)
            print(f"error: {exc}" + (f" (build log: {kept})" if log.is_file() else ""), file=sys.stderr)
            return 1
    print(f"{wheel}\n  source {rev}; CUDA {cuda_version}; sm_{args.arch}; changes: {'; '.join(changes) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
