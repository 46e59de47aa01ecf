//! Route the 2592-host fat tree repeatedly with one engine (for profiling):
//! `cargo run --release -p rdmalab-sm --example route_ft2592 -- ftree 50`; optional
//! third and fourth arguments pick another `fat_tree3` radix and pod count.

use fabric::{FatTree3Params, fat_tree3};
use sm::routing::{EngineKind, RouteOptions, SwitchGraph};

fn main() {
    let mut args = std::env::args().skip(1);
    let e: EngineKind = args.next().unwrap_or_else(|| "minhop".into()).parse().expect("engine");
    let n: usize = args.next().and_then(|x| x.parse().ok()).unwrap_or(20);
    let radix: u32 = args.next().and_then(|x| x.parse().ok()).unwrap_or(36);
    let pods: Option<u32> = args.next().and_then(|x| x.parse().ok()).or((radix == 36).then_some(8));
    let f = fat_tree3(&FatTree3Params {
        radix,
        pods,
        ..Default::default()
    })
    .expect("fat tree");
    let flat = f.freeze();
    let sm_port = sm::lids::default_sm_port(&f).expect("sm port");
    let (mut t, _) = sm::lids::assign(&f, sm_port, 0, None).expect("lids");
    let g = SwitchGraph::new(&f, &flat, &t);
    let mut engine = e.build();
    let t0 = std::time::Instant::now();
    for _ in 0..n {
        engine.route(&g, &RouteOptions::default(), &mut t).expect("route");
    }
    println!(
        "{e}: {:.2} ms per route",
        t0.elapsed().as_secs_f64() * 1000.0 / n as f64
    );
}
