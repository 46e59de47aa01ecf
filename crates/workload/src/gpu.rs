//! GPU presets: dense BF16 peak, HBM, NVLink and the NVLink domain.

use serde::{Deserialize, Serialize};

/// A GPU as the workload model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// A name for reports.
    pub name: String,
    /// Dense (non-sparse) BF16 peak, TFLOP/s.
    pub bf16_tflops: f64,
    /// HBM capacity, GB.
    pub hbm_gb: f64,
    /// HBM bandwidth, TB/s.
    pub hbm_tbs: f64,
    /// NVLink bandwidth per GPU and direction, GB/s.
    pub nvlink_gbs: f64,
    /// GPUs in one NVLink domain (a server's baseboard, or an NVL72 rack).
    pub nvlink_domain: u32,
}

/// The presets' names.
pub const PRESETS: &[&str] = &["h100", "h200", "b200", "a100"];

impl Gpu {
    /// A preset by name ([`PRESETS`]).
    pub fn preset(name: &str) -> Option<Gpu> {
        let g = |bf16_tflops, hbm_gb, hbm_tbs, nvlink_gbs| Gpu {
            name: name.into(),
            bf16_tflops,
            hbm_gb,
            hbm_tbs,
            nvlink_gbs,
            nvlink_domain: 8,
        };
        Some(match name {
            // NVIDIA/dgxc-benchmarking README "Peak Theoretical Throughput" (dense BF16
            // 989 TFLOPS, 80 GB); H100 SXM datasheet 3.35 TB/s; NVLink4 18 links, 900 GB/s
            // bidirectional = 450 per direction; HGX baseboard of 8
            // (training-workloads.md §2)
            "h100" => g(989.0, 80.0, 3.35, 450.0),
            // same GH100 compute as H100; 141 GB HBM3e at 4.8 TB/s (§2)
            "h200" => g(989.0, 141.0, 4.8, 450.0),
            // dgxc README: 2,250 dense BF16; 180 GB; 8 TB/s; NVLink5 1.8 TB/s
            // bidirectional = 900 per direction (§2)
            "b200" => g(2_250.0, 180.0, 8.0, 900.0),
            // A100 SXM 80GB datasheet: 312 dense BF16 TFLOPS, 2.0 TB/s, NVLink3 600 GB/s
            // bidirectional; Selene's 8-GPU nodes (Korthikanti et al. §6)
            "a100" => g(312.0, 80.0, 2.0, 300.0),
            _ => return None,
        })
    }
}
