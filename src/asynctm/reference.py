"""A small, sequential NumPy Tsetlin Machine: the yardstick the kernels are tested against.

Written from the paper (Abeyrathna et al., ICML 2021, Sections 2-3: Tables 1 and 2, Eq. 2,
Algorithm 1) and from ``kernels/README.md``, which fixes everything the paper leaves open
(polarity, the tally refresh, the random streams, the schedule). It works on *unpacked* literals
(one uint8 per literal) and plain integer automaton states, and loops over clauses and examples
one at a time, exactly as the CPU build runs with a single thread. With asynchronous tallies
(``tally="async"``, the paper's Algorithm 1):

    for each batch:  for clause g = 0..G-1:  for each example e of the batch, in order:
        refresh the tally of (class of g, e), then give feedback.

With synchronous tallies (``tally="sync"``, the classic Tsetlin Machine), which every thread count runs
alike:

    for each example e, in order:  refresh every clause on e;  then for clause g = 0..G-1: feedback.

With ``order="staggered"``, clause g visits a batch of B examples from its example ``g mod B`` on, wrapping
around (:meth:`Reference.visit_order`): "in order" above becomes "in that order", and "each example e" becomes
"each step i, every clause on its i-th example".

It is meant for tests on small problems only; it is deliberately slow and plain.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

MASK64 = (1 << 64) - 1
TWO32 = 1 << 32
GOLDEN = 0x9E3779B97F4A7C15  # Weyl increment that spreads counters over the 64-bit space
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

PURPOSE_PARTICIPATE = 0
PURPOSE_UPDATE = 1
PURPOSE_MASK = 2


# -- Counter-based random numbers (kernels/README.md, "Random numbers") ---------------------------------------------
# Every function accepts Python ints (exact, reduced mod 2^64) or numpy uint64 arrays (which wrap
# mod 2^64 by themselves); the two paths give the same bits.


def _is_array(*xs) -> bool:
    for x in xs:
        if isinstance(x, np.ndarray):
            return True
    return False


def _as_u64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint64)


def mix64(z):
    """The 64-bit finaliser: z ^= z>>30; z *= M1; z ^= z>>27; z *= M2; z ^= z>>31 (mod 2^64)."""
    if _is_array(z):
        z = _as_u64(z).copy()
        with np.errstate(over="ignore"):
            z ^= z >> np.uint64(30)
            z *= np.uint64(_M1)
            z ^= z >> np.uint64(27)
            z *= np.uint64(_M2)
            z ^= z >> np.uint64(31)
        return z
    z = int(z) & MASK64
    z ^= z >> 30
    z = (z * _M1) & MASK64
    z ^= z >> 27
    z = (z * _M2) & MASK64
    z ^= z >> 31
    return z


def rng_key(seed, epoch, e):
    """key(seed, epoch, e) = mix64(mix64(mix64(seed) ^ epoch) ^ e): one stream per visit's example."""
    if _is_array(seed, epoch, e):
        return mix64(mix64(mix64(_as_u64(seed)) ^ _as_u64(epoch)) ^ _as_u64(e))
    return mix64(mix64(mix64(int(seed)) ^ (int(epoch) & MASK64)) ^ (int(e) & MASK64))


def ctr(g, purpose, i):
    """ctr(g, purpose, i) = (g << 32) | (purpose << 30) | i; purpose 0 participate, 1 update, 2 mask."""
    if _is_array(g, purpose, i):
        g, purpose, i = _as_u64(g), _as_u64(purpose), _as_u64(i)
        return (g << np.uint64(32)) | (purpose << np.uint64(30)) | i
    g, purpose, i = int(g), int(purpose), int(i)
    if not (0 <= g < TWO32 and 0 <= purpose < 4 and 0 <= i < (1 << 30)):
        raise ValueError(f"counter fields out of range: g={g}, purpose={purpose}, i={i}")
    return (g << 32) | (purpose << 30) | i


def draw(key, counter):
    """draw(key, ctr) = mix64(key ^ (ctr * GOLDEN)), all mod 2^64."""
    if _is_array(key, counter):
        with np.errstate(over="ignore"):
            return mix64(_as_u64(key) ^ (_as_u64(counter) * np.uint64(GOLDEN)))
    return mix64(int(key) ^ ((int(counter) * GOLDEN) & MASK64))


def u32(key, counter):
    """The upper 32 bits of a draw: a uniform integer in [0, 2^32)."""
    d = draw(key, counter)
    if isinstance(d, np.ndarray):
        return d >> np.uint64(32)
    return d >> 32


POOL_BITS = 16  # the 1/s pool holds 2^POOL_BITS words of 64 lanes
PURPOSE_POOL = 3
POOL_EPOCH = MASK64  # the pool's stream: key(seed, 2^64 - 1, 0), an epoch no training reaches


def s_pool_ones(s, pool_bits: int = POOL_BITS) -> int:
    """round(2^(pool_bits+6) / s), s at its exact binary value: the number of 1 lanes of the pool.

    P(m = 1) averaged over a block's 8 slots is this over 2^(pool_bits+6), within 2^-(pool_bits+7) of 1/s; a single
    literal reads one slot's words (an eighth of the pool), whose share of ones scatters about that by the pool's
    random sampling (kernels/README.md, "The 1/s pool").
    s = 1 gives every lane 1.
    """
    s = Fraction(s)
    if s < 1:
        raise ValueError(f"s must be >= 1 (the paper's s in [1, inf)), got {float(s)}")
    n_lanes = 1 << (pool_bits + 6)
    return int(Fraction(n_lanes) / s + Fraction(1, 2))  # int() of a positive Fraction is its floor


@lru_cache(maxsize=16)
def _s_pool(seed: int, ones: int, pool_bits: int) -> np.ndarray:
    n_lanes = 1 << (pool_bits + 6)
    key = rng_key(seed, POOL_EPOCH, 0)
    u = u32(np.uint64(key), ctr(np.uint64(0), np.uint64(PURPOSE_POOL), np.arange(n_lanes, dtype=np.uint64)))
    order = np.argsort(u, kind="stable")  # ties keep lane order
    lanes = np.zeros(n_lanes, dtype=np.uint8)
    lanes[order[:ones]] = 1
    lanes.setflags(write=False)
    return lanes


def s_pool(seed, s, pool_bits: int = POOL_BITS) -> np.ndarray:
    """The 1/s pool of a model with `seed`, as one uint8 per lane (2^(pool_bits+6),); lane i is bit
    i % 64 of pool word i // 64. Its s_pool_ones(s) 1 lanes are those with the smallest uniforms
    u_i = u32(key(seed, 2^64-1, 0), ctr(0, 3, i)), ties broken by the lower i."""
    return _s_pool(int(seed) & MASK64, s_pool_ones(s, pool_bits), pool_bits)


MASK_BLOCK_PAIRS = 8  # pairs of words (64 literals each) that share one mask draw


def literal_mask(seed, epoch, e, g, n_literals, pool) -> np.ndarray:
    """The 1/s mask of Table 1 for the visit (g, e), uint8 (n_literals,), from the lanes of `pool`.

    Literal l is lane b = l % 64 of pair p = l // 64 (words 2p and 2p+1); pairs form blocks of 8. With
    d = draw(key, ctr(g, 2, p // 8)) and slot j = p % 8, the pair's 64 lanes are pool word
    8 * (d >> (64 - (POOL_BITS - 3))) + j rotated left by r = (d >> 6j) & 63, i.e. lane b is pool lane
    64 * word + (b - r) % 64.
    """
    pool = np.asarray(pool)
    pool_bits = int(pool.size).bit_length() - 7
    key = rng_key(seed, epoch, e)
    mask = np.empty(n_literals, dtype=np.uint8)
    for p in range(-(-n_literals // 64)):
        d = draw(key, ctr(g, PURPOSE_MASK, p // MASK_BLOCK_PAIRS))
        slot = p % MASK_BLOCK_PAIRS
        word = MASK_BLOCK_PAIRS * (d >> (64 - (pool_bits - 3))) + slot
        rot = (d >> (6 * slot)) & 63
        for b in range(min(64, n_literals - 64 * p)):
            mask[64 * p + b] = pool[64 * word + (b - rot) % 64]
    return mask


def participates(key: int, g: int, n_classes: int) -> bool:
    """A clause of a non-target class takes part with probability 1/(C-1): u * (C-1) < 2^32.

    `key` is `rng_key(seed, epoch, e)` of the visit."""
    u = u32(key, ctr(g, PURPOSE_PARTICIPATE, 0))
    return u * (n_classes - 1) < TWO32


def is_updated(key: int, g: int, err: int, T: int) -> bool:
    """Algorithm 1's rand() <= e/2T, as the exact integer comparison u * 2T < err * 2^32."""
    u = u32(key, ctr(g, PURPOSE_UPDATE, 0))
    return u * 2 * T < err * TWO32


def is_updated_quadratic(key: int, g: int, err: int, T: int) -> bool:
    """pyTsetlinMachine's regression rule, rand() <= ((v - y)/T)^2, as the exact u * T^2 < err^2 * 2^32."""
    u = u32(key, ctr(g, PURPOSE_UPDATE, 0))
    return u * T * T < err * err * TWO32


# -- Inputs and targets -----------------------------------------------------------------------


def encode_literals(X, append_negated: bool = True) -> np.ndarray:
    """0/1 features (n, F) -> literals (n, 2F) = [x_1..x_F, not x_1..not x_F] (Section 2.1), uint8."""
    X = np.asarray(X)
    if X.ndim != 2 or not np.isin(X, (0, 1)).all():
        raise ValueError("X must be a 2-D array of 0/1 features")
    X = X.astype(np.uint8)
    return np.hstack([X, 1 - X]) if append_negated else X.copy()


def targets_for_classification(y, n_classes: int, T: int) -> np.ndarray:
    """Per-class tally targets (C, n): +T for the example's class, -T for the others."""
    y = np.asarray(y, dtype=np.int64)
    target = np.full((n_classes, y.size), -T, dtype=np.int64)
    target[y, np.arange(y.size)] = T
    return target


# -- The machine -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Visit:
    """What happened at one (clause, example) visit; returned for tests and debugging."""

    o: int  # training output at the refresh
    v: int  # clipped tally read after the refresh
    direction: int  # +1 towards a larger tally (v <= target), -1 otherwise
    participated: bool  # False only for a non-target class that sat this example out
    updated: bool  # passed the err/2T draw (and the participate draw)
    feedback: str  # "I", "II" or "" (none, or Type II on a clause that outputs 0)


EVENTS = ("type_ia", "type_ib", "type_ii")  # Type I with o = 1, Type I with o = 0, Type II (with o = 1)


class ReferenceTM:
    """The Tsetlin Machine of the paper with local voting tallies, sequentially.

    Clause g (0-based, G = n_classes * n_clauses) belongs to class g // n_clauses with index
    j = g % n_clauses; polarity +1 for even j and -1 for odd j (the paper's 1-based odd clauses
    vote for the class, Eq. 1), or always +1 for regression (the RTM).
    """

    def __init__(
        self,
        n_classes: int,
        n_clauses: int,
        n_literals: int,
        T: int,
        s: float,
        state_bits: int = 8,
        boost_true_positive: bool = True,
        regression: bool = False,
        pool_bits: int = POOL_BITS,
        tally: str = "async",
        regression_rule: str = "linear",
        order: str = "dataset",
    ):
        if int(T) != T or T < 1:
            raise ValueError("T must be a positive integer")
        if not regression and n_clauses % 2:
            raise ValueError("n_clauses per class must be even (alternating polarity)")
        if not 1 <= state_bits <= 31:
            raise ValueError("state_bits must be in [1, 31]")
        if tally not in ("async", "sync"):
            raise ValueError("tally must be 'async' or 'sync'")
        if regression_rule not in ("linear", "quadratic"):
            raise ValueError("regression_rule must be 'linear' or 'quadratic'")
        if order not in ("dataset", "staggered"):
            raise ValueError("order must be 'dataset' or 'staggered'")
        self.order = order
        self.tally = tally
        self.regression_rule = regression_rule
        self.n_classes = int(n_classes)
        self.n_clauses = int(n_clauses)
        self.n_literals = int(n_literals)
        self.T = int(T)
        self.s = s
        self.state_bits = int(state_bits)
        self.boost_true_positive = bool(boost_true_positive)
        self.regression = bool(regression)

        self.G = self.n_classes * self.n_clauses
        self.max_state = (1 << self.state_bits) - 1
        self.include_from = 1 << (self.state_bits - 1)  # include iff the most significant bit is 1
        self.pool_bits = int(pool_bits)
        self.s_pool_ones = s_pool_ones(s, self.pool_bits)
        # All automata start just below include: every clause starts empty.
        self.ta_state = np.full((self.G, self.n_literals), self.include_from - 1, dtype=np.int64)

        self.X: np.ndarray | None = None
        self.y_target: np.ndarray | None = None
        self.stored_output: np.ndarray | None = None
        self.class_sum: np.ndarray | None = None
        self.feedback_events = np.zeros((self.G, len(EVENTS)), dtype=np.int64)  # per clause, EVENTS order

    # ---- structure -----------------------------------------------------------------------

    def class_of(self, g: int) -> int:
        return g // self.n_clauses

    def polarity(self, g: int) -> int:
        if self.regression:
            return 1
        return 1 if (g % self.n_clauses) % 2 == 0 else -1

    def polarities(self) -> np.ndarray:
        return np.array([self.polarity(g) for g in range(self.G)], dtype=np.int64)

    def includes(self, g: int | None = None) -> np.ndarray:
        """Include/exclude decisions (bool), of one clause or of all (G, n_literals)."""
        states = self.ta_state if g is None else self.ta_state[g]
        return states >= self.include_from

    # ---- evaluation (Eq. 1 and 2) ----------------------------------------------------------

    def clause_output(self, g: int, x: np.ndarray, training: bool) -> int:
        """C_g(x) = AND of the included literals; an empty clause gives 1 in training, 0 otherwise."""
        included = self.includes(g)
        if not included.any():
            return int(training)
        return int(np.all(x[included] == 1))

    def clause_outputs(self, X: np.ndarray, training: bool) -> np.ndarray:
        """Outputs of every clause on every example, uint8 (G, n)."""
        X = np.asarray(X)
        out = np.empty((self.G, X.shape[0]), dtype=np.uint8)
        for g in range(self.G):
            included = self.includes(g)
            if not included.any():
                out[g] = int(training)
            else:
                out[g] = np.all(X[:, included] == 1, axis=1)
        return out

    def _vote(self, outputs: np.ndarray) -> np.ndarray:
        """sum_j polarity_j * outputs_j per class (Eq. 2), unclipped, int64 (C, n)."""
        signed = outputs.astype(np.int64) * self.polarities()[:, None]
        return signed.reshape(self.n_classes, self.n_clauses, -1).sum(axis=1)

    def inference_class_sums(self, X: np.ndarray) -> np.ndarray:
        """clip(sum_j polarity_j C_j(X), -T, T) per class, with empty clauses voting 0."""
        return np.clip(self._vote(self.clause_outputs(X, training=False)), -self.T, self.T)

    # ---- training state (Section 3.1: the voting tally) ------------------------------------

    def init_training(self, X: np.ndarray, y_target: np.ndarray) -> None:
        """Store the training set and compute stored outputs o* and tallies from scratch."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_literals:
            raise ValueError(f"X must have shape (n, {self.n_literals})")
        y_target = np.asarray(y_target, dtype=np.int64)
        if y_target.shape != (self.n_classes, X.shape[0]):
            raise ValueError(f"y_target must have shape ({self.n_classes}, {X.shape[0]})")
        self.X = X.astype(np.uint8)
        self.y_target = y_target.copy()
        self.stored_output = self.clause_outputs(self.X, training=True)
        self.class_sum = self._vote(self.stored_output)

    # ---- feedback (Tables 1 and 2) ---------------------------------------------------------

    def _step(self, g: int, up: np.ndarray, down: np.ndarray) -> None:
        """Move the automata of clause g one state, saturating at 0 and 2^bits - 1.

        Reinforcing Include (rewarding Include / penalising Exclude) increments the counter;
        reinforcing Exclude decrements it (Section 2.2).
        """
        states = self.ta_state[g]
        states[up] = np.minimum(states[up] + 1, self.max_state)
        states[down] = np.maximum(states[down] - 1, 0)

    def type_i_feedback(self, g: int, x: np.ndarray, o: int, mask: np.ndarray) -> None:
        """Table 1 with the 1/s events given by `mask` (m = 1 with probability 1/s).

        o = 1, literal 1: Include rewarded / Exclude penalised with prob (s-1)/s (m = 0), or
          always with boost_true_positive: increment.
        o = 1, literal 0: Exclude rewarded with prob 1/s (m = 1): decrement.
        o = 0: Include penalised / Exclude rewarded with prob 1/s (m = 1): decrement.
        """
        x = np.asarray(x).astype(bool)
        m = np.asarray(mask).astype(bool)
        if o:
            up = x if self.boost_true_positive else x & ~m
            down = ~x & m
        else:
            up = np.zeros_like(x)
            down = m
        self._step(g, up, down)

    def type_ii_feedback(self, g: int, x: np.ndarray, o: int) -> None:
        """Table 2: with o = 1, an Exclude on a 0-literal is penalised (prob 1): increment."""
        if not o:
            return
        x = np.asarray(x).astype(bool)
        up = ~x & ~self.includes(g)
        self._step(g, up, np.zeros_like(up))

    # ---- one visit, one batch, one epoch (Algorithm 1 + kernels/README.md) -------------------

    def refresh(self, g: int, e: int) -> int:
        """Algorithm 1 lines 12-17: clause g's output on example e, its stored output and its vote updated."""
        o = self.clause_output(g, self.X[e], training=True)
        o_star = int(self.stored_output[g, e])
        if o != o_star:
            self.class_sum[self.class_of(g), e] += self.polarity(g) * (o - o_star)
            self.stored_output[g, e] = o
        return o

    def visit(self, g: int, e: int, epoch: int, seed: int) -> Visit:
        """Clause g visits training example e: tally refresh, then feedback (asynchronous tallies)."""
        return self.feedback(g, e, self.refresh(g, e), epoch, seed)

    def feedback(self, g: int, e: int, o: int, epoch: int, seed: int) -> Visit:
        """Algorithm 1 lines 4-11: clause g, with output o on example e, learns from the tally as it stands."""
        c = self.class_of(g)
        pol = self.polarity(g)
        x = self.X[e]
        v = min(max(int(self.class_sum[c, e]), -self.T), self.T)
        t = int(self.y_target[c, e])
        d = 1 if v <= t else -1
        key = rng_key(seed, epoch, e)
        if d == -1 and self.n_classes > 1 and not participates(key, g, self.n_classes):
            return Visit(o, v, d, participated=False, updated=False, feedback="")
        err = abs(t - v)
        updated = is_updated_quadratic if self.regression_rule == "quadratic" else is_updated
        if not updated(key, g, err, self.T):
            return Visit(o, v, d, participated=True, updated=False, feedback="")
        if d * pol > 0:
            mask = literal_mask(seed, epoch, e, g, self.n_literals, s_pool(seed, self.s, self.pool_bits))
            self.type_i_feedback(g, x, o, mask)
            self.feedback_events[g, 0 if o else 1] += 1
            return Visit(o, v, d, True, True, "I")
        if o == 1:
            self.type_ii_feedback(g, x, o)
            self.feedback_events[g, 2] += 1
            return Visit(o, v, d, True, True, "II")
        return Visit(o, v, d, True, True, "")

    def train_batch(self, start: int, end: int, epoch: int, seed: int) -> None:
        """One batch. Asynchronous tallies: every clause visits examples start..end-1 (in its visit_order),
        clause by clause (one kernel launch). Synchronous: step by step (each clause on its i-th example), every
        clause refreshed, then every clause given feedback from the exact tally."""
        if self.tally == "sync":
            orders = [self.visit_order(g, start, end) for g in range(self.G)]
            for i in range(end - start):
                outputs = [self.refresh(g, orders[g][i]) for g in range(self.G)]
                for g in range(self.G):
                    self.feedback(g, orders[g][i], outputs[g], epoch, seed)
            return
        for g in range(self.G):
            for e in self.visit_order(g, start, end):
                self.visit(g, e, epoch, seed)

    def visit_order(self, g: int, start: int, end: int) -> list[int]:
        """The examples of the batch [start, end) in the order clause g visits them: dataset order, or
        (``order="staggered"``) from example ``start + g mod (end - start)`` on, wrapping around."""
        examples = list(range(start, end))
        if self.order == "staggered":
            k = g % len(examples)
            examples = examples[k:] + examples[:k]
        return examples

    def train_epoch(self, epoch: int, seed: int, batch_size: int) -> None:
        """Examples in dataset order, in batches of batch_size with a barrier between batches."""
        n = self.X.shape[0]
        for start in range(0, n, batch_size):
            self.train_batch(start, min(start + batch_size, n), epoch, seed)
