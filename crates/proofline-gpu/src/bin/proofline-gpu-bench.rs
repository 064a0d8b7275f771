//! proofline-gpu-bench: GPU benchmarks of the BLS12-381 kernels (field multiply
//! throughput, NTT, h_poly, dense and sparse G1 MSM, one 32 GiB-shape Groth16
//! partition). Prints one JSON document (also written to --json PATH) and a
//! short table last. Data are resident on the device while timed unless a row
//! says "+upload". Random points are tiled from 2^20 unique ones on the device.
//!
//! Usage: proofline-gpu-bench [--ntt-min L] [--ntt-max L] [--msm-min L] [--msm-max L]
//!        [--mix ZERO,ONE] [--partition-points N] [--partition-mix 8mib|2kib] [--no-partition]
//!        [--cold-pool] [--reps R] [--json PATH]
//!
//! The device's memory pool keeps freed memory across synchronisations, as under the daemon's
//! VRAM allocator; `--cold-pool` leaves the driver's default (every allocation cold after a
//! synchronisation), which is how the figures up to commit 2b5a484 were taken.
//!
//! Sparse MSMs take the CPU's 0/1/tail split (`SparseScalars`), as the pipeline does: the lists
//! of ones and of the tail are uploaded in the timed call (the split itself is not timed).
//! The partition benchmark gives each G1 query (A, B, L) the share of the aux points and the
//! zero/one/other split measured on a real PoRep partition (`--partition-mix`, default the 8MiB
//! circuit's, docs/filecoin.md).

use std::time::Instant;

use proofline_gpu::testkit::{mixed_scalars, random_points, random_scalars, ScalarMix, TestGpu};
use proofline_gpu::{probe, GpuError, NttKind};
use proofline_groth16::msm::SparseScalars;
use serde_json::json;

struct Opts {
    ntt_min: u32,
    ntt_max: u32,
    msm_min: u32,
    msm_max: u32,
    mix: ScalarMix,
    partition_points: usize,
    partition: bool,
    partition_mix: &'static str,
    cold_pool: bool,
    reps: usize,
    json: Option<String>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        ntt_min: 20,
        ntt_max: 27,
        msm_min: 20,
        msm_max: 26,
        mix: ScalarMix::default(),
        partition_points: 130_278_541,
        partition: true,
        partition_mix: "8mib",
        cold_pool: false,
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
            "--ntt-min" => o.ntt_min = num(val(i)?)? as u32,
            "--ntt-max" => o.ntt_max = num(val(i)?)? as u32,
            "--msm-min" => o.msm_min = num(val(i)?)? as u32,
            "--msm-max" => o.msm_max = num(val(i)?)? as u32,
            "--partition-points" => o.partition_points = num(val(i)?)? as usize,
            "--reps" => o.reps = num(val(i)?)?.max(1) as usize,
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
            "--no-partition" => {
                o.partition = false;
                i += 1;
                continue;
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
    ms: f64,
    note: String,
}

fn run(o: &Opts) -> Result<(serde_json::Value, Vec<Row>), GpuError> {
    // As the daemon's VRAM allocator does: freed memory stays cached in the pool across
    // synchronisations (with the default threshold, 0, every call's buffers are allocated cold).
    let g = TestGpu::open(0, o.cold_pool)?;
    let mut rows = Vec::new();
    let mut results = Vec::new();
    eprintln!(
        "device: {:?}; {}",
        g.device().info(),
        g.device().kernel_images()
    );

    let (fr, fp) = g.mul_throughput(1 << 20, 256)?;
    rows.push(Row {
        name: "Fr mul".into(),
        size: "-".into(),
        ms: 0.0,
        note: format!("{:.1} G mul/s", fr / 1e9),
    });
    rows.push(Row {
        name: "Fp mul".into(),
        size: "-".into(),
        ms: 0.0,
        note: format!("{:.1} G mul/s", fp / 1e9),
    });
    results.push(json!({"bench": "mul_throughput", "fr_gmul_s": fr / 1e9, "fp_gmul_s": fp / 1e9}));

    // ---- NTT -----------------------------------------------------------------
    let max_ntt = o.ntt_max.max(o.ntt_min);
    let host = random_scalars(1usize << max_ntt, 42);
    for lg in o.ntt_min..=o.ntt_max {
        let n = 1usize << lg;
        let mut d = g.scalars(&host[..n])?;
        let tables = g.ntt_tables(lg)?;
        let reps = if lg >= 26 { 3 } else { o.reps };
        let v = time(reps, || g.ntt_resident(&mut d, &tables, NttKind::Forward))?;
        let m = median(v.clone());
        rows.push(Row {
            name: "NTT forward".into(),
            size: format!("2^{lg}"),
            ms: m,
            note: String::new(),
        });
        results.push(json!({"bench": "ntt_forward", "log_n": lg, "ms_median": m, "ms": v}));
        if lg == 24 || lg == o.ntt_max {
            let v = time(reps, || {
                g.ntt_resident(&mut d, &tables, NttKind::CosetInverse)
            })?;
            let m = median(v.clone());
            rows.push(Row {
                name: "NTT coset inverse".into(),
                size: format!("2^{lg}"),
                ms: m,
                note: String::new(),
            });
            results
                .push(json!({"bench": "ntt_coset_inverse", "log_n": lg, "ms_median": m, "ms": v}));
            let mut b = g.scalars(&host[..n])?;
            let mut c = g.scalars(&host[..n])?;
            let v = time(reps.min(3), || {
                g.h_poly_resident(&mut d, &mut b, &mut c, &tables)
            })?;
            let m = median(v.clone());
            rows.push(Row {
                name: "h_poly (7 NTT + pointwise)".into(),
                size: format!("2^{lg}"),
                ms: m,
                note: String::new(),
            });
            results.push(json!({"bench": "h_poly", "log_n": lg, "ms_median": m, "ms": v}));
        }
        drop(d);
    }
    drop(host);

    // ---- MSM -----------------------------------------------------------------
    let max_msm = if o.partition {
        o.msm_max.max(27)
    } else {
        o.msm_max
    };
    let max_points = (1usize << max_msm).max(if o.partition { o.partition_points } else { 0 });
    let t = Instant::now();
    let unique = random_points(1 << 20, 7);
    eprintln!(
        "generated 2^20 points in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let bases = g.tiled_points(&unique, max_points)?;
    let dense = random_scalars(1usize << o.msm_max, 9);
    for lg in o.msm_min..=o.msm_max {
        let n = 1usize << lg;
        let s = g.scalars(&dense[..n])?;
        let reps = if lg >= 25 { 3 } else { o.reps };
        let mut stats = None;
        let v = time(reps, || {
            stats = Some(g.msm_resident(&bases, &s)?.1);
            Ok(())
        })?;
        let m = median(v.clone());
        rows.push(Row {
            name: "MSM G1 dense".into(),
            size: format!("2^{lg}"),
            ms: m,
            note: format!("c={}", stats.map(|s| s.window).unwrap_or(0)),
        });
        results.push(
            json!({"bench": "msm_dense", "log_n": lg, "ms_median": m, "ms": v, "stats": stats}),
        );
        if lg == 24 {
            let v = time(3, || {
                let s = g.scalars(&dense[..n])?;
                g.msm_resident(&bases, &s).map(|_| ())
            })?;
            let m = median(v.clone());
            rows.push(Row {
                name: "MSM G1 dense +upload scalars".into(),
                size: format!("2^{lg}"),
                ms: m,
                note: String::new(),
            });
            results.push(
                json!({"bench": "msm_dense_upload_scalars", "log_n": lg, "ms_median": m, "ms": v}),
            );
        }
    }
    drop(dense);
    let mix = o.mix;
    for n in [1usize << 24, 1 << 26] {
        if n > max_points {
            continue;
        }
        let split = SparseScalars::from_dense(&mixed_scalars(n, mix, 11));
        let mut stats = None;
        let v = time(3, || {
            stats = Some(g.msm_sparse_resident(&bases, &split)?.1);
            Ok(())
        })?;
        let m = median(v.clone());
        let tail = stats.map(|s| s.tail).unwrap_or(0);
        rows.push(Row {
            name: "MSM G1 sparse".into(),
            size: format!("{n}"),
            ms: m,
            note: format!("mix {:.2}/{:.2}, tail {tail}", mix.zero, mix.one),
        });
        results.push(json!({"bench": "msm_sparse", "n": n, "mix": mix, "ms_median": m, "ms": v, "stats": stats}));
    }

    // ---- partition -----------------------------------------------------------
    if o.partition {
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
        let mut queries = Vec::new();
        for (k, (name, share, zero, one)) in shape.iter().enumerate() {
            let len = ((o.partition_points as f64) * share).round() as usize;
            let sc = mixed_scalars(
                len,
                ScalarMix {
                    zero: *zero,
                    one: *one,
                },
                17 + k as u64,
            );
            queries.push((*name, SparseScalars::from_dense(&sc)));
        }
        // warm-up (pool)
        g.h_poly_resident(&mut a, &mut b, &mut c, &tables)?;
        for (_, q) in &queries {
            g.msm_sparse_resident(&bases, q)?;
        }
        let mut steps = Vec::new();
        let t0 = Instant::now();
        let t = Instant::now();
        g.h_poly_resident(&mut a, &mut b, &mut c, &tables)?;
        steps.push(("h_poly 2^27".to_string(), t.elapsed().as_secs_f64() * 1e3));
        let t = Instant::now();
        g.msm_resident(&bases, &a)?;
        steps.push((
            "H MSM 2^27 dense".to_string(),
            t.elapsed().as_secs_f64() * 1e3,
        ));
        for (name, q) in &queries {
            let t = Instant::now();
            let (_, st) = g.msm_sparse_resident(&bases, q)?;
            steps.push((
                format!("{name} MSM sparse ({} points, tail {})", st.points, st.tail),
                t.elapsed().as_secs_f64() * 1e3,
            ));
        }
        let total = t0.elapsed().as_secs_f64() * 1e3;
        for (nm, ms) in &steps {
            rows.push(Row {
                name: format!("partition: {nm}"),
                size: String::new(),
                ms: *ms,
                note: String::new(),
            });
        }
        rows.push(Row {
            name: "PARTITION total (32 GiB shape)".into(),
            size: format!("2^27 / {}", o.partition_points),
            ms: total,
            note: format!("{} query shapes", o.partition_mix),
        });
        let shape_json: Vec<_> = shape
            .iter()
            .map(|(n, s, z, one)| json!({"query": n, "share": s, "zero": z, "one": one}))
            .collect();
        results.push(json!({"bench": "partition_32gib", "domain_log": lg, "aux_points": o.partition_points,
            "circuit_mix": o.partition_mix, "queries": shape_json,
            "steps_ms": steps.iter().map(|(n, m)| json!({"step": n, "ms": m})).collect::<Vec<_>>(), "total_ms": total}));
    }
    let doc = json!({"device": g.device().info(), "images": g.device().kernel_images(), "results": results});
    Ok((doc, rows))
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
            println!("\n{:<34} {:>16} {:>11}  note", "benchmark", "size", "ms");
            for r in rows {
                let ms = if r.ms > 0.0 {
                    format!("{:.3}", r.ms)
                } else {
                    "-".into()
                };
                println!("{:<34} {:>16} {:>11}  {}", r.name, r.size, ms, r.note);
            }
        }
        Err(e) => {
            eprintln!("proofline-gpu-bench failed: {e}");
            std::process::exit(1);
        }
    }
}
