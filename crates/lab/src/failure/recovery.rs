//! How each fabric recovers from a fault, and how long it takes: our Subnet
//! Manager's sweeps for InfiniBand (timed on this machine, and modelled
//! deterministically from what they sent), BFD/BGP timers and route dampening for
//! Ethernet, the PFC watchdog and InfiniBand's head-of-queue lifetime for a NIC
//! that stops receiving, and link-level against end-to-end retransmission for a
//! link with bit errors. Every constant carries its source (the reference is
//! failures-isolation-sweeps.md §2 unless said otherwise).

use std::time::Instant;

use fabric::{Fabric, LinkRate, NodeId, NodeKind};
use serde::{Deserialize, Serialize};

/// Our SM's wall time per SMP over the in-process agents, seconds: a whole heavy
/// sweep (discovery, LIDs, routing, every LFT block, ports ACTIVE) of the
/// 2,592-host radix-36 fat tree sent 82,297 SMPs in 53.3, 61.6 and 65.9 ms
/// (median 61.6 ms; `target/release/examples/sweep_ft 36 ftree novalidate 8`,
/// 2026-12-05, load 5.4; docs/VALIDATION.md §13): 0.75 µs per SMP, routing and
/// programming included. A sweep's cost grows with the SMPs it sends (discovery
/// walks every port, programming writes every changed block), so SMPs times this
/// cost is the deterministic figure for a recovery; the same run's wall clock is
/// reported beside it.
pub const SM_WALL_PER_SMP_S: f64 = 61.6e-3 / 82_297.0;

/// OpenSM's `sweep_interval`, s: a light sweep every 10 s catches a change whose
/// trap was ignored (`osm_base.h:330`, §2.1 item 4).
pub const OPENSM_SWEEP_INTERVAL_S: f64 = 10.0;

/// OpenSM ages identical traps from one source for 5 s
/// (`OSM_DEFAULT_TRAP_SUPPRESSION_TIMEOUT`, 5,000,000 µs) and ignores them once 10
/// arrive within that window (`osm_trap_rcv.c`, §2.1 item 3).
pub const OPENSM_TRAP_WINDOW_S: f64 = 5.0;
pub const OPENSM_TRAP_LIMIT: usize = 10;

/// Head-of-queue lifetime OpenSM sets on switch ports toward CAs, as the IBA
/// exponent: 0x10, i.e. 4.096 µs × 2^16 = 268 ms (`osm_base.h:392-430`, §2.1 item 5).
pub const OPENSM_LEAF_HOQ_LIFE: u32 = 0x10;

/// VL stall count OpenSM sets: 7 packets dropped in a row at the head of a VL put
/// the port in the VL Stalled state, which discards for 8 × HOQLife (§2.1 item 5).
pub const OPENSM_VL_STALL_COUNT: u32 = 7;

/// SONiC's PFC watchdog detection time, ms (sonic-utilities `pfcwd/main.py`
/// DEFAULT_DETECTION_TIME 200; roce-config.md §1.7, §4.1).
pub const PFCWD_DETECTION_MS: f64 = 200.0;

/// mlx5's PFC stall prevention (`pfc-prevention-tout`) default, ms: 8 s, after
/// which the NIC stops sending pauses (roce-config.md §2.4).
pub const NIC_STALL_PREVENTION_MS: f64 = 8000.0;

/// LLR cell size, bytes: the LLR transmitter cuts the stream into cells with a CRC
/// each and resends a cell the receiver dropped; ibdiagnet's `--llr_active_cell`
/// takes 64 or 128 (NVIDIA MLNX-OS manual "UNBREAKABLE-LINK"; ibdiagnet 2.24 "Bit
/// Error Rate"). The larger cell is the conservative one.
pub const LLR_CELL_BYTES: u32 = 128;

/// LLR is "not operational for cables longer than 30m" (MLNX-OS manual).
pub const LLR_MAX_CABLE_M: f64 = 30.0;

/// One SM cycle after a change to the fabric: the SM's light sweep, the heavy
/// sweep it triggers and the LFT blocks that changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SmRecovery {
    /// What changed ("link su0-leaf0/33 — spine0/1 down", …).
    pub change: String,
    /// Deterministic time to new tables, s: `smps × SM_WALL_PER_SMP_S`.
    pub model_s: f64,
    /// Wall time from the change to new tables programmed on this machine, s
    /// (the SM's own work over in-process agents, no SMP wire time).
    pub wall_s: f64,
    /// SMPs the recovery sent.
    pub smps: u64,
    /// LFT blocks that changed and were sent.
    pub lft_blocks_sent: u64,
    /// Whether the subnet came back up.
    pub subnet_up: bool,
}

/// A change the SM is made to see, in order.
#[derive(Clone, Debug)]
pub enum Change {
    /// Unplug these ports' cables (both ends go DOWN, switches trap).
    Unlink(Vec<(NodeId, u8)>),
    /// Plug these cables back.
    Relink(Vec<(NodeId, u8, NodeId, u8, LinkRate)>),
}

/// Our SM brought up on `f` (its port on a NIC that is not on `avoid`), then
/// made to recover from each change in turn: the bring-up's wall time, and one
/// [`SmRecovery`] per change.
pub fn sm_recoveries(
    f: &Fabric,
    avoid: Option<NodeId>,
    engines: &[sm::routing::EngineKind],
    changes: &[(String, Change)],
) -> (f64, Vec<SmRecovery>) {
    let host = f
        .nodes_of(NodeKind::Ca)
        .find(|&c| f.peer(c, 1).is_none_or(|(e, _)| Some(e.node) != avoid))
        .expect("a cluster has NICs off the failed switch");
    let mut tr = sm::sma::InProcess::new(f.clone(), (host, 1));
    let mut mgr = sm::sweep::SubnetManager::new(
        sm::sweep::SweepOptions {
            engines: engines.to_vec(),
            validate: false,
            ..Default::default()
        },
        1,
    );
    let t0 = Instant::now();
    let up = mgr.heavy_sweep(&mut tr);
    let bring_up = t0.elapsed().as_secs_f64();
    debug_assert!(up.subnet_up, "{:?}", up.issues);
    let mut out = Vec::with_capacity(changes.len());
    for (what, c) in changes {
        match c {
            Change::Unlink(ports) => {
                for &(n, p) in ports {
                    tr.unlink(n, p);
                }
            }
            Change::Relink(cables) => {
                for &(a, pa, b, pb, rate) in cables {
                    // the cable was unplugged by an earlier change, so both ports are free
                    let _ = tr.link(a, pa, b, pb, rate);
                }
            }
        }
        let t1 = Instant::now();
        let r = mgr.poll(&mut tr);
        let wall_s = t1.elapsed().as_secs_f64();
        let (smps, blocks, up) = r.map_or((0, 0, false), |r| (r.smps_sent, r.lft_blocks_sent, r.subnet_up));
        out.push(SmRecovery {
            change: what.clone(),
            model_s: smps as f64 * SM_WALL_PER_SMP_S,
            wall_s,
            smps,
            lft_blocks_sent: blocks,
            subnet_up: up,
        });
    }
    (bring_up, out)
}

/// BGP route flap dampening (RFC 2439) with FRR's defaults (`bgpd/bgp_damp.h`:
/// DEFAULT_PENALTY 1000 per withdrawal, DEFAULT_HALF_LIFE 15 min, DEFAULT_REUSE
/// 750, DEFAULT_SUPPRESS 2000; max-suppress 4 × half-life = 60 min, the Cisco and
/// Quagga default). FRR leaves dampening off unless `bgp dampening` is configured,
/// and Quagga's manual advises against it (RIPE-378).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dampening {
    pub penalty: f64,
    pub half_life_s: f64,
    pub reuse: f64,
    pub suppress: f64,
    pub max_suppress_s: f64,
}

impl Default for Dampening {
    fn default() -> Self {
        Dampening {
            penalty: 1000.0,
            half_life_s: 15.0 * 60.0,
            reuse: 750.0,
            suppress: 2000.0,
            max_suppress_s: 60.0 * 60.0,
        }
    }
}

/// Ethernet's failure detection and route repair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EthTimers {
    /// BFD transmit/receive interval, ms (FRR bfdd default 300); `None`: no BFD.
    pub bfd_interval_ms: Option<f64>,
    /// BFD detect multiplier (FRR default 3).
    pub bfd_multiplier: u32,
    /// BGP hold time, s, when BFD is off (FRR `datacenter` profile: 9).
    pub bgp_hold_s: f64,
    /// Local repair on loss of signal, ms, when the switches see the port go down
    /// and drop it from their ECMP groups before BGP reacts; `None`: not modelled
    /// (no cited figure for it).
    pub local_repair_ms: Option<f64>,
    /// BGP route flap dampening; `None`: off (FRR's default).
    #[serde(default)]
    pub dampening: Option<Dampening>,
}

impl Default for EthTimers {
    /// FRR's defaults (bfdd `BFD_DEF_*`: 300 ms × 3; `frr defaults datacenter`:
    /// hold 9 s; no dampening), failures-isolation-sweeps.md §2.4.
    fn default() -> Self {
        EthTimers {
            bfd_interval_ms: Some(300.0),
            bfd_multiplier: 3,
            bgp_hold_s: 9.0,
            local_repair_ms: None,
            dampening: None,
        }
    }
}

impl EthTimers {
    /// Seconds from the cut to the ECMP groups without the link, and how.
    pub fn recovery(&self) -> (f64, String) {
        if let Some(ms) = self.local_repair_ms {
            return (ms / 1e3, format!("local repair on loss of signal, {ms} ms"));
        }
        match self.bfd_interval_ms {
            Some(iv) => (
                iv * f64::from(self.bfd_multiplier) / 1e3,
                format!(
                    "BFD detection {} × {iv} ms, then BGP withdrawal and ECMP repair",
                    self.bfd_multiplier
                ),
            ),
            None => (
                self.bgp_hold_s,
                format!("no BFD: the BGP hold time, {} s", self.bgp_hold_s),
            ),
        }
    }
}

/// A link that goes down `flaps` times, once every `period_s`, each time for
/// `down_s`; transition k (down 2k, up 2k + 1) at `k/2 · period_s` plus `down_s`
/// for the ups.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlapPlan {
    pub flaps: u32,
    pub period_s: f64,
    pub down_s: f64,
}

impl FlapPlan {
    /// Times of the transitions, s: down, up, down, up, …
    pub fn times(&self) -> Vec<f64> {
        (0..self.flaps)
            .flat_map(|k| {
                let t = f64::from(k) * self.period_s;
                [t, t + self.down_s]
            })
            .collect()
    }
}

/// One down transition of a flapping link, as a fabric lives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlapStall {
    /// When the link went down, s from the first flap.
    pub at_s: f64,
    /// How long traffic through it had no path, s.
    pub stall_s: f64,
    /// Why that long.
    pub why: String,
}

/// InfiniBand under a flapping link: each transition is a Trap 128 and a sweep
/// (`sm`: one recovery per transition, down then up). A down stalls the link's
/// traffic for the SM's recovery; a trap OpenSM ignores (the 10th identical one in
/// 5 s) waits for the next light sweep, half the 10 s interval on average for a
/// flap at a random moment. An up stalls nothing (the traffic flows around the
/// link until the SM moves it back).
pub fn ib_flap_stalls(plan: &FlapPlan, sm: &[SmRecovery]) -> Vec<FlapStall> {
    let times = plan.times();
    let mut out = Vec::new();
    for (k, &t) in times.iter().enumerate().step_by(2) {
        let recent = times[..k].iter().filter(|&&u| t - u < OPENSM_TRAP_WINDOW_S).count() + 1;
        let rec = sm.get(k).map_or(0.0, |r| r.model_s);
        if recent >= OPENSM_TRAP_LIMIT {
            out.push(FlapStall {
                at_s: t,
                stall_s: OPENSM_SWEEP_INTERVAL_S / 2.0 + rec,
                why: format!(
                    "trap {recent} in {OPENSM_TRAP_WINDOW_S} s ignored; the next light sweep (every {OPENSM_SWEEP_INTERVAL_S} s) finds the change, then the sweep ({:.1} ms)",
                    rec * 1e3
                ),
            });
        } else {
            out.push(FlapStall {
                at_s: t,
                stall_s: rec,
                why: format!("Trap 128 and a sweep, {} SMPs", sm.get(k).map_or(0, |r| r.smps)),
            });
        }
    }
    out
}

/// Ethernet under a flapping link. A down shorter than BFD's detection time is
/// never declared: the link's traffic is lost until the link returns. A longer one
/// stalls the traffic for the detection time and withdraws the routes through the
/// link; with dampening each withdrawal adds the penalty, which halves every
/// half-life, and a route whose penalty exceeds the suppress limit when the link
/// returns stays withdrawn until it decays to the reuse limit (or max-suppress), so
/// later flaps stall nothing (and the link's capacity is unused).
pub fn eth_flap_stalls(plan: &FlapPlan, timers: &EthTimers) -> Vec<FlapStall> {
    let (detect, how) = timers.recovery();
    let times = plan.times();
    let mut penalty = 0.0f64;
    let mut last = 0.0f64;
    let mut suppressed_until: Option<f64> = None;
    let mut out = Vec::new();
    for &t in times.iter().step_by(2) {
        if let Some(d) = &timers.dampening {
            penalty *= 0.5f64.powf((t - last) / d.half_life_s);
            last = t;
        }
        if suppressed_until.is_some_and(|u| t < u) {
            out.push(FlapStall {
                at_s: t,
                stall_s: 0.0,
                why: format!("routes through the link dampened (penalty {penalty:.0}): no traffic on it"),
            });
            continue;
        }
        if plan.down_s < detect {
            out.push(FlapStall {
                at_s: t,
                stall_s: plan.down_s,
                why: format!(
                    "down {:.3} s, shorter than detection ({detect:.3} s): lost until the link returns",
                    plan.down_s
                ),
            });
            continue;
        }
        out.push(FlapStall {
            at_s: t,
            stall_s: detect,
            why: how.clone(),
        });
        if let Some(d) = &timers.dampening {
            penalty += d.penalty;
            // when the link returns and BGP re-advertises, the penalty decides
            let back = t + plan.down_s;
            let p_back = penalty * 0.5f64.powf(plan.down_s / d.half_life_s);
            if p_back > d.suppress {
                let reuse_after = d.half_life_s * (p_back / d.reuse).log2();
                suppressed_until = Some(back + reuse_after.min(d.max_suppress_s));
            }
        }
    }
    out
}

/// How long a NIC that stops receiving blocks the fabric around it, s, and how.
///
/// - RoCE: its pauses spread NIC → ToR → leaf → spine (Guo et al., SIGCOMM'16
///   §4.3) until the switch's PFC watchdog declares the storm (SONiC: 200 ms) and
///   drops the queue, or the NIC's own stall prevention stops its pauses (mlx5:
///   8 s); without either it never ends (`None`).
/// - InfiniBand has no PFC: the HCA withholds credits, the switch port toward it
///   cannot send, and credit backpressure spreads the same way, until the port's
///   head-of-queue lifetime has dropped `VLStallCount` packets in a row and the VL
///   enters the Stalled state, discarding at line rate: 7 × 268 ms = 1.88 s with
///   OpenSM's defaults [derived from §2.1 item 5].
pub fn nic_containment(ib: bool, watchdog_ms: Option<f64>, nic_prevention_ms: Option<f64>) -> (Option<f64>, String) {
    if ib {
        let hoq = 4.096e-6 * f64::from(1u32 << OPENSM_LEAF_HOQ_LIFE);
        let t = f64::from(OPENSM_VL_STALL_COUNT) * hoq;
        return (
            Some(t),
            format!(
                "no PFC: the HCA withholds credits; backpressure until the switch port drops {OPENSM_VL_STALL_COUNT} head-of-queue packets ({:.0} ms HOQLife each, OpenSM 0x{OPENSM_LEAF_HOQ_LIFE:x}) and its VL stalls, discarding",
                hoq * 1e3
            ),
        );
    }
    match (watchdog_ms, nic_prevention_ms) {
        (Some(w), n) if n.is_none_or(|n| w <= n) => (
            Some(w / 1e3),
            format!("pauses spread until the switch's PFC watchdog detects the storm ({w} ms) and drops the queue"),
        ),
        (w, Some(n)) => (
            Some(n / 1e3),
            format!(
                "{}pauses spread until the NIC's stall prevention stops them ({n} ms)",
                if w.is_none() { "no PFC watchdog: " } else { "" }
            ),
        ),
        _ => (
            None,
            "no PFC watchdog and no NIC stall prevention: the pauses never stop".to_string(),
        ),
    }
}

/// Share of a link's rate left for traffic at post-FEC bit error ratio `ber`.
///
/// - With LLR (InfiniBand between NVIDIA ports on cables up to 30 m): a corrupted
///   128-byte cell is resent on the link alone: `1 − P(cell corrupted)`.
/// - Without (RoCE, or InfiniBand without LLR): the packet fails its CRC and is
///   dropped; RC recovers end to end by go-back-N from the lost PSN, resending the
///   `window` packets in flight: goodput `(1 − p) / (1 + (window − 1) p)` for packet
///   loss probability `p` (the go-back-N efficiency, Bertsekas & Gallager, "Data
///   Networks", §2.4).
pub fn error_efficiency(ber: f64, llr: bool, packet_bytes: u32, window: f64) -> f64 {
    if llr {
        let p = 1.0 - (1.0 - ber).powf(8.0 * f64::from(LLR_CELL_BYTES));
        return 1.0 - p;
    }
    let p = 1.0 - (1.0 - ber).powf(8.0 * f64::from(packet_bytes));
    (1.0 - p) / (1.0 + (window.max(1.0) - 1.0) * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_recovery_follows_the_timers() {
        let (t, how) = EthTimers::default().recovery();
        assert!((t - 0.9).abs() < 1e-12 && how.contains("BFD"), "{t} {how}");
        let no_bfd = EthTimers {
            bfd_interval_ms: None,
            ..EthTimers::default()
        };
        assert_eq!(no_bfd.recovery().0, 9.0);
        let fast = EthTimers {
            bfd_interval_ms: Some(50.0),
            ..EthTimers::default()
        };
        assert!((fast.recovery().0 - 0.15).abs() < 1e-12);
    }

    /// Five flaps, 2 s apart, 1 s down: without dampening every down stalls for
    /// BFD's 0.9 s; with FRR's dampening the third withdrawal lifts the penalty
    /// past 2000 (1000 each, a 15-minute half-life barely decays it), the routes
    /// stay withdrawn when the link returns, and the fourth and fifth flaps stall
    /// nothing. A down of 0.5 s is shorter than detection: lost for 0.5 s, no
    /// withdrawal, no penalty.
    #[test]
    fn flaps_stall_ethernet_until_dampening_suppresses_the_link() {
        let plan = FlapPlan {
            flaps: 5,
            period_s: 2.0,
            down_s: 1.0,
        };
        let plain = eth_flap_stalls(&plan, &EthTimers::default());
        assert_eq!(plain.len(), 5);
        assert!(plain.iter().all(|s| (s.stall_s - 0.9).abs() < 1e-12), "{plain:?}");
        let damp = EthTimers {
            dampening: Some(Dampening::default()),
            ..EthTimers::default()
        };
        let d: Vec<f64> = eth_flap_stalls(&plan, &damp).iter().map(|s| s.stall_s).collect();
        assert_eq!(d, [0.9, 0.9, 0.9, 0.0, 0.0]);
        let short = FlapPlan { down_s: 0.5, ..plan };
        let s: Vec<f64> = eth_flap_stalls(&short, &damp).iter().map(|s| s.stall_s).collect();
        assert_eq!(s, [0.5; 5]);
    }

    /// InfiniBand: each down stalls for that sweep's modelled time; ten traps
    /// within 5 s (flaps every 0.5 s) make OpenSM ignore the tenth, which then
    /// waits half a light-sweep interval.
    #[test]
    fn ib_flaps_cost_a_sweep_each_until_traps_are_ignored() {
        let plan = FlapPlan {
            flaps: 6,
            period_s: 0.5,
            down_s: 0.2,
        };
        let sm: Vec<SmRecovery> = (0..12)
            .map(|k| SmRecovery {
                change: String::new(),
                model_s: 0.004,
                wall_s: 0.0,
                smps: 100 + k,
                lft_blocks_sent: 0,
                subnet_up: true,
            })
            .collect();
        let st = ib_flap_stalls(&plan, &sm);
        let v: Vec<f64> = st.iter().map(|s| s.stall_s).collect();
        // transitions at 0, .2, .5, .7, 1.0, 1.2, 1.5, 1.7, 2.0, 2.2, 2.5: the down at
        // 2.5 s is the 11th trap in 5 s, the one at 2.0 s the 9th
        assert_eq!(v[..5], [0.004; 5]);
        assert!((v[5] - 5.004).abs() < 1e-12, "{st:?}");
    }

    /// The stuck-NIC containment: SONiC's 200 ms watchdog, mlx5's 8 s stall
    /// prevention without it, never without both; InfiniBand 7 × 268 ms.
    #[test]
    fn a_stuck_nic_is_contained_by_the_watchdog_or_the_hoq_lifetime() {
        assert_eq!(nic_containment(false, Some(200.0), Some(8000.0)).0, Some(0.2));
        assert_eq!(nic_containment(false, None, Some(8000.0)).0, Some(8.0));
        assert_eq!(nic_containment(false, None, None).0, None);
        let (ib, how) = nic_containment(true, None, None);
        assert!((ib.unwrap() - 7.0 * 4.096e-6 * 65536.0).abs() < 1e-12 && how.contains("HOQ"));
        assert!((ib.unwrap() - 1.879).abs() < 1e-3);
    }

    /// Bit errors: at 1e-6 post-FEC, LLR loses 0.1% (a 1,024-bit cell fails with
    /// p ≈ 1.0e-3); go-back-N over 4,158-byte packets (p ≈ 3.3%) with 60 packets
    /// in flight keeps about a third.
    #[test]
    fn llr_keeps_the_rate_where_go_back_n_loses_it() {
        let llr = error_efficiency(1e-6, true, 4158, 60.0);
        assert!((llr - (1.0 - 1.023e-3)).abs() < 1e-5, "{llr}");
        let gbn = error_efficiency(1e-6, false, 4158, 60.0);
        let p: f64 = 1.0 - (1.0f64 - 1e-6).powf(8.0 * 4158.0);
        assert!((gbn - (1.0 - p) / (1.0 + 59.0 * p)).abs() < 1e-12);
        assert!((gbn - 0.33).abs() < 0.01, "{gbn}");
        assert!(error_efficiency(1e-15, false, 4158, 60.0) > 0.999_99);
    }
}
