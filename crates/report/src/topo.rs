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

#[cfg(test)]
mod tests {
    use fabric::generate::{LeafSpineParams, leaf_spine};
    use fabric::summary::summarize;

    use super::*;

    #[test]
    fn rates_take_the_largest_unit_above_one() {
        assert_eq!(bps(400_000_000_000), "400.0 Gb/s");
        assert_eq!(bps(12_800_000_000_000), "12.80 Tb/s");
        assert_eq!(bps(2_000_000_000_000_000), "2.00 Pb/s");
    }

    /// A radix-8 non-blocking leaf–spine: 8 leaves of 4 hosts and 4 uplinks, 4
    /// spines of 8 ports.
    #[test]
    fn leaf_spine_summary_counts_switches_hosts_links_and_cables() {
        let f = leaf_spine(&LeafSpineParams {
            radix: 8,
            ..Default::default()
        })
        .unwrap();
        let s = summarize(&f);
        let t = summary_text(&s);
        assert!(t.starts_with("nodes      12 switches, 32 CAs, 0 routers"), "{t}");
        assert!(t.contains("links      64 (64 × 4xNDR)"), "{t}");
        assert!(t.contains("  switches      12 × 8-port\n"), "{t}");
        assert!(t.contains("diameter   4 hops between CAs\n"), "{t}");
        insta::assert_snapshot!(t);
    }

    #[test]
    fn oversubscribed_leaves_show_their_ratio() {
        let f = leaf_spine(&LeafSpineParams {
            radix: 8,
            oversubscription: 3.0,
            ..Default::default()
        })
        .unwrap();
        let t = summary_text(&summarize(&f));
        let leaf = t.lines().find(|l| l.starts_with("  1 ")).expect("a level-1 row");
        assert!(leaf.ends_with("3.00:1"), "{t}");
    }
}
