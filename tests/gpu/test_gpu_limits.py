"""benchmarks/gpu_limits.py on the simulated GPU (tests/gpu/test_cuda_glue.py's fake PyCUDA, whose SourceModule
compiles the kernel text for the CPU): the kernels run with the arguments the script passes, the record holds
positive rates in the cost model's units, counted from the launches; without PyCUDA one line names the fix."""

from __future__ import annotations

import json
import sys
import time
import types

import numpy as np
import pytest

from asynctm import costmodel as cm
from tests.gpu.test_cuda_glue import _install_fake
from tests.helpers import load_benchmark_script

ATTRIBUTES = {"MULTIPROCESSOR_COUNT": 2, "MAX_THREADS_PER_MULTIPROCESSOR": 64, "L2_CACHE_SIZE": 64 << 10,
              "CLOCK_RATE": 1_000_000, "MEMORY_CLOCK_RATE": 2_000_000, "GLOBAL_MEMORY_BUS_WIDTH": 512}


@pytest.fixture(scope="module")
def gpu_limits():
    return load_benchmark_script("gpu_limits")


class FakeEvent:
    """A CUDA event on the simulated device, whose launches return when done: the host clock at record()."""

    def record(self, stream=None):
        self.t = time.perf_counter()
        return self

    def synchronize(self):
        return self

    def time_till(self, other) -> float:
        return 1e3 * (other.t - self.t)


@pytest.fixture
def fake_gpu(monkeypatch):
    allocations = _install_fake(monkeypatch, warps=False)
    drv = sys.modules["pycuda.driver"]
    drv.Event = FakeEvent
    drv.device_attribute = types.SimpleNamespace(**{k: k for k in ATTRIBUTES})
    monkeypatch.setattr(drv.Device, "get_attribute", lambda self, attr: ATTRIBUTES[attr], raising=False)
    monkeypatch.setattr(drv.Device, "total_memory", lambda self: 80 << 30, raising=False)
    drv.Context.get_device = lambda: drv.Device(0)
    return allocations


def test_limits_of_the_simulated_gpu(gpu_limits, fake_gpu, tmp_path, capsys):
    out = tmp_path / "limits.json"
    assert gpu_limits.main(["--array-mib", "1", "--reps", "2", "--target-s", "0.002", "--waves", "1",
                            "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    m = rec["measurements"]["gpu"]
    for key in (*cm.LIMIT_FIELDS, "draws_s"):
        assert m[key] > 0, key
    assert m["threads"] == 2 * 64 and m["scalar_ops_s"] == pytest.approx(8 * m["draws_s"])
    d = rec["detail"]
    # bytes read + written: copy reads 1 MiB and writes 1 MiB, triad reads 2 and writes 1
    assert d["copy_bytes_s"]["bytes_per_launch"] == 2 << 20 and d["triad_bytes_s"]["bytes_per_launch"] == 3 << 20
    assert m["copy_bytes_s"] == pytest.approx((2 << 20) / min(d["copy_bytes_s"]["launch_s"]))
    assert len(d["copy_bytes_s"]["launch_s"]) == 2
    w = d["word_ops_s"]
    assert w["word_ops_per_launch"] == 4 * 6 * 8 * w["passes"] * w["threads"] and w["threads"] == 128
    assert m["word_ops_s"] == pytest.approx(w["word_ops_per_launch"] / min(w["launch_s"]))
    assert d["draws_s"]["draws_per_thread"] % 4 == 0
    assert rec["gpu"]["name"] == "Simulated GPU" and rec["gpu"]["attributes"]["multiprocessors"] == 2
    assert rec["gpu"]["attributes"]["nominal_bandwidth_bytes_s"] == 2 * 2e9 * 64
    assert rec["host"] == "simulated_gpu" and len(rec["host_id"]) == 16 and rec["git"]["commit"]
    host = cm.gpu_host_from_limits(rec)
    assert host.bandwidth_bytes_s == max(m["copy_bytes_s"], m["triad_bytes_s"]) and host.threads == 128
    assert host.name == "Simulated GPU (GPU)"
    # the kernels ran on the device's buffers: the triad wrote b = a + 3 c over the filled arrays (a: i mod 1024
    # and 1, c: 0.5 and 0.25), and every buffer was freed within its guards
    n = (1 << 20) // 16
    a, b, c = (np.frombuffer(x.view().tobytes(), dtype=np.float64).reshape(n, 2) for x in fake_gpu[:3])
    np.testing.assert_array_equal(a[:, 0], np.arange(n) % 1024)
    np.testing.assert_array_equal(b, a + 3.0 * c)
    assert all(x.freed for x in fake_gpu)
    words = np.frombuffer(fake_gpu[3].view().tobytes(), dtype=np.uint32)
    assert len(set(words.tolist())) > 100  # every thread wrote its own chains' result
    # the chase: one cycle through a quarter of the 64 KiB L2 cache, whole laps, so the thread ends where it began
    ch = d["chase_s"]
    assert ch["links"] == (64 << 10) // 4 // 4 and ch["steps"] % ch["links"] == 0
    assert m["chase_s"] == pytest.approx(min(ch["launch_s"]) / ch["steps"])
    nxt = np.frombuffer(fake_gpu[5].view().tobytes(), dtype=np.uint32)
    np.testing.assert_array_equal(nxt, gpu_limits.chase_cycle(ch["links"]))
    assert np.frombuffer(fake_gpu[6].view().tobytes(), dtype=np.uint32)[0] == 0
    out = capsys.readouterr().out
    assert "Simulated GPU: copy" in out and "dependent load" in out


def test_default_name_and_refusals(gpu_limits, fake_gpu, monkeypatch, capsys):
    record, path = gpu_limits.run({"array_mib": 1, "reps": 1, "target_s": 0.001, "waves": 1}, None, [])
    assert path.name == f"host_limits_simulated_gpu_{record['host_id']}.json"
    assert path.parent == gpu_limits.HERE / "results" and not path.exists()
    # arrays that fit in 8x the L2 cache would time the cache
    monkeypatch.setitem(ATTRIBUTES, "L2_CACHE_SIZE", 1 << 20)
    assert gpu_limits.main(["--array-mib", "4"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "within 8x the L2 cache" in err and "at least 8" in err


def test_without_pycuda_one_line_names_the_fix(gpu_limits, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    assert gpu_limits.main(["--quick"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "pip install -e '.[cuda]'" in err


def test_no_gpu_is_refused(gpu_limits, fake_gpu, monkeypatch, capsys):
    monkeypatch.setattr(sys.modules["pycuda.driver"].Device, "count", staticmethod(lambda: 0))
    assert gpu_limits.main([]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: no CUDA GPU found; run gpu_limits.py on the GPU host"


def test_the_chase_is_one_cycle_through_every_entry(gpu_limits):
    for links in (1, 2, 7, 1000):
        nxt, j, seen = gpu_limits.chase_cycle(links, seed=links), 0, set()
        for _ in range(links):
            seen.add(j)
            j = int(nxt[j])
        assert j == 0 and seen == set(range(links))


def test_bytes_per_launch_counts_whole_elements(gpu_limits):
    assert gpu_limits.bytes_per_launch("copy", 1 << 30) == 2 << 30
    assert gpu_limits.bytes_per_launch("triad", 40) == 3 * 32  # two 16-byte elements
