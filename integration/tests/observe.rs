//! Watching a daemon: the status page over HTTP while jobs are in flight, `/metrics` by the book
//! (base units, HELP for every family, build info, buckets up to an hour), the dashboard's
//! embedded files, and the Grafana dashboard, whose every query must name a metric the daemon
//! exports.

use std::collections::BTreeSet;
use std::time::Duration;

use proofline_actors::telemetry::ACTOR_FAMILIES;
use proofline_actors::JobState;
use proofline_client::Client;
use proofline_integration::{cached_params, http_get, start, test_config};
use proofline_jobs::JobRequest;
use proofline_runtime::observe::{Exported, MetricKind, METRICS};
use proofline_wire::PartitionStage;

fn job(seed: u64) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some("sha256-1".into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        ..Default::default()
    }
}

/// The families of a Prometheus text page: name → type.
fn families(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.trim().to_string()))
        .collect()
}

/// The first sample line of `name` carrying every one of `labels` (`key="value"`).
fn sample<'a>(text: &'a str, name: &str, labels: &[&str]) -> Option<&'a str> {
    text.lines().find(|l| {
        l.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            && labels.iter().all(|lab| l.contains(lab))
    })
}

fn value(line: &str) -> f64 {
    line.rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

#[test]
fn status_page_metrics_and_dashboard_files_over_http() {
    let dir = cached_params("sha256-1").unwrap();
    let mut cfg = test_config(&dir).unwrap();
    cfg.pipeline.max_partitions_in_flight = 1.into();
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    // Four jobs, one partition admitted at a time: the page shows one running, the rest queued.
    let ids: Vec<String> = (0..4).map(|s| c.submit(&job(s)).unwrap().id).collect();
    let page = c.status_page().unwrap();
    assert!(!page.jobs_in_flight.is_empty(), "{page:#?}");
    let mut admitted = 0;
    for j in &page.jobs_in_flight {
        assert!(ids.contains(&j.id), "{j:?}");
        assert_eq!(j.partitions.len(), 1);
        let p = &j.partitions[0];
        match j.state {
            JobState::Queued => assert_eq!(
                (p.stage, p.device.as_deref()),
                (PartitionStage::Queued, None)
            ),
            JobState::Running => {
                admitted += usize::from(p.stage != PartitionStage::Done);
                assert_eq!(p.device.as_deref(), Some("host"), "{p:?}");
            }
            other => panic!("a finished job on the page: {other:?}"),
        }
    }
    assert!(admitted <= 1, "one partition in flight at most: {page:#?}");
    assert_eq!(page.max_partitions_in_flight, 1);
    assert_eq!(page.backend, "cpu");
    assert_eq!(page.version, env!("CARGO_PKG_VERSION"));
    assert!(!page.commit.is_empty());

    for id in &ids {
        let s = c.wait(id, Duration::from_secs(600)).unwrap();
        assert_eq!(s.state, JobState::Succeeded, "{s:?}");
    }
    let page = c.status_page().unwrap();
    assert!(page.jobs_in_flight.is_empty());
    assert_eq!(page.jobs.succeeded_total, 4);
    let names: Vec<&str> = page.actors.iter().map(|a| a.actor.as_str()).collect();
    assert_eq!(
        &names[..6],
        [
            "coordinator",
            "params_loader",
            "synthesis",
            "allocator",
            "compute",
            "cpu_msm"
        ],
        "pipeline order"
    );
    assert!(
        page.actors.iter().all(|a| a.messages_total > 0),
        "{:?}",
        page.actors
    );
    assert!(page
        .params
        .iter()
        .any(|p| p.id == "proofline-sha256-1.params" && p.host_bytes > 0));
    for stage in [
        "synthesis",
        "h_poly",
        "msm_h",
        "msm_plan",
        "msm_g1_sparse",
        "msm_g2",
        "assemble_verify",
        "partition_total",
    ] {
        let s = page
            .stages
            .iter()
            .find(|s| s.stage == stage)
            .unwrap_or_else(|| panic!("{stage}"));
        assert!(s.count >= 4 && s.seconds_total > 0.0, "{s:?}");
    }

    // /metrics by the book.
    let m = c.metrics().unwrap();
    let fams = families(&m);
    for (name, _) in &fams {
        assert!(m.contains(&format!("# HELP {name} ")), "no HELP for {name}");
        assert!(
            !name.contains("micro") && !name.contains("millis"),
            "base units: {name}"
        );
    }
    let kind = |n: &str| fams.iter().find(|(f, _)| f == n).map(|(_, t)| t.as_str());
    assert_eq!(kind("proofline_actor_busy_seconds_total"), Some("counter"));
    assert_eq!(kind("proofline_jobs_finished_total"), Some("counter"));
    assert_eq!(kind("proofline_stage_seconds"), Some("histogram"));
    assert_eq!(kind("proofline_job_seconds"), Some("histogram"));
    let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    let info = sample(
        &m,
        "proofline_build_info",
        &[&version, "backend=\"cpu\"", "commit=\""],
    )
    .expect("build info");
    assert_eq!(value(info), 1.0);
    assert!(value(sample(&m, "proofline_uptime_seconds", &[]).unwrap()) > 0.0);
    let synth = sample(
        &m,
        "proofline_stage_seconds_bucket",
        &["stage=\"synthesis\"", "le=\"3600\""],
    )
    .expect("stage bucket at 3600 s");
    assert!(value(synth) >= 4.0);
    let jobs = sample(
        &m,
        "proofline_job_seconds_bucket",
        &["kind=\"groth16\"", "le=\"3600\""],
    )
    .expect("job latency by kind");
    assert!(value(jobs) >= 4.0);
    let resident = sample(
        &m,
        "proofline_params_resident_bytes",
        &["params=\"proofline-sha256-1.params\"", "location=\"host\""],
    )
    .expect("resident parameters");
    assert!(value(resident) > 0.0);
    assert!(
        value(
            sample(
                &m,
                "proofline_params_load_seconds",
                &["params=\"proofline-sha256-1.params\""]
            )
            .unwrap()
        ) > 0.0
    );
    let busy = sample(
        &m,
        "proofline_actor_busy_seconds_total",
        &["actor=\"synthesis\""],
    )
    .unwrap();
    assert!(
        value(busy) > 0.0 && value(busy) < 600.0,
        "seconds, not microseconds: {busy}"
    );
    assert_eq!(
        value(sample(&m, "proofline_mailbox_depth", &["actor=\"synthesis\""]).unwrap()),
        0.0,
        "nothing waits once every job is done"
    );

    // The dashboard and every file it references, from the binary.
    let page = http_get(&daemon.url(), "/dashboard").unwrap();
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/html"));
    let refs: Vec<&str> = page
        .body
        .split(['"', '\''])
        .filter(|s| s.starts_with("/dashboard/"))
        .collect();
    assert_eq!(refs.len(), 4, "{refs:?}");
    for r in refs {
        let file = http_get(&daemon.url(), r).unwrap();
        assert_eq!(file.status, 200, "{r}");
        let ct = file.header("content-type").unwrap_or("");
        let want = if r.ends_with(".js") {
            "text/javascript"
        } else {
            "text/css"
        };
        assert!(ct.starts_with(want), "{r}: {ct}");
        assert!(file.body.len() > 500, "{r}");
    }
    let missing = http_get(&daemon.url(), "/dashboard/nope.js").unwrap();
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("no_such_endpoint"),
        "{}",
        missing.body
    );
    daemon.stop();
}

/// `proofline_x_bucket` → `proofline_x` for histograms.
fn family_of(name: &str) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if METRICS
                .iter()
                .any(|m| m.name == base && m.kind == MetricKind::Histogram)
            {
                return base.to_string();
            }
        }
    }
    name.to_string()
}

/// Every `proofline_*` name in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("proofline_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(family_of(&tail[..end]));
        rest = &tail[end..];
    }
    out
}

fn panels(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut out = Vec::new();
    for p in v["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(panels(p));
    }
    out
}

#[test]
fn the_grafana_dashboard_queries_only_what_the_daemon_exports() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/dashboards/proofline.json"
    );
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .expect("dashboard JSON parses");
    let vars = dash["templating"]["list"].as_array().unwrap();
    let instance = vars
        .iter()
        .find(|v| v["name"] == "instance")
        .expect("an instance variable");
    assert!(
        instance["query"]
            .to_string()
            .contains("proofline_build_info"),
        "{instance}"
    );
    assert_eq!(instance["multi"], true);

    let known: BTreeSet<String> = METRICS
        .iter()
        .map(|m| m.name.to_string())
        .chain(ACTOR_FAMILIES.iter().map(|f| f.0.to_string()))
        .collect();
    let mut queried = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for p in panels(&dash) {
        if p["type"] == "row" {
            continue;
        }
        assert!(
            ids.insert(p["id"].as_u64().expect("panel id")),
            "duplicate panel id {}",
            p["id"]
        );
        let targets = p["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("panel {} has no targets", p["title"]));
        for t in targets {
            let expr = t["expr"].as_str().expect("expr");
            assert!(
                expr.contains("instance=~\"$instance\""),
                "panel {}: {expr} ignores the instance variable",
                p["title"]
            );
            let legend = t["legendFormat"].as_str().unwrap_or("");
            assert!(
                legend.contains("{{instance}}") || t["format"] == "table",
                "panel {}: legend '{legend}' without the instance",
                p["title"]
            );
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{expr}");
            for n in names {
                assert!(
                    known.contains(&n),
                    "panel {} queries {n}, which the daemon does not export",
                    p["title"]
                );
                queried.insert(n);
            }
        }
    }
    let unqueried: Vec<_> = known.difference(&queried).collect();
    assert!(
        unqueried.is_empty(),
        "metrics without a panel: {unqueried:?}"
    );

    // A daemon after a job exports every metric that is not GPU-only, and nothing undocumented.
    let dir = cached_params("sha256-1").unwrap();
    let daemon = start(&test_config(&dir).unwrap()).unwrap();
    let c = Client::new(daemon.url());
    let id = c.submit(&job(9)).unwrap().id;
    assert_eq!(
        c.wait(&id, Duration::from_secs(600)).unwrap().state,
        JobState::Succeeded
    );
    let exported: BTreeSet<String> = families(&c.metrics().unwrap())
        .into_iter()
        .map(|f| f.0)
        .collect();
    daemon.stop();
    for m in METRICS.iter().filter(|m| m.exported == Exported::Always) {
        assert!(
            exported.contains(m.name),
            "{} not exported after a job",
            m.name
        );
    }
    for f in ACTOR_FAMILIES {
        assert!(exported.contains(f.0), "{} not exported", f.0);
    }
    for n in &exported {
        assert!(
            known.contains(n),
            "{n} is exported but not in the metric list"
        );
    }
    let ops = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/operations.md"
    ))
    .unwrap();
    for n in &known {
        assert!(
            ops.contains(&format!("`{n}`")),
            "docs/operations.md does not list {n}"
        );
    }
}
