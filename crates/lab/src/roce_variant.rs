//! The user's RoCE configuration as a simulator variant, so a lint finding becomes a
//! measured consequence (`rdmalab compare --roce-config FILES…`, lab's job, calls
//! this).
//!
//! What carries over from the linted files into `sim::roce::net::RoceConfig`:
//!
//! | setting | from | rule when it fails |
//! |---|---|---|
//! | `pfc` | RDMA class lossless on every switch and NIC (no `pfc-not-enabled` / `dscp-tc-mismatch` error) | the run is lossy: drops, go-back-N |
//! | `ecn`, `red` | WRED green thresholds and drop probability of the lossless queue, ECN-capable ToS | no marking, DCQCN idle |
//! | `watchdog` | `PFC_WD` timing and action of the first watched port (with `POLL_INTERVAL`) | none: storms persist |
//! | `buffer_bytes` | `BUFFER_POOL|ingress_lossless_pool.size` | base value kept |
//! | `mtu` | RoCE active MTU: the largest IB MTU that fits the smallest port/NIC MTU (roce-config.md §2.2) | base value kept |
//!
//! Everything else (topology, workload, DCQCN profile) stays as the base config has it.

use diag::roce::rules::hop_qos;
use diag::roce::{LintReport, Parsed};
use serde::Serialize;
use sim::Time;
use sim::roce::dcqcn::Red;
use sim::roce::net::RoceConfig;
use sim::roce::pfc::{WdAction, WdConfig};

/// What was taken from the files, in words, for the comparison report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VariantNotes {
    /// PFC kept on.
    pub pfc: bool,
    /// ECN marking kept on.
    pub ecn: bool,
    /// A PFC watchdog configured.
    pub watchdog: bool,
    /// What was taken from which file.
    pub notes: Vec<String>,
}

/// RoCE active MTU for an Ethernet MTU: the largest of 4096/2048/1024/512/256 that
/// fits after RoCEv2 headers (Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 = 62
/// bytes, plus room for RETH/ImmDt 20): Ethernet 1500 → 1024, 4200 → 4096.
pub fn active_mtu(eth_mtu: u32) -> u32 {
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| m + 82 <= eth_mtu)
        .unwrap_or(256)
}

fn num(v: Option<&String>) -> Option<u64> {
    v.and_then(|s| s.trim().parse().ok())
}

/// Apply the linted configuration to `base`. `parsed` are the files the report was
/// made from (as [`diag::roce::lint_parsed`] took them).
pub fn to_sim_config(parsed: &[(&str, Parsed)], report: &LintReport, base: &RoceConfig) -> (RoceConfig, VariantNotes) {
    let mut cfg = base.clone();
    let mut notes = VariantNotes::default();
    let blocking = |r: &str| {
        report
            .findings
            .iter()
            .any(|f| f.rule == r && f.severity == diag::Severity::Error)
    };
    let assumed_lossy = report.findings.iter().any(|f| f.rule == "pfc-not-enabled");
    cfg.pfc.enabled = !(assumed_lossy || blocking("dscp-tc-mismatch"));
    notes.pfc = cfg.pfc.enabled;
    if !cfg.pfc.enabled {
        notes
            .notes
            .push("the RDMA class is not lossless end to end: simulated without PFC".into());
    }
    let dscp = report.rdma_dscps.first().copied().unwrap_or(26);
    let mut red: Vec<(u64, Red)> = Vec::new();
    let mut ecn_all = true;
    let mut min_mtu: Option<u32> = None;
    for (file, p) in parsed {
        match p {
            Parsed::ConfigDb(db) => {
                let first_port = db.table("PORT").map(|(k, _)| k.clone()).next().unwrap_or_default();
                let q = hop_qos(file, db, &first_port, dscp);
                let marks = q.wred.as_ref().is_some_and(|w| {
                    matches!(
                        w.3.as_str(),
                        "ecn_green" | "ecn_green_yellow" | "ecn_green_red" | "ecn_all"
                    )
                });
                match (&q.wred, marks) {
                    (Some((name, Some(kmin), Some(kmax), _)), true) => {
                        let pmax = db
                            .get("WRED_PROFILE", name)
                            .and_then(|w| num(w.get("green_drop_probability")))
                            .map_or(1.0, |p| p.min(100) as f64 / 100.0);
                        for (_, pf) in db.table("PORT") {
                            if let Some(speed) = num(pf.get("speed")) {
                                let bps = speed * 1_000_000;
                                if !red.iter().any(|(b, _)| *b == bps) {
                                    red.push((
                                        bps,
                                        Red {
                                            kmin: *kmin,
                                            kmax: *kmax,
                                            pmax,
                                        },
                                    ));
                                }
                            }
                        }
                        notes
                            .notes
                            .push(format!("{file}: ECN {name} Kmin {kmin} Kmax {kmax} Pmax {pmax}"));
                    }
                    _ => ecn_all = false,
                }
                for (_, pf) in db.table("PORT") {
                    if let Some(m) = num(pf.get("mtu")) {
                        min_mtu = Some(min_mtu.map_or(m as u32, |x| x.min(m as u32)));
                    }
                }
                if let Some(size) = db
                    .get("BUFFER_POOL", "ingress_lossless_pool")
                    .and_then(|p| num(p.get("size")))
                {
                    cfg.switch.buffer_bytes = size;
                    notes
                        .notes
                        .push(format!("{file}: shared buffer {size} B (ingress_lossless_pool)"));
                }
                if cfg.switch.watchdog.is_none() {
                    let poll = db
                        .get("PFC_WD", "GLOBAL")
                        .and_then(|g| num(g.get("POLL_INTERVAL")))
                        .unwrap_or(200);
                    if let Some((port, wd)) = db.table("PFC_WD").find(|(k, _)| k.as_str() != "GLOBAL") {
                        let action = match wd.get("action").map(String::as_str) {
                            Some("forward") => WdAction::Forward,
                            Some("alert") => WdAction::Alert,
                            _ => WdAction::Drop,
                        };
                        cfg.switch.watchdog = Some(WdConfig {
                            poll: Time::ms(poll),
                            detection: Time::ms(num(wd.get("detection_time")).unwrap_or(200)),
                            restoration: Time::ms(num(wd.get("restoration_time")).unwrap_or(200)),
                            action,
                        });
                        notes.notes.push(format!("{file}: PFC watchdog from PFC_WD|{port}"));
                    }
                }
            }
            Parsed::Sysfs(nics) => {
                for n in nics {
                    if let Some(m) = n.mtu {
                        min_mtu = Some(min_mtu.map_or(m, |x| x.min(m)));
                    }
                    if n.tos.is_some_and(|t| t & 3 == 0) {
                        ecn_all = false;
                    }
                }
            }
            Parsed::MlnxQos(_) => {}
        }
    }
    cfg.switch.ecn = ecn_all && !red.is_empty();
    if cfg.switch.ecn {
        red.sort_by_key(|(b, _)| *b);
        cfg.switch.red = red;
    } else {
        notes
            .notes
            .push("no ECN marking on the RDMA queue (or Not-ECT packets): simulated without ECN".into());
    }
    notes.ecn = cfg.switch.ecn;
    if !cfg.pfc.enabled {
        cfg.switch.watchdog = None;
    }
    notes.watchdog = cfg.switch.watchdog.is_some();
    if let Some(m) = min_mtu {
        cfg.nic.mtu = active_mtu(m);
        notes
            .notes
            .push(format!("RoCE active MTU {} (smallest Ethernet MTU {m})", cfg.nic.mtu));
    }
    (cfg, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_mtu_matches_the_mellanox_table() {
        // roce-config.md §2.2: Ethernet 1500 -> 1024, 4200 -> 4096.
        assert_eq!(active_mtu(1500), 1024);
        assert_eq!(active_mtu(4200), 4096);
        assert_eq!(active_mtu(9000), 4096);
    }
}
