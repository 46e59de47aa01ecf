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
            assert!(
                e.to_string().starts_with(&format!("{}:{}: ", path.display(), e.line)),
                "{e}"
            );
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
    assert!(
        matches!(
            e.kind,
            K::PortOutOfRange {
                port: 40,
                num_ports: 36,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn duplicate_guids() {
    let e = err("dup-guid.topo");
    assert_eq!(e.line, 20, "{e}");
    assert!(
        matches!(e.kind, K::Model(fabric::ModelError::DuplicateGuid { .. })),
        "{e}"
    );
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

#[test]
fn json_content_errors_point_at_the_node_or_link() {
    let f = fabric::leaf_spine(&fabric::LeafSpineParams {
        radix: 4,
        ..Default::default()
    })
    .unwrap();
    let text = format::write(&f, format::Format::Json).unwrap();
    // break the GUID of the third node
    let g = format!("\"{}\"", f.nodes[2].node_guid);
    let pos = text.match_indices(&g).next().unwrap().0;
    let line = text[..pos].lines().count();
    let broken = text.replacen(&g, "\"0xZZ\"", 1);
    let e = format::parse("b.json", broken.as_bytes(), None, None, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e.kind, K::Json(_)), "{e}");
    assert!(e.to_string().contains("nodes[2]"), "{e}");
    // the error names the line where that node's object starts, a few lines above
    assert!(
        e.line > 1 && e.line <= line && line - e.line < 8,
        "{e} (GUID on line {line})"
    );
    // a link to a node that does not exist
    let l0 = text.find("\"links\"").unwrap();
    let (head, tail) = text.split_at(l0);
    let tail = tail.replacen("\"a\": [\n        0,", "\"a\": [\n        999,", 1);
    let e = format::parse(
        "b.json",
        format!("{head}{tail}").as_bytes(),
        None,
        None,
        &ReadOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("links[0]") && e.line > head.lines().count(),
        "{e}"
    );
}
