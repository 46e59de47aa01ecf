//! Observation: the counters and look-ups a caller reads (per flow, per port,
//! per switch), the packet capture and its pcap writer, and a stuck run's
//! state dump.

use super::*;

/// A flow that finished: one line of ns-3 HPCC's fct.txt (the `ns3` crate
/// writes them). Addresses are the hosts' IPv4 addresses (`ethcp::host_ip`);
/// `standalone_ns` is 0 here (the experiment runner fills it in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FctRecord {
    pub sip: u32,
    pub dip: u32,
    pub sport: u16,
    pub dport: u16,
    pub size: u64,
    pub start_ns: u64,
    pub fct_ns: u64,
    pub standalone_ns: u64,
}

/// A port's pause state changed: one line of ns-3 HPCC's pfc.txt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcRecord {
    pub time_ns: u64,
    pub node: u32,
    /// 0 host, 1 switch.
    pub node_type: u8,
    pub if_index: u32,
    /// 1 = pause received, 0 = resume.
    pub pause: bool,
}

/// What the run records beside its results: hops, the progress count the
/// deadlock check compares, and the packet capture of one port.
#[derive(Clone)]
pub(super) struct Observe {
    /// Packets sent over links (hops).
    pub(super) sent: u64,
    /// The global port whose sent frames are captured (`NONE`: no capture).
    pub(super) capture_gp: u32,
    /// The captured frames with their send times.
    pub(super) captured: Vec<(Time, Pkt)>,
    /// `progress` at the last deadlock check.
    pub(super) last_progress: u64,
    /// RDMA packets dequeued by switches: the deadlock check sees whether anything moved.
    pub(super) progress: u64,
}

impl Observe {
    /// Nothing counted, no capture port.
    pub(super) fn new() -> Observe {
        Observe {
            sent: 0,
            capture_gp: NONE,
            captured: Vec::new(),
            last_progress: 0,
            progress: 0,
        }
    }
}

impl RoceSim {
    /// Packet transmissions over links so far (hops).
    pub fn hops(&self) -> u64 {
        self.obs.sent
    }

    /// The switches flow `k`'s data packets cross now, with the egress port each
    /// one picks (static override or ECMP hash over its current groups), from the
    /// sender's switch to the receiver's. Stops after 64 hops (a routing loop).
    pub fn flow_path(&self, k: usize) -> Vec<(String, u8)> {
        self.flow_hops(k, false)
            .into_iter()
            .map(|(node, port)| (self.fabric.nodes[node as usize].name.clone(), port))
            .collect()
    }

    /// The switches (node index, egress port) flow `k`'s data crosses now, or
    /// with `back` its ACKs.
    pub(super) fn flow_hops(&self, k: usize, back: bool) -> Vec<(u32, u8)> {
        let f = self.flow_at(k);
        let pk = Pkt {
            kind: if back { Kind::Ack } else { Kind::Data },
            flow: k as u32,
            ..Pkt::default()
        };
        let (src, dst) = if back {
            (f.spec.dst, f.spec.src)
        } else {
            (f.spec.src, f.spec.dst)
        };
        let dst = dst.0;
        let mut out = Vec::new();
        let mut gp = self.links.port_base[src.idx()] + 1;
        for _ in 0..64 {
            let peer = self.links.peer[gp as usize];
            if peer == NONE {
                break;
            }
            let (is_sw, si) = self.links.ports[peer as usize].owner();
            if !is_sw {
                break;
            }
            let node = self.sw.switches[si as usize].node;
            let over = self
                .sw
                .overrides
                .iter()
                .find(|o| o.0 == node && o.1 == dst)
                .map(|o| o.2);
            let Some(port) = over.or_else(|| self.route_hashed(si, &pk)) else {
                break;
            };
            out.push((node, port));
            gp = self.links.port_base[node as usize] + u32::from(port);
        }
        out
    }

    /// PFC frames (XOFF, XON) sent from port `port` of `node`.
    pub fn pause_sent(&self, node: NodeId, port: u8, prio: u8) -> (u64, u64) {
        let p = &self.links.pc[self.user_port(node, port)];
        (
            p.pausegen.xoff_sent[usize::from(prio)],
            p.pausegen.xon_sent[usize::from(prio)],
        )
    }

    /// Time port `port` of `node` spent paused on `prio` so far.
    pub fn paused_time(&self, node: NodeId, port: u8, prio: u8) -> Time {
        let p = &self.links.pc[self.user_port(node, port)];
        Time(p.paused.paused_total(self.now, prio))
    }

    /// Bytes queued for egress at port `port` of switch `node`, every class
    /// (what HPCC's INT reports); 0 for a NIC.
    pub fn egress_queue_bytes(&self, node: NodeId, port: u8) -> u64 {
        let g = self.user_port(node, port);
        let (is_sw, idx) = self.role[node.idx()];
        if !is_sw {
            return 0;
        }
        let num = usize::from(self.links.ports[g].num);
        let s = &self.sw.switches[idx as usize];
        (0..NPRIO as u8).map(|c| s.mmu.egress_bytes(num, c)).sum()
    }

    /// Bytes sent out of port `port` of `node`.
    pub fn tx_bytes(&self, node: NodeId, port: u8) -> u64 {
        self.links.ports[self.user_port(node, port)].tx_bytes
    }

    /// Number of switch MMU drops by reason `[lossy, headroom overflow]`, summed.
    pub fn mmu_drops(&self) -> [u64; 2] {
        let mut d = [0; 2];
        for s in self.sw.switches.iter() {
            d[0] += s.mmu.drops[0];
            d[1] += s.mmu.drops[1];
        }
        d
    }

    /// Frames captured so far.
    pub fn captured_frames(&self) -> usize {
        self.obs.captured.len()
    }

    /// Write the captured frames as an Ethernet pcap with real headers: RoCEv2
    /// (IPv4/UDP 4791, BTH RC SEND First/Middle/Last/Only or ACKNOWLEDGE with an
    /// AETH ACK or PSN-sequence-error NAK, CNPs with opcode 0x81), ECN ECT(0) or
    /// CE as marked, and 802.1Qbb PFC frames. Payload bytes are zeros; the BTH
    /// destination QP is 0x100 + the flow index. Returns the frame count.
    pub fn write_pcap(&self, path: &std::path::Path) -> Result<usize, wire::pcap::CaptureError> {
        use wire::ib::aeth::{NakCode, Syndrome};
        use wire::ib::{Opcode, aeth, bth};
        use wire::net::{ethernet, pfc};
        use wire::packet::{ExtHeaders, IbPacket, emit_mac_control};
        let mac = |n: u32| -> [u8; 6] {
            let m = ethcp::host_mac(n).to_be_bytes();
            [m[2], m[3], m[4], m[5], m[6], m[7]]
        };
        let mut w = wire::pcap::CaptureWriter::create(path, wire::pcap::CaptureLink::Ethernet)?;
        let zeros = vec![0u8; 9216];
        let mut buf = vec![0u8; 10_240];
        let mut written = 0;
        // Every captured frame was sent from the capture port: a pause frame's source.
        let cap_node = if (self.obs.capture_gp as usize) < self.links.ports.len() {
            self.node_of(self.obs.capture_gp)
        } else {
            NONE
        };
        for (t, pk) in &self.obs.captured {
            if pk.kind.is_tcp() {
                // TCP frames are not written (the capture is of the RoCE stream).
                continue;
            }
            written += 1;
            let n = match pk.kind {
                Kind::Pause => {
                    let mut quanta = [0u16; 8];
                    let (prio, q) = pk.pause();
                    quanta[usize::from(prio & 7)] = q;
                    let eth = ethernet::Repr {
                        dst: [0x01, 0x80, 0xc2, 0, 0, 1],
                        src: mac(cap_node),
                        vlan: None,
                        ethertype: ethernet::ETHERTYPE_MAC_CONTROL,
                    };
                    emit_mac_control(
                        &eth,
                        &pfc::Repr::Pfc {
                            enable: 1 << (prio & 7),
                            quanta,
                        },
                        &mut buf,
                    )
                }
                _ => {
                    let (op, ext, payload): (Opcode, ExtHeaders, &[u8]) = match pk.kind {
                        Kind::Data => {
                            let op = match (pk.has(Pkt::FIRST), pk.has(Pkt::LAST)) {
                                (true, true) => Opcode::RcSendOnly,
                                (true, false) => Opcode::RcSendFirst,
                                (false, true) => Opcode::RcSendLast,
                                (false, false) => Opcode::RcSendMiddle,
                            };
                            (op, ExtHeaders::default(), &zeros[..self.payload(pk) as usize])
                        }
                        Kind::Ack | Kind::Nak => {
                            let syndrome = if pk.kind == Kind::Ack {
                                Syndrome::Ack { credits: 31 }
                            } else {
                                Syndrome::Nak(NakCode::PsnSequenceError)
                            };
                            (
                                Opcode::RcAcknowledge,
                                ExtHeaders {
                                    aeth: Some(aeth::Repr { syndrome, msn: 0 }),
                                    ..ExtHeaders::default()
                                },
                                &[][..],
                            )
                        }
                        _ => (
                            Opcode::Cnp,
                            ExtHeaders {
                                cnp_reserved: Some([0; 16]),
                                ..ExtHeaders::default()
                            },
                            &[][..],
                        ),
                    };
                    let qpn = 0x100 + pk.flow;
                    let sport = self.hosts.flows.get(pk.flow as usize).map_or(0xc000, |f| f.spec.sport);
                    let ecn = if pk.kind == Kind::Data {
                        if pk.has(Pkt::CE) { 3 } else { 2 }
                    } else {
                        0
                    };
                    // TCP segments fall here too and are written as CNPs carrying
                    // their segment number: the capture shows RoCE framing only.
                    let b = bth::Repr::new(op, qpn, Psn::new(pk.seq));
                    let ip = |n: u32| ethcp::host_ip(n).to_be_bytes();
                    let (src, dst) = self.ends(pk);
                    IbPacket::roce_v2_ipv4(
                        mac(src),
                        mac(dst),
                        ip(src),
                        ip(dst),
                        pk.dscp,
                        ecn,
                        sport,
                        b,
                        ext,
                        payload,
                    )
                    .emit(&mut buf)
                }
            };
            let n = n.map_err(|e| wire::pcap::CaptureError::Write {
                path: path.into(),
                what: e.to_string(),
            })?;
            w.write(t.0 / 1000, &buf[..n])?;
        }
        w.finish()?;
        Ok(written)
    }

    /// A human-readable dump of queued packets, asserted XOFFs and paused ports
    /// (for diagnosing a stuck run).
    pub fn state_summary(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "t={} in_flight={} flows_left={}",
            self.now, self.live, self.hosts.flows_left
        );
        for sw in self.sw.switches.iter() {
            let name = &self.fabric.nodes[sw.node as usize].name;
            let _ = writeln!(
                s,
                "{name}: shared {}/{} xoff {:?}",
                sw.mmu.shared_used(),
                sw.mmu.shared_size(),
                sw.xoff
            );
            for &(p, pg) in &sw.xoff {
                let _ = writeln!(
                    s,
                    "  xoff port {p} pg {pg}: use {:?} paused {} threshold {}",
                    sw.mmu.pg_use(usize::from(p), pg),
                    sw.mmu.pg_paused(usize::from(p), pg),
                    sw.mmu.threshold(usize::from(p))
                );
            }
            for (port, c) in (0..sw.nports).flat_map(|p| (0..NPRIO).map(move |c| (p, c))) {
                let gp = self.links.port_base[sw.node as usize] + port as u32;
                let q = &self.sw.eq[self.eqi(c, gp)];
                if !q.is_empty() {
                    let _ = writeln!(
                        s,
                        "  port {} q{}: {} pkts, paused {}",
                        port,
                        c,
                        q.len(),
                        self.links.pc[gp as usize].paused.is_paused(self.now, c as u8)
                    );
                }
            }
        }
        for n in self.hosts.nics.iter() {
            let p = &self.links.ports[n.gp as usize];
            let _ = writeln!(
                s,
                "{}: ctrl {} paused3 {} busy_until {} wake {} rx {}",
                self.fabric.nodes[n.node as usize].name,
                n.ctrl.len(),
                self.links.pc[n.gp as usize].paused.is_paused(self.now, 3),
                p.busy_until,
                p.wake_at,
                n.rx.used()
            );
        }
        s
    }
}
