//! The bad-input corpus: each file gives an error naming file:line and what was expected.

use fabric::ReadOptions;
use fabric::format::{self, ParseErrorKind as K};

use super::data;

fn err(name: &str) -> fabric::ParseError {
    let path = data(&format!("bad/{name}"));
    match format::read_file(&path, None, &ReadOptions::default()) {
        Ok(_) => panic!("{name} was accepted"),
        Err(fabric::ReadError::Parse(e)) => {
            assert!(e.file.ends_with(name), "{e}");
            assert!(e.to_string().starts_with(&format!("{}:{}: ", path.display(), e.line)), "{e}");
            e
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn truncated_dump() {
    let e = err("truncated.topo");
    assert_eq!(e.line, 23, "{e}");
    assert!(matches!(e.kind, K::Expected { .. }), "{e}");
    assert!(e.to_string().contains("quoted remote node id"), "{e}");
}

#[test]
fn truncated_record_leaves_one_sided_links() {
    let e = err("truncated-record.topo");
    assert!(matches!(e.kind, K::OneSided { .. } | K::UnknownPeer { .. }), "{e}");
    assert!(e.line > 0);
}

#[test]
fn link_at_one_end_only() {
    let e = err("one-end.net");
    assert_eq!(e.line, 4, "{e}");
    assert!(matches!(e.kind, K::OneSided { .. }), "{e}");
    assert!(e.to_string().contains("listed at both ends"), "{e}");
}

#[test]
fn port_beyond_port_count() {
    let e = err("port-beyond.net");
    assert_eq!(e.line, 3, "{e}");
    assert!(matches!(e.kind, K::PortOutOfRange { port: 40, num_ports: 36, .. }), "{e}");
}

#[test]
fn duplicate_guids() {
    let e = err("dup-guid.topo");
    assert_eq!(e.line, 20, "{e}");
    assert!(matches!(e.kind, K::Model(fabric::ModelError::DuplicateGuid { .. })), "{e}");
}

#[test]
fn unknown_speed() {
    let e = err("unknown-speed.topo");
    assert_eq!(e.line, 10, "{e}");
    assert!(matches!(&e.kind, K::UnknownSpeed { found } if found == "4xQQR"), "{e}");
    let e = err("unknown-speed-hpcc.txt");
    assert_eq!(e.line, 4, "{e}");
    assert!(matches!(&e.kind, K::UnknownSpeed { found } if found == "33Gbps"), "{e}");
}

#[test]
fn binary_garbage() {
    let e = err("garbage.bin");
    assert!(matches!(e.kind, K::NotText { .. }), "{e}");
}

#[test]
fn empty_file() {
    let e = err("empty.topo");
    assert_eq!(e.line, 1);
    assert!(matches!(e.kind, K::Empty), "{e}");
}

#[test]
fn hpcc_truncated_and_json_broken() {
    let e = err("truncated-hpcc.txt");
    assert!(matches!(e.kind, K::Expected { .. }), "{e}");
    assert_eq!(e.line, 4, "{e}");
    let e = err("broken.json");
    assert!(matches!(e.kind, K::Json(_)), "{e}");
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn unknown_lines_are_errors_not_skipped() {
    let e = err("stray-line.net");
    assert_eq!(e.line, 5, "{e}");
}
