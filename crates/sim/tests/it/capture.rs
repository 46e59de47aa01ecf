//! Capturing a port to pcap through crates/wire, decoded by tshark.

use fabric::LinkRate;
use sim::testutil::{Tie, bfs_routes, cas, one_switch};
use sim::workload::perftest;
use sim::{EngineConfig, IbConfig, Sim};

#[test]
fn tshark_decodes_a_captured_port() {
    let f = one_switch(2, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let h = cas(&f);
    let mut sim = Sim::new(
        &f,
        &t,
        IbConfig {
            mtu: 1024,
            ..IbConfig::default()
        },
        EngineConfig::default(),
    )
    .unwrap();
    sim.capture_port(h[0], 1).unwrap();
    perftest::write_bw(&mut sim, h[0], h[1], 3000, 4, 2).unwrap();
    // 4 WRITEs of 3 packets (First, Middle, Last) leave host 0.
    assert_eq!(sim.captured().len(), 12);
    let dir = std::env::temp_dir().join(format!("rdmalab-sim-cap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("h0.pcap");
    assert_eq!(sim::capture::write_pcap(&path, sim.captured()).unwrap(), 12);
    let out = std::process::Command::new("tshark")
        .args([
            "-r",
            path.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.psn",
        ])
        .output()
        .expect("tshark is installed (scripts/test installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<(u32, u32)> = text
        .lines()
        .map(|l| {
            let mut it = l.split('\t');
            (
                it.next().unwrap().trim().parse().unwrap(),
                it.next().unwrap().trim().parse().unwrap(),
            )
        })
        .collect();
    // RDMA WRITE First (6), Middle (7), Last (8), PSNs 0..12 in order.
    let want: Vec<(u32, u32)> = (0..12).map(|i| (6 + (i % 3), i)).collect();
    assert_eq!(rows, want, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
