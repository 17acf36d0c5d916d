// The massively parallel and asynchronous Tsetlin Machine (Abeyrathna et al., ICML 2021, Algorithm 1).
//
// One source for both builds (see tm_portability.cuh). The model's constants arrive as #defines
// prepended by the host (asynctm.backends): CLASSES, CLAUSES (per class), LITERALS, STATE_BITS,
// THRESHOLD (T), S_POOL_BITS (log2 of the 1/s pool's size in words), BOOST_TRUE_POSITIVE, REGRESSION,
// SYNC_TALLY (0: the paper's asynchronous tallies; 1: synchronous, every clause refreshed on an example
// before any of them gets feedback), QUADRATIC_UPDATE (0: a clause is updated with probability
// |t - v| / 2T; 1: with probability ((t - v) / T)^2) and STAGGERED_ORDER (0: every clause visits a batch's
// examples in dataset order; 1: clause g starts at the batch's example g mod its size and wraps around).
// TM_SHARED_STATE (GPU, asynchronous tallies; default 0): 1 keeps each clause's automata in its block's shared
// memory for the length of a batch (kernels/README.md, "Automata in shared memory").
// The rules, the memory layout and the random streams are specified in kernels/README.md.
#include "tm_portability.cuh"
#include "tm_rng.cuh"

#if !defined(CLASSES) || !defined(CLAUSES) || !defined(LITERALS) || !defined(STATE_BITS) || \
    !defined(THRESHOLD) || !defined(S_POOL_BITS) || !defined(BOOST_TRUE_POSITIVE) || !defined(REGRESSION) || \
    !defined(SYNC_TALLY) || !defined(QUADRATIC_UPDATE) || !defined(STAGGERED_ORDER)
#error "tm.cu needs CLASSES, CLAUSES, LITERALS, STATE_BITS, THRESHOLD, S_POOL_BITS, BOOST_TRUE_POSITIVE, " \
    "REGRESSION, SYNC_TALLY, QUADRATIC_UPDATE, STAGGERED_ORDER"
#endif
#if QUADRATIC_UPDATE && THRESHOLD > 32767
#error "the quadratic update rule compares err^2 * 2^32 in 64 bits: T must be at most 32767"
#endif

#ifndef TM_SHARED_STATE
#define TM_SHARED_STATE 0
#endif
#if TM_SHARED_STATE && SYNC_TALLY
#error "TM_SHARED_STATE keeps a clause's automata for a batch: it needs the asynchronous tallies (SYNC_TALLY 0)"
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

// Whether words 0 .. n-1 of a chunk have an included literal that is 0 in x: on a CPU a whole chunk is include & ~x
// in one vector and a test of it in registers (tm_any16: half the instructions of reducing the chunk's words to
// one); otherwise a plain loop, which the compiler vectorises with the reduction in registers (with an `omp simd`
// reduction GCC kept the lanes in memory and read them back after every chunk).
TM_DEVICE int tm_chunk_violated(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x, int n)
{
#ifdef TM_CHUNK_VECTORS
    if (n == CHUNK_WORDS) {
        tm_v16u32 inc, xv;
        tm_load16(&inc, include);
        tm_load16(&xv, x);
        inc &= ~xv;
        return tm_any16(&inc);
    }
#endif
    tm_u32 violated = 0;
    for (int i = 0; i < n; ++i) violated |= include[i] & ~x[i];
    return violated != 0;
}

// Whether words 0 .. n-1 of a chunk hold an included literal (a word of the include plane that is not 0).
TM_DEVICE int tm_chunk_live(const tm_u32 *TM_RESTRICT include, int n)
{
#ifdef TM_CHUNK_VECTORS
    if (n == CHUNK_WORDS) {
        tm_v16u32 v;
        tm_load16(&v, include);
        return tm_any16(&v);
    }
#endif
    tm_u32 any = 0;
    for (int i = 0; i < n; ++i) any |= include[i];
    return any != 0;
}

// The first word from w on with an included literal that is 0 in x (there must be one): a scan's new hint.
TM_DEVICE int tm_violated_word(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x, int w)
{
    while (!(include[w] & ~x[w])) ++w;
    return w;
}

// C_j(X): 0 at the first chunk of words with an included literal that is 0 (chunks vectorise on a
// CPU); otherwise 1, except for an empty clause, which outputs `empty_output`: 1 in training (the AND
// over no literals), 0 at inference. Called with a constant, so training does no emptiness bookkeeping.
// `hint` (training; null at inference) is the word where the clause last found an included literal that
// is 0: checked first, since the same literal tends to rule the clause out again, and updated.
TM_DEVICE int tm_clause_output(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x, int empty_output,
                               int *hint)
{
    if (hint && (include[*hint] & ~x[*hint])) return 0;
    tm_u32 any = 0;
    for (int w0 = 0; w0 < WORDS; w0 += CHUNK_WORDS) {
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
        if (tm_chunk_violated(include + w0, x + w0, n)) {
            if (hint) *hint = tm_violated_word(include, x, w0);
            return 0;
        }
        if (!empty_output) {
            TM_SIMD_OR(any)
            for (int i = 0; i < n; ++i) any |= include[w0 + i];
        }
    }
    return empty_output || any != 0;
}

// The training output of a clause (empty: 1) as its group of TM_CLAUSE_THREADS threads computes it: each thread
// scans its own chunks of words (those it updates in tm_type_i and tm_type_ii), and after every round of chunks
// the group stops if one of them found an included literal that is 0. Every thread returns the same value, and
// `hint` (null: none) stays the same in every thread: it becomes the word found by the lowest such thread (any
// violated word is a valid hint; it only saves work). With one thread this is tm_clause_output(.., 1, hint).
// A group of several warps (TM_CLAUSE_THREADS 64 to 1024) takes the minimum of the words found in each round
// instead of a vote and a ballot: the lowest thread that found one found the lowest word of the round, so the
// hint is the same word.
TM_DEVICE int tm_clause_output_train(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x, int *hint)
{
#if TM_CLAUSE_THREADS == 1
    return tm_clause_output(include, x, 1, hint);
#elif TM_CLAUSE_THREADS > 32
    if (hint && (include[*hint] & ~x[*hint])) return 0;  // the same word in every thread: a uniform exit
    int found = WORDS;  // none
    for (int base = 0; base < WORDS; base += TM_CLAUSE_THREADS * CHUNK_WORDS) {
        const int w0 = base + TM_CLAUSE_THREAD * CHUNK_WORDS;
        for (int i = 0; i < CHUNK_WORDS && found == WORDS && w0 + i < WORDS; ++i)
            if (include[w0 + i] & ~x[w0 + i]) found = w0 + i;
        found = TM_GROUP_MIN(found);  // every thread runs the same rounds and gets the same minimum
        if (found < WORDS) break;
    }
    if (found == WORDS) return 1;
    if (hint) *hint = found;
    return 0;
#else
    if (hint && (include[*hint] & ~x[*hint])) return 0;  // the same word in every thread: a uniform exit
    int found = -1;
    for (int base = 0; base < WORDS; base += TM_CLAUSE_THREADS * CHUNK_WORDS) {
        const int w0 = base + TM_CLAUSE_THREAD * CHUNK_WORDS;
        for (int i = 0; i < CHUNK_WORDS && found < 0 && w0 + i < WORDS; ++i)
            if (include[w0 + i] & ~x[w0 + i]) found = w0 + i;
        if (TM_GROUP_ANY(found >= 0)) break;  // every thread runs the same rounds, so each vote is complete
    }
    const tm_u32 ballot = TM_GROUP_BALLOT(found >= 0);
    if (!ballot) return 1;
    const int w = TM_GROUP_SHFL(found, TM_GROUP_FIRST(ballot));
    if (hint) *hint = w;
    return 0;
#endif
}

// The chunks of a clause that hold an included literal (TM_LIVE_CHUNKS, the CPU build): bit k % 32 of live[k / 32]
// is set where chunk k (words 16k .. 16k+15 of the include plane, padding lanes too) has a word that is not 0.
// A chunk without one cannot rule the clause out, so the training scan tests only the live chunks, in order: the
// same first violated chunk, the same output and hint as tm_clause_output. A trained clause's includes lie in few
// chunks (SemEval after 3 epochs: about a quarter of its 400; IMDb: 2 of 20), and every output of 1 scans them all.
// The thread that trains the clause in a batch builds the set at the batch's start, on its stack, and adds a chunk
// where a feedback includes a literal (tm_inc's carry into the top plane, from registers: reading the plane back
// after a feedback's vector stores stalled on them: IMDb's epochs took 40 % longer). A chunk whose includes a
// feedback removes stays in the set until the next batch: testing it finds nothing, so the output is the same.
// They pay where a clause has many chunks; with few, their upkeep costs about what they save (Bike Sharing's 6
// chunks: a few per cent slower per epoch), so the build keeps them from TM_LIVE_MIN_CHUNKS chunks up.
#define CHUNKS ((WORDS + CHUNK_WORDS - 1) / CHUNK_WORDS)
#ifndef TM_LIVE_MIN_CHUNKS
#define TM_LIVE_MIN_CHUNKS 16
#endif
#if TM_LIVE_CHUNKS && CHUNKS < TM_LIVE_MIN_CHUNKS
#undef TM_LIVE_CHUNKS
#define TM_LIVE_CHUNKS 0
#endif
#if TM_LIVE_CHUNKS
#define LIVE_WORDS ((CHUNKS + 31) / 32)
TM_DEVICE void tm_live_set(tm_u32 *TM_RESTRICT live, int w0)
{
    const int k = w0 / CHUNK_WORDS;
    live[k >> 5] |= 1u << (k & 31);
}
TM_DEVICE void tm_live_init(const tm_u32 *TM_RESTRICT include, tm_u32 *TM_RESTRICT live)
{
    for (int i = 0; i < LIVE_WORDS; ++i) live[i] = 0;
    for (int w0 = 0; w0 < WORDS; w0 += CHUNK_WORDS)
        if (tm_chunk_live(include + w0, TM_MIN(CHUNK_WORDS, WORDS - w0))) tm_live_set(live, w0);
}
TM_DEVICE int tm_clause_output_live(const tm_u32 *TM_RESTRICT include, const tm_u32 *TM_RESTRICT x,
                                    const tm_u32 *TM_RESTRICT live, int *hint)
{
    if (include[*hint] & ~x[*hint]) return 0;
    for (int i = 0; i < LIVE_WORDS; ++i)
        for (tm_u32 bits = live[i]; bits; bits &= bits - 1) {
            const int w0 = (32 * i + __builtin_ctz(bits)) * CHUNK_WORDS;
            if (tm_chunk_violated(include + w0, x + w0, TM_MIN(CHUNK_WORDS, WORDS - w0))) {
                *hint = tm_violated_word(include, x, w0);
                return 0;
            }
        }
    return 1;
}
// An increment of chunk w0 (`raised`: the call, evaluated once whatever `live` is) whose lanes `raised` became
// included: the chunk is live.
#define TM_LIVE_RAISED(live, w0, raised)                  \
    do {                                                  \
        const tm_u32 tm_raised_ = (raised);               \
        if ((live) && tm_raised_) tm_live_set((live), (w0)); \
    } while (0)
#else
#define TM_LIVE_RAISED(live, w0, raised) ((void)(raised))
#endif

// +1 of the automata flagged in active[i], for words w0 .. w0+n-1: a bit-sliced ripple carry over
// the planes, branch-free so that a CPU vectorises it across words. With `saturate`, lanes already at
// the maximum (every plane 1) are left there; callers that only raise excluded automata (below the
// midpoint, so never at the top) pass 0. Returns the union of the lanes that became included (the carry into the
// top plane where it was 0), for the CPU build's live chunks; other callers ignore it and the compiler drops it.
TM_DEVICE tm_u32 tm_inc(tm_u32 *TM_RESTRICT state, int w0, int n, const tm_u32 *TM_RESTRICT active, int saturate)
{
    tm_u32 raised = 0;
    TM_SIMD_OR(raised)
    for (int i = 0; i < n; ++i) {
        tm_u32 top = 0xFFFFFFFFu;
        if (saturate)
            for (int b = 0; b < STATE_BITS; ++b) top &= state[b * WORDS + w0 + i];
        tm_u32 carry = active[i] & (saturate ? ~top : 0xFFFFFFFFu);
        for (int b = 0; b < STATE_BITS - 1; ++b) {
            const tm_u32 p = state[b * WORDS + w0 + i];
            state[b * WORDS + w0 + i] = p ^ carry;
            carry &= p;
        }
        const tm_u32 p = state[(STATE_BITS - 1) * WORDS + w0 + i];
        state[(STATE_BITS - 1) * WORDS + w0 + i] = p ^ carry;
        raised |= carry & ~p;
    }
    return raised;
}

// -1 of the automata flagged in active[i], which must all be above 0 (callers mask with tm_nonzero):
// a bit-sliced ripple borrow.
TM_DEVICE void tm_dec(tm_u32 *TM_RESTRICT state, int w0, int n, const tm_u32 *TM_RESTRICT active)
{
    TM_SIMD
    for (int i = 0; i < n; ++i) {
        tm_u32 borrow = active[i];
        for (int b = 0; b < STATE_BITS; ++b) {
            const tm_u32 p = state[b * WORDS + w0 + i];
            state[b * WORDS + w0 + i] = p ^ borrow;
            borrow &= ~p;
        }
    }
}

// The lanes of words w0 .. w0+n-1 whose automaton is above 0 (a decrement there is not a no-op);
// returns their union, so that a chunk with none skips its 1/s draws.
TM_DEVICE tm_u32 tm_nonzero(const tm_u32 *TM_RESTRICT state, int w0, int n, tm_u32 *TM_RESTRICT nz)
{
    tm_u32 any = 0;
    TM_SIMD_OR(any)
    for (int i = 0; i < n; ++i) {
        tm_u32 v = 0;
        for (int b = 0; b < STATE_BITS; ++b) v |= state[b * WORDS + w0 + i];
        nz[i] = v & WORD_MASK(w0 + i);
        any |= nz[i];
    }
    return any;
}

// The 1/s masks of words w0 .. w0+n-1 (w0 a multiple of CHUNK_WORDS), for the lanes flagged in wanted[]
// (0 elsewhere). Words pair up (2p, 2p+1) as the low and high halves of one 64-lane mask, and pairs
// group into blocks of 8 (512 literals). Each block takes a block of 8 consecutive words of the 1/s
// pool (2^S_POOL_BITS words in which exactly round(2^(S_POOL_BITS+6)/s) bits are 1, built by the host
// from the seed; kernels/README.md), chosen by one draw d: the pool block is d's top S_POOL_BITS-3 bits,
// and pair p takes word p % 8 of it, rotated left by bits 6(p % 8) .. 6(p % 8)+5 of d. One draw and one
// contiguous load per 512 literals, instead of a bit-sliced comparison of 64 uniforms per 64 literals.
#define TM_MASK_BLOCK_PAIRS 8
#if TM_MASK_BLOCK_PAIRS % TM_CHUNK_PAIRS != 0 || S_POOL_BITS < 3 || S_POOL_BITS > 19
#error "a chunk of words must lie in one mask block, and the pool needs 3..19 index bits"
#endif

// The draw d of the mask block of the chunk at word w0 of clause g, and where d's block starts in the pool (as
// 32-bit halves: a pool block always has both halves of a pair).
TM_DEVICE tm_u64 tm_mask_draw(tm_u64 key, long long g, int w0)
{
    return tm_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_MASK, (tm_u64)(w0 / 2 / TM_MASK_BLOCK_PAIRS)));
}
TM_DEVICE const tm_u32 *tm_pool_block(const tm_u32 *TM_RESTRICT pool32, tm_u64 d)
{
    return pool32 + 2 * (d >> (64 - (S_POOL_BITS - 3))) * TM_MASK_BLOCK_PAIRS;
}

// Word i of the chunk is the low (even i) or high (odd i) half of its pair's rotated pool word. The
// rotation is done on the 32-bit halves (the pool is read as little-endian 32-bit words, `pool32`): rotating
// a 64-bit pair left by r gives half h the bits (a << q) | (b >> (32 - q)), q = r % 32, where a is half h
// and b the other half (swapped when r >= 32). So every word is computed in its own 32-bit lane, with no
// round trip through 64-bit values.
#if TM_CHUNK_PAIRS == TM_MASK_BLOCK_PAIRS
// A CPU chunk's 16 masks before the wanted lanes: its block's 8 pairs rotated as one vector (below).
TM_DEVICE void tm_s_block(const tm_u32 *TM_RESTRICT pool32, tm_u64 d, tm_v16u32 *halves)
{
    tm_v8u64 pairs;
    __builtin_memcpy(&pairs, tm_pool_block(pool32, d), sizeof pairs);
    const tm_v8u64 r = ((tm_v8u64){d, d, d, d, d, d, d, d} >> (tm_v8u64){0, 6, 12, 18, 24, 30, 36, 42}) & 63;
    *halves = (tm_v16u32)((pairs << r) | (pairs >> ((64 - r) & 63)));
}
#endif
TM_DEVICE void tm_s_masks(const tm_u32 *TM_RESTRICT pool32, tm_u64 d, int w0, int n,
                          const tm_u32 *TM_RESTRICT wanted, tm_u32 *TM_RESTRICT mask)
{
#if TM_CHUNK_PAIRS == TM_MASK_BLOCK_PAIRS
    // A CPU's chunk is a whole block (slot0 is 0): its 8 pairs are rotated as one vector of 64-bit lanes, the
    // same bits as below, and the chunk's masks are read back as its 32-bit halves, low half first (the CPU build
    // is little-endian). One contiguous load and one vector of rotations: the per-word halves below compile to
    // gathers there, and pairs rotated one by one reach the masks through scalar stores that a vector load cannot
    // take from the store buffer (a stall on every chunk).
    tm_v16u32 halves;
    tm_s_block(pool32, d, &halves);
    for (int i = 0; i < n; ++i) mask[i] = halves[i] & wanted[i];
    (void)w0;
#else
    const int slot0 = (w0 / 2) % TM_MASK_BLOCK_PAIRS;  // the chunk's first pair in its block
    const tm_u32 *half = tm_pool_block(pool32, d) + 2 * slot0;  // the chunk's pairs in the pool
    TM_SIMD
    for (int i = 0; i < n; ++i) {
        const int r = (int)(d >> (6 * (slot0 + (i >> 1)))) & 63;
        const int q = r & 31;
        const tm_u32 a = (r & 32) ? half[i ^ 1] : half[i], b = (r & 32) ? half[i] : half[i ^ 1];
        mask[i] = ((a << q) | ((b >> 1) >> (31 - q))) & wanted[i];
    }
#endif
}

#ifdef TM_CHUNK_VECTORS
// Type I on a whole CPU chunk, the same steps as tm_type_i's below on its planes loaded once into vectors (the
// separate steps read every plane two or three times, in tm_nonzero, tm_inc and tm_dec, and passed the lanes and
// masks between them through memory). A chunk's planes and its lanes above 0:
TM_DEVICE void tm_load_planes(const tm_u32 *TM_RESTRICT state, int w0, tm_v16u32 *plane, tm_v16u32 *nz)
{
    tm_load16(&plane[0], state + w0);
    *nz = plane[0];
    for (int b = 1; b < STATE_BITS; ++b) {
        tm_load16(&plane[b], state + b * WORDS + w0);
        *nz |= plane[b];
    }
    if (w0 + CHUNK_WORDS == WORDS) (*nz)[CHUNK_WORDS - 1] &= LAST_WORD_MASK;
}
TM_DEVICE void tm_store_planes(tm_u32 *TM_RESTRICT state, int w0, const tm_v16u32 *plane)
{
    for (int b = 0; b < STATE_BITS; ++b) tm_store16(state + b * WORDS + w0, &plane[b]);
}
// -1 of the lanes in `active` (all above 0), as tm_dec.
TM_DEVICE void tm_dec16(tm_v16u32 *plane, const tm_v16u32 *active)
{
    tm_v16u32 borrow = *active;
    for (int b = 0; b < STATE_BITS; ++b) {
        const tm_v16u32 p = plane[b];
        plane[b] = p ^ borrow;
        borrow &= ~p;
    }
}
// o = 0 (Type Ib, the most frequent): forget the lanes above 0 with probability 1/s.
TM_DEVICE void tm_forget_chunk(tm_u32 *TM_RESTRICT state, int w0, const tm_u32 *TM_RESTRICT pool32, tm_u64 d)
{
    tm_v16u32 plane[STATE_BITS], nz, m;
    tm_load_planes(state, w0, plane, &nz);
    if (!tm_any16(&nz)) return;  // every automaton at 0: no draw
    tm_s_block(pool32, d, &m);
    m &= nz;
    tm_dec16(plane, &m);
    tm_store_planes(state, w0, plane);
}
// o = 1 (Type Ia): the literals that are 1 up (unless m, without boost; saturating), those that are 0 down where m.
// Returns whether a lane became included (tm_inc).
TM_DEVICE tm_u32 tm_memorise_chunk(tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x, int w0,
                                   const tm_u32 *TM_RESTRICT pool32, tm_u64 d)
{
    tm_v16u32 plane[STATE_BITS], nz, xv;
    tm_load_planes(state, w0, plane, &nz);
    tm_load16(&xv, x + w0);
    if (w0 + CHUNK_WORDS == WORDS) xv[CHUNK_WORDS - 1] &= LAST_WORD_MASK;
    tm_v16u32 wanted = nz & ~xv;
    if (!BOOST_TRUE_POSITIVE) wanted |= xv;
    const int any_wanted = tm_any16(&wanted), any_x = tm_any16(&xv);
    if (!any_wanted && !any_x) return 0;
    tm_v16u32 m = {}, raised = {};  // m: none drawn where no lane is wanted
    if (any_wanted) {
        tm_s_block(pool32, d, &m);
        m &= wanted;
    }
    if (any_x) {
        tm_v16u32 top = plane[0];
        for (int b = 1; b < STATE_BITS; ++b) top &= plane[b];
        tm_v16u32 carry = (BOOST_TRUE_POSITIVE ? xv : xv & ~m) & ~top;
        for (int b = 0; b < STATE_BITS; ++b) {
            const tm_v16u32 p = plane[b];
            plane[b] = p ^ carry;
            if (b == STATE_BITS - 1) raised = carry & ~p;
            carry &= p;
        }
    }
    if (any_wanted) {
        const tm_v16u32 down = ~xv & m;
        tm_dec16(plane, &down);
    }
    tm_store_planes(state, w0, plane);
    return (tm_u32)tm_any16(&raised);
}
#endif

// Type I feedback (Table 1): o = 1 memorises the literals that are 1 (with probability (s-1)/s, or
// always when boosting true positives) and forgets those that are 0 with probability 1/s; o = 0
// forgets every literal with probability 1/s.
// A clause's group of TM_CLAUSE_THREADS threads splits the chunks of words: thread t takes chunks t,
// t + TM_CLAUSE_THREADS, ... The masks of a chunk are drawn from its own counter, so the split changes nothing.
TM_DEVICE void tm_type_i(tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x, int o, tm_u64 key, long long g,
                          const tm_u32 *TM_RESTRICT pool32, tm_u32 *TM_RESTRICT live)
{
    (void)live;  // kept only where TM_LIVE_CHUNKS
#if TM_CHUNK_PAIRS == TM_MASK_BLOCK_PAIRS
    // A CPU core fetches the pool block of the next chunk while it works on this one: the blocks are random, and
    // a wide clause's automata push the pool out of the core's caches.
    tm_u64 d_next = tm_mask_draw(key, g, 0);
    __builtin_prefetch(tm_pool_block(pool32, d_next));
#endif
    for (int w0 = TM_CLAUSE_THREAD * CHUNK_WORDS; w0 < WORDS; w0 += TM_CLAUSE_THREADS * CHUNK_WORDS) {
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
#if TM_CHUNK_PAIRS == TM_MASK_BLOCK_PAIRS
        const tm_u64 d = d_next;
        if (w0 + CHUNK_WORDS < WORDS) {
            d_next = tm_mask_draw(key, g, w0 + CHUNK_WORDS);
            __builtin_prefetch(tm_pool_block(pool32, d_next));
        }
#endif
#ifdef TM_CHUNK_VECTORS
        if (n == CHUNK_WORDS) {  // a CPU's whole chunk, its planes in registers
            if (o)
                TM_LIVE_RAISED(live, w0, tm_memorise_chunk(state, x, w0, pool32, d));
            else
                tm_forget_chunk(state, w0, pool32, d);
            continue;
        }
#endif
        tm_u32 xw[CHUNK_WORDS], nz[CHUNK_WORDS], wanted[CHUNK_WORDS], m[CHUNK_WORDS], step[CHUNK_WORDS];
        // The lanes whose 1/s draw can change something: decrements only where the automaton is above
        // 0 (o = 0: nz itself, no copy); without boost, o = 1 also needs the draw of the literals that are 1
        // (increment unless m).
        tm_u32 any_wanted = tm_nonzero(state, w0, n, nz), any_x = 0;
        const tm_u32 *want = nz;
        if (o) {
            any_wanted = 0;
            for (int i = 0; i < n; ++i) {
                xw[i] = x[w0 + i] & WORD_MASK(w0 + i);
                wanted[i] = (~xw[i] & nz[i]) | (BOOST_TRUE_POSITIVE ? 0u : xw[i]);
                any_wanted |= wanted[i];
                any_x |= xw[i];
            }
            want = wanted;
        }
        // m is read only where any_wanted (without boost, wanted covers the literals that are 1, so no
        // draw wanted also means no increment): a chunk where every draw would be a no-op draws nothing, and its
        // m is what the draws would give there, 0 (set, so that no compiler sees it read unset).
        if (any_wanted) {
#if TM_CHUNK_PAIRS == TM_MASK_BLOCK_PAIRS
            tm_s_masks(pool32, d, w0, n, want, m);
#else
            tm_s_masks(pool32, tm_mask_draw(key, g, w0), w0, n, want, m);  // drawn only where wanted
#endif
        } else {
            for (int i = 0; i < n; ++i) m[i] = 0;
        }
        // A decrement of no lane leaves the planes as they are: on a GPU (chunks of 2 words) it is skipped, since
        // with a large s most chunks that have an automaton above 0 draw no 1/s lane on them; a CPU's chunks of
        // 16 words nearly always have one, so there the test would only cost (TM_SKIP_IDLE_DECREMENT).
        tm_u32 any_down = 0;
        if (o) {
            if (any_x && BOOST_TRUE_POSITIVE) {
                TM_LIVE_RAISED(live, w0, tm_inc(state, w0, n, xw, 1));  // up, always
            } else if (any_x) {
                for (int i = 0; i < n; ++i) step[i] = xw[i] & ~m[i];  // up unless m
                TM_LIVE_RAISED(live, w0, tm_inc(state, w0, n, step, 1));
            }
            if (any_wanted) {
                TM_SIMD_OR(any_down)
                for (int i = 0; i < n; ++i) {
                    step[i] = ~xw[i] & m[i];  // down
                    any_down |= step[i];
                }
                if (!TM_SKIP_IDLE_DECREMENT || any_down) tm_dec(state, w0, n, step);
            }
        } else if (any_wanted) {
            TM_SIMD_OR(any_down)
            for (int i = 0; i < n; ++i) any_down |= m[i];
            if (!TM_SKIP_IDLE_DECREMENT || any_down) tm_dec(state, w0, n, m);
        }
    }
}

// Type II feedback (Table 2): o = 1 penalises Exclude of every literal that is 0.
TM_DEVICE void tm_type_ii(tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x, tm_u32 *TM_RESTRICT live)
{
    (void)live;
    const tm_u32 *include = INCLUDE_PLANE(state);
    for (int w0 = TM_CLAUSE_THREAD * CHUNK_WORDS; w0 < WORDS; w0 += TM_CLAUSE_THREADS * CHUNK_WORDS) {  // as tm_type_i
        const int n = TM_MIN(CHUNK_WORDS, WORDS - w0);
        tm_u32 up[CHUNK_WORDS];
        tm_u32 any = 0;
        for (int i = 0; i < n; ++i) {
            up[i] = ~x[w0 + i] & ~include[w0 + i] & WORD_MASK(w0 + i);
            any |= up[i];
        }
        if (any) {
            TM_LIVE_RAISED(live, w0, tm_inc(state, w0, n, up, 0));  // excluded automata are below the top
        }
    }
}

// Feedback events counted per clause (feedback_events[3 g + i]), for the training diagnostics: Type Ia
// (Type I on a clause that outputs 1), Type Ib (Type I on a clause that outputs 0) and Type II.
#define TM_EVENT_TYPE_IA 0
#define TM_EVENT_TYPE_IB 1
#define TM_EVENT_TYPE_II 2
#define TM_EVENTS 3

// The feedback of one visit (Algorithm 1, lines 4-11) of clause g to an example with literals x, key `key`
// and per-class target `target`, given the clause's output o there and the tally as read. Every thread of the
// clause's group calls it with the same o and tally, so all take the same branches (the draws depend only on
// the key and g); thread 0 counts the event. `live`: the clause's live chunks, kept up to date (null: none kept).
TM_DEVICE void tm_feedback(long long g, tm_u32 *TM_RESTRICT state, const tm_u32 *TM_RESTRICT x, int o, int tally,
                           int target, tm_u64 key, const tm_u32 *TM_RESTRICT s_pool, tm_u64 *TM_RESTRICT events,
                           tm_u32 *TM_RESTRICT live)
{
    const int v = tm_clip(tally);
    const int direction = v <= target ? 1 : -1;
#if CLASSES > 1
    if (direction < 0 &&
        (tm_u64)tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_PARTICIPATE, 0)) * (CLASSES - 1) >= 4294967296ULL)
        return;  // a non-target class takes part with probability 1/(CLASSES-1)
#endif
    const tm_u64 error = (tm_u64)(target > v ? target - v : v - target);
#if QUADRATIC_UPDATE
    if ((tm_u64)tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_UPDATE, 0)) * ((tm_u64)THRESHOLD * THRESHOLD) >=
        ((error * error) << 32))
        return;  // updated with probability (error / T)^2 (pyTsetlinMachine's regression rule)
#else
    if ((tm_u64)tm_u32_draw(key, tm_ctr((tm_u64)g, TM_PURPOSE_UPDATE, 0)) * (2ULL * THRESHOLD) >= (error << 32))
        return;  // updated with probability error / 2T
#endif
    if (direction * tm_polarity(g % CLAUSES) > 0) {
        tm_type_i(state, x, o, key, g, s_pool, live);
        if (TM_CLAUSE_THREAD == 0) ++events[o ? TM_EVENT_TYPE_IA : TM_EVENT_TYPE_IB];
    } else if (o) {
        tm_type_ii(state, x, live);
        if (TM_CLAUSE_THREAD == 0) ++events[TM_EVENT_TYPE_II];
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

// Stored training outputs of every clause on every example, from scratch: one item per clause and
// TM_REFRESH_OUT_WORDS words of 32 examples (a clause's items in order, so a CPU thread keeps one clause's
// automata in cache).
TM_KERNEL void tm_refresh_outputs(const tm_u32 *ta_state, const tm_u32 *X, int n_examples, tm_u32 *clause_output)
{
    const int out_words = (n_examples + 31) / 32;
    const int items = (out_words + TM_REFRESH_OUT_WORDS - 1) / TM_REFRESH_OUT_WORDS;  // per clause
    TM_PARALLEL_FOR(i, (long long)CLAUSES_TOTAL * items)
    {
        const long long g = i / items;
        const int ow0 = (int)(i % items) * TM_REFRESH_OUT_WORDS;
        const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, g));
        // A clause with no included literal (every clause of a new model) outputs 1 on every example: found by one
        // pass over its words, which stops at its first included literal, instead of a full pass per example.
        int empty = 1;
        for (int w0 = 0; w0 < WORDS && empty; w0 += CHUNK_WORDS)
            empty = !tm_chunk_live(include + w0, TM_MIN(CHUNK_WORDS, WORDS - w0));
        for (int ow = ow0; ow < TM_MIN(ow0 + TM_REFRESH_OUT_WORDS, out_words); ++ow) {
            const int n = TM_MIN(32, n_examples - 32 * ow);  // examples in this word
            tm_u32 bits = 0;
            if (empty) {
                bits = n == 32 ? 0xFFFFFFFFu : (1u << n) - 1u;
            } else {
                for (int b = 0; b < n; ++b)
                    if (tm_clause_output(include, X + ((long long)ow * 32 + b) * WORDS, 1, 0)) bits |= 1u << b;
            }
            clause_output[g * out_words + ow] = bits;
        }
    }
}

// Voting tallies from the stored outputs: class_sum[c, e] = sum_j polarity_j * o*_{j,e}. One item per class and
// TM_TALLY_EXAMPLES examples of one word of stored outputs, so that each clause's word is read once per item: on a
// CPU a whole word (32 examples, summed as a vector); on a GPU one example per thread. Bits past the last example are
// 0 and their sums are not stored.
#if 32 % TM_TALLY_EXAMPLES != 0
#error "TM_TALLY_EXAMPLES must divide 32: an item's examples lie in one word of stored outputs"
#endif
TM_KERNEL void tm_compute_tallies(const tm_u32 *clause_output, int n_examples, int *class_sum)
{
    const int out_words = (n_examples + 31) / 32;
    const int items = (n_examples + TM_TALLY_EXAMPLES - 1) / TM_TALLY_EXAMPLES;  // per class
    TM_PARALLEL_FOR(i, (long long)CLASSES * items)
    {
        const long long c = i / items;
        const int e0 = (int)(i % items) * TM_TALLY_EXAMPLES, shift = e0 & 31;
        int sum[TM_TALLY_EXAMPLES];
        for (int b = 0; b < TM_TALLY_EXAMPLES; ++b) sum[b] = 0;
        for (int j = 0; j < CLAUSES; ++j) {
            const tm_u32 word = clause_output[(c * CLAUSES + j) * out_words + (e0 >> 5)] >> shift;
            const int polarity = tm_polarity(j);
            TM_SIMD
            for (int b = 0; b < TM_TALLY_EXAMPLES; ++b) sum[b] += polarity * (int)((word >> b) & 1u);
        }
        for (int b = 0; b < TM_MIN(TM_TALLY_EXAMPLES, n_examples - e0); ++b)
            class_sum[c * n_examples + e0 + b] = sum[b];
    }
}

// The stream key of every training example for one epoch: keys[e] = key(seed, epoch, e), computed once
// per epoch instead of on every visit.
TM_KERNEL void tm_epoch_keys(tm_u64 seed, tm_u64 epoch, int n_examples, tm_u64 *keys)
{
    TM_PARALLEL_FOR(e, n_examples) { keys[e] = tm_key(seed, epoch, (tm_u64)e); }
}

// Tallies as one clause thread sees them. GPU: the shared class_sum, read as it is and changed by atomic
// adds. CPU build (TM_TALLY_VIEWS): each thread reads a private copy of the batch's tallies (`view`,
// indexed [c * (end - start) + e - start]) that also holds its own changes, collects those changes in
// `delta`, and every TM_TALLY_SYNC_CLAUSES clauses adds them atomically to class_sum and re-reads it (see
// tm_train_batch).
#if TM_TALLY_VIEWS
#define TALLY_READ(c, e) view[(c) * (end - start) + (e) - start]
#define TALLY_ADD(c, e, d)                                  \
    do {                                                    \
        view[(c) * (end - start) + (e) - start] += (d);     \
        delta[(c) * (end - start) + (e) - start] += (d);    \
    } while (0)
#else
#define TALLY_READ(c, e) TM_LOAD_RELAXED(class_sum + (c) * n_examples + (e))
#define TALLY_ADD(c, e, d) TM_ATOMIC_ADD(class_sum + (c) * n_examples + (e), (d))
#endif

// The example that clause g visits i-th in the batch [start, end) (kernels/README.md, "Example order"):
// dataset order, or (STAGGERED_ORDER) the batch rotated to start at its example g mod (end - start), so that
// clauses running side by side visit different examples.
TM_DEVICE int tm_visit(long long g, int start, int end, int i)
{
#if STAGGERED_ORDER
    const int batch = end - start;
    return start + (int)((i + g % batch) % batch);
#else
    (void)g; (void)end;
    return start + i;
#endif
}

// Clause g's share of one batch of Algorithm 1 (asynchronous tallies): it visits the examples [start, end)
// (tm_visit), refreshes the example's tally by the change of its own output, then decides on feedback from
// the possibly stale tally.
TM_DEVICE void tm_train_clause(long long g, tm_u32 *ta_state, const tm_u32 *X, const int *y, int *class_sum,
                               tm_u32 *clause_output, int n_examples, int start, int end,
                               const tm_u64 *keys, const tm_u32 *s_pool, int *view, int *delta,
                               tm_u64 *feedback_events)
{
    (void)class_sum; (void)view; (void)delta;
    const int out_words = (n_examples + 31) / 32;
    const long long c = g / CLAUSES;
    const int polarity = tm_polarity(g % CLAUSES);
    tm_u32 *state = CLAUSE_STATE(ta_state, g);
#if TM_SHARED_STATE
    // The group's copy of the clause's automata in the block's shared memory (one slice of STATE_BITS x WORDS
    // words per group of the block), for the whole batch: every visit then reads and updates shared memory
    // instead of the global planes. Each thread copies the words t, t + TM_CLAUSE_THREADS, ... in and out; the
    // barrier that starts every visit makes the copy visible to the whole group before any of it is read.
    TM_DYNAMIC_SHARED(tm_u32, tm_clause_planes);
    tm_u32 *const planes = state;
    state = tm_clause_planes + (long long)(threadIdx.x / TM_CLAUSE_THREADS) * STATE_BITS * WORDS;
    for (int k = TM_CLAUSE_THREAD; k < STATE_BITS * WORDS; k += TM_CLAUSE_THREADS) state[k] = planes[k];
#endif
    const tm_u32 *include = INCLUDE_PLANE(state);
    tm_u32 *stored = clause_output + g * out_words;
    int hint = 0;
#if TM_LIVE_CHUNKS
    tm_u32 live[LIVE_WORDS];
    tm_live_init(include, live);
#else
    tm_u32 *const live = 0;
#endif
    for (int i = 0; i < end - start; ++i) {
        const int e = tm_visit(g, start, end, i);
        const tm_u32 *x = X + (long long)e * WORDS;
        TM_GROUP_SYNC();  // the group's feedback on the last example is visible to all its threads

        // Refresh (Algorithm 1, lines 12-17, done first as in the paper's kernel); thread 0 of the group owns
        // the stored output and the tally.
#if TM_LIVE_CHUNKS
        const int o = tm_clause_output_live(include, x, live, &hint);
#else
        const int o = tm_clause_output_train(include, x, &hint);
#endif
        int tally = 0;
        if (TM_CLAUSE_THREAD == 0) {
            const tm_u32 bit = 1u << (e & 31);
            const int previous = (stored[e >> 5] & bit) != 0;
            if (o != previous) {
                TALLY_ADD(c, e, polarity * (o - previous));
                stored[e >> 5] ^= bit;
            }
            tally = TALLY_READ(c, e);
        }

        // Feedback (Algorithm 1, lines 4-11), from the tally as thread 0 read it just now.
        tm_feedback(g, state, x, o, TM_GROUP_BCAST(tally), y[c * n_examples + e], keys[e], s_pool,
                    feedback_events + TM_EVENTS * g, live);
    }
#if TM_SHARED_STATE
    TM_GROUP_SYNC();  // the group's last feedback is done: every word is final
    for (int k = TM_CLAUSE_THREAD; k < STATE_BITS * WORDS; k += TM_CLAUSE_THREADS) planes[k] = state[k];
#endif
}

// Synchronous tallies (SYNC_TALLY), one example e at a time in two phases with a barrier between them.
// Phase 1, clause g: refresh its stored output on e; returns the change of its vote on class_sum[c, e].
TM_DEVICE int tm_sync_refresh_clause(long long g, const tm_u32 *ta_state, const tm_u32 *X, tm_u32 *clause_output,
                                     int n_examples, int e)
{
    const int out_words = (n_examples + 31) / 32;
    const int o = tm_clause_output_train(INCLUDE_PLANE(CLAUSE_STATE(ta_state, g)), X + (long long)e * WORDS, 0);
    tm_u32 *word = clause_output + g * out_words + (e >> 5);
    const tm_u32 bit = 1u << (e & 31);
    const int previous = (*word & bit) != 0;
    if (o == previous) return 0;
    if (TM_CLAUSE_THREAD == 0) *word ^= bit;  // thread 0 owns the stored output; only its return value is used
    return tm_polarity(g % CLAUSES) * (o - previous);
}

// Phase 2, clause g: feedback from the exact tally of e (every vote of the class refreshed in phase 1), with
// the output stored in phase 1 (the clause has not changed since).
TM_DEVICE void tm_sync_feedback_clause(long long g, tm_u32 *ta_state, const tm_u32 *X, const int *y,
                                       const int *class_sum, const tm_u32 *clause_output, int n_examples, int e,
                                       const tm_u64 *keys, const tm_u32 *s_pool, tm_u64 *feedback_events)
{
    const int out_words = (n_examples + 31) / 32;
    const long long c = g / CLAUSES;
    const int o = (int)((clause_output[g * out_words + (e >> 5)] >> (e & 31)) & 1u);
    tm_feedback(g, CLAUSE_STATE(ta_state, g), X + (long long)e * WORDS, o, class_sum[c * n_examples + e],
                y[c * n_examples + e], keys[e], s_pool, feedback_events + TM_EVENTS * g, 0);
}

// The two phases as separate kernels, one launch each per step i of a batch (the i-th example of every clause,
// tm_visit): the GPU's barrier between them is the launch boundary (CUDA has no grid-wide barrier in an
// ordinary launch). The CPU build runs both phases of a whole batch in one parallel region instead
// (tm_train_batch).
TM_KERNEL void tm_sync_refresh(const tm_u32 *ta_state, const tm_u32 *X, int *class_sum, tm_u32 *clause_output,
                               int n_examples, int start, int end, int i)
{
    TM_PARALLEL_FOR_CLAUSES(g, CLAUSES_TOTAL)
    {
        const int e = tm_visit(g, start, end, i);
        const int change = tm_sync_refresh_clause(g, ta_state, X, clause_output, n_examples, e);
        if (change && TM_CLAUSE_THREAD == 0) TM_ATOMIC_ADD(class_sum + (g / CLAUSES) * n_examples + e, change);
    }
}

TM_KERNEL void tm_sync_feedback(tm_u32 *ta_state, const tm_u32 *X, const int *y, const int *class_sum,
                                const tm_u32 *clause_output, int n_examples, int start, int end, int i,
                                const tm_u64 *keys, const tm_u32 *s_pool, tm_u64 *feedback_events)
{
    TM_PARALLEL_FOR_CLAUSES(g, CLAUSES_TOTAL)
    tm_sync_feedback_clause(g, ta_state, X, y, class_sum, clause_output, n_examples, tm_visit(g, start, end, i),
                            keys, s_pool, feedback_events);
}

#if TM_TALLY_VIEWS
#ifndef TM_TALLY_SYNC_CLAUSES
#define TM_TALLY_SYNC_CLAUSES 16
#endif
// Adds this thread's collected changes to the shared tallies, then re-reads them into its view.
TM_DEVICE void tm_tally_sync(int *class_sum, int n_examples, int start, int batch, int *view, int *delta)
{
    for (int i = 0; i < CLASSES * batch; ++i) {
        int *shared = class_sum + (long long)(i / batch) * n_examples + start + i % batch;
        if (delta[i]) TM_ATOMIC_ADD(shared, delta[i]);
        delta[i] = 0;
        view[i] = TM_LOAD_RELAXED(shared);
    }
}
#endif

// One batch: every clause is a thread (tm_train_clause); the kernel boundary is the barrier between
// batches. On CPU cores the threads share the tallies through private views synchronised every
// TM_TALLY_SYNC_CLAUSES clauses: with every clause reading and writing the shared tallies directly, two
// cores working on one class spent a third of their time passing the tallies' cache lines back and forth
// (Bike Sharing: 1,280 clauses on 100 tallies). A thread then sees another thread's changes at most 16 of
// that thread's clauses late (a GPU runs thousands of clause threads at once, so its tallies are staler);
// with one thread every change is seen at once, exactly as before.
#if SYNC_TALLY && !TM_TALLY_VIEWS
// The GPU build with synchronous tallies has no tm_train_batch: the host launches tm_sync_refresh and
// tm_sync_feedback once per example.
#else
TM_KERNEL void tm_train_batch(tm_u32 *ta_state, const tm_u32 *X, const int *y, int *class_sum,
                              tm_u32 *clause_output, int n_examples, int start, int end, const tm_u64 *keys,
                              const tm_u32 *s_pool, tm_u64 *feedback_events)
{
#if SYNC_TALLY
    // Synchronous tallies on CPU cores: per step i (the i-th example of every clause, tm_visit), phase 1
    // (every clause refreshed), a barrier, phase 2 (feedback). Both loops hand every thread the same clauses
    // (static schedule, same count, same region). In dataset order every clause is on the same example e: each
    // thread adds its summed vote changes once per class, and its phase 2 of e and its phase 1 of e + 1 touch
    // only its own clauses and tallies no other thread reads then, so they need no barrier between them. In
    // staggered order each clause adds its own change, and a barrier after phase 2 keeps one thread's refresh
    // of step i + 1 from changing a tally another thread still reads in step i.
    TM_PARALLEL_REGION
    {
        for (int i = 0; i < end - start; ++i) {
#if STAGGERED_ORDER
            TM_FOR_NOWAIT(g, CLAUSES_TOTAL)
            {
                const int e = tm_visit(g, start, end, i);
                const int change = tm_sync_refresh_clause(g, ta_state, X, clause_output, n_examples, e);
                if (change) TM_ATOMIC_ADD(class_sum + (g / CLAUSES) * n_examples + e, change);
            }
#else
            const int e = start + i;
            int change[CLASSES];
            for (int c = 0; c < CLASSES; ++c) change[c] = 0;
            TM_FOR_NOWAIT(g, CLAUSES_TOTAL)
            change[g / CLAUSES] += tm_sync_refresh_clause(g, ta_state, X, clause_output, n_examples, e);
            for (int c = 0; c < CLASSES; ++c)
                if (change[c]) TM_ATOMIC_ADD(class_sum + (long long)c * n_examples + e, change[c]);
#endif
            TM_BARRIER;
            TM_FOR_NOWAIT(g, CLAUSES_TOTAL)
            tm_sync_feedback_clause(g, ta_state, X, y, class_sum, clause_output, n_examples,
                                    tm_visit(g, start, end, i), keys, s_pool, feedback_events);
#if STAGGERED_ORDER
            TM_BARRIER;
#endif
        }
    }
#elif TM_TALLY_VIEWS
    const int batch = end - start;
    TM_PARALLEL_REGION
    {
        int *view = (int *)malloc(2 * sizeof(int) * CLASSES * batch);
        int *delta = view + CLASSES * batch;
        for (int i = 0; i < CLASSES * batch; ++i) delta[i] = 0;
        tm_tally_sync(class_sum, n_examples, start, batch, view, delta);
        int since = 0;
        TM_FOR_DYNAMIC_NOWAIT(g, CLAUSES_TOTAL)
        {
            tm_train_clause(g, ta_state, X, y, class_sum, clause_output, n_examples, start, end, keys, s_pool,
                            view, delta, feedback_events);
            if (++since == TM_TALLY_SYNC_CLAUSES) {
                tm_tally_sync(class_sum, n_examples, start, batch, view, delta);
                since = 0;
            }
        }
        tm_tally_sync(class_sum, n_examples, start, batch, view, delta);
        free(view);
    }
#else
    TM_PARALLEL_FOR_CLAUSES(g, CLAUSES_TOTAL)
    tm_train_clause(g, ta_state, X, y, class_sum, clause_output, n_examples, start, end, keys, s_pool, 0, 0,
                    feedback_events);
#endif
}
#endif

// Included literals of every clause, for the training diagnostics: counts[2 g] of the literals below
// `first_negated` (the features), counts[2 g + 1] of the others (their negations, with append_negated).
TM_KERNEL void tm_include_counts(const tm_u32 *ta_state, int first_negated, int *counts)
{
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, g));
        int below = 0, above = 0;
        for (int w = 0; w < WORDS; ++w) {
            const int lanes = first_negated - 32 * w;  // lanes of word w below first_negated
            const tm_u32 low = lanes >= 32 ? 0xFFFFFFFFu : (lanes <= 0 ? 0u : (1u << lanes) - 1u);
            const tm_u32 inc = include[w] & WORD_MASK(w);
            below += TM_POPCOUNT(inc & low);
            above += TM_POPCOUNT(inc & ~low);
        }
        counts[2 * g] = below;
        counts[2 * g + 1] = above;
    }
}

// Inference: clipped class sums, empty clauses voting 0. One group of TM_CLAUSE_THREADS threads per (class,
// example): thread t takes clauses t, t + TM_CLAUSE_THREADS, ..., and the group adds up their votes.
TM_KERNEL void tm_class_sums(const tm_u32 *ta_state, const tm_u32 *X, int n_examples, int *class_sum)
{
    TM_PARALLEL_FOR_CLAUSES(i, (long long)CLASSES * n_examples)
    {
        const long long c = i / n_examples, e = i % n_examples;
        const tm_u32 *x = X + e * WORDS;
        int sum = 0;
        for (int j = TM_CLAUSE_THREAD; j < CLAUSES; j += TM_CLAUSE_THREADS) {
            const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, c * CLAUSES + j));
            sum += tm_polarity(j) * tm_clause_output(include, x, 0, 0);
        }
        sum = TM_GROUP_SUM(sum);
        if (TM_CLAUSE_THREAD == 0) class_sum[i] = tm_clip(sum);
    }
}

// Inference from a compacted model (the CPU build's; the GPU scans the planes with tm_class_sums). A trained
// clause includes a few literals spread over many words: on IMDb about 110 of 10,000 literals, nearly all of
// them negated. tm_class_sums reads every word of every clause's include plane up to the first violated one,
// clause after clause 8 planes apart, once per example. Here each clause keeps only its include words that are
// not 0 (index and bits, contiguous), and a block of TM_INFER_BLOCK examples goes through every clause of a
// class while that clause's words stay in cache: 10x faster on IMDb at 7,000 clauses, 40x at 15,000, 3x on WSD
// apple (benchmarks/README.md, "Inference"). The outputs equal tm_class_sums' bit for bit: a clause is 0 at the
// first kept word with an included literal that is 0, and an empty clause (no word kept) votes 0.

// words[g] = the include words of clause g that are not 0.
TM_KERNEL void tm_include_word_counts(const tm_u32 *ta_state, int *words)
{
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, g));
        int n = 0;
        for (int w = 0; w < WORDS; ++w) n += include[w] != 0;
        words[g] = n;
    }
}

// Clause g's include words that are not 0, at word_index/word_bits[offsets[g] .. offsets[g+1]-1] in order
// (offsets: the prefix sums of tm_include_word_counts, CLAUSES_TOTAL + 1 of them).
TM_KERNEL void tm_compact_includes(const tm_u32 *ta_state, const long long *offsets, int *word_index,
                                   tm_u32 *word_bits)
{
    TM_PARALLEL_FOR(g, CLAUSES_TOTAL)
    {
        const tm_u32 *include = INCLUDE_PLANE(CLAUSE_STATE(ta_state, g));
        long long k = offsets[g];
        for (int w = 0; w < WORDS; ++w)
            if (include[w]) {
                word_index[k] = w;
                word_bits[k++] = include[w];
            }
    }
}

#ifndef TM_INFER_BLOCK
#define TM_INFER_BLOCK 32
#endif

// Inference as tm_class_sums, from the compacted include words.
TM_KERNEL void tm_class_sums_compact(const long long *offsets, const int *word_index, const tm_u32 *word_bits,
                                     const tm_u32 *X, int n_examples, int *class_sum)
{
    const long long blocks = ((long long)n_examples + TM_INFER_BLOCK - 1) / TM_INFER_BLOCK;
    TM_PARALLEL_FOR(i, (long long)CLASSES * blocks)
    {
        const long long c = i / blocks, e0 = (i % blocks) * TM_INFER_BLOCK;
        const int m = (int)TM_MIN((long long)TM_INFER_BLOCK, n_examples - e0);
        int sum[TM_INFER_BLOCK];
        for (int b = 0; b < m; ++b) sum[b] = 0;
        for (int j = 0; j < CLAUSES; ++j) {
            const long long g = c * CLAUSES + j;
            const long long first = offsets[g], last = offsets[g + 1];
            if (first == last) continue;  // empty: votes 0 at inference
            const int polarity = tm_polarity(j);
            for (int b = 0; b < m; ++b) {
                const tm_u32 *x = X + (e0 + b) * WORDS;
                long long k = first;
                while (k < last && !(word_bits[k] & ~x[word_index[k]])) ++k;
                if (k == last) sum[b] += polarity;
            }
        }
        for (int b = 0; b < m; ++b) class_sum[c * n_examples + e0 + b] = tm_clip(sum[b]);
    }
}
