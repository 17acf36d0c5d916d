"""Backends: the kernels of ``kernels/tm.cu`` compiled for a GPU (PyCUDA) or for CPU cores (OpenMP).

Both builds compile the same source with the same ``#define``s (:func:`kernel_source`); only the
portability layer (``kernels/tm_portability.cuh``) differs. Nothing here touches a GPU at import time.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import numpy as np

KERNEL_FILE = "tm.cu"
TALLIES = ("async", "sync")  # kernels/README.md, "Tallies": the paper's asynchronous ones, or synchronous
UPDATE_RULES = ("linear", "quadratic")  # P(update) = |t - v| / 2T, or ((t - v) / T)^2
# kernels/README.md, "Example order": every clause visits a batch's examples in dataset order, or each from its
# own place in the batch (clause g from example g mod the batch's size), wrapping around
ORDERS = ("dataset", "staggered")
# Threads per clause in the GPU's kernels (kernels/README.md, "Threads per clause"): up to 32 a group within a warp,
# 64 to 1,024 a group of 2 to 32 warps (from 128 on a block of its own; 1,024 is CUDA's limit of threads per block).
# The one list: the estimators' gpu_threads_per_clause is checked against it too.
THREADS_PER_CLAUSE = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run on this machine (no GPU, no PyCUDA, no C compiler, ...)."""


# The 1/s pool (kernels/README.md, "The 1/s pool"): 2^S_POOL_BITS 64-bit words, 2^(S_POOL_BITS+6) lanes.
S_POOL_BITS = 16
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PURPOSE_POOL = 3
_POOL_EPOCH = 2**64 - 1  # key(seed, epoch, 0) with an epoch that training never reaches


def s_pool_ones(s: float, pool_bits: int = S_POOL_BITS) -> int:
    """``round(2^(pool_bits+6) / s)`` with ``s`` at its exact binary value: the pool's number of 1 bits."""
    s = Fraction(s)
    if s < 1:
        raise ValueError(f"s must be >= 1 (the paper's s in [1, inf)), got {float(s)}")
    return int(Fraction(2 ** (pool_bits + 6)) / s + Fraction(1, 2))


def _mix64(z: np.ndarray) -> np.ndarray:
    z = z.copy()
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def s_mask_pool(seed: int, s: float, pool_bits: int = S_POOL_BITS) -> np.ndarray:
    """The 1/s pool of a model with ``seed``: uint64 ``(2^pool_bits,)``, lane ``i`` is bit ``i % 64`` of
    word ``i // 64``. Exactly ``s_pool_ones(s)`` lanes are 1: those with the smallest 32-bit uniforms
    ``u_i = draw(key(seed, 2^64-1, 0), ctr(0, 3, i)) >> 32``, ties broken by ``i``. Cached per process."""
    return _s_mask_pool(int(seed) % 2**64, s_pool_ones(s, pool_bits), pool_bits)


@lru_cache(maxsize=8)
def _s_mask_pool(seed: int, ones: int, pool_bits: int) -> np.ndarray:
    n = 1 << (pool_bits + 6)
    with np.errstate(over="ignore"):
        key = _mix64(_mix64(_mix64(np.array([seed], np.uint64)) ^ np.uint64(_POOL_EPOCH)) ^ np.uint64(0))
        ctr = np.uint64(_PURPOSE_POOL << 30) | np.arange(n, dtype=np.uint64)
        u = _mix64(key ^ (ctr * _GOLDEN)) >> np.uint64(32)
    order = (u << np.uint64(pool_bits + 6)) | np.arange(n, dtype=np.uint64)  # distinct keys
    bits = np.zeros(n, dtype=np.uint8)
    if ones:
        bits[np.argpartition(order, ones - 1)[:ones]] = 1
    pool = np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)
    pool.setflags(write=False)
    return pool


class FeedbackEvents:
    """What both backends share on top of ``feedback_event_counts()`` (per clause, uint64 (G, 3))."""

    def take_feedback_events(self) -> np.ndarray:
        """Type Ia, Ib and II feedback events of all clauses since the previous call (or since the backend was
        made), int64 (3,)."""
        total = self.feedback_event_counts().sum(axis=0, dtype=np.uint64).astype(np.int64)
        taken = getattr(self, "_events_taken", np.zeros(3, dtype=np.int64))
        self._events_taken = total
        return total - taken


@dataclass(frozen=True)
class KernelConfig:
    """The compile-time constants of one model."""

    n_classes: int
    n_clauses: int  # per class
    n_literals: int
    T: int
    s: float
    state_bits: int = 8
    boost_true_positive: bool = True
    regression: bool = False
    s_pool_bits: int = S_POOL_BITS  # the 1/s pool has 2^s_pool_bits words (tests use small pools)
    tally: str = "async"  # "async": Algorithm 1's local tallies; "sync": refreshed on every clause first
    regression_rule: str = "linear"  # the update probability: "linear" |t - v| / 2T, "quadratic" ((t - v) / T)^2
    threads_per_clause: int = 1  # GPU kernels: a power of two up to 1,024 (a block); the CPU build has 1
    order: str = "dataset"  # the order in which a clause visits a batch's examples: "dataset" or "staggered"
    # GPU kernels: each clause's automata in its block's shared memory for a batch (kernels/README.md, "Automata in
    # shared memory"); asynchronous tallies only. The CPU build ignores it.
    shared_state: bool = False

    def __post_init__(self):
        if self.tally not in TALLIES:
            raise ValueError(f"tally must be one of {TALLIES}, got {self.tally!r}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.regression_rule not in UPDATE_RULES:
            raise ValueError(f"regression_rule must be one of {UPDATE_RULES}, got {self.regression_rule!r}")
        if self.regression_rule == "quadratic" and self.T > 32767:
            raise ValueError(f"regression_rule='quadratic' needs T <= 32767 (64-bit exact comparison), got {self.T}")
        if self.threads_per_clause not in THREADS_PER_CLAUSE or isinstance(self.threads_per_clause, bool):
            raise ValueError(f"threads_per_clause (GPU) must be one of {THREADS_PER_CLAUSE}, "
                             f"got {self.threads_per_clause!r}")
        if not isinstance(self.shared_state, bool):
            raise ValueError(f"shared_state must be True or False, got {self.shared_state!r}")
        if self.shared_state and self.tally == "sync":
            raise ValueError("shared_state=True keeps a clause's automata for a batch, which the synchronous tallies "
                             "(one launch per example) do not have: use tally='async' or shared_state=False")

    @property
    def n_words(self) -> int:
        return (self.n_literals + 31) // 32

    @property
    def n_clauses_total(self) -> int:
        return self.n_classes * self.n_clauses

    def defines(self) -> dict[str, str]:
        return {
            "CLASSES": str(self.n_classes),
            "CLAUSES": str(self.n_clauses),
            "LITERALS": str(self.n_literals),
            "STATE_BITS": str(self.state_bits),
            "THRESHOLD": str(self.T),
            "S_POOL_BITS": str(self.s_pool_bits),
            "BOOST_TRUE_POSITIVE": str(int(self.boost_true_positive)),
            "REGRESSION": str(int(self.regression)),
            "SYNC_TALLY": str(int(self.tally == "sync")),
            "QUADRATIC_UPDATE": str(int(self.regression_rule == "quadratic")),
            "STAGGERED_ORDER": str(int(self.order == "staggered")),
            "TM_CLAUSE_THREADS": str(self.threads_per_clause),
            # only where asked, so that every other build's text (and compiled module) stays as it was
            **({"TM_SHARED_STATE": "1"} if self.shared_state else {}),
        }


def kernel_dir() -> Path:
    """The folder of the CUDA C sources: $ASYNCTM_KERNEL_DIR, else the copy shipped in the package."""
    env = os.environ.get("ASYNCTM_KERNEL_DIR")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here / "kernels", here.parent.parent / "kernels"]
    for c in candidates:
        if (c / KERNEL_FILE).is_file():
            return c
    raise FileNotFoundError(f"cannot find {KERNEL_FILE}; looked in {', '.join(map(str, candidates))}. "
                            "Set ASYNCTM_KERNEL_DIR to the repository's kernels/ folder.")


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def _expand(path: Path, seen: set) -> str:
    # Inline our own "..." includes so the compiled text, and hence every cache key, covers all of it.
    if path in seen:
        return ""
    seen.add(path)
    # Include guards are done here (`seen`), so drop `#pragma once`, which warns outside a header.
    text = re.sub(r"^\s*#\s*pragma\s+once\s*$", "", path.read_text(), flags=re.M)

    def repl(m):
        return _expand(path.parent / m.group(1), seen)

    return _INCLUDE.sub(repl, text)


def kernel_source(cfg: KernelConfig) -> str:
    """The full, self-contained kernel text for ``cfg``: #defines, then tm.cu with its includes inlined."""
    header = "".join(f"#define {k} {v}\n" for k, v in cfg.defines().items())
    return header + _expand(kernel_dir() / KERNEL_FILE, set())


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def cuda_available() -> bool:
    """Is there a GPU: True when PyCUDA imports and finds at least one CUDA device. Never raises (no PyCUDA,
    no driver, a broken install: False) and never creates a context. The one GPU check of the package: the
    backends, the runner, the baselines, provenance, benchmarks and tests all ask here."""
    try:
        from . import cuda

        return cuda.device_count() > 0
    except Exception:  # noqa: BLE001 - any failure to reach a GPU means "no GPU"
        return False


def resolve_backend(name: str) -> str:
    """``"auto"`` -> ``"cuda"`` if a GPU is usable, else ``"cpu"``; validates explicit names."""
    if name not in ("auto", "cuda", "cpu"):
        raise ValueError(f"backend must be 'auto', 'cuda' or 'cpu', got {name!r}")
    if name == "auto":
        return "cuda" if cuda_available() else "cpu"
    return name


def make_backend(name: str, cfg: KernelConfig, n_threads: int | None = None):
    name = resolve_backend(name)
    if name == "cuda":
        from .cuda import CudaBackend

        return CudaBackend(cfg)
    from .cpu import CpuBackend

    return CpuBackend(cfg, n_threads=n_threads)


def check_training_arrays(cfg: KernelConfig, X_words: np.ndarray, y_target: np.ndarray):
    X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
    y_target = np.ascontiguousarray(y_target, dtype=np.int32)
    if X_words.ndim != 2 or X_words.shape[1] != cfg.n_words:
        raise ValueError(f"packed literals must have shape (n, {cfg.n_words}), got {X_words.shape}")
    if y_target.shape != (cfg.n_classes, X_words.shape[0]):
        raise ValueError(f"targets must have shape ({cfg.n_classes}, {X_words.shape[0]}), got {y_target.shape}")
    return X_words, y_target
