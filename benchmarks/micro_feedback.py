#!/usr/bin/env python
"""Cost of each kind of work in one training epoch, measured on the kernels' own device functions.

Compiles ``kernels/tm.cu`` (the apple configuration, exactly as the CPU build gets it) together with a small
timing driver into an executable, with the CPU build's compiler flags, and times on one core, on real clause
states (our model after ``--epochs`` apple epochs) and real training examples:

- ``eval``: the training clause output (``tm_clause_output`` with its hint) of every clause on every example in
  turn (the word that ruled the clause out last time first, then early exit at the first violated chunk),
  per evaluation;
- ``type_ib``: Type I feedback on a clause that outputs 0 (the 1/s mask over all literals, then decrements);
- ``type_ia``: Type I on a clause that outputs 1 (increments where the literal is 1, the 1/s mask where 0);
- ``type_ii``: Type II (increments of excluded automata whose literal is 0);
- ``key``: the stream key (``tm_key``: three 64-bit mixes, now computed once per example and epoch by
  ``tm_epoch_keys``) plus the update draw, per visit.

Each feedback measurement applies the feedback to every clause over a block of examples and restores the
states after each pass, so the states stay realistic. Combined with the expected event counts of
``opcount_apple.py`` these give a cost model of an epoch. Writes ``benchmarks/results/micro_feedback.json``.

    python benchmarks/micro_feedback.py [--epochs 5] [--seed 42]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from asynctm.benchmarking import dense_uint8, hyperparameters, load_data
from asynctm.config_check import load_config
from asynctm.experiments.plan import experiment
from asynctm.io import write_json_atomic
from asynctm.provenance import code_digests, cpu_info, git_info, versions

HERE = Path(__file__).resolve().parent

DRIVER = r"""
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static std::vector<tm_u32> load(const char *path, size_t n) {
    std::vector<tm_u32> v(n);
    FILE *f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), 4, n, f) != n) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

// The feedback functions are compiled once, with o at run time, as in tm_train_clause: inlined into the
// timing loop with a constant o, gcc 12 left the 1/s mask loop of the o = 0 copy scalar (3x slower than the
// kernel's).
static __attribute__((noinline)) void type_i(tm_u32 *st, const tm_u32 *x, int o, tm_u64 key, long long g,
                                             const tm_u32 *pool) {
    tm_type_i(st, x, o, key, g, pool, 0);  // no live chunks kept (as the synchronous tallies)
}

int main(int argc, char **argv) {
    const long G = CLAUSES_TOTAL, n = std::atol(argv[3]), block = std::atol(argv[4]);
    const int reps = std::atoi(argv[5]);
    const size_t per_clause = (size_t)STATE_BITS * WORDS;
    std::vector<tm_u32> state0 = load(argv[1], G * per_clause), X = load(argv[2], n * WORDS);
    std::vector<tm_u32> pool32 = load(argv[6], (size_t)2 << S_POOL_BITS);
    const tm_u32 *pool = pool32.data();  // the pool's u64 words as little-endian halves, as the kernels read it
    std::vector<tm_u32> state(state0);
    volatile tm_u64 sink = 0;
    const tm_u64 seed = 42, epoch = 7;
    double t0, best;

    // eval: every clause on every example, training output.
    best = 1e30;
    for (int r = 0; r < reps; ++r) {
        long ones = 0;
        t0 = now();
        for (long g = 0; g < G; ++g) {
            const tm_u32 *include = state.data() + g * per_clause + (STATE_BITS - 1) * WORDS;
            int hint = 0;
            for (long e = 0; e < n; ++e) ones += tm_clause_output(include, X.data() + e * WORDS, 1, &hint);
        }
        double t = now() - t0;
        sink += ones;
        if (t < best) best = t;
    }
    std::printf("{\"eval_ns\": %.3f, ", best / (G * n) * 1e9);

    // key + update draw per visit.
    best = 1e30;
    for (int r = 0; r < reps; ++r) {
        tm_u64 acc = 0;
        t0 = now();
        for (long g = 0; g < G; ++g)
            for (long e = 0; e < n; ++e) {
                tm_u64 key = tm_key(seed, epoch, (tm_u64)e);
                acc += tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_UPDATE, 0));
            }
        double t = now() - t0;
        sink += acc;
        if (t < best) best = t;
    }
    std::printf("\"key_and_update_draw_ns\": %.3f, ", best / (G * n) * 1e9);

    // the three feedback kinds, states restored after each pass.
    const char *names[3] = {"type_ib", "type_ia", "type_ii"};
    for (int kind = 0; kind < 3; ++kind) {
        best = 1e30;
        for (int r = 0; r < reps; ++r) {
            std::memcpy(state.data(), state0.data(), state0.size() * 4);
            t0 = now();
            for (long g = 0; g < G; ++g) {
                tm_u32 *st = state.data() + g * per_clause;
                for (long e = 0; e < block; ++e) {
                    const tm_u32 *x = X.data() + e * WORDS;
                    tm_u64 key = tm_key(seed, epoch, (tm_u64)e);
                    if (kind < 2) type_i(st, x, kind, key, g, pool);  // kind 0: Type Ib (o = 0), 1: Ia
                    else tm_type_ii(st, x, 0);
                }
            }
            double t = now() - t0;
            if (t < best) best = t;
        }
        std::printf("\"%s_ns\": %.3f%s", names[kind], best / (G * block) * 1e9, kind < 2 ? ", " : "");
    }
    std::printf("}\n");
    return (int)(sink & 0);
}
"""


def driver_build(cfg, out: Path) -> tuple[str, list[str]]:
    """The timing program's source for ``cfg`` (the kernels as the CPU build gets them, then the driver) and
    the command that compiles it to ``out``: the CPU build's compiler and flags, as an executable."""
    from asynctm.backends import kernel_source
    from asynctm.backends.cpu import compiler_command

    cmd = compiler_command()
    flags = [f for f in cmd[1:] if f not in ("-shared", "-fPIC")]
    return kernel_source(cfg) + DRIVER, [cmd[0], *flags, str(out.with_suffix(".cu")), "-o", str(out)]


def main(argv=None) -> int:
    from asynctm import TMClassifier
    from asynctm.backends import KernelConfig, s_mask_pool
    from asynctm.encoding import pack_literals

    p = argparse.ArgumentParser(description="per-operation costs of the kernels, apple configuration")
    p.add_argument("--epochs", type=int, default=5, help="train this many apple epochs for realistic states")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--block", type=int, default=100, help="examples per clause in the feedback timings")
    p.add_argument("--reps", type=int, default=3, help="repetitions; the fastest is kept")
    p.add_argument("--data-dir", default="data",
                   help="the pipeline's data folder: wsd_apple's processed dataset in "
                        "<data-dir>/processed/wsd_apple/paper (default data; `snakemake --cores all data` prepares it)")
    p.add_argument("--config", default=str(HERE.parent / "config" / "config.yaml"),
                   help="the configuration whose wsd_apple experiment gives the hyperparameters")
    p.add_argument("--out", default=str(HERE / "results" / "micro_feedback.json"))
    args = p.parse_args(argv)

    exp = experiment(load_config(args.config), "wsd_apple")
    hp = hyperparameters(exp)
    data, data_source, _ = load_data(exp, Path(args.data_dir))
    X, y = dense_uint8(data["X_train"]), data["y_train"]
    model = TMClassifier(**hp, backend="cpu", n_threads=1, seed=args.seed)
    model.fit(X, y, epochs=args.epochs)
    planes = model._backend.get_ta_state()  # (G, STATE_BITS, WORDS) uint32
    packed, n_literals = pack_literals(X, True)
    cfg = KernelConfig(n_classes=2, n_clauses=hp["n_clauses"], n_literals=n_literals, T=hp["T"], s=hp["s"])

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source, build = driver_build(cfg, tmp / "micro")
        (tmp / "micro.cu").write_text(source)
        np.ascontiguousarray(planes, dtype="<u4").tofile(tmp / "state.bin")
        np.ascontiguousarray(packed, dtype="<u4").tofile(tmp / "x.bin")
        np.ascontiguousarray(s_mask_pool(args.seed, cfg.s, cfg.s_pool_bits), dtype="<u8").tofile(tmp / "pool.bin")
        proc = subprocess.run(build, check=False, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"compile failed: {shlex.join(build)}\n{proc.stderr[-3000:]}")
        run = [str(tmp / "micro"), str(tmp / "state.bin"), str(tmp / "x.bin"), str(len(X)), str(args.block),
               str(args.reps), str(tmp / "pool.bin")]
        out = subprocess.run(run, capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1"})
    costs = json.loads(out.stdout)
    record = {
        "generated_by": "benchmarks/micro_feedback.py",
        "git": git_info(),
        "versions": versions(),
        "cpu": cpu_info(),
        "load_average_after": list(__import__("os").getloadavg()),
        "seed": args.seed,
        "state_after_epochs": args.epochs,
        "dataset": {"source": data_source, "n_train": len(X), "n_literals": int(n_literals)},
        "hyperparameters": hp,
        "compile": shlex.join(build[:-3]),
        "code": code_digests(),
        "costs_ns": costs,
    }
    write_json_atomic(Path(args.out), record, sort_keys=False)
    print(json.dumps(costs, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
