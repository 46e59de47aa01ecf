//! Credit-loop deadlock: shortest paths that all turn the same way round a ring
//! of switches deadlock under load, and the cycle is reported; routes that never
//! use one ring link (what up*/down* does on a ring) complete.

use fabric::LinkRate;
use sim::testutil::{Tie, bfs_routes, cas, ring};
use sim::workload::{Matrix, WorkloadError, run_matrix};
use sim::{EngineConfig, IbConfig, Sim, Time};

fn ring_traffic() -> Matrix {
    // Host i sends to the host two switches on: every flow crosses two ring links.
    let mut m = Matrix::incast(4, 0, 0);
    for i in 0..4u32 {
        m.flows.push(sim::workload::Flow {
            id: i + 1,
            src: i,
            dst: (i + 2) % 4,
            bytes: 4 << 20,
            start: Some(sim::workload::Start::At(Time::ZERO)),
            send_done_trigger: None,
            recv_done_trigger: None,
            op: sim::workload::FlowOp::Write,
            prio: 0,
        });
    }
    m
}

fn small_buffers() -> IbConfig {
    IbConfig {
        switch_buffer_bytes_per_vl: 16_384,
        ..IbConfig::default()
    }
}

#[test]
fn clockwise_shortest_paths_deadlock_and_the_cycle_is_reported() {
    let f = ring(4, 1, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let hosts = cas(&f);
    let mut sim = Sim::new(&f, &t, small_buffers(), EngineConfig::default()).unwrap();
    let err = run_matrix(&mut sim, &hosts, &ring_traffic(), Time::ms(50), &mut |_| {}).unwrap_err();
    let WorkloadError::Deadlock(rep) = err else {
        panic!("expected a deadlock, got {err}")
    };
    // The cycle is the four clockwise ring ports (port 2 of each switch), VL 0.
    let mut sw: Vec<&str> = rep.cycle.iter().map(|q| q.switch.as_str()).collect();
    sw.sort();
    assert_eq!(sw, vec!["sw0", "sw1", "sw2", "sw3"], "{rep}");
    assert!(
        rep.cycle.iter().all(|q| q.port == 2 && q.vl == 0 && q.queued > 0),
        "{rep}"
    );
    assert!(rep.packets_stuck > 0);
    // Stuck is not lost: the ledger still balances with the packets in flight.
    sim.check_ledger().unwrap();
    assert_eq!(sim.ledger().total_dropped(), 0);
    assert!(rep.to_string().contains("(sw"), "{rep}");
}

#[test]
fn routes_that_break_the_ring_complete() {
    let f = ring(4, 1, LinkRate::EDR_4X, 2.0);
    // Same switches, hosts and ports, without the sw3 -> sw0 cable: BFS routes on
    // it never cross that link, so no cycle of channel dependencies exists.
    let mut line = f.clone();
    let last = fabric::LinkId(line.links.len() as u32 - 1);
    line.disconnect(last).unwrap();
    let t = bfs_routes(&line, Tie::LowestPort);
    let hosts = cas(&f);
    let mut sim = Sim::new(&f, &t, small_buffers(), EngineConfig::default()).unwrap();
    let r = run_matrix(&mut sim, &hosts, &ring_traffic(), Time::ms(50), &mut |_| {}).unwrap();
    assert_eq!(r.completed, 4);
    assert!(r.flows.iter().all(|fl| fl.delivered_bytes == 4 << 20));
    sim.check_ledger().unwrap();
    assert_eq!(sim.in_flight(), 0);
    assert_eq!(sim.ledger().total_dropped(), 0);
}

/// The credit-loops fabric (ibdm's example, converted to an ibsim net file): 20
/// switches, 16 HCAs. OpenSM's minhop routes on it have credit loops (ibdmchk
/// says so); updn and ftree routes do not.
fn credit_loops() -> fabric::Fabric {
    let path = sm::testkit::samples_dir().join("credit-loops.converted.net");
    fabric::format::read_file(
        &path,
        Some(fabric::format::Format::Ibsim),
        &fabric::format::ReadOptions::default(),
    )
    .expect("credit-loops net file")
    .0
}

fn route(f: &fabric::Fabric, engine: sm::routing::EngineKind) -> sm::RoutingTables {
    let o = sm::run::RunOptions {
        engines: vec![engine],
        validate: false,
        ..sm::run::RunOptions::default()
    };
    sm::run::run(f, &o).expect("routing").0
}

/// The flows whose minhop routes carry a dependency of the credit loop that the
/// SM's validator finds: for every pair of consecutive channels (switch output
/// port) of the loop, every host pair routed through both. Each sends 4 MiB.
fn loop_traffic(f: &fabric::Fabric, t: &sm::RoutingTables) -> Matrix {
    let flat = f.freeze();
    let check = sm::validate::check_credit_loops(&flat, t);
    let cycle = check.cycle.expect("minhop routes on credit-loops have a credit loop");
    let deps: Vec<((u32, u8), (u32, u8))> = (0..cycle.len())
        .map(|i| {
            let (a, b) = (cycle[i], cycle[(i + 1) % cycle.len()]);
            ((a.node.0, a.port), (b.node.0, b.port))
        })
        .collect();
    let hosts = cas(f);
    let mut m = Matrix::incast(hosts.len() as u32, 0, 0);
    for (si, &s) in hosts.iter().enumerate() {
        for (di, &d) in hosts.iter().enumerate() {
            if si == di {
                continue;
            }
            // Walk the LFTs from s's switch to d, recording (switch, out port).
            let dlid = t.lid_of(d, 1).unwrap().0 as usize;
            let (mut at, _) = f.peer(s, 1).unwrap();
            let mut hops = Vec::new();
            while f.node(at.node).is_switch() && hops.len() < 32 {
                let out = t.lft[at.node.idx()].ports[dlid];
                hops.push((at.node.0, out));
                at = f.peer(at.node, out).unwrap().0;
            }
            if hops.windows(2).any(|w| deps.contains(&(w[0], w[1]))) {
                m.flows.push(sim::workload::Flow {
                    id: m.flows.len() as u32 + 1,
                    src: si as u32,
                    dst: di as u32,
                    bytes: 4 << 20,
                    start: Some(sim::workload::Start::At(Time::ZERO)),
                    send_done_trigger: None,
                    recv_done_trigger: None,
                    op: sim::workload::FlowOp::Write,
                    prio: 0,
                });
            }
        }
    }
    assert!(!m.flows.is_empty());
    m
}

/// Run `m` with 2-packet switch buffers.
fn run_on(
    f: &fabric::Fabric,
    t: &sm::RoutingTables,
    m: &Matrix,
) -> Result<sim::workload::MatrixReport, Box<(WorkloadError, Sim)>> {
    let hosts = cas(f);
    let ib = IbConfig {
        switch_buffer_bytes_per_vl: 8_448,
        ..IbConfig::default()
    };
    let mut sim = Sim::new(f, t, ib, EngineConfig::default()).unwrap();
    match run_matrix(&mut sim, &hosts, m, Time::ms(200), &mut |_| {}) {
        Ok(r) => {
            sim.check_ledger().unwrap();
            assert_eq!(sim.ledger().total_dropped(), 0);
            assert_eq!(sim.in_flight(), 0);
            Ok(r)
        }
        Err(e) => Err(Box::new((e, sim))),
    }
}

#[test]
fn minhop_on_credit_loops_deadlocks_and_reports_the_cycle() {
    let f = credit_loops();
    let t = route(&f, sm::routing::EngineKind::MinHop);
    let m = loop_traffic(&f, &t);
    let Err(failed) = run_on(&f, &t, &m) else {
        panic!("minhop routes must deadlock under the loop's traffic")
    };
    let (e, sim) = *failed;
    let WorkloadError::Deadlock(rep) = e else {
        panic!("expected a deadlock, got {e}")
    };
    assert!(rep.cycle.len() >= 2, "{rep}");
    for q in &rep.cycle {
        assert!(q.switch.starts_with("SW_"), "{rep}");
        assert!(q.queued > 0, "{rep}");
    }
    eprintln!("{rep}");
    sim.check_ledger().unwrap();
    assert_eq!(sim.ledger().total_dropped(), 0);
}

#[test]
fn updn_ftree_and_dfsssp_on_credit_loops_complete_the_same_traffic() {
    let f = credit_loops();
    let m = loop_traffic(&f, &route(&f, sm::routing::EngineKind::MinHop));
    for engine in [
        sm::routing::EngineKind::UpDn,
        sm::routing::EngineKind::Ftree,
        sm::routing::EngineKind::Dfsssp,
    ] {
        let t = route(&f, engine);
        if engine == sm::routing::EngineKind::Dfsssp {
            // DFSSSP breaks the loop with VL layers: paths get SLs, SL2VL maps them.
            assert!(t.vls_used > 1 || t.path_sl.is_some(), "dfsssp used {} VLs", t.vls_used);
        }
        let r = run_on(&f, &t, &m).unwrap_or_else(|b| panic!("{engine}: {}", b.0));
        assert_eq!(r.completed, m.flows.len(), "{engine}");
    }
}
