//! The RoCE linter against the real SONiC samples, a seeded corpus, a clean
//! configuration, malformed input and fuzzed input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use diag::Severity;
use diag::roce::{LintError, LintOptions, LintReport, lint_paths, lint_texts, parse_input};
use proptest::prelude::*;

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/roce").join(p)
}

fn examples(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/roce")
        .join(p)
}

fn lint(paths: &[PathBuf]) -> LintReport {
    lint_paths(paths, &LintOptions::default()).unwrap()
}

fn rules_of(r: &LintReport) -> BTreeSet<String> {
    r.findings
        .iter()
        .map(|f| format!("{} {}", f.severity, f.rule))
        .collect()
}

#[test]
fn single_port_sample_reports_its_dangling_references() {
    let r = lint(&[data("samples/sonic-port-qos-single-port.config_db.json")]);
    let dangling: Vec<String> = r
        .findings
        .iter()
        .filter(|f| f.rule == "dangling-ref")
        .map(|f| {
            format!(
                "{}|{} {}",
                f.location.table.as_deref().unwrap(),
                f.location.key.as_deref().unwrap(),
                f.location.field.as_deref().unwrap()
            )
        })
        .collect();
    // Every reference in the file is to something the file does not define
    // (SOURCES.md: "It refers to maps and profiles that are not defined in the file").
    assert_eq!(
        dangling,
        vec![
            "BUFFER_PG|Ethernet0|0 profile",
            "BUFFER_QUEUE|Ethernet0|0-2 profile",
            "BUFFER_QUEUE|Ethernet0|3-4 profile",
            "BUFFER_QUEUE|Ethernet0|5-6 profile",
            "PORT_QOS_MAP|Ethernet0 dscp_to_tc_map",
            "PORT_QOS_MAP|Ethernet0 pfc_to_queue_map",
            "PORT_QOS_MAP|Ethernet0 tc_to_pg_map",
            "PORT_QOS_MAP|Ethernet0 tc_to_queue_map",
            "QUEUE|Ethernet0|0 scheduler",
            "QUEUE|Ethernet0|1 scheduler",
            "QUEUE|Ethernet0|2 scheduler",
            "QUEUE|Ethernet0|3 scheduler",
            "QUEUE|Ethernet0|3 wred_profile",
            "QUEUE|Ethernet0|4 scheduler",
            "QUEUE|Ethernet0|4 wred_profile",
            "QUEUE|Ethernet0|5 scheduler",
            "QUEUE|Ethernet0|6 scheduler",
        ]
    );
    assert!(
        r.findings
            .iter()
            .all(|f| f.severity == Severity::Error || f.rule == "pfcwd-off")
    );
    assert_eq!(
        rules_of(&r),
        ["error dangling-ref", "warning pfcwd-off"].map(String::from).into()
    );
    assert!(r.has_errors());
}

#[test]
fn inventec_template_leaves_every_dscp_but_3_and_4_lossy() {
    let r = lint(&[data("samples/sonic-qos-inventec-d7032q28b-c32.qos.json")]);
    let pfc: Vec<_> = r.findings.iter().filter(|f| f.rule == "pfc-not-enabled").collect();
    assert_eq!(pfc.len(), 1, "{}", r.render_text());
    assert!(pfc[0].message.contains("RDMA DSCP 26"), "{}", pfc[0].message);
    assert!(pfc[0].message.contains("maps to TC 0"), "{}", pfc[0].message);
    assert!(
        pfc[0]
            .message
            .contains("the only DSCPs that reach a lossless TC are 3,4"),
        "{}",
        pfc[0].message
    );
    // The DSCP is assumed (no NIC file), so this is a warning, not an error.
    assert_eq!(pfc[0].severity, Severity::Warning);
    // The comma-joined key is reported exactly as written.
    assert!(
        pfc[0]
            .location
            .key
            .as_deref()
            .unwrap()
            .starts_with("Ethernet0,Ethernet4,Ethernet8,")
    );
    // CNP DSCP 48 also lands in TC 0 / queue 0, a lossy DWRR queue.
    let cnp: Vec<_> = r.findings.iter().filter(|f| f.rule == "cnp-class").collect();
    assert_eq!(cnp.len(), 1);
    assert!(
        cnp[0].message.contains("queue 0") && cnp[0].message.contains("DWRR"),
        "{}",
        cnp[0].message
    );
    assert_eq!(
        rules_of(&r),
        ["warning cnp-class", "warning pfc-not-enabled", "warning pfcwd-off"]
            .map(String::from)
            .into()
    );
    // Given the DSCP explicitly, the same finding is an error.
    let r = lint_paths(
        &[data("samples/sonic-qos-inventec-d7032q28b-c32.qos.json")],
        &LintOptions {
            rdma_dscp: Some(26),
            cnp_dscp: None,
        },
    )
    .unwrap();
    assert!(
        r.findings
            .iter()
            .any(|f| f.rule == "pfc-not-enabled" && f.severity == Severity::Error)
    );
    // With DSCP 3 (the SONiC default lossless DSCP) the RDMA class is lossless.
    let r = lint_paths(
        &[data("samples/sonic-qos-inventec-d7032q28b-c32.qos.json")],
        &LintOptions {
            rdma_dscp: Some(3),
            cnp_dscp: None,
        },
    )
    .unwrap();
    assert!(!r.findings.iter().any(|f| f.rule == "pfc-not-enabled"));
}

#[test]
fn sn2700_redis_dump_headroom_and_watchdog() {
    let r = lint(&[data(
        "samples/sonic-buffers-mellanox-sn2700-traditional.redis-dump.json",
    )]);
    let head: Vec<(&str, &str)> = r
        .findings
        .iter()
        .filter(|f| f.rule == "headroom-short")
        .map(|f| (f.location.key.as_deref().unwrap(), f.message.split(':').next().unwrap()))
        .collect();
    // 50G and 100G admin-up ports have xoff below the §3.2 requirement at MTU 9100;
    // Ethernet20 (100G) is admin down, and the 10G/40G profiles are large enough.
    assert_eq!(
        head,
        vec![("Ethernet16|3-4", "Ethernet16"), ("Ethernet28|3-4", "Ethernet28")]
    );
    assert!(r.findings.iter().any(|f| f.message.contains("23552 B < 41984 B")));
    assert_eq!(
        rules_of(&r),
        ["error headroom-short", "warning pfcwd-off"].map(String::from).into()
    );
    let wd = r.findings.iter().find(|f| f.rule == "pfcwd-off").unwrap();
    assert_eq!(wd.location.field.as_deref(), Some("default_pfcwd_status"));
}

#[test]
fn clean_configuration_has_no_finding() {
    let r = lint(&[
        examples("clean/config_db.json"),
        examples("clean/mlnx_qos.txt"),
        examples("clean/sysfs.txt"),
    ]);
    assert!(r.findings.is_empty(), "{}", r.render_text());
    assert_eq!(r.rdma_dscps, vec![26]);
    assert!(!r.rdma_dscp_assumed && !r.cnp_dscp_assumed);
    assert!(!r.has_errors());
}

#[test]
fn seeded_corpus_each_caught_by_its_rule_only() {
    let dir = data("seeded");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 12, "corpus has {} cases", cases.len());
    let mut rules_hit = BTreeSet::new();
    for c in &cases {
        let expected: BTreeSet<String> = std::fs::read_to_string(c.join("expected"))
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        let r = lint(&[c.join("config_db.json"), c.join("mlnx_qos.txt"), c.join("sysfs.txt")]);
        assert_eq!(rules_of(&r), expected, "case {}:\n{}", c.display(), r.render_text());
        for f in &r.findings {
            assert!(!f.fix.is_empty() && !f.why.is_empty() && f.location.file.is_some());
            rules_hit.insert(f.rule);
        }
    }
    // Every rule the linter has is exercised by at least one seeded case.
    for rule in diag::roce::RULES {
        assert!(rules_hit.contains(rule.id), "no seeded case for {}", rule.id);
    }
}

#[test]
fn lossy_dscp_in_the_rdma_tc_names_map_dscp_tc_and_ports() {
    let c = data("seeded/21-lossy-dscp-in-rdma-tc");
    let r = lint(&[c.join("config_db.json"), c.join("mlnx_qos.txt"), c.join("sysfs.txt")]);
    assert_eq!(r.findings.len(), 1, "{}", r.render_text());
    let f = &r.findings[0];
    assert_eq!((f.rule, f.severity), ("lossy-dscp-in-lossless-tc", Severity::Error));
    assert_eq!(
        f.location.to_string(),
        format!("{} DSCP_TO_TC_MAP|AZURE [8]", c.join("config_db.json").display())
    );
    for part in [
        "DSCP 8 maps to TC 3 in DSCP_TO_TC_MAP|AZURE",
        "lossless (pfc_enable 3) on Ethernet0, Ethernet4",
        "carries RDMA DSCP 26",
    ] {
        assert!(f.message.contains(part), "{part:?} not in {}", f.message);
    }
    assert!(f.fix.contains("\"8\": \"0\""), "{}", f.fix);
    // The same map on a switch whose RDMA DSCP is unknown: a warning, as for pfc-not-enabled.
    let r = lint(&[c.join("config_db.json")]);
    let f: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "lossy-dscp-in-lossless-tc")
        .collect();
    assert_eq!(f.len(), 1, "{}", r.render_text());
    assert_eq!(f[0].severity, Severity::Warning);
    // Unlisted DSCPs fall to TC 0; with TC 0 lossless they all leak into it.
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples("clean/config_db.json")).unwrap()).unwrap();
    let m = cfg["DSCP_TO_TC_MAP"]["AZURE"].as_object_mut().unwrap();
    m.remove("0");
    m.insert("26".into(), "0".into());
    m.insert("8".into(), "1".into());
    let qm = &mut cfg["PORT_QOS_MAP"]["Ethernet0,Ethernet4"];
    qm["pfc_enable"] = "0,3".into();
    let r = lint_texts(
        &[("sw.json".into(), cfg.to_string())],
        &LintOptions {
            rdma_dscp: Some(26),
            cnp_dscp: Some(48),
        },
    )
    .unwrap();
    let f: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "lossy-dscp-in-lossless-tc")
        .collect();
    assert_eq!(f.len(), 1, "{}", r.render_text());
    assert!(
        f[0].message
            .starts_with("DSCP 0-7,9-25,27-47,49-63 (61 of them not in the map, which sends them to TC 0) map to TC 0"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_port_without_its_own_watchdog_entry_is_flagged_with_the_default_on() {
    let c = data("seeded/22-port-without-watchdog-entry-default-on");
    let cfg = std::fs::read_to_string(c.join("config_db.json")).unwrap();
    assert!(cfg.contains("\"default_pfcwd_status\": \"enable\""));
    let r = lint(&[c.join("config_db.json"), c.join("mlnx_qos.txt"), c.join("sysfs.txt")]);
    assert_eq!(r.findings.len(), 1, "{}", r.render_text());
    let f = &r.findings[0];
    assert_eq!((f.rule, f.severity), ("pfcwd-off", Severity::Warning));
    assert!(
        f.message
            .starts_with("PFC is on (3) but Ethernet4 has no PFC_WD entry of its own"),
        "{}",
        f.message
    );
    assert!(f.fix.starts_with("add PFC_WD|Ethernet4 "), "{}", f.fix);
    // A buffer-only dump (no PORT_QOS_MAP) with the default on: its lossless ports
    // without an entry are flagged too, at their BUFFER_PG.
    let dump = std::fs::read_to_string(data(
        "samples/sonic-buffers-mellanox-sn2700-traditional.redis-dump.json",
    ))
    .unwrap()
    .replace(
        "\"default_pfcwd_status\": \"disable\"",
        "\"default_pfcwd_status\": \"enable\"",
    );
    let r = lint_texts(&[("sn2700.json".into(), dump)], &LintOptions::default()).unwrap();
    let wd: Vec<_> = r.findings.iter().filter(|f| f.rule == "pfcwd-off").collect();
    assert_eq!(wd.len(), 1, "{}", r.render_text());
    assert_eq!(wd[0].location.table.as_deref(), Some("BUFFER_PG"));
    assert!(
        wd[0].message.contains("default_pfcwd_status enable"),
        "{}",
        wd[0].message
    );
}

#[test]
fn output_is_deterministic_and_json_round_trips() {
    let paths = [
        data("samples/sonic-port-qos-single-port.config_db.json"),
        data("samples/sonic-qos-inventec-d7032q28b-c32.qos.json"),
    ];
    let a = lint(&paths);
    let b = lint(&paths);
    assert_eq!(a.render_text(), b.render_text());
    assert_eq!(a.render_json(), b.render_json());
    let v: serde_json::Value = serde_json::from_str(&a.render_json()).unwrap();
    assert_eq!(v["counts"]["errors"], 17);
    assert_eq!(v["findings"][0]["rule"], "dangling-ref");
    assert!(v["findings"][0]["why"].as_str().unwrap().contains("orchagent"));
    let text = a.render_text();
    assert!(
        text.lines().last().unwrap().starts_with("lint roce: 2 file(s)"),
        "{text}"
    );
}

#[test]
fn malformed_json_names_file_line_and_column() {
    let bad = "{\n  \"PORT\": {\n    \"Ethernet0\": {\"mtu\": \"9100\",}\n  }\n}\n";
    let e = lint_texts(&[("sw.json".into(), bad.into())], &LintOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            LintError::Json {
                line: 3,
                column: 33,
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.starts_with("parse sw.json:3:33: trailing comma"), "{msg}");
    let e = parse_input("x.json", "[1,2]").unwrap_err();
    assert!(e.to_string().contains("expected an object of tables"), "{e}");
    let e = parse_input("notes.txt", "hello\n").unwrap_err();
    assert!(matches!(e, LintError::UnknownFormat { .. }));
    // A wrongly typed entry is reported as a finding with its location, not a crash.
    let r = lint_texts(
        &[(
            "sw.json".into(),
            r#"{"PORT": {"Ethernet0": {"mtu": null}}, "QUEUE": 3}"#.into(),
        )],
        &LintOptions::default(),
    )
    .unwrap();
    let locs: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("{} {}", f.rule, f.location))
        .collect();
    assert_eq!(
        locs,
        vec![
            "invalid-value sw.json PORT|Ethernet0 [mtu]",
            "invalid-value sw.json QUEUE"
        ]
    );
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let key = prop_oneof![
        Just("PORT_QOS_MAP".to_string()),
        Just("BUFFER_PG".to_string()),
        Just("QUEUE".to_string()),
        Just("DSCP_TO_TC_MAP".to_string()),
        Just("PFC_WD".to_string()),
        Just("BUFFER_PROFILE".to_string()),
        Just("PORT".to_string()),
        Just("CABLE_LENGTH".to_string()),
        "[A-Za-z0-9_|,\\-\\[\\]]{0,12}",
    ];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[0-9a-zA-Z_|,\\-\\[\\]m]{0,10}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let _ = lint_texts(&[("f".into(), text)], &LintOptions::default());
        let _ = diag::roce::nic::MlnxQos::parse("q", &String::from_utf8_lossy(&bytes));
        let _ = diag::roce::nic::parse_sysfs("s", &String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_json_never_panics(v in json_value(), dscp in 0u8..64) {
        let text = v.to_string();
        let _ = lint_texts(&[("f.json".into(), text)], &LintOptions { rdma_dscp: Some(dscp), cnp_dscp: None });
    }

    #[test]
    fn mutated_clean_config_never_panics(pos in 0usize..4000, byte in any::<u8>()) {
        let mut text = std::fs::read(examples("clean/config_db.json")).unwrap();
        let i = pos % text.len();
        text[i] = byte;
        let text = String::from_utf8_lossy(&text).into_owned();
        let q = std::fs::read_to_string(examples("clean/mlnx_qos.txt")).unwrap();
        let _ = lint_texts(&[("f.json".into(), text), ("q.txt".into(), q)], &LintOptions::default());
    }
}

#[test]
fn roce_trace_shows_each_hops_pfc_and_ecn() {
    use diag::roce::sonic::ConfigDb;
    use diag::roce::trace::{HopConfigs, default_hash, trace_roce};
    let f = fabric::leaf_spine(&fabric::LeafSpineParams {
        radix: 8,
        hosts_per_leaf: Some(4),
        spines: Some(4),
        leaves: Some(4),
        rate: fabric::LinkRate::eth(100).unwrap(),
        ..Default::default()
    })
    .unwrap();
    let hosts: Vec<fabric::NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
    let (a, b) = (f.node(hosts[0]).name.clone(), f.node(hosts[12]).name.clone());
    let clean = std::fs::read_to_string(examples("clean/config_db.json")).unwrap();
    let cfg = HopConfigs {
        configs: vec![(
            None,
            "clean.json".into(),
            ConfigDb::parse("clean.json", &clean).unwrap(),
        )],
        port_step: 4,
    };
    let t = trace_roce(&f, &a, &b, 0xc123, 26, default_hash(), &cfg).unwrap();
    assert!(t.arrived && t.hops.len() == 3, "{}", t.text);
    for h in &t.hops {
        let q = h.qos.as_ref().unwrap();
        assert_eq!((q.tc, q.lossless, q.queue), (Some(3), true, 3), "{}", t.text);
        assert_eq!(
            q.wred.as_ref().map(|w| (w.1, w.2)),
            Some((Some(1_048_576), Some(2_097_152)))
        );
    }
    assert!(!t.text.contains("-W-"), "{}", t.text);
    // The same flow over switches whose map sends DSCP 26 to a lossy TC (seeded case 20).
    let bad = std::fs::read_to_string(data("seeded/20-switch-maps-rdma-dscp-to-lossy-tc/config_db.json")).unwrap();
    let spine = t.hops[1].switch.clone();
    let cfg2 = HopConfigs {
        configs: vec![
            (
                Some(spine.clone()),
                "bad.json".into(),
                ConfigDb::parse("bad.json", &bad).unwrap(),
            ),
            (
                None,
                "clean.json".into(),
                ConfigDb::parse("clean.json", &clean).unwrap(),
            ),
        ],
        port_step: 4,
    };
    let t2 = trace_roce(&f, &a, &b, 0xc123, 26, default_hash(), &cfg2).unwrap();
    assert_eq!(
        t2.hops.iter().map(|h| &h.switch).collect::<Vec<_>>(),
        t.hops.iter().map(|h| &h.switch).collect::<Vec<_>>()
    );
    assert!(!t2.hops[1].qos.as_ref().unwrap().lossless);
    assert!(
        t2.text.contains(&format!("-W- DSCP 26 is lossy at {spine}")),
        "{}",
        t2.text
    );
}

#[test]
fn every_hop_is_checked_when_several_switches_are_given() {
    // Two switches, one with PFC off: only that hop is reported, with its file.
    let bad = data("seeded/01-switch-pfc-off/config_db.json");
    let r = lint(&[
        examples("clean/config_db.json"),
        bad.clone(),
        examples("clean/mlnx_qos.txt"),
        examples("clean/sysfs.txt"),
    ]);
    assert_eq!(rules_of(&r), ["error pfc-not-enabled".to_string()].into());
    assert_eq!(r.findings.len(), 1);
    assert_eq!(
        r.findings[0].location.file.as_deref(),
        Some(bad.display().to_string().as_str())
    );
    assert_eq!(r.files.len(), 4);
}
