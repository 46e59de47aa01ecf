//! Host addressing: the IPv4 address, MAC and RoCEv2 UDP source port of a host.
//!
//! Host node `id` gets `11.X.Y.1` with `X.Y = id` in base 256, as HPCC ns-3 numbers
//! its hosts (`0x0b000001 + (id/256)·0x10000 + (id%256)·0x100`, shared simulators
//! reference §1.1.1), so fct.txt lines match ns-3's. The simulator calls these per
//! packet: they are `#[inline]` so they inline across the crate boundary.

/// The RoCEv2 UDP destination port (IANA 4791).
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// IPv4 address of host node `id` (HPCC ns-3 numbering).
#[inline]
pub fn host_ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x1_0000 + (id % 256) * 0x100
}

/// Dotted form of an IPv4 address.
pub fn ip_string(ip: u32) -> String {
    let b = ip.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// A locally administered MAC for node `id` (02:00 + id), for RoCEv1 hashing.
#[inline]
pub fn host_mac(id: u32) -> u64 {
    0x0200_0000_0000 | u64::from(id)
}

/// The UDP source port a RoCEv2 NIC puts on QP (`lqpn` → `rqpn`) traffic: the
/// Linux RDMA core folds `lqpn·rqpn` into a 20-bit flow label (xor of the
/// product's 20-bit slices) and the label into the 0xC000..0xFFFF range
/// (`rdma_calc_flow_label`, `rdma_flow_label_to_udp_sport` in
/// `include/rdma/ib_verbs.h`; IBA Annex A17 asks for a source port per QP).
#[inline]
pub fn roce_udp_sport(lqpn: u32, rqpn: u32) -> u16 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    let fl = (v & 0xf_ffff) as u32;
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    (low | 0xc000) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
