"""Bring a dataset's raw files into ``data/raw/<dataset>/`` and prove they are the declared ones.

Each dataset module declares ``SOURCES`` (see :mod:`asynctm.datasets.base`). For every source,
:func:`fetch` takes the first of

1. the members already present in the raw folder, if they verify;
2. the mirror folder (``--config data_mirror=DIR`` / ``--mirror DIR``), at ``<mirror>/<mirror_path>``;
3. the official URL (streamed to a temporary file with urllib).

Verification is on the member files that preprocessing reads (sha256 per file, :func:`folder_digest`
per folder), never on the archive, so a repacked archive with identical members verifies too.
Everything is unpacked into a private staging folder inside the raw folder, checked there, and only
then renamed into place; on any error the staging folder is removed, so a failure leaves nothing
that looks finished, and staging folders of killed fetches are removed by the next one. Unpacking
stops as soon as a source yields more bytes than it declares (``Source.max_unpacked``), so a
decompression bomb never fills the disk. ``MANIFEST.json`` (each member's hash and the raw digest) is written last; it
is the Snakemake output of the fetch rule.
"""

from __future__ import annotations

import errno
import json
import lzma
import os
import re
import shutil
import stat
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType

from ..io import is_disk_full, make_staging_dir, remove_stale, write_json_atomic
from .base import DEFAULT_MAX_UNPACKED, RawFile, RawFolder, Source, digest_lines, folder_digest, sha256_file
from .registry import get_module

MANIFEST = "MANIFEST.json"
MIRROR_OPTION = "--config data_mirror=DIR (command line: --mirror DIR)"
USER_AGENT = "asynctm-data-fetch/1 (+https://github.com/; research reproduction)"
STAGING = ".fetch-"  # staging folders inside data/raw/<dataset>/ (asynctm.io.make_staging_dir)


class FetchError(RuntimeError):
    """A dataset's raw files could not be brought in; the message says which and what to do."""


class ChecksumError(FetchError):
    """A member file (or folder) does not have the declared hash."""


class UnsafeArchiveError(FetchError):
    """An archive member would land outside the target folder, or is a link or a device."""


class ExtractionLimitError(UnsafeArchiveError):
    """An archive unpacks to more bytes than its source declares (``Source.max_unpacked``)."""


Log = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


def _module(dataset) -> ModuleType:
    return dataset if isinstance(dataset, ModuleType) else get_module(dataset)


# --- hashes and verification -------------------------------------------------------------------


def member_hash(raw_dir: str | os.PathLike, member: RawFile | RawFolder) -> str:
    """The hash of one declared member as found below ``raw_dir`` (sha256 or folder digest)."""
    p = Path(raw_dir) / member.path
    if isinstance(member, RawFolder):
        return folder_digest(p)
    if p.is_symlink() or not p.is_file():
        raise FileNotFoundError(f"{p}: not a regular file")
    return sha256_file(p)


def _expected(member: RawFile | RawFolder) -> str:
    return member.digest if isinstance(member, RawFolder) else member.sha256


def _what(member) -> str:
    return "folder digest" if isinstance(member, RawFolder) else "sha256"


def check_member(raw_dir, member, dataset: str, origin: str, fix: str = "") -> str:
    """Hash ``member`` below ``raw_dir`` and compare with its declaration; return the hash.

    ``fix`` (appended to the error) tells the user what to delete or replace."""
    fix = f"; {fix}" if fix else ""
    try:
        actual = member_hash(raw_dir, member)
    except (FileNotFoundError, NotADirectoryError) as e:
        raise FetchError(f"{dataset}: {origin} has no {member.path} ({e}){fix}") from None
    if actual != _expected(member):
        raise ChecksumError(f"{dataset}: checksum mismatch for {member.path} from {origin}: "
                            f"expected {_what(member)} {_expected(member)}, got {actual}{fix}")
    return actual


def _refetch_fix(raw_dir: Path) -> str:
    return (f"delete {raw_dir / MANIFEST} (and the damaged file) and rerun: the fetch step re-verifies every "
            f"raw file of the dataset and brings in the bad ones again")


def _present(raw_dir: Path, source: Source) -> bool:
    try:
        return all(member_hash(raw_dir, m) == _expected(m) for m in source.members)
    except (OSError, ValueError):
        return False


def verify(dataset, raw_dir: str | os.PathLike) -> dict:
    """Re-hash every declared member in ``raw_dir``; return the manifest dict they give.

    Required members must all be present and match; optional sources count when present.
    """
    mod = _module(dataset)
    raw_dir = Path(raw_dir)
    hashes = {}
    for source in mod.SOURCES:
        if source.optional and not all((raw_dir / m.path).exists() for m in source.members):
            continue
        for m in source.members:
            hashes[m.path] = check_member(raw_dir, m, mod.NAME, f"raw folder {raw_dir}", _refetch_fix(raw_dir))
    return _manifest(mod, hashes)


def _manifest(mod: ModuleType, hashes: dict) -> dict:
    return {"generated_by": "asynctm.datasets.fetch from the sources declared in "
            f"asynctm.datasets.{mod.__name__.rsplit('.', 1)[-1]}",
            "dataset": mod.NAME, "members": dict(sorted(hashes.items())), "raw_digest": digest_lines(hashes)}


def read_manifest(raw_dir: str | os.PathLike) -> dict:
    return json.loads((Path(raw_dir) / MANIFEST).read_text())


def safe_relpath(name: str) -> PurePosixPath:
    """An archive member name as a relative path that stays inside the target folder.

    Rejects absolute names (``/x``, ``C:\\x``, ``\\\\host``) and any ``..`` component instead of
    silently rewriting them: an archive that tries either is not the one we declared.
    """
    n = name.replace("\\", "/")
    if n.startswith("/") or re.match(r"^[A-Za-z]:", n):
        raise UnsafeArchiveError(f"archive member {name!r} has an absolute path")
    parts = [p for p in n.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(f"archive member {name!r} would land outside the target folder")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _wanted(members) -> Callable[[str], bool]:
    files = {m.path for m in members if isinstance(m, RawFile)}
    folders = [m.path.rstrip("/") + "/" for m in members if isinstance(m, RawFolder)]
    return lambda rel: rel in files or any(rel.startswith(f) for f in folders)


def _target(dest: Path, rel: PurePosixPath, strip: int) -> Path | None:
    if len(rel.parts) <= strip:
        return None
    out = dest.joinpath(*rel.parts[strip:])
    # Belt and braces: the resolved path must stay below dest whatever the name contained.
    if not out.resolve().is_relative_to(dest.resolve()):
        raise UnsafeArchiveError(f"archive member {rel} would land outside the target folder")
    return out


class _Budget:
    """The bytes an archive may still yield; exceeding it stops the unpacking at once."""

    def __init__(self, limit: int):
        self.limit, self.used = int(limit), 0

    def check(self, total: int, what: str) -> None:
        if total > self.limit:
            raise ExtractionLimitError(f"{what} would take the unpacked size past the {self.limit:,} bytes declared "
                                       "for this source (max_unpacked): not the declared archive, or a decompression "
                                       "bomb; unpacking stopped")

    def take(self, n: int, what: str) -> None:
        self.check(self.used + n, what)
        self.used += n


def _copy_stream(src, out: Path, budget: _Budget) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "xb") as f:  # "x": a duplicate member name is refused, not silently merged
        while block := src.read(1 << 20):
            budget.take(len(block), f"member {out.name}")
            f.write(block)


def unpack(archive: str | os.PathLike, kind: str, dest: str | os.PathLike, members, strip: int = 0,
           max_bytes: int = DEFAULT_MAX_UNPACKED) -> None:
    """Unpack the declared ``members`` of ``archive`` into ``dest`` (a fresh, private folder).

    Every member of the archive is checked, wanted or not, so an archive carrying an unsafe member
    is rejected as a whole. Links, hard links and device files are refused. At most ``max_bytes``
    are written (and, for a tar, decompressed): :class:`ExtractionLimitError` as soon as more would be.
    """
    dest = Path(dest)
    wanted = _wanted(members)
    budget = _Budget(max_bytes)
    if kind == "file":
        with open(archive, "rb") as src:
            _copy_stream(src, dest / members[0].path, budget)
    elif kind == "xz":
        with lzma.open(archive) as src:
            _copy_stream(src, dest / members[0].path, budget)
    elif kind == "zip":
        if not zipfile.is_zipfile(archive):
            raise FetchError(f"{archive}: not a zip archive (truncated or another format)")
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                rel = safe_relpath(info.filename)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise UnsafeArchiveError(f"archive member {info.filename!r} is a symbolic link")
                if info.is_dir():
                    continue
                out = _target(dest, rel, strip)
                if out is not None and wanted(out.relative_to(dest).as_posix()):
                    budget.check(budget.used + info.file_size, f"member {info.filename!r}")
                    with z.open(info) as src:
                        _copy_stream(src, out, budget)
    elif kind == "tar":
        try:
            tf = tarfile.open(archive, "r:*")
        except tarfile.TarError as e:
            raise FetchError(f"{archive}: not a tar archive ({e})") from None
        with tf:
            # The whole stream is decompressed (tar has no index), wanted members or not: bound all of it.
            for info in tf:
                budget.check(tf.fileobj.tell() + info.size, f"member {info.name!r}")
                rel = safe_relpath(info.name)
                if info.issym() or info.islnk():
                    raise UnsafeArchiveError(f"archive member {info.name!r} is a "
                                             f"{'symbolic' if info.issym() else 'hard'} link")
                if info.isdir():
                    continue
                if not info.isfile():
                    raise UnsafeArchiveError(f"archive member {info.name!r} is not a regular file")
                out = _target(dest, rel, strip)
                if out is not None and wanted(out.relative_to(dest).as_posix()):
                    _copy_stream(tf.extractfile(info), out, _Budget(info.size))
            # tarfile stops quietly at a cut-off header; reading the compressed stream to its end
            # makes a truncated download fail loudly even when the cut came after our members.
            while tf.fileobj.read(1 << 20):
                budget.check(tf.fileobj.tell(), "the data after the last member")
    else:
        raise ValueError(f"unknown source kind {kind!r}")


# --- downloads ---------------------------------------------------------------------------------


def download(url: str, dest: str | os.PathLike, timeout: float = 60.0, log: Log = _quiet,
             max_bytes: int = DEFAULT_MAX_UNPACKED) -> None:
    """Stream ``url`` to ``dest`` (a temporary name chosen by the caller); check the length.

    A download longer than ``max_bytes`` (the source's ``max_unpacked``: an archive is smaller than what it
    unpacks to) is stopped there."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    budget = _Budget(max_bytes)
    with urllib.request.urlopen(req, timeout=timeout) as r, open(dest, "xb") as f:
        expected = r.headers.get("Content-Length")
        n = 0
        while block := r.read(1 << 20):
            budget.take(len(block), f"the download {url}")
            f.write(block)
            n += len(block)
    if expected is not None and n != int(expected):
        raise FetchError(f"{url}: download truncated ({n} of {expected} bytes)")
    log(f"downloaded {url} ({n} bytes)")


# --- the fetch itself --------------------------------------------------------------------------


def _install(staging: Path, raw_dir: Path, members) -> None:
    """Rename verified members from staging into the raw folder (each rename is atomic).

    A folder already there is first renamed into staging (removed with it), never deleted in place, so a
    reader sees the old folder or the new one. When a concurrent fetch installs the same member between
    the two renames, its copy is kept if it verifies."""
    for i, m in enumerate(members):
        src, dst = staging / m.path, raw_dir / m.path
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_dir() and not dst.is_symlink():
            try:
                os.replace(dst, staging / f"replaced-{i}")
            except FileNotFoundError:  # a concurrent fetch moved it away first
                pass
        try:
            os.replace(src, dst)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not _present(raw_dir, Source("", "", "", (m,))):
                raise


def _from_file(path: Path, kind: str, source: Source, staging: Path, raw_dir: Path, name: str, origin: str,
               fix: str):
    """Unpack and verify one source's file; ``fix`` says what to do when it is not the declared one."""
    unpacked = staging / "unpacked"
    unpacked.mkdir()
    limit = source.max_unpacked if source.max_unpacked is not None else DEFAULT_MAX_UNPACKED
    try:
        unpack(path, kind, unpacked, source.members, source.strip, max_bytes=limit)
    except UnsafeArchiveError as e:
        raise type(e)(f"{name}: {origin}: {e}; {fix}") from None
    except FetchError as e:
        raise FetchError(f"{name}: cannot unpack {origin}: {e}; {fix}") from None
    except OSError as e:
        if is_disk_full(e):
            raise  # the disk's fault, not the file's: fetch() says so
        raise FetchError(f"{name}: cannot unpack {origin}, it is truncated or damaged ({e}); {fix}") from e
    except (EOFError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError, zlib.error, NotImplementedError,
            RuntimeError) as e:
        # A truncated or damaged archive (zlib.error: a damaged deflate stream; RuntimeError: an encrypted
        # member; NotImplementedError: an unknown compression method): say which file, keep the cause.
        raise FetchError(f"{name}: cannot unpack {origin}, it is truncated or damaged "
                         f"({type(e).__name__}: {e}); {fix}") from e
    hashes = {m.path: check_member(unpacked, m, name, origin, fix) for m in source.members}
    _install(unpacked, raw_dir, source.members)
    return hashes


def fetch_source(source: Source, raw_dir: Path, name: str, mirror: str | os.PathLike | None = None,
                 timeout: float = 60.0, log: Log = _quiet) -> dict | None:
    """Bring one source's members into ``raw_dir``; return their hashes (None: optional, skipped)."""
    if _present(raw_dir, source):
        log(f"{name}: {', '.join(m.path for m in source.members)} already present and verified")
        return {m.path: _expected(m) for m in source.members}
    staging = make_staging_dir(raw_dir, STAGING)
    try:
        if mirror is not None:
            candidate = Path(mirror) / source.mirror_path
            if candidate.is_file():
                log(f"{name}: taking {source.mirror_path} from the mirror {mirror}")
                return _from_file(
                    candidate, source.mirror_kind or source.kind, source, staging, raw_dir, name,
                    f"mirror file {candidate}",
                    f"replace the mirror file {candidate} with the official one ({source.url}), or leave "
                    "data_mirror unset to download it",
                )
            log(f"{name}: the mirror {mirror} has no {source.mirror_path}; trying {source.url}")
        part = staging / "download.part"
        limit = source.max_unpacked if source.max_unpacked is not None else DEFAULT_MAX_UNPACKED
        try:
            download(source.url, part, timeout=timeout, log=log, max_bytes=limit)
        except FetchError as e:  # a short read, or far too long
            raise type(e)(f"{name}: {e}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            if is_disk_full(e):
                raise
            reason = getattr(e, "reason", e)
            where = (f"the mirror {mirror} has no {source.mirror_path}" if mirror is not None
                     else "no mirror is configured")
            msg = (f"{name}: cannot download {source.url} ({reason}) and {where}. Without network access, put the raw "
                   f"files in a mirror folder as <mirror>/{source.mirror_path} and pass {MIRROR_OPTION}.")
            if source.optional:
                log(f"{name}: optional source skipped: {msg}")
                return None
            raise FetchError(msg) from None
        return _from_file(
            part, source.kind, source, staging, raw_dir, name, f"download {source.url}",
            "rerun to download it again; if it fails the same way the file at that URL has changed: put the "
            f"declared file in a mirror folder as <mirror>/{source.mirror_path} and pass {MIRROR_OPTION}",
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def fetch(dataset, raw_dir: str | os.PathLike, mirror: str | os.PathLike | None = None, *, timeout: float = 60.0,
          log: Log = _quiet) -> dict:
    """Fetch and verify every source of ``dataset`` into ``raw_dir``; write and return its manifest.

    ``raw_dir`` is the dataset's own folder (``data/raw/<dataset>``). Raises :class:`FetchError`
    (or its subclasses :class:`ChecksumError`, :class:`UnsafeArchiveError`) with a message naming
    the dataset and file; nothing unverified is left in ``raw_dir``.
    """
    mod = _module(dataset)
    name = mod.NAME
    if mirror is not None and not Path(mirror).is_dir():
        raise FetchError(f"{name}: the mirror folder {mirror} does not exist (given by {MIRROR_OPTION}); "
                         "fix the path or leave data_mirror unset to download from the official URLs")
    raw_dir = Path(raw_dir)
    created = not raw_dir.exists()
    raw_dir.mkdir(parents=True, exist_ok=True)
    for stale in remove_stale(raw_dir, STAGING):
        log(f"{name}: removed {stale.name}, left behind by an interrupted fetch")
    try:
        hashes = {}
        for source in mod.SOURCES:
            got = fetch_source(source, raw_dir, name, mirror=mirror, timeout=timeout, log=log)
            if got is not None:
                hashes.update(got)
        manifest = _manifest(mod, hashes)
        write_json_atomic(raw_dir / MANIFEST, manifest)
    except BaseException as e:
        if created and raw_dir.is_dir() and not any(raw_dir.iterdir()):
            raw_dir.rmdir()
        if is_disk_full(e):
            raise FetchError(f"{name}: the disk is full (no space left while writing to {raw_dir}): free space "
                             "there, or set data_dir to a folder on another disk, and rerun") from None
        raise
    log(f"{name}: raw digest {manifest['raw_digest']}")
    return manifest
