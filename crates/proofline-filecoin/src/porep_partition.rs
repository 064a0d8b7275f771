//! One PoRep partition as a [`PartitionCircuit`], with its witness generated in parallel.
//!
//! Full synthesis and recording run storage-proofs' own circuit
//! (`StackedCompound::circuit(.., Some(k))`, exactly as `seal_commit_phase2`), one challenge
//! after another. Witness generation (values only, for synthesis from recorded matrices) uses
//! the circuit's structure: `StackedCircuit::synthesize` first allocates the values every
//! challenge shares (replica id and its bits, comm_d, comm_r, comm_r_last, comm_c, and the check
//! comm_r = H(comm_c, comm_r_last)), then one independent sub-circuit per challenge. So:
//!
//! 1. the shared part alone is `StackedCircuit::synthesize` with no challenge; its input and aux
//!    counts say where every challenge's variables start;
//! 2. each challenge runs as `StackedCircuit::synthesize` with that one challenge, in its own
//!    witness system, all challenges at once on rayon; each result minus the shared prefix is
//!    the challenge's part;
//! 3. the assignment is the shared part followed by the challenges' parts in challenge order —
//!    the order of the sequential synthesis, which `tests/precompiled_porep.rs` checks variable
//!    for variable.
//!
//! Every challenge recomputes the shared part (a few hundred constraints against hundreds of
//! thousands per challenge) so that only public storage-proofs calls are made.

use std::sync::Arc;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::Hasher;
use filecoin_proofs::{DefaultPieceDomain, DefaultPieceHasher, VanillaSealProof as RawProof};
use proofline_groth16::{PartitionCircuit, Synthesizer};
use proofline_r1cs::{Recorder, WithValues, Witness, WitnessCs};
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

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

    /// Runs `StackedCircuit::synthesize` with the shared values and the given challenges into a
    /// fresh witness system.
    fn witness_with(&self, challenges: &[RawProof<Tree>]) -> Result<Witness, SynthesisError> {
        let p = &self.prepared;
        let vanilla = &p.vanilla[self.k];
        let tau = p.pub_inputs.tau.as_ref();
        let mut cs = WitnessCs::root();
        Stacked::<Tree>::synthesize(
            &mut cs,
            Some(p.pub_inputs.replica_id),
            tau.map(|t| t.comm_d),
            tau.map(|t| t.comm_r),
            vanilla.first().map(|v| v.comm_r_last()),
            vanilla.first().map(|v| v.comm_c()),
            challenges.iter().cloned().map(Into::into).collect(),
        )?;
        Ok(cs.finish())
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuit for PorepPartition<Tree> {
    fn synthesize_into(self: Box<Self>, cs: &mut Synthesizer) -> Result<(), SynthesisError> {
        self.circuit()?.synthesize(cs)
    }

    fn record_into(self: Box<Self>, cs: &mut Recorder<WithValues>) -> Result<(), SynthesisError> {
        self.circuit()?.synthesize(cs)
    }

    fn witness(self: Box<Self>) -> Result<Witness, SynthesisError> {
        let shared = self.witness_with(&[])?;
        let (n_in, n_aux) = (shared.input.len(), shared.aux.len());
        let challenges = &self.prepared.vanilla[self.k];
        let parts: Vec<Witness> = challenges
            .par_iter()
            .map(|c| self.witness_with(std::slice::from_ref(c)))
            .collect::<Result<_, _>>()?;
        join(shared, parts, n_in, n_aux)
    }
}

/// The shared witness followed by each part's variables after the shared prefix.
fn join(
    shared: Witness,
    parts: Vec<Witness>,
    n_in: usize,
    n_aux: usize,
) -> Result<Witness, SynthesisError> {
    let prefix_ok = |w: &Witness| {
        w.input.get(..n_in) == Some(&shared.input[..])
            && w.aux.get(..n_aux) == Some(&shared.aux[..])
    };
    if !parts.iter().all(prefix_ok) {
        // A challenge changed the shared values: the circuit is not the one this code knows.
        tracing::error!("a PoRep challenge's witness does not start with the shared values");
        return Err(SynthesisError::Unsatisfiable);
    }
    let input = std::iter::once(&shared.input[..])
        .chain(parts.iter().map(|w| &w.input[n_in..]))
        .flatten()
        .copied()
        .collect();
    let aux_parts: Vec<&[Scalar]> = std::iter::once(&shared.aux[..])
        .chain(parts.iter().map(|w| &w.aux[n_aux..]))
        .collect();
    Ok(Witness {
        input,
        aux: concat(&aux_parts),
    })
}

/// Scalars per copy task.
const COPY_CHUNK: usize = 1 << 16;

/// The slices one after another, copied on rayon (a 32 GiB partition's aux is about 4 GB).
fn concat(parts: &[&[Scalar]]) -> Vec<Scalar> {
    let total = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total);
    (0..total)
        .into_par_iter()
        .with_min_len(COPY_CHUNK)
        .map(|_| Scalar::ZERO)
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
    /// Each challenge alone (its run minus the shared part).
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
    use std::time::Instant;
    let internal = |e: &dyn std::fmt::Display| proofline_jobs::JobError::Internal(e.to_string());
    let (prepared, _) = crate::porep::prepare::<Tree>(input)?;
    let part = PorepPartition::new(prepared, k).map_err(|e| internal(&e))?;
    let t = Instant::now();
    let shared = part.witness_with(&[]).map_err(|e| internal(&e))?;
    let shared = PartProfile {
        secs: t.elapsed().as_secs_f64(),
        inputs: shared.input.len(),
        aux: shared.aux.len(),
    };
    let mut challenges = Vec::new();
    for c in &part.prepared.vanilla[k] {
        let t = Instant::now();
        let w = part
            .witness_with(std::slice::from_ref(c))
            .map_err(|e| internal(&e))?;
        challenges.push(PartProfile {
            secs: (t.elapsed().as_secs_f64() - shared.secs).max(0.0),
            inputs: w.input.len() - shared.inputs,
            aux: w.aux.len() - shared.aux,
        });
    }
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
    fn concat_keeps_order_and_join_strips_the_shared_prefix() {
        let v = |xs: &[u64]| xs.iter().map(|&x| Scalar::from(x)).collect::<Vec<_>>();
        let a = v(&(0..100_000).collect::<Vec<_>>());
        let b = v(&[7, 8]);
        let all = concat(&[&a, &[], &b]);
        assert_eq!(all.len(), 100_002);
        assert_eq!(all[99_999], Scalar::from(99_999u64));
        assert_eq!(all[100_000..], b[..]);

        let shared = Witness {
            input: v(&[1, 2]),
            aux: v(&[3]),
        };
        let part = |i: u64| Witness {
            input: v(&[1, 2, 10 + i]),
            aux: v(&[3, 20 + i, 30 + i]),
        };
        let w = join(shared.clone(), vec![part(0), part(1)], 2, 1).unwrap();
        assert_eq!(w.input, v(&[1, 2, 10, 11]));
        assert_eq!(w.aux, v(&[3, 20, 30, 21, 31]));
        // A part that does not start with the shared values is refused.
        let mut bad = part(2);
        bad.aux[0] = Scalar::from(4u64);
        assert!(join(shared, vec![part(0), bad], 2, 1).is_err());
    }
}
