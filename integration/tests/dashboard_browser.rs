//! The dashboard in a real browser (headless Chromium): a daemon with jobs in flight, the page
//! loads without console errors, its charts receive data, and a mailbox the server reports as
//! non-empty shows as non-empty on the page. The screenshot it takes is docs/dashboard.png
//! (rewritten when `PROOFLINE_UPDATE_SCREENSHOT=1`).
//!
//! Without Chromium and chromedriver the test says so loudly and passes; with
//! `PROOFLINE_REQUIRE_BROWSER=1` (set by `.ci/run`) their absence fails it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proofline_client::Client;
use proofline_integration::webdriver::Browser;
use proofline_integration::{cached_params, start, test_config};
use proofline_jobs::JobRequest;
use serde_json::Value;

fn job(seed: u64) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some("sha256-1".into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        ..Default::default()
    }
}

/// What the page shows of each actor: `(actor, backlog attribute, backlog as displayed)`.
const ACTOR_CARDS: &str = "return [...document.querySelectorAll('#flow .actor')].map(e => \
     [e.dataset.actor, Number(e.dataset.backlog), e.querySelector('.depth').firstChild.textContent]);";

fn actor_cards(v: &Value) -> Vec<(String, u64, String)> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c[0].as_str().unwrap_or("").to_string(),
                c[1].as_u64().unwrap_or(0),
                c[2].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_dashboard_shows_the_pipeline_live_in_a_browser() {
    let browser = match Browser::find() {
        Ok(b) => b,
        Err(why) if std::env::var("PROOFLINE_REQUIRE_BROWSER").as_deref() != Ok("1") => {
            eprintln!(
                "\n*** SKIPPED the_dashboard_shows_the_pipeline_live_in_a_browser: {why}.\n\
                 *** Install Debian's chromium and chromium-driver to run it \
                 (PROOFLINE_REQUIRE_BROWSER=1 makes this a failure, as in CI). ***\n"
            );
            return;
        }
        Err(why) => panic!("PROOFLINE_REQUIRE_BROWSER=1 but {why}"),
    };

    // A backlog: one synthesis thread, six partitions admitted at once, and a feeder that keeps
    // jobs queued for as long as the test looks, however fast this machine proves them.
    let dir = cached_params("sha256-1").unwrap();
    let mut cfg = test_config(&dir).unwrap();
    cfg.pipeline.max_partitions_in_flight = 6.into();
    cfg.pipeline.synthesis_workers = 1.into();
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());
    let ids = Arc::new(Mutex::new(Vec::new()));
    let feeding = Arc::new(AtomicBool::new(true));
    let feeder = {
        let (ids, feeding, url) = (ids.clone(), feeding.clone(), daemon.url().to_string());
        std::thread::spawn(move || {
            let c = Client::new(&url);
            let mut seed = 0;
            while feeding.load(Ordering::Relaxed) {
                let queued = c.status_page().map(|p| p.jobs.queued).unwrap_or(0);
                if queued < 12 {
                    let id = c.submit(&job(seed)).unwrap().id;
                    ids.lock().unwrap().push(id);
                    seed += 1;
                } else {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        })
    };

    let profile = tempfile::tempdir().unwrap();
    let session = browser.start(profile.path(), 1500, 2000).unwrap();
    session
        .goto(&format!("{}/dashboard", daemon.url()))
        .unwrap();

    // The page polls once a second; wait for a few pages.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let polls = session.eval("return window.__dashboard.polls").unwrap();
        if polls.as_u64().unwrap_or(0) >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "the dashboard never polled");
        std::thread::sleep(Duration::from_millis(200));
    }

    // An actor the server reports work waiting for (in its mailbox, or partitions waiting for a
    // permit to send it work) shows it on the page.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen = None;
    while seen.is_none() {
        let page = c.status_page().unwrap();
        let cards = actor_cards(&session.eval(ACTOR_CARDS).unwrap());
        assert_eq!(
            cards.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            page.actors
                .iter()
                .map(|a| a.actor.as_str())
                .collect::<Vec<_>>(),
            "one card per actor, in the server's order"
        );
        for a in page.actors.iter().filter(|a| a.backlog() > 0) {
            if let Some(card) = cards.iter().find(|c| c.0 == a.actor && c.1 > 0) {
                assert_eq!(
                    card.2,
                    card.1.to_string(),
                    "the number shown is the backlog"
                );
                seen = Some((a.actor.clone(), a.backlog(), card.1));
            }
        }
        assert!(
            Instant::now() < deadline,
            "no actor with work waiting seen on both the server and the page; page shows {cards:?}"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
    eprintln!("work waiting on server and page (actor, server, page): {seen:?}");

    // Let the charts draw a few seconds of lines, then check them and take the screenshot.
    std::thread::sleep(Duration::from_secs(6));
    let state = session
        .eval(
            "return {charts: window.__dashboard.charts, failures: window.__dashboard.failures, \
               canvases: document.querySelectorAll('.chart canvas').length, \
               jobs: document.querySelectorAll('#jobs tbody tr').length, \
               chips: document.querySelectorAll('#jobs .chip').length, \
               verdict: document.getElementById('verdict').textContent, \
               live: document.getElementById('live').textContent}",
        )
        .unwrap();
    eprintln!("dashboard state: {state}");
    for chart in [
        "chart-depth",
        "chart-busy",
        "chart-throughput",
        "chart-latency",
        "chart-jobs",
        "chart-memory",
    ] {
        let points = state["charts"][chart].as_u64().unwrap_or(0);
        assert!(points >= 5, "{chart} received {points} data points");
    }
    assert!(
        state["canvases"].as_u64().unwrap_or(0) >= 6,
        "charts drawn: {state}"
    );
    assert_eq!(state["failures"], 0, "every poll succeeded");
    assert!(
        state["jobs"].as_u64().unwrap_or(0) > 0 && state["chips"].as_u64().unwrap_or(0) > 0,
        "jobs in flight listed with their partitions: {state}"
    );

    let png = session.screenshot().unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&out, &png).unwrap();
    eprintln!("screenshot: {}", out.display());
    if std::env::var("PROOFLINE_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/dashboard.png");
        std::fs::write(docs, &png).unwrap();
        eprintln!("screenshot written to {docs}");
    }

    let errors: Vec<_> = session
        .console()
        .unwrap()
        .into_iter()
        .filter(|(level, _)| level == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    drop(session);

    feeding.store(false, Ordering::Relaxed);
    feeder.join().unwrap();
    for id in ids.lock().unwrap().iter() {
        let _ = c.cancel(id);
    }
    daemon.stop();
}
