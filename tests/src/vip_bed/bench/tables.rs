//! The VIP failover benchmark's tables: per system the outage of each fault over its rounds
//! (min / median / max, TCP the headline, ARP beside it), every round on its own line, VRRP
//! dropped, the hog run, and a summary of pvefleet against both keepalived configurations.
//! pvefleet's VIP failover targets are printed next to the figures with "met" or "missed": figures,
//! not verdicts (the benchmark never fails on them).

use std::fmt::Write as _;
use std::time::Duration;

use super::keepalived_bed::{KeepalivedBed, KeepalivedFault};
use super::rounds::{Series, Spread};
use super::run::{HogRun, KeepalivedRun, MAX_DELAY, PvefleetRun, SPLIT_HOLD, Settings};
use crate::vip_bed::faults::Fault;
use crate::vip_bed::record::Stats;

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

fn spread(s: Option<Spread>) -> String {
    s.map_or_else(
        || "-".into(),
        |s| {
            format!(
                "{} / {} / {}",
                s.min.as_millis(),
                s.median.as_millis(),
                ms(s.max)
            )
        },
    )
}

/// Rounds measured, and how many of them played out.
fn rounds_cell(s: &Series) -> String {
    format!("{} ({})", s.measured().count(), s.played().count())
}

/// What the figures of a fault table are made of.
const FIGURES: &str = "figures over every round whose fault was injected; one that did not \
    play out (FAILED below: no take-over within the testbed's 20 s settle time) counts with \
    the gap measured until its restore began, a lower bound of its outage";

/// Left-aligned columns, two spaces apart.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c).map(String::len))
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|h| (*h).to_string()).collect();
    for row in std::iter::once(&head).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// pvefleet's target for a fault's median TCP outage, if it has one.
fn target(fault: Fault) -> Option<Duration> {
    match fault {
        Fault::HostDeath => Some(Duration::from_millis(500)),
        Fault::AgentTerm | Fault::Move => Some(Duration::from_millis(100)),
        _ => None,
    }
}

fn target_text(fault: Fault, series: &Series, baseline: Duration) -> String {
    let median = series.tcp().map(|s| s.median);
    match (fault, target(fault), median) {
        (Fault::LeaderKill, _, _) => format!(
            "0 s: no gap beyond the probes' own (without fault: {})",
            ms(baseline)
        ),
        (_, Some(t), Some(m)) => {
            format!(
                "median ≤ {}: {}",
                ms(t),
                if m <= t { "met" } else { "MISSED" }
            )
        }
        (_, Some(t), None) => format!("median ≤ {}: no figure", ms(t)),
        _ => "-".into(),
    }
}

fn most(s: &Stats) -> String {
    format!("{} / {}", s.max_answerers, s.max_holders)
}

/// The run's header: what was measured and how.
pub fn header(settings: &Settings, keepalived: &str, delay: Duration) -> String {
    let seed = if settings.seed_given {
        format!("{} (PVEFLEET_BENCH_SEED)", settings.seed)
    } else {
        format!(
            "{} (from the clock; PVEFLEET_BENCH_SEED={} replays it)",
            settings.seed, settings.seed
        )
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    format!(
        "vip_failover: VIP failover, pvefleet against keepalived, on one machine in one run \
         ({cores} cores)\n\
         rounds per fault: {} (PVEFLEET_BENCH_ROUNDS); hog run: {} s (PVEFLEET_BENCH_HOG_SECS)\n\
         fault phase: a uniform random delay of 0-{} after the testbed settled, seed {seed}\n\
         outage of a round = the longest time the client got no answer, from the fault until \
         its restore begins (the restore's own gap is shown apart); TCP is the headline (a \
         connection answered), ARP beside it is finer (a request every 5 ms; an unanswered TCP \
         probe waits out its 50 ms timeout, so TCP figures move in steps of up to 50 ms)\n\
         keepalived: {keepalived}\n",
        settings.rounds,
        settings.hog.as_secs(),
        ms(delay),
    )
}

fn rounds_table(series: &[(String, &Series)]) -> String {
    let header = [
        "FAULT",
        "#",
        "DELAY",
        "OWNER",
        "TAKEN BY",
        "LEADER ON OWNER",
        "TCP OUTAGE",
        "ARP OUTAGE",
        "RESTORE TCP",
        "ANSW/HOLD",
        "PROBLEMS",
    ];
    let dash = || "-".to_string();
    let mut rows = Vec::new();
    for (name, s) in series {
        for (i, r) in s.rounds.iter().enumerate() {
            let (answerers, holders) = r.most_at_once();
            rows.push(vec![
                name.clone(),
                (i + 1).to_string(),
                ms(r.delay),
                r.owner.clone().unwrap_or_else(dash),
                r.taken_by.clone().unwrap_or_else(dash),
                r.leader_on_owner
                    .map_or_else(dash, |l| if l { "yes" } else { "no" }.into()),
                ms(r.fault.tcp_gap),
                ms(r.fault.arp_gap),
                ms(r.restore.tcp_gap),
                format!("{answerers} / {holders}"),
                r.problems.join("; "),
            ]);
        }
    }
    table(&header, &rows)
}

/// Section 1: pvefleet's faults.
pub fn pvefleet(run: &PvefleetRun) -> String {
    let mut out = format!(
        "\n== 1. pvefleet: {} hosts, {} coordinators, its defaults (lease 400 ms, renewals every \
         100 ms) ==\nprobes: TCP every {} (given up after {}), ARP every {}, holders sampled every {}\n\
         without fault for {:.0} s: longest gap TCP {}, ARP {}; most answering / holding at once {}\n\n",
        run.opts.hosts,
        run.opts.coordinators,
        ms(run.opts.tcp_every),
        ms(run.opts.tcp_timeout),
        ms(run.opts.arp_every),
        ms(run.opts.sample_every),
        run.baseline.length.as_secs_f64(),
        ms(run.baseline.stats.tcp_gap),
        ms(run.baseline.stats.arp_gap),
        most(&run.baseline.stats),
    );
    let header = [
        "FAULT",
        "ROUNDS (PLAYED OUT)",
        "TCP OUTAGE min / median / max",
        "ARP OUTAGE min / median / max",
        "RESTORE TCP max",
        "MOST ANSW/HOLD",
        "TARGET",
    ];
    let rows: Vec<Vec<String>> = run
        .series
        .iter()
        .map(|(fault, s)| {
            let (answerers, holders) = s.most_at_once();
            vec![
                fault.name().to_string(),
                rounds_cell(s),
                spread(s.tcp()),
                spread(s.arp()),
                s.restore_tcp_max().map_or_else(|| "-".into(), ms),
                format!("{answerers} / {holders}"),
                target_text(*fault, s, run.baseline.stats.tcp_gap),
            ]
        })
        .collect();
    out.push_str(&table(&header, &rows));
    let _ = writeln!(out, "({FIGURES})");
    if let Some((_, s)) = run.series.iter().find(|(f, _)| *f == Fault::HostDeath) {
        let part = |leader: bool| Series {
            fault: s.fault.clone(),
            rounds: s
                .measured()
                .filter(|r| r.leader_on_owner == Some(leader))
                .cloned()
                .collect(),
        };
        let (with, others) = (part(true), part(false));
        let _ = writeln!(
            out,
            "host death: the dead host also ran the Raft leader in {} of {} rounds (known gap: \
             the outage then includes a Raft election, 1-2 s timeouts): TCP {}; the {} other \
             rounds: TCP {}, ARP {} (min / median / max)",
            with.rounds.len(),
            s.measured().count(),
            spread(with.tcp()),
            others.rounds.len(),
            spread(others.tcp()),
            spread(others.arp()),
        );
    }
    let (answerers, holders) = run
        .series
        .iter()
        .map(|(_, s)| s.most_at_once())
        .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    let _ = writeln!(
        out,
        "most hosts at once over all rounds: {answerers} answering one ARP request, {holders} \
         holding (must be 1); over the whole pvefleet run: {} / {}{}",
        run.whole.max_answerers,
        run.whole.max_holders,
        run.whole
            .first_violation
            .as_ref()
            .map_or_else(String::new, |v| format!(" (first: {v})")),
    );
    out.push('\n');
    let named: Vec<(String, &Series)> = run
        .series
        .iter()
        .map(|(f, s)| (f.name().to_string(), s))
        .collect();
    out.push_str(&rounds_table(&named));
    out
}

/// Section 2: one keepalived configuration's faults.
pub fn keepalived(run: &KeepalivedRun) -> String {
    let priorities: Vec<String> = (0..run.hosts)
        .map(|i| KeepalivedBed::priority(i).to_string())
        .collect();
    let mut out = format!(
        "\n== 2. {}: {} hosts, priorities {}, all starting BACKUP, preemption on ==\n\
         without fault for {:.0} s: longest gap TCP {}, ARP {}; most answering / holding at once {}\n\n",
        run.settings.name(),
        run.hosts,
        priorities.join("/"),
        super::run::BASELINE.as_secs_f64(),
        ms(run.baseline.tcp_gap),
        ms(run.baseline.arp_gap),
        most(&run.baseline),
    );
    let header = [
        "FAULT",
        "ROUNDS (PLAYED OUT)",
        "TCP OUTAGE min / median / max",
        "ARP OUTAGE min / median / max",
        "RESTORE TCP max",
        "MOST ANSW/HOLD",
    ];
    let rows: Vec<Vec<String>> = run
        .series
        .iter()
        .map(|(fault, s)| {
            let (answerers, holders) = s.most_at_once();
            vec![
                fault.name().to_string(),
                rounds_cell(s),
                spread(s.tcp()),
                spread(s.arp()),
                s.restore_tcp_max().map_or_else(|| "-".into(), ms),
                format!("{answerers} / {holders}"),
            ]
        })
        .collect();
    out.push_str(&table(&header, &rows));
    let _ = writeln!(out, "({FIGURES})");
    let _ = writeln!(
        out,
        "(the restore restarts keepalived on h1, which preempts: its gap and any overlap are in \
         RESTORE TCP and MOST ANSW/HOLD; the random phase of 0-{} ms spans {:.0} % of the advert \
         interval)\n",
        MAX_DELAY.as_millis(),
        (MAX_DELAY.as_secs_f64() / run.settings.advert().as_secs_f64() * 100.0).min(100.0),
    );
    let named: Vec<(String, &Series)> = run
        .series
        .iter()
        .map(|(f, s)| (f.name().to_string(), s))
        .collect();
    out.push_str(&rounds_table(&named));
    out
}

/// Section 3: VRRP dropped between the hosts.
pub fn split_brain(pvefleet: &PvefleetRun, keepalived: &[KeepalivedRun]) -> String {
    let header = [
        "SYSTEM",
        "MOST ANSWERING ONE ARP REQUEST",
        "MOST HOLDING AT ONCE",
        "LONGEST TCP GAP",
        "FIRST OVERLAP",
    ];
    let row = |name: &str, s: &Stats| {
        vec![
            name.to_string(),
            s.max_answerers.to_string(),
            s.max_holders.to_string(),
            ms(s.tcp_gap),
            s.first_violation.clone().unwrap_or_else(|| "-".into()),
        ]
    };
    let mut rows = vec![row("pvefleet (must stay 1)", &pvefleet.split)];
    rows.extend(keepalived.iter().map(|k| row(k.settings.name(), &k.split)));
    format!(
        "\n== 3. split brain: IP protocol 112 dropped in and out on every host for {:.0} s ==\n{}",
        SPLIT_HOLD.as_secs_f64(),
        table(&header, &rows)
    )
}

/// Section 4: no fault, under the hog.
pub fn hog(run: &HogRun) -> String {
    let w = &run.watched;
    let epochs = w
        .epochs
        .map_or_else(|| "never read".into(), |(a, b)| format!("{a} -> {b}"));
    format!(
        "\n== 4. no spurious move under load: pvefleet, no fault, CPU hog ==\n\
         hog: {} busy threads ({} per core on {} cores), nice {}, {:.0} s; machine busy {:.1} %\n\
         ownership changes (VIP epoch, from `vip ls` every 1 s): {} (target 0); epoch {epochs}; \
         owners seen: {}; polls {} ({} failed)\n\
         longest outage: TCP {}, ARP {}; most answering / holding at once: {}\n",
        run.threads,
        run.threads / run.cores.max(1),
        run.cores,
        run.nice.map_or_else(|| "?".into(), |n| n.to_string()),
        w.length.as_secs_f64(),
        run.busy,
        w.moves,
        if w.owners.is_empty() {
            "none".into()
        } else {
            w.owners.join(", ")
        },
        w.polls.0,
        w.polls.1,
        ms(w.stats.tcp_gap),
        ms(w.stats.arp_gap),
        most(&w.stats),
    )
}

fn median_of(series: Option<&Series>) -> Option<Duration> {
    series.and_then(Series::tcp).map(|s| s.median)
}

fn ratio(theirs: Option<Duration>, ours: Option<Duration>) -> String {
    match (theirs, ours) {
        (Some(t), Some(o)) if !o.is_zero() => format!("{:.1}x", t.as_secs_f64() / o.as_secs_f64()),
        _ => "-".into(),
    }
}

/// Section 5: medians side by side.
pub fn summary(pvefleet: &PvefleetRun, keepalived: &[KeepalivedRun]) -> String {
    let counterpart = |fault: Fault| match fault {
        Fault::HostDeath => Some(KeepalivedFault::HostDeath),
        Fault::AgentTerm => Some(KeepalivedFault::GracefulStop),
        _ => None,
    };
    let mut header = vec!["FAULT (median TCP outage)".to_string(), "pvefleet".into()];
    for k in keepalived {
        header.push(k.settings.short().into());
        header.push("ratio k/p".into());
    }
    header.push("TARGET".into());
    let rows: Vec<Vec<String>> = pvefleet
        .series
        .iter()
        .map(|(fault, s)| {
            let ours = median_of(Some(s));
            let mut row = vec![
                fault.name().to_string(),
                ours.map_or_else(|| "-".into(), ms),
            ];
            for k in keepalived {
                let theirs = counterpart(*fault).and_then(|kf| {
                    median_of(k.series.iter().find(|(f, _)| *f == kf).map(|(_, s)| s))
                });
                row.push(theirs.map_or_else(|| "-".into(), ms));
                row.push(ratio(theirs, ours));
            }
            row.push(target_text(*fault, s, pvefleet.baseline.stats.tcp_gap));
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    format!(
        "\n== 5. summary: median client outage (TCP) per fault ==\n{}\
         keepalived rows: host death = master host death, agent SIGTERM = graceful stop; \
         keepalived has no counterpart for the others\n",
        table(&header, &rows)
    )
}
