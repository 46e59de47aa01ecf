//! The advisor: the InfiniBand-or-RoCE decision table with every row filled from
//! this run's measurements and the user's answers, a TCO for each fabric, and a
//! recommendation with its reasons.
//!
//! Rows follow the usual argument (mechanism, losslessness, stability, operations,
//! cost, isolation, scale, ecosystem); what the row says for *this* cluster comes from
//! the evidence, not from the argument.

use serde::{Deserialize, Serialize};

use crate::tco::{OpsInputs, PriceTable, Tco, Tech};

/// How well the team knows each technology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Skills {
    /// Runs InfiniBand today.
    Infiniband,
    /// Strong Ethernet/IP team, no InfiniBand experience.
    Ethernet,
    /// Both.
    Both,
    /// Neither in depth.
    Neither,
}

/// How much Ethernet the organisation already runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estate {
    None,
    Some,
    Large,
}

/// Budget pressure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Budget {
    Tight,
    Normal,
    Ample,
}

/// The user's answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    pub skills: Skills,
    pub ethernet_estate: Estate,
    pub budget: Budget,
    /// Sites the training job must span (more than one needs routing between sites).
    pub sites: u32,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            skills: Skills::Ethernet,
            ethernet_estate: Estate::Some,
            budget: Budget::Normal,
            sites: 1,
        }
    }
}

/// What kind of fabric a variant ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FabricKind {
    Infiniband,
    Rocev2,
    Ipoib,
    Rocev1,
}

/// Measured evidence for one variant of the comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: String,
    pub label: String,
    pub kind: Option<FabricKind>,
    /// Set when the variant could not run at all (RoCEv1 across routers), with why.
    pub refused: Option<String>,
    /// Ring all-reduce busbw at the largest size, GB/s per NIC.
    pub busbw_gbs: Option<f64>,
    /// The link-rate bound for that busbw, GB/s per NIC.
    pub busbw_bound_gbs: f64,
    /// Small-message latency percentiles during the collective, microseconds.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    /// Standard deviation of the small-message latency, microseconds.
    pub jitter_us: Option<f64>,
    pub drops: u64,
    pub retransmissions: u64,
    pub pause_time_us: f64,
    pub ecn_marks: u64,
    pub cnps: u64,
    pub deadlocks: u64,
    pub storms: u64,
    /// Lint/diagnostic errors found on the variant's configuration.
    pub config_errors: u64,
    /// Background TCP run beside the collectives (converged variants only).
    #[serde(default)]
    pub tcp: Option<TcpEvidence>,
}

/// What background TCP did to a converged variant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpEvidence {
    /// Offered load, fraction of line rate per NIC.
    pub load: f64,
    /// The headline busbw and probe p99 without TCP (`busbw_gbs`/`p99_us` are with it).
    pub quiet_busbw_gbs: Option<f64>,
    pub quiet_p99_us: Option<f64>,
    /// TCP's own drops and retransmissions on its lossy class.
    pub drops: u64,
    pub retransmissions: u64,
}

/// Which side a row favours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Favours {
    Infiniband,
    Rocev2,
    Neither,
}

/// One row of the decision table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub aspect: String,
    pub infiniband: String,
    pub rocev2: String,
    /// What this run measured, in one sentence.
    pub evidence: String,
    pub favours: Favours,
    /// Weight of the row given the user's answers (0–3).
    pub weight: u32,
}

/// The advisor's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub answers: Answers,
    pub table: Vec<Row>,
    pub tco: Vec<Tco>,
    pub recommendation: Favours,
    pub reasons: Vec<String>,
}

fn best(ev: &[Evidence], kind: FabricKind, pick: impl Fn(&Evidence) -> bool) -> Option<&Evidence> {
    ev.iter()
        .filter(|e| e.kind == Some(kind) && e.refused.is_none())
        .find(|e| pick(e))
}

fn f1(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.1}"))
}

/// Engineers needed to run a fabric of `endpoints` given the team's skills: a
/// baseline of one engineer per ~1000 endpoints, more when the team must learn the
/// technology, and RoCE's tuning burden (PFC/ECN/DCQCN on every hop) on top.
fn engineers(tech: Tech, skills: Skills, endpoints: usize) -> f64 {
    let base = (endpoints as f64 / 1000.0).max(0.25);
    let learn = match (tech, skills) {
        (Tech::InfiniBand, Skills::Ethernet | Skills::Neither) => 0.5,
        (Tech::Ethernet, Skills::Infiniband | Skills::Neither) => 0.5,
        _ => 0.0,
    };
    let tuning = if tech == Tech::Ethernet { 0.25 } else { 0.0 };
    base + learn + tuning
}

/// Build the advice from the run's evidence, the answers and the topology's TCO.
pub fn advise(answers: &Answers, evidence: &[Evidence], fabric: &fabric::Fabric, prices: &PriceTable) -> Advice {
    let ib = best(evidence, FabricKind::Infiniband, |_| true);
    let tuned = best(evidence, FabricKind::Rocev2, |e| e.id.contains("tuned"))
        .or_else(|| best(evidence, FabricKind::Rocev2, |_| true));
    let roce_all: Vec<&Evidence> = evidence
        .iter()
        .filter(|e| e.kind == Some(FabricKind::Rocev2) && e.refused.is_none())
        .collect();
    let roce_bad: Vec<&Evidence> = roce_all
        .iter()
        .copied()
        .filter(|e| e.drops > 0 || e.deadlocks > 0 || e.storms > 0)
        .collect();
    let endpoints = fabric.count(fabric::NodeKind::Ca);

    // Outage risk: a fabric whose misconfigured variants drop, deadlock or storm has a
    // higher chance of a fabric-caused outage; weight it by how well the team knows it.
    let roce_fragility = if roce_all.is_empty() {
        0.0
    } else {
        roce_bad.len() as f64 / roce_all.len() as f64
    };
    let skill_factor = |tech: Tech| match (tech, answers.skills) {
        (Tech::Ethernet, Skills::Ethernet | Skills::Both) => 1.0,
        (Tech::InfiniBand, Skills::Infiniband | Skills::Both) => 1.0,
        _ => 2.0,
    };
    // Baseline: 4 h/yr of fabric-caused downtime; RoCE adds up to 12 h/yr more in
    // proportion to the share of its variants that lost packets or deadlocked here.
    let ib_outage = 4.0 * skill_factor(Tech::InfiniBand);
    let eth_outage = (4.0 + 12.0 * roce_fragility) * skill_factor(Tech::Ethernet);
    let ib_tco = prices.tco(
        fabric,
        Tech::InfiniBand,
        &OpsInputs {
            engineers: engineers(Tech::InfiniBand, answers.skills, endpoints),
            outage_hours_year: ib_outage,
        },
    );
    let eth_tco = prices.tco(
        fabric,
        Tech::Ethernet,
        &OpsInputs {
            engineers: engineers(Tech::Ethernet, answers.skills, endpoints),
            outage_hours_year: eth_outage,
        },
    );

    let mut table = Vec::new();
    let perf_w = if answers.budget == Budget::Tight { 1 } else { 2 };
    // Mechanism / performance, at equal load: InfiniBand carries no background TCP,
    // so a converged variant's busbw is taken from its run without it.
    let quiet_busbw = |e: &Evidence| e.tcp.as_ref().and_then(|t| t.quiet_busbw_gbs).or(e.busbw_gbs);
    let (ibb, rb) = (ib.and_then(|e| e.busbw_gbs), tuned.and_then(quiet_busbw));
    let tcp_note = match tuned.and_then(|e| e.tcp.as_ref().map(|t| (t, e.busbw_gbs))) {
        Some((t, loaded)) => format!(
            " (without background TCP; {} GB/s with {:.0}% of line rate of it)",
            f1(loaded),
            t.load * 100.0
        ),
        None => String::new(),
    };
    let fav = match (ibb, rb) {
        (Some(a), Some(b)) if a > b * 1.03 => Favours::Infiniband,
        (Some(a), Some(b)) if b > a * 1.03 => Favours::Rocev2,
        _ => Favours::Neither,
    };
    table.push(Row {
        aspect: "Mechanism and bandwidth".into(),
        infiniband: "RDMA designed in from the physical layer; credit flow control; SM-computed routes".into(),
        rocev2: "IB transport in UDP/IP (port 4791); routed, ECMP-spread; needs PFC/ECN for losslessness".into(),
        evidence: format!("ring all-reduce busbw per NIC at the largest size: InfiniBand {} GB/s, tuned RoCEv2 {} GB/s{tcp_note} (bound {} GB/s)", f1(ibb), f1(rb), f1(ib.or(tuned).map(|e| e.busbw_bound_gbs))),
        favours: fav,
        weight: perf_w,
    });
    // Losslessness
    let ib_drops = ib.map_or(0, |e| e.drops);
    let worst = roce_bad.iter().max_by_key(|e| e.drops);
    table.push(Row {
        aspect: "Losslessness".into(),
        infiniband: "lossless by construction: a sender transmits only with credits".into(),
        rocev2: "lossless only when PFC, ECN/DCQCN, DSCP maps and buffers are right on every hop".into(),
        evidence: match worst {
            Some(w) => format!(
                "InfiniBand dropped {ib_drops} packets; RoCEv2 variant '{}' dropped {} and retransmitted {}",
                w.label, w.drops, w.retransmissions
            ),
            None => format!("InfiniBand dropped {ib_drops} packets; no RoCEv2 variant dropped"),
        },
        favours: if worst.is_some() && ib_drops == 0 {
            Favours::Infiniband
        } else {
            Favours::Neither
        },
        weight: 3,
    });
    // Stability / tail latency
    let (ip99, rp99) = (ib.and_then(|e| e.p99_us), tuned.and_then(|e| e.p99_us));
    let (ij, rj) = (ib.and_then(|e| e.jitter_us), tuned.and_then(|e| e.jitter_us));
    table.push(Row {
        aspect: "Stability (tail latency, jitter)".into(),
        infiniband: "no switch tuning; latency set by credits and routes".into(),
        rocev2: "tail depends on ECN thresholds, DCQCN parameters and PFC pauses".into(),
        evidence: format!(
            "small-message p99 during the collective: InfiniBand {} µs (σ {}), tuned RoCEv2 {} µs (σ {}); PFC pause time on tuned RoCEv2 {} µs",
            f1(ip99), f1(ij), f1(rp99), f1(rj), f1(tuned.map(|e| e.pause_time_us))
        ),
        favours: match (ip99, rp99) {
            (Some(a), Some(b)) if a < b * 0.9 => Favours::Infiniband,
            (Some(a), Some(b)) if b < a * 0.9 => Favours::Rocev2,
            _ => Favours::Neither,
        },
        weight: 2,
    });
    // Operations
    let deadlocks: u64 = roce_all.iter().map(|e| e.deadlocks + e.storms).sum();
    let cfg_err: u64 = roce_all.iter().map(|e| e.config_errors).sum();
    let ops_fav = match answers.skills {
        Skills::Infiniband => Favours::Infiniband,
        Skills::Ethernet => {
            if deadlocks > 0 {
                Favours::Neither
            } else {
                Favours::Rocev2
            }
        }
        Skills::Both | Skills::Neither => {
            if deadlocks > 0 || cfg_err > 0 {
                Favours::Infiniband
            } else {
                Favours::Neither
            }
        }
    };
    table.push(Row {
        aspect: "Operations".into(),
        infiniband: "one SM configures every switch; ibdiagnet/ibnetdiscover see the whole fabric".into(),
        rocev2: "configuration spread over every switch and NIC; no end-to-end RDMA diagnostics".into(),
        evidence: if roce_all.is_empty() {
            format!("no RoCEv2 variant was measured in this run; team skills: {:?}", answers.skills)
        } else {
            format!("RoCEv2 variants here: {deadlocks} deadlock/storm events, {cfg_err} configuration errors found by the linter; team skills: {:?}", answers.skills)
        },
        favours: ops_fav,
        weight: 2,
    });
    // Cost
    let cost_fav = if ib_tco.total_usd > eth_tco.total_usd * 1.05 {
        Favours::Rocev2
    } else if eth_tco.total_usd > ib_tco.total_usd * 1.05 {
        Favours::Infiniband
    } else {
        Favours::Neither
    };
    table.push(Row {
        aspect: "Cost (TCO)".into(),
        infiniband: "single-vendor switches, optics and software".into(),
        rocev2: "multi-vendor Ethernet; reuse of the existing estate and skills".into(),
        evidence: format!(
            "{:.0}-year TCO: InfiniBand ${:.2}M (capex ${:.2}M), Ethernet ${:.2}M (capex ${:.2}M)",
            prices.years,
            ib_tco.total_usd / 1e6,
            ib_tco.capex_usd / 1e6,
            eth_tco.total_usd / 1e6,
            eth_tco.capex_usd / 1e6
        ),
        favours: cost_fav,
        weight: match answers.budget {
            Budget::Tight => 3,
            Budget::Normal => 2,
            Budget::Ample => 1,
        },
    });
    // Isolation
    let misconfig = evidence
        .iter()
        .find(|e| e.id.contains("misconfig") && e.refused.is_none());
    table.push(Row {
        aspect: "Isolation".into(),
        infiniband: "a separate fabric: P_Keys, its own SM; storage/IP traffic elsewhere or over IPoIB".into(),
        rocev2: "converged with other traffic classes; isolation depends on DSCP/TC maps being right".into(),
        evidence: {
            let mut e = match misconfig {
                Some(m) => format!(
                    "one hop mapping the RDMA DSCP to a lossy class ('{}') dropped {} packets",
                    m.label, m.drops
                ),
                None => "no misconfigured variant was run".into(),
            };
            if let Some((t, v)) = tuned.and_then(|v| v.tcp.as_ref().map(|t| (t, v))) {
                e.push_str(&format!(
                    "; background TCP at {:.0}% of line rate on '{}' took its busbw from {} to {} GB/s and its probe p99 from {} to {} µs, and lost {} of its own packets on the lossy class while RDMA lost {}",
                    t.load * 100.0,
                    v.label,
                    f1(t.quiet_busbw_gbs),
                    f1(v.busbw_gbs),
                    t.quiet_p99_us.map_or("n/a".into(), |x| format!("{x:.2}")),
                    v.p99_us.map_or("n/a".into(), |x| format!("{x:.2}")),
                    t.drops,
                    v.drops
                ));
            }
            e
        },
        // A separate fabric only wins here when a converged one was shown to leak.
        favours: if misconfig.is_some_and(|m| m.drops > 0) {
            Favours::Infiniband
        } else {
            Favours::Neither
        },
        weight: 1,
    });
    // Scale / multi-site
    let v1 = evidence.iter().find(|e| e.kind == Some(FabricKind::Rocev1));
    table.push(Row {
        aspect: "Scale and reach".into(),
        infiniband: "one subnet up to ~48k LIDs; crossing sites needs IB routers or long-haul gear".into(),
        rocev2: "routed IP: spans pods and sites with ordinary routers; RoCEv1 stays in one L2 domain".into(),
        evidence: match v1.and_then(|e| e.refused.clone()) {
            Some(why) => format!("RoCEv1 could not run here: {why}; sites: {}", answers.sites),
            None => format!("sites: {}", answers.sites),
        },
        favours: if answers.sites > 1 {
            Favours::Rocev2
        } else {
            Favours::Neither
        },
        weight: if answers.sites > 1 { 3 } else { 1 },
    });
    // Ecosystem
    table.push(Row {
        aspect: "Ecosystem".into(),
        infiniband: "NVIDIA-dominated; SHARP in-network reduction; mature HPC tooling".into(),
        rocev2: "many switch vendors, SONiC, Ultra Ethernet roadmap; existing monitoring applies".into(),
        evidence: format!("existing Ethernet estate: {:?}", answers.ethernet_estate),
        favours: match answers.ethernet_estate {
            Estate::Large => Favours::Rocev2,
            Estate::Some => Favours::Neither,
            Estate::None => Favours::Neither,
        },
        weight: 1,
    });

    let score = |f: Favours| table.iter().filter(|r| r.favours == f).map(|r| r.weight).sum::<u32>();
    let (si, sr) = (score(Favours::Infiniband), score(Favours::Rocev2));
    let recommendation = if si > sr {
        Favours::Infiniband
    } else if sr > si {
        Favours::Rocev2
    } else {
        Favours::Neither
    };
    let mut reasons: Vec<String> = table
        .iter()
        .filter(|r| r.favours == recommendation && recommendation != Favours::Neither)
        .map(|r| format!("{} (weight {}): {}", r.aspect, r.weight, r.evidence))
        .collect();
    reasons.insert(0, format!("weighted score: InfiniBand {si}, RoCEv2 {sr}"));
    let measured = |k: FabricKind| evidence.iter().any(|e| e.kind == Some(k) && e.refused.is_none());
    for (k, name) in [(FabricKind::Infiniband, "InfiniBand"), (FabricKind::Rocev2, "RoCEv2")] {
        if !measured(k) {
            reasons.push(format!("caution: no {name} variant was measured in this run, so rows about it rest on your answers and the TCO alone"));
        }
    }
    if recommendation == Favours::Neither {
        reasons.push("the evidence and your answers do not separate the two; decide on supplier terms".into());
    }
    Advice {
        answers: answers.clone(),
        table,
        tco: vec![ib_tco, eth_tco],
        recommendation,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{RailParams, rail};

    fn ev(id: &str, kind: FabricKind, busbw: f64, drops: u64, deadlocks: u64) -> Evidence {
        Evidence {
            id: id.into(),
            label: id.into(),
            kind: Some(kind),
            busbw_gbs: Some(busbw),
            busbw_bound_gbs: 48.0,
            p99_us: Some(10.0),
            jitter_us: Some(1.0),
            drops,
            deadlocks,
            ..Default::default()
        }
    }

    #[test]
    fn rows_carry_the_measured_numbers_and_the_score_follows_the_evidence() {
        let f = rail(&RailParams {
            servers: 4,
            rails: 2,
            radix: 16,
            ..Default::default()
        })
        .unwrap();
        let e = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 45.5, 0, 0),
            ev("roce-misconfig", FabricKind::Rocev2, 20.0, 1234, 0),
            ev("roce-lossy", FabricKind::Rocev2, 12.0, 9999, 1),
        ];
        let a = Answers {
            skills: Skills::Infiniband,
            ..Default::default()
        };
        let adv = advise(&a, &e, &f, &PriceTable::default());
        assert_eq!(adv.table.len(), 8);
        let loss = adv.table.iter().find(|r| r.aspect == "Losslessness").unwrap();
        assert!(loss.evidence.contains("9999"), "{}", loss.evidence);
        assert_eq!(loss.favours, Favours::Infiniband);
        assert_eq!(adv.recommendation, Favours::Infiniband);
        // An Ethernet shop spanning sites on a tight budget, with clean RoCE runs, gets RoCE.
        let clean = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 46.0, 0, 0),
        ];
        let b = Answers {
            skills: Skills::Ethernet,
            ethernet_estate: Estate::Large,
            budget: Budget::Tight,
            sites: 2,
        };
        let adv = advise(&b, &clean, &f, &PriceTable::default());
        assert_eq!(adv.recommendation, Favours::Rocev2, "{:?}", adv.reasons);
        assert!(adv.tco[0].total_usd > 0.0 && adv.tco[1].total_usd > 0.0);
    }

    /// Background TCP on the converged side: bandwidth is compared at equal load
    /// (the run without TCP) and what TCP cost shows under isolation.
    #[test]
    fn background_tcp_is_compared_at_equal_load_and_shown_under_isolation() {
        let f = rail(&RailParams {
            servers: 4,
            rails: 2,
            radix: 16,
            ..Default::default()
        })
        .unwrap();
        let mut tuned = ev("roce-tuned", FabricKind::Rocev2, 41.0, 0, 0);
        tuned.tcp = Some(TcpEvidence {
            load: 0.1,
            quiet_busbw_gbs: Some(45.9),
            quiet_p99_us: Some(0.8),
            drops: 17,
            retransmissions: 20,
        });
        let e = vec![ev("ib", FabricKind::Infiniband, 46.0, 0, 0), tuned];
        let adv = advise(&Answers::default(), &e, &f, &PriceTable::default());
        let mech = adv
            .table
            .iter()
            .find(|r| r.aspect == "Mechanism and bandwidth")
            .unwrap();
        assert!(
            mech.evidence
                .contains("tuned RoCEv2 45.9 GB/s (without background TCP; 41.0 GB/s with 10%"),
            "{}",
            mech.evidence
        );
        // 46.0 vs 45.9 is within 3%: neither side wins on bandwidth at equal load.
        assert_eq!(mech.favours, Favours::Neither);
        let iso = adv.table.iter().find(|r| r.aspect == "Isolation").unwrap();
        assert!(
            iso.evidence.contains("from 45.9 to 41.0 GB/s") && iso.evidence.contains("lost 17 of its own packets"),
            "{}",
            iso.evidence
        );
    }
}
