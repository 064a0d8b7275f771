//! The balanced XYZZ bucket accumulation of a chunk's sorted entries (or of what the
//! batch-affine rounds leave): big buckets (skewed digits, repeated scalars) split over many
//! blocks, the rest in equal ranges of entries per thread, then the owners add the heads.

use crate::abi::{
    BigFinalArgs, BigPartialArgs, BucketAccArgs, BucketFixupArgs, DevPtr, DevPtrMut, FindBigArgs,
    ACC_THREADS, BIG_PER_BLOCK, ELEMENT_THREADS, SMALL_THREADS,
};
use crate::config::{G2Madd, MsmConfig};
use crate::curve::MsmCurve;
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::plan::{split_big, AccSplit};

/// Threads the balanced accumulation of `C` targets on this device.
pub(crate) fn acc_target<C: MsmCurve>(sm_count: u32) -> u32 {
    sm_count * ACC_THREADS * C::ACC_BLOCKS_PER_SM
}

/// What one XYZZ accumulation sums: `m` buckets, bucket g's entries at `[ends[g] - counts[g],
/// ends[g])` of `vals` (point | sign << 31; with `vals` of 0, entry k is point k), `entries` in
/// all, of the points at `points`; bucket g's sum goes to bucket g of `buckets`.
pub(super) struct AccInput {
    pub(super) points: u64,
    pub(super) vals: u64,
    pub(super) ends: u64,
    pub(super) counts: u64,
    pub(super) m: usize,
    pub(super) entries: usize,
    pub(super) buckets: u64,
}

/// The balanced XYZZ accumulation of `inp`: big buckets (skewed digits, repeated scalars) split
/// over many blocks, the rest in equal ranges of the entries per thread, then the owners add the
/// heads. Frees its temporaries (the caller synchronises).
pub(super) fn accumulate<E: Exec, C: MsmCurve>(
    e: &E,
    inp: &AccInput,
    cfg: &MsmConfig,
) -> Result<(), GpuError> {
    let k = C::KERNELS;
    let m = inp.m;
    let split = AccSplit::new(
        inp.entries,
        m,
        acc_target::<C>(e.sm_count()),
        crate::plan::ACC_WAVES,
    );
    let cap = split.big_cap;
    let big_count = e.zeros(1)?;
    let big_list = e.alloc(2 * cap)?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &FindBigArgs {
            counts: DevPtr(inp.counts),
            big_count: DevPtrMut(big_count.ptr()),
            big_list: DevPtrMut(big_list.ptr()),
            m: m as u32,
            big: split.big,
            big_cap: cap as u32,
        },
    )?;
    {
        let threads = split.threads as usize;
        let head = e.alloc(threads * C::XYZZ_WORDS)?;
        let head_id = e.alloc(threads)?;
        let own_id = e.alloc(threads)?;
        let acc = match cfg.g2_madd {
            G2Madd::Call => k.bucket_acc,
            G2Madd::Inline => k.bucket_acc_inline,
        };
        e.launch_as(
            acc,
            grid(threads, ACC_THREADS),
            ACC_THREADS,
            &BucketAccArgs {
                bases: DevPtr(inp.points),
                vals: DevPtr(inp.vals),
                ends: DevPtr(inp.ends),
                counts: DevPtr(inp.counts),
                buckets: DevPtrMut(inp.buckets),
                head: DevPtrMut(head.ptr()),
                head_id: DevPtrMut(head_id.ptr()),
                own_id: DevPtrMut(own_id.ptr()),
                m: m as u32,
                per_thread: split.per_thread,
                big: split.big,
                threads: split.threads,
            },
        )?;
        e.launch_as(
            k.bucket_fixup,
            grid(threads, SMALL_THREADS),
            SMALL_THREADS,
            &BucketFixupArgs {
                head: DevPtr(head.ptr()),
                head_id: DevPtr(head_id.ptr()),
                own_id: DevPtr(own_id.ptr()),
                buckets: DevPtrMut(inp.buckets),
                threads: split.threads,
            },
        )?;
    }
    let mut nbig = [0u32; 1];
    e.read(
        Readback::BigCount { max: cap as u32 },
        &big_count,
        0,
        &mut nbig,
    )?;
    let nbig = (nbig[0] as usize).min(cap);
    if nbig > 0 {
        let mut pairs = vec![0u32; 2 * nbig];
        e.read(
            Readback::BigList {
                entries: inp.entries as u32,
            },
            &big_list,
            0,
            &mut pairs,
        )?;
        let sizes: Vec<u32> = pairs.chunks_exact(2).map(|p| p[1]).collect();
        let bs = split_big(&sizes, BIG_PER_BLOCK);
        let blk_bucket = e.upload(&bs.blk_bucket)?;
        let blk_part = e.upload(&bs.blk_part)?;
        let first = e.upload(&bs.first)?;
        let count = e.upload(&bs.count)?;
        let partial = e.alloc(bs.blk_bucket.len() * C::XYZZ_WORDS)?;
        e.launch_as(
            k.big_partial,
            bs.blk_bucket.len() as u32,
            C::RED_THREADS,
            &BigPartialArgs {
                bases: DevPtr(inp.points),
                vals: DevPtr(inp.vals),
                cursor: DevPtr(inp.ends),
                counts: DevPtr(inp.counts),
                big_list: DevPtr(big_list.ptr()),
                blk_bucket: DevPtr(blk_bucket.ptr()),
                blk_part: DevPtr(blk_part.ptr()),
                partial: DevPtrMut(partial.ptr()),
                per_block: BIG_PER_BLOCK,
            },
        )?;
        e.launch_as(
            k.big_final,
            nbig as u32,
            C::RED_THREADS,
            &BigFinalArgs {
                partial: DevPtr(partial.ptr()),
                first: DevPtr(first.ptr()),
                count: DevPtr(count.ptr()),
                big_list: DevPtr(big_list.ptr()),
                buckets: DevPtrMut(inp.buckets),
            },
        )?;
    }
    drop((big_count, big_list));
    Ok(())
}
