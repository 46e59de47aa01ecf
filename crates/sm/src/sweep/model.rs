//! Discovery's records (what each node and port answered) and the fabric model, SM
//! ports and LIDs built from them.

use std::collections::BTreeMap;

use fabric::{Fabric, Guid, IbSpeed, IbWidth, LinkRate, NodeId, NodeKind, NodeSpec};
use wire::mad::attr::{self, PortState};

/// What one request was for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Req {
    /// NodeInfo through `port` of discovered node `parent` (`u32::MAX` = the SM's node).
    NodeInfo {
        parent: u32,
        port: u8,
    },
    NodeDesc {
        node: u32,
    },
    PortInfo {
        node: u32,
        port: u8,
    },
    SwitchInfo {
        node: u32,
    },
    /// A Set whose reply only needs a status check.
    Set,
}

#[derive(Clone, Debug, Default)]
pub(super) struct DPort {
    pub(super) up: bool,
    pub(super) width: u8,
    pub(super) speed: u8,
    pub(super) speed_ext: u8,
    pub(super) peer: Option<(u32, u8)>,
    /// PortInfo:CapabilityMask (IsSM finds other SMs).
    pub(super) cap_mask: u32,
    /// PortInfo:PortState when discovered (ports already ACTIVE are not set again).
    pub(super) state: Option<PortState>,
    /// PortInfo:LID and LMC when discovered (what another SM assigned).
    pub(super) lid: u16,
    pub(super) lmc: u8,
}

#[derive(Clone, Debug)]
pub(super) struct DNode {
    pub(super) guid: Guid,
    pub(super) kind: NodeKind,
    pub(super) num_ports: u8,
    pub(super) sys_guid: Guid,
    pub(super) vendor: u32,
    pub(super) device: u16,
    pub(super) port_guids: Vec<Guid>,
    pub(super) desc: String,
    pub(super) path: Vec<u8>,
    pub(super) ports: Vec<DPort>,
    pub(super) port_state_change: bool,
    /// NodeInfo:PartitionCap (CA ports, switch port 0) and
    /// SwitchInfo:PartitionEnforcementCap (switch external ports).
    pub(super) partition_cap: u16,
    pub(super) enforcement_cap: u16,
}

/// CA ports other than the SM's own node whose PortInfo says IsSM, with the directed
/// route that reaches them (through the switch they hang off).
pub(super) fn sm_ports_of(nodes: &[DNode]) -> Vec<(Guid, Vec<u8>)> {
    let mut out = Vec::new();
    for n in nodes.iter().skip(1) {
        if n.kind == NodeKind::Switch {
            continue;
        }
        for (p, d) in n.ports.iter().enumerate().skip(1) {
            if d.cap_mask & attr::cap::IS_SM == 0 {
                continue;
            }
            let path = match d.peer {
                Some((sw, sp)) if nodes[sw as usize].kind == NodeKind::Switch => {
                    let mut v = nodes[sw as usize].path.clone();
                    v.push(sp);
                    v
                }
                Some(_) => n.path.clone(),
                None => continue,
            };
            let g = n.port_guids.get(p).copied().unwrap_or(Guid(0));
            out.push((g, path));
        }
    }
    out
}

/// The LIDs ports report (switches: port 0, by node GUID; end ports by port GUID);
/// ports without a LID are left out.
pub(super) fn lids_of(nodes: &[DNode]) -> BTreeMap<Guid, (fabric::Lid, fabric::Lid)> {
    let mut m = BTreeMap::new();
    for n in nodes {
        let ports: Vec<(Guid, &DPort)> = if n.kind == NodeKind::Switch {
            n.ports.first().map(|d| (n.guid, d)).into_iter().collect()
        } else {
            n.ports
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(_, d)| d.state.is_some())
                .map(|(p, d)| (n.port_guids.get(p).copied().unwrap_or(Guid(0)), d))
                .collect()
        };
        for (g, d) in ports {
            if g.0 == 0 || d.lid == 0 || d.lid >= 0xc000 {
                continue;
            }
            let hi = d.lid.saturating_add((1u16 << d.lmc.min(7)) - 1);
            m.insert(g, (fabric::Lid(d.lid), fabric::Lid(hi)));
        }
    }
    m
}

/// DR path to port `p` of end node `i` into `out` (a CA is reached through its peer
/// switch).
pub(super) fn end_path(nodes: &[DNode], i: usize, p: u8, sm_port: u8, out: &mut Vec<u8>) {
    let n = &nodes[i];
    out.clear();
    // The SM's own port is local; another port of the SM's own CA is reached from
    // outside, through the switch it is cabled to.
    if n.path.is_empty() && (n.kind == NodeKind::Switch || p == sm_port.max(1)) {
        return;
    }
    match n.ports.get(p as usize).and_then(|d| d.peer) {
        Some((sw, sp)) if nodes[sw as usize].kind == NodeKind::Switch => {
            out.extend_from_slice(&nodes[sw as usize].path);
            out.push(sp);
        }
        _ => out.extend_from_slice(&n.path),
    }
}

/// Build a fabric model from discovered nodes (node ids follow discovery order, so the
/// SM's node is node 0).
pub(super) fn build_model(nodes: &[DNode]) -> (Fabric, Vec<NodeId>) {
    let mut f = Fabric::new();
    let mut ids = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let name = format!(
            "{}-{:016x}",
            if n.kind == NodeKind::Switch { "S" } else { "H" },
            n.guid.0
        );
        let mut spec = if n.kind == NodeKind::Switch {
            NodeSpec::switch(name, n.guid, n.num_ports.max(1))
        } else {
            let mut s = NodeSpec::ca(name, n.guid, n.num_ports.max(1));
            s.kind = n.kind;
            // Unknown port GUIDs (ports never reached) follow the node GUID + port convention.
            s.port_guids = Some(
                (1..=n.num_ports.max(1))
                    .map(|p| {
                        let g = n.port_guids.get(p as usize).copied().unwrap_or(Guid(0));
                        if g.0 == 0 { Guid(n.guid.0 + p as u64) } else { g }
                    })
                    .collect(),
            );
            s
        };
        spec.desc = if n.desc.is_empty() {
            format!("node {i}")
        } else {
            n.desc.clone()
        };
        spec.sys_image_guid = Some(n.sys_guid);
        spec.vendor_id = n.vendor;
        spec.device_id = n.device;
        // GUIDs are unique here (duplicates were not followed).
        ids.push(f.add_node(spec).expect("unique discovered GUIDs"));
    }
    for (i, n) in nodes.iter().enumerate() {
        for (p, dp) in n.ports.iter().enumerate() {
            let Some((j, q)) = dp.peer else { continue };
            if (j as usize, q) <= (i, p as u8) {
                continue;
            }
            let _ = f.connect(ids[i], p as u8, ids[j as usize], q, rate_of(dp), 2.0);
        }
    }
    (f, ids)
}

/// The link rate from PortInfo's active width and speed codes (IBA §14.2.5.6); 4x SDR
/// when the codes are unknown.
pub(super) fn rate_of(d: &DPort) -> LinkRate {
    let width = IbWidth::from_code(d.width).unwrap_or(IbWidth::X4);
    let speed = IbSpeed::ALL
        .into_iter()
        .find(|s| d.speed_ext != 0 && s.link_speed_ext_code() == d.speed_ext)
        .or_else(|| {
            IbSpeed::ALL
                .into_iter()
                .find(|s| d.speed != 0 && s.link_speed_code() == d.speed)
        })
        .unwrap_or(IbSpeed::Sdr);
    LinkRate::ib(speed, width)
}
