"""``stage``: the folder that travels to the GPU machine (carried as one ignored path, under 64 MiB).

Layout of ``.campaign/``::

    wheels/*.whl      PyCUDA and its small dependencies, built for the GPU machine's CPython; PyTsetlinMachineCUDA's
                      pure-Python wheel, made here from its sdist; fastjsonschema's (the record gate's; the GPU
                      machine's image lacks it); pyTsetlinMachine's for that CPython (host_peers)
    sdist/PyTsetlinMachineCUDA-0.1.9.tar.gz   as downloaded from PyPI (the wheel's source)
    parallel/*.whl    pyTsetlinMachineParallel, apart (it installs a top-level libTM extension too)
    extra/*.whl       jsonschema and its dependencies (benchmarks/bench_tm.py checks its configuration with it)
    svm/thundersvm-*.whl   ThunderSVM's GPU build from its source, where given (--thundersvm-wheel: the svm step)
    tmu/site.tar.xz   with --tmu: tmu 0.8.3 and the NumPy < 2 it needs, installed for the GPU machine's CPython and
                      packed (the bench step's tmu_cuda)
    data/processed/<dataset>/<protocol>/{train,test[,novel]}.npz, meta.json   (the pipeline's, already compact)
    campaign.json     the configuration the steps run, the commit, every file's size and sha256

The folder is built beside its destination and renamed into place when complete.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

import yaml

from asynctm.datasets.base import sha256_file
from asynctm.experiments import plan
from asynctm.provenance import REPO, git_info

from . import STAGE_DIR, TRAVEL_BUDGET_BYTES

PYTM_CUDA = "pytsetlinmachinecuda==0.1.9"
SDIST_NAME = re.compile(r"^pytsetlinmachinecuda-0\.1\.9\.tar\.gz$", re.IGNORECASE)
WHEEL_NAME = re.compile(r"^(?P<dist>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-(?P<py>[^-]+)-[^-]+-[^-]+\.whl$")
DATA_FILES = ("train.npz", "test.npz", "novel.npz", "meta.json")
CPU_PEERS = {"wheels": "pyTsetlinMachine==0.6.6", "parallel": "pyTsetlinMachineParallel==0.2.1"}
# Pure-Python packages the pipeline needs on the GPU machine whose image lacks them (the device library's KINDS.md):
# the record gate's schema checks. Staged at the version installed here.
RUNTIME_WHEELS = ("fastjsonschema",)
BENCH_WHEELS = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py")  # the GPU machine's python lacks
# tmu 0.8.3 needs NumPy < 2 (the GPU machine has NumPy 2) and SciPy built for it; its compiled clause bank is a cffi
# module. Installed together, as tested with tmu's CPU and CUDA imports, for the GPU machine's CPython. Of SciPy only
# the subpackages tmu's imports load are kept: the wheels (56 MB) would leave little of the 64 MiB that travel.
TMU_SITE = ("tmu==0.8.3", "numpy==1.26.4", "scipy==1.13.1", "cffi==2.1.1", "pycparser==3.12")
TMU_SCIPY = ("_lib", "linalg", "sparse")  # scipy.sparse and what it imports (tmu.models.base imports it)
TMU_DROP = ("examples", "test", "numpy/f2py", "numpy/distutils")  # tmu's wheel installs its examples and tests on top


class StageError(RuntimeError):
    """The campaign cannot be staged or run as asked (the message names the problem and the fix)."""


def load_config(overrides: list[str] | None = None) -> dict:
    """config/config.yaml with ``KEY=VALUE`` overrides (values read as YAML), as ``snakemake --config`` does."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StageError(f"--config {item!r}: write KEY=VALUE, e.g. data_dir=data")
        config[key] = yaml.safe_load(value)
    return config


def travelling_tree_bytes(repo: Path = REPO) -> int:
    """Bytes of what travels with every device command besides carried paths: tracked files and untracked files
    that git does not ignore (0 where git is unavailable)."""
    try:
        r = subprocess.run(["git", "--no-optional-locks", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=repo, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(p.stat().st_size for rel in r.stdout.decode().split("\0")
               if rel and (p := repo / rel).is_file() and not p.is_symlink())


def _wheels(folder: Path) -> tuple[list[Path], str]:
    """The PyCUDA wheels and the CPython tag (e.g. ``cp312``) the GPU machine's python must match."""
    if not folder.is_dir():
        raise StageError(f"{folder}: no such folder of PyCUDA wheels; pass --wheels (../shared/gpu/README.md says how "
                         "they are built)")
    dists = {}
    for w in sorted(folder.glob("*.whl")):
        m = WHEEL_NAME.match(w.name)
        if not m:
            raise StageError(f"{w}: not a wheel file name (dist-version-python-abi-platform.whl)")
        dist = m["dist"].lower().replace("_", "-")
        if dist in dists:
            raise StageError(f"{folder}: two wheels of {dist} ({dists[dist][0].name}, {w.name}); keep one, or pip "
                             "stops the whole install")
        dists[dist] = (w, m["py"])
    if "pycuda" not in dists:
        raise StageError(f"{folder}: no pycuda-*.whl in it; build one with ../shared/gpu/build-pycuda-wheel.sh")
    return [w for w, _ in dists.values()], dists["pycuda"][1]


def tag_python(tag: str) -> str | None:
    """A python of the CPython version ``tag`` names (``cp312``: python3.12) here, with pip, or None."""
    if not re.fullmatch(r"cp\d{3,}", tag):
        return None
    version = f"{tag[2]}.{tag[3:]}"
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    for exe in [shutil.which(f"python{version}"),
                *sorted(map(str, (Path.home() / ".pyenv" / "versions").glob(f"{version}*/bin/python{version}")))]:
        if exe and subprocess.run([exe, "-c", "import pip"], capture_output=True).returncode == 0:
            return exe
    return None


def _cpu_peer_wheels(tag: str, tmp: Path, say=print) -> list[str]:
    """pyTsetlinMachine's and pyTsetlinMachineParallel's wheels (their sdists compile C) and jsonschema's for the GPU
    machine's CPython; where that python or the package index is missing, say so (host_peers then skips them)."""
    python = tag_python(tag)
    if python is None:
        say(f"  pyTsetlinMachine not staged: no python of {tag} here (the host_peers step will skip it)")
        return []
    built = []
    for folder, args, what in [*((f, ["wheel", "--no-deps", "-w", str(tmp / f), req], req) for f, req in
                                 CPU_PEERS.items()),
                               ("extra", ["download", "--only-binary=:all:", "--no-deps", "-d", str(tmp / "extra"),
                                          *BENCH_WHEELS], "jsonschema")]:
        (tmp / folder).mkdir(exist_ok=True)
        r = subprocess.run([python, "-m", "pip", *args, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            say(f"  {what} not staged: pip failed ({(r.stderr or r.stdout).strip()[-300:]})")
        else:
            built.append(what)
    return built


def _runtime_wheels(dest: Path) -> None:
    """Download :data:`RUNTIME_WHEELS`, at the versions installed here, into ``dest``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        pins = [f"{name}=={version(name)}" for name in RUNTIME_WHEELS]
    except PackageNotFoundError as exc:
        raise StageError(f"{exc.name} is not installed here: pip install -e '.[test]' first") from None
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d",
                        str(dest), *pins], capture_output=True, text=True)
    if r.returncode != 0:
        raise StageError(f"{', '.join(pins)} could not be downloaded for the GPU machine (the record gate needs it "
                         f"there): {(r.stderr or r.stdout).strip()[-300:]}")


def _sdist(given: Path | None, previous: Path | None, tmp: Path) -> Path:
    """The PyTsetlinMachineCUDA sdist: the one given, else the one already staged, else ``pip download``."""
    for candidate in (given, previous):
        if candidate is not None and candidate.is_file():
            if not SDIST_NAME.match(candidate.name):
                raise StageError(f"{candidate}: expected PyTsetlinMachineCUDA-0.1.9.tar.gz")
            return candidate
    if given is not None:
        raise StageError(f"--sdist {given}: no such file")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d",
                        str(tmp / "download"), PYTM_CUDA], capture_output=True, text=True)
    found = [p for p in (tmp / "download").glob("*") if SDIST_NAME.match(p.name)]
    if r.returncode != 0 or not found:
        raise StageError(f"pip download {PYTM_CUDA} failed ({(r.stderr or r.stdout).strip()[-300:]}); download it "
                         "where PyPI is reachable and pass --sdist FILE")
    return found[0]


def _wheel_from_sdist(sdist: Path, wheels: Path) -> Path:
    """PyTsetlinMachineCUDA is pure Python (one package, no extension): its wheel is made here from the sdist's package
    folder and PKG-INFO, so that the GPU machine, whose python has no setuptools, installs wheels only."""
    root, pkg = sdist.name.removesuffix(".tar.gz"), "PyTsetlinMachineCUDA"
    files, metadata = {}, None
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar.getmembers():
            parts = PurePosixPath(m.name).parts
            if not m.isreg() or ".." in parts or not parts or parts[0] != root:
                continue
            if parts[1:] == ("PKG-INFO",):
                metadata = tar.extractfile(m).read()
            elif len(parts) == 3 and parts[1] == pkg and parts[2].endswith(".py"):
                files[f"{pkg}/{parts[2]}"] = tar.extractfile(m).read()
    if metadata is None or f"{pkg}/tm.py" not in files:
        raise StageError(f"{sdist}: no PKG-INFO or {pkg}/tm.py inside; is it the PyPI sdist of {PYTM_CUDA}?")
    info = f"{pkg}-{root.split('-')[-1]}.dist-info"
    files[f"{info}/METADATA"] = metadata
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: gpu_host\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    files[f"{info}/top_level.txt"] = f"{pkg}\n".encode()
    digests = {name: base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
               for name, data in files.items()}
    files[f"{info}/RECORD"] = ("".join(f"{name},sha256={digests[name]},{len(data)}\n" for name, data in files.items())
                               + f"{info}/RECORD,,\n").encode()
    out = wheels / f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return out


def tmu_site(tag: str, dest: Path, say=print) -> Path:
    """:data:`TMU_SITE` installed for the GPU machine's CPython ``tag`` (by a python of that version here, which
    takes the wheels for this platform), less what tmu never imports (:func:`trim_tmu_site`), packed as
    ``dest/tmu/site.tar.xz``."""
    python = tag_python(tag)
    if python is None:
        raise StageError(f"--tmu: no python of {tag} here to install tmu's packages for the GPU machine; install one "
                         "(e.g. with pyenv) or stage without --tmu")
    build = dest / "tmu-build"
    r = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", "--no-compile",
                        "--target", str(build), *TMU_SITE], capture_output=True, text=True)
    if r.returncode != 0:
        raise StageError(f"--tmu: pip could not install {' '.join(TMU_SITE)} for {tag}: "
                         f"{(r.stderr or r.stdout).strip()[-300:]}")
    trim_tmu_site(build)
    (dest / "tmu").mkdir()
    out = dest / "tmu" / "site.tar.xz"
    with tarfile.open(out, "w:xz") as tar:
        for p in sorted(build.rglob("*")):
            if p.is_file() and not p.is_symlink():
                tar.add(p, arcname=p.relative_to(build).as_posix())
    shutil.rmtree(build)
    say(f"  tmu staged: {', '.join(TMU_SITE)} for {tag} ({_mib(out.stat().st_size)} packed)")
    return out


def trim_tmu_site(site: Path) -> None:
    """Drop from an installed :data:`TMU_SITE` what tmu's imports never load: SciPy's subpackages but
    :data:`TMU_SCIPY`, every ``tests`` and ``testing`` folder, the byte-code caches and :data:`TMU_DROP`."""
    for sub in (site / "scipy").iterdir():
        if sub.is_dir() and sub.name not in TMU_SCIPY and not sub.name.startswith("__"):
            shutil.rmtree(sub)
    for name in TMU_DROP:
        shutil.rmtree(site / name, ignore_errors=True)
    for folder in sorted((p for p in site.rglob("*") if p.is_dir() and p.name in ("tests", "testing", "__pycache__")),
                         key=lambda p: len(p.parts)):
        shutil.rmtree(folder, ignore_errors=True)


def _copy_dataset(data_dir: Path, dataset: str, protocol: str, dest: Path) -> None:
    src, out = data_dir / "processed" / dataset / protocol, dest / "data" / "processed" / dataset / protocol
    if not (src / "meta.json").is_file():
        raise StageError(f"{src}/meta.json is missing: build the processed dataset first (snakemake --cores all "
                         f"{src}/meta.json --config data_dir={data_dir}), or point --config data_dir=... at the "
                         "folder holding processed/")
    out.mkdir(parents=True)
    for f in (src / name for name in DATA_FILES):
        if f.is_symlink():
            raise StageError(f"{f}: a link; processed datasets are plain files")
        if f.is_file():
            shutil.copyfile(f, out / f.name)
    if not (out / "train.npz").is_file() or not (out / "test.npz").is_file():
        raise StageError(f"{src}: train.npz or test.npz is missing; rebuild the processed dataset")


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def svm_wheel(path: Path, dest: Path) -> None:
    """Copy a ThunderSVM GPU wheel (``benchmarks/thundersvm_gpu_wheel.py``) into ``dest/svm/`` for the svm step."""
    import zipfile

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            ok = path.name.startswith("thundersvm-") and any(n.endswith("/libthundersvm.so") for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        ok = False
    if not ok:
        raise StageError(f"--thundersvm-wheel {path}: not a thundersvm wheel with libthundersvm.so; build one with "
                         "benchmarks/thundersvm_gpu_wheel.py")
    (dest / "svm").mkdir()
    shutil.copyfile(path, dest / "svm" / path.name)


def stage(config: dict, dest: Path | None = None, wheels: Path | None = None, sdist: Path | None = None,
          budget_bytes: int = TRAVEL_BUDGET_BYTES, say=print, cpu_peer_wheels: bool = False,
          thundersvm_wheel: Path | None = None, tmu: bool = False) -> dict:
    """Build the campaign folder ``dest`` (default ``.campaign/`` in the checkout); returns campaign.json."""
    dest = Path(dest) if dest else REPO / STAGE_DIR
    data_dir = Path.cwd() / config["data_dir"]  # an absolute data_dir stays itself
    wheel_files, tag = _wheels(Path(wheels) if wheels else REPO.parent / "shared" / "gpu" / "wheels-cp312")
    experiments = plan.active_experiments(config)
    needed = sorted({(plan.experiment(config, n)["dataset"], plan.experiment(config, n)["protocol"])
                     for n in experiments})
    if not needed:
        raise StageError("no experiment of the configuration has its dataset among config datasets; nothing to stage")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{dest.name}.tmp-", dir=dest.parent))
    try:
        tmp.chmod(0o755)
        for sub in ("wheels", "sdist"):
            (tmp / sub).mkdir()
        for w in wheel_files:
            shutil.copyfile(w, tmp / "wheels" / w.name)
        sd = _sdist(Path(sdist) if sdist else None, next(iter(sorted(dest.glob("sdist/*.tar.gz"))), None), tmp)
        shutil.copyfile(sd, tmp / "sdist" / sd.name)
        _wheel_from_sdist(tmp / "sdist" / sd.name, tmp / "wheels")
        _runtime_wheels(tmp / "wheels")
        shutil.rmtree(tmp / "download", ignore_errors=True)
        cpu_peers = _cpu_peer_wheels(tag, tmp, say) if cpu_peer_wheels else []
        if thundersvm_wheel is not None:
            svm_wheel(thundersvm_wheel, tmp)
        if tmu:
            tmu_site(tag, tmp, say)
        for dataset, protocol in needed:
            _copy_dataset(data_dir, dataset, protocol, tmp)
        files = {p.relative_to(tmp).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
                 for p in sorted(tmp.rglob("*")) if p.is_file()}
        staged, tree, git = sum(f["bytes"] for f in files.values()), travelling_tree_bytes(), git_info()
        meta = {"generated_by": "python -m gpu_host stage", "config": config, "experiments": experiments,
                "datasets": [f"{d}/{p}" for d, p in needed], "python_tag": tag, "cpu_peers": cpu_peers,
                "tmu": list(TMU_SITE) if tmu else None,
                "source": {"commit": git["commit"], "tracked_files_modified": git["tracked_files_modified"]},
                "staged_bytes": staged, "checkout_bytes": tree, "files": files}
        (tmp / "campaign.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        staged += (tmp / "campaign.json").stat().st_size
        say(f"staged {_mib(staged)} in {dest} ({len(files) + 1} files); the checkout that travels with it "
            f"{_mib(tree)}; together {_mib(staged + tree)} of {_mib(budget_bytes)}")
        if staged + tree > budget_bytes:
            raise StageError(f"the staged folder ({_mib(staged)}) and the checkout ({_mib(tree)}) exceed the "
                             f"{_mib(budget_bytes)} that travel to the GPU machine; stage fewer datasets "
                             "(--config 'datasets=[...]') or make the checkout smaller")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_campaign(campaign_dir: Path) -> dict:
    path = Path(campaign_dir) / "campaign.json"
    if not path.is_file():
        raise StageError(f"{path} is missing: run `python -m gpu_host stage` on the machine with the data "
                         f"and carry {STAGE_DIR} along with the command")
    return json.loads(path.read_text())
