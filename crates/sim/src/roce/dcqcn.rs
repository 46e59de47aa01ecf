//! DCQCN (Zhu et al., SIGCOMM'15) in its three parts:
//!
//! ```text
//!   sender NIC (RP)            switch egress (CP)            receiver NIC (NP)
//!   rate R_C, target R_T  ──►  RED on queue bytes: mark CE ──► CE seen: send CNP,
//!   cut on CNP, recover   ◄────────────── CNP ─────────────── at most one per interval per QP
//! ```
//!
//! * [`ReactionPoint`]: the per-QP rate machine. A CNP cuts the rate by α/2 (and
//!   raises α); timers decay α and raise the rate again through fast recovery,
//!   additive and hyper increase.
//! * [`CnpPacer`]: the notification point's per-QP CNP limiter.
//! * [`Red`]: the congestion point's marking curve (0 below Kmin, linear to Pmax
//!   at Kmax, every packet above Kmax: HPCC ns-3 `SwitchMmu::ShouldSendCN`,
//!   shared RoCE reference §3.5).
//!
//! Implementations differ in when α and the rate change; [`DcqcnParams`] names
//! each choice ([`AlphaUpdate`], [`Decrease`], [`Clamp`]) and [`Profile`] fills
//! them from the parameter table of the shared simulators reference §2.1, one
//! column per profile. Rates are `f64` bits per second inside the machine (the
//! cut is a product); the NIC reads [`ReactionPoint::rate_bps`] as an integer.

use crate::engine::Time;

/// How α (the congestion estimate) moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AlphaUpdate {
    /// The paper's rule: on each CNP α ← (1−g)α + g; when `period` passes with no
    /// CNP, α ← (1−g)α (and the timer restarts).
    OnCnp { period: Time },
    /// Every `period`: α ← (1−g)α + g if a CNP arrived in the period, else
    /// (1−g)α. HPCC ns-3 (`ALPHA_RESUME_INTERVAL`) and NVIDIA firmware
    /// (`DCE_TCP_RTT`) work this way (reference §1.1.6, §2.1).
    Periodic { period: Time },
}

/// When the rate is cut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decrease {
    /// On each CNP, but no two cuts closer than `min_gap` (NVIDIA
    /// `RATE_REDUCE_MONITOR_PERIOD`; zero = every CNP, the paper).
    PerCnp { min_gap: Time },
    /// Every `period`, if a CNP arrived since the last check (HPCC ns-3
    /// `RATE_DECREASE_INTERVAL`).
    Periodic { period: Time },
}

/// When the target rate is set to the current rate on a cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clamp {
    /// On every cut (the paper; ns3-rdma `CLAMP_TARGET_RATE 1`).
    Always,
    /// Only if the rate was raised by the timer since the last cut (HPCC ns-3
    /// with `CLAMP_TARGET_RATE 0`: "only if rpTimeStage ≠ 0"; NVIDIA
    /// `CLAMP_TGT_RATE 0, CLAMP_TGT_RATE_AFTER_TIME_INC 1`).
    AfterIncrease,
}

/// RED/ECN marking at a switch egress queue (the congestion point).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Red {
    /// Bytes below which nothing is marked.
    pub kmin: u64,
    /// Bytes at which the probability reaches `pmax`; above it every packet is marked.
    pub kmax: u64,
    /// Marking probability at `kmax`, 0..=1.
    pub pmax: f64,
}

impl Red {
    /// Marking probability for an egress queue holding `qlen` bytes.
    #[inline]
    pub fn probability(&self, qlen: u64) -> f64 {
        if qlen <= self.kmin {
            0.0
        } else if qlen > self.kmax || self.kmax == self.kmin {
            1.0
        } else {
            self.pmax * (qlen - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }

    /// Decide whether to mark a packet leaving a queue of `qlen` bytes, drawing
    /// from the run's seeded generator (one draw only when 0 < p < 1, so
    /// unmarked regimes cost no randomness and runs stay comparable).
    #[inline]
    pub fn should_mark(&self, qlen: u64, rng: &mut impl rand::RngCore) -> bool {
        let p = self.probability(qlen);
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            unit(rng) < p
        }
    }
}

/// A uniform draw in [0, 1) from the top 53 bits of one `u64`: the draw RED
/// marking uses, public so that a workload generator outside the model (the
/// `ns3` crate's WebSearch flows) turns a seed into the same numbers.
#[inline]
pub fn unit(rng: &mut impl rand::RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Every DCQCN knob, in one place.
#[derive(Clone, Debug, PartialEq)]
pub struct DcqcnParams {
    /// Profile name, for reports.
    pub name: &'static str,
    /// Line rate (the cap of both rates), bits/s.
    pub line_bps: f64,
    /// α gain g.
    pub g: f64,
    /// α at the start (before any CNP).
    pub initial_alpha: f64,
    /// α update rule.
    pub alpha: AlphaUpdate,
    /// Rate-cut rule.
    pub decrease: Decrease,
    /// Target-rate clamp rule.
    pub clamp: Clamp,
    /// Rate-increase timer T.
    pub increase_timer: Time,
    /// Byte counter B (`None`: no byte counter; the timer alone drives the stages).
    pub byte_counter: Option<u64>,
    /// Fast-recovery steps F.
    pub fast_recovery: u32,
    /// Additive increase R_AI, bits/s.
    pub rate_ai_bps: f64,
    /// Hyper increase R_HAI, bits/s.
    pub rate_hai_bps: f64,
    /// Rate floor, bits/s.
    pub min_rate_bps: f64,
    /// The smallest fraction of the current rate a single cut keeps (NVIDIA
    /// `RPG_MIN_DEC_FAC`, 50% ⇒ 0.5; the α/2 cut never goes below 0.5 anyway).
    pub min_dec_factor: f64,
    /// First CNP of a QP: set α to this value first (HPCC ns-3: 1.0).
    pub first_cnp_alpha: Option<f64>,
    /// First CNP of a QP: multiply the rate by this instead of cutting (HPCC ns-3
    /// `RateOnFirstCnp` 1.0 = unchanged). `None` = the first CNP cuts as any other.
    pub first_cnp_rate_factor: Option<f64>,
    /// NP: the shortest time between two CNPs for one QP (zero: a CNP for every
    /// marked packet, as HPCC ns-3 piggy-backs one on each ACK).
    pub cnp_interval: Time,
    /// NP: `cnp_interval` limits the CNPs of the whole receiving port, not of
    /// each QP (mlx5 `min_time_between_cnps`: "minimum time between sending
    /// CNPs from the port", PRM and the kernel's mlx5 debugfs patch).
    pub cnp_per_port: bool,
    /// The congestion point's marking the profile was published with.
    pub red: Red,
    /// R_AI and R_HAI were given for `line_bps` and scale with the NIC's line
    /// rate when the profile runs on a NIC of another speed (HPCC ns-3's
    /// `run.py` scales both with `bw/25G`, reference §1.1.5); otherwise they are
    /// absolute rates.
    pub scale_increase_with_line: bool,
}

impl DcqcnParams {
    /// These parameters on a NIC of `line_bps`: the line rate replaced, and the
    /// increase steps scaled with it where [`Self::scale_increase_with_line`] says so.
    pub fn for_line(&self, line_bps: u64) -> DcqcnParams {
        let mut p = self.clone();
        if p.scale_increase_with_line {
            let scale = line_bps as f64 / p.line_bps;
            p.rate_ai_bps *= scale;
            p.rate_hai_bps *= scale;
        }
        p.line_bps = line_bps as f64;
        p
    }
}

/// The named parameter sets (shared simulators reference §2.1, one column each),
/// named in scenarios and configs as `dcqcn-paper`, `nvidia-cx` and `hpcc-ns3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The DCQCN paper's values (SIGCOMM'15, 40G testbed). Column "DCQCN paper";
    /// values the paper column leaves open come from ns3-rdma, the paper authors'
    /// own simulator (column "ns3-rdma sample config").
    DcqcnPaper,
    /// NVIDIA ConnectX (CX4+) firmware defaults (column "NVIDIA CX4+ firmware
    /// default (mlxconfig)"; switch marking from NVIDIA Cumulus, RoCE reference §2.5).
    NvidiaCx,
    /// HPCC ns-3 `run.py --cc dcqcn` (column "HPCC ns-3 run.py dcqcn"; the AI/HAI
    /// steps and K thresholds scale with `bw/25G`, reference §1.1.5).
    HpccNs3,
}

impl Profile {
    /// Every profile, in report order.
    pub const ALL: [Profile; 3] = [Profile::DcqcnPaper, Profile::NvidiaCx, Profile::HpccNs3];

    /// The profile's name as written in scenarios: `dcqcn-paper`, `nvidia-cx`, `hpcc-ns3`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::DcqcnPaper => "dcqcn-paper",
            Profile::NvidiaCx => "nvidia-cx",
            Profile::HpccNs3 => "hpcc-ns3",
        }
    }

    /// Look a profile up by name.
    pub fn from_name(s: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The parameters for a NIC of `line_bps`.
    pub fn params(self, line_bps: u64) -> DcqcnParams {
        let line = line_bps as f64;
        const MBPS: f64 = 1e6;
        match self {
            // §2.1 "DCQCN paper" column: Kmin 5 KB, Kmax 200 KB, Pmax 1%; g 1/256;
            // α period 55 µs; cut per CNP; NP interval 50 µs; T 55 µs; B 10 MB;
            // F 5; R_AI 40 Mb/s. R_HAI: the paper column leaves it open, ns3-rdma
            // uses 200 Mb/s. Min rate: neither column sets one; the UEC htsim fork
            // uses 100 Mb/s. The paper clamps the target on every cut (ns3-rdma
            // CLAMP_TARGET_RATE 1). α starts at 1 (HPCC ns-3 sets α = 1 on the
            // first CNP; NVIDIA INITIAL_ALPHA 1023/1024 ≈ 1).
            Profile::DcqcnPaper => DcqcnParams {
                name: self.name(),
                line_bps: line,
                g: 1.0 / 256.0,
                initial_alpha: 1.0,
                alpha: AlphaUpdate::OnCnp { period: Time::us(55) },
                decrease: Decrease::PerCnp { min_gap: Time::ZERO },
                clamp: Clamp::Always,
                increase_timer: Time::us(55),
                byte_counter: Some(10_000_000),
                fast_recovery: 5,
                rate_ai_bps: 40.0 * MBPS,
                rate_hai_bps: 200.0 * MBPS,
                min_rate_bps: 100.0 * MBPS,
                min_dec_factor: 0.5,
                first_cnp_alpha: None,
                first_cnp_rate_factor: None,
                cnp_interval: Time::us(50),
                cnp_per_port: false,
                scale_increase_with_line: false,
                red: Red {
                    kmin: 5_000,
                    kmax: 200_000,
                    pmax: 0.01,
                },
            },
            // §2.1 "NVIDIA CX4+ firmware default" column: DCE_TCP_G 1019 ⇒ α ←
            // (1019/1024)α + 5/1024 on a CNP (Mellanox community fixed-point rule),
            // so g = 5/1024; DCE_TCP_RTT 1 µs; RATE_REDUCE_MONITOR_PERIOD 4 µs;
            // RPG_TIME_RESET 300 µs; RPG_BYTE_RESET 32767 B; RPG_THRESHOLD 1;
            // RPG_AI_RATE 5 Mb/s; RPG_HAI_RATE 50 Mb/s; RPG_MIN_RATE 1 Mb/s;
            // RPG_MIN_DEC_FAC 50%; RPG_GD 11 (the cut α_fixed/2^11 = α/2 with a
            // 10-bit α); CLAMP_TGT_RATE 0 / _AFTER_TIME_INC 1; INITIAL_ALPHA 1023;
            // RATE_TO_SET_ON_FIRST_CNP 0 (off). MIN_TIME_BETWEEN_CNPS: 4 µs (the
            // Barre paper's table; RoCE reference §2.3 "recent FW"). Marking: NVIDIA
            // Cumulus RoCE default 150,000 / 1,500,000 B, 100% (RoCE reference §2.5).
            Profile::NvidiaCx => DcqcnParams {
                name: self.name(),
                line_bps: line,
                g: 5.0 / 1024.0,
                initial_alpha: 1023.0 / 1024.0,
                alpha: AlphaUpdate::Periodic { period: Time::us(1) },
                decrease: Decrease::PerCnp { min_gap: Time::us(4) },
                clamp: Clamp::AfterIncrease,
                increase_timer: Time::us(300),
                byte_counter: Some(32_767),
                fast_recovery: 1,
                rate_ai_bps: 5.0 * MBPS,
                rate_hai_bps: 50.0 * MBPS,
                min_rate_bps: 1.0 * MBPS,
                min_dec_factor: 0.5,
                first_cnp_alpha: None,
                first_cnp_rate_factor: None,
                cnp_interval: Time::us(4),
                cnp_per_port: true,
                scale_increase_with_line: false,
                red: Red {
                    kmin: 150_000,
                    kmax: 1_500_000,
                    pmax: 1.0,
                },
            },
            // §2.1 "HPCC ns-3 run.py dcqcn" column and §1.1.5/§1.1.6: g 1/256;
            // ALPHA_RESUME_INTERVAL 1 µs (periodic); RATE_DECREASE_INTERVAL 4 µs
            // (periodic); RP_TIMER 300 µs; no byte counter; F 1; RATE_AI
            // 5·bw/25 Mb/s, RATE_HAI 50·bw/25 Mb/s; MIN_RATE 1000 Mb/s; cut
            // rate·(1−α/2); first CNP: α = 1, rate × 1.0; CLAMP_TARGET_RATE 0; CNP
            // on every marked packet's ACK; Kmin 100 KB·bw/25, Kmax 400 KB·bw/25
            // (KB = 1000 B), Pmax 0.2.
            Profile::HpccNs3 => {
                let scale = line / 25e9;
                DcqcnParams {
                    name: self.name(),
                    line_bps: line,
                    g: 1.0 / 256.0,
                    initial_alpha: 1.0,
                    alpha: AlphaUpdate::Periodic { period: Time::us(1) },
                    decrease: Decrease::Periodic { period: Time::us(4) },
                    clamp: Clamp::AfterIncrease,
                    increase_timer: Time::us(300),
                    byte_counter: None,
                    fast_recovery: 1,
                    rate_ai_bps: 5.0 * MBPS * scale,
                    rate_hai_bps: 50.0 * MBPS * scale,
                    min_rate_bps: 1000.0 * MBPS,
                    min_dec_factor: 0.5,
                    first_cnp_alpha: Some(1.0),
                    first_cnp_rate_factor: Some(1.0),
                    cnp_interval: Time::ZERO,
                    cnp_per_port: false,
                    scale_increase_with_line: true,
                    red: Red {
                        kmin: (100_000.0 * scale) as u64,
                        kmax: (400_000.0 * scale) as u64,
                        pmax: 0.2,
                    },
                }
            }
        }
    }
}

/// Counters of one reaction point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RpCounters {
    /// CNPs received (`rp_cnp_handled`).
    pub cnps: u64,
    /// Rate cuts applied.
    pub cuts: u64,
    /// Rate increases (any stage).
    pub increases: u64,
}

/// The DCQCN reaction point of one QP: current rate R_C, target rate R_T, α, the
/// timer and byte-counter stages. Drive it with [`on_cnp`](Self::on_cnp),
/// [`on_sent`](Self::on_sent) and [`poll`](Self::poll); ask
/// [`next_deadline`](Self::next_deadline) when to poll next. O(1) per call plus
/// one step per timer expiry.
#[derive(Clone, Debug)]
pub struct ReactionPoint {
    p: DcqcnParams,
    rate: f64,
    target: f64,
    alpha: f64,
    /// Any CNP yet (the rate machine is idle at line rate until the first).
    active: bool,
    cnp_in_alpha_period: bool,
    cnp_pending_cut: bool,
    last_cut: Option<Time>,
    alpha_due: Time,
    decrease_due: Time,
    increase_due: Time,
    t_stage: u32,
    b_stage: u32,
    bytes: u64,
    /// The timer raised the rate since the last cut (rpTimeStage ≠ 0): with
    /// [`Clamp::AfterIncrease`] only then does a cut move the target.
    timer_increased_since_cut: bool,
    /// Counters.
    pub counters: RpCounters,
}

impl ReactionPoint {
    /// A QP starting at line rate.
    pub fn new(p: DcqcnParams) -> ReactionPoint {
        ReactionPoint {
            rate: p.line_bps,
            target: p.line_bps,
            alpha: p.initial_alpha,
            p,
            active: false,
            cnp_in_alpha_period: false,
            cnp_pending_cut: false,
            last_cut: None,
            alpha_due: Time::NEVER,
            decrease_due: Time::NEVER,
            increase_due: Time::NEVER,
            t_stage: 0,
            b_stage: 0,
            bytes: 0,
            timer_increased_since_cut: false,
            counters: RpCounters::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }

    /// Current rate R_C, bits/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Current rate R_C, whole bits/s (at least 1).
    pub fn rate_bps(&self) -> u64 {
        (self.rate as u64).max(1)
    }

    /// Target rate R_T, bits/s.
    pub fn target(&self) -> f64 {
        self.target
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Increase stages (timer, byte counter) since the last cut.
    pub fn stages(&self) -> (u32, u32) {
        (self.t_stage, self.b_stage)
    }

    /// The earliest time [`poll`](Self::poll) has work (`NEVER` when idle at line rate).
    pub fn next_deadline(&self) -> Time {
        self.alpha_due.min(self.decrease_due).min(self.increase_due)
    }

    /// A CNP for this QP arrived at `now`.
    pub fn on_cnp(&mut self, now: Time) {
        self.poll(now);
        self.counters.cnps += 1;
        if !self.active {
            self.active = true;
            if let AlphaUpdate::Periodic { period } = self.p.alpha {
                self.alpha_due = now + period;
            }
            if let Some(a) = self.p.first_cnp_alpha {
                self.alpha = a;
            }
            if let Some(f) = self.p.first_cnp_rate_factor {
                // HPCC ns-3: the first CNP sets α and scales the rate; cuts start
                // with the next decrease check.
                self.rate = (self.rate * f).clamp(self.p.min_rate_bps, self.p.line_bps);
                self.target = self.rate;
                self.cnp_in_alpha_period = true;
                if let Decrease::Periodic { period } = self.p.decrease {
                    self.decrease_due = now + period;
                }
                self.increase_due = now + self.p.increase_timer;
                return;
            }
        }
        match self.p.alpha {
            AlphaUpdate::OnCnp { period } => {
                // The cut below uses α before this CNP's update (paper order:
                // R_T ← R_C, R_C ← R_C(1 − α/2), α ← (1 − g)α + g).
                self.cnp_in_alpha_period = true;
                self.alpha_due = now + period;
            }
            AlphaUpdate::Periodic { .. } => self.cnp_in_alpha_period = true,
        }
        match self.p.decrease {
            Decrease::PerCnp { min_gap } => {
                let ok = self.last_cut.is_none_or(|t| now >= t + min_gap);
                if ok {
                    self.cut(now);
                } else {
                    // Too soon after the last cut: apply it when the gap has passed.
                    self.cnp_pending_cut = true;
                    self.decrease_due = self.last_cut.expect("checked") + min_gap;
                }
            }
            Decrease::Periodic { period } => {
                self.cnp_pending_cut = true;
                if self.decrease_due == Time::NEVER {
                    self.decrease_due = now + period;
                }
            }
        }
        if let AlphaUpdate::OnCnp { .. } = self.p.alpha {
            self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
            self.cnp_in_alpha_period = false;
        }
    }

    /// `bytes` of this QP went on the wire at `now` (drives the byte counter).
    pub fn on_sent(&mut self, now: Time, bytes: u64) {
        let Some(b) = self.p.byte_counter else { return };
        if !self.active || self.rate >= self.p.line_bps {
            return;
        }
        self.poll(now);
        self.bytes += bytes;
        while self.bytes >= b {
            self.bytes -= b;
            // The stage is judged before this expiry counts (HPCC ns-3
            // `RateIncEventTimerMlx`: increase, then `rpTimeStage++`), so F
            // expiries are spent in fast recovery.
            self.increase();
            self.b_stage += 1;
        }
    }

    /// Run every timer that expired by `now`, in deadline order.
    pub fn poll(&mut self, now: Time) {
        loop {
            let t = self.next_deadline();
            if t > now {
                return;
            }
            if t == self.decrease_due {
                self.decrease_due = Time::NEVER;
                if self.cnp_pending_cut {
                    self.cut(t);
                    if let Decrease::Periodic { period } = self.p.decrease {
                        // Keep checking while CNPs keep coming.
                        self.decrease_due = t + period;
                    }
                }
            } else if t == self.alpha_due {
                match self.p.alpha {
                    AlphaUpdate::OnCnp { period } => {
                        self.alpha *= 1.0 - self.p.g;
                        self.alpha_due = t + period;
                    }
                    AlphaUpdate::Periodic { period } => {
                        let hit = if self.cnp_in_alpha_period { self.p.g } else { 0.0 };
                        self.alpha = (1.0 - self.p.g) * self.alpha + hit;
                        self.cnp_in_alpha_period = false;
                        self.alpha_due = t + period;
                    }
                }
                if self.rate >= self.p.line_bps && self.alpha < 1e-6 && !self.cnp_pending_cut {
                    // Back at line rate with α gone: idle until the next CNP.
                    self.alpha_due = Time::NEVER;
                }
            } else {
                self.increase_due = t + self.p.increase_timer;
                self.increase();
                self.t_stage += 1;
                // Only the timer's increases count for the clamp: NVIDIA
                // `CLAMP_TGT_RATE_AFTER_TIME_INC`, HPCC ns-3 `rpTimeStage != 0`; the
                // byte counter's do not.
                self.timer_increased_since_cut = true;
                if self.rate >= self.p.line_bps {
                    self.increase_due = Time::NEVER;
                }
            }
        }
    }

    fn cut(&mut self, now: Time) {
        self.cnp_pending_cut = false;
        if self.p.clamp == Clamp::Always || self.timer_increased_since_cut || self.counters.cuts == 0 {
            self.target = self.rate;
        }
        let factor = (1.0 - self.alpha / 2.0).max(self.p.min_dec_factor);
        self.rate = (self.rate * factor).max(self.p.min_rate_bps);
        self.last_cut = Some(now);
        self.t_stage = 0;
        self.b_stage = 0;
        self.bytes = 0;
        self.timer_increased_since_cut = false;
        self.increase_due = now + self.p.increase_timer;
        self.counters.cuts += 1;
    }

    fn increase(&mut self) {
        let f = self.p.fast_recovery;
        // Without a byte counter the timer alone sets the stage (HPCC ns-3).
        let b = if self.p.byte_counter.is_some() {
            self.b_stage
        } else {
            self.t_stage
        };
        let (hi, lo) = (self.t_stage.max(b), self.t_stage.min(b));
        if hi < f {
            // Fast recovery: halve the distance to the target.
        } else if lo > f {
            self.target += self.p.rate_hai_bps;
        } else {
            self.target += self.p.rate_ai_bps;
        }
        self.target = self.target.min(self.p.line_bps);
        self.rate = ((self.rate + self.target) / 2.0).min(self.p.line_bps);
        self.counters.increases += 1;
    }
}

/// The notification point's CNP limiter for one QP: at most one CNP per
/// `interval` (NVIDIA `MIN_TIME_BETWEEN_CNPS`, the paper's 50 µs).
#[derive(Clone, Copy, Debug, Default)]
pub struct CnpPacer {
    last: Option<Time>,
    /// CNPs sent (`np_cnp_sent`).
    pub sent: u64,
    /// CE-marked packets seen (`np_ecn_marked_roce_packets`).
    pub marked: u64,
}

impl CnpPacer {
    /// A CE-marked packet of this QP arrived at `now`: should a CNP go back?
    pub fn on_marked(&mut self, now: Time, interval: Time) -> bool {
        self.marked += 1;
        let send = self.last.is_none_or(|t| now >= t + interval);
        if send {
            self.last = Some(now);
            self.sent += 1;
        }
        send
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    const G100: u64 = 100_000_000_000;

    #[test]
    fn red_curve_matches_the_formula() {
        let r = Red {
            kmin: 100,
            kmax: 300,
            pmax: 0.2,
        };
        assert_eq!(r.probability(50), 0.0);
        assert_eq!(r.probability(100), 0.0);
        assert!((r.probability(200) - 0.1).abs() < 1e-12);
        assert!((r.probability(300) - 0.2).abs() < 1e-12);
        assert_eq!(r.probability(301), 1.0);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let n = 100_000;
        let marks = (0..n).filter(|_| r.should_mark(200, &mut rng)).count();
        let f = marks as f64 / n as f64;
        assert!((f - 0.1).abs() < 0.005, "seed 7: marked fraction {f}");
        // Same seed, same marks.
        let mut a = Pcg64Mcg::seed_from_u64(9);
        let mut b = Pcg64Mcg::seed_from_u64(9);
        let va: Vec<bool> = (0..1000).map(|_| r.should_mark(250, &mut a)).collect();
        let vb: Vec<bool> = (0..1000).map(|_| r.should_mark(250, &mut b)).collect();
        assert_eq!(va, vb);
    }

    /// NVIDIA `CLAMP_TGT_RATE 0, CLAMP_TGT_RATE_AFTER_TIME_INC 1`: a cut moves the
    /// target to the current rate only if the *timer* raised the rate since the
    /// last cut; byte-counter increases do not count. (Before this was fixed any
    /// increase clamped, and the byte counter, which fires every 32,767 B — 0.7 µs
    /// at 400G — ratcheted the target down cut after cut.)
    #[test]
    fn nvidia_clamps_the_target_only_after_a_timer_increase() {
        let line = 4.0 * G100 as f64;
        let mut rp = ReactionPoint::new(Profile::NvidiaCx.params(4 * G100));
        rp.on_cnp(Time::ZERO);
        assert_eq!(rp.target(), line);
        let first = rp.rate();
        assert!((first / line - (1.0 - 1023.0 / 2048.0)).abs() < 1e-9, "{first}");
        for k in 0..4u64 {
            rp.on_sent(Time::ns(500 * (k + 1)), 32_767);
        }
        assert_eq!(rp.stages(), (0, 4));
        let raised = rp.rate();
        assert!(raised > first && raised < line);
        rp.on_cnp(Time::us(10));
        assert_eq!(rp.target(), line, "byte-counter increases must not clamp the target");
        assert!(rp.rate() < raised);
        // The timer fires 300 µs after the cut; the next cut clamps.
        rp.poll(Time::us(310));
        assert_eq!(rp.stages().0, 1);
        let before = rp.rate();
        rp.on_cnp(Time::us(311));
        assert_eq!(rp.target(), before);
    }

    #[test]
    fn profiles_carry_the_cited_values() {
        let h = Profile::HpccNs3.params(G100);
        assert_eq!(
            h.red,
            Red {
                kmin: 400_000,
                kmax: 1_600_000,
                pmax: 0.2
            }
        );
        assert!((h.rate_ai_bps - 20e6).abs() < 1e-3 && (h.rate_hai_bps - 200e6).abs() < 1e-3);
        let h4 = Profile::HpccNs3.params(4 * G100);
        assert_eq!((h4.red.kmin, h4.red.kmax), (1_600_000, 6_400_000));
        let n = Profile::NvidiaCx.params(G100);
        assert!((n.g - 5.0 / 1024.0).abs() < 1e-15);
        assert_eq!(n.byte_counter, Some(32_767));
        assert_eq!(n.increase_timer, Time::us(300));
        assert!(n.cnp_per_port && n.cnp_interval == Time::us(4));
        let p = Profile::DcqcnPaper.params(40_000_000_000);
        assert_eq!(p.cnp_interval, Time::us(50));
        assert_eq!(p.byte_counter, Some(10_000_000));
        for pr in Profile::ALL {
            assert_eq!(Profile::from_name(pr.name()), Some(pr));
        }
    }

    #[test]
    fn first_cnp_rate_per_profile() {
        // Paper: α starts at 1, the first CNP halves the rate at once.
        let mut rp = ReactionPoint::new(Profile::DcqcnPaper.params(40_000_000_000));
        rp.on_cnp(Time::us(10));
        assert_eq!(rp.rate(), 20e9);
        assert_eq!(rp.target(), 40e9);
        assert_eq!(rp.alpha(), 1.0);

        // NVIDIA: α = 1023/1024 ⇒ rate × (1 − 1023/2048).
        let mut rp = ReactionPoint::new(Profile::NvidiaCx.params(G100));
        rp.on_cnp(Time::us(10));
        let want = 100e9 * (1.0 - 1023.0 / 2048.0);
        assert!((rp.rate() - want).abs() < 1.0, "{}", rp.rate());
        // A second CNP within RATE_REDUCE_MONITOR_PERIOD (4 µs) waits for it.
        rp.on_cnp(Time::us(11));
        assert_eq!(rp.counters.cuts, 1);
        rp.poll(Time::us(14));
        assert_eq!(rp.counters.cuts, 2);

        // HPCC ns-3: the first CNP leaves the rate and sets α = 1; the next CNP is
        // applied at the 4 µs decrease check: rate × (1 − α/2) with α raised to 1
        // by the 1 µs updates.
        let mut rp = ReactionPoint::new(Profile::HpccNs3.params(G100));
        rp.on_cnp(Time::us(10));
        assert_eq!(rp.rate(), 100e9);
        assert_eq!(rp.alpha(), 1.0);
        rp.on_cnp(Time::us(11));
        rp.poll(Time::us(13));
        assert_eq!(rp.rate(), 100e9);
        rp.poll(Time::us(14));
        assert_eq!(rp.counters.cuts, 1);
        // α: 1 at the first CNP; the 11 and 12 µs updates saw a CNP (stays 1), the
        // 13 µs one did not (1 − g); the cut at 14 µs runs before that update.
        let a = 1.0 - 1.0 / 256.0;
        assert!((rp.rate() - 100e9 * (1.0 - a / 2.0)).abs() < 1.0, "{}", rp.rate());
    }

    #[test]
    fn alpha_decays_as_specified() {
        // Paper rule: with no CNP, α ← (1 − g)α every 55 µs.
        let mut rp = ReactionPoint::new(Profile::DcqcnPaper.params(40_000_000_000));
        rp.on_cnp(Time::ZERO);
        let a0 = rp.alpha();
        rp.poll(Time::us(55 * 10));
        let want = a0 * (1.0 - 1.0 / 256.0f64).powi(10);
        assert!((rp.alpha() - want).abs() < 1e-12, "{} vs {want}", rp.alpha());

        // Periodic rule (NVIDIA): every 1 µs α ← (1−g)α + g·[CNP in period].
        let mut rp = ReactionPoint::new(Profile::NvidiaCx.params(G100));
        rp.on_cnp(Time::ZERO);
        let a0 = rp.alpha();
        rp.poll(Time::us(1));
        let a1 = (1.0 - 5.0 / 1024.0) * a0 + 5.0 / 1024.0;
        assert!((rp.alpha() - a1).abs() < 1e-12);
        rp.poll(Time::us(101));
        let want = a1 * (1.0 - 5.0 / 1024.0f64).powi(100);
        assert!((rp.alpha() - want).abs() < 1e-12, "{} vs {want}", rp.alpha());
    }

    #[test]
    fn recovery_goes_fast_then_additive_then_hyper() {
        // HPCC ns-3 (F = 1, no byte counter): first timer expiry halves the gap
        // to the target, the second adds R_AI, later ones R_HAI.
        let mut rp = ReactionPoint::new(Profile::HpccNs3.params(G100));
        rp.on_cnp(Time::ZERO);
        rp.on_cnp(Time::ns(500));
        rp.poll(Time::us(4));
        let (r0, t0) = (rp.rate(), rp.target());
        // α saw CNPs in the 1 µs period only, then decayed twice before the 4 µs cut.
        let a = (1.0 - 1.0 / 256.0f64).powi(2);
        assert!((r0 - 100e9 * (1.0 - a / 2.0)).abs() < 1.0 && t0 == 100e9, "{r0} {t0}");
        rp.poll(Time::us(4 + 300));
        let r1 = (r0 + 100e9) / 2.0;
        assert!((rp.rate() - r1).abs() < 1.0, "fast recovery: {}", rp.rate());
        assert_eq!(rp.target(), 100e9);
        // Target is at line rate, so AI/HAI are capped: the rate keeps halving the gap.
        rp.poll(Time::us(4 + 600));
        assert!((rp.rate() - (r1 + 100e9) / 2.0).abs() < 1.0);

        // With a low target the increments are visible: paper, F = 5.
        let mut p = Profile::DcqcnPaper.params(40_000_000_000);
        p.byte_counter = None;
        let mut rp = ReactionPoint::new(p);
        rp.on_cnp(Time::ZERO); // 20G, target 40G
        rp.on_cnp(Time::ZERO); // α = 1 − g + g(1-g)... cut again: target = 20G
        let t = rp.target();
        assert_eq!(t, 20e9);
        for k in 1..=5u64 {
            rp.poll(Time::us(55 * k));
        }
        assert_eq!(rp.target(), t, "five fast-recovery steps leave the target");
        rp.poll(Time::us(55 * 6));
        assert_eq!(rp.target(), t + 40e6, "stage F: additive");
        rp.poll(Time::us(55 * 7));
        assert_eq!(rp.target(), t + 40e6 + 200e6, "stage > F: hyper");
    }

    #[test]
    fn min_rate_is_a_floor() {
        let mut rp = ReactionPoint::new(Profile::HpccNs3.params(G100));
        let mut t = Time::ZERO;
        for _ in 0..10_000 {
            rp.on_cnp(t);
            t += Time::us(1);
        }
        rp.poll(t);
        assert_eq!(rp.rate(), 1e9);
    }

    #[test]
    fn cnp_pacer_limits_per_interval() {
        let mut np = CnpPacer::default();
        let iv = Time::us(50);
        assert!(np.on_marked(Time::us(0), iv));
        assert!(!np.on_marked(Time::us(49), iv));
        assert!(np.on_marked(Time::us(50), iv));
        assert!(!np.on_marked(Time::us(60), iv));
        assert_eq!((np.sent, np.marked), (2, 4));
        let mut every = CnpPacer::default();
        assert!(every.on_marked(Time::us(1), Time::ZERO) && every.on_marked(Time::us(1), Time::ZERO));
    }

    /// Two flows share one bottleneck in a fluid model stepped every 100 ns: the
    /// queue integrates the rate excess, RED marks packets at the egress, each
    /// receiver paces CNPs. Flow B starts far below flow A; DCQCN brings them to a
    /// fair share (Jain index over the last 10 ms ≥ 0.99) while the link stays busy.
    fn fluid_two_flows(profile: Profile, line: u64, secs_ms: u64, seed: u64) -> (f64, f64, f64) {
        let params = profile.params(line);
        let cap = line as f64;
        let mut rps = [ReactionPoint::new(params.clone()), ReactionPoint::new(params.clone())];
        // Push B down to its floor first: a burst of CNPs spaced past every gap.
        let mut t = Time::ZERO;
        for _ in 0..400 {
            rps[1].on_cnp(t);
            t += Time::us(5);
        }
        rps[1].poll(t);
        let start_b = rps[1].rate();
        assert!(start_b < cap * 0.05, "{profile:?}: B starts at {start_b}");
        let mut pacers = [CnpPacer::default(), CnpPacer::default()];
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let dt = Time::ns(100);
        let pkt = 1000.0f64;
        let mut q = 0.0f64;
        let mut credit = [0.0f64; 2];
        let end = t + Time::ms(secs_ms);
        let window = Time::ms(10);
        let mut sent = [0.0f64; 2];
        let mut served = 0.0f64;
        while t < end {
            t += dt;
            let dts = dt.as_secs_f64();
            let mut arrive = 0.0;
            for i in 0..2 {
                rps[i].poll(t);
                let b = rps[i].rate() * dts / 8.0;
                arrive += b;
                if t + window >= end {
                    sent[i] += b;
                }
                credit[i] += b;
                // Packets of this flow leave the queue now; mark by RED on the
                // current queue length, one draw per packet.
                while credit[i] >= pkt {
                    credit[i] -= pkt;
                    // Both flows share one receiver: a per-port NP limiter is shared.
                    let np = if params.cnp_per_port { 0 } else { i };
                    if params.red.should_mark(q as u64, &mut rng) && pacers[np].on_marked(t, params.cnp_interval) {
                        rps[i].on_cnp(t);
                    }
                }
            }
            let out = (q + arrive).min(cap * dts / 8.0);
            if t + window >= end {
                served += out;
            }
            q = (q + arrive - out).max(0.0);
        }
        let jain = (sent[0] + sent[1]).powi(2) / (2.0 * (sent[0].powi(2) + sent[1].powi(2)));
        let util = served / (cap * window.as_secs_f64() / 8.0);
        (jain, util, sent[1] / sent[0])
    }

    #[test]
    #[ignore = "exploration: prints the share over time"]
    fn fluid_trend() {
        for ms in [20, 40, 80, 160] {
            for pr in Profile::ALL {
                let line = if pr == Profile::DcqcnPaper {
                    40_000_000_000
                } else {
                    G100
                };
                let (j, u, r) = fluid_two_flows(pr, line, ms, 1);
                eprintln!("{ms} ms {}: jain {j:.4} util {u:.3} B/A {r:.3}", pr.name());
            }
        }
    }

    #[test]
    fn two_flows_converge_to_fair_share_hpcc_ns3() {
        let (jain, util, ratio) = fluid_two_flows(Profile::HpccNs3, G100, 80, 1);
        assert!(jain >= 0.99, "seed 1: jain {jain}, B/A {ratio}");
        assert!(util > 0.9, "seed 1: utilisation {util}");
    }

    #[test]
    fn two_flows_converge_to_fair_share_dcqcn_paper() {
        let (jain, util, ratio) = fluid_two_flows(Profile::DcqcnPaper, 40_000_000_000, 160, 2);
        assert!(jain >= 0.99, "seed 2: jain {jain}, B/A {ratio}");
        assert!(util > 0.9, "seed 2: utilisation {util}");
    }

    #[test]
    fn two_flows_converge_to_fair_share_nvidia_cx() {
        let (jain, util, ratio) = fluid_two_flows(Profile::NvidiaCx, G100, 40, 3);
        assert!(jain >= 0.99, "seed 3: jain {jain}, B/A {ratio}");
        assert!(util > 0.8, "seed 3: utilisation {util}");
    }
}
