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
    IbConfig { switch_buffer_bytes_per_vl: 16_384, ..IbConfig::default() }
}

#[test]
fn clockwise_shortest_paths_deadlock_and_the_cycle_is_reported() {
    let f = ring(4, 1, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let hosts = cas(&f);
    let mut sim = Sim::new(&f, &t, small_buffers(), EngineConfig::default()).unwrap();
    let err = run_matrix(&mut sim, &hosts, &ring_traffic(), Time::ms(50), &mut |_| {}).unwrap_err();
    let WorkloadError::Deadlock(rep) = err else { panic!("expected a deadlock, got {err}") };
    // The cycle is the four clockwise ring ports (port 2 of each switch), VL 0.
    let mut sw: Vec<&str> = rep.cycle.iter().map(|q| q.switch.as_str()).collect();
    sw.sort();
    assert_eq!(sw, vec!["sw0", "sw1", "sw2", "sw3"], "{rep}");
    assert!(rep.cycle.iter().all(|q| q.port == 2 && q.vl == 0 && q.queued > 0), "{rep}");
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
