//! Whole Groth16 proofs through a GPU slot's stages, the way the pipeline's compute actors run
//! them: the parameter set made resident (bases in VRAM, with or without precomputed copies of
//! the H bases, or tables only with the bases streamed from host memory), the H stage (evaluations up, H on the device, H MSM straight from the
//! device buffer), the sparse stage (L, A, B in G1 and B in G2) over the CPU's 0/1/tail split,
//! and over tails held from an earlier split.
//! Each stage runs under the bytes `bytes.rs` computes, every result equals the CPU backend's,
//! the proof verifies (and a tampered input does not), and the pool's high-water mark stays
//! within the leases.
//! Skips when no GPU is usable.

use bellperson::groth16;
use blstrs::Bls12;
use proofline_circuits::Sha256Preimage;
use proofline_gpu::bytes::{
    held_tails_bytes, resident_bytes, resident_bytes_precomputed, resident_bytes_summed,
    sparse_stage_bytes, sparse_stage_bytes_held,
};
use proofline_gpu::testkit::TestGpu;
use proofline_gpu::{
    HostQueries, OnesSums, Precomputation, Residency, SparseGroups, TailLayout, Tails,
};
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::synthesis::synthesize;
use proofline_groth16::{prover, CpuBackend, MsmResults, ProvingKey};
use rand::SeedableRng;

#[test]
fn sha256_proof_through_the_slot_stages_equals_cpu_and_verifies() {
    let g = match TestGpu::open(0, false) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("SKIP: no GPU ({e})");
            return;
        }
    };
    let (device, slot) = (g.device(), g.slot());
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    for blocks in [1usize, 4] {
        let params = groth16::generate_random_parameters::<Bls12, _, _>(
            Sha256Preimage::blank(blocks).unwrap(),
            &mut rng,
        )
        .unwrap();
        let pk = ProvingKey::new(params);
        let pre = Sha256Preimage::demo_preimage(blocks, 3);
        let synth = synthesize(Sha256Preimage::new(blocks, pre.clone()).unwrap()).unwrap();
        prover::check_shape(&pk, &synth).unwrap();
        let plan = MsmPlan::build(&synth.assignment);
        let other = Sha256Preimage::demo_preimage(blocks, 4);
        let other_plan = MsmPlan::build(
            &synthesize(Sha256Preimage::new(blocks, other).unwrap())
                .unwrap()
                .assignment,
        );
        let p = pk.params();
        let host = HostQueries {
            h: &p.h,
            l: &p.l,
            a: &p.a,
            b_g1: &p.b_g1,
            b_g2: &p.b_g2,
        };
        let log_n = (p.h.len() + 1).trailing_zeros();
        assert_eq!(1usize << log_n, p.h.len() + 1);

        // the CPU backend's results
        let h_cpu = prover::compute_h(&CpuBackend, synth.a.clone(), synth.b.clone()).unwrap();
        let h_msm = prover::msm_h(&CpuBackend, &pk, &h_cpu).unwrap();
        let (l, a, b_g1) = prover::msm_sparse_g1(&CpuBackend, &pk, &plan).unwrap();
        let b_g2 = prover::msm_b_g2(&CpuBackend, &pk, &plan).unwrap();

        // resident, streamed, resident with the ones' pair sums, and resident with the H
        // bases' precomputed copies (as many as the planner takes for this size)
        let h_plan = Precomputation::plan(p.h.len(), p.h.len(), u64::MAX);
        assert!(
            h_plan.is_some(),
            "no precomputation for {} points",
            p.h.len()
        );
        for (residency, h_pre, pairs) in [
            (Residency::Resident, None, OnesSums::Absent),
            (Residency::Streamed, None, OnesSums::Absent),
            (Residency::Resident, None, OnesSums::Pairs),
            (Residency::Resident, None, OnesSums::Triples),
            (Residency::Resident, h_plan, OnesSums::Absent),
        ] {
            device.reset_pool_high_water().unwrap();
            let before = device.pool_usage().unwrap();
            let sm = slot.sm_count();
            let (set_bytes, set) = match (h_pre, pairs) {
                (None, OnesSums::Absent) => {
                    let bytes = resident_bytes(log_n, &host.lens(), residency);
                    let set = slot.upload_resident(bytes, log_n, &host, residency, pairs);
                    (bytes, set.unwrap())
                }
                (None, OnesSums::Pairs | OnesSums::Triples) => {
                    let bytes = resident_bytes_summed(log_n, &host.lens(), pairs);
                    let set = slot.upload_resident(bytes, log_n, &host, residency, pairs);
                    (bytes, set.unwrap())
                }
                (Some(plan), _) => {
                    let bytes = resident_bytes_precomputed(log_n, &host.lens(), &plan);
                    let set = slot.upload_resident_precomputed(bytes, log_n, &host, plan, pairs);
                    (bytes, set.unwrap())
                }
            };
            assert_eq!(set.residency(), residency);
            assert_eq!(set.h_precomputation(), h_pre);
            assert_eq!(set.ones_sums(), pairs);
            let h_bytes = set.h_stage_bytes(sm);
            let (h, _) = slot
                .h_stage(h_bytes, [&synth.a, &synth.b], &set, &host)
                .unwrap();
            assert_eq!(
                h, h_msm,
                "H MSM, {blocks} block(s), {residency:?}, {h_pre:?}"
            );
            let shapes = [(&plan.l).into(), (&plan.a).into(), (&plan.b).into()];
            let s_bytes = sparse_stage_bytes(&shapes, residency, sm);
            let (s, _) = slot
                .sparse_stage(s_bytes, &plan, &set, &host, SparseGroups::G1AndG2)
                .unwrap();
            assert_eq!(
                (s.l, s.a, s.b_g1),
                (l, a, b_g1),
                "sparse G1 MSMs, {blocks} block(s), {residency:?}, {pairs:?}"
            );
            let s_b_g2 = s.b_g2.expect("the stage computes B in G2");
            assert_eq!(s_b_g2, b_g2, "B in G2, {blocks} block(s), {residency:?}");
            if residency == Residency::Resident && h_pre.is_none() {
                // the tails held from another preimage's split and from this one, gathered and
                // over copies, B's in G2 held or not: the same sums
                for (from, name) in [(&other_plan, "another split"), (&plan, "this split")] {
                    for held in [SparseGroups::G1AndG2, SparseGroups::G1Only] {
                        let lens = Tails::of(from, held);
                        for layout in TailLayout::largest_first() {
                            let t_bytes = held_tails_bytes(&lens, layout);
                            let tails = slot.hold_tails(t_bytes, &set, from, held).unwrap();
                            // the largest layout of those bytes (the same, or one that
                            // differs only where a tail is empty or takes no copies)
                            let granted = tails.layout();
                            assert_eq!(held_tails_bytes(&lens, granted), t_bytes);
                            assert_eq!(tails.precomputations(), granted.precomputations(&lens));
                            assert_eq!(tails.lens().g1, lens.g1);
                            let hb = sparse_stage_bytes_held(
                                &tails.shapes(&plan),
                                &(&plan.b).into(),
                                sm,
                            );
                            let (t, _) = slot
                                .sparse_stage_held(hb, &plan, &set, &tails, SparseGroups::G1AndG2)
                                .unwrap();
                            assert_eq!(
                                (t.l, t.a, t.b_g1, t.b_g2),
                                (l, a, b_g1, Some(b_g2)),
                                "over the tails of {name} held for {held:?}, {layout:?}, \
                                 {blocks} block(s), {pairs:?}"
                            );
                        }
                    }
                }
            }
            // never more device memory than the leases: the set's and one stage's at a time
            let after = device.pool_usage().unwrap();
            let leases = set_bytes + h_bytes.max(s_bytes);
            assert!(
                after.used_high.saturating_sub(before.used) <= leases,
                "pool high-water {} above the leases {leases} ({residency:?})",
                after.used_high - before.used
            );
            eprintln!(
                "sha256-{blocks} {residency:?}: pool high-water {} of leases {leases}",
                after.used_high - before.used
            );

            // the proof from these results verifies; tampered inputs do not
            let results = MsmResults {
                h,
                l: s.l,
                a: s.a,
                b_g1: s.b_g1,
                b_g2: s_b_g2,
            };
            let (r, t) = prover::random_r_s(&mut rng);
            let proof = prover::assemble(&pk, &results, r, t);
            let inputs = Sha256Preimage::public_inputs(&pre);
            assert!(prover::verify(&pk, &proof, &inputs).unwrap());
            let mut wrong = inputs.clone();
            wrong[0] += blstrs::Scalar::from(1u64);
            assert!(!prover::verify(&pk, &proof, &wrong).unwrap());
        }
        eprintln!("gpu proof of sha256-{blocks}: verified, resident, streamed, precomputed");
    }
}
