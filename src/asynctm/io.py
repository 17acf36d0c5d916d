"""Atomic file writes: every output goes to a temporary sibling and is renamed into place when complete,
so a failed or interrupted step never leaves a file that looks finished."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w"):
    """``with atomic_open(path, "wb") as fh: ...`` writes ``path`` all at once or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the finished file is an ordinary one
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, obj, sort_keys: bool = True) -> None:
    """Write ``obj`` as indented JSON (a trailing newline, no timestamps added) atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(json.dumps(obj, indent=1, sort_keys=sort_keys) + "\n")
