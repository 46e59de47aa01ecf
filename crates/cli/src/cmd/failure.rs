//! `rdmalab failure`: a fault (a link or switch down, a flapping or degraded
//! link, a NIC that stops receiving) during a job's collective, on every variant
//! the flow engine runs (`lab::failure`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use lab::Scenario;
use lab::failure::{Dampening, EthTimers, FailureOptions, Fault, FlapPlan, NcclTimeout};

use super::CliError;

/// Inject a fault in the middle of a collective: stall, slowdown, NCCL timeout and
/// restart, GPU-hours lost, per variant (InfiniBand: our SM's recovery; Ethernet:
/// BFD/BGP timers; a stuck NIC: PFC watchdog or HOQ lifetime).
#[derive(Debug, Args)]
pub struct FailureCmd {
    /// Comparison scenario (default: the built-in one).
    scenario: Option<PathBuf>,
    /// The collective in flight (all-reduce-ring, all-reduce-tree, all-gather,
    /// reduce-scatter, all-to-all).
    #[arg(long, default_value = "all-reduce-ring")]
    op: String,
    /// Its size, bytes (nccl-tests' size).
    #[arg(long, default_value_t = 256 << 20)]
    size: u64,
    /// When the link fails, as a fraction of the collective's healthy time.
    #[arg(long, default_value_t = 0.5)]
    at: f64,
    /// The fault: link (a switch-to-switch link down), switch (all its links),
    /// flap (the link down and up --flaps times), degrade (--degraded-gbps, --ber),
    /// nic-storm (a NIC's receive pipeline sticks: a PFC storm on RoCE, withheld
    /// credits on InfiniBand).
    #[arg(long, default_value = "link")]
    fault: String,
    /// The link, SWITCH:PORT, for link, flap and degrade (default: the spine link
    /// the collective uses most).
    #[arg(long)]
    link: Option<String>,
    /// The switch for --fault switch (default: the spine at the far end of the
    /// busiest link).
    #[arg(long)]
    switch: Option<String>,
    /// The NIC for --fault nic-storm (default: the first server's first NIC).
    #[arg(long)]
    nic: Option<String>,
    /// --fault flap: how many times the link goes down (an example, not a cited figure).
    #[arg(long, default_value_t = 5)]
    flaps: u32,
    /// --fault flap: seconds from one down to the next.
    #[arg(long, default_value_t = 2.0)]
    flap_period_s: f64,
    /// --fault flap: seconds the link stays down each time.
    #[arg(long, default_value_t = 1.0)]
    flap_down_s: f64,
    /// BGP route flap dampening with FRR's defaults (penalty 1000, half-life
    /// 15 min, reuse 750, suppress 2000); off by default, as in FRR.
    #[arg(long)]
    dampening: bool,
    /// --fault degrade: the rate the link trains at, Gb/s (InfiniBand: fewer
    /// lanes, e.g. 100 for 4x→1x NDR; Ethernet: a lower speed, e.g. 200).
    #[arg(long)]
    degraded_gbps: Option<u32>,
    /// --fault degrade: post-FEC bit error ratio on the link (e.g. 1e-6).
    #[arg(long)]
    ber: Option<f64>,
    /// --fault degrade: InfiniBand without link-level retransmission (LLR).
    #[arg(long)]
    no_llr: bool,
    /// --fault nic-storm: the switches' PFC watchdog detection time, ms (SONiC 200).
    #[arg(long, default_value_t = lab::failure::recovery::PFCWD_DETECTION_MS)]
    pfcwd_ms: f64,
    /// --fault nic-storm: no PFC watchdog.
    #[arg(long)]
    no_pfcwd: bool,
    /// --fault nic-storm: the NIC's PFC stall prevention, ms (mlx5 default 8000).
    #[arg(long, default_value_t = lab::failure::recovery::NIC_STALL_PREVENTION_MS)]
    nic_prevention_ms: f64,
    /// --fault nic-storm: no NIC stall prevention.
    #[arg(long)]
    no_nic_prevention: bool,
    /// BFD interval, ms (FRR default 300).
    #[arg(long, default_value_t = 300.0)]
    bfd_ms: f64,
    /// BFD detect multiplier (FRR default 3).
    #[arg(long, default_value_t = 3)]
    bfd_multiplier: u32,
    /// No BFD: Ethernet waits for the BGP hold time.
    #[arg(long)]
    no_bfd: bool,
    /// BGP hold time, s (FRR datacenter profile 9).
    #[arg(long, default_value_t = 9.0)]
    bgp_hold_s: f64,
    /// NCCL_IB_TIMEOUT (default 20).
    #[arg(long, default_value_t = 20)]
    nccl_ib_timeout: u8,
    /// NCCL_IB_RETRY_CNT (default 7).
    #[arg(long, default_value_t = 7)]
    nccl_retry_cnt: u8,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl FailureCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        let s = match &self.scenario {
            Some(p) => lab::ScenarioFile::load(p)?.comparison(p)?,
            None => Scenario::default_rail(),
        };
        let op = lab::Collective::ALL
            .into_iter()
            .find(|c| c.id() == self.op)
            .ok_or_else(|| {
                let ids: Vec<&str> = lab::Collective::ALL.iter().map(|c| c.id()).collect();
                CliError::bad_input(format!("--op {:?}: expected one of {}", self.op, ids.join(", ")))
            })?;
        let link = match &self.link {
            None => None,
            Some(l) => {
                let (sw, p) = l.rsplit_once(':').ok_or_else(|| {
                    CliError::bad_input(format!("--link {l:?}: expected SWITCH:PORT, e.g. su0-rail0:33"))
                })?;
                let p: u8 = p
                    .parse()
                    .map_err(|_| CliError::bad_input(format!("--link {l:?}: port {p:?} is not a number")))?;
                Some((sw.to_string(), p))
            }
        };
        let fault = match self.fault.as_str() {
            "link" => Fault::LinkDown,
            "switch" => Fault::SwitchDown {
                switch: self.switch.clone(),
            },
            "flap" => Fault::Flap(FlapPlan {
                flaps: self.flaps,
                period_s: self.flap_period_s,
                down_s: self.flap_down_s,
            }),
            "degrade" => Fault::Degraded {
                gbps: self.degraded_gbps,
                ber: self.ber,
                llr: !self.no_llr,
            },
            "nic-storm" => Fault::NicStorm {
                nic: self.nic.clone(),
                watchdog_ms: (!self.no_pfcwd).then_some(self.pfcwd_ms),
                nic_prevention_ms: (!self.no_nic_prevention).then_some(self.nic_prevention_ms),
            },
            other => {
                return Err(CliError::bad_input(format!(
                    "--fault {other:?}: expected one of {}",
                    Fault::KINDS.join(", ")
                )));
            }
        };
        // options of another fault are refused, naming them
        let given: [(&str, bool, &[&str]); 5] = [
            ("--switch", self.switch.is_some(), &["switch"]),
            ("--nic", self.nic.is_some(), &["nic-storm"]),
            ("--degraded-gbps", self.degraded_gbps.is_some(), &["degrade"]),
            ("--ber", self.ber.is_some(), &["degrade"]),
            ("--dampening", self.dampening, &["flap", "link", "switch"]),
        ];
        if let Some((name, _, kinds)) = given
            .iter()
            .find(|(_, set, kinds)| *set && !kinds.contains(&fault.name()))
        {
            return Err(CliError::bad_input(format!(
                "{name} does not apply to --fault {}; it is for --fault {}",
                fault.name(),
                kinds.join(" or ")
            )));
        }
        let o = FailureOptions {
            op,
            size: self.size,
            at: self.at,
            link,
            fault,
            eth: EthTimers {
                bfd_interval_ms: (!self.no_bfd).then_some(self.bfd_ms),
                bfd_multiplier: self.bfd_multiplier,
                bgp_hold_s: self.bgp_hold_s,
                local_repair_ms: None,
                dampening: self.dampening.then(Dampening::default),
            },
            nccl: NcclTimeout {
                ib_timeout: self.nccl_ib_timeout,
                retry_cnt: self.nccl_retry_cnt,
            },
        };
        let r = match lab::failure::run(&s, &o) {
            Ok(r) => r,
            Err(e) if e.is_input() => return Err(CliError::bad_input(e.to_string())),
            Err(e) => return Err(anyhow::Error::new(e).into()),
        };
        let out = if self.json {
            report::json(&r)?
        } else {
            report::failure::text(&r)
        };
        std::io::stdout().write_all(out.as_bytes())?;
        Ok(())
    }
}
