//! Partitions: P_Key tables programmed by SMP from a partitions.conf, over the
//! in-process SMA and over ibsim, where the real `smpquery pkeys` reads them back.
//! Test names with "ibsim" run one at a time under nextest.

use std::sync::Arc;
use std::time::Duration;

use fabric::{Fabric, NodeId, NodeKind};
use sm::partitions;
use sm::sma::InProcess;
use sm::sweep::{Issue, SubnetManager, SweepOptions};

use crate::support::{Ibsim, parse_guid2lid, read_net, require_ibsim_tools};

/// Tenants on net.2sw2path4hca (port GUIDs: Hca1 0x100001, Hca2 0x100004, Hca3
/// 0x100007, Hca4 0x10000a). Hca4 is in no partition; the default partition holds
/// only the SM's port and the switches.
const TENANTS: &str = "\
# the default partition: management only
Default=0x7fff : SELF=full, ALL_SWITCHES=full ;
jobA=0x8001, ipoib, defmember=full :
    0x100001, 0x100004,      # Hca1 Hca2 full
    0x100007=limited ;       # Hca3 limited
storage=0x0010, indx0 : 0x100001=limited, 0x100007=full ;
";

/// What the file says, port by port (indexes as OpenSM lays them out: `indx0` first,
/// kept entries, then new ones in P_Key order).
fn expected(name: &str) -> Vec<u16> {
    match name {
        // SM port: storage limited at index 0, jobA full, default full (displaced).
        "Hca1" => vec![0x0010, 0x8001, 0xffff],
        "Hca2" => vec![0x8001],
        // A limited member of jobA, full member of storage (indx0).
        "Hca3" => vec![0x8010, 0x0001],
        // In no partition: an empty table.
        "Hca4" => vec![],
        _ => unreachable!(),
    }
}

fn conf(text: &str) -> Arc<partitions::PartitionsConf> {
    Arc::new(partitions::parse(text, "partitions.conf").unwrap())
}

fn sm_with(c: Arc<partitions::PartitionsConf>) -> SubnetManager {
    SubnetManager::new(
        SweepOptions {
            partitions: Some(c),
            ..Default::default()
        },
        1,
    )
}

fn node(f: &Fabric, name: &str) -> NodeId {
    f.by_name(name).unwrap_or_else(|| panic!("{name}"))
}

/// Non-zero entries, trailing zeros cut.
fn trimmed(t: &[u16]) -> Vec<u16> {
    let end = t.iter().rposition(|&k| k != 0).map_or(0, |i| i + 1);
    t[..end].to_vec()
}

#[test]
fn in_process_sweep_programs_every_table_once() {
    let f = read_net("net.2sw2path4hca");
    let h1 = node(&f, "Hca1");
    let mut fab = InProcess::new(f.clone(), (h1, 1));
    let mut sm = sm_with(conf(TENANTS));
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    for name in ["Hca1", "Hca2", "Hca3", "Hca4"] {
        assert_eq!(trimmed(&fab.pkeys(node(&f, name), 1)), expected(name), "{name}");
        // The switch port facing it holds the same table.
        let (e, _) = f.peer(node(&f, name), 1).unwrap();
        assert_eq!(
            trimmed(&fab.pkeys(e.node, e.port)),
            expected(name),
            "switch port facing {name}"
        );
    }
    for s in f.nodes_of(NodeKind::Switch) {
        assert_eq!(trimmed(&fab.pkeys(s, 0)), [0xffff], "switch port 0");
        // Inter-switch ports keep their power-on table.
        for p in f.node(s).port_nums() {
            if f.peer(s, p)
                .is_some_and(|(e, _)| f.node(e.node).kind == NodeKind::Switch)
            {
                assert_eq!(trimmed(&fab.pkeys(s, p)), [0xffff], "ISL port {p}");
            }
        }
    }
    // 4 CA ports + 2 switch ports 0 + 4 switch ports facing CAs, one block each.
    let p = r.pkeys.clone().unwrap();
    assert_eq!((p.ports, p.enforced, p.blocks_sent, p.blocks_unchanged), (10, 4, 10, 0));
    assert_eq!(r.to_json(None)["pkeys"]["blocks_sent"], 10);
    // A second sweep finds everything in place and sends no P_KeyTable block.
    let r2 = sm.heavy_sweep(&mut fab);
    let p2 = r2.pkeys.unwrap();
    assert_eq!((p2.blocks_sent, p2.blocks_unchanged), (0, 10));
}

#[test]
fn without_partitions_no_table_is_touched_and_the_report_has_no_pkeys() {
    let f = read_net("net.2sw2path4hca");
    let mut fab = InProcess::new(f.clone(), (node(&f, "Hca1"), 1));
    let mut sm = SubnetManager::new(SweepOptions::default(), 1);
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.pkeys.is_none() && r.to_json(None).get("pkeys").is_none());
    for n in f.node_ids() {
        assert_eq!(trimmed(&fab.pkeys(n, 1)), [0xffff]);
    }
}

#[test]
fn an_unknown_guid_is_an_issue_naming_the_line_and_opensms_fallback_is_programmed() {
    let f = read_net("net.2sw2path4hca");
    let mut fab = InProcess::new(f.clone(), (node(&f, "Hca1"), 1));
    let mut sm = sm_with(conf("a=0x8001 :\n  0x100001,\n  0x2c903000abcd ;\n"));
    let r = sm.heavy_sweep(&mut fab);
    assert_eq!(
        r.issues,
        [Issue::Partitions {
            error: "partitions.conf:3: port GUID 0x00002c903000abcd is not a port of the fabric".into()
        }]
    );
    assert!(r.pkeys.unwrap().fell_back);
    // OpenSM's configuration after an error: Default=0x7fff : ALL=full.
    assert_eq!(trimmed(&fab.pkeys(node(&f, "Hca3"), 1)), [0xffff]);
}

/// `smpquery pkeys` text (infiniband-diags `smpquery.c pkey_table`): rows
/// `"%4u: 0x%04x x8"`, then `"%d pkeys capacity for this port"`.
fn parse_smpquery_pkeys(text: &str) -> (Vec<u16>, usize) {
    let mut keys = Vec::new();
    let mut cap = None;
    for l in text.lines() {
        if let Some(c) = l.strip_suffix(" pkeys capacity for this port") {
            cap = Some(c.trim().parse().unwrap());
            continue;
        }
        let (idx, rest) = l.split_once(':').unwrap_or_else(|| panic!("not a pkeys row: {l:?}"));
        assert_eq!(idx.trim().parse::<usize>().unwrap(), keys.len(), "row index in {l:?}");
        for w in rest.split_whitespace() {
            keys.push(u16::from_str_radix(w.strip_prefix("0x").unwrap(), 16).unwrap());
        }
    }
    (keys, cap.unwrap_or_else(|| panic!("no capacity line:\n{text}")))
}

#[test]
fn umad_ibsim_partitions_are_programmed_and_smpquery_pkeys_shows_them() {
    require_ibsim_tools();
    let name = "net.2sw2path4hca";
    let text = std::fs::read_to_string(sm::testkit::samples_dir().join(name)).unwrap();
    let f = sm::testkit::ibsim_net(&text).unwrap();
    let mut sim = Ibsim::start(&text, "pkeys");
    sim.tools_host = Some("Hca1".into());
    let file = sim.dir.path().join("partitions.conf");
    std::fs::write(&file, TENANTS).unwrap();
    let dump = sim.dir.path().join("dump");
    let mut ours = sim.spawn_sm(
        "Hca1",
        &[
            "--once",
            "--dump",
            dump.to_str().unwrap(),
            "--partitions",
            file.to_str().unwrap(),
        ],
        "ours",
    );
    let log = ours.wait_for("exit: state MASTER", 1, Duration::from_secs(120));
    assert!(log.contains("SUBNET UP") && log.contains("0 issue(s)"), "{log}");
    let lids = parse_guid2lid(&std::fs::read_to_string(dump.join("guid2lid")).unwrap());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dump.join("sm-report.json")).unwrap()).unwrap();
    assert_eq!(report["pkeys"]["ports"], 10, "{report}");
    let query = |lid: u16, port: Option<u8>| {
        let mut args = vec!["pkeys".to_string(), lid.to_string()];
        args.extend(port.map(|p| p.to_string()));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        parse_smpquery_pkeys(&sim.tool("smpquery", &a))
    };
    for ca in ["Hca1", "Hca2", "Hca3", "Hca4"] {
        let n = node(&f, ca);
        let lid = lids[&f.node(n).port_guid(1).0];
        let (keys, cap) = query(lid, None);
        // ibsim CAs: NodeInfo.PartitionCap 64 (reference §1.4).
        assert_eq!((keys.len(), cap), (64, 64), "{ca}");
        assert_eq!(trimmed(&keys), expected(ca), "smpquery pkeys {lid} ({ca})");
        // The switch port facing the CA: the same table (capacity
        // SwitchInfo.PartitionEnforcementCap, 64 in ibsim).
        let (e, _) = f.peer(n, 1).unwrap();
        let sw_lid = lids[&f.node(e.node).node_guid.0];
        let (keys, cap) = query(sw_lid, Some(e.port));
        assert_eq!(cap, 64);
        assert_eq!(
            trimmed(&keys),
            expected(ca),
            "smpquery pkeys {sw_lid} {} (facing {ca})",
            e.port
        );
    }
    for s in f.nodes_of(NodeKind::Switch) {
        let lid = lids[&f.node(s).node_guid.0];
        let (keys, cap) = query(lid, Some(0));
        // ibsim switch port 0: capacity 8; ALL_SWITCHES=full in the default partition.
        assert_eq!((trimmed(&keys), cap), (vec![0xffff], 8), "switch LID {lid} port 0");
        // An inter-switch port is left alone: its power-on table.
        let (keys, _) = query(lid, Some(3));
        assert_eq!(trimmed(&keys), [0xffff], "ISL port 3 of LID {lid}");
    }
}

#[test]
fn umad_ibsim_an_unknown_guid_is_reported_with_its_line_and_opensms_fallback_is_programmed() {
    require_ibsim_tools();
    let name = "net.2sw2path4hca";
    let text = std::fs::read_to_string(sm::testkit::samples_dir().join(name)).unwrap();
    let f = sm::testkit::ibsim_net(&text).unwrap();
    let mut sim = Ibsim::start(&text, "pkeys-bad");
    sim.tools_host = Some("Hca1".into());
    let file = sim.dir.path().join("partitions.conf");
    // Line 3 names a port no node of the fabric has.
    std::fs::write(&file, "jobA=0x8001 :\n    0x100001,\n    0x2c903000abcd ;\n").unwrap();
    let dump = sim.dir.path().join("dump");
    let mut ours = sim.spawn_sm(
        "Hca1",
        &[
            "--once",
            "--dump",
            dump.to_str().unwrap(),
            "--partitions",
            file.to_str().unwrap(),
        ],
        "ours",
    );
    let log = ours.wait_for("exit: state MASTER", 1, Duration::from_secs(120));
    assert!(log.contains("SUBNET UP") && log.contains("1 issue(s)"), "{log}");
    assert!(log.contains("(FELL BACK to Default=0x7fff : ALL=full)"), "{log}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dump.join("sm-report.json")).unwrap()).unwrap();
    let want = format!(
        "partitions: {}:3: port GUID 0x00002c903000abcd is not a port of the fabric",
        file.display()
    );
    assert_eq!(report["issues"], serde_json::json!([want]), "{report}");
    // Every CA port a full member of the default partition, as OpenSM falls back.
    let lids = parse_guid2lid(&std::fs::read_to_string(dump.join("guid2lid")).unwrap());
    for ca in ["Hca1", "Hca2", "Hca3", "Hca4"] {
        let lid = lids[&f.node(node(&f, ca)).port_guid(1).0];
        let (keys, _) = parse_smpquery_pkeys(&sim.tool("smpquery", &["pkeys", &lid.to_string()]));
        assert_eq!(trimmed(&keys), [0xffff], "{ca}");
    }
}
