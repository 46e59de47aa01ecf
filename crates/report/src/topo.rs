//! `rdmalab topo info`: a topology summary as text.

use std::fmt::Write as _;

use fabric::summary::Summary;

/// A rate in bits per second, in the largest unit that keeps it above 1.
fn bps(b: u64) -> String {
    let v = b as f64;
    if v >= 1e15 {
        format!("{:.2} Pb/s", v / 1e15)
    } else if v >= 1e12 {
        format!("{:.2} Tb/s", v / 1e12)
    } else {
        format!("{:.1} Gb/s", v / 1e9)
    }
}

/// The terminal form of a topology summary (`rdmalab topo info`).
pub fn summary_text(s: &Summary) -> String {
    let mut o = String::new();
    let n = &s.nodes;
    let _ = writeln!(
        o,
        "nodes      {} switches, {} CAs, {} routers; {} servers",
        n.switches, n.cas, n.routers, s.servers
    );
    let p = &s.ports;
    let _ = writeln!(
        o,
        "ports      switch {} ({} cabled, {} free); adapter {} ({} cabled)",
        p.switch_ports,
        p.switch_ports_cabled,
        p.switch_ports - p.switch_ports_cabled,
        p.endpoint_ports,
        p.endpoint_ports_cabled
    );
    let rates: Vec<String> = s.links_by_rate.iter().map(|(r, c)| format!("{c} × {r}")).collect();
    let _ = writeln!(o, "links      {} ({})", s.links, rates.join(", "));
    let _ = writeln!(
        o,
        "tiers      (levels {})",
        if s.levels_inferred {
            "inferred from hops to the nearest CA"
        } else {
            "from the generator"
        }
    );
    let _ = writeln!(o, "  level  switches  down  up     peer  down:up");
    for t in &s.tiers {
        let os = t
            .oversubscription
            .map(|r| format!("{r:.2}:1"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "  {:<5}  {:<8}  {:<5} {:<6} {:<5} {os}",
            t.level, t.switches, t.down_links, t.up_links, t.peer_links
        );
    }
    let _ = writeln!(
        o,
        "bisection  {}{} ({:.2} of full bisection, {}); hosts inject {}",
        if s.bisection_method == "tier-cut" {
            ""
        } else {
            "at most "
        },
        bps(s.bisection_bps),
        s.bisection_ratio,
        s.bisection_method,
        bps(s.host_bps)
    );
    let _ = writeln!(
        o,
        "diameter   {}",
        s.diameter_hops
            .map(|d| format!("{d} hops between CAs"))
            .unwrap_or_else(|| "disconnected".into())
    );
    let b = &s.bom;
    let sw: Vec<String> = b
        .switches_by_radix
        .iter()
        .map(|(r, c)| format!("{c} × {r}-port"))
        .collect();
    let _ = writeln!(o, "bill of materials");
    let _ = writeln!(o, "  switches      {}", sw.join(", "));
    let _ = writeln!(
        o,
        "  cables        {} copper, {} optical, {:.0} m in all",
        b.copper_cables, b.optical_cables, b.cable_metres
    );
    for c in &b.cables {
        let _ = writeln!(o, "    {:>6} × {:<7} ≤ {} m  {}", c.count, c.medium, c.up_to_m, c.rate);
    }
    let tr: Vec<String> = b
        .transceivers_by_rate
        .iter()
        .map(|(r, c)| format!("{c} × {r}"))
        .collect();
    let _ = writeln!(
        o,
        "  transceivers  {}{}",
        b.transceivers,
        if tr.is_empty() {
            String::new()
        } else {
            format!(" ({})", tr.join(", "))
        }
    );
    o
}
