//! Criterion benches: generating, writing and reading a 65,536-host 3-tier fat tree
//! (k = 64). Peak memory is measured by `examples/scale.rs`.

use criterion::{Criterion, criterion_group, criterion_main};
use fabric::ReadOptions;
use fabric::format::{self, Format};
use fabric::generate::{FatTree3Params, fat_tree3};

fn scale(c: &mut Criterion) {
    let p = FatTree3Params {
        radix: 64,
        ..Default::default()
    };
    let mut g = c.benchmark_group("fat_tree_k64_65536_hosts");
    g.sample_size(10);
    g.bench_function("generate", |b| b.iter(|| fat_tree3(&p).unwrap()));
    let f = fat_tree3(&p).unwrap();
    for fmt in [Format::Ibnetdiscover, Format::Json] {
        g.bench_function(format!("write_{fmt}"), |b| b.iter(|| format::write(&f, fmt).unwrap()));
        let text = format::write(&f, fmt).unwrap();
        g.bench_function(format!("read_{fmt}"), |b| {
            b.iter(|| format::parse("bench", text.as_bytes(), Some(fmt), None, &ReadOptions::default()).unwrap())
        });
    }
    g.bench_function("summarize", |b| b.iter(|| fabric::summarize(&f)));
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
