//! `diag partitions`: tenants judged against a partitions.conf on
//! net.2sw2path4hca (port GUIDs: Hca1 0x100001, Hca2 0x100004, Hca3 0x100007,
//! Hca4 0x10000a; the SM on Switch1, the fabric's first node).

use diag::Severity;
use diag::ib::partitions::{check_files, parse_tenants};
use fabric::Fabric;

fn net() -> Fabric {
    let p = sm::testkit::samples_dir().join("net.2sw2path4hca");
    sm::testkit::ibsim_net(&std::fs::read_to_string(p).unwrap()).unwrap()
}

const TENANTS: &str = "# two jobs\ntenant jobA: Hca1 Hca2\ntenant jobB: Hca3 Hca4/1\n";

/// (rule, severity, location, message) of every finding.
fn run(
    partitions: &str,
    tenants: &str,
) -> (
    diag::ib::partitions::PartitionsReport,
    Vec<(String, Severity, String, String)>,
) {
    let dir = tempfile::tempdir().unwrap();
    let (p, t) = (dir.path().join("p.conf"), dir.path().join("tenants.txt"));
    std::fs::write(&p, partitions).unwrap();
    std::fs::write(&t, tenants).unwrap();
    let r = check_files(&net(), &p, &t, None).unwrap();
    let dirs = format!("{}/", dir.path().display());
    let v = r
        .findings
        .iter()
        .map(|f| {
            (
                f.rule.to_string(),
                f.severity,
                f.location.to_string().replace(&dirs, ""),
                f.message.replace(&dirs, ""),
            )
        })
        .collect();
    (r, v)
}

#[test]
fn tenants_in_their_own_partitions_pass() {
    let (r, v) = run(
        "Default=0x7fff : ALL=limited, SELF=full ;\njobA=0x8001 : 0x100001=full, 0x100004=full ;\njobB=0x8002 : 0x100007=full, 0x10000a=limited ;\n",
        TENANTS,
    );
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        (r.summary.tenant_pairs, r.summary.tenant_pairs_ok, r.summary.hosts),
        (2, 2, 4)
    );
    assert!(!r.has_errors());
}

#[test]
fn a_host_in_the_wrong_partition_leaks_and_is_cut_off_from_its_tenant() {
    // Hca3 belongs to jobB but was put in jobA's partition.
    let (r, v) = run(
        "Default=0x7fff : ALL=limited, SELF=full ;\njobA=0x8001 : 0x100001=full, 0x100004=full, 0x100007=full ;\njobB=0x8002 : 0x10000a=full ;\n",
        TENANTS,
    );
    assert_eq!(
        v,
        [
            (
                "tenant-cannot-talk".into(),
                Severity::Error,
                "tenants.txt:3".into(),
                "Hca3 (tenant jobB) cannot talk to 1 of its 1 tenant peers (Hca4/1); it is in 0x7fff (limited), 0x8001"
                    .into()
            ),
            (
                "tenant-cannot-talk".into(),
                Severity::Error,
                "tenants.txt:3".into(),
                "Hca4/1 (tenant jobB) cannot talk to 1 of its 1 tenant peers (Hca3); it is in 0x7fff (limited), 0x8002"
                    .into()
            ),
            (
                "tenant-leak".into(),
                Severity::Error,
                "p.conf:2".into(),
                "tenants jobA and jobB can talk in partition 0x0001 (jobA, p.conf:2): e.g. Hca1 and Hca3".into()
            ),
        ]
    );
    assert_eq!((r.counts.errors, r.summary.tenant_pairs_ok), (3, 1));
}

#[test]
fn two_limited_members_cannot_talk() {
    let (_, v) = run(
        "jobA=0x8001 : 0x100001=full, 0x100004=full ;\njobB=0x0002 : 0x100007, 0x10000a ;\n",
        TENANTS,
    );
    let rules: Vec<&str> = v.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(rules, ["tenant-cannot-talk", "tenant-cannot-talk"], "{v:?}");
    assert!(v[0].3.ends_with("it is in 0x7fff (limited), 0x0002 (limited)"), "{v:?}");
}

#[test]
fn opensms_no_file_default_lets_every_tenant_talk() {
    // `Default=0x7fff,ipoib : ALL=full` is what OpenSM runs without a file.
    let (_, v) = run("Default=0x7fff, ipoib : ALL=full ;\n", TENANTS);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].0, "tenant-leak");
    assert_eq!(
        v[0].3,
        "tenants jobA and jobB can talk in partition 0x7fff (Default, p.conf:1): e.g. Hca1 and Hca3"
    );
}

#[test]
fn shared_groups_may_talk_to_all_and_unlisted_hosts_are_warned_about() {
    let (_, v) = run(
        "storage=0x0010 : ALL_CAS=limited, 0x10000a=full ;\njobA=0x8001 : 0x100001=full, 0x100004=full, 0x100007=limited ;\n",
        "tenant jobA: Hca1 Hca2\nshared storage: Hca4\n",
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].0.as_str(), v[0].1, v[0].3.as_str()),
        (
            "host-not-in-tenants",
            Severity::Warning,
            "Hca3/1 in partition 0x0001 (jobA, p.conf:2) with tenant(s) jobA but in no group of tenants.txt"
        ),
        "{v:?}"
    );
}

#[test]
fn tenant_file_errors_name_the_line() {
    let f = net();
    let e = parse_tenants("tenant a: Hca1\ntenant b: Hca2 nosuch\n", "t.txt", &f).unwrap_err();
    assert_eq!(
        e.to_string(),
        "parse t.txt:2: expected a CA node name, name/port or port GUID of the topology, found \"nosuch\""
    );
    let e = parse_tenants("tenant a: Hca1\ntenant b: 0x100001\n", "t.txt", &f).unwrap_err();
    assert!(
        e.to_string()
            .contains("t.txt:2: expected a host in one group only (0x100001 is in a on line 1)"),
        "{e}"
    );
    let e = parse_tenants("tenant a: Switch1\n", "t.txt", &f).unwrap_err();
    assert!(e.to_string().contains("expected a CA (Switch1 is a Switch)"), "{e}");
    let e = parse_tenants("tenant a: Hca1/2\n", "t.txt", &f).unwrap_err();
    assert!(e.to_string().contains("Hca1 port 2 is not cabled"), "{e}");
    let e = parse_tenants("group a: Hca1\n", "t.txt", &f).unwrap_err();
    assert!(e.to_string().contains("expected `tenant` or `shared`"), "{e}");
}

#[test]
fn an_unknown_guid_in_partitions_conf_is_an_error_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (p, t) = (dir.path().join("p.conf"), dir.path().join("t.txt"));
    std::fs::write(&p, "a=0x1 :\n 0x100001,\n 0x999999 ;\n").unwrap();
    std::fs::write(&t, TENANTS).unwrap();
    let e = check_files(&net(), &p, &t, None).unwrap_err();
    let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(
        chain.ends_with("p.conf:3: port GUID 0x0000000000999999 is not a port of the fabric"),
        "{chain}"
    );
}
