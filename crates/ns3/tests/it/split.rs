//! A run split over threads (`RoceSim::run_threads`) on ns-3 HPCC's 320-host
//! fat tree and permutation, loaded by [`HpccExperiment`]: the same world as one
//! thread's, under DCQCN and under HPCC (whose INT headers cross the cut).

use ns3::run::HpccExperiment;
use sim::Time;
use sim::roce::net::{RoceSim, RoceStatus};

/// The speed benchmark's experiment: ns-3 HPCC's 320-host fat tree and
/// permutation under DCQCN.
fn perm320() -> HpccExperiment {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/hpcc/config_dcqcn_perm320.txt");
    HpccExperiment::load(std::path::Path::new(cfg)).unwrap()
}

/// The HPCC paper's 320-host fat tree with its permutation (the speed
/// benchmark), 20 µs of it: split over 2 and 3 threads, the same world as
/// on one, and a later one-thread run continues it alike.
#[test]
fn split_fat_tree_permutation_is_the_same_run() {
    let e = perm320();
    let specs = e.flow_specs();
    let first = specs.iter().map(|f| f.start).min().unwrap();
    let mut one = RoceSim::new(&e.fabric, e.roce.clone(), &specs).unwrap();
    assert_eq!(one.run(first + Time::us(20)), RoceStatus::TimeLimit);
    assert!(one.hops() > 100_000, "traffic: {} hops", one.hops());
    for threads in [2, 3] {
        let mut split = RoceSim::new(&e.fabric, e.roce.clone(), &specs).unwrap();
        assert_eq!(split.run_threads(first + Time::us(20), threads), RoceStatus::TimeLimit);
        assert_eq!(split.last_threads(), threads, "split, not run on one thread");
        one.assert_same_run(&split, &format!("{threads} threads"));
    }
    let mut split = RoceSim::new(&e.fabric, e.roce.clone(), &specs).unwrap();
    split.run_threads(first + Time::us(10), 2);
    split.run(first + Time::us(20));
    one.assert_same_run(&split, "split for 10 µs, then one thread");
}

/// HPCC (`CC_MODE 3`) on the same fat tree and permutation: INT headers
/// cross the cut with their packets; the same world as on one thread.
#[test]
fn split_hpcc_permutation_is_the_same_run() {
    let dir = std::env::temp_dir().join(format!("rdmalab-split-hpcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/hpcc/");
    for f in ["fat.txt", "flow_perm320.txt"] {
        std::fs::copy(format!("{src}{f}"), dir.join(f)).unwrap();
    }
    let cfg = std::fs::read_to_string(format!("{src}config_dcqcn_perm320.txt"))
        .unwrap()
        .replace("CC_MODE 1", "CC_MODE 3");
    std::fs::write(dir.join("c.txt"), cfg).unwrap();
    let e = HpccExperiment::load(&dir.join("c.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let specs = e.flow_specs();
    let first = specs.iter().map(|f| f.start).min().unwrap();
    let mut one = RoceSim::new(&e.fabric, e.roce.clone(), &specs).unwrap();
    assert!(one.flow_hpcc(0).is_some(), "HPCC senders");
    assert_eq!(one.run(first + Time::us(20)), RoceStatus::TimeLimit);
    assert!(one.int_live() > 1000, "HPCC packets in flight: {}", one.int_live());
    let mut split = RoceSim::new(&e.fabric, e.roce.clone(), &specs).unwrap();
    assert_eq!(split.run_threads(first + Time::us(20), 2), RoceStatus::TimeLimit);
    assert_eq!(split.last_threads(), 2);
    one.assert_same_run(&split, "HPCC");
    assert_eq!(one.int_live(), split.int_live());
    for k in 0..specs.len() {
        assert_eq!(one.flow_hpcc(k), split.flow_hpcc(k), "flow {k} HPCC state");
    }
    // The merged world goes on as one thread's does.
    one.run(first + Time::us(30));
    split.run(first + Time::us(30));
    one.assert_same_run(&split, "HPCC, continued");
}
