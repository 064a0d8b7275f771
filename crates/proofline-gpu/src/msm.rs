//! G1 multi-scalar multiplication on the GPU (Pippenger with signed digits,
//! counting sort by bucket, per-bucket accumulation, segmented bucket
//! reduction), driving `cuda/msm.cu`. The sparse variant skips zero scalars,
//! sums the points whose scalar is one across the whole GPU, and runs
//! Pippenger on the remaining tail. Inputs larger than
//! [`crate::plan::MSM_MAX_CHUNK`] points (dense) or
//! [`crate::plan::MSM_MAX_CHUNK_SPARSE`] (sparse) are processed in chunks.

use blstrs::{G1Affine, G1Projective, Scalar};
use cudarc::driver::CudaSlice;
use group::Group;

use crate::context::{Arg, GpuContext};
use crate::error::GpuError;
use crate::layout::{
    affines_as_u32, jacobian_from_u32, AFFINE_WORDS, FR_WORDS, JACOBIAN_WORDS, XYZZ_WORDS,
};
use crate::ntt::DeviceScalars;
use crate::plan::{
    combine_windows, split_big, AccSplit, MsmPlan, ACC_BLOCKS_PER_SM, ACC_THREADS, ACC_WAVES,
    BIG_PER_BLOCK, MSM_MAX_CHUNK, MSM_MAX_CHUNK_SPARSE,
};

/// G1 affine points resident on the device (blst layout).
pub struct DeviceBases {
    pub(crate) buf: CudaSlice<u32>,
    pub(crate) len: usize,
}

impl DeviceBases {
    /// number of points
    pub fn len(&self) -> usize {
        self.len
    }
    /// whether empty
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What the last MSM did (for logs and benchmarks).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MsmStats {
    /// points in
    pub points: usize,
    /// scalars that went through Pippenger
    pub tail: usize,
    /// window bits of the last chunk
    pub window: u32,
    /// chunks
    pub chunks: usize,
}

const THREADS: u32 = 256;
const RED_THREADS: u32 = 128;
const SCAN_TILE: usize = 1024;
/// blocks per window in the window combination
const WINDOW_GROUPS: u32 = 16;

fn grid(n: usize, t: u32) -> u32 {
    n.div_ceil(t as usize) as u32
}

impl GpuContext {
    /// Uploads bases once for repeated MSMs (resident parameters).
    pub fn upload_bases(&self, bases: &[G1Affine]) -> Result<DeviceBases, GpuError> {
        Ok(DeviceBases {
            buf: self.upload_u32(affines_as_u32(bases))?,
            len: bases.len(),
        })
    }

    /// Benchmark helper: device bases of length `n` made by repeating `unique`.
    pub fn upload_bases_tiled(
        &self,
        unique: &[G1Affine],
        n: usize,
    ) -> Result<DeviceBases, GpuError> {
        if unique.is_empty() || n > u32::MAX as usize {
            return Err(GpuError::InvalidInput("tiling needs 1..2^32 points".into()));
        }
        let buf = self.alloc_u32(n * AFFINE_WORDS)?;
        let m = unique.len().min(n);
        let mut buf = buf;
        {
            let mut view = buf.slice_mut(0..m * AFFINE_WORDS);
            self.stream
                .memcpy_htod(affines_as_u32(&unique[..m]), &mut view)?;
        }
        self.launch(
            &self.k.g1_tile_points,
            grid(n, THREADS),
            THREADS,
            &[
                Arg::U64(self.ptr(&buf)),
                Arg::U32(m as u32),
                Arg::U32(n as u32),
            ],
        )?;
        Ok(DeviceBases { buf, len: n })
    }

    /// MSM sum_i scalars[i] * bases[i] (uploads both).
    pub fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, GpuError> {
        check_len(bases.len(), scalars.len())?;
        let b = self.upload_bases(bases)?;
        let s = self.upload_scalars(scalars)?;
        Ok(self.msm_device(&b, &s, false)?.0)
    }

    /// Sparse MSM: zero scalars skipped, ones summed directly, Pippenger on the tail.
    pub fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, GpuError> {
        check_len(bases.len(), scalars.len())?;
        let b = self.upload_bases(bases)?;
        let s = self.upload_scalars(scalars)?;
        Ok(self.msm_device(&b, &s, true)?.0)
    }

    /// MSM with resident bases (the first `scalars.len()` of them).
    pub fn msm_g1_resident(
        &self,
        bases: &DeviceBases,
        scalars: &[Scalar],
    ) -> Result<G1Projective, GpuError> {
        let s = self.upload_scalars(scalars)?;
        Ok(self.msm_device(bases, &s, false)?.0)
    }

    /// Sparse MSM with resident bases.
    pub fn msm_g1_resident_sparse(
        &self,
        bases: &DeviceBases,
        scalars: &[Scalar],
    ) -> Result<G1Projective, GpuError> {
        let s = self.upload_scalars(scalars)?;
        Ok(self.msm_device(bases, &s, true)?.0)
    }

    /// MSM with both bases and scalars resident: uses the first
    /// `scalars.len()` bases. Synchronises this context's stream (to read the
    /// per-window results back).
    pub fn msm_device(
        &self,
        bases: &DeviceBases,
        scalars: &DeviceScalars,
        sparse: bool,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        let n = scalars.len;
        if n > bases.len {
            return Err(GpuError::InvalidInput(format!(
                "{n} scalars but only {} bases",
                bases.len
            )));
        }
        let mut stats = MsmStats {
            points: n,
            ..Default::default()
        };
        let mut total = G1Projective::identity();
        let mut start = 0usize;
        while start < n {
            let len = (n - start).min(if sparse {
                MSM_MAX_CHUNK_SPARSE
            } else {
                MSM_MAX_CHUNK
            });
            let bp = self.ptr(&bases.buf) + (start * AFFINE_WORDS * 4) as u64;
            let sp = self.ptr(&scalars.buf) + (start * FR_WORDS * 4) as u64;
            let (r, tail, c) = self.msm_chunk(bp, sp, len, sparse)?;
            total += r;
            stats.tail += tail;
            stats.window = c;
            stats.chunks += 1;
            start += len;
        }
        Ok((total, stats))
    }

    fn exclusive_scan(&self, inp: u64, out: u64, m: usize) -> Result<(), GpuError> {
        let tiles = m.div_ceil(SCAN_TILE);
        let sums = self.alloc_u32(tiles)?;
        let sp = self.ptr(&sums);
        self.launch(
            &self.k.scan_tiles,
            tiles as u32,
            256,
            &[
                Arg::U64(inp),
                Arg::U64(out),
                Arg::U64(sp),
                Arg::U32(m as u32),
            ],
        )?;
        self.launch(
            &self.k.scan_sums,
            1,
            1024,
            &[Arg::U64(sp), Arg::U32(tiles as u32)],
        )?;
        self.launch(
            &self.k.scan_add,
            grid(m, THREADS),
            THREADS,
            &[Arg::U64(out), Arg::U64(sp), Arg::U32(m as u32)],
        )?;
        Ok(())
    }

    /// One chunk: returns (sum, tail count, window bits).
    fn msm_chunk(
        &self,
        bp: u64,
        sp: u64,
        n: usize,
        sparse: bool,
    ) -> Result<(G1Projective, usize, u32), GpuError> {
        let n32 = n as u32;
        let mut prof = Profiler::new(self);
        // 1. size the window on the scalars that need Pippenger
        let tail = if sparse {
            let counter = self.zeros_u32(1)?;
            self.launch(
                &self.k.msm_count_tail,
                grid(n, THREADS),
                THREADS,
                &[Arg::U64(sp), Arg::U32(n32), Arg::U64(self.ptr(&counter))],
            )?;
            let mut h = [0u32; 1];
            self.download(&counter, &mut h)?;
            h[0] as usize
        } else {
            n
        };
        let mut result = G1Projective::identity();
        // 2. ones (sparse only): whole-GPU reduction
        if sparse {
            let blocks = (self.sm_count * 4).max(1);
            let ones_count = self.zeros_u32(1)?;
            let ones_list = self.alloc_u32(n)?;
            let (ocp, olp) = (self.ptr(&ones_count), self.ptr(&ones_list));
            self.launch(
                &self.k.msm_collect_ones,
                grid(n, THREADS),
                THREADS,
                &[Arg::U64(sp), Arg::U32(n32), Arg::U64(ocp), Arg::U64(olp)],
            )?;
            let partial = self.alloc_u32(blocks as usize * XYZZ_WORDS)?;
            let pp = self.ptr(&partial);
            self.launch(
                &self.k.msm_sum_ones,
                blocks,
                RED_THREADS,
                &[Arg::U64(bp), Arg::U64(olp), Arg::U64(ocp), Arg::U64(pp)],
            )?;
            let out = self.alloc_u32(JACOBIAN_WORDS)?;
            self.launch(
                &self.k.xyzz_reduce,
                1,
                RED_THREADS,
                &[Arg::U64(pp), Arg::U32(blocks), Arg::U64(self.ptr(&out))],
            )?;
            let mut h = [0u32; JACOBIAN_WORDS];
            self.download(&out, &mut h)?;
            result += jacobian_from_u32(&h);
            prof.step("ones")?;
        }
        let plan = MsmPlan::for_points(tail);
        if tail == 0 {
            return Ok((result, 0, plan.c));
        }
        // 3. counting sort by bucket
        let m = plan.buckets();
        let counts = self.zeros_u32(m)?;
        let cursor = self.alloc_u32(m)?;
        let vals = self.alloc_u32(tail * plan.nw as usize)?;
        let (cp, up, vp) = (self.ptr(&counts), self.ptr(&cursor), self.ptr(&vals));
        let digits = |pass: u32| {
            self.launch(
                &self.k.msm_digits,
                grid(n, THREADS),
                THREADS,
                &[
                    Arg::U64(sp),
                    Arg::U32(n32),
                    Arg::U32(plan.c),
                    Arg::U32(plan.nw),
                    Arg::U32(sparse as u32),
                    Arg::U32(pass),
                    Arg::U64(cp),
                    Arg::U64(up),
                    Arg::U64(vp),
                ],
            )
        };
        digits(0)?;
        prof.step("histogram")?;
        self.exclusive_scan(cp, up, m)?;
        prof.step("scan")?;
        digits(1)?;
        prof.step("scatter")?;
        // 4. bucket accumulation: big buckets (skewed digits, repeated
        // scalars) split over many blocks, the rest in equal ranges of the
        // sorted entries per thread, then the owners add the heads
        let mut entries = [0u32; 1];
        self.download_at(&cursor, m - 1, &mut entries)?;
        let split = AccSplit::new(
            entries[0] as usize,
            m,
            self.sm_count * ACC_THREADS * ACC_BLOCKS_PER_SM,
            acc_waves(),
        );
        let buckets = self.alloc_u32(m * XYZZ_WORDS)?;
        let bk = self.ptr(&buckets);
        let cap = split.big_cap;
        let big_count = self.zeros_u32(1)?;
        let big_list = self.alloc_u32(2 * cap)?;
        let (bcp, blp) = (self.ptr(&big_count), self.ptr(&big_list));
        self.launch(
            &self.k.msm_find_big,
            grid(m, THREADS),
            THREADS,
            &[
                Arg::U64(cp),
                Arg::U32(m as u32),
                Arg::U32(split.big),
                Arg::U64(bcp),
                Arg::U64(blp),
                Arg::U32(cap as u32),
            ],
        )?;
        let threads = split.threads as usize;
        let head = self.alloc_u32(threads * XYZZ_WORDS)?;
        let head_id = self.alloc_u32(threads)?;
        let own_id = self.alloc_u32(threads)?;
        let (hp, hip, oip) = (self.ptr(&head), self.ptr(&head_id), self.ptr(&own_id));
        self.launch(
            &self.k.msm_bucket_acc,
            grid(threads, ACC_THREADS),
            ACC_THREADS,
            &[
                Arg::U64(bp),
                Arg::U64(vp),
                Arg::U64(up),
                Arg::U64(cp),
                Arg::U32(m as u32),
                Arg::U32(split.per_thread),
                Arg::U32(split.big),
                Arg::U32(split.threads),
                Arg::U64(bk),
                Arg::U64(hp),
                Arg::U64(hip),
                Arg::U64(oip),
            ],
        )?;
        prof.step("bucket_acc")?;
        self.launch(
            &self.k.msm_bucket_fixup,
            grid(threads, 64),
            64,
            &[
                Arg::U64(hp),
                Arg::U64(hip),
                Arg::U64(oip),
                Arg::U32(split.threads),
                Arg::U64(bk),
            ],
        )?;
        drop((head, head_id, own_id));
        let mut nbig = [0u32; 1];
        self.download(&big_count, &mut nbig)?;
        let nbig = (nbig[0] as usize).min(cap);
        prof.step("fixup")?;
        if nbig > 0 {
            let mut pairs = vec![0u32; 2 * nbig];
            self.download(&big_list, &mut pairs)?;
            let sizes: Vec<u32> = pairs.chunks_exact(2).map(|p| p[1]).collect();
            let split = split_big(&sizes, BIG_PER_BLOCK);
            let blk_bucket = self.upload_u32(&split.blk_bucket)?;
            let blk_part = self.upload_u32(&split.blk_part)?;
            let first = self.upload_u32(&split.first)?;
            let count = self.upload_u32(&split.count)?;
            let partial = self.alloc_u32(split.blk_bucket.len() * XYZZ_WORDS)?;
            let pp = self.ptr(&partial);
            self.launch(
                &self.k.msm_big_partial,
                split.blk_bucket.len() as u32,
                RED_THREADS,
                &[
                    Arg::U64(bp),
                    Arg::U64(vp),
                    Arg::U64(up),
                    Arg::U64(cp),
                    Arg::U64(blp),
                    Arg::U64(self.ptr(&blk_bucket)),
                    Arg::U64(self.ptr(&blk_part)),
                    Arg::U32(BIG_PER_BLOCK),
                    Arg::U64(pp),
                ],
            )?;
            self.launch(
                &self.k.msm_big_final,
                nbig as u32,
                RED_THREADS,
                &[
                    Arg::U64(pp),
                    Arg::U64(self.ptr(&first)),
                    Arg::U64(self.ptr(&count)),
                    Arg::U64(blp),
                    Arg::U64(bk),
                ],
            )?;
            prof.step("big_buckets")?;
        }
        drop(vals);
        // 5. segmented bucket reduction
        let segs = plan.segments();
        let seg_out = self.alloc_u32(plan.nw as usize * segs as usize * 2 * XYZZ_WORDS)?;
        let so = self.ptr(&seg_out);
        self.launch(
            &self.k.msm_bucket_reduce,
            grid(plan.nw as usize * segs as usize, 64),
            64,
            &[
                Arg::U64(bk),
                Arg::U64(cp),
                Arg::U32(plan.nw),
                Arg::U32(plan.nb),
                Arg::U32(plan.segment_len()),
                Arg::U64(so),
            ],
        )?;
        drop(buckets);
        prof.step("bucket_reduce")?;
        // 6. window combination, then per-window tree reduction to Jacobian
        let groups = WINDOW_GROUPS.min(segs);
        let partial = self.alloc_u32(plan.nw as usize * groups as usize * XYZZ_WORDS)?;
        let pp = self.ptr(&partial);
        self.launch(
            &self.k.msm_window_combine,
            plan.nw * groups,
            RED_THREADS,
            &[
                Arg::U64(so),
                Arg::U32(segs),
                Arg::U32(plan.segment_len()),
                Arg::U32(groups),
                Arg::U64(pp),
            ],
        )?;
        let win = self.alloc_u32(plan.nw as usize * JACOBIAN_WORDS)?;
        self.launch(
            &self.k.xyzz_reduce,
            plan.nw,
            RED_THREADS,
            &[Arg::U64(pp), Arg::U32(groups), Arg::U64(self.ptr(&win))],
        )?;
        let mut h = vec![0u32; plan.nw as usize * JACOBIAN_WORDS];
        self.download(&win, &mut h)?;
        let windows: Vec<G1Projective> = h
            .chunks_exact(JACOBIAN_WORDS)
            .map(jacobian_from_u32)
            .collect();
        result += combine_windows(&windows, plan.c);
        prof.step("window_reduce+combine")?;
        prof.report(n, tail, plan.c, nbig);
        Ok((result, tail, plan.c))
    }
}

/// Waves of the balanced accumulation: [`ACC_WAVES`], or the benchmark knob
/// `PROOFLINE_GPU_ACC_WAVES` (read once).
fn acc_waves() -> u32 {
    static W: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        std::env::var("PROOFLINE_GPU_ACC_WAVES")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|w| (1..=64).contains(w))
            .unwrap_or(ACC_WAVES)
    })
}

fn check_len(b: usize, s: usize) -> Result<(), GpuError> {
    if b != s {
        return Err(GpuError::InvalidInput(format!("{b} bases but {s} scalars")));
    }
    if s > u32::MAX as usize / 2 {
        return Err(GpuError::InvalidInput("MSM larger than 2^31 points".into()));
    }
    Ok(())
}

/// Per-step timing of one MSM chunk, printed to stderr when the environment
/// variable PROOFLINE_GPU_PROFILE is set (it synchronises after each step).
struct Profiler<'a> {
    g: &'a GpuContext,
    on: bool,
    t: std::time::Instant,
    steps: Vec<(&'static str, f64)>,
}

impl<'a> Profiler<'a> {
    fn new(g: &'a GpuContext) -> Self {
        Profiler {
            g,
            on: std::env::var_os("PROOFLINE_GPU_PROFILE").is_some(),
            t: std::time::Instant::now(),
            steps: Vec::new(),
        }
    }
    fn step(&mut self, name: &'static str) -> Result<(), GpuError> {
        if self.on {
            self.g.synchronize()?;
            self.steps
                .push((name, self.t.elapsed().as_secs_f64() * 1e3));
            self.t = std::time::Instant::now();
        }
        Ok(())
    }
    fn report(&self, n: usize, tail: usize, c: u32, nbig: usize) {
        if self.on {
            let s: Vec<String> = self
                .steps
                .iter()
                .map(|(k, v)| format!("{k} {v:.2}"))
                .collect();
            eprintln!(
                "msm profile n={n} tail={tail} c={c} big={nbig}: {} ms",
                s.join(", ")
            );
        }
    }
}
