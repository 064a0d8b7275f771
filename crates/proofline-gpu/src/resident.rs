//! Resident data of one parameter set on one device: the NTT tables of its domain and, when
//! they fit the budget, the bases of its five queries (H, L, A, B in G1, B in G2), those of the
//! sparse queries (L, A, B in G1 and in G2) each followed by their ones' subset sums where the
//! lease covers them. Uploaded once, on the device's resident stream, under a long-lived lease,
//! then shared read-only by every slot of the device (in an `Arc`); freed on the same stream
//! when the last holder drops it.

use blstrs::{G1Affine, G2Affine};

use crate::curve::{MsmCurve, G1, G2};
use crate::error::GpuError;
use crate::exec::{DevBuf, Exec};
use crate::layout::affines_as_u32;
use crate::msm::{ones_sums, precompute, Bases, OnesGroup, STREAM_CHUNK};
use crate::ntt::{build_tables, NttTables, TablePtrs};
use crate::plan::Precomputation;
use crate::slot::DeviceWords;

/// The query bases of a parameter set in host memory, as the parameters hold them.
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
    /// B query in G2 (as many points as B in G1).
    pub b_g2: &'a [G2Affine],
}

impl HostQueries<'_> {
    /// Their lengths.
    pub fn lens(&self) -> QueryLens {
        QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }
}

/// Lengths of the five queries (points).
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
    /// B in G2.
    pub b_g2: usize,
}

impl QueryLens {
    /// The four G1 queries, in upload order.
    pub fn g1(&self) -> [usize; 4] {
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

/// Which subset sums of their bases a resident set's sparse queries (L, A, B in G1 and B in G2)
/// hold after those bases for their ones (`msm::Bases::Summed`): with pairs, base 2j + base
/// 2j + 1 at point n + j of a query of n bases, so that a pair of bases whose scalars are both
/// one is one addition of the ones' sum, not two (half as many points again); with triples,
/// the sums of two or three of bases 3j, 3j + 1, 3j + 2 at points n + 4j on, so that the ones
/// of a triple are one addition (four thirds as many points again). Computed on the device
/// once per set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum OnesSums {
    /// The bases alone.
    #[default]
    Absent,
    /// Each query's bases, then the sums of their aligned pairs.
    Pairs,
    /// Each query's bases, then the subset sums of their aligned triples.
    Triples,
}

impl OnesSums {
    /// The groups the sums are of; none without sums.
    pub(crate) const fn group(self) -> Option<OnesGroup> {
        match self {
            OnesSums::Absent => None,
            OnesSums::Pairs => Some(OnesGroup::Pairs),
            OnesSums::Triples => Some(OnesGroup::Triples),
        }
    }
}

/// The five query bases on the device.
pub(crate) struct DeviceQueries {
    pub(crate) h: DeviceWords,
    pub(crate) l: DeviceWords,
    pub(crate) a: DeviceWords,
    pub(crate) b_g1: DeviceWords,
    pub(crate) b_g2: DeviceWords,
}

/// The bases each MSM reads: resident ones where the set has them, else the host's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageBases<'a> {
    pub(crate) h: Bases<'a>,
    pub(crate) l: Bases<'a>,
    pub(crate) a: Bases<'a>,
    pub(crate) b_g1: Bases<'a>,
    pub(crate) b_g2: Bases<'a, G2Affine>,
}

/// Resident data of one parameter set on one device. See the module documentation.
pub struct ResidentSet {
    pub(crate) device: usize,
    pub(crate) tables: NttTables<DeviceWords>,
    pub(crate) bases: Option<DeviceQueries>,
    /// The copies of the H bases precomputed for the fixed-base H MSM, if any (`bases.h` then
    /// holds all of them, `lens.h` points apart).
    pub(crate) h_pre: Option<Precomputation>,
    /// The ones' subset sums `bases.l`, `bases.a`, `bases.b_g1` and `bases.b_g2` hold.
    pub(crate) sums: OnesSums,
    pub(crate) lens: QueryLens,
    pub(crate) bytes: u64,
}

impl std::fmt::Debug for ResidentSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentSet")
            .field("device", &self.device)
            .field("log_n", &self.tables.log_n)
            .field("residency", &self.residency())
            .field("h_precomputation", &self.h_pre)
            .field("ones_sums", &self.sums)
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

    /// The copies of the H bases precomputed for the H MSM, if any.
    pub fn h_precomputation(&self) -> Option<Precomputation> {
        self.h_pre
    }

    /// The ones' subset sums the sparse queries hold.
    pub fn ones_sums(&self) -> OnesSums {
        self.sums
    }

    /// Bytes of the H stage over this set (`bytes::h_stage_bytes`, or with the H MSM over the
    /// precomputed copies `bytes::h_stage_bytes_precomputed`).
    pub fn h_stage_bytes(&self, sm_count: u32) -> u64 {
        match self.h_pre {
            Some(p) => crate::bytes::h_stage_bytes_precomputed(self.log_n(), &p, sm_count),
            None => crate::bytes::h_stage_bytes(self.log_n(), self.residency(), sm_count),
        }
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
            Some(d) => self.device_bases(d),
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
                    b_g2: Bases::Host {
                        points: host_q.b_g2,
                        chunk: STREAM_CHUNK,
                    },
                }
            }
        })
    }
}

impl ResidentSet {
    /// The resident bases each MSM reads; an error where the set streams them.
    pub(crate) fn resident_bases(&self) -> Result<StageBases<'_>, GpuError> {
        match &self.bases {
            Some(d) => Ok(self.device_bases(d)),
            None => Err(GpuError::InvalidInput(
                "the parameters' bases are streamed, not resident".into(),
            )),
        }
    }

    fn device_bases<'a>(&self, d: &'a DeviceQueries) -> StageBases<'a> {
        let sums = self.sums;
        StageBases {
            h: match self.h_pre {
                Some(pre) => Bases::Precomputed {
                    ptr: d.h.ptr(),
                    stride: self.lens.h,
                    pre,
                },
                None => Bases::Device(d.h.ptr()),
            },
            l: sparse_bases(&d.l, self.lens.l, sums),
            a: sparse_bases(&d.a, self.lens.a, sums),
            b_g1: sparse_bases(&d.b_g1, self.lens.b_g1, sums),
            b_g2: sparse_bases(&d.b_g2, self.lens.b_g2, sums),
        }
    }
}

/// Buffers of a resident set on some [`Exec`]: the tables, and the H, L, A, B (G1), B (G2)
/// bases.
pub(crate) type Uploaded<B> = (NttTables<B>, Option<[B; 5]>);

/// The NTT tables of `log_n` and, when `bases` is given, the five query bases, on `e`; with
/// `h_pre`, the H bases are followed by their precomputed copies, and with
/// `sums` the L, A, B (G1) and B (G2) bases by their subset sums (both computed on the
/// device).
pub(crate) fn upload_resident<E: Exec>(
    e: &E,
    log_n: u32,
    bases: Option<&HostQueries<'_>>,
    h_pre: Option<&Precomputation>,
    sums: OnesSums,
) -> Result<Uploaded<E::Buf>, GpuError> {
    let tables = build_tables(e, log_n)?;
    let h_query = |q: &HostQueries<'_>| -> Result<E::Buf, GpuError> {
        let words = affines_as_u32(q.h);
        match h_pre {
            None => e.upload(words),
            Some(p) => {
                let mut all = e.alloc(words.len() * p.copies as usize)?;
                e.upload_at(&mut all, 0, words)?;
                precompute::<_, G1>(e, all.ptr(), q.h.len(), p, all.ptr())?;
                Ok(all)
            }
        }
    };
    let uploaded = match bases {
        Some(q) => Some([
            h_query(q)?,
            sparse_query::<E, G1>(e, q.l, sums)?,
            sparse_query::<E, G1>(e, q.a, sums)?,
            sparse_query::<E, G1>(e, q.b_g1, sums)?,
            sparse_query::<E, G2>(e, q.b_g2, sums)?,
        ]),
        None => None,
    };
    e.sync()?;
    Ok((tables, uploaded))
}

/// How a sparse query's `n` resident bases at `q` are read: with their subset sums or without.
fn sparse_bases<'a, P>(q: &DeviceWords, n: usize, sums: OnesSums) -> Bases<'a, P> {
    match sums.group() {
        None => Bases::Device(q.ptr()),
        Some(group) => Bases::Summed {
            ptr: q.ptr(),
            n,
            group,
        },
    }
}

/// A sparse query's bases on `e`, followed by the subset sums `sums` asks for.
fn sparse_query<E: Exec, C: MsmCurve>(
    e: &E,
    points: &[C::Affine],
    sums: OnesSums,
) -> Result<E::Buf, GpuError> {
    let words = C::affines_as_u32(points);
    match sums.group() {
        None => e.upload(words),
        Some(group) => {
            let n = points.len();
            let mut all = e.alloc(words.len() + group.sum_points(n) * C::AFFINE_WORDS)?;
            e.upload_at(&mut all, 0, words)?;
            ones_sums::<E, C>(e, all.ptr(), n, all.at(words.len()), group)?;
            Ok(all)
        }
    }
}
