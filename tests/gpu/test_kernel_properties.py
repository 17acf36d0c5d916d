"""Properties of the Tsetlin Machine rules over generated inputs (hypothesis), against the NumPy reference.

The fixed cases of test_kernel_exactness.py, generalised: for generated small problems (shapes, T, s, automaton
sizes, batch sizes, seeds, epochs, tallies, orders, update rules) the CPU build with one thread, through the backend
and through the estimators, ends every epoch in exactly the reference's machine; the reference's rules, taken as
pure functions (asynctm.reference), keep the contracts their docstrings and kernels/README.md state; and the draws
are as frequent as those contracts say, within a binomial 5-sigma band.

Every property is derandomised (the same examples on every run, so CI is reproducible) and keeps no example
database. Each generated problem compiles its own kernels (the model's constants are #defines) unless the library
is in the cache (asynctm.backends.cpu, keyed by source): a first run takes longer than the next.
"""

from __future__ import annotations

import dataclasses
from contextlib import closing
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asynctm import TMClassifier, TMRegressor
from asynctm import reference as ref
from asynctm.reference import ReferenceTM
from tests.gpu.test_kernel_exactness import (
    _kernel_config,
    _pack_bits,
    _problem,
    _to_planes,
    assert_backend_equals_reference,
    assert_same,
    backends,
)


def _settings(max_examples: int) -> settings:
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


U64 = st.integers(0, 2**64 - 1)
TWO32 = 1 << 32
LOW32 = st.integers(0, 2**32 - 1)  # the lower half of a draw, which no rule reads
POOL_BITS = st.integers(3, 10)  # the kernels accept 3..19; small pools are quick to build (the default is 16)
TALLIES = st.sampled_from(["async", "sync"])
ORDERS = st.sampled_from(["dataset", "staggered"])


# ---------------------------------------------------------------------------------------------
# Exactness: the one-thread CPU build is the reference, on generated problems
# ---------------------------------------------------------------------------------------------


@st.composite
def problems(draw) -> dict:
    """A small problem in the layout of test_kernel_exactness.CONFIGS, with its schedule."""
    regression = draw(st.booleans())
    if regression:  # the Regression TM: one output, positive clauses only, any number of them
        n_classes, n_clauses = 1, draw(st.integers(1, 16))
        rule = draw(st.sampled_from(["linear", "quadratic"]))
    else:
        n_classes, n_clauses, rule = draw(st.integers(2, 4)), 2 * draw(st.integers(1, 8)), "linear"
    n = draw(st.integers(1, 40))
    return dict(
        c=dict(n_classes=n_classes, n_clauses=n_clauses, n_features=draw(st.integers(1, 20)),
               negated=draw(st.booleans()), T=draw(st.integers(1, 20)), s=draw(st.floats(1.0, 10.0)),
               bits=draw(st.integers(2, 8)), boost=draw(st.booleans()), regression=regression),
        rule=rule, tally=draw(TALLIES), order=draw(ORDERS),
        n=n, batch_size=draw(st.integers(1, 40)), seed=draw(U64),
        epochs=draw(st.lists(U64, min_size=1, max_size=2, unique=True)),  # epoch numbers need not be consecutive
        pool_bits=draw(POOL_BITS), data_seed=draw(st.integers(0, 2**32 - 1)),
        init=draw(st.sampled_from(["random", "initial"])),
    )


def _states_in_range(states: np.ndarray, bits: int) -> np.ndarray:
    # test_kernel_exactness._random_states places automata within 3 states of the include boundary, which for
    # 2-bit automata (states 0..3) reaches past both ends
    return np.clip(states, 0, (1 << bits) - 1)


@given(problems())
@_settings(25)
def test_one_thread_cpu_build_is_the_reference_on_generated_problems(p):
    """TA states, tallies and stored output bits after set-up and after each epoch, the feedback events of each
    clause, the training clause outputs and the inference class sums (what predictions are made of): all exactly
    the reference's."""
    c = p["c"]
    F, X, y_target, states = _problem(c, p["n"], seed=p["data_seed"], init=p["init"])
    states = _states_in_range(states, c["bits"])
    L = X.shape[1]
    tm = ReferenceTM(c["n_classes"], c["n_clauses"], L, c["T"], c["s"], c["bits"], c["boost"], c["regression"],
                     pool_bits=p["pool_bits"], tally=p["tally"], regression_rule=p["rule"], order=p["order"])
    tm.ta_state[:] = states
    tm.init_training(X, y_target)
    cfg = dataclasses.replace(_kernel_config(c, L, p["tally"], p["rule"], p["order"]), s_pool_bits=p["pool_bits"])
    X_words = _pack_bits(X)
    with closing(backends.make_backend("cpu", cfg, n_threads=1)) as be:
        if p["init"] == "initial":
            be.init_state()
        else:
            be.set_ta_state(_to_planes(states, c["bits"]))
        be.set_training_data(X_words, y_target.astype(np.int32))
        assert_backend_equals_reference(be, tm, p["n"], " before training")
        for epoch in p["epochs"]:
            tm.train_epoch(epoch, p["seed"], p["batch_size"])
            be.train_epoch(epoch, p["seed"], p["batch_size"])
            context = f" after epoch {epoch}"
            assert_backend_equals_reference(be, tm, p["n"], context)
            assert_same("feedback events", be.feedback_event_counts().astype(np.int64), tm.feedback_events,
                        ("clause", "Ia/Ib/II"), context)
        assert_same("training clause outputs", be.training_clause_outputs(X_words), tm.clause_outputs(X, True),
                    ("clause", "example"))
        assert_same("inference class sums", be.class_sums(X_words), tm.inference_class_sums(X), ("class", "example"))


@st.composite
def estimator_problems(draw) -> dict:
    regression = draw(st.booleans())
    n_classes = 1 if regression else draw(st.integers(2, 4))
    n_clauses = draw(st.integers(1, 16)) if regression else 2 * draw(st.integers(1, 8))
    return dict(
        regression=regression, n_classes=n_classes, n=draw(st.integers(max(2, n_classes), 40)),
        n_features=draw(st.integers(1, 20)), data_seed=draw(st.integers(0, 2**32 - 1)), epochs=draw(st.integers(1, 2)),
        params=dict(n_clauses=n_clauses, T=draw(st.integers(1, 20)), s=draw(st.floats(1.0, 10.0)),
                    state_bits=draw(st.integers(2, 8)), boost_true_positive=draw(st.booleans()),
                    append_negated=draw(st.booleans()), batch_size=draw(st.integers(1, 40)), seed=draw(U64),
                    tally=draw(TALLIES), order=draw(ORDERS),
                    regression_rule=draw(st.sampled_from(["linear", "quadratic"])) if regression else "linear"),
    )


@given(estimator_problems())
@_settings(10)
def test_estimators_fit_the_reference_on_generated_problems(p):
    """TMClassifier and TMRegressor (CPU, one thread, a seed) from their initial state: after fit(epochs=1 or 2),
    the automata, the class sums and the predictions are the reference's trained on the same targets (classes in
    sorted order: +T for the example's, -T for the others; regression targets scaled to [0, T]) with epochs 0, 1."""
    rng = np.random.default_rng(p["data_seed"])
    kw, n, C = p["params"], p["n"], p["n_classes"]
    F = rng.integers(0, 2, (n, p["n_features"])).astype(np.uint8)
    if p["regression"]:
        y = rng.normal(size=n) * 10.0
        y[:2] = (-1.0, 1.0)  # two distinct values
        est = TMRegressor(backend="cpu", n_threads=1, **kw)
        y_target = np.clip(np.floor((y - y.min()) / (y.max() - y.min()) * kw["T"]), 0, kw["T"])[None, :]
    else:
        idx = rng.integers(0, C, n)
        idx[:C] = rng.permutation(C)  # every class occurs
        labels = np.array(["ash", "beech", "cedar", "date"])[:C]
        y = labels[idx]
        est = TMClassifier(backend="cpu", n_threads=1, **kw)
        y_target = ref.targets_for_classification(idx, C, kw["T"])
    X = ref.encode_literals(F, kw["append_negated"])
    tm = ReferenceTM(C, kw["n_clauses"], X.shape[1], kw["T"], kw["s"], kw["state_bits"], kw["boost_true_positive"],
                     p["regression"], tally=kw["tally"], regression_rule=kw["regression_rule"], order=kw["order"])
    tm.init_training(X, y_target)
    for epoch in range(p["epochs"]):
        tm.train_epoch(epoch, kw["seed"], kw["batch_size"])
    with closing(est):
        est.fit(F, y, epochs=p["epochs"])
        assert_same("TA states", est.ta_states().reshape(tm.G, -1), tm.ta_state, ("clause", "literal"))
        sums = tm.inference_class_sums(X)
        assert_same("class sums", est.class_sums(F).T, sums, ("class", "example"))
        if p["regression"]:
            want = sums[0] / kw["T"] * (y.max() - y.min()) + y.min()
        else:
            want = labels[np.argmax(sums, axis=0)]
        assert_same("predictions", est.predict(F), want, ("example",))


# ---------------------------------------------------------------------------------------------
# The rules as pure functions
# ---------------------------------------------------------------------------------------------

FEATURES = st.integers(1, 20).flatmap(
    lambda f: st.lists(st.lists(st.integers(0, 1), min_size=f, max_size=f), min_size=1, max_size=30))


@given(FEATURES, st.booleans())
@_settings(30)
def test_encode_literals_appends_the_complement(rows, negated):
    X = np.array(rows)
    F = X.shape[1]
    lit = ref.encode_literals(X, append_negated=negated)
    assert lit.dtype == np.uint8 and lit.shape == (X.shape[0], 2 * F if negated else F)
    np.testing.assert_array_equal(lit[:, :F], X)
    if negated:
        np.testing.assert_array_equal(lit[:, F:], 1 - X)
        assert (lit[:, :F] + lit[:, F:] == 1).all()  # every feature: exactly one of x, not x is 1


@given(FEATURES, st.data())
@_settings(30)
def test_encode_literals_refuses_values_other_than_0_and_1(rows, data):
    X = np.array(rows)
    i, j = data.draw(st.integers(0, X.shape[0] - 1)), data.draw(st.integers(0, X.shape[1] - 1))
    X[i, j] = data.draw(st.integers(-5, 5).filter(lambda v: v not in (0, 1)))
    with pytest.raises(ValueError, match="0/1"):
        ref.encode_literals(X)


@given(st.integers(1, 6).flatmap(lambda C: st.tuples(st.just(C), st.lists(st.integers(0, C - 1), max_size=40))),
       st.integers(1, 2**20))
@_settings(30)
def test_classification_targets_are_plus_T_for_the_class_and_minus_T_for_the_others(classes_and_y, T):
    C, y = classes_and_y
    target = ref.targets_for_classification(y, C, T)
    assert target.shape == (C, len(y))
    assert np.isin(target, (-T, T)).all()  # so in [-T, T]
    np.testing.assert_array_equal(np.argmax(target, axis=0), np.asarray(y, dtype=np.int64))
    np.testing.assert_array_equal(target.sum(axis=0), np.full(len(y), T - (C - 1) * T))  # exactly one +T


@given(U64, st.integers(0, 2**32 - 1), st.integers(0, 3), st.integers(0, 2**30 - 1))
@_settings(30)
def test_counters_keys_and_draws(key, g, purpose, i):
    """ctr packs its fields without overlap; the Python-int and uint64-array paths give the same bits."""
    c = ref.ctr(g, purpose, i)
    assert (c >> 32, (c >> 30) & 3, c & ((1 << 30) - 1)) == (g, purpose, i)
    a = np.array([key], dtype=np.uint64)
    assert int(ref.ctr(np.uint64(g), np.uint64(purpose), np.array([i], dtype=np.uint64))[0]) == c
    assert int(ref.mix64(a)[0]) == ref.mix64(key)
    assert int(ref.rng_key(a, np.uint64(g), np.uint64(i))[0]) == ref.rng_key(key, g, i)
    assert int(ref.draw(a, np.uint64(c))[0]) == ref.draw(key, c)
    assert int(ref.u32(a, np.uint64(c))[0]) == ref.u32(key, c) < TWO32


def _unxorshift(z: int, k: int) -> int:
    x = z
    for _ in range(64 // k + 1):
        x = z ^ (x >> k)
    return x


def _unmix64(z: int) -> int:
    """The inverse of mix64 (each of its steps is a bijection of 64-bit words)."""
    z = _unxorshift(z, 31)
    z = z * pow(0x94D049BB133111EB, -1, 1 << 64) % (1 << 64)
    z = _unxorshift(z, 27)
    z = z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64) % (1 << 64)
    return _unxorshift(z, 30)


def _key_drawing(u: int, counter: int, low: int) -> int:
    """A key whose draw at `counter` is (u << 32) | low: u32(key, counter) == u. Lets the properties put the
    uniform exactly on a rule's threshold, which random keys reach with probability 2^-32."""
    key = _unmix64((u << 32) | low) ^ (counter * ref.GOLDEN % (1 << 64))
    assert ref.u32(key, counter) == u
    return key


def _uniform_near(data, *thresholds: int) -> int:
    """A 32-bit uniform: anywhere, at an end, or at or next to one of the thresholds."""
    near = sorted({min(max(t + d, 0), TWO32 - 1) for t in (0, TWO32 - 1, *thresholds) for d in (-1, 0, 1)})
    return data.draw(st.one_of(st.integers(0, TWO32 - 1), st.sampled_from(near)))


def _across(threshold: int) -> list[int]:
    """The uniforms on either side of a rule's threshold (the first uniform that does not fire): the last that
    fires and the first that does not, those of them that exist."""
    return [u for u in (threshold - 1, threshold) if 0 <= u < TWO32]


@given(st.integers(0, 2**32 - 1), st.integers(1, 2**20), LOW32, st.data())
@_settings(30)
def test_update_draw_is_err_over_2T_and_monotone_in_err(g, T, low, data):
    """is_updated: rand() < err / 2T exactly (rand = u32 / 2^32): never for err <= 0 (an exact tally), always from
    err = 2T on (the largest |t - v| with t, v in [-T, T]), and for one draw, true for every err above one for
    which it is true: the draw is a threshold on err."""
    err = data.draw(st.integers(-2 * T, 4 * T))
    counter = ref.ctr(g, ref.PURPOSE_UPDATE, 0)
    threshold = -(-max(err, 0) * TWO32 // (2 * T))  # the first u that does not update
    u = _uniform_near(data, threshold)
    for v in [u, *_across(threshold)]:
        assert ref.is_updated(_key_drawing(v, counter, low), g, err, T) == (Fraction(v, TWO32) < Fraction(err, 2 * T))
    key = _key_drawing(u, counter, low)
    assert not ref.is_updated(key, g, min(err, 0), T)
    assert ref.is_updated(key, g, max(err, 2 * T), T)
    if ref.is_updated(key, g, err, T):
        assert ref.is_updated(key, g, err + data.draw(st.integers(0, 4 * T)), T)
    first = u * 2 * T // TWO32 + 1  # the draw read as a threshold: the smallest err that updates
    assert 1 <= first <= 2 * T and ref.is_updated(key, g, first, T) and not ref.is_updated(key, g, first - 1, T)


@given(st.integers(0, 2**32 - 1), st.integers(1, 2**15 - 1), LOW32, st.data())
@_settings(30)
def test_quadratic_update_draw_is_err_over_T_squared_and_monotone_in_abs_err(g, T, low, data):
    """is_updated_quadratic: rand() < (err / T)^2 exactly: never for err = 0, always for |err| >= T (the largest
    |t - v| with t, v in [0, T]), the same for err and -err, and monotone in |err|."""
    err = data.draw(st.integers(-2 * T, 2 * T))
    counter = ref.ctr(g, ref.PURPOSE_UPDATE, 0)
    threshold = -(-err * err * TWO32 // (T * T))
    u = _uniform_near(data, threshold)
    for v in [u, *_across(threshold)]:
        assert ref.is_updated_quadratic(_key_drawing(v, counter, low), g, err, T) == \
            (Fraction(v, TWO32) < Fraction(err, T) ** 2)
    key = _key_drawing(u, counter, low)
    got = ref.is_updated_quadratic(key, g, err, T)
    assert got == ref.is_updated_quadratic(key, g, -err, T)
    assert not ref.is_updated_quadratic(key, g, 0, T)
    assert ref.is_updated_quadratic(key, g, T * (1 if err >= 0 else -1), T)
    if got:
        assert ref.is_updated_quadratic(key, g, abs(err) + data.draw(st.integers(0, 2 * T)), T)


@given(st.integers(0, 2**32 - 1), st.one_of(st.integers(2, 64), st.sampled_from([3, 5, 9, 17])), LOW32, st.data())
@_settings(30)
def test_participation_is_one_in_c_minus_one_and_certain_with_two_classes(g, C, low, data):
    """participates: rand() < 1/(C-1) exactly (with C - 1 a power of two the threshold is a uniform, where the rule
    must not fire); with two classes the one non-target class always takes part, and a clause that takes part with
    C classes does with fewer (the same draw against a larger share)."""
    counter = ref.ctr(g, ref.PURPOSE_PARTICIPATE, 0)
    threshold = -(-TWO32 // (C - 1))
    u = _uniform_near(data, threshold)
    for v in [u, *_across(threshold)]:
        assert ref.participates(_key_drawing(v, counter, low), g, C) == (Fraction(v, TWO32) < Fraction(1, C - 1))
    key = _key_drawing(u, counter, low)
    got = ref.participates(key, g, C)
    assert ref.participates(key, g, 2)
    if got:
        assert all(ref.participates(key, g, fewer) for fewer in range(2, C))


@given(st.floats(1.0, 2.0**22, allow_nan=False), st.integers(3, 19))
@_settings(30)
def test_s_pool_ones_is_round_of_lanes_over_s(s, pool_bits):
    """s_pool_ones(s) = round(2^(pool_bits+6) / s) with s at its exact binary value: within half a lane of it, so
    the pool's share of ones is within 2^-(pool_bits+7) of 1/s; all lanes for s = 1, as many or fewer for a larger
    s; the host's count (what the kernels get) is the same."""
    lanes = 1 << (pool_bits + 6)
    ones = ref.s_pool_ones(s, pool_bits)
    assert 0 <= ones <= lanes
    assert abs(Fraction(ones) - Fraction(lanes) / Fraction(s)) <= Fraction(1, 2)
    assert ref.s_pool_ones(1.0, pool_bits) == lanes
    assert ref.s_pool_ones(np.nextafter(s, np.inf), pool_bits) <= ones
    assert backends.s_pool_ones(s, pool_bits) == ones


@given(st.floats(0.0, 1.0, exclude_max=True))
@_settings(15)
def test_s_below_one_is_refused(s):
    with pytest.raises(ValueError, match="s must be >= 1"):
        ref.s_pool_ones(s)


@given(U64, st.floats(1.0, 10.0), st.floats(1.0, 10.0), POOL_BITS)
@_settings(20)
def test_s_pool_has_exactly_its_ones_nested_in_s_and_is_the_hosts(seed, s1, s2, pool_bits):
    """The pool holds exactly s_pool_ones(s) ones, equals the host's pool (what the kernels read) bit for bit, and
    (the ones being the lanes with the smallest uniforms) the pool of a larger s lies within that of a smaller."""
    small, large = sorted((s1, s2))
    pool = ref.s_pool(seed, small, pool_bits)
    assert pool.shape == (1 << (pool_bits + 6),) and pool.dtype == np.uint8 and np.isin(pool, (0, 1)).all()
    assert int(pool.sum()) == ref.s_pool_ones(small, pool_bits)
    host = np.unpackbits(backends.s_mask_pool(seed, small, pool_bits).view(np.uint8), bitorder="little")
    assert_same(f"pool (seed {seed}, s {small}, 2^{pool_bits} words)", host, pool, ("lane",))
    sparser = ref.s_pool(seed, large, pool_bits)
    assert int(sparser.sum()) == ref.s_pool_ones(large, pool_bits)
    assert not (sparser & (1 - pool)).any()


@given(U64, U64, U64, st.integers(0, 2**32 - 1), st.integers(1, 1200), st.integers(0, 1200), st.floats(1.0, 10.0),
       POOL_BITS)
@_settings(30)
def test_literal_mask_covers_exactly_the_literals(seed, epoch, e, g, n_literals, more, s, pool_bits):
    """One 0/1 value per literal and none past the last; a literal's value does not depend on how many literals
    follow it (the kernels draw it from its own 64-literal pair); literal l = 64p + b is lane b of its pair's pool
    word, rotated as the docstring says; s = 1 masks every literal."""
    pool = ref.s_pool(seed, s, pool_bits)
    mask = ref.literal_mask(seed, epoch, e, g, n_literals, pool)
    assert mask.shape == (n_literals,) and mask.dtype == np.uint8 and np.isin(mask, (0, 1)).all()
    key = ref.rng_key(seed, epoch, e)
    for lit in {0, n_literals - 1, n_literals // 2, min(64, n_literals - 1)}:
        p, b = divmod(lit, 64)
        d = ref.draw(key, ref.ctr(g, ref.PURPOSE_MASK, p // 8))
        word = 8 * (d >> (64 - (pool_bits - 3))) + p % 8
        assert mask[lit] == pool[64 * word + (b - ((d >> (6 * (p % 8))) & 63)) % 64], lit
    longer = ref.literal_mask(seed, epoch, e, g, n_literals + more, pool)
    np.testing.assert_array_equal(longer[:n_literals], mask)
    assert ref.literal_mask(seed, epoch, e, g, n_literals, ref.s_pool(seed, 1.0, pool_bits)).all()


# ---------------------------------------------------------------------------------------------
# How often the draws fire: within a binomial 5-sigma band (deterministic: every key is derived from the seeds)
# ---------------------------------------------------------------------------------------------


def _within_5_sigma(hits: int, trials: int, p: float, slack: float = 0.0) -> None:
    sigma = np.sqrt(p * (1 - p) / trials)
    assert abs(hits / trials - p) <= 5 * sigma + slack, (hits, trials, p)


def _keys(seed: int, epoch: int, n: int) -> list[int]:
    return [int(k) for k in ref.rng_key(np.uint64(seed), np.uint64(epoch), np.arange(n, dtype=np.uint64))]


@given(U64, U64, st.integers(0, 2**32 - 1), st.integers(2, 8))
@_settings(20)
def test_participation_share_is_one_in_c_minus_one(seed, epoch, g, C):
    keys = _keys(seed, epoch, 10_000)
    _within_5_sigma(sum(ref.participates(k, g, C) for k in keys), len(keys), 1 / (C - 1))


@given(U64, U64, st.integers(0, 2**32 - 1), st.integers(1, 50), st.data())
@_settings(20)
def test_update_share_is_err_over_2T(seed, epoch, g, T, data):
    err = data.draw(st.integers(0, 2 * T))
    keys = _keys(seed, epoch, 10_000)
    _within_5_sigma(sum(ref.is_updated(k, g, err, T) for k in keys), len(keys), err / (2 * T))


def _masked_share(seed, epoch, s, pool_bits: int, n_literals: int) -> tuple[int, int, np.ndarray]:
    """Masked literals over visits of several examples and clauses (about 8,000 literals in all): (ones, literals,
    the pool)."""
    pool = ref.s_pool(seed, s, pool_bits)
    visits = -(-8000 // n_literals)
    ones = sum(int(ref.literal_mask(seed, epoch, v, 7 * v + 1, n_literals, pool).sum()) for v in range(visits))
    return ones, visits * n_literals, pool


@given(U64, st.floats(1.0, 10.0), st.integers(10, 13), st.integers(1, 300), U64)
@_settings(20)
def test_literal_mask_share_is_one_over_s(seed, s, pool_bits, n_literals, epoch):
    """The share of masked literals is 1/s within 5 sigma. Literal l reads only the words of its slot
    ((l // 64) % 8) of the pool's blocks, an eighth of the pool, whose share of ones is the pool's (ones/lanes,
    within 2^-(pool_bits+7) of 1/s) only up to the pool's sampling: sigma^2 = p(1-p)/literals + p(1-p)(7/8)/(slot's
    lanes)."""
    ones, trials, _ = _masked_share(seed, epoch, s, pool_bits, n_literals)
    p = 1 / s
    slot_lanes = 1 << (pool_bits + 3)
    sigma = np.sqrt(p * (1 - p) / trials + p * (1 - p) * 7 / 8 / slot_lanes)
    assert abs(ones / trials - p) <= 5 * sigma + 2.0 ** -(pool_bits + 7), (ones, trials, p, sigma)


@given(U64, st.floats(1.0, 10.0), POOL_BITS, st.integers(1, 64), U64)
@_settings(15)
def test_literal_mask_share_is_its_slots_share_of_the_pool(seed, s, pool_bits, n_literals, epoch):
    """Literals 0..63 (pair 0, slot 0) read pool words 0, 8, 16, ... only, so their share of ones is those words'
    (within a binomial 5-sigma band), which in a small pool can be far from 1/s."""
    ones, trials, pool = _masked_share(seed, epoch, s, pool_bits, n_literals)
    _within_5_sigma(ones, trials, float(pool.reshape(-1, 8, 64)[:, 0].mean()))
