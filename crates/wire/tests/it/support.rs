//! Shared helpers: hex, the reference vector folder.

use std::path::PathBuf;

/// The reference folder's wire vectors: `$RDMALAB_REFERENCE_DIR/vectors/wire`, default
/// `../shared/vectors/wire` beside the repository. Only tests in `reference` modules
/// call it (`scripts/test` leaves them out when the folder is absent); it panics,
/// naming the folder and the variable, when the folder is not there.
pub fn vectors_dir() -> PathBuf {
    let dir = std::env::var_os("RDMALAB_REFERENCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    let v = dir.join("vectors/wire");
    assert!(
        v.is_dir(),
        "reference data not found: {} is not a folder; set RDMALAB_REFERENCE_DIR to the shared reference folder",
        v.display()
    );
    v
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn vectors() -> serde_json::Value {
    let p = vectors_dir().join("vectors.json");
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    serde_json::from_str(&s).unwrap()
}

/// `examples/wire` of the repository.
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/wire")
}

/// Every example spec, sorted by name.
pub fn example_specs() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}
