//! The simulated world: [`Sim`] owns the InfiniBand world's parts, builds them
//! once from a [`Fabric`] and the SM's [`RoutingTables`] (the tables are copied
//! in as data; no routing code runs here), runs the event loop and hands each
//! event to the part that handles it.
//!
//! ```text
//!   Sim ─┬─ cx: Cx ─┬─ core: Core       time, event queue, packets, ledger, trace, rng  (event.rs)
//!        │          ├─ links: Links     port records, credits, wake-ups                 (net.rs)
//!        │          ├─ fwd: Forwarding  LFTs, SL→VL tables, QP routes                   (ib/forward.rs)
//!        │          ├─ stats: Stats     counters, credit stalls, samples                (metrics.rs)
//!        │          └─ ib: IbConfig     the model parameters
//!        ├─ topo: Topology              node models and names, port numbering           (net.rs)
//!        ├─ sw: Switches                output queues, VL arbitration, input buffers, AR (ib/switch.rs)
//!        ├─ hca: Hcas                   CA ports, QPs, CQs                              (ib/hca.rs)
//!        └─ deadlock, watchdog/sample   the deadlock found, the periodic events' state  (deadlock.rs)
//! ```
//!
//! An event's handler gets the model it concerns (`&mut Switches` or
//! `&mut Hcas`) and `&mut Cx` (`ib::step`), the parts it may touch besides:
//! a split borrow of `Sim`'s fields. The models do not know each other: the
//! switch and the HCA each drive their own ports' transmitters through the
//! links, and only this loop looks at a port's model to choose one.
//!
//! Ports have global ids `gp = port_base[node] + port_number`; a link direction is
//! named by the global id of its transmitting port. Per-port state lives in
//! flat tables indexed by `gp` (and `gp * nvl + vl` for per-VL state).

use std::fmt::Write as _;

use fabric::{Fabric, NodeId};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use sm::RoutingTables;

use crate::SimError;
use crate::engine::{DropReason, Ledger, PackedQueue, PacketId, Time, TraceHash, prefetch};
use crate::ib::config::{EngineConfig, IbConfig, VlArbConfig};
use crate::ib::deadlock::DeadlockReport;
pub use crate::ib::event::Event;
use crate::ib::event::{Core, Fast, Generic, ID_MASK, Mode, TAG_ARRIVE, TAG_SHIFT, TAG_TX_WAKE, trace_word};
use crate::ib::forward::Forwarding;
use crate::ib::hca::{Cqe, Hcas, QpId, QpOptions, Wiring};
use crate::ib::metrics::{PortReport, RunSummary, Series, Stats};
pub use crate::ib::net::NodeModel;
use crate::ib::net::{Links, PortHot, Topology};
use crate::ib::packet::{NONE, Packet, Packets};
use crate::ib::step::Cx;
use crate::ib::switch::{Head, Switches};

/// Why [`Sim::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// A completion was queued; poll the CQs.
    Completion,
    /// Simulated time reached the `until` limit.
    TimeLimit,
    /// Nothing left to do: no events and no packets in flight.
    Idle,
    /// Packets are stuck in a cycle of credit-starved buffers.
    Deadlock(DeadlockReport),
}

/// The simulated world (see the module doc for its parts).
pub struct Sim {
    /// The engine, links, counters, configuration and forwarding state.
    cx: Cx,
    topo: Topology,
    sw: Switches,
    hca: Hcas,
    eng: EngineConfig,
    tables: RoutingTables,
    /// Tests only: never run the [`Fast`] loop ([`Sim::disable_fast_loop`]).
    fast_off: bool,
    deadlock: Option<DeadlockReport>,
    watchdog_armed: bool,
    /// A Sample event is queued. Sample and Watchdog each re-arm only while other
    /// events are pending, so the two periodic events cannot keep an idle world
    /// running for ever.
    sample_armed: bool,
}

impl Sim {
    /// Build the world from a fabric and the SM's tables.
    pub fn new(fabric: &Fabric, tables: &RoutingTables, ib: IbConfig, eng: EngineConfig) -> Result<Sim, SimError> {
        ib.validate()?;
        if tables.lft.len() != fabric.nodes.len() || tables.base_lid.len() != fabric.nodes.len() {
            return Err(SimError::Tables(format!(
                "tables cover {} nodes, the fabric has {}",
                tables.lft.len(),
                fabric.nodes.len()
            )));
        }
        let topo = Topology::new(fabric)?;

        // Data VLs: whatever the tables use, and at least every VL an SL2VL entry names.
        let mut max_vl = tables.vls_used.max(1) as usize;
        if let Some(s) = &tables.sl2vl {
            for per_in in s.iter().flatten().flatten() {
                for &vl in per_in {
                    if vl < 15 {
                        max_vl = max_vl.max(vl as usize + 1);
                    }
                }
            }
        }
        let arb_cfg = ib.vl_arb.clone().unwrap_or_else(|| VlArbConfig::equal(max_vl as u8));
        for e in arb_cfg.high.iter().chain(&arb_cfg.low) {
            max_vl = max_vl.max(e.vl as usize + 1);
        }
        let nvl = max_vl;

        let links = Links::new(fabric, &topo, &ib, nvl)?;
        let fwd = Forwarding::new(tables, &topo.port_base, &links);

        // Almost every event is scheduled at most one packet time, one cable and
        // one node latency ahead: a calendar wheel just that long (with a quarter
        // to spare) touches the least memory; anything later waits in its heap.
        // Its slots are 4.096 ns wide, about 25 events each on the ft432
        // benchmark: fewer slot changes and slot headers to keep in cache than
        // narrower slots, and the run loop's look-ahead (which sees to the end
        // of the current slot) runs past fewer slot ends. CPU time on that
        // benchmark by slot width: 2 ns 3.30 s, 4 ns 3.24 s, 8 ns 3.25 s,
        // 16 ns 3.37 s (sorting bigger slots costs more); sorting the next slot
        // early so the look-ahead could see past every end gained nothing.
        let max_pkt = crate::ib::packet::max_wire(ib.mtu);
        let horizon = links
            .ports
            .iter()
            .filter(|p| p.peer != NONE)
            .map(|p| p.ser.time(max_pkt) + p.prop())
            .max()
            .unwrap_or(Time::ZERO)
            + Time(ib.switch_latency_ps.max(ib.hca_rx_latency_ps).max(ib.hca_tx_latency_ps));
        let sw = Switches::new(&topo, &links, tables, arb_cfg, ib.adaptive_routing);
        let hca = Hcas::new(&topo, &links, tables);
        let np = topo.num_ports();
        let mut sim = Sim {
            cx: Cx {
                core: Core {
                    now: Time::ZERO,
                    q: PackedQueue::with_slots(horizon + Time(horizon.0 / 4), 12),
                    trace: TraceHash::default(),
                    rng: Pcg64Mcg::seed_from_u64(eng.seed),
                    pkts: Packets::with_capacity(1 << 14),
                    ledger: Ledger::default(),
                },
                links,
                stats: Stats::new(np, nvl),
                ib,
                fwd,
            },
            topo,
            sw,
            hca,
            eng,
            tables: tables.clone(),
            fast_off: false,
            deadlock: None,
            watchdog_armed: false,
            sample_armed: false,
        };
        let plain = nvl == 1 && !sim.cx.fwd.has_sl2vl() && !sim.sw.adaptive() && sim.cx.ib.cc.is_none();
        sim.cx.fwd.set_plain(plain);
        if sim.eng.sample_interval_ps > 0 {
            sim.sample_armed = true;
            sim.cx.core.q.push(Time(sim.eng.sample_interval_ps), Event::Sample);
        }
        Ok(sim)
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.cx.core.now
    }

    /// The seed this run was built with.
    pub fn seed(&self) -> u64 {
        self.eng.seed
    }

    /// The model parameters.
    pub fn ib_config(&self) -> &IbConfig {
        &self.cx.ib
    }

    /// The determinism hash of every event processed so far.
    pub fn trace_hash(&self) -> u64 {
        self.cx.core.trace.0
    }

    /// The conservation ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.cx.core.ledger
    }

    /// Packets alive (created, not yet delivered or dropped).
    pub fn in_flight(&self) -> u64 {
        self.cx.core.pkts.live() as u64
    }

    /// Check the ledger: created = delivered + dropped + in flight.
    pub fn check_ledger(&self) -> Result<(), SimError> {
        Ok(self.cx.core.ledger.check(self.in_flight())?)
    }

    /// Turn off the transmitters' planning shortcut (see
    /// `Links::holds_max`: a port holding credits for the largest packet
    /// wakes at the end of its send without reading the next packet). It must
    /// not change anything but the speed; tests compare traces with it on and
    /// off.
    #[doc(hidden)]
    pub fn disable_plan_shortcut(&mut self) {
        self.cx.links.disable_plan_shortcut();
    }

    /// Turn off the switches' forward-on-arrival shortcut (it is on whenever
    /// the configuration allows). The shortcut must not change anything but the
    /// speed; tests compare traces with it on and off.
    #[doc(hidden)]
    pub fn disable_forward_at_once(&mut self) {
        self.cx.fwd.set_plain(false);
    }

    /// Run every event through the [`Generic`] loop, even where the [`Fast`]
    /// one applies. The two must give the same run; tests compare them.
    #[doc(hidden)]
    pub fn disable_fast_loop(&mut self) {
        self.fast_off = true;
    }

    /// Counters and per-port statistics.
    pub fn stats(&self) -> &Stats {
        &self.cx.stats
    }

    /// The deadlock found, if any.
    pub fn deadlock(&self) -> Option<&DeadlockReport> {
        self.deadlock.as_ref()
    }

    /// A node's name.
    pub fn node_name(&self, n: u32) -> &str {
        &self.topo.node_name[n as usize]
    }

    /// Number of data VLs modelled.
    pub fn num_vls(&self) -> usize {
        self.cx.links.nvl()
    }

    /// Random generator for workloads (the one seed).
    pub fn rng(&mut self) -> &mut Pcg64Mcg {
        &mut self.cx.core.rng
    }

    /// Global port id of (node, port).
    #[inline]
    pub fn gp(&self, n: NodeId, port: u8) -> u32 {
        self.topo.gp(n, port)
    }

    /// What creating a QP reads and writes.
    fn wiring(&mut self) -> (&mut Hcas, Wiring<'_>) {
        (
            &mut self.hca,
            Wiring {
                topo: &self.topo,
                links: &self.cx.links,
                tables: &self.tables,
                fwd: &mut self.cx.fwd,
                hop_limit: self.cx.ib.hop_limit,
            },
        )
    }

    /// Create two connected RC QPs, one on `a` and one on `b` (like
    /// `ibv_create_qp` on each side plus the INIT→RTR→RTS transitions).
    pub fn create_rc_pair(&mut self, a: NodeId, b: NodeId, o: &QpOptions) -> Result<(QpId, QpId), SimError> {
        let (hca, mut w) = self.wiring();
        hca.create_rc_pair(&mut w, a, b, o)
    }

    /// Create a UD QP on (`node`, `port`).
    pub fn create_ud(&mut self, node: NodeId, o: &QpOptions) -> Result<QpId, SimError> {
        let (hca, mut w) = self.wiring();
        hca.create_ud(&mut w, node, o)
    }

    /// Give CA port (`node`, `port`) a P_Key table: from now on it drops and counts
    /// packets whose P_Key matches none of its entries ([`crate::ib::partition`]).
    pub fn set_pkey_table(&mut self, node: NodeId, port: u8, table: &[u16]) -> Result<(), SimError> {
        let name = || self.topo.node_name.get(node.idx()).cloned().unwrap_or_default();
        if node.idx() >= self.topo.node_model.len() {
            return Err(SimError::NoNode(node.0));
        }
        if self.topo.node_model[node.idx()] != crate::ib::net::NodeModel::IbHca {
            return Err(SimError::NotCa { node: name() });
        }
        if port == 0 || self.topo.port_base[node.idx()] + u32::from(port) >= self.topo.port_base[node.idx() + 1] {
            return Err(SimError::Uncabled { node: name(), port });
        }
        let gp = self.gp(node, port);
        self.hca.pkeys.set(gp, table);
        Ok(())
    }

    /// Every CA port's table from an SM partition plan (switch ports are skipped:
    /// the model enforces at CAs).
    pub fn set_partitions(&mut self, plan: &sm::partitions::PkeyPlan) -> Result<(), SimError> {
        for (&(n, p), t) in &plan.tables {
            if p != 0 && self.topo.node_model.get(n.idx()) == Some(&crate::ib::net::NodeModel::IbHca) {
                self.set_pkey_table(n, p, t)?;
            }
        }
        Ok(())
    }

    /// PortInfo:P_KeyViolations of CA port (`node`, `port`): packets it dropped for
    /// their P_Key.
    pub fn p_key_violations(&self, node: NodeId, port: u8) -> u64 {
        self.hca.pkeys.violations(self.gp(node, port))
    }

    /// The LID of (`node`, `port`) as this run sees it.
    pub fn lid(&self, node: NodeId, port: u8) -> Option<u16> {
        self.tables.lid_of(node, port).map(|l| l.0)
    }

    /// Post a SEND of `bytes` (`u64::MAX` = an endless stream).
    pub fn post_send(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.hca.post_send(&mut self.cx.core, &self.cx.ib, qp, bytes, wr_id)
    }

    /// Post an RDMA WRITE of `bytes` (`u64::MAX` = an endless stream).
    pub fn post_write(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.hca.post_write(&mut self.cx.core, &self.cx.ib, qp, bytes, wr_id)
    }

    /// Post an RDMA READ of `bytes`.
    pub fn post_read(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.hca.post_read(&mut self.cx.core, &self.cx.ib, qp, bytes, wr_id)
    }

    /// Post a UD SEND of `bytes` to UD QP `dst`.
    pub fn post_ud_send(&mut self, qp: QpId, dst: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.hca
            .post_ud_send(&mut self.cx.core, &self.cx.ib, qp, dst, bytes, wr_id)
    }

    /// Payload bytes QP `qp` has received as a responder (SEND and WRITE data).
    pub fn qp_rx_bytes(&self, qp: QpId) -> u64 {
        self.hca.qp_rx_bytes(qp)
    }

    /// The node a QP lives on.
    pub fn qp_node(&self, qp: QpId) -> NodeId {
        self.hca.qp_node(qp)
    }

    /// Take the next completion notification: the node whose CQ got an entry
    /// (like `ibv_get_cq_event`). Poll that node's CQ with [`Sim::poll_cq`].
    pub fn next_cq_event(&mut self) -> Option<NodeId> {
        self.hca.next_cq_event()
    }

    /// When the last RDMA WRITE into `qp` (as the responder) had all its data
    /// placed, or time zero if none has.
    pub fn write_placed(&self, qp: QpId) -> Time {
        self.hca.write_placed(qp)
    }

    /// Completion notifications not yet taken.
    pub fn cq_pending(&self) -> usize {
        self.hca.cq_pending()
    }

    /// Take one completion from `node`'s CQ (`ibv_poll_cq` with one entry).
    pub fn poll_cq(&mut self, node: NodeId) -> Option<Cqe> {
        self.hca.poll_cq(node)
    }

    /// Finish the run's bookkeeping: close open credit stalls at the current time.
    pub fn finish(&mut self) {
        let now = self.cx.core.now;
        self.cx.stats.close_stalls(now);
    }

    /// Run events until a completion is queued, simulated time passes `until`,
    /// nothing is left to do, or a deadlock is found.
    pub fn run(&mut self, until: Time) -> RunStatus {
        if self.runs_fast_loop() {
            self.event_loop::<Fast>(until)
        } else {
            self.event_loop::<Generic>(until)
        }
    }

    /// [`Self::run`] takes the [`Fast`] loop: the run is plain, its switches
    /// cut through, nothing is captured (and tests did not turn it off).
    #[doc(hidden)]
    pub fn runs_fast_loop(&self) -> bool {
        self.cx.fwd.is_plain::<Generic>()
            && !self.fast_off
            && self.cx.ib.forwarding == crate::ib::config::Forwarding::CutThrough
            && self.cx.stats.capture == NONE
    }

    /// The step context and the two models, split from the world's fields.
    #[inline(always)]
    fn parts(&mut self) -> (&mut Cx, &mut Switches, &mut Hcas) {
        (&mut self.cx, &mut self.sw, &mut self.hca)
    }

    /// Look for a credit deadlock now.
    fn find_deadlock(&self) -> Option<DeadlockReport> {
        crate::ib::deadlock::find(&crate::ib::deadlock::World {
            topo: &self.topo,
            links: &self.cx.links,
            sw: &self.sw,
            pkts: &self.cx.core.pkts,
            now: self.cx.core.now,
        })
    }

    /// [`Self::run`]'s loop, compiled for mode `M`.
    fn event_loop<M: Mode>(&mut self, until: Time) -> RunStatus {
        debug_assert!(!M::FAST || self.runs_fast_loop() && self.cx.links.nvl() == 1);
        if let Some(d) = &self.deadlock {
            return RunStatus::Deadlock(d.clone());
        }
        if self.eng.sample_interval_ps > 0 && !self.sample_armed {
            // sampling resumes when the driver brings new work
            self.sample_armed = true;
            self.cx
                .core
                .q
                .push(self.cx.core.now + Time(self.eng.sample_interval_ps), Event::Sample);
        }
        if self.eng.deadlock_check_ps > 0 && !self.watchdog_armed {
            self.watchdog_armed = true;
            self.cx
                .core
                .q
                .push(self.cx.core.now + Time(self.eng.deadlock_check_ps), Event::Watchdog);
        }
        loop {
            if self.hca.has_notification() {
                return RunStatus::Completion;
            }
            let Some((t, w)) = self.cx.core.q.first_packed() else {
                if self.cx.core.pkts.live() > 0 {
                    let rep = self
                        .find_deadlock()
                        .unwrap_or_else(|| DeadlockReport::stuck(self.cx.core.now, self.in_flight()));
                    self.deadlock = Some(rep.clone());
                    return RunStatus::Deadlock(rep);
                }
                if until != Time::NEVER {
                    self.cx.core.now = self.cx.core.now.max(until);
                }
                return RunStatus::Idle;
            };
            if t > until {
                self.cx.core.now = until.max(self.cx.core.now);
                return RunStatus::TimeLimit;
            }
            self.cx.core.now = t;
            self.prefetch_ahead::<M>();
            self.cx.stats.events += 1;
            self.cx.core.trace.fold(t.0);
            self.cx.core.trace.fold(trace_word(w));
            if w >> TAG_SHIFT == TAG_ARRIVE {
                let dir = w & ID_MASK;
                let core = &mut self.cx.core;
                let p = self.cx.links.ports[dir as usize]
                    .fifo
                    .pop(&core.pkts)
                    .expect("arrival FIFO has a head");
                let pk = &core.pkts[p];
                if pk.next == NONE {
                    core.q.pop_first();
                } else {
                    debug_assert_eq!(
                        pk.next_at,
                        self.cx.links.arrival_time(&self.cx.ib, dir, &core.pkts[pk.next])
                    );
                    core.q.replace_first(pk.next_at, pk.next_seq(), Event::Arrive { dir });
                }
                self.dispatch_arrival::<M>(dir, p);
                continue;
            }
            self.cx.core.q.pop_first();
            match <Event as crate::engine::Packed>::unpack(w) {
                Event::Arrive { .. } => unreachable!("handled above"),
                Event::TxWake { gp } => {
                    if self.cx.links.ports[gp as usize].wake_at == t {
                        self.cx.links.ports[gp as usize].wake_at = Time::NEVER;
                        self.try_tx::<M>(gp);
                    } else {
                        self.cx.stats.stale_wakes += 1;
                    }
                }
                Event::QpReady { qp } => {
                    let (cx, _, hca) = self.parts();
                    hca.qp_ready(cx, qp);
                }
                Event::Sample => {
                    let tx = self.cx.links.ports.iter().map(|p| p.tx_bytes);
                    self.cx.stats.sample(self.cx.core.now, tx, self.sw.buffer_use());
                    self.sample_armed = false;
                    if self.cx.core.q.len() > usize::from(self.watchdog_armed) || self.cx.core.pkts.live() > 0 {
                        self.sample_armed = true;
                        self.cx
                            .core
                            .q
                            .push(self.cx.core.now + Time(self.eng.sample_interval_ps), Event::Sample);
                    }
                }
                Event::Watchdog => {
                    self.watchdog_armed = false;
                    if self.cx.core.pkts.live() > 0
                        && let Some(rep) = self.find_deadlock()
                    {
                        self.deadlock = Some(rep.clone());
                        return RunStatus::Deadlock(rep);
                    }
                    if self.cx.core.q.len() > usize::from(self.sample_armed) {
                        self.watchdog_armed = true;
                        self.cx
                            .core
                            .q
                            .push(self.cx.core.now + Time(self.eng.deadlock_check_ps), Event::Watchdog);
                    }
                }
            }
        }
    }

    /// Start loading what the next events will touch while this one runs: the
    /// hop is bound by cache misses along a chain (the link's record, its head
    /// packet, the output port the packet will take), and the calendar slot
    /// being drained already says which links come next (a peek past the
    /// slot's end repeats its last event). Three events ahead: the link's or
    /// transmitter's record (both lines); one ahead, its head packet (loaded
    /// by then: the arrival at a switch reads it first) names what comes
    /// next: for a plain switch, the output port's record (see
    /// [`Forwarding::lft_code`]) and the route entry its next send reads, else
    /// the receiving QP's receive line; for a CA port's wake-up its head ACK
    /// or first QP; for a switch port's wake-up, the credit line of the link
    /// its queue's head came over and the head's route entry. A two-ahead
    /// stage that loads the head packet early does not pay
    /// (docs/PERFORMANCE.md).
    ///
    /// An upcoming event's kind follows no pattern (about seven arrivals to
    /// three wake-ups on the ft432 run), so a test of it is often a
    /// mispredicted branch: the three-ahead stage reads the same record for
    /// either kind, and the arrival half of the one-ahead stage computes its
    /// hints for either kind and keeps one with a conditional move
    /// (`select_unpredictable`). That pays where both hints come from lines
    /// already near; where one needs a cold line (the CA-port
    /// and switch-port wake-ups one ahead) a branch stays. Only hints: a hint
    /// that names nothing is harmless. Measured figures, and what did not pay,
    /// are in docs/PERFORMANCE.md.
    #[inline(always)]
    fn prefetch_ahead<M: Mode>(&self) {
        let (q, ports, pkts) = (&self.cx.core.q, &self.cx.links.ports, &self.cx.core.pkts);
        {
            // No test of the kind: the rare other kinds' ids make a harmless
            // hint (a prefetch of any address cannot fault).
            let w = q.peek_ahead_clamped(3);
            let r = ports.as_ptr().wrapping_add((w & ID_MASK) as usize).cast::<u8>();
            prefetch::addr(r);
            prefetch::addr(r.wrapping_add(std::mem::offset_of!(PortHot, cred)));
        }
        if let Some(w) = q.peek_ahead_packed(1) {
            if w >> TAG_SHIFT == TAG_TX_WAKE {
                let pt = &ports[(w & ID_MASK) as usize];
                // The packet last put on its link, which the send links to.
                prefetch::addr(pkts.hint_addr(pt.fifo.tail));
                if pt.model == NodeModel::IbHca {
                    // Then the ACK or the QP it will send from.
                    self.hca.prefetch_next(pkts, w & ID_MASK);
                } else if let Some(h) = pt.oq0.front() {
                    // A switch port sends its queue's head: it frees the input
                    // buffer of the link it came over (whose credit line takes
                    // the return) and reads its route entry.
                    let pk = &pkts[h];
                    let link = ports.as_ptr().wrapping_add(pk.in_link as usize).cast::<u8>();
                    prefetch::addr(link.wrapping_add(std::mem::offset_of!(PortHot, cred)));
                    prefetch::addr(self.cx.fwd.route_addr(pk.route() as usize + usize::from(pk.hops)));
                }
            }
            if w >> TAG_SHIFT == TAG_ARRIVE {
                // At a plain switch, the output the far switch will take (see
                // `Forwarding::stamp`), which the packet names, and the
                // decision for the switch after that one, which the send out
                // of it reads; at an HCA, the receiving QP's receive line (the
                // receive reads no port record but the link's, and the CA
                // port's LID range from the HCAs' `ca_rx`). Both computed, one
                // kept, without a branch.
                let sel = std::hint::select_unpredictable::<*const u8>;
                let pt = &ports[w as usize];
                let (pk, cold) = pkts.hint_get(pt.fifo.head);
                let out = ports.as_ptr().wrapping_add(pk.in_link as usize).cast::<u8>();
                let out2 = out.wrapping_add(std::mem::offset_of!(PortHot, cred));
                let route = self.cx.fwd.route_addr(pk.route() as usize + usize::from(pk.hops));
                let peer = self.hca.rx_line_addr(cold.dst_qp);
                let to_sw = (pt.peer_model == NodeModel::IbSwitch) & self.cx.fwd.is_plain::<M>();
                prefetch::addr(sel(to_sw, out, peer));
                prefetch::addr(sel(to_sw, out2, peer));
                prefetch::addr(sel(to_sw, route, peer));
            }
        }
    }

    /// A packet comes off link direction `dir`: hand it to the receiving
    /// node's model.
    #[inline]
    fn dispatch_arrival<M: Mode>(&mut self, dir: u32, p: PacketId) {
        let link = &self.cx.links.ports[dir as usize];
        let (in_gp, model, node) = (link.peer, link.peer_model, link.peer_node as usize);
        let (cx, sw, hca) = self.parts();
        match model {
            NodeModel::IbSwitch => sw.arrive::<M>(cx, dir, in_gp, node, p),
            NodeModel::IbHca => hca.arrive(cx, dir, in_gp, p),
            NodeModel::None => {
                cx.links.return_credits_now(&mut cx.core, dir, p);
                cx.core.drop_packet(p, DropReason::UnknownDestination);
            }
        }
    }

    /// Transmitter `gp` was woken: if its line is idle, let its node's model
    /// send the next packet if one may go.
    fn try_tx<M: Mode>(&mut self, gp: u32) {
        let g = gp as usize;
        let (cx, sw, hca) = self.parts();
        let busy = cx.links.ports[g].busy_until;
        if busy > cx.core.now {
            cx.links.schedule_wake(&mut cx.core.q, gp, busy);
            return;
        }
        match cx.links.ports[g].model {
            NodeModel::IbSwitch => sw.try_tx_idle::<M>(cx, gp),
            NodeModel::IbHca => hca.try_tx_idle::<M>(cx, gp),
            NodeModel::None => {
                cx.links.look(cx.core.now, gp);
                cx.links.idle(&mut cx.core.q, &mut cx.stats, gp, Time::NEVER);
            }
        }
    }

    /// Check the transmitter invariants: every port with queued work is busy, has a
    /// wake-up scheduled, or waits for credits it lacks (and is marked starved, so
    /// the next credit return wakes it). Returns one line per violation (a lost
    /// wake-up would leave packets stranded and is a model bug).
    pub fn audit(&self) -> Vec<String> {
        let (links, now) = (&self.cx.links, self.cx.core.now);
        let mut bad = Vec::new();
        for gp in 0..links.ports.len() {
            let pt = &links.ports[gp];
            if pt.peer == NONE {
                continue;
            }
            let has = match pt.model {
                NodeModel::IbSwitch => pt.oq_len > 0,
                NodeModel::IbHca => self.hca.has_work(gp as u32),
                NodeModel::None => false,
            };
            if !has || pt.busy_until > now || pt.wake_at != Time::NEVER {
                continue;
            }
            let name = &self.topo.node_name[self.topo.port_node[gp] as usize];
            let port = pt.port_num;
            if !pt.starved {
                bad.push(format!(
                    "{name} port {port}: work queued, line idle, no wake-up and not waiting for credits"
                ));
            } else if pt.need_blocks == 0 && links.credit_returns(gp as u32).next().is_some()
                || pt.need_blocks > 0
                    && links
                        .credit_ready(gp as u32, pt.need_vl, u32::from(pt.need_blocks), now)
                        .is_some()
            {
                bad.push(format!(
                    "{name} port {port}: starved though enough credits are on their way, and no wake-up"
                ));
            } else if pt.model == NodeModel::IbSwitch {
                for vl in 0..links.nvl() {
                    if self.sw.head_state(links, &self.cx.core.pkts, now, gp as u32, vl) == Head::Ready {
                        bad.push(format!(
                            "{name} port {port}: VL {vl} could send but nothing will wake it"
                        ));
                    }
                }
            }
        }
        bad
    }

    /// The run's summary.
    pub fn summary(&self) -> RunSummary {
        let l: &Ledger = &self.cx.core.ledger;
        RunSummary {
            seed: self.eng.seed,
            simulated_ps: self.cx.core.now.0,
            events: self.cx.stats.events,
            stale_wakes: self.cx.stats.stale_wakes,
            idle_looks: self.cx.stats.idle_looks,
            packet_link_hops: self.cx.stats.hops,
            packets_created: l.created,
            packets_delivered: l.delivered,
            packets_dropped: l.total_dropped(),
            drops_by_reason: crate::engine::DropReason::ALL
                .iter()
                .map(|r| (r.name().to_string(), l.dropped[*r as usize]))
                .filter(|x| x.1 > 0)
                .collect(),
            packets_in_flight: self.in_flight(),
            peak_packets_in_flight: self.cx.core.pkts.peak() as u64,
            payload_delivered_bytes: self.cx.stats.delivered_payload,
            psn_errors: self.cx.stats.psn_errors,
            fecn_marked: self.cx.stats.fecn_marked,
            becn_received: self.cx.stats.becn_received,
            reordered: self.cx.stats.reordered,
            rerouted: self.cx.stats.rerouted,
            trace_hash: format!("{:016x}", self.cx.core.trace.0),
            ledger_balanced: self.cx.core.ledger.check(self.in_flight()).is_ok(),
        }
    }

    /// Figures for every cabled port, in node then port order.
    pub fn port_reports(&self) -> Vec<PortReport> {
        let t = self.cx.core.now.0.max(1) as f64;
        let nvl = self.cx.links.nvl();
        let mut out = Vec::new();
        for gp in 0..self.cx.links.ports.len() {
            let pg = self.cx.links.ports[gp].peer;
            if pg == NONE {
                continue;
            }
            let node = self.topo.port_node[gp] as usize;
            let busy_ps =
                self.cx.links.ports[gp].tx_bytes as f64 * 8.0 * 1e12 / self.cx.links.rate_bps(gp).max(1) as f64;
            out.push(PortReport {
                node: self.topo.node_name[node].clone(),
                port: self.cx.links.ports[gp].port_num,
                peer: self.topo.node_name[self.topo.port_node[pg as usize] as usize].clone(),
                peer_port: self.cx.links.ports[pg as usize].port_num,
                rate_bps: self.cx.links.rate_bps(gp),
                tx_bytes: self.cx.links.ports[gp].tx_bytes,
                tx_packets: u64::from(self.cx.links.ports[gp].tx_pkts),
                utilisation: (busy_ps / t).min(1.0),
                credit_stall_ps: self.cx.stats.stall_ps[gp * nvl..(gp + 1) * nvl].to_vec(),
                peak_buffer_bytes: if self.topo.node_model[node] == NodeModel::IbSwitch {
                    self.sw.peak_bytes(gp)
                } else {
                    Vec::new()
                },
            });
        }
        out
    }

    /// The sampled series (empty unless `sample_interval_ps` was set).
    pub fn series(&self) -> Series {
        let np = self.cx.links.ports.len();
        let cabled: Vec<usize> = (0..np).filter(|&g| self.cx.links.ports[g].peer != NONE).collect();
        let mut s = Series {
            times_ps: self.cx.stats.sample_times.iter().map(|t| t.0).collect(),
            ports: cabled
                .iter()
                .map(|&g| {
                    format!(
                        "{}/{}",
                        self.topo.node_name[self.topo.port_node[g] as usize], self.cx.links.ports[g].port_num
                    )
                })
                .collect(),
            utilisation: Vec::new(),
            buffer_bytes: Vec::new(),
        };
        let mut prev_t = 0u64;
        for (k, &t) in s.times_ps.iter().enumerate() {
            let dt = (t - prev_t).max(1) as f64;
            let row_tx = &self.cx.stats.sample_tx[k * np..(k + 1) * np];
            let prev_tx = if k == 0 {
                None
            } else {
                Some(&self.cx.stats.sample_tx[(k - 1) * np..k * np])
            };
            s.utilisation.push(
                cabled
                    .iter()
                    .map(|&g| {
                        let b = row_tx[g] - prev_tx.map_or(0, |p| p[g]);
                        (b as f64 * 8.0 * 1e12 / self.cx.links.rate_bps(g).max(1) as f64 / dt).min(1.0)
                    })
                    .collect(),
            );
            s.buffer_bytes.push(
                cabled
                    .iter()
                    .map(|&g| u64::from(self.cx.stats.sample_occ[k * np + g]) * 64)
                    .collect(),
            );
            prev_t = t;
        }
        s
    }

    /// Per-port figures as CSV (one row per port; stall and buffer columns per VL).
    pub fn port_csv(&self) -> String {
        let mut out = String::from("node,port,peer,peer_port,rate_bps,tx_bytes,tx_packets,utilisation");
        for vl in 0..self.cx.links.nvl() {
            let _ = write!(out, ",stall_ps_vl{vl}");
        }
        for vl in 0..self.cx.links.nvl() {
            let _ = write!(out, ",peak_buffer_bytes_vl{vl}");
        }
        out.push('\n');
        for r in self.port_reports() {
            let _ = write!(
                out,
                "{},{},{},{},{},{},{},{:.6}",
                r.node, r.port, r.peer, r.peer_port, r.rate_bps, r.tx_bytes, r.tx_packets, r.utilisation
            );
            for v in &r.credit_stall_ps {
                let _ = write!(out, ",{v}");
            }
            for vl in 0..self.cx.links.nvl() {
                let _ = write!(out, ",{}", r.peak_buffer_bytes.get(vl).copied().unwrap_or(0));
            }
            out.push('\n');
        }
        out
    }

    /// Start recording every packet sent on (`node`, `port`) (for a pcap).
    pub fn capture_port(&mut self, node: NodeId, port: u8) -> Result<(), crate::SimError> {
        let cabled = (node.idx() < self.topo.node_model.len())
            .then(|| self.gp(node, port))
            .filter(|&gp| gp < self.topo.port_base[node.idx() + 1] && self.cx.links.ports[gp as usize].peer != NONE);
        let Some(gp) = cabled else {
            return Err(SimError::Uncabled {
                node: self.topo.node_name.get(node.idx()).cloned().unwrap_or_default(),
                port,
            });
        };
        self.cx.stats.capture = gp;
        Ok(())
    }

    /// Packets recorded by [`Sim::capture_port`]: (start of transmission, packet).
    pub fn captured(&self) -> &[(Time, Packet)] {
        &self.cx.stats.captured
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.cx.core.now)
            .field("nodes", &self.topo.node_model.len())
            .field("ports", &self.cx.links.ports.len())
            .field("in_flight", &self.cx.core.pkts.live())
            .finish()
    }
}
