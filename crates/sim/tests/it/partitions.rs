//! Partition enforcement: P_Key tables from the SM's plan of a partitions.conf, QPs
//! with P_Keys, exact counts of what is delivered and what is dropped and counted.

use fabric::{Fabric, LinkRate, NodeId};
use sim::testutil::{Tie, bfs_routes, cas, one_switch};
use sim::{CqeOp, EngineConfig, IbConfig, QpOptions, RunStatus, Sim, Time};
use sm::partitions::{self, PkeyPlan};

/// Four hosts on one switch: tenant A = h0, h1 (full); tenant B = h2 (full), h3
/// (limited). The SM on h0; the default partition holds only the SM's port.
fn tenants(f: &Fabric, h: &[NodeId]) -> PkeyPlan {
    let g = |i: usize| f.node(h[i]).port_guid(1);
    let text = format!(
        "Default=0x7fff : SELF=full ;\nA=0x8001 : {}=full, {}=full ;\nB=0x0002 : {}=full, {}=limited ;\n",
        g(0),
        g(1),
        g(2),
        g(3)
    );
    let conf = partitions::parse(&text, "partitions.conf").unwrap();
    partitions::resolve(&conf, f, (h[0], 1)).unwrap()
}

fn setup(with_partitions: bool) -> (Sim, Vec<NodeId>) {
    let f = one_switch(4, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let h = cas(&f);
    let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
    if with_partitions {
        sim.set_partitions(&tenants(&f, &h)).unwrap();
    }
    (sim, h)
}

fn ud(sim: &mut Sim, n: NodeId, pkey: u16) -> sim::QpId {
    sim.create_ud(
        n,
        &QpOptions {
            pkey,
            ..QpOptions::default()
        },
    )
    .unwrap()
}

/// Run to the end; Recv completions per node.
fn drain(sim: &mut Sim, nodes: &[NodeId]) -> Vec<usize> {
    let mut recv = vec![0; nodes.len()];
    loop {
        match sim.run(Time::NEVER) {
            RunStatus::Completion => {
                while let Some(n) = sim.next_cq_event() {
                    while let Some(c) = sim.poll_cq(n) {
                        if c.op == CqeOp::Recv {
                            recv[nodes.iter().position(|&x| x == n).unwrap()] += 1;
                        }
                    }
                }
            }
            RunStatus::Idle | RunStatus::TimeLimit => break,
            RunStatus::Deadlock(d) => panic!("{d:?}"),
        }
    }
    recv
}

/// UD traffic: 10 in tenant A, 5 from A into B, 4 from B's limited member to its
/// full member, 3 from B's full member sending as limited to the limited member.
fn traffic(sim: &mut Sim, h: &[NodeId]) {
    let a0 = ud(sim, h[0], 0x8001);
    let a1 = ud(sim, h[1], 0x8001);
    let b2 = ud(sim, h[2], 0x8002);
    let b2_as_limited = ud(sim, h[2], 0x0002);
    let b3 = ud(sim, h[3], 0x0002);
    for i in 0..10 {
        sim.post_ud_send(a0, a1, 1024, i).unwrap();
    }
    for i in 0..5 {
        sim.post_ud_send(a0, b2, 1024, i).unwrap();
    }
    for i in 0..4 {
        sim.post_ud_send(b3, b2, 1024, i).unwrap();
    }
    for i in 0..3 {
        sim.post_ud_send(b2_as_limited, b3, 1024, i).unwrap();
    }
}

#[test]
fn foreign_and_limited_to_limited_packets_are_dropped_and_counted() {
    let (mut sim, h) = setup(true);
    traffic(&mut sim, &h);
    let recv = drain(&mut sim, &h);
    assert_eq!(recv, [0, 10, 4, 0], "Recv completions at h0..h3");
    // h2 dropped tenant A's 5; h3 dropped the 3 limited-to-limited packets.
    let v: Vec<u64> = h.iter().map(|&n| sim.p_key_violations(n, 1)).collect();
    assert_eq!(v, [0, 0, 5, 3]);
    let l = sim.ledger();
    assert_eq!((l.created, l.delivered, l.total_dropped()), (22, 14, 8));
    sim.check_ledger().unwrap();
    assert_eq!(sim.summary().drops_by_reason, [("p_key_violation".to_string(), 8)]);
}

#[test]
fn without_partitions_every_p_key_is_delivered() {
    let (mut sim, h) = setup(false);
    traffic(&mut sim, &h);
    assert_eq!(drain(&mut sim, &h), [0, 10, 9, 3]);
    assert_eq!(sim.ledger().total_dropped(), 0);
    assert_eq!(sim.p_key_violations(h[2], 1), 0);
}

#[test]
fn same_partition_rc_traffic_runs_exactly_as_without_partitions() {
    let run = |with: bool| {
        let (mut sim, h) = setup(with);
        let o = QpOptions {
            pkey: 0x8001,
            ..QpOptions::default()
        };
        let (q, r) = sim.create_rc_pair(h[0], h[1], &o).unwrap();
        sim.post_write(q, 1 << 20, 1).unwrap();
        drain(&mut sim, &h);
        sim.check_ledger().unwrap();
        assert_eq!(sim.qp_rx_bytes(r), 1 << 20);
        assert_eq!(sim.ledger().total_dropped(), 0);
        let s = sim.summary();
        (s.trace_hash, s.packets_created, s.simulated_ps)
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn a_table_on_a_switch_or_a_missing_port_is_refused() {
    let (mut sim, h) = setup(false);
    let sw = NodeId(0);
    assert!(!h.contains(&sw));
    assert!(sim.set_pkey_table(sw, 1, &[0xffff]).is_err());
    assert!(sim.set_pkey_table(h[0], 9, &[0xffff]).is_err());
    assert!(sim.set_pkey_table(h[0], 0, &[0xffff]).is_err());
}
