// proofline cuda/fp2.cuh: Fp2 = Fp[u] / (u^2 + 1), the field of G2's coordinates,
// layout-identical to blst_fp2 ({c0, c1}, each a 12-limb Montgomery fp_t; c0 first).
//
// Multiplication is Karatsuba (3 Fp multiplications), squaring (a0 + a1)(a0 - a1) + 2 a0 a1 u
// (2 multiplications); the sum or difference that is only multiplied is left unreduced
// (fp_t::wide_t, mont.cuh). Every result is fully reduced, as in fp_t. The interface is the one the
// curve formulas of curve.cuh use (the same as mont_t's).
#pragma once
#include "fp.cuh"

struct fp2_t {
    static constexpr int WORDS = 2 * fp_t::WORDS;
    fp_t c0, c1;

    static DEVI fp2_t make(const fp_t& a, const fp_t& b) {
        fp2_t r;
        r.c0 = a;
        r.c1 = b;
        return r;
    }
    static DEVI fp2_t zero() { return make(fp_t::zero(), fp_t::zero()); }
    static DEVI fp2_t one() { return make(fp_t::one(), fp_t::zero()); }
    DEVI bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    DEVI bool eq(const fp2_t& b) const { return c0.eq(b.c0) && c1.eq(b.c1); }

    static DEVI fp2_t add(const fp2_t& a, const fp2_t& b) {
        return make(fp_t::add(a.c0, b.c0), fp_t::add(a.c1, b.c1));
    }
    static DEVI fp2_t sub(const fp2_t& a, const fp2_t& b) {
        return make(fp_t::sub(a.c0, b.c0), fp_t::sub(a.c1, b.c1));
    }
    static DEVI fp2_t dbl(const fp2_t& a) { return make(fp_t::dbl(a.c0), fp_t::dbl(a.c1)); }
    static DEVI fp2_t neg(const fp2_t& a) { return make(fp_t::neg(a.c0), fp_t::neg(a.c1)); }
    static DEVI fp2_t cneg(const fp2_t& a, bool flag) { return flag ? neg(a) : a; }

    // (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
    static DEVI fp2_t mul(const fp2_t& a, const fp2_t& b) {
        fp_t t0 = fp_t::mul(a.c0, b.c0);
        fp_t t1 = fp_t::mul(a.c1, b.c1);
        fp_t s = fp_t::mul(fp_t::add(a.c0, a.c1), fp_t::add_wide(b.c0, b.c1));
        return make(fp_t::sub(t0, t1), fp_t::sub(fp_t::sub(s, t0), t1));
    }
    // a b - c d. Each product reduced: keeping Karatsuba's products double-width with one
    // reduction a coordinate (fp_t's mul_sub) spilled G2's kernels and was slower.
    static DEVI fp2_t mul_sub(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
        return sub(mul(a, b), mul(c, d));
    }
    // The interface of mont_t's unreduced products: an Fp2 product's coordinates come out of
    // subtractions, reduced, so the unreduced product is the product.
    // Fp2's products do not use Fp's spare bits (TWO_SPARE): reduced and unreduced are one type.
    typedef fp2_t wide_t;
    static constexpr bool TWO_SPARE = false;
    static DEVI fp2_t widen(const fp2_t& a) { return a; }
    static DEVI fp2_t reduce(const fp2_t& a) { return a; }
    static DEVI fp2_t add_wide(const fp2_t& a, const fp2_t& b) { return add(a, b); }
    static DEVI fp2_t sub_wide(const fp2_t& a, const fp2_t& b) { return sub(a, b); }
    static DEVI fp2_t mul_unreduced(const fp2_t& a, const fp2_t& b) { return mul(a, b); }
    // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
    static DEVI fp2_t sqr(const fp2_t& a) {
        fp_t t = fp_t::mul(a.c0, a.c1);
        return make(fp_t::mul(fp_t::add(a.c0, a.c1), fp_t::sub_wide(a.c0, a.c1)), fp_t::dbl(t));
    }
    // 1 / (a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); 0 for 0
    static DEVI fp2_t inv(const fp2_t& a) {
        fp_t n = fp_t::add(fp_t::sqr(a.c0), fp_t::sqr(a.c1));
        fp_t ni = fp_t::inv(n);
        return make(fp_t::mul(a.c0, ni), fp_t::neg(fp_t::mul(a.c1, ni)));
    }

    static DEVI fp2_t load(const u32* p) { return make(fp_t::load(p), fp_t::load(p + fp_t::WORDS)); }
    DEVI void store(u32* p) const {
        c0.store(p);
        c1.store(p + fp_t::WORDS);
    }
};
