// The massively parallel and asynchronous Tsetlin Machine (Abeyrathna et al., ICML 2021, Algorithm 1).
//
// One source for both builds (see tm_portability.cuh). The model's constants arrive as #defines
// prepended by the host (asynctm.backends): CLASSES, CLAUSES (per class), LITERALS, STATE_BITS,
// THRESHOLD (T), S_THRESHOLD (floor(2^32/s)), BOOST_TRUE_POSITIVE, REGRESSION.
// The rules, the memory layout and the random streams are specified in kernels/README.md.
#include "tm_portability.cuh"
#include "tm_rng.cuh"

#if !defined(CLASSES) || !defined(CLAUSES) || !defined(LITERALS) || !defined(STATE_BITS) || \
    !defined(THRESHOLD) || !defined(S_THRESHOLD) || !defined(BOOST_TRUE_POSITIVE) || !defined(REGRESSION)
#error "tm.cu needs CLASSES, CLAUSES, LITERALS, STATE_BITS, THRESHOLD, S_THRESHOLD, BOOST_TRUE_POSITIVE, REGRESSION"
#endif

#define WORDS ((LITERALS + 31) / 32)
#define CLAUSES_TOTAL (CLASSES * CLAUSES)
#if LITERALS % 32 == 0
#define LAST_WORD_MASK 0xFFFFFFFFu
#else
#define LAST_WORD_MASK ((1u << (LITERALS % 32)) - 1u)
#endif
#define WORD_MASK(w) ((w) == WORDS - 1 ? LAST_WORD_MASK : 0xFFFFFFFFu)

// Positive clauses vote for their class, negative ones against it; regression uses positive only.
TM_DEVICE int tm_polarity(long long clause_in_class)
{
#if REGRESSION
    return 1;
#else
    return (clause_in_class & 1) ? -1 : 1;
#endif
}

TM_DEVICE tm_u32 *tm_clause_state(tm_u32 *ta_state, long long g) { return ta_state + g * STATE_BITS * WORDS; }

// Training output: an empty clause outputs 1 (the AND over no literals).
TM_DEVICE int tm_clause_output_train(const tm_u32 *include, const tm_u32 *x)
{
    for (int w = 0; w < WORDS; ++w) {
        if (include[w] & ~x[w]) return 0;
    }
    return 1;
}

// Inference output: an empty clause outputs 0.
TM_DEVICE int tm_clause_output_infer(const tm_u32 *include, const tm_u32 *x)
{
    tm_u32 any = 0;
    for (int w = 0; w < WORDS; ++w) {
        if (include[w] & ~x[w]) return 0;
        any |= include[w];
    }
    return any != 0;
}

// Saturating increment of the automata flagged in `active` (bit-sliced ripple carry).
TM_DEVICE void tm_inc(tm_u32 *state, int w, tm_u32 active)
{
    tm_u32 carry = active;
    for (int b = 0; b < STATE_BITS && carry; ++b) {
        tm_u32 *p = state + b * WORDS + w;
        tm_u32 next = *p & carry;
        *p ^= carry;
        carry = next;
    }
    if (carry) {  // overflowed lanes were at the maximum: put them back there
        for (int b = 0; b < STATE_BITS; ++b) state[b * WORDS + w] |= carry;
    }
}

// Saturating decrement (bit-sliced ripple borrow).
TM_DEVICE void tm_dec(tm_u32 *state, int w, tm_u32 active)
{
    tm_u32 borrow = active;
    for (int b = 0; b < STATE_BITS && borrow; ++b) {
        tm_u32 *p = state + b * WORDS + w;
        tm_u32 next = ~*p & borrow;
        *p ^= borrow;
        borrow = next;
    }
    if (borrow) {  // underflowed lanes were at 0: put them back there
        for (int b = 0; b < STATE_BITS; ++b) state[b * WORDS + w] &= ~borrow;
    }
}

// The 1/s masks of the two neighbouring words 2p (low half) and 2p+1 (high half): lane b is 1 iff its
// 32-bit uniform u_b < S_THRESHOLD. The 64 uniforms are compared bit-sliced, most significant bit first,
// one 64-bit draw per bit; a lane is decided at the first bit where it differs from the threshold, so
// the loop stops once every lane of interest (`wanted`) is decided: about 7 draws for 64 lanes instead
// of 64 draws. Lanes outside `wanted` are returned as 0. The first TM_MASK_PREFIX draws are taken
// unconditionally and branch-free: independent draws pipeline, and the exit branch is unpredictable
// (measured on WSD apple, 1 thread: 0.97 -> 0.79 s per epoch). The result is the same either way.
#ifndef TM_MASK_PREFIX
#define TM_MASK_PREFIX 10
#endif

TM_DEVICE tm_u64 tm_s_mask_pair(tm_u64 key, long long g, int p, tm_u64 wanted)
{
#if S_THRESHOLD >= 4294967296ULL
    (void)key; (void)g; (void)p;
    return wanted;  // s = 1
#else
    tm_u64 undecided = wanted, less = 0;
    tm_u64 ctr_times_golden = tm_ctr((tm_u64)g, TM_PURPOSE_MASK, (tm_u64)p * 32) * TM_GOLDEN;
    // A fixed, branch-free prefix of draws (independent, so they pipeline); the data-dependent tail is
    // rarely needed.
    TM_UNROLL
    for (int k = 0; k < TM_MASK_PREFIX; ++k) {
        const tm_u64 r = tm_mix64(key ^ (ctr_times_golden + (tm_u64)k * TM_GOLDEN));
        const tm_u64 bit = (S_THRESHOLD >> (31 - k)) & 1;
        const tm_u64 sel = 0 - bit;
        less |= undecided & ~r & sel;
        undecided &= (r & sel) | (~r & ~sel);
    }
    ctr_times_golden += (tm_u64)TM_MASK_PREFIX * TM_GOLDEN;
    for (int k = TM_MASK_PREFIX; k < 32 && undecided; ++k, ctr_times_golden += TM_GOLDEN) {
        const tm_u64 r = tm_mix64(key ^ ctr_times_golden);
        if ((S_THRESHOLD >> (31 - k)) & 1) {
            less |= undecided & ~r;
            undecided &= r;
        } else {
            undecided &= ~r;
        }
    }
    return less;
#endif
}

TM_DEVICE tm_u64 tm_pair(tm_u32 low, tm_u32 high) { return ((tm_u64)high << 32) | low; }

// Type I feedback (Table 1): o = 1 memorises the literals that are 1 (with probability (s-1)/s, or
// always when boosting true positives) and forgets those that are 0 with probability 1/s; o = 0
// forgets every literal with probability 1/s. Words are taken in pairs, sharing one mask draw.
TM_DEVICE void tm_type_i(tm_u32 *state, const tm_u32 *x, int o, tm_u64 key, long long g)
{
    for (int p = 0; 2 * p < WORDS; ++p) {
        const int w0 = 2 * p, w1 = 2 * p + 1;
        const int has_w1 = w1 < WORDS;
        const tm_u32 valid0 = WORD_MASK(w0), valid1 = has_w1 ? WORD_MASK(w1) : 0u;
        const tm_u32 x0 = x[w0] & valid0, x1 = has_w1 ? x[w1] & valid1 : 0u;
        if (o) {
#if BOOST_TRUE_POSITIVE
            const tm_u64 forget = tm_pair(~x0 & valid0, ~x1 & valid1);
            const tm_u64 m = forget ? tm_s_mask_pair(key, g, p, forget) : 0;
            tm_inc(state, w0, x0);
            tm_dec(state, w0, (tm_u32)m);
            if (has_w1) {
                tm_inc(state, w1, x1);
                tm_dec(state, w1, (tm_u32)(m >> 32));
            }
#else
            const tm_u64 m = tm_s_mask_pair(key, g, p, tm_pair(valid0, valid1));
            tm_inc(state, w0, x0 & ~(tm_u32)m);
            tm_dec(state, w0, ~x0 & (tm_u32)m);
            if (has_w1) {
                tm_inc(state, w1, x1 & ~(tm_u32)(m >> 32));
                tm_dec(state, w1, ~x1 & (tm_u32)(m >> 32));
            }
#endif
        } else {
            const tm_u64 m = tm_s_mask_pair(key, g, p, tm_pair(valid0, valid1));
            tm_dec(state, w0, (tm_u32)m);
            if (has_w1) tm_dec(state, w1, (tm_u32)(m >> 32));
        }
    }
}

// Type II feedback (Table 2): o = 1 penalises Exclude of every literal that is 0.
TM_DEVICE void tm_type_ii(tm_u32 *state, const tm_u32 *x)
{
    const tm_u32 *include = state + (STATE_BITS - 1) * WORDS;
    for (int w = 0; w < WORDS; ++w) {
        const tm_u32 active = ~x[w] & ~include[w] & WORD_MASK(w);
        if (active) tm_inc(state, w, active);
    }
}

// Every automaton (padding lanes too) starts just below include: 2^(STATE_BITS-1) - 1.
TM_KERNEL void tm_init_state(tm_u32 *ta_state)
{
    TM_PARALLEL_FOR(i, (long long)CLAUSES_TOTAL * WORDS)
    {
        const long long g = i / WORDS;
        const int w = (int)(i % WORDS);
        tm_u32 *state = tm_clause_state(ta_state, g);
        for (int b = 0; b < STATE_BITS; ++b) state[b * WORDS + w] = (b < STATE_BITS - 1) ? 0xFFFFFFFFu : 0u;
    }
}

// Stored training outputs of every clause on every example, from scratch.
TM_KERNEL void tm_refresh_outputs(const tm_u32 *ta_state, const tm_u32 *X, int n_examples, tm_u32 *clause_output)
{
    const int out_words = (n_examples + 31) / 32;
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const tm_u32 *include = ta_state + (g * STATE_BITS + STATE_BITS - 1) * WORDS;
        for (int ow = 0; ow < out_words; ++ow) {
            tm_u32 bits = 0;
            for (int b = 0; b < 32; ++b) {
                const long long e = (long long)ow * 32 + b;
                if (e < n_examples && tm_clause_output_train(include, X + e * WORDS)) bits |= 1u << b;
            }
            clause_output[g * out_words + ow] = bits;
        }
    }
}

// Voting tallies from the stored outputs: class_sum[c, e] = sum_j polarity_j * o*_{j,e}.
TM_KERNEL void tm_compute_tallies(const tm_u32 *clause_output, int n_examples, int *class_sum)
{
    const int out_words = (n_examples + 31) / 32;
    TM_PARALLEL_FOR(i, (long long)CLASSES * n_examples)
    {
        const long long c = i / n_examples, e = i % n_examples;
        int sum = 0;
        for (int j = 0; j < CLAUSES; ++j) {
            const tm_u32 word = clause_output[(c * CLAUSES + j) * out_words + (e >> 5)];
            sum += tm_polarity(j) * (int)((word >> (e & 31)) & 1u);
        }
        class_sum[i] = sum;
    }
}

// One batch of Algorithm 1: every clause (one thread each) visits examples [start, end) in order,
// refreshes the example's tally by the change of its own output, then decides on feedback from the
// possibly stale tally. The kernel boundary is the barrier between batches.
TM_KERNEL void tm_train_batch(tm_u32 *ta_state, const tm_u32 *X, const int *y, int *class_sum,
                              tm_u32 *clause_output, int n_examples, int start, int end, tm_u64 seed,
                              tm_u64 epoch)
{
    const int out_words = (n_examples + 31) / 32;
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const long long c = g / CLAUSES;
        const int polarity = tm_polarity(g % CLAUSES);
        tm_u32 *state = tm_clause_state(ta_state, g);
        const tm_u32 *include = state + (STATE_BITS - 1) * WORDS;
        tm_u32 *stored = clause_output + g * out_words;
        for (int e = start; e < end; ++e) {
            const tm_u32 *x = X + (long long)e * WORDS;
            int *tally = class_sum + c * n_examples + e;

            // Refresh (Algorithm 1, lines 12-17, done first as in the paper's kernel).
            const int o = tm_clause_output_train(include, x);
            const tm_u32 bit = 1u << (e & 31);
            const int previous = (stored[e >> 5] & bit) != 0;
            if (o != previous) {
                TM_ATOMIC_ADD(tally, polarity * (o - previous));
                stored[e >> 5] ^= bit;
            }

            // Feedback (Algorithm 1, lines 4-11).
            int v = TM_LOAD_RELAXED(tally);
            v = v > THRESHOLD ? THRESHOLD : (v < -THRESHOLD ? -THRESHOLD : v);
            const int target = y[c * n_examples + e];
            const int direction = v <= target ? 1 : -1;
            const tm_u64 key = tm_key(seed, epoch, (tm_u64)e);
#if CLASSES > 1
            if (direction < 0 &&
                (tm_u64)tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_PARTICIPATE, 0)) * (CLASSES - 1) >=
                    4294967296ULL)
                continue;  // a non-target class takes part with probability 1/(CLASSES-1)
#endif
            const tm_u64 error = (tm_u64)(target > v ? target - v : v - target);
            if ((tm_u64)tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_UPDATE, 0)) * (2ULL * THRESHOLD) >=
                (error << 32))
                continue;  // updated with probability error / 2T
            if (direction * polarity > 0) {
                tm_type_i(state, x, o, key, g);
            } else if (o) {
                tm_type_ii(state, x);
            }
        }
    }
}

// Inference: clipped class sums, empty clauses voting 0.
TM_KERNEL void tm_class_sums(const tm_u32 *ta_state, const tm_u32 *X, int n_examples, int *class_sum)
{
    TM_PARALLEL_FOR(i, (long long)CLASSES * n_examples)
    {
        const long long c = i / n_examples, e = i % n_examples;
        const tm_u32 *x = X + e * WORDS;
        int sum = 0;
        for (int j = 0; j < CLAUSES; ++j) {
            const tm_u32 *include = ta_state + ((c * CLAUSES + j) * STATE_BITS + STATE_BITS - 1) * WORDS;
            sum += tm_polarity(j) * tm_clause_output_infer(include, x);
        }
        class_sum[i] = sum > THRESHOLD ? THRESHOLD : (sum < -THRESHOLD ? -THRESHOLD : sum);
    }
}
