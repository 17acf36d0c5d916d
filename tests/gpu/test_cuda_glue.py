"""The CUDA backend's host code, driven through a simulated PyCUDA (no GPU needed).

The fake ``pycuda.driver`` keeps device buffers in host memory with guard bytes, and the fake
``SourceModule`` compiles the kernel text for the CPU: a launch then runs the same kernel, with the
arguments exactly as ``CudaBackend`` passes them. So argument order and types, buffer sizes and copies are
checked here against the CPU backend.

With ``warps=True`` the fake compiles the GPU side of the kernels instead (``tests/gpu/cuda_warp_sim.hpp``): every
thread of a launch is a host thread, with the launch's grid and block, real atomics and warp intrinsics that
make the threads of a mask meet. That runs the code a GPU runs, the clause groups of ``threads_per_clause``
included, with true concurrency; what is left to the ``gpu`` tests is the hardware (memory, timing, nvcc).
"""

from __future__ import annotations

import ctypes
import dataclasses
import re
import sys
import types
from pathlib import Path

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


WARP_SIM = Path(__file__).with_name("cuda_warp_sim.hpp")
_KERNEL = re.compile(r"TM_KERNEL void (\w+)\(([^)]*)\)")
# Kernels that exist only in some builds: the simulated GPU build has tm_train_batch without synchronous tallies.
_KERNEL_GUARDS = {"tm_train_batch": "!SYNC_TALLY"}


def warp_sim_source(source: str) -> str:
    """The kernel text for the simulated GPU: the simulator first, then the kernels, then for every kernel an
    ``extern "C" sim_<name>(grid, block, <its parameters>)`` that launches it."""
    wrappers = []
    for name, params in dict(_KERNEL.findall(source)).items():
        names = [re.findall(r"\w+", p)[-1] for p in params.split(",")]
        body = (f'extern "C" void sim_{name}(unsigned grid, unsigned block, {params})\n'
                f"{{ sim::launch(grid, block, [=] {{ {name}({', '.join(names)}); }}); }}\n")
        guard = _KERNEL_GUARDS.get(name)
        wrappers.append(f"#if {guard}\n{body}#endif\n" if guard else body)
    return f'#include "{WARP_SIM}"\n{source}\n' + "".join(wrappers)


def make_fake_pycuda(allocations: list, warps: bool = False):
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

        def get_attribute(self, attr):
            return {"MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": compiler.shared_per_block_optin}[attr]

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
    # the device's free memory: a simulated 80 GiB less the buffers not freed yet
    drv.mem_get_info = lambda: (80 * 2**30 - sum(a.nbytes for a in allocations if not a.freed), 80 * 2**30)
    drv.get_driver_version = lambda: 13000
    drv.get_version = lambda: (13, 0, 0)
    drv.Context = types.SimpleNamespace(synchronize=lambda: None)
    drv.device_attribute = types.SimpleNamespace(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    drv.function_attribute = types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES")

    compiler = types.ModuleType("pycuda.compiler")

    class SourceModule:
        def __init__(self, source, no_extern_c=False, options=None):
            assert no_extern_c, "the kernels declare extern \"C\" themselves"
            # Compile the very text PyCUDA would get; on the host it takes the CPU side of the portability layer
            # (or, simulating warps, the GPU side).
            import hashlib
            import subprocess
            import tempfile

            if warps:
                source = warp_sim_source(source)
            key = hashlib.sha256((source + WARP_SIM.read_text() if warps else source).encode()).hexdigest()[:20]
            path = cpu.cache_dir() / "cpu" / f"fake_cuda_{'warps_' if warps else ''}{key}.so"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                flags = ["g++", "-O1", "-std=c++17", "-pthread", "-fPIC", "-shared", "-x", "c++"] if warps else \
                    cpu.compiler_command()
                with tempfile.TemporaryDirectory() as tmp:
                    src = Path(tmp) / "tm.cu"
                    src.write_text(source)
                    subprocess.run([*flags, str(src), "-o", str(path)], check=True)
            self.lib = ctypes.CDLL(str(path))
            if not warps:
                self.lib.tm_set_threads(1)  # one thread: the simulated device is deterministic

        def get_function(self, name):
            fn = getattr(self.lib, f"sim_{name}" if warps else name)

            def launch(*args, block, grid, shared=0):
                assert len(block) == 3 and len(grid) == 2 and grid[0] >= 1
                assert block[0] <= launch.max_threads_per_block, f"{name}: a block of {block[0]} threads"
                assert shared <= max(48 * 1024, launch.dynamic_shared_allowed), \
                    f"{name}: {shared} bytes of dynamic shared memory, above 48 KiB without the kernel's attribute"
                launches.append((name, block[0] * grid[0]))
                compiler.shared.setdefault(name, set()).add(shared)
                if warps:
                    self.lib.sim_set_shared(ctypes.c_ulonglong(shared))
                compiler.blocks.setdefault(name, set()).add(block[0])
                cargs = [ctypes.c_uint(grid[0]), ctypes.c_uint(block[0])] if warps else []
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
                if warps:
                    self.lib.sim_error.restype = ctypes.c_char_p
                    assert not self.lib.sim_error(), f"{name}: {self.lib.sim_error().decode()}"
                for alloc in allocations:
                    if not alloc.freed:
                        alloc.check_guards()

            launch.max_threads_per_block = compiler.max_threads_per_block  # pycuda's Function attribute
            launch.shared_size_bytes = 128 if warps else 0  # the static shared arrays (the group slots)
            launch.dynamic_shared_allowed = 0

            def set_attribute(attr, value):
                assert attr == "MAX_DYNAMIC_SHARED_SIZE_BYTES", attr
                assert value + launch.shared_size_bytes <= compiler.shared_per_block_optin
                launch.dynamic_shared_allowed = value

            launch.set_attribute = set_attribute
            return launch

    compiler.SourceModule = SourceModule
    compiler.launches = launches = []  # (kernel, threads launched), in order
    compiler.blocks = {}  # kernel -> the threads per block it was launched with
    compiler.max_threads_per_block = 1024  # of every kernel, as CUDA's limit (a test may lower it)
    compiler.shared = {}  # kernel -> the bytes of dynamic shared memory it was launched with
    compiler.shared_per_block_optin = 227 * 1024  # an H100's most shared memory per block (a test may lower it)
    pycuda = types.ModuleType("pycuda")
    pycuda.driver, pycuda.compiler = drv, compiler
    return pycuda


def _install_fake(monkeypatch, warps: bool) -> list:
    allocations: list = []
    pycuda = make_fake_pycuda(allocations, warps=warps)
    monkeypatch.setitem(sys.modules, "pycuda", pycuda)
    monkeypatch.setitem(sys.modules, "pycuda.driver", pycuda.driver)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", pycuda.compiler)
    from asynctm.backends import cuda

    monkeypatch.setattr(cuda, "_context", None)
    monkeypatch.setattr(cuda, "_modules", {})
    monkeypatch.setattr("atexit.register", lambda fn: None)
    return allocations


@pytest.fixture
def fake_cuda(monkeypatch):
    return _install_fake(monkeypatch, warps=False)


@pytest.fixture
def fake_warps(monkeypatch):
    if cpu.shutil.which("g++") is None:
        pytest.skip("the warp simulator needs g++")
    return _install_fake(monkeypatch, warps=True)


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


@pytest.mark.parametrize("k", [32, 512])
@pytest.mark.parametrize("tally", ["async", "sync"])
def test_clause_kernels_get_a_group_of_threads_per_clause(fake_cuda, tally, k):
    """threads_per_clause multiplies the threads of the training kernels only, in blocks of BLOCK threads or, for a
    group of more, of the group; the simulated device (the CPU build, where a clause is one loop iteration whatever
    the host asked) then gives the CPU backend's result."""
    import pycuda.compiler

    from asynctm.backends.cuda import BLOCK, CLAUSE_GROUP_KERNELS, CudaBackend

    cfg = KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9, tally=tally, threads_per_clause=k)
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
    block = max(k, BLOCK)  # 512: a block per clause
    grouped = -(-cfg.n_clauses_total * k // block) * block  # 18 clauses x k threads, in whole blocks
    assert {name: threads[name] for name in CLAUSE_GROUP_KERNELS if name in threads} == {
        name: {grouped} for name in CLAUSE_GROUP_KERNELS if name in threads}
    assert ("tm_sync_feedback" if tally == "sync" else "tm_train_batch") in threads
    assert all(pycuda.compiler.blocks[name] == {block} for name in CLAUSE_GROUP_KERNELS if name in threads)
    assert threads["tm_refresh_outputs"] == {BLOCK} and pycuda.compiler.blocks["tm_refresh_outputs"] == {BLOCK}
    gpu.close()


def test_a_group_larger_than_the_kernels_can_launch_is_refused(fake_cuda):
    """A kernel that the GPU launches with fewer threads per block than a group needs (registers): one line that
    says so and names the most it takes, before anything runs."""
    import pycuda.compiler

    from asynctm.backends import BackendUnavailableError
    from asynctm.backends.cuda import CudaBackend

    pycuda.compiler.max_threads_per_block = 768
    with pytest.raises(BackendUnavailableError, match=r"at most 768 threads per block .* needs blocks of 1024; "
                                                      r"choose at most 768 threads per clause"):
        CudaBackend(KernelConfig(n_classes=2, n_clauses=4, n_literals=64, T=5, s=3.9, threads_per_clause=1024))
    CudaBackend(KernelConfig(n_classes=2, n_clauses=4, n_literals=64, T=5, s=3.9, threads_per_clause=512)).close()


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
    KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9, tally="sync", order="staggered"),
])
def test_synchronous_tallies_on_the_simulated_gpu(fake_cuda, cfg):
    """The GPU's two launches per step (tm_sync_refresh, tm_sync_feedback) give what the CPU build's one region
    per batch gives with two threads: synchronous tallies are deterministic, in either example order, so whole
    epochs agree."""
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


# -- the GPU side of the kernels on simulated warps ----------------------------------------------------------

def _train(be, X, y, epochs, batch_size, seed=5):
    be.init_state()
    be.set_training_data(X, y)
    for epoch in range(epochs):
        be.train_epoch(epoch=epoch, seed=seed, batch_size=batch_size)


@pytest.mark.parametrize("k", [1, 8, 32, 128])
@pytest.mark.parametrize("cfg", [
    KernelConfig(n_classes=3, n_clauses=6, n_literals=2 * 45, T=7, s=3.9, tally="sync"),
    KernelConfig(n_classes=1, n_clauses=9, n_literals=2 * 70, T=12, s=2.0, state_bits=6, regression=True,
                 tally="sync", regression_rule="quadratic"),
    KernelConfig(n_classes=1, n_clauses=9, n_literals=2 * 70, T=12, s=2.0, state_bits=6, regression=True,
                 tally="sync", order="staggered"),
])
def test_simulated_warps_give_the_cpu_results_with_synchronous_tallies(fake_warps, cfg, k):
    """The GPU code, every clause group running concurrently, k threads per clause: synchronous tallies are
    deterministic, so three epochs end exactly where the CPU build's do (TA states, tallies, stored outputs,
    feedback counters), and inference agrees. A group of 4 warps (128) on fewer examples: each launch is a host
    thread per GPU thread. These clauses have fewer words than a group has threads, so some threads
    of a group have no chunk."""
    from asynctm.backends.cuda import CudaBackend

    rng = np.random.default_rng(4)
    n = 50 if k <= 32 else 20
    X, _ = pack_literals(rng.integers(0, 2, (n, cfg.n_literals // 2)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, n)).astype(np.int32)
    gpu, host = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k)), cpu.CpuBackend(cfg, n_threads=1)
    for be in (gpu, host):
        _train(be, X, y, epochs=3, batch_size=16)
    np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state())
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
    np.testing.assert_array_equal(gpu.feedback_event_counts(), host.feedback_event_counts())
    assert host.feedback_event_counts()[:, 0].sum() > 0 and host.feedback_event_counts()[:, 1].sum() > 0
    np.testing.assert_array_equal(gpu.class_sums(X), host.class_sums(X))
    gpu.close()


@pytest.mark.parametrize("k", [1, 4, 32, 64, 128])
def test_simulated_warps_one_example_batches_equal_the_cpu(fake_warps, k):
    """Asynchronous tallies with one example per batch: no two clause groups race on a tally, so every batch
    (each after fresh tallies) ends where the CPU build's does."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=10, n_literals=2 * 300, T=8, s=3.9)  # 19 words: rounds of chunks
    rng = np.random.default_rng(5)
    X, _ = pack_literals(rng.integers(0, 2, (40, 300)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 40)).astype(np.int32)
    gpu, host = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k)), cpu.CpuBackend(cfg, n_threads=1)
    state = rng.integers(0, 2**32, (cfg.n_clauses_total, cfg.state_bits, cfg.n_words), dtype=np.uint64)
    state = state.astype(np.uint32)
    state[:, -1] &= rng.integers(0, 2**32, state[:, -1].shape, dtype=np.uint64).astype(np.uint32)  # fewer includes
    _one_example_batches_agree(gpu, host, X, y, state, [0, 7, 31, 32, 39, 7], seed=11)
    gpu.close()


def _one_example_batches_agree(gpu, host, X, y, state, examples, seed) -> list:
    """Batches of one example each, from ``state`` again before each (no two groups race on a tally): the GPU
    build ends where the CPU build does, step by step; the clause outputs of every step."""
    outputs = []
    for step, e in enumerate(examples):
        for be in (gpu, host):
            be.set_ta_state(state)
            be.set_training_data(X, y)
            be.train_batch(e, e + 1, epoch=step, seed=seed)
        np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state(), err_msg=f"step {step}")
        np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies(), err_msg=f"step {step}")
        np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
        outputs.append(host.get_clause_output_bits())
        state = host.get_ta_state()
    np.testing.assert_array_equal(gpu.feedback_event_counts(), host.feedback_event_counts())
    return outputs


@pytest.mark.parametrize("k", [1, 32, 128])
def test_simulated_warps_keep_the_tallies_exact(fake_warps, k):
    """Whole asynchronous epochs, clause groups racing on the tallies: every tally stays the sum of its class's
    stored votes (Algorithm 1's atomic adds), and the machine learns. Groups of several warps on half the examples
    and epochs (every visit meets at the group's barriers, each a meeting of host threads here)."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=8, n_literals=2 * 100, T=6, s=3.9, threads_per_clause=k)
    rng = np.random.default_rng(6)
    n, epochs = (120, 4) if k <= 32 else (40, 2)
    X01 = rng.integers(0, 2, (n, 100))
    X, _ = pack_literals(X01)
    label = X01[:, 0] ^ X01[:, 1]
    y = np.where(np.arange(2)[:, None] == label[None, :], cfg.T, -cfg.T).astype(np.int32)
    gpu = CudaBackend(cfg)
    gpu.init_state()
    gpu.set_training_data(X, y)
    pol = np.tile(np.where(np.arange(cfg.n_clauses) % 2, -1, 1), cfg.n_classes)[:, None]
    for epoch in range(epochs):
        gpu.train_epoch(epoch=epoch, seed=3, batch_size=20)
        bits = np.unpackbits(gpu.get_clause_output_bits().view(np.uint8), axis=1, bitorder="little")[:, :n]
        stored = (pol * bits).reshape(cfg.n_classes, cfg.n_clauses, n).sum(axis=1)
        np.testing.assert_array_equal(gpu.get_tallies(), stored, err_msg=f"epoch {epoch}")
    assert gpu.feedback_event_counts().sum() > 0 and gpu.get_ta_state()[:, -1].any()  # it learned something
    gpu.close()


@pytest.mark.parametrize("k", [1, 4, 32, 64, 128])
def test_simulated_warps_class_sums_with_a_group_per_class_and_example(fake_warps, k):
    """Inference with k threads per (class, example), each taking every k-th clause: the CPU's class sums, on
    clauses of 1-3 included literals (so that their votes differ from example to example). With 64 and 128 a
    class's 40 clauses leave some threads of the group without a clause."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=3, n_clauses=40, n_literals=2 * 50, T=15, s=3.9, threads_per_clause=k)
    rng = np.random.default_rng(7)
    X, _ = pack_literals(rng.integers(0, 2, (60, 50)))
    include = np.zeros((cfg.n_clauses_total, cfg.n_literals), dtype=bool)
    for g in range(cfg.n_clauses_total):
        include[g, rng.choice(cfg.n_literals, rng.integers(1, 4), replace=False)] = True
    include[::7] = False  # some empty clauses: they vote 0 at inference
    state = np.zeros((cfg.n_clauses_total, cfg.state_bits, cfg.n_words), dtype=np.uint32)
    state[:, -1] = np.packbits(np.pad(include, ((0, 0), (0, 32 * cfg.n_words - cfg.n_literals))), axis=1,
                               bitorder="little").view(np.uint32)
    gpu, host = CudaBackend(cfg), cpu.CpuBackend(cfg, n_threads=1)
    for be in (gpu, host):
        be.set_ta_state(state)
    sums = host.class_sums(X)
    assert len(np.unique(sums)) > 5  # the votes really differ
    np.testing.assert_array_equal(gpu.class_sums(X), sums)
    gpu.close()


def _sparse_includes(rng, cfg, per_clause=(1, 5)) -> np.ndarray:
    """TA states with random lower planes and a few included literals per clause, anywhere in its words; every
    fourth clause empty."""
    state = rng.integers(0, 2**32, (cfg.n_clauses_total, cfg.state_bits, cfg.n_words), dtype=np.uint64)
    state = state.astype(np.uint32)
    include = np.zeros((cfg.n_clauses_total, 32 * cfg.n_words), dtype=bool)
    for g in range(cfg.n_clauses_total):
        if g % 4 != 3:
            include[g, rng.choice(cfg.n_literals, rng.integers(*per_clause), replace=False)] = True
    state[:, -1] = np.packbits(include, axis=1, bitorder="little").view(np.uint32)
    return state


def test_simulated_gpu_stored_outputs_over_many_examples(fake_warps):
    """The stored outputs from scratch on 4,141 examples: a GPU thread's work item is one word of 32 examples and a
    CPU thread's 64 such words (2,048 examples), so the builds split the work differently; they agree, the empty
    clauses (every fourth: 1 on every example) included."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=6, n_literals=2 * 300, T=8, s=3.9)
    rng = np.random.default_rng(21)
    X, _ = pack_literals(rng.integers(0, 2, (4141, 300)))
    state = _sparse_includes(rng, cfg, per_clause=(1, 3))
    gpu, host = CudaBackend(cfg), cpu.CpuBackend(cfg, n_threads=2)
    for be in (gpu, host):
        be.set_ta_state(state)
    outputs = host.training_clause_outputs(X)
    np.testing.assert_array_equal(gpu.training_clause_outputs(X), outputs)
    assert outputs[3::4].all() and 0 < outputs.mean() < 1
    gpu.close()


@pytest.mark.parametrize("k", [32, 64, 128])
def test_simulated_warps_wide_clauses_equal_the_cpu(fake_warps, k):
    """Clauses of 513 words, more than a group of 128 threads takes in one round (256 words): every thread of a
    group scans and updates several chunks, and with a few included literals per clause the first included
    literal that is 0 lies in any round and any warp of the group (the minimum over the group's warps). Batches of
    one example (no two groups race on a tally) end where the CPU build's do, and so do the class sums."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=4, n_literals=2 * 8200, T=8, s=3.9)
    rng = np.random.default_rng(8)
    X, _ = pack_literals(rng.integers(0, 2, (24, 8200)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 24)).astype(np.int32)
    gpu, host = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k)), cpu.CpuBackend(cfg, n_threads=1)
    state = _sparse_includes(rng, cfg)
    outputs = _one_example_batches_agree(gpu, host, X, y, state, [0, 5, 23, 5, 11, 17, 2], seed=13)
    assert host.feedback_event_counts()[:, 0].sum() > 0 and host.feedback_event_counts()[:, 1].sum() > 0
    assert 0 < np.unpackbits(np.asarray(outputs).view(np.uint8)).mean() < 1  # the clauses output 0 and 1
    state = _sparse_includes(rng, cfg, per_clause=(1, 3))
    for be in (gpu, host):
        be.set_ta_state(state)
    np.testing.assert_array_equal(gpu.class_sums(X), host.class_sums(X))
    gpu.close()


def _sync_epoch_agrees(gpu, host, state, X, y) -> None:
    """From ``state``, one epoch of synchronous tallies (deterministic) on both backends ends in the same automata,
    tallies, stored outputs and feedback counts; the GPU backend is closed after."""
    for be in (gpu, host):
        be.set_ta_state(state)
        be.set_training_data(X, y)
        be.train_epoch(epoch=0, seed=5, batch_size=6)
    np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state())
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
    np.testing.assert_array_equal(gpu.feedback_event_counts(), host.feedback_event_counts())
    assert host.feedback_event_counts().sum() > 0
    gpu.close()


@pytest.mark.parametrize("k", [64, 128])
def test_simulated_warps_wide_clauses_with_synchronous_tallies(fake_warps, k):
    """One epoch of synchronous tallies (deterministic) on clauses of 513 words: the groups of 2 and 4 warps end
    where the CPU build does."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=4, n_literals=2 * 8200, T=8, s=3.9, tally="sync")
    rng = np.random.default_rng(9)
    X, _ = pack_literals(rng.integers(0, 2, (12, 8200)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 12)).astype(np.int32)
    gpu, host = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k)), cpu.CpuBackend(cfg, n_threads=1)
    state = _sparse_includes(rng, cfg)
    _sync_epoch_agrees(gpu, host, state, X, y)


@pytest.mark.slow
@pytest.mark.parametrize(("k", "features"), [(256, 33000), (512, 300), (1024, 33000), (1024, 300)],
                         ids=["256-2063_words", "512-19_words", "1024-2063_words", "1024-19_words"])
def test_simulated_blocks_per_clause_equal_the_cpu(fake_warps, k, features):
    """Groups of 256 to 1,024 threads, each a block of its own (up to 32 warps meeting at the block's barrier):
    2,063 words per clause, more than a group of 1,024 takes in one round (2,048: every thread has a chunk, some
    two), or 19 (most threads of the group have none). Batches of one example with asynchronous tallies (no two
    groups race on a tally), then the class sums, then an epoch of synchronous tallies (deterministic): each ends
    where the CPU build does. Two clauses per class, so that a launch stays a few thousand host threads."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=2, n_literals=2 * features, T=8, s=3.9)
    rng = np.random.default_rng(10)
    X, _ = pack_literals(rng.integers(0, 2, (12, features)))
    y = np.where(rng.integers(0, 2, (cfg.n_classes, 12)) == 1, cfg.T, -cfg.T).astype(np.int32)
    gpu, host = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k)), cpu.CpuBackend(cfg, n_threads=1)
    assert gpu.block == k
    state = _sparse_includes(rng, cfg)
    outputs = _one_example_batches_agree(gpu, host, X, y, state, [0, 5, 11, 5, 2], seed=13)
    assert (host.feedback_event_counts().sum(axis=0) > 0).all()  # type Ia, Ib and II feedback
    assert 0 < np.unpackbits(np.asarray(outputs).view(np.uint8)).mean() < 1  # the clauses output 0 and 1
    state = _sparse_includes(rng, cfg, per_clause=(1, 3))
    for be in (gpu, host):
        be.set_ta_state(state)
    np.testing.assert_array_equal(gpu.class_sums(X), host.class_sums(X))
    gpu.close()

    sync = dataclasses.replace(cfg, tally="sync")
    gpu, host = CudaBackend(dataclasses.replace(sync, threads_per_clause=k)), cpu.CpuBackend(sync, n_threads=1)
    state = _sparse_includes(rng, cfg)
    _sync_epoch_agrees(gpu, host, state, X, y)


@pytest.mark.slow
def test_simulated_blocks_per_clause_keep_the_tallies_exact(fake_warps):
    """Whole asynchronous epochs with a block of 1,024 threads per clause, the groups racing on the tallies within
    each launch (a batch of 8 examples, every visit meeting at the block's barriers): every tally stays the sum of
    its class's stored votes."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=2, n_literals=2 * 100, T=6, s=3.9, threads_per_clause=1024)
    rng = np.random.default_rng(11)
    X01 = rng.integers(0, 2, (16, 100))
    X, _ = pack_literals(X01)
    y = np.where(np.arange(2)[:, None] == (X01[:, 0] ^ X01[:, 1])[None, :], cfg.T, -cfg.T).astype(np.int32)
    gpu = CudaBackend(cfg)
    gpu.init_state()
    gpu.set_training_data(X, y)
    pol = np.tile(np.where(np.arange(cfg.n_clauses) % 2, -1, 1), cfg.n_classes)[:, None]
    for epoch in range(2):
        gpu.train_epoch(epoch=epoch, seed=3, batch_size=8)
        bits = np.unpackbits(gpu.get_clause_output_bits().view(np.uint8), axis=1, bitorder="little")[:, :16]
        stored = (pol * bits).reshape(cfg.n_classes, cfg.n_clauses, 16).sum(axis=1)
        np.testing.assert_array_equal(gpu.get_tallies(), stored, err_msg=f"epoch {epoch}")
    assert gpu.feedback_event_counts().sum() > 0 and gpu.get_ta_state()[:, -1].any()  # it learned something
    gpu.close()


@pytest.mark.parametrize(("k", "features"), [(1, 300), (4, 300), (32, 8200), (64, 8200), (128, 8200)],
                         ids=["1-19_words", "4-19_words", "32-513_words", "64-513_words", "128-513_words"])
def test_shared_state_one_example_batches_equal_the_cpu(fake_warps, k, features):
    """Each clause's automata in its block's shared memory for a batch (shared_state): copied in, trained on and
    copied back, batches of one example (no two groups race on a tally) end where the CPU build's do, step by step.
    The launch gets one clause's planes per group of its block (with one thread per clause, 128 clauses of 19
    words: more than the 48 KiB any launch may have, so the kernel is allowed more first)."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=4, n_literals=2 * features, T=8, s=3.9)
    rng = np.random.default_rng(12)
    X, _ = pack_literals(rng.integers(0, 2, (24, features)))
    y = rng.integers(-cfg.T, cfg.T + 1, (cfg.n_classes, 24)).astype(np.int32)
    gpu = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k, shared_state=True))
    host = cpu.CpuBackend(cfg, n_threads=1)
    outputs = _one_example_batches_agree(gpu, host, X, y, _sparse_includes(rng, cfg), [0, 5, 23, 5, 11, 2], seed=13)
    assert (host.feedback_event_counts().sum(axis=0) > 0).all()  # type Ia, Ib and II feedback
    assert 0 < np.unpackbits(np.asarray(outputs).view(np.uint8)).mean() < 1  # the clauses output 0 and 1
    import pycuda.compiler

    assert pycuda.compiler.shared["tm_train_batch"] == {gpu.block // k * cfg.state_bits * cfg.n_words * 4}
    others = {name: sizes for name, sizes in pycuda.compiler.shared.items() if name != "tm_train_batch"}
    assert "tm_refresh_outputs" in others and all(sizes == {0} for sizes in others.values())  # none elsewhere
    gpu.close()


@pytest.mark.parametrize("k", [32, 64, 128])
def test_shared_state_whole_batches_equal_the_cpu(fake_warps, k):
    """One clause (regression), so nothing races on its tally: whole epochs in batches of 7 examples, the automata
    staying in shared memory across a batch's visits and written back at its end, end where the CPU build does,
    and so do the stored outputs, the tally and the feedback counts."""
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=1, n_clauses=1, n_literals=2 * 8200, T=12, s=2.0, regression=True)
    rng = np.random.default_rng(14)
    X, _ = pack_literals(rng.integers(0, 2, (30, 8200)))
    y = rng.integers(0, cfg.T + 1, (1, 30)).astype(np.int32)
    gpu = CudaBackend(dataclasses.replace(cfg, threads_per_clause=k, shared_state=True))
    host = cpu.CpuBackend(cfg, n_threads=1)
    state = _sparse_includes(rng, cfg)
    state[0, -1, :] = 0  # an empty clause: it outputs 1 and learns from the first visit
    for be in (gpu, host):
        be.set_ta_state(state)
        be.set_training_data(X, y)
    for epoch in range(3):
        for be in (gpu, host):
            be.train_epoch(epoch=epoch, seed=4, batch_size=7)
        np.testing.assert_array_equal(gpu.get_ta_state(), host.get_ta_state(), err_msg=f"epoch {epoch}")
    np.testing.assert_array_equal(gpu.get_tallies(), host.get_tallies())
    np.testing.assert_array_equal(gpu.get_clause_output_bits(), host.get_clause_output_bits())
    np.testing.assert_array_equal(gpu.feedback_event_counts(), host.feedback_event_counts())
    assert host.feedback_event_counts().sum() > 0 and not np.array_equal(host.get_ta_state(), state)
    gpu.close()


def test_shared_state_that_does_not_fit_is_refused_in_one_line(fake_warps):
    """A block whose clauses' automata exceed the GPU's shared memory per block is refused with the sizes and the
    fixes; the synchronous tallies, which have no batch to keep the automata for, are refused by the config."""
    import pycuda.compiler

    from asynctm.backends import BackendUnavailableError
    from asynctm.backends.cuda import CudaBackend

    cfg = KernelConfig(n_classes=2, n_clauses=4, n_literals=2 * 8200, T=8, s=3.9, threads_per_clause=32,
                       shared_state=True)  # 4 clauses of 8 x 513 words per block of 128 threads: 65,664 bytes
    pycuda.compiler.shared_per_block_optin = 64 * 1024
    with pytest.raises(BackendUnavailableError, match=r"needs 65,664 bytes .* at most 65,408 .*shared_state=False"):
        CudaBackend(cfg)
    CudaBackend(dataclasses.replace(cfg, threads_per_clause=128)).close()  # one clause per block: 16,416 bytes
    with pytest.raises(ValueError, match="synchronous tallies"):
        dataclasses.replace(cfg, tally="sync")
    with pytest.raises(ValueError, match="True or False"):
        dataclasses.replace(cfg, shared_state=1)
