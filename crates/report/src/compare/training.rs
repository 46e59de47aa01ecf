//! The training jobs' table and notes, for the terminal and the HTML report.

use std::fmt::Write as _;

use lab::CompareResults;

/// Seconds in the unit that reads best: "4.711 s", "81.2 ms".
fn secs(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.3} s")
    } else {
        format!("{:.2} ms", x * 1e3)
    }
}

/// Rows of the training table: per variant and job, the iteration, its gap to
/// the ideal network, throughput, exposed communication, the operation that
/// costs most and its port, and the packet level's counts.
pub(super) fn training_rows(r: &CompareResults) -> Vec<Vec<String>> {
    let Some(t) = &r.training else { return Vec::new() };
    let mut rows = Vec::new();
    for v in &t.variants {
        if let Some(why) = &v.refused {
            rows.push(vec![v.label.clone(), format!("refused: {why}")]);
            continue;
        }
        for j in &v.jobs {
            let spread = r
                .training_spread
                .iter()
                .find(|s| s.variant == v.id && s.job == j.job)
                .map_or(String::new(), |s| {
                    format!("{}–{}", secs(s.iteration.min), secs(s.iteration.max))
                });
            rows.push(vec![
                v.label.clone(),
                j.job.clone(),
                secs(j.iteration_s),
                spread,
                format!("{:+.2}%", j.over_ideal_pct),
                format!("{:.0}", j.tokens_per_s),
                format!("{:.1}", j.tflops_per_gpu),
                secs(j.exposed_comm_s),
                j.slowest.as_ref().map_or("-".into(), |s| {
                    format!(
                        "{} {:.2}x at {}",
                        s.label,
                        s.fabric_s / s.ideal_s,
                        s.port.as_deref().unwrap_or("-")
                    )
                }),
                j.drops.to_string(),
                format!("{:.0}", j.pause_us),
                j.cnps.to_string(),
            ]);
        }
    }
    rows
}

pub(super) const TRAINING_HEADER: [&str; 12] = [
    "variant",
    "job",
    "iteration",
    "over seeds",
    "vs ideal",
    "tokens/s",
    "TFLOP/s/GPU",
    "exposed comm",
    "slowest op (× ideal) at port",
    "drops",
    "pause µs",
    "CNPs",
];

/// What the training table's columns measure, and how the jobs ran.
pub(super) fn training_notes(r: &CompareResults) -> Vec<String> {
    let Some(t) = &r.training else { return Vec::new() };
    let mut o = Vec::new();
    for j in &t.jobs {
        o.push(format!(
            "{}: {} on {} GPUs ({}), {}; {} tokens per iteration, {} on the ideal network",
            j.name,
            j.model,
            j.gpus,
            j.parallel,
            j.placement,
            j.tokens,
            secs(j.ideal_s)
        ));
    }
    o.push(format!(
        "pricing: {}; compute at kernel efficiency {:.3}, {}",
        t.engine, t.efficiency, t.efficiency_source
    ));
    o.push("vs ideal: over the same iteration on a contention-free, non-blocking network at the NICs' rate; slowest op: the operation adding the most time over it, its time per occurrence over the ideal, and the switch egress port busiest with it; drops, pause µs, CNPs: the packet level's counts at the capped size".into());
    for v in &t.variants {
        if let Some(d) = &v.design {
            o.push(format!("{}: {d}", v.label));
        }
    }
    let mut qps = Vec::new();
    for v in &t.variants {
        for pair in v.qps.chunks(2) {
            if let [a, b] = pair {
                qps.push(format!(
                    "{} {} {}: uplink imbalance {:.2} with {} QP, {:.2} with {} ({} → {})",
                    v.id,
                    a.job,
                    a.op,
                    a.uplink_imbalance,
                    a.qps,
                    b.uplink_imbalance,
                    b.qps,
                    secs(a.op_s),
                    secs(b.op_s)
                ));
            }
        }
    }
    let mut joint = Vec::new();
    for v in &t.variants {
        for j in &v.jobs {
            if let Some(x) = &j.joint {
                joint.push(format!(
                    "{} {}: {} (slowest {}; alone {}, {:+.2}%; beside the others' busiest operation {})",
                    v.id,
                    j.job,
                    secs(x.mean_s),
                    secs(x.max_s),
                    secs(x.alone_s),
                    (x.mean_s / x.alone_s - 1.0) * 100.0,
                    secs(j.iteration_s)
                ));
            }
        }
    }
    if !joint.is_empty() {
        o.push(format!(
            "joint schedule (training.schedule = \"joint\": every job's timeline on one clock, flows times each operation's packet factor, the mean of each job's iterations after its first): {}",
            joint.join("; ")
        ));
    }
    if !qps.is_empty() {
        o.push(format!(
            "ECMP and QPs per connection (each job's least even operation alone, flow level; imbalance: the busiest uplink of the leaf sending the most up, over the least any spreading of whole connections could put on one): {}",
            qps.join("; ")
        ));
    }
    o
}

/// The training jobs' table, for the terminal.
pub fn training_text(r: &CompareResults) -> String {
    let rows = training_rows(r);
    if rows.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "
training: one iteration of each job on every variant, the jobs side by side
",
    );
    let mut widths: Vec<usize> = TRAINING_HEADER.iter().map(|h| h.chars().count()).collect();
    for row in rows.iter().filter(|r| r.len() == TRAINING_HEADER.len()) {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w.saturating_sub(c.chars().count());
            if i < 2 || i == 8 {
                l.push_str(c);
                l.push_str(&" ".repeat(pad));
            } else {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            }
            l.push_str("  ");
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(o, "{}", line(TRAINING_HEADER.iter().map(|h| h.to_string()).collect()));
    for row in rows {
        if row.len() == TRAINING_HEADER.len() {
            let _ = writeln!(o, "{}", line(row));
        } else {
            let _ = writeln!(o, "{} {}", row[0], row[1]);
        }
    }
    for n in training_notes(r) {
        let _ = writeln!(o, "{n}");
    }
    o
}
