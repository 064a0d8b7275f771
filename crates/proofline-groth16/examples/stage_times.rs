//! Times the CPU backend's heavy steps on random inputs at one size: the H polynomial from any
//! C (7 NTTs and the pointwise step), from C = A∘B (the prover's: 6 NTTs) and a dense G1 MSM.
//! `cargo run --release -p proofline-groth16 --example stage_times -- 18`
use std::time::Instant;

use blstrs::{G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use proofline_groth16::{CpuBackend, ProverBackend};
use rand::SeedableRng;
use rayon::prelude::*;

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let n = 1usize << log;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let rand_vec = |rng: &mut rand_chacha::ChaCha20Rng| {
        (0..n)
            .map(|_| Scalar::random(&mut *rng))
            .collect::<Vec<_>>()
    };
    let (mut a, mut b, mut c) = (rand_vec(&mut rng), rand_vec(&mut rng), rand_vec(&mut rng));
    let g = G1Projective::generator();
    // Distinct points cheaply: multiples of a random point.
    let base = G1Projective::random(&mut rng);
    let pts: Vec<_> = (0..n)
        .into_par_iter()
        .map(|i| (base * Scalar::from(i as u64 + 1) + g).to_affine())
        .collect();
    let (mut pa, mut pb) = (a.clone(), b.clone());
    let t = Instant::now();
    CpuBackend.h_poly(&mut a, &mut b, &mut c).unwrap();
    let h = t.elapsed().as_secs_f64();
    let t = Instant::now();
    CpuBackend.h_poly_of_product(&mut pa, &mut pb).unwrap();
    let hp = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let _ = CpuBackend.msm_g1_dense(&pts, &a).unwrap();
    let m = t.elapsed().as_secs_f64();
    println!(
        "{{\"log_n\":{log},\"h_poly_s\":{h:.4},\"h_poly_of_product_s\":{hp:.4},\"msm_g1_dense_s\":{m:.4},\"threads\":{}}}",
        rayon::current_num_threads()
    );
}
