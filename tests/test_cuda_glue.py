"""The CUDA backend's host code, driven through a simulated PyCUDA (no GPU needed).

The fake ``pycuda.driver`` keeps device buffers in host memory with guard bytes, and the fake
``SourceModule`` compiles the kernel text for the CPU: a launch then runs the same kernel, with the
arguments exactly as ``CudaBackend`` passes them. So argument order and types, buffer sizes and copies are
checked here against the CPU backend; only what happens on a real GPU is left to the ``gpu`` tests.
"""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

from asynctm.backends import KernelConfig, cpu
from asynctm.encoding import pack_literals

GUARD = 64


class FakeAllocation:
    def __init__(self, nbytes: int):
        self.buf = np.full(nbytes + 2 * GUARD, 0xA5, dtype=np.uint8)  # poisoned, with guards
        self.nbytes = nbytes
        self.freed = False

    @property
    def ptr(self) -> int:
        return self.buf.ctypes.data + GUARD

    def view(self) -> np.ndarray:
        return self.buf[GUARD:GUARD + self.nbytes]

    def check_guards(self):
        assert (self.buf[:GUARD] == 0xA5).all() and (self.buf[-GUARD:] == 0xA5).all(), "kernel wrote out of bounds"

    def free(self):
        self.check_guards()
        self.freed = True


def make_fake_pycuda(allocations: list):
    drv = types.ModuleType("pycuda.driver")

    class Device:
        def __init__(self, index):
            self.index = index

        @staticmethod
        def count():
            return 1

        def name(self):
            return "Simulated GPU"

        def compute_capability(self):
            return (9, 0)

        def retain_primary_context(self):
            dev = self
            return types.SimpleNamespace(push=lambda: None, pop=lambda: None, get_device=lambda: dev)

    def mem_alloc(nbytes):
        a = FakeAllocation(int(nbytes))
        allocations.append(a)
        return a

    def to_device(arr):
        arr = np.ascontiguousarray(arr)
        a = mem_alloc(arr.nbytes)
        a.view()[:] = arr.view(np.uint8).ravel()
        return a

    def memcpy_htod(dst, src):
        src = np.ascontiguousarray(src)
        assert src.nbytes == dst.nbytes, f"htod copies {src.nbytes} bytes into a buffer of {dst.nbytes}"
        dst.view()[:] = src.view(np.uint8).ravel()

    def memcpy_dtoh(dst, src):
        assert dst.nbytes == src.nbytes, f"dtoh copies a buffer of {src.nbytes} bytes into {dst.nbytes}"
        dst.view(np.uint8).ravel()[:] = src.view()

    drv.init = lambda: None
    drv.Device = Device
    drv.mem_alloc = mem_alloc
    drv.to_device = to_device
    drv.memcpy_htod = memcpy_htod
    drv.memcpy_dtoh = memcpy_dtoh
    drv.get_driver_version = lambda: 13000
    drv.get_version = lambda: (13, 0, 0)
    drv.Context = types.SimpleNamespace(synchronize=lambda: None)

    compiler = types.ModuleType("pycuda.compiler")

    class SourceModule:
        def __init__(self, source, no_extern_c=False, options=None):
            assert no_extern_c, "the kernels declare extern \"C\" themselves"
            # Compile the very text PyCUDA would get; on the host it takes the CPU side of the portability layer.
            path = cpu.cache_dir() / "cpu" / f"fake_cuda_{abs(hash(source))}.so"
            if not path.exists():
                import subprocess
                import tempfile
                from pathlib import Path

                path.parent.mkdir(parents=True, exist_ok=True)
                with tempfile.TemporaryDirectory() as tmp:
                    src = Path(tmp) / "tm.cu"
                    src.write_text(source)
                    subprocess.run([*cpu.compiler_command(), str(src), "-o", str(path)], check=True)
            self.lib = ctypes.CDLL(str(path))
            self.lib.tm_set_threads(1)  # one thread: the simulated device is deterministic

        def get_function(self, name):
            fn = getattr(self.lib, name)

            def launch(*args, block, grid):
                assert len(block) == 3 and len(grid) == 2 and grid[0] >= 1
                launches.append((name, block[0] * grid[0]))
                cargs = []
                for a in args:
                    if isinstance(a, FakeAllocation):
                        assert not a.freed, "a launch used a freed buffer"
                        cargs.append(ctypes.c_void_p(a.ptr))
                    elif isinstance(a, np.int32):
                        cargs.append(ctypes.c_int(int(a)))
                    elif isinstance(a, np.uint64):
                        cargs.append(ctypes.c_uint64(int(a)))
                    else:
                        raise TypeError(f"{name}: PyCUDA needs sized NumPy scalars, got {type(a).__name__}")
                fn.restype = None
                fn(*cargs)
                for alloc in allocations:
                    if not alloc.freed:
                        alloc.check_guards()

            return launch

    compiler.SourceModule = SourceModule
    compiler.launches = launches = []  # (kernel, threads launched), in order
    pycuda = types.ModuleType("pycuda")
    pycuda.driver, pycuda.compiler = drv, compiler
    return pycuda


@pytest.fixture
def fake_cuda(monkeypatch):
    allocations: list = []
    pycuda = make_fake_pycuda(allocations)
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", pycuda.driver)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", pycuda.compiler)
    from asynctm.backends import cuda

    monkeypatch.setattr(cuda, "_context", None)
    monkeypatch.setattr(cuda, "_modules", {})
    monkeypatch.setattr("atexit.register", lambda fn: None)
    return allocations


@pytest.mark.parametrize("cfg", [
    KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9),
    KernelConfig(n_classes=1, n_clauses=9, n_literals=2 * 20, T=12, s=2.0, state_bits=6, regression=True),
])
def test_cuda_backend_glue_matches_the_cpu_backend(fake_cuda, cfg):
    from asynctm.backends.cuda import CudaBackend, device_count

    assert device_count() == 1
    rng = np.random.default_rng(0)
    X, _ = pack_literals(rng.integers(0, 2, (70, cfg.n_literals // 2)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 70)).astype(np.int32)
    gpu, host = CudaBackend(cfg), cpu.CpuBackend(cfg, n_threads=1)
    assert "Simulated GPU (sm_90" in gpu.device
    for be in (gpu, host):
        be.init_state()
        be.set_training_data(X, y)
        be.train_batch(0, 1, epoch=0, seed=5)  # one example: no two clause threads race on a tally
    np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state())
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
    for be in (gpu, host):
        be.train_epoch(epoch=1, seed=5, batch_size=16)
    state = host.get_ta_state()
    gpu.set_ta_state(state)
    np.testing.assert_array_equal(gpu.class_sums(X[:33]), host.class_sums(X[:33]))
    np.testing.assert_array_equal(gpu.training_clause_outputs(X[:33]), host.training_clause_outputs(X[:33]))
    gpu.close()
    assert all(a.freed for a in fake_cuda), "close() must free every device buffer"


@pytest.mark.parametrize("tally", ["async", "sync"])
def test_clause_kernels_get_a_group_of_threads_per_clause(fake_cuda, tally):
    """threads_per_clause multiplies the threads of the training kernels only; the simulated device (the CPU
    build, where a clause is one loop iteration whatever the host asked) then gives the CPU backend's result."""
    import pycuda.compiler

    from asynctm.backends.cuda import BLOCK, CLAUSE_GROUP_KERNELS, CudaBackend

    cfg = KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9, tally=tally, threads_per_clause=32)
    rng = np.random.default_rng(3)
    X, _ = pack_literals(rng.integers(0, 2, (40, 45)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 40)).astype(np.int32)
    gpu, host = CudaBackend(cfg), cpu.CpuBackend(cfg, n_threads=1)
    assert host.cfg.threads_per_clause == 1
    for be in (gpu, host):
        be.init_state()
        be.set_training_data(X, y)
        be.train_epoch(epoch=0, seed=5, batch_size=40)  # one batch: the simulated device runs one thread
    np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state())
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    threads = {}
    for name, n in pycuda.compiler.launches:
        threads.setdefault(name, set()).add(n)
    grouped = -(-cfg.n_clauses_total * 32 // BLOCK) * BLOCK  # 18 clauses x 32 threads, in whole blocks
    assert {name: threads[name] for name in CLAUSE_GROUP_KERNELS if name in threads} == {
        name: {grouped} for name in CLAUSE_GROUP_KERNELS if name in threads}
    assert ("tm_sync_feedback" if tally == "sync" else "tm_train_batch") in threads
    assert threads["tm_refresh_outputs"] == {BLOCK}  # one thread per clause elsewhere
    gpu.close()


def test_estimator_runs_on_the_simulated_gpu(fake_cuda):
    from asynctm import TMClassifier

    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (300, 8)).astype(np.uint8)
    y = X[:, 0] ^ X[:, 1]
    tm = TMClassifier(10, 10, 3.9, backend="auto", seed=1).fit(X, y, epochs=20)
    assert tm.backend_ == "cuda"
    on_cpu = TMClassifier(10, 10, 3.9, backend="cpu", n_threads=1, seed=1).fit(X, y, epochs=20)
    np.testing.assert_array_equal(tm.ta_states(), on_cpu.ta_states())
    np.testing.assert_array_equal(tm.decision_function(X), on_cpu.decision_function(X))
    tm.close()
    assert all(a.freed for a in fake_cuda)


@pytest.mark.parametrize("cfg", [
    KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9, tally="sync"),
    KernelConfig(n_classes=1, n_clauses=9, n_literals=2 * 20, T=12, s=2.0, state_bits=6, regression=True,
                 tally="sync", regression_rule="quadratic"),
])
def test_synchronous_tallies_on_the_simulated_gpu(fake_cuda, cfg):
    """The GPU's two launches per example (tm_sync_refresh, tm_sync_feedback) give what the CPU build's one
    region per batch gives with two threads: synchronous tallies are deterministic, so whole epochs agree."""
    from asynctm.backends.cuda import CudaBackend

    rng = np.random.default_rng(2)
    X, _ = pack_literals(rng.integers(0, 2, (70, cfg.n_literals // 2)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 70)).astype(np.int32)
    gpu, host = CudaBackend(cfg), cpu.CpuBackend(cfg, n_threads=2)
    assert "tm_train_batch" not in gpu.fn  # the GPU build of sync tallies has no batch kernel
    for be in (gpu, host):
        be.init_state()
        be.set_training_data(X, y)
        for epoch in range(3):
            be.train_epoch(epoch=epoch, seed=5, batch_size=16)
    np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state())
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
    np.testing.assert_array_equal(gpu.feedback_event_counts(), host.feedback_event_counts())
    assert host.feedback_event_counts().sum() > 0
    np.testing.assert_array_equal(gpu.include_counts(cfg.n_literals // 2), host.include_counts(cfg.n_literals // 2))
    assert host.include_counts(cfg.n_literals // 2).sum() > 0
    gpu.close()
    assert all(a.freed for a in fake_cuda), "close() must free every device buffer"
