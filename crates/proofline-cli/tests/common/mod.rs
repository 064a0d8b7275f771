//! Helpers of the tests that run the real `proofline` binary: cached parameters, a daemon
//! process on a free loopback port with its own state directory, and proof checks.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bellperson::groth16;
use blstrs::Bls12;
use proofline_client::Client;
use proofline_jobs::builtin::BuiltinCircuit;
use proofline_jobs::{parse_scalar_hex, JobRequest};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_proofline")
}

/// Cached test parameters of `circuit` (generated once, shared with the integration tests).
pub fn params_dir(circuit: &str) -> PathBuf {
    let dir = match std::env::var_os("PROOFLINE_TEST_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("params"),
        _ => proofline_config::expand_home("~/.cache/proofline/test-params"),
    };
    let c = BuiltinCircuit::parse(circuit).unwrap();
    proofline::setup::setup(&c, &dir, false).unwrap();
    dir
}

/// A free loopback port (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `proofline serve` process.
pub struct DaemonProcess {
    pub child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl DaemonProcess {
    /// Starts `proofline serve` on a free port with `env` (PROOFLINE_* keys) and waits until
    /// `/healthz` answers.
    pub fn start(params: &Path, log: PathBuf, env: &[(&str, String)]) -> Self {
        let port = free_port();
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .env_remove("PROOFLINE_CONFIG")
            .env("PROOFLINE_SERVER__BIND", format!("127.0.0.1:{port}"))
            .env("PROOFLINE_PARAMS__DIR", params)
            .env("PROOFLINE_LOG__LEVEL", "info")
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        let d = DaemonProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        d.wait_healthy();
        d
    }

    fn wait_healthy(&self) {
        let c = Client::new(&self.url);
        let deadline = Instant::now() + Duration::from_secs(120);
        while c.health().is_err() {
            assert!(
                Instant::now() < deadline,
                "daemon did not start; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process's output so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a signal (`"TERM"`, `"KILL"`).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits for the process to exit; its exit code (None: killed by a signal).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("daemon did not exit in time; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A job of the built-in `circuit`.
pub fn request(circuit: &str, seed: u64) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some(circuit.into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        ..Default::default()
    }
}

/// Fetches the result of job `id` and verifies it with bellperson against the key on disk.
pub fn assert_proof_verifies(c: &Client, id: &str, circuit: &str, params: &Path) {
    let r = c.result(id).unwrap();
    let proof = r.proof().unwrap();
    let vk = proofline::setup::read_vk(&BuiltinCircuit::parse(circuit).unwrap(), params).unwrap();
    let pvk = groth16::prepare_verifying_key(&vk);
    let p = groth16::Proof::<Bls12>::read(&proof[..]).unwrap();
    let inputs: Vec<_> = r.public_inputs[0]
        .iter()
        .map(|h| parse_scalar_hex("x", h).unwrap())
        .collect();
    assert!(
        groth16::verify_proof(&pvk, &p, &inputs).unwrap(),
        "proof of {id} does not verify"
    );
}
