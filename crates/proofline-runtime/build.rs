//! Records the source commit for `proofline_build_info` and the status page:
//! `PROOFLINE_GIT_COMMIT` when set (packaging outside git), else `git rev-parse`, else "unknown".

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=PROOFLINE_GIT_COMMIT");
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    // Rebuild when HEAD moves (commit, checkout, reset): HEAD itself and its reflog.
    for file in ["HEAD", "logs/HEAD"] {
        if let Some(p) = git(&dir, &["rev-parse", "--git-path", file]) {
            let p = dir.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    let commit = std::env::var("PROOFLINE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&dir, &["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PROOFLINE_COMMIT={commit}");
}
