//! `rdmalab failure`: cut a spine link during a job's collective, on every
//! variant the flow engine runs (`lab::failure`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use lab::Scenario;
use lab::failure::{EthTimers, FailureOptions, NcclTimeout};

use super::CliError;

/// Cut a spine link in the middle of a collective: stall, slowdown, NCCL timeout,
/// GPU-hours lost, per variant (InfiniBand: our SM's measured recovery; Ethernet:
/// BFD/BGP timers).
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
    /// The link to cut, SWITCH:PORT (default: the spine link the collective uses most).
    #[arg(long)]
    link: Option<String>,
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
        let o = FailureOptions {
            op,
            size: self.size,
            at: self.at,
            link,
            eth: EthTimers {
                bfd_interval_ms: (!self.no_bfd).then_some(self.bfd_ms),
                bfd_multiplier: self.bfd_multiplier,
                bgp_hold_s: self.bgp_hold_s,
                local_repair_ms: None,
            },
            nccl: NcclTimeout {
                ib_timeout: self.nccl_ib_timeout,
                retry_cnt: self.nccl_retry_cnt,
            },
        };
        let r = match lab::failure::run(&s, &o) {
            Ok(r) => r,
            Err(
                e @ (lab::failure::FailureError::NoLink { .. }
                | lab::failure::FailureError::At(_)
                | lab::failure::FailureError::NothingToCut(_)
                | lab::failure::FailureError::Schedule(_)),
            ) => return Err(CliError::bad_input(e.to_string())),
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
