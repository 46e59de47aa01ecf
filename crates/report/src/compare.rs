//! Kept in one file past 1,000 lines: the terminal summary, the HTML report and the JSON
//! share their row builders and column order; the training jobs' table is in
//! `compare/training.rs`.
//! Rendering of a comparison: the terminal summary, nccl-tests-style tables, the
//! HTML report and results.json. All three read the same [`CompareResults`], so
//! every number in the report is the number in the JSON.

use std::fmt::Write;

use lab::Collective;
use lab::advisor::Favours;
use lab::results::{CompareResults, VariantResult};

use crate::html::{Block, Document, Table, Tone};
use crate::svg::{Chart, Scale, Series, TickFormat, fmt_tick};

/// Width of the variant column: 44, or the longest label if longer.
fn label_width(r: &CompareResults) -> usize {
    r.variants
        .iter()
        .map(|v| v.label.chars().count())
        .max()
        .unwrap_or(0)
        .max(44)
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn favours(f: Favours) -> &'static str {
    match f {
        Favours::Infiniband => "InfiniBand",
        Favours::Rocev2 => "RoCEv2",
        Favours::Neither => "neither",
    }
}

mod training;
pub use training::training_text;
use training::{TRAINING_HEADER, training_notes, training_rows};

/// The one-screen summary: one line per variant, then the recommendation.
pub fn terminal_summary(r: &CompareResults) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "rdmalab compare: {} (seed {})", r.scenario, r.seed);
    let _ = writeln!(o, "cluster: {}", r.cluster);
    let bound = |k: lab::FabricKind| {
        r.variants
            .iter()
            .find(|v| v.kind == k && v.busbw_bound_gbs > 0.0)
            .map(|v| v.busbw_bound_gbs)
    };
    let _ = writeln!(
        o,
        "bound on ring all-reduce busbw, GB/s per NIC: InfiniBand {}, RoCEv2 {} (the smaller of each fabric's payload share at a 4096-byte MTU and the NIC's payload ceiling)",
        opt(bound(lab::FabricKind::Infiniband).or(Some(r.busbw_bound_gbs)), 1),
        opt(bound(lab::FabricKind::Rocev2), 1)
    );
    let _ = writeln!(o);
    // The variant column fits the longest label (user scenarios name their own).
    let w = label_width(r);
    let _ = writeln!(
        o,
        "{:<w$} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>11} {:>9} {:>8}",
        "variant", "busbw", "p50 µs", "p99 µs", "p99.9 µs", "drops", "retrans", "pause µs", "CNPs", "deadlk"
    );
    for v in &r.variants {
        if let Some(why) = &v.refused {
            let _ = writeln!(o, "{:<w$} refused: {}", v.label, why);
            continue;
        }
        let l = v.latency.as_ref();
        let _ = writeln!(
            o,
            "{:<w$} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>11.1} {:>9} {:>8}",
            v.label,
            opt(v.large_ring_busbw(), 1),
            opt(l.map(|l| l.p50_us), 2),
            opt(l.map(|l| l.p99_us), 2),
            opt(l.map(|l| l.p999_us), 2),
            v.counters.drops,
            v.counters.retransmissions,
            v.counters.pause_time_us,
            v.counters.cnps,
            v.counters.deadlocks
        );
    }
    let _ = writeln!(
        o,
        "\nbusbw: ring all-reduce at the largest size, GB/s per NIC (nccl-tests formula); p50/p99/p99.9: one-way latency of a {}-byte probe from post to arrival during the ring, NICs and fabric (the published NICs' latency, or the calibration file's), as ib_write_lat reports it across the same switches",
        r.spec.workload.probe.bytes
    );
    o.push_str(&engine_lines(r));
    o.push_str(&endpoint_lines(r));
    o.push_str(&spread_text(r));
    o.push_str(&training_text(r));
    o.push_str(&failure_text(r));
    o.push_str(&tcp_summary(r));
    o.push_str(&verdict_text(&r.advice));
    for t in &r.advice.tco {
        let _ = writeln!(o, "  {:?} {:.0}-year TCO: ${:.2}M", t.tech, t.years, t.total_usd / 1e6);
    }
    o
}

/// A figure's short name: "all-reduce (tree) busbw" for "all-reduce (tree) busbw
/// at the largest size, GB/s per NIC".
fn short_figure(f: &str) -> (&str, &str) {
    let unit = f.rsplit_once(", ").map_or("", |(_, u)| u);
    let name = f.split(" at the largest size").next().unwrap_or(f);
    let name = name.rsplit_once(", ").map_or(name, |(n, _)| n);
    (name, unit)
}

/// The headline figures over the seeds, where they differ (empty for one seed).
pub fn spread_text(r: &CompareResults) -> String {
    let mut o = String::new();
    if r.seeds.len() < 2 {
        return o;
    }
    let seeds: Vec<String> = r.seeds.iter().map(u64::to_string).collect();
    let _ = writeln!(
        o,
        "\nover seeds {} (min–median–max where they differ):",
        seeds.join(", ")
    );
    for vs in &r.spread {
        let label = r
            .variants
            .iter()
            .find(|v| v.id == vs.id)
            .map_or(vs.id.as_str(), |v| v.label.as_str());
        let differ: Vec<String> = vs
            .figures
            .iter()
            .filter(|f| f.max > f.min)
            .map(|f| {
                let (name, unit) = short_figure(&f.figure);
                let p = if f.max >= 100.0 { 0 } else { 2 };
                format!("{name} {:.p$}–{:.p$}–{:.p$} {unit}", f.min, f.median, f.max)
                    .trim_end()
                    .to_string()
            })
            .collect();
        let same = vs.figures.len() - differ.len();
        let tail = match (differ.is_empty(), same) {
            (true, n) => format!("all {n} figures equal at every seed"),
            (false, 0) => String::new(),
            (false, n) => format!("; {n} other figures equal at every seed"),
        };
        let _ = writeln!(o, "  {label}: {}{tail}", differ.join("; "));
    }
    o
}

/// The spine link failure, per variant (empty when none was studied), and each
/// variant's recovery and failure cost.
pub fn failure_text(r: &CompareResults) -> String {
    use lab::results::FailureOutcome;
    let mut o = String::new();
    match &r.failure {
        None => {}
        Some(FailureOutcome::NotApplicable(why)) => {
            let _ = writeln!(o, "\nspine link failure: none studied: {why}");
        }
        Some(FailureOutcome::Study(how)) => {
            let _ = writeln!(o, "\nspine link failure: {how}");
        }
    }
    let Some(rs) = &r.recovery else { return o };
    let w = label_width(r);
    let _ = writeln!(
        o,
        "failures: link {} down (our SM: {} SMPs, {} LFT blocks changed; Ethernet: FRR's BFD 3 × 300 ms); interruptions: Llama 3's network rate, NCCL's {:.1} s timeout, a restart from the last checkpoint",
        rs.link, rs.smps, rs.lft_blocks_sent, rs.nccl_timeout_s
    );
    let _ = writeln!(
        o,
        "{:<w$} {:>11} {:>6} {:>13} {:>15} {:>11} {:>12} {:>9}",
        "variant", "recovery ms", "conns", "GPU-h/link", "GPU-h/interrupt", "interr/mo", "GPU-h/month", "$/month"
    );
    for v in &rs.variants {
        let label = r
            .variants
            .iter()
            .find(|x| x.id == v.id)
            .map_or(v.id.as_str(), |x| x.label.as_str());
        let _ = writeln!(
            o,
            "{:<w$} {:>11.2} {:>6} {:>13.4} {:>15.1} {:>11.3} {:>12.1} {:>9.0}",
            label,
            v.recovery_s * 1e3,
            v.connections_through_link,
            v.gpu_hours_per_link_failure,
            v.gpu_hours_per_interruption,
            v.interruptions_per_month,
            v.lost_gpu_hours_per_month,
            v.usd_per_month
        );
    }
    let _ = writeln!(
        o,
        "recovery: the link's fault to new routes (InfiniBand: our SM's sweep, SMPs × {:.2} µs measured per SMP, no SMP wire time; OpenSM over ibsim took 247 ms at 648 CAs); GPU-h/link: the ring all-reduce's connections through it stall that long on every GPU; GPU-h/interrupt: a failure that kills the job (NCCL's timeout, repair, restart, half a checkpoint interval); `rdmalab failure --fault …` studies other faults",
        rs.per_smp_s * 1e6
    );
    o
}

/// The recommendation with its confidence, reasons, risk and what would change it.
fn verdict_text(a: &lab::Advice) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nrecommendation: {} (confidence {}: {})",
        favours(a.recommendation),
        confidence(a.confidence),
        a.confidence_why
    );
    for reason in &a.reasons {
        let _ = writeln!(o, "  - {reason}");
    }
    let _ = writeln!(o, "misconfiguration risk {:.2}: {}", a.risk.probability, a.risk.source);
    let _ = writeln!(o, "what would change it:");
    for s in &a.sensitivity {
        let _ = writeln!(o, "  {} {}: {}", if s.flips { "*" } else { "-" }, s.input, s.finding);
    }
    o
}

/// "a → b" for a quiet and a loaded figure.
fn before_after(quiet: Option<f64>, loaded: Option<f64>, prec: usize) -> String {
    format!("{} → {}", opt(quiet, prec), opt(loaded, prec))
}

/// Why a variant carries no background TCP (the scenario asked for some).
fn no_tcp_reason(v: &VariantResult) -> &'static str {
    match v.kind {
        lab::FabricKind::Infiniband => "none: InfiniBand has no lossy Ethernet class for it to share",
        lab::FabricKind::Ipoib => "none: IPoIB is itself the TCP on this fabric",
        lab::FabricKind::Rocev1 => "none: RoCEv1 is refused on this routed fabric",
        lab::FabricKind::Rocev2 => "none",
    }
}

/// The background-TCP section of the terminal summary (empty when the scenario
/// runs none).
fn tcp_summary(r: &CompareResults) -> String {
    let w = label_width(r);
    let mut o = String::new();
    let Some(t0) = r.variants.iter().find_map(|v| v.tcp.as_ref()) else {
        return o;
    };
    let _ = writeln!(
        o,
        "\nbackground TCP during the collectives: {:.2} of line rate per NIC ({:.1} Gb/s offered per connection), {}, {} connections, DSCP 0 (lossy class)",
        t0.load, t0.offered_gbps_per_flow, t0.cc, t0.flows
    );
    let _ = writeln!(
        o,
        "{:<w$} {:>9} {:>9} {:>9} {:>9} {:>17} {:>19}",
        "variant", "Gb/s", "drops", "retrans", "timeouts", "busbw quiet→TCP", "p99 µs quiet→TCP"
    );
    for v in &r.variants {
        if v.refused.is_some() && v.kind != lab::FabricKind::Rocev1 {
            continue;
        }
        let Some(t) = &v.tcp else {
            let _ = writeln!(o, "{:<w$} {}", v.label, no_tcp_reason(v));
            continue;
        };
        let _ = writeln!(
            o,
            "{:<w$} {:>9.2} {:>9} {:>9} {:>9} {:>17} {:>19}",
            v.label,
            t.goodput_gbps_per_flow,
            t.drops,
            t.retransmissions,
            t.timeouts,
            before_after(t.quiet_busbw_gbs, v.large_ring_busbw(), 1),
            before_after(t.quiet_p99_us, v.latency.as_ref().map(|l| l.p99_us), 2)
        );
    }
    let _ = writeln!(
        o,
        "Gb/s: TCP goodput per connection; quiet: the largest ring all-reduce run again without TCP"
    );
    o
}

/// An nccl-tests-style table for one variant and collective.
pub fn nccl_table(v: &VariantResult, op: Collective) -> String {
    let mut o = String::new();
    let Some(c) = v.collectives.iter().find(|c| c.op == op) else {
        return o;
    };
    let _ = writeln!(o, "# {} — {}", v.label, op.name());
    if op == Collective::AllReduceSharp {
        // the switches reduce: the NIC carries its shard once each way
        let _ = writeln!(
            o,
            "# busbw by nccl-tests' formula, algbw × 2(n−1)/n (each NIC sends its shard once, so it exceeds the wire); NIC GB/s: busbw ÷ NICs per server, what a ring's NIC would carry for the same time"
        );
    }
    let _ = writeln!(
        o,
        "#{:>12} {:>12} {:>10} {:>10} {:>12}",
        "size", "time", "algbw", "busbw", "NIC GB/s"
    );
    let _ = writeln!(
        o,
        "#{:>12} {:>12} {:>10} {:>10} {:>12}",
        "(B)", "(us)", "(GB/s)", "(GB/s)", "(GB/s)"
    );
    for row in &c.rows {
        let _ = writeln!(
            o,
            " {:>12} {:>12.1} {:>10.2} {:>10.2} {:>12.2}",
            row.size, row.time_us, row.algbw, row.busbw, row.busbw_per_nic
        );
    }
    o
}

fn busbw_chart(r: &CompareResults, op: Collective) -> Chart {
    Chart {
        id: format!("busbw-{}", op.id()),
        title: format!("{} bus bandwidth per NIC", op.name()),
        x_label: "message size".into(),
        y_label: "busbw per NIC (GB/s)".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        x_fmt: TickFormat::Bytes,
        y_fmt: TickFormat::Number,
        series: r
            .variants
            .iter()
            .filter(|v| v.refused.is_none())
            .filter_map(|v| {
                let c = v.collectives.iter().find(|c| c.op == op)?;
                Some(Series {
                    name: v.label.clone(),
                    points: c.rows.iter().map(|x| (x.size as f64, x.busbw_per_nic)).collect(),
                    step: false,
                })
            })
            .collect(),
    }
}

/// The self-contained HTML report.
/// A decision-table value: money as money, small values with their decimals.
fn value(v: Option<f64>) -> String {
    match v {
        None => "not measured".into(),
        Some(x) if x.abs() >= 1e5 => format!("${:.2}M", x / 1e6),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

fn basis(b: lab::Basis) -> &'static str {
    match b {
        lab::Basis::Measured => "measured",
        lab::Basis::Unverified => "unverified inputs",
        lab::Basis::Answers => "your answers",
        lab::Basis::Cited => "cited prices",
    }
}

fn confidence(c: lab::Confidence) -> &'static str {
    match c {
        lab::Confidence::High => "high",
        lab::Confidence::Medium => "medium",
        lab::Confidence::Low => "low",
    }
}

/// The answer first: the recommendation, its confidence, its strongest
/// reasons, and what would change it.
fn verdict_blocks(a: &lab::Advice) -> Vec<Block> {
    let mut v = vec![
        Block::Heading("Verdict".into()),
        Block::Paragraph(format!(
            "Recommended: {} (confidence {}: {}).",
            favours(a.recommendation),
            confidence(a.confidence),
            a.confidence_why
        )),
        Block::List(a.reasons.clone()),
    ];
    let flips: Vec<String> = a
        .sensitivity
        .iter()
        .map(|s| format!("{}{}: {}", if s.flips { "flips — " } else { "" }, s.input, s.finding))
        .collect();
    v.push(Block::Paragraph("What would change it:".into()));
    v.push(Block::List(flips));
    v
}

pub fn html(r: &CompareResults) -> String {
    let mut blocks = verdict_blocks(&r.advice);
    blocks.push(Block::Heading("Summary".into()));
    let mut rows = Vec::new();
    for v in &r.variants {
        let lat = v.latency.as_ref();
        let bus = v.large_ring_busbw();
        let tone = |bad: bool| if bad { Tone::Bad } else { Tone::Plain };
        rows.push(vec![
            (v.label.clone(), Tone::Plain),
            (
                v.refused.clone().map_or(opt(bus, 1), |w| format!("refused: {w}")),
                if v.refused.is_some() {
                    Tone::Warn
                } else if bus.is_some_and(|b| b >= 0.95 * v.busbw_bound_gbs) {
                    Tone::Good
                } else {
                    Tone::Plain
                },
            ),
            (opt(lat.map(|l| l.p50_us), 2), Tone::Plain),
            (opt(lat.map(|l| l.p99_us), 2), Tone::Plain),
            (opt(lat.map(|l| l.p999_us), 2), Tone::Plain),
            (opt(lat.map(|l| l.jitter_us), 2), Tone::Plain),
            (v.counters.drops.to_string(), tone(v.counters.drops > 0)),
            (
                v.counters.retransmissions.to_string(),
                tone(v.counters.retransmissions > 0),
            ),
            (format!("{:.1}", v.counters.pause_time_us), Tone::Plain),
            (v.counters.ecn_marks.to_string(), Tone::Plain),
            (v.counters.cnps.to_string(), Tone::Plain),
            (
                (v.counters.deadlocks + v.counters.storms).to_string(),
                tone(v.counters.deadlocks + v.counters.storms > 0),
            ),
        ]);
    }
    let engines = engine_lines(r) + &endpoint_lines(r);
    if !engines.is_empty() {
        blocks.push(Block::List(
            engines.lines().filter(|l| !l.is_empty()).map(str::to_string).collect(),
        ));
    }
    blocks.push(Block::Table(Table {
        id: "summary".into(),
        caption: format!(
            "Per variant (busbw: ring all-reduce at the largest size, GB/s per NIC, against the link-rate bound of the variant's own fabric; p50/p99/p99.9 and jitter: one-way latency of a {}-byte probe from post to arrival during the ring, NICs and fabric, as ib_write_lat reports it across the same switches)",
            r.spec.workload.probe.bytes
        ),
        header: [
            "variant",
            "busbw",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "jitter µs",
            "drops",
            "retransmissions",
            "PFC pause µs",
            "ECN marks",
            "CNPs",
            "deadlock/storm",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    }));
    if r.seeds.len() > 1 {
        let seeds: Vec<String> = r.seeds.iter().map(u64::to_string).collect();
        let mut rows = Vec::new();
        for vs in &r.spread {
            let label = r
                .variants
                .iter()
                .find(|v| v.id == vs.id)
                .map_or(vs.id.clone(), |v| v.label.clone());
            for f in &vs.figures {
                let tone = if f.max > f.min { Tone::Warn } else { Tone::Plain };
                rows.push(vec![
                    (label.clone(), Tone::Plain),
                    (f.figure.clone(), Tone::Plain),
                    (format!("{:.2}", f.min), tone),
                    (format!("{:.2}", f.median), tone),
                    (format!("{:.2}", f.max), tone),
                    (
                        f.values
                            .iter()
                            .map(|x| format!("{x:.2}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        Tone::Plain,
                    ),
                ]);
            }
        }
        blocks.push(Block::Heading("Spread over seeds".into()));
        blocks.push(Block::Table(Table {
            id: "spread".into(),
            caption: format!(
                "Each variant's headline figures at seeds {} (the tables above show seed {}); the verdict reads the medians and counts a gap only where the ranges part",
                seeds.join(", "),
                r.seed
            ),
            header: ["variant", "figure", "min", "median", "max", "per seed"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows,
        }));
    }
    let train = training_rows(r);
    if !train.is_empty() {
        blocks.push(Block::Heading("Training jobs".into()));
        blocks.push(Block::Table(Table {
            id: "training".into(),
            caption: "One iteration of each job on every variant, the jobs side by side".into(),
            header: TRAINING_HEADER.iter().map(|s| s.to_string()).collect(),
            rows: train
                .into_iter()
                .map(|row| {
                    let mut row: Vec<(String, Tone)> = row.into_iter().map(|c| (c, Tone::Plain)).collect();
                    row.resize(TRAINING_HEADER.len(), (String::new(), Tone::Plain));
                    row
                })
                .collect(),
        }));
        blocks.push(Block::List(training_notes(r)));
    }
    if let Some(t0) = r.variants.iter().find_map(|v| v.tcp.as_ref()) {
        blocks.push(Block::Heading("Background TCP".into()));
        blocks.push(Block::Paragraph(format!(
            "Every NIC of the RoCEv2 variants runs one TCP connection ({}) on DSCP 0, a lossy class that shares switch buffers, links and NIC ports with RDMA, offering {:.2} of line rate ({:.1} Gb/s) during the collectives. \"Quiet\" is the largest ring all-reduce with its probes run again without TCP.",
            t0.cc, t0.load, t0.offered_gbps_per_flow
        )));
        let mut rows = Vec::new();
        for v in &r.variants {
            let Some(t) = &v.tcp else {
                if v.refused.is_none() || v.kind == lab::FabricKind::Rocev1 {
                    let mut row = vec![(v.label.clone(), Tone::Plain), (no_tcp_reason(v).into(), Tone::Plain)];
                    row.extend((0..8).map(|_| (String::new(), Tone::Plain)));
                    rows.push(row);
                }
                continue;
            };
            let lat = v.latency.as_ref();
            let tone = |bad: bool| if bad { Tone::Bad } else { Tone::Plain };
            rows.push(vec![
                (v.label.clone(), Tone::Plain),
                (format!("{:.2}", t.goodput_gbps_per_flow), Tone::Plain),
                (t.drops.to_string(), tone(t.drops > 0)),
                (t.retransmissions.to_string(), tone(t.retransmissions > 0)),
                (t.timeouts.to_string(), tone(t.timeouts > 0)),
                (t.ecn_reductions.to_string(), Tone::Plain),
                (opt(t.quiet_busbw_gbs, 1), Tone::Plain),
                (opt(v.large_ring_busbw(), 1), Tone::Plain),
                (opt(t.quiet_p99_us, 2), Tone::Plain),
                (opt(lat.map(|l| l.p99_us), 2), Tone::Plain),
            ]);
        }
        blocks.push(Block::Table(Table {
            id: "tcp".into(),
            caption: "Background TCP per variant (goodput per connection; busbw GB/s per NIC and probe p99 without and with TCP)".into(),
            header: [
                "variant",
                "TCP goodput Gb/s",
                "TCP drops",
                "TCP retransmissions",
                "TCP timeouts",
                "ECN window cuts",
                "busbw quiet",
                "busbw with TCP",
                "p99 µs quiet",
                "p99 µs with TCP",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
        }));
    }
    blocks.push(Block::Heading("Decision table".into()));
    blocks.push(Block::Paragraph(format!(
        "Each row compares one metric on both fabrics and names the rule that picks a winner and where the rule comes from. RoCEv2's values are those of its best variant as designed, weighted with its misconfigured outcome at the misconfiguration risk ({:.2}: {}).",
        r.advice.risk.probability, r.advice.risk.source
    )));
    blocks.push(Block::Table(Table {
        id: "decision".into(),
        caption: "Decision table, filled with this run's evidence".into(),
        header: [
            "aspect",
            "metric",
            "InfiniBand",
            "RoCEv2",
            "rule (source)",
            "basis",
            "evidence from this run",
            "favours",
            "weight",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: r
            .advice
            .table
            .iter()
            .map(|row| {
                let t = match row.favours {
                    Favours::Infiniband | Favours::Rocev2 => Tone::Good,
                    Favours::Neither => Tone::Plain,
                };
                vec![
                    (row.aspect.clone(), Tone::Plain),
                    (row.metric.clone(), Tone::Plain),
                    (value(row.infiniband_value), Tone::Plain),
                    (value(row.rocev2_value), Tone::Plain),
                    (format!("{} ({})", row.threshold, row.threshold_source), Tone::Plain),
                    (basis(row.basis).into(), Tone::Plain),
                    (row.evidence.clone(), Tone::Plain),
                    (favours(row.favours).into(), t),
                    (row.weight.to_string(), Tone::Plain),
                ]
            })
            .collect(),
    }));
    for t in &r.advice.tco {
        let mut rows: Vec<Vec<(String, Tone)>> = t
            .bom
            .iter()
            .map(|b| {
                vec![
                    (b.item.clone(), Tone::Plain),
                    (b.qty.to_string(), Tone::Plain),
                    (format!("{:.0}", b.unit_usd), Tone::Plain),
                    (format!("{:.0}", b.total_usd), Tone::Plain),
                ]
            })
            .collect();
        for (name, v) in [
            ("capital (sum of the above)", t.capex_usd),
            ("software", t.software_usd),
            ("staffing", t.staffing_usd),
            ("outage risk", t.outage_risk_usd),
            ("total", t.total_usd),
        ] {
            rows.push(vec![
                (name.into(), Tone::Plain),
                (String::new(), Tone::Plain),
                (String::new(), Tone::Plain),
                (format!("{v:.0}"), Tone::Plain),
            ]);
        }
        blocks.push(Block::Table(Table {
            id: format!("tco-{:?}", t.tech).to_lowercase(),
            caption: format!("{:?}: {:.0}-year total cost of ownership (USD)", t.tech, t.years),
            header: vec!["item".into(), "qty".into(), "unit".into(), "total".into()],
            rows,
        }));
    }
    blocks.push(Block::Heading("Bus bandwidth by message size".into()));
    let ops: Vec<Collective> = {
        let mut v: Vec<Collective> = r
            .variants
            .iter()
            .flat_map(|v| v.collectives.iter().map(|c| c.op))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    for op in ops {
        blocks.push(Block::Chart(busbw_chart(r, op)));
    }
    blocks.push(Block::Heading("Small-message latency during the collective".into()));
    blocks.push(Block::Chart(Chart {
        id: "latency-cdf".into(),
        title: "latency CDF of the small-message probe".into(),
        x_label: "latency (µs)".into(),
        y_label: "fraction of probes".into(),
        x_scale: Scale::Log10,
        y_scale: Scale::Linear,
        x_fmt: TickFormat::Number,
        y_fmt: TickFormat::Percent,
        series: r
            .variants
            .iter()
            .filter_map(|v| {
                Some(Series {
                    name: v.label.clone(),
                    points: v.latency.as_ref()?.cdf.clone(),
                    step: true,
                })
            })
            .collect(),
    }));
    blocks.push(Block::Heading("Queues and pauses over time".into()));
    let mut names: Vec<(String, String)> = r
        .variants
        .iter()
        .flat_map(|v| v.timeseries.iter().map(|t| (t.name.clone(), t.unit.clone())))
        .collect();
    names.sort();
    names.dedup();
    for (name, unit) in names {
        blocks.push(Block::Chart(Chart {
            id: format!("ts-{}", name.replace(' ', "-")),
            title: name.clone(),
            x_label: "time (µs)".into(),
            y_label: unit,
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            x_fmt: TickFormat::Number,
            y_fmt: TickFormat::Number,
            series: r
                .variants
                .iter()
                .filter_map(|v| {
                    let t = v.timeseries.iter().find(|t| t.name == name)?;
                    Some(Series {
                        name: v.label.clone(),
                        points: t.points.clone(),
                        step: true,
                    })
                })
                .collect(),
        }));
    }
    blocks.push(Block::Heading("Per-variant detail".into()));
    for v in &r.variants {
        let mut text = format!("{}\nbring-up: {}\n", v.label, v.bring_up);
        if let Some(i) = &v.incast {
            let _ = writeln!(
                text,
                "incast {}:1 × {}: {:.1} µs, {:.2} GB/s at the receiver, {} drops, {} retransmissions",
                i.senders,
                fmt_tick(TickFormat::Bytes, i.bytes_each as f64),
                i.completion_us,
                i.goodput_gbs,
                i.drops,
                i.retransmissions
            );
        }
        if let Some(t) = &v.tcp {
            let reasons: Vec<String> = t.drop_reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            let _ = writeln!(
                text,
                "background TCP: {} connections at {:.1} Gb/s offered, {:.2} Gb/s goodput each; {} drops ({}), {} retransmissions ({} fast retransmits, {} timeouts), {} ECN window cuts",
                t.flows,
                t.offered_gbps_per_flow,
                t.goodput_gbps_per_flow,
                t.drops,
                if reasons.is_empty() {
                    "none".into()
                } else {
                    reasons.join(", ")
                },
                t.retransmissions,
                t.fast_retransmits,
                t.timeouts,
                t.ecn_reductions
            );
        }
        for f in &v.findings {
            let _ = writeln!(text, "finding: {f}");
        }
        let _ = writeln!(
            text,
            "simulated {:.1} µs in {:.0} ms wall: {} events, {} packet-link hops",
            v.effort.simulated_us, v.effort.wall_ms, v.effort.events, v.effort.packet_hops
        );
        for c in &v.collectives {
            text.push_str(&nccl_table(v, c.op));
        }
        blocks.push(Block::Pre(text));
    }
    Document {
        title: format!("rdmalab compare — {}", r.scenario),
        subtitle: format!("{} · seed {}", r.cluster, r.seed),
        blocks,
    }
    .render()
}

/// The results as pretty JSON (the body of results.json).
pub fn json(r: &CompareResults) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\": \"cannot serialise results: {e}\"}}"))
}

/// The key results.json opens with: `compare` replaces only files that carry it
/// (or [`HTML_MARK`]).
pub const RESULTS_MARK: &str = "\"generator\": \"rdmalab compare\"";

/// The first line of report.html, for the same purpose as [`RESULTS_MARK`].
pub const HTML_MARK: &str = "<!-- generator: rdmalab compare -->";

/// results.json as `compare` writes it (and prints it for `--json`): [`json`]
/// with [`RESULTS_MARK`] as its first key.
pub fn results_file(r: &CompareResults) -> String {
    json(r).replacen('{', &format!("{{\n  {RESULTS_MARK},"), 1)
}

/// report.html as `compare` writes it: [`HTML_MARK`], then [`html`].
pub fn html_file(r: &CompareResults) -> String {
    format!("{HTML_MARK}\n{}", html(r))
}

/// Whether `text` is a file `compare` wrote: it carries either mark.
pub fn written_by_compare(text: &str) -> bool {
    text.contains(RESULTS_MARK) || text.contains(HTML_MARK)
}

/// The advisor's output for the terminal: the decision table, the TCO and the
/// recommendation. `measured` says whether evidence from a comparison was given.
pub fn advice_text(a: &lab::Advice, measured: bool) -> String {
    let mut o = String::new();
    if !measured {
        let _ = writeln!(
            o,
            "note: no results.json given — rows show your answers and the TCO only; run `rdmalab compare` for measured evidence\n"
        );
    }
    let _ = writeln!(
        o,
        "answers: skills {:?}, Ethernet estate {:?}, budget {:?}, sites {}\n",
        a.answers.skills, a.answers.ethernet_estate, a.answers.budget, a.answers.sites
    );
    for row in &a.table {
        let _ = writeln!(
            o,
            "{} — favours {} (weight {})",
            row.aspect,
            favours(row.favours),
            row.weight
        );
        let _ = writeln!(o, "    InfiniBand: {}", row.infiniband);
        let _ = writeln!(o, "    RoCEv2:     {}", row.rocev2);
        let _ = writeln!(
            o,
            "    metric:     {} — InfiniBand {}, RoCEv2 {}",
            row.metric,
            value(row.infiniband_value),
            value(row.rocev2_value)
        );
        let _ = writeln!(
            o,
            "    rule:       {} ({}); basis: {}",
            row.threshold,
            row.threshold_source,
            basis(row.basis)
        );
        let _ = writeln!(o, "    this run:   {}", row.evidence);
    }
    let _ = writeln!(o);
    for t in &a.tco {
        let _ = writeln!(
            o,
            "{:?}: {:.0}-year TCO ${:.2}M = capital ${:.2}M + software ${:.2}M + staffing ${:.2}M + outage risk ${:.2}M",
            t.tech,
            t.years,
            t.total_usd / 1e6,
            t.capex_usd / 1e6,
            t.software_usd / 1e6,
            t.staffing_usd / 1e6,
            t.outage_risk_usd / 1e6
        );
        for b in &t.bom {
            let _ = writeln!(
                o,
                "    {:>6} × {:<44} ${:>10.0}  = ${:>12.0}",
                b.qty, b.item, b.unit_usd, b.total_usd
            );
        }
    }
    o.push_str(&verdict_text(a));
    o
}

/// Which engine produced each variant's numbers, one line per variant, when the
/// scenario asked for another engine than the packet level (empty otherwise).
pub fn engine_lines(r: &CompareResults) -> String {
    let mut o = String::new();
    for v in &r.variants {
        if let Some(e) = &v.engine {
            let name = match e.engine {
                lab::scenario::EngineRan::Packet => "packet level",
                lab::scenario::EngineRan::Flow => "flow level",
            };
            let _ = writeln!(o, "engine: {} at {name} ({})", v.id, e.why);
            for h in &e.handed_over {
                let job = match (h.op, h.size) {
                    (Some(op), Some(size)) => format!("{} {}", op.name(), lab::compare::human_bytes(size)),
                    _ => "the incast".to_string(),
                };
                let _ = writeln!(o, "engine: {} ran {job} packet by packet: {}", v.id, h.why);
            }
        }
    }
    o
}

/// Where the NIC latencies came from: a calibration file, else the published
/// NICs of `lab::endpoints`.
pub fn endpoint_lines(r: &CompareResults) -> String {
    let mut o = String::new();
    let Some(c) = &r.calibration else {
        if !r.nics.is_empty() {
            let each: Vec<String> = r
                .nics
                .iter()
                .map(|m| {
                    format!(
                        "{} {:.0} ns one way, payload ceiling {:.1}% of line",
                        m.fabric, m.one_way_ns, m.payload_ceiling_pct
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "endpoints: the published NICs (sources in results.json, nics): {}",
                each.join("; ")
            );
        }
        return o;
    };
    let one = |name: &str, l: Option<lab::results::NicLatency>| match l {
        Some(l) => format!(
            "{name} NIC send {:.1} ns, receive {:.1} ns",
            l.tx_ps as f64 / 1e3,
            l.rx_ps as f64 / 1e3
        ),
        None => format!("{name} not in the file (the published NIC's)"),
    };
    let sw = |name: &str, ps: Option<u64>| {
        ps.map_or(String::new(), |ps| format!("; {name} switch {:.1} ns", ps as f64 / 1e3))
    };
    let _ = writeln!(
        o,
        "endpoints: from the calibration file {}: {}; {}{}{}; applied to {}",
        c.source,
        one("InfiniBand", c.infiniband),
        one("RoCEv2", c.rocev2),
        sw("InfiniBand", c.infiniband_switch_ps),
        sw("Ethernet", c.rocev2_switch_ps),
        if c.applied_to.is_empty() {
            "no variant".to_string()
        } else {
            c.applied_to.join(", ")
        }
    );
    if c.infiniband.is_some() != c.rocev2.is_some() {
        let _ = writeln!(
            o,
            "endpoints: only one fabric is calibrated, so probe latencies of the two fabrics are not like for like"
        );
    }
    o
}

/// The closing line of `compare`: where the report and the results went.
pub fn wrote_line(html: &std::path::Path, json: &std::path::Path) -> String {
    format!("\nwrote {} and {}\n", html.display(), json.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 servers × 2 GPUs, InfiniBand against tuned RoCEv2, one collective.
    const SMALL: &str = r#"
name = "tiny"
seed = 7

[cluster]
servers = 4
gpus_per_server = 2
nic_gbps = 400
radix = 16

[workload]
collectives = ["all-reduce-ring"]
sizes = [1048576]

[[variants]]
id = "ib"
label = "InfiniBand NDR"
fabric = { kind = "infiniband", engines = ["ftree"] }

[[variants]]
id = "roce-tuned"
label = "RoCEv2 tuned"
fabric = { kind = "rocev2", pfc = true, dcqcn = "nvidia-cx", ecn = true }
"#;

    fn results() -> CompareResults {
        let s = lab::Scenario::from_toml(SMALL, "tiny.toml").unwrap();
        lab::compare::run(&s, &mut |_| {}).unwrap()
    }

    #[test]
    fn results_file_opens_with_the_mark_and_parses_back() {
        let r = results();
        let text = results_file(&r);
        assert!(
            text.starts_with("{\n  \"generator\": \"rdmalab compare\",\n  \""),
            "{}",
            &text[..80]
        );
        assert!(written_by_compare(&text));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["generator"], "rdmalab compare");
        assert_eq!(v["variants"].as_array().unwrap().len(), 2);
        // advise reads results.json back, the mark notwithstanding.
        let back: CompareResults = serde_json::from_str(&text).unwrap();
        assert_eq!(back.variants.len(), 2);
        assert_eq!(text.replacen(&format!("\n  {RESULTS_MARK},"), "", 1), json(&r));
    }

    #[test]
    fn html_file_opens_with_the_mark() {
        let r = results();
        let h = html_file(&r);
        assert!(h.starts_with("<!-- generator: rdmalab compare -->\n"), "{}", &h[..80]);
        assert!(written_by_compare(&h));
        assert!(h.contains("InfiniBand NDR") && h.contains("RoCEv2 tuned"));
        assert!(!written_by_compare("{\"variants\": []}"));
        assert!(!written_by_compare("<html>generator: someone else</html>"));
    }
}
