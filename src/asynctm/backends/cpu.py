"""CPU build: ``kernels/tm.cu`` compiled by the host C++ compiler with OpenMP, loaded with ctypes.

The shared library is built at first use and cached by the hash of the full kernel text, the compiler
command and the CPU, in ``$ASYNCTM_CACHE_DIR`` (default ``~/.cache/asynctm``). Builds are written to a
temporary name and renamed, so parallel jobs never load a half-written library. A complete build also
writes the library's sha256 next to it (``tm_<key>.so.sha256``), checked before every first load in a
process: a truncated, damaged or empty library (a full disk, a crash, a power cut) is rebuilt with a
one-line notice instead of crashing Python in ``dlopen``. Build folders of killed compiles are removed.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np

from ..affinity import one_bound_cpu, process_cpus
from ..encoding import unpack_literals
from ..io import is_disk_full, make_staging_dir, remove_stale
from . import (BackendUnavailableError, FeedbackEvents, KernelConfig, check_training_arrays, kernel_source, s_mask_pool,
               source_hash)

DEFAULT_FLAGS = "-O3 -march=native -fopenmp -fPIC -shared -std=c++17 -x c++"


def cache_dir() -> Path:
    root = os.environ.get("ASYNCTM_CACHE_DIR")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "asynctm"


def cpuinfo_field(name: str) -> str | None:
    """The first value of ``name`` in ``/proc/cpuinfo`` (e.g. ``"model name"``, ``"flags"``), if any."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """The CPU's model name, else what ``platform`` knows."""
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


def _cpu_signature() -> str:
    # -march=native builds are only valid on the same kind of CPU: key the cache on it.
    return "\0".join([platform.machine(), cpu_model(), cpuinfo_field("flags") or cpuinfo_field("Features") or ""])


def compiler_command() -> list[str]:
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise BackendUnavailableError(
            f"the CPU backend needs a C++ compiler with OpenMP; '{cxx}' was not found. Install g++ "
            "(e.g. `apt-get install g++`) or set CXX to one.")
    return [cxx, *shlex.split(os.environ.get("ASYNCTM_CPU_FLAGS", DEFAULT_FLAGS))]


_BUILD = ".build-"  # build folders in the cache (asynctm.io.make_staging_dir: host and pid in the name)
_swept: set = set()
logger = logging.getLogger("asynctm")


def digest_path(lib: Path) -> Path:
    """Where the sha256 of a cached library is kept (written after a complete build)."""
    return lib.with_name(lib.name + ".sha256")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def cache_entry_ok(lib: Path) -> bool:
    """Whether ``lib`` is a complete build: its sha256 is the one written when it was built."""
    try:
        want = digest_path(lib).read_text().strip()
        return len(want) == 64 and _sha256(lib) == want
    except OSError:
        return False


def build_library(cfg: KernelConfig) -> Path:
    source = kernel_source(cfg)
    cmd = compiler_command()
    key = source_hash(source + "\0" + " ".join(cmd) + "\0" + _cpu_signature())
    out_dir = cache_dir() / "cpu"
    lib = out_dir / f"tm_{key}.so"
    if out_dir not in _swept and out_dir.is_dir():
        remove_stale(out_dir, _BUILD)  # what killed compiles left, once per process
        _swept.add(out_dir)
    if lib in _libraries or cache_entry_ok(lib):
        return lib
    if lib.exists():
        why = ("does not match the sha256 recorded by its build" if digest_path(lib).exists()
               else "has no recorded sha256 (an interrupted or older build)")
        logger.warning("asynctm: the cached CPU kernel library %s %s; rebuilding it", lib, why)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = make_staging_dir(out_dir, _BUILD)
        try:
            src = tmp / "tm.cu"
            src.write_text(source)
            tmp_lib = tmp / "tm.so"
            proc = subprocess.run([*cmd, str(src), "-o", str(tmp_lib)], capture_output=True, text=True)
            if proc.returncode != 0:
                if "No space left on device" in proc.stderr:
                    raise OSError(errno.ENOSPC, "No space left on device", str(tmp_lib))
                raise BackendUnavailableError(
                    f"compiling the CPU kernels failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
            (tmp / "digest").write_text(_sha256(tmp_lib) + "\n")
            # The digest first: whoever finds the new library finds its digest too.
            os.replace(tmp / "digest", digest_path(lib))
            os.replace(tmp_lib, lib)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        if is_disk_full(e):
            raise BackendUnavailableError(
                f"the disk is full: no space left to build the CPU kernels in the cache {out_dir}; free space "
                "there, or set ASYNCTM_CACHE_DIR to a folder on another disk") from None
        raise
    return lib


_P = ctypes.c_void_p
_I = ctypes.c_int
_U64 = ctypes.c_uint64
_SIGNATURES = {
    "tm_set_threads": [_I],
    "tm_init_state": [_P],
    "tm_refresh_outputs": [_P, _P, _I, _P],
    "tm_compute_tallies": [_P, _I, _P],
    "tm_epoch_keys": [_U64, _U64, _I, _P],
    "tm_train_batch": [_P, _P, _P, _P, _P, _I, _I, _I, _P, _P, _P],
    "tm_sync_refresh": [_P, _P, _P, _P, _I, _I, _I, _I],
    "tm_sync_feedback": [_P, _P, _P, _P, _P, _I, _I, _I, _I, _P, _P, _P],
    "tm_include_counts": [_P, _I, _P],
    "tm_class_sums": [_P, _P, _I, _P],
    "tm_include_word_counts": [_P, _P],
    "tm_compact_includes": [_P, _P, _P, _P],
    "tm_class_sums_compact": [_P, _P, _P, _P, _I, _P],
}
_libraries: dict[Path, ctypes.CDLL] = {}


def _load(path: Path) -> ctypes.CDLL:
    if path not in _libraries:
        cpus = process_cpus()
        if not _libraries and cpus is not None and cpus != os.sched_getaffinity(0):
            os.sched_setaffinity(0, cpus)  # our runtime loads with the first library: the CPUs another one took away
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise BackendUnavailableError(f"cannot load the CPU kernel library {path} ({e}); delete it and its "
                                          f"{digest_path(path).name} to rebuild it") from None
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = None
        _libraries[path] = lib
    return _libraries[path]


def default_threads() -> int:
    cpus = process_cpus()
    return len(cpus) if cpus else os.cpu_count() or 1


def cache_line_aligned(a: np.ndarray, line: int = 64) -> np.ndarray:
    """A copy of ``a`` that starts on a cache line (NumPy aligns to 16 bytes): the kernels read the 1/s pool a
    block of 64 bytes at a time (kernels/README.md, "The 1/s pool"), one cache line each where the pool starts on
    one, two otherwise."""
    buf = np.empty(a.nbytes + line, dtype=np.uint8)
    start = -buf.ctypes.data % line
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class CpuBackend(FeedbackEvents):
    """The kernels on CPU threads. Arrays live in NumPy; see kernels/README.md for their layout."""

    name = "cpu"

    def __init__(self, cfg: KernelConfig, n_threads: int | None = None):
        self.cfg = cfg = dataclasses.replace(cfg, threads_per_clause=1)  # threads per clause is the GPU's alone
        self.n_threads = default_threads() if n_threads is None else int(n_threads)
        if self.n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.lib = _load(build_library(cfg))
        shared = one_bound_cpu(self.n_threads)
        if shared:
            warnings.warn(shared, RuntimeWarning, stacklevel=2)
        self.device = f"CPU ({cpu_model()}), {self.n_threads} thread(s)"
        self.ta_state = np.zeros((cfg.n_clauses_total, cfg.state_bits, cfg.n_words), dtype=np.uint32)
        # Type Ia, Ib and II feedback events of each clause since the backend was made (kernels/README.md).
        self.feedback_events = np.zeros((cfg.n_clauses_total, 3), dtype=np.uint64)
        self.X = self.y = self.class_sum = self.clause_output = self.keys = None
        self._pool, self._pool_for = None, None

    def _threads(self):
        self.lib.tm_set_threads(self.n_threads)

    # -- state ---------------------------------------------------------------------------------
    def init_state(self) -> None:
        self._threads()
        self.lib.tm_init_state(_ptr(self.ta_state))

    def get_ta_state(self) -> np.ndarray:
        return self.ta_state.copy()

    def set_ta_state(self, planes: np.ndarray) -> None:
        planes = np.asarray(planes, dtype=np.uint32)
        if planes.shape != self.ta_state.shape:
            raise ValueError(f"TA state must have shape {self.ta_state.shape}, got {planes.shape}")
        self.ta_state[...] = planes

    # -- training ------------------------------------------------------------------------------
    def set_training_data(self, X_words: np.ndarray, y_target: np.ndarray) -> None:
        """Keep the training set and compute stored outputs and tallies from scratch."""
        self.X, self.y = check_training_arrays(self.cfg, X_words, y_target)
        n = self.X.shape[0]
        self.clause_output = np.zeros((self.cfg.n_clauses_total, (n + 31) // 32), dtype=np.uint32)
        self.class_sum = np.zeros((self.cfg.n_classes, n), dtype=np.int32)
        self.keys, self._keys_for = np.zeros(max(n, 1), dtype=np.uint64), None
        self.refresh_tallies()

    def refresh_tallies(self) -> None:
        n = self.X.shape[0]
        self._threads()
        self.lib.tm_refresh_outputs(_ptr(self.ta_state), _ptr(self.X), n, _ptr(self.clause_output))
        self.lib.tm_compute_tallies(_ptr(self.clause_output), n, _ptr(self.class_sum))

    def train_batch(self, start: int, end: int, epoch: int, seed: int) -> None:
        self._threads()
        if self._pool_for != seed:
            self._pool = cache_line_aligned(s_mask_pool(seed, self.cfg.s, self.cfg.s_pool_bits))
            self._pool_for = seed
        pool = self._pool
        if self._keys_for != (seed, epoch):
            self.lib.tm_epoch_keys(int(seed) % 2**64, int(epoch) % 2**64, self.X.shape[0], _ptr(self.keys))
            self._keys_for = (seed, epoch)
        self.lib.tm_train_batch(_ptr(self.ta_state), _ptr(self.X), _ptr(self.y), _ptr(self.class_sum),
                                _ptr(self.clause_output), self.X.shape[0], int(start), int(end),
                                _ptr(self.keys), _ptr(pool), _ptr(self.feedback_events))

    def train_epoch(self, epoch: int, seed: int, batch_size: int) -> None:
        n = self.X.shape[0]
        for start in range(0, n, batch_size):
            self.train_batch(start, min(start + batch_size, n), epoch, seed)

    def get_tallies(self) -> np.ndarray:
        return self.class_sum.copy()

    def feedback_event_counts(self) -> np.ndarray:
        """Type Ia, Ib and II feedback events of each clause since the backend was made, uint64 (G, 3)."""
        return self.feedback_events.copy()

    def include_counts(self, first_negated: int) -> np.ndarray:
        """Included literals of each clause below ``first_negated`` and from it on, int32 (G, 2)."""
        out = np.empty((self.cfg.n_clauses_total, 2), dtype=np.int32)
        self._threads()
        self.lib.tm_include_counts(_ptr(self.ta_state), int(first_negated), _ptr(out))
        return out

    def get_clause_output_bits(self) -> np.ndarray:
        return self.clause_output.copy()

    # -- inference -----------------------------------------------------------------------------
    def class_sums(self, X_words: np.ndarray) -> np.ndarray:
        X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
        out = np.empty((self.cfg.n_classes, X_words.shape[0]), dtype=np.int32)
        offsets, index, bits = self.compact_includes()  # also sets the thread count
        self.lib.tm_class_sums_compact(_ptr(offsets), _ptr(index), _ptr(bits), _ptr(X_words), X_words.shape[0],
                                       _ptr(out))
        return out

    def compact_includes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every clause's include words that are not 0: (offsets int64 (G+1,), word index int32, word bits
        uint32), clause g's at [offsets[g], offsets[g+1]) (kernels/README.md, "Inference")."""
        counts = np.empty(self.cfg.n_clauses_total, dtype=np.int32)
        self._threads()
        self.lib.tm_include_word_counts(_ptr(self.ta_state), _ptr(counts))
        offsets = np.zeros(self.cfg.n_clauses_total + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        index = np.empty(max(int(offsets[-1]), 1), dtype=np.int32)
        bits = np.empty_like(index, dtype=np.uint32)
        self.lib.tm_compact_includes(_ptr(self.ta_state), _ptr(offsets), _ptr(index), _ptr(bits))
        return offsets, index, bits

    def class_sums_dense(self, X_words: np.ndarray) -> np.ndarray:
        """Inference by scanning the include planes (tm_class_sums, the GPU's kernel): equal to class_sums, and
        3-40x slower on trained models (benchmarks/micro_inference.py)."""
        X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
        out = np.empty((self.cfg.n_classes, X_words.shape[0]), dtype=np.int32)
        self._threads()
        self.lib.tm_class_sums(_ptr(self.ta_state), _ptr(X_words), X_words.shape[0], _ptr(out))
        return out

    def training_clause_outputs(self, X_words: np.ndarray) -> np.ndarray:
        X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
        n = X_words.shape[0]
        bits = np.empty((self.cfg.n_clauses_total, (n + 31) // 32), dtype=np.uint32)
        self._threads()
        self.lib.tm_refresh_outputs(_ptr(self.ta_state), _ptr(X_words), n, _ptr(bits))
        return unpack_literals(bits, n)

    def close(self) -> None:
        self.X = self.y = self.class_sum = self.clause_output = self.keys = self._pool = self._pool_for = None
