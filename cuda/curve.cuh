// proofline cuda/curve.cuh: short Weierstrass point arithmetic with a = 0 (y^2 = x^3 + b), over
// any field type F with the interface of mont_t (fp_t for G1, fp2_t for G2): the formulas do
// not use b, so one template serves both groups.
//
// Representations:
//  * affine<F>: {x, y}, identical to blst_p1_affine / blst_p2_affine; the point at infinity is
//    x = y = 0 (not on either curve, b != 0).
//  * xyzz<F>: extended Jacobian "XYZZ" coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), used for
//    buckets; infinity is ZZ = 0.
//  * Jacobian output (blst_p1 / blst_p2): X_J = X*ZZ, Y_J = Y*ZZZ, Z_J = ZZ (valid because
//    ZZ^3 = ZZZ^2).
// Formulas: EFD "xyzz" (madd-2008-s, mdbl-2008-s-1, add-2008-s, dbl-2008-s-1), and the affine
// chord-and-tangent addition for batched inversions (affine_add_parts).
#pragma once
#include "common.cuh"

template <class F>
struct affine {
    static constexpr int WORDS = 2 * F::WORDS;
    F x, y;
    static DEVI affine load(const u32* p) {
        affine a;
        a.x = F::load(p);
        a.y = F::load(p + F::WORDS);
        return a;
    }
    DEVI void store(u32* p) const {
        x.store(p);
        y.store(p + F::WORDS);
    }
    static DEVI affine inf() {
        affine a;
        a.x = F::zero();
        a.y = F::zero();
        return a;
    }
    DEVI bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct xyzz {
    static constexpr int WORDS = 4 * F::WORDS;
    // words of the Jacobian output
    static constexpr int JAC_WORDS = 3 * F::WORDS;
    F X, Y, ZZ, ZZZ;

    static DEVI xyzz inf() {
        xyzz r;
        r.X = F::zero(); r.Y = F::zero(); r.ZZ = F::zero(); r.ZZZ = F::zero();
        return r;
    }
    DEVI bool is_inf() const { return ZZ.is_zero(); }
    static DEVI xyzz from_affine(const affine<F>& a) {
        xyzz r;
        if (a.is_inf()) return inf();
        r.X = a.x; r.Y = a.y; r.ZZ = F::one(); r.ZZZ = F::one();
        return r;
    }
    // The affine point, by an inversion of its own (1/ZZ = u ZZZ and 1/ZZZ = u ZZ for
    // u = 1/(ZZ ZZZ)): for points made once per parameter set, not for the hot paths, which
    // share one inversion among many points.
    DEVI affine<F> to_affine() const {
        if (is_inf()) return affine<F>::inf();
        const F u = F::inv(F::mul(ZZ, ZZZ));
        affine<F> r;
        r.x = F::mul(X, F::mul(u, ZZZ));
        r.y = F::mul(Y, F::mul(u, ZZ));
        return r;
    }

    static DEVI xyzz load(const u32* p) {
        xyzz r;
        r.X = F::load(p); r.Y = F::load(p + F::WORDS);
        r.ZZ = F::load(p + 2 * F::WORDS); r.ZZZ = F::load(p + 3 * F::WORDS);
        return r;
    }
    DEVI void store(u32* p) const {
        X.store(p); Y.store(p + F::WORDS); ZZ.store(p + 2 * F::WORDS); ZZZ.store(p + 3 * F::WORDS);
    }
    // blst Jacobian {x, y, z}
    DEVI void store_jacobian(u32* p) const {
        F::mul(X, ZZ).store(p);
        F::mul(Y, ZZZ).store(p + F::WORDS);
        ZZ.store(p + 2 * F::WORDS);
    }
    DEVI void neg() { Y = F::neg(Y); }

    // doubling of an affine point (mdbl-2008-s-1)
    static DEVI xyzz dbl_affine(const F& x, const F& y) {
        xyzz r;
        F U = F::dbl(y);
        F V = F::sqr(U);
        F W = F::mul(U, V);
        F S = F::mul(x, V);
        F M = F::sqr(x);
        M = F::add(M, F::dbl(M));
        r.X = F::sub(F::sqr(M), F::dbl(S));
        r.Y = F::mul_sub(M, F::sub(S, r.X), W, y);
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // this += (x, y) affine, (x, y) not infinity (madd-2008-s)
    DEVI void add_affine(const F& x, const F& y) {
        if (is_inf()) {
            X = x; Y = y; ZZ = F::one(); ZZZ = F::one();
            return;
        }
        F U2 = F::mul(x, ZZ);
        F S2 = F::mul(y, ZZZ);
        F P = F::sub(U2, X);
        F R = F::sub(S2, Y);
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl_affine(x, y);
            else *this = inf();
            return;
        }
        add_scaled(X, Y, P, R);
    }

    // dbl-2008-s-1
    DEVI void dbl() {
        if (is_inf()) return;
        F U = F::dbl(Y);
        F V = F::sqr(U);
        F W = F::mul(U, V);
        F S = F::mul(X, V);
        F M = F::sqr(X);
        M = F::add(M, F::dbl(M));
        F X3 = F::sub(F::sqr(M), F::dbl(S));
        Y = F::mul_sub(M, F::sub(S, X3), W, Y);
        X = X3;
        ZZ = F::mul(V, ZZ);
        ZZZ = F::mul(W, ZZZ);
    }

    // add-2008-s
    DEVI void add(const xyzz& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        // Both points are scaled to the common ZZ = ZZ q.ZZ, ZZZ = ZZZ q.ZZZ first:
        // (U1, S1, ZZ, ZZZ) is this point and (U2, S2, ZZ, ZZZ) is q, so neither point's own
        // coordinates stay live past these six multiplications (fewer registers), and the
        // doubling case doubles (U1, S1, ZZ, ZZZ).
        const F U1 = F::mul(X, q.ZZ);
        const F U2 = F::mul(q.X, ZZ);
        ZZ = F::mul(ZZ, q.ZZ);
        const F S1 = F::mul(Y, q.ZZZ);
        const F S2 = F::mul(q.Y, ZZZ);
        ZZZ = F::mul(ZZZ, q.ZZZ);
        const F P = F::sub(U2, U1);
        const F R = F::sub(S2, S1);
        if (P.is_zero()) {
            if (R.is_zero()) {
                X = U1;
                Y = S1;
                dbl();
            } else {
                *this = inf();
            }
            return;
        }
        add_scaled(U1, S1, P, R);
    }

    // The common end of both additions: with this point as (U, S, ZZ, ZZZ) and the other as
    // (U + P, S + R, ZZ, ZZZ), P not zero, this becomes their sum. ZZ and ZZZ take their
    // factors as soon as these exist (fewer values live). U and S may be X and Y: each is read
    // before it is written.
    DEVI void add_scaled(const F& U, const F& S, const F& P, const F& R) {
        const F PP = F::sqr(P);
        ZZ = F::mul(ZZ, PP);
        const F PPP = F::mul(P, PP);
        ZZZ = F::mul(ZZZ, PPP);
        const F Q = F::mul(U, PP);
        const F X3 = F::sub(F::sub(F::sqr(R), PPP), F::dbl(Q));
        Y = F::mul_sub(R, F::sub(Q, X3), S, PPP);
        X = X3;
    }
};

// The curve operations the MSM kernels call, as free functions: a group may replace them with
// out-of-line overloads (g2.cuh does: G2's, fully inlined into every kernel, made the msm_g2
// module take over ten minutes of compilation; a call costs little next to the ~30 Fp
// multiplications of one G2 addition).
template <class F>
DEVI void curve_add(xyzz<F>& p, const xyzz<F>& q) {
    p.add(q);
}
template <class F>
DEVI void curve_add_affine(xyzz<F>& p, const F& x, const F& y) {
    p.add_affine(x, y);
}
template <class F>
DEVI void curve_dbl(xyzz<F>& p) {
    p.dbl();
}
