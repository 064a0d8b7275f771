//! Zero-copy views of blstrs buffers as the u32 limb arrays the kernels use.
//!
//! blstrs::Scalar, G1Affine, G1Projective, G2Affine and G2Projective are `#[repr(transparent)]`
//! over blst_fr (4 x u64), blst_p1_affine (2 x 6 x u64), blst_p1 (3 x 6 x u64), blst_p2_affine
//! (2 x 2 x 6 x u64) and blst_p2 (3 x 2 x 6 x u64), all `#[repr(C)]`; on little-endian machines
//! their u64 limbs are exactly the kernels' 32-bit little-endian limbs (an Fp2 element is its
//! c0 then its c1). The size assertions below pin that.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

/// u32 words per Fr element
pub const FR_WORDS: usize = 8;
/// u32 words per affine G1 point
pub const AFFINE_WORDS: usize = 24;
/// u32 words per Jacobian G1 point
pub const JACOBIAN_WORDS: usize = 36;
/// u32 words per XYZZ bucket
pub const XYZZ_WORDS: usize = 48;

const _: () = assert!(std::mem::size_of::<Scalar>() == 4 * FR_WORDS);
const _: () = assert!(std::mem::size_of::<G1Affine>() == 4 * AFFINE_WORDS);
const _: () = assert!(std::mem::size_of::<G1Projective>() == 4 * JACOBIAN_WORDS);
const _: () = assert!(std::mem::align_of::<Scalar>() >= 4);
const _: () = assert!(std::mem::align_of::<G1Affine>() >= 4);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 4 * 2 * AFFINE_WORDS);
const _: () = assert!(std::mem::size_of::<G2Projective>() == 4 * 2 * JACOBIAN_WORDS);
const _: () = assert!(std::mem::align_of::<G2Affine>() >= 4);
#[cfg(not(target_endian = "little"))]
compile_error!("proofline-gpu assumes a little-endian host");

/// `&[Scalar]` as u32 limbs.
pub fn scalars_as_u32(s: &[Scalar]) -> &[u32] {
    // SAFETY: Scalar is repr(transparent) over blst_fr = repr(C) [u64; 4]; size and
    // alignment asserted above; every bit pattern is a valid u32.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u32>(), s.len() * FR_WORDS) }
}

/// `&mut [Scalar]` as u32 limbs (the GPU only writes reduced Montgomery values).
pub fn scalars_as_u32_mut(s: &mut [Scalar]) -> &mut [u32] {
    // SAFETY: as above; callers write only values produced by the Fr kernels,
    // which are fully reduced Montgomery representations.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u32>(), s.len() * FR_WORDS) }
}

/// `&[G1Affine]` as u32 limbs.
pub fn affines_as_u32(p: &[G1Affine]) -> &[u32] {
    // SAFETY: G1Affine is repr(transparent) over blst_p1_affine = repr(C) {blst_fp, blst_fp}.
    unsafe { std::slice::from_raw_parts(p.as_ptr().cast::<u32>(), p.len() * AFFINE_WORDS) }
}

/// `&[G2Affine]` as u32 limbs.
pub fn g2_affines_as_u32(p: &[G2Affine]) -> &[u32] {
    // SAFETY: G2Affine is repr(transparent) over blst_p2_affine = repr(C) {blst_fp2, blst_fp2},
    // blst_fp2 = repr(C) [blst_fp; 2]; size and alignment asserted above.
    unsafe { std::slice::from_raw_parts(p.as_ptr().cast::<u32>(), p.len() * 2 * AFFINE_WORDS) }
}

/// Builds a blst_fp from 12 little-endian u32 limbs (Montgomery form, no checks).
pub fn fp_from_u32(w: &[u32]) -> blst::blst_fp {
    let mut l = [0u64; 6];
    for (i, x) in l.iter_mut().enumerate() {
        *x = u64::from(w[2 * i]) | (u64::from(w[2 * i + 1]) << 32);
    }
    blst::blst_fp { l }
}

/// Builds a G1Projective (blst Jacobian) from 36 u32 limbs written by a kernel.
pub fn jacobian_from_u32(w: &[u32]) -> G1Projective {
    let p = blst::blst_p1 {
        x: fp_from_u32(&w[0..12]),
        y: fp_from_u32(&w[12..24]),
        z: fp_from_u32(&w[24..36]),
    };
    // SAFETY: G1Projective is repr(transparent) over blst_p1 (size asserted above);
    // the kernels write valid Jacobian coordinates of a G1 point (z = 0: infinity).
    unsafe { std::mem::transmute::<blst::blst_p1, G1Projective>(p) }
}

/// Scalar from 4 raw u64 limbs that are already in Montgomery form (value < r).
pub fn scalar_from_raw_montgomery(l: [u64; 4]) -> Scalar {
    Scalar::from(blst::blst_fr { l })
}

/// The 4 raw Montgomery limbs of a Scalar.
pub fn scalar_raw(s: &Scalar) -> [u64; 4] {
    blst::blst_fr::from(*s).l
}

/// Builds a G2Projective (blst Jacobian over Fp2) from 72 u32 limbs written by a kernel.
pub fn g2_jacobian_from_u32(w: &[u32]) -> G2Projective {
    let fp2 = |o: usize| blst::blst_fp2 {
        fp: [fp_from_u32(&w[o..o + 12]), fp_from_u32(&w[o + 12..o + 24])],
    };
    let p = blst::blst_p2 {
        x: fp2(0),
        y: fp2(24),
        z: fp2(48),
    };
    // SAFETY: G2Projective is repr(transparent) over blst_p2 (size asserted above); the kernels
    // write valid Jacobian coordinates of a G2 point (z = 0: infinity).
    unsafe { std::mem::transmute::<blst::blst_p2, G2Projective>(p) }
}
