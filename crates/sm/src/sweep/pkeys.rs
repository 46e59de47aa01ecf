//! The P_Key step of a heavy sweep (OpenSM `osm_pkey_mgr_process`, reference
//! `failures-isolation-sweeps.md` §1.3): resolve the partitions on the discovered
//! fabric, then `SubnSet(P_KeyTable)` every block that differs from what this SM
//! last wrote there.
//!
//! A P_KeyTable block is 32 entries (IBA vol. 1 §14.2.5.7). AttributeModifier: the
//! block number in bits 0–15, and on a switch the port in bits 16–23 (`mod = block |
//! port << 16`, `osm_pkey_mgr.c pkey_mgr_update_pkey_entry`, ibsim `do_pkeytbl`). A
//! port holds NodeInfo.PartitionCap entries (CA ports, switch port 0) or
//! SwitchInfo.PartitionEnforcementCap (switch external ports); a table longer than
//! that is cut and reported, as OpenSM's ERR 0505/0507 do. The enforcement bits of
//! the switch ports facing CAs go out with their ARMED/ACTIVE PortInfo Set.

use std::collections::BTreeMap;

use fabric::{Fabric, Guid, NodeId, NodeKind};
use wire::mad::attr;
use wire::mad::{AttrId, Method};

use super::{DNode, Exchange, Issue, Req, SubnetManager, SweepReport, end_path};
use crate::partitions::{self, PkeyPlan};

/// What the P_Key step did in one sweep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PkeyReport {
    /// Partitions in force (the implicit default included).
    pub partitions: usize,
    /// Ports given a table (end ports and switch ports facing CAs).
    pub ports: u64,
    /// Switch ports with partition enforcement.
    pub enforced: u64,
    /// P_KeyTable blocks sent, and left alone because this SM wrote them already.
    pub blocks_sent: u64,
    pub blocks_unchanged: u64,
    /// The file was in error: the fallback `Default=0x7fff : ALL=full` was programmed.
    pub fell_back: bool,
}

/// OpenSM's configuration after a partitions.conf error (`osm_prtn.c:386-460`):
/// every port a full member of the default partition, i.e. no isolation.
const FALLBACK: &str = "Default=0x7fff : ALL=full ;";

impl SubnetManager {
    /// Resolve the configured partitions on `f` (built from `nodes`) and program them.
    /// Nothing happens without a configuration: the ports keep their tables.
    pub(super) fn program_pkeys(
        &mut self,
        tr: &mut dyn crate::sma::Transport,
        x: &mut Exchange,
        f: &Fabric,
        nodes: &[DNode],
        sm_port: (NodeId, u8),
        rep: &mut SweepReport,
    ) {
        self.pkey_plan = None;
        let Some(conf) = self.opts.partitions.clone() else {
            return;
        };
        let mut pr = PkeyReport::default();
        let plan = match partitions::resolve(&conf, f, sm_port) {
            Ok(p) => p,
            Err(e) => {
                rep.issues.push(Issue::Partitions { error: e.to_string() });
                pr.fell_back = true;
                let fb = partitions::parse(FALLBACK, "(fallback)").expect("the fallback parses");
                partitions::resolve(&fb, f, sm_port).expect("the fallback names no GUID")
            }
        };
        pr.partitions = plan.partitions.len();
        pr.ports = plan.tables.len() as u64;
        pr.enforced = plan.enforced.len() as u64;
        let mut pbuf = Vec::with_capacity(64);
        let mut written: BTreeMap<(Guid, u8), Vec<u16>> = BTreeMap::new();
        for (&(n, p), table) in &plan.tables {
            let i = n.idx();
            let node = &nodes[i];
            let switch = node.kind == NodeKind::Switch;
            let cap = if switch && p != 0 {
                node.enforcement_cap
            } else {
                node.partition_cap
            } as usize;
            let mut want = table.clone();
            if want.len() > cap {
                rep.issues.push(Issue::Partitions {
                    error: format!(
                        "{} port {p}: {} P_Keys for a table of {cap}; entries from index {cap} on are not programmed",
                        node.guid,
                        want.len()
                    ),
                });
                want.truncate(cap);
            }
            let key = (node.guid, p);
            // What the port holds: what this SM wrote, else the power-on table.
            let before = self.pkeys_written.get(&key).cloned().unwrap_or_else(|| vec![0xffff]);
            let blocks = cap.div_ceil(attr::pkey_table::BLOCK);
            for b in 0..blocks {
                let block = |t: &[u16]| {
                    let mut k = [0u16; attr::pkey_table::BLOCK];
                    let lo = b * attr::pkey_table::BLOCK;
                    for (j, e) in k.iter_mut().enumerate() {
                        *e = t.get(lo + j).copied().unwrap_or(0);
                    }
                    k
                };
                let (new, old) = (block(&want), block(&before));
                // Block 0 goes out on the first sweep of a port whatever it held
                // (another SM may have written it); later blocks only when they differ.
                let first = !self.pkeys_written.contains_key(&key) && b == 0;
                if new == old && !first {
                    pr.blocks_unchanged += 1;
                    continue;
                }
                let mut d = [0u8; 64];
                let _ = attr::pkey_table::Repr { pkeys: new }.to_bytes(&mut d);
                let am = if switch { b as u32 | (p as u32) << 16 } else { b as u32 };
                if switch {
                    pbuf.clear();
                    pbuf.extend_from_slice(&node.path);
                } else {
                    end_path(nodes, i, p, self.sm_port_num, &mut pbuf);
                }
                self.enqueue(x, Req::Set, &pbuf, Method::Set, AttrId::PKeyTable, am, d);
                pr.blocks_sent += 1;
            }
            written.insert(key, want);
        }
        self.pump(tr, x, &mut |_, _, _, _, _| {});
        self.pkeys_written.extend(written);
        self.pkey_plan = Some(plan);
        rep.pkeys = Some(pr);
    }

    /// The plan of the last heavy sweep (`None` without partitions).
    pub fn pkey_plan(&self) -> Option<&PkeyPlan> {
        self.pkey_plan.as_ref()
    }

    /// Port (node index, port) of the last plan has partition enforcement.
    pub(super) fn enforced(&self, i: usize, port: u8) -> bool {
        self.pkey_plan
            .as_ref()
            .is_some_and(|p| p.enforced.contains(&(NodeId(i as u32), port)))
    }
}
