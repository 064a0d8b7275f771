// proofline cuda/g2.cuh: BLS12-381 G2 (y^2 = x^3 + 4 (u + 1) over Fp2): the curve.cuh templates
// over fp2_t.
//
// g2_affine_t is identical to blst_p2_affine (blstrs::G2Affine, 48 words), g2_xyzz_t is a bucket
// (96 words), the Jacobian output is blst_p2 (blstrs::G2Projective, 72 words).
#pragma once
#include "fp2.cuh"
#include "curve.cuh"

typedef affine<fp2_t> g2_affine_t;
typedef xyzz<fp2_t> g2_xyzz_t;

// Out of line: see curve_add in curve.cuh. Non-template overloads, preferred over the inline
// templates for G2 points.
__device__ __noinline__ void curve_add(g2_xyzz_t& p, const g2_xyzz_t& q) { p.add(q); }
__device__ __noinline__ void curve_add_affine(g2_xyzz_t& p, const fp2_t& x, const fp2_t& y) {
    p.add_affine(x, y);
}
__device__ __noinline__ void curve_dbl(g2_xyzz_t& p) { p.dbl(); }
