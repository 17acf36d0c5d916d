"""Atomic file writes and private staging folders.

Every output goes to a temporary sibling, is flushed to the disk and renamed into place when complete (then
the folder's entry is flushed too), so a failed or interrupted step, or a power cut, never leaves a file that
looks finished. Staging folders carry their owner's host and process id in their name, so the next run can
remove what a killed process left behind without touching a folder that a live process is still filling.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

# A staging folder whose owner cannot be checked (another host on a shared disk, or a name without an
# owner) counts as abandoned once it has not changed for this long.
STALE_AFTER_S = 24 * 3600


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename into it) to the disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:  # some file systems refuse fsync on a folder; the rename itself still happened
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w"):
    """``with atomic_open(path, "wb") as fh: ...`` writes ``path`` all at once or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())  # the content is on the disk before the name says it is finished
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the finished file is an ordinary one
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` as UTF-8 (newlines as given) atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj, sort_keys: bool = True) -> None:
    """Write ``obj`` as indented JSON (a trailing newline, no timestamps added) atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=sort_keys) + "\n")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


# --- staging folders ------------------------------------------------------------------------------------------


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def staging_prefix(kind: str) -> str:
    """The name prefix of a staging folder of this process, e.g. ``.fetch-<host>-<pid>-``."""
    return f"{kind}{_host()}-{os.getpid()}-"


def make_staging_dir(parent: str | os.PathLike, kind: str) -> Path:
    """A fresh private folder ``<parent>/<kind><host>-<pid>-<random>`` (see :func:`remove_stale`)."""
    return Path(tempfile.mkdtemp(prefix=staging_prefix(kind), dir=parent))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:  # a killed process whose parent has not reaped it yet still answers kill(pid, 0): a zombie
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _abandoned(path: Path, kind: str, max_age_s: float) -> bool:
    m = re.fullmatch(r"(?P<host>[A-Za-z0-9._]+)-(?P<pid>\d+)-[^-]+", path.name[len(kind):])
    if m and m["host"] == _host():
        return int(m["pid"]) != os.getpid() and not _pid_alive(int(m["pid"]))
    try:
        return time.time() - path.lstat().st_mtime > max_age_s
    except FileNotFoundError:
        return False


def remove_stale(parent: str | os.PathLike, kind: str, max_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove the staging folders ``<parent>/<kind>*`` that killed processes left behind; return them.

    A folder of this host is removed when the process named in it is gone; one of another host (a shared
    disk) or without an owner in its name when it has not changed for ``max_age_s`` seconds.
    """
    removed = []
    try:
        candidates = [p for p in Path(parent).iterdir() if p.name.startswith(kind)]
    except OSError:
        return removed
    for p in candidates:
        if p.is_dir() and not p.is_symlink() and _abandoned(p, kind, max_age_s):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed
