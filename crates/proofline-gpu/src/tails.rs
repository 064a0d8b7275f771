//! The G1 tails a device holds for a parameter set ([`HeldTails`]): the bases of one
//! partition's L, A and B tails gathered side by side once from the resident set, with
//! precomputed copies where the lease covers them ([`TailLayout`]). A parameter set's partitions
//! have the same tails from one sector to the next (docs/filecoin.md), so each later sparse stage
//! runs its G1 tails' scalars through Pippenger over the held points ([`AgainstHeld`]): no gather
//! of the tails' bases per partition and, over copies, fewer windows. A query whose tail is not
//! the held list is first split against it on the host (`SparseScalars::against_held`): that
//! costs speed, never the result. Made on the device's resident stream (`GpuSlot::hold_tails`), then
//! shared read-only by the device's slots, like the resident set.

use proofline_groth16::msm::{HeldSplit, HeldTailError, MsmPlan, SparseScalars};

use crate::bytes::QueryShape;
use crate::curve::G1;
use crate::error::GpuError;
use crate::exec::Exec;
use crate::msm::{hold_tail, hold_tail_precomputed, HeldTail};
use crate::plan::Precomputation;
use crate::slot::DeviceWords;

/// How the held tails' bases lie on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TailLayout {
    /// Each tail's bases side by side.
    Gathered,
    /// Each tail's bases side by side, followed by the precomputed copies `Precomputation::plan`
    /// chooses for an MSM of all of them (none where no copies pay).
    Precomputed,
}

impl TailLayout {
    /// The layouts a holding may take, largest first.
    pub const LARGEST_FIRST: [TailLayout; 2] = [TailLayout::Precomputed, TailLayout::Gathered];

    /// The copies a held tail of `len` points carries in this layout.
    pub fn precomputation(self, len: usize) -> Option<Precomputation> {
        match self {
            TailLayout::Gathered => None,
            TailLayout::Precomputed => Precomputation::plan(len, len, u64::MAX),
        }
    }

    /// The copies of held tails of `lens` points.
    pub fn precomputations(self, lens: &[usize; 3]) -> [Option<Precomputation>; 3] {
        lens.map(|n| self.precomputation(n))
    }
}

/// The three G1 tails a device holds for a parameter set. See the module documentation.
pub struct HeldTails {
    pub(crate) device: usize,
    /// L, A and B (G1), in that order.
    pub(crate) queries: [HeldTail<DeviceWords>; 3],
    pub(crate) layout: TailLayout,
    pub(crate) bytes: u64,
}

impl std::fmt::Debug for HeldTails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldTails")
            .field("device", &self.device)
            .field("layout", &self.layout)
            .field("points", &self.lens())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl HeldTails {
    /// Bytes it holds on the device (what its lease covers).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The device it lives on.
    pub fn device_index(&self) -> usize {
        self.device
    }

    /// How its bases lie.
    pub fn layout(&self) -> TailLayout {
        self.layout
    }

    /// Points held of L, A and B.
    pub fn lens(&self) -> [usize; 3] {
        self.queries.each_ref().map(|q| q.index().len())
    }

    /// The copies each held tail carries.
    pub fn precomputations(&self) -> [Option<Precomputation>; 3] {
        self.queries.each_ref().map(|q| q.precomputation())
    }

    /// The shapes of `plan`'s L, A and B split against the held lists: the bases outside them
    /// (their ones and tail), and the held points. What the sparse stage's lease is sized by
    /// (`bytes::sparse_stage_bytes_held`).
    pub fn shapes(&self, plan: &MsmPlan) -> [HeldShape; 3] {
        let queries = [&plan.l, &plan.a, &plan.b];
        std::array::from_fn(|k| HeldShape::of(queries[k], &self.queries[k]))
    }

    /// `plan`'s L, A and B split against the held lists.
    pub(crate) fn split<'a>(&self, plan: &'a MsmPlan) -> Result<[AgainstHeld<'a>; 3], GpuError> {
        Ok([
            AgainstHeld::new(&plan.l, self.queries[0].index())?,
            AgainstHeld::new(&plan.a, self.queries[1].index())?,
            AgainstHeld::new(&plan.b, self.queries[2].index())?,
        ])
    }
}

/// A query's split against a held list. Where the list is the query's own tail (a parameter
/// set's partitions have the same tails), the split is used as it is: its ones summed, its
/// tail's scalars through Pippenger over the held points (`msm::sparse_over_own_tail`), nothing
/// copied. Else the split is built (`SparseScalars::against_held`: a merge of the two lists, the
/// held scalars copied) and runs through `msm::sparse_held`.
#[derive(Debug)]
pub(crate) enum AgainstHeld<'a> {
    /// The held list is the query's tail.
    OwnTail(&'a SparseScalars),
    /// Any other held list.
    Built(HeldSplit),
}

impl<'a> AgainstHeld<'a> {
    /// `split` against the ascending held bases `held`.
    pub(crate) fn new(split: &'a SparseScalars, held: &[u32]) -> Result<Self, GpuError> {
        if held == split.tail_index.as_slice() {
            return Ok(AgainstHeld::OwnTail(split));
        }
        split
            .against_held(held)
            .map(AgainstHeld::Built)
            .map_err(held_error)
    }
}

fn held_error(e: HeldTailError) -> GpuError {
    GpuError::InvalidInput(format!("a held tail does not fit the split: {e}"))
}

/// A query split against a held tail, in numbers: what is left of the query outside the held
/// list, and the held points with their copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldShape {
    /// The bases outside the held list: their ones and their tail.
    pub rest: QueryShape,
    /// Held points (each goes through Pippenger with its scalar).
    pub held: usize,
    /// Their copies.
    pub pre: Option<Precomputation>,
    /// Whether the held list is the query's own tail (its split then goes to the device as it
    /// is: [`AgainstHeld::OwnTail`]).
    pub own_tail: bool,
}

impl HeldShape {
    /// `split` against `held` (its ones and tail counted against the held list by one merge,
    /// without building the split).
    pub(crate) fn of<B>(split: &SparseScalars, held: &HeldTail<B>) -> Self {
        let index = held.index();
        if index == split.tail_index.as_slice() {
            return HeldShape {
                rest: QueryShape {
                    num_bases: split.num_bases,
                    ones: split.ones.len(),
                    tail: 0,
                },
                held: index.len(),
                pre: held.precomputation(),
                own_tail: true,
            };
        }
        let mut tail = split.tail_index.iter().peekable();
        let (mut in_tail, mut in_ones) = (0usize, 0usize);
        for &h in index {
            while tail.next_if(|&&i| i < h).is_some() {}
            if tail.next_if(|&&i| i == h).is_some() {
                in_tail += 1;
            } else if split.ones.contains(h as usize) {
                in_ones += 1;
            }
        }
        HeldShape {
            rest: QueryShape {
                num_bases: split.num_bases,
                ones: split.ones.len() - in_ones,
                tail: split.tail_index.len() - in_tail,
            },
            held: index.len(),
            pre: held.precomputation(),
            own_tail: false,
        }
    }
}

/// The G1 tails of `plan` (L, A, B) gathered from the resident bases `bases` (L's, A's, B's) on
/// `e`, each followed by the copies of its `pres` entry where there is one, one after the other
/// (each synchronised before the next).
pub(crate) fn hold_tails_device<E: Exec>(
    e: &E,
    bases: [u64; 3],
    plan: &MsmPlan,
    pres: [Option<Precomputation>; 3],
) -> Result<[HeldTail<E::Buf>; 3], GpuError> {
    let tails = [&plan.l, &plan.a, &plan.b];
    let hold = |k: usize| {
        let index = tails[k].tail_index.clone();
        match pres[k] {
            Some(pre) => hold_tail_precomputed(e, bases[k], index, pre),
            None => hold_tail::<E, G1>(e, bases[k], index),
        }
    };
    Ok([hold(0)?, hold(1)?, hold(2)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::{held_tails_bytes, held_tails_granted};
    use blstrs::Scalar;
    use ff::Field;

    fn split(scalars: &[u64]) -> SparseScalars {
        let s: Vec<Scalar> = scalars.iter().map(|&x| Scalar::from(x)).collect();
        SparseScalars::from_dense(&s)
    }

    /// The counted shape is the shape of the split `against_held` builds.
    #[test]
    fn a_held_shape_counts_what_the_split_against_the_held_list_keeps() {
        let s = split(&[0, 1, 5, 1, 7, 0, 9, 1, 0, 4]);
        for held in [
            vec![],
            vec![2, 4],
            vec![0, 1, 2, 6, 9],
            vec![3, 4, 5, 6, 7, 8],
            s.tail_index.clone(),
        ] {
            let tail = HeldTail::<()>::listed(held.clone());
            let shape = HeldShape::of(&s, &tail);
            assert_eq!(shape.own_tail, held == s.tail_index);
            let h = s.against_held(&held).unwrap();
            assert_eq!(shape.rest, QueryShape::from(&h.rest), "held {held:?}");
            assert_eq!(shape.held, h.held_scalars.len());
            assert_eq!(
                h.held_scalars
                    .iter()
                    .filter(|x| bool::from(x.is_zero()))
                    .count()
                    + h.held_scalars.iter().filter(|&&x| x == Scalar::ONE).count()
                    + s.tail_index.len()
                    - shape.rest.tail,
                held.len()
            );
        }
    }

    /// A lease gets the largest layout it covers, none below the gathered points, and nothing
    /// is held of empty tails.
    #[test]
    fn a_lease_holds_the_largest_layout_it_covers() {
        let lens = [3_800_000, 2_700_000, 2_700_000];
        let gathered = held_tails_bytes(&lens, TailLayout::Gathered);
        let copies = held_tails_bytes(&lens, TailLayout::Precomputed);
        assert!(copies > 4 * gathered, "{copies} vs {gathered}");
        assert_eq!(
            held_tails_granted(&lens, copies),
            Some(TailLayout::Precomputed)
        );
        assert_eq!(
            held_tails_granted(&lens, copies - 1),
            Some(TailLayout::Gathered)
        );
        assert_eq!(held_tails_granted(&lens, gathered - 1), None);
        assert_eq!(held_tails_granted(&[0; 3], u64::MAX), None);
    }
}
