"""GPU build: ``kernels/tm.cu`` compiled at run time by PyCUDA (``SourceModule``), cached by PyCUDA's
compiler cache (keyed on the full source, which includes the model's #defines) and in-process.

Never imports ``pycuda.autoinit``: the device's primary context is retained on first use, on the GPU
named by ``$CUDA_DEVICE`` (default 0). A machine without PyCUDA, a driver or a GPU counts as "no GPU".
"""

from __future__ import annotations

import os

import numpy as np

from ..encoding import unpack_literals
from . import BackendUnavailableError, FeedbackEvents, KernelConfig, check_training_arrays, kernel_source, s_mask_pool

# Threads per block: a multiple of 32 and of every group size up to 128, so that a clause's group never straddles two
# warps (up to 32) or two blocks (64, 128: its warps meet at a barrier of their block). The kernels that give an item
# a group launch blocks of group_block(threads_per_clause) threads: a group of more than 128 (256 to 1,024, CUDA's
# limit of threads per block) is a block of its own, which kernels/tm.cu's __syncthreads() expects.
BLOCK = 128
# The kernels that give each item (a clause in training, a class and example at inference) a group of
# cfg.threads_per_clause threads (TM_PARALLEL_FOR_CLAUSES in tm.cu).
CLAUSE_GROUP_KERNELS = frozenset({"tm_train_batch", "tm_sync_refresh", "tm_sync_feedback", "tm_class_sums"})
MAX_GRID = 65535

_context = None


def group_block(threads_per_clause: int) -> int:
    """Threads per block of the kernels in :data:`CLAUSE_GROUP_KERNELS`: BLOCK, or the group where it is larger."""
    return max(BLOCK, int(threads_per_clause))
_modules: dict = {}


def _driver():
    try:
        import pycuda.driver as drv  # raises ImportError without libcuda.so.1
    except Exception as exc:  # noqa: BLE001 - any import failure means "no GPU here"
        raise BackendUnavailableError(
            f"backend='cuda' needs PyCUDA and an NVIDIA driver, but importing pycuda.driver failed: {exc}. "
            "Install the extra (`pip install -e '.[cuda]'`) on a GPU machine, or use backend='cpu'.") from None
    return drv


def device_count() -> int:
    """Number of CUDA devices PyCUDA sees; 0 when PyCUDA, the driver or a GPU is missing."""
    try:
        drv = _driver()
        drv.init()
        return drv.Device.count()
    except Exception:  # noqa: BLE001
        return 0


def context():
    """The retained primary context of $CUDA_DEVICE, made current (created on first use)."""
    global _context
    drv = _driver()
    if _context is None:
        try:
            drv.init()
            count = drv.Device.count()
        except Exception as exc:  # noqa: BLE001
            raise BackendUnavailableError(f"backend='cuda': the CUDA driver did not initialise: {exc}") from None
        if count == 0:
            raise BackendUnavailableError("backend='cuda' but no CUDA GPU was found; use backend='cpu' or 'auto'")
        raw = os.environ.get("CUDA_DEVICE", "0")
        try:
            index = int(raw)
        except ValueError:
            raise BackendUnavailableError(f"CUDA_DEVICE must be a device number, got {raw!r}") from None
        if not 0 <= index < count:
            raise BackendUnavailableError(f"CUDA_DEVICE={index}, but only {count} GPU(s) are present")
        _context = drv.Device(index).retain_primary_context()
        _context.push()
        import atexit

        atexit.register(_release_context)
    return _context


def _release_context():
    global _context
    if _context is not None:
        try:
            _context.pop()
        except Exception:  # noqa: BLE001
            pass
        _context = None


def device_description() -> str:
    drv = _driver()
    dev = context().get_device()
    major, minor = dev.compute_capability()
    return (f"{dev.name()} (sm_{major}{minor}, driver {drv.get_driver_version()}, "
            f"CUDA {'.'.join(map(str, drv.get_version()))})")


def _module(cfg: KernelConfig):
    source = kernel_source(cfg)
    if source not in _modules:
        from pycuda.compiler import SourceModule

        _modules[source] = SourceModule(source, no_extern_c=True, options=["-O3"])
    return _modules[source]


class CudaBackend(FeedbackEvents):
    """The kernels on a GPU; arrays live in device memory (freed by :meth:`close`)."""

    name = "cuda"

    def __init__(self, cfg: KernelConfig):
        self.block = group_block(cfg.threads_per_clause)
        assert self.block % cfg.threads_per_clause == 0 and self.block % 32 == 0, \
            f"threads_per_clause={cfg.threads_per_clause}: a clause's group must fit a block of {self.block} threads"
        self.cfg = cfg
        self.drv = _driver()
        context()
        self.device = device_description()
        mod = _module(cfg)
        # Synchronous tallies need a barrier between refresh and feedback on every example: there the GPU build
        # has two kernels launched per example instead of one tm_train_batch per batch (kernels/README.md).
        training = ("tm_sync_refresh", "tm_sync_feedback") if cfg.tally == "sync" else ("tm_train_batch",)
        self.fn = {name: mod.get_function(name) for name in
                   ("tm_init_state", "tm_refresh_outputs", "tm_compute_tallies", "tm_epoch_keys", *training,
                    "tm_class_sums", "tm_include_counts")}
        for name in CLAUSE_GROUP_KERNELS & set(self.fn):
            most = self.fn[name].max_threads_per_block  # what the compiled kernel can launch with
            if most < self.block:
                raise BackendUnavailableError(
                    f"{name} launches at most {most} threads per block on {self.device}, but threads_per_clause="
                    f"{cfg.threads_per_clause} needs blocks of {self.block}; choose at most {most} threads per clause")
        self.shared_bytes = self._shared_state_bytes() if cfg.shared_state else 0
        self.state_shape = (cfg.n_clauses_total, cfg.state_bits, cfg.n_words)
        self.ta_state = self._alloc(int(np.prod(self.state_shape)) * 4)
        # Type Ia, Ib and II feedback events of each clause since the backend was made.
        self.events_shape = (cfg.n_clauses_total, 3)
        self.feedback_events = self._alloc(cfg.n_clauses_total * 3 * 8)
        self.drv.memcpy_htod(self.feedback_events, np.zeros(self.events_shape, dtype=np.uint64))
        self.X = self.y = self.class_sum = self.clause_output = self.keys = None
        self._keys_for = None
        self.s_pool, self._s_pool_seed = None, None
        self.n_examples = 0

    def _shared_state_bytes(self) -> int:
        """The dynamic shared memory of a tm_train_batch block that keeps its clauses' automata (shared_state): one
        clause's planes per group of the block. Refused in one line where the GPU cannot give a block that much
        beside the kernel's own shared arrays; above the 48 KiB every launch may have, the kernel is allowed more."""
        cfg, fn = self.cfg, self.fn["tm_train_batch"]
        need = (self.block // cfg.threads_per_clause) * cfg.state_bits * cfg.n_words * 4
        dev = context().get_device()
        most = dev.get_attribute(self.drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) - fn.shared_size_bytes
        if need > most:
            raise BackendUnavailableError(
                f"shared_state needs {need:,} bytes of shared memory per block ({self.block // cfg.threads_per_clause} "
                f"clause(s) of {cfg.state_bits} x {cfg.n_words:,} words), but {self.device} gives a block at most "
                f"{most:,} beside tm_train_batch's own; use shared_state=False, or more threads per clause (fewer "
                "clauses per block)")
        if need > 48 * 1024:
            fn.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, need)
        return need

    def _alloc(self, nbytes: int):
        return self.drv.mem_alloc(max(int(nbytes), 4))

    def _launch(self, name: str, n_items: int, *args):
        block = BLOCK
        if name in CLAUSE_GROUP_KERNELS:  # a group of cfg.threads_per_clause threads per item
            n_items *= self.cfg.threads_per_clause
            block = self.block
        grid = max(1, min((int(n_items) + block - 1) // block, MAX_GRID))
        shared = self.shared_bytes if name == "tm_train_batch" else 0  # the automata's slices (shared_state)
        self.fn[name](*args, block=(block, 1, 1), grid=(grid, 1), shared=shared)

    def _free(self, *names):
        for name in names:
            buf = getattr(self, name, None)
            if buf is not None:
                buf.free()
                setattr(self, name, None)

    # -- state ---------------------------------------------------------------------------------
    def init_state(self) -> None:
        self._launch("tm_init_state", self.cfg.n_clauses_total * self.cfg.n_words, self.ta_state)
        self.drv.Context.synchronize()

    def get_ta_state(self) -> np.ndarray:
        out = np.empty(self.state_shape, dtype=np.uint32)
        self.drv.memcpy_dtoh(out, self.ta_state)
        return out

    def set_ta_state(self, planes: np.ndarray) -> None:
        planes = np.ascontiguousarray(planes, dtype=np.uint32)
        if planes.shape != self.state_shape:
            raise ValueError(f"TA state must have shape {self.state_shape}, got {planes.shape}")
        self.drv.memcpy_htod(self.ta_state, planes)

    # -- training ------------------------------------------------------------------------------
    def set_training_data(self, X_words: np.ndarray, y_target: np.ndarray) -> None:
        X_words, y_target = check_training_arrays(self.cfg, X_words, y_target)
        self._free("X", "y", "class_sum", "clause_output", "keys")
        n = self.n_examples = X_words.shape[0]
        self.keys, self._keys_for = self._alloc(n * 8), None
        self.X = self.drv.to_device(X_words)
        self.y = self.drv.to_device(y_target)
        self.class_sum = self._alloc(self.cfg.n_classes * n * 4)
        self.clause_output = self._alloc(self.cfg.n_clauses_total * ((n + 31) // 32) * 4)
        self.refresh_tallies()

    def refresh_tallies(self) -> None:
        n = np.int32(self.n_examples)
        self._launch("tm_refresh_outputs", self.cfg.n_clauses_total, self.ta_state, self.X, n, self.clause_output)
        self._launch("tm_compute_tallies", self.cfg.n_classes * self.n_examples, self.clause_output, n,
                     self.class_sum)
        self.drv.Context.synchronize()

    def _pool_for(self, seed: int):
        """The 1/s pool of ``seed`` on the device, uploaded once per seed."""
        if self._s_pool_seed != seed:
            self._free("s_pool")
            self.s_pool = self.drv.to_device(np.ascontiguousarray(s_mask_pool(seed, self.cfg.s, self.cfg.s_pool_bits)))
            self._s_pool_seed = seed
        return self.s_pool

    def train_batch(self, start: int, end: int, epoch: int, seed: int) -> None:
        if self._keys_for != (seed, epoch):  # the examples' stream keys, once per epoch
            self._launch("tm_epoch_keys", self.n_examples, np.uint64(int(seed) % 2**64), np.uint64(int(epoch) % 2**64),
                         np.int32(self.n_examples), self.keys)
            self._keys_for = (seed, epoch)
        n, pool = np.int32(self.n_examples), self._pool_for(seed)
        if self.cfg.tally == "sync":  # step i: every clause on its i-th example of the batch (kernels/README.md)
            first, last = np.int32(start), np.int32(end)
            for i in range(int(end) - int(start)):
                self._launch("tm_sync_refresh", self.cfg.n_clauses_total, self.ta_state, self.X, self.class_sum,
                             self.clause_output, n, first, last, np.int32(i))
                self._launch("tm_sync_feedback", self.cfg.n_clauses_total, self.ta_state, self.X, self.y,
                             self.class_sum, self.clause_output, n, first, last, np.int32(i), self.keys, pool,
                             self.feedback_events)
            return
        self._launch("tm_train_batch", self.cfg.n_clauses_total, self.ta_state, self.X, self.y, self.class_sum,
                     self.clause_output, n, np.int32(start), np.int32(end), self.keys, pool, self.feedback_events)

    def train_epoch(self, epoch: int, seed: int, batch_size: int) -> None:
        for start in range(0, self.n_examples, batch_size):
            self.train_batch(start, min(start + batch_size, self.n_examples), epoch, seed)
        self.drv.Context.synchronize()

    def get_tallies(self) -> np.ndarray:
        out = np.empty((self.cfg.n_classes, self.n_examples), dtype=np.int32)
        self.drv.memcpy_dtoh(out, self.class_sum)
        return out

    def get_clause_output_bits(self) -> np.ndarray:
        out = np.empty((self.cfg.n_clauses_total, (self.n_examples + 31) // 32), dtype=np.uint32)
        self.drv.memcpy_dtoh(out, self.clause_output)
        return out

    def feedback_event_counts(self) -> np.ndarray:
        """Type Ia, Ib and II feedback events of each clause since the backend was made, uint64 (G, 3)."""
        out = np.empty(self.events_shape, dtype=np.uint64)
        self.drv.memcpy_dtoh(out, self.feedback_events)
        return out

    def include_counts(self, first_negated: int) -> np.ndarray:
        """Included literals of each clause below ``first_negated`` and from it on, int32 (G, 2)."""
        counts = self._alloc(self.cfg.n_clauses_total * 2 * 4)
        try:
            self._launch("tm_include_counts", self.cfg.n_clauses_total, self.ta_state, np.int32(first_negated), counts)
            out = np.empty((self.cfg.n_clauses_total, 2), dtype=np.int32)
            self.drv.memcpy_dtoh(out, counts)
        finally:
            counts.free()
        return out

    # -- inference -----------------------------------------------------------------------------
    def class_sums(self, X_words: np.ndarray) -> np.ndarray:
        X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
        n = X_words.shape[0]
        X_gpu = self.drv.to_device(X_words)
        out_gpu = self._alloc(self.cfg.n_classes * n * 4)
        try:
            self._launch("tm_class_sums", self.cfg.n_classes * n, self.ta_state, X_gpu, np.int32(n), out_gpu)
            out = np.empty((self.cfg.n_classes, n), dtype=np.int32)
            self.drv.memcpy_dtoh(out, out_gpu)
        finally:
            X_gpu.free()
            out_gpu.free()
        return out

    def training_clause_outputs(self, X_words: np.ndarray) -> np.ndarray:
        X_words = np.ascontiguousarray(X_words, dtype=np.uint32)
        n = X_words.shape[0]
        X_gpu = self.drv.to_device(X_words)
        bits_gpu = self._alloc(self.cfg.n_clauses_total * ((n + 31) // 32) * 4)
        try:
            self._launch("tm_refresh_outputs", self.cfg.n_clauses_total, self.ta_state, X_gpu, np.int32(n), bits_gpu)
            bits = np.empty((self.cfg.n_clauses_total, (n + 31) // 32), dtype=np.uint32)
            self.drv.memcpy_dtoh(bits, bits_gpu)
        finally:
            X_gpu.free()
            bits_gpu.free()
        return unpack_literals(bits, n)

    def close(self) -> None:
        self._free("X", "y", "class_sum", "clause_output", "keys", "ta_state", "s_pool", "feedback_events")
        self._s_pool_seed = self._keys_for = None
