//! `diag check`: ibdiagnet-style verdicts on a fabric and its routing tables.
//!
//! Routes, minimality, credit loops (per VL, SL2VL-aware) and routes per port come
//! from `sm::validate` (the shared validator); this module adds the checks that need
//! the topology as imported — duplicate GUIDs and LIDs, degraded links, isolated
//! nodes, ports without LIDs — and turns everything into findings and a summary.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fabric::{Fabric, IbSpeed, IbWidth, LinkRate, NodeId, NodeKind};
use serde::Serialize;
use sm::tables::RoutingTables;

use crate::finding::{self, Counts, Finding, Location, Severity};
use crate::ib::rules::{self, finding as mk};

/// Options of a check.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// The rate every link should run at; `None` = the best width and speed seen.
    pub expect: Option<(IbWidth, IbSpeed)>,
    /// Warn when the busiest switch-to-switch port carries more than this many times
    /// the mean routes per switch-to-switch port.
    pub balance_factor: f64,
    /// Validate the cabling as a rail-optimized design ([`crate::ib::rails`]).
    pub rails: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            expect: None,
            balance_factor: 2.0,
            rails: false,
        }
    }
}

/// Headline numbers of a check.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Switches in the topology.
    pub switches: usize,
    /// Channel adapters.
    pub cas: usize,
    /// Routers.
    pub routers: usize,
    /// Cables.
    pub links: usize,
    /// LID mask control of the tables.
    pub lmc: u8,
    /// LIDs with an owner.
    pub lids: usize,
    /// (source CA port, destination CA LID) pairs checked.
    pub ca_pairs: u64,
    /// Pairs whose route does not arrive.
    pub unreachable: u64,
    /// Pairs on a path longer than the shortest.
    pub non_minimal: u64,
    /// Longest path in links.
    pub max_hops: u32,
    /// `hop_histogram[h]` = paths with `h` links.
    pub hop_histogram: Vec<u64>,
    /// SLs seen on routes.
    pub sls_used: u8,
    /// VLs those SLs map to.
    pub vls_used: u8,
    /// (switch output port, VL) channels carrying routes.
    pub channels: usize,
    /// Dependencies between channels.
    pub dependencies: usize,
    /// True when the dependency graph has a cycle.
    pub credit_loop: bool,
    /// Switch-to-switch output ports.
    pub isl_ports: usize,
    /// Most routes on one switch-to-switch port.
    pub max_routes_isl: u64,
    /// Mean routes per switch-to-switch port (one decimal).
    pub mean_routes_isl: f64,
}

/// Result of [`check`].
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Input files, for the header.
    pub inputs: Vec<String>,
    /// Headline numbers.
    pub summary: Summary,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
    /// Findings by severity.
    pub counts: Counts,
    /// The full `sm::validate` result (failures and examples capped).
    pub validation: serde_json::Value,
    /// The rail-optimized design found, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rails: Option<crate::ib::rails::RailSummary>,
}

impl CheckReport {
    /// True when any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.counts.errors > 0
    }

    /// ibdiagnet-style text: header lines, one line per finding, summary.
    pub fn render_text(&self) -> String {
        let s = &self.summary;
        let mut o = String::new();
        for i in &self.inputs {
            o.push_str(&format!("-I- Input: {i}\n"));
        }
        o.push_str(&format!(
            "-I- Fabric: {} switches, {} CAs, {} routers, {} links; {} LIDs, LMC {}\n",
            s.switches, s.cas, s.routers, s.links, s.lids, s.lmc
        ));
        let hist: Vec<String> = s
            .hop_histogram
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(h, c)| format!("{h}:{c}"))
            .collect();
        o.push_str(&format!(
            "-I- CA-to-CA paths: {} checked, {} unreachable, {} non-minimal, max {} hops (hops:paths {})\n",
            s.ca_pairs,
            s.unreachable,
            s.non_minimal,
            s.max_hops,
            hist.join(" ")
        ));
        o.push_str(&format!(
            "-I- Credit loops: {} SL(s), {} VL(s) used, {} channels, {} dependencies: {}\n",
            s.sls_used,
            s.vls_used,
            s.channels,
            s.dependencies,
            if s.credit_loop {
                "credit loops in routing"
            } else {
                "no credit loops found"
            }
        ));
        o.push_str(&format!(
            "-I- Routes per switch-to-switch port: max {}, mean {:.1} over {} ports\n",
            s.max_routes_isl, s.mean_routes_isl, s.isl_ports
        ));
        if let Some(r) = &self.rails {
            let ports = if r.ports_per_nic > 1 {
                format!(" ({} ports per NIC, each on its own leaf)", r.ports_per_nic)
            } else {
                String::new()
            };
            o.push_str(&format!(
                "-I- Rails: {} servers, {} rails{ports}, {} scalable units, {} rail leaves\n",
                r.servers, r.rails, r.units, r.leaves
            ));
        }
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Error => "-E-",
                Severity::Warning => "-W-",
                Severity::Info => "-I-",
            };
            o.push_str(&format!(
                "{tag} {:<16} {}: {} (fix: {})\n",
                f.rule, f.location, f.message, f.fix
            ));
        }
        if !self.findings.is_empty() {
            o.push_str("-I- Why these matter:\n");
            for l in finding::render_why(&self.findings) {
                o.push_str(&format!("-I- {}\n", l.trim_start()));
            }
        }
        o.push_str(&format!(
            "-I- Summary: {} error(s), {} warning(s), {} info\n",
            self.counts.errors, self.counts.warnings, self.counts.infos
        ));
        o
    }

    /// JSON form.
    pub fn render_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }
}

/// A node as diagnostics print it: its description, else its name.
pub fn label(f: &Fabric, n: NodeId) -> &str {
    let node = f.node(n);
    if node.desc.is_empty() { &node.name } else { &node.desc }
}

fn port_loc(f: &Fabric, n: NodeId, p: u8) -> Location {
    Location {
        key: Some(label(f, n).to_string()),
        field: Some(format!("P{p}")),
        ..Location::default()
    }
}

/// Check `t` on `f`. `pre` carries findings made while reading the inputs
/// (duplicate GUIDs/LIDs seen in `opensm-subnet.lst`).
pub fn check(
    f: &Fabric,
    t: &RoutingTables,
    inputs: Vec<String>,
    pre: Vec<Finding>,
    opts: &CheckOptions,
) -> CheckReport {
    let flat = f.freeze();
    let v = sm::validate::validate(&flat, t);
    let mut out = pre;

    // Reachability.
    for x in &v.routes.failures {
        out.push(mk(
            rules::UNREACHABLE,
            Severity::Error,
            port_loc(f, x.src, x.src_port),
            describe_failure(f, x),
            "fix the LFT entries along the path (re-run the SM; check for LFT holes or loops)".into(),
        ));
    }
    let reported = v.routes.failures.len() as u64;
    if v.routes.unreachable > reported {
        out.push(mk(
            rules::UNREACHABLE,
            Severity::Error,
            Location::default(),
            format!(
                "{} more unreachable CA-to-CA pairs not listed ({} in all)",
                v.routes.unreachable - reported,
                v.routes.unreachable
            ),
            "see the JSON output for the counts".into(),
        ));
    }
    if v.routes.non_minimal > 0 {
        let ex = v.routes.non_minimal_examples.first();
        out.push(mk(
            rules::NON_MINIMAL,
            Severity::Info,
            ex.map(|e| port_loc(f, e.src, e.src_port)).unwrap_or_default(),
            format!(
                "{} of {} CA-to-CA paths are longer than the shortest path{}",
                v.routes.non_minimal,
                v.routes.pairs,
                ex.map(|e| format!(" (e.g. to LID {}: {} hops, shortest {})", e.dst_lid, e.hops, e.shortest))
                    .unwrap_or_default()
            ),
            "expected with up/down-style engines; with minhop it points at stale LFTs".into(),
        ));
    }
    // Credit loops.
    if let (Some(cycle), Some(desc)) = (&v.credit_loops.cycle, v.credit_loops.describe(f)) {
        let first = cycle[0];
        out.push(mk(
            rules::CREDIT_LOOP,
            Severity::Error,
            Location { field: Some(format!("P{} VL{}", first.port, first.vl)), ..port_loc(f, first.node, first.port) },
            format!("credit loop through {} channels: {desc}", cycle.len()),
            "use a deadlock-free routing engine (updn, ftree on fat trees, dfsssp/nue with enough VLs) or break the cycle with SL2VL layers".into(),
        ));
    }
    // Routes per switch-to-switch port.
    let isl: Vec<&sm::validate::PortLoad> = v.loads.ports.iter().filter(|p| p.isl).collect();
    let total: u64 = isl.iter().map(|p| p.routes).sum();
    let mean = if isl.is_empty() {
        0.0
    } else {
        total as f64 / isl.len() as f64
    };
    if let Some((bn, bp)) = v.loads.busiest_isl {
        let max = v.loads.max_routes_isl;
        if mean > 0.0 && max as f64 > opts.balance_factor * mean {
            out.push(mk(
                rules::ROUTE_IMBALANCE,
                Severity::Warning,
                port_loc(f, bn, bp),
                format!(
                    "carries {max} CA-to-CA routes, {:.1}x the mean of {mean:.1} over {} switch-to-switch ports",
                    max as f64 / mean,
                    isl.len()
                ),
                "use a balancing engine (ftree, updn with LMC, dfsssp) or check for missing parallel links".into(),
            ));
        }
    }
    let unused = isl.iter().filter(|p| p.routes == 0).count();
    if unused > 0 && total > 0 {
        out.push(mk(
            rules::ROUTE_IMBALANCE,
            Severity::Info,
            Location::default(),
            format!(
                "{unused} of {} switch-to-switch ports carry no CA-to-CA route",
                isl.len()
            ),
            "normal for down-only or redundant links; otherwise check the routing engine".into(),
        ));
    }
    check_guids_and_lids(f, t, &mut out);
    check_links(f, opts, &mut out);
    check_isolated(f, t, &mut out);
    let rails = opts.rails.then(|| crate::ib::rails::check_rails(f, &mut out));

    finding::normalize(&mut out);
    let summary = Summary {
        switches: f.count(NodeKind::Switch),
        cas: f.count(NodeKind::Ca),
        routers: f.count(NodeKind::Router),
        links: f.links.len(),
        lmc: t.lmc,
        lids: t.lid_owner.iter().filter(|o| o.is_some()).count(),
        ca_pairs: v.routes.pairs,
        unreachable: v.routes.unreachable,
        non_minimal: v.routes.non_minimal,
        max_hops: v.routes.max_hops,
        hop_histogram: v.routes.hop_histogram.clone(),
        sls_used: v.credit_loops.sls_used,
        vls_used: v.credit_loops.vls_used,
        channels: v.credit_loops.channels,
        dependencies: v.credit_loops.dependencies,
        credit_loop: v.credit_loops.cycle.is_some(),
        isl_ports: isl.len(),
        max_routes_isl: v.loads.max_routes_isl,
        mean_routes_isl: (mean * 10.0).round() / 10.0,
    };
    CheckReport {
        inputs,
        summary,
        counts: Counts::of(&out),
        findings: out,
        validation: v.to_json(f),
        rails,
    }
}

/// A route failure with node descriptions (ibdiagnet prints descriptions).
fn describe_failure(f: &Fabric, x: &sm::validate::RouteFailure) -> String {
    use sm::validate::Stop;
    let why = match &x.stop {
        Stop::SourceDown => "source port not cabled".to_string(),
        Stop::NoEntry { at } => format!("no LFT entry at {}", label(f, *at)),
        Stop::DeadEnd { at, port } => format!("dead end at {}/P{port} (not cabled)", label(f, *at)),
        Stop::WrongTarget { at, port } => format!("delivered to {}/P{port} instead", label(f, *at)),
        Stop::Loop { cycle } => format!(
            "forwarding loop {}",
            cycle.iter().map(|&n| label(f, n)).collect::<Vec<_>>().join(" -> ")
        ),
    };
    format!(
        "{}/P{} -> LID {} ({}/P{}): {why}",
        label(f, x.src),
        x.src_port,
        x.dst_lid,
        label(f, x.dst),
        x.dst_port
    )
}

fn check_guids_and_lids(f: &Fabric, t: &RoutingTables, out: &mut Vec<Finding>) {
    // Port GUIDs: switch node GUIDs and CA/router port GUIDs must all differ.
    let mut by_guid: BTreeMap<u64, Vec<(NodeId, u8)>> = BTreeMap::new();
    for n in f.node_ids() {
        let node = f.node(n);
        if node.is_switch() {
            by_guid.entry(node.node_guid.0).or_default().push((n, 0));
        } else {
            for p in node.port_nums() {
                by_guid.entry(node.port_guid(p).0).or_default().push((n, p));
            }
        }
    }
    for (g, owners) in &by_guid {
        if owners.len() > 1 {
            let who: Vec<String> = owners.iter().map(|&(n, p)| format!("{}/P{p}", label(f, n))).collect();
            out.push(mk(
                rules::DUPLICATE_GUID,
                Severity::Error,
                port_loc(f, owners[1].0, owners[1].1),
                format!("port GUID 0x{g:016x} is used by {}", who.join(" and ")),
                "give every port a unique GUID".into(),
            ));
        }
    }
    // LIDs: every port's LID range must be its own.
    let mut users: BTreeMap<u16, Vec<(NodeId, u8)>> = BTreeMap::new();
    for n in f.node_ids() {
        let node = f.node(n);
        let ports: Vec<u8> = if node.is_switch() {
            vec![0]
        } else {
            node.port_nums().collect()
        };
        for p in ports {
            if let Some(base) = t.lid_of(n, p) {
                let count = if node.is_switch() { 1u16 } else { 1u16 << t.lmc.min(7) };
                for l in base.0..base.0.saturating_add(count) {
                    users.entry(l).or_default().push((n, p));
                }
            }
        }
    }
    // The topology's recorded LIDs (ibnetdiscover `lid N`), when the tables have none.
    for (lid, u) in &users {
        if u.len() > 1 {
            let who: Vec<String> = u.iter().map(|&(n, p)| format!("{}/P{p}", label(f, n))).collect();
            out.push(mk(
                rules::DUPLICATE_LID,
                Severity::Error,
                port_loc(f, u[1].0, u[1].1),
                format!("LID {lid} is assigned to {}", who.join(" and ")),
                "let the SM reassign LIDs so every port has its own range".into(),
            ));
        }
    }
    // Cabled end ports without a LID.
    let mut missing = Vec::new();
    for n in f.node_ids() {
        let node = f.node(n);
        if node.is_switch() {
            if t.lid_of(n, 0).is_none() && node.port_nums().any(|p| f.peer(n, p).is_some()) {
                missing.push((n, 0));
            }
        } else {
            for p in node.port_nums() {
                if f.peer(n, p).is_some() && t.lid_of(n, p).is_none() {
                    missing.push((n, p));
                }
            }
        }
    }
    for &(n, p) in missing.iter().take(32) {
        out.push(mk(
            rules::NO_LID,
            Severity::Error,
            port_loc(f, n, p),
            format!(
                "{} {} port {p} is cabled but has no LID in the routing dump",
                f.node(n).kind.name(),
                label(f, n)
            ),
            "give the LFT dump for all switches, or a guid2lid file".into(),
        ));
    }
    if missing.len() > 32 {
        out.push(mk(
            rules::NO_LID,
            Severity::Error,
            Location::default(),
            format!("{} more ports without a LID", missing.len() - 32),
            "see above".into(),
        ));
    }
}

fn check_links(f: &Fabric, opts: &CheckOptions, out: &mut Vec<Finding>) {
    let ib: Vec<(usize, IbWidth, IbSpeed)> = f
        .links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match l.rate {
            LinkRate::Ib { speed, width } => Some((i, width, speed)),
            LinkRate::Eth { .. } => None,
        })
        .collect();
    let Some((ew, es)) = opts.expect.or_else(|| {
        let w = ib.iter().map(|x| x.1).max_by_key(|w| w.lanes())?;
        let s = ib.iter().map(|x| x.2).max_by_key(|s| s.lane_bps())?;
        Some((w, s))
    }) else {
        return;
    };
    for (i, w, s) in ib {
        if w.lanes() < ew.lanes() || s.lane_bps() < es.lane_bps() {
            let l = &f.links[i];
            out.push(mk(
                rules::LINK_DEGRADED,
                Severity::Warning,
                port_loc(f, l.a.node, l.a.port),
                format!(
                    "link {}/P{} -- {}/P{} runs at {}{}, expected {}{}",
                    label(f, l.a.node),
                    l.a.port,
                    label(f, l.b.node),
                    l.b.port,
                    w.name(),
                    s.name(),
                    ew.name(),
                    es.name()
                ),
                "reseat or replace the cable; check both ports' enabled widths and speeds".into(),
            ));
        }
    }
}

fn check_isolated(f: &Fabric, t: &RoutingTables, out: &mut Vec<Finding>) {
    let n = f.nodes.len();
    let mut comp = vec![usize::MAX; n];
    let mut sizes = Vec::new();
    for s in 0..n {
        if comp[s] != usize::MAX {
            continue;
        }
        let c = sizes.len();
        let mut size = 0;
        let mut q = VecDeque::from([s]);
        comp[s] = c;
        while let Some(x) = q.pop_front() {
            size += 1;
            let id = NodeId(x as u32);
            for p in f.node(id).port_nums() {
                if let Some((e, _)) = f.peer(id, p)
                    && comp[e.node.idx()] == usize::MAX
                {
                    comp[e.node.idx()] = c;
                    q.push_back(e.node.idx());
                }
            }
        }
        sizes.push(size);
    }
    // The subnet is the component holding the most LID-owning ports (the SM's), else the largest.
    let mut owned = vec![0usize; sizes.len()];
    for o in t.lid_owner.iter().flatten() {
        owned[comp[o.0.idx()]] += 1;
    }
    let main = (0..sizes.len())
        .max_by_key(|&c| (owned[c], sizes[c], std::cmp::Reverse(c)))
        .unwrap_or(0);
    let mut listed = BTreeSet::new();
    for x in 0..n {
        if comp[x] == main || !listed.insert(comp[x]) {
            continue;
        }
        let id = NodeId(x as u32);
        let members: Vec<NodeId> = (0..n)
            .filter(|&y| comp[y] == comp[x])
            .map(|y| NodeId(y as u32))
            .collect();
        let cabled = f.node(id).port_nums().any(|p| f.peer(id, p).is_some());
        let msg = if members.len() == 1 && !cabled {
            format!("{} {} has no cabled port", f.node(id).kind.name(), label(f, id))
        } else {
            let names: Vec<&str> = members.iter().take(6).map(|&m| label(f, m)).collect();
            format!(
                "{} node(s) are cut off from the subnet: {}{}",
                members.len(),
                names.join(", "),
                if members.len() > 6 { ", ..." } else { "" }
            )
        };
        out.push(mk(
            rules::ISOLATED_NODE,
            Severity::Error,
            Location {
                table: Some(f.node(id).kind.name().to_string()),
                key: Some(label(f, id).to_string()),
                ..Location::default()
            },
            msg,
            "cable the node to the fabric (or drop it from the topology file)".into(),
        ));
    }
}
