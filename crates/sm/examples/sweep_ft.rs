//! A whole in-process heavy sweep of a k-ary three-tier fat tree (k = radix; k=64 is
//! 65,536 hosts): `cargo run --release -p rdmalab-sm --example sweep_ft -- 36 ftree [validate|novalidate] [pods]`

use fabric::{FatTree3Params, fat_tree3};
use sm::routing::EngineKind;
use sm::sma::InProcess;
use sm::sweep::{SubnetManager, SweepOptions};

/// CPU time this thread has run, from Linux's /proc/thread-self/schedstat (ns), if
/// available: the sweep's own CPU time on a busy machine where wall time is not.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let radix: u32 = args.next().and_then(|x| x.parse().ok()).unwrap_or(64);
    let engines = EngineKind::parse_list(&args.next().unwrap_or_else(|| "ftree".into())).expect("engines");
    let validate = args.next().is_some_and(|x| x == "validate");
    let pods: Option<u32> = args.next().and_then(|x| x.parse().ok());
    let t0 = std::time::Instant::now();
    let f = fat_tree3(&FatTree3Params {
        radix,
        pods,
        ..Default::default()
    })
    .expect("fat tree");
    let build = t0.elapsed();
    let mut fab = InProcess::new(f, (fabric::NodeId(0), 0));
    let opts = SweepOptions {
        engines,
        validate,
        ..Default::default()
    };
    let mut sm = SubnetManager::new(opts, 1);
    let c0 = thread_cpu_ns();
    let t0 = std::time::Instant::now();
    let r = sm.heavy_sweep(&mut fab);
    let total = t0.elapsed();
    let cpu = thread_cpu_ns()
        .zip(c0)
        .map(|(b, a)| format!("{:.1} ms", (b - a) as f64 / 1e6));
    println!(
        "fabric build {:.1} ms; heavy sweep {:.1} ms wall, {} CPU",
        build.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        cpu.as_deref().unwrap_or("n/a")
    );
    println!(
        "{} switches, {} CAs, {} links; {} SMPs; {} LFT blocks; issues {}",
        r.switches,
        r.cas,
        r.links,
        r.smps_sent,
        r.lft_blocks_sent,
        r.issues.len()
    );
    for p in &r.phases {
        println!("  {:<10} {:>9.1} ms", p.name, p.micros as f64 / 1e3);
    }
    for i in r.issues.iter().take(3) {
        println!("issue: {i}");
    }
    if let Some(v) = &r.validation {
        println!(
            "unreachable {} credit loop {}",
            v.routes.unreachable,
            v.credit_loops.cycle.is_some()
        );
    }
    println!("engine {:?} subnet up {}", r.outcome.map(|o| o.engine), r.subnet_up);
}
