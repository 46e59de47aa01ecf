//! The RoCE linter against a generated corpus of single-fault mutations.
//!
//! Two clean bases: `examples/roce/clean` as it is (nested JSON, port-list keys, one
//! lossless class), and the same switch split into one key per port and id, its DSCP
//! map named in `PORT_QOS_MAP|global`, a second lossless class added, written as a
//! redis dump (`corpus::per_port_two_classes`). Both run with the example's NIC files.
//! For every rule, `corpus::mutations` puts that rule's fault at every place of a base
//! where it can occur; each mutation must be reported by its rule and by no other
//! (the bases themselves have no finding), and the findings of its rule must name the
//! place. The number of mutations per rule is asserted, so a rule the generator does
//! not reach fails the test, and so do the figures quoted in `examples/roce/README.md`.

mod corpus;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use diag::roce::{LintOptions, LintReport, RULES, lint_texts};

use corpus::{Base, Mutation};

fn bases() -> Vec<Base> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/roce/clean");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let a = Base::read(
        "clean",
        &read("config_db.json"),
        &read("mlnx_qos.txt"),
        &read("sysfs.txt"),
    );
    let b = corpus::per_port_two_classes(&a, "per-port-flat");
    vec![a, b]
}

/// Mutations per rule, on `clean` and on `per-port-flat`: 638 in all. Quoted in
/// `examples/roce/README.md`; change both together.
const EXPECTED: &[(&str, usize, usize)] = &[
    ("pfc-not-enabled", 15, 15),
    ("dscp-tc-mismatch", 8, 9),
    ("ecn-after-pfc", 6, 8),
    ("ecn-not-marking", 8, 10),
    ("headroom-short", 11, 11),
    ("mtu-mismatch", 3, 3),
    ("pfcwd-off", 5, 7),
    ("cnp-class", 6, 6),
    ("dcqcn-off", 2, 2),
    ("lossless-shared", 19, 31),
    ("lossy-dscp-in-lossless-tc", 62, 124),
    ("dangling-ref", 47, 136),
    ("invalid-value", 40, 44),
];

/// Rules whose fault cannot be put into one config file, with the reason. Every rule
/// the linter has today can be: the list is empty, and a rule may only enter it with
/// its reason.
const NOT_MUTABLE: &[(&str, &str)] = &[];

fn lint(files: &[(String, String)]) -> LintReport {
    lint_texts(files, &LintOptions::default()).expect("generated files parse")
}

#[test]
fn the_bases_have_no_finding() {
    for b in bases() {
        let r = lint(&b.clean_files());
        assert!(r.findings.is_empty(), "base {}:\n{}", b.name, r.render_text());
        assert!(!r.rdma_dscp_assumed && !r.cnp_dscp_assumed, "base {}", b.name);
    }
}

#[test]
fn giving_a_port_an_entry_of_its_own_changes_no_finding() {
    for b in bases() {
        let ports: Vec<String> = b.db["PORT"].keys().cloned().collect();
        for (table, ids) in [
            ("PORT_QOS_MAP", vec![None]),
            ("PFC_WD", vec![None]),
            ("QUEUE", (0..8).map(Some).collect()),
            ("BUFFER_PG", (0..8).map(Some).collect()),
            ("BUFFER_QUEUE", (0..8).map(Some).collect()),
        ] {
            for p in &ports {
                for &id in &ids {
                    let mut db = b.db.clone();
                    if corpus::isolate(&mut db, table, p, id).is_none() {
                        continue;
                    }
                    let r = lint(&b.files(&db, &b.qos, &b.sysfs));
                    assert!(
                        r.findings.is_empty(),
                        "{} {table} {p} {id:?}:\n{}",
                        b.name,
                        r.render_text()
                    );
                }
            }
        }
    }
}

/// Why `m` is not caught exactly, or `None`.
fn check(m: &Mutation) -> Option<String> {
    let r = lint(&m.files);
    let fired: BTreeSet<&str> = r.findings.iter().map(|f| f.rule).collect();
    if fired != BTreeSet::from([m.rule]) {
        return Some(format!(
            "{} [{}]: rules fired {fired:?}\n{}",
            m.name,
            m.rule,
            r.render_text()
        ));
    }
    let lines: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("{} {}", f.location, f.message))
        .collect();
    let missing: Vec<&String> = m
        .mentions
        .iter()
        .filter(|s| !lines.iter().any(|l| l.contains(s.as_str())))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{} [{}]: no finding mentions {missing:?}\n{}",
            m.name,
            m.rule,
            r.render_text()
        )
    })
}

#[test]
fn every_rule_has_mutations_each_caught_by_its_rule_only() {
    let bases = bases();
    // rule -> mutations per base
    let mut count: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    for (i, b) in bases.iter().enumerate() {
        for m in corpus::mutations(b) {
            assert!(names.insert(m.name.clone()), "two mutations named {}", m.name);
            count.entry(m.rule).or_insert_with(|| vec![0; bases.len()])[i] += 1;
            if std::env::var_os("LINT_MUTATIONS_LIST").is_some() {
                println!("{:<26} {}", m.rule, m.name);
            }
            failures.extend(check(&m));
        }
    }
    let total: usize = count.values().flatten().sum();
    println!("{:<26} {:>6} {:>14} {:>6}", "rule", "clean", "per-port-flat", "total");
    for r in RULES {
        let c = count.get(r.id).cloned().unwrap_or(vec![0; bases.len()]);
        println!("{:<26} {:>6} {:>14} {:>6}", r.id, c[0], c[1], c[0] + c[1]);
    }
    println!("{total} mutations, {} not caught exactly", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {total} mutations not caught exactly by their rule:\n\n{}",
        failures.len(),
        failures.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    // Every rule the linter has is mutated (or listed, with its reason, as not mutable),
    // and nothing else is.
    for r in RULES {
        let n: usize = count.get(r.id).map_or(0, |c| c.iter().sum());
        match NOT_MUTABLE.iter().find(|(id, _)| *id == r.id) {
            Some((_, why)) => assert_eq!(n, 0, "{} is listed as not mutable ({why})", r.id),
            None => assert!(n >= 1, "no mutation for rule {}", r.id),
        }
    }
    let known: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
    assert!(count.keys().all(|r| known.contains(r)), "{:?}", count.keys());
    // The corpus size, per rule and base.
    let expected: BTreeMap<&str, Vec<usize>> = EXPECTED.iter().map(|&(r, a, b)| (r, vec![a, b])).collect();
    assert_eq!(count, expected);
    assert_eq!(total, 638);
}

#[test]
fn the_corpus_is_the_same_on_every_run() {
    let fingerprint = |b: &Base| -> Vec<(String, Vec<(String, String)>)> {
        corpus::mutations(b).into_iter().map(|m| (m.name, m.files)).collect()
    };
    for (a, b) in bases().iter().zip(bases().iter()) {
        assert_eq!(fingerprint(a), fingerprint(b), "base {}", a.name);
    }
}
