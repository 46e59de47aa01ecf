//! A connection's path and what it costs on each link: the same forwarding the
//! packet worlds use, read from the same tables.
//!
//! - InfiniBand: the SM's linear forwarding tables, looked up by the destination
//!   port's base LID at every switch (as the packet world's RC QPs address their
//!   peer).
//! - Ethernet: `ethcp`'s ECMP groups, the member picked by the packet world's hash
//!   of the QP's flow key — the destination IP, the RoCEv2 UDP source port the NIC
//!   derives from the QP number, and the destination QPN — with each switch's seed
//!   (the configured seed XOR the switch's node index). Connection `k` of a run
//!   has QP number `0x100 + 2k`, as the packet world numbers the QPs it opens, so
//!   two flows that collide there collide here.
//!
//! Every cabled port's egress is one resource of the flow network, its capacity
//! the link's data rate in wire bytes. A connection crosses its data path with
//! weight `(mtu + overhead) / mtu` wire bytes per payload byte, and its ACK path
//! (the reverse route) with the ACK bytes per payload byte.

use ethcp::{EcmpTable, FlowKey, HashConfig, field, host_ip, roce_udp_sport};
use fabric::{Endpoint, Fabric, NodeId, NodeKind};
use sm::RoutingTables;

use crate::net::{ConnId, FlowError, FlowSim};
use crate::solve::Use;

/// Longest path walked before a forwarding loop is declared.
pub const MAX_HOPS: usize = 64;

/// Why a path could not be found.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The node has no cabled port to leave by.
    #[error("{node} has no cabled port")]
    NoPort {
        /// The node's name.
        node: String,
    },
    /// The destination port has no LID (InfiniBand).
    #[error("{node} has no LID on port {port}")]
    NoLid {
        /// The node's name.
        node: String,
        /// The port.
        port: u8,
    },
    /// A switch has no route to the destination.
    #[error("{switch} has no route to {dst}")]
    NoRoute {
        /// The switch's name.
        switch: String,
        /// The destination's name.
        dst: String,
    },
    /// The route leaves by a port with no cable, or reaches an adapter that is not the destination.
    #[error("the route from {src} to {dst} ends at {at} port {port}")]
    DeadEnd {
        /// Source name.
        src: String,
        /// Destination name.
        dst: String,
        /// Where it ended.
        at: String,
        /// The port.
        port: u8,
    },
    /// More than [`MAX_HOPS`] switches: a forwarding loop.
    #[error("the route from {src} to {dst} loops (more than {MAX_HOPS} hops)")]
    Loop {
        /// Source name.
        src: String,
        /// Destination name.
        dst: String,
    },
}

/// What a packet costs on the wire and in time, per fabric: the packet world's
/// own constants, passed in by whoever builds both.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WireModel {
    /// Payload bytes per full packet.
    pub mtu: u32,
    /// Wire bytes a data packet adds to its payload (headers and trailers).
    pub overhead: u32,
    /// Wire bytes of one ACK.
    pub ack_bytes: u32,
    /// Data packets per ACK.
    pub ack_every: u32,
    /// A switch's port-to-port latency, ps.
    pub switch_latency_ps: u64,
    /// Switches receive a whole packet before sending it on.
    pub store_and_forward: bool,
    /// Fixed latency of the two NICs together (send and receive pipelines), ps.
    pub endpoint_ps: u64,
    /// The sending NIC's payload ceiling in parts per million of its link's data
    /// rate (the packet worlds' `hca_payload_ppm` / `payload_ppm`): on the NIC's
    /// egress a payload byte costs at least `1e6 / ppm` wire bytes, as the packet
    /// worlds idle the line after each data packet. 0 or 1,000,000: line rate.
    pub nic_payload_ppm: u32,
}

impl WireModel {
    /// Wire bytes per payload byte on the data path.
    pub fn data_weight(&self) -> f64 {
        f64::from(self.mtu + self.overhead) / f64::from(self.mtu)
    }

    /// The cost per payload byte on the sending NIC's egress of a data path
    /// whose links cost `data_weight`: at least `1e6 / nic_payload_ppm`.
    pub fn at_nic(&self, data_weight: f64) -> f64 {
        let ppm = self.nic_payload_ppm;
        if ppm == 0 || ppm >= 1_000_000 {
            data_weight
        } else {
            data_weight.max(1e6 / f64::from(ppm))
        }
    }

    /// Wire bytes of ACKs per payload byte on the reverse path.
    pub fn ack_weight(&self) -> f64 {
        f64::from(self.ack_bytes) / (f64::from(self.ack_every.max(1)) * f64::from(self.mtu))
    }

    /// Wire bytes per payload byte of messages of `bytes` on the data path:
    /// every packet carries its headers, the last (short) one too.
    pub fn data_weight_for(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            return self.data_weight();
        }
        let packets = bytes.div_ceil(u64::from(self.mtu.max(1)));
        (bytes + packets * u64::from(self.overhead)) as f64 / bytes as f64
    }

    /// Wire bytes of ACKs per payload byte of messages of `bytes`: one ACK per
    /// `ack_every` packets and one on a message's last packet.
    pub fn ack_weight_for(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            return self.ack_weight();
        }
        let packets = bytes.div_ceil(u64::from(self.mtu.max(1)));
        let acks = packets.div_ceil(u64::from(self.ack_every.max(1)));
        (acks * u64::from(self.ack_bytes)) as f64 / bytes as f64
    }
}

/// The flow network's resources for a fabric: one per cabled port's egress.
#[derive(Clone, Debug)]
pub struct Ports {
    base: Vec<u32>,
    res: Vec<u32>,
    bps: Vec<u64>,
}

const NONE: u32 = u32::MAX;

impl Ports {
    /// Add a resource to `sim` for every cabled port of `f`, at its link's data
    /// rate in wire bytes per picosecond, scaled by the link's `efficiency` (the
    /// share its error recovery leaves; 1.0 when healthy).
    pub fn build(f: &Fabric, sim: &mut FlowSim) -> Ports {
        let mut base = Vec::with_capacity(f.nodes.len() + 1);
        let mut n = 0u32;
        for node in &f.nodes {
            base.push(n);
            n += node.ports.len() as u32;
        }
        base.push(n);
        let mut res = vec![NONE; n as usize];
        let mut bps = vec![0; n as usize];
        for (i, node) in f.nodes.iter().enumerate() {
            for p in 0..node.ports.len() {
                if let Some((_, l)) = f.peer(NodeId(i as u32), p as u8) {
                    let lk = f.link(l);
                    let rate = lk.rate.data_bps();
                    let g = (base[i] + p as u32) as usize;
                    res[g] = sim.add_resource(rate as f64 * lk.efficiency / 8e12);
                    bps[g] = rate;
                }
            }
        }
        Ports { base, res, bps }
    }

    /// The resource of `e`'s egress (`None` for an uncabled port).
    pub fn resource(&self, e: Endpoint) -> Option<u32> {
        let r = *self.res.get((self.base[e.node.idx()] + u32::from(e.port)) as usize)?;
        (r != NONE).then_some(r)
    }

    /// The port whose egress is resource `r` (`None` for a resource that is no
    /// port's, such as an NVLink added beside them).
    pub fn endpoint(&self, r: u32) -> Option<Endpoint> {
        let g = self.res.iter().position(|&x| x == r)? as u32;
        let node = self.base.partition_point(|&b| b <= g) - 1;
        Some(Endpoint {
            node: NodeId(node as u32),
            port: (g - self.base[node]) as u8,
        })
    }

    /// `e`'s link rate, bits per second (0 when uncabled).
    pub fn bps(&self, e: Endpoint) -> u64 {
        self.bps
            .get((self.base[e.node.idx()] + u32::from(e.port)) as usize)
            .copied()
            .unwrap_or(0)
    }
}

/// The first cabled port of a CA, where its traffic leaves.
fn nic_port(f: &Fabric, n: NodeId) -> Result<Endpoint, PathError> {
    f.node(n)
        .port_nums()
        .find(|&p| f.peer(n, p).is_some())
        .map(|port| Endpoint { node: n, port })
        .ok_or_else(|| PathError::NoPort {
            node: f.node(n).name.clone(),
        })
}

/// Walk from `src`'s NIC port to `dst`, asking `next` at every switch for the
/// egress port. Returns the egress ports in order (the NIC's first).
fn walk(
    f: &Fabric,
    src: NodeId,
    dst: NodeId,
    mut next: impl FnMut(NodeId) -> Result<u8, PathError>,
) -> Result<Vec<Endpoint>, PathError> {
    let name = |n: NodeId| f.node(n).name.clone();
    let mut out = vec![nic_port(f, src)?];
    loop {
        let e = *out.last().expect("the path starts with the NIC's port");
        let Some((peer, _)) = f.peer(e.node, e.port) else {
            return Err(PathError::DeadEnd {
                src: name(src),
                dst: name(dst),
                at: name(e.node),
                port: e.port,
            });
        };
        if peer.node == dst {
            return Ok(out);
        }
        if f.node(peer.node).kind != NodeKind::Switch {
            return Err(PathError::DeadEnd {
                src: name(src),
                dst: name(dst),
                at: name(peer.node),
                port: peer.port,
            });
        }
        if out.len() > MAX_HOPS {
            return Err(PathError::Loop {
                src: name(src),
                dst: name(dst),
            });
        }
        let port = next(peer.node)?;
        out.push(Endpoint { node: peer.node, port });
    }
}

/// The InfiniBand route from `src` to `dst` by the SM's LFTs.
pub fn ib_route(f: &Fabric, t: &RoutingTables, src: NodeId, dst: NodeId) -> Result<Vec<Endpoint>, PathError> {
    let d = nic_port(f, dst)?;
    let lid = t.lid_of(dst, d.port).ok_or_else(|| PathError::NoLid {
        node: f.node(dst).name.clone(),
        port: d.port,
    })?;
    walk(f, src, dst, |sw| {
        t.lft
            .get(sw.idx())
            .and_then(|l| l.get(lid))
            .ok_or_else(|| PathError::NoRoute {
                switch: f.node(sw).name.clone(),
                dst: f.node(dst).name.clone(),
            })
    })
}

/// Ethernet forwarding as the packet world does it.
#[derive(Clone, Copy, Debug)]
pub struct EthRouting<'a> {
    /// The control plane's ECMP groups.
    pub table: &'a EcmpTable,
    /// The hash configuration (each switch XORs its node index into the seed).
    pub hash: HashConfig,
    /// RoCEv1: the hash sees MAC addresses only.
    pub rocev1: bool,
}

impl EthRouting<'_> {
    /// The route of connection `k`'s packets from `src` to `dst` (for its ACKs,
    /// pass the ends swapped: both directions hash the QP's source port).
    pub fn route(&self, f: &Fabric, src: NodeId, dst: NodeId, k: u32) -> Result<Vec<Endpoint>, PathError> {
        let qpn = 0x100 + 2 * k;
        let key = if self.rocev1 {
            FlowKey::rocev1(src.0, dst.0, k)
        } else {
            FlowKey {
                sip: host_ip(src.0),
                dip: host_ip(dst.0),
                sport: roce_udp_sport(qpn, qpn + 1),
                dport: 4791,
                proto: 17,
                smac: 0,
                dmac: 0,
                dqpn: k,
            }
        };
        walk(f, src, dst, |sw| {
            let mut h = HashConfig {
                seed: self.hash.seed ^ sw.0,
                ..self.hash
            };
            if self.rocev1 {
                h.fields = field::L2;
            }
            self.table
                .next_port(sw, dst, h.hash(&key))
                .ok_or_else(|| PathError::NoRoute {
                    switch: f.node(sw).name.clone(),
                    dst: f.node(dst).name.clone(),
                })
        })
    }
}

/// Open a connection on `sim` along `data` (egress ports from the sender) with
/// its ACKs along `ack`, costed by `m` ([`costs`]).
pub fn open(
    sim: &mut FlowSim,
    f: &Fabric,
    ports: &Ports,
    m: &WireModel,
    data: &[Endpoint],
    ack: &[Endpoint],
) -> Result<ConnId, FlowError> {
    let (uses, latency) = costs(f, ports, m, data, ack);
    sim.open(uses, latency, f64::INFINITY)
}

/// What a message along `data` (egress ports from the sender), with its ACKs
/// along `ack`, costs under `m`: the resources with their weights, and the
/// latency from a message's last byte leaving the sender to its arrival
/// (propagation, switch latency, and on store-and-forward switches one packet's
/// serialization per switch, plus the endpoints').
pub fn costs(f: &Fabric, ports: &Ports, m: &WireModel, data: &[Endpoint], ack: &[Endpoint]) -> (Vec<Use>, u64) {
    costs_of(f, ports, m, data, ack, m.data_weight(), m.ack_weight())
}

/// [`costs`] for a connection whose messages are all `bytes` long: the headers
/// of their last, short packets and the ACK each message's end draws count
/// ([`WireModel::data_weight_for`], [`WireModel::ack_weight_for`]).
pub fn costs_for(
    f: &Fabric,
    ports: &Ports,
    m: &WireModel,
    data: &[Endpoint],
    ack: &[Endpoint],
    bytes: u64,
) -> (Vec<Use>, u64) {
    costs_of(
        f,
        ports,
        m,
        data,
        ack,
        m.data_weight_for(bytes),
        m.ack_weight_for(bytes),
    )
}

fn costs_of(
    f: &Fabric,
    ports: &Ports,
    m: &WireModel,
    data: &[Endpoint],
    ack: &[Endpoint],
    data_weight: f64,
    ack_weight: f64,
) -> (Vec<Use>, u64) {
    let mut uses = Vec::with_capacity(data.len() + ack.len());
    let mut latency = m.endpoint_ps;
    let pkt_bits = u64::from(m.mtu + m.overhead) * 8;
    let nic_weight = m.at_nic(data_weight);
    for (i, &e) in data.iter().enumerate() {
        if let Some(r) = ports.resource(e) {
            uses.push(Use {
                res: r,
                weight: if i == 0 { nic_weight } else { data_weight },
            });
        }
        if let Some((_, l)) = f.peer(e.node, e.port) {
            latency += f.link(l).delay_ps;
        }
        if i > 0 {
            latency += m.switch_latency_ps;
            if m.store_and_forward {
                let bps = ports.bps(e).max(1);
                latency += (pkt_bits * 1_000_000_000_000).div_ceil(bps);
            }
        }
    }
    if ack_weight > 0.0 {
        for &e in ack {
            if let Some(r) = ports.resource(e) {
                uses.push(Use {
                    res: r,
                    weight: ack_weight,
                });
            }
        }
    }
    (uses, latency)
}
