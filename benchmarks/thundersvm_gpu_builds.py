#!/usr/bin/env python
"""Can ThunderSVM's published GPU builds run on a current CUDA? What their shared libraries link and call.

The paper's SVM times (Table 4) are ThunderSVM fits on its GPU; ours are CPU fits. This downloads every published
GPU build of ThunderSVM from PyPI (no install), opens the ``libthundersvm.so`` each ships and records, with
``readelf`` (binutils), the CUDA libraries it needs (``NEEDED`` entries, with the CUDA version in their names) and
the cuSPARSE functions it calls (undefined dynamic symbols). cuSPARSE's legacy ``csrmm``/``csrmm2`` routines were
removed in CUDA 11.0 (``REMOVED_IN_CUDA_11``, from NVIDIA's cuSPARSE release notes): a library that calls them can
be neither loaded against nor rebuilt for a CUDA 11 or later toolkit without porting those calls.

    python benchmarks/thundersvm_gpu_builds.py --out benchmarks/results/thundersvm_gpu_builds.json \
        [--source-wheel wheels/thundersvm-*+src.*.whl]

``--source-wheel``: also a build from ThunderSVM's source (``thundersvm_gpu_wheel.py``), inspected the same way and
recorded apart (``source_builds``, with the source commit, CUDA and architecture its wheel names): whether one could
run there, where the published ones cannot.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

# The GPU builds on PyPI (thundersvm-cpu is the CPU build the pipeline uses).
GPU_PACKAGES = ("thundersvm", "thundersvm-cuda10")
REMOVED_IN_CUDA_11 = re.compile(r"^cusparse[SDCZ]csrmm2?$")


class CheckError(RuntimeError):
    """The check cannot run here; the message names the fix."""


def download(package: str, dest: Path) -> Path:
    """The newest release of ``package`` (wheel or sdist, whichever PyPI has), without its dependencies."""
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), package],
                       capture_output=True, text=True)
    files = sorted(dest.glob("*"))
    if r.returncode != 0 or not files:
        raise CheckError(f"pip download {package} failed ({(r.stderr or r.stdout).strip()[-200:]}); this needs "
                         "the package index")
    return files[0]


def extract_library(archive: Path, dest: Path) -> Path:
    """The ``libthundersvm.so`` inside a wheel or an sdist."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.endswith("libthundersvm.so")]
            if names:
                return Path(z.extract(names[0], dest))
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.name.endswith("libthundersvm.so") and m.isfile()]
            if members:
                t.extract(members[0], dest, filter="data")
                return dest / members[0].name
    raise CheckError(f"{archive.name} ships no libthundersvm.so")


def _readelf(args: list[str], lib: Path) -> str:
    if shutil.which("readelf") is None:
        raise CheckError("readelf not found: install binutils")
    return subprocess.run(["readelf", *args, str(lib)], capture_output=True, text=True, check=True).stdout


def inspect(lib: Path) -> dict:
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf(["-d", "-W"], lib))
    undefined = sorted({m.group(1).split("@")[0] for line in _readelf(["--dyn-syms", "-W"], lib).splitlines()
                        if " UND " in line and (m := re.search(r"\s(cusparse\w+)(?:@\S+)?(?:\s+\(\d+\))?\s*$", line))})
    cuda = [n for n in needed if re.match(r"lib(cu\w+|nv\w+)\.so", n)]
    removed = [s for s in undefined if REMOVED_IN_CUDA_11.match(s)]
    return {"needed": needed, "cuda_libraries": cuda, "cusparse_calls": undefined,
            "calls_removed_in_cuda_11": removed,
            "runs_on_cuda_11_or_later": not removed and not any(re.search(r"\.so\.(9|10)\b", n) for n in cuda)}


def answer(builds: list[dict]) -> str:
    ok = [b["file"] for b in builds if b["runs_on_cuda_11_or_later"]]
    if ok:
        return f"yes: {', '.join(ok)}"
    return "no: " + "; ".join(f"{b['file']} needs {', '.join(b['cuda_libraries']) or 'no CUDA library'} and calls "
                              f"{', '.join(b['calls_removed_in_cuda_11']) or 'nothing removed'}" for b in builds)


def main(argv=None) -> int:
    from asynctm.io import write_json_atomic
    from asynctm.provenance import git_info, versions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="where the JSON record goes")
    ap.add_argument("--source-wheel", type=Path, action="append", default=[],
                    help="a wheel built from ThunderSVM's source by thundersvm_gpu_wheel.py (repeatable)")
    args = ap.parse_args(argv)
    builds, source_builds = [], []
    try:
        for wheel in args.source_wheel:
            if not wheel.is_file():
                raise CheckError(f"--source-wheel {wheel}: no such file; build it with "
                                 "benchmarks/thundersvm_gpu_wheel.py")
            with tempfile.TemporaryDirectory() as tmp:
                with zipfile.ZipFile(wheel) as z:
                    meta = next((z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA")), "")
                summary = re.search(r"^Summary: (.*)$", meta, re.M)
                source_builds.append({"file": wheel.name, "summary": summary.group(1) if summary else None,
                                      **inspect(extract_library(wheel, Path(tmp)))})
        with tempfile.TemporaryDirectory() as tmp:
            for package in GPU_PACKAGES:
                where = Path(tmp) / package
                where.mkdir()
                archive = download(package, where)
                builds.append({"package": package, "file": archive.name,
                               **inspect(extract_library(archive, where / "x"))})
    except (CheckError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    write_json_atomic(args.out, {
        "generated_by": "benchmarks/thundersvm_gpu_builds.py", "git": git_info(), "versions": versions(),
        "question": "Can ThunderSVM's published GPU builds run on a CUDA 11 or later toolkit (the GPU hosts here run "
                    "CUDA 13)?",
        "rule": "a build runs there only if it needs no CUDA 9 or 10 library and calls no cuSPARSE routine removed in "
                "CUDA 11.0 (cusparse<t>csrmm, cusparse<t>csrmm2)",
        "builds": builds,
        "answer": answer(builds),
        **({"source_builds": source_builds, "source_answer": answer(source_builds)} if source_builds else {})},
        sort_keys=False)
    for b in builds + source_builds:
        print(f"{b['file']}: {', '.join(b['cuda_libraries'])}; removed in CUDA 11: "
              f"{', '.join(b['calls_removed_in_cuda_11']) or 'none'}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
