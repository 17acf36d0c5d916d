"""Where a number came from: git commit, package versions, CPU, GPU. Used by run records and benchmarks."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import platform
import re
import subprocess
from pathlib import Path

from .datasets.base import sha256_file

# The checkout holding this package (an editable install); git calls run there.
REPO = Path(__file__).resolve().parents[2]

_DISTS = ("numpy", "scipy", "pandas", "scikit-learn", "nltk", "snakemake", "pyTsetlinMachine", "thundersvm",
          "thundersvm-cpu", "pycuda", "pyTsetlinMachineCUDA")


# Paths of the checkout that hold results, not code (see git_info).
RESULT_PATHS = ("results", "benchmarks/results", "artifacts", "paper_tables", "figures")


def git_info() -> dict:
    """``{"commit", "tracked_files_modified"}`` of the checkout (None where git or the repo is missing). Committed
    results (run records, benchmark results, generated tables and figures) do not count as modifications: a run
    that replaces a committed record, or one started while others write theirs, still ran committed code."""
    def git(*args):
        # --no-optional-locks: read-only, never refreshes the index.
        try:
            r = subprocess.run(["git", "--no-optional-locks", *args], cwd=REPO, capture_output=True, text=True)
        except OSError:
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    if os.environ.get("ASYNCTM_SOURCE_COMMIT"):
        # A copy of the checkout (the GPU campaign's machine): the commit it was copied from, as the campaign driver
        # passes it on (gpu_host). It wins over any .git there, which may be older than the copied files.
        dirty = os.environ.get("ASYNCTM_SOURCE_DIRTY", "")
        return {"commit": os.environ["ASYNCTM_SOURCE_COMMIT"],
                "tracked_files_modified": int(dirty) if dirty.isdigit() else None}
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){p}" for p in RESULT_PATHS))
    commit = git("rev-parse", "HEAD")
    return {"commit": commit,
            "tracked_files_modified": None if status is None else len([s for s in status.splitlines() if s])}


def code_digests() -> dict:
    """sha256 of the kernel sources and the Python backends as run: the work tree may differ from the commit."""
    from .backends import kernel_dir

    pkg = Path(__file__).resolve().parent
    files = sorted(p for p in kernel_dir().iterdir() if p.suffix in (".cu", ".cuh", ".h"))
    files += sorted((pkg / "backends").glob("*.py")) + [pkg / "estimators.py", pkg / "encoding.py"]
    return file_digests(files)


def file_digests(files) -> dict:
    """``{path: sha256}`` of these files, each path relative to the checkout where it lies in it."""
    out = {}
    for p in map(Path, files):
        try:
            key = p.relative_to(REPO).as_posix()
        except ValueError:
            key = p.as_posix()
        out[key] = sha256_file(p)
    return out


# What a host identity hashes (host_id); the records' results/README.md names them.
HOST_ID_SOURCES = ("/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id")


def host_id() -> str:
    """The identity of the machine a run ran on (a record's ``provenance.host_id``), so that times are paired only
    within one host: 16 hex digits of a sha256 over the machine id (``/etc/machine-id``), the boot id, the host
    name, the CPU model and the logical cores. The boot id makes each boot its own host: virtual machines cloned
    from one image share a machine id and often a generic host name, and their CPU model names (e.g. "Intel(R)
    Xeon(R) Processor") cover different hardware; a reboot thus starts a new identity."""
    from .backends.cpu import cpu_model

    parts = []
    for source in HOST_ID_SOURCES:
        try:
            parts.append(Path(source).read_text().strip())
        except OSError:
            parts.append("")
    parts += [platform.node(), str(cpu_model()), str(os.cpu_count())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def cpu_info() -> dict:
    from .backends.cpu import cpu_model, cpuinfo_field, default_threads

    flags = (cpuinfo_field("flags") or "").split()
    simd = sorted(f for f in flags if f.startswith(("avx", "sse4", "bmi2", "popcnt")))
    caches = {}
    for idx in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind = (idx / "level").read_text().strip(), (idx / "type").read_text().strip()
            caches[f"L{level}{'' if kind == 'Unified' else kind[0].lower()}"] = (idx / "size").read_text().strip()
        except OSError:
            continue
    return {"model": cpu_model(), "logical_cores": os.cpu_count(), "usable_cores": default_threads(),
            "physical_cores": physical_cores(), "machine": platform.machine(), "simd_flags": simd,
            "caches_per_cpu0": caches}


def physical_cores(root: Path = Path("/sys/devices/system/cpu")) -> int | None:
    """Cores as distinct (package, core) pairs of the logical CPUs the kernel lists (fewer than the logical
    cores where a core runs two threads: their scaling differs); None where the topology is not readable."""
    cores = set()
    for cpu in root.glob("cpu[0-9]*"):
        try:
            cores.add(((cpu / "topology/physical_package_id").read_text().strip(),
                       (cpu / "topology/core_id").read_text().strip()))
        except OSError:
            continue
    return len(cores) or None


def dist_version(*names: str) -> str | None:
    """The installed version of the first of ``names`` that is an installed distribution, or None (several
    names: a library published under more than one spelling). The one place that asks the installed
    packages; run records, benchmarks and the baselines' metadata all read versions here."""
    for name in names:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            continue
    return None


def versions() -> dict:
    """Python, asynctm and the installed versions of the libraries that can touch a result (None: absent)."""
    import asynctm

    out = {"python": platform.python_version(), "asynctm": asynctm.__version__}
    for dist in _DISTS:
        out[dist] = dist_version(dist)
    try:
        from .backends.cpu import compiler_command

        cmd = compiler_command()
        first = subprocess.run([cmd[0], "--version"], capture_output=True, text=True).stdout.splitlines()
        out["cpu_compiler"] = first[0] if first else cmd[0]
        out["cpu_compile_flags"] = " ".join(cmd[1:])
    except Exception as exc:  # noqa: BLE001 - a missing compiler is recorded, not fatal here
        out["cpu_compiler"] = f"unavailable: {exc}"
    return out


def gpu_info() -> dict | None:
    """``{"name", "driver", "cuda"}`` of the GPU our CUDA backend would use, or None without one."""
    from .backends import cuda_available

    if not cuda_available():
        return None
    from .backends.cuda import device_description

    info = {"description": device_description()}
    try:
        import pycuda.driver as drv

        from .backends.cuda import context

        context()
        dev = drv.Context.get_device()
        api = drv.get_driver_version()
        # driver: the NVIDIA driver's version where it can be read (e.g. 580.159.04), else the CUDA version
        # the driver supports; cuda: the CUDA version PyCUDA was built for; nvcc: the compiler of the kernels.
        info.update(name=dev.name(), driver=nvidia_driver_version() or api, cuda_driver_api=api,
                    cuda=".".join(map(str, drv.get_version())),
                    compute_capability=".".join(map(str, dev.compute_capability())), nvcc=nvcc_version())
    except Exception as exc:  # noqa: BLE001
        info["error"] = f"could not query the device: {exc}"
    return info


def slug(text: str) -> str:
    """``text`` (a GPU's or a CPU's name) as part of a file name: lower case, each run of other characters one
    underscore."""
    return re.sub(r"[^a-z0-9]+", "_", (text or "unknown").lower()).strip("_") or "unknown"


def nvidia_driver_version() -> str | None:
    """The NVIDIA kernel driver's version (``/proc/driver/nvidia/version``, else nvidia-smi), or None."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        for word in text.split():
            if word.count(".") in (1, 2) and word.replace(".", "").isdigit():
                return word
    except OSError:
        pass
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def nvcc_version() -> str | None:
    """The ``release`` line of ``nvcc --version`` (the compiler PyCUDA runs), or None."""
    try:
        r = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return next((ln.strip() for ln in r.stdout.splitlines() if "release" in ln), None)
