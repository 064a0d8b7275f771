//! Resident data of one parameter set on one device: the NTT tables of its domain and, when
//! they fit the budget, the bases of its four G1 queries (H, L, A, B). Uploaded once, on the
//! device's resident stream, under a long-lived lease, then shared read-only by every slot of
//! the device (in an `Arc`); freed on the same stream when the last holder drops it.

use blstrs::G1Affine;

use crate::error::GpuError;
use crate::exec::{DevBuf, Exec};
use crate::layout::affines_as_u32;
use crate::msm::{Bases, STREAM_CHUNK};
use crate::ntt::{build_tables, NttTables, TablePtrs};
use crate::slot::DeviceWords;

/// The G1 query bases of a parameter set in host memory, as the parameters hold them.
#[derive(Clone, Copy, Debug)]
pub struct HostQueries<'a> {
    /// H query (domain size - 1 points).
    pub h: &'a [G1Affine],
    /// L query (one per aux variable).
    pub l: &'a [G1Affine],
    /// A query.
    pub a: &'a [G1Affine],
    /// B query in G1.
    pub b_g1: &'a [G1Affine],
}

impl HostQueries<'_> {
    /// Their lengths.
    pub fn lens(&self) -> QueryLens {
        QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
        }
    }
}

/// Lengths of the four G1 queries (points).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueryLens {
    /// H.
    pub h: usize,
    /// L.
    pub l: usize,
    /// A.
    pub a: usize,
    /// B in G1.
    pub b_g1: usize,
}

impl QueryLens {
    /// All four, in upload order.
    pub fn all(&self) -> [usize; 4] {
        [self.h, self.l, self.a, self.b_g1]
    }
}

/// Where a partition's MSMs read their bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Residency {
    /// The bases are on the device (uploaded once, shared).
    Resident,
    /// Only the NTT tables are on the device; the MSMs stream the bases from host memory.
    Streamed,
}

/// The four query bases on the device.
pub(crate) struct DeviceQueries {
    pub(crate) h: DeviceWords,
    pub(crate) l: DeviceWords,
    pub(crate) a: DeviceWords,
    pub(crate) b_g1: DeviceWords,
}

/// The bases each MSM reads: resident ones where the set has them, else the host's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageBases<'a> {
    pub(crate) h: Bases<'a>,
    pub(crate) l: Bases<'a>,
    pub(crate) a: Bases<'a>,
    pub(crate) b_g1: Bases<'a>,
}

/// Resident data of one parameter set on one device. See the module documentation.
pub struct ResidentSet {
    pub(crate) device: usize,
    pub(crate) tables: NttTables<DeviceWords>,
    pub(crate) bases: Option<DeviceQueries>,
    pub(crate) lens: QueryLens,
    pub(crate) bytes: u64,
}

impl std::fmt::Debug for ResidentSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentSet")
            .field("device", &self.device)
            .field("log_n", &self.tables.log_n)
            .field("residency", &self.residency())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl ResidentSet {
    /// Whether the bases are on the device.
    pub fn residency(&self) -> Residency {
        if self.bases.is_some() {
            Residency::Resident
        } else {
            Residency::Streamed
        }
    }

    /// Bytes it holds on the device (what its lease covers).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// log2 of the domain of its NTT tables.
    pub fn log_n(&self) -> u32 {
        self.tables.log_n
    }

    /// The device it lives on.
    pub fn device_index(&self) -> usize {
        self.device
    }

    /// The query lengths it was made for.
    pub fn lens(&self) -> QueryLens {
        self.lens
    }

    pub(crate) fn table_ptrs(&self) -> TablePtrs {
        self.tables.ptrs()
    }

    /// Resident bases where present, else `host`'s (which must have this set's lengths).
    pub(crate) fn stage_bases<'a>(
        &'a self,
        host_q: &HostQueries<'a>,
    ) -> Result<StageBases<'a>, GpuError> {
        if host_q.lens() != self.lens {
            return Err(GpuError::InvalidInput(format!(
                "query lengths {:?} differ from the resident set's {:?}",
                host_q.lens(),
                self.lens
            )));
        }
        Ok(match &self.bases {
            Some(d) => StageBases {
                h: Bases::Device(d.h.ptr()),
                l: Bases::Device(d.l.ptr()),
                a: Bases::Device(d.a.ptr()),
                b_g1: Bases::Device(d.b_g1.ptr()),
            },
            None => {
                let host = |points| Bases::Host {
                    points,
                    chunk: STREAM_CHUNK,
                };
                StageBases {
                    h: host(host_q.h),
                    l: host(host_q.l),
                    a: host(host_q.a),
                    b_g1: host(host_q.b_g1),
                }
            }
        })
    }
}

/// Buffers of a resident set on some [`Exec`]: the tables, and the H, L, A, B bases.
pub(crate) type Uploaded<B> = (NttTables<B>, Option<[B; 4]>);

/// The NTT tables of `log_n` and, when `bases` is given, the four query bases, on `e`.
pub(crate) fn upload_resident<E: Exec>(
    e: &E,
    log_n: u32,
    bases: Option<&HostQueries<'_>>,
) -> Result<Uploaded<E::Buf>, GpuError> {
    let tables = build_tables(e, log_n)?;
    let uploaded = match bases {
        Some(q) => Some([
            e.upload(affines_as_u32(q.h))?,
            e.upload(affines_as_u32(q.l))?,
            e.upload(affines_as_u32(q.a))?,
            e.upload(affines_as_u32(q.b_g1))?,
        ]),
        None => None,
    };
    e.sync()?;
    Ok((tables, uploaded))
}
