// proofline cuda/arith.cu: element-wise field and curve kernels used by the
// correctness tests (GPU == blstrs) and by the multiply-throughput benchmark.
//
// Test and benchmark kernels only: compiled and embedded with proofline-gpu's `testkit` feature
// and loaded by its `testkit` module, never by the proving path.
#include "fr.cuh"
#include "fp.cuh"
#include "fp_inv.cuh"
#include "fp2.cuh"
#include "g1.cuh"
#include "g2.cuh"
#include "proofline_abi.cuh"

// op: 0 = mul, 1 = sqr, 2 = add, 3 = sub, 4 = from_mont (fp_op_test also 5 = inverse),
// 6 = a (b - a) and 7 = a (a + b) through the unreduced difference and sum (mont.cuh's wide_t);
// fp_op_test also 8 = inverse by the batched binary GCD alone (0 where its batches do not
// finish) and 9 = inverse by the plain binary algorithm (fp_inv.cuh); 10 = a (a b) through the
// unreduced product, 11 = the words of the unreduced product a b itself (below 2 modulus);
// with both operands unreduced (mont.cuh's TWO_SPARE): 12 = (a b) (b - a), 13 = (a b)^2,
// 14 = a b - (a + b), 16 = (a b) a; 15 = -a
extern "C" __global__ void fr_op_test(const fr_op_args args) {
    const u32* a = args.a;
    const u32* b = args.b;
    u32* out = args.out;
    const u32 op = args.op;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= args.n) return;
    fr_t x = fr_t::load(a + 8 * i), y = fr_t::load(b + 8 * i), r;
    switch (op) {
        case 0: r = fr_t::mul(x, y); break;
        case 1: r = fr_t::sqr(x); break;
        case 2: r = fr_t::add(x, y); break;
        case 3: r = fr_t::sub(x, y); break;
        case 6: r = fr_t::mul(x, fr_t::sub_wide(y, x)); break;
        case 7: r = fr_t::mul(x, fr_t::add_wide(x, y)); break;
        default: r = fr_t::from_mont(x); break;
    }
    r.store(out + 8 * i);
}

extern "C" __global__ void fp_op_test(const fp_op_args args) {
    const u32* a = args.a;
    const u32* b = args.b;
    u32* out = args.out;
    const u32 op = args.op;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= args.n) return;
    fp_t x = fp_t::load(a + 12 * i), y = fp_t::load(b + 12 * i), r;
    switch (op) {
        case 0: r = fp_t::mul(x, y); break;
        case 1: r = fp_t::sqr(x); break;
        case 2: r = fp_t::add(x, y); break;
        case 3: r = fp_t::sub(x, y); break;
        case 4: r = fp_t::from_mont(x); break;
        case 6: r = fp_t::mul(x, fp_t::sub_wide(y, x)); break;
        case 7: r = fp_t::mul(x, fp_t::add_wide(x, y)); break;
        case 8: if (!fp_inv_batched(x, r)) r = fp_t::zero(); break;
        case 9: r = fp_inv_binary(x); break;
        case 10: r = fp_t::mul(x, fp_t::mul_unreduced(x, y)); break;
        case 11: fp_t::mul_unreduced(x, y).store(out + 12 * i); return;
        case 12:
            r = fp_t::reduce(fp_t::mul_unreduced(fp_t::mul_unreduced(x, y), fp_t::sub_wide(y, x)));
            break;
        case 13: r = fp_t::reduce(fp_t::sqr_unreduced(fp_t::mul_unreduced(x, y))); break;
        case 14:
            r = fp_t::reduce(fp_t::sub_unreduced(fp_t::mul_unreduced(x, y), fp_t::add_wide(x, y)));
            break;
        case 15: r = fp_t::neg(x); break;
        case 16: r = fp_t::reduce(fp_t::mul_unreduced(fp_t::mul_unreduced(x, y), x)); break;
        default: r = fp_t::inv(x); break;
    }
    r.store(out + 12 * i);
}

// op: 0 = mul, 1 = sqr, 2 = add, 3 = sub, 5 = inverse (as fp_op_test)
extern "C" __global__ void fp2_op_test(const fp_op_args args) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= args.n) return;
    fp2_t x = fp2_t::load(args.a + 24 * i), y = fp2_t::load(args.b + 24 * i), r;
    switch (args.op) {
        case 0: r = fp2_t::mul(x, y); break;
        case 1: r = fp2_t::sqr(x); break;
        case 2: r = fp2_t::add(x, y); break;
        case 3: r = fp2_t::sub(x, y); break;
        default: r = fp2_t::inv(x); break;
    }
    r.store(args.out + 24 * i);
}

// G1: out[i] (Jacobian) = op(a[i], b[i]); op 0: a + b (mixed add into XYZZ),
// 1: 2a, 2: XYZZ(a) + XYZZ(b) full add, 3: a + a through the mixed-add path.
extern "C" __global__ void g1_op_test(const g1_op_args args) {
    const u32* a = args.a;
    const u32* b = args.b;
    u32* out = args.out;
    const u32 op = args.op;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= args.n) return;
    affine_t p = affine_t::load(a + 24 * i), q = affine_t::load(b + 24 * i);
    xyzz_t r = xyzz_t::from_affine(p);
    switch (op) {
        case 0: if (!q.is_inf()) r.add_affine(q.x, q.y); break;
        case 1: r.dbl(); break;
        case 2: { xyzz_t s = xyzz_t::from_affine(q); s.dbl(); if (!q.is_inf()) s.add_affine(q.x, fp_t::neg(q.y)); r.add(s); } break;
        default: if (!p.is_inf()) r.add_affine(p.x, p.y); break;
    }
    r.store_jacobian(out + 36 * i);
}

// G2: as g1_op_test
extern "C" __global__ void g2_op_test(const g1_op_args args) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= args.n) return;
    g2_affine_t p = g2_affine_t::load(args.a + 48 * i), q = g2_affine_t::load(args.b + 48 * i);
    g2_xyzz_t r = g2_xyzz_t::from_affine(p);
    switch (args.op) {
        case 0: if (!q.is_inf()) r.add_affine(q.x, q.y); break;
        case 1: r.dbl(); break;
        case 2: { g2_xyzz_t s = g2_xyzz_t::from_affine(q); s.dbl(); if (!q.is_inf()) s.add_affine(q.x, fp2_t::neg(q.y)); r.add(s); } break;
        default: if (!p.is_inf()) r.add_affine(p.x, p.y); break;
    }
    r.store_jacobian(args.out + 72 * i);
}

// Throughput: each thread does `iters` dependent-chain multiplications on 4
// independent values; the result is written so nothing is optimised away.
extern "C" __global__ void fr_mul_bench(const fr_mul_bench_args args) {
    u32* data = args.data;
    const u32 iters = args.iters;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    fr_t a = fr_t::load(data + 32 * i), b = fr_t::load(data + 32 * i + 8);
    fr_t c = fr_t::load(data + 32 * i + 16), d = fr_t::load(data + 32 * i + 24);
    for (u32 k = 0; k < iters; k++) {
        a = fr_t::mul(a, b); c = fr_t::mul(c, d);
        b = fr_t::mul(b, c); d = fr_t::mul(d, a);
    }
    a.store(data + 32 * i); b.store(data + 32 * i + 8);
    c.store(data + 32 * i + 16); d.store(data + 32 * i + 24);
}

extern "C" __global__ void fp_mul_bench(const fp_mul_bench_args args) {
    u32* data = args.data;
    const u32 iters = args.iters;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t a = fp_t::load(data + 48 * i), b = fp_t::load(data + 48 * i + 12);
    fp_t c = fp_t::load(data + 48 * i + 24), d = fp_t::load(data + 48 * i + 36);
    for (u32 k = 0; k < iters; k++) {
        a = fp_t::mul(a, b); c = fp_t::mul(c, d);
        b = fp_t::mul(b, c); d = fp_t::mul(d, a);
    }
    a.store(data + 48 * i); b.store(data + 48 * i + 12);
    c.store(data + 48 * i + 24); d.store(data + 48 * i + 36);
}

// Benchmark helper: bases[i] = bases[i mod period] (tiling unique points of W words).
template <int W>
DEVI void tile_points(const tile_points_args& a) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n || i < a.period) return;
    const uint4* src = reinterpret_cast<const uint4*>(a.bases + W * (i % a.period));
    uint4* dst = reinterpret_cast<uint4*>(a.bases + W * i);
#pragma unroll
    for (int k = 0; k < W / 4; k++) dst[k] = src[k];
}
extern "C" __global__ void g1_tile_points(const tile_points_args a) { tile_points<24>(a); }
extern "C" __global__ void g2_tile_points(const tile_points_args a) { tile_points<48>(a); }
