// A CPU stand-in for the CUDA features that the GPU side of kernels/tm.cu uses, for the tests only
// (tests/test_cuda_glue.py, "simulated warps"). Included before the kernel text, it makes the host compiler
// take the __CUDACC__ side of tm_portability.cuh, so the code that runs on a GPU runs here: every thread of a
// launch is a std::thread with its own threadIdx and blockIdx, atomics are real atomics, and the warp
// intrinsics (__syncwarp, __any_sync, __ballot_sync, __shfl_sync, __shfl_xor_sync) make the threads their mask
// names meet, as on a GPU. A thread that calls an intrinsic its mask partners never reach (divergence) waits in vain: after
// SIM_WAIT_S the simulation records the error, stops waiting anywhere, and sim_error() reports it.
// Groups of several warps (TM_CLAUSE_THREADS 64 to 1,024) also use the block's barriers and shared memory:
// __syncthreads() is a meeting of every thread of the block, TM_BAR_SYNC(id, count) (bar.sync on a GPU) a
// meeting of `count` threads of the block at barrier `id`, and TM_SHARED_ARRAY gives each block of the launch its
// own array (__shared__ on a GPU), filled with 0xA5 bytes as a reminder that shared memory starts undefined;
// TM_DYNAMIC_SHARED likewise the block's dynamic shared memory, of the bytes the host set for the next launch
// (sim_set_shared, which the fake PyCUDA calls with a launch's `shared=`).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define __CUDACC__ 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct sim_dim3 {
    unsigned x, y, z;
};
static thread_local sim_dim3 threadIdx, blockIdx;
static sim_dim3 blockDim, gridDim;  // of the launch under way (one at a time)

template <typename T> static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }

#ifndef SIM_WAIT_S
#define SIM_WAIT_S 10
#endif

namespace sim {

// One meeting of the threads a mask names in one warp: their values in, every value (and the vote) out.
struct Meeting {
    std::condition_variable cv;
    unsigned long long round = 0;
    int arrived = 0;
    long long in[32] = {}, out[32] = {};
};

// One barrier of a block: the threads that have arrived in this round, and the warps they come from.
struct Barrier {
    std::condition_variable cv;
    unsigned long long round = 0;
    unsigned count = 0;  // the threads it waits for (the first arrival's count)
    unsigned arrived = 0;
    std::set<unsigned> warps;
};

static std::mutex lock;
static std::map<std::pair<unsigned long long, unsigned>, Meeting> meetings;  // (warp, mask) -> meeting
static std::map<std::pair<unsigned, unsigned>, Barrier> barriers;             // (block, barrier id) -> barrier
static std::map<std::pair<unsigned, std::string>, std::vector<unsigned char>> shared;  // (block, name) -> bytes
static std::string error;  // the first failure; once set, no thread waits any more
static size_t dynamic_shared = 0;  // bytes of dynamic shared memory per block of the launch under way

// Called with `lock` held.
static void fail(const std::string &what) {
    if (!error.empty()) return;
    error = what;
    for (auto &m : meetings) m.second.cv.notify_all();  // nobody waits for a meeting any more
    for (auto &b : barriers) b.second.cv.notify_all();
}

static unsigned lane() { return threadIdx.x & 31u; }

// Every thread named in `mask` (of this thread's warp) calls meet with its value; each returns all of them.
static void meet(unsigned mask, long long value, long long *values) {
    const unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    std::unique_lock<std::mutex> guard(lock);
    if (!(mask >> lane() & 1u)) fail("a thread called a warp intrinsic with a mask that does not name it");
    if (!error.empty()) return;
    Meeting &m = meetings[{warp, mask}];
    const unsigned long long round = m.round;
    m.in[lane()] = value;
    if (++m.arrived == __builtin_popcount(mask)) {
        for (int i = 0; i < 32; ++i) m.out[i] = m.in[i];
        m.arrived = 0;
        ++m.round;
        m.cv.notify_all();
    } else if (!m.cv.wait_for(guard, std::chrono::seconds(SIM_WAIT_S),
                              [&] { return m.round != round || !error.empty(); })) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "warp %llu, mask %08x: %d of %d threads met in %d s (divergence)", warp,
                      mask, m.arrived, __builtin_popcount(mask), SIM_WAIT_S);
        fail(msg);
    }
    if (!error.empty()) return;
    for (int i = 0; i < 32; ++i) values[i] = m.out[i];
}

// Barrier `id` of this thread's block, for `count` threads (a multiple of the warp size, at most the block): a
// round ends when `count` threads have arrived, and they must come from count / 32 warps (whole warps, as a GPU
// counts them; threads of another group arriving at the same barrier would make more).
static void barrier(unsigned id, unsigned count) {
    std::unique_lock<std::mutex> guard(lock);
    if (id > 15 || count == 0 || count % 32 || count > blockDim.x)
        fail("a barrier with an id over 15 or a count that is not a multiple of 32 up to the block's threads");
    if (!error.empty()) return;
    Barrier &b = barriers[{blockIdx.x, id}];
    if (b.arrived == 0) b.count = count;
    if (b.count != count) fail("threads met at one barrier with different counts");
    b.warps.insert(threadIdx.x >> 5);
    if (b.warps.size() > count / 32) fail("threads of more warps than its count met at one barrier");
    if (!error.empty()) return;
    const unsigned long long round = b.round;
    if (++b.arrived == b.count) {
        b.arrived = 0;
        b.warps.clear();
        ++b.round;
        b.cv.notify_all();
    } else if (!b.cv.wait_for(guard, std::chrono::seconds(SIM_WAIT_S),
                              [&] { return b.round != round || !error.empty(); })) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "block %u, barrier %u: %u of %u threads met in %d s (divergence)", blockIdx.x,
                      id, b.arrived, b.count, SIM_WAIT_S);
        fail(msg);
    }
}

// This block's array `name` of n elements (__shared__ on a GPU).
template <typename T> static T *block_shared(const char *name, size_t n) {
    std::lock_guard<std::mutex> guard(lock);
    std::vector<unsigned char> &bytes = shared[{blockIdx.x, name}];
    if (bytes.empty()) bytes.assign(n * sizeof(T), 0xA5);
    return reinterpret_cast<T *>(bytes.data());
}

// This block's dynamic shared memory (extern __shared__ on a GPU); a launch that set none has none to read, a host
// error that a GPU would answer with garbage or a fault: here the process stops with the reason.
template <typename T> static T *dynamic_block_shared() {
    if (dynamic_shared < sizeof(T)) {
        std::fprintf(stderr, "simulated GPU: a kernel uses dynamic shared memory, but its launch gave none\n");
        std::abort();
    }
    return block_shared<T>("<dynamic>", dynamic_shared / sizeof(T));
}

// One launch: grid x block threads, each running body() with its own threadIdx and blockIdx.
static void launch(unsigned grid, unsigned block, const std::function<void()> &body) {
    if (grid == 0 || block == 0 || block > 1024) {  // a GPU refuses such a launch
        std::lock_guard<std::mutex> guard(lock);
        fail("a launch with no blocks, or with blocks of none or more than 1,024 threads (CUDA's limit)");
        return;
    }
    blockDim = {block, 1, 1};
    gridDim = {grid, 1, 1};
    std::vector<std::thread> threads;
    threads.reserve((size_t)grid * block);
    for (unsigned b = 0; b < grid; ++b)
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([=] {
                blockIdx = {b, 0, 0};
                threadIdx = {t, 0, 0};
                body();
            });
    for (auto &t : threads) t.join();
    meetings.clear();
    barriers.clear();
    shared.clear();
}

}  // namespace sim

static inline void __syncthreads() { sim::barrier(0, blockDim.x); }
#define TM_BAR_SYNC(id, count) sim::barrier((unsigned)(id), (unsigned)(count))
#define TM_SHARED_ARRAY(type, name, n) type *name = sim::block_shared<type>(#name, (n))
#define TM_DYNAMIC_SHARED(type, name) type *name = sim::dynamic_block_shared<type>()
extern "C" void sim_set_shared(unsigned long long bytes) { sim::dynamic_shared = (size_t)bytes; }

static inline void __syncwarp(unsigned mask) {
    long long v[32];
    sim::meet(mask, 0, v);
}

static inline unsigned __ballot_sync(unsigned mask, int p) {
    long long v[32] = {};
    sim::meet(mask, p != 0, v);
    unsigned out = 0;
    for (int i = 0; i < 32; ++i)
        if ((mask >> i & 1u) && v[i]) out |= 1u << i;
    return out;
}

static inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }

// The value of lane (this thread's lane rounded down to a multiple of width) + src_lane % width.
static inline int __shfl_sync(unsigned mask, int value, int src_lane, int width = 32) {
    long long v[32] = {};
    sim::meet(mask, value, v);
    const unsigned src = (sim::lane() & ~(unsigned)(width - 1)) + ((unsigned)src_lane & (unsigned)(width - 1));
    if (!(mask >> src & 1u)) {
        std::lock_guard<std::mutex> guard(sim::lock);
        sim::fail("__shfl_sync read a lane that its mask does not name");
    }
    return (int)v[src];
}

// The value of lane (this thread's lane) ^ lane_mask, within segments of `width` lanes.
static inline int __shfl_xor_sync(unsigned mask, int value, int lane_mask, int width = 32) {
    long long v[32] = {};
    sim::meet(mask, value, v);
    const unsigned src = sim::lane() ^ (unsigned)lane_mask;
    if ((src & ~(unsigned)(width - 1)) != (sim::lane() & ~(unsigned)(width - 1)) || !(mask >> src & 1u)) {
        std::lock_guard<std::mutex> guard(sim::lock);
        sim::fail("__shfl_xor_sync read a lane outside its segment or its mask");
    }
    return (int)v[src];
}

extern "C" const char *sim_error(void) { return sim::error.c_str(); }
