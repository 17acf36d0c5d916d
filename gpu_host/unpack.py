"""``unpack``: put what the GPU machine sent back (``<step>.tar.gz`` files) into ``results/`` and
``benchmarks/results/``, all of it or nothing.

1. Every tarball is read as a stream into a private staging folder inside the target (``io.make_staging_dir``), each
   member checked before its data is read: only plain files and folders below ``results/`` or
   ``benchmarks/results/`` (no absolute paths, ``..``, links, devices or sparse files), each name once across the
   tarballs, no file where another member puts a folder, at most :data:`MAX_MEMBER_BYTES` a file and
   :data:`MAX_TOTAL_BYTES` in all (a few megabytes of gzip can expand to gigabytes). The compressed stream is read to
   its end, so a damaged tarball is refused even where the damage lies past the last member.
2. Every JSON file must be one JSON object, and every run record (``results/**/seed*.json``) must pass the record
   gate (:func:`asynctm.store.check_record`). An existing file is left alone when identical and refused when
   different (``--overwrite`` replaces it); links and file/folder clashes in the target are refused.
3. Only then is each file renamed into place. On any refusal nothing is written; the one line names the tarball,
   the member and the fix.
"""

from __future__ import annotations

import filecmp
import gzip
import json
import os
import shutil
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from asynctm.io import fsync_dir, is_disk_full, make_staging_dir, remove_stale
from asynctm.provenance import REPO

ALLOWED = ("results", "benchmarks/results")
# Real members (records, logs, novelty scores, benchmark records and manifests) are each well under a megabyte and
# all committed results together tens of megabytes (tests/unit/test_faults_unpack.py checks both against these).
MAX_MEMBER_BYTES = 64 * 2**20
MAX_TOTAL_BYTES = 2 * 2**30
MAX_MEMBERS = 200_000  # entries of one tarball: a step packs a few thousand at most
CHUNK_BYTES = 1 * 2**20  # a member's data is copied in chunks of this size
MAX_READ_BYTES = 4 * 2**20  # the largest single read: a tar extension header is read whole into memory
STAGING = ".unpack-staging-"
AGAIN = "ask the GPU host for the step's tarball again"
_READ_ERRORS = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


class UnpackError(ValueError):
    """A tarball that cannot be unpacked safely (the message names the member and the problem)."""


def _no(tar: Path, what: str, fix: str = AGAIN) -> UnpackError:
    return UnpackError(f"{tar.name}{what}; nothing was written: {fix}")


def _damaged(tar: Path, exc: BaseException) -> UnpackError:
    if isinstance(exc, gzip.BadGzipFile) and "gzipped" in str(exc):
        return _no(tar, " is not a gzip file")
    if isinstance(exc, EOFError):
        return _no(tar, " is truncated (the compressed stream ends early)")
    if isinstance(exc, (zlib.error, gzip.BadGzipFile)):
        return _no(tar, f" holds damaged compressed data ({exc})")
    return _no(tar, f" is not a tar archive or a damaged one ({exc})")


class _Capped:
    """The decompressed stream as the tarfile module reads it: no read above :data:`MAX_READ_BYTES`, no position
    beyond ``cap`` (reads and forward seeks alike decompress)."""

    def __init__(self, fileobj, tar: Path, cap: int):
        self._f, self._tar, self.cap, self.last = fileobj, tar, cap, b""  # last: the last read, the end marker

    def _check(self, end: int, size: int = 0) -> None:
        if size < 0 or size > MAX_READ_BYTES:
            raise _no(self._tar, f": an entry of more than {MAX_READ_BYTES} bytes is read at once (a tar header that "
                                 "large; no real step's tarball comes near this)")
        if end > self.cap:
            raise _no(self._tar, f": it expands to more than {MAX_TOTAL_BYTES} bytes (the limit for all tarballs)")

    def read(self, size: int = -1) -> bytes:
        self._check(self._f.tell() + (size or 0), -1 if size is None else size)
        self.last = self._f.read(size)
        return self.last

    def seek(self, offset: int, whence: int = 0) -> int:
        self._check(offset if whence == 0 else 0)
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()


def _record_rel(rel: str) -> Path | None:
    """A run record's path below its results root (``results/``, or ``results/smoke/``); None for other files."""
    from asynctm.store import SEED_FILE

    p = PurePosixPath(rel)
    if p.parts[0] != "results" or not SEED_FILE.match(p.name):
        return None
    inner = p.relative_to("results")
    return Path(inner.relative_to("smoke") if inner.parts[0] == "smoke" else inner)


class _Plan:
    """What the tarballs hold, checked member by member as they stream into the staging folder."""

    def __init__(self, staging: Path):
        self.staging, self.total = staging, 0
        self.files: dict[str, Path] = {}  # rel -> the tarball that holds it
        self.dirs: dict[str, Path] = {}  # folders that members name or imply -> the first tarball that does
        self.left_out: list[tuple[str, Path]] = []  # a later tarball's different copy of a file

    def member(self, tar: Path, m: tarfile.TarInfo) -> tuple[str | None, bool]:
        """A member's checked path (None for a folder), and whether an earlier tarball holds that file already."""
        p = PurePosixPath(m.name)
        if p.is_absolute() or m.name.startswith(("/", "\\")) or ".." in p.parts or "\\" in m.name:
            raise _no(tar, f": member {m.name!r} points outside the tree")
        rel = p.as_posix().removeprefix("./")
        if m.isdir():
            if rel in self.files:
                raise _no(tar, f": member {rel!r} is a folder, but {self.files[rel].name} holds a file of that name")
            self.dirs.setdefault(rel, tar)
            return None, False
        if not m.isreg() or m.issparse():
            raise _no(tar, f": member {m.name!r} is a {'link' if m.issym() or m.islnk() else 'special file'}; only "
                           "plain files are accepted")
        if not any(rel.startswith(a + "/") for a in ALLOWED):
            raise _no(tar, f": member {m.name!r} is outside {' and '.join(a + '/' for a in ALLOWED)}")
        if not 0 <= m.size <= MAX_MEMBER_BYTES:
            raise _no(tar, f": member {rel!r} claims {m.size} bytes, outside the limit of 0 to {MAX_MEMBER_BYTES} a "
                           "file (no record or benchmark comes near it)")
        if rel in self.files:
            if self.files[rel] == tar:
                raise _no(tar, f": member {rel!r} is twice in it")
            return rel, True
        if rel in self.dirs:
            raise _no(tar, f": member {rel!r} is a file, but {self.dirs[rel].name} puts a folder there")
        for parent in (q.as_posix() for q in PurePosixPath(rel).parents[:-1]):
            if parent in self.files:
                raise _no(tar, f": member {rel!r} needs a folder {parent!r}, but {self.files[parent].name} holds a "
                               "file of that name")
        if self.total + m.size > MAX_TOTAL_BYTES:
            raise _no(tar, f": member {rel!r} brings the tarballs above {MAX_TOTAL_BYTES} bytes together",
                      "unpack the tarballs one at a time (python -m gpu_host unpack <one .tar.gz>)")
        self.total += m.size
        self.files[rel] = tar
        for parent in PurePosixPath(rel).parents[:-1]:
            self.dirs.setdefault(parent.as_posix(), tar)
        return rel, False


def _copy(tar: Path, rel: str, src, dest: Path, size: int) -> None:
    """Copy one member's ``size`` bytes from ``src`` to ``dest`` in chunks, never more than declared."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(dest, "xb") as out:
        while written < size:
            try:
                chunk = src.read(min(CHUNK_BYTES, size - written))
            except _READ_ERRORS as exc:
                raise _damaged(tar, exc) from None
            if not chunk:
                raise _no(tar, f" is truncated: member {rel!r} ends after {written} of its {size} bytes")
            out.write(chunk)
            written += len(chunk)
        out.flush()
        os.fsync(out.fileno())  # on the disk before the rename says it is finished
    os.chmod(dest, 0o644)


def _stage_tarball(tar_path: Path, plan: _Plan) -> None:
    """Stream one tarball's files into the staging folder, checking each member before reading its data."""
    with open(tar_path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
        stream = _Capped(gz, tar_path, cap=MAX_TOTAL_BYTES - plan.total + MAX_MEMBERS * tarfile.BLOCKSIZE)
        try:
            tar = tarfile.open(fileobj=stream, mode="r:")  # noqa: SIM115 (closed by the with below)
        except _READ_ERRORS as exc:
            raise _damaged(tar_path, exc) from None
        with tar:
            count = 0
            while True:
                try:
                    member = tar.next()
                    if member is None:  # the tarfile module also stops quietly at a cut or damaged header
                        break
                    tar.members = []  # the tarfile module keeps every header it read; nothing here needs them
                    count += 1
                    if count > MAX_MEMBERS:
                        raise _no(tar_path, f" holds more than {MAX_MEMBERS} entries (no step packs that many)")
                    rel, again = plan.member(tar_path, member)
                    src = tar.extractfile(member) if rel else None
                except _READ_ERRORS as exc:
                    raise _damaged(tar_path, exc) from None
                if rel is None:
                    continue
                if not again:
                    _copy(tar_path, rel, src, plan.staging / rel, member.size)
                    continue
                copy = plan.staging / ".again"  # two steps of one lease packed the same run: the first copy stays
                _copy(tar_path, rel, src, copy, member.size)
                if copy.read_bytes() != (plan.staging / rel).read_bytes():
                    plan.left_out.append((rel, tar_path))
                copy.unlink()
            if len(stream.last) < tarfile.BLOCKSIZE:
                raise _no(tar_path, f" is truncated (the tar archive ends after {count} entries, without its end "
                                    "marker)")
            if stream.last != tarfile.NUL * tarfile.BLOCKSIZE:
                raise _no(tar_path, f" is not a tar archive or a damaged one (a damaged header after {count} entries)")
            try:  # to the end of the compressed stream: its length and checksum, after the tar's last entry
                while stream.read(CHUNK_BYTES):
                    pass
            except _READ_ERRORS as exc:
                raise _damaged(tar_path, exc) from None


def _check_json(tar: Path, rel: str, staged: Path) -> None:
    """A JSON member must be one JSON object; a run record must also pass the record gate."""
    from asynctm.store import FIX_RERUN, RecordError, check_record

    try:
        obj = json.loads(staged.read_bytes())  # at most MAX_MEMBER_BYTES: checked while it was staged
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno} column {exc.colno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        raise _no(tar, f": {rel} is not valid JSON{where}") from None
    if not isinstance(obj, dict):
        raise _no(tar, f": {rel} holds a JSON {type(obj).__name__}, not an object")
    if (inner := _record_rel(rel)) is not None:
        try:
            check_record(obj, inner, path=PurePosixPath(rel))  # no config: the record and its path
        except RecordError as exc:  # not in results/ yet: its run is redone on the GPU host, not by the local rule
            message = str(exc).replace(FIX_RERUN, "run the step again on the GPU host and unpack its new tarball")
            raise UnpackError(f"{tar.name}: {message} (nothing was written)") from None


def _check_target(into: Path, rel: str, staged: Path, tar_path: Path, overwrite: bool) -> bool:
    """Whether the staged ``rel`` is to be written: False where the tree holds an identical file; refused where the
    tree has a link, a file where a folder is needed, a folder where the file goes, or (without ``overwrite``) a
    different file."""
    target = into / rel
    for p in [*(into / q for q in reversed(PurePosixPath(rel).parents[:-1])), target]:
        if p.is_symlink():
            raise UnpackError(f"{p} is a link; refusing to write through it (nothing was written)")
        if p != target and p.exists() and not p.is_dir():
            raise _no(tar_path, f": member {rel!r} needs a folder where {p} is a file", "move that file away and "
                                                                                      "unpack again")
    if target.is_dir():
        raise _no(tar_path, f": member {rel!r} is a file where {target} is a folder", "move that folder away and "
                                                                                      "unpack again")
    if not target.exists():
        return True
    if filecmp.cmp(target, staged, shallow=False):
        return False
    if not overwrite:
        raise UnpackError(f"{target} exists and differs from {tar_path.name}'s copy; nothing was written (pass "
                          "--overwrite to replace it)")
    return True


def unpack(folder: str | Path, into: str | Path | None = None, overwrite: bool = False, say=print) -> list[str]:
    """Unpack every ``*.tar.gz`` in ``folder`` (or that one file) into ``into`` (default: the checkout), all or
    nothing; return the files written (relative to ``into``; identical files already there are not)."""
    folder, into = Path(folder), Path(into) if into else REPO
    tars = [folder] if folder.is_file() else sorted(folder.glob("*.tar.gz"))
    if not tars:
        raise UnpackError(f"{folder}: no .tar.gz files here (the step's files from the device machine)")
    created = [p for p in [into, *into.parents] if not p.exists()]  # removed again if nothing is written
    try:
        into.mkdir(parents=True, exist_ok=True)
        remove_stale(into, STAGING)  # what a killed unpack left behind
        staging = make_staging_dir(into, STAGING)
    except OSError as exc:
        raise UnpackError(f"{into}: cannot make a staging folder there ({exc.strerror}); nothing was written") from None
    plan = _Plan(staging)
    try:
        try:
            for tar_path in tars:
                _stage_tarball(tar_path, plan)
            for rel, tar_path in sorted(plan.files.items()):
                if rel.endswith(".json"):
                    _check_json(tar_path, rel, staging / rel)
            writes = [rel for rel, tar_path in sorted(plan.files.items())
                      if _check_target(into, rel, staging / rel, tar_path, overwrite)]
        except OSError as exc:
            fix = "free some space and unpack again" if is_disk_full(exc) else "fix that and unpack again"
            raise UnpackError(f"{getattr(exc, 'filename', None) or into}: {exc.strerror or exc} while staging the "
                              f"tarballs; nothing was written: {fix}") from None
        for done, rel in enumerate(writes):
            try:
                (into / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, into / rel)
            except OSError as exc:  # everything was checked: only the file system itself can fail here
                raise UnpackError(f"{into / rel}: {exc.strerror or exc} while moving the checked files into place "
                                  f"({done} of {len(writes)} written, each complete): fix that and unpack again "
                                  "(files already there and identical are skipped)") from None
        for parent in sorted({(into / rel).parent for rel in writes}):
            fsync_dir(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for d in created:  # the target folder, if this call made it and nothing else is in it
            try:
                d.rmdir()
            except OSError:
                break
        raise
    shutil.rmtree(staging, ignore_errors=True)
    say(f"unpacked {len(writes)} file(s) from {len(tars)} tarball(s) into {into} ({len(plan.files) - len(writes)} "
        "already there); now: snakemake --cores all tables figures --config run_missing=false")
    if plan.left_out:
        say(f"left out {len(plan.left_out)} later copies that differ from an earlier tarball's (the same run made by "
            "two steps; the first tarball's copy was kept): " + ", ".join(f"{r} ({t.name})" for r, t in plan.left_out))
    return writes
