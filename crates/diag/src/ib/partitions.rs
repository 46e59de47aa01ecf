//! `diag partitions`: does a partitions.conf isolate tenants the way the operator
//! means? The file is resolved on the fabric as the SM programs it
//! (`sm::partitions::resolve`, OpenSM's layout) and judged against a tenant file:
//!
//! ```text
//! # tenants.txt: one group per line; hosts by node name, name/port or port GUID
//! tenant jobA: gpu01 gpu02 gpu03
//! tenant jobB: gpu04 gpu05/2 0x0002c90300001234
//! shared storage: stor01 stor02      # may talk to every tenant
//! ```
//!
//! Two hosts can talk when their ports share a partition under the IBA match rule
//! (same partition number, at least one full member; `sm::partitions::pkeys_match`,
//! applied through `PkeyPlan::shared`).
//! - `tenant-cannot-talk` (error): a host cannot talk to some host of its own tenant;
//!   one finding per host, naming the peers it cannot reach and its partitions.
//! - `tenant-leak` (error): hosts of two different tenants (neither `shared`) can
//!   talk; one finding per (partition, pair of tenants), naming an example pair and
//!   the partition's line in the file.
//! - `host-not-in-tenants` (warning): a CA port in no tenant group can talk to a
//!   tenant's host in some partition (an unlisted host inside a tenant's partition).
//!
//! Cost: the leak check works per partition over its members (tenants with a full
//! member × tenants with any member), not over host pairs; the intra-tenant check is
//! quadratic in the size of each tenant only.

use std::collections::BTreeMap;

use fabric::{Fabric, Guid, NodeId, NodeKind};
use serde::Serialize;
use sm::partitions::{FULL, PartitionsConf, PkeyPlan};

use crate::finding::{Finding, Location, Severity};
use crate::ib::error::DumpError;
use crate::ib::rules::{self, finding as mk};

/// One line of the tenant file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub name: String,
    /// May talk to every tenant (storage, login nodes).
    pub shared: bool,
    pub line: usize,
    /// (node, port, as written).
    pub hosts: Vec<(NodeId, u8, String)>,
}

/// The tenant file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenants {
    pub file: String,
    pub groups: Vec<Tenant>,
}

/// Read a tenant file (see the module docs); every host must be a cabled CA port of
/// `f`, and in one group only.
pub fn parse_tenants(text: &str, file: &str, f: &Fabric) -> Result<Tenants, DumpError> {
    let syntax = |line: usize, expected: &str, got: &str| DumpError::Syntax {
        file: file.to_string(),
        line,
        expected: expected.to_string(),
        got: got.to_string(),
    };
    let mut groups: Vec<Tenant> = Vec::new();
    let mut seen: BTreeMap<(NodeId, u8), (String, usize)> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.split('#').next().unwrap_or("").trim();
        if s.is_empty() {
            continue;
        }
        let (head, rest) = s
            .split_once(':')
            .ok_or_else(|| syntax(line, "`tenant NAME: host ...` or `shared NAME: host ...`", s))?;
        let mut w = head.split_whitespace();
        let shared = match w.next() {
            Some("tenant") => false,
            Some("shared") => true,
            other => return Err(syntax(line, "`tenant` or `shared`", other.unwrap_or(""))),
        };
        let name = match (w.next(), w.next()) {
            (Some(n), None) => n.to_string(),
            _ => return Err(syntax(line, "one group name before `:`", head)),
        };
        if let Some(g) = groups.iter().find(|g| g.name == name) {
            return Err(syntax(
                line,
                &format!("a new group name ({name} is on line {})", g.line),
                &name,
            ));
        }
        let mut hosts = Vec::new();
        for h in rest.split_whitespace() {
            let port = resolve_host(f, h).map_err(|why| syntax(line, &why, h))?;
            if let Some((g, l)) = seen.get(&port) {
                return Err(syntax(
                    line,
                    &format!("a host in one group only ({h} is in {g} on line {l})"),
                    h,
                ));
            }
            seen.insert(port, (name.clone(), line));
            hosts.push((port.0, port.1, h.to_string()));
        }
        groups.push(Tenant {
            name,
            shared,
            line,
            hosts,
        });
    }
    Ok(Tenants {
        file: file.to_string(),
        groups,
    })
}

/// `name`, `name/port` or a port GUID → a cabled CA port.
fn resolve_host(f: &Fabric, h: &str) -> Result<(NodeId, u8), String> {
    let by_guid = h
        .strip_prefix("0x")
        .and_then(|x| u64::from_str_radix(x, 16).ok())
        .and_then(|g| {
            f.nodes_of(NodeKind::Ca).find_map(|n| {
                f.node(n)
                    .port_nums()
                    .find(|&p| f.node(n).port_guid(p) == Guid(g))
                    .map(|p| (n, p))
            })
        });
    let (n, p) = match by_guid {
        Some(x) => x,
        None => {
            let (name, port) = match h.split_once('/') {
                Some((a, b)) => (
                    a,
                    Some(b.parse::<u8>().map_err(|_| "a port number after `/`".to_string())?),
                ),
                None => (h, None),
            };
            let n = f
                .by_name(name)
                .ok_or_else(|| "a CA node name, name/port or port GUID of the topology".to_string())?;
            let p = match port {
                Some(p) => p,
                None => f
                    .node(n)
                    .port_nums()
                    .find(|&p| f.node(n).ports[p as usize].link.is_some())
                    .unwrap_or(1),
            };
            (n, p)
        }
    };
    let node = f.node(n);
    if node.kind != NodeKind::Ca {
        return Err(format!("a CA ({} is a {:?})", node.name, node.kind));
    }
    if node.ports.get(p as usize).is_none_or(|x| x.link.is_none()) || p == 0 {
        return Err(format!("a cabled port ({} port {p} is not cabled)", node.name));
    }
    Ok((n, p))
}

/// What [`check_partitions`] looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PartitionSummary {
    pub partitions: usize,
    pub tenants: usize,
    pub hosts: usize,
    /// Host pairs inside tenants that can talk, of those checked.
    pub tenant_pairs_ok: u64,
    pub tenant_pairs: u64,
}

fn host_loc(t: &Tenants, g: &Tenant) -> Location {
    Location::file(&t.file).at_line(g.line)
}

fn keys(plan: &PkeyPlan, port: (NodeId, u8)) -> String {
    let v: Vec<String> = plan
        .pkeys(port.0, port.1)
        .map(|k| format!("{k:#06x}{}", if k & FULL == 0 { " (limited)" } else { "" }))
        .collect();
    if v.is_empty() {
        "no partition".into()
    } else {
        v.join(", ")
    }
}

/// Judge `plan` (from `conf`) against `tenants`; see the module docs.
pub fn check_partitions(
    f: &Fabric,
    conf: &PartitionsConf,
    plan: &PkeyPlan,
    tenants: &Tenants,
) -> (PartitionSummary, Vec<Finding>) {
    let mut out = Vec::new();
    let mut sum = PartitionSummary {
        partitions: plan.partitions.len(),
        tenants: tenants.groups.len(),
        hosts: tenants.groups.iter().map(|g| g.hosts.len()).sum(),
        ..Default::default()
    };
    // Inside each tenant: every host reaches every other.
    for g in &tenants.groups {
        for (i, a) in g.hosts.iter().enumerate() {
            let mut cannot = Vec::new();
            for (j, b) in g.hosts.iter().enumerate() {
                if i == j {
                    continue;
                }
                if i < j {
                    sum.tenant_pairs += 1;
                }
                if plan.shared((a.0, a.1), (b.0, b.1)).is_empty() {
                    cannot.push(b.2.as_str());
                } else if i < j {
                    sum.tenant_pairs_ok += 1;
                }
            }
            if !cannot.is_empty() {
                out.push(mk(
                    rules::TENANT_CANNOT_TALK,
                    Severity::Error,
                    host_loc(tenants, g),
                    format!(
                        "{} (tenant {}) cannot talk to {} of its {} tenant peers ({}); it is in {}",
                        a.2,
                        g.name,
                        cannot.len(),
                        g.hosts.len() - 1,
                        cannot.join(", "),
                        keys(plan, (a.0, a.1))
                    ),
                    format!(
                        "put {} and its peers in one partition of {} with at least one side a full member",
                        a.2, conf.file
                    ),
                ));
            }
        }
    }
    // Across tenants: per partition, which tenants have full and which any members.
    let mut tenant_of: BTreeMap<(NodeId, u8), usize> = BTreeMap::new();
    for (k, g) in tenants.groups.iter().enumerate() {
        for h in &g.hosts {
            tenant_of.insert((h.0, h.1), k);
        }
    }
    // partition → tenant → (full member example, any member example)
    type Members<'a> = BTreeMap<usize, (Option<&'a str>, &'a str)>;
    let mut by_part: BTreeMap<u16, Members<'_>> = BTreeMap::new();
    // partition → unlisted CA port → full member?
    let mut unlisted: BTreeMap<u16, BTreeMap<(NodeId, u8), bool>> = BTreeMap::new();
    for (&port, table) in &plan.tables {
        if f.node(port.0).kind != NodeKind::Ca || port.1 == 0 {
            continue;
        }
        for &k in table.iter().filter(|k| **k & 0x7fff != 0) {
            let base = k & 0x7fff;
            match tenant_of.get(&port) {
                Some(&t) => {
                    let name = tenants.groups[t]
                        .hosts
                        .iter()
                        .find(|h| (h.0, h.1) == port)
                        .map_or("", |h| h.2.as_str());
                    let e = by_part.entry(base).or_default().entry(t).or_insert((None, name));
                    if k & FULL != 0 && e.0.is_none() {
                        e.0 = Some(name);
                    }
                }
                None => {
                    unlisted.entry(base).or_default().insert(port, k & FULL != 0);
                }
            }
        }
    }
    let part_line = |base: u16| {
        plan.partitions
            .iter()
            .find(|p| p.0 == base)
            .map(|p| (p.1.clone(), p.2))
            .unwrap_or_default()
    };
    for (&base, members) in &by_part {
        let (pname, pline) = part_line(base);
        let at = if pline > 0 {
            format!("{}:{pline}", conf.file)
        } else {
            format!("{} (implicit)", conf.file)
        };
        let ts: Vec<usize> = members.keys().copied().collect();
        for (x, &ta) in ts.iter().enumerate() {
            for &tb in &ts[x + 1..] {
                let (ga, gb) = (&tenants.groups[ta], &tenants.groups[tb]);
                if ga.shared || gb.shared {
                    continue;
                }
                let (ma, mb) = (members[&ta], members[&tb]);
                // They talk when one side has a full member (IBA match rule).
                let pair = match (ma.0, mb.0) {
                    (Some(a), _) => Some((a, mb.1)),
                    (None, Some(b)) => Some((ma.1, b)),
                    (None, None) => None,
                };
                let Some((ha, hb)) = pair else { continue };
                out.push(mk(
                    rules::TENANT_LEAK,
                    Severity::Error,
                    Location::file(&conf.file).at_line(pline.max(1)),
                    format!(
                        "tenants {} and {} can talk in partition {base:#06x} ({pname}, {at}): e.g. {ha} and {hb}",
                        ga.name, gb.name
                    ),
                    format!(
                        "take the hosts of one tenant out of partition {base:#06x}, or make every member of one side limited"
                    ),
                ));
            }
        }
        // Unlisted ports that can talk to a host of a (not shared) tenant here.
        let own: Vec<usize> = ts.iter().copied().filter(|&t| !tenants.groups[t].shared).collect();
        let tenant_full = own.iter().any(|t| members[t].0.is_some());
        let names: Vec<String> = unlisted
            .get(&base)
            .into_iter()
            .flatten()
            .filter(|&(_, &full)| !own.is_empty() && (full || tenant_full))
            .map(|(&(n, p), _)| format!("{}/{p}", f.node(n).name))
            .collect();
        if !names.is_empty() {
            let with: Vec<&str> = own.iter().map(|&t| tenants.groups[t].name.as_str()).collect();
            out.push(mk(
                rules::HOST_NOT_IN_TENANTS,
                Severity::Warning,
                Location::file(&tenants.file),
                format!(
                    "{} in partition {base:#06x} ({pname}, {at}) with tenant(s) {} but in no group of {}",
                    names.join(", "),
                    with.join(", "),
                    tenants.file
                ),
                format!(
                    "add the host(s) to a group of {}, or take them out of the partition",
                    tenants.file
                ),
            ));
        }
    }
    crate::finding::normalize(&mut out);
    (sum, out)
}

/// Result of [`check_files`].
#[derive(Clone, Debug, Serialize)]
pub struct PartitionsReport {
    /// Input files, for the header.
    pub inputs: Vec<String>,
    pub summary: PartitionSummary,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
    pub counts: crate::finding::Counts,
}

impl PartitionsReport {
    /// True when any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.counts.errors > 0
    }

    /// ibdiagnet-style text, as `diag check` prints: inputs, counts, one line per
    /// finding, why they matter, summary.
    pub fn render_text(&self) -> String {
        let s = &self.summary;
        let mut o = String::new();
        for i in &self.inputs {
            o.push_str(&format!("-I- Input: {i}\n"));
        }
        o.push_str(&format!(
            "-I- Partitions: {} (the default included); tenants: {} with {} hosts; {} of {} same-tenant host pairs can talk\n",
            s.partitions, s.tenants, s.hosts, s.tenant_pairs_ok, s.tenant_pairs
        ));
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Error => "-E-",
                Severity::Warning => "-W-",
                Severity::Info => "-I-",
            };
            o.push_str(&format!(
                "{tag} {:<19} {}: {} (fix: {})\n",
                f.rule, f.location, f.message, f.fix
            ));
        }
        if !self.findings.is_empty() {
            o.push_str("-I- Why these matter:\n");
            for l in crate::finding::render_why(&self.findings) {
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

/// Read `partitions` (OpenSM partitions.conf) and `tenants`, resolve the partitions
/// on `f` with the SM at `sm_port` (default: the fabric's first node, as
/// `sm::lids::default_sm_port`), and judge them.
pub fn check_files(
    f: &Fabric,
    partitions: &std::path::Path,
    tenants: &std::path::Path,
    sm_port: Option<(NodeId, u8)>,
) -> Result<PartitionsReport, DumpError> {
    let pname = partitions.display().to_string();
    let conf = sm::partitions::parse(&super::read(partitions)?, &pname)?;
    let tname = tenants.display().to_string();
    let t = parse_tenants(&super::read(tenants)?, &tname, f)?;
    let sm_port = sm_port
        .or_else(|| sm::lids::default_sm_port(f))
        .ok_or_else(|| DumpError::NoSuchEndpoint {
            what: "the SM port".into(),
            why: "the fabric is empty".into(),
        })?;
    let plan = sm::partitions::resolve(&conf, f, sm_port)?;
    let (summary, findings) = check_partitions(f, &conf, &plan, &t);
    Ok(PartitionsReport {
        inputs: vec![format!("partitions {pname}"), format!("tenants {tname}")],
        summary,
        counts: crate::finding::Counts::of(&findings),
        findings,
    })
}
