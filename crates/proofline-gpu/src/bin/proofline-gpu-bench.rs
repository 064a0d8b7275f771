//! proofline-gpu-bench: GPU benchmarks of the BLS12-381 kernels (field multiply throughput,
//! NTT, the Groth16 H sequence, dense and sparse G1 MSMs, G2 MSMs, one 32 GiB-shape Groth16
//! partition with its G2 MSM). Prints one JSON document (also written to --json PATH) and a
//! short table last. Data are resident on the device while timed unless a row says "+upload".
//! Random points are tiled from 2^20 unique G1 points (2^16 for G2) on the device.
//!
//! Usage: proofline-gpu-bench [--sections ntt,msm,sparse,g2,partition] [--variants]
//!        [--ntt-min L] [--ntt-max L] [--msm-min L] [--msm-max L] [--g2-log L]
//!        [--mix ZERO,ONE] [--partition-points N] [--partition-mix 8mib|2kib]
//!        [--only NAME,...] [--windows C,...] [--copies-gib G] [--cold-pool] [--reps R]
//!        [--json PATH]
//!
//! `--variants` times every kernel variant (`MsmConfig::variants`, `NttConfig::variants`) side
//! by side in the same process, each row naming its variant; without it, the production
//! defaults only. `--only` (with `--variants`) keeps the variants of those names (e.g.
//! `sort=atomic,sort=radix`), so that one call can spend its time on the comparison it is for.
//! Variants must be compared within one run: the same binary varies by up to 8 % between device
//! calls. The variants `pairs` and `triples` run the sparse MSMs (and the partition, on the
//! defaults and on the selected variants of the sparse G1 MSMs) over bases followed by their
//! ones' subset sums (`OnesSums::Pairs`, `OnesSums::Triples`), as a resident set whose lease
//! covers them holds them. Under
//! `tails=together` the partition times L, A and B in G1 as one step (the sparse stage's one
//! Pippenger chunk for their tails). The variant `pre` names the runs over precomputed copies
//! of the bases: the dense MSMs' and the partition's H MSM's. The variants `tails` and
//! `tails-pre` time the partition with the queries' tails (L, A and B in G1, B in G2) held
//! apart from their ones, as the pipeline holds them (the tails' bases are the same in every
//! sector): gathered once, and gathered with the G1 tails' precomputed copies; `tails-pre-g2`
//! adds copies of B's tail in G2. Those runs over copies or held tails also run each selected
//! variant of the window combination's blocks (`combine=..`), which only few bucket sets see.
//! The variant `pipeline` times the partition as the pipeline runs it where the card holds it
//! all: the sparse queries' ones over their pair sums, their tails held with the largest
//! layout of copies that fits (every tail's, the G1 tails', none), and the H MSM in the chunk
//! the H stage's lease allows beside them (`bytes::h_stage_msm_config`).
//!
//! `--copies-gib` sets the most the dense MSMs' precomputed copies (the `pre` runs) may take, 40
//! GiB unless given, within what the device has free less a margin for the MSM's own buffers:
//! an H200 holds all 11 copies of 24 bits of 2^26 bases (70.9 GB) under `--copies-gib 100`.
//!
//! `--windows` adds the dense MSMs of the `msm` section and the dense G2 MSM of the `g2`
//! section through uniform windows of each of those widths (one chunk, whatever width the
//! planner takes for the size: `plan::WindowPlan::for_points`), each checked equal to the
//! planner's result: the measurement the planner's window steps come from.
//!
//! The device's memory pool keeps freed memory across synchronisations, as under the daemon's
//! VRAM allocator; `--cold-pool` leaves the driver's default (every allocation cold after a
//! synchronisation), which is how the figures up to commit 2b5a484 were taken.
//!
//! Sparse MSMs take the CPU's 0/1/tail split (`SparseScalars`), as the pipeline does: the lists
//! of ones and of the tail are uploaded in the timed call (the split itself is not timed).
//! The partition benchmark gives each query (A, B, L; B in G2 with B's split) the share of the
//! aux points and the zero/one/other split measured on a real PoRep partition
//! (`--partition-mix`, default the 8MiB circuit's, docs/filecoin.md). It reports the total and
//! the kernels' time without the sparse splits' uploads, which the pipeline's sparse stage
//! makes before its kernel turn.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Projective};
use proofline_gpu::plan::{BucketSets, ChunkWindows, WindowPlan, MIN_WINDOW};
use proofline_gpu::testkit::{
    mixed_scalars, random_g2_points, random_points, random_scalars, HeldData, ScalarMix,
    SummedPoints, TestGpu,
};
use proofline_gpu::{
    probe, CInput, GpuError, MsmConfig, MsmStats, NttConfig, NttKind, OnesSums, Precomputation,
    Residency, SparseTails,
};
use proofline_groth16::msm::{HeldSplit, MsmPlan, SparseScalars};
use serde_json::json;

const SECTIONS: [&str; 5] = ["ntt", "msm", "sparse", "g2", "partition"];

/// The widest window `--windows` takes: 2^23 buckets a window, whose memory the bucket
/// reduction's buffers grow by; at the sizes the benchmark runs 21 and 22 bits already lose to
/// 20 (docs/gpu-kernels.md).
const MAX_SWEEP_WINDOW: u32 = 24;

/// Uniform windows of `c` bits, one bucket set each.
fn uniform_windows(c: u32) -> ChunkWindows {
    ChunkWindows::Uniform(BucketSets::plain(WindowPlan::with_window(c)))
}

struct Opts {
    sections: Vec<&'static str>,
    variants: bool,
    ntt_min: u32,
    ntt_max: u32,
    msm_min: u32,
    msm_max: u32,
    g2_log: u32,
    mix: ScalarMix,
    partition_points: usize,
    partition_mix: &'static str,
    only: Option<Vec<String>>,
    windows: Vec<u32>,
    cold_pool: bool,
    /// Most GiB the dense MSMs' precomputed copies may take.
    copies_gib: u64,
    reps: usize,
    json: Option<String>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        sections: SECTIONS.to_vec(),
        variants: false,
        ntt_min: 20,
        ntt_max: 27,
        msm_min: 20,
        msm_max: 26,
        g2_log: 20,
        mix: ScalarMix::default(),
        partition_points: 130_278_541,
        partition_mix: "8mib",
        only: None,
        windows: Vec::new(),
        cold_pool: false,
        copies_gib: 40,
        reps: 5,
        json: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let val = |i: usize| {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("missing value for {}", args[i]))
    };
    while i < args.len() {
        let a = args[i].as_str();
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{a}: {e}"));
        match a {
            "--sections" => {
                let mut v = Vec::new();
                for s in val(i)?.split(',') {
                    let s = s.trim();
                    match SECTIONS.iter().find(|k| **k == s) {
                        Some(k) => v.push(*k),
                        None => return Err(format!("--sections: unknown section {s}")),
                    }
                }
                o.sections = v;
            }
            "--ntt-min" => o.ntt_min = num(val(i)?)? as u32,
            "--ntt-max" => o.ntt_max = num(val(i)?)? as u32,
            "--msm-min" => o.msm_min = num(val(i)?)? as u32,
            "--msm-max" => o.msm_max = num(val(i)?)? as u32,
            "--g2-log" => o.g2_log = num(val(i)?)? as u32,
            "--partition-points" => o.partition_points = num(val(i)?)? as usize,
            "--reps" => o.reps = num(val(i)?)?.max(1) as usize,
            "--copies-gib" => o.copies_gib = num(val(i)?)?,
            "--partition-mix" => {
                o.partition_mix = match val(i)?.to_ascii_lowercase().as_str() {
                    "8mib" => "8mib",
                    "2kib" => "2kib",
                    other => {
                        return Err(format!(
                            "--partition-mix: unknown circuit {other} (8mib, 2kib)"
                        ))
                    }
                }
            }
            "--json" => o.json = Some(val(i)?),
            "--mix" => {
                let v: Vec<f64> = val(i)?.split(',').filter_map(|x| x.parse().ok()).collect();
                if v.len() != 2 {
                    return Err("--mix takes ZERO,ONE fractions".into());
                }
                o.mix = ScalarMix {
                    zero: v[0],
                    one: v[1],
                };
            }
            "--variants" => {
                o.variants = true;
                i += 1;
                continue;
            }
            "--only" => {
                o.only = Some(val(i)?.split(',').map(str::to_string).collect());
            }
            "--windows" => {
                let mut v = Vec::new();
                for c in val(i)?.split(',') {
                    match c.trim().parse::<u32>() {
                        Ok(c) if (MIN_WINDOW..=MAX_SWEEP_WINDOW).contains(&c) => v.push(c),
                        _ => {
                            return Err(format!(
                                "--windows: {c} is not a window width in {MIN_WINDOW}..={MAX_SWEEP_WINDOW}"
                            ))
                        }
                    }
                }
                o.windows = v;
            }
            "--cold-pool" => {
                o.cold_pool = true;
                i += 1;
                continue;
            }
            "-h" | "--help" => return Err("see the module doc for usage".into()),
            _ => return Err(format!("unknown argument {a}")),
        }
        i += 2;
    }
    Ok(o)
}

impl Opts {
    fn has(&self, section: &str) -> bool {
        self.sections.contains(&section)
    }
    /// The MSM variants of the G1 sections below 2^27 points (where neither the chunk size nor
    /// G2's additions make a difference; the partition runs all of them).
    fn msm_variants(&self) -> Vec<(&'static str, MsmConfig)> {
        let d = MsmConfig::default();
        self.variants_where(|m| m.g2_madd == d.g2_madd)
    }
    /// The MSM variants of the G2 section.
    fn g2_variants(&self) -> Vec<(&'static str, MsmConfig)> {
        self.variants_where(|_| true)
    }
    /// The MSM variants at the default chunk size that pass `keep`, or the default alone.
    fn variants_where(&self, keep: impl Fn(&MsmConfig) -> bool) -> Vec<(&'static str, MsmConfig)> {
        if self.variants {
            let chunk = MsmConfig::default().max_chunk_log;
            MsmConfig::variants()
                .into_iter()
                .filter(|(name, m)| m.max_chunk_log == chunk && keep(m) && self.named(name))
                .collect()
        } else {
            vec![("default", MsmConfig::default())]
        }
    }
    /// Whether `--only` keeps the variant `name` (it keeps every one without `--only`).
    fn named(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
    fn ntt_variants(&self) -> Vec<(&'static str, NttConfig)> {
        if self.variants {
            NttConfig::variants()
                .into_iter()
                .filter(|(name, _)| self.named(name))
                .collect()
        } else {
            vec![("default", NttConfig::default())]
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// runs `f` once to warm up, then `reps` times; milliseconds (every call returns with its work
/// finished: the slot synchronises its stream)
fn time<F: FnMut() -> Result<(), GpuError>>(reps: usize, mut f: F) -> Result<Vec<f64>, GpuError> {
    f()?;
    let mut v = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(v)
}

struct Row {
    name: String,
    size: String,
    variant: String,
    ms: f64,
    note: String,
}

/// Rows and JSON records of a run.
#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    results: Vec<serde_json::Value>,
}

impl Report {
    fn row(&mut self, name: &str, size: String, variant: &str, ms: f64, note: String) {
        // as it comes, for a run cut short before its table
        eprintln!("{name} | {size} | {variant} | {ms:.2} ms | {note}");
        self.rows.push(Row {
            name: name.into(),
            size,
            variant: variant.into(),
            ms,
            note,
        });
    }
}

fn run(o: &Opts) -> Result<(serde_json::Value, Vec<Row>), GpuError> {
    // As the daemon's VRAM allocator does: freed memory stays cached in the pool across
    // synchronisations (with the default threshold, 0, every call's buffers are allocated cold).
    let g = TestGpu::open(0, o.cold_pool)?;
    let mut r = Report::default();
    eprintln!(
        "device: {:?}; {}",
        g.device().info(),
        g.device().kernel_images()
    );
    let (fr, fp) = g.mul_throughput(1 << 20, 256)?;
    r.row(
        "Fr mul",
        "-".into(),
        "-",
        0.0,
        format!("{:.1} G mul/s", fr / 1e9),
    );
    r.row(
        "Fp mul",
        "-".into(),
        "-",
        0.0,
        format!("{:.1} G mul/s", fp / 1e9),
    );
    r.results
        .push(json!({"bench": "mul_throughput", "fr_gmul_s": fr / 1e9, "fp_gmul_s": fp / 1e9}));
    if o.has("ntt") {
        ntt_section(o, &g, &mut r)?;
    }
    let needs_points = o.has("msm") || o.has("sparse") || o.has("partition");
    if needs_points {
        msm_sections(o, &g, &mut r)?;
    }
    if o.has("g2") {
        g2_section(o, &g, &mut r)?;
    }
    let doc = json!({"device": g.device().info(), "images": g.device().kernel_images(),
        "variants": o.variants, "results": r.results});
    Ok((doc, r.rows))
}

fn ntt_section(o: &Opts, g: &TestGpu, r: &mut Report) -> Result<(), GpuError> {
    let max_ntt = o.ntt_max.max(o.ntt_min);
    let host = random_scalars(1usize << max_ntt, 42);
    for lg in o.ntt_min..=o.ntt_max {
        let n = 1usize << lg;
        let mut d = g.scalars(&host[..n])?;
        let tables = g.ntt_tables(lg)?;
        let reps = if lg >= 26 { 3 } else { o.reps };
        let v = time(reps, || g.ntt_resident(&mut d, &tables, NttKind::Forward))?;
        let m = median(v.clone());
        r.row("NTT forward", format!("2^{lg}"), "-", m, String::new());
        r.results
            .push(json!({"bench": "ntt_forward", "log_n": lg, "ms_median": m, "ms": v}));
        if lg == 24 || lg == o.ntt_max {
            let v = time(reps, || {
                g.ntt_resident(&mut d, &tables, NttKind::CosetInverse)
            })?;
            let m = median(v.clone());
            r.row(
                "NTT coset inverse",
                format!("2^{lg}"),
                "-",
                m,
                String::new(),
            );
            r.results
                .push(json!({"bench": "ntt_coset_inverse", "log_n": lg, "ms_median": m, "ms": v}));
            let mut b = g.scalars(&host[..n])?;
            let mut c = g.scalars(&host[..n])?;
            for (name, cfg) in o.ntt_variants() {
                let v = time(reps.min(3), || {
                    g.h_poly_resident(&mut d, &mut b, &mut c, &tables, &cfg, CInput::Product)
                })?;
                let m = median(v.clone());
                r.row(
                    "h_poly (c = a b, the H sequence)",
                    format!("2^{lg}"),
                    name,
                    m,
                    String::new(),
                );
                r.results
                    .push(json!({"bench": "h_poly", "log_n": lg, "variant": name,
                    "config": cfg, "ms_median": m, "ms": v}));
            }
        }
    }
    Ok(())
}

fn msm_sections(o: &Opts, g: &TestGpu, r: &mut Report) -> Result<(), GpuError> {
    let max_msm = if o.has("partition") {
        o.msm_max.max(27)
    } else {
        o.msm_max
    };
    let max_points = (1usize << max_msm).max(if o.has("partition") {
        o.partition_points
    } else {
        0
    });
    let t = Instant::now();
    let unique = random_points(1 << 20, 7);
    eprintln!(
        "generated 2^20 points in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // with the `pipeline` partition group the bases carry their ones' pair sums after them, so
    // that the group reads the same allocation as the others (a second copy of the partition's
    // bases does not fit an 80 GB card beside its data)
    let tiled = if o.has("partition") && o.variants && o.named("pipeline") {
        Tiled::Summed(g.tiled_points_summed(&unique, max_points, OnesSums::Pairs)?)
    } else {
        Tiled::Plain(g.tiled_points(&unique, max_points)?)
    };
    let bases = tiled.points();
    if o.has("msm") {
        let dense = random_scalars(1usize << o.msm_max, 9);
        for lg in o.msm_min..=o.msm_max {
            let n = 1usize << lg;
            let s = g.scalars(&dense[..n])?;
            let reps = if lg >= 25 { 3 } else { o.reps };
            for (name, cfg) in o.msm_variants() {
                let mut stats = None;
                let v = time(reps, || {
                    stats = Some(g.msm_resident(bases, &s, &cfg)?.1);
                    Ok(())
                })?;
                let m = median(v.clone());
                let c = stats.map(|s| s.window).unwrap_or(0);
                r.row("MSM G1 dense", format!("2^{lg}"), name, m, format!("c={c}"));
                r.results
                    .push(json!({"bench": "msm_dense", "log_n": lg, "variant": name,
                    "config": cfg, "ms_median": m, "ms": v, "stats": stats}));
            }
            if !o.windows.is_empty() {
                let cfg = MsmConfig::default();
                let planned = g.msm_resident(bases, &s, &cfg)?.0;
                window_sweep(o, r, "G1", lg, reps, planned, |w| {
                    g.msm_resident_windows(bases, &s, w, &cfg)
                })?;
            }
            if o.variants && o.named("pre") {
                precomputed_msm(o, g, bases, &s, lg, r)?;
            }
            if lg == 24 {
                let cfg = MsmConfig::default();
                let v = time(3, || {
                    let s = g.scalars(&dense[..n])?;
                    g.msm_resident(bases, &s, &cfg).map(|_| ())
                })?;
                let m = median(v.clone());
                r.row(
                    "MSM G1 dense +upload scalars",
                    format!("2^{lg}"),
                    "default",
                    m,
                    String::new(),
                );
                r.results.push(
                    json!({"bench": "msm_dense_upload_scalars", "log_n": lg, "ms_median": m, "ms": v}),
                );
            }
        }
    }
    if o.has("sparse") {
        // the sparse stage uploads the split's lists and tail scalars in each call
        for mb in [64usize, 256] {
            let (pageable, staged, dma) = g.upload_rates(mb << 18)?;
            r.row(
                "upload to device",
                format!("{mb} MiB"),
                "staged",
                f64::from(mb as u32) * 1.048576 / staged,
                format!(
                    "staged {staged:.1} GB/s; driver from pageable {pageable:.1} GB/s, DMA alone {dma:.1} GB/s"
                ),
            );
            r.results.push(
                json!({"bench": "upload", "mib": mb, "pageable_gbs": pageable,
                "staged_gbs": staged, "dma_gbs": dma}),
            );
        }
        let mix = o.mix;
        let sizes: Vec<usize> = [1usize << 24, 1 << 26]
            .into_iter()
            .filter(|&n| n <= max_points)
            .collect();
        let mut summed = Vec::new();
        if let Some(&n) = sizes.last() {
            for sums in [OnesSums::Pairs, OnesSums::Triples] {
                if o.variants && o.named(sums_name(sums)) {
                    summed.push((sums_name(sums), g.tiled_points_summed(&unique, n, sums)?));
                }
            }
        }
        for n in sizes {
            let split = SparseScalars::from_dense(&mixed_scalars(n, mix, 11));
            let mut runs: Vec<(&str, MsmConfig, Option<&SummedPoints>)> = o
                .msm_variants()
                .into_iter()
                .map(|(name, cfg)| (name, cfg, None))
                .collect();
            for (name, p) in &summed {
                runs.push((name, MsmConfig::default(), Some(p)));
            }
            for (name, cfg, pairs) in runs {
                let mut stats = None;
                let v = time(3, || {
                    stats = Some(match pairs {
                        Some(p) => g.msm_sparse_summed(p, &split, &cfg)?.1,
                        None => g.msm_sparse_resident(bases, &split, &cfg)?.1,
                    });
                    Ok(())
                })?;
                let m = median(v.clone());
                let tail = stats.map(|s| s.tail).unwrap_or(0);
                r.row(
                    "MSM G1 sparse",
                    format!("{n}"),
                    name,
                    m,
                    format!("mix {:.2}/{:.2}, tail {tail}", mix.zero, mix.one),
                );
                r.results.push(
                    json!({"bench": "msm_sparse", "n": n, "mix": mix, "variant": name,
                    "config": cfg, "ms_median": m, "ms": v, "stats": stats}),
                );
            }
        }
    }
    if o.has("partition") {
        partition(o, g, &unique, bases, tiled.summed(), r)?;
    }
    Ok(())
}

/// Bytes the benchmark lets precomputed copies take: what the device has free, less a margin
/// for the MSM's own buffers, at most `cap`.
fn copies_budget(g: &TestGpu, cap: u64) -> u64 {
    let free = g.device().memory_info().map(|(f, _)| f as u64).unwrap_or(0);
    free.saturating_sub(24 << 30).min(cap)
}

/// The dense MSM over precomputed copies of the bases (`Precomputation::plan` with what the
/// device can spare, at most `--copies-gib` GiB, 40 unless given), with the defaults and the
/// selected variants of the window combination (`few_sets_variants`); the copies are computed
/// once (timed apart: a one-time cost per parameter set).
fn precomputed_msm(
    o: &Opts,
    g: &TestGpu,
    bases: &proofline_gpu::testkit::DeviceData,
    s: &proofline_gpu::testkit::DeviceData,
    lg: u32,
    r: &mut Report,
) -> Result<(), GpuError> {
    let n = 1usize << lg;
    let Some(pre) =
        Precomputation::plan(n, n, copies_budget(g, o.copies_gib.saturating_mul(1 << 30)))
    else {
        eprintln!("2^{lg}: no precomputation fits");
        return Ok(());
    };
    let t = Instant::now();
    let copies = g.precompute(bases, n, &pre)?;
    let pre_ms = t.elapsed().as_secs_f64() * 1e3;
    let reps = if lg >= 25 { 3 } else { o.reps };
    let name = format!("pre c={} x{}", pre.window, pre.copies);
    for (variant, cfg, _) in few_sets_variants(o, &name) {
        let mut stats = None;
        let v = time(reps, || {
            stats = Some(g.msm_resident_precomputed(&copies, &pre, n, s, &cfg)?.1);
            Ok(())
        })?;
        let m = median(v.clone());
        r.row(
            "MSM G1 dense",
            format!("2^{lg}"),
            &variant,
            m,
            format!(
                "copies made in {pre_ms:.0} ms, {:.1} GB",
                pre.bytes(n) as f64 / 1e9
            ),
        );
        r.results.push(
            json!({"bench": "msm_dense", "log_n": lg, "variant": variant, "config": cfg,
            "precomputation": pre, "precompute_ms": pre_ms, "ms_median": m, "ms": v,
            "stats": stats}),
        );
    }
    Ok(())
}

fn g2_section(o: &Opts, g: &TestGpu, r: &mut Report) -> Result<(), GpuError> {
    let t = Instant::now();
    let unique = random_g2_points(1 << 16, 8);
    eprintln!(
        "generated 2^16 G2 points in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let n = 1usize << o.g2_log;
    let bases = g.tiled_g2_points(&unique, n.max(1 << 24))?;
    let dense = SparseScalars {
        num_bases: n,
        tail_index: (0..n as u32).collect(),
        tail_scalars: random_scalars(n, 19),
        ..Default::default()
    };
    // the B query's measured split (8MiB circuit) over 2^24 points
    let b_mix = partition_shape("8mib")[2];
    let sparse = SparseScalars::from_dense(&mixed_scalars(
        1 << 24,
        ScalarMix {
            zero: b_mix.2,
            one: b_mix.3,
        },
        23,
    ));
    for (what, size, split) in [
        ("MSM G2 dense", format!("2^{}", o.g2_log), &dense),
        ("MSM G2 sparse (B mix)", "2^24".to_string(), &sparse),
    ] {
        for (name, cfg) in o.g2_variants() {
            let mut stats = None;
            let v = time(3, || {
                stats = Some(g.msm_g2_sparse_resident(&bases, split, &cfg)?.1);
                Ok(())
            })?;
            let m = median(v.clone());
            let tail = stats.map(|s| s.tail).unwrap_or(0);
            r.row(what, size.clone(), name, m, format!("tail {tail}"));
            r.results.push(
                json!({"bench": "msm_g2", "what": what, "points": split.num_bases,
                "variant": name, "config": cfg, "ms_median": m, "ms": v, "stats": stats}),
            );
        }
    }
    if !o.windows.is_empty() {
        let cfg = MsmConfig::default();
        let planned = g.msm_g2_sparse_resident(&bases, &dense, &cfg)?.0;
        let s = g.scalars(&dense.tail_scalars)?;
        window_sweep(o, r, "G2", o.g2_log, 3, planned, |w| {
            g.msm_g2_resident_windows(&bases, &s, w, &cfg)
        })?;
    }
    Ok(())
}

/// Times `msm` through uniform windows of each `--windows` width (`reps` runs), one row each,
/// and fails unless each result equals `planned` (the planner's).
fn window_sweep<P: PartialEq>(
    o: &Opts,
    r: &mut Report,
    group: &str,
    lg: u32,
    reps: usize,
    planned: P,
    mut msm: impl FnMut(&ChunkWindows) -> Result<P, GpuError>,
) -> Result<(), GpuError> {
    for &c in &o.windows {
        let windows = uniform_windows(c);
        let mut equal = true;
        let v = time(reps, || {
            equal &= msm(&windows)? == planned;
            Ok(())
        })?;
        if !equal {
            return Err(GpuError::InvalidInput(format!(
                "{group} MSM of 2^{lg} points through {c}-bit windows differs from the planner's"
            )));
        }
        let m = median(v.clone());
        r.row(
            &format!("MSM {group} dense"),
            format!("2^{lg}"),
            &format!("windows c={c}"),
            m,
            "uniform, one chunk".to_string(),
        );
        r.results.push(
            json!({"bench": "msm_dense_windows", "group": group, "log_n": lg,
            "window": c, "ms_median": m, "ms": v}),
        );
    }
    Ok(())
}

/// The variants the partition runs under: the defaults, and with `--variants` each other MSM
/// and NTT variant alone (one change from the defaults at a time, but the window layouts,
/// which come with the one chunk of 2^27 they apply to; those `--only` names).
fn partition_variants(o: &Opts) -> Vec<(String, MsmConfig, NttConfig)> {
    let (msm, ntt) = (MsmConfig::default(), NttConfig::default());
    let mut v = vec![("default".to_string(), msm, ntt)];
    if o.variants {
        for (name, m) in MsmConfig::variants() {
            if m != msm && o.named(name) {
                v.push((name.to_string(), m, ntt));
            }
        }
        for (name, n) in NttConfig::variants() {
            if n != ntt && o.named(name) {
                v.push((name.to_string(), msm, n));
            }
        }
    }
    v
}

/// The variant name of the runs over the ones' subset sums `sums`.
fn sums_name(sums: OnesSums) -> &'static str {
    match sums {
        OnesSums::Absent => "bases",
        OnesSums::Pairs => "pairs",
        OnesSums::Triples => "triples",
    }
}

/// The partition's runs over the ones' subset sums named `name`: the defaults, and the selected
/// variants that change the sparse G1 MSMs (their tails, their ones' groups, the accumulation's
/// rounds), which run over the subset sums in production, or the H MSM's chunk (the pipeline's
/// H stage takes one chunk of 2^27 where its lease allows: `chunk=2^27` over the sums is the
/// partition as the pipeline runs it on such a card).
fn sums_variants(o: &Opts, name: &str) -> Vec<(String, MsmConfig, NttConfig)> {
    let (msm, ntt) = (MsmConfig::default(), NttConfig::default());
    let over_sums = |m: &MsmConfig| {
        m.sparse_tails != msm.sparse_tails
            || m.g1_ones_group_log != msm.g1_ones_group_log
            || m.acc != msm.acc
            || m.max_chunk_log != msm.max_chunk_log
    };
    let mut v = vec![(name.to_string(), msm, ntt)];
    for (variant, m) in MsmConfig::variants() {
        if over_sums(&m) && o.named(variant) {
            v.push((format!("{name} {variant}"), m, ntt));
        }
    }
    v
}

/// The runs over precomputed copies or held tails named `name`: the defaults, and the selected
/// variants of the window combination's blocks (`combine=..`), which the few bucket sets of
/// such layouts see (the plain layouts of these sizes run alike under both).
fn few_sets_variants(o: &Opts, name: &str) -> Vec<(String, MsmConfig, NttConfig)> {
    let (msm, ntt) = (MsmConfig::default(), NttConfig::default());
    let mut v = vec![(name.to_string(), msm, ntt)];
    for (variant, m) in MsmConfig::combine_variants() {
        if o.named(variant) {
            v.push((format!("{name} {variant}"), m, ntt));
        }
    }
    v
}

/// What a group of partition runs' MSMs read beside the bases: nothing more, the sparse
/// queries' ones' subset sums, the H bases' precomputed copies, the sparse queries' tails
/// held apart (gathered once, or gathered with precomputed copies), or all that the pipeline
/// holds on a card with room for it (`Pipeline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prepared {
    Bases,
    OnesSums(OnesSums),
    HCopies,
    Tails(TailHeld),
    Pipeline,
}

/// How the fixed tails of the sparse queries are held (the `tails`, `tails-pre` and
/// `tails-pre-g2` runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TailHeld {
    /// Each tail's bases side by side, as a gather leaves them.
    Gathered,
    /// Side by side, the G1 tails with the copies of `Precomputation::plan` for the tail's
    /// length: what the pipeline holds where the G1 tails' copies fit and B's in G2 do not.
    Precomputed,
    /// As `Precomputed`, B's tail in G2 with copies too: what the pipeline holds where every
    /// tail's copies fit.
    PrecomputedWithG2,
}

impl TailHeld {
    fn name(self) -> &'static str {
        match self {
            TailHeld::Gathered => "tails",
            TailHeld::Precomputed => "tails-pre",
            TailHeld::PrecomputedWithG2 => "tails-pre-g2",
        }
    }
}

/// The sparse queries' tails held on the device (`TestGpu::hold_tail`, `TestGpu::hold_g2_tail`
/// for B's in G2), gathered once, with precomputed copies when asked, and each query's split
/// against its held tail (`SparseScalars::against_held`; made once, as the split itself is not
/// timed; B's serves both groups). The bases of a real partition's tails are the same in every
/// sector (docs/filecoin.md), so the held list is the query's own tail: nothing of it is left
/// to gather in the timed MSM.
struct HeldTails {
    held: Vec<HeldData>,
    splits: Vec<HeldSplit>,
    b_g2: HeldData,
}

impl HeldTails {
    /// The largest of `kinds` (in order) whose copies fit beside what the device holds, with
    /// its kind: the layouts the pipeline's held tails take where room allows.
    fn largest(
        g: &TestGpu,
        bases: &proofline_gpu::testkit::DeviceData,
        bases_g2: &proofline_gpu::testkit::DeviceData,
        queries: &[&SparseScalars; 3],
        kinds: &[TailHeld],
    ) -> Result<(Self, TailHeld), GpuError> {
        let mut last = None;
        for &kind in kinds {
            match HeldTails::new(g, bases, bases_g2, queries, kind) {
                Ok(t) => return Ok((t, kind)),
                Err(e) => {
                    eprintln!("partition: tails held as {}: {e}", kind.name());
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| GpuError::InvalidInput("no held-tail layout asked for".into())))
    }

    fn new(
        g: &TestGpu,
        bases: &proofline_gpu::testkit::DeviceData,
        bases_g2: &proofline_gpu::testkit::DeviceData,
        queries: &[&SparseScalars; 3],
        kind: TailHeld,
    ) -> Result<Self, GpuError> {
        let (g1_copies, g2_copies) = match kind {
            TailHeld::Gathered => (false, false),
            TailHeld::Precomputed => (true, false),
            TailHeld::PrecomputedWithG2 => (true, true),
        };
        // `Precomputation::plan` counts 96-byte G1 points; a G2 point takes twice that
        let pre = |copies: bool, len: usize, budget: u64| {
            if !copies {
                return Ok(None);
            }
            Precomputation::plan(len, len, budget)
                .map(Some)
                .ok_or_else(|| {
                    GpuError::InvalidInput(format!("no precomputation of a tail of {len} fits"))
                })
        };
        let mut held = Vec::new();
        let mut splits = Vec::new();
        for q in queries {
            let len = q.tail_index.len();
            let p = pre(g1_copies, len, copies_budget(g, 20 << 30))?;
            let h = g.hold_tail(bases, q.tail_index.clone(), p)?;
            let split = q
                .against_held(h.index())
                .map_err(|e| GpuError::InvalidInput(e.to_string()))?;
            held.push(h);
            splits.push(split);
        }
        let b = queries[2].tail_index.clone();
        let b_pre = pre(g2_copies, b.len(), copies_budget(g, 20 << 30) / 2)?;
        let b_g2 = g.hold_g2_tail(bases_g2, b, b_pre)?;
        Ok(HeldTails { held, splits, b_g2 })
    }

    /// Query `k`'s MSM over its held tail.
    fn msm(
        &self,
        g: &TestGpu,
        bases: &proofline_gpu::testkit::DeviceData,
        k: usize,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        g.msm_sparse_held(bases, &self.held[k], &self.splits[k], cfg)
    }

    /// Query `k`'s MSM over its held tail, its ones over the bases' subset sums.
    fn msm_summed(
        &self,
        g: &TestGpu,
        sums: &SummedPoints,
        k: usize,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        g.msm_sparse_held_summed(sums, &self.held[k], &self.splits[k], cfg)
    }

    /// B's MSM in G2 over its held tail, its ones over the G2 bases' subset sums.
    fn msm_g2_summed(
        &self,
        g: &TestGpu,
        sums_g2: &SummedPoints,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        g.msm_g2_sparse_held_summed(sums_g2, &self.b_g2, &self.splits[2], cfg)
    }

    /// B's MSM in G2 over its held tail.
    fn msm_g2(
        &self,
        g: &TestGpu,
        bases_g2: &proofline_gpu::testkit::DeviceData,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        g.msm_g2_sparse_held(bases_g2, &self.b_g2, &self.splits[2], cfg)
    }

    /// The runs' name: the copies' window and number when precomputed.
    fn variant(&self, kind: TailHeld) -> String {
        match self.held.first().and_then(|h| h.precomputation()) {
            Some(p) => format!("{} c={} x{}", kind.name(), p.window, p.copies),
            None => kind.name().to_string(),
        }
    }
}

/// Bases on the device, with their ones' pair sums after them in the same allocation where the
/// `pipeline` partition group reads them.
enum Tiled {
    Plain(proofline_gpu::testkit::DeviceData),
    Summed(SummedPoints),
}

impl Tiled {
    /// The bases alone, as every MSM over plain bases reads them.
    fn points(&self) -> &proofline_gpu::testkit::DeviceData {
        match self {
            Tiled::Plain(p) => p,
            Tiled::Summed(s) => s.points(),
        }
    }

    /// The bases with their sums, where they were made with them.
    fn summed(&self) -> Option<&SummedPoints> {
        match self {
            Tiled::Plain(_) => None,
            Tiled::Summed(s) => Some(s),
        }
    }
}

/// A group's runs: each variant's name and configurations.
type Runs = Vec<(String, MsmConfig, NttConfig)>;

/// The data a [`Prepared`] group of runs holds while it runs.
enum Extra<'a> {
    None,
    Sums(SummedPoints, SummedPoints),
    Copies(Precomputation, proofline_gpu::testkit::DeviceData),
    Tails(HeldTails),
    /// The ones' pair sums (G1, G2) and the tails held: the pipeline's resident set.
    Pipeline(&'a SummedPoints, &'a SummedPoints, HeldTails),
}

/// The partition's runs over `bases` (the first 2^27 the H MSM's, the first
/// `--partition-points` the sparse queries'); `summed` is the same allocation with the bases'
/// pair sums after them, made for the `pipeline` group.
fn partition(
    o: &Opts,
    g: &TestGpu,
    unique: &[G1Affine],
    bases: &proofline_gpu::testkit::DeviceData,
    summed: Option<&SummedPoints>,
    r: &mut Report,
) -> Result<(), GpuError> {
    let lg = 27u32;
    let n = 1usize << lg;
    let host = random_scalars(n, 13);
    let mut a = g.scalars(&host)?;
    let mut b = g.scalars(&host)?;
    let mut c = g.scalars(&host)?;
    let tables = g.ntt_tables(lg)?;
    drop(host);
    // (query, share of the aux points, zero, one) of a real partition
    let shape = partition_shape(o.partition_mix);
    let split = |k: usize| {
        let (_, share, zero, one) = shape[k];
        let len = ((o.partition_points as f64) * share).round() as usize;
        let sc = mixed_scalars(len, ScalarMix { zero, one }, 17 + k as u64);
        SparseScalars::from_dense(&sc)
    };
    let plan = MsmPlan {
        l: split(0),
        a: split(1),
        b: split(2),
    };
    let queries = [
        (shape[0].0, &plan.l),
        (shape[1].0, &plan.a),
        (shape[2].0, &plan.b),
    ];
    // B in G2: B's split over G2 bases
    let unique_g2 = random_g2_points(1 << 16, 8);
    let b_len = plan.b.num_bases;
    // likewise B's G2 bases with their pair sums after them for the `pipeline` group
    let tiled_g2 = match summed {
        Some(_) => Tiled::Summed(g.tiled_g2_points_summed(&unique_g2, b_len, OnesSums::Pairs)?),
        None => Tiled::Plain(g.tiled_g2_points(&unique_g2, b_len)?),
    };
    let bases_g2 = tiled_g2.points();
    // Groups of runs, each with what it reads beside the bases made just before it and freed
    // after it (the pool trimmed in between), so that one group's memory never squeezes the
    // next one's: the variants over the bases; with `pairs` or `triples`, the defaults over the
    // sparse queries' ones' subset sums; with `pre`, the H MSM over precomputed copies of the H
    // bases, as many as the memory left beside the partition's data allows (at most 50 GB);
    // with `tails`, `tails-pre` or `tails-pre-g2`, the tails held; with `pipeline`, all the
    // pipeline holds (`Prepared::Pipeline`).
    let groups = [
        Prepared::Bases,
        Prepared::OnesSums(OnesSums::Pairs),
        Prepared::OnesSums(OnesSums::Triples),
        Prepared::HCopies,
        Prepared::Tails(TailHeld::Gathered),
        Prepared::Tails(TailHeld::Precomputed),
        Prepared::Tails(TailHeld::PrecomputedWithG2),
        Prepared::Pipeline,
    ];
    // what a group reads beside the bases, made just before its runs; None where the group is
    // not asked for or nothing of it fits
    let prepare = |group: Prepared| -> Result<Option<(Extra<'_>, Runs)>, GpuError> {
        Ok(Some(match group {
            Prepared::Bases => {
                let runs = partition_variants(o);
                (Extra::None, runs)
            }
            Prepared::OnesSums(sums) if o.variants && o.named(sums_name(sums)) => {
                let extra = Extra::Sums(
                    g.tiled_points_summed(unique, o.partition_points, sums)?,
                    g.tiled_g2_points_summed(&unique_g2, b_len, sums)?,
                );
                (extra, sums_variants(o, sums_name(sums)))
            }
            Prepared::HCopies if o.variants && o.named("pre") => {
                let Some(p) = Precomputation::plan(n, 1 << 26, copies_budget(g, 50 << 30)) else {
                    eprintln!("partition: no precomputation of the H bases fits");
                    return Ok(None);
                };
                let name = format!("pre c={} x{}", p.window, p.copies);
                let extra = Extra::Copies(p, g.precompute(bases, n, &p)?);
                (extra, few_sets_variants(o, &name))
            }
            Prepared::Tails(held) if o.variants && o.named(held.name()) => {
                let queries = [&plan.l, &plan.a, &plan.b];
                let tails = HeldTails::new(g, bases, bases_g2, &queries, held)?;
                let name = tails.variant(held);
                (Extra::Tails(tails), few_sets_variants(o, &name))
            }
            Prepared::Pipeline if o.variants && o.named("pipeline") => {
                let (Some(sums), Some(sums_g2)) = (summed, tiled_g2.summed()) else {
                    return Ok(None);
                };
                let queries = [&plan.l, &plan.a, &plan.b];
                let kinds = [
                    TailHeld::PrecomputedWithG2,
                    TailHeld::Precomputed,
                    TailHeld::Gathered,
                ];
                let (tails, held) = HeldTails::largest(g, bases, bases_g2, &queries, &kinds)?;
                // the H MSM's chunk as the H stage takes it from its lease: here what is free
                // beside everything held (the pool trimmed of what making it freed), plus a, b
                // and c, which the stage's bytes count
                g.device().synchronize_device()?;
                g.device().trim_pool(0)?;
                let free = g.device().memory_info().map(|(f, _)| f as u64)?;
                let abc = 3 * (n as u64) * 32;
                let sm = g.slot().sm_count();
                let msm = proofline_gpu::bytes::h_stage_msm_config(
                    lg,
                    Residency::Resident,
                    free + abc,
                    sm,
                );
                let stage =
                    proofline_gpu::bytes::h_stage_bytes_with(lg, Residency::Resident, &msm, sm);
                if stage > free + abc {
                    eprintln!(
                        "partition: no H stage fits beside the pipeline's resident data \
                         ({stage} bytes, {} free)",
                        free + abc
                    );
                    return Ok(None);
                }
                let name = format!(
                    "pipeline pairs {} chunk=2^{}",
                    tails.variant(held),
                    msm.max_chunk_log
                );
                (
                    Extra::Pipeline(sums, sums_g2, tails),
                    vec![(name, msm, NttConfig::default())],
                )
            }
            _ => return Ok(None),
        }))
    };
    for group in groups {
        let (extra, runs) = match prepare(group) {
            Ok(Some(prepared)) => prepared,
            Ok(None) => continue,
            // a group whose data do not fit beside the partition's on this card is left out,
            // so that the others still run
            Err(e) if e.is_out_of_memory() => {
                eprintln!("partition: {group:?} left out, its data do not fit: {e}");
                g.device().synchronize_device()?;
                g.device().trim_pool(0)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        // sparse query k over the bases, over their subset sums where the group has them, or
        // with its tail held apart
        let sparse = |k: usize, msm: &MsmConfig| {
            let q = queries[k].1;
            match &extra {
                Extra::Sums(p, _) => g.msm_sparse_summed(p, q, msm),
                Extra::Tails(t) => t.msm(g, bases, k, msm),
                Extra::Pipeline(p, _, t) => t.msm_summed(g, p, k, msm),
                _ => g.msm_sparse_resident(bases, q, msm),
            }
        };
        // the three G1 queries as the sparse stage runs them (their tails together)
        let sparse_g1 = |msm: &MsmConfig| match &extra {
            Extra::Sums(p, _) => g.msm_sparse_g1_summed(p, &plan, msm),
            _ => g.msm_sparse_g1_resident(bases, &plan, msm),
        };
        let sparse_g2 = |q: &SparseScalars, msm: &MsmConfig| match &extra {
            Extra::Sums(_, p) => g.msm_g2_sparse_summed(p, q, msm),
            Extra::Tails(t) => t.msm_g2(g, bases_g2, msm),
            Extra::Pipeline(_, p, t) => t.msm_g2_summed(g, p, msm),
            _ => g.msm_g2_sparse_resident(bases_g2, q, msm),
        };
        let h_msm = |a: &proofline_gpu::testkit::DeviceData, msm: &MsmConfig| match &extra {
            Extra::Copies(p, copies) => g.msm_resident_precomputed(copies, p, n, a, msm),
            _ => g.msm_resident(bases, a, msm),
        };
        for (variant, msm, ntt) in runs {
            // warm-up (pool)
            g.h_poly_resident(&mut a, &mut b, &mut c, &tables, &ntt, CInput::Product)?;
            h_msm(&a, &msm)?;
            match msm.sparse_tails {
                SparseTails::Apart => {
                    for k in 0..queries.len() {
                        sparse(k, &msm)?;
                    }
                }
                SparseTails::Together => {
                    sparse_g1(&msm)?;
                }
            }
            sparse_g2(&plan.b, &msm)?;
            let mut steps: Vec<(String, f64, Option<MsmStats>)> = Vec::new();
            let t0 = Instant::now();
            let t = Instant::now();
            g.h_poly_resident(&mut a, &mut b, &mut c, &tables, &ntt, CInput::Product)?;
            steps.push((
                "h_poly 2^27".to_string(),
                t.elapsed().as_secs_f64() * 1e3,
                None,
            ));
            let t = Instant::now();
            let (_, st) = h_msm(&a, &msm)?;
            steps.push((
                "H MSM 2^27 dense".to_string(),
                t.elapsed().as_secs_f64() * 1e3,
                Some(st),
            ));
            match msm.sparse_tails {
                SparseTails::Apart => {
                    for (k, (name, _)) in queries.iter().enumerate() {
                        let t = Instant::now();
                        let (_, st) = sparse(k, &msm)?;
                        steps.push((
                            format!("{name} sparse ({} pts, tail {})", st.points, st.tail),
                            t.elapsed().as_secs_f64() * 1e3,
                            Some(st),
                        ));
                    }
                }
                SparseTails::Together => {
                    let t = Instant::now();
                    let (_, st) = sparse_g1(&msm)?;
                    steps.push((
                        format!(
                            "L, A, B_G1 sparse, tails together ({} pts, tail {})",
                            st.points, st.tail
                        ),
                        t.elapsed().as_secs_f64() * 1e3,
                        Some(st),
                    ));
                }
            }
            let t = Instant::now();
            let (_, st) = sparse_g2(&plan.b, &msm)?;
            steps.push((
                format!("B_G2 sparse ({} pts, tail {})", st.points, st.tail),
                t.elapsed().as_secs_f64() * 1e3,
                Some(st),
            ));
            let total = t0.elapsed().as_secs_f64() * 1e3;
            // the sparse splits' uploads: the pipeline's sparse stage makes them before its kernel
            // turn, beside the other slot's kernels
            let uploads: f64 = steps
                .iter()
                .filter_map(|(_, _, st)| st.as_ref().map(|s| s.upload_ms))
                .sum();
            for (nm, ms, st) in &steps {
                r.row(
                    &format!("partition: {nm}"),
                    String::new(),
                    &variant,
                    *ms,
                    st.as_ref().map(phases_note).unwrap_or_default(),
                );
            }
            r.row(
                "PARTITION total (32 GiB shape)",
                format!("2^27 / {}", o.partition_points),
                &variant,
                total,
                format!("{} query shapes, with B in G2", o.partition_mix),
            );
            r.row(
                "PARTITION kernels (sparse uploads excluded)",
                format!("2^27 / {}", o.partition_points),
                &variant,
                total - uploads,
                format!("uploads {uploads:.1} ms, made before the kernel turn in the pipeline"),
            );
            let shape_json: Vec<_> = shape
                .iter()
                .map(|(n, s, z, one)| json!({"query": n, "share": s, "zero": z, "one": one}))
                .collect();
            r.results
                .push(json!({"bench": "partition_32gib", "domain_log": lg,
                "aux_points": o.partition_points, "circuit_mix": o.partition_mix, "queries": shape_json,
                "variant": variant, "msm_config": msm, "ntt_config": ntt,
                "steps_ms": steps.iter().map(|(n, m, st)| json!({"step": n, "ms": m, "stats": st})).collect::<Vec<_>>(),
                "total_ms": total, "sparse_upload_ms": uploads, "kernels_ms": total - uploads}));
        }
        drop(extra);
        g.device().synchronize_device()?;
        g.device().trim_pool(0)?;
    }
    drop((a, b, c));
    upload_share(g, &tables, r)
}

/// The H stage's first half from host memory at 2^27, alternating: a and b uploaded with C's
/// evaluations derived on the device (the proving path) against a, b and c uploaded.
fn upload_share(
    g: &TestGpu,
    tables: &proofline_gpu::testkit::TestTables,
    r: &mut Report,
) -> Result<(), GpuError> {
    let lg = 27u32;
    let host = random_scalars(1usize << lg, 14);
    let ntt = NttConfig::default();
    let (mut derived, mut uploaded) = (Vec::new(), Vec::new());
    for _ in 0..4 {
        let t = Instant::now();
        g.h_poly_from_host(&host, &host, None, tables, &ntt)?;
        derived.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        g.h_poly_from_host(&host, &host, Some(&host), tables, &ntt)?;
        uploaded.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // the first of each warms the pool
    for (name, v) in [
        ("c = a b on the device", &derived),
        ("a, b, c uploaded", &uploaded),
    ] {
        let m = median(v[1..].to_vec());
        r.row(
            "H from host (upload + h_poly)",
            format!("2^{lg}"),
            name,
            m,
            String::new(),
        );
        r.results.push(
            json!({"bench": "h_from_host", "log_n": lg, "variant": name, "ms_median": m, "ms": v}),
        );
    }
    Ok(())
}

/// Where an MSM's time went: uploads of a sparse split, the ones' sum, the tail's gather,
/// Pippenger (c = the widest window's bits, then the windows of the last chunk).
fn phases_note(st: &MsmStats) -> String {
    format!(
        "upload {:.1} / ones {:.1} ({} points) / gather {:.1} / pippenger {:.1} (c={}, {} windows, {} chunks)",
        st.upload_ms,
        st.ones_ms,
        st.ones_summed,
        st.gather_ms,
        st.pippenger_ms,
        st.window,
        st.windows,
        st.chunks
    )
}

/// (query, share of the aux points, zero fraction, one fraction) of partition 0 of a real
/// PoRep sector, measured with `fil-stats` (docs/filecoin.md).
fn partition_shape(circuit: &str) -> [(&'static str, f64, f64, f64); 3] {
    if circuit == "2kib" {
        [
            ("L", 1.0, 0.5130, 0.4707),
            ("A", 0.9960, 0.5150, 0.4726),
            ("B_G1", 0.2553, 0.4790, 0.4745),
        ]
    } else {
        [
            ("L", 1.0, 0.5066, 0.4642),
            ("A", 0.9929, 0.5102, 0.4675),
            ("B_G1", 0.2632, 0.4621, 0.4579),
        ]
    }
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("proofline-gpu-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = probe() {
        println!("{}", json!({"skipped": format!("{e}")}));
        eprintln!("SKIP: {e}");
        return;
    }
    match run(&o) {
        Ok((doc, rows)) => {
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            println!("{text}");
            if let Some(p) = &o.json {
                if let Err(e) = std::fs::write(p, &text) {
                    eprintln!("cannot write {p}: {e}");
                }
            }
            println!(
                "\n{:<34} {:>16} {:<15} {:>11}  note",
                "benchmark", "size", "variant", "ms"
            );
            for r in rows {
                let ms = if r.ms > 0.0 {
                    format!("{:.3}", r.ms)
                } else {
                    "-".into()
                };
                println!(
                    "{:<34} {:>16} {:<15} {:>11}  {}",
                    r.name, r.size, r.variant, ms, r.note
                );
            }
        }
        Err(e) => {
            eprintln!("proofline-gpu-bench failed: {e}");
            std::process::exit(1);
        }
    }
}
