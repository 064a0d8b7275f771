//! The `snap-update` job kind: a SnapDeals sector update's vanilla partition proofs in, the
//! empty-sector-update SNARK out.
//!
//! The input is what filecoin-proofs-api's `generate_empty_sector_update_proof_with_vanilla`
//! takes: the registered update proof, the vanilla partition proofs
//! (`generate_partition_proofs`' `PartitionProofBytes`), and the old replica commitment, the new
//! one and the new data commitment. The output is the `EmptySectorUpdateProof` bytes that call
//! returns: the partition proofs concatenated, 192 bytes each (1 partition for 2KiB and 8MiB,
//! 16 for 32GiB and 64GiB).
//!
//! [`SnapUpdateAdapter::plan`] decodes the vanilla proofs once, runs filecoin-proofs' vanilla
//! check on them (`verify_partition_proofs`' logic), derives each partition's public inputs with
//! `EmptySectorUpdateCompound::generate_public_inputs(.., Some(k))` and returns one thunk per
//! partition that builds `EmptySectorUpdateCompound::circuit(.., Some(k))` from the shared,
//! `Arc`ed proofs. Parameters are the update circuit's own file (see [`crate::proofs`]).

use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::Domain;
use filecoin_proofs::SectorUpdateConfig;
use filecoin_proofs_api::RegisteredUpdateProof;
use proofline_groth16::PartitionCircuit;
use proofline_jobs::{
    CircuitInfo, CircuitThunk, JobAdapter, JobError, JobPlan, JobRequest, ParamsSpec, PartitionPlan,
};
use serde_json::Value;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use crate::fields::{self, guarded};
use crate::proofs::{self, ProofCircuit};
use crate::{params, shapes, with_tree_shape, FilecoinConfig};

/// Field names.
pub const F_PROOF: &str = "input.registered_proof";
/// Field names.
pub const F_COMM_R_OLD: &str = "input.comm_r_old";
/// Field names.
pub const F_COMM_R_NEW: &str = "input.comm_r_new";
/// Field names.
pub const F_COMM_D_NEW: &str = "input.comm_d_new";
/// Field names.
pub const F_VANILLA: &str = "input.vanilla_proofs";

const KEYS: [&str; 5] = [
    "registered_proof",
    "comm_r_old",
    "comm_r_new",
    "comm_d_new",
    "vanilla_proofs",
];

/// What filecoin-proofs' `verify_empty_sector_update_proof` takes besides the proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateIdentity {
    /// Registered update proof.
    pub registered_proof: RegisteredUpdateProof,
    /// Replica commitment before the update (the sector key's).
    pub comm_r_old: [u8; 32],
    /// Replica commitment after the update.
    pub comm_r_new: [u8; 32],
    /// Data commitment of the new data.
    pub comm_d_new: [u8; 32],
}

/// A parsed request input.
#[derive(Clone, Debug)]
pub struct UpdateInput {
    /// The sector and its commitments.
    pub identity: UpdateIdentity,
    /// The vanilla partition proofs' bytes, as the worker holds them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

fn commitment(
    obj: &serde_json::Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<[u8; 32], JobError> {
    let v = fields::field_element(fields::required(obj, key, "a 32-byte commitment")?, field)?;
    // filecoin-proofs refuses all-zero commitments (get_sector_update_inputs).
    if v == [0u8; 32] {
        return Err(JobError::field(field, "is all zeros"));
    }
    Ok(v)
}

/// Parses the `input` of a `snap-update` request (syntax and commitments; the vanilla proofs
/// are decoded when the sector shape is known).
pub fn parse_input(input: &Value) -> Result<UpdateInput, JobError> {
    let obj = fields::input_object(input, &KEYS)?;
    let registered_proof = fields::registered_proof(
        fields::required(obj, "registered_proof", "the registered update proof")?,
        F_PROOF,
        &proofs::ALL_UPDATE,
    )?;
    let identity = UpdateIdentity {
        registered_proof,
        comm_r_old: commitment(obj, "comm_r_old", F_COMM_R_OLD)?,
        comm_r_new: commitment(obj, "comm_r_new", F_COMM_R_NEW)?,
        comm_d_new: commitment(obj, "comm_d_new", F_COMM_D_NEW)?,
    };
    let vanilla_proofs = fields::base64_list(
        fields::required(
            obj,
            "vanilla_proofs",
            "the vanilla partition proofs (generate_partition_proofs' bytes), base64",
        )?,
        F_VANILLA,
    )?;
    Ok(UpdateInput {
        identity,
        vanilla_proofs,
    })
}

/// A request body for a `snap-update` job (tools and tests).
pub fn request_body(identity: &UpdateIdentity, vanilla_proofs: &[Vec<u8>]) -> Value {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    serde_json::json!({
        "kind": SnapUpdateAdapter::KIND,
        "input": {
            "registered_proof": proofs::name(identity.registered_proof),
            "comm_r_old": hex::encode(identity.comm_r_old),
            "comm_r_new": hex::encode(identity.comm_r_new),
            "comm_d_new": hex::encode(identity.comm_d_new),
            "vanilla_proofs": vanilla_proofs.iter().map(|p| b64.encode(p)).collect::<Vec<_>>(),
        }
    })
}

/// The `snap-update` adapter.
#[derive(Clone, Debug)]
pub struct SnapUpdateAdapter {
    config: FilecoinConfig,
}

impl SnapUpdateAdapter {
    /// Kind name.
    pub const KIND: &'static str = "snap-update";

    /// An adapter reading parameters from `config.params_dir`.
    pub fn new(config: FilecoinConfig) -> Self {
        SnapUpdateAdapter { config }
    }

    /// The parameter spec of a registered update proof.
    pub fn params_spec(&self, rp: RegisteredUpdateProof) -> Result<ParamsSpec, JobError> {
        params::params_spec(rp, &self.config.params_dir, self.config.verify_digests)
    }

    /// Plans a request and also returns what the verifier needs besides the proof.
    pub fn plan_with_identity(
        &self,
        req: &JobRequest,
    ) -> Result<(JobPlan, UpdateIdentity), JobError> {
        let input = parse_input(&req.input)?;
        let identity = input.identity;
        let rp = identity.registered_proof;
        let name = proofs::name(rp);
        let params = self.params_spec(rp)?;
        params.require_present(&name)?;
        let size = u64::from(rp.sector_size());
        let partitions = with_tree_shape!(size, plan_shape(input), |s| Err(JobError::field(
            F_PROOF,
            format!("unsupported sector size {s}")
        )))?;
        fields::check_circuit_and_inputs(req, &name, &partitions)?;
        let plan = JobPlan {
            label: format!("snap-update {} ({name})", shapes::sector_size_label(size)),
            params,
            partitions,
            final_check: Some(final_check(identity)),
        };
        Ok((plan, identity))
    }
}

/// The whole proof must pass filecoin-proofs' `verify_empty_sector_update_proof` logic with the
/// job's verifying key.
fn final_check(identity: UpdateIdentity) -> proofline_jobs::FinalCheck {
    Box::new(move |proof, pk| {
        match crate::verify::verify_update_with_vk(proof, &identity, pk.vk()) {
            Ok(true) => Ok(()),
            Ok(false) => Err("verify_empty_sector_update_proof rejected the proof".into()),
            Err(e) => Err(format!(
                "verify_empty_sector_update_proof could not check the proof: {e}"
            )),
        }
    })
}

impl JobAdapter for SnapUpdateAdapter {
    fn kind(&self) -> &'static str {
        Self::KIND
    }

    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        self.plan_with_identity(req).map(|(plan, _)| plan)
    }

    fn circuits(&self) -> Vec<CircuitInfo> {
        proofs::ALL_UPDATE
            .into_iter()
            .filter_map(|rp| {
                let spec = self.params_spec(rp).ok()?;
                Some(CircuitInfo {
                    name: proofs::name(rp),
                    kind: Self::KIND.to_string(),
                    params_present: spec.path.is_file(),
                    params_path: spec.path,
                })
            })
            .collect()
    }

    fn default_priority(&self) -> i32 {
        proofline_jobs::priority::SNAP_UPDATE
    }
}

/// The compound proof's public parameters of a registered update proof, as filecoin-proofs'
/// prover and verifier set them up.
pub(crate) fn compound_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &SectorUpdateConfig,
) -> anyhow::Result<compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>> {
    EmptySectorUpdateCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(usize::from(config.update_partitions)),
        priority: false,
    })
}

/// The vanilla public inputs filecoin-proofs uses for all partitions of an update.
pub(crate) fn public_inputs_of_update(
    id: &UpdateIdentity,
    config: &SectorUpdateConfig,
) -> anyhow::Result<PublicInputs> {
    Ok(PublicInputs {
        k: usize::from(config.update_partitions),
        comm_r_old: TreeRDomain::try_from_bytes(&id.comm_r_old)?,
        comm_d_new: TreeDDomain::try_from_bytes(&id.comm_d_new)?,
        comm_r_new: TreeRDomain::try_from_bytes(&id.comm_r_new)?,
        h: config.h,
    })
}

struct Prepared<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub_inputs: PublicInputs,
    pub_params: PublicParams,
    vanilla: Vec<PartitionProof<Tree>>,
}

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

fn public_inputs_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<Vec<Scalar>> {
    <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
        &p.pub_inputs,
        &p.pub_params,
        Some(k),
    )
}

fn circuit_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<EmptySectorUpdateCircuit<Tree>> {
    <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::circuit(
        &p.pub_inputs,
        (),
        &p.vanilla[k],
        &p.pub_params,
        Some(k),
    )
}

/// Plans the partitions of one update; generic over the tree shape of its sector size.
pub fn plan_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: UpdateInput,
) -> Result<Vec<PartitionPlan>, JobError> {
    let UpdateInput {
        identity,
        vanilla_proofs,
    } = input;
    let rp = identity.registered_proof;
    let config = SectorUpdateConfig::from_porep_config(&rp.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if vanilla_proofs.len() != partitions {
        return Err(JobError::field(
            F_VANILLA,
            format!(
                "{} vanilla partition proofs; {} has {partitions} partitions",
                vanilla_proofs.len(),
                proofs::name(rp)
            ),
        ));
    }
    let vanilla = vanilla_proofs
        .into_iter()
        .enumerate()
        .map(|(k, b)| {
            bincode1::deserialize::<PartitionProof<Tree>>(&b).map_err(|e| {
                JobError::field(
                    format!("{F_VANILLA}[{k}]"),
                    format!(
                        "not a {} vanilla partition proof (filecoin-proofs-api's bincode \
                         PartitionProof, as generate_partition_proofs returns): {e}",
                        proofs::name(rp)
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let internal = |e: anyhow::Error| JobError::Internal(format!("{rp:?} parameters: {e:#}"));
    let pub_params = compound_params::<Tree>(&config)
        .map_err(internal)?
        .vanilla_params;
    let pub_inputs = public_inputs_of_update(&identity, &config).map_err(|e| {
        JobError::field(
            F_COMM_R_OLD,
            format!("commitments are not field elements: {e:#}"),
        )
    })?;
    let prepared = Prepared::<Tree> {
        pub_inputs,
        pub_params,
        vanilla,
    };
    // filecoin-proofs' vanilla check (verify_partition_proofs).
    let valid = guarded(F_VANILLA, || {
        EmptySectorUpdate::<Tree>::verify_all_partitions(
            &prepared.pub_params,
            &prepared.pub_inputs,
            &prepared.vanilla,
        )
        .map_err(|e| JobError::field(F_VANILLA, format!("do not verify: {e:#}")))
    })?;
    if !valid {
        return Err(JobError::field(
            F_VANILLA,
            "do not verify against comm_r_old, comm_r_new and comm_d_new (filecoin-proofs' \
             vanilla check)",
        ));
    }
    let prepared = Arc::new(prepared);
    let hint = crate::proofs::constraints_hint(ProofCircuit::Update(rp));
    (0..partitions)
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
        .collect()
}
