//! Streaming bases from host memory: a helper thread copies chunks of points into pinned
//! (page-locked) host buffers while the slot's thread uploads the previous chunk and runs its
//! kernels. The two hand buffers to each other through bounded crossbeam channels: filled
//! chunks go to the slot (at most one waiting), emptied buffers come back (two in all), so the
//! copy can never run ahead of the GPU by more than one chunk. A copy out of a pinned buffer is
//! a DMA at full bus speed; the slot gives a buffer back only after synchronising its stream,
//! so the buffer is written again only after that DMA completed.
//!
//! `proofline_staging_queue_depth{slot}` is the number of filled chunks waiting for the slot:
//! 1 most of the time means the GPU side is the bottleneck, 0 that the copies are.

use blstrs::G1Affine;
use crossbeam_channel::{bounded, Receiver, Sender};
use metrics::{counter, gauge};

use crate::error::GpuError;
use crate::exec::Exec;
use crate::layout::affines_as_u32;

/// Pinned buffers per slot: one being filled, one being uploaded.
const BUFFERS: usize = 2;

/// A chunk of points `[lo, hi)` in a host buffer.
pub(crate) struct Staged<H> {
    /// First point.
    pub(crate) lo: usize,
    /// One past the last point.
    pub(crate) hi: usize,
    /// The buffer (its first `(hi - lo)` points are the chunk's).
    pub(crate) buf: H,
}

/// Streams `points` in chunks of `chunk` points to `each`, which uploads and uses one chunk on
/// the slot's thread and must synchronise the slot's stream before it returns (the chunk's
/// buffer is refilled next). The copies run on a helper thread, at most one chunk ahead.
pub(crate) fn stream_chunks<E: Exec>(
    e: &E,
    points: &[G1Affine],
    chunk: usize,
    mut each: impl FnMut(&Staged<E::Host>) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    if points.is_empty() {
        return Ok(());
    }
    let chunk = chunk.min(points.len()).max(1);
    let words = chunk * crate::abi::AFFINE_WORDS as usize;
    let (free_tx, free_rx): (Sender<E::Host>, Receiver<E::Host>) = bounded(BUFFERS);
    let (full_tx, full_rx) = bounded::<Result<Staged<E::Host>, GpuError>>(1);
    for _ in 0..BUFFERS {
        let _ = free_tx.send(e.host_buffer(words)?);
    }
    let returned = free_rx.clone();
    let label = e.label();
    let result =
        std::thread::scope(|s| {
            s.spawn(move || {
                let mut lo = 0;
                while lo < points.len() {
                    let hi = (lo + chunk).min(points.len());
                    let Ok(mut buf) = free_rx.recv() else {
                        return; // the slot stopped
                    };
                    let r = E::fill_host(&mut buf, affines_as_u32(&points[lo..hi]))
                        .map(|()| Staged { lo, hi, buf });
                    let failed = r.is_err();
                    if full_tx.send(r).is_err() || failed {
                        return;
                    }
                    lo = hi;
                }
            });
            let depth = gauge!("proofline_staging_queue_depth", "slot" => label.clone());
            let chunks = counter!("proofline_staged_chunks_total", "slot" => label.clone());
            let mut r = Ok(());
            while let Ok(staged) = full_rx.recv() {
                depth.set(full_rx.len() as f64);
                let staged = match staged {
                    Ok(s) => s,
                    Err(err) => {
                        r = Err(err);
                        break;
                    }
                };
                chunks.increment(1);
                if let Err(err) = each(&staged) {
                    r = Err(err);
                    break;
                }
                if free_tx.send(staged.buf).is_err() {
                    break;
                }
            }
            // stop the helper if it still runs (it waits on a channel at most)
            drop(full_rx);
            drop(free_tx);
            r
        });
    // the buffers back to the slot, for the next stage that streams
    for b in returned.try_iter() {
        e.recycle_host(b);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::DryRun;
    use blstrs::{G1Projective, Scalar};
    use group::{Curve, Group};

    fn points(n: usize) -> Vec<G1Affine> {
        (0..n as u64)
            .map(|i| (G1Projective::generator() * Scalar::from(i + 1)).to_affine())
            .collect()
    }

    #[test]
    fn every_chunk_arrives_once_in_order_with_its_points() {
        let pts = points(1000);
        let e = DryRun::new(1, 4);
        let mut seen = Vec::new();
        stream_chunks(&e, &pts, 64, |st| {
            let words = (st.hi - st.lo) * crate::abi::AFFINE_WORDS as usize;
            assert_eq!(&st.buf[..words], affines_as_u32(&pts[st.lo..st.hi]));
            seen.push((st.lo, st.hi));
            Ok(())
        })
        .unwrap();
        let want: Vec<(usize, usize)> = (0..1000)
            .step_by(64)
            .map(|lo| (lo, (lo + 64).min(1000)))
            .collect();
        assert_eq!(seen, want);
        // an error stops the stream (and the helper thread) at once
        let mut calls = 0;
        let r = stream_chunks(&e, &pts, 100, |_| {
            calls += 1;
            Err(GpuError::InvalidInput("stop".into()))
        });
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
