//! The `porep-c2` job kind: a sealing worker's C1 output in, the partition circuits of
//! filecoin-proofs' stacked PoRep out.
//!
//! [`PorepC2Adapter::plan`] parses the C1 output once, checks it against the registered proof
//! and the request's prover id and sector id, computes every partition's public inputs with
//! storage-proofs' `StackedCompound::generate_public_inputs`, and returns one thunk per partition
//! that builds that partition's circuit on a synthesis thread ([`crate::porep_partition`]:
//! `StackedCompound::circuit`, the very call `seal_commit_phase2` makes, so the circuits are the
//! ones Filecoin's parameters and `verify_seal` expect; its witness alone runs the challenges in
//! parallel). The parsed vanilla proofs are moved into one `Arc` shared by all
//! thunks; nothing is copied per partition except what `StackedCompound::circuit` itself takes
//! for its partition. Every sector size and API version goes through the one generic
//! [`plan_shape`].

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::{
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB,
    SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, VanillaSealProof as RawProof};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use proofline_groth16::PartitionCircuit;
use proofline_jobs::{
    CircuitInfo, CircuitThunk, JobAdapter, JobError, JobPlan, JobRequest, ParamsSpec, PartitionPlan,
};
use serde::{Deserialize, Serialize};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg,
};

use crate::c1::{parse_input, C2Input};
use crate::porep_partition::{PorepPartition, Prepared};
use crate::{params, shapes, with_tree_shape, FilecoinConfig};

/// What identifies a sealed sector for `verify_seal` (everything but the proof). Small and
/// cloneable; kept by the caller after planning, when the C1 output itself is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealIdentity {
    /// Registered proof.
    pub registered_proof: RegisteredSealProof,
    /// Replica commitment.
    pub comm_r: [u8; 32],
    /// Data commitment.
    pub comm_d: [u8; 32],
    /// Ticket.
    pub ticket: [u8; 32],
    /// Interactive seed.
    pub seed: [u8; 32],
    /// Prover id.
    pub prover_id: [u8; 32],
    /// Sector number.
    pub sector_id: u64,
}

impl SealIdentity {
    /// The identity of a parsed input.
    pub fn of(input: &C2Input) -> Self {
        SealIdentity {
            registered_proof: input.c1.registered_proof,
            comm_r: input.c1.comm_r,
            comm_d: input.c1.comm_d,
            ticket: input.c1.ticket,
            seed: input.c1.seed,
            prover_id: input.prover_id,
            sector_id: input.sector_id,
        }
    }
}

/// The `porep-c2` adapter.
#[derive(Clone, Debug)]
pub struct PorepC2Adapter {
    config: FilecoinConfig,
}

impl PorepC2Adapter {
    /// Kind name.
    pub const KIND: &'static str = "porep-c2";

    /// An adapter reading parameters from `config.params_dir`.
    pub fn new(config: FilecoinConfig) -> Self {
        PorepC2Adapter { config }
    }

    /// The configuration.
    pub fn config(&self) -> &FilecoinConfig {
        &self.config
    }

    /// The parameter spec of a registered proof.
    pub fn params_spec(&self, rp: RegisteredSealProof) -> Result<ParamsSpec, JobError> {
        params::params_spec(rp, &self.config.params_dir, self.config.verify_digests)
    }

    /// The `.vk` file of a registered proof.
    pub fn vk_path(&self, rp: RegisteredSealProof) -> Result<PathBuf, JobError> {
        params::vk_path(rp, &self.config.params_dir).map_err(|e| JobError::Internal(e.to_string()))
    }

    /// Plans a request and also returns the sector's identity, for a final [`crate::verify_c2`].
    pub fn plan_with_identity(
        &self,
        req: &JobRequest,
    ) -> Result<(JobPlan, SealIdentity), JobError> {
        let input = parse_input(&req.input, req.payload.as_ref().map(|p| p.as_bytes()))?;
        let expected = proofline_jobs::expected_public_inputs(req)?;
        self.plan_input(input, req.circuit.as_deref(), expected)
    }

    /// Plans an input the caller has already parsed (the typed embedding API hands the C1
    /// output here as a struct: no JSON, no base64). `circuit`, if given, must be the C1
    /// output's registered proof; `expected_public_inputs`, if given, all partitions' public
    /// inputs concatenated.
    pub fn plan_input(
        &self,
        input: C2Input,
        circuit: Option<&str>,
        expected_public_inputs: Option<Vec<Scalar>>,
    ) -> Result<(JobPlan, SealIdentity), JobError> {
        let identity = SealIdentity::of(&input);
        let rp = identity.registered_proof;
        let rp_field = format!("{}.registered_proof", input.c1_field);
        shapes::check_supported(rp).map_err(|m| JobError::field(&rp_field, m))?;
        if let Some(name) = circuit {
            if name != shapes::name(rp) {
                return Err(JobError::field(
                    "circuit",
                    format!(
                        "the C1 output is for {}, not {name} (leave circuit out for porep-c2)",
                        shapes::name(rp)
                    ),
                ));
            }
        }
        let params = self.params_spec(rp)?;
        params.require_present(&shapes::name(rp))?;
        let size = u64::from(rp.sector_size());
        let partitions = with_tree_shape!(size, plan_shape(input), |s| Err(JobError::field(
            &rp_field,
            format!("unsupported sector size {s}")
        )))?;
        if let Some(expected) = expected_public_inputs {
            let all: Vec<Scalar> = partitions
                .iter()
                .flat_map(|p| p.public_inputs.iter().copied())
                .collect();
            if expected != all {
                return Err(JobError::field(
                    "public_inputs",
                    format!(
                        "do not match the public inputs derived from the C1 output ({} values, \
                         all partitions concatenated); leave public_inputs out for porep-c2",
                        all.len()
                    ),
                ));
            }
        }
        let plan = JobPlan {
            label: format!(
                "porep-c2 {} sector {}{} ({})",
                shapes::sector_size_label(size),
                identity.sector_id,
                crate::miner::actor_of_prover_id(&identity.prover_id)
                    .map(|id| format!(" of miner {id}"))
                    .unwrap_or_default(),
                shapes::name(rp)
            ),
            params,
            partitions,
            final_check: Some(final_check(identity)),
        };
        Ok((plan, identity))
    }
}

/// The whole proof must pass filecoin-proofs' own `verify_seal` logic (public inputs derived by
/// filecoin-proofs from the sector's identity, not by our plan) with the job's verifying key.
fn final_check(identity: SealIdentity) -> proofline_jobs::FinalCheck {
    Box::new(
        move |proof, pk| match crate::verify::verify_c2_with_vk(proof, &identity, pk.vk()) {
            Ok(true) => Ok(()),
            Ok(false) => Err("verify_seal rejected the assembled proof".into()),
            Err(e) => Err(format!("verify_seal could not check the proof: {e}")),
        },
    )
}

impl JobAdapter for PorepC2Adapter {
    fn kind(&self) -> &'static str {
        Self::KIND
    }

    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        self.plan_with_identity(req).map(|(plan, _)| plan)
    }

    fn circuits(&self) -> Vec<CircuitInfo> {
        shapes::supported()
            .filter_map(|rp| {
                let spec = self.params_spec(rp).ok()?;
                Some(CircuitInfo {
                    name: shapes::name(rp),
                    kind: Self::KIND.to_string(),
                    params_present: spec.path.is_file(),
                    params_path: spec.path,
                })
            })
            .collect()
    }
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;

fn public_inputs_of<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<Vec<Scalar>> {
    <Compound<Tree> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
    >>::generate_public_inputs(&p.pub_inputs, &p.pub_params, Some(k))
}

/// Moves the vanilla proofs out of the API's enum, checking that their shape is the registered
/// proof's.
fn take_vanilla<Tree: 'static + MerkleTreeTrait>(
    proofs: VanillaSealProof,
    sector_size: u64,
    field: &str,
) -> Result<Vec<Vec<RawProof<Tree>>>, JobError> {
    use VanillaSealProof::*;
    let (size, boxed): (u64, Box<dyn Any>) = match proofs {
        StackedDrg2KiBV1(p) => (SECTOR_SIZE_2_KIB, Box::new(p)),
        StackedDrg8MiBV1(p) => (SECTOR_SIZE_8_MIB, Box::new(p)),
        StackedDrg512MiBV1(p) => (SECTOR_SIZE_512_MIB, Box::new(p)),
        StackedDrg32GiBV1(p) => (SECTOR_SIZE_32_GIB, Box::new(p)),
        StackedDrg64GiBV1(p) => (SECTOR_SIZE_64_GIB, Box::new(p)),
    };
    if size != sector_size {
        return Err(JobError::field(
            format!("{field}.vanilla_proofs"),
            format!(
                "holds {} vanilla proofs, but registered_proof is a {} proof",
                shapes::sector_size_label(size),
                shapes::sector_size_label(sector_size)
            ),
        ));
    }
    boxed
        .downcast::<Vec<Vec<RawProof<Tree>>>>()
        .map(|b| *b)
        .map_err(|_| JobError::Internal("vanilla proof shape does not match the tree shape".into()))
}

/// Plans the partitions of one sector, whatever its size (tools and benchmarks; the adapter
/// checks the request around it).
pub fn plan_partitions(input: C2Input) -> Result<Vec<PartitionPlan>, JobError> {
    let size = u64::from(input.c1.registered_proof.sector_size());
    with_tree_shape!(size, plan_shape(input), |s| Err(JobError::Internal(
        format!("unsupported sector size {s}")
    )))
}

/// Plans the partitions of one sector; generic over the tree shape of its sector size.
pub fn plan_shape<Tree: 'static + MerkleTreeTrait>(
    input: C2Input,
) -> Result<Vec<PartitionPlan>, JobError> {
    let (prepared, rp) = prepare::<Tree>(input)?;
    let hint = shapes::constraints_hint(rp);
    (0..prepared.vanilla.len())
        .map(|k| {
            let public_inputs = public_inputs_of(&prepared, k).map_err(|e| {
                JobError::Internal(format!("public inputs of partition {k}: {e:#}"))
            })?;
            let shared = Arc::clone(&prepared);
            let circuit: CircuitThunk = Box::new(move || {
                let c = PorepPartition::new(shared, k)
                    .map_err(|e| JobError::Internal(format!("circuit of partition {k}: {e:#}")))?;
                Ok(Box::new(c) as Box<dyn PartitionCircuit>)
            });
            Ok(PartitionPlan {
                public_inputs,
                circuit,
                constraints_hint: hint,
            })
        })
        .collect()
}

/// Validates a sector's C1 output and prepares what its partition circuits share.
pub(crate) fn prepare<Tree: 'static + MerkleTreeTrait>(
    input: C2Input,
) -> Result<(Arc<Prepared<Tree>>, RegisteredSealProof), JobError> {
    let f = input.c1_field.as_str();
    let SealCommitPhase1Output {
        registered_proof: rp,
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    } = input.c1;
    let config = shapes::porep_config(rp);
    for (name, value) in [("comm_d", &comm_d), ("comm_r", &comm_r), ("seed", &seed)] {
        if value == &[0u8; 32] {
            return Err(JobError::field(format!("{f}.{name}"), "is all zeros"));
        }
    }
    let comm_r_safe: <Tree::Hasher as Hasher>::Domain =
        filecoin_proofs_api::fr32::bytes_into_fr(&comm_r)
            .map(Into::into)
            .map_err(|e| {
                JobError::field(format!("{f}.comm_r"), format!("not a field element: {e}"))
            })?;
    let comm_d_safe = DefaultPieceDomain::try_from_bytes(&comm_d)
        .map_err(|e| JobError::field(format!("{f}.comm_d"), format!("not a field element: {e}")))?;

    // The replica id recorded in the C1 output must be the one of this prover and sector.
    let expected = generate_replica_id::<Tree::Hasher, _>(
        &input.prover_id,
        input.sector_id,
        &ticket,
        comm_d,
        &config.porep_id,
    );
    let recorded: Scalar = replica_id.into();
    let expected: Scalar = expected.into();
    if recorded != expected {
        return Err(JobError::field(
            input.prover_field,
            format!(
                "{} and sector_id {} do not match the C1 output (its replica_id was derived \
                 from another prover id, sector number or ticket)",
                input.prover_field, input.sector_id
            ),
        ));
    }

    let vanilla = take_vanilla::<Tree>(vanilla_proofs, u64::from(config.sector_size), f)?;
    let pub_params = filecoin_proofs::parameters::public_params::<Tree>(&config)
        .map_err(|e| JobError::Internal(format!("public parameters of {rp:?}: {e:#}")))?;
    let partitions = usize::from(config.partitions);
    let per_partition = pub_params.challenges.num_challenges_per_partition();
    if vanilla.len() != partitions {
        return Err(JobError::field(
            format!("{f}.vanilla_proofs"),
            format!(
                "{} partitions of vanilla proofs, {rp:?} has {partitions}",
                vanilla.len()
            ),
        ));
    }
    if let Some((k, p)) = vanilla
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() != per_partition)
    {
        return Err(JobError::field(
            format!("{f}.vanilla_proofs[{k}]"),
            format!(
                "{} challenge proofs, {rp:?} has {per_partition} per partition",
                p.len()
            ),
        ));
    }

    let prepared = Arc::new(Prepared::<Tree> {
        pub_inputs: stacked::PublicInputs {
            replica_id: recorded.into(),
            tau: Some(stacked::Tau {
                comm_d: comm_d_safe,
                comm_r: comm_r_safe,
            }),
            k: None,
            seed: Some(seed),
        },
        pub_params,
        vanilla,
    });
    Ok((prepared, rp))
}
