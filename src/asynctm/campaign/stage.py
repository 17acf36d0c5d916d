"""``stage``: the folder that travels to the GPU machine (carried as one ignored path, under 64 MiB).

Layout of ``.campaign/``::

    wheels/*.whl                 PyCUDA and its small dependencies, built for the GPU machine's CPython, and
                                 PyTsetlinMachineCUDA's pure-Python wheel, built here from the sdist
    sdist/PyTsetlinMachineCUDA-0.1.9.tar.gz   as downloaded from PyPI (the wheel's source)
    wheels/pytsetlinmachine-0.6.6-<tag>-*.whl   pyTsetlinMachine built here for that CPython (the host_peers step
                                 times it on the GPU machine's own cores), where a python of that version is here
    parallel/pytsetlinmachineparallel-0.2.1-<tag>-*.whl   pyTsetlinMachineParallel likewise, apart: both install a
                                 top-level libTM extension, so it goes into a folder of its own there
    extra/*.whl                  jsonschema and its dependencies for that CPython (benchmarks/bench_tm.py checks the
                                 configuration with it; the GPU machine's python has none)
    data/processed/<dataset>/<protocol>/{train,test[,novel]}.npz, meta.json   (copied from data_dir)
    campaign.json                the configuration the steps run, the commit, every file's size and sha256

The datasets are the processed folders of the pipeline (``<data_dir>/processed``): already compact
(sparse matrices as CSR index arrays, dense ones bit-packed, both zip-compressed), so they are copied as they
are. The folder is built beside its destination and renamed into place when complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

import yaml

from ..datasets.base import sha256_file
from ..experiments import plan
from ..provenance import REPO, git_info
from . import STAGE_DIR, TRAVEL_BUDGET_BYTES

PYTM_CUDA = "pytsetlinmachinecuda==0.1.9"
SDIST_NAME = re.compile(r"^pytsetlinmachinecuda-0\.1\.9\.tar\.gz$", re.IGNORECASE)
WHEEL_NAME = re.compile(r"^(?P<dist>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-(?P<py>[^-]+)-(?P<abi>[^-]+)"
                        r"-(?P<plat>[^-]+)\.whl$")
DATA_FILES = ("train.npz", "test.npz", "novel.npz", "meta.json")
CPU_PEERS = {"wheels": "pyTsetlinMachine==0.6.6", "parallel": "pyTsetlinMachineParallel==0.2.1"}
# benchmarks/bench_tm.py checks the configuration with jsonschema, which the GPU machine's python lacks
BENCH_WHEELS = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py")


class StageError(RuntimeError):
    """The campaign cannot be staged as asked (the message names the problem and the fix)."""


def default_wheels() -> Path:
    return REPO.parent / "shared" / "gpu" / "wheels-cp312"


def load_config(overrides: list[str] | None = None, configfile: str | os.PathLike | None = None) -> dict:
    """config/config.yaml with ``KEY=VALUE`` overrides (values read as YAML), as ``snakemake --config`` does."""
    path = Path(configfile) if configfile else REPO / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    for item in overrides or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StageError(f"--config {item!r}: write KEY=VALUE, e.g. data_dir=data")
        config[key] = yaml.safe_load(value)
    return config


def campaign_experiments(config: dict) -> list[str]:
    """The experiments whose tm_gpu runs the campaign makes: those of the configured datasets."""
    return plan.active_experiments(config)


def needed_datasets(config: dict) -> list[tuple[str, str]]:
    """``(dataset, protocol)`` of every experiment the campaign runs, sorted."""
    return sorted({(plan.experiment(config, n)["dataset"], plan.experiment(config, n)["protocol"])
                   for n in campaign_experiments(config)})


def travelling_tree_bytes(repo: Path = REPO) -> int:
    """Bytes of what travels with every device command besides carried paths: tracked files and untracked
    files that git does not ignore (0 where git is unavailable)."""
    try:
        r = subprocess.run(["git", "--no-optional-locks", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=repo, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 0
    total = 0
    for rel in r.stdout.decode().split("\0"):
        p = repo / rel
        if rel and p.is_file() and not p.is_symlink():
            total += p.stat().st_size
    return total


def _wheels(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise StageError(f"{folder}: no such folder of PyCUDA wheels; pass --wheels (../shared/gpu/README.md "
                         "says how they are built)")
    wheels = sorted(folder.glob("*.whl"))
    dists = {}
    for w in wheels:
        m = WHEEL_NAME.match(w.name)
        if not m:
            raise StageError(f"{w}: not a wheel file name (dist-version-python-abi-platform.whl)")
        dist = m["dist"].lower().replace("_", "-")
        if dist in dists:
            raise StageError(f"{folder}: two wheels of {dist} ({dists[dist].name}, {w.name}); keep one, or pip "
                             "stops the whole install")
        dists[dist] = w
    if "pycuda" not in dists:
        raise StageError(f"{folder}: no pycuda-*.whl in it; build one with ../shared/gpu/build-pycuda-wheel.sh")
    return wheels


def python_tag(wheels: list[Path]) -> str:
    """The CPython tag (e.g. ``cp312``) of the PyCUDA wheel: the GPU machine's python must match it."""
    for w in wheels:
        m = WHEEL_NAME.match(w.name)
        if m["dist"].lower() == "pycuda":
            return m["py"]
    raise StageError("no PyCUDA wheel")


def tag_python(tag: str) -> str | None:
    """A python of the CPython version ``tag`` names (``cp312``: python3.12) here, or None."""
    version = f"{tag[2]}.{tag[3:]}" if re.fullmatch(r"cp\d{3,}", tag) else None
    if version is None:
        return None
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    candidates = [shutil.which(f"python{version}")] + sorted(
        str(p) for p in (Path.home() / ".pyenv" / "versions").glob(f"{version}*/bin/python{version}"))
    for exe in candidates:
        if exe and subprocess.run([exe, "-c", "import pip"], capture_output=True).returncode == 0:
            return exe
    return None


def _cpu_peer_wheels(tag: str, tmp: Path, say=print) -> list[str]:
    """Build pyTsetlinMachine's and pyTsetlinMachineParallel's wheels for the GPU machine's CPython (their sdists
    compile C); where that python or the package index is missing, say so: the host_peers step then skips them."""
    python = tag_python(tag)
    if python is None:
        say(f"  pyTsetlinMachine not staged: no python of {tag} here (the host_peers step will skip it)")
        return []
    built = []
    for folder, requirement in CPU_PEERS.items():
        (tmp / folder).mkdir(exist_ok=True)
        r = subprocess.run([python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / folder), requirement],
                           capture_output=True, text=True)
        if r.returncode != 0:
            say(f"  {requirement} not staged: pip wheel failed ({(r.stderr or r.stdout).strip()[-300:]})")
            continue
        built.append(requirement)
    (tmp / "extra").mkdir(exist_ok=True)
    r = subprocess.run([python, "-m", "pip", "download", "--only-binary=:all:", "--no-deps", "-q", "-d",
                        str(tmp / "extra"), *BENCH_WHEELS], capture_output=True, text=True)
    if r.returncode != 0:
        say(f"  jsonschema not staged for bench_tm.py: pip download failed ({(r.stderr or r.stdout).strip()[-300:]})")
    else:
        built.append("jsonschema")
    return built


def _sdist(given: Path | None, previous: Path | None, tmp: Path) -> Path:
    """The PyTsetlinMachineCUDA sdist: the one given, else the one already staged, else ``pip download``."""
    for candidate in (given, previous):
        if candidate is not None and candidate.is_file():
            if not SDIST_NAME.match(candidate.name):
                raise StageError(f"{candidate}: expected PyTsetlinMachineCUDA-0.1.9.tar.gz")
            return candidate
    if given is not None:
        raise StageError(f"--sdist {given}: no such file")
    dl = tmp / "download"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(dl), PYTM_CUDA]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = [p for p in dl.glob("*") if SDIST_NAME.match(p.name)] if dl.is_dir() else []
    if r.returncode != 0 or not found:
        raise StageError(f"pip download {PYTM_CUDA} failed ({(r.stderr or r.stdout).strip()[-300:]}); download it "
                         "where PyPI is reachable and pass --sdist FILE")
    return found[0]


def _wheel_from_sdist(sdist: Path, wheels: Path) -> Path:
    """PyTsetlinMachineCUDA is pure Python (its setup.py lists one package and no extension): its wheel is
    made here from the sdist's package folder and PKG-INFO (a zip with ``.dist-info``), so that the GPU
    machine installs wheels only; building the sdist there would need setuptools in its python."""
    import base64
    import hashlib
    import tarfile
    import zipfile

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

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
    version = root.split("-")[-1]
    info = f"{pkg}-{version}.dist-info"
    files[f"{info}/METADATA"] = metadata
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: asynctm.campaign\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    files[f"{info}/top_level.txt"] = f"{pkg}\n".encode()
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    out = wheels / f"{pkg}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return out


def _copy_dataset(data_dir: Path, dataset: str, protocol: str, dest: Path) -> None:
    src = data_dir / "processed" / dataset / protocol
    if not (src / "meta.json").is_file():
        raise StageError(f"{src}/meta.json is missing: build the processed dataset first (snakemake --cores all "
                         f"{src}/meta.json --config data_dir={data_dir}), or point --config data_dir=... at the "
                         "folder holding processed/")
    out = dest / "data" / "processed" / dataset / protocol
    out.mkdir(parents=True)
    for name in DATA_FILES:
        f = src / name
        if f.is_symlink():
            raise StageError(f"{f}: a link; processed datasets are plain files")
        if f.is_file():
            shutil.copyfile(f, out / name)
    if not (out / "train.npz").is_file() or not (out / "test.npz").is_file():
        raise StageError(f"{src}: train.npz or test.npz is missing; rebuild the processed dataset")


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def stage(config: dict, dest: Path | None = None, wheels: Path | None = None, sdist: Path | None = None,
          budget_bytes: int = TRAVEL_BUDGET_BYTES, say=print, cpu_peer_wheels: bool = False) -> dict:
    """Build the campaign folder ``dest`` (default ``.campaign/`` in the checkout); returns campaign.json."""
    dest = Path(dest) if dest else REPO / STAGE_DIR
    data_dir = Path(config["data_dir"])
    if not data_dir.is_absolute():
        data_dir = Path.cwd() / data_dir
    wheel_files = _wheels(Path(wheels) if wheels else default_wheels())
    needed = needed_datasets(config)
    if not needed:
        raise StageError("no experiment of the configuration has its dataset among config datasets; nothing to "
                         "stage")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{dest.name}.tmp-", dir=dest.parent))
    try:
        tmp.chmod(0o755)
        (tmp / "wheels").mkdir()
        for w in wheel_files:
            shutil.copyfile(w, tmp / "wheels" / w.name)
        previous = next(iter(sorted((dest / "sdist").glob("*.tar.gz"))), None) if (dest / "sdist").is_dir() else None
        sd = _sdist(Path(sdist) if sdist else None, previous, tmp)
        (tmp / "sdist").mkdir()
        shutil.copyfile(sd, tmp / "sdist" / sd.name)
        _wheel_from_sdist(tmp / "sdist" / sd.name, tmp / "wheels")
        shutil.rmtree(tmp / "download", ignore_errors=True)
        cpu_peers = _cpu_peer_wheels(python_tag(wheel_files), tmp, say) if cpu_peer_wheels else []
        for dataset, protocol in needed:
            _copy_dataset(data_dir, dataset, protocol, tmp)
        files = {}
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                files[p.relative_to(tmp).as_posix()] = {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
        parts = {}
        for rel, f in files.items():
            key = "/".join(rel.split("/")[:4]) if rel.startswith("data/") else rel.split("/")[0]
            parts[key] = parts.get(key, 0) + f["bytes"]
        staged = sum(f["bytes"] for f in files.values())
        tree = travelling_tree_bytes()
        git = git_info()
        meta = {"generated_by": "python -m asynctm.campaign stage",
                "config": config, "experiments": campaign_experiments(config),
                "datasets": [f"{d}/{p}" for d, p in needed],
                "python_tag": python_tag(wheel_files), "cpu_peers": cpu_peers,
                "source": {"commit": git["commit"], "tracked_files_modified": git["tracked_files_modified"]},
                "staged_bytes": staged, "checkout_bytes": tree, "files": files}
        (tmp / "campaign.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        staged += (tmp / "campaign.json").stat().st_size
        for key, n in sorted(parts.items(), key=lambda kv: -kv[1]):
            say(f"  {key:<40} {_mib(n):>12}")
        say(f"staged {_mib(staged)} in {dest} ({len(files) + 1} files); the checkout that travels with it "
            f"{_mib(tree)}; together {_mib(staged + tree)} of {_mib(budget_bytes)}")
        if staged + tree > budget_bytes:
            raise StageError(f"the staged folder ({_mib(staged)}) and the checkout ({_mib(tree)}) exceed the "
                             f"{_mib(budget_bytes)} that travel to the GPU machine; stage fewer datasets "
                             "(--config 'datasets=[...]') or make the checkout smaller")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_campaign(campaign_dir: Path) -> dict:
    path = Path(campaign_dir) / "campaign.json"
    if not path.is_file():
        raise StageError(f"{path} is missing: run `python -m asynctm.campaign stage` on the machine with the data "
                         f"and carry {STAGE_DIR} along with the command")
    return json.loads(path.read_text())
