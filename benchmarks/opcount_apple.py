#!/usr/bin/env python
"""Operation counts of one training epoch in the apple WSD setting, measured from real clause states.

For our model and for pyTsetlinMachine (indexed, the speed baseline), each trained with the benchmark's
hyperparameters, this takes the automaton states at a few points of training (before epochs 1, 2, 3, 6
and the last) and computes, for the *next* epoch:

- clause evaluations (examples x clauses of the classes taking part) and the 32-bit words each one reads
  before its first violated word (the early exit every implementation here has);
- the expected numbers of feedback events: Type Ia (clause output 1), Type Ib (output 0) and Type II,
  from the exact class sums at that state (``P(update) = |t - v| / 2T``, Type I when the clause's polarity
  agrees with the direction of the error); for two classes this rule is the same in both libraries;
- for pyTM indexed, the length of the clause lists it walks per example (sum over the literals that are 0
  of the number of clauses including that literal);
- random draws: ours one 64-bit draw and one 64-byte load of the 1/s pool per 512 literals per Type I
  event (at most; chunks where no decrement can act draw nothing), 1-2 per visit for the update/participate
  draws, 3 per example and epoch for the key; pyTM ``~n/s`` pcg32 draws (+ retries) per Type I event plus
  one per clause and example.

It also *measures* our per-epoch time split (1 thread): the clause-evaluation kernel alone on the training
set (``tm_refresh_outputs``, what every visit's refresh does) against a full epoch, and replays the first
batch with the instrumented NumPy reference (``asynctm.reference``) to check the expected counts
against realised ones. Writes ``benchmarks/results/opcount_apple.json``.

    python benchmarks/opcount_apple.py [--epochs 10] [--seed 42]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from asynctm.benchmarking import dense_uint8, hyperparameters, load_data
from asynctm.config_check import load_config
from asynctm.experiments.plan import experiment
from asynctm.io import write_json_atomic
from asynctm.provenance import code_digests, cpu_info, git_info, versions

HERE = Path(__file__).resolve().parent

SNAPSHOTS = (0, 1, 2, 5)  # plus the state before the last epoch
MASK_BLOCK_PAIRS = 8  # 64-literal pairs per 1/s mask draw (kernels/README.md, "Random numbers")


def literals(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, 1 - X]).astype(np.uint8)


def counts_from_includes(include: np.ndarray, lit: np.ndarray, y: np.ndarray, T: int, n_clauses: int) -> dict:
    """Expected feedback events of one epoch from include masks (C*n_clauses, L) and literals (n, L)."""
    G, L = include.shape
    n = lit.shape[0]
    C = G // n_clauses
    inc = include.astype(np.float32)
    zero = (1 - lit).astype(np.float32)
    violated = inc @ zero.T  # (G, n): included literals that are 0
    o = (violated == 0).astype(np.int64)  # training output (an empty clause gives 1)
    pol = np.where(np.arange(G) % n_clauses % 2 == 0, 1, -1)
    v = np.clip((o * pol[:, None]).reshape(C, n_clauses, n).sum(axis=1), -T, T)  # (C, n)
    t = np.where(np.arange(C)[:, None] == y[None, :], T, -T)
    d = np.where(v <= t, 1, -1)  # (C, n)
    p_update = np.abs(t - v) / (2.0 * T)  # (C, n); participation 1/(C-1) = 1 for two classes
    p_update = p_update * np.where(d < 0, 1.0 / max(1, C - 1), 1.0)
    dg = np.repeat(d, n_clauses, axis=0)  # (G, n)
    pg = np.repeat(p_update, n_clauses, axis=0)
    type_i = dg * pol[:, None] > 0
    ev = {
        "visits": int(G * n),
        "updates": float(pg.sum()),
        "type_ia": float((pg * (type_i & (o == 1))).sum()),
        "type_ib": float((pg * (type_i & (o == 0))).sum()),
        "type_ii": float((pg * (~type_i & (o == 1))).sum()),
        "type_ii_noop": float((pg * (~type_i & (o == 0))).sum()),
        "clause_output_1_fraction": float(o.mean()),
        "included_literals_per_clause": float(include.sum(axis=1).mean()),
        "empty_clauses": int((include.sum(axis=1) == 0).sum()),
    }
    # Words read by an early-exit evaluation: up to and including the first violated 32-literal word.
    words = -(-L // 32)
    first = np.full((G, n), words, dtype=np.int64)
    for w in range(words - 1, -1, -1):
        sl = slice(32 * w, min(L, 32 * w + 32))
        hit = (inc[:, sl] @ zero[:, sl].T) > 0
        first[hit] = w + 1
    ev["words_read_per_evaluation"] = float(first.mean())
    # pyTM indexed walks, per example, the clause lists of the literals that are 0.
    per_literal = include.reshape(C, n_clauses, L).sum(axis=1).astype(np.float64)  # (C, L)
    ev["indexed_list_entries_per_example_per_class"] = float((zero.astype(np.float64) @ per_literal.T).mean())
    return ev


def pytm_includes(tm, n_literals: int) -> np.ndarray:
    """Include masks (C*n_clauses, L) of a pyTsetlinMachine MultiClassTsetlinMachine."""
    chunks, bits = tm.number_of_ta_chunks, tm.number_of_state_bits
    rows = []
    for _, ta in tm.get_state():
        planes = ta.reshape(tm.number_of_clauses, chunks, bits)[:, :, bits - 1]
        unpacked = np.unpackbits(planes.astype("<u4").view(np.uint8).reshape(tm.number_of_clauses, -1),
                                 axis=1, bitorder="little")[:, :n_literals]
        rows.append(unpacked.astype(bool))
    return np.vstack(rows)


def reference_replay(model, lit: np.ndarray, y: np.ndarray, T: int, s: float, epoch: int, seed: int,
                     n_examples: int) -> dict:
    """Realised events when the reference replays one batch from ``model``'s current state."""
    from asynctm import reference

    C, n_clauses = len(model.classes_), model.n_clauses
    ref = reference.ReferenceTM(C, n_clauses, lit.shape[1], T, s)
    ref.ta_state[:] = model.ta_states().reshape(C * n_clauses, -1)
    sub = lit[:n_examples]
    ref.init_training(sub, reference.targets_for_classification(y[:n_examples], C, T))
    tally = {"I_o1": 0, "I_o0": 0, "II": 0, "visits": 0}
    for g in range(ref.G):
        for e in range(n_examples):
            v = ref.visit(g, e, epoch, seed)
            tally["visits"] += 1
            if v.feedback == "I":
                tally["I_o1" if v.o else "I_o0"] += 1
            elif v.feedback == "II":
                tally["II"] += 1
    return tally


def main(argv=None) -> int:
    from pyTsetlinMachine.tm import MultiClassTsetlinMachine

    from asynctm import TMClassifier
    from asynctm.encoding import pack_literals

    p = argparse.ArgumentParser(description="operation counts of one apple epoch")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--replay-examples", type=int, default=100, help="examples replayed by the reference")
    p.add_argument("--data-dir", default="data",
                   help="the pipeline's data folder: wsd_apple's processed dataset in "
                        "<data-dir>/processed/wsd_apple/paper (default data; `snakemake --cores all data` prepares it)")
    p.add_argument("--config", default=str(HERE.parent / "config" / "config.yaml"),
                   help="the configuration whose wsd_apple experiment gives the hyperparameters")
    p.add_argument("--out", default=str(HERE / "results" / "opcount_apple.json"))
    args = p.parse_args(argv)

    exp = experiment(load_config(args.config), "wsd_apple")
    hp = hyperparameters(exp)
    n_clauses, T, s = hp["n_clauses"], hp["T"], hp["s"]
    data, source, _ = load_data(exp, Path(args.data_dir))
    X, y = dense_uint8(data["X_train"]), data["y_train"]
    lit = literals(X)
    n, L = lit.shape
    words = -(-L // 32)
    pairs = -(-words // 2)

    ours = TMClassifier(n_clauses=n_clauses, T=T, s=s, backend="cpu", n_threads=1, seed=args.seed)
    pytm = MultiClassTsetlinMachine(n_clauses, T, s, boost_true_positive_feedback=1, number_of_state_bits=8,
                                    indexed=True)
    packed, _ = pack_literals(X, True)
    snapshots = sorted({k for k in SNAPSHOTS if k < args.epochs} | {args.epochs - 1})
    rows, replay = [], None
    for epoch in range(args.epochs):  # the state before epoch `epoch + 1`
        row = None
        if epoch in snapshots:
            row = {"state_after_epochs": epoch, "counts_for_epoch": epoch + 1}
            if epoch == 0:  # a fresh model: every automaton just below include, every clause empty
                inc_ours = inc_pytm = np.zeros((2 * n_clauses, L), dtype=bool)
            else:
                inc_ours = ours.clauses_.reshape(-1, L)
                inc_pytm = pytm_includes(pytm, L)
                # Measured: our clause-evaluation kernel alone (1 thread) on the whole training set.
                be = ours._backend
                t0 = time.perf_counter()
                be.training_clause_outputs(packed)
                row["asynctm_eval_only_s"] = time.perf_counter() - t0
            row["asynctm"] = counts_from_includes(inc_ours, lit, y, T, n_clauses)
            row["pytm_indexed"] = counts_from_includes(inc_pytm, lit, y, T, n_clauses)
            if epoch == min(5, args.epochs - 1) and epoch > 0 and args.replay_examples > 0:
                t0 = time.perf_counter()
                m = args.replay_examples
                sub = counts_from_includes(inc_ours, lit[:m], y[:m], T, n_clauses)
                real = reference_replay(ours, lit, y, T, s, ours.epochs_trained_, ours.seed_, m)
                replay = {"state_after_epochs": epoch, "examples": m, "realised": real,
                          "expected": {key: sub[key] for key in ("type_ia", "type_ib", "type_ii", "visits")},
                          "seconds": time.perf_counter() - t0}
                print(f"reference replay of {m} examples: realised {real}, expected "
                      f"Ia {sub['type_ia']:.0f} Ib {sub['type_ib']:.0f} II {sub['type_ii']:.0f}", flush=True)
        t0 = time.perf_counter()
        ours.fit(X, y, epochs=1, incremental=epoch > 0)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        pytm.fit(X, y, epochs=1, incremental=True)
        t_pytm = time.perf_counter() - t0
        if row is not None:
            row["asynctm_epoch_s"], row["pytm_indexed_epoch_s"] = t_ours, t_pytm
            rows.append(row)
            a, b = row["asynctm"], row["pytm_indexed"]
            print(f"epoch {epoch + 1:>2}: ours Ia {a['type_ia']:.0f} Ib {a['type_ib']:.0f} II {a['type_ii']:.0f} "
                  f"words/eval {a['words_read_per_evaluation']:.1f} epoch {t_ours:.3f}s"
                  + (f" (eval-only {row['asynctm_eval_only_s']:.3f}s)" if "asynctm_eval_only_s" in row else "")
                  + f"; pyTM Ia {b['type_ia']:.0f} Ib {b['type_ib']:.0f} II {b['type_ii']:.0f} "
                  f"list entries/example/class {b['indexed_list_entries_per_example_per_class']:.0f} "
                  f"epoch {t_pytm:.3f}s", flush=True)

    record = {
        "generated_by": "benchmarks/opcount_apple.py",
        "git": git_info(),
        "code": code_digests(),
        "versions": versions(),
        "cpu": cpu_info(),
        "seed": args.seed,
        "load_average_after": list(__import__("os").getloadavg()),
        "note": "counts are expectations at the state before the epoch, with exact class sums; epoch 1's time "
                "includes one-time costs (our kernel compile if not cached, encoding)",
        "dataset": {"source": source, "n_train": int(n), "n_literals": int(L), "words_per_example": int(words)},
        "hyperparameters": hp,
        "mask": {"pairs_per_type_i": pairs, "pairs_per_draw": MASK_BLOCK_PAIRS,
                 "max_draws_per_type_i": -(-pairs // MASK_BLOCK_PAIRS)},
        "pytm_draws_per_type_i": {"forgotten_literals": L / s,
                                  "expected_pcg32_draws_with_retries":
                                      float(sum(L / (L - i) for i in range(int(L / s)))) + 2},
        "snapshots": rows,
        "reference_replay": replay,
    }
    out = Path(args.out)
    write_json_atomic(out, record, sort_keys=False)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
