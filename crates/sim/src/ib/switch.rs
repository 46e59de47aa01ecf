//! The InfiniBand switch (IBA vol. 1 §18): packets land in the input port's per-VL
//! buffer (which the upstream transmitter filled on credit), are forwarded by the
//! linear forwarding table the SM programmed, change VL by the SL→VL table of
//! (input port, output port), and wait in the output port's per-VL queue for VL
//! arbitration and for credits at the next hop. A packet holds its input-buffer
//! blocks until its last byte has left, then the credits go back upstream.
//!
//! VL15 (subnet management) bypasses flow control and goes ahead of every data VL
//! (IBA vol. 1 §7.6.5).

use wire::Lid;

use crate::engine::{DropReason, PacketId, Time};
use crate::net::Pick;
use crate::packet::{blocks, flag};
use crate::sim::{NONE, Sim};

impl Sim {
    /// SL→VL of (switch, in port, out port) for `sl`; VL 0 when the SM programmed none.
    #[inline]
    pub(crate) fn switch_vl(&self, node: usize, in_port: u8, out_port: u8, sl: u8) -> u8 {
        match &self.sl2vl {
            None => 0,
            Some(t) => t
                .get(node)
                .and_then(|x| x.get(in_port as usize))
                .and_then(|x| x.get(out_port as usize))
                .map_or(0, |m| m[(sl & 15) as usize]),
        }
    }

    /// A packet (its header, for cut-through) arrives at switch input `in_gp`.
    pub(crate) fn switch_arrive(&mut self, in_gp: u32, p: PacketId) {
        let i = in_gp as usize;
        let node = self.ports[i].port_node as usize;
        let nvl = self.nvl;
        let pk = self.pkts[p];
        let vl15 = pk.flags & flag::VL15 != 0;
        let nb = blocks(pk.wire);
        if !vl15 {
            let ui = i * nvl + pk.vl as usize;
            self.in_used[ui] += nb;
            self.stats.note_occupancy(ui, self.in_used[ui]);
        }
        {
            let pm = &mut self.pkts[p];
            pm.in_gp = in_gp;
            pm.in_vl = pk.vl;
        }
        let in_port = self.ports[i].port_num;
        let out = if pk.hops > self.ib.hop_limit {
            Err(DropReason::HopLimit)
        } else {
            match self.lft[node].get(pk.dlid as usize) {
                None | Some(&sm::NO_ROUTE) => Err(DropReason::NoRoute),
                Some(&0) => Err(DropReason::UnknownDestination),
                Some(&o) if o == in_port => Err(DropReason::Loopback),
                Some(&o) => {
                    let og = self.port_base[node] + u32::from(o);
                    if (o as usize) < self.port_base[node + 1] as usize - self.port_base[node] as usize
                        && self.ports[og as usize].peer != NONE
                    {
                        Ok((o, og))
                    } else {
                        Err(DropReason::DeadPort)
                    }
                }
            }
        };
        let (out_port, og) = match out {
            Ok(x) => x,
            Err(why) => {
                // A management packet for the switch itself is consumed here.
                let to_self = vl15 && self.tables.lid_of(fabric::NodeId(node as u32), 0) == Some(Lid(pk.dlid));
                self.release_input(in_gp, pk.vl, nb, vl15, self.now);
                if to_self {
                    self.deliver_packet(p);
                } else {
                    self.drop_packet(p, why);
                }
                return;
            }
        };
        let qi = if vl15 {
            nvl
        } else {
            let vl = self.switch_vl(node, in_port, out_port, pk.sl);
            self.pkts[p].vl = vl;
            (vl as usize).min(nvl - 1)
        };
        let g = og as usize;
        if let Some(cc) = &self.ib.cc {
            // FECN when the packet joins a queue at or over the threshold, but only
            // at a root of congestion: a port waiting for credits is a victim of
            // congestion further on and does not mark (Annex A10.2.1).
            if !vl15 && !self.ports[g].starved && self.oq[g * (nvl + 1) + qi].len() as u32 >= cc.threshold_packets {
                self.pkts[p].flags |= flag::FECN;
                self.stats.fecn_marked += 1;
            }
        }
        self.oq[g * (nvl + 1) + qi].push_back(p);
        self.ports[g].oq_len += 1;
        self.kick(og);
    }

    /// The next packet for switch output `gp`: VL15 first, then VL arbitration.
    pub(crate) fn switch_pick(&mut self, gp: u32) -> Pick {
        let g = gp as usize;
        if self.ports[g].oq_len == 0 {
            return Pick::Wait(Time::NEVER);
        }
        let base = g * (self.nvl + 1);
        if let Some(p) = self.oq[base + self.nvl].pop_front() {
            self.ports[g].oq_len -= 1;
            return Pick::Send(p);
        }
        match self.arbitrate(gp) {
            Ok(vl) => {
                let p = self.oq[base + vl].pop_front().expect("arbitration chose a non-empty VL");
                self.ports[g].oq_len -= 1;
                Pick::Send(p)
            }
            Err(t) => Pick::Wait(t),
        }
    }
}
