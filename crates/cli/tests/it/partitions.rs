//! `sm run --partitions` and `diag partitions` on the real binary: the P_Key step's
//! figures, file:line errors with exit code 2, findings with exit code 1.

use std::path::{Path, PathBuf};

use crate::{err, out, rdmalab};

fn net() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fabric/tests/data/samples/net.2sw2path4hca")
        .display()
        .to_string()
}

/// Tenants on net.2sw2path4hca (port GUIDs: Hca1 0x100001, Hca2 0x100004, Hca3
/// 0x100007, Hca4 0x10000a); Hca4 is in no partition.
const GOOD: &str = "Default=0x7fff : SELF=full, ALL_SWITCHES=full ;\njobA=0x8001, ipoib, defmember=full :\n    0x100001, 0x100004,\n    0x100007=limited ;\nstorage=0x0010, indx0 : 0x100001=limited, 0x100007=full ;\n";

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn sm_run_programs_the_partitions_and_says_how_much() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(&dir, "partitions.conf", GOOD);
    let o = rdmalab(
        &["sm", "run", "--topo", &net(), "--partitions", p.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    // 4 CA ports + 2 switch ports 0 + 4 switch ports facing CAs, one block each.
    assert!(
        out(&o).contains("partitions: 3 (the default included), 10 port P_Key tables, 4 switch ports enforced; 10 P_KeyTable blocks sent (0 unchanged)\n"),
        "{}",
        out(&o)
    );
    let j = rdmalab(
        &[
            "sm",
            "run",
            "--topo",
            &net(),
            "--partitions",
            p.to_str().unwrap(),
            "--json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out(&j)).unwrap();
    assert_eq!(v["pkeys"]["blocks_sent"], 10);
    // Without --partitions the report has no P_Key step.
    let n = rdmalab(&["sm", "run", "--topo", &net(), "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&out(&n)).unwrap();
    assert!(v.get("pkeys").is_none());
}

#[test]
fn bad_partitions_files_exit_2_naming_file_line_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, want) in [
        (
            "syntax.conf",
            "a=0x1 : ALL\nb=0x2 : ALL ;\n",
            "syntax.conf:2: expected `,` and another port, or `;` to end the partition, found \"b\"",
        ),
        (
            "guid.conf",
            "a=0x1 :\n 0x100001,\n 0x999999 ;\n",
            "guid.conf:3: port GUID 0x0000000000999999 is not a port of the fabric",
        ),
        (
            "dup.conf",
            "a=0x1 : ALL ;\n# again\nb=0x8001 : ALL ;\n",
            "dup.conf:3: P_Key 0x8001 is already defined at line 1 (partition \"a\"); give each partition one statement",
        ),
    ] {
        let p = file(&dir, name, text);
        let o = rdmalab(
            &["sm", "run", "--topo", &net(), "--partitions", p.to_str().unwrap()],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {}{}", out(&o), err(&o));
        let e = err(&o);
        assert!(e.starts_with("rdmalab: error: ") && e.contains(want), "{name}: {e}");
    }
}

#[test]
fn diag_partitions_exits_1_on_a_host_in_the_wrong_partition_and_0_when_clean() {
    let dir = tempfile::tempdir().unwrap();
    let t = file(&dir, "tenants.txt", "tenant jobA: Hca1 Hca2\ntenant jobB: Hca3 Hca4\n");
    // Hca3 (jobB) sits in jobA's partition.
    let bad = file(
        &dir,
        "bad.conf",
        "Default=0x7fff : ALL=limited, SELF=full ;\njobA=0x8001 : 0x100001=full, 0x100004=full, 0x100007=full ;\njobB=0x8002 : 0x10000a=full ;\n",
    );
    let args = |p: &Path| {
        vec![
            "diag".to_string(),
            "partitions".into(),
            "--topo".into(),
            net(),
            "--partitions".into(),
            p.display().to_string(),
            "--tenants".into(),
            t.display().to_string(),
        ]
    };
    let a = args(&bad);
    let o = rdmalab(&a.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let s = out(&o);
    assert!(
        s.contains("-E- tenant-leak") && s.contains("tenants jobA and jobB can talk in partition 0x0001"),
        "{s}"
    );
    assert!(s.contains("-I- Summary: 3 error(s), 0 warning(s), 0 info"), "{s}");
    let good = file(
        &dir,
        "good.conf",
        "Default=0x7fff : ALL=limited, SELF=full ;\njobA=0x8001 : 0x100001=full, 0x100004=full ;\njobB=0x8002 : 0x100007=full, 0x10000a=full ;\n",
    );
    let a = args(&good);
    let o = rdmalab(&a.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert!(
        out(&o).contains("2 of 2 same-tenant host pairs can talk"),
        "{}",
        out(&o)
    );
}
