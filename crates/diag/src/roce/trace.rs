//! The RoCEv2 path of one flow through an ECMP fabric, with the PFC/ECN settings of
//! every hop: the end-to-end view `ibtracert` gives InfiniBand and RoCE lacks.
//!
//! The path is the one the simulator's RoCE model takes, since both forward by the
//! Ethernet control plane's tables: equal-cost groups from [`ethcp::EcmpTable`],
//! hashed per switch with the configured hash whose seed is xor-ed with the switch's
//! node id, over the RoCEv2 5-tuple (host IPs numbered as HPCC ns-3 does, UDP source
//! port = the QP's entropy, destination port 4791). Each hop's QoS comes from that
//! switch's CONFIG_DB when one is given: the DSCP's TC, whether the TC is lossless,
//! the egress queue, its WRED/ECN profile and scheduler, and whether a PFC watchdog
//! covers the port.
//!
//! Fabric port `p` is SONiC port `Ethernet<(p-1)·step>` (step = lanes per port,
//! 4 by default), the usual SONiC naming of front-panel ports.

use std::fmt::Write as _;

use ethcp::{EcmpTable, FlowKey, HashConfig, HashFn, ROCEV2_UDP_PORT, host_ip, ip_string};
use fabric::{Fabric, NodeId, NodeKind};
use serde::Serialize;

use crate::roce::rules::{HopQos, hop_qos};
use crate::roce::sonic::ConfigDb;

/// Switch configurations for the hops: by switch name, or one for every switch.
#[derive(Clone, Debug, Default)]
pub struct HopConfigs {
    /// (switch name or `None` for "every switch", file, parsed config).
    pub configs: Vec<(Option<String>, String, ConfigDb)>,
    /// Lanes per port in SONiC port names (`Ethernet<(p-1)*step>`).
    pub port_step: u32,
}

impl HopConfigs {
    fn for_switch(&self, name: &str) -> Option<(&str, &ConfigDb)> {
        self.configs
            .iter()
            .find(|(n, _, _)| n.as_deref() == Some(name))
            .or_else(|| self.configs.iter().find(|(n, _, _)| n.is_none()))
            .map(|(_, f, db)| (f.as_str(), db))
    }
}

/// One switch on the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoceHop {
    /// Switch name.
    pub switch: String,
    /// Port the flow enters by.
    pub in_port: u8,
    /// The equal-cost ports toward the destination.
    pub group: Vec<u8>,
    /// This switch's hash of the flow.
    pub hash: u32,
    /// The group member the hash picks.
    pub out_port: u8,
    /// SONiC name of the egress port.
    pub out_port_name: String,
    /// QoS of the egress port for the flow's DSCP, when a config covers this switch.
    pub qos: Option<HopQos>,
    /// The config file the QoS came from.
    pub config: Option<String>,
}

/// A traced RoCEv2 flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoceTrace {
    /// Source host.
    pub src: String,
    /// Destination host.
    pub dst: String,
    /// Source IPv4 address (HPCC ns-3 numbering).
    pub sip: String,
    /// Destination IPv4 address.
    pub dip: String,
    /// UDP source port (the QP's entropy).
    pub sport: u16,
    /// UDP destination port (4791).
    pub dport: u16,
    /// DSCP of the flow.
    pub dscp: u8,
    /// Switches in order.
    pub hops: Vec<RoceHop>,
    /// True when the flow reached the destination host.
    pub arrived: bool,
    /// Why it did not.
    pub stop: Option<String>,
    /// The trace as text.
    pub text: String,
}

/// Why a RoCE trace could not start.
#[derive(Debug, thiserror::Error)]
pub enum RoceTraceError {
    /// No channel adapter has this name or description.
    #[error("find host {0:?}: no channel adapter has this name or description")]
    NoHost(String),
}

fn host(f: &Fabric, spec: &str) -> Result<NodeId, RoceTraceError> {
    f.by_name(spec)
        .or_else(|| f.node_ids().find(|&n| f.node(n).desc == spec))
        .filter(|&n| f.node(n).kind == NodeKind::Ca)
        .ok_or_else(|| RoceTraceError::NoHost(spec.to_string()))
}

/// The simulator's default ECMP hash: the 5-tuple, MurmurHash3, seed 0
/// (the `hash` of the simulator's `RoceConfig::default`).
pub fn default_hash() -> HashConfig {
    HashConfig {
        fields: ethcp::field::FIVE_TUPLE,
        seed: 0,
        func: HashFn::Murmur3,
    }
}

/// Trace the RoCEv2 flow `src` → `dst` with UDP source port `sport` and `dscp`.
pub fn trace_roce(
    f: &Fabric,
    src: &str,
    dst: &str,
    sport: u16,
    dscp: u8,
    hash: HashConfig,
    cfg: &HopConfigs,
) -> Result<RoceTrace, RoceTraceError> {
    let s = host(f, src)?;
    let d = host(f, dst)?;
    let ecmp = EcmpTable::build(f, 0);
    let key = FlowKey {
        sip: host_ip(s.0),
        dip: host_ip(d.0),
        sport,
        dport: ROCEV2_UDP_PORT,
        proto: 17,
        smac: 0,
        dmac: 0,
        dqpn: 0,
    };
    let step = cfg.port_step.max(1);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "RoCEv2 {} ({}) -> {} ({}) udp {sport} -> {ROCEV2_UDP_PORT}, DSCP {dscp}; ECMP {:?} seed {} xor switch id",
        f.node(s).name,
        ip_string(key.sip),
        f.node(d).name,
        ip_string(key.dip),
        hash.func,
        hash.seed
    );
    let mut hops = Vec::new();
    let mut stop = None;
    let mut arrived = false;
    // Leave the source NIC by its first cabled port.
    let first = f.node(s).port_nums().find(|&p| f.peer(s, p).is_some());
    let mut cur = first.and_then(|p| f.peer(s, p).map(|(e, _)| (p, e)));
    if let Some((p, _)) = cur {
        let _ = writeln!(text, "{} port {p}", f.node(s).name);
    } else {
        stop = Some(format!("{} has no cabled port", f.node(s).name));
    }
    let mut guard = 0;
    while let Some((_, at)) = cur {
        guard += 1;
        if guard > 64 {
            stop = Some("more than 64 hops: forwarding loop".into());
            break;
        }
        if at.node == d {
            arrived = true;
            let _ = writeln!(text, "-> {} port {} (arrived)", f.node(d).name, at.port);
            break;
        }
        let node = f.node(at.node);
        if node.kind != NodeKind::Switch {
            stop = Some(format!("reached {} which is not the destination", node.name));
            break;
        }
        let hc = HashConfig {
            seed: hash.seed ^ at.node.0,
            ..hash
        };
        let h = hc.hash(&key);
        let group = ecmp.group(at.node, d).to_vec();
        let Some(out) = ecmp.next_port(at.node, d, h) else {
            stop = Some(format!("{} has no route to {}", node.name, f.node(d).name));
            break;
        };
        let out_name = format!("Ethernet{}", (u32::from(out) - 1) * step);
        let (qos, config) = match cfg.for_switch(&node.name) {
            Some((file, db)) => (Some(hop_qos(file, db, &out_name, dscp)), Some(file.to_string())),
            None => (None, None),
        };
        let _ = write!(
            text,
            "-> {} port {} | ECMP {:?} hash 0x{h:08x} -> port {out} ({out_name})",
            node.name, at.port, group
        );
        if let Some(q) = &qos {
            let _ = write!(text, " | {}", describe_qos(q));
        }
        text.push('\n');
        hops.push(RoceHop {
            switch: node.name.clone(),
            in_port: at.port,
            group,
            hash: h,
            out_port: out,
            out_port_name: out_name,
            qos,
            config,
        });
        cur = f.peer(at.node, out).map(|(e, _)| (out, e));
        if cur.is_none() {
            stop = Some(format!("{} port {out} is not cabled", node.name));
        }
    }
    if let Some(s) = &stop {
        let _ = writeln!(text, "-E- path stopped: {s}");
    }
    let lossy: Vec<&str> = hops
        .iter()
        .filter(|h| h.qos.as_ref().is_some_and(|q| !q.lossless))
        .map(|h| h.switch.as_str())
        .collect();
    if !lossy.is_empty() {
        let _ = writeln!(
            text,
            "-W- DSCP {dscp} is lossy at {}: a drop there costs a go-back-N retransmission",
            lossy.join(", ")
        );
    }
    Ok(RoceTrace {
        src: f.node(s).name.clone(),
        dst: f.node(d).name.clone(),
        sip: ip_string(key.sip),
        dip: ip_string(key.dip),
        sport,
        dport: ROCEV2_UDP_PORT,
        dscp,
        hops,
        arrived,
        stop,
        text,
    })
}

fn describe_qos(q: &HopQos) -> String {
    let mut s = match q.tc {
        Some(tc) => format!(
            "TC {tc} {} (pfc_enable {:?})",
            if q.lossless { "lossless" } else { "LOSSY" },
            q.pfc_enable
        ),
        None => "no DSCP map".to_string(),
    };
    let _ = write!(s, ", queue {}", q.queue);
    match &q.wred {
        Some((name, kmin, kmax, ecn)) => {
            let n = |v: &Option<u64>| v.map_or("?".to_string(), |x| x.to_string());
            let _ = write!(s, ", WRED {name} {}-{} B {ecn}", n(kmin), n(kmax));
        }
        None => s.push_str(", no WRED/ECN"),
    }
    if let Some((name, ty, w)) = &q.scheduler {
        let _ = write!(
            s,
            ", {name} {ty}{}",
            if w.is_empty() { String::new() } else { format!(" {w}") }
        );
    }
    s.push_str(if q.watchdog {
        ", PFC watchdog on"
    } else {
        ", no PFC watchdog"
    });
    if q.fallback_entry {
        s.push_str(" [port not in config: first PORT_QOS_MAP entry used]");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf_spine() -> Fabric {
        fabric::leaf_spine(&fabric::LeafSpineParams {
            radix: 8,
            hosts_per_leaf: Some(4),
            spines: Some(4),
            leaves: Some(4),
            rate: fabric::LinkRate::eth(100).unwrap(),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn path_follows_ecmp_groups_and_sport_changes_the_spine() {
        let f = leaf_spine();
        let hosts: Vec<NodeId> = f.nodes_of(NodeKind::Ca).collect();
        let (a, b) = (f.node(hosts[0]).name.clone(), f.node(hosts[15]).name.clone());
        let cfg = HopConfigs::default();
        let mut spines = std::collections::BTreeSet::new();
        for sport in 0xc000..0xc040u16 {
            let t = trace_roce(&f, &a, &b, sport, 26, default_hash(), &cfg).unwrap();
            assert!(t.arrived, "{}", t.text);
            assert_eq!(t.hops.len(), 3, "{}", t.text); // leaf, spine, leaf
            assert_eq!(t.hops[0].group.len(), 4);
            assert!(t.hops[0].group.contains(&t.hops[0].out_port));
            assert_eq!(t.hops[1].group.len(), 1);
            spines.insert(t.hops[1].switch.clone());
            // Deterministic.
            assert_eq!(t, trace_roce(&f, &a, &b, sport, 26, default_hash(), &cfg).unwrap());
        }
        assert_eq!(spines.len(), 4, "64 source ports should use every spine");
        assert!(matches!(
            trace_roce(&f, "nope", &b, 1, 26, default_hash(), &cfg),
            Err(RoceTraceError::NoHost(_))
        ));
    }
}
