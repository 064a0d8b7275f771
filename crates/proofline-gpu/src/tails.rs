//! The tails a device holds for a parameter set ([`HeldTails`]): the bases of one partition's L,
//! A and B tails in G1, and B's in G2 where the sparse stage runs it, gathered side by side once
//! from the resident set, with precomputed copies where the lease covers them ([`TailLayout`]).
//! A parameter set's partitions have the same tails from one sector to the next
//! (docs/filecoin.md), so each later sparse stage runs its tails' scalars through Pippenger over
//! the held points ([`AgainstHeld`]): no gather of the tails' bases per partition and, over
//! copies, fewer windows. A query whose tail is not the held list is first split against it on
//! the host (`SparseScalars::against_held`; B's split serves both groups): that costs speed,
//! never the result. Made on the device's resident stream (`GpuSlot::hold_tails`), then shared
//! read-only by the device's slots, like the resident set.

use proofline_groth16::msm::{HeldSplit, HeldTailError, MsmPlan, SparseScalars};
use rayon::prelude::*;

use crate::bytes::QueryShape;
use crate::curve::{MsmCurve, G1, G2};
use crate::error::GpuError;
use crate::exec::Exec;
use crate::msm::{hold_tail, hold_tail_precomputed, HeldTail};
use crate::plan::Precomputation;
use crate::slot::DeviceWords;
use crate::stages::SparseGroups;

/// One value per held tail: L's, A's and B's in G1, and B's in G2 where it is held (B in G2
/// runs in the sparse stage). B's two tails are the same bases in two groups, split once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tails<T> {
    /// L, A and B in G1, in that order.
    pub g1: [T; 3],
    /// B in G2, where held.
    pub b_g2: Option<T>,
}

impl<T> Tails<T> {
    /// Each value through `f`.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> Tails<U> {
        Tails {
            g1: self.g1.map(&mut f),
            b_g2: self.b_g2.map(f),
        }
    }

    /// The values by reference.
    pub fn each_ref(&self) -> Tails<&T> {
        Tails {
            g1: self.g1.each_ref(),
            b_g2: self.b_g2.as_ref(),
        }
    }
}

impl Tails<usize> {
    /// The tails' lengths of `plan` for a sparse stage of `groups`: B's in G2 with
    /// [`SparseGroups::G1AndG2`].
    pub fn of(plan: &MsmPlan, groups: SparseGroups) -> Self {
        Tails {
            g1: [&plan.l, &plan.a, &plan.b].map(|q| q.tail_index.len()),
            b_g2: (groups == SparseGroups::G1AndG2).then_some(plan.b.tail_index.len()),
        }
    }

    /// Whether there are no points to hold.
    pub fn is_empty(&self) -> bool {
        self.g1.iter().chain(&self.b_g2).all(|&n| n == 0)
    }
}

/// How the held tails' bases lie on the device: each tail's bases side by side, the first
/// [`TailLayout::with_copies`] tails in [`TailLayout::COPIES_FIRST`] order followed by the
/// precomputed copies `Precomputation::plan` chooses for an MSM of all of them (none where no
/// copies pay), and B's tail in G2 held or not ([`TailLayout::b_g2`]). Copies are
/// all-or-nothing per tail, so that a lease between none and all of them still buys some; below
/// every tail gathered, the G1 tails alone. B's tail in G2 gets its copies last: over 13 copies
/// of 20 bits its Pippenger measured 4-5 % faster than 16 windows of 16 bits over the gathered
/// tail (with the window combination filling the card; level before it), the least gain a byte
/// of the four (docs/gpu-kernels.md): 6.7 GB at the 32 GiB shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TailLayout {
    with_copies: usize,
    b_g2: G2Tail,
}

/// Whether B's tail in G2 is held beside the G1 tails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum G2Tail {
    /// Held: B in G2 runs over it from B's split against the held list, as B in G1.
    Held,
    /// Not held: B in G2 runs from B's whole split, its tail gathered.
    NotHeld,
}

impl G2Tail {
    /// Whether `held` holds B's tail in G2.
    pub(crate) fn of<H>(held: &Tails<HeldTail<H>>) -> Self {
        match held.b_g2 {
            Some(_) => G2Tail::Held,
            None => G2Tail::NotHeld,
        }
    }
}

/// Which held tail, for the order in which they get copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailQuery {
    /// L's tail.
    L,
    /// A's tail.
    A,
    /// B's tail in G1.
    B,
    /// B's tail in G2.
    BG2,
}

impl TailLayout {
    /// The order in which the tails get copies: the G1 tails, the longest (L) first, then B's
    /// in G2 (twice the bytes a point for the least gain).
    pub const COPIES_FIRST: [TailQuery; 4] =
        [TailQuery::L, TailQuery::A, TailQuery::B, TailQuery::BG2];

    /// Every tail's bases alone.
    pub const GATHERED: TailLayout = TailLayout {
        with_copies: 0,
        b_g2: G2Tail::Held,
    };

    /// Every tail with its copies.
    pub const ALL_COPIES: TailLayout = TailLayout {
        with_copies: 4,
        b_g2: G2Tail::Held,
    };

    /// Every G1 tail with its copies, B's in G2 gathered.
    pub const G1_COPIES: TailLayout = TailLayout {
        with_copies: 3,
        b_g2: G2Tail::Held,
    };

    /// The G1 tails' bases alone, B's tail in G2 not held: the smallest layout.
    pub const G1_GATHERED: TailLayout = TailLayout {
        with_copies: 0,
        b_g2: G2Tail::NotHeld,
    };

    /// The layouts a holding may take, largest first.
    pub fn largest_first() -> impl Iterator<Item = TailLayout> {
        (0..=Self::COPIES_FIRST.len())
            .rev()
            .map(|with_copies| TailLayout {
                with_copies,
                b_g2: G2Tail::Held,
            })
            .chain([Self::G1_GATHERED])
    }

    /// Whether B's tail in G2 is held (where the sparse stage runs B in G2 at all).
    pub fn b_g2(self) -> G2Tail {
        self.b_g2
    }

    /// How many tails, in [`TailLayout::COPIES_FIRST`] order, carry copies.
    pub fn with_copies(self) -> usize {
        self.with_copies
    }

    /// The copies a held tail of `len` points carries where it carries copies.
    pub fn precomputation(len: usize) -> Option<Precomputation> {
        Precomputation::plan(len, len, u64::MAX)
    }

    /// The copies of held tails of `lens` points in this layout.
    pub fn precomputations(self, lens: &Tails<usize>) -> Tails<Option<Precomputation>> {
        let copies = &Self::COPIES_FIRST[..self.with_copies];
        let pre = |q: TailQuery, len: usize| {
            copies
                .contains(&q)
                .then(|| Self::precomputation(len))
                .flatten()
        };
        Tails {
            g1: [
                pre(TailQuery::L, lens.g1[0]),
                pre(TailQuery::A, lens.g1[1]),
                pre(TailQuery::B, lens.g1[2]),
            ],
            b_g2: match self.b_g2 {
                G2Tail::Held => lens.b_g2.map(|len| pre(TailQuery::BG2, len)),
                G2Tail::NotHeld => None,
            },
        }
    }
}

/// The tails a device holds for a parameter set. See the module documentation.
pub struct HeldTails {
    pub(crate) device: usize,
    pub(crate) queries: Tails<HeldTail<DeviceWords>>,
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

    /// Points held of each tail.
    pub fn lens(&self) -> Tails<usize> {
        self.queries.each_ref().map(|q| q.index().len())
    }

    /// The copies each held tail carries.
    pub fn precomputations(&self) -> Tails<Option<Precomputation>> {
        self.queries.each_ref().map(|q| q.precomputation())
    }

    /// The shapes of `plan`'s queries split against the held lists: the bases outside them
    /// (their ones and tail), and the held points (B in G2 split as B in G1). What the sparse
    /// stage's lease is sized by (`bytes::sparse_stage_bytes_held`).
    pub fn shapes(&self, plan: &MsmPlan) -> Tails<HeldShape> {
        let queries = [&plan.l, &plan.a, &plan.b];
        Tails {
            g1: std::array::from_fn(|k| HeldShape::of(queries[k], &self.queries.g1[k])),
            b_g2: self
                .queries
                .b_g2
                .as_ref()
                .map(|h| HeldShape::of(&plan.b, h)),
        }
    }

    /// `plan`'s L, A and B split against the held lists (B's G1 list, which B's G2 list equals).
    pub(crate) fn split<'a>(&self, plan: &'a MsmPlan) -> Result<[AgainstHeld<'a>; 3], GpuError> {
        split_against(plan, &self.queries)
    }
}

/// `plan`'s L, A and B split against the held lists of `held`.
pub(crate) fn split_against<'a, B>(
    plan: &'a MsmPlan,
    held: &Tails<HeldTail<B>>,
) -> Result<[AgainstHeld<'a>; 3], GpuError> {
    if let Some(b) = &held.b_g2 {
        if !same_list(b.index(), held.g1[2].index()) {
            return Err(GpuError::InvalidInput(
                "B's held tails in G1 and G2 list different bases".into(),
            ));
        }
    }
    Ok([
        AgainstHeld::new(&plan.l, held.g1[0].index())?,
        AgainstHeld::new(&plan.a, held.g1[1].index())?,
        AgainstHeld::new(&plan.b, held.g1[2].index())?,
    ])
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
        if same_list(held, &split.tail_index) {
            return Ok(AgainstHeld::OwnTail(split));
        }
        split
            .against_held(held)
            .map(AgainstHeld::Built)
            .map_err(held_error)
    }
}

/// Whether two index lists are equal, compared in parallel: a partition compares its tails
/// (up to 3.8 M indices each at the 32 GiB shape) with the held lists on the way to its sparse
/// stage, twice (the lease's sizing, the stage), and one core takes milliseconds over them
/// while the GPU waits.
pub(crate) fn same_list(a: &[u32], b: &[u32]) -> bool {
    const CHUNK: usize = 1 << 16;
    a.len() == b.len()
        && a.par_chunks(CHUNK)
            .zip(b.par_chunks(CHUNK))
            .all(|(x, y)| x == y)
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
        if same_list(index, &split.tail_index) {
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

/// The tails of `plan` (L, A, B in G1, and B in G2 where `pres.b_g2` is set) gathered from the
/// resident bases `bases` (L's, A's, B's in G1, B's in G2) on `e`, each followed by the copies
/// of its `pres` entry where there is one, one after the other (each synchronised before the
/// next).
pub(crate) fn hold_tails_device<E: Exec>(
    e: &E,
    bases: Tails<u64>,
    plan: &MsmPlan,
    pres: Tails<Option<Precomputation>>,
) -> Result<Tails<HeldTail<E::Buf>>, GpuError> {
    let tails = [&plan.l, &plan.a, &plan.b];
    let g1 = |k: usize| hold_one::<E, G1>(e, bases.g1[k], &tails[k].tail_index, pres.g1[k]);
    let g1 = [g1(0)?, g1(1)?, g1(2)?];
    let b_g2 = match (pres.b_g2, bases.b_g2) {
        (Some(pre), Some(b)) => Some(hold_one::<E, G2>(e, b, &plan.b.tail_index, pre)?),
        (None, _) => None,
        (Some(_), None) => {
            return Err(GpuError::InvalidInput(
                "B's tail in G2 held without its bases".into(),
            ))
        }
    };
    Ok(Tails { g1, b_g2 })
}

fn hold_one<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    index: &[u32],
    pre: Option<Precomputation>,
) -> Result<HeldTail<E::Buf>, GpuError> {
    match pre {
        Some(pre) => hold_tail_precomputed::<E, C>(e, bases, index.to_vec(), pre),
        None => hold_tail::<E, C>(e, bases, index.to_vec()),
    }
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

    /// The parallel comparison agrees with the plain one across chunk boundaries.
    #[test]
    fn index_lists_compare_equal_only_when_equal() {
        let a: Vec<u32> = (0..200_000u32).map(|i| 3 * i + 1).collect();
        assert!(same_list(&a, &a.clone()));
        assert!(same_list(&[], &[]));
        for at in [0, (1 << 16) - 1, 1 << 16, 150_001, a.len() - 1] {
            let mut b = a.clone();
            b[at] += 1;
            assert!(!same_list(&a, &b), "differs at {at}");
        }
        assert!(!same_list(&a, &a[..a.len() - 1]));
    }

    /// A lease gets the largest layout it covers, none below the G1 tails gathered, and nothing
    /// is held of empty tails; B's tail in G2 adds its gathered points, and its copies only in
    /// the largest layout: the tails get copies L first, then A, B in G1, B in G2.
    #[test]
    fn a_lease_holds_the_largest_layout_it_covers() {
        let g1_only = Tails {
            g1: [3_800_000, 2_700_000, 2_700_000],
            b_g2: None,
        };
        let all = Tails {
            b_g2: Some(2_700_000),
            ..g1_only
        };
        for lens in [g1_only, all] {
            let gathered = held_tails_bytes(&lens, TailLayout::GATHERED);
            let copies = held_tails_bytes(&lens, TailLayout::ALL_COPIES);
            assert!(copies > 4 * gathered, "{copies} vs {gathered}");
            assert_eq!(
                held_tails_granted(&lens, copies),
                Some(TailLayout::ALL_COPIES)
            );
            // each layout's bytes grant that layout, one byte less the next smaller one (as
            // held: without B in G2 asked for, its holding and copies change nothing)
            let held = |l: Option<TailLayout>| l.map(|l| l.precomputations(&lens));
            let layouts: Vec<_> = TailLayout::largest_first().collect();
            for pair in layouts.windows(2) {
                let (larger, smaller) = (pair[0], pair[1]);
                let bytes = held_tails_bytes(&lens, larger);
                if bytes == held_tails_bytes(&lens, smaller) {
                    continue;
                }
                assert_eq!(held(held_tails_granted(&lens, bytes)), held(Some(larger)));
                assert_eq!(
                    held(held_tails_granted(&lens, bytes - 1)),
                    held(Some(smaller))
                );
            }
            // below every tail gathered: the G1 tails alone
            let g1 = held_tails_bytes(&g1_only, TailLayout::GATHERED);
            assert_eq!(held_tails_bytes(&lens, TailLayout::G1_GATHERED), g1);
            let granted = held_tails_granted(&lens, g1).expect("the G1 tails");
            assert_eq!(granted.precomputations(&lens).b_g2, None);
            assert_eq!(held_tails_granted(&lens, g1 - 1), None);
        }
        // B in G2: its points, gathered in every layout that holds it but the largest, which
        // adds its copies (a G2 point's 192 bytes each)
        for layout in TailLayout::largest_first().filter(|l| l.b_g2() == G2Tail::Held) {
            let g2 = held_tails_bytes(&all, layout) - held_tails_bytes(&g1_only, layout);
            match layout.precomputations(&all).b_g2 {
                Some(None) => {
                    assert_ne!(layout, TailLayout::ALL_COPIES);
                    assert!((2_700_000 * 192..2_700_000 * 196).contains(&g2), "{g2}");
                }
                Some(Some(pre)) => {
                    assert_eq!(layout, TailLayout::ALL_COPIES);
                    let copies = 2_700_000 * 192 * u64::from(pre.copies);
                    assert!((copies..copies + 2_700_000 * 4).contains(&g2), "{g2}");
                }
                None => panic!("{layout:?} holds B's tail in G2"),
            }
        }
        // L gets its copies first, then A, then B in G1, then B in G2
        let with = |n: usize| TailLayout {
            with_copies: n,
            b_g2: G2Tail::Held,
        };
        let one = with(1).precomputations(&all).g1;
        assert!(one[0].is_some() && one[1..] == [None, None]);
        let two = with(2).precomputations(&all).g1;
        assert!(two[..2].iter().all(Option::is_some) && two[2].is_none());
        let three = with(3).precomputations(&all);
        assert!(three.g1.iter().all(Option::is_some) && three.b_g2 == Some(None));
        assert_eq!(with(3), TailLayout::G1_COPIES);
        let empty = Tails {
            g1: [0; 3],
            b_g2: Some(0),
        };
        assert_eq!(held_tails_granted(&empty, u64::MAX), None);
    }
}
