#!/usr/bin/env python
"""A GPU's measured limits, for the cost model's bounds on our GPU builds (``asynctm.costmodel``,
``benchmarks/bound.py``): what ``host_limits.py`` measures on a CPU host, on the whole device.

Small CUDA kernels, compiled by PyCUDA (``SourceModule``, ``-O3``, as the GPU build compiles kernels/tm.cu) on our
kernels' portability layer and draws (``kernels/tm_portability.cuh``, ``tm_rng.cuh``), each timed with CUDA events,
the best of ``--reps`` launches:

- ``copy_bytes_s``: ``b[i] = a[i]`` over two arrays of ``--array-mib`` each (16-byte elements, far beyond the
  L2 cache), bytes read + written (``2 x array`` per launch);
- ``triad_bytes_s``: ``x[i] = y[i] + q z[i]`` on doubles over three such arrays (``3 x array`` per launch);
- ``word_ops_s``: 32-bit word operations per second of bitwise arithmetic like the kernels' (xor, and, or,
  shifts: ``x = (x ^ y) & (y | (x << 1)); y ^= x >> 1``, 6 operations, none of which the compiler can cancel:
  with ``y ^= x`` it rewrites the next ``x ^ y`` as the old ``y``), on 4 independent chains of registers per
  thread, ``--waves`` times the threads the GPU keeps resident (every multiprocessor full). Operations are counted
  as the source writes them, as the cost model counts the kernels' own (``violated |= include & ~x``: 2); the
  compiler fuses both alike (a 3-input LOP3 does two);
- ``draws_s``: the kernels' draws per second (``tm_mix64`` of tm_rng.cuh, on 4 independent counters per thread),
  and ``scalar_ops_s`` = 8 x ``draws_s``: a finaliser's 3 xor-shifts and 2 multiplies are 8 operations, counted as
  ``host_limits.py`` counts them, so that the cost model's scalar operations (a draw counts ``DRAW_OPS``) meet the
  same unit on both. A GPU does a 64-bit multiply or shift in several 32-bit instructions, so this is the rate of
  the draws' operations: the visits' 32-bit scalar work may run faster, and a bound limited by ``scalar`` may be
  too high by that much;
- ``chase_s``: seconds per dependent load: one thread follows ``steps`` links of one random cycle through an array
  of a quarter of the L2 cache (each load's address is the value of the one before), so the time of a link is the
  latency of a load that hits the L2 cache, where a clause's words stay between the visits of a small machine.
  The cost model's chain of one clause group (``asynctm.costmodel.chain_rounds``) waits for at least one such load
  per round, so rounds x ``chase_s`` bounds an epoch from below however idle the rest of the GPU is.

Each launch takes a fraction of a second (``--target-s`` for the in-register rates); the whole run, compiling
included, about 20 s. Writes ``benchmarks/results/host_limits_<gpu>_<host id>.json`` (the limits under
``measurements.gpu``, read by ``asynctm.costmodel.gpu_host_from_limits``; not ``gpu_*.json``, the GPU benchmark
records' pattern that ``asynctm.artifacts.evidence_cost`` reads) with provenance (``asynctm.provenance``).

    python benchmarks/gpu_limits.py [--quick] [--array-mib 1024] [--reps 5] [--target-s 0.05] [--out PATH | --out-dir D]
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent

SOURCE = r"""
// benchmarks/gpu_limits.py: the measurement kernels, after kernels/tm_portability.cuh and tm_rng.cuh.
#ifdef __CUDACC__
typedef ulonglong2 gl_u64x2;  // 16 bytes: one vector load or store per element
typedef double2 gl_f64x2;
#define GL_UNROLL _Pragma("unroll")
#else
typedef struct { tm_u64 x, y; } gl_u64x2;
typedef struct { double x, y; } gl_f64x2;
#define GL_UNROLL
#endif

#define GL_Q 3.0
#define GL_STEPS 8  // per pass and chain, 6 word operations each
#define GL_STEP(x, y) do { x = (x ^ y) & (y | (x << 1)); y ^= x >> 1; } while (0)

TM_KERNEL void gl_fill(gl_f64x2 *a, gl_f64x2 *b, gl_f64x2 *c, tm_u64 n)
{
    TM_PARALLEL_FOR(i, n) {
        a[i].x = (double)(i & 1023);
        a[i].y = 1.0;
        b[i].x = 0.0;
        b[i].y = 0.0;
        c[i].x = 0.5;
        c[i].y = 0.25;
    }
}

TM_KERNEL void gl_copy(const gl_u64x2 *TM_RESTRICT a, gl_u64x2 *TM_RESTRICT b, tm_u64 n)
{
    TM_PARALLEL_FOR(i, n) b[i] = a[i];
}

TM_KERNEL void gl_triad(gl_f64x2 *TM_RESTRICT x, const gl_f64x2 *TM_RESTRICT y, const gl_f64x2 *TM_RESTRICT z,
                        tm_u64 n)
{
    TM_PARALLEL_FOR(i, n) {
        const gl_f64x2 u = y[i], v = z[i];
        gl_f64x2 r;
        r.x = u.x + GL_Q * v.x;
        r.y = u.y + GL_Q * v.y;
        x[i] = r;
    }
}

// `passes` x GL_STEPS steps on 4 independent chains per thread: 4 x 6 x GL_STEPS word operations per pass.
TM_KERNEL void gl_bitwise(tm_u32 *out, tm_u64 n, int passes)
{
    TM_PARALLEL_FOR(i, n) {
        tm_u32 x0 = 0x9E3779B9u * (tm_u32)(i + 1), y0 = 0x85EBCA6Bu * (tm_u32)(i + 7);
        tm_u32 x1 = x0 ^ 0x2545F491u, y1 = y0 + 1u, x2 = x0 + 3u, y2 = y0 ^ 0x68E31DA4u, x3 = ~x0, y3 = ~y0;
        for (int p = 0; p < passes; ++p) {
            GL_UNROLL
            for (int k = 0; k < GL_STEPS; ++k) {
                GL_STEP(x0, y0);
                GL_STEP(x1, y1);
                GL_STEP(x2, y2);
                GL_STEP(x3, y3);
            }
        }
        out[i] = x0 ^ y0 ^ x1 ^ y1 ^ x2 ^ y2 ^ x3 ^ y3;
    }
}

// `draws` (a multiple of 4) of the kernels' finaliser per thread, on 4 independent counters.
TM_KERNEL void gl_draws(tm_u64 *out, tm_u64 n, int draws)
{
    TM_PARALLEL_FOR(i, n) {
        const tm_u64 base = (tm_u64)i << 32;
        tm_u64 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int d = 0; d < draws; d += 4) {
            s0 ^= tm_mix64(base + d);
            s1 ^= tm_mix64(base + d + 1);
            s2 ^= tm_mix64(base + d + 2);
            s3 ^= tm_mix64(base + d + 3);
        }
        out[i] = s0 ^ s1 ^ s2 ^ s3;
    }
}

// One thread follows `steps` links of the cycle in `next`, each load's address the value of the one before.
TM_KERNEL void gl_chase(const tm_u32 *TM_RESTRICT next, tm_u32 *out, int steps)
{
    TM_PARALLEL_FOR(i, 1) {
        tm_u32 j = 0;
        for (int k = 0; k < steps; ++k) j = next[j];
        out[i] = j;
    }
}
"""

ELEMENT_BYTES = 16  # gl_u64x2, gl_f64x2
COPY_ARRAYS, TRIAD_ARRAYS = 2, 3  # arrays a launch reads or writes once each
WORD_OPS_PER_PASS = 4 * 6 * 8  # chains x operations per step x GL_STEPS (per thread)
MIX64_OPS = 8  # as benchmarks/host_limits.py counts a finaliser: 3 xor-shifts (6) and 2 multiplies
DRAWS_STEP = 4  # gl_draws: draws per thread come in fours
BLOCK = 256
MAX_PASSES = 1 << 30  # the kernels' int counts
L2_MULTIPLE = 8  # each array at least this many times the L2 cache
CHASE_L2_SHARE = 4  # the chase's array: a quarter of the L2 cache
CHASE_MIN_LINKS = 1 << 10
DEFAULTS = {"array_mib": 1024, "reps": 5, "target_s": 0.05, "waves": 4}
QUICK = {"array_mib": None, "reps": 3, "target_s": 0.02, "waves": 2}  # arrays: L2_MULTIPLE x the L2 cache
_INCLUDE = re.compile(r'^\s*#\s*(include\s+"[^"]+"|pragma\s+once)\s*$', re.M)


class GpuLimitsError(RuntimeError):
    """The measurement cannot run here; the message names the problem and the fix, on one line."""


def kernel_text() -> str:
    """The measurement kernels after the kernels' portability layer and draws, their own includes inlined."""
    from asynctm.backends import kernel_dir

    folder = kernel_dir()
    return "".join(_INCLUDE.sub("", (folder / name).read_text()) + "\n"
                   for name in ("tm_portability.cuh", "tm_rng.cuh")) + SOURCE


def bytes_per_launch(kind: str, array_bytes: int) -> int:
    """Bytes a copy or triad launch reads + writes over arrays of ``array_bytes`` (whole elements)."""
    arrays = {"copy": COPY_ARRAYS, "triad": TRIAD_ARRAYS}[kind]
    return arrays * (array_bytes // ELEMENT_BYTES) * ELEMENT_BYTES


def driver():
    """``pycuda.driver``, initialised, with at least one GPU; otherwise one line naming the fix."""
    try:
        import pycuda.driver as drv
    except Exception as exc:  # noqa: BLE001 - any import failure means "no PyCUDA or no driver here"
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GpuLimitsError(f"gpu_limits.py needs PyCUDA and an NVIDIA driver, but importing pycuda.driver failed "
                             f"({why}); run it on the GPU host with the cuda extra installed "
                             "(pip install -e '.[cuda]')") from None
    try:
        drv.init()
        count = drv.Device.count()
    except Exception as exc:  # noqa: BLE001
        raise GpuLimitsError(f"the CUDA driver did not initialise ({str(exc).strip().splitlines()[0]}); run "
                             "gpu_limits.py on a host with a working NVIDIA GPU") from None
    if count == 0:
        raise GpuLimitsError("no CUDA GPU found; run gpu_limits.py on the GPU host")
    return drv


def device_attributes(drv, dev) -> dict:
    """What sizes the launches and the arrays (multiprocessors, resident threads, L2), and the memory's nominal
    bandwidth (2 x memory clock x bus width) for reference; an attribute the driver lacks is None."""
    names = {"multiprocessors": "MULTIPROCESSOR_COUNT", "max_threads_per_multiprocessor":
             "MAX_THREADS_PER_MULTIPROCESSOR", "l2_cache_bytes": "L2_CACHE_SIZE", "clock_khz": "CLOCK_RATE",
             "memory_clock_khz": "MEMORY_CLOCK_RATE", "memory_bus_bits": "GLOBAL_MEMORY_BUS_WIDTH"}
    out = {}
    for key, attr in names.items():
        try:
            out[key] = int(dev.get_attribute(getattr(drv.device_attribute, attr)))
        except Exception:  # noqa: BLE001 - an attribute this driver does not report
            out[key] = None
    try:
        out["memory_bytes"] = int(dev.total_memory())
    except Exception:  # noqa: BLE001
        out["memory_bytes"] = None
    if out["memory_clock_khz"] and out["memory_bus_bits"]:
        out["nominal_bandwidth_bytes_s"] = 2.0 * out["memory_clock_khz"] * 1e3 * out["memory_bus_bits"] / 8
    for key in ("multiprocessors", "max_threads_per_multiprocessor"):
        if not out[key]:
            raise GpuLimitsError(f"the driver does not report the device's {key}; update the NVIDIA driver")
    return out


def _timed(drv, launch, reps: int) -> list[float]:
    """Seconds of ``reps`` launches, each between two CUDA events."""
    start, end = drv.Event(), drv.Event()
    out = []
    for _ in range(reps):
        start.record()
        launch()
        end.record()
        end.synchronize()
        out.append(start.time_till(end) / 1e3)
    return out


def _calibrated(drv, launch, reps: int, target_s: float, start: int, step: int = 1) -> tuple[int, list[float]]:
    """``launch(work)`` with ``work`` grown (in multiples of ``step``) until one launch takes ``target_s``; then
    ``reps`` timed launches of that work."""
    work = start
    launch(work)  # warm-up: the kernel's first launch loads it
    while True:
        best = min(_timed(drv, lambda w=work: launch(w), 1))
        if best >= target_s or work >= MAX_PASSES // 8:
            break
        grow = min(8.0, max(2.0, 1.2 * target_s / max(best, 1e-9)))
        work = min(MAX_PASSES // 8, -(-int(work * grow) // step) * step)
    return work, _timed(drv, lambda: launch(work), reps)


def measure(drv, module, dev_attrs: dict, *, array_bytes: int, reps: int, target_s: float, waves: int) -> dict:
    """The rates (``measurements.gpu``) and the launches behind them (``detail``)."""
    import numpy as np

    n = array_bytes // ELEMENT_BYTES

    def over(items: int) -> dict:  # one thread per item (grid-stride loops would cover any rest)
        return {"block": (BLOCK, 1, 1), "grid": (max(1, min(-(-items // BLOCK), 1 << 30)), 1)}

    fill, copy, triad = (module.get_function(f"gl_{k}") for k in ("fill", "copy", "triad"))
    a, b, c = (drv.mem_alloc(n * ELEMENT_BYTES) for _ in range(3))
    try:
        fill(a, b, c, np.uint64(n), **over(n))

        def copy_launch():
            copy(a, b, np.uint64(n), **over(n))

        def triad_launch():
            triad(b, a, c, np.uint64(n), **over(n))

        copy_launch()  # warm-up: the module's first launches load it
        copy_s = _timed(drv, copy_launch, reps)
        triad_launch()
        triad_s = _timed(drv, triad_launch, reps)
    finally:
        for buf in (a, b, c):
            buf.free()
    resident = dev_attrs["multiprocessors"] * dev_attrs["max_threads_per_multiprocessor"]
    threads = waves * resident
    out32, out64 = drv.mem_alloc(4 * threads), drv.mem_alloc(8 * threads)
    try:
        bitwise, draws = module.get_function("gl_bitwise"), module.get_function("gl_draws")

        def bitwise_launch(passes: int):
            bitwise(out32, np.uint64(threads), np.int32(passes), **over(threads))

        def draws_launch(per_thread: int):
            draws(out64, np.uint64(threads), np.int32(per_thread), **over(threads))

        passes, word_s = _calibrated(drv, bitwise_launch, reps, target_s, 1)
        per_thread, draw_s = _calibrated(drv, draws_launch, reps, target_s, DRAWS_STEP, DRAWS_STEP)
    finally:
        out32.free()
        out64.free()
    links, steps, chase = chase_latency(drv, module, dev_attrs, reps, target_s)
    copy_bytes, triad_bytes = bytes_per_launch("copy", array_bytes), bytes_per_launch("triad", array_bytes)
    word_ops = float(WORD_OPS_PER_PASS) * passes * threads
    n_draws = float(per_thread) * threads
    rates = {"copy_bytes_s": copy_bytes / min(copy_s), "triad_bytes_s": triad_bytes / min(triad_s),
             "word_ops_s": word_ops / min(word_s), "draws_s": n_draws / min(draw_s)}
    rates["scalar_ops_s"] = MIX64_OPS * rates["draws_s"]
    rates["chase_s"] = min(chase) / steps
    rates["threads"] = resident
    detail = {"copy_bytes_s": {"bytes_per_launch": copy_bytes, "launch_s": copy_s},
              "triad_bytes_s": {"bytes_per_launch": triad_bytes, "launch_s": triad_s},
              "word_ops_s": {"threads": threads, "passes": passes, "word_ops_per_launch": word_ops,
                             "launch_s": word_s},
              "draws_s": {"threads": threads, "draws_per_thread": per_thread, "draws_per_launch": n_draws,
                          "launch_s": draw_s},
              "chase_s": {"links": links, "bytes": 4 * links, "steps": steps, "launch_s": chase},
              "block": BLOCK}
    return {"rates": rates, "detail": detail}


def chase_cycle(links: int, seed: int = 0):
    """``next`` of one cycle through all ``links`` entries in a random order, as uint32."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(links).astype(np.uint32)
    nxt = np.empty(links, dtype=np.uint32)
    nxt[order] = np.roll(order, -1)
    return nxt


def chase_latency(drv, module, dev_attrs: dict, reps: int, target_s: float) -> tuple[int, int, list[float]]:
    """(links, steps, launch seconds) of the dependent-load chase through a quarter of the L2 cache."""
    import numpy as np

    l2 = dev_attrs.get("l2_cache_bytes") or 0
    links = max(CHASE_MIN_LINKS, l2 // CHASE_L2_SHARE // 4)
    nxt = chase_cycle(links)
    buf, out = drv.mem_alloc(nxt.nbytes), drv.mem_alloc(4)
    try:
        drv.memcpy_htod(buf, nxt)
        chase = module.get_function("gl_chase")

        def launch(steps: int):
            chase(buf, out, np.int32(steps), block=(1, 1, 1), grid=(1, 1))

        steps, times = _calibrated(drv, launch, reps, target_s, links, links)  # whole laps of the cycle
    finally:
        buf.free()
        out.free()
    return links, steps, times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smaller and fewer launches (" + ", ".join(
                       f"{k} {f'{L2_MULTIPLE} x the L2 cache' if v is None else v}" for k, v in QUICK.items())
                   + ")")
    p.add_argument("--array-mib", type=int, default=None,
                   help=f"MiB per array of the bandwidth launches (default {DEFAULTS['array_mib']})")
    p.add_argument("--reps", type=int, default=None,
                   help=f"launches per rate, the best kept (default {DEFAULTS['reps']})")
    p.add_argument("--target-s", type=float, default=None,
                   help=f"seconds per launch of the in-register rates (default {DEFAULTS['target_s']})")
    p.add_argument("--waves", type=int, default=None,
                   help=f"threads launched, in multiples of those the GPU keeps resident (default {DEFAULTS['waves']})")
    p.add_argument("--out", default=None,
                   help="output JSON (default benchmarks/results/host_limits_<gpu>_<host id>.json)")
    p.add_argument("--out-dir", default=None, help="the folder of the default-named output (instead of --out)")
    args = p.parse_args(argv)
    opts = {k: getattr(args, k) if getattr(args, k) is not None else (QUICK if args.quick else DEFAULTS)[k]
            for k in DEFAULTS}
    if (opts["array_mib"] is not None and opts["array_mib"] < 1) or opts["reps"] < 1 or not opts["target_s"] > 0 \
            or opts["waves"] < 1:
        p.error("--array-mib, --reps and --waves must be at least 1, --target-s positive")
    try:
        record, out = run(opts, args.out, argv, args.out_dir)
    except GpuLimitsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    from asynctm.io import write_json_atomic

    write_json_atomic(out, record, sort_keys=False)
    m = record["measurements"]["gpu"]
    print(f"{record['gpu'].get('name')}: copy {m['copy_bytes_s'] / 1e9:.0f} GB/s, triad {m['triad_bytes_s'] / 1e9:.0f} "
          f"GB/s, word ops {m['word_ops_s'] / 1e12:.2f} T/s, draws {m['draws_s'] / 1e9:.1f} G/s (scalar "
          f"{m['scalar_ops_s'] / 1e9:.0f} G ops/s), dependent load {m['chase_s'] * 1e9:.0f} ns")
    print(f"wrote {out}")
    return 0


def run(opts: dict, out: str | None, argv, out_dir: str | None = None) -> tuple[dict, Path]:
    """Measure on this host's GPU: the record and where it goes."""
    drv = driver()
    from asynctm.backends import BackendUnavailableError
    from asynctm.backends.cuda import context
    from asynctm.provenance import cpu_info, git_info, gpu_info, host_id, slug, versions

    try:
        dev = context().get_device()
    except BackendUnavailableError as exc:
        raise GpuLimitsError(f"{exc}; set CUDA_DEVICE to a present GPU") from None
    attrs = device_attributes(drv, dev)
    l2 = attrs.get("l2_cache_bytes") or 0
    if opts["array_mib"] is None:  # --quick: the smallest arrays that time the memory, not the cache
        opts = {**opts, "array_mib": max(1, -(-L2_MULTIPLE * l2 // 2**20))}
    array_bytes = opts["array_mib"] << 20
    if array_bytes < L2_MULTIPLE * l2:
        raise GpuLimitsError(f"--array-mib {opts['array_mib']} is within {L2_MULTIPLE}x the L2 cache "
                             f"({l2 / 2**20:g} MiB): the copy would time the cache; pass at least "
                             f"{-(-L2_MULTIPLE * l2 // 2**20)}")
    free, _total = drv.mem_get_info()
    if free < TRIAD_ARRAYS * array_bytes + (64 << 20):
        raise GpuLimitsError(f"--array-mib {opts['array_mib']} needs {TRIAD_ARRAYS} arrays, {free / 2**20:.0f} MiB "
                             "are free on the GPU; pass a smaller --array-mib")
    try:
        from pycuda.compiler import SourceModule

        module = SourceModule(kernel_text(), no_extern_c=True, options=["-O3"])
    except Exception as exc:  # noqa: BLE001 - nvcc's failure, whatever PyCUDA wraps it in
        lines = [ln for ln in str(exc).splitlines() if "error" in ln.lower()] or str(exc).splitlines() or ["?"]
        raise GpuLimitsError(f"compiling the measurement kernels failed ({lines[0].strip()}); check nvcc (the "
                             "CUDA toolkit on PATH) and PyCUDA's install") from None
    measured = measure(drv, module, attrs, array_bytes=array_bytes, reps=opts["reps"], target_s=opts["target_s"],
                       waves=opts["waves"])
    gpu = {**(gpu_info() or {}), "attributes": attrs}
    gpu.setdefault("name", dev.name())
    hid = host_id()
    record = {
        "generated_by": "benchmarks/gpu_limits.py",
        "host": slug(gpu["name"]),
        "host_id": hid,
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": git_info(),
        "versions": versions(),
        "cpu": cpu_info(),
        "gpu": gpu,
        "compile": "PyCUDA SourceModule, options -O3, no_extern_c; kernels/tm_portability.cuh and tm_rng.cuh inlined",
        "array_mib": opts["array_mib"],
        "reps": opts["reps"],
        "target_s": opts["target_s"],
        "waves": opts["waves"],
        "units": {"copy_bytes_s": f"bytes read + written per second ({COPY_ARRAYS} arrays of array_mib), best launch",
                  "triad_bytes_s": f"bytes read + written per second ({TRIAD_ARRAYS} arrays of array_mib), best "
                                   "launch",
                  "word_ops_s": f"32-bit word operations per second ({WORD_OPS_PER_PASS} per thread and pass, in "
                                "registers, as the source writes them), best launch",
                  "scalar_ops_s": f"scalar operations per second ({MIX64_OPS} per mix64 finaliser, as "
                                  "benchmarks/host_limits.py counts them; the cost model charges a draw DRAW_OPS)",
                  "draws_s": "mix64 finalisers (tm_rng.cuh's tm_mix64) per second, best launch",
                  "chase_s": f"seconds per dependent load of one thread through 1/{CHASE_L2_SHARE} of the L2 cache "
                             "(one random cycle), best launch",
                  "threads": "threads the GPU keeps resident (multiprocessors x their most threads)"},
        "note": "timed by CUDA events around each launch, the best of reps; the in-register rates with waves x the "
                "resident threads; a GPU does 64-bit multiplies and shifts in several 32-bit instructions, so "
                "scalar_ops_s is the rate of the draws' operations, and 32-bit scalar work may run faster",
        "measurements": {"gpu": measured["rates"]},
        "detail": measured["detail"],
    }
    folder = Path(out_dir) if out_dir else HERE / "results"
    return record, Path(out) if out else folder / f"host_limits_{record['host']}_{hid}.json"


if __name__ == "__main__":
    sys.exit(main())
