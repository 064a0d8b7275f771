// proofline cuda/msm_g2.cu: BLS12-381 G2 multi-scalar multiplication: the G2 instances of the
// curve kernels of msm_curve.cuh and of the batch-affine rounds of msm_affine.cuh (their batched
// inversion in Fp2). The sort by bucket (msm_digits, the scans, msm_find_big), the rounds'
// halving and the listing of the ones are msm.cu's: they depend on the scalars only.
//
// Host orchestration: crates/proofline-gpu/src/msm/, generic over the curve. A G2 bucket is
// 96 words (four Fp2 coordinates), twice G1's: the tree reductions use blocks of RED_THREADS_G2
// (64) so that their shared memory stays at 24 KB, and the accumulation is capped at
// ACC_BLOCKS_PER_SM_G2 blocks per multiprocessor.
#include "g2.cuh"
#include "msm_curve.cuh"
#include "msm_affine.cuh"
#include "proofline_abi.cuh"

struct G2 {
    typedef fp2_t F;
    typedef g2_affine_t A;
    typedef g2_xyzz_t X;
    static constexpr u32 RED = RED_THREADS_G2;
    static DEVI void madd(X& acc, const F& x, const F& y) { curve_add_affine(acc, x, y); }
};

// G2 with the mixed addition inlined into the kernel (no call; fewer of the bucket's words in
// local memory): msm_g2_bucket_acc_inline, the default accumulation (`MsmConfig::g2_madd`:
// 84.5 against 118.3 ms for the B query's tail of a 32 GiB partition on the H200). The ones'
// sum keeps the call (inlined it measured 28.8 against 25.7 ms).
struct G2Inline : G2 {
    static DEVI void madd(X& acc, const F& x, const F& y) { acc.add_affine(x, y); }
};

extern "C" __global__ void __launch_bounds__(ACC_THREADS, ACC_BLOCKS_PER_SM_G2)
    msm_g2_bucket_acc(const bucket_acc_args a) {
    bucket_acc<G2>(a);
}
extern "C" __global__ void __launch_bounds__(SMALL_THREADS) msm_g2_bucket_fixup(const bucket_fixup_args a) {
    bucket_fixup<G2>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS_G2) msm_g2_big_partial(const big_partial_args a) {
    big_partial<G2>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS_G2) msm_g2_big_final(const big_final_args a) {
    big_final<G2>(a);
}
extern "C" __global__ void __launch_bounds__(SMALL_THREADS) msm_g2_bucket_reduce(const bucket_reduce_args a) {
    bucket_reduce<G2>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS_G2) msm_g2_window_combine(const window_combine_args a) {
    window_combine<G2>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS_G2) g2_xyzz_reduce(const xyzz_reduce_args a) {
    xyzz_reduce<G2>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS_G2) msm_g2_sum_ones(const sum_ones_args a) {
    sum_ones<G2>(a);
}
extern "C" __global__ void g2_gather(const gather_args a) { gather<G2>(a); }
extern "C" __global__ void msm_g2_ones_sums(const ones_sums_args a) { ones_sums<G2>(a); }
extern "C" __global__ void msm_g2_precompute(const precompute_args a) { precompute<G2>(a); }
extern "C" __global__ void __launch_bounds__(ACC_THREADS, ACC_BLOCKS_PER_SM_G2)
    msm_g2_bucket_acc_inline(const bucket_acc_args a) {
    bucket_acc<G2Inline>(a);
}


// batch-affine rounds (msm_affine.cuh) in G2: AFF_BLOCKS_PER_SM_G2 blocks per multiprocessor
// (up to 255 registers: two G2 points, the running inverse and the slope are live at once)
extern "C" __global__ void __launch_bounds__(AFF_THREADS, AFF_BLOCKS_PER_SM_G2)
    msm_g2_affine_fwd(const affine_round_args a) {
    affine_fwd<G2>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_THREADS, AFF_BLOCKS_PER_SM_G2)
    msm_g2_affine_bwd(const affine_round_args a) {
    affine_bwd<G2>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp2_batch_inv_up(const batch_inv_args a) {
    batch_inv_up<fp2_t>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp2_batch_inv_top(const batch_inv_args a) {
    batch_inv_top<fp2_t>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp2_batch_inv_down(const batch_inv_args a) {
    batch_inv_down<fp2_t>(a);
}
