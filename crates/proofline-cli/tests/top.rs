//! `proofline top` under a pseudo-terminal (util-linux `script` gives it one, 40×140): the screen,
//! as a terminal would show it, lists every actor and a job in flight with its partition's stage;
//! `q` quits cleanly.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proofline::daemon::Daemon;
use proofline_client::Client;
use proofline_config::{Config, MemorySize};
use proofline_jobs::builtin::BuiltinCircuit;
use proofline_jobs::JobRequest;

/// The test parameter cache the integration tests use too.
fn params_dir() -> std::path::PathBuf {
    let dir = match std::env::var_os("PROOFLINE_TEST_CACHE") {
        Some(d) if !d.is_empty() => std::path::PathBuf::from(d).join("params"),
        _ => proofline_config::expand_home("~/.cache/proofline/test-params"),
    };
    let c = BuiltinCircuit::parse("sha256-1").unwrap();
    proofline::setup::setup(&c, &dir, false).unwrap();
    dir
}

/// Ends the terminal session if the test fails before `q` does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn top_shows_the_actors_and_the_jobs_in_flight_and_quits_on_q() {
    let mut cfg = Config::embedded_default().unwrap();
    cfg.server.bind = "127.0.0.1:0".into();
    cfg.params.dir = params_dir().display().to_string();
    cfg.log.level = "warn".into();
    cfg.pipeline.max_partitions_in_flight = 2.into();
    cfg.pipeline.host_memory_budget = MemorySize::Bytes(8 << 30);
    let daemon = Daemon::start(&cfg).unwrap();
    let c = Client::new(daemon.url());
    let ids: Vec<String> = (0..40)
        .map(|seed| {
            c.submit(&JobRequest {
                kind: "groth16".into(),
                circuit: Some("sha256-1".into()),
                input: serde_json::json!({ "seed": seed }),
                public_inputs: None,
                ..Default::default()
            })
            .unwrap()
            .id
        })
        .collect();

    let run = format!(
        "stty rows 40 cols 140; exec {} top --server {} --interval-ms 200",
        env!("CARGO_BIN_EXE_proofline"),
        daemon.url()
    );
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-f", "-e", "-c", &run, "/dev/null"])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The binary reads PROOFLINE_* variables as configuration: give it none of the test's.
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PROOFLINE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = KillOnDrop(
        cmd.spawn()
            .expect("util-linux `script` runs the command under a pseudo-terminal"),
    );
    let child = &mut child.0;
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });

    let mut screen = vt100::Parser::new(40, 140, 0);
    let actors = [
        "coordinator",
        "params_loader",
        "synthesis",
        "allocator",
        "compute",
        "cpu_msm",
    ];
    let deadline = Instant::now() + Duration::from_secs(90);
    let shown = loop {
        if let Ok(bytes) = rx.recv_timeout(Duration::from_millis(200)) {
            screen.process(&bytes);
        }
        let text = screen.screen().contents();
        // A frame arrives in several writes: wait until the whole of one is on the screen.
        let job = ids.iter().find(|id| text.contains(id.as_str()));
        if actors.iter().all(|a| text.contains(a))
            && job.is_some()
            && text.contains(" on host ")
            && text.contains("actors (pipeline order)")
            && text.contains("memory per device")
            && text.contains("q quits")
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "top never showed the actors and a job in flight; screen:\n{text}"
        );
    };
    eprintln!("{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.contains("host") && l.contains("8.00 GiB")),
        "the host device's memory budget: {shown}"
    );

    child.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "top did not quit on q");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert!(status.success(), "top exited with {status}: {err}");

    for id in &ids {
        let _ = c.cancel(id);
    }
    daemon.stop();
}
