//! The exclusive scan of u32 values on the device (a scan per tile, a scan of the tiles' sums,
//! then each tile's offset added) that the sorts, the rounds and the ones' lists share.

use crate::abi::{
    DevPtr, DevPtrMut, ScanAddArgs, ScanSumsArgs, ScanTilesArgs, ELEMENT_THREADS,
    SCAN_SUMS_THREADS, SCAN_THREADS, SCAN_TILE,
};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec};

/// Words of the tile sums an exclusive scan of `m` values needs.
fn scan_sums_len(m: usize) -> usize {
    m.div_ceil(SCAN_TILE as usize)
}

/// Exclusive scan of `m` values from `inp` to `out` (a scan per tile, a scan of the tiles' sums,
/// then each tile's offset added).
pub(super) fn exclusive_scan<E: Exec>(e: &E, inp: u64, out: u64, m: usize) -> Result<(), GpuError> {
    let tiles = scan_sums_len(m);
    let sums_buf = e.alloc(tiles)?;
    let sums = sums_buf.ptr();
    e.launch(
        tiles as u32,
        SCAN_THREADS,
        &ScanTilesArgs {
            input: DevPtr(inp),
            output: DevPtrMut(out),
            tile_sums: DevPtrMut(sums),
            m: m as u32,
        },
    )?;
    e.launch(
        1,
        SCAN_SUMS_THREADS,
        &ScanSumsArgs {
            sums: DevPtrMut(sums),
            count: tiles as u32,
        },
    )?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &ScanAddArgs {
            output: DevPtrMut(out),
            tile_sums: DevPtr(sums),
            m: m as u32,
        },
    )?;
    Ok(())
}
