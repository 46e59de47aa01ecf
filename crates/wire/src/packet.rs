//! Whole packets: one call decodes a captured frame into every header, the payload
//! and the ICRC/VCRC verdicts ([`decode`]); [`IbPacket::emit`] builds a complete
//! native IB, RoCEv1 or RoCEv2 packet with its lengths, checksums, pad, ICRC and
//! VCRC filled in. Neither allocates.
//!
//! ```text
//! native IB (link type Infiniband):  LRH [GRH] BTH ext* payload pad ICRC VCRC
//! RoCEv1 (Ethernet, 0x8915):         Eth [802.1Q] GRH BTH ext* payload pad ICRC
//! RoCEv2 (Ethernet, UDP 4791):       Eth [802.1Q] IPv4|IPv6 UDP BTH ext* payload pad ICRC
//! ```

use crate::bytes::put16;
use crate::crc::{IcrcKind, icrc, vcrc};
use crate::error::{Error, Result, need, room};
use crate::ib::{aeth, atomic_ack_eth, atomic_eth, bth, deth, grh, ieth, immdt, lrh, reth};
use crate::net::{ethernet, ipv4, ipv6, pfc, udp};

/// What the first byte of a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// An Ethernet II frame without FCS (pcap LINKTYPE_ETHERNET).
    Ethernet,
    /// A native IB packet from LRH through VCRC.
    Infiniband,
}

/// The IP header of a RoCEv2 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpRepr {
    /// IPv4.
    V4(ipv4::Repr),
    /// IPv6.
    V6(ipv6::Repr),
}

impl IpRepr {
    /// DSCP.
    pub fn dscp(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.dscp,
            IpRepr::V6(r) => r.dscp(),
        }
    }
    /// ECN codepoint.
    pub fn ecn(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.ecn,
            IpRepr::V6(r) => r.ecn(),
        }
    }
}

/// The headers in front of the BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encap {
    /// Native IB: LRH and, for global packets (LNH=3), a GRH.
    Ib {
        /// Local route header.
        lrh: lrh::Repr,
        /// Global route header.
        grh: Option<grh::Repr>,
    },
    /// RoCEv1: Ethernet (EtherType 0x8915) and a GRH.
    RoceV1 {
        /// Ethernet header.
        eth: ethernet::Repr,
        /// Global route header.
        grh: grh::Repr,
    },
    /// RoCEv2: Ethernet, IPv4 or IPv6, UDP to port 4791.
    RoceV2 {
        /// Ethernet header.
        eth: ethernet::Repr,
        /// IP header.
        ip: IpRepr,
        /// UDP header. In [`IbPacket::emit`], a nonzero `checksum` asks for a
        /// computed checksum and zero leaves the field zero.
        udp: udp::Repr,
    },
}

impl Encap {
    /// The ICRC masking rules for this encapsulation.
    pub fn icrc_kind(&self) -> IcrcKind {
        match self {
            Encap::Ib { grh: None, .. } => IcrcKind::IbLocal,
            Encap::Ib { grh: Some(_), .. } => IcrcKind::IbGlobal,
            Encap::RoceV1 { .. } => IcrcKind::RoceV1,
            Encap::RoceV2 { ip: IpRepr::V4(_), .. } => IcrcKind::RoceV2Ipv4,
            Encap::RoceV2 { ip: IpRepr::V6(_), .. } => IcrcKind::RoceV2Ipv6,
        }
    }
    /// Short name: "ib_local", "ib_global", "roce_v1", "roce_v2_ipv4", "roce_v2_ipv6".
    pub fn name(&self) -> &'static str {
        match self.icrc_kind() {
            IcrcKind::IbLocal => "ib_local",
            IcrcKind::IbGlobal => "ib_global",
            IcrcKind::RoceV1 => "roce_v1",
            IcrcKind::RoceV2Ipv4 => "roce_v2_ipv4",
            IcrcKind::RoceV2Ipv6 => "roce_v2_ipv6",
        }
    }
    /// Bytes in front of the BTH.
    pub fn header_len(&self) -> usize {
        match self {
            Encap::Ib { grh, .. } => 8 + if grh.is_some() { 40 } else { 0 },
            Encap::RoceV1 { eth, .. } => eth.buffer_len() + 40,
            Encap::RoceV2 {
                eth, ip: IpRepr::V4(_), ..
            } => eth.buffer_len() + 28,
            Encap::RoceV2 {
                eth, ip: IpRepr::V6(_), ..
            } => eth.buffer_len() + 48,
        }
    }
    /// Offset of the first ICRC-covered byte (0 for IB, after Ethernet for RoCE).
    fn icrc_start(&self) -> usize {
        match self {
            Encap::Ib { .. } => 0,
            Encap::RoceV1 { eth, .. } | Encap::RoceV2 { eth, .. } => eth.buffer_len(),
        }
    }
}

/// The extended transport headers after the BTH; which are present follows the opcode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// DETH.
    pub deth: Option<deth::Repr>,
    /// RETH.
    pub reth: Option<reth::Repr>,
    /// AtomicETH.
    pub atomic_eth: Option<atomic_eth::Repr>,
    /// AETH.
    pub aeth: Option<aeth::Repr>,
    /// AtomicAckETH.
    pub atomic_ack_eth: Option<atomic_ack_eth::Repr>,
    /// Immediate data.
    pub immdt: Option<immdt::Repr>,
    /// IETH.
    pub ieth: Option<ieth::Repr>,
    /// The 16 reserved bytes of a CNP (annex A17.9.3).
    pub cnp_reserved: Option<[u8; 16]>,
}

impl ExtHeaders {
    fn matches(&self, l: &crate::ib::Layout) -> bool {
        self.deth.is_some() == l.deth
            && self.reth.is_some() == l.reth
            && self.atomic_eth.is_some() == l.atomic_eth
            && self.aeth.is_some() == l.aeth
            && self.atomic_ack_eth.is_some() == l.atomic_ack_eth
            && self.immdt.is_some() == l.immdt
            && self.ieth.is_some() == l.ieth
            && self.cnp_reserved.is_some() == l.cnp_reserved
    }
    fn is_empty(&self) -> bool {
        *self == ExtHeaders::default()
    }
}

/// A native IB or RoCE packet: the Repr of the whole thing. `payload` excludes the pad.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IbPacket<'a> {
    /// Headers in front of the BTH.
    pub encap: Encap,
    /// Base transport header. `pad_count` is computed by [`IbPacket::emit`].
    pub bth: bth::Repr,
    /// Extended transport headers.
    pub ext: ExtHeaders,
    /// Payload without pad (for MADs on QP0/QP1: the 256-byte MAD).
    pub payload: &'a [u8],
}

/// Found vs computed value of a CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrcCheck<T> {
    /// The value in the packet.
    pub found: T,
    /// The value computed over the packet.
    pub computed: T,
}

impl<T: PartialEq> CrcCheck<T> {
    /// True when they agree.
    pub fn ok(&self) -> bool {
        self.found == self.computed
    }
}

/// Verdict on a UDP checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UdpChecksum {
    /// Not a UDP packet.
    NotApplicable,
    /// Zero: not computed by the sender (legal over IPv4; RoCEv2 over IPv6 commonly too).
    Absent,
    /// Correct.
    Valid,
    /// Wrong.
    Invalid,
}

/// Integrity checks of a decoded IB/RoCE packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Checks {
    /// ICRC (wire value read little-endian, as the CRC integer).
    pub icrc: CrcCheck<u32>,
    /// VCRC of native IB packets.
    pub vcrc: Option<CrcCheck<u16>>,
    /// IPv4 header checksum verdict (RoCEv2/IPv4 only).
    pub ipv4_checksum: Option<bool>,
    /// UDP checksum verdict.
    pub udp_checksum: UdpChecksum,
}

impl Checks {
    /// True when every present check passes (an absent UDP checksum passes).
    pub fn all_ok(&self) -> bool {
        self.icrc.ok()
            && self.vcrc.is_none_or(|v| v.ok())
            && self.ipv4_checksum.unwrap_or(true)
            && self.udp_checksum != UdpChecksum::Invalid
    }
}

/// A decoded frame. Returned by value with no allocation; the IB variant is the
/// large one (about 280 bytes) and the common case, so it is not boxed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[expect(clippy::large_enum_variant, reason = "boxing would allocate per packet")]
pub enum Decoded<'a> {
    /// A native IB, RoCEv1 or RoCEv2 packet.
    Ib {
        /// The headers and payload.
        packet: IbPacket<'a>,
        /// The pad bytes as sent.
        pad: &'a [u8],
        /// ICRC/VCRC/IP/UDP verdicts.
        checks: Checks,
    },
    /// An IEEE 802.3 MAC control frame (PAUSE or PFC).
    MacControl {
        /// Ethernet header.
        eth: ethernet::Repr,
        /// The frame's content.
        ctl: pfc::Repr,
    },
    /// An Ethernet frame that is neither RoCE nor MAC control.
    OtherEthernet {
        /// Ethernet header.
        eth: ethernet::Repr,
    },
    /// A native IB packet with a non-IBA LNH (raw or IPv6 over IB).
    OtherIb {
        /// Local route header.
        lrh: lrh::Repr,
    },
}

/// Ethernet frames shorter than this (no FCS) carry padding (IEEE 802.3 §3.2.8).
pub const ETH_MIN_FRAME: usize = 60;

/// Decode a frame.
///
/// Lengths are checked against each other: LRH PktLen, GRH PayLen, IPv4 Total
/// Length, IPv6 Payload Length and UDP Length must all agree with the bytes
/// present (Ethernet padding of frames under 60 bytes is allowed), and the
/// transport part must hold the opcode's extended headers and the pad. A bad
/// ICRC/VCRC/checksum is not an error: it is reported in [`Checks`].
pub fn decode(frame: &[u8], link: LinkType) -> Result<Decoded<'_>> {
    match link {
        LinkType::Infiniband => decode_ib(frame),
        LinkType::Ethernet => decode_eth(frame),
    }
}

fn decode_ib(f: &[u8]) -> Result<Decoded<'_>> {
    let lp = lrh::Packet::new_checked(f)?;
    let lrh = lrh::Repr::parse(&lp)?;
    need("VCRC", f, lrh::HEADER_LEN + 2)?;
    let claimed = lrh.pkt_len as usize * 4 + 2;
    if claimed != f.len() {
        return Err(Error::BadLength {
            header: "LRH",
            field: "PktLen (words, + 2-byte VCRC)",
            claimed,
            actual: f.len(),
        });
    }
    let body_end = f.len() - 2;
    let vcrc_check = CrcCheck {
        found: u16::from_le_bytes([f[body_end], f[body_end + 1]]),
        computed: vcrc(&f[..body_end]),
    };
    let (grh, t_start) = match lrh.lnh {
        lrh::Lnh::Raw | lrh::Lnh::Ipv6 => return Ok(Decoded::OtherIb { lrh }),
        lrh::Lnh::IbaLocal => (None, 8),
        lrh::Lnh::IbaGlobal => {
            let g = grh::Repr::parse(&grh::Packet::new_checked(&f[8..body_end])?)?;
            check_grh(&g, body_end - 48)?;
            (Some(g), 48)
        }
    };
    let encap = Encap::Ib { lrh, grh };
    let (packet, pad, icrc_check) = decode_transport(encap, f, 0, t_start, body_end)?;
    let checks = Checks {
        icrc: icrc_check,
        vcrc: Some(vcrc_check),
        ipv4_checksum: None,
        udp_checksum: UdpChecksum::NotApplicable,
    };
    Ok(Decoded::Ib { packet, pad, checks })
}

fn check_grh(g: &grh::Repr, actual: usize) -> Result<()> {
    if g.next_header != grh::NXTHDR_IBA {
        return Err(Error::BadField {
            header: "GRH",
            field: "NxtHdr",
            value: g.next_header as u64,
            expected: "0x1b (IBA transport)",
        });
    }
    if g.payload_len as usize != actual {
        return Err(Error::BadLength {
            header: "GRH",
            field: "PayLen",
            claimed: g.payload_len as usize,
            actual,
        });
    }
    Ok(())
}

/// Check that `end` (bytes the headers account for) ends the frame, allowing
/// Ethernet padding.
fn check_eth_end(f: &[u8], end: usize, header: &'static str) -> Result<()> {
    if end < f.len() && f.len() > ETH_MIN_FRAME {
        return Err(Error::TrailingBytes {
            header,
            extra: f.len() - end,
        });
    }
    Ok(())
}

fn decode_eth(f: &[u8]) -> Result<Decoded<'_>> {
    let ep = ethernet::Packet::new_checked(f)?;
    let eth = ethernet::Repr::parse(&ep)?;
    let h = ep.header_len();
    match eth.ethertype {
        ethernet::ETHERTYPE_MAC_CONTROL => {
            let ctl = pfc::Repr::parse(&pfc::Packet::new_checked(&f[h..])?)?;
            Ok(Decoded::MacControl { eth, ctl })
        }
        ethernet::ETHERTYPE_ROCE_V1 => {
            let gp = grh::Packet::new_checked(&f[h..])?;
            let g = grh::Repr::parse(&gp)?;
            let end = h + 40 + g.payload_len as usize;
            if end > f.len() {
                return Err(Error::BadLength {
                    header: "GRH",
                    field: "PayLen",
                    claimed: g.payload_len as usize,
                    actual: f.len() - h - 40,
                });
            }
            check_grh(&g, g.payload_len as usize)?;
            check_eth_end(f, end, "GRH")?;
            let encap = Encap::RoceV1 { eth, grh: g };
            let (packet, pad, icrc) = decode_transport(encap, f, h, h + 40, end)?;
            let checks = Checks {
                icrc,
                vcrc: None,
                ipv4_checksum: None,
                udp_checksum: UdpChecksum::NotApplicable,
            };
            Ok(Decoded::Ib { packet, pad, checks })
        }
        ethernet::ETHERTYPE_IPV4 => {
            let ipp = ipv4::Packet::new_checked(&f[h..])?;
            let ip = ipv4::Repr::parse(&ipp)?;
            let end = h + ipp.total_len() as usize;
            check_eth_end(f, end, "IPv4")?;
            if ip.protocol != ipv4::PROTO_UDP {
                return Ok(Decoded::OtherEthernet { eth });
            }
            let dgram = &f[h + 20..end];
            let up = udp::Packet::new_checked(dgram)?;
            if up.dst_port() != udp::ROCE_V2_PORT {
                return Ok(Decoded::OtherEthernet { eth });
            }
            if up.len() as usize != dgram.len() {
                return Err(Error::BadLength {
                    header: "UDP",
                    field: "length",
                    claimed: up.len() as usize,
                    actual: dgram.len(),
                });
            }
            let u = udp::Repr::parse(&up)?;
            let udp_checksum = udp_verdict(u.checksum, || {
                udp::verify(udp::pseudo_v4(&ip.src, &ip.dst, up.len()), dgram)
            });
            let ipv4_ok = ipp.verify_checksum();
            let encap = Encap::RoceV2 {
                eth,
                ip: IpRepr::V4(ip),
                udp: u,
            };
            let (packet, pad, icrc) = decode_transport(encap, f, h, h + 28, end)?;
            let checks = Checks {
                icrc,
                vcrc: None,
                ipv4_checksum: Some(ipv4_ok),
                udp_checksum,
            };
            Ok(Decoded::Ib { packet, pad, checks })
        }
        ethernet::ETHERTYPE_IPV6 => {
            let ipp = ipv6::Packet::new_checked(&f[h..])?;
            let ip = ipv6::Repr::parse(&ipp)?;
            let end = h + 40 + ip.payload_len as usize;
            check_eth_end(f, end, "IPv6")?;
            if ip.next_header != ipv4::PROTO_UDP {
                return Ok(Decoded::OtherEthernet { eth });
            }
            let dgram = &f[h + 40..end];
            let up = udp::Packet::new_checked(dgram)?;
            if up.dst_port() != udp::ROCE_V2_PORT {
                return Ok(Decoded::OtherEthernet { eth });
            }
            if up.len() as usize != dgram.len() {
                return Err(Error::BadLength {
                    header: "UDP",
                    field: "length",
                    claimed: up.len() as usize,
                    actual: dgram.len(),
                });
            }
            let u = udp::Repr::parse(&up)?;
            let udp_checksum = udp_verdict(u.checksum, || {
                udp::verify(udp::pseudo_v6(&ip.src, &ip.dst, up.len()), dgram)
            });
            let encap = Encap::RoceV2 {
                eth,
                ip: IpRepr::V6(ip),
                udp: u,
            };
            let (packet, pad, icrc) = decode_transport(encap, f, h, h + 48, end)?;
            let checks = Checks {
                icrc,
                vcrc: None,
                ipv4_checksum: None,
                udp_checksum,
            };
            Ok(Decoded::Ib { packet, pad, checks })
        }
        _ => Ok(Decoded::OtherEthernet { eth }),
    }
}

fn udp_verdict(found: u16, verify: impl FnOnce() -> bool) -> UdpChecksum {
    if found == 0 {
        UdpChecksum::Absent
    } else if verify() {
        UdpChecksum::Valid
    } else {
        UdpChecksum::Invalid
    }
}

/// Parse BTH..ICRC, which spans `f[t_start..end]`; the ICRC covers
/// `f[icrc_start..end-4]`.
fn decode_transport(
    encap: Encap,
    f: &[u8],
    icrc_start: usize,
    t_start: usize,
    end: usize,
) -> Result<(IbPacket<'_>, &[u8], CrcCheck<u32>)> {
    let t = &f[t_start..end];
    need("BTH+ICRC", t, bth::HEADER_LEN + 4)?;
    if !t.len().is_multiple_of(4) {
        return Err(Error::BadField {
            header: "BTH",
            field: "transport length (BTH..ICRC)",
            value: t.len() as u64,
            expected: "a multiple of 4 bytes",
        });
    }
    let bth = bth::Repr::parse(&bth::Packet::new_unchecked(t))?;
    let body = &t[bth::HEADER_LEN..t.len() - 4];
    let mut ext = ExtHeaders::default();
    let mut at = 0;
    if let Some(l) = bth.opcode.layout() {
        need("extended headers", body, bth.opcode.ext_len())?;
        if l.deth {
            ext.deth = Some(deth::Repr::parse(&deth::Packet::new_unchecked(&body[at..]))?);
            at += deth::HEADER_LEN;
        }
        if l.reth {
            ext.reth = Some(reth::Repr::parse(&reth::Packet::new_unchecked(&body[at..]))?);
            at += reth::HEADER_LEN;
        }
        if l.atomic_eth {
            ext.atomic_eth = Some(atomic_eth::Repr::parse(&atomic_eth::Packet::new_unchecked(
                &body[at..],
            ))?);
            at += atomic_eth::HEADER_LEN;
        }
        if l.aeth {
            ext.aeth = Some(aeth::Repr::parse(&aeth::Packet::new_unchecked(&body[at..]))?);
            at += aeth::HEADER_LEN;
        }
        if l.atomic_ack_eth {
            ext.atomic_ack_eth = Some(atomic_ack_eth::Repr::parse(&atomic_ack_eth::Packet::new_unchecked(
                &body[at..],
            ))?);
            at += atomic_ack_eth::HEADER_LEN;
        }
        if l.immdt {
            ext.immdt = Some(immdt::Repr::parse(&immdt::Packet::new_unchecked(&body[at..]))?);
            at += immdt::HEADER_LEN;
        }
        if l.ieth {
            ext.ieth = Some(ieth::Repr::parse(&ieth::Packet::new_unchecked(&body[at..]))?);
            at += ieth::HEADER_LEN;
        }
        if l.cnp_reserved {
            let mut r = [0u8; 16];
            r.copy_from_slice(&body[at..at + 16]);
            ext.cnp_reserved = Some(r);
            at += 16;
        }
        if !l.payload && body.len() > at {
            return Err(Error::BadLength {
                header: "BTH",
                field: "opcode's header length (no payload allowed)",
                claimed: bth::HEADER_LEN + at + 4,
                actual: t.len(),
            });
        }
    }
    let data = &body[at..];
    let pad_len = bth.pad_count as usize;
    if pad_len > data.len() {
        return Err(Error::BadLength {
            header: "BTH",
            field: "PadCnt",
            claimed: pad_len,
            actual: data.len(),
        });
    }
    let (payload, pad) = data.split_at(data.len() - pad_len);
    let kind = encap.icrc_kind();
    let found = u32::from_le_bytes([f[end - 4], f[end - 3], f[end - 2], f[end - 1]]);
    let computed = icrc(
        kind,
        &f[icrc_start..icrc_start + kind.header_len()],
        &t[bth::HEADER_LEN..t.len() - 4],
    );
    Ok((
        IbPacket {
            encap,
            bth,
            ext,
            payload,
        },
        pad,
        CrcCheck { found, computed },
    ))
}

impl<'a> IbPacket<'a> {
    /// Pad bytes the payload needs to reach a 4-byte boundary.
    pub fn pad_len(&self) -> usize {
        (4 - self.payload.len() % 4) % 4
    }
    fn ext_len(&self) -> usize {
        self.bth.opcode.ext_len()
    }
    /// Bytes from the BTH through the ICRC.
    pub fn transport_len(&self) -> usize {
        bth::HEADER_LEN + self.ext_len() + self.payload.len() + self.pad_len() + 4
    }
    /// Bytes [`IbPacket::emit`] writes (Ethernet frames are padded to 60 bytes).
    pub fn buffer_len(&self) -> usize {
        let n = self.encap.header_len() + self.transport_len();
        match self.encap {
            Encap::Ib { .. } => n + 2,
            _ => n.max(ETH_MIN_FRAME),
        }
    }

    /// Write the whole packet into `buf` and return its length. Lengths (LRH PktLen,
    /// GRH PayLen, IP and UDP lengths), LNH, NxtHdr, EtherType, IP protocol, the pad
    /// count and zero pad, the IPv4 header checksum, the UDP checksum (when the
    /// Repr's is nonzero), the ICRC and the VCRC are computed here; the Reprs' own
    /// values of those fields are ignored.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let total = self.buffer_len();
        room("packet", buf, total)?;
        let layout = self.bth.opcode.layout();
        match layout {
            Some(l) if !self.ext.matches(&l) => {
                return Err(Error::Unrepresentable {
                    header: "packet",
                    field: "extended headers",
                    value: u8::from(self.bth.opcode) as u64,
                    expected: "exactly the extended headers the opcode carries",
                });
            }
            Some(l) if !l.payload && !self.payload.is_empty() => {
                return Err(Error::Unrepresentable {
                    header: "packet",
                    field: "payload length",
                    value: self.payload.len() as u64,
                    expected: "0 for this opcode",
                });
            }
            None if !self.ext.is_empty() => {
                return Err(Error::Unrepresentable {
                    header: "packet",
                    field: "extended headers",
                    value: u8::from(self.bth.opcode) as u64,
                    expected: "none for an unknown opcode",
                });
            }
            _ => {}
        }
        let tlen = self.transport_len();
        let h = self.encap.header_len();
        let end = h + tlen;
        let buf = &mut buf[..total];
        match &self.encap {
            Encap::Ib { lrh, grh } => {
                let words = (end / 4) as u64;
                if words > 0x7ff {
                    return Err(Error::Unrepresentable {
                        header: "LRH",
                        field: "PktLen",
                        value: words,
                        expected: "at most 2047 words",
                    });
                }
                let mut l = *lrh;
                l.pkt_len = words as u16;
                l.lnh = if grh.is_some() {
                    lrh::Lnh::IbaGlobal
                } else {
                    lrh::Lnh::IbaLocal
                };
                l.emit(&mut lrh::Packet::new_unchecked(&mut buf[..8]))?;
                if let Some(g) = grh {
                    let mut g = *g;
                    g.payload_len = tlen as u16;
                    g.next_header = grh::NXTHDR_IBA;
                    g.emit(&mut grh::Packet::new_unchecked(&mut buf[8..48]))?;
                }
            }
            Encap::RoceV1 { eth, grh } => {
                let mut e = *eth;
                e.ethertype = ethernet::ETHERTYPE_ROCE_V1;
                e.emit(&mut ethernet::Packet::new_unchecked(&mut buf[..]))?;
                let eh = e.buffer_len();
                let mut g = *grh;
                g.payload_len = tlen as u16;
                g.next_header = grh::NXTHDR_IBA;
                g.emit(&mut grh::Packet::new_unchecked(&mut buf[eh..eh + 40]))?;
            }
            Encap::RoceV2 { eth, ip, udp } => {
                let mut e = *eth;
                let eh = e.buffer_len();
                let ulen = tlen + udp::HEADER_LEN;
                if ulen > 0xffff - 40 {
                    return Err(Error::Unrepresentable {
                        header: "UDP",
                        field: "length",
                        value: ulen as u64,
                        expected: "at most 65495",
                    });
                }
                let uat = match ip {
                    IpRepr::V4(r) => {
                        e.ethertype = ethernet::ETHERTYPE_IPV4;
                        let mut r = *r;
                        r.payload_len = ulen as u16;
                        r.protocol = ipv4::PROTO_UDP;
                        r.emit(&mut ipv4::Packet::new_unchecked(&mut buf[eh..eh + 20]))?;
                        eh + 20
                    }
                    IpRepr::V6(r) => {
                        e.ethertype = ethernet::ETHERTYPE_IPV6;
                        let mut r = *r;
                        r.payload_len = ulen as u16;
                        r.next_header = ipv4::PROTO_UDP;
                        r.emit(&mut ipv6::Packet::new_unchecked(&mut buf[eh..eh + 40]))?;
                        eh + 40
                    }
                };
                e.emit(&mut ethernet::Packet::new_unchecked(&mut buf[..]))?;
                let mut u = *udp;
                u.payload_len = tlen as u16;
                u.checksum = 0;
                u.emit(&mut udp::Packet::new_unchecked(&mut buf[uat..uat + 8]))?;
            }
        }
        // BTH and extended headers.
        let mut b = self.bth;
        b.pad_count = self.pad_len() as u8;
        b.emit(&mut bth::Packet::new_unchecked(&mut buf[h..h + 12]))?;
        let mut at = h + 12;
        macro_rules! put {
            ($opt:expr, $m:ident) => {
                if let Some(r) = $opt {
                    r.emit(&mut $m::Packet::new_unchecked(&mut buf[at..at + $m::HEADER_LEN]))?;
                    at += $m::HEADER_LEN;
                }
            };
        }
        put!(self.ext.deth, deth);
        put!(self.ext.reth, reth);
        put!(self.ext.atomic_eth, atomic_eth);
        put!(self.ext.aeth, aeth);
        put!(self.ext.atomic_ack_eth, atomic_ack_eth);
        put!(self.ext.immdt, immdt);
        put!(self.ext.ieth, ieth);
        if let Some(r) = self.ext.cnp_reserved {
            buf[at..at + 16].copy_from_slice(&r);
            at += 16;
        }
        buf[at..at + self.payload.len()].copy_from_slice(self.payload);
        at += self.payload.len();
        buf[at..end - 4].fill(0);
        // ICRC over the masked headers and the rest, in place.
        let kind = self.encap.icrc_kind();
        let s = self.encap.icrc_start();
        let c = icrc(kind, &buf[s..s + kind.header_len()], &buf[h + 12..end - 4]);
        buf[end - 4..end].copy_from_slice(&c.to_le_bytes());
        // UDP checksum covers the ICRC, so it comes after.
        if let Encap::RoceV2 { ip, udp, .. } = &self.encap
            && udp.checksum != 0
        {
            let eh = match &self.encap {
                Encap::RoceV2 { eth, .. } => eth.buffer_len(),
                _ => 0,
            };
            let (uat, pseudo) = match ip {
                IpRepr::V4(r) => (eh + 20, udp::pseudo_v4(&r.src, &r.dst, (tlen + 8) as u16)),
                IpRepr::V6(r) => (eh + 40, udp::pseudo_v6(&r.src, &r.dst, (tlen + 8) as u16)),
            };
            let c = udp::checksum(pseudo, &buf[uat..end]);
            put16(buf, uat + 6, c);
        }
        match self.encap {
            Encap::Ib { .. } => {
                let v = vcrc(&buf[..end]);
                buf[end..end + 2].copy_from_slice(&v.to_le_bytes());
            }
            _ => buf[end..].fill(0),
        }
        Ok(total)
    }
}

/// Write an Ethernet MAC control (PAUSE/PFC) frame; returns its length (60).
pub fn emit_mac_control(eth: &ethernet::Repr, ctl: &pfc::Repr, buf: &mut [u8]) -> Result<usize> {
    let mut e = *eth;
    e.ethertype = ethernet::ETHERTYPE_MAC_CONTROL;
    let h = e.buffer_len();
    let total = (h + pfc::PAYLOAD_LEN).max(ETH_MIN_FRAME);
    room("MAC control frame", buf, total)?;
    e.emit(&mut ethernet::Packet::new_unchecked(&mut buf[..]))?;
    ctl.emit(&mut pfc::Packet::new_unchecked(&mut buf[h..]))?;
    buf[h + pfc::PAYLOAD_LEN..total].fill(0);
    Ok(total)
}

impl bth::Repr {
    /// A BTH with the given opcode, destination QP and PSN; P_Key 0xFFFF (default
    /// partition), every flag clear, TVer 0.
    pub fn new(opcode: crate::ib::Opcode, dqpn: u32, psn: crate::psn::Psn) -> bth::Repr {
        bth::Repr {
            opcode,
            se: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dqpn: dqpn & 0xff_ffff,
            ack_req: false,
            psn,
        }
    }
}

impl<'a> IbPacket<'a> {
    /// A RoCEv2/IPv4 packet: untagged Ethernet, DF set, TTL 64, UDP checksum zero
    /// (allowed over IPv4; the ICRC protects the payload). `sport` is the flow entropy.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call per packet for the simulator's capture path"
    )]
    pub fn roce_v2_ipv4(
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        src: [u8; 4],
        dst: [u8; 4],
        dscp: u8,
        ecn: u8,
        sport: u16,
        bth: bth::Repr,
        ext: ExtHeaders,
        payload: &'a [u8],
    ) -> IbPacket<'a> {
        IbPacket {
            encap: Encap::RoceV2 {
                eth: ethernet::Repr {
                    dst: dst_mac,
                    src: src_mac,
                    vlan: None,
                    ethertype: ethernet::ETHERTYPE_IPV4,
                },
                ip: IpRepr::V4(ipv4::Repr {
                    dscp: dscp & 0x3f,
                    ecn: ecn & 3,
                    ident: 0,
                    dont_frag: true,
                    ttl: 64,
                    protocol: ipv4::PROTO_UDP,
                    src,
                    dst,
                    payload_len: 0,
                }),
                udp: udp::Repr {
                    src_port: sport,
                    dst_port: udp::ROCE_V2_PORT,
                    payload_len: 0,
                    checksum: 0,
                },
            },
            bth,
            ext,
            payload,
        }
    }

    /// A native IB packet without GRH (LNH=2).
    pub fn ib_local(
        vl: u8,
        sl: u8,
        slid: crate::Lid,
        dlid: crate::Lid,
        bth: bth::Repr,
        ext: ExtHeaders,
        payload: &'a [u8],
    ) -> IbPacket<'a> {
        IbPacket {
            encap: Encap::Ib {
                lrh: lrh::Repr {
                    vl,
                    lver: 0,
                    sl,
                    lnh: lrh::Lnh::IbaLocal,
                    dlid,
                    slid,
                    pkt_len: 0,
                },
                grh: None,
            },
            bth,
            ext,
            payload,
        }
    }
}

/// Mark an already-built RoCEv2 frame Congestion Experienced (ECN = 11) in place,
/// as an ECN-capable switch does, and fix the IPv4 header checksum. The ICRC masks
/// the TOS/traffic class, so it stays valid. Returns false if the frame is not
/// RoCEv2 or is Not-ECT (ECN = 00 must not be marked, RFC 3168 §5).
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Ok(ep) = ethernet::Packet::new_checked(&*frame) else {
        return false;
    };
    let (h, et) = (ep.header_len(), ep.ethertype());
    match et {
        ethernet::ETHERTYPE_IPV4 if frame.len() >= h + 20 => {
            if frame[h + 1] & 3 == 0 {
                return false;
            }
            frame[h + 1] |= 3;
            frame[h + 10] = 0;
            frame[h + 11] = 0;
            let c = ipv4::internet_checksum(&frame[h..h + 20], 0);
            put16(frame, h + 10, c);
            true
        }
        ethernet::ETHERTYPE_IPV6 if frame.len() >= h + 40 => {
            // ECN is bits 4-5 of byte 1 (the low two bits of the traffic class).
            if (frame[h + 1] >> 4) & 3 == 0 {
                return false;
            }
            frame[h + 1] |= 0x30;
            true
        }
        _ => false,
    }
}

/// Set FECN in an already-built native IB frame in place and recompute the VCRC
/// (FECN is masked in the ICRC, IBA §7.8.1). Returns false if it is not an IBA packet.
pub fn set_fecn_ib(frame: &mut [u8]) -> bool {
    let Ok(lp) = lrh::Packet::new_checked(&*frame) else {
        return false;
    };
    let at = match lp.lnh() {
        lrh::Lnh::IbaLocal => 8,
        lrh::Lnh::IbaGlobal => 48,
        _ => return false,
    };
    if frame.len() < at + 12 + 6 {
        return false;
    }
    frame[at + 4] |= 0x80;
    let n = frame.len();
    let v = vcrc(&frame[..n - 2]);
    frame[n - 2..].copy_from_slice(&v.to_le_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::Opcode;
    use crate::psn::Psn;

    #[test]
    fn marking_keeps_every_check_valid() {
        let payload = [7u8; 33];
        let p = IbPacket::roce_v2_ipv4(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            26,
            2,
            0xc000,
            bth::Repr::new(Opcode::RcSendOnly, 0x11, Psn::new(5)),
            ExtHeaders::default(),
            &payload,
        );
        let mut buf = [0u8; 256];
        let n = p.emit(&mut buf).unwrap();
        assert!(mark_ce(&mut buf[..n]));
        match decode(&buf[..n], LinkType::Ethernet).unwrap() {
            Decoded::Ib { packet, checks, .. } => {
                assert!(checks.all_ok(), "{checks:?}");
                if let Encap::RoceV2 { ip, .. } = packet.encap {
                    assert_eq!(ip.ecn(), 3);
                }
            }
            d => panic!("{d:?}"),
        }
        let q = IbPacket::ib_local(
            0,
            0,
            crate::Lid(1),
            crate::Lid(2),
            bth::Repr::new(Opcode::UcSendOnly, 3, Psn::new(9)),
            ExtHeaders::default(),
            &payload,
        );
        let n = q.emit(&mut buf).unwrap();
        assert!(set_fecn_ib(&mut buf[..n]));
        match decode(&buf[..n], LinkType::Infiniband).unwrap() {
            Decoded::Ib { packet, checks, .. } => {
                assert!(checks.all_ok());
                assert!(packet.bth.fecn);
            }
            d => panic!("{d:?}"),
        }
    }
}
