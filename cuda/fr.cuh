// proofline cuda/fr.cuh: the BLS12-381 scalar field Fr (255-bit, 8 x 32-bit
// limbs, Montgomery form with R = 2^256), layout-identical to blst_fr.
//
// Arithmetic lives in mont.cuh.
#pragma once
#include "mont.cuh"

// r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
__device__ __constant__ u32 FR_MOD[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                         0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
// R mod r (Montgomery one)
__device__ __constant__ u32 FR_ONE[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                                         0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
// -r^-1 mod 2^32. Kept in (non-const) constant memory: with a literal
// 0xffffffff the compiler rewrites m*M0 into a negation and schedules the
// reduction worse.
__device__ __constant__ u32 FR_M0 = 0xffffffff;

struct FrParams {
    static constexpr int n = 8;
    // 255 bits of 256
    static constexpr int SPARE_BITS = 1;
    static DEVI const u32* mod() { return FR_MOD; }
    static DEVI const u32* one() { return FR_ONE; }
    static DEVI u32 m0() { return FR_M0; }
};
typedef mont_t<FrParams> fr_t;
