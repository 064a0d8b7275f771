//! A headless Chromium driven through chromedriver's W3C WebDriver API, for the dashboard test:
//! open a page, run a script in it, read the browser's console log, take a screenshot. Only the
//! handful of WebDriver commands the test needs, over plain HTTP on loopback.
//!
//! The browser and the driver are Debian's `chromium` and `chromium-driver` (`.ci/run` installs
//! them). [`Browser::find`] locates them (`PROOFLINE_CHROMIUM`, `PROOFLINE_CHROMEDRIVER` override).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use base64::Engine;
use serde_json::{json, Value};

/// Where the browser and its driver are installed.
#[derive(Clone, Debug)]
pub struct Browser {
    /// The chromium binary.
    pub chromium: PathBuf,
    /// The chromedriver binary.
    pub chromedriver: PathBuf,
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

impl Browser {
    /// The installed browser and driver, or what is missing.
    pub fn find() -> Result<Self, String> {
        let pick = |var: &str, names: &[&str]| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .filter(|p| p.is_file())
                .or_else(|| on_path(names))
                .ok_or_else(|| format!("{} not found (set {var})", names.join(" or ")))
        };
        Ok(Browser {
            chromium: pick("PROOFLINE_CHROMIUM", &["chromium", "chromium-browser"])?,
            chromedriver: pick("PROOFLINE_CHROMEDRIVER", &["chromedriver"])?,
        })
    }

    /// Starts chromedriver on a free loopback port and a headless browser session with a fresh
    /// profile in `profile_dir`, `width`×`height` pixels.
    pub fn start(&self, profile_dir: &Path, width: u32, height: u32) -> anyhow::Result<Session> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let driver = Command::new(&self.chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", self.chromedriver.display()))?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        let mut session = Session {
            base: format!("http://127.0.0.1:{port}"),
            agent,
            driver,
            id: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match session.call("GET", "/status", None) {
                Ok(v) if v["ready"] == true => break,
                _ if Instant::now() > deadline => bail!("chromedriver did not become ready"),
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        let args = [
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            format!("--user-data-dir={}", profile_dir.display()),
            format!("--window-size={width},{height}"),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let v = session.call("POST", "/session", Some(caps))?;
        session.id = v["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("no session id in {v}"))?
            .to_string();
        Ok(session)
    }
}

/// A browser session; ends the session and stops the driver when dropped.
pub struct Session {
    base: String,
    agent: ureq::Agent,
    driver: Child,
    id: String,
}

impl Session {
    /// One WebDriver command; returns its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            (_, body) => self.agent.post(&url).send_json(body.unwrap_or(json!({}))),
        };
        let mut resp = resp.with_context(|| format!("{method} {url}"))?;
        let status = resp.status().as_u16();
        let v: Value = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_json()
            .with_context(|| format!("{method} {url}: not JSON"))?;
        if status >= 400 {
            bail!("{method} {path}: HTTP {status}: {}", v["value"]);
        }
        Ok(v["value"].clone())
    }

    fn session_path(&self, tail: &str) -> String {
        format!("/session/{}{tail}", self.id)
    }

    /// Navigates to `url` (returns when the page has loaded).
    pub fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.call(
            "POST",
            &self.session_path("/url"),
            Some(json!({ "url": url })),
        )?;
        Ok(())
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub fn eval(&self, script: &str) -> anyhow::Result<Value> {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// The browser console's entries since the last call: `(level, message)`.
    pub fn console(&self) -> anyhow::Result<Vec<(String, String)>> {
        let v = self.call(
            "POST",
            &self.session_path("/se/log"),
            Some(json!({ "type": "browser" })),
        )?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or("").to_string(),
                    e["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect())
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> anyhow::Result<Vec<u8>> {
        let v = self.call("GET", &self.session_path("/screenshot"), None)?;
        let b64 = v.as_str().ok_or_else(|| anyhow!("no screenshot data"))?;
        Ok(base64::engine::general_purpose::STANDARD.decode(b64)?)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.id.is_empty() {
            let _ = self.call("DELETE", &self.session_path(""), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
