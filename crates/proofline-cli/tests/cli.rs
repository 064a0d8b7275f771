//! The `proofline` binary as an operator runs it: `serve` starts with the build's and the test
//! runner's own `PROOFLINE_*` variables in its environment, the client commands find the daemon
//! through `PROOFLINE_URL`, `--json` output parses, and each kind of failure has its exit code.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn proofline() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_proofline"));
    // Nothing from the caller's configuration environment leaks in.
    for (k, _) in std::env::vars() {
        if proofline_config::is_config_var(&k) || k == "PROOFLINE_URL" {
            c.env_remove(k);
        }
    }
    c
}

/// The daemon, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where generated test parameters are cached (the integration tests' rule).
fn params_cache() -> PathBuf {
    match std::env::var_os("PROOFLINE_TEST_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("params"),
        _ => proofline_config::expand_home("~/.cache/proofline/test-params"),
    }
}

fn run(c: &mut Command) -> Output {
    c.output().expect("running proofline")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(o: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `proofline serve` on a free port over `params`, with build and test variables set.
fn serve(params: &Path) -> (Serve, String) {
    let mut child = proofline()
        .arg("serve")
        .env("PROOFLINE_SERVER__BIND", "127.0.0.1:0")
        .env("PROOFLINE_PARAMS__DIR", params)
        // A store of its own: job ids chosen by this test must not meet an earlier run's jobs.
        .env("PROOFLINE_STATE__DIR", params.join("state"))
        .env("PROOFLINE_LOG__LEVEL", "warn")
        // Not configuration: the test runner's and the kernel build's variables.
        .env("PROOFLINE_TEST_CACHE", "/nonexistent/test-cache")
        .env("PROOFLINE_NVCC", "/nonexistent/bin/nvcc")
        .env("PROOFLINE_CUDA_ARCHS", "90")
        .env("PROOFLINE_REQUIRE_KERNELS", "1")
        .env("PROOFLINE_GPU_DEVICE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting proofline serve");
    let stdout = child.stdout.take().expect("piped stdout");
    let serve = Serve(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reading the daemon's first line");
    let url = line
        .trim()
        .strip_prefix("proofline listening on ")
        .unwrap_or_else(|| panic!("proofline serve did not start: '{line}'"))
        .to_string();
    (serve, url)
}

#[test]
fn serve_with_build_variables_then_client_commands_and_exit_codes() {
    // sha256-1 parameters, and a copy under sha256-2's name (a job that must fail).
    let cache = params_cache();
    let o = run(proofline()
        .args(["setup", "--circuit", "sha256-1", "--params-dir"])
        .arg(&cache));
    assert_eq!(code(&o), 0, "{}", text(&o));
    let dir = tempfile::tempdir().unwrap();
    let src = cache.join("proofline-sha256-1.params");
    std::fs::copy(&src, dir.path().join("proofline-sha256-1.params")).unwrap();
    std::fs::copy(&src, dir.path().join("proofline-sha256-2.params")).unwrap();

    let (_daemon, url) = serve(dir.path());
    let client = |args: &[&str]| run(proofline().args(args).env("PROOFLINE_URL", &url));

    // submit --wait --json through PROOFLINE_URL: the final status as JSON.
    let o = client(&[
        "submit",
        "--circuit",
        "sha256-1",
        "--seed",
        "3",
        "--wait",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json output");
    assert_eq!(status["state"], "succeeded", "{status}");
    let id = status["id"].as_str().unwrap().to_string();

    // submit --json without --wait, under a chosen id; again: the same job.
    let args = [
        "submit",
        "--circuit",
        "sha256-1",
        "--seed",
        "4",
        "--id",
        "job-4",
        "--json",
    ];
    let o = client(&args);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let o = client(&args);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["id"], "job-4");

    // list --json: the API's body.
    let o = client(&["list", "--json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["id"].as_str())
        .collect();
    assert!(
        ids.contains(&id.as_str()) && ids.contains(&"job-4"),
        "{list}"
    );

    // 3: refused (no parameters for sha256-3; a conflicting request under a used id).
    let o = client(&["submit", "--circuit", "sha256-3"]);
    assert_eq!(code(&o), 3, "{}", text(&o));
    assert!(text(&o).contains("params_missing"), "{}", text(&o));
    let o = client(&[
        "submit",
        "--circuit",
        "sha256-1",
        "--seed",
        "5",
        "--id",
        "job-4",
    ]);
    assert_eq!(code(&o), 3, "{}", text(&o));
    assert!(text(&o).contains("idempotency_conflict"), "{}", text(&o));

    // 4: the job failed (sha256-2's file holds sha256-1's parameters), and so does its result.
    let o = client(&[
        "submit",
        "--circuit",
        "sha256-2",
        "--id",
        "mismatch",
        "--wait",
    ]);
    assert_eq!(code(&o), 4, "{}", text(&o));
    assert!(text(&o).contains("params_mismatch"), "{}", text(&o));
    let o = client(&["result", "mismatch"]);
    assert_eq!(code(&o), 4, "{}", text(&o));

    // 2: usage.
    let o = client(&["submit", "--c1", "c1.json"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("--miner"), "{}", text(&o));
    let o = client(&["list", "--no-such-flag"]);
    assert_eq!(code(&o), 2, "{}", text(&o));

    // 5: nothing listens there (after the client's retries).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = run(proofline()
        .args(["list"])
        .env("PROOFLINE_URL", format!("http://127.0.0.1:{port}")));
    assert_eq!(code(&o), 5, "{}", text(&o));

    // The help lists the exit codes.
    let o = run(proofline().arg("--help"));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Exit codes"),
        "{}",
        text(&o)
    );
}
