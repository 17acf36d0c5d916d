"""``unpack``: put what the GPU machine sent back (``<step>.tar.gz`` files) into ``results/`` and
``benchmarks/results/``.

Every member of every tarball is checked before anything is written: only regular files and folders, no
absolute paths, no ``..``, no links or devices, and only below ``results/`` or ``benchmarks/results/``. An
existing file is left alone when identical and refused when different (``--overwrite`` replaces it). Each
file is written to a temporary sibling and renamed into place.
"""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path, PurePosixPath

from ..io import atomic_open
from ..provenance import REPO

ALLOWED = ("results", "benchmarks/results")


class UnpackError(ValueError):
    """A tarball that cannot be unpacked safely (the message names the member and the problem)."""


def _check(tar_path: Path, member: tarfile.TarInfo) -> str | None:
    """The member's checked relative path (None for folders, which are implied by files)."""
    name = member.name
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith(("/", "\\")) or ".." in p.parts or "\\" in name:
        raise UnpackError(f"{tar_path}: member {name!r} points outside the tree; refusing the whole tarball")
    if member.isdir():
        return None
    if not member.isreg():
        kind = "link" if (member.issym() or member.islnk()) else "special file"
        raise UnpackError(f"{tar_path}: member {name!r} is a {kind}; only plain files are accepted")
    rel = p.as_posix().removeprefix("./")
    if not any(rel.startswith(a + "/") for a in ALLOWED):
        raise UnpackError(f"{tar_path}: member {name!r} is outside {' and '.join(a + '/' for a in ALLOWED)}")
    return rel


def unpack(folder: str | Path, into: str | Path | None = None, overwrite: bool = False, say=print) -> list[str]:
    """Unpack every ``*.tar.gz`` in ``folder`` (or that one file) into ``into`` (default: the checkout)."""
    folder, into = Path(folder), Path(into) if into else REPO
    tars = [folder] if folder.is_file() else sorted(folder.glob("*.tar.gz"))
    if not tars:
        raise UnpackError(f"{folder}: no .tar.gz files here (the step's files from the device machine)")
    planned: dict[str, tuple[Path, tarfile.TarInfo]] = {}
    for tar_path in tars:
        with tarfile.open(tar_path, "r:gz") as tar:
            for member in tar.getmembers():
                rel = _check(tar_path, member)
                if rel is not None:
                    planned[rel] = (tar_path, member)
    writes = []
    for rel, (tar_path, member) in sorted(planned.items()):
        with tarfile.open(tar_path, "r:gz") as tar:
            data = tar.extractfile(member).read()
        target = into / rel
        for parent in reversed(target.relative_to(into).parents[:-1]):
            if (into / parent).is_symlink():
                raise UnpackError(f"{into / parent} is a link; refusing to write through it")
        if target.is_symlink():
            raise UnpackError(f"{target} is a link; refusing to write through it")
        if target.exists():
            if hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest():
                continue
            if not overwrite:
                raise UnpackError(f"{target} exists and differs from {tar_path.name}'s copy; nothing was written "
                                  "(pass --overwrite to replace it)")
        writes.append((rel, target, data))
    for rel, target, data in writes:
        with atomic_open(target, "wb") as fh:
            fh.write(data)
    say(f"unpacked {len(writes)} file(s) from {len(tars)} tarball(s) into {into} "
        f"({len(planned) - len(writes)} already there); now: snakemake --cores all tables figures "
        "--config run_missing=false")
    if any(PurePosixPath(rel).match("benchmarks/results/gpu_*.json") for rel, _, _ in writes):
        from .goals import write

        write(into, say=say)  # the benchmark's comparisons with every seed of this GPU and code
    return [rel for rel, _, _ in writes]
