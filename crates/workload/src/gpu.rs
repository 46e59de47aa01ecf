//! GPU presets: dense BF16 peak, HBM, NVLink and the NVLink domain.
//!
//! Figures from ../shared/reference/training-workloads.md §2, whose sources are
//! cited beside each preset.

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

/// The presets' names (`h100-sxm` is also accepted for `h100`).
pub const PRESETS: &[&str] = &["h100", "h200", "b200", "gb200", "a100"];

impl Gpu {
    /// A preset by name ([`PRESETS`]).
    pub fn preset(name: &str) -> Option<Gpu> {
        let g = |bf16_tflops, hbm_gb, hbm_tbs, nvlink_gbs, nvlink_domain| Gpu {
            name: name.into(),
            bf16_tflops,
            hbm_gb,
            hbm_tbs,
            nvlink_gbs,
            nvlink_domain,
        };
        Some(match name {
            // dense BF16 989 TFLOPS and 80 GB: NVIDIA/dgxc-benchmarking README "Peak
            // Theoretical Throughput"; 3.35 TB/s: H100 SXM datasheet (dgxc lists 3.2);
            // NVLink4 18 links, 900 GB/s bidirectional = 450 per direction (dgxc README,
            // MLCommons system JSONs); HGX baseboard of 8 on 4 NVSwitch chips (DGX
            // BasePOD RA "Core Components")
            "h100" | "h100-sxm" => g(989.0, 80.0, 3.35, 450.0, 8),
            // the same GH100 compute as H100 (dgxc README); 141 GB HBM3e (MLCommons
            // inference_results_v4.1 H200-SXM-141GBx8 system JSON) at 4.8 TB/s
            // (datasheet); NVLink4 as H100; 8 per baseboard (DGX BasePOD RA)
            "h200" => g(989.0, 141.0, 4.8, 450.0, 8),
            // dense BF16 2,250 TFLOPS, 180 GB (dgxc README); 8 TB/s (datasheet; dgxc
            // lists 7.7); NVLink5 18 links, 1.8 TB/s bidirectional = 900 per direction;
            // 8 per HGX/DGX baseboard
            "b200" => g(2_250.0, 180.0, 8.0, 900.0, 8),
            // dense BF16 2,450 TFLOPS (dgxc README), 186 GB HBM3e, 8 TB/s, NVLink5 as
            // B200; 72 GPUs on one NVLink domain (DGX SuperPOD GB200 RA "Network
            // Fabrics": 18 compute trays, 9 switch trays)
            "gb200" => g(2_450.0, 186.0, 8.0, 900.0, 72),
            // A100 SXM 80GB: 312 dense BF16 TFLOPS (Narayanan et al. SC'21 Table 1:
            // 163 TFLOP/s is 52% of peak), 2.0 TB/s (datasheet), NVLink3 600 GB/s
            // bidirectional = 300 per direction; Selene's nodes of 8 on NVSwitch
            // (Korthikanti et al. §6)
            "a100" => g(312.0, 80.0, 2.0, 300.0, 8),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_resolve_by_name() {
        for n in PRESETS {
            assert_eq!(Gpu::preset(n).unwrap().name, *n);
        }
        let h = Gpu::preset("h100-sxm").unwrap();
        assert_eq!((h.bf16_tflops, h.nvlink_gbs, h.nvlink_domain), (989.0, 450.0, 8));
        assert_eq!(Gpu::preset("gb200").unwrap().nvlink_domain, 72);
        assert!(Gpu::preset("h300").is_none());
    }
}
