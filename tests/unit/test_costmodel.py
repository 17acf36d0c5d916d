"""The cost model of our kernels (asynctm.costmodel) against hand-counted tiny cases: 2 examples, 3 clauses, 40
features (80 literals with negations: 3 words of 32, the last half full), 8 state bits."""

from __future__ import annotations

import math

import pytest

from asynctm import costmodel as cm

TINY = {"n_examples": 2, "n_clauses": 3, "n_features": 40, "n_classes": 1}


def test_literal_words():
    assert cm.literal_count(40) == 80 and cm.literal_words(40) == 3
    assert cm.literal_words(40, append_negated=False) == 2
    assert cm.literal_words(64) == 4 and cm.literal_words(65) == 5


def test_feedback_ops_per_word_match_the_kernels_for_8_bits():
    # Type Ia: non-zero test 10, wanted 4 | mask 11, saturating increment 25, step 1, decrement 16
    assert cm.feedback_word_ops("ia", 8) == 67
    assert cm.feedback_word_ops("ia", 8, acting=0.0) == 14
    assert cm.feedback_word_ops("ib", 8) == 40 and cm.feedback_word_ops("ib", 8, acting=0.0) == 13
    assert cm.feedback_word_ops("ii", 8) == 20 and cm.feedback_word_ops("ii", 8, acting=0.0) == 4
    assert cm.feedback_word_ops("ia", 8, boost_true_positive=False) == 68
    with pytest.raises(ValueError, match="feedback kind"):
        cm.feedback_word_ops("iii")


def test_epoch_hand_counted():
    c = cm.epoch_cost(**TINY, type_ia=1, type_ib=2, type_ii=1)
    # 6 visits x 3 words x 2 ops; Ia 1 x 3 x 67, Ib 2 x 3 x 40, II 1 x 3 x 20
    assert c.parts["clause_evaluation"]["word_ops"] == 36
    assert c.word_ops == 36 + 201 + 240 + 60
    # draws: 3 Type I events x 1 chunk, 6 update draws (one class: no participate draw), 2 examples x 3 key draws
    assert c.draws == 3 + 6 + 6
    # scalar: 6 visits x 20, tallies 3 ops x 1 class x 2 examples x (3/16 + 1 thread), draws x 12
    assert c.scalar_ops == pytest.approx(120 + 6 * (3 / 16 + 1) + 15 * 12)
    # bytes: TA state 3 clauses x 8 planes x 3 words x 4 = 288, read and written; X 24, y + tallies r/w 24,
    # stored outputs r/w 24, keys 32
    assert c.bytes_compulsory == 2 * 288 + 24 + 24 + 24 + 32
    assert c.bytes_streamed == c.bytes_compulsory  # one batch
    assert cm.epoch_cost(**TINY, type_ia=1, batch_size=1).bytes_streamed == 2 * 2 * 288 + 104
    assert c.ops == c.word_ops + c.scalar_ops


def test_least_work():
    c = cm.epoch_cost(**TINY, type_ia=1, type_ib=2, type_ii=1, eval_words="min", acting=0.0)
    # 2 visits must output 1 (Ia, II): 3 words each; the other 4 read the hint word only
    assert c.parts["clause_evaluation"]["words"] == 4 + 2 * 3
    assert c.word_ops == 2 * 10 + 3 * 14 + 2 * 3 * 13 + 3 * 4
    assert c.draws == 6 + 6  # no chunk acts: no mask draws
    assert cm.epoch_cost(**TINY, eval_words=1.5).parts["clause_evaluation"]["words"] == 9


def test_classes_add_participate_draws_and_tallies():
    c = cm.epoch_cost(2, 3, 40, 2)
    assert c.sizes["visits"] == 12
    assert c.draws == 12 * (1 + 0.5) + 6
    assert c.parts["tallies"]["scalar_ops"] == pytest.approx(3 * 2 * 2 * (6 / 16 + 1))


def test_draw_schemes():
    assert cm.draws_per_type_i(80) == 1 and cm.draws_per_type_i(80 * 20) == 4  # 50 words: 4 chunks of 16
    assert cm.draws_per_type_i(80 * 20, chunk_words=2) == 25
    assert cm.draws_per_type_i(80, "per_literal") == 80
    exact = 2 + sum(80 / (80 - i) for i in range(20))  # pyTM: 20 distinct picks of 80 with retries, + Box-Muller
    assert cm.draws_per_type_i(80, "pytm", s=4.0) == pytest.approx(exact, rel=0.01)
    with pytest.raises(ValueError, match="s > 1"):
        cm.draws_per_type_i(80, "pytm")
    with pytest.raises(ValueError, match="draw scheme"):
        cm.draws_per_type_i(80, "curand")


def test_evaluation_pass():
    dense = cm.evaluation_cost(**TINY)
    assert dense.word_ops == 3 * 6 * 3 and dense.scalar_ops == 2 * 6
    compact = cm.evaluation_cost(**TINY, include_words=1)
    assert compact.word_ops == 2 * 3 * 3 + 4 * 6 * 1
    assert compact.bytes_compulsory == 4 * 3 * 3 + 8 * 3 + 4 * 2 * 3 + 4 * 2


def test_per_clause_divides_the_epoch():
    c = cm.epoch_cost(**TINY, type_ib=3)
    one = cm.per_clause(c)
    assert one.ops == pytest.approx(c.ops / 3) and one.bytes_compulsory == pytest.approx(c.bytes_compulsory / 3)


def test_bound_is_the_largest_term():
    c = cm.epoch_cost(**TINY, type_ia=1, type_ib=2, type_ii=1)
    host = cm.Host("toy", 1, bandwidth_bytes_s=100.0, word_ops_s=1000.0, scalar_ops_s=10.0)
    terms = cm.bound_terms(c, host)
    assert terms["memory_s"] == pytest.approx(6.8) and terms["word_s"] == pytest.approx(0.537)
    assert cm.bound_s(c, host) == pytest.approx(c.scalar_ops / 10.0)
    assert cm.limiting_term(c, host) == "scalar"
    slow_memory = cm.Host("toy", 1, bandwidth_bytes_s=1.0, word_ops_s=1000.0, scalar_ops_s=10.0)
    assert cm.limiting_term(c, slow_memory) == "memory" and cm.bound_s(c, slow_memory) == 680.0


def test_host_from_limits():
    per = {"copy_bytes_s": 2e9, "triad_bytes_s": 3e9, "word_ops_s": 5e10, "scalar_ops_s": 4e9}
    limits = {"host": "x", "measurements": {"2": per}, "measurements_cpu_time": {"2": {**per, "word_ops_s": 1e11}}}
    host = cm.host_from_limits(limits, 2)
    assert host.bandwidth_bytes_s == 3e9 and host.word_ops_s == 5e10 and host.threads == 2
    assert cm.host_from_limits(limits, 2, clock="cpu").word_ops_s == 1e11
    with pytest.raises(ValueError, match=r"no measurements for 1 thread\(s\) \(measured: 2\)"):
        cm.host_from_limits({"measurements": {"2": per}}, 1)
    with pytest.raises(ValueError, match="measurements.2.word_ops_s"):
        cm.host_from_limits({"measurements": {"2": {**per, "word_ops_s": 0}}}, 2)
    with pytest.raises(ValueError, match="no measurements_cpu_time"):
        cm.host_from_limits({"measurements": {"2": per}}, 2, clock="cpu")


def test_gpu_host_from_limits():
    per = {"copy_bytes_s": 3e12, "triad_bytes_s": 2.9e12, "word_ops_s": 2e13, "scalar_ops_s": 5e12, "threads": 4096}
    host = cm.gpu_host_from_limits({"gpu": {"name": "Toy GPU"}, "measurements": {"gpu": per}})
    assert host == cm.Host("Toy GPU (GPU)", 4096, bandwidth_bytes_s=3e12, word_ops_s=2e13, scalar_ops_s=5e12)
    assert cm.gpu_host_from_limits({"measurements": {"gpu": {**per, "threads": None}}}).threads == 1
    with pytest.raises(ValueError, match="no measurements.gpu"):
        cm.gpu_host_from_limits({"measurements": {"2": per}})
    with pytest.raises(ValueError, match="measurements.gpu.scalar_ops_s is missing"):
        cm.gpu_host_from_limits({"measurements": {"gpu": {**per, "scalar_ops_s": None}}})


@pytest.mark.parametrize("bad", [{"type_ib": -1}, {"n_examples": math.nan}, {"acting": 2.0}, {"eval_words": "all"}])
def test_bad_numbers_are_refused(bad):
    with pytest.raises(ValueError, match="must"):
        cm.epoch_cost(**{**TINY, **bad})


def test_chain_rounds_hand_counted():
    # 10 examples, 2 clauses per class, 2 classes: 4 groups; 100 features with negations = 200 literals = 7 words.
    # A warp reads 64 words per round: R = 1; 4 threads read 8: R = 1; one thread reads 2: R = 4.
    # Per group: events Ia 8 / 4 = 2, Ib 4 / 4 = 1, II 4 / 4 = 1; least evaluation: the Ia + II visits (3) read
    # all R rounds, each visit one round (10), feedback R x 4 events.
    one = cm.chain_rounds(10, 2, 100, 2, threads_per_clause=1, type_ia=8, type_ib=4, type_ii=4)
    assert one["words"] == 7 and one["rounds_per_visit"] == 4
    assert one["parts"] == {"visits": 10, "evaluation": 3 * 4, "feedback": 4 * 4} and one["rounds"] == 38
    assert cm.chain_rounds(10, 2, 100, 2, threads_per_clause=32, type_ia=8, type_ib=4, type_ii=4)["rounds"] == 17
    # every visit reads all rounds
    most = cm.chain_rounds(10, 2, 100, 2, threads_per_clause=1, eval_words="max", type_ia=8, type_ib=4, type_ii=4)
    assert most["parts"]["evaluation"] == 10 * 4
    # more clauses (the same events per group) leave the chain as it is; more threads per clause shorten it
    assert cm.chain_rounds(10, 20, 100, 2, threads_per_clause=1, type_ia=80, type_ib=40, type_ii=40)["rounds"] == 38
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="threads_per_clause"):
            cm.chain_rounds(10, 2, 100, 2, threads_per_clause=bad)
    with pytest.raises(ValueError, match="eval_words"):
        cm.chain_rounds(10, 2, 100, 2, threads_per_clause=1, eval_words=3)
