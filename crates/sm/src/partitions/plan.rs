//! A parsed `partitions.conf` resolved against a fabric: the P_Key table of every
//! port, laid out as OpenSM's partition manager lays it out (`osm_pkey_mgr.c`,
//! reference `failures-isolation-sweeps.md` §1.3):
//!
//! - **end ports** (CA and router ports, switch port 0) get one entry per partition
//!   they are in: bit 15 set for a full member; a port in no partition gets an empty
//!   table (its power-on 0xFFFF is cleared). A port that is full and limited in
//!   one partition gets the full entry (`both` without `--allow_both_pkeys`).
//! - **the default partition** 0x7FFF: a file without a `0x7fff` statement gets
//!   `Default=0x7fff : ALL=limited, SELF=full`; the SM's port is always a full member.
//! - **switch ports facing a CA** get a copy of that CA port's table and partition
//!   enforcement (`pkey_mgr_enforce_partition`, `part_enforce both`); inter-switch
//!   ports get nothing (OpenSM clears their enforcement and leaves their tables).
//! - **order**: a port is taken to start from the power-on table, 0xFFFF at index 0
//!   (ibsim `sim_net.c:639`, IBA's default P_Key). Entries still wanted keep their
//!   index (`keep_pkey_indexes`, TRUE in OpenSM 3.3.23's default config); an `indx0`
//!   partition takes index 0 and the entry it displaces moves after the new ones;
//!   new entries fill the lowest free indexes in P_Key order (OpenSM walks its
//!   partitions in a map ordered by P_Key). On the reference's file this gives the
//!   tables OpenSM 3.3.23 programmed over ibsim, entry for entry (test below).
//!
//! Cost: one pass over the members of every partition plus one over the cables;
//! tables are kept per port in a `BTreeMap` (only ports with a table).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fabric::{Fabric, Guid, NodeId, NodeKind};

use super::conf::{ErrorKind, Membership, PartitionsConf, PartitionsError, PortSpec};
use super::{BASE, DEFAULT_PKEY, FULL};

/// The table of one port: P_Keys by index (0 = an empty entry).
pub type PortTable = Vec<u16>;

/// Every port's table; see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PkeyPlan {
    /// Tables of end ports and of switch ports facing CAs, by (node, port).
    pub tables: BTreeMap<(NodeId, u8), PortTable>,
    /// Switch external ports with partition enforcement (inbound and outbound).
    pub enforced: BTreeSet<(NodeId, u8)>,
    /// The partitions (number, name, header line), the implicit default included
    /// (line 0).
    pub partitions: Vec<(u16, String, usize)>,
}

impl PkeyPlan {
    /// The table of a port, if the plan gives it one.
    pub fn table(&self, n: NodeId, p: u8) -> Option<&[u16]> {
        self.tables.get(&(n, p)).map(|v| &v[..])
    }

    /// The non-empty entries of a port's table.
    pub fn pkeys(&self, n: NodeId, p: u8) -> impl Iterator<Item = u16> + '_ {
        self.table(n, p)
            .unwrap_or(&[])
            .iter()
            .copied()
            .filter(|&k| k & BASE != 0)
    }

    /// The entry of partition `base` in a port's table (with its membership bit).
    pub fn entry(&self, n: NodeId, p: u8, base: u16) -> Option<u16> {
        self.pkeys(n, p).find(|k| k & BASE == base & BASE)
    }

    /// The partitions two end ports can talk in (the match rule, [`pkeys_match`]).
    pub fn shared(&self, a: (NodeId, u8), b: (NodeId, u8)) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .pkeys(a.0, a.1)
            .filter(|&ka| self.pkeys(b.0, b.1).any(|kb| pkeys_match(ka, kb)))
            .map(|k| k & BASE)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Two P_Keys match: the same non-zero partition number and at least one full member
/// (reference §1.1: Linux `qib_pkey_ok()`, "Low 15 bits must be non-zero and match,
/// and one of the two must be a full member"; IBA vol. 1 §10.9.3).
pub fn pkeys_match(a: u16, b: u16) -> bool {
    a & BASE != 0 && a & BASE == b & BASE && (a & FULL != 0 || b & FULL != 0)
}

/// Resolve `conf` on `f` with the SM at `sm_port` (for `SELF`). Every GUID of the file
/// must be a port of `f`: an unknown one is an error naming its line.
pub fn resolve(conf: &PartitionsConf, f: &Fabric, sm_port: (NodeId, u8)) -> Result<PkeyPlan, PartitionsError> {
    let err = |line: usize, kind: ErrorKind| PartitionsError {
        file: conf.file.clone(),
        line,
        kind,
    };
    // End ports: CA/router ports that are cabled (the SM finds no others), switch port 0.
    let mut end_ports: Vec<(NodeId, u8)> = Vec::new();
    let mut by_port_guid: HashMap<Guid, (NodeId, u8)> = HashMap::new();
    for n in f.node_ids() {
        let node = f.node(n);
        if node.kind == NodeKind::Switch {
            end_ports.push((n, 0));
            by_port_guid.insert(node.node_guid, (n, 0));
        } else {
            for p in node.port_nums() {
                if node.ports[p as usize].link.is_some() || (n, p) == sm_port {
                    end_ports.push((n, p));
                    by_port_guid.insert(node.port_guid(p), (n, p));
                }
            }
        }
    }
    // Wanted entries per port: partition number → full member?
    // Every end port gets a table, an empty one when it is in no partition: OpenSM
    // builds each port's blocks afresh and clears entries of no partition.
    let mut want: BTreeMap<(NodeId, u8), BTreeMap<u16, bool>> =
        end_ports.iter().map(|&p| (p, BTreeMap::new())).collect();
    let mut indx0: BTreeMap<(NodeId, u8), u16> = BTreeMap::new();
    let mut partitions = Vec::new();
    let implicit_default = conf.get(DEFAULT_PKEY).is_none();
    let mut add = |port: (NodeId, u8), base: u16, m: Membership, first: bool| {
        let e = want.entry(port).or_default().entry(base).or_insert(false);
        *e |= m != Membership::Limited;
        if first {
            indx0.entry(port).or_insert(base);
        }
    };
    let matches = |spec: PortSpec, port: (NodeId, u8)| -> bool {
        let kind = f.node(port.0).kind;
        match spec {
            PortSpec::All => true,
            PortSpec::AllCas => kind == NodeKind::Ca,
            PortSpec::AllSwitches => kind == NodeKind::Switch,
            PortSpec::AllRouters => kind == NodeKind::Router,
            PortSpec::SelfPort => port == sm_port,
            PortSpec::Guid(_) => false,
        }
    };
    // Partitions in P_Key order (OpenSM's prtn_pkey_tbl is a map keyed by P_Key):
    // that order decides which indx0 partition wins index 0.
    let mut order: Vec<usize> = (0..conf.partitions.len()).collect();
    order.sort_by_key(|&i| conf.partitions[i].pkey);
    for &i in &order {
        let part = &conf.partitions[i];
        partitions.push((part.pkey, part.name.clone(), part.line));
        for m in &part.members {
            if let PortSpec::Guid(g) = m.spec {
                let Some(&port) = by_port_guid.get(&g) else {
                    let kind = match f.by_guid(g) {
                        Some(n) if f.node(n).kind != NodeKind::Switch => ErrorKind::Expected {
                            expected: format!(
                                "a port GUID; {g} is the node GUID of {} (port 1 is {})",
                                f.node(n).name,
                                f.node(n).ports.get(1).map_or(Guid(0), |p| p.guid)
                            ),
                            found: format!("{g}"),
                        },
                        _ => ErrorKind::UnknownGuid { guid: g },
                    };
                    return Err(err(m.line, kind));
                };
                add(port, part.pkey, m.membership, part.indx0);
            } else {
                for &port in end_ports.iter().filter(|&&p| matches(m.spec, p)) {
                    add(port, part.pkey, m.membership, part.indx0);
                }
            }
        }
        if part.pkey == DEFAULT_PKEY {
            // The SM's port is always a full member of the default partition.
            add(sm_port, DEFAULT_PKEY, Membership::Full, part.indx0);
        }
    }
    if implicit_default {
        // `Default=0x7fff : ALL=limited, SELF=full` (OpenSM with a file lacking one).
        partitions.push((DEFAULT_PKEY, "Default".into(), 0));
        for &port in &end_ports {
            add(port, DEFAULT_PKEY, Membership::Limited, false);
        }
        add(sm_port, DEFAULT_PKEY, Membership::Full, false);
    }
    let mut plan = PkeyPlan {
        partitions,
        ..Default::default()
    };
    for (port, keys) in &want {
        plan.tables.insert(*port, layout(keys, indx0.get(port).copied()));
    }
    // Switch ports facing a CA: the CA port's table, enforced.
    for (&(n, p), t) in &plan.tables.clone() {
        if f.node(n).kind == NodeKind::Switch {
            continue;
        }
        if let Some((e, _)) = f.peer(n, p)
            && f.node(e.node).kind == NodeKind::Switch
        {
            plan.tables.insert((e.node, e.port), t.clone());
            plan.enforced.insert((e.node, e.port));
        }
    }
    Ok(plan)
}

/// Lay out one port's entries from the power-on table (0xFFFF at index 0); see the
/// module docs.
fn layout(keys: &BTreeMap<u16, bool>, indx0: Option<u16>) -> PortTable {
    let value = |base: u16| if keys[&base] { base | FULL } else { base };
    let mut slots: Vec<Option<u16>> = vec![None];
    // The power-on entry is the default partition: kept at index 0 if still wanted.
    if keys.contains_key(&DEFAULT_PKEY) {
        slots[0] = Some(value(DEFAULT_PKEY));
    }
    let mut displaced = None;
    if let Some(k) = indx0
        && slots[0].is_none_or(|v| v & BASE != k)
    {
        displaced = slots[0].replace(value(k));
    }
    let placed: BTreeSet<u16> = slots.iter().flatten().map(|v| v & BASE).collect();
    let pending = keys
        .keys()
        .filter(|b| !placed.contains(b) && displaced.is_none_or(|d| d & BASE != **b))
        .map(|&b| value(b))
        .chain(displaced);
    for v in pending {
        match slots.iter().position(Option::is_none) {
            Some(i) => slots[i] = Some(v),
            None => slots.push(Some(v)),
        }
    }
    while slots.last() == Some(&None) {
        slots.pop();
    }
    slots.into_iter().map(|s| s.unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partitions::conf::parse;
    use crate::testkit::ibsim_net;

    fn net() -> Fabric {
        let p = crate::testkit::samples_dir().join("net.2sw2path4hca");
        ibsim_net(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn port(f: &Fabric, name: &str, p: u8) -> (NodeId, u8) {
        (f.by_name(name).unwrap_or_else(|| panic!("{name}")), p)
    }

    #[test]
    fn the_reference_file_gives_the_tables_opensm_programmed_over_ibsim() {
        let f = net();
        let conf = parse(crate::partitions::conf::tests::REFERENCE, "partitions.conf").unwrap();
        // OpenSM ran on a switch in the measured run (its port 0 kept 0xffff: SELF=full).
        let sw = f.nodes_of(NodeKind::Switch).next().unwrap();
        let plan = resolve(&conf, &f, (sw, 0)).unwrap();
        let t = |name: &str, p: u8| plan.table(port(&f, name, p).0, p).map(<[u16]>::to_vec);
        // Reference §1.3 [measured] (`smpquery pkeys`).
        assert_eq!(t("Hca1", 1), Some(vec![0x0010, 0x8001, 0x8020, 0x7fff]));
        assert_eq!(t("Hca3", 1), Some(vec![0x0010, 0x0001, 0x7fff]));
        assert_eq!(t("Hca4", 1), Some(vec![0x8010, 0x7fff]));
        assert_eq!(plan.table(sw, 0), Some(&[0xffff][..]));
        let other = f.nodes_of(NodeKind::Switch).nth(1).unwrap();
        assert_eq!(plan.table(other, 0), Some(&[0x7fff][..]));
        // The switch port facing Hca1 is a copy, enforced; ISLs get nothing.
        let (e, _) = f.peer(port(&f, "Hca1", 1).0, 1).unwrap();
        assert_eq!(plan.table(e.node, e.port), t("Hca1", 1).as_deref());
        assert!(plan.enforced.contains(&(e.node, e.port)));
        let isl = f
            .node(sw)
            .port_nums()
            .find(|&p| {
                f.peer(sw, p)
                    .is_some_and(|(e, _)| f.node(e.node).kind == NodeKind::Switch)
            })
            .unwrap();
        assert_eq!(plan.table(sw, isl), None);
        assert!(!plan.enforced.contains(&(sw, isl)));
        // Hca1 and Hca3 share 0x0001 (full + limited) and 0x0010? Both limited there: no.
        let (h1, h3, h4) = (port(&f, "Hca1", 1), port(&f, "Hca3", 1), port(&f, "Hca4", 1));
        assert_eq!(plan.shared(h1, h3), [0x0001]);
        assert_eq!(plan.shared(h1, h4), [0x0010]);
        assert_eq!(plan.shared(h3, h4), [0x0010]);
    }

    #[test]
    fn match_rule() {
        assert!(pkeys_match(0x8001, 0x0001));
        assert!(pkeys_match(0x8001, 0x8001));
        assert!(!pkeys_match(0x0001, 0x0001), "two limited members");
        assert!(!pkeys_match(0x8001, 0x8002));
        assert!(!pkeys_match(0x8000, 0x8000), "partition 0 is invalid");
    }

    #[test]
    fn unknown_and_node_guids_are_errors_naming_the_line() {
        let f = net();
        let sm = (f.by_name("Hca1").unwrap(), 1);
        let conf = parse("a=0x1 : ALL ;\n\nb=0x2 :\n  0x100001,\n  0xdead0001=full ;\n", "pc").unwrap();
        let e = resolve(&conf, &f, sm).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pc:5: port GUID 0x00000000dead0001 is not a port of the fabric"
        );
        let conf = parse("b=0x2 : 0x100000 ;\n", "pc").unwrap();
        let e = resolve(&conf, &f, sm).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.to_string()
                .contains("is the node GUID of Hca1 (port 1 is 0x0000000000100001)"),
            "{e}"
        );
    }

    #[test]
    fn explicit_default_and_a_port_in_no_partition() {
        let f = net();
        let sm = (f.by_name("Hca1").unwrap(), 1);
        // Default lists only Hca1 and Hca2: Hca3 and Hca4 are in no partition but jobB.
        let conf = parse(
            "Default=0x7fff : 0x100001, 0x100004 ;\njobB=0x3 : 0x100007=full ;\n",
            "pc",
        )
        .unwrap();
        let plan = resolve(&conf, &f, sm).unwrap();
        assert_eq!(plan.table(sm.0, 1), Some(&[0xffff][..]), "SM port: full default");
        assert_eq!(plan.table(f.by_name("Hca2").unwrap(), 1), Some(&[0x7fff][..]));
        assert_eq!(plan.table(f.by_name("Hca3").unwrap(), 1), Some(&[0x8003][..]));
        assert_eq!(
            plan.table(f.by_name("Hca4").unwrap(), 1),
            Some(&[][..]),
            "in no partition: emptied"
        );
        assert_eq!(plan.partitions.len(), 2);
    }
}
