//! The single-fault mutation corpus of the RoCE linter: clean bases, and for every
//! rule every place in the switch config and the NIC settings where its fault can
//! be put, one mutation each.
//!
//! Places are found by reading the base, never listed by hand: the ports of the PORT
//! table, the lossless priorities of each PORT_QOS_MAP entry, the entries of each map
//! the entries use, the buffer and WRED profiles and pools bound to lossless PGs and
//! queues, the PFC_WD entries, every reference field, the NIC's RDMA priority. A
//! per-port fault in an entry that covers several ports (`Ethernet0,Ethernet4|3`)
//! first moves that port to an entry of its own with the same fields ([`isolate`]),
//! which on its own changes nothing the linter reports (checked by a test).
//!
//! Everything is a `BTreeMap` or a sorted `Vec`, so the corpus comes out in the same
//! order on every run. `LINT_MUTATIONS_LIST=1 cargo nextest run -p rdmalab-diag
//! every_rule --no-capture` prints every mutation with its rule.
//!
//! Faults left out, because one edit is two faults and two rules rightly fire: the
//! switch map sending the RDMA DSCP to a lossy TC (pfc-not-enabled and
//! dscp-tc-mismatch), an unparsable `pfc_enable` (invalid-value, and PFC is then off),
//! the CNP's TC mapped to a lossless queue (lossless-shared and cnp-class), a port that
//! does not exist named in a PORT_QOS_MAP or PFC_WD key (dangling-ref, and that port
//! lacks cable length or watchdog). Checks the bases give no place for: the shared
//! headroom pool (no pool `xoff` in them) and two NICs with different MTUs (one NIC).

use std::collections::{BTreeMap, BTreeSet};

use diag::roce::headroom::{self, Asic, HeadroomInput};
use diag::roce::nic::{self, MlnxQos};
use diag::roce::sonic::{self, ConfigDb, Tables};

/// A clean starting point: a switch config and the NIC settings it runs with.
#[derive(Clone, Debug)]
pub struct Base {
    /// Short name, used in mutation names.
    pub name: &'static str,
    /// The switch config, table -> key -> fields.
    pub db: Tables,
    /// Written as a redis dump (`"TABLE|key"`) rather than nested tables.
    pub flat: bool,
    /// `mlnx_qos` output.
    pub qos: String,
    /// sysfs dump.
    pub sysfs: String,
}

impl Base {
    /// Read a base from a switch config and the two NIC files.
    pub fn read(name: &'static str, config_db: &str, qos: &str, sysfs: &str) -> Base {
        let parsed = ConfigDb::parse(name, config_db).expect("base config parses");
        assert!(parsed.malformed.is_empty(), "base {name} has malformed entries");
        Base {
            name,
            db: parsed.tables,
            flat: parsed.flat,
            qos: qos.to_string(),
            sysfs: sysfs.to_string(),
        }
    }

    /// The files of the base with `db`, `qos` and `sysfs` in place of its own.
    pub fn files(&self, db: &Tables, qos: &str, sysfs: &str) -> Vec<(String, String)> {
        vec![
            (format!("{}/config_db.json", self.name), render(db, self.flat)),
            (format!("{}/mlnx_qos.txt", self.name), qos.to_string()),
            (format!("{}/sysfs.txt", self.name), sysfs.to_string()),
        ]
    }

    /// The base's own files.
    pub fn clean_files(&self) -> Vec<(String, String)> {
        self.files(&self.db, &self.qos, &self.sysfs)
    }
}

/// CONFIG_DB JSON, nested or flat.
pub fn render(db: &Tables, flat: bool) -> String {
    if flat {
        let mut m: BTreeMap<String, &sonic::Fields> = BTreeMap::new();
        for (t, entries) in db {
            for (k, f) in entries {
                m.insert(format!("{t}|{k}"), f);
            }
        }
        serde_json::to_string_pretty(&m).expect("tables serialise")
    } else {
        serde_json::to_string_pretty(db).expect("tables serialise")
    }
}

/// One config with one fault.
#[derive(Clone, Debug)]
pub struct Mutation {
    /// The rule that must catch it, and only it.
    pub rule: &'static str,
    /// `<base>: <what was changed where>`.
    pub name: String,
    /// The files to lint.
    pub files: Vec<(String, String)>,
    /// Strings that must each appear in a finding of `rule` (location or message): the
    /// port, profile, map, DSCP or priority the fault was put at.
    pub mentions: Vec<String>,
}

// ---------------------------------------------------------------------------------
// Reading and editing tables

fn fields<'d>(db: &'d Tables, t: &str, k: &str) -> Option<&'d sonic::Fields> {
    db.get(t)?.get(k)
}

fn field<'d>(db: &'d Tables, t: &str, k: &str, f: &str) -> Option<&'d str> {
    fields(db, t, k)?.get(f).map(String::as_str)
}

fn set(db: &mut Tables, t: &str, k: &str, f: &str, v: &str) {
    db.entry(t.to_string())
        .or_default()
        .entry(k.to_string())
        .or_default()
        .insert(f.to_string(), v.to_string());
}

fn unset(db: &mut Tables, t: &str, k: &str, f: &str) {
    if let Some(e) = db.get_mut(t).and_then(|m| m.get_mut(k)) {
        e.remove(f);
    }
}

fn keys(db: &Tables, t: &str) -> Vec<String> {
    db.get(t).map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

/// The name a reference value points at (`AZURE` or `[TABLE|AZURE]`).
fn ref_name(v: &str) -> Option<String> {
    sonic::parse_ref(v).map(|r| r.name)
}

fn ports(db: &Tables) -> Vec<String> {
    keys(db, "PORT")
}

fn split(db: &Tables, key: &str, indexed: bool) -> sonic::Key {
    sonic::split_key(key, indexed, &ports(db)).expect("base keys split")
}

/// Ids as SONiC writes them: `3`, `0-2`, or a comma list.
fn ids_text(ids: &[u8]) -> String {
    let contiguous = ids.windows(2).all(|w| w[1] == w[0] + 1);
    match ids {
        [one] => one.to_string(),
        [first, .., last] if contiguous => format!("{first}-{last}"),
        _ => ids.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
    }
}

/// The key of `table` that covers `port` (and `id`, for indexed tables).
fn key_of(db: &Tables, table: &str, port: &str, id: Option<u8>) -> Option<String> {
    keys(db, table).into_iter().find(|k| {
        if k == "global" || k == "GLOBAL" {
            return false;
        }
        let s = split(db, k, id.is_some());
        s.ports.iter().any(|p| p == port) && id.is_none_or(|i| s.ids.contains(&i))
    })
}

/// Give `port` (and `id`) an entry of its own in `table`, with the fields of the entry
/// that covered it; the rest of that entry keeps its fields. Returns the port's key.
pub fn isolate(db: &mut Tables, table: &str, port: &str, id: Option<u8>) -> Option<String> {
    let key = key_of(db, table, port, id)?;
    let s = split(db, &key, id.is_some());
    let f = db.get_mut(table)?.remove(&key)?;
    let rest: Vec<String> = s.ports.iter().filter(|p| *p != port).cloned().collect();
    let t = db.get_mut(table)?;
    let own = match id {
        None => {
            if !rest.is_empty() {
                t.insert(rest.join(","), f.clone());
            }
            port.to_string()
        }
        Some(i) => {
            let ids = ids_text(&s.ids);
            if !rest.is_empty() {
                t.insert(format!("{}|{ids}", rest.join(",")), f.clone());
            }
            let other: Vec<u8> = s.ids.iter().copied().filter(|&x| x != i).collect();
            if !other.is_empty() {
                t.insert(format!("{port}|{}", ids_text(&other)), f.clone());
            }
            format!("{port}|{i}")
        }
    };
    t.insert(own.clone(), f);
    Some(own)
}

/// Split every key of `table` into one key per port (and per id).
fn split_all(db: &mut Tables, table: &str, indexed: bool) {
    for k in keys(db, table) {
        if k == "global" || k == "GLOBAL" {
            continue;
        }
        let s = split(db, &k, indexed);
        let Some(f) = db.get_mut(table).and_then(|t| t.remove(&k)) else {
            continue;
        };
        let t = db.get_mut(table).expect("table");
        for p in &s.ports {
            if indexed {
                for i in &s.ids {
                    t.insert(format!("{p}|{i}"), f.clone());
                }
            } else {
                t.insert(p.clone(), f.clone());
            }
        }
    }
}

/// A `{from: to}` map table entry.
fn map(db: &Tables, table: &str, name: &str) -> BTreeMap<u8, u8> {
    fields(db, table, name)
        .map(|f| sonic::parse_u8_map(f, 63, 7).expect("base maps are valid"))
        .unwrap_or_default()
}

/// One PORT_QOS_MAP entry as the linter reads it.
#[derive(Clone, Debug)]
struct Entry {
    key: String,
    ports: Vec<String>,
    pfc: Vec<u8>,
    /// DSCP_TO_TC_MAP name (own, else the `global` entry's).
    dscp_map: Option<String>,
}

fn entries(db: &Tables) -> Vec<Entry> {
    let global = field(db, "PORT_QOS_MAP", "global", "dscp_to_tc_map").and_then(ref_name);
    keys(db, "PORT_QOS_MAP")
        .into_iter()
        .filter(|k| k != "global")
        .map(|k| {
            let f = fields(db, "PORT_QOS_MAP", &k).expect("entry");
            Entry {
                ports: split(db, &k, false).ports,
                pfc: f
                    .get("pfc_enable")
                    .map(|v| sonic::parse_prio_list(v).expect("base pfc_enable is valid"))
                    .unwrap_or_default(),
                dscp_map: match f.get("dscp_to_tc_map") {
                    Some(v) => ref_name(v),
                    None => global.clone(),
                },
                key: k,
            }
        })
        .collect()
}

fn entry_map(db: &Tables, e: &Entry, field_name: &str, table: &str) -> BTreeMap<u8, u8> {
    field(db, "PORT_QOS_MAP", &e.key, field_name)
        .and_then(ref_name)
        .map(|n| map(db, table, &n))
        .unwrap_or_default()
}

fn queue_of_tc(db: &Tables, e: &Entry, tc: u8) -> u8 {
    entry_map(db, e, "tc_to_queue_map", "TC_TO_QUEUE_MAP")
        .get(&tc)
        .copied()
        .unwrap_or(tc)
}

fn pg_of_pfc(db: &Tables, e: &Entry, p: u8) -> u8 {
    entry_map(db, e, "pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP")
        .get(&p)
        .copied()
        .unwrap_or(p)
}

fn tc_of(db: &Tables, e: &Entry, dscp: u8) -> u8 {
    e.dscp_map
        .as_ref()
        .and_then(|n| map(db, "DSCP_TO_TC_MAP", n).get(&dscp).copied())
        .unwrap_or(0)
}

/// (port, lossless priority) of every PFC-enabled port.
fn lossless(db: &Tables) -> Vec<(Entry, String, u8)> {
    let mut v = Vec::new();
    for e in entries(db) {
        for p in &e.ports {
            for &prio in &e.pfc {
                v.push((e.clone(), p.clone(), prio));
            }
        }
    }
    v
}

/// Buffer profiles bound to a lossless PG, with the ports using them.
fn lossless_profiles(db: &Tables) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (e, port, prio) in lossless(db) {
        let pg = pg_of_pfc(db, &e, prio);
        if let Some(prof) = key_of(db, "BUFFER_PG", &port, Some(pg))
            .and_then(|k| field(db, "BUFFER_PG", &k, "profile").and_then(ref_name))
        {
            m.entry(prof).or_default().insert(port);
        }
    }
    m
}

/// WRED profiles bound to a lossless queue, with the ports using them.
fn lossless_wred(db: &Tables) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (e, port, prio) in lossless(db) {
        let q = queue_of_tc(db, &e, prio);
        if let Some(w) =
            key_of(db, "QUEUE", &port, Some(q)).and_then(|k| field(db, "QUEUE", &k, "wred_profile").and_then(ref_name))
        {
            m.entry(w).or_default().insert(port);
        }
    }
    m
}

fn num(db: &Tables, t: &str, k: &str, f: &str) -> u64 {
    field(db, t, k, f)
        .and_then(|v| v.trim().trim_end_matches('m').parse().ok())
        .unwrap_or_else(|| panic!("{t}|{k}.{f} is a number in the base"))
}

/// The xoff SONiC's formula asks of `port` (rules.rs uses the same inputs).
fn required_xoff(db: &Tables, port: &str) -> u64 {
    let pattern = keys(db, "LOSSLESS_TRAFFIC_PATTERN").into_iter().next();
    let pat = |f: &str, d: u64| {
        pattern
            .as_ref()
            .and_then(|k| field(db, "LOSSLESS_TRAFFIC_PATTERN", k, f))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let cable = keys(db, "CABLE_LENGTH")
        .into_iter()
        .find_map(|k| field(db, "CABLE_LENGTH", &k, port).map(str::to_string))
        .and_then(|v| v.trim_end_matches('m').parse().ok())
        .expect("base ports have a cable length");
    let meta = |f: &str| field(db, "DEVICE_METADATA", "localhost", f).unwrap_or("");
    headroom::required_xoff(&HeadroomInput {
        speed_mbps: num(db, "PORT", port, "speed"),
        cable_m: cable,
        port_mtu: field(db, "PORT", port, "mtu")
            .and_then(|v| v.parse().ok())
            .unwrap_or(9100),
        lossless_mtu: pat("mtu", 1024),
        small_packet_pct: pat("small_packet_percentage", 50),
        asic: Asic::from_metadata(meta("platform"), meta("hwsku")),
    })
    .expect("the base's speeds are in the formula's table")
}

// ---------------------------------------------------------------------------------
// Editing NIC text

/// The NIC facts the mutations need, read with the linter's own parsers.
#[derive(Clone, Debug)]
struct Nic {
    qos: MlnxQos,
    rdma_dscp: u8,
    cnp_dscp: u8,
    /// NIC priority of the RDMA DSCP.
    prio: u8,
    name: String,
}

impl Nic {
    fn read(b: &Base) -> Nic {
        let qos = MlnxQos::parse("q", &b.qos).expect("base mlnx_qos parses");
        let sys = nic::parse_sysfs("s", &b.sysfs).expect("base sysfs parses");
        let rdma_dscp = sys.iter().find_map(|n| n.tos).expect("base sysfs has the RoCE ToS") >> 2;
        let dev = sys
            .iter()
            .find(|n| n.np_enable.len() + n.rp_enable.len() > 0)
            .expect("base sysfs has DCQCN settings");
        Nic {
            prio: qos.prio_of_dscp(rdma_dscp),
            cnp_dscp: sys
                .iter()
                .find_map(|n| n.cnp_dscp)
                .expect("base sysfs has the CNP DSCP"),
            name: dev.name.clone(),
            rdma_dscp,
            qos,
        }
    }
}

/// Replace the eight values of the `label` row (`enabled`, `buffer`).
fn set_row(qos: &str, label: &str, vals: [u8; 8]) -> String {
    edit_lines(qos, |l| {
        let t = l.trim_start();
        t.starts_with(label).then(|| {
            let indent = &l[..l.len() - t.len()];
            let v: Vec<String> = vals.iter().map(u8::to_string).collect();
            format!("{indent}{label}     {}", v.join("   "))
        })
    })
}

fn edit_lines(text: &str, mut f: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::new();
    for l in text.lines() {
        out.push_str(&f(l).unwrap_or_else(|| l.to_string()));
        out.push('\n');
    }
    out
}

/// dscp2prio with `dscp` moved to priority `to`.
fn move_dscp(qos: &str, dscp: u8, to: u8) -> String {
    let mut done = false;
    let mut out = edit_lines(qos, |l| {
        let t = l.trim_start();
        let rest = t.strip_prefix("prio:")?;
        let (p, list) = rest.split_once(' ')?;
        let p: u8 = p.parse().ok()?;
        let mut ds: Vec<String> = list
            .trim()
            .strip_prefix("dscp:")?
            .split(',')
            .filter(|d| !d.is_empty() && d.trim().parse::<u8>().ok() != Some(dscp))
            .map(str::to_string)
            .collect();
        if p == to {
            ds.push(format!("{dscp:02}"));
            done = true;
        }
        let indent = &l[..l.len() - t.len()];
        Some(format!("{indent}prio:{p} dscp:{},", ds.join(",")))
    });
    assert!(done, "the base's dscp2prio lists priority {to}");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The value of the sysfs line whose path ends with `suffix` replaced.
fn set_sysfs(sysfs: &str, suffix: &str, value: &str) -> String {
    let mut hit = false;
    let out = edit_lines(sysfs, |l| {
        let (path, _) = l.split_once(':')?;
        path.ends_with(suffix).then(|| {
            hit = true;
            format!("{path}:{value}")
        })
    });
    assert!(hit, "no sysfs line ends with {suffix}");
    out
}

// ---------------------------------------------------------------------------------
// The generator

struct Gen<'b> {
    base: &'b Base,
    nic: Nic,
    out: Vec<Mutation>,
}

impl Gen<'_> {
    /// A switch-config mutation.
    fn sw(&mut self, rule: &'static str, what: String, mentions: Vec<String>, f: impl FnOnce(&mut Tables)) {
        let mut db = self.base.db.clone();
        f(&mut db);
        assert_ne!(db, self.base.db, "{}: {what} changed nothing", self.base.name);
        self.out.push(Mutation {
            rule,
            name: format!("{}: {what}", self.base.name),
            files: self.base.files(&db, &self.base.qos, &self.base.sysfs),
            mentions,
        });
    }

    /// A NIC mutation.
    fn nic(&mut self, rule: &'static str, what: String, mentions: Vec<String>, qos: String, sysfs: String) {
        assert!(
            qos != self.base.qos || sysfs != self.base.sysfs,
            "{}: {what} changed nothing",
            self.base.name
        );
        self.out.push(Mutation {
            rule,
            name: format!("{}: {what}", self.base.name),
            files: self.base.files(&self.base.db, &qos, &sysfs),
            mentions,
        });
    }

    fn db(&self) -> &Tables {
        &self.base.db
    }
}

/// Every mutation of `base`, rule by rule in the order of `diag::roce::RULES`.
pub fn mutations(base: &Base) -> Vec<Mutation> {
    let mut g = Gen {
        base,
        nic: Nic::read(base),
        out: Vec::new(),
    };
    pfc_not_enabled(&mut g);
    dscp_tc_mismatch(&mut g);
    ecn_after_pfc(&mut g);
    ecn_not_marking(&mut g);
    headroom_short(&mut g);
    mtu_mismatch(&mut g);
    pfcwd_off(&mut g);
    cnp_class(&mut g);
    dcqcn_off(&mut g);
    lossless_shared(&mut g);
    lossy_dscp_in_lossless_tc(&mut g);
    dangling_ref(&mut g);
    invalid_value(&mut g);
    g.out
}

fn without(list: &[u8], x: u8) -> String {
    list.iter()
        .filter(|&&p| p != x)
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn one_hot(i: u8) -> [u8; 8] {
    let mut v = [0u8; 8];
    v[i as usize] = 1;
    v
}

fn pfc_not_enabled(g: &mut Gen<'_>) {
    const R: &str = "pfc-not-enabled";
    let db = g.db().clone();
    let rdma = g.nic.rdma_dscp;
    // The RDMA TC's priority left out of pfc_enable on one port.
    for (e, port, prio) in lossless(&db) {
        if tc_of(&db, &e, rdma) != prio {
            continue;
        }
        g.sw(
            R,
            format!("{port} pfc_enable without {prio}"),
            vec![port.clone()],
            |db| {
                let k = isolate(db, "PORT_QOS_MAP", &port, None).expect("port has an entry");
                set(db, "PORT_QOS_MAP", &k, "pfc_enable", &without(&e.pfc, prio));
            },
        );
    }
    // No DSCP map on one port's entry (all traffic in TC 0), where no global map stands in.
    if field(&db, "PORT_QOS_MAP", "global", "dscp_to_tc_map").is_none() {
        for e in entries(&db) {
            for port in &e.ports {
                g.sw(R, format!("{port} without dscp_to_tc_map"), vec![port.clone()], |db| {
                    let k = isolate(db, "PORT_QOS_MAP", port, None).expect("port has an entry");
                    unset(db, "PORT_QOS_MAP", &k, "dscp_to_tc_map");
                });
            }
        }
    }
    // A lossless profile without xoff (no headroom: lossless PGs become lossy).
    for (prof, ports) in lossless_profiles(&db) {
        g.sw(
            R,
            format!("BUFFER_PROFILE|{prof} without xoff"),
            ports.iter().cloned().collect(),
            |db| unset(db, "BUFFER_PROFILE", &prof, "xoff"),
        );
    }
    // One port's lossless PG bound to a profile without xoff.
    for (e, port, prio) in lossless(&db) {
        let pg = pg_of_pfc(&db, &e, prio);
        g.sw(
            R,
            format!("{port} PG {pg} on a profile without xoff"),
            vec![port.clone()],
            |db| {
                let k = isolate(db, "BUFFER_PG", &port, Some(pg)).expect("lossless PG exists");
                let prof = field(db, "BUFFER_PG", &k, "profile")
                    .and_then(ref_name)
                    .expect("profile");
                let mut f = fields(db, "BUFFER_PROFILE", &prof).expect("profile").clone();
                f.remove("xoff");
                let lossy = format!("{prof}_no_xoff");
                db.get_mut("BUFFER_PROFILE").expect("table").insert(lossy.clone(), f);
                set(db, "BUFFER_PG", &k, "profile", &lossy);
            },
        );
    }
    // The NIC: PFC off on the RDMA priority, or on another priority instead.
    let p = g.nic.prio;
    let (qos, sysfs) = (g.base.qos.clone(), g.base.sysfs.clone());
    g.nic(
        R,
        format!("NIC PFC off on priority {p}"),
        vec![format!("NIC priority {p}")],
        set_row(&qos, "enabled", [0; 8]),
        sysfs.clone(),
    );
    for q in (0..8).filter(|&q| q != p) {
        g.nic(
            R,
            format!("NIC PFC on priority {q} instead of {p}"),
            vec![format!("NIC priority {p}"), format!("priorities {q}")],
            set_row(&qos, "enabled", one_hot(q)),
            sysfs.clone(),
        );
    }
}

fn dscp_tc_mismatch(g: &mut Gen<'_>) {
    const R: &str = "dscp-tc-mismatch";
    let db = g.db().clone();
    let (rdma, p) = (g.nic.rdma_dscp, g.nic.prio);
    let (qos, sysfs) = (g.base.qos.clone(), g.base.sysfs.clone());
    // The NIC trusts PCP.
    let pcp: String = qos
        .lines()
        .filter(|l| !l.trim_start().starts_with("prio:") && !l.trim_start().starts_with("dscp2prio"))
        .map(|l| l.replace("trust state: dscp", "trust state: pcp") + "\n")
        .collect();
    g.nic(
        R,
        "NIC trusts PCP".into(),
        vec!["trusts PCP".into()],
        pcp,
        sysfs.clone(),
    );
    // The NIC classifies the RDMA DSCP to another priority, with PFC, its buffer and
    // DCQCN moved along (a consistent NIC that disagrees with the switch).
    let buf = g.nic.qos.buffer.map(|b| b[p as usize]).unwrap_or(1);
    for q in (0..8).filter(|&q| q != p) {
        let mut b = [0u8; 8];
        b[q as usize] = buf;
        let qt = set_row(&set_row(&move_dscp(&qos, rdma, q), "enabled", one_hot(q)), "buffer", b);
        let st = set_sysfs(
            &set_sysfs(&sysfs, &format!("/ecn/roce_np/enable/{q}"), "1"),
            &format!("/ecn/roce_rp/enable/{q}"),
            "1",
        );
        g.nic(
            R,
            format!("NIC maps DSCP {rdma} to priority {q}"),
            vec![format!("DSCP {rdma} is NIC priority {q}")],
            qt,
            st,
        );
    }
    // The switch sends the RDMA DSCP to another lossless TC.
    let mut maps: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
    for e in entries(&db) {
        if let Some(m) = &e.dscp_map {
            maps.entry(m.clone()).or_default().extend(e.pfc.iter().copied());
        }
    }
    for (m, tcs) in maps {
        let cur = map(&db, "DSCP_TO_TC_MAP", &m).get(&rdma).copied().unwrap_or(0);
        for t in tcs.into_iter().filter(|&t| t != cur) {
            g.sw(
                R,
                format!("DSCP_TO_TC_MAP|{m} sends DSCP {rdma} to lossless TC {t}"),
                vec![format!("TC {t} on"), format!("PORT_QOS_MAP|")],
                |db| set(db, "DSCP_TO_TC_MAP", &m, &rdma.to_string(), &t.to_string()),
            );
        }
    }
}

fn ecn_after_pfc(g: &mut Gen<'_>) {
    const R: &str = "ecn-after-pfc";
    let db = g.db().clone();
    let profiles = lossless_profiles(&db);
    // WRED thresholds at and above the whole pool, so above any PFC trigger.
    for (w, ports) in lossless_wred(&db) {
        let pool_max = profiles
            .keys()
            .filter_map(|p| field(&db, "BUFFER_PROFILE", p, "pool").and_then(ref_name))
            .map(|pool| num(&db, "BUFFER_POOL", &pool, "size"))
            .max()
            .expect("lossless profiles have pools");
        g.sw(
            R,
            format!("WRED_PROFILE|{w} thresholds above the pool"),
            ports.into_iter().collect(),
            |db| {
                set(db, "WRED_PROFILE", &w, "green_min_threshold", &pool_max.to_string());
                set(
                    db,
                    "WRED_PROFILE",
                    &w,
                    "green_max_threshold",
                    &(2 * pool_max).to_string(),
                );
            },
        );
    }
    // Kmax one byte above the lowest PFC trigger of the PGs it races (Kmin below it).
    for (w, ports) in lossless_wred(&db) {
        let trigger = profiles
            .iter()
            .filter(|(_, ps)| !ps.is_disjoint(&ports))
            .map(|(p, _)| {
                let pool = field(&db, "BUFFER_PROFILE", p, "pool")
                    .and_then(ref_name)
                    .expect("pool");
                let th: i32 = field(&db, "BUFFER_PROFILE", p, "dynamic_th")
                    .and_then(|v| v.parse().ok())
                    .expect("the base's lossless profiles use dynamic_th");
                headroom::pfc_trigger_dynamic(num(&db, "BUFFER_POOL", &pool, "size"), th)
            })
            .min()
            .expect("a lossless profile");
        assert!(num(&db, "WRED_PROFILE", &w, "green_min_threshold") < trigger);
        g.sw(
            R,
            format!("WRED_PROFILE|{w} Kmax {} (trigger {trigger})", trigger + 1),
            vec![format!("Kmax {} B > PFC trigger {trigger} B", trigger + 1)],
            |db| {
                set(
                    db,
                    "WRED_PROFILE",
                    &w,
                    "green_max_threshold",
                    &(trigger + 1).to_string(),
                )
            },
        );
    }
    // A lossless profile's alpha so small that PFC fires below Kmin.
    for (prof, ports) in &profiles {
        g.sw(
            R,
            format!("BUFFER_PROFILE|{prof} dynamic_th -7"),
            ports.iter().cloned().collect(),
            |db| set(db, "BUFFER_PROFILE", prof, "dynamic_th", "-7"),
        );
    }
    // A lossless pool too small for the marking ramp.
    let pools: BTreeMap<String, BTreeSet<String>> = profiles.iter().fold(BTreeMap::new(), |mut m, (p, ports)| {
        if let Some(pool) = field(&db, "BUFFER_PROFILE", p, "pool").and_then(ref_name) {
            m.entry(pool).or_default().extend(ports.iter().cloned());
        }
        m
    });
    for (pool, ports) in pools {
        let size = num(&db, "BUFFER_POOL", &pool, "size");
        g.sw(
            R,
            format!("BUFFER_POOL|{pool} size / 20"),
            ports.into_iter().collect(),
            |db| set(db, "BUFFER_POOL", &pool, "size", &(size / 20).to_string()),
        );
    }
    // One port's lossless PG on a copy of its profile with that small alpha.
    for (e, port, prio) in lossless(&db) {
        let pg = pg_of_pfc(&db, &e, prio);
        g.sw(
            R,
            format!("{port} PG {pg} on a profile with dynamic_th -7"),
            vec![format!("of {port} PG {pg}")],
            |db| {
                let k = isolate(db, "BUFFER_PG", &port, Some(pg)).expect("lossless PG exists");
                let prof = field(db, "BUFFER_PG", &k, "profile")
                    .and_then(ref_name)
                    .expect("profile");
                let mut f = fields(db, "BUFFER_PROFILE", &prof).expect("profile").clone();
                f.insert("dynamic_th".into(), "-7".into());
                let low = format!("{prof}_th-7");
                db.get_mut("BUFFER_PROFILE").expect("table").insert(low.clone(), f);
                set(db, "BUFFER_PG", &k, "profile", &low);
            },
        );
    }
}

fn ecn_not_marking(g: &mut Gen<'_>) {
    const R: &str = "ecn-not-marking";
    let db = g.db().clone();
    // One port's lossless queue without a WRED profile.
    for (e, port, prio) in lossless(&db) {
        let q = queue_of_tc(&db, &e, prio);
        g.sw(
            R,
            format!("{port} queue {q} without wred_profile"),
            vec![format!("{port} queue {q}")],
            |db| {
                let k = isolate(db, "QUEUE", &port, Some(q)).expect("lossless queue exists");
                unset(db, "QUEUE", &k, "wred_profile");
            },
        );
    }
    // A lossless WRED profile that does not mark green packets.
    for (w, _) in lossless_wred(&db) {
        for ecn in ["ecn_none", "ecn_yellow", "ecn_red", "ecn_yellow_red"] {
            g.sw(
                R,
                format!("WRED_PROFILE|{w} ecn {ecn}"),
                vec![w.clone(), ecn.into()],
                |db| set(db, "WRED_PROFILE", &w, "ecn", ecn),
            );
        }
        g.sw(
            R,
            format!("WRED_PROFILE|{w} wred_green_enable false"),
            vec![w.clone(), "wred_green_enable".into()],
            |db| set(db, "WRED_PROFILE", &w, "wred_green_enable", "false"),
        );
    }
    // The NIC sends Not-ECT.
    let tos = g.nic.rdma_dscp << 2;
    g.nic(
        R,
        format!("NIC ToS {tos} (Not-ECT)"),
        vec![format!("RoCE ToS {tos}")],
        g.base.qos.clone(),
        set_sysfs(&g.base.sysfs, "traffic_class", &format!("Global tclass={tos}")),
    );
}

fn headroom_short(g: &mut Gen<'_>) {
    const R: &str = "headroom-short";
    let db = g.db().clone();
    for (prof, ports) in lossless_profiles(&db) {
        let need = ports.iter().map(|p| required_xoff(&db, p)).max().expect("ports");
        let xon = num(&db, "BUFFER_PROFILE", &prof, "xon");
        let xoff = num(&db, "BUFFER_PROFILE", &prof, "xoff");
        // xoff one byte short of the formula (size still xon + xoff).
        g.sw(
            R,
            format!("BUFFER_PROFILE|{prof} xoff {} (needs {need})", need - 1),
            vec![format!("< {need} B")],
            |db| {
                set(db, "BUFFER_PROFILE", &prof, "xoff", &(need - 1).to_string());
                set(db, "BUFFER_PROFILE", &prof, "size", &(xon + need - 1).to_string());
            },
        );
        // size one byte short of xon + xoff, without a shared headroom pool.
        g.sw(
            R,
            format!("BUFFER_PROFILE|{prof} size below xon + xoff"),
            vec![format!("BUFFER_PROFILE|{prof}")],
            |db| set(db, "BUFFER_PROFILE", &prof, "size", &(xon + xoff - 1).to_string()),
        );
    }
    let lossless_ports: BTreeSet<String> = lossless(&db).into_iter().map(|(_, p, _)| p).collect();
    let cable_key = keys(&db, "CABLE_LENGTH").into_iter().next().expect("CABLE_LENGTH");
    for port in &lossless_ports {
        let prof_xoff = lossless_profiles(&db)
            .iter()
            .filter(|(_, ps)| ps.contains(port))
            .map(|(p, _)| num(&db, "BUFFER_PROFILE", p, "xoff"))
            .min()
            .expect("port has a lossless profile");
        g.sw(R, format!("{port} without CABLE_LENGTH"), vec![port.clone()], |db| {
            unset(db, "CABLE_LENGTH", &cable_key, port)
        });
        g.sw(R, format!("{port} CABLE_LENGTH 0m"), vec![port.clone()], |db| {
            set(db, "CABLE_LENGTH", &cable_key, port, "0m")
        });
        // A longer cable or a faster port than the profile was made for.
        let mut longer = db.clone();
        set(&mut longer, "CABLE_LENGTH", &cable_key, port, "300m");
        assert!(required_xoff(&longer, port) > prof_xoff, "300 m needs more headroom");
        g.sw(
            R,
            format!("{port} CABLE_LENGTH 300m"),
            vec![format!("{port}: ")],
            |db| set(db, "CABLE_LENGTH", &cable_key, port, "300m"),
        );
        let mut faster = db.clone();
        set(&mut faster, "PORT", port, "speed", "400000");
        assert!(required_xoff(&faster, port) > prof_xoff, "400G needs more headroom");
        g.sw(R, format!("{port} speed 400000"), vec![format!("{port}: ")], |db| {
            set(db, "PORT", port, "speed", "400000")
        });
    }
    // The NIC sizes its own headroom for a shorter cable than the switch's.
    let nic_cable = g.nic.qos.cable_len_m.expect("base NIC has a cable length");
    let qos = edit_lines(&g.base.qos, |l| {
        l.trim_start()
            .starts_with("Cable len:")
            .then(|| "Cable len: 1".to_string())
    });
    assert!(nic_cable > 1);
    g.nic(
        R,
        "NIC Cable len 1".into(),
        vec!["sized for 1 m".into()],
        qos,
        g.base.sysfs.clone(),
    );
}

fn mtu_mismatch(g: &mut Gen<'_>) {
    const R: &str = "mtu-mismatch";
    let db = g.db().clone();
    for port in ports(&db) {
        g.sw(R, format!("{port} mtu 1500"), vec![format!("{port} MTU 1500")], |db| {
            set(db, "PORT", &port, "mtu", "1500")
        });
    }
    let dev_mtu_line = g
        .base
        .sysfs
        .lines()
        .find(|l| l.contains("/mtu:"))
        .expect("base sysfs has the NIC MTU")
        .split_once(':')
        .expect("path:value")
        .0
        .to_string();
    g.nic(
        R,
        "NIC MTU 9216".into(),
        vec!["NIC MTU 9216".into()],
        g.base.qos.clone(),
        set_sysfs(&g.base.sysfs, &dev_mtu_line, "9216"),
    );
}

fn pfcwd_off(g: &mut Gen<'_>) {
    const R: &str = "pfcwd-off";
    let db = g.db().clone();
    // A lossless port without a PFC_WD entry of its own (the default stays as it is).
    let lossless_ports: BTreeSet<String> = lossless(&db).into_iter().map(|(_, p, _)| p).collect();
    for port in &lossless_ports {
        let k = key_of(&db, "PFC_WD", port, None).expect("base ports have a watchdog");
        let one = split(&db, &k, false).ports.len() == 1;
        g.sw(R, format!("{port} without PFC_WD"), vec![port.clone()], |db| {
            if one {
                db.get_mut("PFC_WD").expect("table").remove(&k);
            } else {
                let own = isolate(db, "PFC_WD", port, None).expect("isolated");
                db.get_mut("PFC_WD").expect("table").remove(&own);
            }
        });
    }
    // A lossless priority the watchdog does not watch, on one port.
    for (_, port, prio) in lossless(&db) {
        g.sw(
            R,
            format!("{port} pfcwd_sw_enable without {prio}"),
            vec![format!("PORT_QOS_MAP|{port}"), format!("priorities {prio}")],
            |db| {
                let k = isolate(db, "PORT_QOS_MAP", &port, None).expect("port has an entry");
                let cur = field(db, "PORT_QOS_MAP", &k, "pfcwd_sw_enable")
                    .unwrap_or("")
                    .to_string();
                let cur = sonic::parse_prio_list(&cur).expect("base pfcwd_sw_enable");
                set(db, "PORT_QOS_MAP", &k, "pfcwd_sw_enable", &without(&cur, prio));
            },
        );
    }
    g.sw(
        R,
        "PFC_WD|GLOBAL BIG_RED_SWITCH enable".into(),
        vec!["BIG_RED_SWITCH".into()],
        |db| set(db, "PFC_WD", "GLOBAL", "BIG_RED_SWITCH", "enable"),
    );
}

fn cnp_class(g: &mut Gen<'_>) {
    const R: &str = "cnp-class";
    let db = g.db().clone();
    let (cnp, rdma) = (g.nic.cnp_dscp, g.nic.rdma_dscp);
    let maps: BTreeMap<String, Vec<Entry>> =
        entries(&db)
            .into_iter()
            .filter(|e| !e.pfc.is_empty())
            .fold(BTreeMap::new(), |mut m, e| {
                if let Some(n) = e.dscp_map.clone() {
                    m.entry(n).or_insert_with(Vec::new).push(e);
                }
                m
            });
    for (m, es) in &maps {
        let rdma_tc = tc_of(&db, &es[0], rdma);
        g.sw(
            R,
            format!("DSCP_TO_TC_MAP|{m} without DSCP {cnp}"),
            vec![format!("CNP DSCP {cnp}"), "not in the DSCP map".into()],
            |db| {
                db.get_mut("DSCP_TO_TC_MAP")
                    .and_then(|t| t.get_mut(m))
                    .expect("map")
                    .remove(&cnp.to_string());
            },
        );
        g.sw(
            R,
            format!("DSCP_TO_TC_MAP|{m} sends DSCP {cnp} to the RDMA TC {rdma_tc}"),
            vec![format!("shares TC {rdma_tc}")],
            |db| set(db, "DSCP_TO_TC_MAP", m, &cnp.to_string(), &rdma_tc.to_string()),
        );
    }
    // One port's CNP queue on a scheduler that is not strict.
    let weak = keys(&db, "SCHEDULER")
        .into_iter()
        .find(|s| !field(&db, "SCHEDULER", s, "type").is_some_and(|t| t.eq_ignore_ascii_case("STRICT")))
        .expect("base has a non-strict scheduler");
    let mut strict: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for es in maps.values() {
        for e in es {
            let q = queue_of_tc(&db, e, tc_of(&db, e, cnp));
            for port in &e.ports {
                let k = key_of(&db, "QUEUE", port, Some(q)).expect("CNP queue entry");
                let s = field(&db, "QUEUE", &k, "scheduler")
                    .and_then(ref_name)
                    .expect("scheduler");
                strict.entry(s).or_default().insert(port.clone());
                g.sw(
                    R,
                    format!("{port} queue {q} on {weak}"),
                    vec![format!("not strict on {port} (scheduler {weak}")],
                    |db| {
                        let k = isolate(db, "QUEUE", port, Some(q)).expect("queue");
                        set(db, "QUEUE", &k, "scheduler", &weak);
                    },
                );
            }
        }
    }
    // The CNP queues' scheduler made DWRR.
    for (s, ports) in strict {
        g.sw(
            R,
            format!("SCHEDULER|{s} DWRR"),
            ports
                .iter()
                .cloned()
                .chain([format!("(scheduler {s} (DWRR weight 1)")])
                .collect(),
            |db| {
                set(db, "SCHEDULER", &s, "type", "DWRR");
                set(db, "SCHEDULER", &s, "weight", "1");
            },
        );
    }
    // The NIC sends CNPs with a DSCP the switch map does not list.
    let listed: BTreeSet<u8> = maps
        .keys()
        .flat_map(|m| map(&db, "DSCP_TO_TC_MAP", m).into_keys())
        .collect();
    let other = (0..64u8)
        .find(|d| !listed.contains(d) && *d != rdma)
        .expect("a free DSCP");
    g.nic(
        R,
        format!("NIC cnp_dscp {other}"),
        vec![format!("CNP DSCP {other}")],
        g.base.qos.clone(),
        set_sysfs(&g.base.sysfs, "/ecn/roce_np/cnp_dscp", &other.to_string()),
    );
}

fn dcqcn_off(g: &mut Gen<'_>) {
    const R: &str = "dcqcn-off";
    let p = g.nic.prio;
    for side in ["roce_np", "roce_rp"] {
        g.nic(
            R,
            format!("NIC {}/ecn/{side}/enable/{p} 0", g.nic.name),
            vec![format!("ecn/{side}/enable/{p}")],
            g.base.qos.clone(),
            set_sysfs(&g.base.sysfs, &format!("/ecn/{side}/enable/{p}"), "0"),
        );
    }
}

fn lossless_shared(g: &mut Gen<'_>) {
    const R: &str = "lossless-shared";
    let db = g.db().clone();
    let cnp = g.nic.cnp_dscp;
    // Per map the entries using it: (lossless ids, lossy TCs in use).
    let es: Vec<Entry> = entries(&db).into_iter().filter(|e| !e.pfc.is_empty()).collect();
    let used_lossy = |e: &Entry| -> BTreeSet<u8> {
        let m = e
            .dscp_map
            .as_ref()
            .map(|n| map(&db, "DSCP_TO_TC_MAP", n))
            .unwrap_or_default();
        let mut s: BTreeSet<u8> = m.values().copied().collect();
        if m.len() < 64 {
            s.insert(0);
        }
        s.retain(|t| !e.pfc.contains(t));
        s
    };
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    for e in &es {
        let cnp_tc = tc_of(&db, e, cnp);
        for (field_name, table, targets) in [
            (
                "tc_to_pg_map",
                "TC_TO_PRIORITY_GROUP_MAP",
                e.pfc
                    .iter()
                    .map(|&p| {
                        entry_map(&db, e, "tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP")
                            .get(&p)
                            .copied()
                            .unwrap_or(p)
                    })
                    .collect::<BTreeSet<u8>>(),
            ),
            (
                "tc_to_queue_map",
                "TC_TO_QUEUE_MAP",
                e.pfc.iter().map(|&p| queue_of_tc(&db, e, p)).collect(),
            ),
        ] {
            let Some(m) = field(&db, "PORT_QOS_MAP", &e.key, field_name).and_then(ref_name) else {
                continue;
            };
            if !done.insert((table.to_string(), m.clone())) {
                continue;
            }
            for t in used_lossy(e) {
                // The CNP's TC in a lossless queue also puts CNPs behind RDMA data, which
                // cnp-class reports as well: two faults, left out.
                if table == "TC_TO_QUEUE_MAP" && t == cnp_tc {
                    continue;
                }
                for &to in &targets {
                    g.sw(
                        R,
                        format!("{table}|{m} sends lossy TC {t} to {to}"),
                        vec![format!("lossy TC {t} maps to")],
                        |db| set(db, table, &m, &t.to_string(), &to.to_string()),
                    );
                }
            }
        }
        if let Some(m) = field(&db, "PORT_QOS_MAP", &e.key, "pfc_to_queue_map").and_then(ref_name)
            && done.insert(("MAP_PFC_PRIORITY_TO_QUEUE".into(), m.clone()))
        {
            for &p in &e.pfc {
                let right = queue_of_tc(&db, e, p);
                for q in (0..8u8).filter(|&q| q != right) {
                    g.sw(
                        R,
                        format!("MAP_PFC_PRIORITY_TO_QUEUE|{m} pauses queue {q} for priority {p}"),
                        vec![format!("PFC priority {p} pauses queue {q}")],
                        |db| set(db, "MAP_PFC_PRIORITY_TO_QUEUE", &m, &p.to_string(), &q.to_string()),
                    );
                }
            }
        }
    }
    // The NIC's lossless priority shares its receive buffer with a lossy one.
    let p = g.nic.prio;
    let buf = g.nic.qos.buffer.expect("base NIC prints its buffers");
    let pfc = g.nic.qos.pfc.expect("base NIC prints PFC");
    for q in (0..8u8).filter(|&q| !pfc[q as usize]) {
        let mut b = buf;
        b[q as usize] = buf[p as usize];
        g.nic(
            R,
            format!("NIC priority {q} in buffer {}", buf[p as usize]),
            vec![format!("lossy priorities {q}")],
            set_row(&g.base.qos, "buffer", b),
            g.base.sysfs.clone(),
        );
    }
}

fn lossy_dscp_in_lossless_tc(g: &mut Gen<'_>) {
    const R: &str = "lossy-dscp-in-lossless-tc";
    let db = g.db().clone();
    let (rdma, cnp) = (g.nic.rdma_dscp, g.nic.cnp_dscp);
    // Per DSCP map: its lossless TCs on entries whose RDMA class is lossless, with ports.
    let mut tcs: BTreeMap<String, BTreeMap<u8, BTreeSet<String>>> = BTreeMap::new();
    for e in entries(&db) {
        let Some(m) = &e.dscp_map else { continue };
        if !e.pfc.contains(&tc_of(&db, &e, rdma)) {
            continue;
        }
        for &t in &e.pfc {
            tcs.entry(m.clone())
                .or_default()
                .entry(t)
                .or_default()
                .extend(e.ports.iter().cloned());
        }
    }
    for (m, by_tc) in tcs {
        let cur = map(&db, "DSCP_TO_TC_MAP", &m);
        for d in (0..64u8).filter(|&d| d != rdma && d != cnp) {
            for (&t, ports) in &by_tc {
                if cur.get(&d).copied().unwrap_or(0) == t {
                    continue;
                }
                let mut mentions = vec![
                    format!("DSCP_TO_TC_MAP|{m} [{d}]"),
                    format!("DSCP {d} maps to TC {t} in DSCP_TO_TC_MAP|{m}"),
                ];
                mentions.extend(ports.iter().cloned());
                g.sw(
                    R,
                    format!("DSCP_TO_TC_MAP|{m} sends DSCP {d} to TC {t}"),
                    mentions,
                    |db| set(db, "DSCP_TO_TC_MAP", &m, &d.to_string(), &t.to_string()),
                );
            }
        }
    }
}

/// Reference fields of the SONiC schema (sonic-yang-models Configuration.md) and the
/// table each must name an entry of.
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

fn dangling_ref(g: &mut Gen<'_>) {
    const R: &str = "dangling-ref";
    let db = g.db().clone();
    for &(table, f, target) in REFS {
        for k in keys(&db, table) {
            let Some(v) = field(&db, table, &k, f).map(str::to_string) else {
                continue;
            };
            let loc = format!("{table}|{k} [{f}]");
            // A name that is not there, in the style the value was written in.
            let missing = match sonic::parse_ref(&v).and_then(|r| r.table) {
                Some(t) => format!("[{t}|{}_MISSING]", ref_name(&v).expect("name")),
                None => format!("{}_MISSING", v.split(',').next().unwrap_or("").trim()),
            };
            g.sw(R, format!("{table}|{k}.{f} = {missing}"), vec![loc.clone()], |db| {
                set(db, table, &k, f, &missing)
            });
            // The right name in the wrong table.
            let wrong = if target == "TC_TO_QUEUE_MAP" {
                "DSCP_TO_TC_MAP"
            } else {
                "TC_TO_QUEUE_MAP"
            };
            let name = ref_name(&v).expect("name");
            g.sw(
                R,
                format!("{table}|{k}.{f} = [{wrong}|{name}]"),
                vec![loc, format!("points into table {wrong}")],
                |db| set(db, table, &k, f, &format!("[{wrong}|{name}]")),
            );
        }
    }
    // A port that does not exist added to an indexed key (a PORT_QOS_MAP or PFC_WD
    // key naming it would also leave that port without cable length or watchdog).
    let ghost = "Ethernet999";
    for table in ["BUFFER_PG", "BUFFER_QUEUE", "QUEUE"] {
        for k in keys(&db, table) {
            let (ps, ids) = k.rsplit_once('|').expect("indexed key");
            let nk = format!("{ps},{ghost}|{ids}");
            g.sw(
                R,
                format!("{table}|{k} also names {ghost}"),
                vec![format!("{table}|{nk}"), ghost.into()],
                |db| {
                    let t = db.get_mut(table).expect("table");
                    let f = t.remove(&k).expect("entry");
                    t.insert(nk.clone(), f);
                },
            );
        }
    }
}

fn invalid_value(g: &mut Gen<'_>) {
    const R: &str = "invalid-value";
    let db = g.db().clone();
    // Every entry of every map a PORT_QOS_MAP entry uses, set to a TC/queue/PG of 8.
    let mut maps: BTreeSet<(&str, String)> = BTreeSet::new();
    for &(_, f, target) in REFS.iter().filter(|(t, _, _)| *t == "PORT_QOS_MAP") {
        if target == "SCHEDULER" {
            continue;
        }
        for k in keys(&db, "PORT_QOS_MAP") {
            if let Some(n) = field(&db, "PORT_QOS_MAP", &k, f).and_then(ref_name)
                && fields(&db, target, &n).is_some()
            {
                maps.insert((target, n));
            }
        }
    }
    for (table, m) in maps {
        for from in fields(&db, table, &m).expect("map").keys() {
            g.sw(
                R,
                format!("{table}|{m} {from} -> 8"),
                vec![format!("{table}|{m}"), format!("value 8 for {from}")],
                |db| set(db, table, &m, from, "8"),
            );
        }
    }
    // PFC watchdog times and actions, per port entry, and the poll interval.
    let poll = field(&db, "PFC_WD", "GLOBAL", "POLL_INTERVAL").and_then(|v| v.parse::<u64>().ok());
    for k in keys(&db, "PFC_WD").into_iter().filter(|k| k != "GLOBAL") {
        let mut bad: Vec<(&str, String)> = vec![
            ("detection_time", "50".into()),
            ("detection_time", "6000".into()),
            ("restoration_time", "50".into()),
            ("restoration_time", "70000".into()),
            ("detection_time", "soon".into()),
            ("action", "shutdown".into()),
        ];
        if let Some(p) = poll.filter(|&p| p > 100) {
            bad.push(("detection_time", (p - 1).max(100).to_string()));
        }
        for (f, v) in bad {
            g.sw(
                R,
                format!("PFC_WD|{k}.{f} = {v}"),
                vec![format!("PFC_WD|{k} [{f}]")],
                |db| set(db, "PFC_WD", &k, f, &v),
            );
        }
    }
    for v in ["50", "2000", "fast"] {
        g.sw(
            R,
            format!("PFC_WD|GLOBAL.POLL_INTERVAL = {v}"),
            vec!["PFC_WD|GLOBAL [POLL_INTERVAL]".into()],
            |db| set(db, "PFC_WD", "GLOBAL", "POLL_INTERVAL", v),
        );
    }
    // Per port: an MTU and a cable length that are not numbers.
    let cable_key = keys(&db, "CABLE_LENGTH").into_iter().next().expect("CABLE_LENGTH");
    for port in ports(&db) {
        g.sw(
            R,
            format!("PORT|{port}.mtu = 9100B"),
            vec![format!("PORT|{port} [mtu]")],
            |db| set(db, "PORT", &port, "mtu", "9100B"),
        );
        g.sw(
            R,
            format!("CABLE_LENGTH|{cable_key}.{port} = 5 metres"),
            vec![format!("[{port}]")],
            |db| set(db, "CABLE_LENGTH", &cable_key, &port, "5 metres"),
        );
    }
    // Per lossless profile: an xoff that is not a number.
    for (prof, _) in lossless_profiles(&db) {
        g.sw(
            R,
            format!("BUFFER_PROFILE|{prof}.xoff = lots"),
            vec![format!("BUFFER_PROFILE|{prof} [xoff]")],
            |db| set(db, "BUFFER_PROFILE", &prof, "xoff", "lots"),
        );
    }
    // Per lossless WRED profile: max below min, and a threshold missing.
    for (w, _) in lossless_wred(&db) {
        let (lo, hi) = (
            num(&db, "WRED_PROFILE", &w, "green_min_threshold"),
            num(&db, "WRED_PROFILE", &w, "green_max_threshold"),
        );
        g.sw(
            R,
            format!("WRED_PROFILE|{w} green max below min"),
            vec![format!("WRED_PROFILE|{w} [green_max_threshold]")],
            |db| {
                set(db, "WRED_PROFILE", &w, "green_min_threshold", &hi.to_string());
                set(db, "WRED_PROFILE", &w, "green_max_threshold", &lo.to_string());
            },
        );
        g.sw(
            R,
            format!("WRED_PROFILE|{w} without green_max_threshold"),
            vec![format!("WRED_PROFILE|{w}")],
            |db| unset(db, "WRED_PROFILE", &w, "green_max_threshold"),
        );
    }
    // Per PORT_QOS_MAP entry: a pfcwd_sw_enable priority outside 0..7.
    for e in entries(&db) {
        for port in &e.ports {
            g.sw(
                R,
                format!("{port} pfcwd_sw_enable with priority 9"),
                vec![format!("PORT_QOS_MAP|{port} [pfcwd_sw_enable]")],
                |db| {
                    let k = isolate(db, "PORT_QOS_MAP", port, None).expect("entry");
                    let cur = field(db, "PORT_QOS_MAP", &k, "pfcwd_sw_enable")
                        .unwrap_or("")
                        .to_string();
                    let v = if cur.is_empty() {
                        "9".to_string()
                    } else {
                        format!("{cur},9")
                    };
                    set(db, "PORT_QOS_MAP", &k, "pfcwd_sw_enable", &v);
                },
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// The bases

/// The second base, derived from the first: every port-keyed entry split into one key
/// per port and id, the DSCP map named once in `PORT_QOS_MAP|global`, a second
/// lossless class (the lowest TC above the RDMA TC that no DSCP uses) set up as the
/// RDMA TC is (pfc_enable, watchdog, maps, PG, queue with WRED), written as a redis
/// dump. The NIC files are the first base's.
pub fn per_port_two_classes(a: &Base, name: &'static str) -> Base {
    let mut db = a.db.clone();
    let nic = Nic::read(a);
    for (t, indexed) in [
        ("PORT_QOS_MAP", false),
        ("QUEUE", true),
        ("BUFFER_PG", true),
        ("BUFFER_QUEUE", true),
        ("PFC_WD", false),
    ] {
        split_all(&mut db, t, indexed);
    }
    let es = entries(&db);
    let dscp_map = es[0].dscp_map.clone().expect("the first base has a DSCP map");
    for e in &es {
        assert_eq!(
            e.dscp_map.as_deref(),
            Some(dscp_map.as_str()),
            "one DSCP map in the first base"
        );
        unset(&mut db, "PORT_QOS_MAP", &e.key, "dscp_to_tc_map");
    }
    set(&mut db, "PORT_QOS_MAP", "global", "dscp_to_tc_map", &dscp_map);
    let used: BTreeSet<u8> = map(&db, "DSCP_TO_TC_MAP", &dscp_map).into_values().collect();
    let rdma_tc = tc_of(&db, &entries(&db)[0], nic.rdma_dscp);
    let extra = (rdma_tc + 1..8)
        .find(|t| !used.contains(t))
        .expect("a free TC above the RDMA TC");
    let (rt, xt) = (rdma_tc.to_string(), extra.to_string());
    for e in entries(&db) {
        for f in ["pfc_enable", "pfcwd_sw_enable"] {
            let cur = field(&db, "PORT_QOS_MAP", &e.key, f).expect("field").to_string();
            set(&mut db, "PORT_QOS_MAP", &e.key, f, &format!("{cur},{xt}"));
        }
        for (f, table) in [
            ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP"),
            ("tc_to_queue_map", "TC_TO_QUEUE_MAP"),
            ("pfc_to_queue_map", "MAP_PFC_PRIORITY_TO_QUEUE"),
            ("pfc_to_pg_map", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"),
        ] {
            if let Some(m) = field(&db, "PORT_QOS_MAP", &e.key, f).and_then(ref_name) {
                set(&mut db, table, &m, &xt, &xt);
            }
        }
        for port in &e.ports {
            for table in ["BUFFER_PG", "QUEUE", "BUFFER_QUEUE"] {
                let src = fields(&db, table, &format!("{port}|{rt}"))
                    .expect("RDMA TC entry")
                    .clone();
                db.get_mut(table).expect("table").insert(format!("{port}|{xt}"), src);
            }
        }
    }
    Base {
        name,
        db,
        flat: true,
        qos: a.qos.clone(),
        sysfs: a.sysfs.clone(),
    }
}
