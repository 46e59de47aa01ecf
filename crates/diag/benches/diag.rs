//! Throughput of the RoCE linter and of the InfiniBand check on real-size inputs.
//!
//! Run: `cargo bench -p rdmalab-diag --bench diag`. Figures are recorded in
//! docs/PERFORMANCE.md (diag section).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use diag::ib::{CheckOptions, Files, check, load, trace};
use diag::roce::{LintOptions, lint_texts};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A 128-port switch config: the clean example's settings on every port, one
/// PORT_QOS_MAP/BUFFER_PG/QUEUE entry per port (the per-port form real configs use).
fn big_config(ports: usize) -> String {
    let clean: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("../../examples/roce/clean/config_db.json")).unwrap(),
    )
    .unwrap();
    let mut v = clean.clone();
    let obj = v.as_object_mut().unwrap();
    let names: Vec<String> = (0..ports).map(|i| format!("Ethernet{}", 4 * i)).collect();
    let port0 = clean["PORT"]["Ethernet0"].clone();
    let qos = clean["PORT_QOS_MAP"]["Ethernet0,Ethernet4"].clone();
    let mut port = serde_json::Map::new();
    let mut pqm = serde_json::Map::new();
    let mut pg = serde_json::Map::new();
    let mut queue = serde_json::Map::new();
    let mut cable = serde_json::Map::new();
    let mut wd = serde_json::Map::new();
    wd.insert("GLOBAL".into(), clean["PFC_WD"]["GLOBAL"].clone());
    for n in &names {
        port.insert(n.clone(), port0.clone());
        pqm.insert(n.clone(), qos.clone());
        pg.insert(format!("{n}|0"), clean["BUFFER_PG"]["Ethernet0,Ethernet4|0"].clone());
        pg.insert(format!("{n}|3"), clean["BUFFER_PG"]["Ethernet0,Ethernet4|3"].clone());
        for q in 0..8 {
            let src = match q {
                3 => "Ethernet0,Ethernet4|3",
                6 => "Ethernet0,Ethernet4|6",
                _ => "Ethernet0,Ethernet4|4-5",
            };
            queue.insert(format!("{n}|{q}"), clean["QUEUE"][src].clone());
        }
        cable.insert(n.clone(), "5m".into());
        wd.insert(n.clone(), clean["PFC_WD"]["Ethernet0"].clone());
    }
    obj.insert("PORT".into(), port.into());
    obj.insert("PORT_QOS_MAP".into(), pqm.into());
    obj.insert("BUFFER_PG".into(), pg.into());
    obj.insert("QUEUE".into(), queue.into());
    obj.insert("PFC_WD".into(), wd.into());
    obj.insert("CABLE_LENGTH".into(), serde_json::json!({ "AZURE": cable }));
    obj.remove("BUFFER_QUEUE");
    serde_json::to_string_pretty(&v).unwrap()
}

fn bench_roce(c: &mut Criterion) {
    let ex = root().join("../../examples/roce/clean");
    let files: Vec<(String, String)> = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(ex.join(f)).unwrap()))
        .collect();
    c.bench_function("lint roce: clean example (switch + mlnx_qos + sysfs)", |b| {
        b.iter(|| black_box(lint_texts(&files, &LintOptions::default()).unwrap()))
    });
    let big = vec![
        ("big.json".to_string(), big_config(128)),
        files[1].clone(),
        files[2].clone(),
    ];
    let r = lint_texts(&big, &LintOptions::default()).unwrap();
    assert!(r.findings.is_empty(), "{}", r.render_text());
    c.bench_function("lint roce: 128-port switch (per-port entries, 200 KB JSON)", |b| {
        b.iter(|| black_box(lint_texts(&big, &LintOptions::default()).unwrap()))
    });
}

fn bench_ib(c: &mut Criterion) {
    let d = root().join("tests/data/ib/credit-loops");
    let l = load(&Files {
        topo: Some(&d.join("credit-loops.converted.net")),
        lfts: Some(&d.join("credit-loops.minhop.opensm-lfts.dump")),
        ..Files::default()
    })
    .unwrap();
    c.bench_function("diag check: credit-loops (36 LIDs) from dumps", |b| {
        b.iter(|| black_box(check(&l.fabric, &l.tables, vec![], vec![], &CheckOptions::default())))
    });
    let text = std::fs::read_to_string(d.join("credit-loops.minhop.opensm-lfts.dump")).unwrap();
    c.bench_function("read opensm-lfts.dump: credit-loops", |b| {
        b.iter(|| black_box(diag::ib::dumps::parse_routes(&l.fabric, &text, "x").unwrap()))
    });
    // A 648-host two-level fat tree (shared formats/ibsim-net/fattree-648.generated.net),
    // brought up by rdmalab's updn engine.
    let net = root().join("tests/data/ib/fattree-648.generated.net");
    {
        let net = net.as_path();
        let engines = [sm::routing::EngineKind::UpDn];
        let l = load(&Files {
            topo: Some(net),
            sm: Some((&engines, 0)),
            ..Files::default()
        })
        .unwrap();
        let mut g = c.benchmark_group("fattree-648");
        g.sample_size(10);
        g.bench_function("diag check: 648 CAs, 54 switches (419k CA pairs)", |b| {
            b.iter(|| black_box(check(&l.fabric, &l.tables, vec![], vec![], &CheckOptions::default())))
        });
        g.bench_function("diag trace: one path", |b| {
            b.iter(|| black_box(trace(&l.fabric, &l.tables, "H0_0", "H35_17").unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, bench_roce, bench_ib);
criterion_main!(benches);
