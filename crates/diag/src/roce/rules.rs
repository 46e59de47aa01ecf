//! The RoCE lint rules (roce-config.md §5), applied to switches and NICs.
//!
//! Every switch file is one switch; every NIC file describes NICs attached to those
//! switches. The RDMA DSCP comes from the NICs' ToS (traffic_class /
//! default_roce_tos), else from the caller, else the NVIDIA default DSCP 26 (ToS 106,
//! roce-config.md §2.2) is *assumed* and findings that depend on it are warnings.
//! The CNP DSCP likewise: NIC `cnp_dscp`, else the caller, else 48 (recent firmware
//! default, roce-config.md §2.3, marked unverified there).
//!
//! One file because every rule walks the same per-hop QoS view (`hop_qos`: DSCP → TC →
//! PG/queue on each switch and NIC) and the rules are read side by side against
//! roce-config.md §5's table; the rule code is about 1,150 lines, the rest its tests.

use std::collections::{BTreeMap, BTreeSet};

use crate::finding::{Finding, Location, Severity};
use crate::roce::headroom::{self, Asic, HeadroomInput};
use crate::roce::nic::{MlnxQos, SysfsNic, Trust};
use crate::roce::sonic::{self, ConfigDb, Fields};

/// A lint rule: its id and why it matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, e.g. `pfc-not-enabled`.
    pub id: &'static str,
    /// One-line title.
    pub title: &'static str,
    /// Why it matters, with its source.
    pub why: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $title:literal, $why:literal;)*) => {
        $(#[doc = $title] pub const $name: Rule = Rule { id: $id, title: $title, why: $why };)*
        /// Every rule, in documentation order.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    PFC_NOT_ENABLED = "pfc-not-enabled", "PFC not enabled for the RDMA priority on a hop",
        "RoCE recovers from loss with go-back-N, so a lossy hop collapses RDMA bandwidth; the RDMA priority needs PFC and a lossless buffer on every NIC and switch hop (roce-config.md §5 #1, NVIDIA/nccl#378)";
    DSCP_TC_MISMATCH = "dscp-tc-mismatch", "DSCP to priority/TC mismatch between NIC and switch",
        "the NIC sends and honours PAUSE by its priority, the switch queues and pauses by its TC; if one DSCP lands in different classes PFC protects the wrong traffic (roce-config.md §1.3, §5 #2)";
    ECN_AFTER_PFC = "ecn-after-pfc", "ECN thresholds above the point where PFC fires",
        "DCQCN needs ECN marks to reach senders before PFC fires; if PFC triggers first, pauses spread congestion upstream instead of slowing the senders (roce-config.md §3.6)";
    ECN_NOT_MARKING = "ecn-not-marking", "no ECN marking for lossless traffic",
        "without ECN marking on the lossless queue (or with Not-ECT packets) DCQCN never gets a CNP and PFC alone handles congestion (roce-config.md §1.4, §5 #3)";
    HEADROOM_SHORT = "headroom-short", "PFC headroom below what speed, cable and MTU require",
        "bytes still in flight after XOFF (cable round trip, MTU, peer response time, cell overhead) land in headroom; too little and the lossless class drops (roce-config.md §3.2, sonic-swss buffer_headroom_mellanox.lua)";
    MTU_MISMATCH = "mtu-mismatch", "MTU mismatch",
        "frames above a port's MTU are dropped, and RoCE's active MTU is the minimum of both ends (roce-config.md §2.2, §5 #5)";
    PFCWD_OFF = "pfcwd-off", "PFC watchdog off",
        "a NIC or switch stuck sending PAUSE (a PFC storm) blocks the fabric hop by hop unless a watchdog breaks it (Guo et al., SIGCOMM 2016; roce-config.md §4.1-4.2)";
    CNP_CLASS = "cnp-class", "CNP priority unmapped, shared with data, or in a lossy queue",
        "CNPs carry DCQCN's congestion signal; dropped, or delayed behind the data they report on, they slow the control loop (roce-config.md §2.5, §5 #7)";
    DCQCN_OFF = "dcqcn-off", "DCQCN disabled on the RDMA priority",
        "with the notification point off no CNPs are generated, with the reaction point off CNPs do not slow the sender (roce-config.md §2.3)";
    LOSSLESS_SHARED = "lossless-shared", "lossless queue or PG shared with lossy traffic",
        "lossy traffic in a lossless PG or queue is paused with RDMA and eats its headroom; a PFC priority mapped to another queue pauses the wrong queue (roce-config.md §5 #8)";
    LOSSY_DSCP_IN_LOSSLESS_TC = "lossy-dscp-in-lossless-tc", "a lossy DSCP mapped into a lossless traffic class",
        "PFC pauses a priority as a whole (IEEE 802.1Qbb), so a DSCP other than RDMA's and the CNPs' that DSCP_TO_TC_MAP sends to a PFC-enabled TC is paused with RDMA, fills its PG headroom and queue, and its bursts send PAUSE that stops RDMA; SONiC's default map keeps the lossless TCs 3 and 4 to DSCP 3 and 4 alone (sonic-buildimage files/build_templates/qos_config.j2; roce-config.md §1.3, §5 #2, #8)";
    DANGLING_REF = "dangling-ref", "reference to a table or key that does not exist",
        "orchagent cannot apply an entry whose reference does not resolve, so the port keeps defaults (roce-config.md §1.1, §5 #12)";
    INVALID_VALUE = "invalid-value", "value outside its type",
        "a value outside its YANG type is rejected by the config loader or ignored, so the intended setting is not in force (sonic-yang-models)";
}

/// Where a DSCP the rules rely on came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DscpSource {
    /// Read from a NIC file.
    Nic(String),
    /// Given by the caller.
    Given,
    /// Not known; the NVIDIA/firmware default is assumed.
    Assumed,
}

/// What the linter knows about the traffic it protects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intent {
    /// DSCPs RDMA traffic uses.
    pub rdma_dscps: Vec<u8>,
    /// Where they came from.
    pub rdma_source: DscpSource,
    /// DSCP of CNPs.
    pub cnp_dscp: u8,
    /// Where it came from.
    pub cnp_source: DscpSource,
}

/// The NVIDIA/Cumulus RoCE DSCP (ToS 106 >> 2), roce-config.md §1.3, §2.2.
pub const DEFAULT_RDMA_DSCP: u8 = 26;
/// CNP DSCP of recent ConnectX firmware (roce-config.md §2.3 \[unverified\]).
pub const DEFAULT_CNP_DSCP: u8 = 48;

/// A switch file.
pub struct SwitchIn<'a> {
    /// The file name.
    pub file: &'a str,
    /// Its content.
    pub db: &'a ConfigDb,
}

/// All inputs of one lint run.
pub struct Inputs<'a> {
    /// Switch configurations.
    pub switches: Vec<SwitchIn<'a>>,
    /// NIC mlnx_qos outputs.
    pub qos: Vec<(&'a str, &'a MlnxQos)>,
    /// NIC sysfs records.
    pub sysfs: Vec<(&'a str, &'a SysfsNic)>,
    /// RDMA DSCP given by the caller.
    pub rdma_dscp: Option<u8>,
    /// CNP DSCP given by the caller.
    pub cnp_dscp: Option<u8>,
}

/// Decide the RDMA and CNP DSCPs.
pub fn intent(inp: &Inputs<'_>) -> Intent {
    let mut rdma: BTreeSet<u8> = BTreeSet::new();
    let mut rdma_file = None;
    for (f, n) in &inp.sysfs {
        if let Some(t) = n.tos {
            rdma.insert(t >> 2);
            rdma_file.get_or_insert_with(|| f.to_string());
        }
    }
    let (rdma_dscps, rdma_source) = match (rdma_file, inp.rdma_dscp) {
        (_, Some(d)) => (vec![d], DscpSource::Given),
        (Some(f), None) => (rdma.into_iter().collect(), DscpSource::Nic(f)),
        (None, None) => (vec![DEFAULT_RDMA_DSCP], DscpSource::Assumed),
    };
    let nic_cnp = inp
        .sysfs
        .iter()
        .find_map(|(f, n)| n.cnp_dscp.map(|d| (d, f.to_string())));
    let (cnp_dscp, cnp_source) = match (inp.cnp_dscp, nic_cnp) {
        (Some(d), _) => (d, DscpSource::Given),
        (None, Some((d, f))) => (d, DscpSource::Nic(f)),
        (None, None) => (DEFAULT_CNP_DSCP, DscpSource::Assumed),
    };
    Intent {
        rdma_dscps,
        rdma_source,
        cnp_dscp,
        cnp_source,
    }
}

fn src_note(s: &DscpSource, what: &str) -> String {
    match s {
        DscpSource::Nic(f) => format!("{what} from {f}"),
        DscpSource::Given => format!("{what} as given"),
        DscpSource::Assumed => {
            format!("{what} assumed (NVIDIA default; give a NIC dump or --rdma-dscp)")
        }
    }
}

struct Out<'o> {
    v: &'o mut Vec<Finding>,
}

impl Out<'_> {
    fn push(&mut self, rule: Rule, severity: Severity, location: Location, message: String, fix: impl Into<String>) {
        self.v.push(Finding {
            rule: rule.id,
            severity,
            location,
            message,
            why: rule.why,
            fix: fix.into(),
        });
    }
}

/// Run every rule.
pub fn run(inp: &Inputs<'_>) -> (Intent, Vec<Finding>) {
    let it = intent(inp);
    let mut v = Vec::new();
    let mut out = Out { v: &mut v };
    let mut switch_views = Vec::new();
    for sw in &inp.switches {
        let view = SwitchView::new(sw.file, sw.db, &mut out);
        view.lint(&it, &mut out);
        switch_views.push(view);
    }
    lint_nics(inp, &it, &switch_views, &mut out);
    (it, v)
}

// ---------------------------------------------------------------------------------
// Switch side

/// Per-port QoS settings from one PORT_QOS_MAP entry.
struct QosEntry<'a> {
    key: &'a str,
    ports: Vec<String>,
    fields: &'a Fields,
    pfc: Vec<u8>,
    dscp_map: Option<BTreeMap<u8, u8>>,
    /// The DSCP_TO_TC_MAP key `dscp_map` was read from.
    dscp_map_name: Option<&'a str>,
    /// The dscp map came from the `global` entry.
    dscp_global: bool,
    tc_to_pg: Option<BTreeMap<u8, u8>>,
    tc_to_queue: Option<BTreeMap<u8, u8>>,
    pfc_to_queue: Option<BTreeMap<u8, u8>>,
    pfc_to_pg: Option<BTreeMap<u8, u8>>,
}

impl QosEntry<'_> {
    fn tc_of(&self, dscp: u8) -> Option<u8> {
        self.dscp_map.as_ref().map(|m| m.get(&dscp).copied().unwrap_or(0))
    }
    fn queue_of_tc(&self, tc: u8) -> u8 {
        self.tc_to_queue
            .as_ref()
            .and_then(|m| m.get(&tc).copied())
            .unwrap_or(tc)
    }
    fn pg_of_pfc(&self, p: u8) -> u8 {
        self.pfc_to_pg.as_ref().and_then(|m| m.get(&p).copied()).unwrap_or(p)
    }
}

struct SwitchView<'a> {
    file: &'a str,
    db: &'a ConfigDb,
    ports: Vec<String>,
    qos: Vec<QosEntry<'a>>,
    /// (port, pg) → (BUFFER_PG key, profile name).
    pgs: BTreeMap<(String, u8), (&'a str, String)>,
    /// (port, queue) → QUEUE key.
    queues: BTreeMap<(String, u8), &'a str>,
    asic: Asic,
    /// The PORT table's names, for membership tests.
    port_set: BTreeSet<String>,
    /// Ports with a PFC_WD entry.
    wd_ports: BTreeSet<String>,
    /// Port → index of its PORT_QOS_MAP entry in `qos`.
    qos_of_port: BTreeMap<String, usize>,
}

fn num<T: std::str::FromStr>(f: &Fields, k: &str) -> Option<Result<T, String>> {
    f.get(k).map(|v| v.trim().parse::<T>().map_err(|_| v.clone()))
}

impl<'a> SwitchView<'a> {
    fn new(file: &'a str, db: &'a ConfigDb, out: &mut Out<'_>) -> SwitchView<'a> {
        for m in &db.malformed {
            out.push(
                INVALID_VALUE,
                Severity::Error,
                Location {
                    key: (!m.key.is_empty()).then(|| m.key.clone()),
                    ..Location::entry(file, &m.table, &m.key, m.field.as_deref())
                },
                m.what.clone(),
                "write the value as a JSON string, as CONFIG_DB stores it",
            );
        }
        let ports: Vec<String> = db.table("PORT").map(|(k, _)| k.clone()).collect();
        let meta = db.get("DEVICE_METADATA", "localhost");
        let asic = Asic::from_metadata(
            meta.and_then(|m| m.get("platform")).map_or("", String::as_str),
            meta.and_then(|m| m.get("hwsku")).map_or("", String::as_str),
        );
        let mut view = SwitchView {
            file,
            db,
            ports,
            qos: Vec::new(),
            pgs: BTreeMap::new(),
            queues: BTreeMap::new(),
            asic,
            port_set: BTreeSet::new(),
            wd_ports: BTreeSet::new(),
            qos_of_port: BTreeMap::new(),
        };
        view.port_set = view.ports.iter().cloned().collect();
        view.wd_ports = db
            .table("PFC_WD")
            .filter(|(k, _)| k.as_str() != "GLOBAL")
            .flat_map(|(k, _)| {
                sonic::split_key(k, false, &view.ports)
                    .map(|k| k.ports)
                    .unwrap_or_default()
            })
            .collect();
        view.check_refs(out);
        view.load_qos(out);
        for (i, q) in view.qos.iter().enumerate() {
            for p in &q.ports {
                view.qos_of_port.entry(p.clone()).or_insert(i);
            }
        }
        view.load_buffers(out);
        view
    }

    fn loc(&self, table: &str, key: &str, field: Option<&str>) -> Location {
        Location::entry(self.file, table, key, field)
    }

    /// Every reference field must resolve, in either style, to the right table.
    fn check_refs(&self, out: &mut Out<'_>) {
        const REFS: &[(&str, &str, &str)] = &[
            ("PORT_QOS_MAP", "dscp_to_tc_map", "DSCP_TO_TC_MAP"),
            ("PORT_QOS_MAP", "tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP"),
            ("PORT_QOS_MAP", "tc_to_queue_map", "TC_TO_QUEUE_MAP"),
            ("PORT_QOS_MAP", "pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE"),
            ("PORT_QOS_MAP", "pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"),
            ("PORT_QOS_MAP", "dot1p_to_tc_map", "DOT1P_TO_TC_MAP"),
            ("PORT_QOS_MAP", "tc_to_dscp_map", "TC_TO_DSCP_MAP"),
            ("PORT_QOS_MAP", "scheduler", "SCHEDULER"),
            ("BUFFER_PG", "profile", "BUFFER_PROFILE"),
            ("BUFFER_QUEUE", "profile", "BUFFER_PROFILE"),
            ("BUFFER_PROFILE", "pool", "BUFFER_POOL"),
            ("QUEUE", "scheduler", "SCHEDULER"),
            ("QUEUE", "wred_profile", "WRED_PROFILE"),
            ("BUFFER_PORT_INGRESS_PROFILE_LIST", "profile_list", "BUFFER_PROFILE"),
            ("BUFFER_PORT_EGRESS_PROFILE_LIST", "profile_list", "BUFFER_PROFILE"),
        ];
        for &(table, field, target) in REFS {
            for (key, fields) in self.db.table(table) {
                let Some(v) = fields.get(field) else { continue };
                for r in sonic::parse_ref_list(v) {
                    if let Some(t) = &r.table
                        && t != target
                    {
                        out.push(
                            DANGLING_REF,
                            Severity::Error,
                            self.loc(table, key, Some(field)),
                            format!("{v:?} points into table {t}, but {field} must name a {target} entry"),
                            format!("use \"{}\" (a {target} key)", r.name),
                        );
                        continue;
                    }
                    if self.db.get(target, &r.name).is_none() {
                        out.push(
                            DANGLING_REF,
                            Severity::Error,
                            self.loc(table, key, Some(field)),
                            format!(
                                "{field} {:?} does not exist: no {target}|{} in this file",
                                r.name, r.name
                            ),
                            format!("define {target}|{} or point {field} at an existing entry", r.name),
                        );
                    }
                }
            }
        }
        // Keys that name ports must name ports of this switch (when the PORT table is here).
        if self.ports.is_empty() {
            return;
        }
        for (table, indexed) in [
            ("PORT_QOS_MAP", false),
            ("BUFFER_PG", true),
            ("BUFFER_QUEUE", true),
            ("QUEUE", true),
            ("PFC_WD", false),
        ] {
            for (key, _) in self.db.table(table) {
                if key == "global" || key == "GLOBAL" {
                    continue;
                }
                let Ok(k) = sonic::split_key(key, indexed, &self.ports) else {
                    continue;
                };
                let unknown: Vec<&String> = k.ports.iter().filter(|p| !self.port_set.contains(*p)).collect();
                if !unknown.is_empty() {
                    out.push(
                        DANGLING_REF,
                        Severity::Warning,
                        self.loc(table, key, None),
                        format!("names ports not in the PORT table: {}", join(&unknown)),
                        "fix the port name or add the port",
                    );
                }
            }
        }
    }

    /// Resolve a reference quietly (check_refs already reported failures).
    fn resolve(&self, target: &str, v: Option<&String>) -> Option<(&'a str, &'a Fields)> {
        let r = sonic::parse_ref(v?)?;
        if r.table.as_deref().is_some_and(|t| t != target) {
            return None;
        }
        let (k, f) = self.db.tables.get(target)?.get_key_value(&r.name)?;
        Some((k.as_str(), f))
    }

    fn load_map(
        &self,
        entry: &Fields,
        field: &str,
        target: &str,
        max_to: u8,
        out: &mut Out<'_>,
    ) -> Option<BTreeMap<u8, u8>> {
        let (name, fields) = self.resolve(target, entry.get(field))?;
        let max_from = if target == "DSCP_TO_TC_MAP" { 63 } else { 7 };
        match sonic::parse_u8_map(fields, max_from, max_to) {
            Ok(m) => Some(m),
            Err(e) => {
                out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc(target, name, None),
                    e,
                    format!(
                        "map {} numbers to {}",
                        if max_from == 63 { "DSCP 0..63" } else { "0..7" },
                        "0..7"
                    ),
                );
                None
            }
        }
    }

    fn load_qos(&mut self, out: &mut Out<'_>) {
        let db = self.db;
        let global = db.get("PORT_QOS_MAP", "global");
        let global_dscp = global.and_then(|g| self.load_map(g, "dscp_to_tc_map", "DSCP_TO_TC_MAP", 7, out));
        let global_name = global.and_then(|g| self.resolve("DSCP_TO_TC_MAP", g.get("dscp_to_tc_map")));
        for (key, fields) in db.table("PORT_QOS_MAP") {
            if key == "global" {
                continue;
            }
            let ports = match sonic::split_key(key, false, &self.ports) {
                Ok(k) => k.ports,
                Err(e) => {
                    out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PORT_QOS_MAP", key, None),
                        e.0,
                        "use Ethernet0, Ethernet0,Ethernet4 or Ethernet0-8",
                    );
                    continue;
                }
            };
            let pfc = match fields.get("pfc_enable").map(|v| sonic::parse_prio_list(v)) {
                None => Vec::new(),
                Some(Ok(p)) => p,
                Some(Err(e)) => {
                    out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PORT_QOS_MAP", key, Some("pfc_enable")),
                        e,
                        "list priorities 0..7 separated by commas, e.g. \"3,4\"",
                    );
                    Vec::new()
                }
            };
            let own = self.load_map(fields, "dscp_to_tc_map", "DSCP_TO_TC_MAP", 7, out);
            let dscp_global = own.is_none() && !fields.contains_key("dscp_to_tc_map") && global_dscp.is_some();
            let (dscp_map, dscp_map_name) = if fields.contains_key("dscp_to_tc_map") {
                (
                    own,
                    self.resolve("DSCP_TO_TC_MAP", fields.get("dscp_to_tc_map"))
                        .map(|(n, _)| n),
                )
            } else {
                (global_dscp.clone(), global_name.map(|(n, _)| n))
            };
            let e = QosEntry {
                key,
                ports,
                fields,
                pfc,
                dscp_map,
                dscp_map_name,
                dscp_global,
                tc_to_pg: self.load_map(fields, "tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", 7, out),
                tc_to_queue: self.load_map(fields, "tc_to_queue_map", "TC_TO_QUEUE_MAP", 7, out),
                pfc_to_queue: self.load_map(fields, "pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE", 7, out),
                pfc_to_pg: self.load_map(fields, "pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", 7, out),
            };
            self.qos.push(e);
        }
    }

    fn load_buffers(&mut self, out: &mut Out<'_>) {
        let db = self.db;
        for (table, is_pg) in [("BUFFER_PG", true), ("QUEUE", false)] {
            for (key, fields) in db.table(table) {
                let k = match sonic::split_key(key, true, &self.ports) {
                    Ok(k) => k,
                    Err(e) => {
                        out.push(
                            INVALID_VALUE,
                            Severity::Error,
                            self.loc(table, key, None),
                            e.0,
                            "use <port>|<id> or <port>|<lo>-<hi>",
                        );
                        continue;
                    }
                };
                for p in &k.ports {
                    for &id in &k.ids {
                        if is_pg {
                            if let Some(r) = fields.get("profile").and_then(|v| sonic::parse_ref(v)) {
                                self.pgs.insert((p.clone(), id), (key.as_str(), r.name));
                            }
                        } else {
                            self.queues.insert((p.clone(), id), key.as_str());
                        }
                    }
                }
            }
        }
    }

    fn port(&self, p: &str) -> Option<&'a Fields> {
        self.db.get("PORT", p)
    }

    fn admin_down(&self, p: &str) -> bool {
        self.port(p)
            .and_then(|f| f.get("admin_status"))
            .is_some_and(|s| s == "down")
    }

    fn cable_m(&self, p: &str) -> Option<Result<f64, String>> {
        let v = self.db.table("CABLE_LENGTH").find_map(|(_, f)| f.get(p))?;
        Some(v.trim().trim_end_matches('m').parse::<f64>().map_err(|_| v.clone()))
    }

    fn lint(&self, it: &Intent, out: &mut Out<'_>) {
        for q in &self.qos {
            self.lint_rdma_class(q, it, out);
            self.lint_cnp(q, it, out);
            self.lint_sharing(q, out);
            self.lint_watchdog_port(q, out);
            self.lint_ecn(q, out);
            self.lint_cable(q, out);
        }
        self.lint_lossy_dscp(it, out);
        self.lint_pg_buffers(out);
        self.lint_watchdog_global(out);
        self.lint_mtu(out);
    }

    fn lint_rdma_class(&self, q: &QosEntry<'_>, it: &Intent, out: &mut Out<'_>) {
        let sev = if it.rdma_source == DscpSource::Assumed {
            Severity::Warning
        } else {
            Severity::Error
        };
        let field = if q.dscp_global {
            "dscp_to_tc_map (global)"
        } else {
            "dscp_to_tc_map"
        };
        let Some(map) = &q.dscp_map else {
            // A map that is named but does not load (dangling or invalid), here or in the
            // `global` entry, is reported by dangling-ref / invalid-value.
            let global_named = self
                .db
                .get("PORT_QOS_MAP", "global")
                .is_some_and(|g| g.contains_key("dscp_to_tc_map"));
            if !q.fields.contains_key("dscp_to_tc_map")
                && !global_named
                && !q.fields.contains_key("dot1p_to_tc_map")
                && !q.pfc.is_empty()
                && !q.pfc.contains(&0)
            {
                out.push(
                    PFC_NOT_ENABLED,
                    sev,
                    self.loc("PORT_QOS_MAP", q.key, Some("dscp_to_tc_map")),
                    format!(
                        "no DSCP or dot1p map: all traffic lands in TC 0, but PFC is enabled only on {}",
                        list(&q.pfc)
                    ),
                    "set dscp_to_tc_map to a map that sends the RDMA DSCP to a PFC-enabled TC",
                );
            }
            return;
        };
        for &d in &it.rdma_dscps {
            let tc = map.get(&d).copied().unwrap_or(0);
            if !q.pfc.contains(&tc) {
                let lossless: Vec<u8> = (0..64u8)
                    .filter(|x| q.pfc.contains(&map.get(x).copied().unwrap_or(0)))
                    .collect();
                out.push(
                    PFC_NOT_ENABLED,
                    sev,
                    self.loc("PORT_QOS_MAP", q.key, Some(field)),
                    format!(
                        "RDMA DSCP {d} ({}) maps to TC {tc}, which is lossy: pfc_enable is {:?}; the only DSCPs that reach a lossless TC are {}",
                        src_note(&it.rdma_source, "DSCP"),
                        q.fields.get("pfc_enable").map_or("", String::as_str),
                        if lossless.is_empty() { "none".to_string() } else { list(&lossless) }
                    ),
                    format!("map DSCP {d} to a PFC-enabled TC (e.g. \"{d}\": \"3\") or add TC {tc} to pfc_enable"),
                );
            }
        }
    }

    /// A DSCP other than the RDMA DSCPs and the CNP DSCP that DSCP_TO_TC_MAP sends to a
    /// PFC-enabled TC (roce-config.md §1.3, §5 #2 and #8). Primary source: SONiC's
    /// default `DSCP_TO_TC_MAP|AZURE` (sonic-buildimage `files/build_templates/qos_config.j2`)
    /// gives the lossless TCs 3 and 4 only DSCP 3 and 4 and sends every other DSCP to a
    /// lossy TC; PFC (IEEE 802.1Qbb) pauses a priority as a whole, so other traffic in
    /// that TC is paused with RDMA, takes its PG headroom and queue, and its bursts pause
    /// RDMA. DSCPs the map does not list go to TC 0 (as `tc_of` reads them).
    ///
    /// An entry whose RDMA class is itself lossy is left to `pfc-not-enabled`, which
    /// already names the DSCPs that do reach a lossless TC. A lossless TC that carries no
    /// RDMA DSCP (a second lossless class, such as SONiC's TC 4 or the DualToR tunnel
    /// priorities 2 and 6 of roce-config.md §1.2) is a warning: without that class's NIC
    /// dump the linter cannot tell a second RDMA class from lossy traffic. One finding per
    /// map, TC and DSCP set, naming every port it applies to.
    fn lint_lossy_dscp(&self, it: &Intent, out: &mut Out<'_>) {
        let rdma_sev = if it.rdma_source == DscpSource::Assumed {
            Severity::Warning
        } else {
            Severity::Error
        };
        struct Group<'q> {
            entry_key: &'q str,
            ports: Vec<String>,
        }
        // (map, via global, TC, pfc_enable, leaked DSCPs, RDMA DSCPs in the TC) -> ports.
        type GroupKey<'q> = (&'q str, bool, u8, Vec<u8>, Vec<u8>, Vec<u8>);
        let mut groups: BTreeMap<GroupKey<'_>, Group<'_>> = BTreeMap::new();
        for q in &self.qos {
            let (Some(map), Some(name)) = (&q.dscp_map, q.dscp_map_name) else {
                continue;
            };
            let tc_of = |d: u8| map.get(&d).copied().unwrap_or(0);
            if !it.rdma_dscps.iter().any(|&d| q.pfc.contains(&tc_of(d))) {
                continue;
            }
            for &tc in &q.pfc {
                let leaked: Vec<u8> = (0..64u8)
                    .filter(|&d| tc_of(d) == tc && d != it.cnp_dscp && !it.rdma_dscps.contains(&d))
                    .collect();
                if leaked.is_empty() {
                    continue;
                }
                let rdma_in: Vec<u8> = it.rdma_dscps.iter().copied().filter(|&d| tc_of(d) == tc).collect();
                let g = groups
                    .entry((name, q.dscp_global, tc, q.pfc.clone(), leaked, rdma_in))
                    .or_insert_with(|| Group {
                        entry_key: q.key,
                        ports: Vec::new(),
                    });
                g.ports.extend(q.ports.iter().cloned());
            }
        }
        for ((name, global, tc, pfc, leaked, rdma_in), g) in groups {
            let map = self.db.get("DSCP_TO_TC_MAP", name);
            let listed: Vec<u8> = leaked
                .iter()
                .copied()
                .filter(|d| map.is_some_and(|m| m.contains_key(&d.to_string())))
                .collect();
            let unlisted = leaked.len() - listed.len();
            let loc = match listed.first() {
                Some(d) => self.loc("DSCP_TO_TC_MAP", name, Some(&d.to_string())),
                None => self.loc("PORT_QOS_MAP", g.entry_key, Some("dscp_to_tc_map")),
            };
            let what = format!(
                "DSCP {}{} map{} to TC {tc} in DSCP_TO_TC_MAP|{name}{}, and TC {tc} is lossless (pfc_enable {}) on {}",
                ranges(&leaked),
                if unlisted > 0 {
                    format!(" ({unlisted} of them not in the map, which sends them to TC 0)")
                } else {
                    String::new()
                },
                if leaked.len() == 1 { "s" } else { "" },
                if global { " (PORT_QOS_MAP|global)" } else { "" },
                list(&pfc),
                join(&g.ports),
            );
            let lossy_tc = (0..8u8).find(|t| !pfc.contains(t));
            let fix = match lossy_tc {
                Some(t) => format!(
                    "map DSCP {} to a lossy TC (e.g. \"{}\": \"{t}\") so only RDMA traffic is lossless",
                    ranges(&leaked),
                    leaked[0]
                ),
                None => "leave at least one TC lossy and map every non-RDMA DSCP to it".to_string(),
            };
            if rdma_in.is_empty() {
                out.push(
                    LOSSY_DSCP_IN_LOSSLESS_TC,
                    Severity::Warning,
                    loc,
                    format!(
                        "{what}, where it carries no RDMA DSCP ({}): that traffic is paused instead of dropped, takes lossless headroom and spreads PAUSE; if it is a second RDMA class, give its NIC dump",
                        src_note(&it.rdma_source, &format!("RDMA DSCP {}", list(&it.rdma_dscps)))
                    ),
                    fix,
                );
            } else {
                out.push(
                    LOSSY_DSCP_IN_LOSSLESS_TC,
                    rdma_sev,
                    loc,
                    format!(
                        "{what}, where it carries RDMA DSCP {} ({}; CNP DSCP {}): that traffic is paused with RDMA, takes its headroom, and its bursts pause RDMA",
                        list(&rdma_in),
                        src_note(&it.rdma_source, "DSCP"),
                        it.cnp_dscp
                    ),
                    fix,
                );
            }
        }
    }

    fn scheduler_of(&self, port: &str, queue: u8) -> Option<(&'a str, &'a Fields)> {
        let qkey = self.queues.get(&(port.to_string(), queue))?;
        let qf = self.db.get("QUEUE", qkey)?;
        self.resolve("SCHEDULER", qf.get("scheduler"))
    }

    fn lint_cnp(&self, q: &QosEntry<'_>, it: &Intent, out: &mut Out<'_>) {
        let Some(map) = &q.dscp_map else { return };
        if q.pfc.is_empty() {
            return;
        }
        let c = it.cnp_dscp;
        let loc = self.loc("PORT_QOS_MAP", q.key, Some("dscp_to_tc_map"));
        let note = src_note(&it.cnp_source, "CNP DSCP");
        let tc = match map.get(&c) {
            Some(&tc) => tc,
            None => {
                out.push(
                    CNP_CLASS,
                    Severity::Warning,
                    loc.clone(),
                    format!("CNP DSCP {c} ({note}) is not in the DSCP map and falls to the default TC 0"),
                    format!("map DSCP {c} to its own TC with a strict-priority queue"),
                );
                0
            }
        };
        // Only a lossless RDMA class makes "CNP behind data" the issue; a lossy one is
        // reported by pfc-not-enabled and the CNP queue is judged below.
        let rdma_tcs: BTreeSet<u8> = it
            .rdma_dscps
            .iter()
            .map(|d| map.get(d).copied().unwrap_or(0))
            .filter(|t| q.pfc.contains(t))
            .collect();
        if rdma_tcs.contains(&tc) {
            out.push(
                CNP_CLASS,
                Severity::Warning,
                loc,
                format!(
                    "CNP DSCP {c} ({note}) shares TC {tc} with RDMA data: CNPs wait behind the data they report on"
                ),
                "give CNPs their own TC (NVIDIA: DSCP 48 -> TC 6, strict priority)",
            );
            return;
        }
        if q.pfc.contains(&tc) {
            return;
        }
        let queue = q.queue_of_tc(tc);
        // Every port of the entry: the scheduler is bound per port and queue. A QUEUE
        // entry whose scheduler reference does not resolve is dangling-ref's finding.
        let mut weak: BTreeMap<String, Vec<&String>> = BTreeMap::new();
        for port in &q.ports {
            let dangling = self
                .queues
                .get(&(port.clone(), queue))
                .and_then(|k| self.db.get("QUEUE", k))
                .and_then(|f| f.get("scheduler"))
                .is_some_and(|v| self.resolve("SCHEDULER", Some(v)).is_none());
            if dangling {
                continue;
            }
            let sched = self.scheduler_of(port, queue);
            let strict = sched.is_some_and(|(_, f)| f.get("type").is_some_and(|t| t.eq_ignore_ascii_case("STRICT")));
            if !strict {
                let how = match sched {
                    Some((name, f)) => format!(
                        "scheduler {name} ({} weight {})",
                        f.get("type").map_or("?", String::as_str),
                        f.get("weight").map_or("?", String::as_str)
                    ),
                    None => "no scheduler entry".to_string(),
                };
                weak.entry(how).or_default().push(port);
            }
        }
        for (how, ports) in weak {
            out.push(
                CNP_CLASS,
                Severity::Warning,
                loc.clone(),
                format!("CNP DSCP {c} ({note}) maps to TC {tc} / queue {queue}: lossy and not strict on {} ({how}), so CNPs can be dropped or starved", join(&ports)),
                format!("make queue {queue} STRICT (or map DSCP {c} to a strict-priority queue)"),
            );
        }
    }

    fn lint_sharing(&self, q: &QosEntry<'_>, out: &mut Out<'_>) {
        if q.pfc.is_empty() {
            return;
        }
        let used: BTreeSet<u8> = match &q.dscp_map {
            Some(m) => {
                let mut s: BTreeSet<u8> = m.values().copied().collect();
                if m.len() < 64 {
                    s.insert(0);
                }
                s
            }
            None => [0u8].into_iter().collect(),
        };
        if let Some(pgmap) = &q.tc_to_pg {
            let lossless_pgs: BTreeSet<u8> = q.pfc.iter().filter_map(|p| pgmap.get(p).copied()).collect();
            for &t in used.iter().filter(|t| !q.pfc.contains(t)) {
                if let Some(pg) = pgmap.get(&t).filter(|pg| lossless_pgs.contains(pg)) {
                    out.push(
                        LOSSLESS_SHARED,
                        Severity::Error,
                        self.loc("PORT_QOS_MAP", q.key, Some("tc_to_pg_map")),
                        format!(
                            "lossy TC {t} maps to PG {pg}, which holds lossless TC(s) {}",
                            list(&q.pfc)
                        ),
                        format!("map TC {t} to a lossy PG (e.g. PG 0)"),
                    );
                }
            }
        }
        let lossless_q: BTreeSet<u8> = q.pfc.iter().map(|&p| q.queue_of_tc(p)).collect();
        for &t in used.iter().filter(|t| !q.pfc.contains(t)) {
            let qu = q.queue_of_tc(t);
            if lossless_q.contains(&qu) {
                out.push(
                    LOSSLESS_SHARED,
                    Severity::Error,
                    self.loc("PORT_QOS_MAP", q.key, Some("tc_to_queue_map")),
                    format!("lossy TC {t} maps to queue {qu}, a lossless queue"),
                    format!("map TC {t} to a lossy queue"),
                );
            }
        }
        for &p in &q.pfc {
            let pq = q.pfc_to_queue.as_ref().and_then(|m| m.get(&p).copied()).unwrap_or(p);
            let tq = q.queue_of_tc(p);
            if pq != tq {
                out.push(
                    LOSSLESS_SHARED,
                    Severity::Error,
                    self.loc("PORT_QOS_MAP", q.key, Some("pfc_to_queue_map")),
                    format!("PFC priority {p} pauses queue {pq}, but TC {p} traffic is in queue {tq}"),
                    format!("map PFC priority {p} to queue {tq}"),
                );
            }
        }
    }

    fn lint_watchdog_port(&self, q: &QosEntry<'_>, out: &mut Out<'_>) {
        if q.pfc.is_empty() {
            return;
        }
        let default_on = self
            .db
            .get("DEVICE_METADATA", "localhost")
            .and_then(|m| m.get("default_pfcwd_status"))
            .is_some_and(|s| s == "enable");
        let wd_ports = &self.wd_ports;
        let missing: Vec<&String> = q.ports.iter().filter(|p| !wd_ports.contains(*p)).collect();
        // A port needs a PFC_WD entry of its own (roce-config.md §5 #6). A global
        // default_pfcwd_status of enable does not stand in for it: `pfcwd start_default`
        // runs at start-up and writes PFC_WD|<port> only for the ports it covers, those
        // in DEVICE_NEIGHBOR (sonic-utilities pfcwd/main.py, roce-config.md §1.7), so a
        // lossless port without an entry is not watched whatever the default says.
        if !missing.is_empty() {
            let which = if missing.len() == q.ports.len() {
                "these ports".to_string()
            } else {
                join(&missing)
            };
            let (message, fix) = if default_on {
                (
                    format!(
                        "PFC is on ({}) but {which} ha{} no PFC_WD entry of {} own: default_pfcwd_status enable does not cover {}, since pfcwd start_default writes a PFC_WD entry for each port it watches (those in DEVICE_NEIGHBOR)",
                        list(&q.pfc),
                        if missing.len() == 1 { "s" } else { "ve" },
                        if missing.len() == 1 { "its" } else { "their" },
                        if missing.len() == 1 { "it" } else { "them" },
                    ),
                    format!(
                        "add PFC_WD|{} {{action: drop, detection_time: 200, restoration_time: 200}} (or run pfcwd start_default with the port in DEVICE_NEIGHBOR)",
                        missing[0]
                    ),
                )
            } else {
                (
                    format!(
                        "PFC is on ({}) but no PFC_WD entry covers {which} and default_pfcwd_status is not enable",
                        list(&q.pfc),
                    ),
                    "add PFC_WD|<port> {action: drop, detection_time: 200, restoration_time: 200} or set DEVICE_METADATA|localhost.default_pfcwd_status to enable".to_string(),
                )
            };
            out.push(
                PFCWD_OFF,
                Severity::Warning,
                self.loc("PORT_QOS_MAP", q.key, Some("pfc_enable")),
                message,
                fix,
            );
        }
        let covered = match q.fields.get("pfcwd_sw_enable").map(|v| sonic::parse_prio_list(v)) {
            None => Vec::new(),
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc("PORT_QOS_MAP", q.key, Some("pfcwd_sw_enable")),
                    e,
                    "list priorities 0..7, e.g. \"3,4\"",
                );
                return;
            }
        };
        let uncovered: Vec<u8> = q.pfc.iter().copied().filter(|p| !covered.contains(p)).collect();
        if !uncovered.is_empty() {
            out.push(
                PFCWD_OFF,
                Severity::Warning,
                self.loc("PORT_QOS_MAP", q.key, Some("pfcwd_sw_enable")),
                format!(
                    "the watchdog does not watch lossless priorities {} (pfcwd_sw_enable {:?})",
                    list(&uncovered),
                    q.fields.get("pfcwd_sw_enable").map_or("absent", String::as_str)
                ),
                format!("set pfcwd_sw_enable to \"{}\"", csv(&q.pfc)),
            );
        }
    }

    fn lint_watchdog_global(&self, out: &mut Out<'_>) {
        let poll = match self
            .db
            .get("PFC_WD", "GLOBAL")
            .and_then(|g| num::<u64>(g, "POLL_INTERVAL"))
        {
            Some(Ok(p)) => {
                if !(100..=1000).contains(&p) {
                    out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PFC_WD", "GLOBAL", Some("POLL_INTERVAL")),
                        format!("POLL_INTERVAL {p} ms is outside 100..1000"),
                        "use 100..1000 ms (default 200)",
                    );
                }
                Some(p)
            }
            Some(Err(v)) => {
                out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc("PFC_WD", "GLOBAL", Some("POLL_INTERVAL")),
                    format!("{v:?} is not a number of ms"),
                    "use 100..1000 ms",
                );
                None
            }
            None => None,
        };
        if let Some(g) = self.db.get("PFC_WD", "GLOBAL")
            && g.get("BIG_RED_SWITCH").is_some_and(|v| v == "enable")
        {
            out.push(
                PFCWD_OFF,
                Severity::Warning,
                self.loc("PFC_WD", "GLOBAL", Some("BIG_RED_SWITCH")),
                "BIG_RED_SWITCH is enabled: every lossless queue is forced into storm mitigation".into(),
                "set BIG_RED_SWITCH to disable after the incident",
            );
        }
        for (key, f) in self.db.table("PFC_WD").filter(|(k, _)| k.as_str() != "GLOBAL") {
            if let Some(a) = f.get("action")
                && !["drop", "forward", "alert"].contains(&a.as_str())
            {
                out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc("PFC_WD", key, Some("action")),
                    format!("action {a:?} is not drop, forward or alert"),
                    "use drop (the default)",
                );
            }
            for (field, lo, hi) in [("detection_time", 100u64, 5000u64), ("restoration_time", 100, 60000)] {
                match num::<u64>(f, field) {
                    Some(Ok(v)) if !(lo..=hi).contains(&v) => out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PFC_WD", key, Some(field)),
                        format!("{field} {v} ms is outside {lo}..{hi}"),
                        format!("use {lo}..{hi} ms"),
                    ),
                    Some(Ok(v)) if poll.is_some_and(|p| v < p) => out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PFC_WD", key, Some(field)),
                        format!("{field} {v} ms is below POLL_INTERVAL {} ms", poll.unwrap_or(0)),
                        "make it at least the poll interval",
                    ),
                    Some(Err(v)) => out.push(
                        INVALID_VALUE,
                        Severity::Error,
                        self.loc("PFC_WD", key, Some(field)),
                        format!("{v:?} is not a number of ms"),
                        format!("use {lo}..{hi} ms"),
                    ),
                    _ => {}
                }
            }
        }
        // A switch with lossless buffers but no PFC-enabled PORT_QOS_MAP entry at all (a
        // buffer-only dump): its admin-up ports with a lossless PG (a profile with xoff)
        // need a PFC_WD entry each, whatever default_pfcwd_status says (as in
        // lint_watchdog_port).
        if self.qos.iter().any(|q| !q.pfc.is_empty()) {
            return;
        }
        let mut unwatched: Vec<&String> = Vec::new();
        for ((port, _), (_, prof)) in &self.pgs {
            let lossless = self
                .db
                .get("BUFFER_PROFILE", prof)
                .is_some_and(|p| p.contains_key("xoff"));
            if lossless && !self.admin_down(port) && !self.wd_ports.contains(port) && unwatched.last() != Some(&port) {
                unwatched.push(port);
            }
        }
        if unwatched.is_empty() {
            return;
        }
        let status = self
            .db
            .get("DEVICE_METADATA", "localhost")
            .and_then(|m| m.get("default_pfcwd_status"));
        let (loc, message, fix) = if status.is_some_and(|s| s == "disable") {
            (
                self.loc("DEVICE_METADATA", "localhost", Some("default_pfcwd_status")),
                format!(
                    "lossless PGs are configured on {} but default_pfcwd_status is disable and no PFC_WD entry covers them",
                    join(&unwatched)
                ),
                "set default_pfcwd_status to enable (pfcwd start_default) or add PFC_WD entries".to_string(),
            )
        } else {
            let key = self
                .pgs
                .iter()
                .find(|((p, _), _)| p == unwatched[0])
                .map_or("", |(_, (k, _))| *k);
            (
                self.loc("BUFFER_PG", key, Some("profile")),
                format!(
                    "lossless PGs are configured on {} but no PFC_WD entry covers them (default_pfcwd_status {}: pfcwd start_default writes a PFC_WD entry for each port it watches)",
                    join(&unwatched),
                    status.map_or("absent", String::as_str)
                ),
                format!(
                    "add PFC_WD|{} {{action: drop, detection_time: 200, restoration_time: 200}}",
                    unwatched[0]
                ),
            )
        };
        out.push(PFCWD_OFF, Severity::Warning, loc, message, fix);
    }

    /// Lossless ports in the traditional model need a cable length, or buffermgrd makes
    /// no headroom profile (sonic-swss cfgmgr/buffermgr.cpp).
    fn lint_cable(&self, q: &QosEntry<'_>, out: &mut Out<'_>) {
        if q.pfc.is_empty() || self.ports.is_empty() {
            return;
        }
        let mut missing = Vec::new();
        for p in &q.ports {
            match self.cable_m(p) {
                None => missing.push(p.clone()),
                Some(Ok(c)) if c <= 0.0 => missing.push(p.clone()),
                Some(Ok(_)) => {}
                Some(Err(v)) => out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc("CABLE_LENGTH", "AZURE", Some(p)),
                    format!("cable length {v:?} is not <n>m"),
                    "write it as e.g. \"5m\"",
                ),
            }
        }
        if !missing.is_empty() {
            out.push(
                HEADROOM_SHORT,
                Severity::Error,
                self.loc("PORT_QOS_MAP", q.key, Some("pfc_enable")),
                format!(
                    "PFC is on but {} has no (or a zero) CABLE_LENGTH: no lossless headroom profile is generated",
                    join(&missing)
                ),
                "set CABLE_LENGTH|AZURE.<port> to the real cable length, e.g. \"5m\"",
            );
        }
    }

    /// The lossless PG ids of a port: its PFC priorities through pfc_to_pg (identity in
    /// the traditional model, where PG ids are the PFC priorities).
    fn lossless_pgs(&self, port: &str) -> Option<Vec<u8>> {
        let q = &self.qos[*self.qos_of_port.get(port)?];
        Some(q.pfc.iter().map(|&p| q.pg_of_pfc(p)).collect())
    }

    fn lint_pg_buffers(&self, out: &mut Out<'_>) {
        let pattern = self.db.table("LOSSLESS_TRAFFIC_PATTERN").next().map(|(_, f)| f);
        let lossless_mtu = pattern
            .and_then(|f| num::<u64>(f, "mtu"))
            .and_then(Result::ok)
            .unwrap_or(1024);
        let spp = pattern
            .and_then(|f| num::<u64>(f, "small_packet_percentage"))
            .and_then(Result::ok)
            .unwrap_or(50);
        let mut reported_profiles: BTreeSet<(String, String)> = BTreeSet::new();
        let mut shp_sum: BTreeMap<String, u64> = BTreeMap::new();
        let mut reported_pg_keys: BTreeSet<(String, String)> = BTreeSet::new();
        for ((port, pg), (key, prof)) in &self.pgs {
            if self.admin_down(port) {
                continue; // buffermgrd removes lossless PGs of admin-down ports
            }
            let Some(pf) = self.db.get("BUFFER_PROFILE", prof) else {
                continue;
            };
            let must_be_lossless = self.lossless_pgs(port).is_some_and(|v| v.contains(pg));
            let xoff = match num::<u64>(pf, "xoff") {
                Some(Ok(x)) => Some(x),
                Some(Err(v)) => {
                    if reported_profiles.insert((prof.clone(), "xoff".into())) {
                        out.push(
                            INVALID_VALUE,
                            Severity::Error,
                            self.loc("BUFFER_PROFILE", prof, Some("xoff")),
                            format!("{v:?} is not a byte count"),
                            "write bytes as a decimal string",
                        );
                    }
                    continue;
                }
                None => None,
            };
            let Some(xoff) = xoff else {
                if must_be_lossless {
                    out.push(
                        PFC_NOT_ENABLED,
                        Severity::Error,
                        self.loc("BUFFER_PG", key, Some("profile")),
                        format!("PG {pg} of {port} carries a PFC priority but profile {prof} has no xoff (no headroom: a lossy profile)"),
                        format!("use a lossless profile (pg_lossless_<speed>_<cable>_profile) for PG {pg}"),
                    );
                }
                continue;
            };
            let pool_name = pf
                .get("pool")
                .and_then(|v| sonic::parse_ref(v))
                .map(|r| r.name)
                .unwrap_or_default();
            let pool = self.db.get("BUFFER_POOL", &pool_name);
            let shp = pool.is_some_and(|p| p.contains_key("xoff"));
            if shp {
                *shp_sum.entry(pool_name.clone()).or_default() += xoff;
            } else if let (Some(Ok(size)), Some(Ok(xon))) = (num::<u64>(pf, "size"), num::<u64>(pf, "xon"))
                && size < xon + xoff
                && reported_profiles.insert((prof.clone(), "size".into()))
            {
                out.push(
                        HEADROOM_SHORT,
                        Severity::Error,
                        self.loc("BUFFER_PROFILE", prof, Some("size")),
                        format!("size {size} < xon {xon} + xoff {xoff}: without a shared headroom pool each PG must reserve both"),
                        format!("set size to at least {}", xon + xoff),
                    );
            }
            // Headroom against the formula.
            let Some(pfields) = self.port(port) else {
                continue;
            };
            let Some(Ok(speed)) = num::<u64>(pfields, "speed") else {
                continue;
            };
            let Some(Ok(cable)) = self.cable_m(port) else {
                continue;
            };
            let mtu = num::<u64>(pfields, "mtu").and_then(Result::ok).unwrap_or(9100);
            let input = HeadroomInput {
                speed_mbps: speed,
                cable_m: cable,
                port_mtu: mtu,
                lossless_mtu,
                small_packet_pct: spp,
                asic: self.asic,
            };
            if let Some(req) = headroom::required_xoff(&input)
                && xoff < req
                && reported_pg_keys.insert((key.to_string(), port.clone()))
            {
                out.push(
                        HEADROOM_SHORT,
                        Severity::Error,
                        self.loc("BUFFER_PG", key, Some("profile")),
                        format!(
                            "{port}: profile {prof} xoff {xoff} B < {req} B needed for {} G, {cable} m, MTU {mtu} on {} (SONiC headroom formula, roce-config.md §3.2)",
                            speed / 1000,
                            self.asic.name
                        ),
                        format!("use a profile with xoff >= {req} (size >= xon + {req} without a shared headroom pool)"),
                    );
            }
        }
        // Shared headroom pool: the pool must cover the PGs' xoff over the over-subscribe ratio.
        let ratio = self
            .db
            .table("DEFAULT_LOSSLESS_BUFFER_PARAMETER")
            .next()
            .and_then(|(_, f)| num::<f64>(f, "over_subscribe_ratio"))
            .and_then(Result::ok)
            .filter(|r| *r > 0.0);
        if let Some(ratio) = ratio {
            for (pool, sum) in shp_sum {
                let Some(Ok(pxoff)) = self.db.get("BUFFER_POOL", &pool).and_then(|p| num::<u64>(p, "xoff")) else {
                    continue;
                };
                let need = (sum as f64 / ratio).ceil() as u64;
                if pxoff < need {
                    out.push(
                        HEADROOM_SHORT,
                        Severity::Error,
                        self.loc("BUFFER_POOL", &pool, Some("xoff")),
                        format!("shared headroom pool {pxoff} B < sum of lossless PG xoff {sum} B / over_subscribe_ratio {ratio} = {need} B"),
                        format!("set BUFFER_POOL|{pool}.xoff to at least {need}"),
                    );
                }
            }
        }
    }

    fn lint_ecn(&self, q: &QosEntry<'_>, out: &mut Out<'_>) {
        if q.pfc.is_empty() || !self.db.has_table("QUEUE") {
            return;
        }
        let mut no_wred: Vec<String> = Vec::new();
        // WRED bindings grouped by QUEUE key, priority and the buffer profile of the PG
        // whose PFC trigger the marking must beat: ports of one QUEUE key may sit on
        // different PG profiles, and one finding names every port of its group.
        let mut groups: BTreeMap<(&str, u8, Option<&str>), Vec<&String>> = BTreeMap::new();
        for port in &q.ports {
            for &p in &q.pfc {
                let queue = q.queue_of_tc(p);
                let Some(qkey) = self.queues.get(&(port.clone(), queue)) else {
                    no_wred.push(format!("{port} queue {queue}"));
                    continue;
                };
                let qf = &self.db.tables["QUEUE"][*qkey];
                if !qf.contains_key("wred_profile") {
                    no_wred.push(format!("{port} queue {queue}"));
                    continue;
                }
                let prof = self.pgs.get(&(port.clone(), q.pg_of_pfc(p))).map(|(_, n)| n.as_str());
                groups.entry((qkey, p, prof)).or_default().push(port);
            }
        }
        for ((qkey, p, _), ports) in groups {
            let qf = &self.db.tables["QUEUE"][qkey];
            let Some((wname, w)) = self.resolve("WRED_PROFILE", qf.get("wred_profile")) else {
                continue;
            };
            self.lint_wred(qkey, wname, w, &ports, p, q, out);
        }
        if !no_wred.is_empty() {
            let n = no_wred.len();
            let shown: Vec<String> = no_wred.into_iter().take(4).collect();
            out.push(
                ECN_NOT_MARKING,
                Severity::Warning,
                self.loc("PORT_QOS_MAP", q.key, Some("pfc_enable")),
                format!(
                    "{n} lossless queue(s) have no WRED/ECN profile: {}{}",
                    shown.join(", "),
                    if n > 4 { ", ..." } else { "" }
                ),
                "bind a WRED_PROFILE with ecn set (e.g. AZURE_LOSSLESS) via QUEUE|<port>|<q>.wred_profile",
            );
        }
    }

    #[expect(clippy::too_many_arguments, reason = "context of one WRED binding")]
    fn lint_wred(
        &self,
        qkey: &str,
        wname: &str,
        w: &Fields,
        ports: &[&String],
        prio: u8,
        q: &QosEntry<'_>,
        out: &mut Out<'_>,
    ) {
        let wloc = self.loc("WRED_PROFILE", wname, None);
        let ecn = w.get("ecn").map_or("ecn_none", String::as_str);
        let green_ecn = matches!(ecn, "ecn_green" | "ecn_green_yellow" | "ecn_green_red" | "ecn_all");
        let green_on = w.get("wred_green_enable").is_some_and(|v| v == "true");
        if !green_ecn || !green_on {
            out.push(
                ECN_NOT_MARKING,
                Severity::Warning,
                Location {
                    field: Some(if green_ecn { "wred_green_enable" } else { "ecn" }.into()),
                    ..wloc.clone()
                },
                format!(
                    "WRED profile {wname} on {qkey} does not ECN-mark green packets (ecn {ecn}, wred_green_enable {})",
                    w.get("wred_green_enable").map_or("absent", String::as_str)
                ),
                "set ecn to ecn_all and wred_green_enable to true",
            );
            return;
        }
        let (Some(Ok(kmin)), Some(Ok(kmax))) = (
            num::<u64>(w, "green_min_threshold"),
            num::<u64>(w, "green_max_threshold"),
        ) else {
            out.push(
                INVALID_VALUE,
                Severity::Error,
                wloc,
                format!("WRED profile {wname} lacks numeric green_min_threshold/green_max_threshold"),
                "set both thresholds in bytes",
            );
            return;
        };
        if kmax < kmin {
            out.push(
                INVALID_VALUE,
                Severity::Error,
                Location {
                    field: Some("green_max_threshold".into()),
                    ..wloc
                },
                format!("green_max_threshold {kmax} < green_min_threshold {kmin} (YANG must rule)"),
                "make max >= min",
            );
            return;
        }
        // PFC trigger of the PG this priority uses on these ports (one profile: the
        // caller groups ports by it).
        let pg = q.pg_of_pfc(prio);
        let Some(first) = ports.first() else { return };
        let port = join(ports);
        let Some((_, prof)) = self.pgs.get(&((*first).clone(), pg)) else {
            return;
        };
        let Some(pf) = self.db.get("BUFFER_PROFILE", prof) else {
            return;
        };
        let trigger = if let Some(Ok(st)) = num::<u64>(pf, "static_th") {
            Some((st, format!("static_th {st}")))
        } else if let Some(Ok(th)) = num::<i32>(pf, "dynamic_th") {
            let pool = pf
                .get("pool")
                .and_then(|v| sonic::parse_ref(v))
                .and_then(|r| self.db.get("BUFFER_POOL", &r.name));
            pool.and_then(|p| num::<u64>(p, "size"))
                .and_then(Result::ok)
                .map(|size| {
                    (
                        headroom::pfc_trigger_dynamic(size, th),
                        format!("alpha 2^{th} over pool {size} B"),
                    )
                })
        } else {
            None
        };
        let Some((t1, how)) = trigger else { return };
        if kmin >= t1 {
            out.push(
                ECN_AFTER_PFC,
                Severity::Error,
                Location {
                    field: Some("green_min_threshold".into()),
                    ..wloc
                },
                format!(
                    "Kmin {kmin} B >= PFC trigger {t1} B of {port} PG {pg} ({how}): PFC always fires before ECN marks"
                ),
                format!("lower green_min_threshold/green_max_threshold below {t1} B (e.g. Kmax 1/2 of it)"),
            );
        } else if kmax > t1 {
            out.push(
                ECN_AFTER_PFC,
                Severity::Warning,
                Location { field: Some("green_max_threshold".into()), ..wloc },
                format!("Kmax {kmax} B > PFC trigger {t1} B of {port} PG {pg} ({how}): a single congested PG pauses before the marking ramp completes"),
                format!("lower green_max_threshold below {t1} B"),
            );
        }
    }

    fn lint_mtu(&self, out: &mut Out<'_>) {
        let mut by_mtu: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for (p, f) in self.db.table("PORT") {
            match num::<u64>(f, "mtu") {
                Some(Ok(m)) if !self.admin_down(p) => by_mtu.entry(m).or_default().push(p.clone()),
                Some(Ok(_)) => {}
                Some(Err(v)) => out.push(
                    INVALID_VALUE,
                    Severity::Error,
                    self.loc("PORT", p, Some("mtu")),
                    format!("{v:?} is not an MTU"),
                    "write the MTU in bytes, e.g. \"9100\"",
                ),
                None => {}
            }
        }
        if by_mtu.len() > 1 {
            let desc: Vec<String> = by_mtu.iter().map(|(m, ps)| format!("{m} on {}", ps.len())).collect();
            let (&low, ports) = by_mtu.iter().next().expect("two entries");
            out.push(
                MTU_MISMATCH,
                Severity::Warning,
                self.loc("PORT", &ports[0], Some("mtu")),
                format!(
                    "admin-up ports use different MTUs ({}); the smallest, {low}, caps every RoCE path through them",
                    desc.join(", ")
                ),
                "use one MTU (9100 is the SONiC default) on every fabric port",
            );
        }
    }

    fn min_port_mtu(&self) -> Option<(u64, String)> {
        self.db
            .table("PORT")
            .filter(|(p, _)| !self.admin_down(p))
            .filter_map(|(p, f)| num::<u64>(f, "mtu").and_then(Result::ok).map(|m| (m, p.clone())))
            .min()
    }
}

// ---------------------------------------------------------------------------------
// Per-hop view (used by the RoCE path trace)

/// How one switch port treats one DSCP, from its CONFIG_DB.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HopQos {
    /// The PORT_QOS_MAP key that applied (`None`: the file has no entry for the port
    /// and none at all).
    pub qos_key: Option<String>,
    /// True when the key does not name this port and the file's first entry stood in.
    pub fallback_entry: bool,
    /// The DSCP looked up.
    pub dscp: u8,
    /// TC of the DSCP (`None` without a DSCP map).
    pub tc: Option<u8>,
    /// PFC-enabled priorities of the entry.
    pub pfc_enable: Vec<u8>,
    /// The TC is in pfc_enable.
    pub lossless: bool,
    /// Egress queue of the TC.
    pub queue: u8,
    /// WRED profile on that queue and its green thresholds (bytes) and ECN mode.
    pub wred: Option<(String, Option<u64>, Option<u64>, String)>,
    /// Scheduler of that queue: name, type, weight.
    pub scheduler: Option<(String, String, String)>,
    /// PFC watchdog entry present for the port.
    pub watchdog: bool,
}

/// How `port` of the switch in `db` classifies, queues and protects `dscp`.
pub fn hop_qos(file: &str, db: &ConfigDb, port: &str, dscp: u8) -> HopQos {
    let mut sink = Vec::new();
    let mut out = Out { v: &mut sink };
    let view = SwitchView::new(file, db, &mut out);
    let (q, fallback) = match view.qos_of_port.get(port) {
        Some(&i) => (view.qos.get(i), false),
        None => (view.qos.first(), true),
    };
    let Some(q) = q else {
        return HopQos {
            dscp,
            queue: 0,
            ..HopQos::default()
        };
    };
    let tc = q.tc_of(dscp);
    let queue = q.queue_of_tc(tc.unwrap_or(0));
    // The QUEUE entry of this port (or of the stand-in entry's first port).
    let qport = if fallback {
        q.ports.first().cloned().unwrap_or_default()
    } else {
        port.to_string()
    };
    let qf = view
        .queues
        .get(&(qport.clone(), queue))
        .and_then(|k| db.get("QUEUE", k));
    let wred = qf
        .and_then(|f| view.resolve("WRED_PROFILE", f.get("wred_profile")))
        .map(|(name, w)| {
            (
                name.to_string(),
                num::<u64>(w, "green_min_threshold").and_then(Result::ok),
                num::<u64>(w, "green_max_threshold").and_then(Result::ok),
                w.get("ecn").cloned().unwrap_or_else(|| "ecn_none".into()),
            )
        });
    let scheduler = view.scheduler_of(&qport, queue).map(|(name, f)| {
        (
            name.to_string(),
            f.get("type").cloned().unwrap_or_default(),
            f.get("weight").cloned().unwrap_or_default(),
        )
    });
    HopQos {
        qos_key: Some(q.key.to_string()),
        fallback_entry: fallback,
        dscp,
        tc,
        lossless: tc.is_some_and(|t| q.pfc.contains(&t)),
        pfc_enable: q.pfc.clone(),
        queue,
        wred,
        scheduler,
        watchdog: view.wd_ports.contains(&qport),
    }
}

// ---------------------------------------------------------------------------------
// NIC side

fn lint_nics(inp: &Inputs<'_>, it: &Intent, sws: &[SwitchView<'_>], out: &mut Out<'_>) {
    let sev = if it.rdma_source == DscpSource::Assumed {
        Severity::Warning
    } else {
        Severity::Error
    };
    let mut nic_prio: Option<u8> = None;
    for &(file, q) in &inp.qos {
        let floc = Location::file(file);
        if q.trust == Some(Trust::Pcp) {
            out.push(
                DSCP_TC_MISMATCH,
                Severity::Warning,
                Location {
                    field: Some("Priority trust state".into()),
                    ..floc.clone()
                },
                "NIC trusts PCP: it ignores the DSCP the switches classify RoCEv2 by".into(),
                "mlnx_qos -i <if> --trust dscp",
            );
        }
        for &d in &it.rdma_dscps {
            let p = q.prio_of_dscp(d);
            nic_prio.get_or_insert(p);
            if let Some(pfc) = q.pfc {
                if !pfc[p as usize] {
                    let on: Vec<u8> = (0..8u8).filter(|&i| pfc[i as usize]).collect();
                    out.push(
                        PFC_NOT_ENABLED,
                        sev,
                        Location {
                            field: Some("PFC configuration".into()),
                            ..floc.clone()
                        },
                        format!(
                            "RDMA DSCP {d} ({}) is NIC priority {p}, but PFC is enabled on {}",
                            src_note(&it.rdma_source, "DSCP"),
                            if on.is_empty() {
                                "no priority".to_string()
                            } else {
                                format!("priorities {}", list(&on))
                            }
                        ),
                        format!(
                            "mlnx_qos -i <if> --pfc {}",
                            (0..8)
                                .map(|i| if i == p { "1" } else { "0" })
                                .collect::<Vec<_>>()
                                .join(",")
                        ),
                    );
                }
                if let Some(buf) = q.buffer {
                    let shared: Vec<u8> = (0..8u8)
                        .filter(|&i| !pfc[i as usize] && buf[i as usize] == buf[p as usize])
                        .collect();
                    if pfc[p as usize] && !shared.is_empty() {
                        out.push(
                            LOSSLESS_SHARED,
                            Severity::Error,
                            Location {
                                field: Some("PFC configuration buffer".into()),
                                ..floc.clone()
                            },
                            format!(
                                "lossless priority {p} shares receive buffer {} with lossy priorities {}",
                                buf[p as usize],
                                list(&shared)
                            ),
                            format!("mlnx_qos -i <if> --prio2buffer so that priority {p} has a buffer of its own"),
                        );
                    }
                }
            }
            // Against every switch's classification of the same DSCP.
            if q.trust != Some(Trust::Pcp) {
                for sw in sws {
                    for e in &sw.qos {
                        let Some(tc) = e.tc_of(d) else { continue };
                        if tc != p {
                            out.push(
                                DSCP_TC_MISMATCH,
                                Severity::Error,
                                Location { field: Some("dscp2prio".into()), ..floc.clone() },
                                format!("DSCP {d} is NIC priority {p} here but TC {tc} on {} PORT_QOS_MAP|{}: PAUSE for TC {tc} does not stop the NIC's priority {p}", sw.file, e.key),
                                format!("map DSCP {d} to priority {tc} on the NIC (mlnx_qos --dscp2prio set,{d},{tc}) or to TC {p} on the switch"),
                            );
                        }
                    }
                }
            }
        }
        // NIC cable length sizes the NIC's own headroom (mlnx_qos --cable_len).
        if let Some(nic_cable) = q.cable_len_m {
            let min_sw = sws
                .iter()
                .flat_map(|s| {
                    s.qos
                        .iter()
                        .filter(|q| !q.pfc.is_empty())
                        .flat_map(move |q| q.ports.iter().filter_map(move |p| s.cable_m(p).and_then(Result::ok)))
                })
                .fold(f64::INFINITY, f64::min);
            if min_sw.is_finite() && (nic_cable as f64) < min_sw {
                out.push(
                    HEADROOM_SHORT,
                    Severity::Warning,
                    Location {
                        field: Some("Cable len".into()),
                        ..floc.clone()
                    },
                    format!(
                        "NIC headroom is sized for {nic_cable} m but the shortest lossless switch cable is {min_sw} m"
                    ),
                    format!("mlnx_qos -i <if> --cable_len {}", min_sw.ceil() as u64),
                );
            }
        }
    }
    let prio = nic_prio.unwrap_or(it.rdma_dscps[0] >> 3);
    let mut mtus: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for &(file, n) in &inp.sysfs {
        let loc = Location {
            key: Some(n.name.clone()),
            ..Location::file(file).at_line(n.line)
        };
        for (what, map, fix) in [
            ("notification point (CNP generation)", &n.np_enable, "roce_np"),
            ("reaction point (rate limiting)", &n.rp_enable, "roce_rp"),
        ] {
            if map.get(&prio) == Some(&false) {
                out.push(
                    DCQCN_OFF,
                    Severity::Error,
                    Location {
                        field: Some(format!("ecn/{fix}/enable/{prio}")),
                        ..loc.clone()
                    },
                    format!("DCQCN {what} is off on the RDMA priority {prio}"),
                    format!("echo 1 > /sys/class/net/{}/ecn/{fix}/enable/{prio}", n.name),
                );
            }
        }
        if let Some(t) = n.tos
            && t & 3 == 0
        {
            out.push(
                ECN_NOT_MARKING,
                Severity::Warning,
                Location {
                    field: Some("traffic_class".into()),
                    ..loc.clone()
                },
                format!("RoCE ToS {t} has ECN bits 00 (Not-ECT): switches drop instead of marking"),
                format!("use ToS {} (DSCP {} with ECT(0))", t | 2, t >> 2),
            );
        }
        if let Some(m) = n.mtu {
            mtus.entry(m).or_default().push(format!("{file}:{}", n.name));
            for sw in sws {
                if let Some((smtu, port)) = sw.min_port_mtu()
                    && m as u64 > smtu
                {
                    out.push(
                        MTU_MISMATCH,
                        Severity::Error,
                        Location {
                            field: Some("mtu".into()),
                            ..loc.clone()
                        },
                        format!(
                            "NIC MTU {m} > switch {} {port} MTU {smtu}: full-size frames are dropped",
                            sw.file
                        ),
                        format!("set the NIC MTU to at most {smtu} or raise the switch port MTU"),
                    );
                }
            }
        }
    }
    if mtus.len() > 1 {
        let desc: Vec<String> = mtus
            .iter()
            .map(|(m, who)| format!("{m} ({})", who.join(", ")))
            .collect();
        let first = inp
            .sysfs
            .iter()
            .find(|(_, n)| n.mtu.is_some())
            .map(|(f, _)| *f)
            .unwrap_or("");
        out.push(
            MTU_MISMATCH,
            Severity::Warning,
            Location::file(first),
            format!(
                "NICs use different MTUs: {}; RoCE uses the smaller active MTU of the two ends",
                desc.join(", ")
            ),
            "use one MTU on every RoCE NIC",
        );
    }
}

fn list(v: &[u8]) -> String {
    v.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
}

/// `0,1,2,3,5,8,9` -> `0-3,5,8-9`.
fn ranges(v: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j].checked_add(1) == Some(v[j + 1]) {
            j += 1;
        }
        parts.push(if j == i {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

fn csv(v: &[u8]) -> String {
    list(v)
}

fn join<S: AsRef<str>>(v: &[S]) -> String {
    let s: Vec<&str> = v.iter().take(6).map(|s| s.as_ref()).collect();
    if v.len() > 6 {
        format!("{} and {} more", s.join(", "), v.len() - 6)
    } else {
        s.join(", ")
    }
}
