//! GPU == CPU correctness tests for proofline-gpu's kernels and their host code, every kernel
//! variant of `MsmConfig` and `NttConfig` included. Every test skips (prints a line and
//! returns) when no GPU is usable, so `cargo test` passes on CPU-only CI (where the same
//! kernels run under the host emulation instead: `src/emu.rs`). Sizes:
//! PROOFLINE_GPU_TEST_MAX_LOG (default 16; the device suite runs 24; G2 MSMs stop at 2^20).
//! Sparse mix: PROOFLINE_GPU_TEST_MIX="zero,one". Every MSM runs under an arena sized by
//! `bytes.rs`, so a formula below what the code allocates fails here too.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;
use proofline_gpu::layout::{scalar_raw, scalars_as_u32};
use proofline_gpu::plan::ChunkWindows;
use proofline_gpu::testkit::*;
use proofline_gpu::{
    MsmConfig, NttConfig, NttKind, OnesSums, Precomputation, Residency, SparseTails,
};
use proofline_groth16::msm::{MsmPlan, SparseScalars};
use proofline_groth16::prover;
use rand::{RngCore, SeedableRng};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

fn gpu() -> Option<&'static TestGpu> {
    static CTX: OnceLock<Option<TestGpu>> = OnceLock::new();
    CTX.get_or_init(|| match TestGpu::open(0, false) {
        Ok(c) => {
            eprintln!(
                "gpu: {:?} images: {}",
                c.device().info(),
                c.device().kernel_images()
            );
            Some(c)
        }
        Err(e) => {
            eprintln!("SKIP: no GPU ({e})");
            None
        }
    })
    .as_ref()
}

fn max_log() -> u32 {
    std::env::var("PROOFLINE_GPU_TEST_MAX_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

fn mix() -> ScalarMix {
    std::env::var("PROOFLINE_GPU_TEST_MIX")
        .ok()
        .and_then(|s| {
            let v: Vec<f64> = s.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            (v.len() == 2).then(|| ScalarMix {
                zero: v[0],
                one: v[1],
            })
        })
        .unwrap_or_default()
}

/// fresh seed per run (printed, so a failure can be replayed)
fn seed() -> u64 {
    let s = std::env::var("PROOFLINE_GPU_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("seed = {s}");
    s
}

fn canonical_u32(s: &Scalar) -> [u32; 8] {
    let b = s.to_bytes_le();
    let mut o = [0u32; 8];
    for i in 0..8 {
        o[i] = u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    }
    o
}

fn mont_u32(s: &Scalar) -> [u32; 8] {
    let l = scalar_raw(s);
    let mut o = [0u32; 8];
    for i in 0..4 {
        o[2 * i] = l[i] as u32;
        o[2 * i + 1] = (l[i] >> 32) as u32;
    }
    o
}

#[test]
fn fr_ops_match_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1 << 14;
    let mut a = random_scalars(n, sd);
    let mut b = random_scalars(n, sd + 1);
    a[0] = Scalar::ZERO;
    a[1] = Scalar::ONE;
    a[2] = -Scalar::ONE;
    // the largest unreduced sum (2r - 2) and difference (2r - 1): both operands, or b over a
    // zero a, the element whose Montgomery words are r - 1 (-1 / R)
    let top = fr_montgomery_top();
    a[3] = top;
    b[3] = top;
    a[4] = Scalar::ZERO;
    b[4] = top;
    for (op, f) in [
        (
            FieldOp::Mul,
            (|x: &Scalar, y: &Scalar| x * y) as fn(&Scalar, &Scalar) -> Scalar,
        ),
        (FieldOp::Sqr, |x, _| x.square()),
        (FieldOp::Add, |x, y| x + y),
        (FieldOp::Sub, |x, y| x - y),
        (FieldOp::MulWideDifference, |x, y| x * (y - x)),
        (FieldOp::MulWideSum, |x, y| x * (x + y)),
    ] {
        let got = g.fr_op(&a, &b, op).expect("fr_op");
        for i in 0..n {
            assert_eq!(got[i], mont_u32(&f(&a[i], &b[i])), "{op:?} at {i}");
        }
    }
    let got = g.fr_op(&a, &b, FieldOp::FromMont).expect("fr_op");
    for i in 0..n {
        assert_eq!(got[i], canonical_u32(&a[i]), "from_mont at {i}");
    }
}

#[test]
fn fp_ops_match_blst() {
    let Some(g) = gpu() else { return };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed());
    let n = 1 << 14;
    let mut gen = || {
        let mut l = [0u64; 6];
        for x in l.iter_mut() {
            *x = rng.next_u64();
        }
        l[5] &= 0x0fff_ffff_ffff_ffff; // < p
        blst::blst_fp { l }
    };
    let mut a: Vec<blst::blst_fp> = (0..n).map(|_| gen()).collect();
    let mut b: Vec<blst::blst_fp> = (0..n).map(|_| gen()).collect();
    a[0] = blst::blst_fp { l: [0; 6] };
    // the element whose Montgomery words are p - 1, as both operands (the largest unreduced
    // sum) and as b over a zero a (the largest unreduced difference)
    let p_minus_1 = fp_montgomery_top();
    a[1] = p_minus_1;
    b[1] = p_minus_1;
    b[0] = p_minus_1;
    let aw: Vec<[u32; 12]> = a.iter().map(fp_words).collect();
    let bw: Vec<[u32; 12]> = b.iter().map(fp_words).collect();
    for op in [
        FieldOp::Mul,
        FieldOp::Sqr,
        FieldOp::Add,
        FieldOp::Sub,
        FieldOp::FromMont,
        FieldOp::Inverse,
        FieldOp::MulWideDifference,
        FieldOp::MulWideSum,
        FieldOp::InverseBatched,
        FieldOp::InverseBinary,
        FieldOp::MulUnreducedProduct,
        FieldOp::MulBothUnreduced,
        FieldOp::SqrUnreduced,
        FieldOp::SubUnreduced,
        FieldOp::Neg,
        FieldOp::MulUnreducedFirst,
    ] {
        let got = g.fp_op(&aw, &bw, op).expect("fp_op");
        for i in 0..n {
            let r = fp_op_reference(op, &a[i], &b[i]).expect("a reduced result");
            assert_eq!(got[i], fp_words(&r), "{op:?} at {i}");
        }
    }
    // the unreduced products themselves: each a b or a b + p, and the inputs reach the second
    let raw = g.fp_op(&aw, &bw, FieldOp::UnreducedProduct).expect("fp_op");
    let mut above_p = 0;
    for i in 0..n {
        let mut r = blst::blst_fp::default();
        // SAFETY: plain blst field arithmetic on valid values.
        unsafe { blst::blst_fp_mul(&mut r, &a[i], &b[i]) };
        match fp_unreduced_is(&raw[i], &fp_words(&r)) {
            Some(plus_p) => above_p += plus_p as usize,
            None => panic!("unreduced product at {i} is neither a b nor a b + p"),
        }
    }
    assert!(above_p > 0, "no unreduced product at or above p in {n}");
}

#[test]
fn g1_ops_match_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 4096;
    let mut a = random_points(n, sd);
    let mut b = random_points(n, sd + 7);
    a[0] = G1Affine::identity();
    b[1] = G1Affine::identity();
    b[2] = a[2]; // doubling through addition
    b[3] = -a[3]; // P + (-P)
    for op in [
        CurveOp::Add,
        CurveOp::Double,
        CurveOp::AddFull,
        CurveOp::AddSelf,
    ] {
        let got = g.g1_op(&a, &b, op).expect("g1_op");
        for i in 0..n {
            let (pa, pb) = (G1Projective::from(a[i]), G1Projective::from(b[i]));
            let want = match op {
                CurveOp::Add | CurveOp::AddFull => pa + pb,
                CurveOp::Double | CurveOp::AddSelf => pa.double(),
            };
            assert_eq!(got[i], want, "{op:?} at {i}");
        }
    }
}

const KINDS: [NttKind; 4] = [
    NttKind::Forward,
    NttKind::Inverse,
    NttKind::CosetForward,
    NttKind::CosetInverse,
];

#[test]
fn ntt_small_matches_cpu() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    for lg in 0..=12u32.min(max_log()) {
        let x = random_scalars(1 << lg, sd + lg as u64);
        for kind in KINDS {
            let mut got = x.clone();
            g.ntt(&mut got, kind).expect("ntt");
            let mut want = x.clone();
            cpu_ntt(&mut want, kind);
            assert!(got == want, "ntt {kind:?} 2^{lg}");
        }
    }
}

#[test]
fn ntt_large_spot_checks() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(sd);
    let mut lg = 13;
    while lg <= max_log() {
        let n = 1usize << lg;
        let x = random_scalars(n, sd + lg as u64);
        let w = proofline_gpu::plan::root_of_unity(lg);
        let cg = proofline_gpu::plan::coset_generator();
        // forward: a_k = X(w^k)
        let mut f = x.clone();
        g.ntt(&mut f, NttKind::Forward).expect("ntt");
        let mut cf = x.clone();
        g.ntt(&mut cf, NttKind::CosetForward).expect("ntt");
        for _ in 0..4 {
            let k = (rng.next_u64() as usize) % n;
            let wk = w.pow_vartime([k as u64]);
            assert_eq!(f[k], eval_poly(&x, wk), "forward 2^{lg} at {k}");
            assert_eq!(cf[k], eval_poly(&x, cg * wk), "coset forward 2^{lg} at {k}");
        }
        // round trips
        g.ntt(&mut f, NttKind::Inverse).expect("ntt");
        assert!(f == x, "inverse(forward) 2^{lg}");
        g.ntt(&mut cf, NttKind::CosetInverse).expect("ntt");
        assert!(cf == x, "coset inverse(coset forward) 2^{lg}");
        eprintln!("ntt 2^{lg} ok");
        lg += if lg < 16 { 1 } else { 2 };
    }
}

#[test]
fn h_poly_matches_cpu() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    for lg in [0u32, 1, 2, 5, 10, 11, 12] {
        let n = 1 << lg;
        let a = random_scalars(n, sd + 1);
        let b = random_scalars(n, sd + 2);
        let product = prover::pointwise_product(&a, &b);
        for (name, cfg) in NttConfig::variants() {
            // any c where the sequence takes any, else the a∘b of a satisfied witness
            let c = if cfg.h.takes_any_c() {
                random_scalars(n, sd + 3)
            } else {
                product.clone()
            };
            let mut want = a.clone();
            cpu_h_poly(&mut want, &b, &c);
            let mut got = a.clone();
            g.h_poly(&mut got, &b, &c, &cfg).expect("h_poly");
            assert!(got == want, "h_poly 2^{lg}, {name}");
        }
    }
}

#[test]
fn h_poly_large_identity() {
    // with c = a*b on the domain, H(x) Z(x) = A(x) B(x) - C(x) as polynomials
    let Some(g) = gpu() else { return };
    let sd = seed();
    let mut lg = 14;
    while lg <= max_log() {
        let n = 1usize << lg;
        let a = random_scalars(n, sd + 11);
        let b = random_scalars(n, sd + 12);
        let c = prover::pointwise_product(&a, &b);
        let (mut ca, mut cb, mut cc) = (a.clone(), b.clone(), c.clone());
        g.ntt(&mut ca, NttKind::Inverse).expect("ntt");
        g.ntt(&mut cb, NttKind::Inverse).expect("ntt");
        g.ntt(&mut cc, NttKind::Inverse).expect("ntt");
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(sd);
        let x = Scalar::random(&mut rng);
        let z = x.pow_vartime([n as u64]) - Scalar::ONE;
        let rhs = eval_poly(&ca, x) * eval_poly(&cb, x) - eval_poly(&cc, x);
        let mut first: Option<Vec<Scalar>> = None;
        for (name, cfg) in NttConfig::variants() {
            let mut h = a.clone();
            g.h_poly(&mut h, &b, &c, &cfg).expect("h_poly");
            assert_eq!(h[n - 1], Scalar::ZERO, "deg H <= n - 2 at 2^{lg}, {name}");
            assert_eq!(eval_poly(&h, x) * z, rhs, "h identity 2^{lg}, {name}");
            // and the variants agree on every coefficient
            match &first {
                Some(f) => assert!(*f == h, "h_poly variants differ at 2^{lg}"),
                None => first = Some(h),
            }
        }
        eprintln!("h_poly 2^{lg} ok");
        lg += 2;
    }
}

fn msm_sizes() -> Vec<usize> {
    let mut v = vec![1usize, 2, 3, 100, 1000];
    let mut lg = 10;
    while lg <= max_log() {
        v.push(1 << lg);
        lg += 2;
    }
    v
}

#[test]
fn msm_dense_matches_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let sizes = msm_sizes();
    let maxn = *sizes.iter().max().unwrap_or(&1);
    let points = random_points(maxn, sd);
    let scalars = random_scalars(maxn, sd + 1);
    let bases = g.tiled_points(&points, maxn).expect("upload");
    for &n in &sizes {
        let want = cpu_msm(&points[..n], &scalars[..n]);
        for (name, cfg) in MsmConfig::single_msm_variants() {
            let got = g.msm(&points[..n], &scalars[..n], &cfg).expect("msm");
            assert_eq!(got, want, "dense msm n = {n}, {name}");
            let s = g.scalars(&scalars[..n]).expect("upload");
            let (got, _) = g.msm_resident(&bases, &s, &cfg).expect("msm");
            assert_eq!(got, want, "resident msm n = {n}, {name}");
        }
        eprintln!("msm {n} ok");
    }
}

/// Windows split between two MSMs over the same bases (the layout of the largest chunks; here
/// at the test sizes), with scalars whose low digits carry into the high part.
#[test]
fn split_windows_match_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1usize << max_log().min(18);
    let points = random_points(n, sd + 30);
    let scalars = scalars_around_bits(n, &[168, 180, 156], sd + 31);
    let want = cpu_msm(&points, &scalars);
    let splits = [
        ChunkWindows::split(21, 8),
        ChunkWindows::split(9, 20),
        ChunkWindows::split(12, 13),
    ];
    for windows in &splits {
        for (name, cfg) in MsmConfig::single_msm_variants() {
            let got = g
                .msm_windows(&points, &scalars, windows, &cfg)
                .expect("msm");
            assert_eq!(got, want, "{windows:?}, n = {n}, {name}");
        }
    }
}

/// The sparse stage's three G1 queries over bases they share (plain and with their ones' pair
/// and triple sums), their tails apart and together (`SparseTails::Together`: one Pippenger chunk for the
/// three): equal to blstrs at the measured PoRep mixes, with a query without a tail between two
/// with one.
#[test]
fn sparse_g1_tails_together_match_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1usize << max_log();
    let points = random_points(n, sd + 7);
    let plain = g.tiled_points(&points, n).expect("bases");
    let summed = [OnesSums::Pairs, OnesSums::Triples].map(|sums| {
        (
            sums,
            g.tiled_points_summed(&points, n, sums)
                .expect("summed bases"),
        )
    });
    let together = MsmConfig {
        sparse_tails: SparseTails::Together,
        ..MsmConfig::default()
    };
    let lens = [n, n - n / 100, n / 4];
    let (l, b, ones) = (ScalarMix::L_8MIB, ScalarMix::B_8MIB, ScalarMix::ONES);
    for (k, mixes) in [[l, l, b], [l, ones, b]].into_iter().enumerate() {
        let scalars: Vec<Vec<Scalar>> = (0..3)
            .map(|q| mixed_scalars(lens[q], mixes[q], sd + 200 + 3 * k as u64 + q as u64))
            .collect();
        let want: Vec<G1Projective> = (0..3)
            .map(|q| cpu_msm(&points[..lens[q]], &scalars[q]))
            .collect();
        let plan = MsmPlan {
            l: SparseScalars::from_dense(&scalars[0]),
            a: SparseScalars::from_dense(&scalars[1]),
            b: SparseScalars::from_dense(&scalars[2]),
        };
        for (name, cfg) in [("apart", MsmConfig::default()), ("together", together)] {
            let (got, _) = g.msm_sparse_g1_resident(&plain, &plan, &cfg).expect("msm");
            assert_eq!(got[..], want[..], "{name}, {mixes:?}");
            for (sums, bases) in &summed {
                let (got, _) = g.msm_sparse_g1_summed(bases, &plan, &cfg).expect("msm");
                assert_eq!(got[..], want[..], "{name} over {sums:?}, {mixes:?}");
            }
        }
    }
}

#[test]
fn msm_sparse_matches_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let sizes = msm_sizes();
    let maxn = *sizes.iter().max().unwrap_or(&1);
    let mut points = random_points(maxn, sd + 5);
    points[maxn / 2] = G1Affine::identity();
    for (mi, m) in [
        mix(),
        // the measured splits of a real 8MiB PoRep partition (docs/filecoin.md): L's, and
        // B's, which has the largest "other" share (8 %)
        ScalarMix::L_8MIB,
        ScalarMix::B_8MIB,
        ScalarMix::ONES,
        ScalarMix::ZEROS,
        ScalarMix {
            zero: 0.9,
            one: 0.05,
        },
    ]
    .into_iter()
    .enumerate()
    {
        let scalars = mixed_scalars(maxn, m, sd + 100 + mi as u64);
        for &n in &sizes {
            let want = cpu_msm(&points[..n], &scalars[..n]);
            // the CPU's split, taken as it is
            let split = SparseScalars::from_dense(&scalars[..n]);
            for (name, cfg) in MsmConfig::single_msm_variants() {
                let got = g
                    .msm_sparse(&points[..n], &split, Residency::Resident, 0, &cfg)
                    .expect("msm");
                assert_eq!(got, want, "sparse msm n = {n} mix {m:?}, {name}");
                // the dense path must agree on the same mixed scalars
                let got = g.msm(&points[..n], &scalars[..n], &cfg).expect("msm");
                assert_eq!(
                    got, want,
                    "dense msm on mixed scalars n = {n} mix {m:?}, {name}"
                );
            }
            // bases streamed from the host in chunks of a prime number of points
            let got = g
                .msm_sparse(
                    &points[..n],
                    &split,
                    Residency::Streamed,
                    997,
                    &MsmConfig::default(),
                )
                .expect("msm");
            assert_eq!(got, want, "streamed sparse msm n = {n} mix {m:?}");
            // resident bases followed by their ones' pair or triple sums
            for sums in [OnesSums::Pairs, OnesSums::Triples] {
                let summed = g.tiled_points_summed(&points[..n], n, sums).expect("sums");
                let (got, _) = g
                    .msm_sparse_summed(&summed, &split, &MsmConfig::default())
                    .expect("msm");
                assert_eq!(got, want, "sparse msm over {sums:?} n = {n} mix {m:?}");
            }
        }
        eprintln!("sparse mix {m:?} ok");
    }
}

#[test]
fn msm_repeated_scalars_and_edge_cases() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1 << 12;
    let points = random_points(n, sd);
    for (name, cfg) in MsmConfig::single_msm_variants() {
        // one big bucket: every scalar is 2, or -1
        for s in [Scalar::from(2u64), -Scalar::ONE, Scalar::from(1u64 << 40)] {
            let scalars = vec![s; n];
            let want = cpu_msm(&points, &scalars);
            assert_eq!(g.msm(&points, &scalars, &cfg).expect("msm"), want, "{name}");
            let split = SparseScalars::from_dense(&scalars);
            assert_eq!(
                g.msm_sparse(&points, &split, Residency::Resident, 0, &cfg)
                    .expect("msm"),
                want,
                "{name}"
            );
        }
        // same point repeated: bucket additions hit the doubling case
        let same = vec![points[0]; n];
        let scalars = random_scalars(n, sd + 3);
        let want = cpu_msm(&same, &scalars);
        assert_eq!(g.msm(&same, &scalars, &cfg).expect("msm"), want, "{name}");
        // empty
        assert_eq!(
            g.msm(&[], &[], &cfg).expect("msm"),
            G1Projective::identity()
        );
    }
    // layout: host bytes upload unchanged
    assert_eq!(scalars_as_u32(&[Scalar::ONE]).len(), 8);
}

fn fp2_words(f: &blst::blst_fp2) -> [u32; 24] {
    let mut o = [0u32; 24];
    o[..12].copy_from_slice(&fp_words(&f.fp[0]));
    o[12..].copy_from_slice(&fp_words(&f.fp[1]));
    o
}

#[test]
fn fp2_and_g2_ops_match_blst() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(sd);
    let n = 1 << 12;
    let mut fp = || {
        let mut l = [0u64; 6];
        for x in l.iter_mut() {
            *x = rng.next_u64();
        }
        l[5] &= 0x0fff_ffff_ffff_ffff;
        blst::blst_fp { l }
    };
    let mut a: Vec<blst::blst_fp2> = (0..n)
        .map(|_| blst::blst_fp2 { fp: [fp(), fp()] })
        .collect();
    let b: Vec<blst::blst_fp2> = (0..n)
        .map(|_| blst::blst_fp2 { fp: [fp(), fp()] })
        .collect();
    a[0] = blst::blst_fp2::default();
    a[1].fp[1] = blst::blst_fp::default();
    let aw: Vec<[u32; 24]> = a.iter().map(fp2_words).collect();
    let bw: Vec<[u32; 24]> = b.iter().map(fp2_words).collect();
    for op in [
        FieldOp::Mul,
        FieldOp::Sqr,
        FieldOp::Add,
        FieldOp::Sub,
        FieldOp::Inverse,
    ] {
        let got = g.fp2_op(&aw, &bw, op).expect("fp2_op");
        for i in 0..n {
            let mut r = blst::blst_fp2::default();
            // SAFETY: plain blst field arithmetic on valid values.
            unsafe {
                match op {
                    FieldOp::Mul => blst::blst_fp2_mul(&mut r, &a[i], &b[i]),
                    FieldOp::Sqr => blst::blst_fp2_sqr(&mut r, &a[i]),
                    FieldOp::Add => blst::blst_fp2_add(&mut r, &a[i], &b[i]),
                    FieldOp::Sub => blst::blst_fp2_sub(&mut r, &a[i], &b[i]),
                    _ => blst::blst_fp2_eucl_inverse(&mut r, &a[i]),
                }
            }
            assert_eq!(got[i], fp2_words(&r), "fp2 {op:?} at {i}");
        }
    }
    let m = 1024;
    let mut p = random_g2_points(m, sd);
    let mut q = random_g2_points(m, sd + 7);
    p[0] = G2Affine::identity();
    q[1] = G2Affine::identity();
    q[2] = p[2];
    q[3] = -p[3];
    for op in [
        CurveOp::Add,
        CurveOp::Double,
        CurveOp::AddFull,
        CurveOp::AddSelf,
    ] {
        let got = g.g2_op(&p, &q, op).expect("g2_op");
        for i in 0..m {
            let (pa, pb) = (G2Projective::from(p[i]), G2Projective::from(q[i]));
            let want = match op {
                CurveOp::Add | CurveOp::AddFull => pa + pb,
                CurveOp::Double | CurveOp::AddSelf => pa.double(),
            };
            assert_eq!(got[i], want, "g2 {op:?} at {i}");
        }
    }
}

#[test]
fn g2_msm_matches_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let max = 1usize << max_log().min(20);
    let mut points = random_g2_points(max, sd + 3);
    points[max / 3] = G2Affine::identity();
    let dense = random_scalars(max, sd + 4);
    let mut n = 1usize;
    while n <= max {
        let want = cpu_msm_g2(&points[..n], &dense[..n]);
        for (name, cfg) in MsmConfig::single_msm_variants() {
            let got = g.msm_g2(&points[..n], &dense[..n], &cfg).expect("msm");
            assert_eq!(got, want, "G2 dense n = {n}, {name}");
        }
        n = if n < 1024 { n * 5 } else { n * 4 };
    }
    // the measured B split of a real 8MiB partition, all ones, one giant bucket
    for (mi, mix) in [ScalarMix::B_8MIB, ScalarMix::ONES].into_iter().enumerate() {
        let scalars = mixed_scalars(max, mix, sd + 10 + mi as u64);
        let want = cpu_msm_g2(&points, &scalars);
        let split = SparseScalars::from_dense(&scalars);
        for (name, cfg) in MsmConfig::single_msm_variants() {
            let got = g
                .msm_g2_sparse(&points, &split, Residency::Resident, 0, &cfg)
                .expect("msm");
            assert_eq!(got, want, "G2 sparse {mix:?}, {name}");
        }
        let got = g
            .msm_g2_sparse(
                &points,
                &split,
                Residency::Streamed,
                4099,
                &MsmConfig::default(),
            )
            .expect("msm");
        assert_eq!(got, want, "G2 streamed sparse {mix:?}");
        // resident bases followed by their ones' pair or triple sums
        for sums in [OnesSums::Pairs, OnesSums::Triples] {
            let summed = g.tiled_g2_points_summed(&points, max, sums).expect("sums");
            let (got, _) = g
                .msm_g2_sparse_summed(&summed, &split, &MsmConfig::default())
                .expect("msm");
            assert_eq!(got, want, "G2 sparse over {sums:?} {mix:?}");
        }
    }
    let same = vec![-Scalar::ONE; 4096];
    let want = cpu_msm_g2(&points[..4096.min(max)], &same[..4096.min(max)]);
    let got = g
        .msm_g2(
            &points[..4096.min(max)],
            &same[..4096.min(max)],
            &MsmConfig::default(),
        )
        .expect("msm");
    assert_eq!(got, want, "G2 one bucket");
    eprintln!("G2 MSMs up to {max} ok");
}

#[test]
fn precomputed_msm_matches_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1usize << max_log().min(20);
    let points = random_points(n, sd + 21);
    let scalars = random_scalars(n, sd + 22);
    let want = cpu_msm(&points, &scalars);
    let bases = g.tiled_points(&points, n).expect("upload");
    let s = g.scalars(&scalars).expect("upload");
    for (window, copies) in [(16u32, 2u32), (22, 4), (22, 12), (24, 11)] {
        let pre = Precomputation { window, copies };
        let all = g.precompute(&bases, n, &pre).expect("precompute");
        // a layout over copies has few bucket sets: both window-combination sizes run it
        let runs = MsmConfig::single_msm_variants()
            .into_iter()
            .chain(MsmConfig::combine_variants());
        for (name, cfg) in runs {
            let (got, _) = g
                .msm_resident_precomputed(&all, &pre, n, &s, &cfg)
                .expect("msm");
            assert_eq!(got, want, "n = {n}, {pre:?}, {name}");
        }
    }
    // the planner's choice for this size with room for every copy
    let pre = Precomputation::plan(n, n, u64::MAX).expect("a plan");
    let all = g.precompute(&bases, n, &pre).expect("precompute");
    let (got, _) = g
        .msm_resident_precomputed(&all, &pre, n, &s, &MsmConfig::default())
        .expect("msm");
    assert_eq!(got, want, "n = {n}, planned {pre:?}");
    eprintln!("precomputed MSMs of {n} ok");
}

/// A query's MSM split against a held tail (gathered once, plain and over the planner's copies,
/// under each window-combination size, and with the ones over the bases' pair sums): equal to
/// blstrs at the measured PoRep mixes with the held list another partition's tail (part of it
/// this one's zeros and ones, part of this tail outside it) and this one's own.
#[test]
fn held_tail_msm_matches_blstrs() {
    let Some(g) = gpu() else { return };
    let sd = seed();
    let n = 1usize << max_log().min(20);
    let mut points = random_points(n, sd + 41);
    points[n / 3] = G1Affine::identity();
    let bases = g.tiled_points(&points, n).expect("upload");
    // the same bases followed by their ones' pair sums, as a resident set with its sums and
    // held tails has them
    let summed = g
        .tiled_points_summed(&points, n, OnesSums::Pairs)
        .expect("sums");
    for (k, m) in [ScalarMix::L_8MIB, ScalarMix::B_8MIB]
        .into_iter()
        .enumerate()
    {
        let scalars = mixed_scalars(n, m, sd + 42 + k as u64);
        let want = cpu_msm(&points, &scalars);
        let split = SparseScalars::from_dense(&scalars);
        let other = SparseScalars::from_dense(&mixed_scalars(n, m, sd + 50 + k as u64));
        for held in [other.tail_index, split.tail_index.clone()] {
            let len = held.len();
            let h = split.against_held(&held).expect("held split");
            let planned = Precomputation::plan(len, len, u64::MAX);
            for pre in [None, planned] {
                let tail = g.hold_tail(&bases, held.clone(), pre).expect("hold");
                let runs = std::iter::once(("default", MsmConfig::default()))
                    .chain(MsmConfig::combine_variants());
                for (name, cfg) in runs {
                    let (got, _) = g.msm_sparse_held(&bases, &tail, &h, &cfg).expect("msm");
                    assert_eq!(got, want, "n = {n} mix {m:?}, held {len}, {pre:?}, {name}");
                }
                let (got, _) = g
                    .msm_sparse_held_summed(&summed, &tail, &h, &MsmConfig::default())
                    .expect("msm over the pair sums");
                assert_eq!(
                    got, want,
                    "n = {n} mix {m:?}, held {len}, {pre:?}, pair sums"
                );
            }
        }
    }
    eprintln!("held-tail MSMs of {n} ok");
}
