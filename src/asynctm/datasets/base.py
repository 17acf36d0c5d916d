"""The shared contract of every dataset module: raw-file declarations and the processed format.

Each dataset module under ``asynctm.datasets`` defines

- ``NAME``: the dataset's name as used in the config and in paths (e.g. ``"bike_sharing"``),
- ``SOURCES``: a tuple of :class:`Source` (official URL, the path inside an offline mirror, and the
  checksummed members that preprocessing reads),
- ``PROTOCOLS``: the protocols it supports (``"paper"`` first, the default),
- ``prepare(raw_dir, protocol) -> ProcessedDataset``: preprocessing from the verified raw files.

Raw files are fetched and verified by :mod:`asynctm.datasets.fetch` into ``data/raw/<dataset>/``
(with ``MANIFEST.json``: each member's hash and the raw digest, :func:`digest_lines` over them).
Processed datasets are stored as ``train.npz``, ``test.npz`` (and ``novel.npz`` for novelty
detection) plus ``meta.json`` in one folder, written atomically by :func:`save_processed`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..io import fsync_dir, make_staging_dir, remove_stale

FORMAT_VERSION = 1
# The most bytes a source may unpack to when it declares no ``max_unpacked`` of its own.
DEFAULT_MAX_UNPACKED = 256 << 20


@dataclass(frozen=True)
class RawFile:
    """One raw file that preprocessing reads, relative to ``data/raw/<dataset>/``."""

    path: str
    sha256: str


@dataclass(frozen=True)
class RawFolder:
    """A folder of raw files, verified by :func:`folder_digest` over every file below it."""

    path: str
    digest: str


@dataclass(frozen=True)
class Source:
    """Where raw data comes from and what it must contain once fetched (and unpacked).

    ``kind`` is ``"file"`` (stored as ``members[0].path``), ``"zip"``, ``"tar"`` (any compression),
    or ``"xz"`` (a single xz-compressed file). ``mirror_path`` is relative to the mirror folder given by
    ``--config data_mirror=DIR``. Verification is on ``members``, never on the archive, so a repacked
    archive with identical members verifies too. ``strip`` drops that many leading path components
    of archive members before they are placed under the raw folder. ``max_unpacked`` bounds the bytes
    unpacking may write (a tar: decompress), declared next to the checksums with room above the real
    size; unpacking stops as soon as it is exceeded (None: ``DEFAULT_MAX_UNPACKED``).
    """

    url: str
    mirror_path: str
    kind: str
    members: tuple
    strip: int = 0
    # The mirror may hold the file in another shape than the official URL serves it (e.g. the
    # members of a zip, unpacked): then ``mirror_kind`` says how to read the mirror's copy.
    mirror_kind: str | None = None
    # An optional source is used when it can be had and skipped (and logged) when not; its members
    # then do not enter the manifest or the raw digest.
    optional: bool = False
    max_unpacked: int | None = None


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The sha256 hex digest of one file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def digest_lines(hashes: dict) -> str:
    """sha256 over ``"<path>\t<sha256>\n"`` lines sorted by path: the digest of a set of files."""
    h = hashlib.sha256()
    for rel in sorted(hashes):
        h.update(f"{rel}\t{hashes[rel]}\n".encode())
    return h.hexdigest()


def folder_digest(path: str | os.PathLike) -> str:
    """Digest of every regular file below ``path``: :func:`digest_lines` over their POSIX paths
    relative to ``path`` and their sha256. Independent of file times, permissions and walk order,
    so an identical tree unpacked from any archive gives the same digest. Links are refused (a raw
    folder never needs them, and following one could read outside the folder)."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a folder")
    hashes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                raise ValueError(f"{p}: links are not allowed in a raw folder")
        for name in filenames:
            p = Path(dirpath) / name
            hashes[p.relative_to(root).as_posix()] = sha256_file(p)
    return digest_lines(hashes)


@dataclass
class ProcessedDataset:
    """Binary features and targets, ready for a Tsetlin Machine.

    ``X_*`` are 0/1 ``uint8`` arrays or ``scipy.sparse.csr_matrix`` of 0/1; ``y_*`` are ``int64``
    class indices (classification, novelty) or ``float64`` targets (regression). For novelty
    detection ``X_novel`` holds the documents of the novel class(es).
    """

    name: str
    protocol: str
    task: str  # "classification" | "regression" | "novelty"
    X_train: Any
    y_train: np.ndarray
    X_test: Any
    y_test: np.ndarray
    feature_names: list
    class_names: list | None = None
    X_novel: Any = None
    meta: dict = field(default_factory=dict)


def _save_matrix(arrays: dict, prefix: str, X) -> None:
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        arrays[f"{prefix}_format"] = np.array("csr")
        arrays[f"{prefix}_indptr"] = X.indptr.astype(np.int64)
        arrays[f"{prefix}_indices"] = X.indices.astype(np.int32)
        arrays[f"{prefix}_shape"] = np.array(X.shape, dtype=np.int64)
    else:
        X = np.asarray(X, dtype=np.uint8)
        arrays[f"{prefix}_format"] = np.array("packed")
        arrays[f"{prefix}_packed"] = np.packbits(X, axis=1, bitorder="little")
        arrays[f"{prefix}_shape"] = np.array(X.shape, dtype=np.int64)


def _load_matrix(z, prefix: str):
    fmt = str(z[f"{prefix}_format"])
    shape = tuple(int(v) for v in z[f"{prefix}_shape"])
    if fmt == "csr":
        indices = z[f"{prefix}_indices"]
        data = np.ones(len(indices), dtype=np.uint8)
        return sp.csr_matrix((data, indices, z[f"{prefix}_indptr"]), shape=shape)
    packed = z[f"{prefix}_packed"]
    return np.unpackbits(packed, axis=1, count=shape[1], bitorder="little").astype(np.uint8)


def _check_binary(name: str, X) -> None:
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.size and not np.isin(np.unique(data), (0, 1)).all():
        raise ValueError(f"{name}: features must be 0/1 before saving")


def save_processed(ds: ProcessedDataset, out_dir: str | os.PathLike) -> None:
    """Write ``ds`` to ``out_dir`` atomically: a temporary sibling folder, renamed when complete."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = f".{out_dir.name}.tmp-"
    remove_stale(out_dir.parent, staging)  # what a killed earlier run left
    tmp = make_staging_dir(out_dir.parent, staging)
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the finished folder is an ordinary one
        parts = {"train": (ds.X_train, ds.y_train), "test": (ds.X_test, ds.y_test)}
        if ds.X_novel is not None:
            parts["novel"] = (ds.X_novel, None)
        counts = {}
        for part, (X, y) in parts.items():
            _check_binary(f"{ds.name}/{part}", X)
            arrays: dict = {}
            _save_matrix(arrays, "X", X)
            if y is not None:
                arrays["y"] = np.asarray(y)
                if len(arrays["y"]) != X.shape[0]:
                    raise ValueError(f"{ds.name}/{part}: {X.shape[0]} rows but {len(arrays['y'])} targets")
            np.savez_compressed(tmp / f"{part}.npz", **arrays)
            counts[part] = int(X.shape[0])
        meta = {"format_version": FORMAT_VERSION, "name": ds.name, "protocol": ds.protocol, "task": ds.task,
                "n_features": int(ds.X_train.shape[1]), "counts": counts, "class_names": ds.class_names,
                "feature_names": list(ds.feature_names), **ds.meta}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        for f in tmp.iterdir():  # on the disk before the folder's name says it is finished
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(tmp)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
        fsync_dir(out_dir.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_processed(path: str | os.PathLike) -> ProcessedDataset:
    """Read a folder written by :func:`save_processed` (or the ``meta.json`` inside it)."""
    path = Path(path)
    if path.name == "meta.json":
        path = path.parent
    meta = json.loads((path / "meta.json").read_text())
    parts = {}
    for part in ("train", "test", "novel"):
        f = path / f"{part}.npz"
        if f.exists():
            with np.load(f, allow_pickle=False) as z:
                parts[part] = (_load_matrix(z, "X"), z["y"] if "y" in z.files else None)
    known = {"name", "protocol", "task", "class_names", "feature_names"}
    return ProcessedDataset(
        name=meta["name"], protocol=meta["protocol"], task=meta["task"], X_train=parts["train"][0],
        y_train=parts["train"][1], X_test=parts["test"][0], y_test=parts["test"][1],
        feature_names=meta["feature_names"], class_names=meta.get("class_names"),
        X_novel=parts["novel"][0] if "novel" in parts else None, meta={k: v for k, v in meta.items() if k not in known})
