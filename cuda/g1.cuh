// proofline cuda/g1.cuh: BLS12-381 G1 (y^2 = x^3 + 4 over Fp) point arithmetic.
//
// Representations:
//  * affine_t: {x, y} in Montgomery form, identical to blst_p1_affine
//    (blstrs::G1Affine); the point at infinity is x = y = 0.
//  * xyzz_t: extended Jacobian "XYZZ" coordinates (x = X/ZZ, y = Y/ZZZ,
//    ZZ^3 = ZZZ^2), used for buckets; infinity is ZZ = 0.
//  * Jacobian output (blst_p1 / blstrs::G1Projective): X_J = X*ZZ,
//    Y_J = Y*ZZZ, Z_J = ZZ (valid because ZZ^3 = ZZZ^2).
// Formulas: EFD "xyzz" (madd-2008-s, mdbl-2008-s-1, add-2008-s, dbl-2008-s-1),
// a = 0.
#pragma once
#include "fp.cuh"

struct affine_t {
    fp_t x, y;
    static DEVI affine_t load(const u32* p) {
        affine_t a;
        a.x = fp_t::load(p);
        a.y = fp_t::load(p + 12);
        return a;
    }
    DEVI bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

struct xyzz_t {
    fp_t X, Y, ZZ, ZZZ;

    static DEVI xyzz_t inf() {
        xyzz_t r;
        r.X = fp_t::zero(); r.Y = fp_t::zero(); r.ZZ = fp_t::zero(); r.ZZZ = fp_t::zero();
        return r;
    }
    DEVI bool is_inf() const { return ZZ.is_zero(); }
    static DEVI xyzz_t from_affine(const affine_t& a) {
        xyzz_t r;
        if (a.is_inf()) return inf();
        r.X = a.x; r.Y = a.y; r.ZZ = fp_t::one(); r.ZZZ = fp_t::one();
        return r;
    }

    static DEVI xyzz_t load(const u32* p) {
        xyzz_t r;
        r.X = fp_t::load(p); r.Y = fp_t::load(p + 12);
        r.ZZ = fp_t::load(p + 24); r.ZZZ = fp_t::load(p + 36);
        return r;
    }
    DEVI void store(u32* p) const {
        X.store(p); Y.store(p + 12); ZZ.store(p + 24); ZZZ.store(p + 36);
    }
    // blst_p1 Jacobian {x, y, z}
    DEVI void store_jacobian(u32* p) const {
        fp_t::mul(X, ZZ).store(p);
        fp_t::mul(Y, ZZZ).store(p + 12);
        ZZ.store(p + 24);
    }

    // doubling of an affine point (mdbl-2008-s-1)
    static DEVI xyzz_t dbl_affine(const fp_t& x, const fp_t& y) {
        xyzz_t r;
        fp_t U = fp_t::dbl(y);
        fp_t V = fp_t::sqr(U);
        fp_t W = fp_t::mul(U, V);
        fp_t S = fp_t::mul(x, V);
        fp_t M = fp_t::sqr(x);
        M = fp_t::add(M, fp_t::dbl(M));
        r.X = fp_t::sub(fp_t::sqr(M), fp_t::dbl(S));
        r.Y = fp_t::sub(fp_t::mul(M, fp_t::sub(S, r.X)), fp_t::mul(W, y));
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // this += (x, y) affine, (x, y) not infinity
    DEVI void add_affine(const fp_t& x, const fp_t& y) {
        if (is_inf()) {
            X = x; Y = y; ZZ = fp_t::one(); ZZZ = fp_t::one();
            return;
        }
        fp_t U2 = fp_t::mul(x, ZZ);
        fp_t S2 = fp_t::mul(y, ZZZ);
        fp_t P = fp_t::sub(U2, X);
        fp_t R = fp_t::sub(S2, Y);
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl_affine(x, y);
            else *this = inf();
            return;
        }
        fp_t PP = fp_t::sqr(P);
        fp_t PPP = fp_t::mul(P, PP);
        fp_t Q = fp_t::mul(X, PP);
        fp_t X3 = fp_t::sub(fp_t::sub(fp_t::sqr(R), PPP), fp_t::dbl(Q));
        Y = fp_t::sub(fp_t::mul(R, fp_t::sub(Q, X3)), fp_t::mul(Y, PPP));
        X = X3;
        ZZ = fp_t::mul(ZZ, PP);
        ZZZ = fp_t::mul(ZZZ, PPP);
    }

    // dbl-2008-s-1
    DEVI void dbl() {
        if (is_inf()) return;
        fp_t U = fp_t::dbl(Y);
        fp_t V = fp_t::sqr(U);
        fp_t W = fp_t::mul(U, V);
        fp_t S = fp_t::mul(X, V);
        fp_t M = fp_t::sqr(X);
        M = fp_t::add(M, fp_t::dbl(M));
        fp_t X3 = fp_t::sub(fp_t::sqr(M), fp_t::dbl(S));
        Y = fp_t::sub(fp_t::mul(M, fp_t::sub(S, X3)), fp_t::mul(W, Y));
        X = X3;
        ZZ = fp_t::mul(V, ZZ);
        ZZZ = fp_t::mul(W, ZZZ);
    }

    // add-2008-s
    DEVI void add(const xyzz_t& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        fp_t U1 = fp_t::mul(X, q.ZZ);
        fp_t U2 = fp_t::mul(q.X, ZZ);
        fp_t S1 = fp_t::mul(Y, q.ZZZ);
        fp_t S2 = fp_t::mul(q.Y, ZZZ);
        fp_t P = fp_t::sub(U2, U1);
        fp_t R = fp_t::sub(S2, S1);
        if (P.is_zero()) {
            if (R.is_zero()) dbl();
            else *this = inf();
            return;
        }
        fp_t PP = fp_t::sqr(P);
        fp_t PPP = fp_t::mul(P, PP);
        fp_t Q = fp_t::mul(U1, PP);
        fp_t X3 = fp_t::sub(fp_t::sub(fp_t::sqr(R), PPP), fp_t::dbl(Q));
        Y = fp_t::sub(fp_t::mul(R, fp_t::sub(Q, X3)), fp_t::mul(S1, PPP));
        X = X3;
        ZZ = fp_t::mul(fp_t::mul(ZZ, q.ZZ), PP);
        ZZZ = fp_t::mul(fp_t::mul(ZZZ, q.ZZZ), PPP);
    }
};
