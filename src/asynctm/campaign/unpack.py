"""``unpack``: put what the GPU machine sent back (``<step>.tar.gz`` files) into ``results/`` and
``benchmarks/results/``, all of it or nothing.

1. Every tarball is read as a stream, member by member, into a private staging folder beside the target
   (``<into>/.unpack-staging-<host>-<pid>-<random>``). Each member is checked before its data is read: only
   regular files and folders, no absolute paths, no ``..``, no links, devices or sparse files, only below
   ``results/`` or ``benchmarks/results/``, each name once across all the tarballs, no file where another member
   puts a folder (or the other way round), at most :data:`MAX_MEMBER_BYTES` a file and :data:`MAX_TOTAL_BYTES`
   all together. Data is copied in chunks with the bound enforced; the compressed stream is read to its end, so
   a truncated or damaged tarball is refused even where the damage lies past the last member.
2. The staged files are checked: every JSON file must parse as a JSON object, and every run record
   (``results/**/seed*.json``) must pass the record gate (:func:`asynctm.store.check_record`). Against the
   target: an existing file is left alone when identical and refused when different (``--overwrite`` replaces
   it); a file where a folder stands (or a folder where a file stands) and links on the way are refused.
3. Only then is each file renamed into place. On any refusal the staging folder is removed and nothing is
   written; the one-line message names the tarball, the member and the fix.
"""

from __future__ import annotations

import errno
import filecmp
import fnmatch
import gzip
import json
import os
import shutil
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from ..io import fsync_dir, make_staging_dir, remove_stale
from ..provenance import REPO

ALLOWED = ("results", "benchmarks/results")

# The bounds on what a tarball may hold. Real members are run records, their logs and novelty scores
# (``results/``) and benchmark records, tables and campaign manifests (``benchmarks/results/``): each well under
# a megabyte (a scores file holds one float per test example and class), and everything committed under both
# folders together is tens of megabytes. A member above 64 MiB, or tarballs above 2 GiB together, is no result
# but a broken or hostile archive (a few megabytes of gzip can expand to gigabytes of zeros): refused before
# its data is read. tests/unit/test_faults_unpack.py checks that every committed file stays far below the first.
MAX_MEMBER_BYTES = 64 * 2**20
MAX_TOTAL_BYTES = 2 * 2**30
# Entries (files, folders, tar's own extension headers) in one tarball: a step packs a few thousand at most.
MAX_MEMBERS = 200_000
# A member's data is copied in chunks of this size.
CHUNK_BYTES = 1 * 2**20
# The largest single read of the decompressed stream: above the copy chunk (and the tarfile module's buffer),
# and the bound on a tar extension header (a long name, pax attributes: a few hundred bytes in a real tarball)
# that the tarfile module reads whole into memory.
MAX_READ_BYTES = 4 * 2**20
STAGING = ".unpack-staging-"
AGAIN = "ask the GPU host for the step's tarball again"


class UnpackError(ValueError):
    """A tarball that cannot be unpacked safely (the message names the member and the problem)."""


class _Capped:
    """The decompressed stream of a tarball as the tarfile module reads it: no single read above
    :data:`MAX_READ_BYTES`, no position beyond ``cap`` (reads and forward seeks alike decompress)."""

    def __init__(self, fileobj, tar_name: str, cap: int):
        self._f, self._tar, self.cap = fileobj, tar_name, cap
        self.last = b""  # what the last read returned: after the tar's last entry, its end marker

    def _over(self, what: str) -> UnpackError:
        return UnpackError(f"{self._tar}: {what}; nothing was written (no real step's tarball comes near this: "
                           f"{AGAIN})")

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > MAX_READ_BYTES:
            raise self._over(f"an entry of more than {MAX_READ_BYTES} bytes is read at once (a tar header that large)")
        if self._f.tell() + size > self.cap:
            raise self._over(f"it expands to more than {MAX_TOTAL_BYTES} bytes (the limit for all tarballs together)")
        self.last = self._f.read(size)
        return self.last

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0 and offset > self.cap:
            raise self._over(f"it expands to more than {MAX_TOTAL_BYTES} bytes (the limit for all tarballs together)")
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()


def _damaged(tar_path: Path, exc: BaseException) -> UnpackError:
    """The one line for an archive that cannot be read: the tarball, what is wrong, the fix."""
    if isinstance(exc, gzip.BadGzipFile) and "gzipped" in str(exc):
        what = "is not a gzip file"
    elif isinstance(exc, EOFError):
        what = "is truncated (the compressed stream ends early)"
    elif isinstance(exc, (zlib.error, gzip.BadGzipFile)):
        what = f"holds damaged compressed data ({exc})"
    else:
        what = f"is not a tar archive or a damaged one ({exc})"
    return UnpackError(f"{tar_path.name} {what}; nothing was written: {AGAIN}")


_READ_ERRORS = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


def _check(tar_path: Path, member: tarfile.TarInfo) -> str | None:
    """The member's checked relative path (None for folders, which are implied by files)."""
    name = member.name
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith(("/", "\\")) or ".." in p.parts or "\\" in name:
        raise UnpackError(f"{tar_path}: member {name!r} points outside the tree; refusing the whole tarball")
    if member.isdir():
        return None
    if not member.isreg() or member.issparse():
        kind = "link" if (member.issym() or member.islnk()) else "special file"
        raise UnpackError(f"{tar_path}: member {name!r} is a {kind}; only plain files are accepted")
    rel = p.as_posix().removeprefix("./")
    if not any(rel.startswith(a + "/") for a in ALLOWED):
        raise UnpackError(f"{tar_path}: member {name!r} is outside {' and '.join(a + '/' for a in ALLOWED)}")
    return rel


def _is_record(rel: str) -> bool:
    """Whether ``rel`` (relative to the tree) is a run record: ``results/**/seed*.json``."""
    return rel.startswith("results/") and fnmatch.fnmatchcase(PurePosixPath(rel).name, "seed*.json")


def _record_rel(rel: str) -> Path:
    """A record's path relative to its results root (``results/``, or ``results/smoke/`` at smoke scale)."""
    inner = PurePosixPath(rel).relative_to("results")
    if inner.parts[0] == "smoke":
        inner = inner.relative_to("smoke")
    return Path(inner)


class _Plan:
    """What the tarballs hold, checked member by member as they stream into the staging folder."""

    def __init__(self, staging: Path):
        self.staging = staging
        self.files: dict[str, Path] = {}  # rel -> the tarball that holds it
        self.dirs: dict[str, Path] = {}  # folders that members name or imply -> the first tarball that does
        self.total = 0
        self.left_out: list[tuple[str, Path]] = []  # (rel, tarball): a later tarball's different copy of a file

    def add_dir(self, tar_path: Path, name: str) -> None:
        rel = PurePosixPath(name).as_posix().removeprefix("./")
        if rel in self.files:
            raise UnpackError(f"{tar_path.name}: member {rel!r} is a folder, but {self.files[rel].name} holds a file "
                              f"of that name; nothing was written: {AGAIN}")
        self.dirs.setdefault(rel, tar_path)

    def add_file(self, tar_path: Path, rel: str, size: int) -> bool:
        """Check a member before its data is read; True where another tarball already holds that file: two steps
        of one lease packed it (a sweep point that is also the main setting). The first tarball's copy is kept, once;
        a different copy is left out and named in the summary line (the caller compares the two)."""
        if rel in self.files:
            if self.files[rel] == tar_path:
                raise UnpackError(f"{tar_path.name}: member {rel!r} is twice in it; nothing was written: {AGAIN}")
            if not 0 <= size <= MAX_MEMBER_BYTES:
                raise UnpackError(f"{tar_path.name}: member {rel!r} claims {size} bytes, outside the limit of "
                                  f"0 to {MAX_MEMBER_BYTES} a file; nothing was written: {AGAIN}")
            return True
        if rel in self.dirs:
            raise UnpackError(f"{tar_path.name}: member {rel!r} is a file, but {self.dirs[rel].name} puts a folder "
                              f"there; nothing was written: {AGAIN}")
        for parent in PurePosixPath(rel).parents[:-1]:
            if parent.as_posix() in self.files:
                raise UnpackError(f"{tar_path.name}: member {rel!r} needs a folder {parent.as_posix()!r}, but "
                                  f"{self.files[parent.as_posix()].name} holds a file of that name; nothing was "
                                  f"written: {AGAIN}")
        if not 0 <= size <= MAX_MEMBER_BYTES:
            raise UnpackError(f"{tar_path.name}: member {rel!r} claims {size} bytes, outside the limit of "
                              f"0 to {MAX_MEMBER_BYTES} a file (no record or benchmark comes near it); nothing was "
                              f"written: {AGAIN}")
        if self.total + size > MAX_TOTAL_BYTES:
            raise UnpackError(f"{tar_path.name}: member {rel!r} brings the tarballs above {MAX_TOTAL_BYTES} bytes "
                              "together (the limit: far above any step's results); nothing was written: unpack the "
                              "tarballs one at a time (python -m asynctm.campaign unpack <one .tar.gz>)")
        self.total += size
        self.files[rel] = tar_path
        for parent in PurePosixPath(rel).parents[:-1]:
            self.dirs.setdefault(parent.as_posix(), tar_path)
        return False


def _copy(tar_path: Path, rel: str, src, dest: Path, size: int) -> None:
    """Copy one member's ``size`` bytes from ``src`` to ``dest`` in chunks, never more than declared."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(dest, "xb") as out:
        while written < size:
            try:
                chunk = src.read(min(CHUNK_BYTES, size - written))
            except _READ_ERRORS as exc:
                raise _damaged(tar_path, exc) from None
            if not chunk:
                raise UnpackError(f"{tar_path.name} is truncated: member {rel!r} ends after {written} of its {size} "
                                  f"bytes; nothing was written: {AGAIN}")
            out.write(chunk)
            written += len(chunk)
        out.flush()
        os.fsync(out.fileno())  # on the disk before the rename says it is finished
    os.chmod(dest, 0o644)


def _stage_tarball(tar_path: Path, plan: _Plan) -> None:
    """Stream one tarball's files into the staging folder, checking each member before reading its data."""
    with open(tar_path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
        stream = _Capped(gz, tar_path.name, cap=MAX_TOTAL_BYTES - plan.total + MAX_MEMBERS * tarfile.BLOCKSIZE)
        try:
            tar = tarfile.open(fileobj=stream, mode="r:")  # noqa: SIM115 (closed by the with below)
        except _READ_ERRORS as exc:
            raise _damaged(tar_path, exc) from None
        with tar:
            count = 0
            while True:
                try:
                    member = tar.next()
                except _READ_ERRORS as exc:
                    raise _damaged(tar_path, exc) from None
                if member is None:  # the tarfile module also stops quietly at a cut or damaged header
                    if len(stream.last) < tarfile.BLOCKSIZE:
                        raise UnpackError(f"{tar_path.name} is truncated (the tar archive ends after {count} entries, "
                                          f"without its end marker); nothing was written: {AGAIN}")
                    if stream.last != tarfile.NUL * tarfile.BLOCKSIZE:
                        raise UnpackError(f"{tar_path.name} is not a tar archive or a damaged one (a damaged header "
                                          f"after {count} entries); nothing was written: {AGAIN}")
                    break
                count += 1
                if count > MAX_MEMBERS:
                    raise UnpackError(f"{tar_path.name} holds more than {MAX_MEMBERS} entries (no step packs that "
                                      f"many); nothing was written: {AGAIN}")
                tar.members = []  # the tarfile module keeps every header it read; nothing here needs them again
                rel = _check(tar_path, member)
                if rel is None:
                    plan.add_dir(tar_path, member.name)
                    continue
                again = plan.add_file(tar_path, rel, member.size)
                try:
                    src = tar.extractfile(member)
                except _READ_ERRORS as exc:
                    raise _damaged(tar_path, exc) from None
                if not again:
                    _copy(tar_path, rel, src, plan.staging / rel, member.size)
                    continue
                copy = plan.staging / ".again"  # in the staging folder, never moved into the tree (not a planned file)
                _copy(tar_path, rel, src, copy, member.size)
                same = copy.read_bytes() == (plan.staging / rel).read_bytes()
                copy.unlink()
                if not same:  # two steps of one lease ran the same run: the first tarball's copy stays, and it is said
                    plan.left_out.append((rel, tar_path))
            try:  # to the end of the compressed stream: its length and checksum, after the tar's last entry
                while stream.read(CHUNK_BYTES):
                    pass
            except _READ_ERRORS as exc:
                raise _damaged(tar_path, exc) from None


def _check_json(tar_path: Path, rel: str, staged: Path) -> None:
    """A JSON member must be one JSON object; a run record must also pass the record gate."""
    try:
        obj = json.loads(staged.read_bytes())  # at most MAX_MEMBER_BYTES: checked while it was staged
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno} column {exc.colno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UnpackError(f"{tar_path.name}: {rel} is not valid JSON{where}; nothing was written: {AGAIN}") from None
    if not isinstance(obj, dict):
        raise UnpackError(f"{tar_path.name}: {rel} holds a JSON {type(obj).__name__}, not an object; nothing was "
                          f"written: {AGAIN}")
    if _is_record(rel):
        from ..store import FIX_RERUN, RecordError, check_record

        try:
            check_record(obj, _record_rel(rel), path=PurePosixPath(rel))  # config None: the record and its path
        except RecordError as exc:
            # the record is not in results/ yet: its run is redone on the GPU host, not by the local rule
            message = str(exc).replace(FIX_RERUN, "run the step again on the GPU host and unpack its new tarball")
            raise UnpackError(f"{tar_path.name}: {message} (nothing was written)") from None


def _check_target(into: Path, rel: str, staged: Path, tar_path: Path, overwrite: bool) -> bool:
    """Whether the staged ``rel`` is to be written: False when the tree holds an identical file already;
    refused when the tree has a link, a file where a folder is needed, a folder where the file goes, or
    (without ``overwrite``) a different file."""
    target = into / rel
    for parent in reversed(PurePosixPath(rel).parents[:-1]):
        p = into / parent
        if p.is_symlink():
            raise UnpackError(f"{p} is a link; refusing to write through it (nothing was written)")
        if p.exists() and not p.is_dir():
            raise UnpackError(f"{tar_path.name}: member {rel!r} needs a folder where {p} is a file; nothing was "
                              "written: move that file away and unpack again")
    if target.is_symlink():
        raise UnpackError(f"{target} is a link; refusing to write through it (nothing was written)")
    if target.is_dir():
        raise UnpackError(f"{tar_path.name}: member {rel!r} is a file where {target} is a folder; nothing was "
                          "written: move that folder away and unpack again")
    if target.exists():
        if filecmp.cmp(target, staged, shallow=False):
            return False
        if not overwrite:
            raise UnpackError(f"{target} exists and differs from {tar_path.name}'s copy; nothing was written "
                              "(pass --overwrite to replace it)")
    return True


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, outermost first."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing[::-1]


def unpack(folder: str | Path, into: str | Path | None = None, overwrite: bool = False, say=print) -> list[str]:
    """Unpack every ``*.tar.gz`` in ``folder`` (or that one file) into ``into`` (default: the checkout), all or
    nothing; return the files written (relative to ``into``; identical files already there are not)."""
    folder, into = Path(folder), Path(into) if into else REPO
    tars = [folder] if folder.is_file() else sorted(folder.glob("*.tar.gz"))
    if not tars:
        raise UnpackError(f"{folder}: no .tar.gz files here (the step's files from the device machine)")
    created = _missing_dirs(into)
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
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise UnpackError(f"{into}: the disk is full while staging the tarballs; nothing was written: free "
                                  "some space and unpack again") from None
            raise UnpackError(f"{getattr(exc, 'filename', None) or into}: {exc.strerror or exc}; nothing was "
                              "written") from None
        for done, rel in enumerate(writes):
            target = into / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, target)
            except OSError as exc:  # everything was checked: only the file system itself can fail here
                raise UnpackError(f"{target}: {exc.strerror or exc} while moving the checked files into place "
                                  f"({done} of {len(writes)} written, each complete): fix that and unpack again "
                                  "(files already there and identical are skipped)") from None
        for parent in sorted({(into / rel).parent for rel in writes}):
            fsync_dir(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for d in reversed(created):  # the target folder, if this call made it and nothing else is in it
            try:
                d.rmdir()
            except OSError:
                break
        raise
    shutil.rmtree(staging, ignore_errors=True)
    say(f"unpacked {len(writes)} file(s) from {len(tars)} tarball(s) into {into} "
        f"({len(plan.files) - len(writes)} already there); now: snakemake --cores all tables figures "
        "--config run_missing=false")
    if plan.left_out:
        say(f"left out {len(plan.left_out)} later copies that differ from an earlier tarball's (the same run made by "
            "two steps; the first tarball's copy was kept): "
            + ", ".join(f"{rel} ({tar.name})" for rel, tar in plan.left_out))
    return writes
