//! `rdmalab sim run` and `rdmalab sim perftest`: a packet-level run as text and JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};
use sim::scenario::Outcome;

/// How fast a run went: measured by the caller around the simulation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speed {
    /// Wall-clock seconds of the simulation.
    pub wall_s: f64,
    /// CPU seconds of the simulating thread, where the OS reports them.
    pub cpu_s: Option<f64>,
    /// Peak resident memory of the process (VmHWM), bytes.
    pub peak_memory_bytes: Option<u64>,
}

/// A scenario run as text: the perftest tables or the flows' completion, a
/// deadlock if one was found, the packet ledger and the speed.
pub fn run_text(out: &Outcome, engine: &str, speed: &Speed) -> String {
    let s = &out.summary;
    let mut o = String::new();
    let _ = writeln!(o, "scenario {} (routing: {engine}, seed {})", out.scenario, s.seed);
    if let Some(b) = &out.bandwidth {
        o.push_str(&b.perftest_text());
    }
    if let Some(l) = &out.latency {
        o.push_str(&l.perftest_text());
    }
    if let Some(m) = &out.matrix {
        o.push_str(&matrix_line(m));
    }
    if let Some(d) = &out.deadlock {
        let _ = writeln!(o, "DEADLOCK: {d}");
    }
    let _ = writeln!(
        o,
        "packets: {} created, {} delivered, {} dropped, {} in flight; PSN errors {}",
        s.packets_created, s.packets_delivered, s.packets_dropped, s.packets_in_flight, s.psn_errors
    );
    let wall_s = speed.wall_s;
    let _ = writeln!(
        o,
        "simulated {:.3} us in {wall_s:.3} s wall{}: {} packet-link hops ({:.2} M/s), {} events ({:.2} M/s), peak memory {} MiB",
        s.simulated_ps as f64 / 1e6,
        speed.cpu_s.map_or(String::new(), |c| format!(" ({c:.3} s cpu)")),
        s.packet_link_hops,
        s.packet_link_hops as f64 / wall_s.max(1e-9) / 1e6,
        s.events,
        s.events as f64 / wall_s.max(1e-9) / 1e6,
        speed.peak_memory_bytes.map_or(0, |b| b / (1 << 20))
    );
    o
}

/// A scenario run as JSON: the scenario, the routing engine, the speed with the
/// counts behind it, and the whole outcome.
pub fn run_json(out: &Outcome, engine: &str, speed: &Speed) -> serde_json::Result<Value> {
    let s = &out.summary;
    let wall_s = speed.wall_s;
    Ok(json!({
        "scenario": out.scenario,
        "routing_engine": engine,
        "speed": {
            "packet_link_hops": s.packet_link_hops,
            "events": s.events,
            "simulated_ps": s.simulated_ps,
            "wall_s": wall_s,
            "cpu_s": speed.cpu_s,
            "hops_per_wall_s": s.packet_link_hops as f64 / wall_s.max(1e-9),
            "events_per_wall_s": s.events as f64 / wall_s.max(1e-9),
            "peak_memory_bytes": speed.peak_memory_bytes,
        },
        "result": serde_json::to_value(out)?,
    }))
}

/// The flows' completion line both engines print for a traffic matrix.
fn matrix_line(m: &sim::workload::MatrixReport) -> String {
    if m.completed == 0 {
        format!(
            "flows: none of {} completed by the end; aggregate goodput {:.1} Gb/s ({:.1} Gb/s per flow)\n",
            m.flows.len(),
            m.aggregate_goodput_bps / 1e9,
            m.aggregate_goodput_bps / 1e9 / m.flows.len().max(1) as f64
        )
    } else {
        format!(
            "flows: {} of {} completed; aggregate goodput {:.1} Gb/s; FCT p50 {:.1} us p99 {:.1} us max {:.1} us\n",
            m.completed,
            m.flows.len(),
            m.aggregate_goodput_bps / 1e9,
            m.fct.p50_ps as f64 / 1e6,
            m.fct.p99_ps as f64 / 1e6,
            m.fct.max_ps as f64 / 1e6
        )
    }
}

/// A traffic run at flow level as text: the same flows line as the packet level,
/// then the flow engine's work.
pub fn flow_run_text(
    scenario: &str,
    engine: &str,
    m: &sim::workload::MatrixReport,
    c: &flow::FlowCounters,
    speed: &Speed,
) -> String {
    let mut o = format!("scenario {scenario} (routing: {engine}, flow level)\n");
    o.push_str(&matrix_line(m));
    let _ = writeln!(
        o,
        "flow level: {:.3} us simulated in {:.3} s wall: {} events, {} rate solves ({} flow rates), peak memory {} MiB",
        m.end_ps as f64 / 1e6,
        speed.wall_s,
        c.events,
        c.solves,
        c.flows_resolved,
        speed.peak_memory_bytes.map_or(0, |b| b / (1 << 20))
    );
    o
}

/// A traffic run at flow level as JSON.
pub fn flow_run_json(
    scenario: &str,
    engine: &str,
    m: &sim::workload::MatrixReport,
    c: &flow::FlowCounters,
    speed: &Speed,
) -> serde_json::Result<Value> {
    Ok(json!({
        "scenario": scenario,
        "routing_engine": engine,
        "engine": "flow",
        "speed": {
            "events": c.events,
            "solves": c.solves,
            "flows_resolved": c.flows_resolved,
            "simulated_ps": m.end_ps,
            "wall_s": speed.wall_s,
            "peak_memory_bytes": speed.peak_memory_bytes,
        },
        "matrix": serde_json::to_value(m)?,
    }))
}

/// A perftest-like run as JSON: the link rate, the MTU, the test's report and
/// the simulator's summary.
pub fn perftest_json(
    rate: &str,
    mtu: u32,
    result: Value,
    summary: &sim::metrics::RunSummary,
) -> serde_json::Result<Value> {
    Ok(json!({"rate": rate, "mtu": mtu, "result": result, "summary": serde_json::to_value(summary)?}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome() -> Outcome {
        Outcome {
            scenario: "t".into(),
            summary: sim::metrics::RunSummary {
                seed: 3,
                packets_created: 10,
                packets_delivered: 9,
                packets_dropped: 1,
                simulated_ps: 2_500_000,
                packet_link_hops: 40,
                events: 60,
                ..Default::default()
            },
            matrix: None,
            bandwidth: None,
            latency: None,
            deadlock: None,
            ports: Vec::new(),
            series: None,
        }
    }

    #[test]
    fn run_text_reports_the_ledger_and_the_speed() {
        let sp = Speed {
            wall_s: 0.5,
            cpu_s: Some(0.25),
            peak_memory_bytes: Some(3 << 20),
        };
        let t = run_text(&outcome(), "ftree", &sp);
        assert!(t.starts_with("scenario t (routing: ftree, seed 3)\n"), "{t}");
        assert!(
            t.contains("packets: 10 created, 9 delivered, 1 dropped, 0 in flight; PSN errors 0"),
            "{t}"
        );
        assert!(
            t.contains("simulated 2.500 us in 0.500 s wall (0.250 s cpu): 40 packet-link hops (0.00 M/s), 60 events (0.00 M/s), peak memory 3 MiB"),
            "{t}"
        );
        let j = run_json(&outcome(), "ftree", &sp).unwrap();
        assert_eq!(j["speed"]["hops_per_wall_s"], 80.0);
        assert_eq!(j["result"]["summary"]["packets_dropped"], 1);
    }
}
