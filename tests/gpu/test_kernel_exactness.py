"""The kernels (kernels/tm.cu) against the NumPy reference (asynctm.reference), bit for bit.

The CPU build with one thread runs the reference's schedule exactly (clause 0 over the batch, then
clause 1, ...), so every TA state, tally and stored output bit must agree after any number of batches.
Multi-threaded builds (OpenMP, CUDA) are only deterministic where no two clause threads race on a
tally: a batch of ONE example right after the stored outputs were computed from scratch (every
refresh then finds o == o* and leaves the tallies alone). Beyond that we check the invariant
tally == sum(polarity * stored output bits) that Algorithm 1's atomic adds maintain.

Failures name the first differing (clause, literal) / (class, example) / (clause, example).
"""

from __future__ import annotations

import dataclasses
import platform

import numpy as np
import pytest

from asynctm import reference as ref
from asynctm.reference import ReferenceTM

backends = pytest.importorskip("asynctm.backends", reason="asynctm.backends is not importable yet")
encoding = pytest.importorskip("asynctm.encoding")
KernelConfig = backends.KernelConfig
make_backend = backends.make_backend


# ---------------------------------------------------------------------------------------------
# Problems shared by the tests: odd sizes on purpose (literals not a multiple of 32 or 64, odd word
# counts so a 64-bit mask draw serves a lone last word, 5- and 6-bit automata, s = 1).
# ---------------------------------------------------------------------------------------------

CONFIGS = {
    "2cls-boost-40lit": dict(n_classes=2, n_clauses=10, n_features=20, negated=True, T=8, s=3.9, bits=8,
                             boost=True, regression=False),
    "3cls-noboost-34lit": dict(n_classes=3, n_clauses=6, n_features=17, negated=True, T=5, s=5.0, bits=8,
                               boost=False, regression=False),
    "regression-5bit-37lit": dict(n_classes=1, n_clauses=12, n_features=37, negated=False, T=10, s=2.5, bits=5,
                                  boost=True, regression=True),
    "2cls-s1-96lit-6bit": dict(n_classes=2, n_clauses=8, n_features=48, negated=True, T=6, s=1.0, bits=6,
                               boost=False, regression=False),
    "4cls-s27-150lit": dict(n_classes=4, n_clauses=4, n_features=75, negated=True, T=4, s=27.0, bits=8,
                            boost=True, regression=False),
    "2cls-64lit-plain": dict(n_classes=2, n_clauses=6, n_features=64, negated=False, T=5, s=10.0, bits=8,
                             boost=False, regression=False),
    # 35 words: two whole chunks of 16 words on a CPU (its vector tests of a chunk, the 1/s masks of a whole mask
    # block) and a last chunk of 3 with padding lanes.
    "2cls-wide-1100lit": dict(n_classes=2, n_clauses=6, n_features=550, negated=True, T=8, s=3.9, bits=8,
                              boost=True, regression=False),
    # 32 words: two whole chunks on a CPU, the second ending in the last word, 22 of whose lanes are literals (the
    # padding of a whole chunk masked in its vectors); without boost, so Type Ia also draws for literals that are 1.
    "3cls-noboost-wide-1014lit": dict(n_classes=3, n_clauses=4, n_features=507, negated=True, T=6, s=3.0, bits=8,
                                      boost=False, regression=False),
}


def _kernel_config(c: dict, n_literals: int, tally: str = "async", rule: str = "linear",
                   order: str = "dataset") -> KernelConfig:
    return KernelConfig(c["n_classes"], c["n_clauses"], n_literals, c["T"], c["s"], c["bits"], c["boost"],
                        c["regression"], tally=tally, regression_rule=rule, order=order)


def _reference(c: dict, n_literals: int, tally: str = "async", rule: str = "linear",
               order: str = "dataset") -> ReferenceTM:
    return ReferenceTM(c["n_classes"], c["n_clauses"], n_literals, c["T"], c["s"], c["bits"], c["boost"],
                       c["regression"], tally=tally, regression_rule=rule, order=order)


def _random_states(rng, G, n_literals, bits, includes_per_clause=2.0):
    """Automata near the include boundary (so feedback flips decisions), a few saturated ones."""
    half = 1 << (bits - 1)
    include = rng.random((G, n_literals)) < includes_per_clause / n_literals
    states = np.where(include, half + rng.integers(0, 3, include.shape), half - 1 - rng.integers(0, 3, include.shape))
    ends = rng.random(include.shape) < 0.05
    states = np.where(ends & ~include, 0, states)
    states = np.where(ends & include & (rng.random(include.shape) < 0.5), (1 << bits) - 1, states)
    return states.astype(np.int64)


def _problem(c: dict, n_examples: int, seed: int, init: str = "random"):
    """Features, literals, targets and initial states of one test problem."""
    rng = np.random.default_rng(seed)
    F = rng.integers(0, 2, (n_examples, c["n_features"]))
    literals = ref.encode_literals(F, c["negated"])
    n_literals = literals.shape[1]
    G = c["n_classes"] * c["n_clauses"]
    if init == "random":
        states = _random_states(rng, G, n_literals, c["bits"])
    elif init == "sparse":
        # Most automata forgotten (at 0), as a long run leaves a wide clause, and 3 near the include boundary: whole
        # chunks, halves of chunks and words with no automaton above 0, which the chunk tests must tell apart.
        states = np.zeros((G, n_literals), dtype=np.int64)
        for g in range(G):
            states[g, rng.choice(n_literals, 3, replace=False)] = _random_states(rng, 1, 3, c["bits"])[0]
    else:
        states = np.full((G, n_literals), (1 << (c["bits"] - 1)) - 1, dtype=np.int64)
    if c["regression"]:
        y_target = rng.integers(0, c["T"] + 1, (1, n_examples))
    else:
        y_target = ref.targets_for_classification(rng.integers(0, c["n_classes"], n_examples), c["n_classes"], c["T"])
    return F, literals, y_target, states


# ---- our own tiny packers, so a fault in asynctm.encoding cannot hide one in the kernels --------


def _pack_bits(bits01: np.ndarray) -> np.ndarray:
    """(..., L) 0/1 -> (..., ceil(L/32)) uint32: item l is bit l % 32 of word l // 32."""
    L = bits01.shape[-1]
    words = -(-L // 32)
    out = np.zeros(bits01.shape[:-1] + (words,), dtype=np.uint64)
    for lit in range(L):
        out[..., lit // 32] |= bits01[..., lit].astype(np.uint64) << np.uint64(lit % 32)
    return out.astype(np.uint32)


def _unpack_bits(words: np.ndarray, L: int) -> np.ndarray:
    lit = np.arange(L)
    return ((words[..., lit // 32] >> (lit % 32).astype(np.uint32)) & 1).astype(np.uint8)


def _to_planes(states: np.ndarray, bits: int, padding_state: int | None = None) -> np.ndarray:
    """States (G, L) -> planes (G, bits, WORDS); padding lanes at `padding_state` (default: initial)."""
    G, L = states.shape
    words = -(-L // 32)
    full = np.full((G, 32 * words), (1 << (bits - 1)) - 1 if padding_state is None else padding_state, np.int64)
    full[:, :L] = states
    return np.stack([_pack_bits((full >> b) & 1) for b in range(bits)], axis=1)


def _from_planes(planes: np.ndarray, L: int) -> np.ndarray:
    """Planes (G, bits, WORDS) -> states (G, L); pass L = 32 * WORDS to see the padding lanes."""
    return sum(_unpack_bits(planes[:, b, :], L).astype(np.int64) << b for b in range(planes.shape[1]))


# ---- comparison with a precise first difference ---------------------------------------------


def assert_same(what: str, got, want, axes: tuple[str, ...], context: str = ""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}{context}: shape {got.shape} (kernel) vs {want.shape} (reference)"
    bad = np.argwhere(got != want)
    if bad.size:
        first = tuple(int(i) for i in bad[0])
        where = ", ".join(f"{a}={i}" for a, i in zip(axes, first))
        pytest.fail(f"{what}{context}: {len(bad)} of {got.size} differ; first at {where}: "
                    f"kernel {got[first]}, reference {want[first]}", pytrace=False)


def assert_backend_equals_reference(be, tm: ReferenceTM, n_examples: int, context: str = ""):
    assert_same("TA states", _from_planes(be.get_ta_state(), tm.n_literals), tm.ta_state, ("clause", "literal"),
                context)
    assert_same("tallies", be.get_tallies(), tm.class_sum, ("class", "example"), context)
    assert_same("stored output bits", _unpack_bits(be.get_clause_output_bits(), n_examples), tm.stored_output,
                ("clause", "example"), context)


# ---------------------------------------------------------------------------------------------
# Backends: CPU always; CUDA only with a GPU
# ---------------------------------------------------------------------------------------------


def _cuda_or_skip():
    if not backends.cuda_available():  # never raises: a failed probe is "no GPU"
        pytest.skip("no CUDA GPU (or PyCUDA) on this machine")


@pytest.fixture
def open_backend():
    """open_backend(kind, cfg, n_threads) -> backend, closed after the test."""
    opened = []

    def _open(kind: str, cfg: KernelConfig, n_threads: int = 1):
        if kind.startswith("cuda"):  # "cuda<k>": k threads per clause in the training kernels; "cuda<k>s": and
            _cuda_or_skip()        # each clause's automata in shared memory for a batch (shared_state)
            k = kind[4:].removesuffix("s")
            be = make_backend("cuda", dataclasses.replace(cfg, threads_per_clause=int(k or 1),
                                                          shared_state=kind.endswith("s")))
        else:
            be = make_backend("cpu", cfg, n_threads=n_threads)
        opened.append(be)
        return be

    yield _open
    for be in opened:
        be.close()


# (kind, n_threads) of every build that must be exact on deterministic steps
ALL_BUILDS = [
    pytest.param(("cpu", 1), id="cpu1"),
    pytest.param(("cpu", 2), id="cpu2"),
    pytest.param(("cuda", None), id="cuda", marks=pytest.mark.gpu),
]
# The GPU's kernels with a warp of threads per clause (per class and example at inference), and with groups of 2
# to 32 warps (from 128 on a block per clause, up to CUDA's 1,024 threads per block; these clauses have a few words,
# so most threads of such a group have none): the same rules, so exact where the one-thread GPU build is.
GROUP_BUILDS = [pytest.param((f"cuda{k}", None), id=f"cuda-{k}-per-clause", marks=pytest.mark.gpu)
                for k in (32, 64, 128, 256, 512, 1024)]
# The same with each clause's automata in its block's shared memory for a batch (asynchronous tallies only).
SHARED_BUILDS = [pytest.param((f"cuda{k}s", None), id=f"cuda-{k}-per-clause-shared", marks=pytest.mark.gpu)
                 for k in (1, 32, 64, 128, 1024)]


# ---------------------------------------------------------------------------------------------
# Encoding helpers of the lead's package against the layout of kernels/README.md
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("negated", [True, False])
@pytest.mark.parametrize("n_features", [1, 16, 20, 32, 37, 64, 75])
def test_pack_literals_layout(n_features, negated):
    rng = np.random.default_rng(n_features)
    F = rng.integers(0, 2, (9, n_features))
    packed, n_literals = encoding.pack_literals(F, append_negated=negated)
    literals = ref.encode_literals(F, negated)
    assert n_literals == literals.shape[1]
    assert packed.dtype == np.uint32
    assert_same("packed literals", packed, _pack_bits(literals), ("example", "word"))  # padding bits 0 included


@pytest.mark.parametrize("bits", [5, 8])
def test_state_plane_conversions(bits):
    rng = np.random.default_rng(bits)
    states = rng.integers(0, 1 << bits, (6, 45))
    planes = encoding.states_to_planes(states, bits)
    assert planes.dtype == np.uint32 and planes.shape == (6, bits, 2)
    assert_same("planes", planes, _to_planes(states, bits), ("clause", "plane", "word"))
    assert_same("states", encoding.planes_to_states(planes, 45), states, ("clause", "literal"))


def test_host_pool_equals_the_reference_pool():
    """The host's 1/s pool (what the kernels read) equals the reference's, bit for bit, and has exactly
    round(2^22 / s) ones (s at its exact binary value; a float division could be off by one)."""
    from asynctm.backends import S_POOL_BITS, s_mask_pool, s_pool_ones

    assert S_POOL_BITS == ref.POOL_BITS
    assert KernelConfig(2, 2, 10, 5, 3.9).defines()["S_POOL_BITS"] == str(ref.POOL_BITS)
    for s in (1.0, 1.5, 3.9, 5.0, 27.0, 1000.0):
        assert s_pool_ones(s) == ref.s_pool_ones(s), s
    for seed, s in ((0, 5.0), (12345, 3.9), (2**64 - 1, 1.5), (7, 1.0)):
        host = np.unpackbits(s_mask_pool(seed, s).view(np.uint8), bitorder="little")
        assert_same(f"pool seed={seed} s={s}", host, ref.s_pool(seed, s), ("lane",))
        assert int(host.sum()) == ref.s_pool_ones(s)


@pytest.mark.parametrize("shape,dtype", [((1 << 10,), np.uint64), ((3, 7), np.uint32), ((5,), np.uint8)])
def test_cache_line_aligned_copy(shape, dtype):
    """The CPU build's copy of the pool: equal to the original, starting on a 64-byte line, a copy."""
    from asynctm.backends.cpu import cache_line_aligned

    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    for _ in range(4):  # different allocations, different offsets
        b = cache_line_aligned(a)
        assert b.ctypes.data % 64 == 0 and b.dtype == a.dtype and np.array_equal(b, a)
        assert not np.shares_memory(a, b)


# ---------------------------------------------------------------------------------------------
# Fixed TA states: initial state, clause outputs, tallies, inference class sums
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", ALL_BUILDS)
@pytest.mark.parametrize("bits", [8, 5])
def test_init_state_every_lane(open_backend, build, bits):
    cfg = KernelConfig(2, 4, 45, 5, 3.0, bits)
    be = open_backend(build[0], cfg, build[1] or 1)
    be.set_ta_state(np.full((8, bits, 2), 0xA5A5A5A5, np.uint32))  # garbage, so init must overwrite all
    be.init_state()
    states = _from_planes(be.get_ta_state(), 64)  # padding lanes 45..63 included
    assert (states == (1 << (bits - 1)) - 1).all(), np.argwhere(states != (1 << (bits - 1)) - 1)[:5]


@pytest.mark.parametrize("build", ALL_BUILDS + GROUP_BUILDS)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_outputs_and_sums_at_fixed_states(open_backend, build, name):
    c = CONFIGS[name]
    F, X, y_target, states = _problem(c, 70, seed=1)
    tm = _reference(c, X.shape[1])
    tm.ta_state[:] = states
    tm.ta_state[::5] = (1 << (c["bits"] - 1)) - 1  # some empty clauses: 1 in training, 0 at inference
    be = open_backend(build[0], _kernel_config(c, X.shape[1]), build[1] or 1)
    be.set_ta_state(_to_planes(tm.ta_state, c["bits"]))
    X_words = _pack_bits(X)

    assert_same("training clause outputs", be.training_clause_outputs(X_words), tm.clause_outputs(X, True),
                ("clause", "example"))
    sums = tm.inference_class_sums(X)
    assert_same("inference class sums", be.class_sums(X_words), sums, ("class", "example"))
    assert_same("inference class sums, first 5 examples", be.class_sums(X_words[:5]), sums[:, :5],
                ("class", "example"))
    if hasattr(be, "class_sums_dense"):  # the CPU build infers from compacted includes; the planes' scan too
        assert_same("inference class sums, dense scan", be.class_sums_dense(X_words), sums, ("class", "example"))
    assert np.abs(sums).max() <= c["T"]

    tm.init_training(X, y_target)
    be.set_training_data(X_words, y_target.astype(np.int32))
    assert_backend_equals_reference(be, tm, len(X), " after set_training_data")


@pytest.mark.parametrize("build", ALL_BUILDS)
@pytest.mark.parametrize("name", ["2cls-boost-40lit", "2cls-wide-1100lit"])
def test_stored_outputs_over_many_examples(open_backend, build, name):
    # 4,141 examples: a CPU thread computes the stored outputs of a clause 2,048 examples at a time
    # (TM_REFRESH_OUT_WORDS), so a clause has two whole work items, a last one of 45 examples and a partial last
    # word; every third clause is empty (1 on every example), one includes every literal.
    c = CONFIGS[name]
    F, X, y_target, states = _problem(c, 2 * 2048 + 45, seed=5)
    tm = _reference(c, X.shape[1])
    tm.ta_state[:] = states
    tm.ta_state[::3] = (1 << (c["bits"] - 1)) - 1
    tm.ta_state[1] = (1 << c["bits"]) - 1
    be = open_backend(build[0], _kernel_config(c, X.shape[1]), build[1] or 1)
    be.set_ta_state(_to_planes(tm.ta_state, c["bits"]))
    assert_same("training clause outputs", be.training_clause_outputs(_pack_bits(X)), tm.clause_outputs(X, True),
                ("clause", "example"))
    tm.init_training(X, y_target)
    be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
    assert_backend_equals_reference(be, tm, len(X), " after set_training_data")


# ---------------------------------------------------------------------------------------------
# One feedback step with the draws fixed: a batch of one example right after a fresh tally
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", ALL_BUILDS + GROUP_BUILDS + SHARED_BUILDS)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_one_feedback_step(open_backend, build, name):
    c = CONFIGS[name]
    n = 40
    F, X, y_target, states = _problem(c, n, seed=2)
    tm = _reference(c, X.shape[1])
    tm.ta_state[:] = states
    be = open_backend(build[0], _kernel_config(c, X.shape[1]), build[1] or 1)
    be.set_ta_state(_to_planes(states, c["bits"]))
    X_words = _pack_bits(X)
    feedback_seen = set()
    for step, e in enumerate([0, 3, 31, 32, 39, 17, 17, 5]):  # examples in both output words, one repeated
        epoch, seed = step % 3, 1000 + step
        tm.init_training(X, y_target)  # stored outputs and tallies from scratch on both sides
        be.set_training_data(X_words, y_target.astype(np.int32))
        for g in range(tm.G):
            feedback_seen.add(tm.visit(g, e, epoch, seed).feedback)
        be.train_batch(e, e + 1, epoch, seed)
        assert_backend_equals_reference(be, tm, n, f" after step {step} (example {e}, epoch {epoch}, seed {seed})")
    # the steps really exercised the rules
    assert not np.array_equal(tm.ta_state, states)
    assert "I" in feedback_seen and ("II" in feedback_seen or c["regression"])


# ---------------------------------------------------------------------------------------------
# Several batches and epochs: the one-thread CPU build is the reference, bit for bit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("init", ["random", "initial", "sparse"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_cpu_one_thread_reproduces_reference(open_backend, name, init):
    reproduce_reference_with_one_thread(open_backend, name, init)


# The CPU build's portable code, where the default build (-march=native) has vector instructions in its place:
# what a CPU without AVX2 runs (plain x86-64; and with AVX but not AVX2, as Sandy Bridge), and the AVX2 code of a
# CPU without AVX-512 (as Haswell).
PORTABLE_FLAGS = "-O3 -march=x86-64 -fopenmp -fPIC -shared -std=c++17 -x c++"
AVX_ONLY_FLAGS = "-O3 -march=x86-64 -mavx -fopenmp -fPIC -shared -std=c++17 -x c++"
AVX2_ONLY_FLAGS = "-O3 -march=haswell -fopenmp -fPIC -shared -std=c++17 -x c++"  # AVX2, no AVX-512
DEFAULT_CPU_FLAGS = pytest.importorskip("asynctm.backends.cpu").DEFAULT_FLAGS  # -march=native
X86_64_ONLY = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                 reason="the portable flags name an x86-64 CPU")


@X86_64_ONLY
@pytest.mark.parametrize("name,flags", [("2cls-wide-1100lit", PORTABLE_FLAGS), ("3cls-noboost-34lit", PORTABLE_FLAGS),
                                        ("3cls-noboost-wide-1014lit", PORTABLE_FLAGS),
                                        ("2cls-wide-1100lit", AVX_ONLY_FLAGS), ("2cls-wide-1100lit", AVX2_ONLY_FLAGS),
                                        ("3cls-noboost-wide-1014lit", AVX2_ONLY_FLAGS)])
def test_cpu_build_without_avx512_reproduces_reference(open_backend, monkeypatch, name, flags):
    monkeypatch.setenv("ASYNCTM_CPU_FLAGS", flags)
    for init in ("random", "sparse"):
        reproduce_reference_with_one_thread(open_backend, name, init)


# The live chunks of the CPU build's training scan (tm.cu, TM_LIVE_CHUNKS) are kept from TM_LIVE_MIN_CHUNKS chunks of
# 16 words up, more than these problems have: lowered to 1, the wide problems (2 and 3 chunks, clauses that gain and
# lose includes in every batch) train through them, with the vector code and with the portable code; and the
# synchronous tallies, which keep no live chunks, train through the same feedback code.
LIVE_FLAGS = DEFAULT_CPU_FLAGS + " -DTM_LIVE_MIN_CHUNKS=1"
LIVE_PORTABLE_FLAGS = PORTABLE_FLAGS + " -DTM_LIVE_MIN_CHUNKS=1"


@pytest.mark.parametrize("name,flags", [("2cls-wide-1100lit", LIVE_FLAGS), ("3cls-noboost-wide-1014lit", LIVE_FLAGS),
                                        pytest.param("2cls-wide-1100lit", LIVE_PORTABLE_FLAGS, marks=X86_64_ONLY)])
def test_cpu_build_with_live_chunks_reproduces_reference(open_backend, monkeypatch, name, flags):
    monkeypatch.setenv("ASYNCTM_CPU_FLAGS", flags)
    for init in ("random", "initial", "sparse"):
        reproduce_reference_with_one_thread(open_backend, name, init)
    reproduce_reference_with_one_thread(open_backend, name, "random", tally="sync")


def reproduce_reference_with_one_thread(open_backend, name: str, init: str, tally: str = "async"):
    """Trains the CPU build with one thread and the reference side by side: equal after every batch."""
    c = CONFIGS[name]
    n, batch_size, epochs, seed = 50, 16, 3, 77
    F, X, y_target, states = _problem(c, n, seed=3, init=init)
    tm = _reference(c, X.shape[1], tally)
    tm.ta_state[:] = states
    tm.init_training(X, y_target)
    be = open_backend("cpu", _kernel_config(c, X.shape[1], tally), 1)
    if init == "initial":
        be.init_state()
    else:
        be.set_ta_state(_to_planes(states, c["bits"]))
    be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
    assert_backend_equals_reference(be, tm, n, " before training")
    for epoch in range(epochs):
        for start in range(0, n, batch_size):
            end = min(start + batch_size, n)
            tm.train_batch(start, end, epoch, seed)
            be.train_batch(start, end, epoch, seed)
            assert_backend_equals_reference(be, tm, n, f" after epoch {epoch}, batch [{start}, {end})")
    assert not np.array_equal(tm.ta_state, states)  # it did learn something
    assert_diagnostics_equal(be, tm, F.shape[1] if c["negated"] else X.shape[1])


def assert_diagnostics_equal(be, tm: ReferenceTM, first_negated: int):
    """Per-clause Type Ia/Ib/II event counts and included literals (features / negations) as the reference's."""
    assert_same("feedback events", be.feedback_event_counts().astype(np.int64), tm.feedback_events,
                ("clause", "Ia/Ib/II"))
    inc = tm.includes()
    want = np.stack([inc[:, :first_negated].sum(1), inc[:, first_negated:].sum(1)], axis=1)
    assert_same("included literals", be.include_counts(first_negated), want, ("clause", "features/negations"))
    assert tm.feedback_events[:, 0].sum() > 0 and tm.feedback_events[:, 1].sum() > 0  # both kinds happened


# ---------------------------------------------------------------------------------------------
# Synchronous tallies and the quadratic update rule: deterministic with any number of threads
# (every tally is exact before any clause reads it), so every build equals the reference bit for bit; so do
# both in the staggered example order (asynchronous tallies: with one thread).
# ---------------------------------------------------------------------------------------------

SYNC_BUILDS = [
    pytest.param(("cpu", 1), id="cpu1"),
    pytest.param(("cpu", 2), id="cpu2"),
    pytest.param(("cuda", None), id="cuda", marks=pytest.mark.gpu),
    *GROUP_BUILDS,
    pytest.param(("cuda8", None), id="cuda-8-per-clause", marks=pytest.mark.gpu),
]


@pytest.mark.parametrize("build", SYNC_BUILDS)
@pytest.mark.parametrize("name,tally,rule,order", [
    ("2cls-boost-40lit", "sync", "linear", "dataset"),
    ("3cls-noboost-34lit", "sync", "linear", "dataset"),
    ("4cls-s27-150lit", "sync", "linear", "dataset"),
    ("regression-5bit-37lit", "sync", "linear", "dataset"),
    ("regression-5bit-37lit", "sync", "quadratic", "dataset"),
    ("regression-5bit-37lit", "async", "quadratic", "dataset"),
    ("3cls-noboost-34lit", "sync", "linear", "staggered"),
    ("regression-5bit-37lit", "sync", "linear", "staggered"),
    ("2cls-boost-40lit", "async", "linear", "staggered"),
    ("regression-5bit-37lit", "async", "linear", "staggered"),
])
def test_tally_modes_and_update_rules_reproduce_reference(open_backend, build, name, tally, rule, order):
    c = CONFIGS[name]
    if tally == "async" and build[1] != 1:
        pytest.skip("asynchronous tallies are deterministic with one thread only")
    n, batch_size, seed = 50, 16, 77
    F, X, y_target, states = _problem(c, n, seed=3)
    tm = _reference(c, X.shape[1], tally, rule, order)
    tm.ta_state[:] = states
    tm.init_training(X, y_target)
    be = open_backend(build[0], _kernel_config(c, X.shape[1], tally, rule, order), build[1] or 1)
    be.set_ta_state(_to_planes(states, c["bits"]))
    be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
    for epoch in range(3):
        for start in range(0, n, batch_size):
            end = min(start + batch_size, n)
            tm.train_batch(start, end, epoch, seed)
            be.train_batch(start, end, epoch, seed)
            assert_backend_equals_reference(be, tm, n, f" ({tally}, {rule}, {order} order) epoch {epoch}, "
                                            f"batch [{start}, {end})")
    assert_diagnostics_equal(be, tm, F.shape[1] if c["negated"] else X.shape[1])


@pytest.mark.parametrize("name", ["2cls-boost-40lit", "regression-5bit-37lit"])
def test_the_switches_change_learning(name):
    """Sync and async (and the two update rules, and the two example orders) take different paths from the same
    start: the switches reach the reference's rules (the kernels are held to the reference above)."""
    c = CONFIGS[name]
    F, X, y_target, states = _problem(c, 50, seed=3)
    final = {}
    for tally, rule, order in [("async", "linear", "dataset"), ("sync", "linear", "dataset"),
                               ("async", "quadratic", "dataset"), ("async", "linear", "staggered"),
                               ("sync", "linear", "staggered")]:
        if rule == "quadratic" and not c["regression"]:
            continue
        tm = _reference(c, X.shape[1], tally, rule, order)
        tm.ta_state[:] = states
        tm.init_training(X, y_target)
        tm.train_epoch(0, 77, 25)
        final[tally, rule, order] = tm.ta_state.copy()
    values = list(final.values())
    assert all(not np.array_equal(values[0], v) for v in values[1:])


@pytest.mark.parametrize("name", ["2cls-boost-40lit", "regression-5bit-37lit"])
def test_cpu_train_epoch_matches_reference(open_backend, name):
    c = CONFIGS[name]
    n, seed = 45, 5
    F, X, y_target, states = _problem(c, n, seed=4)
    tm = _reference(c, X.shape[1])
    tm.ta_state[:] = states
    tm.init_training(X, y_target)
    be = open_backend("cpu", _kernel_config(c, X.shape[1]), 1)
    be.set_ta_state(_to_planes(states, c["bits"]))
    be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
    for epoch, batch_size in [(0, 10), (1, 100), (2, 1), (7, 13)]:  # epochs need not be consecutive
        tm.train_epoch(epoch, seed, batch_size)
        be.train_epoch(epoch, seed, batch_size)
        assert_backend_equals_reference(be, tm, n, f" after epoch {epoch} (batch size {batch_size})")


@pytest.mark.parametrize("name", ["2cls-boost-40lit", "regression-5bit-37lit"])
def test_one_thread_asynchronous_tallies_do_not_depend_on_the_batch_size(open_backend, name):
    """With one thread and dataset order, clause g reads on example e the votes of clauses 0..g-1 as refreshed on
    e this epoch and those of g+1.. as of the last, whatever the batches: so epochs of 1-, 7- and 45-example
    batches end in the same machine (a batch-size ablation on one thread would only repeat its records)."""
    c = CONFIGS[name]
    n, seed = 45, 9
    F, X, y_target, states = _problem(c, n, seed=5)
    ends = []
    for batch_size in (1, 7, n):
        be = open_backend("cpu", _kernel_config(c, X.shape[1]), 1)
        be.set_ta_state(_to_planes(states, c["bits"]))
        be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
        for epoch in range(3):
            be.train_epoch(epoch, seed, batch_size)
        ends.append((be.get_ta_state(), be.get_tallies(), be.get_clause_output_bits(), be.feedback_event_counts()))
    for other in ends[1:]:
        for a, b in zip(ends[0], other):
            np.testing.assert_array_equal(a, b)
    assert ends[0][3].sum() > 0
    staggered = open_backend("cpu", _kernel_config(c, X.shape[1], order="staggered"), 1)  # its rotation does depend
    staggered.set_ta_state(_to_planes(states, c["bits"]))
    staggered.set_training_data(_pack_bits(X), y_target.astype(np.int32))
    for epoch in range(3):
        staggered.train_epoch(epoch, seed, 7)
    assert not np.array_equal(staggered.get_ta_state(), ends[0][0])


def test_cpu_one_thread_is_deterministic(open_backend):
    c = CONFIGS["3cls-noboost-34lit"]
    F, X, y_target, states = _problem(c, 60, seed=6)
    runs = []
    for _ in range(2):
        be = open_backend("cpu", _kernel_config(c, X.shape[1]), 1)
        be.set_ta_state(_to_planes(states, c["bits"]))
        be.set_training_data(_pack_bits(X), y_target.astype(np.int32))
        for epoch in range(3):
            be.train_epoch(epoch, 123, 20)
        runs.append((be.get_ta_state(), be.get_tallies(), be.get_clause_output_bits()))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# Padding lanes and the tally invariant (any number of threads)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", ALL_BUILDS + GROUP_BUILDS)
@pytest.mark.parametrize("name", ["2cls-boost-40lit", "3cls-noboost-34lit", "regression-5bit-37lit",
                                  "3cls-noboost-wide-1014lit"])
def test_padding_lanes_never_change(open_backend, build, name):
    c = CONFIGS[name]
    F, X, y_target, states = _problem(c, 64, seed=7)
    L = X.shape[1]
    words = -(-L // 32)
    # an unusual excluded padding state, so that a stray increment (Type II on a 0-bit, Type I on a 1-bit) or a
    # stray decrement (Type I 1/s) would both show; the examples' padding bits are 1, which the packer never writes,
    # so that the kernels' own masks of the padding are what keeps those lanes still
    pad = (1 << (c["bits"] - 1)) - 3
    be = open_backend(build[0], _kernel_config(c, L), build[1] or 1)
    be.set_ta_state(_to_planes(states, c["bits"], padding_state=pad))
    X_words = _pack_bits(X)
    if L % 32:
        X_words[:, -1] |= np.uint32((0xFFFFFFFF << (L % 32)) & 0xFFFFFFFF)
    be.set_training_data(X_words, y_target.astype(np.int32))
    for epoch in range(4):
        be.train_epoch(epoch, 9, 16)
    lanes = _from_planes(be.get_ta_state(), 32 * words)
    assert (lanes[:, L:] == pad).all(), np.argwhere(lanes[:, L:] != pad)[:5]
    assert not np.array_equal(lanes[:, :L], states)  # while the real automata did move


@pytest.mark.parametrize("build", [pytest.param(("cpu", 2), id="cpu2"),
                                   pytest.param(("cuda", None), id="cuda", marks=pytest.mark.gpu), *GROUP_BUILDS])
@pytest.mark.parametrize("name", ["2cls-boost-40lit", "4cls-s27-150lit", "regression-5bit-37lit"])
def test_tally_invariant_with_threads(open_backend, build, name):
    c = CONFIGS[name]
    n = 200
    F, X, y_target, states = _problem(c, n, seed=8)
    be = open_backend(build[0], _kernel_config(c, X.shape[1]), build[1] or 1)
    be.set_ta_state(_to_planes(states, c["bits"]))
    X_words = _pack_bits(X)
    be.set_training_data(X_words, y_target.astype(np.int32))
    tm = _reference(c, X.shape[1])  # only for polarities and class layout
    pol = tm.polarities()[:, None]
    for epoch in range(5):
        be.train_epoch(epoch, 31, 25)
        stored = _unpack_bits(be.get_clause_output_bits(), n).astype(np.int64)
        recomputed = (pol * stored).reshape(c["n_classes"], c["n_clauses"], n).sum(axis=1)
        assert_same("tallies vs sum(polarity * stored bits)", be.get_tallies(), recomputed, ("class", "example"),
                    f" after epoch {epoch}")
    # Eventual consistency (Section 3.2): once the clauses stop changing, refreshed tallies are exact.
    tm.ta_state[:] = _from_planes(be.get_ta_state(), X.shape[1])
    tm.init_training(X, y_target)
    be.set_training_data(X_words, y_target.astype(np.int32))
    assert_backend_equals_reference(be, tm, n, " after retallying the trained machine")
