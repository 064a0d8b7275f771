//! The `window-post` and `winning-post` job kinds: the vanilla proofs a worker generated for its
//! challenged sectors in, the SNARK of filecoin-proofs' fallback PoSt out.
//!
//! The input is what filecoin-proofs-api's `generate_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` take: the registered PoSt proof, the challenge
//! randomness, the prover id, and the vanilla proofs (`generate_single_vanilla_proof`'s bytes,
//! one per challenged sector). The output is the `SnarkProof` those calls return inside their
//! single `(RegisteredPoStProof, SnarkProof)` entry: the partition proofs concatenated, 192
//! bytes each.
//!
//! [`PoStAdapter::plan`] parses every vanilla proof once, puts the sectors in ascending
//! sector-number order (the order the verifier, which takes a `BTreeMap` of replicas, derives
//! its public inputs in), moves the sector proofs into per-partition vanilla proofs exactly as
//! filecoin-proofs' `partition_vanilla_proofs` shapes them (WindowPoSt: `sector_count` sectors
//! per partition, the last one repeated to fill; WinningPoSt: the one sector's challenges
//! unrolled into single-challenge sector proofs), runs filecoin-proofs' vanilla check on them,
//! and derives each partition's public inputs with `FallbackPoStCompound::generate_public_inputs`
//! — for WinningPoSt with the public sectors the verifier uses (the challenged sector once per
//! circuit sector). One thunk per partition builds `FallbackPoStCompound::circuit` on a
//! synthesis thread from the shared, `Arc`ed partition proofs.
//!
//! The PoSt SNARK does not bind the prover id (its public inputs are the sectors' commitments
//! and challenged leaves). As in filecoin-proofs' own flow it must be a field element; for
//! WinningPoSt it is the sector *selection* (`generate_winning_post_sector_challenge`) that
//! depends on it, which the worker computed and the chain checks.

use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{get_num_partition_for_fallback_post, FallbackPoStSectorProof, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use proofline_groth16::PartitionCircuit;
use proofline_jobs::{
    CircuitInfo, CircuitThunk, JobAdapter, JobError, JobPlan, JobRequest, ParamsSpec, PartitionPlan,
};
use serde_json::Value;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, SectorProof,
};

use crate::fields::{self, guarded};
use crate::proofs::{self, ProofCircuit};
use crate::{params, shapes, with_tree_shape, FilecoinConfig};

/// Field names.
pub const F_PROOF: &str = "input.registered_proof";
/// Field names.
pub const F_RANDOMNESS: &str = "input.randomness";
/// Field names.
pub const F_PROVER: &str = "input.prover_id";
/// Field names.
pub const F_VANILLA: &str = "input.vanilla_proofs";

const KEYS: [&str; 4] = [
    "registered_proof",
    "randomness",
    "prover_id",
    "vanilla_proofs",
];

/// Which PoSt a job proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoStKind {
    /// WindowPoSt: every sector of a deadline's partitions, each 30 minutes.
    Window,
    /// WinningPoSt: the one sector the election challenged, within seconds.
    Winning,
}

impl PoStKind {
    /// The job kind name.
    pub fn name(self) -> &'static str {
        match self {
            PoStKind::Window => "window-post",
            PoStKind::Winning => "winning-post",
        }
    }

    /// filecoin-proofs' PoSt type.
    pub fn post_type(self) -> PoStType {
        match self {
            PoStKind::Window => PoStType::Window,
            PoStKind::Winning => PoStType::Winning,
        }
    }

    /// The kind of a registered proof.
    pub fn of(rp: RegisteredPoStProof) -> Self {
        match rp.typ() {
            PoStType::Window => PoStKind::Window,
            PoStType::Winning => PoStKind::Winning,
        }
    }

    /// The registered proofs of this kind.
    pub fn registered_proofs(self) -> impl Iterator<Item = RegisteredPoStProof> {
        proofs::ALL_POST
            .into_iter()
            .filter(move |rp| PoStKind::of(*rp) == self)
    }
}

/// What filecoin-proofs' `verify_window_post` / `verify_winning_post` take besides the proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoStIdentity {
    /// Registered proof.
    pub registered_proof: RegisteredPoStProof,
    /// Challenge randomness.
    pub randomness: [u8; 32],
    /// Prover id.
    pub prover_id: [u8; 32],
    /// The proved sectors and their replica commitments, ascending by sector number.
    pub sectors: Vec<(u64, [u8; 32])>,
}

/// A parsed request input.
#[derive(Clone, Debug)]
pub struct PoStInput {
    /// Registered proof.
    pub registered_proof: RegisteredPoStProof,
    /// Challenge randomness (a field element).
    pub randomness: [u8; 32],
    /// Prover id (a field element).
    pub prover_id: [u8; 32],
    /// The vanilla proofs' bytes, as the worker holds them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// Parses the `input` of a `kind` request (syntax and field elements; the vanilla proofs are
/// decoded when the sector shape is known).
pub fn parse_input(input: &Value, kind: PoStKind) -> Result<PoStInput, JobError> {
    let obj = fields::input_object(input, &KEYS)?;
    let registered_proof = fields::registered_proof(
        fields::required(obj, "registered_proof", "the registered PoSt proof")?,
        F_PROOF,
        &proofs::ALL_POST,
    )?;
    if PoStKind::of(registered_proof) != kind {
        return Err(JobError::field(
            F_PROOF,
            format!(
                "{} is a {} proof; send it as kind {}",
                proofs::name(registered_proof),
                PoStKind::of(registered_proof).name(),
                PoStKind::of(registered_proof).name()
            ),
        ));
    }
    let randomness = fields::field_element(
        fields::required(obj, "randomness", "the 32-byte challenge randomness")?,
        F_RANDOMNESS,
    )?;
    let prover_id = fields::field_element(
        fields::required(obj, "prover_id", "the 32-byte prover id")?,
        F_PROVER,
    )?;
    let vanilla_proofs = fields::base64_list(
        fields::required(
            obj,
            "vanilla_proofs",
            "the vanilla proofs (generate_single_vanilla_proof's bytes), base64",
        )?,
        F_VANILLA,
    )?;
    Ok(PoStInput {
        registered_proof,
        randomness,
        prover_id,
        vanilla_proofs,
    })
}

/// A request body for a PoSt job (tools and tests).
pub fn request_body(
    kind: PoStKind,
    registered_proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: &[u8; 32],
    vanilla_proofs: &[Vec<u8>],
) -> Value {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    serde_json::json!({
        "kind": kind.name(),
        "input": {
            "registered_proof": proofs::name(registered_proof),
            "randomness": hex::encode(randomness),
            "prover_id": hex::encode(prover_id),
            "vanilla_proofs": vanilla_proofs.iter().map(|p| b64.encode(p)).collect::<Vec<_>>(),
        }
    })
}

/// The `window-post` or `winning-post` adapter.
#[derive(Clone, Debug)]
pub struct PoStAdapter {
    kind: PoStKind,
    config: FilecoinConfig,
}

impl PoStAdapter {
    /// An adapter of `kind` reading parameters from `config.params_dir`.
    pub fn new(kind: PoStKind, config: FilecoinConfig) -> Self {
        PoStAdapter { kind, config }
    }

    /// Which PoSt.
    pub fn post_kind(&self) -> PoStKind {
        self.kind
    }

    /// The parameter spec of a registered proof.
    pub fn params_spec(&self, rp: RegisteredPoStProof) -> Result<ParamsSpec, JobError> {
        params::params_spec(rp, &self.config.params_dir, self.config.verify_digests)
    }

    /// Plans a request and also returns what the verifier needs besides the proof.
    pub fn plan_with_identity(
        &self,
        req: &JobRequest,
    ) -> Result<(JobPlan, PoStIdentity), JobError> {
        let input = parse_input(&req.input, self.kind)?;
        let rp = input.registered_proof;
        let name = proofs::name(rp);
        let params = self.params_spec(rp)?;
        params.require_present(&name)?;
        let size = u64::from(rp.sector_size());
        let (partitions, identity) = with_tree_shape!(size, plan_shape(input), |s| Err(
            JobError::field(F_PROOF, format!("unsupported sector size {s}"))
        ))?;
        fields::check_circuit_and_inputs(req, &name, &partitions)?;
        let plan = JobPlan {
            label: format!(
                "{} {} {} sector{} ({name})",
                self.kind.name(),
                shapes::sector_size_label(size),
                identity.sectors.len(),
                if identity.sectors.len() == 1 { "" } else { "s" },
            ),
            params,
            partitions,
            final_check: Some(final_check(identity.clone())),
        };
        Ok((plan, identity))
    }
}

/// The whole proof must pass filecoin-proofs' own PoSt verification logic with the job's
/// verifying key.
fn final_check(identity: PoStIdentity) -> proofline_jobs::FinalCheck {
    Box::new(
        move |proof, pk| match crate::verify::verify_post_with_vk(proof, &identity, pk.vk()) {
            Ok(true) => Ok(()),
            Ok(false) => Err("filecoin-proofs' PoSt verification rejected the proof".into()),
            Err(e) => Err(format!("PoSt verification could not check the proof: {e}")),
        },
    )
}

impl JobAdapter for PoStAdapter {
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        self.plan_with_identity(req).map(|(plan, _)| plan)
    }

    fn circuits(&self) -> Vec<CircuitInfo> {
        self.kind
            .registered_proofs()
            .filter_map(|rp| {
                let spec = self.params_spec(rp).ok()?;
                Some(CircuitInfo {
                    name: proofs::name(rp),
                    kind: self.kind.name().to_string(),
                    params_present: spec.path.is_file(),
                    params_path: spec.path,
                })
            })
            .collect()
    }

    fn default_priority(&self) -> i32 {
        match self.kind {
            PoStKind::Window => proofline_jobs::priority::WINDOW_POST,
            PoStKind::Winning => proofline_jobs::priority::WINNING_POST,
        }
    }
}

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type PartitionProof<Tree> = fallback::Proof<<Tree as MerkleTreeTrait>::Proof>;

/// Public inputs, public parameters and per-partition vanilla proofs of one job, shared by its
/// partition thunks.
struct Prepared<Tree: 'static + MerkleTreeTrait> {
    pub_inputs: fallback::PublicInputs<Domain<Tree>>,
    pub_params: fallback::PublicParams,
    partitions: Vec<PartitionProof<Tree>>,
}

fn public_inputs_of<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<Vec<Scalar>> {
    <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::generate_public_inputs(&p.pub_inputs, &p.pub_params, Some(k))
}

fn circuit_of<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<FallbackPoStCircuit<Tree>> {
    <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::circuit(
        &p.pub_inputs,
        Default::default(),
        &p.partitions[k],
        &p.pub_params,
        Some(k),
    )
}

/// Decodes the vanilla proofs and checks each one's shape: one sector, `challenges` inclusion
/// proofs.
fn decode_vanilla<Tree: 'static + MerkleTreeTrait>(
    bytes: Vec<Vec<u8>>,
    rp: RegisteredPoStProof,
    challenges: usize,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>, JobError> {
    bytes
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let f = format!("{F_VANILLA}[{i}]");
            let p: FallbackPoStSectorProof<Tree> = bincode1::deserialize(&b).map_err(|e| {
                JobError::field(
                    &f,
                    format!(
                        "not a {} vanilla proof (filecoin-proofs-api's bincode \
                         FallbackPoStSectorProof, as generate_single_vanilla_proof returns): {e}",
                        proofs::name(rp)
                    ),
                )
            })?;
            let sectors = &p.vanilla_proof.sectors;
            if sectors.len() != 1 {
                return Err(JobError::field(
                    &f,
                    format!(
                        "holds {} sector proofs; a sector's vanilla proof holds 1",
                        sectors.len()
                    ),
                ));
            }
            let n = sectors[0].inclusion_proofs.len();
            if n != challenges {
                return Err(JobError::field(
                    &f,
                    format!(
                        "holds {n} challenge proofs; {} challenges {challenges} per sector",
                        proofs::name(rp)
                    ),
                ));
            }
            Ok(p)
        })
        .collect()
}

/// Plans the partitions of one PoSt job; generic over the tree shape of its sector size.
pub fn plan_shape<Tree: 'static + MerkleTreeTrait>(
    input: PoStInput,
) -> Result<(Vec<PartitionPlan>, PoStIdentity), JobError> {
    let PoStInput {
        registered_proof: rp,
        randomness,
        prover_id,
        vanilla_proofs,
    } = input;
    let kind = PoStKind::of(rp);
    let config = rp.as_v1_config();
    let randomness_safe: Domain<Tree> = fields::fr32_of(&randomness, F_RANDOMNESS)?.into();
    let prover_id_safe: Domain<Tree> = fields::fr32_of(&prover_id, F_PROVER)?.into();

    let mut vanilla = decode_vanilla::<Tree>(vanilla_proofs, rp, config.challenge_count)?;
    if kind == PoStKind::Winning && vanilla.len() != config.sector_count {
        return Err(JobError::field(
            F_VANILLA,
            format!(
                "{} vanilla proofs; WinningPoSt proves {} challenged sector",
                vanilla.len(),
                config.sector_count
            ),
        ));
    }
    // The verifier derives the public inputs in ascending sector order.
    vanilla.sort_by_key(|p| u64::from(p.sector_id));
    if let Some(w) = vanilla
        .windows(2)
        .find(|w| w[0].sector_id == w[1].sector_id)
    {
        return Err(JobError::field(
            F_VANILLA,
            format!("sector {} has two vanilla proofs", w[0].sector_id),
        ));
    }
    let sectors: Vec<(u64, [u8; 32])> = vanilla
        .iter()
        .map(|p| {
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&p.comm_r));
            (u64::from(p.sector_id), comm_r)
        })
        .collect();
    let internal = |e: anyhow::Error| JobError::Internal(format!("{rp:?} parameters: {e:#}"));

    let (pub_params, pub_sectors, partitions) = match kind {
        PoStKind::Window => {
            let pub_params = window_post_public_params::<Tree>(&config).map_err(internal)?;
            let pub_sectors: Vec<_> = vanilla
                .iter()
                .map(|p| PublicSector {
                    id: p.sector_id,
                    comm_r: p.comm_r,
                })
                .collect();
            let count = get_num_partition_for_fallback_post(&config, vanilla.len());
            let per = pub_params.sector_count;
            let mut proofs = vanilla.into_iter();
            let partitions = (0..count)
                .map(|_| {
                    let mut sectors: Vec<SectorProof<Tree::Proof>> = proofs
                        .by_ref()
                        .take(per)
                        .flat_map(|p| p.vanilla_proof.sectors)
                        .collect();
                    // A short last partition repeats its last sector, as filecoin-proofs does.
                    if let Some(last) = sectors.last().cloned() {
                        sectors.resize(per, last);
                    }
                    fallback::Proof { sectors }
                })
                .collect::<Vec<_>>();
            (pub_params, pub_sectors, partitions)
        }
        PoStKind::Winning => {
            let pub_params = winning_post_public_params::<Tree>(&config).map_err(internal)?;
            let Some(p) = vanilla.pop() else {
                return Err(JobError::field(F_VANILLA, "must not be empty"));
            };
            let public = PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            };
            // The circuit has `sector_count` single-challenge sectors: the challenged sector's
            // inclusion proofs unrolled, and the verifier lists that sector once per circuit
            // sector.
            let pub_sectors = vec![public; pub_params.sector_count];
            let sectors: Vec<SectorProof<Tree::Proof>> = p
                .vanilla_proof
                .sectors
                .into_iter()
                .flat_map(|s| {
                    let (comm_c, comm_r_last) = (s.comm_c, s.comm_r_last);
                    s.inclusion_proofs
                        .into_iter()
                        .map(move |proof| SectorProof {
                            inclusion_proofs: vec![proof],
                            comm_c,
                            comm_r_last,
                        })
                })
                .collect();
            (pub_params, pub_sectors, vec![fallback::Proof { sectors }])
        }
    };
    let prepared = Prepared::<Tree> {
        pub_inputs: fallback::PublicInputs {
            randomness: randomness_safe,
            prover_id: prover_id_safe,
            sectors: pub_sectors,
            k: None,
        },
        pub_params,
        partitions,
    };
    // filecoin-proofs' vanilla check, as its partitioning step runs it before proving.
    let valid = guarded(F_VANILLA, || {
        FallbackPoSt::<Tree>::verify_all_partitions(
            &prepared.pub_params,
            &prepared.pub_inputs,
            &prepared.partitions,
        )
        .map_err(|e| JobError::field(F_VANILLA, format!("do not verify: {e:#}")))
    })?;
    if !valid {
        return Err(JobError::field(
            F_VANILLA,
            format!(
                "do not verify for this randomness and {} (filecoin-proofs' vanilla check: wrong \
                 randomness, another sector's data, or not the challenged leaves)",
                proofs::name(rp)
            ),
        ));
    }

    let prepared = Arc::new(prepared);
    let hint = crate::proofs::constraints_hint(ProofCircuit::PoSt(rp));
    let plans = (0..prepared.partitions.len())
        .map(|k| {
            let public_inputs = guarded(F_VANILLA, || {
                public_inputs_of(&prepared, k).map_err(|e| {
                    JobError::Internal(format!("public inputs of partition {k}: {e:#}"))
                })
            })?;
            let shared = Arc::clone(&prepared);
            let circuit: CircuitThunk = Box::new(move || {
                let c = circuit_of(&shared, k)
                    .map_err(|e| JobError::Internal(format!("circuit of partition {k}: {e:#}")))?;
                Ok(Box::new(c) as Box<dyn PartitionCircuit>)
            });
            Ok(PartitionPlan {
                public_inputs,
                circuit,
                constraints_hint: hint,
            })
        })
        .collect::<Result<Vec<_>, JobError>>()?;
    Ok((
        plans,
        PoStIdentity {
            registered_proof: rp,
            randomness,
            prover_id,
            sectors,
        },
    ))
}
