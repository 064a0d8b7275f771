//! `proofline top`: the status page in a terminal, refreshed in place, for operators on SSH:
//! every actor's mailbox depth and busy threads as bars with a verdict (bottleneck, queueing,
//! busy, starving, idle), the jobs in flight with each partition's stage, and memory per device.
//! `q`, Esc or Ctrl-C quits.

use std::time::{Duration, Instant};

use proofline_client::Client;
use proofline_wire::StatusPage;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Frame};

use crate::status::{fmt_bytes, fmt_secs, partitions_line};

/// The actor pools that do the heavy work: idle while partitions are in flight means starving.
const POOLS: [&str; 3] = ["synthesis", "cpu_msm", "compute"];

/// How an actor is doing over the last refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Messages wait and the pool is saturated, or the queue grows.
    Bottleneck,
    /// Messages wait.
    Queueing,
    /// Working, nothing waiting.
    Busy,
    /// A worker pool with nothing to do while partitions are in flight: the stages before it
    /// do not keep up.
    Starving,
    /// Nothing to do.
    Idle,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Bottleneck => "BOTTLENECK",
            Verdict::Queueing => "queueing",
            Verdict::Busy => "busy",
            Verdict::Starving => "starving",
            Verdict::Idle => "idle",
        }
    }

    fn color(self) -> Color {
        match self {
            Verdict::Bottleneck => Color::Red,
            Verdict::Queueing => Color::Yellow,
            Verdict::Busy => Color::Green,
            Verdict::Starving => Color::Cyan,
            Verdict::Idle => Color::DarkGray,
        }
    }
}

/// One actor's line.
#[derive(Clone, Debug, PartialEq)]
pub struct ActorRow {
    /// Actor name.
    pub actor: String,
    /// Work waiting: mailbox messages and partitions waiting for a permit to send it work.
    pub depth: u64,
    /// Busy threads since the previous page.
    pub busy_threads: f64,
    /// Threads of the pool.
    pub threads: usize,
    /// Messages handled per second since the previous page.
    pub rate: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Every actor's line, from the page and the one before it (rates need two).
pub fn actor_rows(now: &StatusPage, prev: Option<&StatusPage>) -> Vec<ActorRow> {
    let dt = prev
        .map(|p| now.now_ms.saturating_sub(p.now_ms) as f64 / 1e3)
        .unwrap_or(0.0);
    now.actors
        .iter()
        .map(|a| {
            let before = prev.and_then(|p| p.actors.iter().find(|b| b.actor == a.actor));
            // Busy time and rates need two pages; on the first, only the depth is known.
            let (busy_threads, rate, growing, measured) = match before {
                Some(b) if dt > 0.0 => (
                    ((a.busy_seconds_total - b.busy_seconds_total) / dt).max(0.0),
                    a.messages_total.saturating_sub(b.messages_total) as f64 / dt,
                    a.backlog() > b.backlog(),
                    true,
                ),
                _ => (0.0, 0.0, false, false),
            };
            let frac = busy_threads / a.threads.max(1) as f64;
            let verdict = if a.backlog() > 0 && (frac >= 0.9 || growing) {
                Verdict::Bottleneck
            } else if a.backlog() > 0 {
                Verdict::Queueing
            } else if measured
                && POOLS.contains(&a.actor.as_str())
                && now.partitions_in_flight > 0
                && frac < 0.1
            {
                Verdict::Starving
            } else if frac >= 0.1 {
                Verdict::Busy
            } else {
                Verdict::Idle
            };
            ActorRow {
                actor: a.actor.clone(),
                depth: a.backlog(),
                busy_threads,
                threads: a.threads,
                rate,
                verdict,
            }
        })
        .collect()
}

/// A bar of `width` cells filled to `frac`.
fn bar(frac: f64, width: usize) -> String {
    let filled = ((frac.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

fn draw(f: &mut Frame, page: Option<&StatusPage>, prev: Option<&StatusPage>, note: &str) {
    let Some(page) = page else {
        f.render_widget(
            Paragraph::new(format!("proofline top · waiting for the daemon… {note}")),
            f.area(),
        );
        return;
    };
    let rows = actor_rows(page, prev);
    let jobs_height = (page.jobs_in_flight.len() * 2).clamp(1, 20) as u16 + 2;
    let [head, actors, jobs, devices, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(rows.len() as u16 + 3),
        Constraint::Min(jobs_height.min(6)),
        Constraint::Length(page.devices.len() as u16 + 3),
        Constraint::Length(1),
    ])
    .areas(f.area());

    let j = &page.jobs;
    let header = vec![
        Line::from(vec![
            Span::styled("proofline ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "{} ({}) · backend {} · up {}",
                page.version,
                page.commit,
                page.backend,
                fmt_secs(page.uptime_s)
            )),
        ]),
        Line::from(format!(
            "{} queued · {} running · {}/{} partitions in flight · {} succeeded · {} failed · {} cancelled",
            j.queued,
            j.running,
            page.partitions_in_flight,
            page.max_partitions_in_flight,
            j.succeeded_total,
            j.failed_total,
            j.cancelled_total
        )),
    ];
    f.render_widget(Paragraph::new(header), head);

    let table = Table::new(
        rows.iter().map(|r| {
            let frac = r.busy_threads / r.threads.max(1) as f64;
            Row::new(vec![
                r.actor.clone(),
                r.depth.to_string(),
                bar(frac, 20),
                format!("{:.2}/{}", r.busy_threads, r.threads),
                format!("{:.1}", r.rate),
                r.verdict.label().to_string(),
            ])
            .style(Style::new().fg(r.verdict.color()))
        }),
        [
            Constraint::Length(15),
            Constraint::Length(8),
            Constraint::Length(21),
            Constraint::Length(10),
            Constraint::Length(8),
            Constraint::Length(11),
        ],
    )
    .header(
        Row::new(vec![
            "actor", "waiting", "busy", "threads", "msg/s", "state",
        ])
        .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" actors (pipeline order) "));
    f.render_widget(table, actors);

    let mut lines = Vec::new();
    if page.jobs_in_flight.is_empty() {
        lines.push(Line::from("no job in flight"));
    }
    for job in &page.jobs_in_flight {
        lines.push(Line::from(vec![
            Span::styled(job.id.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "  {} {}  {:?}  priority {}  age {}  {}/{} done",
                job.kind,
                job.label,
                job.state,
                job.priority,
                fmt_secs(job.age_s),
                job.partitions_done,
                job.partitions.len()
            )),
        ]));
        lines.push(Line::from(format!("    {}", partitions_line(job))));
    }
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" jobs in flight ")),
        jobs,
    );

    let table = Table::new(
        page.devices.iter().map(|d| {
            let frac = if d.budget_bytes > 0 {
                d.leased_bytes as f64 / d.budget_bytes as f64
            } else {
                0.0
            };
            let mut gpu = Vec::new();
            if let Some(r) = d.kernel_busy_ratio {
                gpu.push(format!("kernels {:.0}%", r * 100.0));
            }
            if let Some(g) = &d.gpu {
                if let Some(u) = g.utilization_ratio {
                    gpu.push(format!("util {:.0}%", u * 100.0));
                }
                if let Some(t) = g.temperature_celsius {
                    gpu.push(format!("{t:.0} °C"));
                }
            }
            Row::new(vec![
                d.device.clone(),
                bar(frac, 20),
                format!(
                    "{} / {}",
                    fmt_bytes(d.leased_bytes),
                    fmt_bytes(d.budget_bytes)
                ),
                d.waiting_requests.to_string(),
                fmt_bytes(d.resident_bytes),
                gpu.join(" "),
            ])
        }),
        [
            Constraint::Length(9),
            Constraint::Length(21),
            Constraint::Length(22),
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Min(10),
        ],
    )
    .header(
        Row::new(vec!["device", "leased", "", "waiting", "resident", "GPU"])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" memory per device "));
    f.render_widget(table, devices);

    f.render_widget(
        Paragraph::new(format!("q quits · {note}")).style(Style::new().fg(Color::DarkGray)),
        foot,
    );
}

/// Runs until `q`, Esc or Ctrl-C, fetching the page every `interval`.
pub fn run(client: &Client, interval: Duration) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let r = run_loop(&mut terminal, client, interval);
    ratatui::try_restore()?;
    r
}

fn run_loop(
    terminal: &mut DefaultTerminal,
    client: &Client,
    interval: Duration,
) -> anyhow::Result<()> {
    let mut page: Option<StatusPage> = None;
    let mut prev: Option<StatusPage> = None;
    loop {
        let note = match client.status_page() {
            Ok(p) => {
                prev = page.replace(p);
                format!("refreshes every {}", fmt_secs(interval.as_secs_f64()))
            }
            Err(e) => format!("daemon unreachable: {e}"),
        };
        terminal.draw(|f| draw(f, page.as_ref(), prev.as_ref(), &note))?;
        let next = Instant::now() + interval;
        loop {
            let left = next.saturating_duration_since(Instant::now());
            if left.is_zero() || !event::poll(left)? {
                break;
            }
            if let Event::Key(k) = event::read()? {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if k.kind == KeyEventKind::Press
                    && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c)
                {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofline_wire::{ActorFigures, JobCounts};

    fn page(now_ms: u64, actors: Vec<(&str, u64, f64, u64)>, in_flight: usize) -> StatusPage {
        StatusPage {
            version: "0".into(),
            commit: "c".into(),
            backend: "cpu".into(),
            uptime_s: 1.0,
            now_ms,
            jobs: JobCounts::default(),
            partitions_in_flight: in_flight,
            max_partitions_in_flight: 2,
            jobs_in_flight: vec![],
            actors: actors
                .into_iter()
                .map(|(a, depth, busy, msgs)| ActorFigures {
                    actor: a.into(),
                    mailbox_depth: depth,
                    permit_waiting: 0,
                    threads: 1,
                    running: 0,
                    busy_seconds_total: busy,
                    messages_total: msgs,
                })
                .collect(),
            stages: vec![],
            devices: vec![],
            params: vec![],
        }
    }

    #[test]
    fn verdicts_name_the_bottleneck_and_the_starving() {
        let before = page(
            0,
            vec![
                ("synthesis", 2, 0.0, 0),
                ("compute", 0, 0.0, 0),
                ("params_loader", 0, 0.0, 0),
            ],
            2,
        );
        let now = page(
            2000,
            vec![
                ("synthesis", 3, 2.0, 2),
                ("compute", 0, 0.05, 2),
                ("params_loader", 0, 0.0, 1),
            ],
            2,
        );
        // A first page alone says nothing of busy time: nobody is called starving on it.
        assert_eq!(actor_rows(&now, None)[1].verdict, Verdict::Idle);
        let rows = actor_rows(&now, Some(&before));
        assert_eq!(rows[0].verdict, Verdict::Bottleneck);
        assert!((rows[0].busy_threads - 1.0).abs() < 1e-9 && (rows[0].rate - 1.0).abs() < 1e-9);
        assert_eq!(rows[1].verdict, Verdict::Starving);
        assert_eq!(
            rows[2].verdict,
            Verdict::Idle,
            "the loader is not a worker pool"
        );
        // Nothing in flight: an idle pool is not starving.
        let quiet = page(4000, vec![("compute", 0, 0.05, 2)], 0);
        assert_eq!(actor_rows(&quiet, Some(&now))[0].verdict, Verdict::Idle);
        assert_eq!(bar(0.5, 4), "██░░");
    }
}
