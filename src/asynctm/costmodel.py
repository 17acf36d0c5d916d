"""A cost model of our Tsetlin Machine kernels (kernels/tm.cu): the work of one training epoch and of one
evaluation pass, counted from the algorithm and a run's own counters, and the time the host's measured limits
allow for it.

Everything takes plain numbers (examples, clauses per class, features, classes, negated literals, state bits, the
epoch's Type Ia / Ib / II feedback events), so the same functions serve run records (their ``diagnostics``),
benchmark results and hypothetical datasets. Units:

- a **word** is 32 literals (``tm_u32``), the unit of every literal loop in the kernels; a clause has
  ``W = ceil(L / 32)`` words, ``L = F`` literals, or ``2F`` with ``append_negated``;
- **word operations** are the 32-bit bitwise operations of the loops over words (vectorised on a CPU: 16 words
  per AVX-512 instruction count as 16), counted from the kernels' source below;
- **scalar operations** are the per-visit, per-chunk and per-draw work outside those loops (a draw counts
  ``DRAW_OPS``);
- **bytes** are what the epoch moves between memory and the core: ``bytes_compulsory`` touches every array once
  (the TA states read and written once, the examples read once, ...), ``bytes_streamed`` re-reads and re-writes
  every clause's TA state once per batch, as the kernels' schedule does when the states do not stay in cache
  between batches.

Training epoch (asynchronous tallies, kernels/README.md, "Schedule"), with ``V = n_examples x n_clauses x
n_classes`` clause visits and ``b = state_bits``:

- clause evaluation (``tm_clause_output``: ``violated |= include & ~x``, 2 operations per word, early exit at the
  first violated word): ``V x W`` words at most; at least ``(V - O1) + O1 x W``, where every visit reads one word
  (the hint) and a visit whose clause outputs 1 reads all ``W``; ``O1 >= Ia + II`` (both need output 1);
- feedback, per event and word (``tm_type_i``, ``tm_type_ii``; the part in brackets only in chunks where the
  update acts, the rest always):
  Type Ia ``(b + 6) + [5b + 13]`` (non-zero test over b planes, the literals wanted; the 1/s mask, the
  saturating increment, the decrement), Type Ib ``(b + 5) + [2b + 11]`` (non-zero test; mask, decrement),
  Type II ``4 + [2b]`` (the excluded 0-literals; the increment without saturation). For ``b = 8``: 67, 40, 20;
- draws: per visit one update draw (and a participate draw on the ``(C-1)/C`` of visits to a class that is not
  the example's, with more than one class), per example 3 for its stream key, per Type I event one per block of
  512 literals (``tm_s_masks``, the 1/s pool);
- tallies: per visit the refresh (stored output bit, tally read, clip, direction: ``VISIT_OPS``); per batch every
  thread adds its changes and re-reads the batch's tallies every 16 clauses (``tm_tally_sync``).

Evaluation pass (inference): per example and clause, ``3`` operations per word read (``violated``, and ``any`` for
the empty clause); the GPU scans the include plane (at most ``W`` words), the CPU build only the clause's include
words that are not 0 (``tm_class_sums_compact``: 4 operations per kept word, index and gather included), after
compacting every clause's include plane once.

:func:`bound_s` turns a :class:`Cost` into the least time a :class:`Host` could take: the largest of bytes /
bandwidth, word operations / word throughput and scalar operations / scalar throughput
(``benchmarks/host_limits.py`` measures the three on a CPU host, ``benchmarks/gpu_limits.py`` on a GPU;
:func:`host_from_limits` and :func:`gpu_host_from_limits` read their records).

The peers' designs differ only in their draws (:func:`draws_per_type_i`): pyTsetlinMachine picks about
``L ln(s / (s - 1))`` literals per Type I event with pcg32 (``scheme="pytm"``), PyTsetlinMachineCUDA draws one
``curand_uniform`` per literal (``"per_literal"``); the rest of their work is counted as ours.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

WORD_BITS = 32
CPU_CHUNK_WORDS = 16  # TM_CHUNK_PAIRS 8 on a CPU: 16 words, one 1/s draw per chunk
GPU_CHUNK_WORDS = 2  # one 64-lane pair per chunk on a GPU thread (the block's draw repeated per pair)
TALLY_SYNC_CLAUSES = 16  # tm_train_batch on CPU cores (TM_TALLY_SYNC_CLAUSES)

EVAL_TRAIN_OPS = 2  # violated |= include & ~x
EVAL_INFER_OPS = 3  # and any |= include: an empty clause votes 0 at inference
EVAL_COMPACT_OPS = 4  # a kept word: its index, the example word it names, include & ~x, the test
VISIT_OPS = 20  # per clause visit: tm_visit, stored output bit, tally change and read, clip, direction, error
DRAW_OPS = 12  # one counter-based draw: tm_ctr, mix64 (3 xor-shifts, 2 multiplies), the comparison
TALLY_SYNC_OPS = 3  # per tally and sync: the atomic add of a change, the reset, the re-read
KEY_DRAWS = 3  # tm_key: three mix64 per example and epoch
PYTM_NORMAL_DRAWS = 2  # pyTsetlinMachine's Box-Muller normal for the number of literals to forget

DRAW_SCHEMES = ("pool", "per_literal", "pytm")


def literal_count(n_features: int, append_negated: bool = True) -> int:
    """Literals per example: the features, and their negations with ``append_negated``."""
    return int(n_features) * (2 if append_negated else 1)


def literal_words(n_features: int, append_negated: bool = True) -> int:
    """32-bit words of a literal bit vector (an example's literals, one plane of a clause's automata)."""
    return -(-literal_count(n_features, append_negated) // WORD_BITS)


def feedback_word_ops(kind: str, state_bits: int = 8, acting: float = 1.0, boost_true_positive: bool = True) -> float:
    """Word operations per literal word of one feedback event (``kind``: ``"ia"``, ``"ib"`` or ``"ii"``), when a
    fraction ``acting`` of the chunks have something to update (the kernels skip the rest: kernels/README.md,
    "Work the kernels skip")."""
    b = int(state_bits)
    if kind == "ia":
        always, acts = b + 6, 5 * b + 13 + (0 if boost_true_positive else 1)
    elif kind == "ib":
        always, acts = b + 5, 2 * b + 11
    elif kind == "ii":
        always, acts = 4, 2 * b
    else:
        raise ValueError(f"feedback kind must be 'ia', 'ib' or 'ii', got {kind!r}")
    return always + float(acting) * acts


def draws_per_type_i(n_literals: int, scheme: str = "pool", s: float | None = None,
                     chunk_words: int = CPU_CHUNK_WORDS) -> float:
    """Random draws of the 1/s mask of one Type I event over ``n_literals`` literals.

    ``pool`` (ours): one per chunk of ``chunk_words`` words (16 on a CPU, 2 on a GPU thread); ``per_literal``
    (PyTsetlinMachineCUDA): one per literal; ``pytm`` (pyTsetlinMachine 0.6.6): a Box-Muller normal (2 draws) for
    the number ``m = L/s`` of literals to forget, then distinct picks with retries, ``L (H_L - H_{L-m})`` draws
    in expectation (``L ln(L / (L - m))``; needs ``s``)."""
    L = int(n_literals)
    if scheme == "pool":
        words = -(-L // WORD_BITS)
        return float(-(-words // int(chunk_words)))
    if scheme == "per_literal":
        return float(L)
    if scheme == "pytm":
        if s is None or not s > 1:
            raise ValueError(f"the pytm draw scheme needs s > 1, got {s!r}")
        m = min(L / float(s), L - 1.0)
        return PYTM_NORMAL_DRAWS + L * (math.log(L + 0.5) - math.log(L - m + 0.5)) if L > 0 else 0.0
    raise ValueError(f"draw scheme must be one of {DRAW_SCHEMES}, got {scheme!r}")


@dataclass(frozen=True)
class Cost:
    """Counted work of one pass, per part (``parts[name]``: ``word_ops``, ``scalar_ops``, ``draws``, ``bytes``),
    and its totals; ``sizes`` records what it was counted for."""

    parts: dict
    bytes_compulsory: float
    bytes_streamed: float
    sizes: dict = field(default_factory=dict)

    @property
    def word_ops(self) -> float:
        return float(sum(p.get("word_ops", 0.0) for p in self.parts.values()))

    @property
    def scalar_ops(self) -> float:
        """Scalar operations, the draws (``DRAW_OPS`` each) included."""
        return float(sum(p.get("scalar_ops", 0.0) + DRAW_OPS * p.get("draws", 0.0) for p in self.parts.values()))

    @property
    def draws(self) -> float:
        return float(sum(p.get("draws", 0.0) for p in self.parts.values()))

    @property
    def ops(self) -> float:
        """All operations, word and scalar (draws included)."""
        return self.word_ops + self.scalar_ops


def _positive(**values) -> None:
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v >= 0 or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")


def epoch_cost(n_examples: int, n_clauses: int, n_features: int, n_classes: int = 2, *, append_negated: bool = True,
               state_bits: int = 8, type_ia: float = 0.0, type_ib: float = 0.0, type_ii: float = 0.0,
               batch_size: int = 100, eval_words="max", acting: float = 1.0, boost_true_positive: bool = True,
               draw_scheme: str = "pool", s: float | None = None, chunk_words: int = CPU_CHUNK_WORDS,
               threads: int = 1) -> Cost:
    """The work of one training epoch (asynchronous tallies) of ``n_clauses`` clauses per class over
    ``n_examples`` examples of ``n_features`` features, with ``type_ia`` / ``type_ib`` / ``type_ii`` feedback
    events in the epoch (a run record's ``diagnostics``; expected counts for a hypothetical dataset).

    ``eval_words``: the words a training evaluation reads on average: ``"max"`` (every word, each visit),
    ``"min"`` (the least the counters allow: one word per visit, all ``W`` on the ``Ia + II`` visits whose
    clause must output 1) or a number. ``acting``: the fraction of chunks a feedback event updates (1: all)."""
    _positive(n_examples=n_examples, n_clauses=n_clauses, n_features=n_features, n_classes=n_classes,
              type_ia=type_ia, type_ib=type_ib, type_ii=type_ii, acting=acting)
    if not 0 <= acting <= 1:
        raise ValueError(f"acting must lie in [0, 1], got {acting!r}")
    if batch_size < 1 or threads < 1 or state_bits < 1:
        raise ValueError("batch_size, threads and state_bits must be >= 1")
    n, C, b = int(n_examples), int(n_classes), int(state_bits)
    G = int(n_clauses) * C
    L = literal_count(n_features, append_negated)
    W = literal_words(n_features, append_negated)
    V = float(n) * G
    if eval_words == "max":
        words_read = V * W
    elif eval_words == "min":
        o1 = min(V, float(type_ia) + float(type_ii))
        words_read = (V - o1) + o1 * W
    else:
        _positive(eval_words=eval_words)
        words_read = V * min(float(eval_words), W)
    events_i = float(type_ia) + float(type_ib)
    parts = {
        "clause_evaluation": {"word_ops": EVAL_TRAIN_OPS * words_read, "words": words_read},
        "type_ia": {"word_ops": float(type_ia) * W * feedback_word_ops("ia", b, acting, boost_true_positive),
                    "draws": float(type_ia) * draws_per_type_i(L, draw_scheme, s, chunk_words) * acting},
        "type_ib": {"word_ops": float(type_ib) * W * feedback_word_ops("ib", b, acting),
                    "draws": float(type_ib) * draws_per_type_i(L, draw_scheme, s, chunk_words) * acting},
        "type_ii": {"word_ops": float(type_ii) * W * feedback_word_ops("ii", b, acting)},
        "visits": {"scalar_ops": VISIT_OPS * V,
                   "draws": V * (1.0 + ((C - 1) / C if C > 1 else 0.0)) + KEY_DRAWS * float(n)},
        "tallies": {"scalar_ops": TALLY_SYNC_OPS * C * float(n) * (G / TALLY_SYNC_CLAUSES + threads)},
    }
    state = 4.0 * G * b * W
    batches = -(-n // int(batch_size))
    other = 4.0 * n * W + 4.0 * 3 * C * n + 8.0 * G * (-(-n // 32)) + 16.0 * n  # X; y, tallies r/w; outputs; keys
    sizes = {"n_examples": n, "n_clauses_total": G, "n_literals": L, "words": W, "state_bits": b, "visits": V,
             "feedback_events": events_i + float(type_ii), "batches": batches, "state_bytes": state,
             "eval_words": eval_words, "acting": acting, "draw_scheme": draw_scheme}
    return Cost(parts, bytes_compulsory=2 * state + other,
                bytes_streamed=2 * state * batches + other + 4.0 * n * W * (threads - 1), sizes=sizes)


def evaluation_cost(n_examples: int, n_clauses: int, n_features: int, n_classes: int = 2, *,
                    append_negated: bool = True, state_bits: int = 8, include_words=None,
                    eval_words="max") -> Cost:
    """The work of one evaluation pass (inference) over ``n_examples`` examples.

    ``include_words=None``: the dense scan of the include planes (the GPU's ``tm_class_sums``), ``eval_words``
    words read per example and clause (``"max"``: all ``W``, or a number). A number: the CPU build's compacted
    clauses, with that many include words that are not 0 per clause on average, all read (an upper count; the
    early exit reads fewer), after compacting every include plane once."""
    _positive(n_examples=n_examples, n_clauses=n_clauses, n_features=n_features, n_classes=n_classes)
    n, C = int(n_examples), int(n_classes)
    G = int(n_clauses) * C
    W = literal_words(n_features, append_negated)
    pairs = float(n) * G
    plane = 4.0 * G * W
    if include_words is None:
        per = W if eval_words == "max" else min(float(eval_words), W)
        parts = {"clause_evaluation": {"word_ops": EVAL_INFER_OPS * pairs * per, "words": pairs * per}}
        moved = plane
    else:
        _positive(include_words=include_words)
        k = min(float(include_words), W)
        parts = {"compaction": {"word_ops": 2.0 * G * W, "words": 2.0 * G * W},
                 "clause_evaluation": {"word_ops": EVAL_COMPACT_OPS * pairs * k, "words": pairs * k}}
        moved = plane + 8.0 * G * k
    parts["sums"] = {"scalar_ops": 2.0 * pairs}
    sizes = {"n_examples": n, "n_clauses_total": G, "words": W, "state_bits": int(state_bits),
             "include_words": include_words}
    total = moved + 4.0 * n * W + 4.0 * C * n
    return Cost(parts, bytes_compulsory=total, bytes_streamed=total, sizes=sizes)


def per_clause(cost: Cost) -> Cost:
    """The work of one clause's thread when every clause runs on its own (the paper's one thread per clause): the
    epoch's work divided evenly over the clauses, the critical path of a device with a lane per clause."""
    G = cost.sizes.get("n_clauses_total")
    if not G:
        raise ValueError("this cost has no n_clauses_total in its sizes")
    parts = {k: {q: v / G for q, v in p.items()} for k, p in cost.parts.items()}
    return Cost(parts, cost.bytes_compulsory / G, cost.bytes_streamed / G, {**cost.sizes, "per_clause": True})


def chain_rounds(n_examples: int, n_clauses: int, n_features: int, n_classes: int = 2, *, threads_per_clause: int,
                 append_negated: bool = True, type_ia: float = 0.0, type_ib: float = 0.0, type_ii: float = 0.0,
                 eval_words="min", chunk_words: int = GPU_CHUNK_WORDS) -> dict:
    """The rounds one clause's group of ``threads_per_clause`` GPU threads runs one after another in a training
    epoch: its critical path, which no number of other clauses shortens.

    Every group visits every example of the epoch in order (kernels/README.md, "Schedule"), and each step of a visit
    waits for the one before: the group reads its words in rounds of ``threads_per_clause x chunk_words`` words
    (``R`` rounds for all ``W`` words), votes after each round whether to stop (the evaluation), and a feedback
    event walks all ``R`` rounds again (its loads, draws, updates and stores of a round depend on the round's own
    words only, so a round is one step). Per visit: one step (the visit: hint, tally, draws), plus the
    evaluation's rounds (``eval_words``: ``"min"``, only the ``Ia + II`` visits whose clause outputs 1 read all
    ``R``; ``"max"``: every visit does), plus ``R`` per feedback event. The epoch's events (``type_*``, of all
    clauses) are spread evenly over the ``n_clauses x n_classes`` groups. Returns ``rounds`` (per group and epoch),
    ``rounds_per_visit`` (all words) and the parts."""
    _positive(n_examples=n_examples, n_clauses=n_clauses, n_features=n_features, n_classes=n_classes,
              type_ia=type_ia, type_ib=type_ib, type_ii=type_ii)
    if isinstance(threads_per_clause, bool) or not isinstance(threads_per_clause, int) or threads_per_clause < 1:
        raise ValueError(f"threads_per_clause must be an integer >= 1, got {threads_per_clause!r}")
    if eval_words not in ("min", "max"):
        raise ValueError(f"eval_words must be 'min' or 'max', got {eval_words!r}")
    n, G = float(n_examples), float(n_clauses) * float(n_classes)
    W = literal_words(n_features, append_negated)
    R = -(-W // (threads_per_clause * int(chunk_words)))
    per_group = {k: float(v) / G for k, v in (("type_ia", type_ia), ("type_ib", type_ib), ("type_ii", type_ii))}
    output_one = min(n, per_group["type_ia"] + per_group["type_ii"])
    parts = {"visits": n,
             "evaluation": (output_one * R if eval_words == "min" else n * R),
             "feedback": R * sum(per_group.values())}
    return {"rounds": float(sum(parts.values())), "rounds_per_visit": R, "words": W, "parts": parts,
            "threads_per_clause": threads_per_clause, "eval_words": eval_words}


# -- the host's limits ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Host:
    """What a host sustains with ``threads`` threads (benchmarks/host_limits.py; a GPU's with its resident threads,
    benchmarks/gpu_limits.py): bytes per second to and from memory, 32-bit word operations per second
    (vectorised), scalar integer operations per second."""

    name: str
    threads: int
    bandwidth_bytes_s: float
    word_ops_s: float
    scalar_ops_s: float


LIMIT_FIELDS = ("copy_bytes_s", "triad_bytes_s", "word_ops_s", "scalar_ops_s")
CLOCKS = {"wall": "measurements", "cpu": "measurements_cpu_time"}
GPU_LIMITS_KEY = "gpu"  # a GPU's limits record (benchmarks/gpu_limits.py): measurements.gpu, the whole device


def _limits_host(per: dict, where: str, name: str, threads: int) -> Host:
    for field_name in LIMIT_FIELDS:
        if not isinstance(per.get(field_name), (int, float)) or not per[field_name] > 0:
            raise ValueError(f"{where}.{field_name} is missing or not positive")
    return Host(name=name, threads=int(threads),
                bandwidth_bytes_s=float(max(per["copy_bytes_s"], per["triad_bytes_s"])),
                word_ops_s=float(per["word_ops_s"]), scalar_ops_s=float(per["scalar_ops_s"]))


def host_from_limits(limits: dict, threads: int, clock: str = "wall") -> Host:
    """The :class:`Host` of a host-limits record (``benchmarks/host_limits.py``) for ``threads`` threads, by the wall
    clock (``measurements``) or per CPU second of the slowest thread (``measurements_cpu_time``: the limits when the
    threads have their cores, on a shared machine); the bandwidth is the faster of copy and triad (so that the bound
    stays a lower bound)."""
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    key = CLOCKS[clock]
    per = (limits.get(key) or {}).get(str(int(threads)))
    if not isinstance(per, dict):
        have = sorted((limits.get(key) or {}), key=lambda t: int(t) if str(t).isdigit() else 0)
        raise ValueError(f"no {key} for {threads} thread(s) (measured: {', '.join(have) or 'none'})")
    return _limits_host(per, f"{key}.{threads}", f"{limits.get('host', '')} ({clock} clock)", threads)


def gpu_host_from_limits(limits: dict) -> Host:
    """The :class:`Host` of a GPU's limits record (``benchmarks/gpu_limits.py``: ``measurements.gpu``, the whole
    device timed by CUDA events; ``threads`` the threads its launches kept resident); the bandwidth is the faster
    of copy and triad, as in :func:`host_from_limits`."""
    per = (limits.get("measurements") or {}).get(GPU_LIMITS_KEY)
    if not isinstance(per, dict):
        raise ValueError(f"no measurements.{GPU_LIMITS_KEY} (not a GPU's limits record: benchmarks/gpu_limits.py "
                         "writes one)")
    name = f"{(limits.get('gpu') or {}).get('name') or limits.get('host', '')} (GPU)"
    threads = per.get("threads")
    return _limits_host(per, f"measurements.{GPU_LIMITS_KEY}", name,
                        threads if isinstance(threads, int) and threads > 0 else 1)


def bound_terms(cost: Cost, host: Host) -> dict:
    """Seconds each limit alone would take: ``memory_s`` (compulsory bytes), ``memory_streamed_s``, ``word_s``,
    ``scalar_s``."""
    return {"memory_s": cost.bytes_compulsory / host.bandwidth_bytes_s,
            "memory_streamed_s": cost.bytes_streamed / host.bandwidth_bytes_s,
            "word_s": cost.word_ops / host.word_ops_s, "scalar_s": cost.scalar_ops / host.scalar_ops_s}


def bound_s(cost: Cost, host: Host, streamed: bool = False) -> float:
    """The least time ``host`` could take for ``cost``: the largest of bytes / bandwidth (compulsory bytes, or with
    ``streamed`` the schedule's bytes when states leave the cache between batches), word operations / word
    throughput and scalar operations / scalar throughput."""
    t = bound_terms(cost, host)
    return max(t["memory_streamed_s" if streamed else "memory_s"], t["word_s"], t["scalar_s"])


def limiting_term(cost: Cost, host: Host, streamed: bool = False) -> str:
    """Which limit sets :func:`bound_s`: ``"memory"``, ``"word"`` or ``"scalar"``."""
    t = bound_terms(cost, host)
    terms = {"memory": t["memory_streamed_s" if streamed else "memory_s"], "word": t["word_s"],
             "scalar": t["scalar_s"]}
    return max(terms, key=terms.get)
