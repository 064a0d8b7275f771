//! The stages of one partition proof, each a function over plain buffers.
//!
//! ```text
//! synthesize ─► check_shape ─► compute_h (backend) ─► msm_h (backend) ─┐
//!            └► MsmPlan::build ─► msm_l / msm_a / msm_b_g1 (backend) ───┼─► assemble ─► verify
//!                              └► msm_b_g2 (backend, CPU today) ────────┘
//! ```
//!
//! The actor pipeline calls these one by one from different actors; [`prove`] chains them on
//! the calling thread for tests, tools and benchmarks.

use bellpepper_core::SynthesisError;
use bellperson::groth16::{self, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use proofline_r1cs::{R1csError, RecordedSystem};
use rand_core::RngCore;

use crate::backend::{BackendError, ProverBackend};
use crate::msm::MsmPlan;
use crate::ntt::{self, NttError};
use crate::params::{ParamsShape, ProvingKey};
use crate::synthesis::{synthesize_boxed, Assignment, PartitionCircuit, SynthesizedPartition};

/// Errors of the staged prover.
#[derive(Debug, thiserror::Error)]
pub enum ProverError {
    /// The circuit failed to synthesize (unsatisfiable witness, missing value, ...).
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// A backend step failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The circuit and the parameters do not belong together.
    #[error(
        "circuit does not match the parameters: {what} is {found}, parameters expect {expected}"
    )]
    ShapeMismatch {
        /// Which size differs.
        what: &'static str,
        /// What the parameters expect.
        expected: usize,
        /// What the circuit has.
        found: usize,
    },
    /// The proof did not verify against the verifying key.
    #[error("proof failed verification")]
    VerificationFailed,
    /// A recorded constraint system could not be used (see `proofline-r1cs`).
    #[error("pre-compiled constraints: {0}")]
    Constraints(#[from] R1csError),
}

impl From<NttError> for ProverError {
    fn from(e: NttError) -> Self {
        ProverError::Backend(e.into())
    }
}

/// Checks that a synthesized partition fits the parameters before any heavy work.
pub fn check_shape(pk: &ProvingKey, p: &SynthesizedPartition) -> Result<(), ProverError> {
    check_shape_against(&pk.shape(), p)
}

/// Checks that a synthesized partition fits parameters of `shape`.
pub fn check_shape_against(
    shape: &ParamsShape,
    p: &SynthesizedPartition,
) -> Result<(), ProverError> {
    let asg = &p.assignment;
    check_counts(
        shape,
        QueryCounts {
            inputs: asg.input.len(),
            constraints: p.num_constraints(),
            aux: asg.aux.len(),
            a_aux: asg.a_aux_density.count_ones(),
            b: asg.b_input_density.count_ones() + asg.b_aux_density.count_ones(),
        },
    )
}

/// Checks that a recorded constraint system fits parameters of `shape`, before it is used.
pub fn check_recorded_shape(shape: &ParamsShape, sys: &RecordedSystem) -> Result<(), ProverError> {
    let c = sys.counts();
    check_counts(
        shape,
        QueryCounts {
            inputs: c.inputs,
            constraints: c.constraints,
            aux: c.aux,
            a_aux: sys.a_aux_density().count_ones(),
            b: sys.b_input_density().count_ones() + sys.b_aux_density().count_ones(),
        },
    )
}

/// The query lengths of parameters made for this partition's circuit: what [`check_shape`]
/// expects (tools that synthesize without parameters use it in their place).
pub fn params_shape_of(p: &SynthesizedPartition) -> ParamsShape {
    let asg = &p.assignment;
    let b = asg.b_input_density.count_ones() + asg.b_aux_density.count_ones();
    ParamsShape {
        num_inputs: asg.input.len(),
        h: p.num_constraints().max(1).next_power_of_two() - 1,
        l: asg.aux.len(),
        a: asg.input.len() + asg.a_aux_density.count_ones(),
        b_g1: b,
        b_g2: b,
    }
}

/// What the parameters' query lengths are checked against.
struct QueryCounts {
    inputs: usize,
    constraints: usize,
    aux: usize,
    a_aux: usize,
    b: usize,
}

fn check_counts(s: &ParamsShape, q: QueryCounts) -> Result<(), ProverError> {
    let n = q.constraints.max(1).next_power_of_two();
    let checks = [
        (
            "the number of public inputs (with ONE)",
            s.num_inputs,
            q.inputs,
        ),
        ("the domain size minus one", s.h, n - 1),
        ("the number of aux variables", s.l, q.aux),
        ("the A query length", s.a, q.inputs + q.a_aux),
        ("the B query length", s.b_g1, q.b),
    ];
    for (what, expected, found) in checks {
        if expected != found {
            return Err(ProverError::ShapeMismatch {
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}

/// H coefficients (domain size − 1 of them) from the A and B evaluations of a satisfied
/// witness, which it consumes; C's evaluations are their pointwise product.
pub fn compute_h(
    backend: &dyn ProverBackend,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
) -> Result<Vec<Scalar>, ProverError> {
    let n = ntt::pad_to_domain(&mut a)?;
    b.resize(n, Scalar::ZERO);
    backend.h_poly_of_product(&mut a, &mut b)?;
    drop(b);
    a.truncate(n - 1);
    Ok(a)
}

pub use crate::ntt::pointwise_product;

/// The five MSM results of one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmResults {
    /// `Σ h_i · H_i`.
    pub h: G1Projective,
    /// `Σ aux_i · L_i`.
    pub l: G1Projective,
    /// A query in G1.
    pub a: G1Projective,
    /// B query in G1.
    pub b_g1: G1Projective,
    /// B query in G2.
    pub b_g2: G2Projective,
}

/// The H MSM (dense).
pub fn msm_h(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    h: &[Scalar],
) -> Result<G1Projective, ProverError> {
    Ok(backend.msm_g1_dense(&pk.params().h, h)?)
}

/// The sparse G1 MSMs: L, A and B.
pub fn msm_sparse_g1(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    plan: &MsmPlan,
) -> Result<(G1Projective, G1Projective, G1Projective), ProverError> {
    let p = pk.params();
    let l = backend.msm_g1_sparse(&p.l, &plan.l, "L")?;
    let a = backend.msm_g1_sparse(&p.a, &plan.a, "A")?;
    let b = backend.msm_g1_sparse(&p.b_g1, &plan.b, "B_G1")?;
    Ok((l, a, b))
}

/// The G2 MSM: B.
pub fn msm_b_g2(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    plan: &MsmPlan,
) -> Result<G2Projective, ProverError> {
    Ok(backend.msm_g2_sparse(&pk.params().b_g2, &plan.b, "B_G2")?)
}

/// Fresh proof randomness `(r, s)`.
pub fn random_r_s(rng: &mut impl RngCore) -> (Scalar, Scalar) {
    (Scalar::random(&mut *rng), Scalar::random(&mut *rng))
}

/// Assembles the proof from the MSM results and the randomness `r`, `s`:
///
/// `A = α + Σa + r·δ`, `B = β + Σb + s·δ`, `C = H + L + s·A + r·B₁ − r·s·δ`,
/// where `B₁` is B computed in G1.
pub fn assemble(pk: &ProvingKey, m: &MsmResults, r: Scalar, s: Scalar) -> Proof<Bls12> {
    let vk = pk.vk();
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let g_a = G1Projective::from(vk.alpha_g1) + m.a + delta_g1 * r;
    let g_b = G2Projective::from(vk.beta_g2) + m.b_g2 + G2Projective::from(vk.delta_g2) * s;
    let b_g1 = G1Projective::from(vk.beta_g1) + m.b_g1 + delta_g1 * s;
    let g_c = m.h + m.l + g_a * s + b_g1 * r - delta_g1 * (r * s);
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}

/// Verifies a proof; `public_inputs` excludes ONE.
pub fn verify(
    pk: &ProvingKey,
    proof: &Proof<Bls12>,
    public_inputs: &[Scalar],
) -> Result<bool, ProverError> {
    if public_inputs.len() + 1 != pk.vk().ic.len() {
        return Err(ProverError::ShapeMismatch {
            what: "the number of public inputs (with ONE)",
            expected: pk.vk().ic.len(),
            found: public_inputs.len() + 1,
        });
    }
    Ok(groth16::verify_proof(pk.pvk(), proof, public_inputs)?)
}

/// The public inputs of a synthesized partition, without ONE.
pub fn public_inputs(asg: &Assignment) -> &[Scalar] {
    asg.input.get(1..).unwrap_or(&[])
}

/// Runs every stage on the calling thread: synthesis, H, the five MSMs, assembly, verification.
pub fn prove(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    circuit: Box<dyn PartitionCircuit>,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bls12>, Vec<Scalar>), ProverError> {
    let synth = synthesize_boxed(circuit)?;
    prove_synthesized(backend, pk, synth, rng)
}

/// [`prove`] from an already synthesized partition (plain or pre-compiled synthesis).
pub fn prove_synthesized(
    backend: &dyn ProverBackend,
    pk: &ProvingKey,
    synth: SynthesizedPartition,
    rng: &mut impl RngCore,
) -> Result<(Proof<Bls12>, Vec<Scalar>), ProverError> {
    check_shape(pk, &synth)?;
    let SynthesizedPartition { a, b, assignment } = synth;
    let plan = MsmPlan::build(&assignment);
    let h = compute_h(backend, a, b)?;
    let h_sum = msm_h(backend, pk, &h)?;
    drop(h);
    let (l, a, b_g1) = msm_sparse_g1(backend, pk, &plan)?;
    let b_g2 = msm_b_g2(backend, pk, &plan)?;
    let results = MsmResults {
        h: h_sum,
        l,
        a,
        b_g1,
        b_g2,
    };
    let (r, s) = random_r_s(rng);
    let proof = assemble(pk, &results, r, s);
    let inputs = public_inputs(&assignment).to_vec();
    if !verify(pk, &proof, &inputs)? {
        return Err(ProverError::VerificationFailed);
    }
    Ok((proof, inputs))
}

/// The identity results, for callers that fill them in stage by stage.
impl Default for MsmResults {
    fn default() -> Self {
        MsmResults {
            h: G1Projective::identity(),
            l: G1Projective::identity(),
            a: G1Projective::identity(),
            b_g1: G1Projective::identity(),
            b_g2: G2Projective::identity(),
        }
    }
}
