//! Traffic matrices on a fat tree: completion, losslessness, determinism.

use fabric::{FatTree3Params, LinkRate, fat_tree3};
use rand::SeedableRng;
use sim::testutil::{Tie, bfs_routes, cas};
use sim::workload::{Matrix, parse_connection_matrix, run_matrix};
use sim::{EngineConfig, IbConfig, Sim, Time};

fn ft16() -> fabric::Fabric {
    fat_tree3(&FatTree3Params {
        radix: 4,
        rate: LinkRate::EDR_4X,
        ..FatTree3Params::default()
    })
    .unwrap()
}

fn run_perm(seed: u64) -> (u64, sim::workload::MatrixReport, Sim) {
    run_perm_with(seed, true)
}

fn run_perm_with(seed: u64, forward_at_once: bool) -> (u64, sim::workload::MatrixReport, Sim) {
    let f = ft16();
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    let eng = EngineConfig {
        seed,
        ..EngineConfig::default()
    };
    let mut sim = Sim::new(&f, &t, IbConfig::default(), eng).unwrap();
    if !forward_at_once {
        sim.disable_forward_at_once();
    }
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let m = Matrix::permutation(hosts.len() as u32, 1 << 20, &mut rng);
    let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
    (sim.trace_hash(), r, sim)
}

#[test]
fn permutation_completes_without_drops() {
    let (_, r, sim) = run_perm(7);
    assert_eq!(r.completed, 16);
    assert!(
        r.flows
            .iter()
            .all(|f| f.delivered_bytes == 1 << 20 && f.fct_ps.is_some())
    );
    sim.check_ledger().unwrap();
    assert_eq!(sim.ledger().total_dropped(), 0);
    assert_eq!(sim.in_flight(), 0);
    assert_eq!(sim.stats().psn_errors, 0);
    assert!(r.fct.p99_ps >= r.fct.p50_ps && r.fct.max_ps >= r.fct.p99_ps);
}

#[test]
fn same_seed_same_trace_hash() {
    let (h1, r1, _) = run_perm(11);
    let (h2, r2, _) = run_perm(11);
    assert_eq!(h1, h2, "same seed must give the same event trace");
    assert_eq!(r1.end_ps, r2.end_ps);
    let (h3, _, _) = run_perm(12);
    assert_ne!(h1, h3, "a different permutation should change the trace");
}

#[test]
fn forwarding_on_arrival_changes_nothing_but_speed() {
    // A switch that finds a packet's output idle sends it without queueing it;
    // the queue-and-look path must give the very same run, event for event.
    for seed in [3, 11] {
        let (h_fast, r_fast, fast) = run_perm_with(seed, true);
        let (h_slow, r_slow, slow) = run_perm_with(seed, false);
        assert!(
            fast.stats().forwarded_at_once > 1000,
            "{}",
            fast.stats().forwarded_at_once
        );
        assert_eq!(slow.stats().forwarded_at_once, 0);
        assert_eq!(h_fast, h_slow, "seed {seed}: traces differ");
        assert_eq!(fast.stats().events, slow.stats().events);
        assert_eq!(fast.stats().hops, slow.stats().hops);
        assert_eq!(fast.stats().idle_looks, slow.stats().idle_looks);
        assert_eq!(fast.stats().stall_ps, slow.stats().stall_ps);
        assert_eq!(format!("{r_fast:?}"), format!("{r_slow:?}"));
    }
}

/// Run a permutation (seed `seed`) and an incast that backs up on credits on
/// the 16-host fat tree, each twice: as built, and with `switch` applied to the
/// world first. Both runs must be the very same run: trace, events, idle looks,
/// stall time and report. Returns the (as built, switched) worlds of each.
fn same_run_either_way(seed: u64, switch: fn(&mut Sim)) -> Vec<(Sim, Sim)> {
    let f = ft16();
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut worlds = Vec::new();
    for m in [
        Matrix::permutation(hosts.len() as u32, 1 << 20, &mut rng),
        Matrix::incast(16, 8, 1 << 20),
    ] {
        let run = |switched: bool| {
            let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
            if switched {
                switch(&mut sim);
            }
            let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
            sim.finish();
            (sim.trace_hash(), format!("{r:?}"), sim)
        };
        let (h_a, r_a, a) = run(false);
        let (h_b, r_b, b) = run(true);
        assert_eq!(h_a, h_b, "traces differ");
        assert_eq!(a.stats().events, b.stats().events);
        assert_eq!(a.stats().hops, b.stats().hops);
        assert_eq!(a.stats().idle_looks, b.stats().idle_looks);
        assert_eq!(a.stats().stall_ps, b.stats().stall_ps);
        assert_eq!(r_a, r_b);
        worlds.push((a, b));
    }
    worlds
}

#[test]
fn the_fast_loop_runs_what_the_generic_one_runs() {
    // A plain cut-through run without capture takes the event loop compiled
    // for that case (`sim::Fast`); the loop for every run must give the very
    // same run, event for event.
    for (fast, generic) in same_run_either_way(9, Sim::disable_fast_loop) {
        assert!(fast.runs_fast_loop() && !generic.runs_fast_loop());
        assert!(
            fast.stats().forwarded_at_once > 100,
            "{}",
            fast.stats().forwarded_at_once
        );
        assert!(fast.stats().hops > 10_000, "{}", fast.stats().hops);
    }
}

#[test]
fn planning_without_reading_the_next_packet_changes_nothing_but_speed() {
    // A transmitter holding credits for the largest packet plans its next
    // wake-up without reading the next packet; the full plan must give the
    // very same run. The incast backs up on credits, so ports short of
    // credits take the full plan in either run.
    for (_, full) in same_run_either_way(5, Sim::disable_plan_shortcut) {
        assert!(
            full.stats().stall_ps.iter().any(|&s| s > 0),
            "no port was short of credits"
        );
    }
}

#[test]
fn incast_and_all_to_all_complete_losslessly() {
    let f = ft16();
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    for m in [Matrix::incast(16, 15, 256 << 10), Matrix::all_to_all(16, 32 << 10)] {
        let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
        let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
        assert_eq!(r.completed, m.flows.len());
        sim.check_ledger().unwrap();
        assert_eq!(sim.ledger().total_dropped(), 0);
        assert_eq!(sim.in_flight(), 0);
    }
}

#[test]
fn incast_shares_the_bottleneck_and_stalls_on_credits() {
    let f = ft16();
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
    let m = Matrix::incast(16, 8, 1 << 20);
    let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
    // 8 MiB through one 100 Gb/s port: at least 8 MiB × 8 / 100 Gb/s.
    let floor = (8u64 << 20) * 8 * 10; // ps at 100 Gb/s (10 ps per bit)
    assert!(r.fct.max_ps >= floor, "{} < {floor}", r.fct.max_ps);
    sim.finish();
    let stalled: u64 = sim.port_reports().iter().flat_map(|p| p.credit_stall_ps.clone()).sum();
    assert!(stalled > 0, "an 8:1 incast must back up on credits");
}

#[test]
fn htsim_triggers_chain_flows() {
    let f = ft16();
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    let m = parse_connection_matrix(
        "Nodes 16\nConnections 3\nTriggers 1\n\
         0->5 id 1 start 0 size 100000 send_done_trigger 1\n\
         3->9 id 2 start 0 size 200000 send_done_trigger 1\n\
         9->0 id 3 trigger 1 size 50000\n\
         trigger id 1 barrier count 2\n",
        "inline.cm",
    )
    .unwrap();
    let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
    let r = run_matrix(&mut sim, &hosts, &m, Time::ms(10), &mut |_| {}).unwrap();
    assert_eq!(r.completed, 3);
    let last_first = r.flows[..2].iter().map(|f| f.finish_ps.unwrap()).max().unwrap();
    assert!(r.flows[2].start_ps.unwrap() >= last_first);
}

#[test]
fn permutation_through_one_switch_runs_at_line_rate() {
    // No two flows share an output: every flow must get the full link (less headers).
    let f = sim::testutil::one_switch(16, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let m = Matrix::permutation(16, 8 << 20, &mut rng);
    let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
    // WRITE of 8 MiB in 4 KiB packets: 26 bytes of headers per packet + one RETH.
    let pkts = (8u64 << 20) / 4096;
    let eff = (8u64 << 20) as f64 / ((8u64 << 20) + pkts * 26 + 16) as f64;
    for fl in &r.flows {
        assert!(
            fl.goodput_bps > 0.99 * 100e9 * eff,
            "flow {}: {:.2} Gb/s",
            fl.id,
            fl.goodput_bps / 1e9
        );
    }
}

#[test]
fn adaptive_routing_spreads_a_permutation_over_equal_cost_paths() {
    // Lowest-port routes pile every up-going flow onto the first spine and core;
    // adaptive routing sends packets over any shortest path with a shorter queue.
    let f = ft16();
    let t = bfs_routes(&f, Tie::LowestPort);
    let hosts = cas(&f);
    let run = |ar: bool| {
        let ib = IbConfig {
            adaptive_routing: ar,
            ..IbConfig::default()
        };
        let mut sim = Sim::new(&f, &t, ib, EngineConfig::default()).unwrap();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let m = Matrix::permutation(16, 4 << 20, &mut rng);
        let r = run_matrix(&mut sim, &hosts, &m, Time::ms(100), &mut |_| {}).unwrap();
        assert_eq!(r.completed, 16);
        assert!(r.flows.iter().all(|fl| fl.delivered_bytes == 4 << 20));
        sim.check_ledger().unwrap();
        assert_eq!(sim.ledger().total_dropped(), 0);
        assert_eq!(sim.in_flight(), 0);
        assert_eq!(sim.stats().psn_errors, 0);
        (r.end_ps, sim.summary())
    };
    let (t_static, s_static) = run(false);
    let (t_ar, s_ar) = run(true);
    assert_eq!(s_static.rerouted, 0);
    assert!(s_ar.rerouted > 0);
    eprintln!(
        "static {t_static} ps, adaptive {t_ar} ps, rerouted {}, reordered {}",
        s_ar.rerouted, s_ar.reordered
    );
    assert!(
        (t_ar as f64) < 0.7 * t_static as f64,
        "adaptive {t_ar} ps vs static {t_static} ps"
    );
}

#[test]
fn reads_complete_when_adaptive_routing_reorders_their_responses() {
    let f = ft16();
    let t = bfs_routes(&f, Tie::LowestPort);
    let hosts = cas(&f);
    let ib = IbConfig {
        adaptive_routing: true,
        ..IbConfig::default()
    };
    let mut sim = Sim::new(&f, &t, ib, EngineConfig::default()).unwrap();
    let mut qps = Vec::new();
    for i in 0..8 {
        // Host i reads from host 15 - i (across the core), and host 8 + i reads from host i.
        for (a, b) in [(i, 15 - i), (8 + i, i)] {
            let (q, _) = sim
                .create_rc_pair(hosts[a], hosts[b], &sim::QpOptions::default())
                .unwrap();
            sim.post_read(q, 1 << 20, a as u64).unwrap();
            sim.post_read(q, 300_000, a as u64).unwrap();
            qps.push(q);
        }
    }
    let mut done = 0;
    loop {
        match sim.run(Time::NEVER) {
            sim::RunStatus::Idle => break,
            sim::RunStatus::Completion => {
                while let Some(n) = sim.next_cq_event() {
                    while let Some(c) = sim.poll_cq(n) {
                        assert_eq!(c.op, sim::CqeOp::Read);
                        done += 1;
                    }
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(done, 32);
    assert_eq!(sim.stats().psn_errors, 0);
    assert!(sim.summary().rerouted > 0);
    sim.check_ledger().unwrap();
    assert_eq!(sim.in_flight(), 0);
}
