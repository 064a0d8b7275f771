// proofline cuda/mont.cuh: generic Montgomery arithmetic over an n x 32-bit
// limb prime field (n even), used by fr.cuh (n = 8) and fp.cuh (n = 12).
//
// Layout: little-endian 32-bit limbs, Montgomery form with R = 2^(32 n). This is
// bit-for-bit the layout of blst_fr (4 x u64 LE) and blst_fp (6 x u64 LE), so
// host buffers of blstrs::Scalar / blstrs::Fp upload with no conversion.
//
// Multiplication: interleaved (CIOS-style) Montgomery multiplication where the
// partial products are split into an "even" and an "odd" accumulator. For a
// fixed multiplier word b_i, the products a_j * b_i for even j occupy
// disjoint word pairs (lo at j, hi at j+1), so ONE carry chain
//     mad.lo.cc, madc.hi.cc, madc.lo.cc, madc.hi.cc, ...
// accumulates both the low and the high halves of every product. ptxas fuses
// each lo/hi pair into one IMAD.WIDE.U32.X (wide multiply-add with carry-in);
// checked on sm_90 SASS with `cuobjdump -sass` (see scripts/gpu-sass.sh, the
// count is printed by scripts/gpu-suite.sh). The separate-chains layout (all
// lows in one chain, all highs in another) is about 30% slower on an H200
// (measured before the kernels were written). The technique is the one used
// by sppark's mont_t; this file is an independent implementation of it.
//
// Squaring (device): the products a_i a_j with i < j made once, in two carry chains a row (pairs
// starting on odd and on even words), their sum doubled by funnel shifts and the diagonal a_i^2
// added in one chain: n (n + 1) / 2 wide products for the n^2 of a multiplication. The 2n-word
// square is then reduced row by row; each row's two chains go to two accumulators by the parity
// of their pairs' first words, so that every word keeps one register pair (mixing the parities in
// one array cost ptxas a move per product), with the carry between the accumulators' cleared low
// words tracked as one bit. Fp's squaring compiles to 221 wide multiply-adds and one IMAD.HI where
// the multiply takes 276 and 12 (sm_90); both are bound by those instructions, each two cycles
// of the FMA-heavy pipe, and on an H200 the squaring runs at 1.19x the multiply's rate
// (scripts/mul-rates.cu).
//
// A difference of products (device): mul_sub(a, b, c, d) = a b - c d makes both 2n-word products
// with the same row chains, subtracts them (adding modulus B^n where the difference would be
// negative, which keeps it below modulus B^n) and reduces once: one reduction fewer than two
// multiplications. The curve formulas' Y3 take it.
//
// Requirements: the modulus must leave at least one spare top bit (both
// BLS12-381 fields do: 255 of 256 and 381 of 384 bits), so that sums of two
// reduced values and the Montgomery accumulators never overflow n words.
// All results are fully reduced (< modulus).
//
// Unreduced operands (`wide_t`): the Montgomery product of a reduced a and ANY
// n-word b is below 2 modulus before its final subtraction (the accumulator
// stays below a + modulus at every step whatever b's words are, and the result
// is (a b + m modulus) / R < 2 modulus), so it comes out reduced. A sum or a
// difference that is only multiplied can therefore skip its conditional
// correction: add_wide gives a + b (< 2 modulus), sub_wide a - b + modulus (in
// (0, 2 modulus)), and only mul(reduced, wide) takes them. Never the other way
// round: with an unreduced a the accumulator can reach 3 modulus, more than Fr's
// 256 bits hold. A product that is only multiplied again skips its final
// subtraction the same way (mul_unreduced: below 2 modulus, a wide_t). The field
// tests multiply by the largest unreduced sum and difference on the GPU, and by
// unreduced products.
//
// Two spare bits (Fp's modulus is below B^n / 4; Fr's is not): then both operands of a
// multiplication may be unreduced (below 2 modulus), and so may a squaring's; the product is
// again below 2 modulus (TWO_SPARE, mul_unreduced / sqr_unreduced on wide_t, sub_unreduced with
// its 2 modulus correction, `reduce` where a value must be below the modulus). The batch-affine
// rounds (msm_affine.cuh) keep their running products and each addition's intermediates so.
// crates/proofline-gpu/src/mont_model.rs models the device multiplication and squaring below
// instruction by instruction and checks that no carry is dropped for such operands: a change
// to their carry chains changes the model with them.
//
// Host build: without __CUDA_ARCH__ (the kernels compiled by g++ for the tests'
// host emulation, crates/proofline-gpu/emu/) the multiply, add_wide, sub, sub_wide
// and final_sub take a portable path (schoolbook CIOS on 64-bit products) with
// the same results; the PTX carry chains exist only in the device build.
#pragma once
#include "common.cuh"

template <class P>
struct mont_t {
    static constexpr int n = P::n;
    // u32 words in memory
    static constexpr int WORDS = n;
    u32 v[n];

    // An n-word value congruent to a field element, not necessarily below the modulus: the
    // second operand of a multiplication, nothing else (see the file's header).
    class wide_t {
        u32 v[n];
        friend struct mont_t;
      public:
        // the words as they are, 16 bytes at a time as mont_t's (the batch-affine passes keep
        // unreduced prefix products; the field tests read unreduced products back)
        DEVI void store(u32* p) const {
            uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
            for (int i = 0; i < n / 4; i++)
                q[i] = make_uint4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
        }
        static DEVI wide_t load(const u32* p) {
            wide_t r;
            const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
            for (int i = 0; i < n / 4; i++) {
                const uint4 t = q[i];
                r.v[4 * i] = t.x;
                r.v[4 * i + 1] = t.y;
                r.v[4 * i + 2] = t.z;
                r.v[4 * i + 3] = t.w;
            }
            return r;
        }
    };

#ifdef __CUDA_ARCH__
    // ---- carry-chain building blocks -------------------------------------
    // acc[j], acc[j+1] = lo, hi of a[j] * bi, for even j < cnt
    static DEVI void mul_n(u32* acc, const u32* a, u32 bi, int cnt = n) {
#pragma unroll
        for (int j = 0; j < cnt; j += 2)
            ASM("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;"
                : "=r"(acc[j]), "=r"(acc[j + 1])
                : "r"(a[j]), "r"(bi));
    }
    // acc += a[even] * bi in one carry chain; leaves the carry flag set.
    static DEVI void cmad_n(u32* acc, const u32* a, u32 bi, int cnt = n) {
        ASM("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(acc[0]), "+r"(acc[1])
            : "r"(a[0]), "r"(bi));
#pragma unroll
        for (int j = 2; j < cnt; j += 2)
            ASM("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(acc[j]), "+r"(acc[j + 1])
                : "r"(a[j]), "r"(bi));
    }
    // odd = (odd >> 64) + a[even] * bi + carry-in (consumes the carry flag)
    static DEVI void madc_n_rshift(u32* odd, const u32* a, u32 bi) {
#pragma unroll
        for (int j = 0; j < n - 2; j += 2)
            ASM("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"
                : "=r"(odd[j]), "=r"(odd[j + 1])
                : "r"(a[j]), "r"(bi), "r"(odd[j + 2]), "r"(odd[j + 3]));
        ASM("madc.lo.cc.u32 %0, %2, %3, 0; madc.hi.u32 %1, %2, %3, 0;"
            : "=r"(odd[n - 2]), "=r"(odd[n - 1])
            : "r"(a[n - 2]), "r"(bi));
    }
    // One multiplier word b_i, then one reduction word. Invariant on entry and
    // exit: value = E + O * 2^32 (E = even, O = odd arrays).
    static DEVI void mad_n_redc(u32* even, u32* odd, const u32* a, u32 bi, bool first) {
        if (first) {
            mul_n(odd, a + 1, bi);
            mul_n(even, a, bi);
        } else {
            ASM("add.cc.u32 %0, %0, %1;" : "+r"(even[0]) : "r"(odd[1]));
            madc_n_rshift(odd, a + 1, bi);
            cmad_n(even, a, bi);
            ASM("addc.u32 %0, %0, 0;" : "+r"(odd[n - 1]));
        }
        u32 mi = even[0] * P::m0();
        cmad_n(odd, P::mod() + 1, mi);
        cmad_n(even, P::mod(), mi);
        ASM("addc.u32 %0, %0, 0;" : "+r"(odd[n - 1]));
    }

    // ---- public API --------------------------------------------------------
    DEVI void final_sub() {
        u32 t[n], borrow;
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(v[0]), "r"(P::mod()[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(t[i]) : "r"(v[i]), "r"(P::mod()[i]));
        ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
        for (int i = 0; i < n; i++) v[i] = borrow ? v[i] : t[i];
    }

  private:
    // a (reduced) times b (any n words) before the final subtraction: below 2 modulus
    static DEVI wide_t mul_words_unreduced(const u32* a, const u32* b) {
        wide_t even;
        u32 odd[n];
#pragma unroll
        for (int i = 0; i < n; i += 2) {
            mad_n_redc(even.v, odd, a, b[i], i == 0);
            mad_n_redc(odd, even.v, a, b[i + 1], false);
        }
        // merge: result[k] = even[k] + odd[k+1]
        ASM("add.cc.u32 %0, %0, %1;" : "+r"(even.v[0]) : "r"(odd[1]));
#pragma unroll
        for (int i = 1; i < n - 1; i++)
            ASM("addc.cc.u32 %0, %0, %1;" : "+r"(even.v[i]) : "r"(odd[i + 1]));
        ASM("addc.u32 %0, %0, 0;" : "+r"(even.v[n - 1]));
        return even;
    }
    // acc += a_j bi B^(off+j) for j = j0, j0 + 2, ... < n (their word pairs are disjoint: one
    // carry chain), the chain's carry into the word after its last pair; none past word 2n - 1
    // (a chain that ends the value cannot carry out of it). A row of a product or a square
    // adds at words from off on; no earlier row's pairs reach past word off + n - 1, so the
    // carry word holds at most earlier rows' carries and cannot overflow.
    static DEVI void mad_row(u32* acc, const u32* a, u32 bi, int off, int j0) {
        ASM("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(acc[off + j0]), "+r"(acc[off + j0 + 1])
            : "r"(a[j0]), "r"(bi));
        int j = j0 + 2;
#pragma unroll
        for (; j < n; j += 2)
            ASM("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(acc[off + j]), "+r"(acc[off + j + 1])
                : "r"(a[j]), "r"(bi));
        if (off + j < 2 * n) ASM("addc.u32 %0, %0, 0;" : "+r"(acc[off + j]));
    }
    // t = od + ev over 2n words (no carry out: the callers' sums fit)
    static DEVI void merge(u32* t, const u32* od, const u32* ev) {
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(od[0]), "r"(ev[0]));
#pragma unroll
        for (int k = 1; k < 2 * n; k++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(od[k]), "r"(ev[k]));
    }
    // t = a b, 2n words (a, b any n words). Row i's products with even j start their word
    // pairs on words of i's parity, those with odd j on the other: two chains, into two
    // accumulators by that parity (od, ev), so that every word keeps one register pair.
    static DEVI void product_words(const u32* a, const u32* b, u32* t) {
        u32 od[2 * n], ev[2 * n];
#pragma unroll
        for (int k = 0; k < 2 * n; k++) {
            od[k] = 0;
            ev[k] = 0;
        }
#pragma unroll
        for (int i = 0; i < n; i++) {
            mad_row(i % 2 == 0 ? ev : od, a, b[i], i, 0);
            mad_row(i % 2 == 0 ? od : ev, a, b[i], i, 1);
        }
        merge(t, od, ev);
    }
    // t = a^2, 2n words: twice the products a_i a_j (i < j), each made once, plus the diagonal
    // a_i^2: n (n + 1) / 2 wide products where a product makes n^2.
    static DEVI void square_words(const u32* a, u32* t) {
        // the products whose low word lands on an odd (od) or an even (ev) word
        u32 od[2 * n], ev[2 * n];
#pragma unroll
        for (int k = 0; k < 2 * n; k++) {
            od[k] = 0;
            ev[k] = 0;
        }
#pragma unroll
        for (int i = 0; i < n - 1; i++) {
            mad_row(od, a, a[i], i, i + 1);
            if (i + 2 < n) mad_row(ev, a, a[i], i, i + 2);
        }
        // x = od + ev, the off-diagonal half: 2 x <= a^2 < 2^(64 n - 2)
        u32 x[2 * n];
        merge(x, od, ev);
        // t = 2 x + the diagonal
        t[0] = x[0] << 1;
#pragma unroll
        for (int k = 1; k < 2 * n; k++)
            ASM("shf.l.wrap.b32 %0, %1, %2, 1;" : "=r"(t[k]) : "r"(x[k - 1]), "r"(x[k]));
        ASM("mad.lo.cc.u32 %0, %2, %2, %0; madc.hi.cc.u32 %1, %2, %2, %1;"
            : "+r"(t[0]), "+r"(t[1])
            : "r"(a[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("madc.lo.cc.u32 %0, %2, %2, %0; madc.hi.cc.u32 %1, %2, %2, %1;"
                : "+r"(t[2 * i]), "+r"(t[2 * i + 1])
                : "r"(a[i]));
    }
    // t += m p_j B^(i+j) for j = j0, j0 + 2, ... < n, one carry chain; leaves the carry flag set
    static DEVI void redc_row(u32* t, u32 m, int i, int j0) {
        ASM("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(t[i + j0]), "+r"(t[i + j0 + 1])
            : "r"(P::mod()[j0]), "r"(m));
#pragma unroll
        for (int j = j0 + 2; j < n; j += 2)
            ASM("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(t[i + j]), "+r"(t[i + j + 1])
                : "r"(P::mod()[j]), "r"(m));
    }
    // The Montgomery reduction of 2n words t below modulus B^n: t / B^n mod modulus, below 2
    // modulus (t is spent). Row i adds m_i p B^i, m_i chosen to clear word i. Its chains' pairs
    // start at words of both parities, so they go to two accumulators by the parity of their
    // pairs' first words (t: even, u: odd), each word in one register pair throughout. The words
    // below i of t + u sum to 0 or B^i: `low` is that carry into word i. carry[k] holds the
    // chains' carries into word n + k (no row reads a word at or past n).
    static DEVI wide_t redc_words(u32* t) {
        u32 u[2 * n], carry[n], low = 0;
#pragma unroll
        for (int k = 0; k < 2 * n; k++) u[k] = 0;
#pragma unroll
        for (int k = 0; k < n; k++) carry[k] = 0;
#pragma unroll
        for (int i = 0; i < n; i++) {
            u32 w;
            ASM("add.u32 %0, %1, %2;" : "=r"(w) : "r"(t[i]), "r"(u[i]));
            const u32 m = (w + low) * P::m0();
            redc_row(i % 2 == 0 ? t : u, m, i, 0);
            ASM("addc.u32 %0, %0, 0;" : "+r"(carry[i]));
            redc_row(i % 2 == 0 ? u : t, m, i, 1);
            // the last row's carry out of word 2n - 1 is zero: the sum is below 2 modulus B^n
            if (i + 1 < n) ASM("addc.u32 %0, %0, 0;" : "+r"(carry[i + 1]));
            // word i of t + u + low is now 0 mod B: it carries iff any of its terms is nonzero
            low = (t[i] | u[i] | low) != 0;
        }
        // the quotient: the upper halves of t and u, the low carry and the chains' carries
        wide_t r;
        u32 h[n];
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(h[0]) : "r"(t[n]), "r"(u[n]));
#pragma unroll
        for (int k = 1; k < n; k++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(h[k]) : "r"(t[n + k]), "r"(u[n + k]));
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(carry[0]) : "r"(carry[0]), "r"(low));
#pragma unroll
        for (int k = 1; k < n; k++) ASM("addc.cc.u32 %0, %0, 0;" : "+r"(carry[k]));
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(h[0]), "r"(carry[0]));
#pragma unroll
        for (int k = 1; k < n; k++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[k]) : "r"(h[k]), "r"(carry[k]));
        return r;
    }
    // a^2 (a reduced, or below 2 modulus where the modulus has two spare bits) before the final
    // subtraction: below 2 modulus
    static DEVI wide_t sqr_words_unreduced(const u32* a) {
        u32 t[2 * n];
        square_words(a, t);
        return redc_words(t);
    }
  public:
    static DEVI mont_t sqr(const mont_t& a) { return reduce(sqr_words_unreduced(a.v)); }

    // a b - c d (all reduced) with one Montgomery reduction: both products double-width, their
    // difference taken as a double-width value (dwide_t), then reduced once
    static DEVI mont_t mul_sub(const mont_t& a, const mont_t& b, const mont_t& c, const mont_t& d) {
        return redc(dsub(mul_dwide(a, b), mul_dwide(c, d)));
    }

  private:
    // A double-width value: 2n words below modulus B^n, what the Montgomery reduction takes to
    // give a result below 2 modulus. A product of two reduced values is one, and so is the
    // difference of two (dsub adds modulus B^n where it would be negative).
    class dwide_t {
        u32 v[2 * n];
        friend struct mont_t;
    };
    static DEVI dwide_t mul_dwide(const mont_t& a, const mont_t& b) {
        dwide_t r;
        product_words(a.v, b.v, r.v);
        return r;
    }
    // x - y, plus modulus B^n where that is negative: congruent, and again below modulus B^n
    static DEVI dwide_t dsub(const dwide_t& x, const dwide_t& y) {
        dwide_t r;
        u32 borrow;
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(x.v[0]), "r"(y.v[0]));
#pragma unroll
        for (int k = 1; k < 2 * n; k++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[k]) : "r"(x.v[k]), "r"(y.v[k]));
        ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
        ASM("add.cc.u32 %0, %0, %1;" : "+r"(r.v[n]) : "r"(P::mod()[0] & borrow));
#pragma unroll
        for (int k = 1; k < n; k++)
            ASM("addc.cc.u32 %0, %0, %1;" : "+r"(r.v[n + k]) : "r"(P::mod()[k] & borrow));
        return r;
    }
    // x / B^n mod modulus, reduced
    static DEVI mont_t redc(const dwide_t& x) {
        u32 t[2 * n];
#pragma unroll
        for (int k = 0; k < 2 * n; k++) t[k] = x.v[k];
        return reduce(redc_words(t));
    }
  public:
#else
    // ---- portable path (host emulation) -----------------------------------
    DEVI void final_sub() {
        u32 t[n];
        u64 borrow = 0;
        for (int i = 0; i < n; i++) {
            u64 d = (u64)v[i] - P::mod()[i] - borrow;
            t[i] = (u32)d;
            borrow = (d >> 32) & 1;
        }
        if (!borrow)
            for (int i = 0; i < n; i++) v[i] = t[i];
    }

  private:
    static DEVI wide_t mul_words_unreduced(const u32* a, const u32* b) {
        u32 t[n + 2];
        for (int i = 0; i < n + 2; i++) t[i] = 0;
        for (int i = 0; i < n; i++) {
            u64 c = 0;
            for (int j = 0; j < n; j++) {
                u64 s = (u64)a[j] * b[i] + t[j] + c;
                t[j] = (u32)s;
                c = s >> 32;
            }
            u64 s = (u64)t[n] + c;
            t[n] = (u32)s;
            t[n + 1] = (u32)(s >> 32);
            const u32 m = t[0] * P::m0();
            c = ((u64)m * P::mod()[0] + t[0]) >> 32;
            for (int j = 1; j < n; j++) {
                u64 s2 = (u64)m * P::mod()[j] + t[j] + c;
                t[j - 1] = (u32)s2;
                c = s2 >> 32;
            }
            s = (u64)t[n] + c;
            t[n - 1] = (u32)s;
            t[n] = t[n + 1] + (u32)(s >> 32);
        }
        wide_t r;
        for (int i = 0; i < n; i++) r.v[i] = t[i];
        return r;
    }
  public:
#endif
  public:
    // An unreduced value below 2 modulus, reduced: its final subtraction.
    static DEVI mont_t reduce(const wide_t& w) {
        mont_t r;
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] = w.v[i];
        r.final_sub();
        return r;
    }
  private:
    // a (reduced) times b (any n words), reduced
    static DEVI mont_t mul_words(const mont_t& a, const u32* b) {
        return reduce(mul_words_unreduced(a.v, b));
    }
  public:
    static DEVI mont_t mul(const mont_t& a, const mont_t& b) { return mul_words(a, b.v); }
    // a (reduced) times an unreduced b
    static DEVI mont_t mul(const mont_t& a, const wide_t& b) { return mul_words(a, b.v); }
    // The product without its final subtraction (below 2 modulus), for a value that is only
    // multiplied again, as the second operand (the batch-affine backward pass's per-position
    // inverse).
    static DEVI wide_t mul_unreduced(const mont_t& a, const mont_t& b) {
        return mul_words_unreduced(a.v, b.v);
    }

    // ---- unreduced operands on both sides (two spare bits) ----------------------------------
    // With the modulus below B^n / 4 (Fp: 381 bits of 384; not Fr: 255 of 256), values below 2
    // modulus may be either operand: their product is below 4 modulus^2 < modulus B^n, so the
    // Montgomery product is below 2 modulus again, and the multiplication's accumulator stays
    // below 3 modulus. A chain of products and differences then skips every final subtraction
    // and correction, and a value is reduced once, where it is compared or stored (`reduce`).
    static constexpr bool TWO_SPARE = P::SPARE_BITS >= 2;
    // A reduced value as an unreduced one.
    static DEVI wide_t widen(const mont_t& a) {
        wide_t r;
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] = a.v[i];
        return r;
    }
    static DEVI wide_t mul_unreduced(const wide_t& a, const mont_t& b) {
        static_assert(TWO_SPARE, "an unreduced first operand needs two spare bits");
        return mul_words_unreduced(a.v, b.v);
    }
    static DEVI wide_t mul_unreduced(const wide_t& a, const wide_t& b) {
        static_assert(TWO_SPARE, "an unreduced first operand needs two spare bits");
        return mul_words_unreduced(a.v, b.v);
    }
    static DEVI wide_t sqr_unreduced(const wide_t& a) {
        static_assert(TWO_SPARE, "an unreduced square needs two spare bits");
#ifdef __CUDA_ARCH__
        return sqr_words_unreduced(a.v);
#else
        return mul_words_unreduced(a.v, a.v);
#endif
    }
    // a - b (both below 2 modulus), plus 2 modulus where that is negative: below 2 modulus
    static DEVI wide_t sub_unreduced(const wide_t& a, const wide_t& b) {
        static_assert(TWO_SPARE, "2 modulus fits only with two spare bits");
        wide_t r;
#ifdef __CUDA_ARCH__
        u32 borrow;
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
        ASM("add.cc.u32 %0, %0, %1;" : "+r"(r.v[0]) : "r"(P::mod2()[0] & borrow));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("addc.cc.u32 %0, %0, %1;" : "+r"(r.v[i]) : "r"(P::mod2()[i] & borrow));
#else
        sub_corrected(r.v, a.v, b.v, P::mod2());
#endif
        return r;
    }

#ifndef __CUDA_ARCH__
    // the host emulation squares by its multiply and reduces each product (the device's
    // squaring and double-width products are above)
    static DEVI mont_t sqr(const mont_t& a) { return mul(a, a); }
    static DEVI mont_t mul_sub(const mont_t& a, const mont_t& b, const mont_t& c, const mont_t& d) {
        return sub(mul(a, b), mul(c, d));
    }
#endif

#ifdef __CUDA_ARCH__
    static DEVI mont_t sub(const mont_t& a, const mont_t& b) {
        mont_t r;
        u32 borrow, t[n];
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(r.v[0]), "r"(P::mod()[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(t[i]) : "r"(r.v[i]), "r"(P::mod()[i]));
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] = borrow ? t[i] : r.v[i];
        return r;
    }
    // a + b without the final subtraction (below 2 modulus)
    static DEVI wide_t add_wide(const mont_t& a, const mont_t& b) {
        wide_t r;
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        return r;
    }
    // a - b + modulus (in (0, 2 modulus)), with no borrow test: (a + modulus) - b
    static DEVI wide_t sub_wide(const mont_t& a, const mont_t& b) {
        u32 t[n];
        wide_t r;
        ASM("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(P::mod()[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("addc.cc.u32 %0, %1, %2;" : "=r"(t[i]) : "r"(a.v[i]), "r"(P::mod()[i]));
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(t[i]), "r"(b.v[i]));
        return r;
    }
#else
  private:
    // r = a - b, plus `m` where that is negative (the portable sub and sub_unreduced)
    static DEVI void sub_corrected(u32* r, const u32* a, const u32* b, const u32* m) {
        u64 borrow = 0;
        for (int i = 0; i < n; i++) {
            u64 d = (u64)a[i] - b[i] - borrow;
            r[i] = (u32)d;
            borrow = (d >> 32) & 1;
        }
        if (borrow) {
            u64 c = 0;
            for (int i = 0; i < n; i++) {
                u64 x = (u64)r[i] + m[i] + c;
                r[i] = (u32)x;
                c = x >> 32;
            }
        }
    }
  public:
    static DEVI mont_t sub(const mont_t& a, const mont_t& b) {
        mont_t r;
        sub_corrected(r.v, a.v, b.v, P::mod());
        return r;
    }
    static DEVI wide_t add_wide(const mont_t& a, const mont_t& b) {
        wide_t r;
        u64 c = 0;
        for (int i = 0; i < n; i++) {
            u64 x = (u64)a.v[i] + b.v[i] + c;
            r.v[i] = (u32)x;
            c = x >> 32;
        }
        return r;
    }
    static DEVI wide_t sub_wide(const mont_t& a, const mont_t& b) {
        u32 t[n];
        wide_t r;
        u64 c = 0;
        for (int i = 0; i < n; i++) {
            u64 x = (u64)a.v[i] + P::mod()[i] + c;
            t[i] = (u32)x;
            c = x >> 32;
        }
        u64 borrow = 0;
        for (int i = 0; i < n; i++) {
            u64 d = (u64)t[i] - b.v[i] - borrow;
            r.v[i] = (u32)d;
            borrow = (d >> 32) & 1;
        }
        return r;
    }
#endif
    // a + b reduced: the unreduced sum, then the final subtraction
    static DEVI mont_t add(const mont_t& a, const mont_t& b) { return reduce(add_wide(a, b)); }
    static DEVI mont_t dbl(const mont_t& a) { return add(a, a); }
    DEVI bool is_zero() const {
        u32 acc = v[0];
#pragma unroll
        for (int i = 1; i < n; i++) acc |= v[i];
        return acc == 0;
    }
    // modulus - a, and 0 for 0
    static DEVI mont_t neg(const mont_t& a) {
#ifdef __CUDA_ARCH__
        // one subtraction chain and a mask (0 - a with its correction took three chains)
        mont_t r;
        ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(P::mod()[0]), "r"(a.v[0]));
#pragma unroll
        for (int i = 1; i < n; i++)
            ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(P::mod()[i]), "r"(a.v[i]));
        const u32 keep = a.is_zero() ? 0u : ~0u;
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] &= keep;
        return r;
#else
        mont_t z = zero();
        return a.is_zero() ? a : sub(z, a);
#endif
    }
    // conditional negation
    static DEVI mont_t cneg(const mont_t& a, bool flag) { return flag ? neg(a) : a; }
    static DEVI mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] = 0;
        return r;
    }
    static DEVI mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < n; i++) r.v[i] = P::one()[i];
        return r;
    }
    DEVI bool is_one() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < n; i++) acc |= v[i] ^ P::one()[i];
        return acc == 0;
    }
    DEVI bool eq(const mont_t& b) const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < n; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }
    // Montgomery form -> canonical integer (multiply by raw 1).
    static DEVI mont_t from_mont(const mont_t& a) {
        mont_t o;
#pragma unroll
        for (int i = 0; i < n; i++) o.v[i] = i == 0 ? 1u : 0u;
        return mul(a, o);
    }

    // a^e for an exponent of n words (little-endian), 4-bit fixed window: ~32 n squarings and
    // 8 n multiplications.
    static DEVI mont_t pow_words(const mont_t& a, const u32* e) {
        mont_t t[16];
        t[0] = one();
        t[1] = a;
#pragma unroll 1
        for (int i = 2; i < 16; i++) t[i] = mul(t[i - 1], a);
        mont_t r = one();
        bool started = false;
#pragma unroll 1
        for (int w = n - 1; w >= 0; w--) {
            const u32 word = e[w];
#pragma unroll 1
            for (int k = 7; k >= 0; k--) {
                const u32 nib = (word >> (4 * k)) & 15;
                if (started) {
                    r = sqr(r);
                    r = sqr(r);
                    r = sqr(r);
                    r = sqr(r);
                }
                if (nib != 0) {
                    r = started ? mul(r, t[nib]) : t[nib];
                    started = true;
                }
            }
        }
        return r;
    }
    // a^-1 by Fermat (a^(modulus - 2)); 0 for 0. Needs P::pm2(), the words of modulus - 2.
    static DEVI mont_t inv(const mont_t& a) { return pow_words(a, P::pm2()); }

    // ---- memory ------------------------------------------------------------
    static DEVI mont_t load(const u32* p) {
        mont_t r;
        const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
        for (int i = 0; i < n / 4; i++) {
            uint4 t = q[i];
            r.v[4 * i] = t.x; r.v[4 * i + 1] = t.y; r.v[4 * i + 2] = t.z; r.v[4 * i + 3] = t.w;
        }
        return r;
    }
    DEVI void store(u32* p) const {
        uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
        for (int i = 0; i < n / 4; i++)
            q[i] = make_uint4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    }
};
