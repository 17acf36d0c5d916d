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
    (void)clause_in_class;
    return 1;
#else
    return (clause_in_class & 1) ? -1 : 1;
#endif
}

// Clause g's planes, and its include plane (the most significant bit of every automaton).
#define CLAUSE_STATE(ta_state, g) ((ta_state) + (long long)(g) * STATE_BITS * WORDS)
#define INCLUDE_PLANE(clause_state) ((clause_state) + (STATE_BITS - 1) * WORDS)

TM_DEVICE int tm_clip(int v) { return v > THRESHOLD ? THRESHOLD : (v < -THRESHOLD ? -THRESHOLD : v); }

#define CHUNK_WORDS (2 * TM_CHUNK_PAIRS)
#define TM_MIN(a, b) ((a) < (b) ? (a) : (b))

// C_j(X): 0 at the first chunk of words with an included literal that is 0 (chunks vectorise on a
// CPU); otherwise 1, except for an empty clause, which outputs `empty_output`: 1 in training (the AND
// over no literals), 0 at inference. Called with a constant, so training does no emptiness bookkeeping.
TM_DEVICE int tm_clause_output(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x, int empty_output)
{
    tm_u32 any = 0;
    for (int w0 = 0; w0 < WORDS; w0 += CHUNK_WORDS) {
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
        tm_u32 violated = 0;
        TM_SIMD_OR(violated)
        for (int i = 0; i < n; ++i) violated |= include[w0 + i] & ~x[w0 + i];
        if (violated) return 0;
        if (!empty_output) {
            TM_SIMD_OR(any)
            for (int i = 0; i < n; ++i) any |= include[w0 + i];
        }
    }
    return empty_output || any != 0;
}

// Saturating +1 (flip = 0) or -1 (flip = ~0) of the automata flagged in active[i], for words
// w0 .. w0+n-1: a bit-sliced ripple carry over every plane, branch-free so that a CPU vectorises it
// across words. A decrement is an increment of the complemented state (~(~s + 1) = s - 1), and its
// saturation at 0 is the increment's saturation at the maximum, so one body serves both.
TM_DEVICE void tm_step(tm_u32 *TM_RESTRICT state, int w0, int n, const tm_u32 *TM_RESTRICT active, tm_u32 flip)
{
    TM_SIMD
    for (int i = 0; i < n; ++i) {
        tm_u32 carry = active[i];
        for (int b = 0; b < STATE_BITS; ++b) {
            const tm_u32 p = state[b * WORDS + w0 + i] ^ flip;
            state[b * WORDS + w0 + i] ^= carry;
            carry &= p;
        }
        // Lanes whose carry ran out of planes were at the end of the range: put them back there.
        for (int b = 0; b < STATE_BITS; ++b)
            state[b * WORDS + w0 + i] = ((state[b * WORDS + w0 + i] ^ flip) | carry) ^ flip;
    }
}

TM_DEVICE void tm_inc(tm_u32 *TM_RESTRICT state, int w0, int n, const tm_u32 *TM_RESTRICT active)
{
    tm_step(state, w0, n, active, 0u);
}

TM_DEVICE void tm_dec(tm_u32 *TM_RESTRICT state, int w0, int n, const tm_u32 *TM_RESTRICT active)
{
    tm_step(state, w0, n, active, 0xFFFFFFFFu);
}

// The 1/s masks of words w0 .. w0+n-1 (w0 even): lane b of word w is 1 iff its 32-bit uniform
// u < S_THRESHOLD, for the lanes flagged in wanted[], else 0. Words pair up (2p, 2p+1) as the low and
// high halves of one 64-bit draw per bit. The 64 uniforms of a pair are compared bit-sliced, most
// significant bit first; a lane is decided at the first bit where it differs from the threshold, so a
// pair needs about 7 draws instead of 64. The first TM_MASK_PREFIX bits are drawn for every pair
// unconditionally (branch-free, vectorised across pairs on a CPU); the few pairs still undecided go on
// one bit at a time. The result equals the lane-by-lane comparison of kernels/README.md exactly.
#ifndef TM_MASK_PREFIX
#define TM_MASK_PREFIX 10
#endif

TM_DEVICE tm_u64 tm_pair(tm_u32 low, tm_u32 high) { return ((tm_u64)high << 32) | low; }

TM_DEVICE void tm_s_masks(tm_u64 key, long long g, int w0, int n, const tm_u32 *TM_RESTRICT wanted,
                          tm_u32 *TM_RESTRICT mask)
{
#if S_THRESHOLD >= 4294967296ULL
    (void)key; (void)g; (void)w0;
    for (int i = 0; i < n; ++i) mask[i] = wanted[i];  // s = 1
#else
    const int n_pairs = (n + 1) / 2;
    tm_u64 undecided[TM_CHUNK_PAIRS], less[TM_CHUNK_PAIRS], ctr_golden[TM_CHUNK_PAIRS];
    for (int j = 0; j < n_pairs; ++j) {
        undecided[j] = tm_pair(wanted[2 * j], 2 * j + 1 < n ? wanted[2 * j + 1] : 0u);
        less[j] = 0;
        // draw(key, ctr + k) = mix64(key ^ (ctr + k) * GOLDEN): step the product instead of multiplying.
        ctr_golden[j] = tm_ctr((tm_u64)g, TM_PURPOSE_MASK, (tm_u64)(w0 / 2 + j) * 32) * TM_GOLDEN;
    }
    TM_UNROLL
    for (int k = 0; k < TM_MASK_PREFIX; ++k) {
        const tm_u64 one = 0 - ((S_THRESHOLD >> (31 - k)) & 1);  // all ones where the threshold bit is 1
        TM_SIMD
        for (int j = 0; j < n_pairs; ++j) {
            const tm_u64 r = tm_mix64(key ^ (ctr_golden[j] + (tm_u64)k * TM_GOLDEN));
            less[j] |= undecided[j] & ~r & one;
            undecided[j] &= ~(r ^ one);
        }
    }
    for (int j = 0; j < n_pairs; ++j) {
        tm_u64 cg = ctr_golden[j] + (tm_u64)TM_MASK_PREFIX * TM_GOLDEN;
        for (int k = TM_MASK_PREFIX; k < 32 && undecided[j]; ++k, cg += TM_GOLDEN) {
            const tm_u64 r = tm_mix64(key ^ cg);
            if ((S_THRESHOLD >> (31 - k)) & 1) {
                less[j] |= undecided[j] & ~r;
                undecided[j] &= r;
            } else {
                undecided[j] &= ~r;
            }
        }
        mask[2 * j] = (tm_u32)less[j];
        if (2 * j + 1 < n) mask[2 * j + 1] = (tm_u32)(less[j] >> 32);
    }
#endif
}

// Type I feedback (Table 1): o = 1 memorises the literals that are 1 (with probability (s-1)/s, or
// always when boosting true positives) and forgets those that are 0 with probability 1/s; o = 0
// forgets every literal with probability 1/s.
TM_DEVICE void tm_type_i(tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x, int o, tm_u64 key, long long g)
{
    for (int w0 = 0; w0 < WORDS; w0 += CHUNK_WORDS) {
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
        tm_u32 xw[CHUNK_WORDS], wanted[CHUNK_WORDS], m[CHUNK_WORDS], up[CHUNK_WORDS], down[CHUNK_WORDS];
        for (int i = 0; i < n; ++i) {
            const tm_u32 valid = WORD_MASK(w0 + i);
            xw[i] = x[w0 + i] & valid;
            // With boost and o = 1 only the literals that are 0 need a 1/s draw.
            wanted[i] = (o && BOOST_TRUE_POSITIVE) ? ~xw[i] & valid : valid;
        }
        tm_s_masks(key, g, w0, n, wanted, m);
        if (o) {
            for (int i = 0; i < n; ++i) {
                up[i] = BOOST_TRUE_POSITIVE ? xw[i] : xw[i] & ~m[i];
                down[i] = ~xw[i] & m[i];
            }
            tm_inc(state, w0, n, up);
            tm_dec(state, w0, n, down);
        } else {
            tm_dec(state, w0, n, m);
        }
    }
}

// Type II feedback (Table 2): o = 1 penalises Exclude of every literal that is 0.
TM_DEVICE void tm_type_ii(tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x)
{
    const tm_u32 *include = INCLUDE_PLANE(state);
    for (int w0 = 0; w0 < WORDS; w0 += CHUNK_WORDS) {
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
        tm_u32 up[CHUNK_WORDS];
        tm_u32 any = 0;
        for (int i = 0; i < n; ++i) {
            up[i] = ~x[w0 + i] & ~include[w0 + i] & WORD_MASK(w0 + i);
            any |= up[i];
        }
        if (any) tm_inc(state, w0, n, up);
    }
}

// Every automaton (padding lanes too) starts just below include: 2^(STATE_BITS-1) - 1.
TM_KERNEL void tm_init_state(tm_u32 *ta_state)
{
    TM_PARALLEL_FOR(i, (long long)CLAUSES_TOTAL * WORDS)
    {
        const long long g = i / WORDS;
        const int w = (int)(i % WORDS);
        tm_u32 *state = CLAUSE_STATE(ta_state, g);
        for (int b = 0; b < STATE_BITS; ++b) state[b * WORDS + w] = (b < STATE_BITS - 1) ? 0xFFFFFFFFu : 0u;
    }
}

// Stored training outputs of every clause on every example, from scratch.
TM_KERNEL void tm_refresh_outputs(const tm_u32 *ta_state, const tm_u32 *X, int n_examples, tm_u32 *clause_output)
{
    const int out_words = (n_examples + 31) / 32;
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, g));
        for (int ow = 0; ow < out_words; ++ow) {
            tm_u32 bits = 0;
            for (int b = 0; b < 32; ++b) {
                const long long e = (long long)ow * 32 + b;
                if (e < n_examples && tm_clause_output(include, X + e * WORDS, 1)) bits |= 1u << b;
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
        tm_u32 *state = CLAUSE_STATE(ta_state, g);
        const tm_u32 *include = INCLUDE_PLANE(state);
        tm_u32 *stored = clause_output + g * out_words;
        for (int e = start; e < end; ++e) {
            const tm_u32 *x = X + (long long)e * WORDS;
            int *tally = class_sum + c * n_examples + e;

            // Refresh (Algorithm 1, lines 12-17, done first as in the paper's kernel).
            const int o = tm_clause_output(include, x, 1);
            const tm_u32 bit = 1u << (e & 31);
            const int previous = (stored[e >> 5] & bit) != 0;
            if (o != previous) {
                TM_ATOMIC_ADD(tally, polarity * (o - previous));
                stored[e >> 5] ^= bit;
            }

            // Feedback (Algorithm 1, lines 4-11).
            const int v = tm_clip(TM_LOAD_RELAXED(tally));
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
            const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, c * CLAUSES + j));
            sum += tm_polarity(j) * tm_clause_output(include, x, 0);
        }
        class_sum[i] = tm_clip(sum);
    }
}
