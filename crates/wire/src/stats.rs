//! Capture statistics for `rdmalab wire stats`: packets by opcode and by QP, PSN
//! gaps and retransmissions per requester flow, ACKs/NAKs by kind, CNPs and ECN
//! marks, PAUSE/PFC frames and the pause time they ask for.
//!
//! A requester flow is (source, destination, destination QP). For each request
//! packet the PSN is compared with the flow's next expected PSN (serial-number
//! arithmetic, IBA §9.7.1): ahead is a gap (PSNs missing), behind is a
//! retransmission (go-back-N resend or duplicate).

use std::collections::BTreeMap;

use crate::dump::{Obj, Val, ipv6_text};
use crate::ib::Opcode;
use crate::ib::aeth::Syndrome;
use crate::net::pfc;
use crate::packet::{Decoded, Encap, IbPacket, IpRepr};
use crate::psn::Psn;

/// Per-flow PSN tracking.
#[derive(Debug, Clone, Default)]
struct Flow {
    next: Option<Psn>,
    packets: u64,
    gaps: u64,
    missing: u64,
    retransmissions: u64,
}

/// Running statistics.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Records read.
    pub records: u64,
    /// Records that failed to decode.
    pub decode_errors: u64,
    /// IB/RoCE packets.
    pub ib_packets: u64,
    /// Packets whose ICRC is wrong.
    pub bad_icrc: u64,
    /// Packets whose VCRC is wrong.
    pub bad_vcrc: u64,
    /// Packets by opcode byte.
    pub by_opcode: BTreeMap<u8, u64>,
    /// Packets by destination QP.
    pub by_qp: BTreeMap<u32, u64>,
    flows: BTreeMap<String, Flow>,
    /// Positive ACKs.
    pub acks: u64,
    /// NAKs by code name ("PSN sequence error", …) and RNR NAKs under "RNR".
    pub naks: BTreeMap<String, u64>,
    /// CNPs.
    pub cnps: u64,
    /// Packets with ECN = CE (11).
    pub ecn_ce: u64,
    /// Packets with FECN set.
    pub fecn: u64,
    /// Packets with BECN set.
    pub becn: u64,
    /// PFC frames.
    pub pfc_frames: u64,
    /// Link-level PAUSE frames.
    pub pause_frames: u64,
    /// Per priority: frames with a nonzero time (XOFF).
    pub xoff: [u64; 8],
    /// Per priority: frames with a zero time (XON).
    pub xon: [u64; 8],
    /// Per priority: quanta requested.
    pub quanta: [u64; 8],
    /// Quanta requested by link-level PAUSE.
    pub pause_quanta: u64,
    /// Other Ethernet / IB frames.
    pub other: u64,
}

fn flow_key(p: &IbPacket<'_>) -> String {
    let (s, d) = match &p.encap {
        Encap::Ib { lrh, .. } => (format!("lid {}", lrh.slid.0), format!("lid {}", lrh.dlid.0)),
        Encap::RoceV1 { grh, .. } => (ipv6_text(&grh.sgid), ipv6_text(&grh.dgid)),
        Encap::RoceV2 { ip: IpRepr::V4(r), .. } => (
            std::net::Ipv4Addr::from(r.src).to_string(),
            std::net::Ipv4Addr::from(r.dst).to_string(),
        ),
        Encap::RoceV2 { ip: IpRepr::V6(r), .. } => (ipv6_text(&r.src), ipv6_text(&r.dst)),
    };
    format!("{s} -> {d} qp {:#x}", p.bth.dqpn)
}

impl Stats {
    /// Account for one record; `Err` is a record that failed to decode.
    pub fn add(&mut self, d: Result<&Decoded<'_>, &crate::Error>) {
        self.records += 1;
        let d = match d {
            Ok(d) => d,
            Err(_) => {
                self.decode_errors += 1;
                return;
            }
        };
        match d {
            Decoded::Ib { packet, checks, .. } => {
                self.ib_packets += 1;
                self.bad_icrc += !checks.icrc.ok() as u64;
                self.bad_vcrc += checks.vcrc.is_some_and(|v| !v.ok()) as u64;
                let b = &packet.bth;
                *self.by_opcode.entry(b.opcode.into()).or_default() += 1;
                *self.by_qp.entry(b.dqpn).or_default() += 1;
                self.fecn += b.fecn as u64;
                self.becn += b.becn as u64;
                if let Encap::RoceV2 { ip, .. } = &packet.encap {
                    self.ecn_ce += (ip.ecn() == 3) as u64;
                }
                if b.opcode == Opcode::Cnp {
                    self.cnps += 1;
                }
                if let Some(a) = packet.ext.aeth
                    && b.opcode == Opcode::RcAcknowledge
                {
                    match a.syndrome {
                        Syndrome::Ack { .. } => self.acks += 1,
                        Syndrome::RnrNak(_) => *self.naks.entry("RNR".into()).or_default() += 1,
                        Syndrome::Nak(c) => *self.naks.entry(c.name().into()).or_default() += 1,
                        Syndrome::Reserved(_) => {}
                    }
                }
                if b.opcode.is_request() {
                    let f = self.flows.entry(flow_key(packet)).or_default();
                    f.packets += 1;
                    if let Some(next) = f.next {
                        let dist = next.distance_to(b.psn);
                        if dist > 0 {
                            f.gaps += 1;
                            f.missing += dist as u64;
                        } else if dist < 0 {
                            f.retransmissions += 1;
                        }
                    }
                    f.next = Some(b.psn.next());
                }
            }
            Decoded::MacControl { ctl, .. } => match *ctl {
                pfc::Repr::Pause { quanta } => {
                    self.pause_frames += 1;
                    self.pause_quanta += quanta as u64;
                }
                pfc::Repr::Pfc { enable, quanta } => {
                    self.pfc_frames += 1;
                    for (i, &q) in quanta.iter().enumerate() {
                        if enable & (1 << i) != 0 {
                            if q == 0 {
                                self.xon[i] += 1;
                            } else {
                                self.xoff[i] += 1;
                                self.quanta[i] += q as u64;
                            }
                        }
                    }
                }
            },
            Decoded::OtherEthernet { .. } | Decoded::OtherIb { .. } => self.other += 1,
        }
    }

    /// Total PSN gaps over all flows.
    pub fn psn_gaps(&self) -> u64 {
        self.flows.values().map(|f| f.gaps).sum()
    }
    /// Total retransmissions over all flows.
    pub fn retransmissions(&self) -> u64 {
        self.flows.values().map(|f| f.retransmissions).sum()
    }

    /// Describe, with pause time computed for a link of `gbps` Gb/s.
    pub fn describe(&self, gbps: f64) -> Obj {
        let mut o = Obj::default();
        o.put("records", Val::U(self.records))
            .put("decode_errors", Val::U(self.decode_errors))
            .put("ib_packets", Val::U(self.ib_packets))
            .put("bad_icrc", Val::U(self.bad_icrc))
            .put("bad_vcrc", Val::U(self.bad_vcrc))
            .put("other_frames", Val::U(self.other));
        let mut ops = Obj::default();
        for (op, n) in &self.by_opcode {
            ops.put(Opcode::from(*op).to_string(), Val::U(*n));
        }
        o.put("by_opcode", Val::O(ops));
        let mut qps = Obj::default();
        for (qp, n) in &self.by_qp {
            qps.put(format!("{qp:#x}"), Val::U(*n));
        }
        o.put("by_qp", Val::O(qps));
        let mut fl = Obj::default();
        for (k, f) in &self.flows {
            let mut x = Obj::default();
            x.put("packets", Val::U(f.packets))
                .put("psn_gaps", Val::U(f.gaps))
                .put("psns_missing", Val::U(f.missing))
                .put("retransmissions", Val::U(f.retransmissions));
            fl.put(k.clone(), Val::O(x));
        }
        o.put("flows", Val::O(fl));
        o.put("psn_gaps", Val::U(self.psn_gaps()))
            .put("retransmissions", Val::U(self.retransmissions()));
        o.put("acks", Val::U(self.acks));
        let mut n = Obj::default();
        for (k, v) in &self.naks {
            n.put(k.clone(), Val::U(*v));
        }
        o.put("naks", Val::O(n));
        o.put("cnps", Val::U(self.cnps))
            .put("ecn_ce", Val::U(self.ecn_ce))
            .put("fecn", Val::U(self.fecn))
            .put("becn", Val::U(self.becn));
        let mut p = Obj::default();
        let total_q: u64 = self.quanta.iter().sum();
        p.put("pfc_frames", Val::U(self.pfc_frames))
            .put("pause_frames", Val::U(self.pause_frames))
            .put(
                "xoff_by_priority",
                Val::L(self.xoff.iter().map(|x| Val::U(*x)).collect()),
            )
            .put("xon_by_priority", Val::L(self.xon.iter().map(|x| Val::U(*x)).collect()))
            .put(
                "quanta_by_priority",
                Val::L(self.quanta.iter().map(|x| Val::U(*x)).collect()),
            )
            .put("link_gbps", Val::S(format!("{gbps}")))
            .put(
                "pause_ns_by_priority",
                Val::L(
                    self.quanta
                        .iter()
                        .map(|q| Val::U(pfc::quanta_to_nanos(*q, gbps).round() as u64))
                        .collect(),
                ),
            )
            .put(
                "pfc_pause_ns_total",
                Val::U(pfc::quanta_to_nanos(total_q, gbps).round() as u64),
            )
            .put(
                "link_pause_ns_total",
                Val::U(pfc::quanta_to_nanos(self.pause_quanta, gbps).round() as u64),
            );
        o.put("pause", Val::O(p));
        o
    }
}
