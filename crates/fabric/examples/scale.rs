//! Scale check: generate a k-ary 3-tier fat tree (k = 64: 65,536 hosts), write it in
//! every format, read each back, confirm it is the same fabric, and print seconds per
//! phase and the peak resident memory (VmHWM from /proc/self/status).
//!
//! `cargo run --release -p rdmalab-fabric --example scale [-- <radix>]`

use std::time::Instant;

use fabric::format::{self, Format};
use fabric::generate::{FatTree3Params, fat_tree3};
use fabric::{NodeKind, ReadOptions};

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let radix: u32 = std::env::args().nth(1).map(|a| a.parse().expect("radix")).unwrap_or(64);
    let t = Instant::now();
    let f = fat_tree3(&FatTree3Params {
        radix,
        ..Default::default()
    })
    .expect("generate");
    let gen_s = t.elapsed().as_secs_f64();
    println!(
        "fat tree k={radix}: {} hosts, {} switches, {} links; generate {:.3} s",
        f.count(NodeKind::Ca),
        f.count(NodeKind::Switch),
        f.links.len(),
        gen_s
    );
    let t = Instant::now();
    let s = fabric::summarize(&f);
    println!(
        "summary {:.3} s (diameter {:?}, bisection ratio {:.2})",
        t.elapsed().as_secs_f64(),
        s.diameter_hops,
        s.bisection_ratio
    );
    let mut total = gen_s;
    for fmt in [Format::Ibnetdiscover, Format::Ibsim, Format::Hpcc, Format::Json] {
        let t = Instant::now();
        let text = format::write(&f, fmt).expect("write");
        let w = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (g, _) = format::parse("scale", text.as_bytes(), Some(fmt), None, &ReadOptions::default()).expect("read");
        let r = t.elapsed().as_secs_f64();
        total += w + r;
        let same = if fmt == Format::Hpcc {
            g.links.len() == f.links.len() && g.count(NodeKind::Ca) == f.count(NodeKind::Ca)
        } else {
            f.diff(&g).is_empty()
        };
        println!(
            "{fmt:<14} {:>7.1} MiB  write {w:.3} s  read {r:.3} s  same fabric: {same}",
            text.len() as f64 / (1 << 20) as f64
        );
        assert!(same, "{fmt} round trip differs");
    }
    println!(
        "total {total:.3} s; peak RSS {:.0} MiB",
        peak_rss_mib().unwrap_or(f64::NAN)
    );
}
