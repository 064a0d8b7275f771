// proofline cuda/fp.cuh: the BLS12-381 base field Fp (381-bit, 12 x 32-bit
// limbs, Montgomery form with R = 2^384), layout-identical to blst_fp.
//
// Arithmetic lives in mont.cuh.
#pragma once
#include "mont.cuh"

__device__ __constant__ u32 FP_MOD[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                          0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                          0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__device__ __constant__ u32 FP_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                                          0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                                          0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
__device__ __constant__ u32 FP_M0 = 0xfffcfffd;
// 2 p, the correction of a difference of unreduced values (mont_t::sub_unreduced)
__device__ __constant__ u32 FP_MOD2[12] = {0xffff5556, 0x73fdffff, 0x62a7ffff, 0x3d57fffd,
                                           0xed61ec48, 0xce61a541, 0xe70a257e, 0xc8ee9709,
                                           0x869759ae, 0x96374f6c, 0x72ffcd34, 0x340223d4};
// p - 2, the Fermat exponent of the inversion
__device__ __constant__ u32 FP_PM2[12] = {0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                          0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                          0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};

struct FpParams {
    static constexpr int n = 12;
    // 381 bits of 384
    static constexpr int SPARE_BITS = 3;
    static DEVI const u32* mod() { return FP_MOD; }
    static DEVI const u32* mod2() { return FP_MOD2; }
    static DEVI const u32* one() { return FP_ONE; }
    static DEVI u32 m0() { return FP_M0; }
    static DEVI const u32* pm2() { return FP_PM2; }
};
typedef mont_t<FpParams> fp_t;
