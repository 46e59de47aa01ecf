//! Total cost of ownership: a bill of materials taken from the topology, priced
//! from a table whose defaults are documented and overridable, plus staffing,
//! software and outage risk over the cluster's service life.
//!
//! Default prices are rough 2024–2025 street prices in US dollars for
//! NVIDIA/Mellanox-class gear (\[unverified\] — collected from public reseller
//! listings and vendor quotes reported in trade press; they move a lot, so every
//! figure can be overridden with a TOML price table). What matters for the
//! decision is the ratio between the two fabrics on the same topology, and that the
//! user can put in their own quote.

use std::collections::BTreeMap;

use fabric::{Fabric, LinkRate, NodeKind};
use serde::{Deserialize, Serialize};

/// Cables up to this length are passive copper (DAC); longer ones are optical with a
/// transceiver at each end. 400G/800G DACs (100G/lane PAM4) reach about 3 m.
pub const COPPER_MAX_M: f64 = 3.0;

/// Unit prices (USD) and operating assumptions. Every field has a documented default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriceTable {
    /// InfiniBand switch price per port at 400G (NDR; e.g. a 64-port QM9700 ≈ $45k).
    pub ib_switch_port_400g: f64,
    /// Ethernet switch price per port at 400G (e.g. a 64×400G Spectrum/Tomahawk 4 box ≈ $30k).
    pub eth_switch_port_400g: f64,
    /// Adapter price at 400G (ConnectX-7 class; the same silicon runs IB or Ethernet).
    pub nic_400g: f64,
    /// Extra per adapter for InfiniBand (VPI firmware/licensing differences; 0 by default).
    pub ib_nic_premium: f64,
    /// Passive copper cable at 400G.
    pub dac_400g: f64,
    /// One 400G optical transceiver, InfiniBand (OSFP).
    pub ib_optic_400g: f64,
    /// One 400G optical transceiver, Ethernet (QSFP-DD/OSFP).
    pub eth_optic_400g: f64,
    /// Fibre per cable, fixed part, plus per metre.
    pub fibre_base: f64,
    pub fibre_per_m: f64,
    /// Fabric management software per endpoint per year (IB: UFM-class; Ethernet: NOS
    /// support and telemetry).
    pub ib_software_per_endpoint_year: f64,
    pub eth_software_per_endpoint_year: f64,
    /// Loaded cost of one network engineer per year.
    pub engineer_year: f64,
    /// Price scaling for other rates relative to 400G: cost ∝ (rate/400G)^exponent.
    pub rate_exponent: f64,
    /// Years of service to amortise over.
    pub years: f64,
    /// What one hour of the whole cluster being down costs (GPU rental equivalent), per endpoint.
    pub outage_hour_per_endpoint: f64,
}

impl Default for PriceTable {
    fn default() -> Self {
        PriceTable {
            ib_switch_port_400g: 700.0,
            eth_switch_port_400g: 470.0,
            nic_400g: 2200.0,
            ib_nic_premium: 0.0,
            dac_400g: 150.0,
            ib_optic_400g: 900.0,
            eth_optic_400g: 650.0,
            fibre_base: 40.0,
            fibre_per_m: 1.5,
            ib_software_per_endpoint_year: 120.0,
            eth_software_per_endpoint_year: 60.0,
            engineer_year: 220_000.0,
            rate_exponent: 0.8,
            years: 4.0,
            // an H100 rents for roughly $2–3 per GPU-hour: one endpoint per GPU
            outage_hour_per_endpoint: 2.5,
        }
    }
}

/// Which fabric the bill is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tech {
    InfiniBand,
    Ethernet,
}

/// One line of the bill of materials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BomLine {
    pub item: String,
    pub qty: u64,
    pub unit_usd: f64,
    pub total_usd: f64,
}

/// Operating assumptions that come from the user's answers and the run's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpsInputs {
    /// Engineers needed to run this fabric (fractional FTE).
    pub engineers: f64,
    /// Expected hours per year the cluster is down because of the fabric.
    pub outage_hours_year: f64,
}

/// The TCO of one fabric choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tco {
    pub tech: Tech,
    pub bom: Vec<BomLine>,
    pub capex_usd: f64,
    pub software_usd: f64,
    pub staffing_usd: f64,
    pub outage_risk_usd: f64,
    pub total_usd: f64,
    pub years: f64,
}

fn rate_gbps(r: LinkRate) -> f64 {
    r.data_bps() as f64 / 1e9
}

impl PriceTable {
    /// Read a price table from TOML; unknown keys are errors so a typo is never ignored.
    pub fn from_toml(text: &str) -> Result<PriceTable, toml::de::Error> {
        toml::from_str(text)
    }

    /// The table as TOML that [`PriceTable::from_toml`] reads back (what
    /// `rdmalab advise --show-prices` prints).
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string_pretty(self)
    }

    fn scale(&self, gbps: f64) -> f64 {
        (gbps / 400.0).powf(self.rate_exponent)
    }

    /// The bill of materials and TCO for building `fabric`'s shape as `tech`.
    /// Port speeds are taken from the cables; the technology decides the price lines.
    pub fn tco(&self, fabric: &Fabric, tech: Tech, ops: &OpsInputs) -> Tco {
        // (item, unit) -> qty ; BTreeMap keeps the bill in a stable order
        let mut lines: BTreeMap<(String, u64), u64> = BTreeMap::new();
        let mut add = |item: String, unit: f64, qty: u64| {
            *lines.entry((item, unit.round() as u64)).or_insert(0) += qty;
        };
        let (tname, sw_port, optic) = match tech {
            Tech::InfiniBand => ("InfiniBand", self.ib_switch_port_400g, self.ib_optic_400g),
            Tech::Ethernet => ("Ethernet", self.eth_switch_port_400g, self.eth_optic_400g),
        };
        let mut endpoints = 0u64;
        for n in &fabric.nodes {
            // the fastest cable on a node sets its port speed class
            let g = n
                .port_nums()
                .filter_map(|p| n.ports[p as usize].link)
                .map(|l| rate_gbps(fabric.link(l).rate))
                .fold(0.0, f64::max);
            let g = if g == 0.0 { 400.0 } else { g };
            match n.kind {
                NodeKind::Switch => {
                    let ports = u64::from(n.num_ports());
                    let unit = sw_port * self.scale(g) * ports as f64;
                    add(format!("{tname} switch, {ports} × {g:.0}G"), unit, 1);
                }
                NodeKind::Ca => {
                    endpoints += 1;
                    let prem = if tech == Tech::InfiniBand {
                        self.ib_nic_premium
                    } else {
                        0.0
                    };
                    add(
                        format!("{tname} adapter {g:.0}G"),
                        self.nic_400g * self.scale(g) + prem,
                        1,
                    );
                }
                NodeKind::Router => add(format!("{tname} router {g:.0}G"), sw_port * self.scale(g) * 2.0, 1),
            }
        }
        for l in &fabric.links {
            let g = rate_gbps(l.rate);
            if l.length_m <= COPPER_MAX_M {
                add(
                    format!("copper cable {g:.0}G ≤{COPPER_MAX_M} m"),
                    self.dac_400g * self.scale(g),
                    1,
                );
            } else {
                // round up to the next 5 m for the fibre price
                let m = (l.length_m / 5.0).ceil() * 5.0;
                add(format!("{tname} optical transceiver {g:.0}G"), optic * self.scale(g), 2);
                add(format!("fibre {m:.0} m"), self.fibre_base + self.fibre_per_m * m, 1);
            }
        }
        let bom: Vec<BomLine> = lines
            .into_iter()
            .map(|((item, unit), qty)| BomLine {
                item,
                qty,
                unit_usd: unit as f64,
                total_usd: unit as f64 * qty as f64,
            })
            .collect();
        let capex: f64 = bom.iter().map(|b| b.total_usd).sum();
        let sw_year = match tech {
            Tech::InfiniBand => self.ib_software_per_endpoint_year,
            Tech::Ethernet => self.eth_software_per_endpoint_year,
        };
        let software = sw_year * endpoints as f64 * self.years;
        let staffing = ops.engineers * self.engineer_year * self.years;
        let outage = ops.outage_hours_year * self.outage_hour_per_endpoint * endpoints as f64 * self.years;
        Tco {
            tech,
            bom,
            capex_usd: capex,
            software_usd: software,
            staffing_usd: staffing,
            outage_risk_usd: outage,
            total_usd: capex + software + staffing + outage,
            years: self.years,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{RailParams, rail};

    #[test]
    fn price_table_toml_reads_back_as_the_same_table() {
        let p = PriceTable {
            years: 5.0,
            ..PriceTable::default()
        };
        let text = p.to_toml().unwrap();
        assert!(text.contains("years = 5.0"), "{text}");
        assert_eq!(PriceTable::from_toml(&text).unwrap(), p);
    }

    #[test]
    fn bom_counts_match_the_topology() {
        let f = rail(&RailParams::default()).unwrap();
        let p = PriceTable::default();
        let ops = OpsInputs {
            engineers: 1.0,
            outage_hours_year: 0.0,
        };
        let t = p.tco(&f, Tech::InfiniBand, &ops);
        let qty = |s: &str| t.bom.iter().filter(|b| b.item.contains(s)).map(|b| b.qty).sum::<u64>();
        assert_eq!(qty("adapter"), 128);
        assert_eq!(qty("switch"), f.count(NodeKind::Switch) as u64);
        let optical_links = f.links.iter().filter(|l| l.length_m > COPPER_MAX_M).count() as u64;
        assert_eq!(qty("transceiver"), 2 * optical_links);
        assert_eq!(qty("copper"), f.links.len() as u64 - optical_links);
        let sum: f64 = t.bom.iter().map(|b| b.total_usd).sum();
        assert!((t.capex_usd - sum).abs() < 1e-6);
        assert!((t.staffing_usd - 4.0 * 220_000.0).abs() < 1e-6);
    }

    #[test]
    fn ethernet_gear_is_cheaper_per_port_by_default_and_overrides_apply() {
        let f = rail(&RailParams::default()).unwrap();
        let ops = OpsInputs {
            engineers: 0.0,
            outage_hours_year: 0.0,
        };
        let p = PriceTable::default();
        let ib = p.tco(&f, Tech::InfiniBand, &ops);
        let eth = p.tco(&f, Tech::Ethernet, &ops);
        assert!(eth.capex_usd < ib.capex_usd);
        let q = PriceTable::from_toml(
            "ib_switch_port_400g = 100.0\nib_optic_400g = 100.0\nib_software_per_endpoint_year = 0.0",
        )
        .unwrap();
        assert!(q.tco(&f, Tech::InfiniBand, &ops).total_usd < eth.total_usd);
        assert!(PriceTable::from_toml("ib_swich_port_400g = 1.0").is_err());
    }
}
