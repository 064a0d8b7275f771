//! One PoRep partition as a [`PartitionCircuit`], with its witness generated in parallel.
//!
//! Full synthesis and recording run storage-proofs' own circuit
//! (`StackedCompound::circuit(.., Some(k))`, exactly as `seal_commit_phase2`), one challenge
//! after another. Witness generation (values only, for synthesis from recorded matrices) follows
//! the circuit's structure — the values every challenge shares (replica id and its bits, comm_d,
//! comm_r, comm_r_last, comm_c, and the check comm_r = H(comm_c, comm_r_last)), then one
//! independent sub-circuit per challenge — and runs:
//!
//! 1. the shared part once, in the root witness system, with the gadgets
//!    `StackedCircuit::synthesize` uses;
//! 2. every challenge at once on rayon, each in its own witness system with the shared values
//!    (a witness system never builds a constraint, so the shared variables' indices do not
//!    matter there), doing what storage-proofs' per-challenge `Proof::synthesize` does with the
//!    same public gadgets (column openings and their Poseidon hashes, Merkle inclusions, the
//!    challenge input, the bits of every parent label, encoding), except the labelling hash:
//!    bellperson's SHA-256 gadget builds linear combinations eagerly, 89 % of the witness time,
//!    so its variables come from [`crate::sha256_witness`] instead;
//! 3. the challenges' variables are appended to the shared ones in challenge order, in parallel.
//!
//! The result must be the sequential synthesis' assignment variable for variable:
//! `tests/precompiled_porep.rs` compares them on real 2 KiB and 8 MiB partitions (their 2 layers
//! exercise both labelling cases, the first layer's 6 DRG parents and later layers' 14), and the
//! synthesis actors check every pre-compiled partition's a·b = c before it leaves synthesis.

use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::boolean::Boolean;
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use filecoin_hashers::{
    HashFunction, Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2,
};
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, VanillaSealProof as RawProof};
use neptune::circuit::poseidon_hash;
use proofline_groth16::{PartitionCircuit, Synthesizer};
use proofline_r1cs::{Recorder, WithValues, Witness, WitnessCs};
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::{DiskStore, MerkleTreeTrait, MerkleTreeWrapper};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};
use typenum::{U11, U2};

/// Public inputs, public parameters and vanilla proofs of one sector, shared by the partition
/// circuits of its job.
pub(crate) struct Prepared<Tree: 'static + MerkleTreeTrait> {
    pub pub_inputs: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    pub pub_params: stacked::PublicParams<Tree>,
    pub vanilla: Vec<Vec<RawProof<Tree>>>,
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Stacked<Tree> = StackedCircuit<Tree, DefaultPieceHasher>;

/// storage-proofs' circuit of partition `k`, as `seal_commit_phase2` builds it.
pub(crate) fn circuit_of<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
    k: usize,
) -> anyhow::Result<Stacked<Tree>> {
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, Stacked<Tree>>>::circuit(
        &p.pub_inputs,
        (),
        &p.vanilla[k],
        &p.pub_params,
        Some(k),
    )
}

/// Partition `k` of a prepared sector.
pub(crate) struct PorepPartition<Tree: 'static + MerkleTreeTrait> {
    prepared: Arc<Prepared<Tree>>,
    k: usize,
}

impl<Tree: 'static + MerkleTreeTrait> PorepPartition<Tree> {
    /// Partition `k`; checks what `StackedCompound::circuit` checks (challenge proofs present,
    /// one comm_r_last and one comm_c across them), so that building it later cannot fail.
    pub(crate) fn new(prepared: Arc<Prepared<Tree>>, k: usize) -> anyhow::Result<Self> {
        let proofs = prepared
            .vanilla
            .get(k)
            .ok_or_else(|| anyhow::anyhow!("no vanilla proofs for partition {k}"))?;
        let first = proofs
            .first()
            .ok_or_else(|| anyhow::anyhow!("partition {k} has no challenge proofs"))?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        anyhow::ensure!(
            proofs.iter().all(|p| p.comm_r_last() == comm_r_last),
            "inconsistent comm_r_lasts in partition {k}"
        );
        anyhow::ensure!(
            proofs.iter().all(|p| p.comm_c() == comm_c),
            "inconsistent comm_cs in partition {k}"
        );
        Ok(PorepPartition { prepared, k })
    }

    fn circuit(&self) -> Result<Stacked<Tree>, SynthesisError> {
        circuit_of(&self.prepared, self.k).map_err(|e| {
            tracing::error!(partition = self.k, error = %e, "building the PoRep circuit");
            SynthesisError::AssignmentMissing
        })
    }

    /// The shared values, allocated into `cs` as `StackedCircuit::synthesize` allocates them.
    fn shared_values(&self, cs: &mut WitnessCs) -> Result<Shared, SynthesisError> {
        let p = &self.prepared;
        let vanilla = &p.vanilla[self.k];
        let tau = p.pub_inputs.tau.as_ref();
        let value = |v: Option<Fr>| move || v.ok_or(SynthesisError::AssignmentMissing);
        let replica_id =
            AllocatedNum::alloc(&mut *cs, value(Some(p.pub_inputs.replica_id.into())))?;
        replica_id.inputize(&mut *cs)?;
        let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(&mut *cs)?);
        let comm_d = AllocatedNum::alloc(&mut *cs, value(tau.map(|t| t.comm_d.into())))?;
        comm_d.inputize(&mut *cs)?;
        let comm_r = AllocatedNum::alloc(&mut *cs, value(tau.map(|t| t.comm_r.into())))?;
        comm_r.inputize(&mut *cs)?;
        let comm_r_last = AllocatedNum::alloc(
            &mut *cs,
            value(vanilla.first().map(|v| v.comm_r_last().into())),
        )?;
        let comm_c =
            AllocatedNum::alloc(&mut *cs, value(vanilla.first().map(|v| v.comm_c().into())))?;
        let hash =
            <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, &comm_r_last)?;
        constraint::equal(
            &mut *cs,
            || "comm_r = H(comm_c || comm_r_last)",
            &comm_r,
            &hash,
        );
        Ok(Shared {
            replica_id_bits,
            comm_d,
            comm_c,
            comm_r_last,
        })
    }

    /// Each challenge's witness (its own variables, ONE first) and the seconds it took, run as
    /// `schedule` says.
    fn challenges(
        &self,
        shared: &Shared,
        schedule: Schedule,
    ) -> Result<Vec<(Witness, f64)>, SynthesisError> {
        let vanilla = &self.prepared.vanilla[self.k];
        let num_layers = self.prepared.pub_params.num_layers;
        // storage-proofs' per-challenge circuit values, converted from the vanilla proofs as
        // `StackedCompound::circuit` converts them; their type is reachable only by inference.
        let proofs = circuit_proofs(Stacked::<Tree>::synthesize::<WitnessCs>, vanilla);
        let run = with_item_type(&proofs, |proof| -> Result<Witness, SynthesisError> {
            let mut child = WitnessCs::root();
            let cs = &mut child;
            let data_leaf = AllocatedNum::alloc(&mut *cs, || {
                proof.data_leaf.ok_or(SynthesisError::AssignmentMissing)
            })?;
            enforce_inclusion(&mut *cs, proof.comm_d_path, &shared.comm_d, &data_leaf)?;
            // Each parent column: its values, its hash, its inclusion in tree C.
            let mut drg = Vec::with_capacity(proof.drg_parents_proofs.len());
            for opening in proof.drg_parents_proofs {
                let (column, path) = opening.alloc(&mut *cs)?;
                let hash = column.hash(&mut *cs)?;
                enforce_inclusion(&mut *cs, path, &shared.comm_c, &hash)?;
                drg.push(column);
            }
            let mut exp = Vec::with_capacity(proof.exp_parents_proofs.len());
            for opening in proof.exp_parents_proofs {
                let (column, path) = opening.alloc(&mut *cs)?;
                let hash = column.hash(&mut *cs)?;
                enforce_inclusion(&mut *cs, path, &shared.comm_c, &hash)?;
                exp.push(column);
            }
            let node = UInt64::alloc(&mut *cs, proof.challenge)?;
            node.pack_into_input(&mut *cs)?;
            let mut labels = Vec::with_capacity(num_layers);
            for layer in 1..=num_layers {
                let mut parents = Vec::with_capacity(drg.len() + exp.len());
                for column in &drg {
                    let bits = column.get_value(layer).to_bits_le(&mut *cs)?;
                    parents.push(reverse_bit_numbering(bits));
                }
                // The first layer has no expander parents; the expander columns are shifted by
                // one layer.
                if layer > 1 {
                    for column in &exp {
                        let bits = column.get_value(layer - 1).to_bits_le(&mut *cs)?;
                        parents.push(reverse_bit_numbering(bits));
                    }
                }
                let expanded = expand_parents(&parents, layer);
                let layer_index =
                    u32::try_from(layer).map_err(|_| SynthesisError::Unsatisfiable)?;
                labels.push(label_witness(
                    &mut *cs,
                    &shared.replica_id_bits,
                    &expanded,
                    layer_index,
                    &node,
                )?);
            }
            let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
            let encoded = encode(&mut *cs, key, &data_leaf)?;
            enforce_inclusion(
                &mut *cs,
                proof.comm_r_last_path,
                &shared.comm_r_last,
                &encoded,
            )?;
            let column_hash = hash_column(&mut *cs, &labels)?;
            enforce_inclusion(&mut *cs, proof.comm_c_path, &shared.comm_c, &column_hash)?;
            Ok(child.finish())
        });
        let timed = |proof| {
            let t = Instant::now();
            run(proof).map(|w| (w, t.elapsed().as_secs_f64()))
        };
        match schedule {
            Schedule::Parallel => proofs.into_par_iter().map(timed).collect(),
            Schedule::OneAtATime => proofs.into_iter().map(timed).collect(),
        }
    }
}

/// How the challenges of a partition are run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Schedule {
    /// All at once on rayon (the synthesis actors).
    Parallel,
    /// One after another on the calling thread (per-challenge profiles).
    OneAtATime,
}

/// The values every challenge of a partition shares.
struct Shared {
    replica_id_bits: Vec<Boolean>,
    comm_d: AllocatedNum<Fr>,
    comm_c: AllocatedNum<Fr>,
    comm_r_last: AllocatedNum<Fr>,
}

/// Converts vanilla challenge proofs into the per-challenge circuit values of `synthesize`'s last
/// parameter, whose type storage-proofs does not export.
#[allow(clippy::type_complexity)]
fn circuit_proofs<Tree: 'static + MerkleTreeTrait, P>(
    _synthesize: fn(
        WitnessCs,
        Option<<Tree::Hasher as Hasher>::Domain>,
        Option<DefaultPieceDomain>,
        Option<<Tree::Hasher as Hasher>::Domain>,
        Option<<Tree::Hasher as Hasher>::Domain>,
        Option<<Tree::Hasher as Hasher>::Domain>,
        Vec<P>,
    ) -> Result<(), SynthesisError>,
    vanilla: &[RawProof<Tree>],
) -> Vec<P>
where
    RawProof<Tree>: Into<P>,
{
    vanilla.iter().cloned().map(Into::into).collect()
}

/// Returns `f`, its argument's type fixed to the items of `_items`.
fn with_item_type<P, R, F: Fn(P) -> R>(_items: &[P], f: F) -> F {
    f
}

/// The 37 parent labels a layer's label hashes: the parents repeated, as storage-proofs'
/// labelling does (6 DRG parents six times and the first again on layer 1; 14 parents twice and
/// the first 9 again on later layers).
fn expand_parents(parents: &[Vec<Boolean>], layer: usize) -> Vec<Vec<Boolean>> {
    let mut out = parents.to_vec();
    if layer > 1 {
        out.extend_from_slice(parents);
        out.extend_from_slice(&parents[..9.min(parents.len())]);
    } else {
        for _ in 0..5 {
            out.extend_from_slice(parents);
        }
        out.extend(parents.first().cloned());
    }
    out
}

/// The variables of storage-proofs' `create_label_circuit`: SHA-256 of the replica id, the
/// layer and node, and the parents (each padded to 32 bytes), packed into one number.
fn label_witness(
    cs: &mut WitnessCs,
    replica_id: &[Boolean],
    parents: &[Vec<Boolean>],
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    use crate::sha256_witness::{sha256, Bit};
    let mut bits = Vec::with_capacity((2 + parents.len()) * 256);
    for b in replica_id {
        bits.push(Bit::of(b)?);
    }
    bits.resize(256, Bit::Const(false));
    bits.extend((0..32).rev().map(|i| Bit::Const((layer >> i) & 1 == 1)));
    for b in &node.to_bits_be() {
        bits.push(Bit::of(b)?);
    }
    bits.resize(512, Bit::Const(false));
    for parent in parents {
        for b in parent {
            bits.push(Bit::of(b)?);
        }
        bits.resize(bits.len().div_ceil(256) * 256, Bit::Const(false));
    }
    let hash = sha256(cs, &bits)?;
    // The bits of each byte reversed (`reverse_bit_numbering`), then the first 254 bits packed
    // least significant first, as `multipack::pack_bits` does.
    let mut repr = <Fr as PrimeField>::Repr::default();
    for (i, byte) in hash.chunks(8).enumerate() {
        for (j, b) in byte.iter().rev().enumerate() {
            let n = i * 8 + j;
            if n < Fr::CAPACITY as usize && b.value() {
                repr.as_mut()[n / 8] |= 1 << (n % 8);
            }
        }
    }
    let value: Option<Fr> = Fr::from_repr(repr).into();
    AllocatedNum::alloc(&mut *cs, || value.ok_or(SynthesisError::Unsatisfiable))
}

/// storage-proofs' column hash: Poseidon over a column of 2 or 11 labels.
fn hash_column(
    cs: &mut WitnessCs,
    column: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match column.len() {
        2 => poseidon_hash::<_, Fr, U2>(&mut *cs, column.to_vec(), &POSEIDON_CONSTANTS_2),
        11 => poseidon_hash::<_, Fr, U11>(&mut *cs, column.to_vec(), &POSEIDON_CONSTANTS_11),
        n => {
            tracing::error!(layers = n, "no column hash for this number of layers");
            Err(SynthesisError::Unsatisfiable)
        }
    }
}

/// storage-proofs' inclusion check of `leaf` under `root` along `path`.
fn enforce_inclusion<H, U, V, W>(
    cs: &mut WitnessCs,
    path: AuthPath<H, U, V, W>,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + PoseidonArity,
    V: 'static + PoseidonArity,
    W: 'static + PoseidonArity,
{
    let root = Root::from_allocated::<WitnessCs>(root.clone());
    let leaf = Root::from_allocated::<WitnessCs>(leaf.clone());
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs, leaf, path, root, true,
    )
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuit for PorepPartition<Tree> {
    fn synthesize_into(self: Box<Self>, cs: &mut Synthesizer) -> Result<(), SynthesisError> {
        self.circuit()?.synthesize(cs)
    }

    fn record_into(self: Box<Self>, cs: &mut Recorder<WithValues>) -> Result<(), SynthesisError> {
        self.circuit()?.synthesize(cs)
    }

    fn witness(self: Box<Self>) -> Result<Witness, SynthesisError> {
        let mut root = WitnessCs::root();
        let shared = self.shared_values(&mut root)?;
        let parts = self.challenges(&shared, Schedule::Parallel)?;
        Ok(join(
            root.finish(),
            parts.into_iter().map(|(w, _)| w).collect(),
        ))
    }
}

/// The shared witness followed by each challenge's variables (a challenge's input 0 is its own
/// ONE, not one of its variables).
fn join(shared: Witness, parts: Vec<Witness>) -> Witness {
    let input = std::iter::once(&shared.input[..])
        .chain(parts.iter().map(|w| w.input.get(1..).unwrap_or(&[])))
        .flatten()
        .copied()
        .collect();
    let aux_parts: Vec<&[Fr]> = std::iter::once(&shared.aux[..])
        .chain(parts.iter().map(|w| &w.aux[..]))
        .collect();
    Witness {
        input,
        aux: concat(&aux_parts),
    }
}

/// Field elements per copy task.
const COPY_CHUNK: usize = 1 << 16;

/// The slices one after another, copied on rayon (a 32 GiB partition's aux is about 4 GB).
fn concat(parts: &[&[Fr]]) -> Vec<Fr> {
    let total = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total);
    (0..total)
        .into_par_iter()
        .with_min_len(COPY_CHUNK)
        .map(|_| Fr::ZERO)
        .collect_into_vec(&mut out);
    let mut rest = &mut out[..];
    let mut pairs = Vec::with_capacity(parts.len());
    for p in parts {
        let (head, tail) = rest.split_at_mut(p.len());
        pairs.push((head, *p));
        rest = tail;
    }
    pairs.into_par_iter().for_each(|(dst, src)| {
        dst.par_chunks_mut(COPY_CHUNK)
            .zip(src.par_chunks(COPY_CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    });
    out
}

impl<Tree: 'static + MerkleTreeTrait> std::fmt::Debug for PorepPartition<Tree> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorepPartition")
            .field("k", &self.k)
            .field("challenges", &self.prepared.vanilla[self.k].len())
            .finish()
    }
}

/// One part of a PoRep witness, generated alone on one thread.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PartProfile {
    /// Seconds.
    pub secs: f64,
    /// Inputs it allocates.
    pub inputs: usize,
    /// Aux variables it allocates.
    pub aux: usize,
}

/// Where the witness time of one PoRep partition goes.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WitnessProfile {
    /// Partition.
    pub partition: usize,
    /// rayon threads of the parallel run.
    pub threads: usize,
    /// The shared values (replica id, commitments), alone.
    pub shared: PartProfile,
    /// Each challenge alone, given the shared values.
    pub challenges: Vec<PartProfile>,
    /// The whole witness as the synthesis actors generate it (challenges in parallel, joined).
    pub parallel_secs: f64,
    /// Inputs and aux variables of the whole witness.
    pub total: (usize, usize),
}

/// [`witness_profile`] for a sector of any size.
pub fn profile(
    input: crate::C2Input,
    k: usize,
) -> Result<WitnessProfile, proofline_jobs::JobError> {
    let size = u64::from(input.c1.registered_proof.sector_size());
    crate::with_tree_shape!(size, witness_profile(input, k), |s| Err(
        proofline_jobs::JobError::Internal(format!("unsupported sector size {s}"))
    ))
}

/// Profiles the witness of partition `k` of a sector: the shared part and every challenge one
/// at a time on the calling thread, then the parallel witness.
pub fn witness_profile<Tree: 'static + MerkleTreeTrait>(
    input: crate::C2Input,
    k: usize,
) -> Result<WitnessProfile, proofline_jobs::JobError> {
    let internal = |e: &dyn std::fmt::Display| proofline_jobs::JobError::Internal(e.to_string());
    let (prepared, _) = crate::porep::prepare::<Tree>(input)?;
    let part = PorepPartition::new(prepared, k).map_err(|e| internal(&e))?;
    let t = Instant::now();
    let mut root = WitnessCs::root();
    let shared_values = part.shared_values(&mut root).map_err(|e| internal(&e))?;
    let shared = PartProfile {
        secs: t.elapsed().as_secs_f64(),
        inputs: root.num_inputs(),
        aux: root.num_aux(),
    };
    let challenges = part
        .challenges(&shared_values, Schedule::OneAtATime)
        .map_err(|e| internal(&e))?
        .into_iter()
        .map(|(w, secs)| PartProfile {
            secs,
            inputs: w.input.len() - 1,
            aux: w.aux.len(),
        })
        .collect();
    let t = Instant::now();
    let w = (Box::new(part) as Box<dyn PartitionCircuit>)
        .witness()
        .map_err(|e| internal(&e))?;
    Ok(WitnessProfile {
        partition: k,
        threads: rayon::current_num_threads(),
        shared,
        challenges,
        parallel_secs: t.elapsed().as_secs_f64(),
        total: (w.input.len(), w.aux.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_keeps_order_and_join_skips_each_challenges_one() {
        let v = |xs: &[u64]| xs.iter().map(|&x| Fr::from(x)).collect::<Vec<_>>();
        let a = v(&(0..100_000).collect::<Vec<_>>());
        let b = v(&[7, 8]);
        let all = concat(&[&a, &[], &b]);
        assert_eq!(all.len(), 100_002);
        assert_eq!(all[99_999], Fr::from(99_999u64));
        assert_eq!(all[100_000..], b[..]);

        let shared = Witness {
            input: v(&[1, 2]),
            aux: v(&[3]),
        };
        let part = |i: u64| Witness {
            input: v(&[1, 10 + i]),
            aux: v(&[20 + i, 30 + i]),
        };
        let w = join(shared, vec![part(0), part(1)]);
        assert_eq!(w.input, v(&[1, 2, 10, 11]));
        assert_eq!(w.aux, v(&[3, 20, 30, 21, 31]));
    }
}
