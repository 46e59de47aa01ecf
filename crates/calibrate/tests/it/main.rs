//! Integration tests over the fixtures in tests/fixtures (README.md there says
//! which rows are published and which synthesized): every file parses as what it
//! is, every fitted row is reproduced within 5%, the rows left out are the ones
//! documented, and the file written reads back to the same predictions.

mod fits;
mod fixtures;
mod robust;

use calibrate::{Calibrated, Fabric, Input, Options};

/// The path of a fixture, relative to tests/fixtures.
pub fn fixture(rel: &str) -> String {
    format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// Parse fixtures.
pub fn inputs(rels: &[&str]) -> Vec<Input> {
    rels.iter()
        .map(|r| {
            let p = fixture(r);
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
            calibrate::parse(&p, &text).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

pub const IB: [&str; 5] = [
    "ib-edr/ib_write_lat.txt",
    "ib-edr/ib_send_lat.txt",
    "ib-edr/ib_read_lat.txt",
    "ib-edr/ib_write_bw.txt",
    "ib-hdr/all_reduce_perf.txt",
];

pub const ROCE: [&str; 8] = [
    "roce/ib_write_lat.txt",
    "roce/ib_send_lat.txt",
    "roce/ib_read_lat.txt",
    "roce/ib_write_bw.txt",
    "roce/all_reduce_perf.txt",
    "roce/all_gather_perf.txt",
    "roce/reduce_scatter_perf.txt",
    "roce/alltoall_perf.txt",
];

/// Every fixture of both fabrics, calibrated with the defaults; the InfiniBand
/// nccl-tests file (no NCCL INFO lines) takes --fabric infiniband.
pub fn all() -> Calibrated {
    let rels: Vec<&str> = IB.iter().chain(ROCE.iter()).copied().collect();
    calibrate::calibrate(
        &inputs(&rels),
        &Options {
            fabric: Some(Fabric::Infiniband),
            ..Options::default()
        },
    )
    .unwrap()
}
