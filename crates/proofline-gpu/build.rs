//! Build script of proofline-gpu: compiles the CUDA kernels in `cuda/` ahead of
//! time with nvcc into cubins (sm_80, sm_86, sm_89, sm_90) plus PTX
//! (compute_90, for newer cards), and writes `$OUT_DIR/kernels.rs`, which
//! embeds them with `include_bytes!`. Nothing is ever compiled at run time.
//!
//! nvcc is looked up in: `$PROOFLINE_NVCC`, then the cache dir of
//! `scripts/install-nvcc.sh` (`$PROOFLINE_CUDA_HOME`, default
//! `$HOME/.cache/proofline/cuda-13.0`), then `$CUDA_HOME/bin`, then `PATH`.
//! Without nvcc the build still succeeds: `kernels.rs` then says
//! `HAVE_KERNELS = false` and the GPU backend reports itself unavailable.
//! Set `PROOFLINE_REQUIRE_KERNELS=1` (CI) to make a missing nvcc an error.
//! `PROOFLINE_CUDA_ARCHS` (e.g. "90") restricts the cubin targets for quick
//! development builds; `PROOFLINE_CUDA_PTX=0` drops the PTX fallback. Compiled images are cached under
//! `$PROOFLINE_KERNEL_CACHE` (default `$HOME/.cache/proofline/kernels`), keyed
//! by a hash of the sources, the nvcc version and the flags.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const MODULES: &[&str] = &["arith", "ntt", "msm"];
const DEFAULT_ARCHS: &[u32] = &[80, 86, 89, 90];
const PTX_ARCH: u32 = 90;
const NVCC_FLAGS: &[&str] = &["-O3", "-std=c++17", "--extra-device-vectorization"];

fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

fn find_nvcc() -> Option<PathBuf> {
    if let Ok(p) = env::var("PROOFLINE_NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
        println!("cargo:warning=PROOFLINE_NVCC={} is not a file", p.display());
    }
    let home = env::var("HOME").unwrap_or_default();
    let cache = env::var("PROOFLINE_CUDA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(&home).join(".cache/proofline/cuda-13.0"));
    for rel in [
        "nvidia/cu13/bin/nvcc",
        "nvidia/cuda_nvcc/bin/nvcc",
        "bin/nvcc",
    ] {
        let p = cache.join(rel);
        if p.is_file() {
            return Some(p);
        }
    }
    if let Ok(ch) = env::var("CUDA_HOME") {
        let p = Path::new(&ch).join("bin/nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    if let Some(paths) = env::var_os("PATH") {
        for dir in env::split_paths(&paths) {
            let p = dir.join("nvcc");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

struct Job {
    module: &'static str,
    arch: u32,
    ptx: bool,
    out: PathBuf,
}

fn run_jobs(nvcc: &Path, cuda_dir: &Path, jobs: &[Job]) -> Result<(), String> {
    let par = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(1);
    let mut pending: Vec<&Job> = jobs.iter().collect();
    // longest first: msm dominates
    pending.sort_by_key(|j| if j.module == "msm" { 0 } else { 1 });
    let mut running: Vec<(std::process::Child, &Job)> = Vec::new();
    let mut errors = Vec::new();
    while !pending.is_empty() || !running.is_empty() {
        while running.len() < par && !pending.is_empty() {
            let j = pending.remove(0);
            let src = cuda_dir.join(format!("{}.cu", j.module));
            let mut cmd = Command::new(nvcc);
            if j.ptx {
                cmd.arg("-ptx").arg(format!("-arch=compute_{}", j.arch));
            } else {
                cmd.arg("-cubin").arg(format!("-arch=sm_{}", j.arch));
            }
            cmd.args(NVCC_FLAGS)
                .arg("-I")
                .arg(cuda_dir)
                .arg("-o")
                .arg(&j.out)
                .arg(&src);
            match cmd.spawn() {
                Ok(child) => running.push((child, j)),
                Err(e) => errors.push(format!("spawn {}: {e}", nvcc.display())),
            }
        }
        if running.is_empty() {
            break;
        }
        let (mut child, j) = running.remove(0);
        match child.wait() {
            Ok(st) if st.success() => {}
            Ok(st) => errors.push(format!(
                "nvcc failed for {} sm_{} (ptx={}): {st}",
                j.module, j.arch, j.ptx
            )),
            Err(e) => errors.push(format!("nvcc wait: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

fn write_unavailable(out_dir: &Path, reason: &str) {
    let code = format!(
        "/// Whether CUDA kernels were compiled into this build.\npub const HAVE_KERNELS: bool = false;\n/// Why not.\npub const BUILD_NOTE: &str = {reason:?};\n/// (module, sm arch, cubin)\npub static CUBINS: &[(&str, u32, &[u8])] = &[];\n/// (module, compute arch, ptx)\npub static PTX: &[(&str, u32, &str)] = &[];\n"
    );
    fs::write(out_dir.join("kernels.rs"), code).expect("write kernels.rs");
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let cuda_dir = manifest.join("../../cuda");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    for v in [
        "PROOFLINE_NVCC",
        "PROOFLINE_CUDA_HOME",
        "PROOFLINE_CUDA_ARCHS",
        "PROOFLINE_REQUIRE_KERNELS",
        "PROOFLINE_KERNEL_CACHE",
        "CUDA_HOME",
        "PROOFLINE_CUDA_PTX",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let mut sources: Vec<PathBuf> = fs::read_dir(&cuda_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    sources.retain(|p| {
        matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("cu") | Some("cuh")
        )
    });
    sources.sort();
    println!("cargo:rerun-if-changed={}", cuda_dir.display());
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }

    let require = env::var("PROOFLINE_REQUIRE_KERNELS")
        .map(|v| v == "1")
        .unwrap_or(false);
    let Some(nvcc) = find_nvcc() else {
        let msg = "nvcc not found (run scripts/install-nvcc.sh or set PROOFLINE_NVCC); GPU backend disabled in this build";
        if require {
            panic!("{msg}");
        }
        println!("cargo:warning={msg}");
        write_unavailable(&out_dir, msg);
        return;
    };
    println!("cargo:rerun-if-changed={}", nvcc.display());

    let archs: Vec<u32> = match env::var("PROOFLINE_CUDA_ARCHS") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .filter_map(|a| a.trim().trim_start_matches("sm_").parse().ok())
            .collect(),
        _ => DEFAULT_ARCHS.to_vec(),
    };

    // PROOFLINE_CUDA_PTX=0 leaves the PTX fallback out (smaller binaries for a
    // known device, e.g. the H200 suite); shipped builds keep it.
    let with_ptx = env::var("PROOFLINE_CUDA_PTX")
        .map(|v| v != "0")
        .unwrap_or(true);
    let version = Command::new(&nvcc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in &sources {
        fnv1a(
            &mut h,
            s.file_name()
                .map(|f| f.as_encoded_bytes())
                .unwrap_or_default(),
        );
        fnv1a(&mut h, &fs::read(s).unwrap_or_default());
    }
    fnv1a(&mut h, version.as_bytes());
    fnv1a(
        &mut h,
        format!("{archs:?}{PTX_ARCH}{NVCC_FLAGS:?}").as_bytes(),
    );
    let key = format!("{h:016x}");

    let home = env::var("HOME").unwrap_or_else(|_| "/tmp".into());
    let cache_root = env::var("PROOFLINE_KERNEL_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(&home).join(".cache/proofline/kernels"));
    let cache = cache_root.join(&key);
    let mut jobs = Vec::new();
    for m in MODULES {
        for a in &archs {
            jobs.push(Job {
                module: m,
                arch: *a,
                ptx: false,
                out: cache.join(format!("{m}.sm_{a}.cubin")),
            });
        }
        if with_ptx {
            jobs.push(Job {
                module: m,
                arch: PTX_ARCH,
                ptx: true,
                out: cache.join(format!("{m}.compute_{PTX_ARCH}.ptx")),
            });
        }
    }
    let missing: Vec<Job> = jobs
        .iter()
        .filter(|j| !j.out.is_file())
        .map(|j| Job {
            module: j.module,
            arch: j.arch,
            ptx: j.ptx,
            out: j.out.clone(),
        })
        .collect();
    if !missing.is_empty() {
        if let Err(e) = fs::create_dir_all(&cache) {
            panic!("cannot create kernel cache {}: {e}", cache.display());
        }
        // compile into temp names, then rename, so an interrupted build never
        // leaves a truncated image in the cache
        let tmp_jobs: Vec<Job> = missing
            .iter()
            .map(|j| Job {
                module: j.module,
                arch: j.arch,
                ptx: j.ptx,
                out: j.out.with_extension("tmp"),
            })
            .collect();
        if let Err(e) = run_jobs(&nvcc, &cuda_dir, &tmp_jobs) {
            panic!("CUDA kernel compilation failed: {e}");
        }
        for (t, j) in tmp_jobs.iter().zip(missing.iter()) {
            fs::rename(&t.out, &j.out).expect("rename kernel image");
        }
    }

    let mut code = String::new();
    code.push_str("/// Whether CUDA kernels were compiled into this build.\npub const HAVE_KERNELS: bool = true;\n");
    code.push_str(&format!(
        "/// Build note (nvcc version, cache key).\npub const BUILD_NOTE: &str = {:?};\n",
        format!(
            "nvcc: {} ; key {key}",
            version.lines().last().unwrap_or("?")
        )
    ));
    code.push_str("/// (module, sm arch, cubin)\npub static CUBINS: &[(&str, u32, &[u8])] = &[\n");
    for j in jobs.iter().filter(|j| !j.ptx) {
        let dst = out_dir.join(j.out.file_name().expect("file name"));
        fs::copy(&j.out, &dst).expect("copy cubin");
        code.push_str(&format!(
            "    ({:?}, {}, include_bytes!({:?})),\n",
            j.module,
            j.arch,
            dst.display().to_string()
        ));
    }
    code.push_str(
        "];\n/// (module, compute arch, ptx)\npub static PTX: &[(&str, u32, &str)] = &[\n",
    );
    for j in jobs.iter().filter(|j| j.ptx) {
        let dst = out_dir.join(j.out.file_name().expect("file name"));
        fs::copy(&j.out, &dst).expect("copy ptx");
        code.push_str(&format!(
            "    ({:?}, {}, include_str!({:?})),\n",
            j.module,
            j.arch,
            dst.display().to_string()
        ));
    }
    code.push_str("];\n");
    fs::write(out_dir.join("kernels.rs"), code).expect("write kernels.rs");
}
