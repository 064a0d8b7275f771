// proofline cuda/g1.cuh: BLS12-381 G1 (y^2 = x^3 + 4 over Fp): the curve.cuh templates over fp_t.
//
// affine_t is identical to blst_p1_affine (blstrs::G1Affine, 24 words), xyzz_t is a bucket
// (48 words), the Jacobian output is blst_p1 (blstrs::G1Projective, 36 words).
#pragma once
#include "fp.cuh"
#include "curve.cuh"

typedef affine<fp_t> affine_t;
typedef xyzz<fp_t> xyzz_t;
