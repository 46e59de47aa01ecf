//! The flow engine at SuperPOD scale: the network traffic of one training iteration
//! of a Llama-3-70B job (TP8 inside each server, PP4, DP over the rest, FSDP without
//! reshard) on a rail-optimized SuperPOD routed by the SM's ftree, timed.
//!
//!   cargo run --release -p rdmalab-flow --example superpod_dp [SUS] [PP]
//!
//! Ranks are placed in Megatron's tp-cp-pp-dp order: rank = t + 8·(stage + PP·d),
//! so a server holds one pipeline stage of one replica and GPU t sits on rail t.
//! Per iteration each rank sends (workload::iteration::Iteration::bytes_per_gpu):
//! - its DP share: a ring over its (t, stage) group, one flow to the next replica
//!   carrying the reduce-scatter and all-gather bytes;
//! - its PP share: activations forward and gradients back to the neighbouring
//!   stage of its replica, on its own rail.
//!
//! Prints the flows, the network time of that traffic on the fabric at max-min
//! rates, the flow engine's events and solves, its wall time and peak memory.

use std::time::Instant;

use fabric::generate::{SuperPodParams, superpod};
use fabric::{NodeId, NodeKind};
use flow::path::{Ports, WireModel, ib_route, open};
use flow::{FlowSim, Step};
use workload::iteration::Iteration;
use workload::job::JobSpec;

fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |k| k / 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sus: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(128);
    let pp: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(4);
    let t0 = Instant::now();
    let f = superpod(&SuperPodParams {
        sus,
        ..SuperPodParams::default()
    })
    .expect("superpod");
    let gpus = f.count(NodeKind::Ca) as u32;
    let opts = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree],
        validate: false,
        ..Default::default()
    };
    let (tables, _) = sm::run::run(&f, &opts).expect("ftree");
    let t_route = t0.elapsed();
    let job = JobSpec::from_toml(&format!(
        "name = \"llama3-70b\"\nmodel = \"llama3-70b\"\ngpu = \"h100\"\ngpus = {gpus}\nseq_len = 8192\nglobal_batch = {}\n\
         [parallel]\ntp = 8\npp = {pp}\nsharding = \"fsdp-no-reshard\"\n",
        u64::from(gpus / (8 * pp)) * 16
    ))
    .expect("job")
    .check(gpus)
    .expect("job");
    let b = Iteration::of(&job).bytes_per_gpu();
    let dp = job.dp();
    // NIC of rank r: server r / 8, rail r % 8, in the generator's node order
    let mut nics: Vec<Vec<NodeId>> = vec![Vec::new(); f.hosts.len()];
    for id in f.nodes_of(NodeKind::Ca) {
        nics[f.node(id).host.expect("host").0 as usize].push(id);
    }
    let nic = |rank: u32| nics[(rank / 8) as usize][(rank % 8) as usize];
    let rank = |t: u32, stage: u32, d: u32| t + 8 * (stage + pp * d);
    let t1 = Instant::now();
    let mut sim = FlowSim::new();
    let ports = Ports::build(&f, &mut sim);
    let wire = WireModel {
        mtu: 4096,
        overhead: 26,
        ack_bytes: 30,
        ack_every: 16,
        switch_latency_ps: 130_000,
        store_and_forward: false,
        endpoint_ps: 0,
    };
    let mut flows = 0u64;
    let mut post = |sim: &mut FlowSim, a: NodeId, z: NodeId, bytes: u64| {
        let data = ib_route(&f, &tables, a, z).expect("route");
        let ack = ib_route(&f, &tables, z, a).expect("route");
        let c = open(sim, &f, &ports, &wire, &data, &ack).expect("open");
        sim.post(c, bytes, flows).expect("post");
        flows += 1;
    };
    for t in 0..8 {
        for stage in 0..pp {
            for d in 0..dp {
                let me = nic(rank(t, stage, d));
                // DP ring to the next replica
                if dp > 1 {
                    post(&mut sim, me, nic(rank(t, stage, (d + 1) % dp)), b.dp as u64);
                }
                // PP to the next stage of this replica (activations), and back (gradients)
                if stage + 1 < pp {
                    let next = nic(rank(t, stage + 1, d));
                    post(&mut sim, me, next, (b.pp / 2.0) as u64);
                    post(&mut sim, next, me, (b.pp / 2.0) as u64);
                }
            }
        }
    }
    let t_open = t1.elapsed();
    let t2 = Instant::now();
    let mut done = 0u64;
    loop {
        match sim.advance(u64::MAX).expect("flow run") {
            Step::Delivered(d) => done += d.len() as u64,
            Step::Idle => break,
            Step::Reached => unreachable!("no time limit"),
        }
    }
    sim.check().expect("conservation");
    let t_run = t2.elapsed();
    let c = sim.counters();
    println!(
        "superpod {sus} SUs: {gpus} GPUs, {} switches, {} links",
        f.count(NodeKind::Switch),
        f.links.len()
    );
    println!(
        "job llama3-70b TP8 PP{pp} DP{dp}: per GPU DP {:.2} GB, PP {:.2} GB per iteration",
        b.dp / 1e9,
        b.pp / 1e9
    );
    println!(
        "{flows} flows ({done} delivered, {:.1} TB): network time {:.3} s at max-min rates",
        c.bytes_delivered as f64 / 1e12,
        sim.now_ps() as f64 / 1e12
    );
    println!(
        "flow engine: {} events, {} solves, {} flow rates recomputed",
        c.events, c.solves, c.flows_resolved
    );
    println!(
        "wall: generate + route {:.2} s, paths {:.2} s, run {:.2} s; peak memory {} MiB",
        t_route.as_secs_f64(),
        t_open.as_secs_f64(),
        t_run.as_secs_f64(),
        peak_rss_mib()
    );
}
