//! The shared-buffer MMU of an Ethernet switch, its QoS maps and its egress
//! scheduler.
//!
//! ```text
//!  ingress port p, PG g                     egress port q, queue k
//!  ┌──────────┬──────────────┬──────────┐   ┌───────────────────────┐
//!  │ reserved │ shared (≤ T) │ headroom │   │ bytes → RED/ECN mark   │ strict / DWRR
//!  └──────────┴──────────────┴──────────┘   └───────────────────────┘
//!   T = α · (shared pool − shared in use)     (dynamic threshold)
//! ```
//!
//! A packet is charged to its ingress (port, PG) and to its egress queue. Ingress
//! admission takes the PG's reserved bytes first, then the shared pool up to the
//! dynamic threshold T (SONiC `dynamic_th`: α = 2^dynamic_th, shared RoCE
//! reference §1.5, §3.4). Past T a lossy PG drops; a lossless PG asks for XOFF and
//! takes the packet into its headroom; a headroom overflow is a drop that must
//! never happen in a correct configuration and is counted apart. XON is due when
//! the headroom is empty and the shared use is `resume_offset` below T (HPCC ns-3
//! `switch-mmu.cc`: 3 KB; reference §3.3). Egress admission always accepts, as in
//! HPCC ns-3.
//!
//! Costs: O(1) per admit/release; state is three `u64` per (port, PG) and one per
//! (port, queue).

use crate::engine::Table;
use crate::roce::dcqcn::Red;

/// Priorities / PGs / queues per port.
pub const NPRIO: usize = 8;

/// SONiC's pause quanta per port speed, the peer-response term of the headroom
/// (`doc/qos/dynamically-headroom-calculation.md`, sonic-swss
/// `buffer_headroom_mellanox.lua`; shared RoCE reference §3.1).
pub fn sonic_pause_quanta(gbps: u32) -> Option<u32> {
    Some(match gbps {
        10 => 67,
        25 => 80,
        40 => 118,
        50 => 147,
        100 => 394,
        200 => 453,
        400 | 800 => 905,
        _ => return None,
    })
}

/// Worst-case PFC headroom in bytes for one lossless PG, IEEE 802.1Qbb style
/// (shared RoCE reference §3.1 and the "raw IEEE-style bytes" table of §3.2):
/// the frame the receiver is sending when it decides to pause plus the frame the
/// sender is finishing (`2 × (frame + 20)` with 20 B of preamble and IFG), the
/// round trip on the cable at 1.98·10⁸ m/s, and the peer's response time of
/// `pause_quanta × 512` bit times.
pub fn ieee_headroom_bytes(speed_bps: u64, cable_m: f64, frame_bytes: u32, pause_quanta: u32) -> u64 {
    let frames = 2 * (u64::from(frame_bytes) + 20);
    let cable = 2.0 * cable_m / 1.98e8 * speed_bps as f64 / 8.0;
    let response = u64::from(pause_quanta) * 512 / 8;
    frames + cable.round() as u64 + response
}

/// The NIC side's xoff (Linux mlx5 `en/port_buffer.c`, `calculate_xoff`; shared
/// RoCE reference §3.2): `(301 + 2.16·cable_m)·speed_Gbps + 2.72·MTU` bytes with
/// speed clamped to ≥ 40G.
pub fn mlx5_nic_xoff_bytes(speed_gbps: u32, cable_m: u32, mtu: u32) -> u64 {
    let s = f64::from(speed_gbps.max(40));
    ((301.0 + 2.16 * f64::from(cable_m)) * s + 2.72 * f64::from(mtu)) as u64
}

/// HPCC ns-3's headroom per port: `3 × rate × link delay` (reference §1.1.6).
pub fn hpcc_headroom_bytes(bps: u64, delay_ps: u64) -> u64 {
    (3 * u128::from(bps) * u128::from(delay_ps) / 8 / 1_000_000_000_000) as u64
}

/// DSCP → TC → PG / queue maps and the PFC-enabled set of one switch
/// (`repr(C)`: the PFC set and the TC maps in the first line with the start of
/// the DSCP map).
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct QosMaps {
    /// Bit i set: priority / PG / queue i is lossless (SONiC `pfc_enable`).
    pub pfc_enable: u8,
    /// TC → ingress priority group.
    pub tc_to_pg: [u8; 8],
    /// TC → egress queue.
    pub tc_to_queue: [u8; 8],
    /// DSCP (0..64) → traffic class.
    pub dscp_to_tc: [u8; 64],
}

impl Default for QosMaps {
    /// rdmalab's RoCE default: DSCP 26 (RoCE, the NVIDIA convention) → TC3
    /// lossless, DSCP 48 (CNP) → TC6, everything else → TC0 (lossy); TC → PG as
    /// SONiC AZURE (TC3 → PG3, others → PG0 here), TC → queue identity.
    fn default() -> Self {
        let mut dscp_to_tc = [0u8; 64];
        dscp_to_tc[26] = 3;
        dscp_to_tc[48] = 6;
        let mut tc_to_pg = [0u8; 8];
        tc_to_pg[3] = 3;
        tc_to_pg[4] = 4;
        tc_to_pg[7] = 7;
        QosMaps {
            dscp_to_tc,
            tc_to_pg,
            tc_to_queue: [0, 1, 2, 3, 4, 5, 6, 7],
            pfc_enable: 1 << 3,
        }
    }
}

impl QosMaps {
    /// SONiC's own AZURE defaults (`qos_config.j2`, shared RoCE reference §1.3):
    /// DSCP 3→3, 4→4, 8→0, 5→2, 46→5, 48→6, every other DSCP → TC1; TC0,1,2,5,6 →
    /// PG0, TC3→3, TC4→4, TC7→7; PFC on 3 and 4. RoCE at DSCP 26 lands in lossy TC1.
    pub fn sonic_azure() -> QosMaps {
        let mut dscp_to_tc = [1u8; 64];
        for (d, tc) in [(3, 3), (4, 4), (8, 0), (5, 2), (46, 5), (48, 6)] {
            dscp_to_tc[d] = tc;
        }
        QosMaps {
            dscp_to_tc,
            tc_to_pg: [0, 0, 0, 3, 4, 0, 0, 7],
            tc_to_queue: [0, 1, 2, 3, 4, 5, 6, 7],
            pfc_enable: (1 << 3) | (1 << 4),
        }
    }

    /// (TC, PG, queue) of a packet with `dscp`.
    #[inline]
    pub fn classify(&self, dscp: u8) -> (u8, u8, u8) {
        let tc = self.dscp_to_tc[usize::from(dscp & 63)] & 7;
        (
            tc,
            self.tc_to_pg[usize::from(tc)] & 7,
            self.tc_to_queue[usize::from(tc)] & 7,
        )
    }

    /// Is PG / priority `p` lossless?
    #[inline]
    pub fn lossless(&self, p: u8) -> bool {
        self.pfc_enable & (1 << (p & 7)) != 0
    }
}

/// How one egress queue is scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSched {
    /// Strict priority; among strict queues the higher index goes first, and all
    /// strict queues go before DWRR ones.
    Strict,
    /// Deficit weighted round robin with this weight.
    Dwrr(u32),
}

/// An egress port's scheduler: strict queues first (highest index first), then
/// DWRR among the rest (Shreedhar & Varghese's deficit round robin; quantum =
/// weight × `quantum_unit` bytes).
#[derive(Clone, Debug)]
pub struct Scheduler {
    /// Per-queue discipline.
    pub sched: [QueueSched; NPRIO],
    /// Bytes of quantum per unit of weight.
    pub quantum_unit: u32,
    deficit: [i64; NPRIO],
    cursor: usize,
    fresh: bool,
}

impl Default for Scheduler {
    /// Queue 6 (CNP) strict as NVIDIA Cumulus/Onyx do (RoCE reference §2.5); the
    /// others DWRR with SONiC's default weights (14 for lossy queues, 15 for 3
    /// and 4, `qos_config.j2`, §1.6).
    fn default() -> Self {
        use QueueSched::*;
        Scheduler::new(
            [
                Dwrr(14),
                Dwrr(14),
                Dwrr(14),
                Dwrr(15),
                Dwrr(15),
                Dwrr(14),
                Strict,
                Dwrr(14),
            ],
            1024,
        )
    }
}

impl Scheduler {
    /// A scheduler with these disciplines.
    pub fn new(sched: [QueueSched; NPRIO], quantum_unit: u32) -> Scheduler {
        Scheduler {
            sched,
            quantum_unit,
            deficit: [0; NPRIO],
            cursor: 0,
            fresh: true,
        }
    }

    /// Choose the queue to send next. `head(q)` gives the size of queue q's head
    /// packet if the queue may send now (non-empty and not paused), else `None`.
    /// The caller must send the chosen queue's head.
    pub fn pick(&mut self, head: impl Fn(usize) -> Option<u32>) -> Option<usize> {
        for q in (0..NPRIO).rev() {
            if self.sched[q] == QueueSched::Strict && head(q).is_some() {
                return Some(q);
            }
        }
        let any = (0..NPRIO).any(|q| matches!(self.sched[q], QueueSched::Dwrr(w) if w > 0) && head(q).is_some());
        if !any {
            return None;
        }
        loop {
            let q = self.cursor;
            if let QueueSched::Dwrr(w) = self.sched[q] {
                match head(q) {
                    Some(sz) if w > 0 => {
                        if self.fresh {
                            self.deficit[q] += i64::from(w) * i64::from(self.quantum_unit);
                            self.fresh = false;
                        }
                        if self.deficit[q] >= i64::from(sz) {
                            self.deficit[q] -= i64::from(sz);
                            return Some(q);
                        }
                    }
                    // An idle queue keeps no credit (DRR).
                    _ => self.deficit[q] = 0,
                }
            }
            self.cursor = (self.cursor + 1) % NPRIO;
            self.fresh = true;
        }
    }
}

/// Switch MMU configuration (`repr(C)`: what an admission reads first).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct MmuConfig {
    /// Reserved (guaranteed) bytes per ingress (port, PG) (HPCC ns-3: 4 KB).
    pub reserved_per_pg: u64,
    /// Dynamic threshold α = 2^`dynamic_th` per port (SONiC; −8..7). HPCC ns-3's
    /// `pfc_a_shift` s is `dynamic_th = −s`.
    pub dynamic_th: Vec<i8>,
    /// Maps and the lossless set.
    pub maps: QosMaps,
    /// Total buffer in bytes (reserved + headroom + shared).
    pub buffer_bytes: u64,
    /// Headroom per lossless (port, PG), bytes.
    pub headroom: Vec<u64>,
    /// XON hysteresis below the threshold (HPCC ns-3 `resume_offset` 3 KB).
    pub resume_offset: u64,
    /// ECN marking per egress queue (`None`: never mark).
    pub red: [Option<Red>; NPRIO],
}

impl MmuConfig {
    /// HPCC ns-3's MMU for a switch with these port rates and link delays
    /// (reference §1.1.6 / §2.2): `BUFFER_SIZE` MB shared, 4 KB reserve per
    /// (port, queue), headroom 3 × rate × delay per port, α = 1/8 at the NIC rate
    /// and doubled per doubling of the port rate, 3 KB resume offset.
    pub fn hpcc_ns3(
        buffer_mb: u64,
        port_bps: &[u64],
        port_delay_ps: &[u64],
        nic_bps: u64,
        red: Option<Red>,
    ) -> MmuConfig {
        let dynamic_th = port_bps
            .iter()
            .map(|&b| {
                let mut shift = 3i8;
                let mut r = nic_bps.max(1);
                while r < b && shift > 0 {
                    r *= 2;
                    shift -= 1;
                }
                -shift
            })
            .collect();
        let headroom = port_bps
            .iter()
            .zip(port_delay_ps)
            .map(|(&b, &d)| hpcc_headroom_bytes(b, d))
            .collect();
        let maps = QosMaps::default();
        let mut reds = [None; NPRIO];
        reds[3] = red;
        MmuConfig {
            buffer_bytes: buffer_mb * 1024 * 1024,
            reserved_per_pg: 4 * 1024,
            dynamic_th,
            headroom,
            resume_offset: 3 * 1024,
            maps,
            red: reds,
        }
    }
}

/// Where an admitted packet's bytes went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    /// Bytes from the PG's reserve.
    pub reserved: u32,
    /// Bytes from the shared pool.
    pub shared: u32,
    /// Bytes from the headroom.
    pub headroom: u32,
}

/// Why the MMU refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MmuDrop {
    /// A lossy PG over its dynamic threshold (expected under congestion).
    LossyOverThreshold,
    /// A lossless PG overflowed its headroom: the headroom is too small for the
    /// link, or the peer ignored the pause (a configuration or model bug).
    HeadroomOverflow,
}

/// The admission decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Take the packet; `xoff` = this PG must now pause its upstream.
    Ok { charge: Charge, xoff: bool },
    /// Drop it.
    Drop(MmuDrop),
}

/// Bytes one ingress (port, PG) holds in each area, and its XOFF state: 16
/// bytes, four records to a cache line. Each area is bounded by a configured
/// size that [`Mmu::new`] checks fits 32 bits (the reserve by `reserved_per_pg`,
/// the shared bytes by the shared pool, itself part of `buffer_bytes`, the
/// headroom by the port's `headroom`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PgUse {
    reserved: u32,
    shared: u32,
    headroom: u32,
    paused: bool,
}

const _: () = assert!(std::mem::size_of::<PgUse>() == 16);

/// An MMU configuration the model cannot hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MmuError {
    /// A size over the 32 bits a priority group's byte counters have.
    #[error("{field} is {bytes} B: the switch MMU counts a priority group's bytes in 32 bits (at most {max} B)", max = u32::MAX)]
    TooLarge {
        /// The [`MmuConfig`] field (`headroom[port]` for a port's headroom).
        field: String,
        /// Its value.
        bytes: u64,
    },
}

/// α · (free shared bytes) with α = 2^`th` (SONiC `dynamic_th`).
#[inline]
fn dyn_threshold(size: u64, used: u64, th: i8) -> u64 {
    let free = size.saturating_sub(used);
    if th >= 0 { free << th } else { free >> (-th) }
}

/// The MMU state of one switch (`repr(C)`: the fields an admission and a
/// release read come first, in two lines with the configuration's hot half).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Mmu {
    nports: usize,
    shared_size: u64,
    shared_used: u64,
    /// Ingress (port, PG) accounting, `[pg * nports + port]`: one record per PG so an
    /// admission touches one record, and PG-major so the records of the one or two
    /// PGs that carry traffic sit together (a few lines per switch, not one per port).
    pg: Table<PgUse>,
    /// Bytes queued at egress (port, queue), `[queue * nports + port]` (queue-major,
    /// like `pg`).
    egress: Table<u64>,
    /// Peak shared-pool use, bytes.
    pub peak_shared: u64,
    /// Drops by reason: [lossy over threshold, headroom overflow].
    pub drops: [u64; 2],
    cfg: MmuConfig,
}

impl Mmu {
    /// An empty MMU for `nports` ports (indices 0..nports); an error when the
    /// buffer, the reserve or a port's headroom does not fit 32 bits.
    pub fn new(cfg: MmuConfig, nports: usize) -> Result<Mmu, MmuError> {
        let fields = [
            ("buffer_bytes".to_string(), cfg.buffer_bytes),
            ("reserved_per_pg".to_string(), cfg.reserved_per_pg),
        ];
        let headrooms = cfg
            .headroom
            .iter()
            .enumerate()
            .map(|(p, &h)| (format!("headroom[{p}]"), h));
        if let Some((field, bytes)) = fields
            .into_iter()
            .chain(headrooms)
            .find(|&(_, b)| b > u64::from(u32::MAX))
        {
            return Err(MmuError::TooLarge { field, bytes });
        }
        let lossless = (0..NPRIO).filter(|&p| cfg.maps.lossless(p as u8)).count() as u64;
        let headroom_total: u64 = (0..nports)
            .map(|p| cfg.headroom.get(p).copied().unwrap_or(0) * lossless)
            .sum();
        let reserved_total = cfg.reserved_per_pg * (nports * NPRIO) as u64;
        let shared_size = cfg.buffer_bytes.saturating_sub(headroom_total + reserved_total);
        Ok(Mmu {
            nports,
            shared_size,
            shared_used: 0,
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            pg: unsafe { crate::engine::Table::trusted(vec![PgUse::default(); nports * NPRIO]) },
            egress: unsafe { crate::engine::Table::trusted(vec![0; nports * NPRIO]) },
            drops: [0; 2],
            peak_shared: 0,
            cfg,
        })
    }

    /// Index of (port, PG or queue) in `pg` and `egress`.
    #[inline]
    fn idx(&self, port: usize, c: u8) -> usize {
        usize::from(c) * self.nports + port
    }

    /// The configuration.
    pub fn config(&self) -> &MmuConfig {
        &self.cfg
    }

    /// Size of the shared pool (buffer − reserves − headrooms).
    pub fn shared_size(&self) -> u64 {
        self.shared_size
    }

    /// Shared bytes in use.
    pub fn shared_used(&self) -> u64 {
        self.shared_used
    }

    /// The dynamic threshold of ingress port `port` now: α · (free shared bytes).
    #[inline]
    pub fn threshold(&self, port: usize) -> u64 {
        let th = self.cfg.dynamic_th.get(port).copied().unwrap_or(0);
        dyn_threshold(self.shared_size, self.shared_used, th)
    }

    /// The checked index of (port, PG or queue) for the public look-ups.
    fn checked_idx(&self, port: usize, c: u8) -> usize {
        assert!(
            port < self.nports && usize::from(c) < NPRIO,
            "MMU of {} ports: no port {port} class {c}",
            self.nports
        );
        self.idx(port, c)
    }

    /// Bytes held by ingress (port, PG): (reserved, shared, headroom).
    pub fn pg_use(&self, port: usize, pg: u8) -> (u64, u64, u64) {
        let g = self.pg[self.checked_idx(port, pg)];
        (u64::from(g.reserved), u64::from(g.shared), u64::from(g.headroom))
    }

    /// Is XOFF asserted for ingress (port, PG)?
    pub fn pg_paused(&self, port: usize, pg: u8) -> bool {
        self.pg[self.checked_idx(port, pg)].paused
    }

    /// Bytes queued at egress (port, queue).
    pub fn egress_bytes(&self, port: usize, q: u8) -> u64 {
        self.egress[self.checked_idx(port, q)]
    }

    /// Bytes queued at egress (port, queue), unchecked in release builds: the
    /// simulator's own ports (`port < nports`) and queues (`q < NPRIO`), as
    /// for [`Self::admit`].
    #[inline]
    pub(crate) fn egress_at(&self, port: usize, q: u8) -> u64 {
        self.egress[self.idx(port, q)]
    }

    /// Admit a packet of `bytes` arriving on `in_port` in `pg`, bound for egress
    /// (`out_port`, `queue`). Crate-private: the ports and classes index the
    /// MMU's tables unchecked in release builds, so they must be the
    /// simulator's own (`< nports`, `< NPRIO`: [`QosMaps::classify`] masks them).
    #[inline]
    pub(crate) fn admit(&mut self, in_port: usize, pg: u8, out_port: usize, queue: u8, bytes: u32) -> Admit {
        debug_assert!(in_port < self.nports && out_port < self.nports);
        let i = self.idx(in_port, pg);
        let e = self.idx(out_port, queue);
        let b = u64::from(bytes);
        let lossless = self.cfg.maps.lossless(pg);
        let th_shift = self.cfg.dynamic_th.get(in_port).copied().unwrap_or(0);
        let th = dyn_threshold(self.shared_size, self.shared_used, th_shift);
        // One PG record, read and written through one reference.
        let u = &mut self.pg[i];
        let from_res = self.cfg.reserved_per_pg.saturating_sub(u64::from(u.reserved)).min(b);
        let rest = b - from_res;
        let mut charge = Charge {
            reserved: from_res as u32,
            ..Charge::default()
        };
        if rest > 0 {
            let fits_shared =
                u.headroom == 0 && u64::from(u.shared) + rest <= th && self.shared_used + rest <= self.shared_size;
            if fits_shared {
                charge.shared = rest as u32;
            } else if !lossless {
                self.drops[0] += 1;
                return Admit::Drop(MmuDrop::LossyOverThreshold);
            } else {
                let room = self
                    .cfg
                    .headroom
                    .get(in_port)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(u64::from(u.headroom));
                if rest > room {
                    self.drops[1] += 1;
                    return Admit::Drop(MmuDrop::HeadroomOverflow);
                }
                charge.headroom = rest as u32;
            }
        }
        // Within 32 bits: the reserve stays within `reserved_per_pg`, the shared
        // bytes within the pool, the headroom within the port's (checked in `new`).
        u.reserved += from_res as u32;
        u.shared += charge.shared;
        u.headroom += charge.headroom;
        self.shared_used += u64::from(charge.shared);
        self.peak_shared = self.peak_shared.max(self.shared_used);
        self.egress[e] += b;
        let mut xoff = false;
        if lossless && !u.paused {
            // HPCC ns-3 CheckShouldPause: headroom in use, or shared use at the
            // threshold (of the pool as it is now, after this packet).
            let th = dyn_threshold(self.shared_size, self.shared_used, th_shift);
            if u.headroom > 0 || u64::from(u.shared) >= th {
                u.paused = true;
                xoff = true;
            }
        }
        Admit::Ok { charge, xoff }
    }

    /// A packet of `bytes` admitted from ingress (`in_port`, `pg`) left through
    /// egress (`out_port`, `queue`). Returns true if the ingress PG may now resume
    /// (send XON). Crate-private, as [`Self::admit`].
    #[inline(always)]
    pub(crate) fn release(&mut self, in_port: usize, pg: u8, out_port: usize, queue: u8, bytes: u32) -> bool {
        let i = self.idx(in_port, pg);
        let e = self.idx(out_port, queue);
        // Free headroom first, then shared, then reserve (HPCC ns-3
        // RemoveFromIngressAdmission), so a paused PG drains its headroom first.
        let u = &mut self.pg[i];
        let mut b = bytes;
        let h = u.headroom.min(b);
        u.headroom -= h;
        b -= h;
        let s = u.shared.min(b);
        u.shared -= s;
        b -= s;
        let r = u.reserved.min(b);
        u.reserved -= r;
        let paused = u.paused;
        self.shared_used -= u64::from(s);
        self.egress[e] = self.egress[e].saturating_sub(u64::from(bytes));
        paused && self.check_resume(in_port, pg)
    }

    /// Should paused ingress (port, PG) resume now? Clears the paused flag if so
    /// (HPCC ns-3 CheckShouldResume: headroom empty and shared + resume offset ≤ T).
    /// Crate-private, as [`Self::admit`].
    pub(crate) fn check_resume(&mut self, port: usize, pg: u8) -> bool {
        let i = self.idx(port, pg);
        if !self.pg[i].paused {
            return false;
        }
        if self.pg[i].headroom == 0 && u64::from(self.pg[i].shared) + self.cfg.resume_offset <= self.threshold(port) {
            self.pg[i].paused = false;
            return true;
        }
        false
    }

    /// Total bytes held (all PGs, all areas).
    pub fn held(&self) -> u64 {
        self.pg
            .iter()
            .map(|g| u64::from(g.reserved) + u64::from(g.headroom))
            .sum::<u64>()
            + self.shared_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_matches_the_reference_tables() {
        // Shared RoCE reference §3.2, raw IEEE-style bytes with 9216-byte frames.
        let cases = [
            (100u64, 5.0, 44_300u64),
            (100, 40.0, 48_700),
            (100, 300.0, 81_600),
            (400, 5.0, 78_900),
            (400, 300.0, 227_900),
        ];
        for (g, m, kb) in cases {
            let h = ieee_headroom_bytes(g * 1_000_000_000, m, 9216, sonic_pause_quanta(g as u32).unwrap());
            assert!(h.abs_diff(kb) <= 60, "{g}G {m}m: {h} vs {kb}");
        }
        // mlx5 calculate_xoff worked values (simulators reference §2.2).
        assert_eq!(mlx5_nic_xoff_bytes(400, 100, 4096), 217_941);
        assert_eq!(mlx5_nic_xoff_bytes(100, 100, 4096), 62_841);
        // HPCC ns-3: 3 × rate × delay: 100G, 1 µs ⇒ 37.5 KB; 400G ⇒ 150 KB.
        assert_eq!(hpcc_headroom_bytes(100_000_000_000, 1_000_000), 37_500);
        assert_eq!(hpcc_headroom_bytes(400_000_000_000, 1_000_000), 150_000);
    }

    #[test]
    fn maps_classify_roce_and_cnp() {
        let m = QosMaps::default();
        assert_eq!(m.classify(26), (3, 3, 3));
        assert!(m.lossless(3));
        assert_eq!(m.classify(48), (6, 0, 6));
        assert_eq!(m.classify(0), (0, 0, 0));
        assert!(!m.lossless(0));
        // SONiC's own default puts DSCP 26 in lossy TC1 (reference §1.3).
        let a = QosMaps::sonic_azure();
        assert_eq!(a.classify(26), (1, 0, 1));
        assert!(!a.lossless(0));
        assert_eq!(a.classify(3), (3, 3, 3));
    }

    #[test]
    fn dwrr_shares_by_weight_and_strict_goes_first() {
        let mut s = Scheduler::new(
            [
                QueueSched::Dwrr(1),
                QueueSched::Dwrr(3),
                QueueSched::Dwrr(0),
                QueueSched::Dwrr(0),
                QueueSched::Dwrr(0),
                QueueSched::Dwrr(0),
                QueueSched::Strict,
                QueueSched::Dwrr(0),
            ],
            1000,
        );
        let mut sent = [0u64; 8];
        for _ in 0..4000 {
            let q = s.pick(|q| (q <= 1).then_some(1000)).unwrap();
            sent[q] += 1000;
        }
        assert_eq!(sent[1], 3 * sent[0], "{sent:?}");
        // A strict queue with a packet always wins.
        assert_eq!(s.pick(|q| (q <= 1 || q == 6).then_some(1000)), Some(6));
        assert_eq!(s.pick(|_| None), None);
        // Uneven packet sizes still share bytes by weight.
        let mut s = Scheduler::new([QueueSched::Dwrr(1); 8], 1500);
        let mut bytes = [0u64; 8];
        for _ in 0..10_000 {
            let q = s.pick(|q| match q {
                0 => Some(64),
                1 => Some(1500),
                _ => None,
            });
            let q = q.unwrap();
            bytes[q] += if q == 0 { 64 } else { 1500 };
        }
        let r = bytes[0] as f64 / bytes[1] as f64;
        assert!((r - 1.0).abs() < 0.05, "{bytes:?}");
    }

    fn small_mmu() -> Mmu {
        let cfg = MmuConfig {
            buffer_bytes: 1_000_000,
            reserved_per_pg: 1000,
            dynamic_th: vec![0; 4],
            headroom: vec![20_000; 4],
            resume_offset: 3000,
            maps: QosMaps::default(),
            red: [None; NPRIO],
        };
        Mmu::new(cfg, 4).unwrap()
    }

    #[test]
    fn lossless_pauses_and_absorbs_in_headroom_lossy_drops() {
        let mut m = small_mmu();
        // 1 MB − 4 ports × 8 PGs × 1000 reserve − 4 × 20 KB headroom (one lossless PG).
        assert_eq!(m.shared_size(), 1_000_000 - 32_000 - 80_000);
        let mut charges = Vec::new();
        // α = 1: a single congested PG settles at T = α·B/(1+α) = B/2 (reference §3.4).
        let mut xoff_at = None;
        for k in 0..2000 {
            match m.admit(0, 3, 1, 3, 1000) {
                Admit::Ok { charge, xoff } => {
                    charges.push(charge);
                    if xoff {
                        xoff_at = Some(k);
                        break;
                    }
                }
                Admit::Drop(d) => panic!("drop {d:?} at {k}"),
            }
        }
        let k = xoff_at.expect("pauses");
        let (_, shared, _) = m.pg_use(0, 3);
        let half = m.shared_size() / 2;
        assert!(shared.abs_diff(half) <= 1000, "shared {shared} vs B/2 {half}");
        assert!(k > 400);
        // Headroom absorbs 20 packets, then overflows (a bug if it happens).
        for _ in 0..20 {
            assert!(matches!(
                m.admit(0, 3, 1, 3, 1000),
                Admit::Ok {
                    charge: Charge { headroom: 1000, .. },
                    xoff: false
                }
            ));
        }
        assert_eq!(m.admit(0, 3, 1, 3, 1000), Admit::Drop(MmuDrop::HeadroomOverflow));
        // A lossy PG on another port: its threshold is α·free, now small.
        let mut lossy_ok = 0;
        loop {
            match m.admit(2, 0, 1, 0, 1000) {
                Admit::Ok { .. } => lossy_ok += 1,
                Admit::Drop(d) => {
                    assert_eq!(d, MmuDrop::LossyOverThreshold);
                    break;
                }
            }
        }
        assert!(lossy_ok > 100 && lossy_ok < 400, "{lossy_ok}");
        assert_eq!(m.drops, [1, 1]);
        // Drain port 0's PG 3: XON once headroom is empty and shared + 3 KB ≤ T.
        let mut xon = false;
        for _ in charges.iter().rev() {
            if m.release(0, 3, 1, 3, 1000) {
                xon = true;
                break;
            }
        }
        assert!(xon);
        assert_eq!(m.pg_use(0, 3).2, 0);
        assert!(!m.pg_paused(0, 3));
    }

    #[test]
    fn hpcc_preset_scales_alpha_with_port_rate() {
        let g = 1_000_000_000u64;
        let c = MmuConfig::hpcc_ns3(32, &[100 * g, 400 * g], &[1_000_000, 1_000_000], 100 * g, None);
        assert_eq!(c.dynamic_th, vec![-3, -1]);
        assert_eq!(c.headroom, vec![37_500, 150_000]);
        let m = Mmu::new(c, 2).unwrap();
        assert_eq!(m.threshold(0), m.shared_size() / 8);
        assert_eq!(m.threshold(1), m.shared_size() / 2);
    }

    /// A buffer, reserve or headroom over 32 bits is refused with the field
    /// named; 4 GiB − 1 is accepted.
    #[test]
    fn sizes_over_32_bits_are_refused_by_name() {
        let cfg = |buffer: u64, headroom: u64| MmuConfig {
            buffer_bytes: buffer,
            reserved_per_pg: 1000,
            dynamic_th: vec![0; 2],
            headroom: vec![20_000, headroom],
            resume_offset: 3000,
            maps: QosMaps::default(),
            red: [None; NPRIO],
        };
        let max = u64::from(u32::MAX);
        assert!(Mmu::new(cfg(max, 20_000), 2).is_ok());
        assert_eq!(
            Mmu::new(cfg(max + 1, 20_000), 2).unwrap_err(),
            MmuError::TooLarge {
                field: "buffer_bytes".into(),
                bytes: max + 1
            }
        );
        let e = Mmu::new(cfg(1 << 20, 1 << 33), 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "headroom[1] is 8589934592 B: the switch MMU counts a priority group's bytes in 32 bits (at most 4294967295 B)"
        );
    }
}
