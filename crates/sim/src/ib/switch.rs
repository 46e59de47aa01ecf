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

/// What adaptive routing needs: hop distances between switches and the switch
/// each LID hangs off. `S × S` bytes for S switches (1.6 MB for a 1,280-switch
/// fabric), built once by a BFS from every switch.
#[derive(Debug)]
pub(crate) struct ArTables {
    sw_idx: Vec<u32>,
    lid_sw: Vec<u32>,
    dist: Vec<u8>,
    nsw: usize,
}

impl ArTables {
    pub(crate) fn build(sim: &Sim) -> ArTables {
        let n = sim.node_model.len();
        let mut sw_idx = vec![NONE; n];
        let mut sw_nodes = Vec::new();
        for (i, m) in sim.node_model.iter().enumerate() {
            if *m == crate::sim::NodeModel::IbSwitch {
                sw_idx[i] = sw_nodes.len() as u32;
                sw_nodes.push(i);
            }
        }
        let nsw = sw_nodes.len();
        let mut lid_sw = vec![NONE; sim.tables.lid_owner.len()];
        for (lid, o) in sim.tables.lid_owner.iter().enumerate() {
            if let Some((node, port)) = o {
                lid_sw[lid] = if sw_idx[node.idx()] != NONE {
                    sw_idx[node.idx()]
                } else {
                    let gp = sim.port_base[node.idx()] + u32::from(*port);
                    match sim.ports.get(gp as usize).map(|p| p.peer) {
                        Some(pg) if pg != NONE => sw_idx[sim.ports[pg as usize].port_node as usize],
                        _ => NONE,
                    }
                };
            }
        }
        let mut dist = vec![u8::MAX; nsw * nsw];
        let mut queue = std::collections::VecDeque::new();
        for (si, &sn) in sw_nodes.iter().enumerate() {
            let row = &mut dist[si * nsw..(si + 1) * nsw];
            row[si] = 0;
            queue.clear();
            queue.push_back(sn);
            while let Some(u) = queue.pop_front() {
                let du = row[sw_idx[u] as usize];
                for gp in sim.port_base[u]..sim.port_base[u + 1] {
                    let pg = sim.ports[gp as usize].peer;
                    if pg == NONE {
                        continue;
                    }
                    let v = sim.ports[pg as usize].port_node as usize;
                    let vi = sw_idx[v];
                    if vi != NONE && row[vi as usize] == u8::MAX {
                        row[vi as usize] = du.saturating_add(1);
                        queue.push_back(v);
                    }
                }
            }
        }
        ArTables {
            sw_idx,
            lid_sw,
            dist,
            nsw,
        }
    }
}

impl Sim {
    /// Adaptive routing: among the ports of `node` on a shortest path to `dlid`'s
    /// switch, the one with the fewest packets queued; `lft_port` wins ties, then
    /// the lowest port number. Ports straight to end nodes are never alternatives.
    fn adaptive_port(&self, node: usize, dlid: u16, lft_port: u8) -> u8 {
        let Some(ar) = &self.ar else { return lft_port };
        let me = ar.sw_idx[node];
        let Some(&ds) = ar.lid_sw.get(dlid as usize) else {
            return lft_port;
        };
        if me == NONE || ds == NONE || ds == me {
            return lft_port;
        }
        let d = ar.dist[me as usize * ar.nsw + ds as usize];
        let lft_gp = (self.port_base[node] + u32::from(lft_port)) as usize;
        let mut best = (self.ports[lft_gp].oq_len, lft_port);
        for gp in self.port_base[node]..self.port_base[node + 1] {
            let pt = &self.ports[gp as usize];
            if pt.peer == NONE || pt.port_num == lft_port {
                continue;
            }
            let v = ar.sw_idx[self.ports[pt.peer as usize].port_node as usize];
            if v == NONE || ar.dist[v as usize * ar.nsw + ds as usize].saturating_add(1) != d {
                continue;
            }
            if pt.oq_len < best.0 {
                best = (pt.oq_len, pt.port_num);
            }
        }
        best.1
    }

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
            Ok((o, og)) if self.ar.is_some() && !vl15 => {
                let a = self.adaptive_port(node, pk.dlid, o);
                if a == o {
                    (o, og)
                } else {
                    self.stats.rerouted += 1;
                    (a, self.port_base[node] + u32::from(a))
                }
            }
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
            if !vl15 && !self.ports[g].starved && self.oq[g * (nvl + 1) + qi].len >= cc.threshold_packets {
                self.pkts[p].flags |= flag::FECN;
                self.stats.fecn_marked += 1;
            }
        }
        self.oq[g * (nvl + 1) + qi].push(&mut self.pkts, p);
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
        if let Some(p) = self.oq[base + self.nvl].pop(&self.pkts) {
            self.ports[g].oq_len -= 1;
            return Pick::Send(p);
        }
        match self.arbitrate(gp) {
            Ok(vl) => {
                let p = self.oq[base + vl]
                    .pop(&self.pkts)
                    .expect("arbitration chose a non-empty VL");
                self.ports[g].oq_len -= 1;
                Pick::Send(p)
            }
            Err(t) => Pick::Wait(t),
        }
    }
}
