//! The cost of a study's bookkeeping at scale: expand a study of N shards, lay it
//! out, give every shard a real results.json (one shard of the test scenario run,
//! copied), then merge; each step timed.
//!
//!   cargo run --release -p rdmalab-sweep --example merge_bench [N]

use std::time::Instant;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let d = tempfile::tempdir().expect("a temporary folder");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/small.toml"),
        d.path().join("base.toml"),
    )
    .expect("the test scenario");
    let seeds: Vec<String> = (1..=n).map(|s| s.to_string()).collect();
    let text = format!(
        "name = \"bench\"\nscenario = \"base.toml\"\n[grid]\nseed = [{}]\n",
        seeds.join(", ")
    );
    let sp = d.path().join("study.toml");
    std::fs::write(&sp, text).expect("write the study");
    let t = Instant::now();
    let study = sweep::Study::load(&sp).expect("the study");
    let expand = t.elapsed().as_secs_f64();
    let out = d.path().join("out");
    let t = Instant::now();
    sweep::prepare(&study, &out).expect("lay out");
    let layout = t.elapsed().as_secs_f64();
    let t = Instant::now();
    sweep::run_shard(&out, 0).expect("run shard 0");
    let one = t.elapsed().as_secs_f64();
    let results = std::fs::read(sweep::run::shard_dir(&out, 0).join("results.json")).expect("results");
    for i in 1..n {
        sweep::run::write_atomic(&sweep::run::shard_dir(&out, i).join("results.json"), &results).expect("copy");
    }
    let t = Instant::now();
    let m = sweep::merge(&study, &out);
    let merge = t.elapsed().as_secs_f64();
    assert_eq!(m.done, n);
    println!(
        "{n} shards ({} KiB of results.json each): expand and check {expand:.2} s, lay out {layout:.2} s, \
         one shard run {one:.3} s, merge {merge:.2} s ({:.0} µs per shard)",
        results.len() / 1024,
        merge / n as f64 * 1e6
    );
}
