// Portability layer: the only place where the GPU and CPU builds of tm.cu differ.
//
// GPU (nvcc, via PyCUDA): kernels are __global__ functions; each clause (or example) is a CUDA thread
// in a grid-stride loop.
// CPU (host C++ compiler with OpenMP): the same kernels become plain extern "C" functions; each CUDA
// thread becomes an iteration of an OpenMP parallel loop, atomicAdd a relaxed compiler atomic.
#pragma once

typedef unsigned int tm_u32;
typedef unsigned long long tm_u64;

#ifdef __CUDACC__

#define TM_DEVICE __device__ __forceinline__
// TM_KERNEL_BOUNDS (below): for a group of more than 128 threads per clause, a block of that many threads.
#define TM_KERNEL extern "C" __global__ TM_KERNEL_BOUNDS
// One CUDA thread per item, grid-stride so any launch size covers all items.
#define TM_PARALLEL_FOR(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)blockDim.x * gridDim.x)
#define TM_ATOMIC_ADD(ptr, v) atomicAdd((ptr), (v))
// Loops over a chunk of literal words: one 64-literal pair at a time on a GPU thread (registers are
// scarce), vectorised chunks on a CPU core.
#define TM_SIMD
#define TM_SIMD_OR(var)
#define TM_CHUNK_PAIRS 1
// Words of stored outputs (32 examples each) per work item of tm_refresh_outputs: one per GPU thread.
#define TM_REFRESH_OUT_WORDS 1
// Examples per work item of tm_compute_tallies: one per GPU thread.
#define TM_TALLY_EXAMPLES 1
#define TM_SKIP_IDLE_DECREMENT 1  // tm_type_i: a chunk whose 1/s mask selects no lane above 0 decrements nothing
#define TM_RESTRICT __restrict__
// The tally may be changed by other clause threads at any moment; a volatile read is what
// Algorithm 1 asks for: the current, possibly stale, value.
#define TM_LOAD_RELAXED(ptr) (*(volatile const int *)(ptr))
#define TM_TALLY_VIEWS 0
#define TM_POPCOUNT(x) __popc(x)
// Threads per clause in the training kernels, and per class and example at inference (TM_CLAUSE_THREADS, from
// the host; default 1). With more, a group of that many consecutive threads shares a clause: thread t of the
// group takes chunks of words t, t + TM_CLAUSE_THREADS, ... of the clause's literals; the group agrees on the
// clause output by a vote, and its thread 0 alone touches the clause's stored output, tally and counters. At
// inference thread t takes every TM_CLAUSE_THREADS-th clause (kernels/README.md, "Threads per clause"). Up to
// 32 a group lies in one warp and agrees by warp intrinsics; 64 to 1,024 are groups of 2 to 32 warps that agree
// through shared memory and a barrier of the group (below); 1,024 is CUDA's limit of threads per block.
#ifndef TM_CLAUSE_THREADS
#define TM_CLAUSE_THREADS 1
#endif
#ifndef TM_LIVE_CHUNKS
#define TM_LIVE_CHUNKS 0
#endif
#if TM_CLAUSE_THREADS < 1 || TM_CLAUSE_THREADS > 1024 || (TM_CLAUSE_THREADS & (TM_CLAUSE_THREADS - 1)) != 0
#error "TM_CLAUSE_THREADS must be a power of two from 1 to 1024"
#endif
#if TM_CLAUSE_THREADS > 1
#define TM_CLAUSE_THREAD ((int)(threadIdx.x & (TM_CLAUSE_THREADS - 1)))
// One group per clause: the threads of a group get the same g, so the group runs every iteration together.
#define TM_PARALLEL_FOR_CLAUSES(g, n)                                                                     \
    for (long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / TM_CLAUSE_THREADS;          \
         g < (long long)(n); g += (long long)blockDim.x * gridDim.x / TM_CLAUSE_THREADS)
#endif
// A block's shared arrays: TM_SHARED_ARRAY of a size fixed at compile time; TM_DYNAMIC_SHARED, the block's
// dynamic shared memory, of the size the host gives the launch (`shared=` in PyCUDA). The simulated GPU of the
// tests (tests/gpu/cuda_warp_sim.hpp) brings its own.
#ifndef TM_SHARED_ARRAY
#define TM_SHARED_ARRAY(type, name, n) __shared__ type name[n]
#endif
#ifndef TM_DYNAMIC_SHARED
#define TM_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
#if TM_CLAUSE_THREADS > 1 && TM_CLAUSE_THREADS <= 32
// The group's threads as a mask of warp lanes (a group never straddles two warps: its size divides 32).
#define TM_GROUP_MASK                                                                                    \
    (TM_CLAUSE_THREADS == 32 ? 0xFFFFFFFFu                                                               \
                             : (((1u << (TM_CLAUSE_THREADS & 31)) - 1u)                                  \
                                << (threadIdx.x & 31 & ~(TM_CLAUSE_THREADS - 1))))
#define TM_GROUP_ANY(p) __any_sync(TM_GROUP_MASK, (p))
#define TM_GROUP_BALLOT(p) (__ballot_sync(TM_GROUP_MASK, (p)) & TM_GROUP_MASK)
#define TM_GROUP_FIRST(ballot) (__ffs(ballot) - 1)  // the warp lane of the lowest thread that voted yes
#define TM_GROUP_SHFL(v, warp_lane) __shfl_sync(TM_GROUP_MASK, (v), (warp_lane))
#define TM_GROUP_BCAST(v) __shfl_sync(TM_GROUP_MASK, (v), 0, TM_CLAUSE_THREADS)  // thread 0's value
#define TM_GROUP_SYNC() __syncwarp(TM_GROUP_MASK)
// The sum of v over the group, in every thread (a butterfly of shuffles within the group).
TM_DEVICE int tm_group_sum(int v)
{
    for (int offset = TM_CLAUSE_THREADS / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(TM_GROUP_MASK, v, offset, TM_CLAUSE_THREADS);
    return v;
}
#define TM_GROUP_SUM(v) tm_group_sum(v)
#elif TM_CLAUSE_THREADS > 32
// A group of several warps: 64 (2 warps; two groups in each of the CUDA backend's blocks of BLOCK = 128 threads)
// or 128 to 1,024 (4 to 32 warps, a whole block: the host launches the kernels that use groups with blocks of
// TM_CLAUSE_THREADS threads from 128 on, asynctm.backends.cuda). So a group never straddles two blocks, and
// every thread of a group runs the same iterations and calls the group operations below in the same order (no
// divergence across a barrier). A group operation reduces within each warp by shuffles, lane 0 of each warp
// puts the warp's result in the block's shared slot of that warp, a barrier of the group, and every thread
// combines its group's slots in the same order; a barrier before the slots are written keeps them from being
// overwritten while a slow warp of the group still reads the previous operation's values.
// The barrier of the group: from 128 on the block's __syncthreads(); for 64 the named barrier 1 + threadIdx.x / 64
// (bar.sync with a count of 64: the group's two warps, so the other group of the block does not wait; 0 is
// __syncthreads' barrier, and a block of at most 960 threads stays within the 16 barriers of a block). Both
// order the memory accesses of the threads they join, as __syncwarp does for a group within a warp.
// The simulated GPU of the tests (tests/gpu/cuda_warp_sim.hpp) brings its own TM_BAR_SYNC.
#ifndef TM_BAR_SYNC
#define TM_BAR_SYNC(id, count) asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory")
#endif
#if TM_CLAUSE_THREADS >= 128
#define TM_GROUP_SYNC() __syncthreads()
#else
#define TM_GROUP_SYNC() TM_BAR_SYNC(1 + (int)(threadIdx.x / 64), 64)
#endif
#define TM_GROUP_WARPS (TM_CLAUSE_THREADS / 32)
// The sum (take_min 0) or minimum (take_min 1) of v over the group, the same in every thread.
TM_DEVICE int tm_group_combine(int v, int take_min)
{
    TM_SHARED_ARRAY(int, slots, 32);  // one per warp of the block: 32 ints cover CUDA's 1,024 threads per block
    for (int offset = 16; offset > 0; offset /= 2) {
        const int other = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
        v = take_min ? (other < v ? other : v) : v + other;
    }
    TM_GROUP_SYNC();  // every thread of the group has read the slots of its previous operation
    if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
    TM_GROUP_SYNC();
    const int first = (int)((threadIdx.x & ~(unsigned)(TM_CLAUSE_THREADS - 1)) >> 5);  // the group's first warp
    v = slots[first];
    for (int k = 1; k < TM_GROUP_WARPS; ++k) {
        const int other = slots[first + k];
        v = take_min ? (other < v ? other : v) : v + other;
    }
    return v;
}
#define TM_GROUP_SUM(v) tm_group_combine((v), 0)
#define TM_GROUP_MIN(v) tm_group_combine((v), 1)
#define TM_GROUP_BCAST(v) tm_group_combine(TM_CLAUSE_THREAD == 0 ? (v) : 0, 0)  // thread 0's value
#endif
// Groups of 256 to 1,024 threads run in blocks of that many: the kernels promise nvcc such blocks
// (__launch_bounds__), so that it keeps each thread's registers within the multiprocessor's share for a block of
// 1,024 threads (64 each) instead of failing the launch. Up to 128 threads nothing changes.
#if TM_CLAUSE_THREADS > 128
#define TM_KERNEL_BOUNDS __launch_bounds__(TM_CLAUSE_THREADS)
#else
#define TM_KERNEL_BOUNDS
#endif

#else  // CPU build

// The 1/s pool's 64-bit words are read as 32-bit halves, low half first (tm_s_masks), as on every GPU.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the CPU build of tm.cu needs a little-endian CPU"
#endif
#include <stdlib.h>
#include <omp.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define TM_DEVICE static inline __attribute__((always_inline))
#define TM_KERNEL extern "C"
static int tm_cpu_threads = 1;
extern "C" void tm_set_threads(int n) { tm_cpu_threads = n > 0 ? n : 1; }
extern "C" int tm_get_threads(void) { return tm_cpu_threads; }
// Each CUDA thread becomes one iteration. Static contiguous blocks: neighbouring clauses share cache
// lines of TA state and tallies, and interleaving them across cores costs far more (false sharing)
// than the uneven work per clause.
#define TM_PARALLEL_FOR(i, n) \
    _Pragma("omp parallel for schedule(static) num_threads(tm_cpu_threads)") for (long long i = 0; i < (long long)(n); ++i)
#define TM_ATOMIC_ADD(ptr, v) __atomic_fetch_add((ptr), (v), __ATOMIC_RELAXED)
#define TM_SIMD _Pragma("omp simd")
#define TM_SIMD_OR(var) _Pragma(TM_STR(omp simd reduction(| : var)))
#define TM_STR(x) #x
#define TM_CHUNK_PAIRS 8
// Words of stored outputs per work item of tm_refresh_outputs: 2,048 examples, so that a clause's emptiness is
// tested once per 2,048 examples (IMDb's 25,000 rows: 13 times per clause, not 782) and a thread still has many
// items.
#define TM_REFRESH_OUT_WORDS 64
// Examples per work item of tm_compute_tallies: a word of stored outputs, so each clause's word is read once for 32
// examples instead of once per example (IMDb's 14,000 clauses lie a row of stored outputs apart).
#define TM_TALLY_EXAMPLES 32
// A chunk's 8 pairs as one vector (GCC's and Clang's vector extensions: AVX-512 or two AVX2 halves where the CPU
// has them, plain words elsewhere), and its 16 words.
typedef tm_u64 tm_v8u64 __attribute__((vector_size(8 * sizeof(tm_u64))));
typedef tm_u32 tm_v16u32 __attribute__((vector_size(16 * sizeof(tm_u32))));
#define TM_SKIP_IDLE_DECREMENT 0  // a chunk of 16 words nearly always has a lane to decrement: no test
#define TM_RESTRICT __restrict__
#define TM_LOAD_RELAXED(ptr) __atomic_load_n((ptr), __ATOMIC_RELAXED)
// A whole chunk of 16 words kept in a vector (a CPU chunk's planes and masks in Type I, its words in the scans):
// loaded and stored as one, and tested for a lane that is not 0 in registers (a mask test with AVX-512, vptest with
// AVX2). Reducing an array that was just stored as one vector read it back in halves, which stalled on the store.
#define TM_CHUNK_VECTORS 1
// Vectors pass by pointer: GCC warns of the ABI of a 64-byte vector passed by value where AVX-512 is off.
TM_DEVICE void tm_load16(tm_v16u32 *v, const tm_u32 *p) { __builtin_memcpy(v, p, sizeof *v); }
TM_DEVICE void tm_store16(tm_u32 *p, const tm_v16u32 *v) { __builtin_memcpy(p, v, sizeof *v); }
TM_DEVICE int tm_any16(const tm_v16u32 *v)
{
#if defined(__AVX512F__)
    const __m512i w = (__m512i)*v;
    return _mm512_test_epi32_mask(w, w) != 0;
#elif defined(__AVX2__)
    __m256i half[2];
    __builtin_memcpy(half, v, sizeof *v);
    const __m256i w = _mm256_or_si256(half[0], half[1]);
    return !_mm256_testz_si256(w, w);
#else
    tm_u32 any = 0;
    for (int i = 0; i < 16; ++i) any |= (*v)[i];
    return any != 0;
#endif
}
#define TM_POPCOUNT(x) __builtin_popcount(x)
// Training batches (tm_train_batch): one parallel region in which each thread takes its share of the
// clauses and reaches the shared tallies through a private view (TM_TALLY_VIEWS).
#define TM_TALLY_VIEWS 1
#define TM_PARALLEL_REGION _Pragma("omp parallel num_threads(tm_cpu_threads)")
#define TM_FOR_NOWAIT(i, n) \
    _Pragma("omp for schedule(static) nowait") for (long long i = 0; i < (long long)(n); ++i)
#define TM_BARRIER _Pragma("omp barrier")
// The asynchronous batch's clauses go to the threads in contiguous chunks as each thread frees up (dynamic), so
// a thread whose core is shared with other work (another process, a busy sibling hyperthread) takes fewer of them
// instead of holding up the batch's end: at least 4 chunks per thread, at most 8 clauses each (a chunk boundary
// is the only place two threads touch neighbouring clauses). One thread still runs clause 0, 1, ... in order.
TM_DEVICE long long tm_clause_chunk(long long n)
{
    const long long chunk = n / (4LL * tm_cpu_threads);
    return chunk < 1 ? 1 : chunk > 8 ? 8 : chunk;
}
#define TM_XSTR(x) TM_STR(x)  // the macros in x (CLAUSES_TOTAL) expanded before it becomes the pragma's text
#define TM_FOR_DYNAMIC_NOWAIT(i, n) \
    _Pragma(TM_XSTR(omp for schedule(dynamic, tm_clause_chunk(n)) nowait)) for (long long i = 0; i < (long long)(n); ++i)
// No warps: one loop iteration per clause, whatever the host asked for the GPU; the automata stay where they are.
#undef TM_CLAUSE_THREADS
#define TM_CLAUSE_THREADS 1
#undef TM_SHARED_STATE
#define TM_SHARED_STATE 0
// The training scan tests only the chunks that hold an included literal (tm.cu, tm_clause_output_live).
#undef TM_LIVE_CHUNKS
#define TM_LIVE_CHUNKS 1

#endif

#if TM_CLAUSE_THREADS == 1
#define TM_CLAUSE_THREAD 0
#define TM_GROUP_ANY(p) (p)
#define TM_GROUP_BCAST(v) (v)
#define TM_GROUP_SUM(v) (v)
#define TM_GROUP_SYNC()
#define TM_PARALLEL_FOR_CLAUSES(g, n) TM_PARALLEL_FOR(g, n)
#endif
