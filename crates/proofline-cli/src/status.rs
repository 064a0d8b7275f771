//! `proofline status` without a job id: the daemon's status page as text for people, and the
//! formatting helpers `proofline top` shares with it.

use std::fmt::Write;

use proofline_wire::{JobInFlight, PartitionStage, StatusPage};

/// `1.50 GiB`, `31.0 MiB`, `512 B`.
pub fn fmt_bytes(b: u64) -> String {
    const K: f64 = 1024.0;
    let f = b as f64;
    if f >= K * K * K {
        format!("{:.2} GiB", f / (K * K * K))
    } else if f >= K * K {
        format!("{:.1} MiB", f / (K * K))
    } else if f >= K {
        format!("{:.1} KiB", f / K)
    } else {
        format!("{b} B")
    }
}

/// `420 ms`, `12.3 s`, `4m 05s`, `2h 03m`.
pub fn fmt_secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{}m {:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h {:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// One job's partitions in a line: admitted partitions one by one with stage, device and time in
/// the stage; done and queued ones counted.
pub fn partitions_line(j: &JobInFlight) -> String {
    let mut parts = Vec::new();
    let count = |s: PartitionStage| j.partitions.iter().filter(|p| p.stage == s).count();
    let done = count(PartitionStage::Done);
    if done > 0 {
        parts.push(format!("{done} done"));
    }
    for p in &j.partitions {
        if matches!(p.stage, PartitionStage::Done | PartitionStage::Queued) {
            continue;
        }
        let device = p
            .device
            .as_deref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default();
        parts.push(format!(
            "p{} {}{device} {}",
            p.partition,
            p.stage.as_str(),
            fmt_secs(p.stage_s)
        ));
    }
    let queued = count(PartitionStage::Queued);
    if queued > 0 {
        parts.push(format!("{queued} queued"));
    }
    if j.final_check {
        parts.push("final check of the whole proof".into());
    }
    parts.join(" · ")
}

/// The page as text: header, actors, jobs in flight, devices, parameters, stage totals.
pub fn render(page: &StatusPage) -> String {
    let mut out = String::new();
    let j = &page.jobs;
    let _ = writeln!(
        out,
        "proofline {} ({}) · backend {} · up {}",
        page.version,
        page.commit,
        page.backend,
        fmt_secs(page.uptime_s)
    );
    let _ = writeln!(
        out,
        "jobs: {} queued, {} running, {} finished retained · since start: {} succeeded, {} failed, {} cancelled",
        j.queued, j.running, j.finished_retained, j.succeeded_total, j.failed_total, j.cancelled_total
    );
    let _ = writeln!(
        out,
        "partitions in flight: {}/{}",
        page.partitions_in_flight, page.max_partitions_in_flight
    );

    let _ = writeln!(out, "\nactors (pipeline order)");
    let _ = writeln!(
        out,
        "  {:<15} {:>8} {:>8} {:>14} {:>10}",
        "actor", "waiting", "threads", "busy s total", "messages"
    );
    for a in &page.actors {
        let _ = writeln!(
            out,
            "  {:<15} {:>8} {:>8} {:>14.3} {:>10}",
            a.actor,
            a.backlog(),
            a.threads,
            a.busy_seconds_total,
            a.messages_total
        );
    }

    let _ = writeln!(out, "\njobs in flight");
    if page.jobs_in_flight.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for job in &page.jobs_in_flight {
        let due = job.deadline_ms.map_or(String::new(), |d| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.as_millis() as u64);
            match d.checked_sub(now) {
                Some(left) => format!(" (deadline in {})", fmt_secs(left as f64 / 1e3)),
                None => " (deadline passed)".to_string(),
            }
        });
        let _ = writeln!(
            out,
            "  {}  {} {}  {:?}  priority {}{}  age {}  {}/{} partitions done",
            job.id,
            job.kind,
            job.label,
            job.state,
            job.priority,
            due,
            fmt_secs(job.age_s),
            job.partitions_done,
            job.partitions.len()
        );
        let _ = writeln!(out, "      {}", partitions_line(job));
    }

    let _ = writeln!(out, "\ndevices");
    for d in &page.devices {
        let _ = write!(
            out,
            "  {:<8} budget {}  leased {} ({} leases)  waiting {}  resident {}",
            d.device,
            fmt_bytes(d.budget_bytes),
            fmt_bytes(d.leased_bytes),
            d.leases,
            d.waiting_requests,
            fmt_bytes(d.resident_bytes)
        );
        if let Some(r) = d.kernel_busy_ratio {
            let _ = write!(out, "  kernels busy {:.0}%", r * 100.0);
        }
        if let Some(g) = &d.gpu {
            if let Some(u) = g.utilization_ratio {
                let _ = write!(out, "  utilisation {:.0}%", u * 100.0);
            }
            if let (Some(used), Some(total)) = (g.memory_used_bytes, g.memory_total_bytes) {
                let _ = write!(out, "  memory {}/{}", fmt_bytes(used), fmt_bytes(total));
            }
            if let Some(t) = g.temperature_celsius {
                let _ = write!(out, "  {t:.0} °C");
            }
        }
        out.push('\n');
    }

    let _ = writeln!(out, "\nresident parameters");
    if page.params.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for p in &page.params {
        let load = p
            .load_s
            .map(|s| format!("  loaded in {}", fmt_secs(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}  {} in host memory{load}",
            p.id,
            fmt_bytes(p.host_bytes)
        );
    }

    if !page.stages.is_empty() {
        let _ = writeln!(out, "\nstages since start");
        let _ = writeln!(out, "  {:<16} {:>8} {:>10}", "stage", "count", "mean");
        for s in &page.stages {
            let mean = if s.count > 0 {
                fmt_secs(s.seconds_total / s.count as f64)
            } else {
                "-".into()
            };
            let _ = writeln!(out, "  {:<16} {:>8} {:>10}", s.stage, s.count, mean);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofline_wire::{
        ActorFigures, DeviceStatus, JobCounts, JobState, PartitionProgress, ResidentParams,
        StageFigures,
    };

    fn page() -> StatusPage {
        let p = |partition, stage, device: Option<&str>, stage_s| PartitionProgress {
            partition,
            stage,
            device: device.map(String::from),
            stage_s,
        };
        StatusPage {
            version: "0.1.0".into(),
            commit: "abc123".into(),
            backend: "cuda:0".into(),
            uptime_s: 3725.0,
            now_ms: 0,
            jobs: JobCounts {
                queued: 1,
                running: 1,
                finished_retained: 4,
                succeeded_total: 4,
                failed_total: 0,
                cancelled_total: 1,
            },
            partitions_in_flight: 2,
            max_partitions_in_flight: 2,
            jobs_in_flight: vec![JobInFlight {
                id: "3f9c0d2a4b1e7788".into(),
                kind: "porep-c2".into(),
                label: "32GiB".into(),
                state: JobState::Running,
                priority: 0,
                deadline_ms: None,
                partitions_done: 1,
                age_s: 75.0,
                final_check: false,
                partitions: vec![
                    p(0, PartitionStage::Done, None, 0.0),
                    p(1, PartitionStage::H, Some("cuda:0"), 1.3),
                    p(2, PartitionStage::Synthesis, Some("cuda:0"), 0.5),
                    p(3, PartitionStage::Queued, None, 0.0),
                    p(4, PartitionStage::Queued, None, 0.0),
                ],
            }],
            actors: vec![ActorFigures {
                actor: "synthesis".into(),
                mailbox_depth: 1,
                permit_waiting: 2,
                threads: 2,
                running: 2,
                busy_seconds_total: 12.5,
                messages_total: 40,
            }],
            stages: vec![StageFigures {
                stage: "synthesis".into(),
                count: 4,
                seconds_total: 2.0,
            }],
            devices: vec![DeviceStatus {
                device: "cuda:0".into(),
                budget_bytes: 3 << 30,
                leased_bytes: 1 << 30,
                leases: 1,
                waiting_requests: 0,
                resident_bytes: 0,
                kernel_busy_ratio: Some(0.75),
                gpu: None,
            }],
            params: vec![ResidentParams {
                id: "v28-32GiB.params".into(),
                host_bytes: 47 << 30,
                load_s: Some(61.0),
            }],
        }
    }

    #[test]
    fn the_page_reads_as_text() {
        let text = render(&page());
        for want in [
            "proofline 0.1.0 (abc123) · backend cuda:0 · up 1h 02m",
            "1 queued, 1 running, 4 finished retained",
            "partitions in flight: 2/2",
            "  synthesis              3        2         12.500         40",
            "1 done · p1 h on cuda:0 1.3 s · p2 synthesis on cuda:0 500 ms · 2 queued",
            "budget 3.00 GiB  leased 1.00 GiB (1 leases)",
            "kernels busy 75%",
            "v28-32GiB.params  47.00 GiB in host memory  loaded in 1m 01s",
            "  synthesis               4     500 ms",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(3 << 20), "3.0 MiB");
        assert_eq!(fmt_secs(0.25), "250 ms");
        assert_eq!(fmt_secs(245.0), "4m 05s");
    }
}
