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
use crate::packet::{NO_ROUTE, flag};
use crate::sim::{
    FWD_DEAD, FWD_LOOPBACK, FWD_NO_ROUTE, FWD_UNKNOWN, FWD16_DEAD, FWD16_NO_ROUTE, Mode, NONE, NodeModel, Sim,
};

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
                        Some(pg) if pg != NONE => sw_idx[sim.port_node[pg as usize] as usize],
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
                    let v = sim.port_node[pg as usize] as usize;
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

/// The forwarding decision [`Sim::lft_code`] encoded.
#[inline(always)]
pub(crate) fn fwd_decode(code: u32) -> Result<u32, DropReason> {
    match code {
        FWD_NO_ROUTE => Err(DropReason::NoRoute),
        FWD_UNKNOWN => Err(DropReason::UnknownDestination),
        FWD_DEAD => Err(DropReason::DeadPort),
        FWD_LOOPBACK => Err(DropReason::Loopback),
        og => Ok(og),
    }
}

/// Most route entries kept ([`Sim::build_route`]): 32 MB.
const ROUTE_BUDGET: usize = 1 << 23;
// A route's index rides in a packet's 28 route bits.
const _: () = assert!(ROUTE_BUDGET < NO_ROUTE as usize);

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
            let v = ar.sw_idx[self.port_node[pt.peer as usize] as usize];
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
    pub(crate) fn switch_arrive<M: Mode>(&mut self, link: u32, in_gp: u32, node: usize, p: PacketId) {
        let i = in_gp as usize;
        let nvl = self.data_vls::<M>();
        let pk = self.pkts[p];
        let vl15 = pk.flags & flag::VL15 != 0;
        let nb = pk.blocks();
        if !vl15 {
            let ui = i * nvl + pk.vl as usize;
            let b = &mut self.in_buf[ui];
            b.used += nb;
            b.peak = b.peak.max(b.used);
        }
        {
            let pm = &mut self.pkts[p];
            pm.in_link = link;
            pm.in_vl = pk.vl;
        }
        let out = if pk.hops > self.ib.hop_limit {
            Err(DropReason::HopLimit)
        } else if self.is_plain::<M>() && !vl15 {
            // Looked up when the packet was put on the link (see `transmit`).
            fwd_decode(pk.in_link)
        } else {
            self.lft_out(node, pk.dlid, in_gp)
        };
        if self.is_plain::<M>()
            && !vl15
            && let Ok(og) = out
        {
            self.pkts[p].vl = 0;
            if self.forward_at_once::<M>(og, p) {
                return;
            }
            self.enqueue::<M>(og, 0, p);
            return;
        }
        let in_port = self.ports[i].port_num;
        let out = out.map(|og| (self.ports[og as usize].port_num, og));
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
                self.release_input(link, pk.vl, nb, vl15, self.now);
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
            // An entry past the modelled data VLs (IBA's VL 15, "drop", in a
            // table that was not made for this run) is taken as the last data
            // VL, as a CA does: the packet's VL indexes per-VL credits and
            // buffers at the next hop.
            let vl = if self.sl2vl.is_some() {
                self.switch_vl(node, in_port, out_port, self.pkts.cold(p).sl)
                    .min(nvl as u8 - 1)
            } else {
                0
            };
            self.pkts[p].vl = vl;
            vl as usize
        };
        self.enqueue::<M>(og, qi, p);
    }

    /// The decision of `node`'s LFT for `dlid`, for a packet that comes in at
    /// `in_gp`, as one word: the global output port or a `FWD_*` code
    /// ([`fwd_decode`] makes it a result). For a plain switch the transmitter
    /// finds it (in the sending QP's route,
    /// [`Sim::routes`], else by this lookup) and leaves it in the packet's
    /// `in_link` (unused on a wire), so the arrival need not read the LFT and
    /// can prefetch the output port's record. Plain switches' tables do not
    /// change during a run. Out of line: a plain run's packets mostly carry a
    /// route, and inlined into `transmit` for the rest it cost the hop 12
    /// instructions (callgrind).
    #[inline(never)]
    pub(crate) fn lft_code(&self, node: usize, dlid: u16, in_gp: u32) -> u32 {
        let sp = self.fwd_span[node];
        if u32::from(dlid) >= sp.len {
            return FWD_NO_ROUTE;
        }
        match self.fwd[(sp.off + u32::from(dlid)) as usize] {
            FWD16_NO_ROUTE => FWD_NO_ROUTE,
            0 => FWD_UNKNOWN,
            FWD16_DEAD => FWD_DEAD,
            o if sp.base + u32::from(o) == in_gp => FWD_LOOPBACK,
            o => sp.base + u32::from(o),
        }
    }

    /// Precompute the decisions the switches will take for packets sent from
    /// CA port `gp` to `dlid` (see [`Sim::routes`]): the walk stops at an end
    /// node, at a decision that drops the packet, or past the hop limit (where
    /// the packet is dropped on arrival). [`NO_ROUTE`] when the simulation is
    /// not `plain` (forwarding then depends on more than the LFT), when the
    /// port's cable does not lead to a switch, or when the routes already hold
    /// [`ROUTE_BUDGET`] entries (a huge all-to-all keeps reading the LFTs).
    pub(crate) fn build_route(&mut self, gp: u32, dlid: u16) -> u32 {
        let start = self.routes.len();
        let hops = usize::from(self.ib.hop_limit) + 1;
        if !self.plain || start + hops > ROUTE_BUDGET {
            return NO_ROUTE;
        }
        let mut g = gp;
        for _ in 0..hops {
            let pt = &self.ports[g as usize];
            if pt.peer == NONE || pt.peer_model != NodeModel::IbSwitch {
                break;
            }
            let code = self.lft_code(pt.peer_node as usize, dlid, pt.peer);
            self.routes.push(code);
            if code as usize >= self.ports.len() {
                break;
            }
            g = code;
        }
        if self.routes.len() == start {
            NO_ROUTE
        } else {
            start as u32
        }
    }

    /// [`Self::lft_code`] as the output port or the reason to drop.
    #[inline]
    fn lft_out(&self, node: usize, dlid: u16, in_gp: u32) -> Result<u32, DropReason> {
        fwd_decode(self.lft_code(node, dlid, in_gp))
    }

    /// A plain switch (see [`Sim::plain`]): if output `og` is idle, has nothing
    /// queued and no wake-up due now, and its peer has the credits, send `p` now.
    /// This is exactly what queueing it and looking at the port would do (the
    /// look absorbs landed credits and clears `starved`, then sends the only
    /// packet queued), without the queue round trip. False leaves `p` to be queued.
    #[inline]
    fn forward_at_once<M: Mode>(&mut self, og: u32, p: PacketId) -> bool {
        let g = og as usize;
        let pt = &self.ports[g];
        if pt.oq_len != 0 || pt.busy_until > self.now || pt.wake_at <= self.now {
            return false;
        }
        self.absorb_credits(og);
        self.ports[g].starved = false;
        let pk = &self.pkts[p];
        if self.held(g, 0) < pk.blocks() as i32 {
            return false;
        }
        // Cut-through must not underrun: the last byte cannot leave before it arrives.
        if pk.tail_at.saturating_sub(self.ports[g].ser.time(u32::from(pk.wire))) > self.now {
            return false;
        }
        self.stats.forwarded_at_once += 1;
        self.transmit::<M>(og, p);
        true
    }

    /// Queue `p` at output `og`, queue `qi` (a data VL, or `nvl` for VL15), and
    /// make sure the transmitter will look at it.
    #[inline(always)]
    fn enqueue<M: Mode>(&mut self, og: u32, qi: usize, p: PacketId) {
        let nvl = self.data_vls::<M>();
        let vl15 = qi == nvl;
        let g = og as usize;
        if let Some(cc) = self.ib.cc.as_ref().filter(|_| !M::FAST) {
            // FECN when the packet joins a queue at or over the threshold, but only
            // at a root of congestion: a port waiting for credits is a victim of
            // congestion further on and does not mark (Annex A10.2.1).
            if !vl15 && !self.ports[g].starved && self.oq_at(g, qi).len >= cc.threshold_packets {
                self.pkts[p].flags |= flag::FECN;
                self.stats.fecn_marked += 1;
            }
        }
        let was_head = if qi == 0 {
            self.ports[g].oq0.push(&mut self.pkts, p)
        } else {
            self.oq[g * (nvl + 1) + qi].push(&mut self.pkts, p)
        };
        self.ports[g].oq_len += 1;
        if !was_head && nvl == 1 && !vl15 && self.ports[g].starved {
            // Queued behind a head that waits for credits: the head's wake-up
            // (scheduled for when its credits land) will send it; a look now
            // would find the same head still short of credits.
            return;
        }
        self.kick::<M>(og);
    }

    /// The next packet for switch output `gp`: VL15 first, then VL arbitration.
    pub(crate) fn switch_pick<M: Mode>(&mut self, gp: u32) -> Pick {
        let g = gp as usize;
        if self.ports[g].oq_len == 0 {
            return Pick::Wait(Time::NEVER);
        }
        let base = g * (self.nvl + 1);
        // VL15 first; its queue (in `Sim::oq`, a line of its own) is read only
        // when something besides VL 0 is queued.
        if self.ports[g].oq_len != self.ports[g].oq0.len
            && let Some(p) = self.oq[base + self.nvl].pop(&self.pkts)
        {
            self.ports[g].oq_len -= 1;
            return Pick::Send(p);
        }
        match self.arbitrate::<M>(gp) {
            Ok(vl) => {
                let p = if vl == 0 {
                    self.ports[g].oq0.pop(&self.pkts)
                } else {
                    self.oq[base + vl].pop(&self.pkts)
                }
                .expect("arbitration chose a non-empty VL");
                self.ports[g].oq_len -= 1;
                Pick::Send(p)
            }
            Err(t) => Pick::Wait(t),
        }
    }
}
