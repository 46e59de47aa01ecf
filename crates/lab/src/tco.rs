//! Total cost of ownership: a bill of materials taken from the topology, priced
//! from a dated table whose every default carries its source (or is marked
//! unsourced), plus staffing, software, and the GPU-hours the fabric's failures
//! cost over the cluster's service life ([`FailureModel`]).
//!
//! Each default price is kept beside its citation in [`PriceTable::sources`]
//! (`[sources.<key>]` in the TOML that `rdmalab advise --show-prices` prints): the
//! source, its date, the source's own figure and how the table's number follows
//! from it. A price the searched public material did not give keeps its number
//! but is marked `unsourced`. A price the user changes no longer matches its
//! citation and counts as the user's own figure. What matters for the decision is
//! the ratio between the two fabrics on the same topology, and that the user can
//! put in their own quote.

use std::collections::BTreeMap;

use fabric::{Fabric, LinkRate, NodeKind};
use serde::{Deserialize, Deserializer, Serialize};

use crate::failure_cost::{FailureCost, FailureModel};

/// Cables up to this length are passive copper (DAC); longer ones are optical with a
/// transceiver at each end. 400G/800G DACs (100G/lane PAM4) reach about 3 m.
pub const COPPER_MAX_M: f64 = 3.0;

/// Unit prices (USD) and operating assumptions. Every field has a default and,
/// in [`PriceTable::sources`], the citation behind it or the mark `unsourced`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriceTable {
    /// InfiniBand switch price per port at 400G (NDR): $36,000 for a 64-port
    /// 400G switch at FS.com, August 2024 (tech-talk-cto cost sheet), / 64.
    pub ib_switch_port_400g: f64,
    /// Ethernet switch price per port at 400G (a 64×400G Spectrum/Tomahawk box). Unsourced.
    pub eth_switch_port_400g: f64,
    /// Adapter price at 400G (ConnectX-7 class; the same silicon runs IB or Ethernet). Unsourced.
    pub nic_400g: f64,
    /// Extra per adapter for InfiniBand (VPI firmware/licensing differences; 0 by default). Unsourced.
    pub ib_nic_premium: f64,
    /// Passive copper cable at 400G. Unsourced.
    pub dac_400g: f64,
    /// One 400G optical transceiver, InfiniBand (OSFP). Unsourced.
    pub ib_optic_400g: f64,
    /// One 400G optical transceiver, Ethernet (QSFP-DD/OSFP). Unsourced.
    pub eth_optic_400g: f64,
    /// Fibre per cable, fixed part. Unsourced.
    pub fibre_base: f64,
    /// Fibre per cable, per metre. Unsourced.
    pub fibre_per_m: f64,
    /// Fabric management software per endpoint per year (UFM-class). Unsourced.
    pub ib_software_per_endpoint_year: f64,
    /// Ethernet NOS support and telemetry per endpoint per year. Unsourced.
    pub eth_software_per_endpoint_year: f64,
    /// One network engineer per year: the BLS 2021 median pay of computer network
    /// architects, $120,520 (a wage: benefits and overhead not included).
    pub engineer_year: f64,
    /// Price scaling for other rates relative to 400G: cost ∝ (rate/400G)^exponent. Unsourced.
    pub rate_exponent: f64,
    /// Years of service to amortise over (the user's horizon, not a price).
    pub years: f64,
    /// The price of one GPU-hour, what an interruption's lost GPU-hours cost:
    /// RunPod Secure Cloud 8×H100 on demand, $2.79 per GPU-hour (April 2026).
    /// Read from `outage_hour_per_endpoint` too, its name in earlier tables (one
    /// endpoint per GPU).
    #[serde(alias = "outage_hour_per_endpoint")]
    pub gpu_hour: f64,
    /// Where each default comes from, by field name.
    #[serde(skip_serializing_if = "Sources::is_builtin")]
    pub sources: Sources,
}

/// The price table's keys, in the order the table declares them. A test checks
/// the list against the serialised table, so a new field cannot miss it.
pub const PRICE_KEYS: &[&str] = &[
    "ib_switch_port_400g",
    "eth_switch_port_400g",
    "nic_400g",
    "ib_nic_premium",
    "dac_400g",
    "ib_optic_400g",
    "eth_optic_400g",
    "fibre_base",
    "fibre_per_m",
    "ib_software_per_endpoint_year",
    "eth_software_per_endpoint_year",
    "engineer_year",
    "rate_exponent",
    "years",
    "gpu_hour",
];

/// Whether a price has a citation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceStatus {
    /// A public list price, retailer listing or published analysis, named with its date.
    Cited,
    /// No source found: the number is a rough estimate.
    Unsourced,
}

/// The citation behind one price, kept as data beside the number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSource {
    /// The table figure this entry supports; a table whose field differs holds the
    /// user's own figure, which this citation does not cover.
    pub value: f64,
    /// What the figure counts ("USD per 400G port").
    pub unit: String,
    /// Cited or unsourced.
    pub status: SourceStatus,
    /// Who published the figure (`cited` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When the source stated it (YYYY-MM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The source's own figure, as it states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
    /// How the table's number follows from the source's figure, or why there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The citations of a price table, by field name; a key that names no field is
/// refused naming it, and a `cited` entry must give its source, date and figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Sources(pub BTreeMap<String, PriceSource>);

impl Default for Sources {
    fn default() -> Self {
        Sources::builtin()
    }
}

impl<'de> Deserialize<'de> for Sources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let map = BTreeMap::<String, PriceSource>::deserialize(d)?;
        for (k, s) in &map {
            if !PRICE_KEYS.contains(&k.as_str()) {
                return Err(D::Error::unknown_field(k, PRICE_KEYS));
            }
            let given = |f: &Option<String>| f.as_deref().is_some_and(|x| !x.trim().is_empty());
            if s.status == SourceStatus::Cited && !(given(&s.source) && given(&s.date) && given(&s.figure)) {
                return Err(D::Error::custom(format!(
                    "sources.{k}: a cited price needs source, date and figure (or status = \"unsourced\")"
                )));
            }
        }
        Ok(Sources(map))
    }
}

const UNSOURCED_NOTE: &str = "no public list price, retailer listing or published analysis found for it in the searched material (2024-2026); a rough street price kept from the original table: put your own quote";

/// The tech-talk-cto cluster cost sheet ("H100 Freakonomics"), August 2024.
const SHEET_URL: &str = "https://docs.google.com/spreadsheets/d/1Ft3RbeZ-w43kYSiLfYc1vxO41mK5lmJpcPC9GOYHAWc";

impl Sources {
    /// The citations of the built-in defaults.
    pub fn builtin() -> Sources {
        let cited =
            |value: f64, unit: &str, source: &str, url: &str, date: &str, figure: &str, note: &str| PriceSource {
                value,
                unit: unit.into(),
                status: SourceStatus::Cited,
                source: Some(source.into()),
                url: Some(url.into()),
                date: Some(date.into()),
                figure: Some(figure.into()),
                note: Some(note.into()),
            };
        let unsourced = |value: f64, unit: &str| PriceSource {
            value,
            unit: unit.into(),
            status: SourceStatus::Unsourced,
            source: None,
            url: None,
            date: None,
            figure: None,
            note: Some(UNSOURCED_NOTE.into()),
        };
        let d = DEFAULTS;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, s: PriceSource| {
            m.insert(k.to_string(), s);
        };
        put(
            "ib_switch_port_400g",
            cited(
                d.ib_switch_port_400g,
                "USD per 400G port",
                "tech-talk-cto, \"H100 Freakonomics\" cluster cost sheet, citing the FS.com listing of a 64-port 400G InfiniBand switch (archived 2024-08-22)",
                SHEET_URL,
                "2024-08",
                "64 Port 400Gbps Infiniband Switch, is assumed to $36k; based on the FS.com variant, cheaper than the NVIDIA official variant (approx 50k)",
                "$36,000 / 64 ports = $562.50; NVIDIA's own listing (~$50,000) would give $781 per port",
            ),
        );
        put(
            "eth_switch_port_400g",
            unsourced(d.eth_switch_port_400g, "USD per 400G port"),
        );
        put("nic_400g", unsourced(d.nic_400g, "USD per 400G adapter"));
        put("ib_nic_premium", unsourced(d.ib_nic_premium, "USD per adapter"));
        put("dac_400g", unsourced(d.dac_400g, "USD per 400G copper cable"));
        put("ib_optic_400g", unsourced(d.ib_optic_400g, "USD per 400G transceiver"));
        put(
            "eth_optic_400g",
            unsourced(d.eth_optic_400g, "USD per 400G transceiver"),
        );
        put("fibre_base", unsourced(d.fibre_base, "USD per fibre cable"));
        put("fibre_per_m", unsourced(d.fibre_per_m, "USD per metre of fibre"));
        put(
            "ib_software_per_endpoint_year",
            unsourced(d.ib_software_per_endpoint_year, "USD per endpoint-year"),
        );
        put(
            "eth_software_per_endpoint_year",
            unsourced(d.eth_software_per_endpoint_year, "USD per endpoint-year"),
        );
        put(
            "engineer_year",
            cited(
                d.engineer_year,
                "USD per engineer-year",
                "U.S. Bureau of Labor Statistics, Occupational Outlook Handbook, computer and information technology occupations",
                "https://www.bls.gov/ooh/computer-and-information-technology/home.htm",
                "2021-05",
                "Computer Network Architects: 2021 median pay $120,520",
                "the median wage of the occupation closest to a fabric engineer; benefits and overhead are not included, so a loaded cost is higher",
            ),
        );
        put("rate_exponent", unsourced(d.rate_exponent, "exponent"));
        put("years", unsourced(d.years, "years (the user's horizon, not a price)"));
        put(
            "gpu_hour",
            cited(
                d.gpu_hour,
                "USD per GPU-hour",
                "Abhishek Patel, \"RunPod vs Vast.ai vs Lambda Labs: 8xH100 Training Economics (2026)\", techplained",
                "https://techplained.aptechsolutions.io/runpod-vs-vast-ai",
                "2026-04",
                "RunPod Secure Cloud 8xH100 at $2.79/hr/GPU ($22.32/hr total)",
                "on-demand rental of an 8×H100 node; Lambda reservations are $1.85/hr/GPU in the same article",
            ),
        );
        Sources(m)
    }

    /// Whether these are the built-in citations (then a scenario file leaves them out).
    pub fn is_builtin(&self) -> bool {
        *self == Sources::builtin()
    }
}

/// The built-in numbers (what [`PriceTable::default`] holds, sources aside).
struct Defaults {
    ib_switch_port_400g: f64,
    eth_switch_port_400g: f64,
    nic_400g: f64,
    ib_nic_premium: f64,
    dac_400g: f64,
    ib_optic_400g: f64,
    eth_optic_400g: f64,
    fibre_base: f64,
    fibre_per_m: f64,
    ib_software_per_endpoint_year: f64,
    eth_software_per_endpoint_year: f64,
    engineer_year: f64,
    rate_exponent: f64,
    years: f64,
    gpu_hour: f64,
}

const DEFAULTS: Defaults = Defaults {
    // $36,000 / 64 ports (tech-talk-cto sheet, FS.com listing, 2024-08)
    ib_switch_port_400g: 36_000.0 / 64.0,
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
    // BLS OOH, computer network architects, 2021 median pay
    engineer_year: 120_520.0,
    rate_exponent: 0.8,
    years: 4.0,
    // RunPod Secure Cloud 8×H100 on demand, April 2026 (techplained)
    gpu_hour: 2.79,
};

impl Default for PriceTable {
    fn default() -> Self {
        let d = DEFAULTS;
        PriceTable {
            ib_switch_port_400g: d.ib_switch_port_400g,
            eth_switch_port_400g: d.eth_switch_port_400g,
            nic_400g: d.nic_400g,
            ib_nic_premium: d.ib_nic_premium,
            dac_400g: d.dac_400g,
            ib_optic_400g: d.ib_optic_400g,
            eth_optic_400g: d.eth_optic_400g,
            fibre_base: d.fibre_base,
            fibre_per_m: d.fibre_per_m,
            ib_software_per_endpoint_year: d.ib_software_per_endpoint_year,
            eth_software_per_endpoint_year: d.eth_software_per_endpoint_year,
            engineer_year: d.engineer_year,
            rate_exponent: d.rate_exponent,
            years: d.years,
            gpu_hour: d.gpu_hour,
            sources: Sources::builtin(),
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
    /// The failure model that prices the fabric's interruptions in lost GPU-hours,
    /// one GPU per endpoint (`None`: not priced).
    pub failures: Option<FailureModel>,
}

/// The TCO of one fabric choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tco {
    pub tech: Tech,
    pub bom: Vec<BomLine>,
    pub capex_usd: f64,
    pub software_usd: f64,
    pub staffing_usd: f64,
    /// The failure model's cost over the service life (0 when not priced).
    pub outage_risk_usd: f64,
    pub total_usd: f64,
    pub years: f64,
    /// The failure model's figures (absent: interruptions not priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureCost>,
}

fn rate_gbps(r: LinkRate) -> f64 {
    r.data_bps() as f64 / 1e9
}

impl PriceTable {
    /// Read a price table from TOML; unknown keys, in the table or under
    /// `[sources]`, are errors naming the key so a typo is never ignored.
    pub fn from_toml(text: &str) -> Result<PriceTable, toml::de::Error> {
        toml::from_str(text)
    }

    /// The table as TOML that [`PriceTable::from_toml`] reads back (what
    /// `rdmalab advise --show-prices` prints): the prices, then `[sources.<key>]`
    /// with each price's citation, headed by a comment naming the unsourced ones.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            #[serde(flatten)]
            prices: &'a PriceTable,
            sources: &'a Sources,
        }
        let mut shown = self.clone();
        // the sources go last, once, whether or not they are the built-in ones
        shown.sources = Sources::builtin();
        let body = toml::to_string_pretty(&Shown {
            prices: &shown,
            sources: &self.sources,
        })?;
        let list = |v: Vec<&str>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        let unsourced = list(PRICE_KEYS.iter().copied().filter(|k| !self.is_sourced(k)).collect());
        Ok(format!(
            "# Prices in USD. Each [sources.<key>] gives the price's source, date and the source's own figure.\n\
             # unsourced (no citation, or your own figure): {unsourced}\n{body}"
        ))
    }

    /// The value of the field `key` (one of [`PRICE_KEYS`]).
    pub fn get(&self, key: &str) -> Option<f64> {
        Some(match key {
            "ib_switch_port_400g" => self.ib_switch_port_400g,
            "eth_switch_port_400g" => self.eth_switch_port_400g,
            "nic_400g" => self.nic_400g,
            "ib_nic_premium" => self.ib_nic_premium,
            "dac_400g" => self.dac_400g,
            "ib_optic_400g" => self.ib_optic_400g,
            "eth_optic_400g" => self.eth_optic_400g,
            "fibre_base" => self.fibre_base,
            "fibre_per_m" => self.fibre_per_m,
            "ib_software_per_endpoint_year" => self.ib_software_per_endpoint_year,
            "eth_software_per_endpoint_year" => self.eth_software_per_endpoint_year,
            "engineer_year" => self.engineer_year,
            "rate_exponent" => self.rate_exponent,
            "years" => self.years,
            "gpu_hour" => self.gpu_hour,
            _ => return None,
        })
    }

    /// Whether `key` holds the figure its `cited` source gives (a changed price is
    /// the user's own figure, which the citation does not cover).
    pub fn is_sourced(&self, key: &str) -> bool {
        match (self.get(key), self.sources.0.get(key)) {
            (Some(v), Some(s)) => s.status == SourceStatus::Cited && (v - s.value).abs() <= 1e-9 * v.abs().max(1.0),
            _ => false,
        }
    }

    /// The prices that decide the TCO of `fabric`: switch ports, adapters, software,
    /// engineers and the GPU-hour always; copper or optics and fibre when the
    /// fabric has such cables; the rate exponent when a link is not 400G. The
    /// service life is the user's horizon, not a price, and is left out.
    pub fn deciding_keys(&self, fabric: &Fabric) -> Vec<&'static str> {
        let mut k = vec![
            "ib_switch_port_400g",
            "eth_switch_port_400g",
            "nic_400g",
            "ib_nic_premium",
            "ib_software_per_endpoint_year",
            "eth_software_per_endpoint_year",
            "engineer_year",
            "gpu_hour",
        ];
        if fabric.links.iter().any(|l| l.length_m <= COPPER_MAX_M) {
            k.push("dac_400g");
        }
        if fabric.links.iter().any(|l| l.length_m > COPPER_MAX_M) {
            k.extend(["ib_optic_400g", "eth_optic_400g", "fibre_base", "fibre_per_m"]);
        }
        if fabric.links.iter().any(|l| rate_gbps(l.rate) != 400.0) {
            k.push("rate_exponent");
        }
        k
    }

    /// The deciding prices of `fabric` that are not sourced (empty: every price
    /// behind its TCO is cited).
    pub fn unsourced_for(&self, fabric: &Fabric) -> Vec<&'static str> {
        self.deciding_keys(fabric)
            .into_iter()
            .filter(|k| !self.is_sourced(k))
            .collect()
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
        let failure = ops
            .failures
            .as_ref()
            .and_then(|m| m.cost(tech, endpoints, self.gpu_hour));
        let outage = failure.as_ref().map_or(0.0, |f| f.usd_per_month * 12.0 * self.years);
        Tco {
            tech,
            bom,
            capex_usd: capex,
            software_usd: software,
            staffing_usd: staffing,
            outage_risk_usd: outage,
            total_usd: capex + software + staffing + outage,
            years: self.years,
            failure,
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
            failures: None,
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
        assert!((t.staffing_usd - 4.0 * 120_520.0).abs() < 1e-6);
        assert!(t.failure.is_none() && t.outage_risk_usd == 0.0);
    }

    #[test]
    fn ethernet_gear_is_cheaper_per_port_by_default_and_overrides_apply() {
        let f = rail(&RailParams::default()).unwrap();
        let ops = OpsInputs {
            engineers: 0.0,
            failures: None,
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
    #[test]
    fn price_table_round_trips_with_its_sources() {
        let mut p = PriceTable::default();
        let mut s = p.sources.0["nic_400g"].clone();
        s.value = 1999.0;
        s.status = SourceStatus::Cited;
        s.source = Some("a reseller".into());
        s.date = Some("2025-01".into());
        s.figure = Some("$1,999 each".into());
        p.sources.0.insert("nic_400g".into(), s);
        p.nic_400g = 1999.0;
        let text = p.to_toml().unwrap();
        assert!(text.contains("[sources.ib_switch_port_400g]"), "{text}");
        assert!(text.contains("status = \"unsourced\""), "{text}");
        assert!(text.contains("figure = \"$1,999 each\""), "{text}");
        let back = PriceTable::from_toml(&text).unwrap();
        assert_eq!(back, p);
        assert!(back.is_sourced("nic_400g") && back.is_sourced("gpu_hour"));
        // the default table round-trips too, and says which prices are unsourced
        let d = PriceTable::default().to_toml().unwrap();
        assert_eq!(PriceTable::from_toml(&d).unwrap(), PriceTable::default());
        let head = d.lines().nth(1).unwrap();
        assert!(
            head.contains("unsourced") && head.contains("nic_400g") && !head.contains("gpu_hour"),
            "{head}"
        );
    }

    #[test]
    fn an_old_style_price_file_still_loads() {
        // the table as `--show-prices` wrote it before sources and the GPU-hour key
        let old = "ib_switch_port_400g = 700.0\neth_switch_port_400g = 470.0\nnic_400g = 2200.0\n\
                   ib_nic_premium = 0.0\ndac_400g = 150.0\nib_optic_400g = 900.0\neth_optic_400g = 650.0\n\
                   fibre_base = 40.0\nfibre_per_m = 1.5\nib_software_per_endpoint_year = 120.0\n\
                   eth_software_per_endpoint_year = 60.0\nengineer_year = 220000.0\nrate_exponent = 0.8\n\
                   years = 4.0\noutage_hour_per_endpoint = 2.5\n";
        let p = PriceTable::from_toml(old).unwrap();
        assert_eq!(p.gpu_hour, 2.5);
        assert_eq!(p.ib_switch_port_400g, 700.0);
        assert_eq!(p.sources, Sources::builtin());
        // its figures are the user's own, not the cited ones
        assert!(!p.is_sourced("ib_switch_port_400g") && !p.is_sourced("gpu_hour"));
    }

    #[test]
    fn unknown_keys_are_refused_naming_them() {
        let e = PriceTable::from_toml("ib_swich_port_400g = 1.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("ib_swich_port_400g"), "{e}");
        let e = PriceTable::from_toml("[sources.nic_400gg]\nvalue = 1.0\nunit = \"USD\"\nstatus = \"unsourced\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nic_400gg"), "{e}");
        let e = PriceTable::from_toml("[sources.nic_400g]\nvalue = 1.0\nunit = \"USD\"\nstatus = \"cited\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sources.nic_400g") && e.contains("needs source"), "{e}");
        let e = PriceTable::from_toml("[sources.nic_400g]\nvalue = 1.0\nunit = \"USD\"\nstatus = \"guessed\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("guessed"), "{e}");
    }

    #[test]
    fn price_keys_name_every_field_and_every_default_has_an_entry() {
        let t: toml::Table = toml::from_str(&toml::to_string(&PriceTable::default()).unwrap()).unwrap();
        let keys: Vec<&str> = t.keys().map(String::as_str).collect();
        let mut want: Vec<&str> = PRICE_KEYS.to_vec();
        want.sort_unstable();
        assert_eq!(keys, want);
        let p = PriceTable::default();
        for k in PRICE_KEYS {
            let s = &p.sources.0[*k];
            assert_eq!(Some(s.value), p.get(k), "{k}");
            if s.status == SourceStatus::Cited {
                assert!(s.url.as_deref().is_some_and(|u| u.starts_with("https://")), "{k}");
            }
        }
        let cited: Vec<&str> = PRICE_KEYS.iter().copied().filter(|k| p.is_sourced(k)).collect();
        assert_eq!(cited, ["ib_switch_port_400g", "engineer_year", "gpu_hour"]);
    }

    #[test]
    fn the_deciding_prices_follow_the_fabric() {
        let f = rail(&RailParams::default()).unwrap();
        let p = PriceTable::default();
        let k = p.deciding_keys(&f);
        assert!(k.contains(&"nic_400g") && k.contains(&"gpu_hour") && !k.contains(&"years"));
        assert!(!k.contains(&"rate_exponent"), "every link of the default rail is 400G");
        let u = p.unsourced_for(&f);
        assert!(u.contains(&"nic_400g") && !u.contains(&"ib_switch_port_400g"), "{u:?}");
        // a table whose every deciding price is cited leaves nothing unsourced
        let mut q = p.clone();
        for key in k {
            let s = q.sources.0.get_mut(key).unwrap();
            s.status = SourceStatus::Cited;
            s.source.get_or_insert_with(|| "a quote".into());
            s.date.get_or_insert_with(|| "2025-01".into());
            s.figure.get_or_insert_with(|| "as quoted".into());
        }
        assert!(q.unsourced_for(&f).is_empty());
    }

    #[test]
    fn outage_risk_is_the_failure_models_cost_over_the_service_life() {
        let f = rail(&RailParams::default()).unwrap();
        let p = PriceTable::default();
        let ops = OpsInputs {
            engineers: 0.0,
            failures: Some(FailureModel::default()),
        };
        let t = p.tco(&f, Tech::Ethernet, &ops);
        let c = t.failure.as_ref().unwrap();
        assert_eq!(c.gpus, 128);
        assert!((t.outage_risk_usd - c.usd_per_month * 12.0 * 4.0).abs() < 1e-6);
        assert!((c.usd_per_month - c.lost_gpu_hours_per_month * 2.79).abs() < 1e-9);
        let j = serde_json::to_value(&t).unwrap();
        assert!(j["failure"]["lost_gpu_hours_per_month"].is_number(), "{j}");
        let none = p.tco(
            &f,
            Tech::Ethernet,
            &OpsInputs {
                engineers: 0.0,
                failures: None,
            },
        );
        assert!(serde_json::to_value(&none).unwrap().get("failure").is_none());
    }
}
