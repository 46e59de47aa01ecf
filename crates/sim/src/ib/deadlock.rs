//! Credit-loop deadlock detection.
//!
//! A switch output queue (port, VL) is *stuck* when its head packet lacks credits,
//! no credits are on their way back to it, and nothing is on the wire towards the
//! buffer it feeds. It can only move again if the downstream input buffer drains;
//! that buffer drains only through the output queues of the next switch that hold
//! its packets. Start from every stuck queue and repeatedly discard any queue that
//! waits on a queue that is not stuck (it will get credits eventually). What
//! remains is a closed set of queues that wait only on each other: a deadlock,
//! exact at the instant it is checked, not a timeout. The report follows the
//! wait-for edges from one member until it closes the cycle and names each hop
//! as (switch, port, VL).

use serde::Serialize;

use crate::engine::Time;
use crate::ib::net::{Links, NodeModel, Topology};
use crate::ib::packet::{NONE, Packets};
use crate::ib::switch::{Head, Switches};

/// One queue of a deadlock cycle: packets at `switch` waiting to leave `port` on
/// `vl`, with no credits at the next hop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WaitingQueue {
    pub switch: String,
    pub port: u8,
    pub vl: u8,
    /// Packets queued there.
    pub queued: u32,
}

/// A detected deadlock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadlockReport {
    /// When it was detected.
    pub at_ps: u64,
    /// The wait-for cycle, each queue waiting on the next (the last on the first).
    pub cycle: Vec<WaitingQueue>,
    /// Queues in the deadlocked set (the cycle plus queues waiting on it).
    pub deadlocked_queues: usize,
    /// Packets still in the network.
    pub packets_stuck: u64,
}

impl std::fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "credit deadlock at {} ps: ", self.at_ps)?;
        for (i, q) in self.cycle.iter().enumerate() {
            if i > 0 {
                f.write_str(" -> ")?;
            }
            write!(f, "({}, port {}, VL {})", q.switch, q.port, q.vl)?;
        }
        write!(
            f,
            " ({} queues, {} packets stuck)",
            self.deadlocked_queues, self.packets_stuck
        )
    }
}

impl DeadlockReport {
    /// Packets are stuck but no cycle explains it (a model fault): report the queues.
    pub(crate) fn stuck(now: Time, in_flight: u64) -> DeadlockReport {
        DeadlockReport {
            at_ps: now.0,
            cycle: Vec::new(),
            deadlocked_queues: 0,
            packets_stuck: in_flight,
        }
    }
}

/// The parts of the world the search reads.
pub(crate) struct World<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) links: &'a Links,
    pub(crate) sw: &'a Switches,
    pub(crate) pkts: &'a Packets,
    pub(crate) now: Time,
}

/// Find a deadlocked cycle, if there is one now. Costs a pass over every
/// switch port and VL, and the output queues of the switches next to the
/// stuck ones: run by the watchdog and when the world runs dry with packets
/// left, never per event.
pub(crate) fn find(w: &World) -> Option<DeadlockReport> {
    let World {
        topo,
        links,
        sw,
        pkts,
        now,
    } = *w;
    let nvl = links.nvl();
    let np = links.ports.len();
    let idx = |gp: usize, vl: usize| gp * nvl + vl;
    let mut cand = vec![false; np * nvl];
    let mut any = false;
    for gp in 0..np {
        if links.ports[gp].peer == NONE || topo.node_model[topo.port_node[gp] as usize] != NodeModel::IbSwitch {
            continue;
        }
        if topo.node_model[links.ports[gp].peer_node as usize] != NodeModel::IbSwitch {
            continue;
        }
        if !links.ports[gp].fifo.is_empty() {
            continue;
        }
        for vl in 0..nvl {
            if sw.head_state(links, pkts, now, gp as u32, vl) == Head::NoCredit
                && !links.credit_returns(gp as u32).any(|c| c.1 as usize == vl)
            {
                cand[idx(gp, vl)] = true;
                any = true;
            }
        }
    }
    if !any {
        return None;
    }
    // Wait-for edges: queue (gp, vl) -> the output queues of the next switch that
    // hold packets from input buffer (peer[gp], vl).
    let edges = |gp: usize, vl: usize| -> Vec<usize> {
        let pg = links.ports[gp].peer;
        let m = topo.port_node[pg as usize] as usize;
        let mut out = Vec::new();
        for og in topo.port_base[m] as usize..topo.port_base[m + 1] as usize {
            for ovl in 0..nvl {
                let q = sw.oq_at(links, og, ovl);
                if q.iter(pkts)
                    .any(|p| pkts[p].in_link == gp as u32 && pkts[p].in_vl as usize == vl)
                {
                    out.push(idx(og, ovl));
                }
            }
        }
        out
    };
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); np * nvl];
    for i in 0..np * nvl {
        if cand[i] {
            adj[i] = edges(i / nvl, i % nvl);
        }
    }
    loop {
        let mut changed = false;
        for i in 0..np * nvl {
            if cand[i] && (adj[i].is_empty() || adj[i].iter().any(|&j| !cand[j])) {
                cand[i] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let members: Vec<usize> = (0..np * nvl).filter(|&i| cand[i]).collect();
    let &start = members.first()?;
    // Walk wait-for edges until a queue repeats; the repeat closes the cycle.
    let mut seen = vec![usize::MAX; np * nvl];
    let mut path = Vec::new();
    let mut cur = start;
    while seen[cur] == usize::MAX {
        seen[cur] = path.len();
        path.push(cur);
        cur = *adj[cur]
            .iter()
            .find(|&&j| cand[j])
            .expect("members wait only on members");
    }
    let cycle = path[seen[cur]..]
        .iter()
        .map(|&i| {
            let (gp, vl) = (i / nvl, i % nvl);
            WaitingQueue {
                switch: topo.node_name[topo.port_node[gp] as usize].clone(),
                port: links.ports[gp].port_num,
                vl: vl as u8,
                queued: sw.oq_at(links, gp, vl).len,
            }
        })
        .collect();
    Some(DeadlockReport {
        at_ps: now.0,
        cycle,
        deadlocked_queues: members.len(),
        packets_stuck: pkts.live() as u64,
    })
}
