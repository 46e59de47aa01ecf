//! What the fabric's failures cost a training job, in lost GPU-hours.
//!
//! A network failure that kills the job's communicator stops every GPU of the job
//! until it restarts from its last checkpoint. The expected loss per month is
//!
//! ```text
//!   interruptions/month  = r_net × G × 365/12
//!   lost s/interruption  = detection + reroute(fabric) + restart + T/2
//!   T (Young's interval) = sqrt(2 × C × MTBF_job),  MTBF_job = 1 / (r_all × G)
//!   lost GPU-h/month     = interruptions/month × lost s/interruption × G / 3600
//! ```
//!
//! with G the GPUs of the job (the whole cluster), r_net and r_all the
//! network-attributable and all-cause interruption rates per GPU-day, and C the
//! time one checkpoint costs. Every input is cited beside its constant (the
//! reference is `failures-isolation-sweeps.md` §2.2–§2.6). Cost: O(1).

use serde::{Deserialize, Serialize};

use crate::tco::Tech;

/// GPU-days in the Llama 3 405B snapshot: 54 days on 16,384 H100 (Llama Team,
/// "The Llama 3 Herd of Models", arXiv:2407.21783 §3.3.4).
pub const LLAMA3_GPU_DAYS: f64 = 54.0 * 16_384.0;

/// Unexpected interruptions in that snapshot, all causes (Table 5).
pub const LLAMA3_UNEXPECTED: f64 = 419.0;

/// Of them, the network's: 35 "network switch/cable" plus 7 "NIC" (Table 5). The
/// NIC counts because the fabric's bill includes the adapters: its failures are the
/// fabric's cost of ownership, and both fabrics use the same ConnectX-class silicon.
pub const LLAMA3_NETWORK: f64 = 35.0 + 7.0;

/// Local ACK timeout exponent NCCL sets on its RC QPs (`NCCL_IB_TIMEOUT`, default
/// 20 since NCCL 2.23.4) and retries before an error (`NCCL_IB_RETRY_CNT`, 7):
/// failures-isolation-sweeps.md §2.5.
pub const NCCL_IB_TIMEOUT: u32 = 20;
pub const NCCL_IB_RETRY_CNT: u32 = 7;

/// Time from a dead path to NCCL's `IBV_WC_RETRY_EXC_ERR`: 4.096 µs × 2^timeout ×
/// (retry_cnt + 1) = 34.4 s (NCCL's own hint: "~30 seconds before error").
pub fn nccl_detection_s() -> f64 {
    4.096e-6 * f64::from(1u32 << NCCL_IB_TIMEOUT) * f64::from(NCCL_IB_RETRY_CNT + 1)
}

/// Restart and state restore of a large job: FlashRecovery (arXiv:2509.03047)
/// restores a 4,800-device job in 150 s (§2.6).
pub const RESTART_S: f64 = 150.0;

/// Time one checkpoint costs the job: ByteCheckpoint reports checkpoint save/load of
/// LLMs "often incur[s] … minute-level stalls" (§2.6): one minute.
pub const CHECKPOINT_COST_S: f64 = 60.0;

/// InfiniBand fabric repair after a link failure: OpenSM trap → "SUBNET UP" measured
/// 0.25–2 s (§2.2, 648-CA fat tree 225–366 ms; 2048-CA heavy sweep 1.3–1.7 s); the
/// upper end.
pub const IB_REROUTE_S: f64 = 2.0;

/// Ethernet fabric repair: BFD detection with FRR's defaults, 3 × 300 ms = 0.9 s
/// (§2.4); BFD Down then tears the BGP session at once (RFC 9384). The route
/// withdrawal after it is not quantified in the reference and is left out.
pub const ETH_REROUTE_S: f64 = 0.9;

/// Days in a month (a year's twelfth).
pub const DAYS_PER_MONTH: f64 = 365.0 / 12.0;

/// The failure model's inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureModel {
    /// Network-attributable interruptions per GPU-day.
    pub network_per_gpu_day: f64,
    /// All-cause interruptions per GPU-day (sets the checkpoint interval).
    pub all_per_gpu_day: f64,
    /// Seconds until the job learns a path is dead.
    pub detection_s: f64,
    /// Seconds to restart and restore the job.
    pub restart_s: f64,
    /// Seconds one checkpoint costs.
    pub checkpoint_cost_s: f64,
}

impl Default for FailureModel {
    /// The cited figures above.
    fn default() -> Self {
        FailureModel {
            network_per_gpu_day: LLAMA3_NETWORK / LLAMA3_GPU_DAYS,
            all_per_gpu_day: LLAMA3_UNEXPECTED / LLAMA3_GPU_DAYS,
            detection_s: nccl_detection_s(),
            restart_s: RESTART_S,
            checkpoint_cost_s: CHECKPOINT_COST_S,
        }
    }
}

/// The model's figures for one fabric and cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureCost {
    /// GPUs one job spans (the whole cluster).
    pub gpus: u64,
    /// Network-attributable interruptions per GPU-day.
    pub network_per_gpu_day: f64,
    /// Expected network interruptions of the job per month.
    pub interruptions_per_month: f64,
    /// Detection, fabric repair, restart, and lost work (half a checkpoint
    /// interval), seconds.
    pub detection_s: f64,
    pub reroute_s: f64,
    pub restart_s: f64,
    pub lost_work_s: f64,
    /// Young's checkpoint interval for the job's all-cause MTBF, seconds.
    pub checkpoint_interval_s: f64,
    /// The whole job's loss per interruption, seconds.
    pub lost_s_per_interruption: f64,
    /// Expected GPU-hours lost per month.
    pub lost_gpu_hours_per_month: f64,
    /// Their price per month, USD.
    pub usd_per_month: f64,
}

impl FailureModel {
    /// Young's checkpoint interval for a `gpus`-GPU job's all-cause MTBF, seconds.
    pub fn checkpoint_interval_s(&self, gpus: u64) -> f64 {
        let mtbf_s = 86_400.0 / (self.all_per_gpu_day * gpus as f64);
        (2.0 * self.checkpoint_cost_s * mtbf_s).sqrt()
    }

    /// Work a restart from the last checkpoint loses on average: half an interval.
    pub fn lost_work_s(&self, gpus: u64) -> f64 {
        self.checkpoint_interval_s(gpus) / 2.0
    }

    /// Expected lost GPU-hours of a `gpus`-GPU job on `tech`, priced at `gpu_hour`
    /// USD, with the cited repair time of each fabric ([`IB_REROUTE_S`],
    /// [`ETH_REROUTE_S`]). `None` for no GPUs.
    pub fn cost(&self, tech: Tech, gpus: u64, gpu_hour: f64) -> Option<FailureCost> {
        let reroute_s = match tech {
            Tech::InfiniBand => IB_REROUTE_S,
            Tech::Ethernet => ETH_REROUTE_S,
        };
        self.cost_with_reroute(reroute_s, gpus, gpu_hour)
    }

    /// [`FailureModel::cost`] with the fabric's repair time given (a comparison
    /// passes the recovery it derived for each variant). `None` for no GPUs.
    pub fn cost_with_reroute(&self, reroute_s: f64, gpus: u64, gpu_hour: f64) -> Option<FailureCost> {
        if gpus == 0 {
            return None;
        }
        let g = gpus as f64;
        let interval = self.checkpoint_interval_s(gpus);
        let lost_work_s = interval / 2.0;
        let per = self.detection_s + reroute_s + self.restart_s + lost_work_s;
        let n = self.network_per_gpu_day * g * DAYS_PER_MONTH;
        let gpu_h = n * per * g / 3600.0;
        Some(FailureCost {
            gpus,
            network_per_gpu_day: self.network_per_gpu_day,
            interruptions_per_month: n,
            detection_s: self.detection_s,
            reroute_s,
            restart_s: self.restart_s,
            lost_work_s,
            checkpoint_interval_s: interval,
            lost_s_per_interruption: per,
            lost_gpu_hours_per_month: gpu_h,
            usd_per_month: gpu_h * gpu_hour,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn failure_model_matches_the_closed_form_with_llama3_numbers() {
        let m = FailureModel::default();
        // switch/cable + NIC over the snapshot's GPU-days
        assert!(close(m.network_per_gpu_day, 42.0 / (54.0 * 16384.0), 1e-12));
        assert!(close(m.detection_s, 34.36, 1e-3));
        let c = m.cost(Tech::InfiniBand, 128, 2.79).unwrap();
        let mtbf: f64 = 54.0 * 16384.0 / (419.0 * 128.0) * 86_400.0;
        let t = (2.0 * 60.0 * mtbf).sqrt();
        let per = 4.096e-6 * 1048576.0 * 8.0 + 2.0 + 150.0 + t / 2.0;
        let n = 42.0 / (54.0 * 16384.0) * 128.0 * 365.0 / 12.0;
        assert!(close(c.checkpoint_interval_s, t, 1e-12));
        assert!(close(c.lost_s_per_interruption, per, 1e-12));
        assert!(close(c.interruptions_per_month, n, 1e-12));
        assert!(close(c.lost_gpu_hours_per_month, n * per * 128.0 / 3600.0, 1e-12));
        assert!(close(c.usd_per_month, c.lost_gpu_hours_per_month * 2.79, 1e-12));
        // the figures docs/VALIDATION.md quotes, within 1%
        assert!(close(c.interruptions_per_month, 0.1848, 0.01), "{c:?}");
        assert!(close(c.checkpoint_interval_s / 3600.0, 3.63, 0.01), "{c:?}");
        assert!(close(c.lost_gpu_hours_per_month, 44.2, 0.01), "{c:?}");
        assert!(close(c.usd_per_month, 123.4, 0.01), "{c:?}");
        let k = m.cost(Tech::InfiniBand, 1024, 2.79).unwrap();
        assert!(close(k.interruptions_per_month, 1.479, 0.01), "{k:?}");
        assert!(close(k.checkpoint_interval_s / 3600.0, 1.284, 0.01), "{k:?}");
        assert!(close(k.lost_gpu_hours_per_month, 1051.0, 0.01), "{k:?}");
        assert!(close(k.usd_per_month, 2932.0, 0.01), "{k:?}");
        assert!(m.cost(Tech::InfiniBand, 0, 2.79).is_none());
    }

    #[test]
    fn the_fabrics_repair_times_make_a_negligible_difference() {
        // both repairs sit far inside NCCL's retry window and far below the lost work
        assert!(IB_REROUTE_S < nccl_detection_s() && ETH_REROUTE_S < nccl_detection_s());
        let m = FailureModel::default();
        for g in [128, 1024, 16384] {
            let ib = m.cost(Tech::InfiniBand, g, 1.0).unwrap();
            let eth = m.cost(Tech::Ethernet, g, 1.0).unwrap();
            assert!(ib.lost_gpu_hours_per_month > eth.lost_gpu_hours_per_month);
            let rel = (ib.lost_gpu_hours_per_month - eth.lost_gpu_hours_per_month) / eth.lost_gpu_hours_per_month;
            assert!(rel < 0.005, "{g} GPUs: {rel}");
        }
    }
}
