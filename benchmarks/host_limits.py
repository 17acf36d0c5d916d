#!/usr/bin/env python
"""The host's measured limits, for the cost model's bounds (``asynctm.costmodel``, ``benchmarks/bound.py``).

A small C++ program, compiled by our CPU build's compiler with its flags exactly (``asynctm.backends.cpu.
compiler_command``: a shared library, loaded with ctypes), measures with 1 thread and with all usable cores:

- ``copy_bytes_s``, ``triad_bytes_s``: memory bandwidth, STREAM-style (``b[i] = a[i]`` on uint64,
  ``a[i] = b[i] + q c[i]`` on doubles; bytes read + written per pass, best pass) over arrays far beyond the
  caches (``--array-mib`` each);
- ``word_ops_s``: 32-bit word operations per second of bitwise arithmetic like the kernels' (xor, and, or,
  shifts, vectorised by the compiler) on arrays that stay in L1, 40 operations per word and pass;
- ``and_popcount_u64_s``: 64-bit words per second of ``sum += popcount(a[i] & b[i])`` in L1 (3 operations
  per word);
- ``scalar_ops_s``: scalar integer operations per second of mix64 finalisers (the kernels' draws: 3 xor-shifts
  and 2 multiplies, 8 operations each) on independent counters, vectorisation off; ``draws_s`` the same in
  draws.

Each measurement is the best of ``--reps`` passes and takes a few seconds at most. The machine may be shared:
the record keeps the 1-minute load average before and after each thread count. Writes
``benchmarks/results/host_limits_<host>.json`` (``<host>``: the CPU model and usable cores, e.g.
``amd_epyc_2c``) with provenance (``asynctm.provenance``).

    python benchmarks/host_limits.py [--array-mib 512] [--reps 5] [--threads 1,2] [--out PATH]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shlex
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent

KERNELS = Path(__file__).resolve().parents[1] / "kernels"  # tm_rng.cuh: the draws hl_scalar times

SOURCE = r"""
#include <cstdint>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <omp.h>

typedef uint64_t u64;

// CPU seconds of the calling thread: what a pass costs when the thread has its core (the wall clock also counts the
// time other processes held it).
static double hl_thread_cpu(void)
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
typedef uint32_t u32;

// The frame every measurement below times its passes in: HL_REPS_BEGIN opens `reps` repetitions of one pass (each
// within a parallel region whose threads time their own share with hl_thread_cpu, into `slowest`, the region's max
// reduction), HL_REPS_END closes them, keeping every repetition's wall seconds in times[r], its largest thread CPU
// seconds in cpu[r] and the best wall seconds in `best`. Macros, not a function taking the pass, so that each
// measurement compiles exactly as written out (its own pragmas and reductions, hl_scalar's vectorisation off).
#define HL_REPS_BEGIN \
    double best = 1e30; \
    for (int r = 0; r < reps; ++r) { \
        double t0 = omp_get_wtime(), slowest = 0;
#define HL_REPS_END \
        double t = omp_get_wtime() - t0; \
        times[r] = t; \
        cpu[r] = slowest; \
        if (t < best) best = t; \
    }

// Arrays first touched by the threads that use them (static schedule, as the passes below).
extern "C" void hl_fill(u64 *a, u64 *b, double *x, double *y, double *z, size_t n, int threads)
{
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; ++i) { a[i] = i; b[i] = 0; x[i] = 1.0; y[i] = 2.0; z[i] = 0.5 * (double)(i & 7); }
}

// Best wall seconds of one pass of b[i] = a[i]; times[r] every pass's wall seconds, cpu[r] its largest thread CPU
// seconds (each thread times its own share, before the pass's closing barrier).
extern "C" double hl_copy(const u64 *a, u64 *b, size_t n, int threads, int reps, double *times, double *cpu)
{
    HL_REPS_BEGIN
#pragma omp parallel num_threads(threads) reduction(max : slowest)
        {
            double c0 = hl_thread_cpu();
#pragma omp for schedule(static) nowait
            for (size_t i = 0; i < n; ++i) b[i] = a[i];
            slowest = hl_thread_cpu() - c0;
        }
        HL_REPS_END
    return best;
}

// As hl_copy, for x[i] = y[i] + q z[i].
extern "C" double hl_triad(double *x, const double *y, const double *z, size_t n, double q, int threads, int reps,
                           double *times, double *cpu)
{
    HL_REPS_BEGIN
#pragma omp parallel num_threads(threads) reduction(max : slowest)
        {
            double c0 = hl_thread_cpu();
#pragma omp for schedule(static) nowait
            for (size_t i = 0; i < n; ++i) x[i] = y[i] + q * z[i];
            slowest = hl_thread_cpu() - c0;
        }
        HL_REPS_END
    return best;
}

#define HL_WORDS 4096  // per thread: 2 x 16 KiB, in L1
#define HL_STEPS 8     // 5 operations each: 40 word operations per word and pass

// Best seconds of `passes` passes of bitwise arithmetic over HL_WORDS 32-bit words per thread.
extern "C" double hl_bitwise(int threads, long passes, int reps, double *times, double *cpu, u64 *sink)
{
    u64 total = 0;
    HL_REPS_BEGIN
#pragma omp parallel num_threads(threads) reduction(^ : total) reduction(max : slowest)
        {
            double c0 = hl_thread_cpu();
            u32 *a = (u32 *)aligned_alloc(64, 4 * HL_WORDS), *b = (u32 *)aligned_alloc(64, 4 * HL_WORDS);
            for (int i = 0; i < HL_WORDS; ++i) { a[i] = 0x9E3779B9u * (i + 1); b[i] = 0x85EBCA6Bu * (i + 7); }
            for (long p = 0; p < passes; ++p) {
#pragma omp simd
                for (int i = 0; i < HL_WORDS; ++i) {
                    u32 x = a[i], y = b[i];
                    for (int k = 0; k < HL_STEPS; ++k) {
                        x = (x ^ y) & (y | (x << 1));
                        y ^= x;
                    }
                    a[i] = x;
                    b[i] = y;
                }
            }
            u64 h = 0;
            for (int i = 0; i < HL_WORDS; ++i) h += a[i] ^ b[i];
            total ^= h;
            free(a);
            free(b);
            slowest = hl_thread_cpu() - c0;
        }
        HL_REPS_END
    *sink = total;
    return best;
}

// Best seconds of `passes` passes of sum += popcount(a[i] & b[i]) over HL_WORDS 64-bit words per thread.
extern "C" double hl_and_popcount(int threads, long passes, int reps, double *times, double *cpu, u64 *sink)
{
    u64 total = 0;
    HL_REPS_BEGIN
#pragma omp parallel num_threads(threads) reduction(+ : total) reduction(max : slowest)
        {
            double c0 = hl_thread_cpu();
            u64 *a = (u64 *)aligned_alloc(64, 8 * HL_WORDS), *b = (u64 *)aligned_alloc(64, 8 * HL_WORDS);
            for (int i = 0; i < HL_WORDS; ++i) { a[i] = 0x9E3779B97F4A7C15ull * (i + 1); b[i] = ~a[i] ^ (a[i] >> 7); }
            u64 s = 0;
            for (long p = 0; p < passes; ++p) {
                a[p % HL_WORDS] ^= (u64)p;  // a new input every pass: the sum cannot be hoisted
#pragma omp simd reduction(+ : s)
                for (int i = 0; i < HL_WORDS; ++i) s += (u64)__builtin_popcountll(a[i] & b[i]);
            }
            total += s;
            free(a);
            free(b);
            slowest = hl_thread_cpu() - c0;
        }
        HL_REPS_END
    *sink = total;
    return best;
}

#include "tm_rng.cuh"  // the kernels' own draws (kernels/): tm_mix64, the finaliser timed below

// Best seconds of `draws` mix64 finalisers per thread on independent counters, not vectorised.
extern "C" __attribute__((optimize("no-tree-vectorize"))) double hl_scalar(int threads, long draws, int reps,
                                                                          double *times, double *cpu, u64 *sink)
{
    u64 total = 0;
    HL_REPS_BEGIN
#pragma omp parallel num_threads(threads) reduction(^ : total) reduction(max : slowest)
        {
            double c0 = hl_thread_cpu();
            u64 s0 = 0, s1 = 0, s2 = 0, s3 = 0, base = (u64)omp_get_thread_num() << 40;
            for (long i = 0; i < draws; i += 4) {
                s0 ^= tm_mix64(base + i);
                s1 ^= tm_mix64(base + i + 1);
                s2 ^= tm_mix64(base + i + 2);
                s3 ^= tm_mix64(base + i + 3);
            }
            total ^= s0 ^ s1 ^ s2 ^ s3;
            slowest = hl_thread_cpu() - c0;
        }
        HL_REPS_END
    *sink = total;
    return best;
}
"""

L1_WORDS = 4096  # HL_WORDS
BITWISE_OPS_PER_WORD = 40  # HL_STEPS x 5
MIX64_OPS = 8


def host_slug(model: str, cores: int) -> str:
    """``<cpu model>_<cores>c`` in lower case, letters and digits only: the host model a record belongs to."""
    words = re.sub(r"\((r|tm)\)", "", model.lower())
    words = re.sub(r"\b(processor|cpu|\d+-core)\b", "", words)
    slug = re.sub(r"[^a-z0-9]+", "_", words).strip("_") or "cpu"
    return f"{slug}_{cores}c"


def build(tmp: Path) -> tuple[ctypes.CDLL, list[str]]:
    """The measurement library, compiled exactly as the CPU build compiles kernels/tm.cu."""
    from asynctm.backends.cpu import compiler_command

    cmd = compiler_command()
    src, lib = tmp / "host_limits.cu", tmp / "host_limits.so"
    src.write_text(SOURCE)
    full = [*cmd, f"-I{KERNELS}", str(src), "-o", str(lib)]
    proc = subprocess.run(full, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"error: compiling the measurement program failed ({shlex.join(full)}): "
                         f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no message'}; "
                         "check the compiler (CXX, ASYNCTM_CPU_FLAGS)")
    so = ctypes.CDLL(str(lib))
    P, N, L, Z, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_size_t, ctypes.c_double
    so.hl_fill.argtypes, so.hl_fill.restype = [P, P, P, P, P, Z, N], None
    so.hl_copy.argtypes, so.hl_copy.restype = [P, P, Z, N, N, P, P], D
    so.hl_triad.argtypes, so.hl_triad.restype = [P, P, P, Z, D, N, N, P, P], D
    for name in ("hl_bitwise", "hl_and_popcount", "hl_scalar"):
        fn = getattr(so, name)
        fn.argtypes, fn.restype = [N, L, N, P, P, P], D
    return so, cmd


class Passes:
    """Per-pass wall seconds and largest thread CPU seconds of one measurement."""

    def __init__(self, reps: int):
        import numpy as np

        self.wall, self.cpu = np.zeros(reps), np.zeros(reps)

    @property
    def pointers(self) -> tuple[int, int]:
        return self.wall.ctypes.data, self.cpu.ctypes.data

    def rates(self, work: float) -> dict:
        """``work`` per second of the best pass, by the wall clock and by the CPU clock."""
        return {"wall": work / float(self.wall.min()), "cpu": work / float(self.cpu[self.cpu > 0].min())
                if (self.cpu > 0).any() else None, "pass_s": [float(v) for v in self.wall],
                "pass_cpu_s": [float(v) for v in self.cpu]}


def _calibrated(fn, threads: int, reps: int, target_s: float, start: int) -> tuple[int, Passes]:
    """Run ``fn(threads, work, reps, wall, cpu, sink)`` with work grown until a pass takes ``target_s``."""
    import numpy as np

    work, sink = start, np.zeros(1, dtype=np.uint64)
    while True:
        probe = Passes(1)
        best = fn(threads, work, 1, *probe.pointers, sink.ctypes.data)
        if best >= target_s or work > 1 << 40:
            break
        work = int(work * min(8.0, max(2.0, 1.2 * target_s / max(best, 1e-9))))
    passes = Passes(reps)
    fn(threads, work, reps, *passes.pointers, sink.ctypes.data)
    return work, passes


def measure(so, threads: int, array_mib: int, reps: int, target_s: float) -> tuple[dict, dict]:
    """Rates by the wall clock and by the CPU clock (per CPU second of the slowest thread: the host's limits when
    our threads have their cores), and the passes behind them."""
    import numpy as np

    n = (array_mib << 20) // 8
    a, b = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)
    x, y, z = np.empty(n), np.empty(n), np.empty(n)
    so.hl_fill(a.ctypes.data, b.ctypes.data, x.ctypes.data, y.ctypes.data, z.ctypes.data, n, threads)
    wall = {"load_1min_before": os.getloadavg()[0]}
    cpu, detail = {}, {}

    def keep(name: str, passes: Passes, work: float, extra=None):
        r = passes.rates(work)
        wall[name], cpu[name] = r["wall"], r["cpu"]
        detail[name] = {"pass_s": r["pass_s"], "pass_cpu_s": r["pass_cpu_s"], **(extra or {})}

    p = Passes(reps)
    so.hl_copy(a.ctypes.data, b.ctypes.data, n, threads, reps, *p.pointers)
    keep("copy_bytes_s", p, 16.0 * n)
    p = Passes(reps)
    so.hl_triad(x.ctypes.data, y.ctypes.data, z.ctypes.data, n, 3.0, threads, reps, *p.pointers)
    keep("triad_bytes_s", p, 24.0 * n)
    del a, b, x, y, z
    work, p = _calibrated(so.hl_bitwise, threads, reps, target_s, 64)
    keep("word_ops_s", p, BITWISE_OPS_PER_WORD * L1_WORDS * work * threads, {"passes": work})
    work, p = _calibrated(so.hl_and_popcount, threads, reps, target_s, 64)
    keep("and_popcount_u64_s", p, L1_WORDS * work * threads, {"passes": work})
    work, p = _calibrated(so.hl_scalar, threads, reps, target_s, 1 << 16)
    keep("draws_s", p, work * threads, {"draws": work})
    for rates in (wall, cpu):
        rates["scalar_ops_s"] = MIX64_OPS * rates["draws_s"] if rates.get("draws_s") else None
    wall["load_1min_after"] = os.getloadavg()[0]
    cpu["detail"] = detail
    return wall, cpu


def main(argv=None) -> int:
    from asynctm.backends.cpu import default_threads
    from asynctm.io import write_json_atomic
    from asynctm.provenance import cpu_info, git_info, host_id, versions

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default=None, help=f"thread counts, comma-separated (default 1,{default_threads()})")
    p.add_argument("--array-mib", type=int, default=512, help="MiB per array of the bandwidth passes (default 512)")
    p.add_argument("--reps", type=int, default=5, help="passes per measurement; the best is kept (default 5)")
    p.add_argument("--target-s", type=float, default=0.2, help="seconds per pass of the in-cache measurements")
    p.add_argument("--out", default=None, help="output JSON (default benchmarks/results/host_limits_<host>.json)")
    args = p.parse_args(argv)
    try:
        threads = sorted({int(t) for t in (args.threads or f"1,{default_threads()}").split(",") if t.strip()})
    except ValueError:
        p.error(f"--threads must be comma-separated integers, got {args.threads!r}")
    if not threads or threads[0] < 1 or args.array_mib < 8 or args.reps < 1 or not args.target_s > 0:
        p.error("--threads must be positive, --array-mib at least 8, --reps at least 1, --target-s positive")
    cpu = cpu_info()
    slug = host_slug(cpu["model"], cpu["usable_cores"])
    out = Path(args.out) if args.out else HERE / "results" / f"host_limits_{slug}.json"
    with tempfile.TemporaryDirectory() as tmp:
        so, cmd = build(Path(tmp))
        measurements, by_cpu = {}, {}
        for t in threads:
            measurements[str(t)], by_cpu[str(t)] = measure(so, t, args.array_mib, args.reps, args.target_s)
            for clock, m in (("wall", measurements[str(t)]), ("cpu", by_cpu[str(t)])):
                print(f"{t} thread(s), {clock} clock: copy {m['copy_bytes_s'] / 1e9:.1f} GB/s, triad "
                      f"{m['triad_bytes_s'] / 1e9:.1f} GB/s, word ops {m['word_ops_s'] / 1e9:.1f} G/s, and+popcount "
                      f"{m['and_popcount_u64_s'] / 1e9:.1f} G u64/s, scalar {m['scalar_ops_s'] / 1e9:.1f} G ops/s",
                      flush=True)
            m = measurements[str(t)]
            print(f"   (load {m['load_1min_before']:.2f} -> {m['load_1min_after']:.2f})", flush=True)
    record = {
        "generated_by": "benchmarks/host_limits.py",
        "host": slug,
        "host_id": host_id(),
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "time_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": git_info(),
        "versions": versions(),
        "cpu": cpu,
        "compile": shlex.join(cmd),
        "array_mib": args.array_mib,
        "reps": args.reps,
        "units": {"copy_bytes_s": "bytes read + written per second, best pass",
                  "triad_bytes_s": "bytes read + written per second, best pass",
                  "word_ops_s": f"32-bit word operations per second ({BITWISE_OPS_PER_WORD} per word and pass, L1)",
                  "and_popcount_u64_s": "64-bit words per second of sum += popcount(a & b) (L1)",
                  "scalar_ops_s": f"scalar operations per second ({MIX64_OPS} per mix64 finaliser)",
                  "draws_s": "mix64 finalisers per second"},
        "note": "the machine may be shared: load_1min_before/after per thread count. measurements: by the wall "
                "clock (best pass), which a busy machine lowers, most with all threads; measurements_cpu_time: work "
                "per CPU second of the slowest thread (best pass), the host's limits when our threads have their "
                "cores",
        "measurements": measurements,
        "measurements_cpu_time": by_cpu,
    }
    write_json_atomic(out, record, sort_keys=False)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
