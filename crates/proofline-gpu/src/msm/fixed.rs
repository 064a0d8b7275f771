//! What a resident set derives once from a query's fixed bases: the subset sums of a sparse
//! query's bases for its ones ([`Bases::Summed`](super::Bases::Summed)) and the precomputed
//! copies of a dense one ([`Bases::Precomputed`](super::Bases::Precomputed)).

use super::{point_at, OnesGroup};
use crate::abi::{DevPtr, DevPtrMut, OnesSumsArgs, PrecomputeArgs, ELEMENT_THREADS};
use crate::curve::MsmCurve;
use crate::error::GpuError;
use crate::exec::{grid, Exec};
use crate::plan::Precomputation;

/// Writes the subset sums of the aligned groups of `group` of the `n` bases of `C` at `bases`
/// to `out` (`group.sum_points(n)` points, in the order [`OnesGroup`] gives; a group cut short
/// by the end of the bases has infinity for its missing bases), for
/// [`Bases::Summed`](super::Bases::Summed).
pub(crate) fn ones_sums<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    n: usize,
    out: u64,
    group: OnesGroup,
) -> Result<(), GpuError> {
    let groups = n.div_ceil(group.bases());
    if groups == 0 {
        return Ok(());
    }
    let n =
        u32::try_from(n).map_err(|_| GpuError::InvalidInput(format!("ones' sums of {n} bases")))?;
    e.launch_as(
        C::KERNELS.ones_sums,
        grid(groups, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &OnesSumsArgs {
            input: DevPtr(bases),
            output: DevPtrMut(out),
            n,
            group: group.bases() as u32,
        },
    )
}

/// Fills `out` with the copies of `pre` of the `n` bases of `C` at `bases`: copy k at point
/// `k * n` of `out` (`pre.copies * n` points), copy 0 the bases themselves.
pub(crate) fn precompute<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    n: usize,
    pre: &Precomputation,
    out: u64,
) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    let copy = |k: u32| point_at::<C>(out, k as usize * n);
    for k in 0..pre.copies {
        e.launch_as(
            C::KERNELS.precompute,
            grid(n, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &PrecomputeArgs {
                input: DevPtr(if k == 0 { bases } else { copy(k - 1) }),
                output: DevPtrMut(copy(k)),
                n: n as u32,
                c: if k == 0 { 0 } else { pre.window },
            },
        )?;
    }
    Ok(())
}
