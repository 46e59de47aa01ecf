//! The ECMP hash: what it reads from a packet ([`FlowKey`], [`field`]), its function
//! and seed ([`HashConfig`]), and the load it puts on the members of a group.
//!
//! RoCEv2's entropy is the UDP source port, which the NIC derives per QP
//! ([`crate::roce_udp_sport`]); RoCEv1 has no IP/UDP header, so its hash sees only MAC
//! addresses ([`field::L2`]). The simulator hashes every packet a switch routes: the
//! functions here are `#[inline]` so they inline across the crate boundary.

use crate::addr::{ROCEV2_UDP_PORT, host_ip, host_mac, roce_udp_sport};

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
    #[inline]
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
    #[inline]
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
    /// IPv4 source address.
    pub const SIP: u16 = 1;
    /// IPv4 destination address.
    pub const DIP: u16 = 2;
    /// UDP (or TCP) source port.
    pub const SPORT: u16 = 4;
    /// UDP (or TCP) destination port.
    pub const DPORT: u16 = 8;
    /// IP protocol.
    pub const PROTO: u16 = 16;
    /// Source MAC address.
    pub const SMAC: u16 = 32;
    /// Destination MAC address.
    pub const DMAC: u16 = 64;
    /// Destination QPN of the BTH.
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
#[inline]
pub fn crc32(seed: u32, data: &[u8]) -> u32 {
    let mut c = !seed;
    for &b in data {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// MurmurHash3 x86_32 of 32-bit words (Austin Appleby's public-domain algorithm).
#[inline]
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
    #[inline]
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
    use rand::{RngCore, SeedableRng};
    use rand_pcg::Pcg64Mcg;

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
        let at_leaf: Vec<&FlowKey> = keys.iter().filter(|k| cfg.hash(k).is_multiple_of(2)).collect();
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
