// Counter-based random numbers (no state, no curand): every draw is a pure function of
// (seed, epoch, example, clause, purpose, index), so the CPU and GPU builds draw the same numbers
// whatever the thread schedule. See kernels/README.md, "Random numbers".
#pragma once
#include "tm_portability.cuh"

#define TM_GOLDEN 0x9E3779B97F4A7C15ULL
#define TM_PURPOSE_PARTICIPATE 0ULL
#define TM_PURPOSE_UPDATE 1ULL
#define TM_PURPOSE_MASK 2ULL

// SplitMix64's finaliser: a bijective 64-bit mixer with full avalanche.
TM_DEVICE tm_u64 tm_mix64(tm_u64 z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z;
}

TM_DEVICE tm_u64 tm_key(tm_u64 seed, tm_u64 epoch, tm_u64 example)
{
    return tm_mix64(tm_mix64(tm_mix64(seed) ^ epoch) ^ example);
}

TM_DEVICE tm_u64 tm_ctr(tm_u64 clause, tm_u64 purpose, tm_u64 index)
{
    return (clause << 32) | (purpose << 30) | index;
}

TM_DEVICE tm_u64 tm_draw(tm_u64 key, tm_u64 ctr) { return tm_mix64(key ^ (ctr * TM_GOLDEN)); }

TM_DEVICE tm_u32 tm_u32_draw(tm_u64 key, tm_u64 ctr) { return (tm_u32)(tm_draw(key, ctr) >> 32); }
