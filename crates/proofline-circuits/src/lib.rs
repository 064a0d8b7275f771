//! Built-in circuits: something real to prove without Filecoin.
//!
//! [`Sha256Preimage`] proves knowledge of a preimage of a public SHA-256 digest. The preimage has
//! a fixed length per circuit size so that one parameter set serves every preimage: with `N`
//! blocks it is `64·N − 9` bytes (the longest message that SHA-256 pads into `N` blocks), and
//! the circuit has about 27,000 constraints per block. The digest is packed into two public
//! field elements (bellpepper's multipacking).

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use sha2::{Digest, Sha256};

/// Errors of circuit construction.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CircuitError {
    /// The block count is out of range.
    #[error("sha256 blocks must be between 1 and {max}, got {0}", max = Sha256Preimage::MAX_BLOCKS)]
    BadBlocks(usize),
    /// The preimage has the wrong length for the circuit.
    #[error("preimage must be exactly {expected} bytes for {blocks} block(s), got {found}")]
    BadPreimageLength {
        /// Block count of the circuit.
        blocks: usize,
        /// Required length.
        expected: usize,
        /// Given length.
        found: usize,
    },
}

/// SHA-256 preimage circuit of a fixed number of compression blocks.
#[derive(Clone, Debug)]
pub struct Sha256Preimage {
    blocks: usize,
    preimage: Option<Vec<u8>>,
}

impl Sha256Preimage {
    /// Largest supported block count (about 2^22 constraints).
    pub const MAX_BLOCKS: usize = 160;

    /// Preimage length in bytes for `blocks` blocks.
    pub fn preimage_len(blocks: usize) -> usize {
        64 * blocks - 9
    }

    /// The circuit without a witness, for parameter generation.
    pub fn blank(blocks: usize) -> Result<Self, CircuitError> {
        if blocks == 0 || blocks > Self::MAX_BLOCKS {
            return Err(CircuitError::BadBlocks(blocks));
        }
        Ok(Sha256Preimage {
            blocks,
            preimage: None,
        })
    }

    /// The circuit with a witness.
    pub fn new(blocks: usize, preimage: Vec<u8>) -> Result<Self, CircuitError> {
        let mut c = Self::blank(blocks)?;
        let expected = Self::preimage_len(blocks);
        if preimage.len() != expected {
            return Err(CircuitError::BadPreimageLength {
                blocks,
                expected,
                found: preimage.len(),
            });
        }
        c.preimage = Some(preimage);
        Ok(c)
    }

    /// A deterministic preimage of the right length, derived from `seed` (for demos and tests).
    pub fn demo_preimage(blocks: usize, seed: u64) -> Vec<u8> {
        let len = Self::preimage_len(blocks.max(1));
        let mut out = Vec::with_capacity(len + 32);
        let mut counter = 0u64;
        while out.len() < len {
            let mut h = Sha256::new();
            h.update(seed.to_le_bytes());
            h.update(counter.to_le_bytes());
            out.extend_from_slice(&h.finalize());
            counter += 1;
        }
        out.truncate(len);
        out
    }

    /// Block count.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// The public inputs (without ONE) that a proof for `preimage` carries: the packed digest.
    pub fn public_inputs(preimage: &[u8]) -> Vec<Scalar> {
        let digest = Sha256::digest(preimage);
        multipack::compute_multipacking(&multipack::bytes_to_bits(&digest))
    }

    /// Number of public inputs (without ONE).
    pub const NUM_PUBLIC_INPUTS: usize = 2;
}

impl Circuit<Scalar> for Sha256Preimage {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let len = Self::preimage_len(self.blocks);
        let bits: Option<Vec<bool>> = self.preimage.as_deref().map(multipack::bytes_to_bits);
        let mut input = Vec::with_capacity(len * 8);
        for i in 0..len * 8 {
            let value = bits.as_ref().map(|b| b[i]);
            let bit = AllocatedBit::alloc(cs.namespace(|| format!("preimage bit {i}")), value)?;
            input.push(Boolean::from(bit));
        }
        let digest = sha256(cs.namespace(|| "sha256"), &input)?;
        multipack::pack_into_inputs(cs.namespace(|| "pack digest"), &digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::test_cs::TestConstraintSystem;

    #[test]
    fn circuit_is_satisfied_and_exposes_the_digest() {
        for blocks in [1usize, 2] {
            let pre = Sha256Preimage::demo_preimage(blocks, 42);
            let mut cs = TestConstraintSystem::<Scalar>::new();
            Sha256Preimage::new(blocks, pre.clone())
                .unwrap()
                .synthesize(&mut cs)
                .unwrap();
            assert!(cs.is_satisfied(), "{:?}", cs.which_is_unsatisfied());
            let inputs = Sha256Preimage::public_inputs(&pre);
            assert_eq!(inputs.len(), Sha256Preimage::NUM_PUBLIC_INPUTS);
            assert!(cs.verify(&inputs));
            let mut wrong = inputs.clone();
            wrong[0] += Scalar::from(1u64);
            assert!(!cs.verify(&wrong));
        }
    }

    #[test]
    fn bad_sizes_are_rejected() {
        assert_eq!(
            Sha256Preimage::blank(0).unwrap_err(),
            CircuitError::BadBlocks(0)
        );
        assert!(matches!(
            Sha256Preimage::new(1, vec![0; 10]),
            Err(CircuitError::BadPreimageLength {
                expected: 55,
                found: 10,
                ..
            })
        ));
    }
}
