"""``unpack``: put what the GPU machine sent back (``<step>.tar.gz`` files) into ``results/`` and
``benchmarks/results/``, all of it or nothing.

1. Every tarball is decompressed to its end (a damaged stream is refused even past the last member) into a private
   staging folder inside the target (``io.make_staging_dir``), at most :data:`MAX_TOTAL_BYTES` for all of them (a
   few megabytes of gzip can expand to gigabytes). Its members are checked before one is extracted: only plain files
   and folders below ``results/`` or ``benchmarks/results/`` (no absolute paths, ``..``, links or devices), each name
   once across the tarballs, no file where another member puts a folder, at most :data:`MAX_MEMBER_BYTES` a file,
   the archive's end marker after the last; then tarfile's ``data`` filter extracts them.
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
MAX_TOTAL_BYTES = 2 * 2**30  # the tarballs decompressed, together
CHUNK_BYTES = 1 * 2**20
STAGING = ".unpack-staging-"
AGAIN = "ask the GPU host for the step's tarball again"


class UnpackError(ValueError):
    """A tarball that cannot be unpacked safely (the message names the member and the problem)."""


def _no(tar: Path, what: str, fix: str = AGAIN) -> UnpackError:
    return UnpackError(f"{tar.name}{what}; nothing was written: {fix}")


def _record_rel(rel: str) -> Path | None:
    """A run record's path below its results root (``results/``, or ``results/smoke/``); None for other files."""
    from asynctm.store import SEED_FILE

    p = PurePosixPath(rel)
    if p.parts[0] != "results" or not SEED_FILE.match(p.name):
        return None
    inner = p.relative_to("results")
    return Path(inner.relative_to("smoke") if inner.parts[0] == "smoke" else inner)


class _Plan:
    """What the tarballs hold, checked member by member before any is extracted into the staging folder."""

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
        self.files[rel] = tar
        for parent in PurePosixPath(rel).parents[:-1]:
            self.dirs.setdefault(parent.as_posix(), tar)
        return rel, False

    def decompress(self, tar: Path, dest: Path) -> None:
        """``tar``'s gzip stream, to its end (its length and checksum), into ``dest``, within the total limit."""
        try:
            with gzip.open(tar) as gz, open(dest, "wb") as out:
                while chunk := gz.read(CHUNK_BYTES):
                    self.total += len(chunk)
                    if self.total > MAX_TOTAL_BYTES:
                        raise _no(tar, f": the tarballs expand to more than {MAX_TOTAL_BYTES} bytes together",
                                  "unpack the tarballs one at a time (python -m gpu_host unpack <one .tar.gz>)")
                    out.write(chunk)
        except EOFError:
            raise _no(tar, " is truncated (the compressed stream ends early)") from None
        except (zlib.error, gzip.BadGzipFile) as exc:
            raise _no(tar, " is not a gzip file" if "gzipped" in str(exc) else
                      f" holds damaged compressed data ({exc})") from None

    def stage(self, tar_path: Path) -> None:
        """Check one tarball's members and extract its files into the staging folder."""
        plain = self.staging / ".tar"
        self.decompress(tar_path, plain)
        try:
            with tarfile.open(plain, "r:") as tar:
                checked = []  # each member checked as its header is read, before the next (its data unread)
                while (m := tar.next()) is not None:  # the tarfile module stops quietly at a cut or damaged header
                    checked.append((m, *self.member(tar_path, m)))
                with open(plain, "rb") as fh:
                    fh.seek(tar.offset)
                    end = fh.read(tarfile.BLOCKSIZE)
                if len(end) < tarfile.BLOCKSIZE:
                    raise _no(tar_path, f" is truncated (the tar archive ends after {len(checked)} entries, without "
                                        "its end marker)")
                if end != tarfile.NUL * tarfile.BLOCKSIZE:
                    raise _no(tar_path, f" is not a tar archive or a damaged one (a damaged header after "
                                        f"{len(checked)} entries)")
                for m, rel, again in checked:
                    if rel is None:
                        continue
                    if not again:
                        tar.extract(m, self.staging, filter=lambda m, path: tarfile.data_filter(m, path).replace(
                            mode=0o644))
                    elif tar.extractfile(m).read() != (self.staging / rel).read_bytes():
                        self.left_out.append((rel, tar_path))  # two steps of a lease packed one run: the first stays
        except tarfile.TarError as exc:
            raise _no(tar_path, f" is not a tar archive or a damaged one ({exc})") from None
        plain.unlink()


def _check_json(tar: Path, rel: str, staged: Path) -> None:
    """A JSON member must be one JSON object; a run record must also pass the record gate."""
    from asynctm.store import FIX_RERUN, RecordError, check_record

    try:
        obj = json.loads(staged.read_bytes())  # at most MAX_MEMBER_BYTES: checked before it was staged
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
                plan.stage(tar_path)
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
                with open(staging / rel, "rb") as fh:
                    os.fsync(fh.fileno())  # on the disk before the rename says it is finished
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
