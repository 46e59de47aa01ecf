//! Integration tests of the fabric crate (one binary: links once).

mod bad;
mod generated;
mod ibsim;
mod props;
mod samples;

use std::path::PathBuf;

use fabric::format::{self, Format};
use fabric::{Fabric, ReadOptions};

/// `tests/data/<rel>`.
pub fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

/// Read a file, detecting its format.
pub fn read(path: &std::path::Path) -> (Fabric, Format) {
    format::read_file(path, None, &ReadOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parse text as `fmt`.
pub fn parse(name: &str, text: &str, fmt: Format) -> Fabric {
    format::parse(name, text.as_bytes(), Some(fmt), None, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .0
}

/// Write `f` as `fmt`, read it back, and check the model is the same fabric.
pub fn round_trip(f: &Fabric, fmt: Format) -> Fabric {
    let text = format::write(f, fmt).unwrap();
    let g = parse(&format!("<{fmt}>"), &text, fmt);
    let d = f.diff(&g);
    assert!(d.is_empty(), "{fmt} round trip differs:\n{}", d.join("\n"));
    assert_eq!(f.cabling_signature(), g.cabling_signature());
    // Writing is deterministic and idempotent.
    assert_eq!(format::write(&g, fmt).unwrap(), text, "{fmt}: second write differs");
    g
}
