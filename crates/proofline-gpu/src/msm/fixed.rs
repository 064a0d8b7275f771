//! What a resident set derives once from a query's fixed bases: the pair sums of a sparse
//! query's bases ([`Bases::Paired`](super::Bases::Paired)) and the precomputed copies of a
//! dense one ([`Bases::Precomputed`](super::Bases::Precomputed)).

use super::point_at;
use crate::abi::{DevPtr, DevPtrMut, PairSumsArgs, PrecomputeArgs, ELEMENT_THREADS};
use crate::curve::{MsmCurve, G1};
use crate::error::GpuError;
use crate::exec::{grid, Exec};
use crate::plan::Precomputation;

/// Writes the pair sums of the `n` bases of `C` at `bases` to `out` (`n.div_ceil(2)` points:
/// point j is base 2j + base 2j + 1, the last a lone base where n is odd), for
/// [`Bases::Paired`](super::Bases::Paired).
pub(crate) fn pair_sums<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    n: usize,
    out: u64,
) -> Result<(), GpuError> {
    let pairs = n.div_ceil(2);
    if pairs == 0 {
        return Ok(());
    }
    let n =
        u32::try_from(n).map_err(|_| GpuError::InvalidInput(format!("pair sums of {n} bases")))?;
    e.launch_as(
        C::KERNELS.pair_sums,
        grid(pairs, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &PairSumsArgs {
            input: DevPtr(bases),
            output: DevPtrMut(out),
            n,
        },
    )
}

/// Fills `out` with the copies of `pre` of the `n` G1 bases at `bases`: copy k at point
/// `k * n` of `out` (`pre.copies * n` points), copy 0 the bases themselves.
pub(crate) fn precompute<E: Exec>(
    e: &E,
    bases: u64,
    n: usize,
    pre: &Precomputation,
    out: u64,
) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    let copy = |k: u32| point_at::<G1>(out, k as usize * n);
    for k in 0..pre.copies {
        e.launch(
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
