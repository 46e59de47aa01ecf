//! Truncated, overlong and lying-length inputs give typed errors, never panics;
//! the fuzz corpus replays clean.

use wire::Error;
use wire::packet::{Decoded, LinkType, decode};

use crate::support::unhex;

/// The frames of the reference wire vectors (name, link type, bytes), kept in the
/// repository as inputs to cut, extend and corrupt (`tests/data/frames.json`).
fn frames() -> Vec<(String, LinkType, Vec<u8>)> {
    let v: serde_json::Value = serde_json::from_str(include_str!("../data/frames.json")).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let link = if v["linktype"].as_u64() == Some(1) {
                LinkType::Ethernet
            } else {
                LinkType::Infiniband
            };
            (
                v["name"].as_str().unwrap().to_string(),
                link,
                unhex(v["hex"].as_str().unwrap()),
            )
        })
        .collect()
}

#[test]
fn every_truncation_is_a_typed_error() {
    for (name, link, f) in frames() {
        for n in 0..f.len() {
            match decode(&f[..n], link) {
                Err(Error::Truncated { .. } | Error::BadLength { .. } | Error::BadField { .. }) => {}
                other => panic!("{name} cut to {n} bytes: {other:?}"),
            }
        }
    }
}

#[test]
fn overlong_frames_are_typed_errors() {
    for (name, link, mut f) in frames() {
        f.extend_from_slice(&[0, 0, 0, 0]);
        match (link, decode(&f, link)) {
            (LinkType::Ethernet, Err(Error::TrailingBytes { extra: 4, .. })) => {}
            (LinkType::Infiniband, Err(Error::BadLength { header: "LRH", .. })) => {}
            (_, other) => panic!("{name} + 4 bytes: {other:?}"),
        }
    }
}

fn find(name: &str) -> (LinkType, Vec<u8>) {
    frames()
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, l, f)| (l, f))
        .unwrap()
}

#[test]
fn lying_lengths_are_typed_errors() {
    // IPv4 Total Length larger than the frame.
    let (l, mut f) = find("v4_rc_send_only");
    f[16] = 0x05; // total length 0x053c
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "IPv4", .. })),
        "{:?}",
        decode(&f, l)
    );
    // IPv4 Total Length shorter than the frame: the rest is trailing.
    let (l, mut f) = find("v4_rc_send_only");
    f[17] -= 4;
    assert!(
        matches!(
            decode(&f, l),
            Err(Error::TrailingBytes { .. } | Error::BadLength { .. })
        ),
        "{:?}",
        decode(&f, l)
    );
    // UDP Length disagrees with the IP payload.
    let (l, mut f) = find("v4_rc_send_only");
    f[39] -= 4;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "UDP", .. })),
        "{:?}",
        decode(&f, l)
    );
    // IPv6 Payload Length too large.
    let (l, mut f) = find("v6_rc_send_only");
    f[18] = 0x40;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "IPv6", .. })),
        "{:?}",
        decode(&f, l)
    );
    // GRH PayLen of RoCEv1 too large / too small.
    let (l, mut f) = find("v1_rc_send_only");
    f[19] += 8;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "GRH", .. })),
        "{:?}",
        decode(&f, l)
    );
    // LRH PktLen.
    let (l, mut f) = find("ib_local_rc_send_only");
    f[5] += 1;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "LRH", .. })),
        "{:?}",
        decode(&f, l)
    );
    // GRH PayLen inside a native IB global packet.
    let (l, mut f) = find("ib_global_rc_send_only");
    f[13] += 4;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { header: "GRH", .. })),
        "{:?}",
        decode(&f, l)
    );
    // PadCnt larger than the payload (ACK carries none).
    let (l, mut f) = find("v4_rc_acknowledge");
    f[43] |= 0x30;
    assert!(
        matches!(decode(&f, l), Err(Error::BadLength { .. })),
        "{:?}",
        decode(&f, l)
    );
    // IHL claiming options.
    let (l, mut f) = find("v4_rc_send_only");
    f[14] = 0x46;
    assert!(
        matches!(
            decode(&f, l),
            Err(Error::BadField {
                header: "IPv4",
                field: "IHL",
                ..
            })
        ),
        "{:?}",
        decode(&f, l)
    );
    // An opcode whose headers do not fit: READ_REQUEST needs a 16-byte RETH.
    let (l, mut f) = find("v4_rc_acknowledge");
    f[42] = 0x0c;
    assert!(
        matches!(
            decode(&f, l),
            Err(Error::Truncated {
                header: "extended headers",
                ..
            })
        ),
        "{:?}",
        decode(&f, l)
    );
    // Errors read as sentences.
    let e = decode(&f, l).unwrap_err().to_string();
    assert!(e.starts_with("parse extended headers: truncated"), "{e}");
}

#[test]
fn unknown_codes_still_parse() {
    let (l, mut f) = find("v4_rc_send_only");
    f[42] = 0x40; // an RD opcode this crate does not model
    match decode(&f, l).unwrap() {
        Decoded::Ib { packet, .. } => assert_eq!(packet.bth.opcode, wire::ib::Opcode::Unknown(0x40)),
        d => panic!("{d:?}"),
    }
}

#[test]
fn fuzz_corpus_replays_without_panics() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/decode");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        wire::fuzzing::decode_one(&data);
        // Every truncation of a corpus input too.
        for k in 0..data.len() {
            wire::fuzzing::decode_one(&data[..k]);
        }
        n += 1;
    }
    assert!(n >= 40, "corpus has {n} inputs");
}
