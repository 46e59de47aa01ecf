//! Route computation on the 2592-host three-tier fat tree (radix 36, 8 pods: 144
//! leaves, 144 spines, 108 cores), per engine, and LIDs + routing end to end.
//!
//! `cargo bench -p rdmalab-sm --bench routing`

use criterion::{Criterion, criterion_group, criterion_main};
use fabric::{FatTree3Params, fat_tree3};
use sm::routing::{EngineKind, RouteOptions, SwitchGraph};

fn bench(c: &mut Criterion) {
    let f = fat_tree3(&FatTree3Params {
        pods: Some(8),
        ..Default::default()
    })
    .expect("2592-host fat tree");
    let flat = f.freeze();
    let sm_port = sm::lids::default_sm_port(&f).unwrap();
    let (t0, _) = sm::lids::assign(&f, sm_port, 0, None).unwrap();
    let g = SwitchGraph::new(&f, &flat, &t0);
    let opts = RouteOptions::default();
    let mut group = c.benchmark_group("route_ft2592");
    group.sample_size(20);
    for e in EngineKind::ALL {
        let mut engine = e.build();
        let mut t = t0.clone();
        engine
            .route(&g, &opts, &mut t)
            .unwrap_or_else(|err| panic!("{e}: {err}"));
        group.bench_function(e.name(), |b| b.iter(|| engine.route(&g, &opts, &mut t).unwrap()));
    }
    group.finish();
    let mut group = c.benchmark_group("lids_and_route_ft2592");
    group.sample_size(10);
    for e in [EngineKind::MinHop, EngineKind::Ftree] {
        let o = sm::run::RunOptions {
            engines: vec![e],
            validate: false,
            ..Default::default()
        };
        group.bench_function(e.name(), |b| b.iter(|| sm::run::run(&f, &o).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
