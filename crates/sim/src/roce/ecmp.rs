//! Layer 3 for RoCEv2 and the layer-2 limits of RoCEv1.
//!
//! * Addressing: host node `id` gets `11.X.Y.1` with `X.Y = id` in base 256, as
//!   HPCC ns-3 numbers its hosts (`0x0b000001 + (id/256)·0x10000 + (id%256)·0x100`,
//!   shared simulators reference §1.1.1), so fct.txt lines match ns-3's.
//! * [`EcmpTable`]: for every switch and destination host, the group of ports on
//!   shortest paths (BFS over switches from each destination, as HPCC ns-3's
//!   `switch-node.cc` keeps all equal-cost next hops). Groups are interned: a
//!   (switch, destination) cell holds a `u32` group id. A failed link shrinks the
//!   groups after a convergence delay; until then packets hashed onto it are
//!   lost (the engine drops them as "link down").
//! * [`HashConfig`]: the fields, seed and function of the ECMP hash. RoCEv2's
//!   entropy is the UDP source port, which the NIC derives per QP.
//! * RoCEv1 (EtherType 0x8915, no IP header) cannot be routed: [`check_roce_v1`]
//!   refuses a path that needs a router, and its hash sees only MAC addresses.

use std::collections::BTreeMap;

use fabric::{Fabric, FlatFabric, LinkId, NodeId, NodeKind};

use crate::engine::Time;

/// The RoCEv2 UDP destination port (IANA 4791).
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// IPv4 address of host node `id` (HPCC ns-3 numbering).
pub fn host_ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x1_0000 + (id % 256) * 0x100
}

/// Dotted form of an IPv4 address.
pub fn ip_string(ip: u32) -> String {
    let b = ip.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// A locally administered MAC for node `id` (02:00 + id), for RoCEv1 hashing.
pub fn host_mac(id: u32) -> u64 {
    0x0200_0000_0000 | u64::from(id)
}

/// The UDP source port a RoCEv2 NIC puts on QP (`lqpn` → `rqpn`) traffic: the
/// Linux RDMA core folds `lqpn·rqpn` into a 20-bit flow label (xor of the
/// product's 20-bit slices) and the label into the 0xC000..0xFFFF range
/// (`rdma_calc_flow_label`, `rdma_flow_label_to_udp_sport` in
/// `include/rdma/ib_verbs.h`; IBA Annex A17 asks for a source port per QP).
pub fn roce_udp_sport(lqpn: u32, rqpn: u32) -> u16 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    let fl = (v & 0xf_ffff) as u32;
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    (low | 0xc000) as u16
}

/// What an ECMP hash reads from a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    /// IPv4 source (0 for RoCEv1).
    pub sip: u32,
    /// IPv4 destination.
    pub dip: u32,
    /// UDP source port.
    pub sport: u16,
    /// UDP destination port.
    pub dport: u16,
    /// IP protocol (17 = UDP).
    pub proto: u8,
    /// Source MAC (48 bits).
    pub smac: u64,
    /// Destination MAC.
    pub dmac: u64,
    /// Destination QPN (BTH), for QP-aware hashing (Meta's E-ECMP).
    pub dqpn: u32,
}

impl FlowKey {
    /// A RoCEv2 flow between host nodes with the NIC's per-QP source port.
    pub fn rocev2(src: u32, dst: u32, lqpn: u32, rqpn: u32) -> FlowKey {
        FlowKey {
            sip: host_ip(src),
            dip: host_ip(dst),
            sport: roce_udp_sport(lqpn, rqpn),
            dport: ROCEV2_UDP_PORT,
            proto: 17,
            smac: host_mac(src),
            dmac: host_mac(dst),
            dqpn: rqpn,
        }
    }

    /// A RoCEv1 flow: only layer-2 fields exist.
    pub fn rocev1(src: u32, dst: u32, rqpn: u32) -> FlowKey {
        FlowKey {
            smac: host_mac(src),
            dmac: host_mac(dst),
            dqpn: rqpn,
            ..FlowKey::default()
        }
    }
}

/// Fields a hash may read (bit set).
pub mod field {
    pub const SIP: u16 = 1;
    pub const DIP: u16 = 2;
    pub const SPORT: u16 = 4;
    pub const DPORT: u16 = 8;
    pub const PROTO: u16 = 16;
    pub const SMAC: u16 = 32;
    pub const DMAC: u16 = 64;
    pub const DQPN: u16 = 128;
    /// The classic IP 5-tuple.
    pub const FIVE_TUPLE: u16 = SIP | DIP | SPORT | DPORT | PROTO;
    /// What a layer-2 hash can see.
    pub const L2: u16 = SMAC | DMAC;
}

/// The hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HashFn {
    /// CRC-32 (IEEE 802.3 polynomial, reflected) over the field bytes, the seed
    /// as the initial register: the family switch ASICs offer.
    Crc32,
    /// MurmurHash3 x86_32 over the field bytes zero-padded to 32-bit words, seeded (HPCC ns-3 hashes
    /// `(sip, dip, sport | dport << 16)` this way with the switch id as seed).
    Murmur3,
}

/// An ECMP hash configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashConfig {
    /// Which [`field`]s are read.
    pub fields: u16,
    /// Seed (per switch in practice: the same seed at every tier polarizes).
    pub seed: u32,
    /// Function.
    pub func: HashFn,
}

impl Default for HashConfig {
    fn default() -> Self {
        HashConfig {
            fields: field::FIVE_TUPLE,
            seed: 0,
            func: HashFn::Crc32,
        }
    }
}

static CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// CRC-32 (reflected 0xEDB88320) of `data` starting from register `!seed`, final xor.
pub fn crc32(seed: u32, data: &[u8]) -> u32 {
    let mut c = !seed;
    for &b in data {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// MurmurHash3 x86_32 of 32-bit words (Austin Appleby's public-domain algorithm).
pub fn murmur3_words(seed: u32, words: &[u32]) -> u32 {
    let (c1, c2) = (0xcc9e_2d51u32, 0x1b87_3593u32);
    let mut h = seed;
    for &w in words {
        let k = w.wrapping_mul(c1).rotate_left(15).wrapping_mul(c2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h ^= (words.len() * 4) as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

impl HashConfig {
    /// Hash a flow. Reads the configured fields in a fixed order; no allocation.
    pub fn hash(&self, k: &FlowKey) -> u32 {
        let f = self.fields;
        let mut buf = [0u8; 32];
        let mut n = 0;
        let mut put = |bytes: &[u8]| {
            buf[n..n + bytes.len()].copy_from_slice(bytes);
            n += bytes.len();
        };
        if f & field::SIP != 0 {
            put(&k.sip.to_be_bytes());
        }
        if f & field::DIP != 0 {
            put(&k.dip.to_be_bytes());
        }
        if f & field::SPORT != 0 {
            put(&k.sport.to_be_bytes());
        }
        if f & field::DPORT != 0 {
            put(&k.dport.to_be_bytes());
        }
        if f & field::PROTO != 0 {
            put(&[k.proto]);
        }
        if f & field::SMAC != 0 {
            put(&k.smac.to_be_bytes()[2..]);
        }
        if f & field::DMAC != 0 {
            put(&k.dmac.to_be_bytes()[2..]);
        }
        if f & field::DQPN != 0 {
            put(&k.dqpn.to_be_bytes()[1..]);
        }
        match self.func {
            HashFn::Crc32 => crc32(self.seed, &buf[..n]),
            HashFn::Murmur3 => {
                let mut w = [0u32; 8];
                let nw = n.div_ceil(4);
                for (i, c) in buf[..nw * 4].chunks_exact(4).enumerate() {
                    w[i] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
                murmur3_words(self.seed, &w[..nw])
            }
        }
    }
}

/// ECMP forwarding state of a whole fabric.
#[derive(Clone, Debug)]
pub struct EcmpTable {
    /// Host (CA) nodes in id order; a destination's column is its index here.
    hosts: Vec<NodeId>,
    host_index: Vec<u32>,
    /// Switch nodes in id order.
    switches: Vec<NodeId>,
    switch_index: Vec<u32>,
    /// `[switch_idx * hosts + host_idx]` → group id (`u32::MAX`: unreachable).
    cell: Vec<u32>,
    /// Group id → ports (local port numbers), interned.
    groups: Vec<Vec<u8>>,
    link_down: Vec<bool>,
    pending: Option<Time>,
    /// Convergence delay after a link failure or repair.
    pub convergence: Time,
    /// Recomputations done.
    pub recomputes: u64,
}

/// No shortest path exists (the destination is cut off).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("route from {switch} to {dst}: no path (is a link down or the node not a host?)")]
pub struct NoRoute {
    /// The switch's name.
    pub switch: String,
    /// The destination's name.
    pub dst: String,
}

impl EcmpTable {
    /// Build the groups for `fab` (all links up).
    pub fn build(fab: &Fabric, convergence: Time) -> EcmpTable {
        let n = fab.nodes.len();
        let hosts: Vec<NodeId> = fab.nodes_of(NodeKind::Ca).collect();
        let switches: Vec<NodeId> = fab.nodes_of(NodeKind::Switch).collect();
        let mut host_index = vec![u32::MAX; n];
        for (i, h) in hosts.iter().enumerate() {
            host_index[h.idx()] = i as u32;
        }
        let mut switch_index = vec![u32::MAX; n];
        for (i, s) in switches.iter().enumerate() {
            switch_index[s.idx()] = i as u32;
        }
        let mut t = EcmpTable {
            cell: vec![u32::MAX; switches.len() * hosts.len()],
            hosts,
            host_index,
            switches,
            switch_index,
            groups: Vec::new(),
            link_down: vec![false; fab.links.len()],
            pending: None,
            convergence,
            recomputes: 0,
        };
        t.recompute(&fab.freeze());
        t
    }

    fn recompute(&mut self, flat: &FlatFabric) {
        self.recomputes += 1;
        self.groups.clear();
        self.cell.fill(u32::MAX);
        let mut intern: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        let n = flat.num_nodes();
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        let nh = self.hosts.len();
        let mut ports = Vec::new();
        for (hi, &dst) in self.hosts.iter().enumerate() {
            // BFS from the destination over up links; only switches forward.
            dist.fill(u32::MAX);
            dist[dst.idx()] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(x) = queue.pop_front() {
                if x != dst && flat.kind(x) != NodeKind::Switch {
                    continue;
                }
                for a in flat.neighbors(x) {
                    if self.link_down[a.link.idx()] {
                        continue;
                    }
                    if dist[a.peer.idx()] == u32::MAX {
                        dist[a.peer.idx()] = dist[x.idx()] + 1;
                        queue.push_back(a.peer);
                    }
                }
            }
            for (si, &s) in self.switches.iter().enumerate() {
                let d = dist[s.idx()];
                if d == u32::MAX || d == 0 {
                    continue;
                }
                ports.clear();
                for a in flat.neighbors(s) {
                    if self.link_down[a.link.idx()] || dist[a.peer.idx()] != d - 1 {
                        continue;
                    }
                    if a.peer == dst || flat.kind(a.peer) == NodeKind::Switch {
                        ports.push(a.port);
                    }
                }
                if ports.is_empty() {
                    continue;
                }
                let next = intern.len() as u32;
                let g = *intern.entry(ports.clone()).or_insert_with(|| {
                    self.groups.push(ports.clone());
                    next
                });
                self.cell[si * nh + hi] = g;
            }
        }
    }

    /// The ECMP group (ports) of `switch` toward host `dst`.
    pub fn group(&self, switch: NodeId, dst: NodeId) -> &[u8] {
        let si = self.switch_index[switch.idx()];
        let hi = self.host_index[dst.idx()];
        if si == u32::MAX || hi == u32::MAX {
            return &[];
        }
        match self.cell[si as usize * self.hosts.len() + hi as usize] {
            u32::MAX => &[],
            g => &self.groups[g as usize],
        }
    }

    /// Number of distinct groups.
    pub fn num_groups(&self) -> usize {
        self.groups.len()
    }

    /// Egress port of `switch` for a packet to `dst` with hash `h`.
    #[inline]
    pub fn next_port(&self, switch: NodeId, dst: NodeId, h: u32) -> Option<u8> {
        let g = self.group(switch, dst);
        if g.is_empty() {
            None
        } else {
            Some(g[(h as usize) % g.len()])
        }
    }

    /// Like [`next_port`](Self::next_port) with a named error.
    pub fn route(&self, fab: &Fabric, switch: NodeId, dst: NodeId, h: u32) -> Result<u8, NoRoute> {
        self.next_port(switch, dst, h).ok_or_else(|| NoRoute {
            switch: fab.node(switch).name.clone(),
            dst: fab.node(dst).name.clone(),
        })
    }

    /// Is `link` down?
    pub fn is_down(&self, link: LinkId) -> bool {
        self.link_down[link.idx()]
    }

    /// `link` fails at `now`; the groups shrink at `now + convergence`.
    pub fn fail_link(&mut self, link: LinkId, now: Time) {
        self.link_down[link.idx()] = true;
        self.pending = Some(now + self.convergence);
    }

    /// `link` comes back at `now`; the groups grow at `now + convergence`.
    pub fn repair_link(&mut self, link: LinkId, now: Time) {
        self.link_down[link.idx()] = false;
        self.pending = Some(now + self.convergence);
    }

    /// When the pending recomputation is due.
    pub fn next_deadline(&self) -> Time {
        self.pending.unwrap_or(Time::NEVER)
    }

    /// Apply a recomputation that is due by `now`. Returns true if the groups changed.
    pub fn poll(&mut self, fab: &Fabric, now: Time) -> bool {
        match self.pending {
            Some(t) if t <= now => {
                self.pending = None;
                self.recompute(&fab.freeze());
                true
            }
            _ => false,
        }
    }
}

/// How the Ethernet switches of a RoCE fabric forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Mode {
    /// Every switch routes at layer 3 (the usual RoCEv2 Clos: a subnet per ToR).
    /// Hosts on the same leaf share a layer-2 domain; any other path is routed.
    RoutedAtLeaf,
    /// The switches bridge one flat layer-2 domain; only router nodes route.
    FlatL2,
}

/// A RoCEv1 path that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoceV1Error {
    /// The two hosts sit in different layer-2 domains.
    #[error(
        "connect {src} to {dst} with RoCEv1: the path crosses the layer-3 hop {hop}, and RoCEv1 frames \
         (EtherType 0x8915, GRH but no IP header) cannot be routed; RoCEv1 works only inside one layer-2 \
         domain: use RoCEv2 (UDP/IP) or put both hosts in one domain"
    )]
    NeedsRouter { src: String, dst: String, hop: String },
    /// No path at all.
    #[error("connect {src} to {dst} with RoCEv1: no layer-2 path")]
    NoPath { src: String, dst: String },
}

/// Check that a RoCEv1 connection from host `src` to host `dst` stays in one
/// layer-2 domain under `mode`.
pub fn check_roce_v1(fab: &Fabric, src: NodeId, dst: NodeId, mode: L2Mode) -> Result<(), RoceV1Error> {
    let flat = fab.freeze();
    let name = |n: NodeId| fab.node(n).name.clone();
    // Layer-2 reachability: hosts and bridging switches; routers never bridge.
    let bridges = |x: NodeId| match mode {
        L2Mode::FlatL2 => flat.kind(x) == NodeKind::Switch,
        L2Mode::RoutedAtLeaf => flat.kind(x) == NodeKind::Switch && flat.neighbors(x).iter().any(|a| a.peer == src),
    };
    let mut seen = vec![false; flat.num_nodes()];
    let mut stack = vec![src];
    seen[src.idx()] = true;
    while let Some(x) = stack.pop() {
        if x == dst {
            return Ok(());
        }
        if x != src && !bridges(x) {
            continue;
        }
        for a in flat.neighbors(x) {
            if !seen[a.peer.idx()] {
                seen[a.peer.idx()] = true;
                stack.push(a.peer);
            }
        }
    }
    // Name the first layer-3 hop on a shortest path, for the explanation.
    let d = flat.bfs_hops(dst);
    let mut x = src;
    let mut hops = 0;
    while x != dst && hops < 64 {
        let next = flat
            .neighbors(x)
            .iter()
            .filter(|a| d[a.peer.idx()] < d[x.idx()])
            .map(|a| a.peer)
            .next();
        let Some(nx) = next else { break };
        if nx != dst && !bridges(nx) {
            return Err(RoceV1Error::NeedsRouter {
                src: name(src),
                dst: name(dst),
                hop: name(nx),
            });
        }
        x = nx;
        hops += 1;
    }
    // Routers are not transit nodes for bfs_hops: look for one adjacent to the L2 region.
    for (i, s) in seen.iter().enumerate() {
        if *s && flat.kind(NodeId(i as u32)) == NodeKind::Router {
            return Err(RoceV1Error::NeedsRouter {
                src: name(src),
                dst: name(dst),
                hop: name(NodeId(i as u32)),
            });
        }
    }
    Err(RoceV1Error::NoPath {
        src: name(src),
        dst: name(dst),
    })
}

/// Load per member link when `flows` (each `(key, bytes)`) are hashed into `n` links.
pub fn spread(cfg: &HashConfig, flows: &[(FlowKey, u64)], n: usize) -> Vec<u64> {
    let mut load = vec![0u64; n];
    for (k, b) in flows {
        load[(cfg.hash(k) as usize) % n] += b;
    }
    load
}

/// Busiest member over the mean.
pub fn max_over_mean(load: &[u64]) -> f64 {
    let sum: u64 = load.iter().sum();
    if sum == 0 {
        return 1.0;
    }
    *load.iter().max().expect("non-empty") as f64 * load.len() as f64 / sum as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{LinkRate, NodeSpec};
    use rand::{RngCore, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    use wire::Guid;

    #[test]
    fn addressing_and_sport_follow_hpcc_and_linux() {
        assert_eq!(host_ip(0), 0x0b00_0001);
        assert_eq!(ip_string(host_ip(257)), "11.1.1.1");
        assert_eq!(ip_string(host_ip(5)), "11.0.5.1");
        let s = roce_udp_sport(0x11, 0x22);
        assert!(s >= 0xc000);
        // Deterministic, and different QP pairs spread over the range.
        assert_eq!(s, roce_udp_sport(0x11, 0x22));
        let distinct: std::collections::BTreeSet<u16> = (1..200).map(|q| roce_udp_sport(q, 7)).collect();
        assert!(distinct.len() > 150);
    }

    #[test]
    fn crc32_and_murmur3_match_reference_values() {
        // CRC-32/ISO-HDLC check value of "123456789".
        assert_eq!(crc32(0, b"123456789"), 0xcbf4_3926);
        // MurmurHash3_x86_32 of the 4 bytes 0x00000000, seed 0: 0x2362f9de.
        assert_eq!(murmur3_words(0, &[0]), 0x2362_f9de);
        // Empty input with seed 0 hashes to 0; seed 1 to 0x514e28b7.
        assert_eq!(murmur3_words(0, &[]), 0);
        assert_eq!(murmur3_words(1, &[]), 0x514e_28b7);
    }

    /// Two leaves with 2 hosts each, two spines.
    fn leaf_spine_2x2() -> (Fabric, Vec<NodeId>, Vec<NodeId>, Vec<NodeId>) {
        let mut f = Fabric::new();
        let r = LinkRate::eth(100).unwrap();
        let leaves: Vec<NodeId> = (0..2)
            .map(|i| {
                f.add_node(NodeSpec::switch(format!("leaf{i}"), Guid(0x10 + i), 4))
                    .unwrap()
            })
            .collect();
        let spines: Vec<NodeId> = (0..2)
            .map(|i| {
                f.add_node(NodeSpec::switch(format!("spine{i}"), Guid(0x20 + i), 2))
                    .unwrap()
            })
            .collect();
        let mut hosts = Vec::new();
        for (li, &l) in leaves.iter().enumerate() {
            for k in 0..2u8 {
                let h = f
                    .add_node(NodeSpec::ca(
                        format!("h{li}{k}"),
                        Guid(0x100 + (li as u64) * 16 + u64::from(k) * 2),
                        1,
                    ))
                    .unwrap();
                f.connect(l, 1 + k, h, 1, r, 2.0).unwrap();
                hosts.push(h);
            }
            for (si, &s) in spines.iter().enumerate() {
                f.connect(l, 3 + si as u8, s, 1 + li as u8, r, 10.0).unwrap();
            }
        }
        (f, leaves, spines, hosts)
    }

    #[test]
    fn groups_hold_every_shortest_next_hop_and_shrink_after_convergence() {
        let (f, leaves, spines, hosts) = leaf_spine_2x2();
        let mut t = EcmpTable::build(&f, Time::us(50));
        // leaf0 → h10 (on leaf1): both uplinks.
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4]);
        // leaf0 → its own host: the host port only.
        assert_eq!(t.group(leaves[0], hosts[1]), &[2]);
        // spine0 → h10: down to leaf1 (spine port 2).
        assert_eq!(t.group(spines[0], hosts[2]), &[2]);
        // Fail leaf0–spine0 (link index: find it).
        let link = f.peer(leaves[0], 3).unwrap().1;
        t.fail_link(link, Time::us(100));
        assert!(!t.poll(&f, Time::us(149)));
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4], "not yet converged");
        assert!(t.poll(&f, Time::us(150)));
        assert_eq!(t.group(leaves[0], hosts[2]), &[4]);
        // spine0 reaches leaf0's hosts only by a longer path now (via leaf1, spine1).
        assert_eq!(t.group(spines[0], hosts[0]), &[2]);
        t.repair_link(link, Time::us(200));
        t.poll(&f, Time::us(250));
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4]);
        assert_eq!(t.recomputes, 3);
    }

    #[test]
    fn roce_v1_is_refused_across_a_layer3_hop() {
        let (f, _, _, hosts) = leaf_spine_2x2();
        assert!(check_roce_v1(&f, hosts[0], hosts[1], L2Mode::RoutedAtLeaf).is_ok());
        let e = check_roce_v1(&f, hosts[0], hosts[2], L2Mode::RoutedAtLeaf).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("cannot be routed") && msg.contains("spine"), "{msg}");
        assert!(check_roce_v1(&f, hosts[0], hosts[2], L2Mode::FlatL2).is_ok());
        // A router between two L2 islands.
        let mut g = Fabric::new();
        let r = LinkRate::eth(100).unwrap();
        let a = g.add_node(NodeSpec::ca("a", Guid(0x100), 1)).unwrap();
        let b = g.add_node(NodeSpec::ca("b", Guid(0x200), 1)).unwrap();
        let s1 = g.add_node(NodeSpec::switch("s1", Guid(1), 2)).unwrap();
        let s2 = g.add_node(NodeSpec::switch("s2", Guid(2), 2)).unwrap();
        let mut rt = NodeSpec::switch("rtr", Guid(3), 2);
        rt.kind = NodeKind::Router;
        let rtr = g.add_node(rt).unwrap();
        g.connect(a, 1, s1, 1, r, 1.0).unwrap();
        g.connect(s1, 2, rtr, 1, r, 1.0).unwrap();
        g.connect(rtr, 2, s2, 1, r, 1.0).unwrap();
        g.connect(s2, 2, b, 1, r, 1.0).unwrap();
        let e = check_roce_v1(&g, a, b, L2Mode::FlatL2).unwrap_err();
        assert!(
            matches!(&e, RoceV1Error::NeedsRouter { hop, .. } if hop == "rtr"),
            "{e}"
        );
    }

    /// Meta SIGCOMM'24 (simulators reference §3.4): 1000 flows over 16 uplinks
    /// put more than 1.2× the mean on the busiest with plain ECMP; splitting
    /// each connection over more QPs (more source ports) evens the load. RoCEv1
    /// hashing sees only MACs: extra QPs change nothing (polarization).
    #[test]
    fn ecmp_imbalance_and_qp_scaling_1000_flows_16_uplinks() {
        let mut rng = Pcg64Mcg::seed_from_u64(2024);
        // 1000 connections from 64 hosts on this leaf to 960 remote hosts.
        let conns: Vec<(u32, u32, u32)> = (0..1000)
            .map(|_| {
                (
                    rng.next_u32() % 64,
                    64 + rng.next_u32() % 960,
                    0x100 + rng.next_u32() % 0x10000,
                )
            })
            .collect();
        let bytes = 1u64 << 30;
        let build = |qps: u32, v1: bool| -> Vec<(FlowKey, u64)> {
            let mut v = Vec::new();
            for &(s, d, q) in &conns {
                for k in 0..qps {
                    let key = if v1 {
                        FlowKey::rocev1(s, d, q + k)
                    } else {
                        FlowKey::rocev2(s, d, q + k, q + 7 * k + 1)
                    };
                    v.push((key, bytes / u64::from(qps)));
                }
            }
            v
        };
        let cfg = HashConfig {
            seed: 0x5eed,
            ..HashConfig::default()
        };
        let mut ratios = Vec::new();
        for qps in [1u32, 4, 16] {
            let r = max_over_mean(&spread(&cfg, &build(qps, false), 16));
            ratios.push(r);
        }
        assert!(ratios[0] >= 1.2, "1 QP per connection: max/mean {:.3}", ratios[0]);
        assert!(ratios[1] < ratios[0] && ratios[2] < ratios[1], "{ratios:?}");
        assert!(ratios[2] < 1.1, "{ratios:?}");
        // Murmur3 too.
        let m = HashConfig {
            func: HashFn::Murmur3,
            seed: 7,
            ..HashConfig::default()
        };
        let r1 = max_over_mean(&spread(&m, &build(1, false), 16));
        let r16 = max_over_mean(&spread(&m, &build(16, false), 16));
        assert!(r1 >= 1.2 && r16 < r1, "murmur3 {r1:.3} → {r16:.3}");
        // RoCEv1: an L2 hash over MAC pairs; more QPs do not help at all.
        let l2 = HashConfig {
            fields: field::L2,
            ..cfg
        };
        let v1_1 = max_over_mean(&spread(&l2, &build(1, true), 16));
        let v1_16 = max_over_mean(&spread(&l2, &build(16, true), 16));
        eprintln!(
            "ECMP 1000 flows / 16 uplinks, max/mean: RoCEv2 crc32 1/4/16 QPs {ratios:.3?}, murmur3 1/16 QPs {r1:.3}/{r16:.3}, RoCEv1 L2 1/16 QPs {v1_1:.3}/{v1_16:.3}"
        );
        assert_eq!(v1_1, v1_16, "RoCEv1 hashing ignores QPs");
        assert!(v1_16 > ratios[2] + 0.1, "v1 {v1_16:.3} vs v2 16 QPs {:.3}", ratios[2]);
    }

    #[test]
    fn same_seed_at_two_tiers_polarizes() {
        // Flows that a leaf sent to uplink 0 of 2 all hash to the same port again
        // at the next tier when it uses the same function and seed: half of its
        // 2 choices stay unused.
        let mut rng = Pcg64Mcg::seed_from_u64(11);
        let cfg = HashConfig {
            seed: 99,
            ..HashConfig::default()
        };
        let keys: Vec<FlowKey> = (0..2000)
            .map(|_| {
                FlowKey::rocev2(
                    rng.next_u32() % 64,
                    64 + rng.next_u32() % 64,
                    rng.next_u32() % 65536,
                    1 + rng.next_u32() % 65536,
                )
            })
            .collect();
        let at_leaf: Vec<&FlowKey> = keys.iter().filter(|k| cfg.hash(k) % 2 == 0).collect();
        let mut second = [0u32; 2];
        for k in &at_leaf {
            second[(cfg.hash(k) % 2) as usize] += 1;
        }
        assert_eq!(second[1], 0, "same seed: all on one port {second:?}");
        // CRC is linear: for inputs of one length a different initial register
        // only XORs a constant into the result, so a per-switch CRC seed does not
        // break the correlation either.
        let other = HashConfig { seed: 100, ..cfg };
        let mut second = [0u32; 2];
        for k in &at_leaf {
            second[(other.hash(k) % 2) as usize] += 1;
        }
        assert!(
            second[0] == 0 || second[1] == 0,
            "CRC seed change: still one port {second:?}"
        );
        // A non-linear mix with its own seed per switch does.
        let mixed = HashConfig {
            func: HashFn::Murmur3,
            seed: 100,
            ..cfg
        };
        let mut second = [0u32; 2];
        for k in &at_leaf {
            second[(mixed.hash(k) % 2) as usize] += 1;
        }
        assert!(
            second[0] > 300 && second[1] > 300,
            "murmur3 per-switch seed spreads {second:?}"
        );
    }
}
