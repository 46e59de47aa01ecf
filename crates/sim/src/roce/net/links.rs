//! Links and PFC: every port's transmitter (serialization, propagation, the
//! link FIFO of packets on the wire), loss injection, the pause state a port
//! receives and the pause frames it sends (IEEE 802.1Qbb).

use super::*;

/// The links and their PFC state, by global port (`port_base[node] + port`):
/// each port's hot line ([`Port`]), its cold half ([`PortCold`]: pause state,
/// control frames, loss injection), its link peer and the FIFO of packets on
/// its link. Every table has one entry per port (NIC ports included).
#[derive(Clone)]
pub(super) struct Links {
    /// Global index of each node's port 0; the last entry is the port count.
    pub(super) port_base: Table<u32>,
    /// The hot line of each port (see [`Port`]).
    pub(super) ports: Table<Port>,
    /// The cold half of each port (see [`Port`]).
    pub(super) pc: Table<PortCold>,
    /// The port at the other end of each port's link (`NONE`: not cabled).
    pub(super) peer: Table<u32>,
    /// Packets on each link direction (20-byte entries: see [`KeyedFifo`]).
    pub(super) link_fifo: Table<KeyedFifo<Pkt>>,
    /// Each link FIFO's times too far apart for its 32-bit steps (see [`KeyedFifo`]).
    pub(super) link_wide: Table<WideKeys>,
    /// The QoS maps in force on links and NICs: which priorities PFC governs
    /// (a switch may differ: its own `Switch::maps`).
    pub(super) maps: QosMaps,
}

impl Links {
    /// The links of the ports built by `build` (`PortTables`), with the QoS
    /// maps that say which priorities PFC governs.
    pub(super) fn new(pt: super::build::PortTables, maps: QosMaps) -> Links {
        let n = pt.ports.len();
        // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
        unsafe {
            Links {
                link_fifo: crate::engine::Table::trusted(vec![KeyedFifo::default(); n]),
                link_wide: crate::engine::Table::trusted(vec![WideKeys::new(); n]),
                port_base: crate::engine::Table::trusted(pt.base),
                ports: crate::engine::Table::trusted(pt.ports),
                pc: crate::engine::Table::trusted(pt.pc),
                peer: crate::engine::Table::trusted(pt.peer),
                maps,
            }
        }
    }
}

/// Per-port state a packet touches on every hop, in one 64-byte line: the
/// rest (pause state and generator, control frames, loss injection, rate) is
/// in [`PortCold`], beside it in `Links::pc`, and the link peer in `Links::peer`.
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Port {
    pub(super) busy_until: Time,
    pub(super) wake_at: Time,
    pub(super) ser: Serializer,
    pub(super) prop: Time,
    /// Bytes sent.
    pub(super) tx_bytes: u64,
    /// Address of the slot of this port's link FIFO written last (a prefetch
    /// hint for the next send, which writes the slot after it: no effect on
    /// results, stale after the ring grows, 0 before the first send).
    pub(super) tail_hint: usize,
    /// The latest time any priority of this transmitter is paused until (the
    /// largest of [`PausedTx::until_all`]): when it is not after now nothing is
    /// paused and the cold pause state need not be read.
    pub(super) pause_max: Time,
    /// The switch or NIC this port belongs to, as `index << 1 | is_switch`
    /// (its node's `RoceSim::role`, kept here so a hop reads no table for it;
    /// [`RoceSim::node_of`] gives the node).
    pub(super) owner: u32,
    /// Local port number.
    pub(super) num: u8,
    /// [`Port::DOWN`], [`Port::LOSSY`], [`Port::UNCABLED`], [`Port::CUT`],
    /// [`Port::PACED`]: 0 on a healthy line-rate link (one test per send).
    pub(super) fate: u8,
    /// `PortCold::ctrl` holds frames.
    pub(super) has_ctrl: bool,
    /// A switch port: bit q set when its egress queue q holds packets (read on
    /// every arrival, send and wake-up, so it lives in this line).
    pub(super) qmask: u8,
}

const _: () = assert!(std::mem::size_of::<Port>() == 64);

impl Port {
    /// The link is down.
    pub(super) const DOWN: u8 = 1;
    /// Loss injection is on for this link (`PortCold::loss_every` > 0).
    pub(super) const LOSSY: u8 = 2;
    /// No link is cabled to this port (`Links::peer` is `NONE`): its
    /// transmitter never runs. Kept here so a kick reads no other table for it.
    pub(super) const UNCABLED: u8 = 4;
    /// The link leads to another part of a run split over threads
    /// ([`RoceSim::run_threads`]): a send goes to `RoceSim::outbox`.
    pub(super) const CUT: u8 = 8;
    /// A NIC port held to a payload ceiling below its line rate
    /// (`NicConfig::payload_ppm`, in `PortCold::pace_ppm`).
    pub(super) const PACED: u8 = 16;

    #[inline]
    pub(super) fn down(&self) -> bool {
        self.fate & Port::DOWN != 0
    }

    /// (is a switch port, switch or NIC index).
    #[inline(always)]
    pub(super) fn owner(&self) -> (bool, u32) {
        (self.owner & 1 != 0, self.owner >> 1)
    }
}

/// Per-port state touched only by PFC, loss injection and set-up.
#[derive(Clone)]
pub(super) struct PortCold {
    pub(super) link: u32,
    /// Control frames (PFC) waiting: they go before any queued data.
    pub(super) ctrl: VecDeque<Pkt>,
    /// Data packets sent on this link since the start (loss injection).
    pub(super) data_sent: u64,
    pub(super) loss_every: u64,
    /// A paced NIC port's payload ceiling, parts per million of `bps` (0: none).
    pub(super) pace_ppm: u32,
    pub(super) bps: u64,
    pub(super) pause_timer_at: Time,
    /// Pauses received here (they stop our transmitter).
    pub(super) paused: PausedTx,
    /// Pauses we send out of here (they stop the peer).
    pub(super) pausegen: Box<PauseGen>,
}

impl RoceSim {
    /// The global port index of `node`'s port `port` from a caller of the public
    /// look-ups, checked in every build (see [`Self::flow_at`]).
    pub(super) fn user_port(&self, node: NodeId, port: u8) -> usize {
        let i = node.idx();
        assert!(
            i + 1 < self.links.port_base.len()
                && self.links.port_base[i] + u32::from(port) < self.links.port_base[i + 1],
            "node {} has no port {port}",
            node.0
        );
        (self.links.port_base[i] + u32::from(port)) as usize
    }

    #[inline(always)]
    pub(super) fn schedule_wake(&mut self, gp: u32, t: Time) {
        let p = &mut self.links.ports[gp as usize];
        if t < p.wake_at {
            p.wake_at = t;
            self.push_ev(t, Ev::TxWake { gp });
        }
    }

    /// Index of egress queue `q` of port `gp` in `eq`.
    #[inline(always)]
    pub(super) fn eqi(&self, q: usize, gp: u32) -> usize {
        q * self.links.ports.len() + gp as usize
    }

    /// When each priority of transmitter `gp` may send again; all `ZERO` (free)
    /// without reading the cold pause state when nothing is paused.
    #[inline]
    pub(super) fn pause_until(&self, gp: u32) -> [Time; 8] {
        if self.links.ports[gp as usize].pause_max > self.now {
            self.links.pc[gp as usize].paused.until_all()
        } else {
            [Time::ZERO; 8]
        }
    }

    #[inline]
    pub(super) fn kick(&mut self, gp: u32) {
        let p = &self.links.ports[gp as usize];
        if p.fate & Port::UNCABLED != 0 {
            return;
        }
        if p.busy_until > self.now {
            let b = p.busy_until;
            self.schedule_wake(gp, b);
        } else if p.wake_at > self.now {
            self.try_tx(gp);
        }
    }

    /// Transmitter `gp` is free: send a PFC frame, else the model's next packet.
    pub(super) fn try_tx(&mut self, gp: u32) {
        let g = gp as usize;
        if self.links.ports[g].busy_until > self.now {
            let b = self.links.ports[g].busy_until;
            self.schedule_wake(gp, b);
            return;
        }
        if self.links.ports[g].has_ctrl {
            let c = &mut self.links.pc[g].ctrl;
            let p = c.pop_front().expect("has_ctrl");
            self.links.ports[g].has_ctrl = !c.is_empty();
            self.transmit(gp, p);
            return;
        }
        let (is_sw, idx) = self.links.ports[g].owner();
        let pick = if is_sw {
            self.switch_pick(idx, gp)
        } else {
            self.nic_pick(idx)
        };
        match pick {
            Ok(p) => self.transmit(gp, p),
            Err(t) => {
                if t != Time::NEVER {
                    self.schedule_wake(gp, t.max(self.now));
                }
            }
        }
    }

    /// When transmitter `gp`, free from `free`, next has something it may send:
    /// `free` if a frame is queued, else (a NIC) the earliest pacing time of a flow
    /// with data; `None` when there is nothing to send. A NIC whose DCQCN rate is
    /// under the line rate is woken once per packet, at its pacing time.
    pub(super) fn next_work(&self, gp: u32, free: Time) -> Option<Time> {
        let port = &self.links.ports[gp as usize];
        if port.has_ctrl {
            return Some(free);
        }
        let (is_sw, idx) = port.owner();
        if is_sw {
            (port.qmask != 0).then_some(free)
        } else {
            let n = &self.hosts.nics[idx as usize];
            if !n.ctrl.is_empty() || (self.hosts.tcp.sends(idx) && self.hosts.tcp.has_work(idx, self.now)) {
                return Some(free);
            }
            n.flows
                .iter()
                .map(|&f| &self.hosts.flows[f as usize])
                .filter(|f| f.started && f.req.has_data() && !(self.hosts.hpcc_on && f.window_bound(self.cfg.nic.mtu)))
                .map(|f| f.next_ok.max(free))
                .min()
        }
    }

    pub(super) fn transmit(&mut self, gp: u32, p: Pkt) {
        let g = gp as usize;
        let pk = p;
        if gp == self.obs.capture_gp {
            self.obs.captured.push((self.now, pk));
        }
        // One look-up of the port's line for everything a send updates.
        let port = &mut self.links.ports[g];
        let mut end = self.now + port.ser.time(u32::from(pk.wire));
        let arrive = end + port.prop;
        port.busy_until = end;
        port.tx_bytes += u64::from(pk.wire);
        self.obs.sent += 1;
        let mut lost = None;
        if port.fate != 0 {
            if port.fate & Port::PACED != 0 && pk.kind == Kind::Data {
                // The NIC's payload ceiling: the line idles until this frame's
                // payload has taken its time at `pace_ppm` of the line rate.
                let payload = u32::from(pk.wire).saturating_sub(super::ROCEV2_HEADERS);
                let ppm = u64::from(self.links.pc[g].pace_ppm);
                let port = &mut self.links.ports[g];
                let paced = self.now + Time(port.ser.time(payload).0 * 1_000_000 / ppm);
                if paced > end {
                    end = paced;
                    port.busy_until = paced;
                }
            }
            let port = &self.links.ports[g];
            if port.down() {
                lost = Some(RoceDrop::LinkDown);
            } else if port.fate & Port::LOSSY != 0 && pk.kind == Kind::Data {
                // Loss injection.
                let c = &mut self.links.pc[g];
                c.data_sent += 1;
                if c.data_sent.is_multiple_of(c.loss_every) {
                    lost = Some(RoceDrop::Injected);
                }
            }
        }
        match lost {
            Some(why) => self.drop_pkt(p, why),
            None if self.links.ports[g].fate & Port::CUT != 0 => {
                let mut p = p;
                if p.int != 0 {
                    // The header goes with the packet; the far part gives it
                    // a handle of its own (any non-zero mark until then).
                    self.outbox_int.push(*self.hosts.int.get(p.int));
                    self.hosts.int.release(p.int);
                    p.int = 1;
                }
                self.outbox.push((arrive, gp, p));
            }
            None => {
                let f = &mut self.links.link_fifo[g];
                let first = f.push(&mut self.links.link_wide[g], arrive, p);
                self.links.ports[g].tail_hint = f.back_addr();
                if first {
                    self.push_ev(arrive, Ev::Arrive { dir: gp });
                }
            }
        }
        // Look again when the line frees, or a NIC's pacing lets it send, if there
        // is anything left to send.
        if let Some(t) = self.next_work(gp, end) {
            self.schedule_wake(gp, t);
        }
    }

    pub(super) fn arrive(&mut self, gp: u32, p: Pkt) {
        let pk = p;
        if pk.kind == Kind::Pause {
            let (prio, quanta) = pk.pause();
            self.on_pause_frame(gp, prio, quanta);
            self.deliver(p);
            return;
        }
        let (is_sw, idx) = self.links.ports[gp as usize].owner();
        if is_sw {
            self.switch_arrive(idx, gp, p)
        } else {
            self.nic_arrive(idx, p)
        }
    }

    pub(super) fn on_pause_frame(&mut self, gp: u32, prio: u8, quanta: u16) {
        let now = self.now;
        if !self.links.maps.lossless(prio) {
            // PFC is off for this priority here: the frame is counted and ignored.
            self.links.pc[gp as usize].paused.frames[usize::from(prio & 7)] += 1;
            return;
        }
        let mode = self.cfg.pfc.pause_mode;
        let cold = &mut self.links.pc[gp as usize];
        let was = cold.paused.is_paused(now, prio);
        let bps = cold.bps;
        cold.paused.on_frame(now, prio, quanta, bps, mode);
        let is = cold.paused.is_paused(now, prio);
        let latest = cold.paused.until_all().into_iter().max().unwrap_or(Time::ZERO);
        let port = &mut self.links.ports[gp as usize];
        port.pause_max = latest;
        if self.cfg.observe.record_pfc && was != is {
            let is_sw = port.owner().0;
            let num = port.num;
            let node = self.node_of(gp);
            self.pfc.push(PfcRecord {
                time_ns: now.0 / 1000,
                node,
                node_type: u8::from(is_sw),
                if_index: u32::from(num),
                pause: is,
            });
        }
        if !is {
            self.kick(gp);
        } else if mode == PauseMode::Timed {
            // Look again when the pause runs out.
            let until = self.links.pc[gp as usize].paused.until(prio);
            self.schedule_wake(gp, until);
        }
    }

    pub(super) fn send_pause(&mut self, gp: u32, f: PauseFrame) {
        let (prio, quanta) = match f {
            PauseFrame::Xoff { prio, quanta } => (prio, quanta),
            PauseFrame::Xon { prio } => (prio, 0),
        };
        let p = self.new_pkt(Pkt {
            kind: Kind::Pause,
            flow: NONE,
            seq: Pkt::pause_word(prio, quanta),
            wire: PAUSE_BYTES as u16,
            dscp: 0,
            hops: 0,
            flags: 0,
            int: 0,
        });
        self.links.pc[gp as usize].ctrl.push_back(p);
        self.links.ports[gp as usize].has_ctrl = true;
        if matches!(f, PauseFrame::Xoff { .. }) && self.cfg.pfc.pause_mode == PauseMode::Timed {
            let t = self.links.pc[gp as usize].pausegen.next_deadline();
            self.arm_pause_timer(gp, t);
        }
        self.kick(gp);
    }

    pub(super) fn arm_pause_timer(&mut self, gp: u32, t: Time) {
        let port = &mut self.links.pc[gp as usize];
        if t < port.pause_timer_at {
            port.pause_timer_at = t;
            self.push_ev(t, Ev::PauseTimer { gp });
        }
    }

    pub(super) fn pause_refresh(&mut self, gp: u32) {
        let mut out = Vec::new();
        let bps = self.links.pc[gp as usize].bps;
        self.links.pc[gp as usize].pausegen.poll(self.now, bps, &mut out);
        for f in out {
            self.send_pause(gp, f);
        }
        let t = self.links.pc[gp as usize].pausegen.next_deadline();
        if t != Time::NEVER {
            self.arm_pause_timer(gp, t);
        }
    }
}
