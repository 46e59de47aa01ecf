//! `rdmalab sim run` and `rdmalab sim perftest`: a packet-level run as text and JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};
use sim::scenario::Outcome;
use sim::workload::{BwReport, LatReport};

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
        o.push_str(&bw_text(b));
    }
    if let Some(l) = &out.latency {
        o.push_str(&lat_text(l));
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
    let _ = writeln!(o, "flow level {}", lab::flow_world::MATRIX_VALIDATED);
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
        "validated": lab::flow_world::MATRIX_VALIDATED,
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

/// The rule above and below a perftest table.
const RULE: &str = "---------------------------------------------------------------------------------------";

/// A bandwidth test printed like `ib_write_bw --report_gbits`.
pub fn bw_text(r: &BwReport) -> String {
    format!(
        "{RULE}\n                    {}\n {:<10} {:<14} {:<18} {:<20} {}\n {:<10} {:<14} {:<18.2} {:<20.2} {:.6}\n{RULE}\n",
        r.test,
        "#bytes",
        "#iterations",
        "BW peak[Gb/sec]",
        "BW average[Gb/sec]",
        "MsgRate[Mpps]",
        r.msg_bytes,
        r.iterations,
        r.bw_peak_bps / 1e9,
        r.bw_avg_bps / 1e9,
        r.msg_rate_mpps
    )
}

/// A latency test printed like `ib_send_lat` / `ib_read_lat`, in microseconds.
pub fn lat_text(r: &LatReport) -> String {
    let l = &r.latency;
    let us = |ps: f64| ps / 1e6;
    format!(
        "{RULE}\n                    {}\n {:<7} {:<12} {:<14} {:<14} {:<16} {:<14} {:<15} {:<22} {}\n {:<7} {:<12} {:<14.3} {:<14.3} {:<16.3} {:<14.3} {:<15.3} {:<22.3} {:.3}\n{RULE}\n",
        r.test,
        "#bytes",
        "#iterations",
        "t_min[usec]",
        "t_max[usec]",
        "t_typical[usec]",
        "t_avg[usec]",
        "t_stdev[usec]",
        "99% percentile[usec]",
        "99.9% percentile[usec]",
        r.msg_bytes,
        r.iterations,
        us(l.min_ps as f64),
        us(l.max_ps as f64),
        us(l.p50_ps as f64),
        us(l.mean_ps),
        us(l.stdev_ps),
        us(l.p99_ps as f64),
        us(l.p999_ps as f64)
    )
}

/// The result of `rdmalab sim perftest`: a bandwidth or a latency test.
#[derive(Clone, Debug)]
pub enum Perftest {
    /// `write-bw`.
    Bandwidth(BwReport),
    /// `send-lat`, `read-lat`.
    Latency(LatReport),
}

/// A perftest-like run as text, in perftest's layout.
pub fn perftest_text(r: &Perftest) -> String {
    match r {
        Perftest::Bandwidth(b) => bw_text(b),
        Perftest::Latency(l) => lat_text(l),
    }
}

/// A perftest-like run as JSON: the link rate, the MTU, the test's report and
/// the simulator's summary.
pub fn perftest_json(
    rate: &str,
    mtu: u32,
    r: &Perftest,
    summary: &sim::metrics::RunSummary,
) -> serde_json::Result<Value> {
    let result = match r {
        Perftest::Bandwidth(b) => serde_json::to_value(b)?,
        Perftest::Latency(l) => serde_json::to_value(l)?,
    };
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

    /// Two hosts on one 4xEDR switch, routed by the SM, as `sim perftest` builds them.
    fn two_hosts() -> (sim::Sim, fabric::NodeId, fabric::NodeId) {
        use fabric::{Fabric, Guid, LinkRate, NodeSpec};
        let mut f = Fabric::new();
        let sw = f.add_node(NodeSpec::switch("sw0", Guid(0x1000), 8)).unwrap();
        let mut h = Vec::new();
        for i in 0..2u8 {
            let c = f
                .add_node(NodeSpec::ca(format!("host{i}"), Guid(0x2000 + u64::from(i)), 1))
                .unwrap();
            f.connect(sw, i + 1, c, 1, LinkRate::EDR_4X, 2.0).unwrap();
            h.push(c);
        }
        let (t, _) = sm::run::run(&f, &sm::run::RunOptions::default()).unwrap();
        let s = sim::Sim::new(&f, &t, sim::IbConfig::default(), sim::EngineConfig::default()).unwrap();
        (s, h[0], h[1])
    }

    #[test]
    fn write_bw_prints_perftests_table_with_the_measured_rate() {
        let (mut s, a, b) = two_hosts();
        let r = sim::workload::perftest::write_bw(&mut s, a, b, 65_536, 200, 16).unwrap();
        let p = Perftest::Bandwidth(r.clone());
        let t = perftest_text(&p);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert_eq!(lines[0], RULE);
        assert_eq!(lines[1].trim(), "RDMA_Write BW Test");
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            [
                "#bytes",
                "#iterations",
                "BW",
                "peak[Gb/sec]",
                "BW",
                "average[Gb/sec]",
                "MsgRate[Mpps]"
            ]
        );
        let row: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(row[..2], ["65536", "200"]);
        let avg: f64 = row[3].parse().unwrap();
        assert_eq!(format!("{:.2}", r.bw_avg_bps / 1e9), row[3]);
        // 4xEDR carries 100 Gb/s of data; headers take a few percent of it.
        assert!(avg > 90.0 && avg < 100.0, "{t}");
        let j = perftest_json("4xEDR", 4096, &p, &s.summary()).unwrap();
        assert_eq!(j["rate"], "4xEDR");
        assert_eq!(j["mtu"], 4096);
        assert_eq!(j["result"]["msg_bytes"], 65_536);
        assert_eq!(j["result"]["bw_avg_bps"], r.bw_avg_bps);
        assert_eq!(j["summary"]["packets_dropped"], 0);
    }

    #[test]
    fn latency_table_is_in_microseconds() {
        let r = LatReport {
            test: "Send Latency Test".into(),
            msg_bytes: 64,
            iterations: 1000,
            latency: sim::workload::LatencyStats {
                count: 1000,
                min_ps: 1_210_000,
                max_ps: 2_500_000,
                mean_ps: 1_305_500.0,
                stdev_ps: 40_000.0,
                p50_ps: 1_300_000,
                p99_ps: 1_400_000,
                p999_ps: 2_000_000,
            },
        };
        insta::assert_snapshot!(perftest_text(&Perftest::Latency(r)));
    }
}
