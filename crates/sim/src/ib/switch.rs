//! The InfiniBand switch (IBA vol. 1 §18): packets land in the input port's per-VL
//! buffer (which the upstream transmitter filled on credit), are forwarded by the
//! linear forwarding table the SM programmed (`ib::forward`), change VL
//! by the SL→VL table of (input port, output port), and wait in the output port's
//! per-VL queue for VL arbitration and for credits at the next hop. A packet holds
//! its input-buffer blocks until its last byte has left, then the credits go back
//! upstream.
//!
//! VL15 (subnet management) bypasses flow control and goes ahead of every data VL
//! (IBA vol. 1 §7.6.5).

use sm::RoutingTables;
use wire::Lid;

use crate::engine::{DropReason, PacketId, Table, Time, prefetch};
use crate::ib::config::VlArbConfig;
use crate::ib::event::Mode;
use crate::ib::forward::fwd_decode;
use crate::ib::net::{Links, Pick, Topology};
use crate::ib::packet::{NONE, Packets, PktList, flag};
use crate::ib::step::Cx;

/// An input buffer's use and peak, per (port, VL), in 64-byte blocks: side by
/// side because every arrival updates both.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InBuf {
    used: u32,
    peak: u32,
}

/// The state of one VL's head packet at a switch output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    Empty,
    NoCredit,
    NotBefore(Time),
    Ready,
}

/// Per-port VL arbitration state (IBA vol. 1 §7.6.9): the current entry of each
/// table, the weight it has left in bytes, and the bytes sent from the high table
/// since the last low-priority packet.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ArbState {
    idx: [u16; 2],
    left: [i32; 2],
    hi_bytes: u32,
    last_table: u8,
}

/// What adaptive routing needs: hop distances between switches, the switch
/// each LID hangs off, and the ports each switch may choose among. `S × S`
/// bytes for S switches (1.6 MB for a 1,280-switch fabric) plus 8 bytes a
/// port, built once by a BFS from every switch.
#[derive(Debug)]
pub(crate) struct ArTables {
    sw_idx: Vec<u32>,
    lid_sw: Vec<u32>,
    dist: Vec<u8>,
    nsw: usize,
    /// Each node's first global port (the topology's `port_base`).
    port_base: Vec<u32>,
    /// The switch index of each port's peer ([`NONE`]: uncabled or not a switch).
    peer_sw: Vec<u32>,
}

impl ArTables {
    pub(crate) fn build(topo: &Topology, links: &Links, tables: &RoutingTables) -> ArTables {
        let n = topo.node_model.len();
        let mut sw_idx = vec![NONE; n];
        let mut sw_nodes = Vec::new();
        for (i, m) in topo.node_model.iter().enumerate() {
            if *m == crate::ib::net::NodeModel::IbSwitch {
                sw_idx[i] = sw_nodes.len() as u32;
                sw_nodes.push(i);
            }
        }
        let nsw = sw_nodes.len();
        let mut lid_sw = vec![NONE; tables.lid_owner.len()];
        for (lid, o) in tables.lid_owner.iter().enumerate() {
            if let Some((node, port)) = o {
                lid_sw[lid] = if sw_idx[node.idx()] != NONE {
                    sw_idx[node.idx()]
                } else {
                    let gp = topo.port_base[node.idx()] + u32::from(*port);
                    match links.ports.get(gp as usize).map(|p| p.peer) {
                        Some(pg) if pg != NONE => sw_idx[topo.port_node[pg as usize] as usize],
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
                for gp in topo.port_base[u]..topo.port_base[u + 1] {
                    let pg = links.ports[gp as usize].peer;
                    if pg == NONE {
                        continue;
                    }
                    let v = topo.port_node[pg as usize] as usize;
                    let vi = sw_idx[v];
                    if vi != NONE && row[vi as usize] == u8::MAX {
                        row[vi as usize] = du.saturating_add(1);
                        queue.push_back(v);
                    }
                }
            }
        }
        let peer_sw = links
            .ports
            .iter()
            .map(|pt| {
                if pt.peer == NONE {
                    NONE
                } else {
                    sw_idx[topo.port_node[pt.peer as usize] as usize]
                }
            })
            .collect();
        ArTables {
            sw_idx,
            lid_sw,
            dist,
            nsw,
            port_base: topo.port_base.clone(),
            peer_sw,
        }
    }

    /// Adaptive routing: among the ports of `node` on a shortest path to
    /// `dlid`'s switch, the one with the fewest packets queued; `lft_port` wins
    /// ties, then the lowest port number. Ports straight to end nodes are never
    /// alternatives. Returns the port number.
    fn port(&self, links: &Links, node: usize, dlid: u16, lft_port: u8) -> u8 {
        let me = self.sw_idx[node];
        let Some(&ds) = self.lid_sw.get(dlid as usize) else {
            return lft_port;
        };
        if me == NONE || ds == NONE || ds == me {
            return lft_port;
        }
        let d = self.dist[me as usize * self.nsw + ds as usize];
        let lft_gp = (self.port_base[node] + u32::from(lft_port)) as usize;
        let mut best = (links.ports[lft_gp].oq_len, lft_port);
        for gp in self.port_base[node]..self.port_base[node + 1] {
            let pt = &links.ports[gp as usize];
            if pt.peer == NONE || pt.port_num == lft_port {
                continue;
            }
            let v = self.peer_sw[gp as usize];
            if v == NONE || self.dist[v as usize * self.nsw + ds as usize].saturating_add(1) != d {
                continue;
            }
            if pt.oq_len < best.0 {
                best = (pt.oq_len, pt.port_num);
            }
        }
        best.1
    }
}

/// Every switch's queues and buffers, by global port: the output queues of
/// data VLs 1 and up and VL15 (`[gp * (nvl + 1) + vl]`, VL15 last; VL 0's
/// queue is in the port record, [`crate::ib::net::PortHot::oq0`], so slot
/// `gp * (nvl + 1)` is unused), the VL arbitration state and tables, the input
/// buffers' use (`[gp * nvl + vl]`), and the adaptive-routing tables when that
/// is on. Costs 16 bytes a port and queue, 16 a port for arbitration and 8 a
/// port and VL for buffers. The ports of end nodes have slots they never use:
/// one id space for all ports keeps every index a plain multiply-add.
#[derive(Debug)]
pub(crate) struct Switches {
    oq: Table<PktList>,
    arb: Vec<ArbState>,
    arb_cfg: VlArbConfig,
    in_buf: Table<InBuf>,
    /// Shortest-path distances for adaptive routing (built only when it is on).
    ar: Option<ArTables>,
    /// Each node's LID of port 0 (a switch's own), to which VL15 packets are
    /// consumed rather than forwarded.
    lid0: Vec<Option<Lid>>,
    nvl: usize,
}

impl Switches {
    /// Queues, buffers and arbitration state for every port of `topo`, with
    /// `nvl` data VLs arbitrated by `arb_cfg`; adaptive-routing tables when
    /// `adaptive` is on.
    pub(crate) fn new(
        topo: &Topology,
        links: &Links,
        tables: &RoutingTables,
        arb_cfg: VlArbConfig,
        adaptive: bool,
    ) -> Switches {
        let np = topo.num_ports();
        let nvl = links.nvl();
        Switches {
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            oq: unsafe { crate::engine::Table::trusted(vec![PktList::default(); np * (nvl + 1)]) },
            arb: vec![ArbState::default(); np],
            arb_cfg,
            in_buf: unsafe { crate::engine::Table::trusted(vec![InBuf::default(); np * nvl]) },
            ar: adaptive.then(|| ArTables::build(topo, links, tables)),
            lid0: (0..topo.node_model.len())
                .map(|n| tables.lid_of(fabric::NodeId(n as u32), 0))
                .collect(),
            nvl,
        }
    }

    /// Adaptive routing is on.
    pub(crate) fn adaptive(&self) -> bool {
        self.ar.is_some()
    }

    /// The run models one data VL, known at compile time in a
    /// [`crate::ib::event::Fast`] loop.
    #[inline(always)]
    fn one_vl<M: Mode>(&self) -> bool {
        M::FAST || self.nvl == 1
    }

    /// Input-buffer blocks in use at each port, all VLs together.
    pub(crate) fn buffer_use(&self) -> impl Iterator<Item = u32> + '_ {
        self.in_buf.chunks(self.nvl).map(|c| c.iter().map(|b| b.used).sum())
    }

    /// Peak input-buffer occupancy of port `gp` per VL, bytes.
    pub(crate) fn peak_bytes(&self, gp: usize) -> Vec<u64> {
        self.in_buf[gp * self.nvl..(gp + 1) * self.nvl]
            .iter()
            .map(|b| u64::from(b.peak) * 64)
            .collect()
    }

    /// Output queue `qi` (a data VL, or `nvl` for VL15) of switch port `g`.
    #[inline(always)]
    pub(crate) fn oq_at<'a>(&'a self, links: &'a Links, g: usize, qi: usize) -> &'a PktList {
        if qi == 0 {
            &links.ports[g].oq0
        } else {
            &self.oq[g * (self.nvl + 1) + qi]
        }
    }

    /// A packet (its header, for cut-through) arrives at switch input `in_gp`
    /// of `node` over link `link` (named by its transmitting port). Inlined
    /// into the event loop, where the step context costs nothing.
    #[inline(always)]
    pub(crate) fn arrive<M: Mode>(&mut self, cx: &mut Cx, link: u32, in_gp: u32, node: usize, p: PacketId) {
        let i = in_gp as usize;
        let nvl = cx.links.data_vls::<M>();
        let pk = cx.core.pkts[p];
        let vl15 = pk.flags & flag::VL15 != 0;
        let nb = pk.blocks();
        if !vl15 {
            let ui = i * nvl + pk.vl as usize;
            let b = &mut self.in_buf[ui];
            b.used += nb;
            b.peak = b.peak.max(b.used);
        }
        {
            let pm = &mut cx.core.pkts[p];
            pm.in_link = link;
            pm.in_vl = pk.vl;
        }
        let out = if pk.hops > cx.ib.hop_limit {
            Err(DropReason::HopLimit)
        } else if cx.fwd.is_plain::<M>() && !vl15 {
            // Looked up when the packet was put on the link (see `Forwarding::stamp`).
            fwd_decode(pk.in_link)
        } else {
            cx.fwd.lft_out(node, pk.dlid, in_gp)
        };
        if cx.fwd.is_plain::<M>()
            && !vl15
            && let Ok(og) = out
        {
            cx.core.pkts[p].vl = 0;
            if self.forward_at_once::<M>(cx, og, p) {
                return;
            }
            self.enqueue::<M>(cx, og, 0, p);
            return;
        }
        let in_port = cx.links.ports[i].port_num;
        let out = out.map(|og| (cx.links.ports[og as usize].port_num, og));
        let (out_port, og) = match out {
            Ok((o, og)) if self.ar.is_some() && !vl15 => {
                let ar = self.ar.as_ref().expect("tested");
                let a = ar.port(&cx.links, node, pk.dlid, o);
                if a == o {
                    (o, og)
                } else {
                    cx.stats.rerouted += 1;
                    (a, ar.port_base[node] + u32::from(a))
                }
            }
            Ok(x) => x,
            Err(why) => {
                // A management packet for the switch itself is consumed here.
                let to_self = vl15 && self.lid0[node] == Some(Lid(pk.dlid));
                let now = cx.core.now;
                self.release_input(cx, link, pk.vl, nb, vl15, now);
                if to_self {
                    cx.core.deliver_packet(p);
                } else {
                    cx.core.drop_packet(p, why);
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
            let vl = if cx.fwd.has_sl2vl() {
                cx.fwd
                    .switch_vl(node, in_port, out_port, cx.core.pkts.cold(p).sl)
                    .min(nvl as u8 - 1)
            } else {
                0
            };
            cx.core.pkts[p].vl = vl;
            vl as usize
        };
        self.enqueue::<M>(cx, og, qi, p);
    }

    /// A plain switch (see [`crate::ib::forward::Forwarding::plain`]): if
    /// output `og` is idle, has nothing queued and no wake-up due now, and its
    /// peer has the credits, send `p` now. This is exactly what queueing it and
    /// looking at the port would do (the look absorbs landed credits and clears
    /// `starved`, then sends the only packet queued), without the queue round
    /// trip. False leaves `p` to be queued.
    #[inline]
    fn forward_at_once<M: Mode>(&mut self, cx: &mut Cx, og: u32, p: PacketId) -> bool {
        let g = og as usize;
        let now = cx.core.now;
        let pt = &cx.links.ports[g];
        if pt.oq_len != 0 || pt.busy_until > now || pt.wake_at <= now {
            return false;
        }
        cx.links.look(now, og);
        let pk = &cx.core.pkts[p];
        if cx.links.held(g, 0) < pk.blocks() as i32 {
            return false;
        }
        // Cut-through must not underrun: the last byte cannot leave before it arrives.
        if pk
            .tail_at
            .saturating_sub(cx.links.ports[g].ser.time(u32::from(pk.wire)))
            > now
        {
            return false;
        }
        cx.stats.forwarded_at_once += 1;
        self.send::<M>(cx, og, p);
        true
    }

    /// Queue `p` at output `og`, queue `qi` (a data VL, or `nvl` for VL15), and
    /// make sure the transmitter will look at it.
    #[inline(always)]
    fn enqueue<M: Mode>(&mut self, cx: &mut Cx, og: u32, qi: usize, p: PacketId) {
        let nvl = cx.links.data_vls::<M>();
        let vl15 = qi == nvl;
        let g = og as usize;
        if let Some(cc) = cx.ib.cc.as_ref().filter(|_| !M::FAST) {
            // FECN when the packet joins a queue at or over the threshold, but only
            // at a root of congestion: a port waiting for credits is a victim of
            // congestion further on and does not mark (Annex A10.2.1).
            if !vl15 && !cx.links.ports[g].starved && self.oq_at(&cx.links, g, qi).len >= cc.threshold_packets {
                cx.core.pkts[p].flags |= flag::FECN;
                cx.stats.fecn_marked += 1;
            }
        }
        let was_head = if qi == 0 {
            cx.links.ports[g].oq0.push(&mut cx.core.pkts, p)
        } else {
            self.oq[g * (nvl + 1) + qi].push(&mut cx.core.pkts, p)
        };
        cx.links.ports[g].oq_len += 1;
        if !was_head && nvl == 1 && !vl15 && cx.links.ports[g].starved {
            // Queued behind a head that waits for credits: the head's wake-up
            // (scheduled for when its credits land) will send it; a look now
            // would find the same head still short of credits.
            return;
        }
        self.kick::<M>(cx, og);
    }

    /// New work for output `gp`: send now if the line is idle, otherwise make
    /// sure it is woken when the line frees.
    #[inline]
    fn kick<M: Mode>(&mut self, cx: &mut Cx, gp: u32) {
        if cx.links.wants_look(&mut cx.core.q, cx.core.now, gp) {
            self.try_tx_idle::<M>(cx, gp);
        }
    }

    /// Output `gp`'s line is idle and it was woken or has new work: send the
    /// next packet if one may go, else say when to look again.
    #[inline(never)]
    pub(crate) fn try_tx_idle<M: Mode>(&mut self, cx: &mut Cx, gp: u32) {
        cx.links.look(cx.core.now, gp);
        match self.pick::<M>(cx, gp) {
            Pick::Send(p) => self.send::<M>(cx, gp, p),
            Pick::Wait(t) => cx.links.idle(&mut cx.core.q, &mut cx.stats, gp, t),
        }
    }

    /// The next packet for switch output `gp`: VL15 first, then VL arbitration.
    #[inline]
    fn pick<M: Mode>(&mut self, cx: &mut Cx, gp: u32) -> Pick {
        let g = gp as usize;
        if cx.links.ports[g].oq_len == 0 {
            return Pick::Wait(Time::NEVER);
        }
        let base = g * (self.nvl + 1);
        // VL15 first; its queue (in `oq`, a line of its own) is read only
        // when something besides VL 0 is queued.
        if cx.links.ports[g].oq_len != cx.links.ports[g].oq0.len
            && let Some(p) = self.oq[base + self.nvl].pop(&cx.core.pkts)
        {
            cx.links.ports[g].oq_len -= 1;
            return Pick::Send(p);
        }
        match self.arbitrate::<M>(cx, gp) {
            Ok(vl) => {
                let p = if vl == 0 {
                    cx.links.ports[g].oq0.pop(&cx.core.pkts)
                } else {
                    self.oq[base + vl].pop(&cx.core.pkts)
                }
                .expect("arbitration chose a non-empty VL");
                cx.links.ports[g].oq_len -= 1;
                Pick::Send(p)
            }
            Err(t) => Pick::Wait(t),
        }
    }

    /// State of the head packet of switch output queue (`gp`, `vl`) at `now`.
    #[inline]
    pub(crate) fn head_state(&self, links: &Links, pkts: &Packets, now: Time, gp: u32, vl: usize) -> Head {
        let g = gp as usize;
        let Some(p) = self.oq_at(links, g, vl).front() else {
            return Head::Empty;
        };
        let pk = &pkts[p];
        if links.held(g, vl) < pk.blocks() as i32 {
            return Head::NoCredit;
        }
        // Cut-through must not underrun: the last byte cannot leave before it arrives.
        let earliest = pk.tail_at.saturating_sub(links.ports[g].ser.time(u32::from(pk.wire)));
        if earliest > now {
            return Head::NotBefore(earliest);
        }
        Head::Ready
    }

    /// Choose the data VL to send next at switch output `gp` by the VL arbitration
    /// tables, or say when to look again.
    #[inline]
    fn arbitrate<M: Mode>(&mut self, cx: &mut Cx, gp: u32) -> Result<usize, Time> {
        let g = gp as usize;
        let now = cx.core.now;
        let mut wait = Time::NEVER;
        if self.one_vl::<M>() {
            return match self.head_state(&cx.links, &cx.core.pkts, now, gp, 0) {
                Head::Ready => Ok(0),
                Head::NoCredit => {
                    let p = cx.links.ports[g].oq0.front().expect("head exists");
                    let nb = cx.core.pkts[p].blocks();
                    Err(cx.links.starve(&mut cx.stats, now, gp, 0, nb))
                }
                Head::NotBefore(t) => Err(t),
                Head::Empty => Err(Time::NEVER),
            };
        }
        let st = self.arb[g];
        let limit = self.arb_cfg.high_limit;
        let high_first = limit == 255 || st.hi_bytes < u32::from(limit).max(1) * 4096;
        let order: [usize; 2] = if high_first { [0, 1] } else { [1, 0] };
        for t in order {
            let len = if t == 0 {
                self.arb_cfg.high.len()
            } else {
                self.arb_cfg.low.len()
            };
            for k in 0..len {
                let i = (st.idx[t] as usize + k) % len;
                let e = if t == 0 {
                    self.arb_cfg.high[i]
                } else {
                    self.arb_cfg.low[i]
                };
                if e.weight == 0 || e.vl as usize >= self.nvl {
                    continue;
                }
                match self.head_state(&cx.links, &cx.core.pkts, now, gp, e.vl as usize) {
                    Head::Ready => {
                        let a = &mut self.arb[g];
                        if k != 0 || a.left[t] <= 0 {
                            a.idx[t] = i as u16;
                            a.left[t] = i32::from(e.weight) * 64;
                        }
                        a.last_table = t as u8;
                        return Ok(e.vl as usize);
                    }
                    Head::NoCredit => wait = wait.min(cx.links.stall_vl(&mut cx.stats, now, gp, e.vl as usize)),
                    Head::NotBefore(tt) => wait = wait.min(tt),
                    Head::Empty => {}
                }
            }
        }
        Err(wait)
    }

    /// Charge a sent packet to the arbitration table entry that chose it.
    #[inline]
    fn arb_charge<M: Mode>(&mut self, gp: u32, wire: u32) {
        if self.one_vl::<M>() {
            return;
        }
        let a = &mut self.arb[gp as usize];
        let t = a.last_table as usize;
        a.left[t] -= wire as i32;
        let len = if t == 0 {
            self.arb_cfg.high.len()
        } else {
            self.arb_cfg.low.len()
        };
        if a.left[t] <= 0 && len > 0 {
            a.idx[t] = ((a.idx[t] as usize + 1) % len) as u16;
        }
        if t == 0 {
            a.hi_bytes = a.hi_bytes.saturating_add(wire);
        } else {
            a.hi_bytes = 0;
        }
    }

    /// Send packet `p` from output `gp` now: put it on the wire, free the
    /// input buffer it sat in once its last byte is out (its credits travel
    /// back over the input link), charge arbitration, and plan the port's next
    /// look.
    fn send<M: Mode>(&mut self, cx: &mut Cx, gp: u32, p: PacketId) {
        let route = cx.fwd.stamp::<M>(&cx.links.ports[gp as usize], &cx.core.pkts[p]);
        let (end, pk) = cx
            .links
            .transmit::<M>(&mut cx.core, &mut cx.stats, &cx.ib, gp, p, route);
        if pk.in_link != NONE {
            let vl15 = pk.flags & flag::VL15 != 0;
            self.release_input(cx, pk.in_link, pk.in_vl, pk.blocks(), vl15, end);
            if !vl15 {
                self.arb_charge::<M>(gp, u32::from(pk.wire));
            }
        }
        self.plan_next::<M>(cx, gp, end);
    }

    /// Free `nb` blocks of the input buffer (VL `vl`) that link `link` (named by
    /// its transmitting port) fills, at time `at`, and send the credits back
    /// over it. Only the link's own record is read: the input port is its peer.
    #[inline]
    fn release_input(&mut self, cx: &mut Cx, link: u32, vl: u8, nb: u32, vl15: bool, at: Time) {
        if vl15 {
            return;
        }
        let in_gp = cx.links.return_credits(&mut cx.core.q, link, vl, nb, at);
        self.in_buf[in_gp as usize * self.nvl + vl as usize].used -= nb;
    }

    /// After a send that ends at `end`, wake output `gp` when its next packet
    /// can go (see [`Links::plan_need`]). With one data VL the next packet is
    /// known exactly; with several, wake at `end` and let arbitration decide.
    ///
    /// With one data VL, a transmitter that holds credits for the largest
    /// packet the run can make will have them at `end` whatever comes next, so
    /// the next packet (a line that is usually cold) is not read: the wake-up
    /// comes at `end`, exactly as `credit_ready` would have said.
    #[inline]
    fn plan_next<M: Mode>(&mut self, cx: &mut Cx, gp: u32, end: Time) {
        let g = gp as usize;
        let links = &mut cx.links;
        if links.one_vl::<M>() && links.holds_max(g) {
            prefetch::addr(cx.core.pkts.hint_addr(links.ports[g].oq0.chain_head()));
            if links.ports[g].oq_len != 0 {
                links.schedule_wake(&mut cx.core.q, gp, end);
            }
            return;
        }
        if links.ports[g].oq_len == 0 {
            return;
        }
        let need = if links.one_vl::<M>() {
            // None when only VL15 is queued: not flow controlled.
            links.ports[g].oq0.front().map(|p| (0u8, cx.core.pkts[p].blocks()))
        } else {
            None
        };
        links.plan_need(&mut cx.core.q, &mut cx.stats, gp, end, need);
    }
}
