//! The flow-level network: connections carry messages at max-min fair rates over
//! fixed paths; events happen only where a rate can change.
//!
//! A connection (one QP, one direction) is a FIFO of messages. While it has one it
//! is *active* and holds a rate on every resource of its path; the head message
//! drains at that rate and the next starts at once, so a backlogged connection
//! moving from message to message changes no rate and costs no solve. A
//! connection that becomes active or idle changes the rates of the flows it shares
//! resources with: those resources are marked, and before time moves on the
//! solver re-runs progressive filling on the connected part of the flow–resource
//! graph they reach, and only there ([`FlowSim::solves`] and
//! [`FlowSim::flows_resolved`] count the work).
//!
//! A message is delivered its connection's fixed latency after its last byte
//! drained (propagation, switch and endpoint latency, set by the caller). Time is
//! integer picoseconds; a drain ends at the first picosecond at or after the exact
//! fluid instant. Events of one picosecond are taken in a fixed order (deliveries
//! before drains, then by sequence), so a run is a function of its inputs.
//!
//! Conservation is checked, not assumed: every message posted is delivered,
//! queued, draining or in transit, and the bytes a drained message was served
//! (its rates integrated over time) equal its size within rounding
//! ([`FlowSim::check`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::solve::{Solver, Use};

/// A connection's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u32);

/// A message that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The connection it came on.
    pub conn: ConnId,
    /// The caller's tag.
    pub tag: u64,
    /// When it was posted, picoseconds.
    pub posted_ps: u64,
    /// When its last byte arrived, picoseconds.
    pub done_ps: u64,
    /// Its size, bytes.
    pub bytes: u64,
}

/// Why [`FlowSim::advance`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Messages arrived at the current time.
    Delivered(Vec<Delivery>),
    /// The time limit was reached with messages still moving.
    Reached,
    /// Nothing is queued, draining or in transit.
    Idle,
}

/// What breaks a flow run: the bookkeeping disagrees with itself.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FlowError {
    /// A message's integrated service differs from its size.
    #[error("connection {conn}: a {bytes}-byte message was served {served:.3} bytes")]
    Served {
        /// The connection.
        conn: u32,
        /// The message's size.
        bytes: u64,
        /// Bytes integrated from its rates.
        served: f64,
    },
    /// Posted ≠ delivered + still in the network.
    #[error("{posted} messages posted, {delivered} delivered, {in_network} in the network")]
    Ledger {
        /// Messages posted.
        posted: u64,
        /// Messages delivered.
        delivered: u64,
        /// Messages queued, draining or in transit.
        in_network: u64,
    },
    /// A connection with traffic has no capacity anywhere along its path.
    #[error("connection {conn} has rate 0: a resource on its path has no capacity")]
    Starved {
        /// The connection.
        conn: u32,
    },
    /// A resource or connection index that does not exist.
    #[error("{what} {index} does not exist")]
    NoSuch {
        /// "resource" or "connection".
        what: &'static str,
        /// The index.
        index: u32,
    },
}

#[derive(Clone, Debug)]
struct Msg {
    bytes: u64,
    tag: u64,
    posted_ps: u64,
}

#[derive(Clone, Debug)]
struct Conn {
    latency_ps: u64,
    queue: VecDeque<Msg>,
    /// the head message's bytes left at `t0`
    rem: f64,
    /// the head message's bytes served before `t0`
    served: f64,
    t0: u64,
    rate: f64,
    version: u32,
    active: bool,
}

/// Flow-level counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// Messages posted.
    pub posted: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Payload bytes delivered.
    pub bytes_delivered: u64,
    /// Events taken (drains and deliveries).
    pub events: u64,
    /// Rate solves run.
    pub solves: u64,
    /// Flow rates recomputed over all solves.
    pub flows_resolved: u64,
}

/// The flow-level network.
#[derive(Debug)]
pub struct FlowSim {
    now: u64,
    caps: Vec<f64>,
    on: Vec<Vec<u32>>,
    /// bytes carried per resource, integrated at each rate change
    carried: Vec<f64>,
    paths: Vec<Vec<Use>>,
    bounds: Vec<f64>,
    conns: Vec<Conn>,
    rate: Vec<f64>,
    dirty: Vec<u32>,
    mark_res: Vec<u32>,
    mark_conn: Vec<u32>,
    mark: u32,
    /// (drain instant, connection, version)
    drains: BinaryHeap<Reverse<(u64, u32, u32)>>,
    /// (arrival instant, sequence) → the delivery
    arrivals: BinaryHeap<Reverse<(u64, u64)>>,
    pending: std::collections::BTreeMap<u64, Delivery>,
    seq: u64,
    solver: Solver,
    comp_flows: Vec<u32>,
    comp_res: Vec<u32>,
    counters: FlowCounters,
    in_network: u64,
}

impl Default for FlowSim {
    fn default() -> Self {
        FlowSim::new()
    }
}

impl FlowSim {
    /// An empty network at time 0.
    pub fn new() -> FlowSim {
        FlowSim {
            now: 0,
            caps: Vec::new(),
            on: Vec::new(),
            carried: Vec::new(),
            paths: Vec::new(),
            bounds: Vec::new(),
            conns: Vec::new(),
            rate: Vec::new(),
            dirty: Vec::new(),
            mark_res: Vec::new(),
            mark_conn: Vec::new(),
            mark: 0,
            drains: BinaryHeap::new(),
            arrivals: BinaryHeap::new(),
            pending: Default::default(),
            seq: 0,
            solver: Solver::default(),
            comp_flows: Vec::new(),
            comp_res: Vec::new(),
            counters: FlowCounters::default(),
            in_network: 0,
        }
    }

    /// Add a resource of `bytes_per_ps` capacity (a link direction's payload rate).
    pub fn add_resource(&mut self, bytes_per_ps: f64) -> u32 {
        self.caps.push(bytes_per_ps.max(0.0));
        self.on.push(Vec::new());
        self.carried.push(0.0);
        self.mark_res.push(0);
        self.caps.len() as u32 - 1
    }

    /// Open a connection over `path` (each resource once, with the bytes it
    /// carries there per payload byte), delivering `latency_ps` after a message's
    /// last byte drains, at most `bound` payload bytes per ps (∞ for none).
    pub fn open(&mut self, path: Vec<Use>, latency_ps: u64, bound: f64) -> Result<ConnId, FlowError> {
        if let Some(u) = path.iter().find(|u| u.res as usize >= self.caps.len()) {
            return Err(FlowError::NoSuch {
                what: "resource",
                index: u.res,
            });
        }
        let mut merged: Vec<Use> = Vec::with_capacity(path.len());
        for u in path {
            match merged.iter_mut().find(|m| m.res == u.res) {
                Some(m) => m.weight += u.weight,
                None => merged.push(u),
            }
        }
        self.paths.push(merged);
        self.bounds.push(if bound > 0.0 { bound } else { f64::INFINITY });
        self.rate.push(0.0);
        self.mark_conn.push(0);
        self.conns.push(Conn {
            latency_ps,
            queue: VecDeque::new(),
            rem: 0.0,
            served: 0.0,
            t0: 0,
            rate: 0.0,
            version: 0,
            active: false,
        });
        Ok(ConnId(self.conns.len() as u32 - 1))
    }

    /// Resources that have been the saturated bottleneck of two or more
    /// flows' data: where packets would queue (and ECN would mark) in a real
    /// fabric, which max-min rates do not show.
    pub fn shared_bottlenecks(&self) -> Vec<u32> {
        self.solver.shared_bottlenecks()
    }

    /// Simulated now, picoseconds.
    pub fn now_ps(&self) -> u64 {
        self.now
    }

    /// The counters so far.
    pub fn counters(&self) -> FlowCounters {
        self.counters
    }

    /// A connection's current rate, payload bytes per ps (0 when idle).
    pub fn rate(&self, c: ConnId) -> f64 {
        self.conns[c.0 as usize].rate
    }

    /// Bytes served so far to the message `c` is draining (0 when idle).
    pub fn head_served(&mut self, c: ConnId) -> f64 {
        let ci = c.0 as usize;
        self.rebase(ci);
        if self.conns[ci].active {
            self.conns[ci].served
        } else {
            0.0
        }
    }

    /// Bytes carried by each resource so far (payload and ACK shares by weight).
    pub fn carried(&mut self) -> &[f64] {
        for c in 0..self.conns.len() {
            self.rebase(c);
        }
        &self.carried
    }

    /// Post `bytes` on `c` now; `tag` comes back with its delivery.
    pub fn post(&mut self, c: ConnId, bytes: u64, tag: u64) -> Result<(), FlowError> {
        let ci = c.0 as usize;
        if ci >= self.conns.len() {
            return Err(FlowError::NoSuch {
                what: "connection",
                index: c.0,
            });
        }
        self.counters.posted += 1;
        self.in_network += 1;
        let now = self.now;
        let conn = &mut self.conns[ci];
        conn.queue.push_back(Msg {
            bytes,
            tag,
            posted_ps: now,
        });
        if !conn.active {
            conn.active = true;
            conn.rem = bytes as f64;
            conn.served = 0.0;
            conn.t0 = now;
            for u in &self.paths[ci] {
                self.on[u.res as usize].push(c.0);
                self.dirty.push(u.res);
            }
            if self.paths[ci].is_empty() {
                // a path of no resource (a NIC to itself): unconstrained
                self.dirty.push(u32::MAX);
                self.comp_flows.push(c.0);
            }
        }
        Ok(())
    }

    /// Run until `until_ps` or until messages arrive, whichever is first.
    pub fn advance(&mut self, until_ps: u64) -> Result<Step, FlowError> {
        loop {
            if !self.dirty.is_empty() {
                self.resolve()?;
            }
            let next_drain = loop {
                match self.drains.peek() {
                    Some(&Reverse((_, c, v)))
                        if self.conns[c as usize].version != v || !self.conns[c as usize].active =>
                    {
                        self.drains.pop();
                    }
                    d => break d.map(|Reverse(x)| *x),
                }
            };
            let next_arrival = self.arrivals.peek().map(|Reverse(x)| *x);
            let t = match (next_drain, next_arrival) {
                (None, None) => {
                    // an idle network's clock moves to the limit, as a packet world's does
                    if until_ps != u64::MAX {
                        self.now = self.now.max(until_ps);
                    }
                    return Ok(if self.in_network == 0 {
                        Step::Idle
                    } else {
                        Step::Reached
                    });
                }
                (d, a) => d.map_or(u64::MAX, |d| d.0).min(a.map_or(u64::MAX, |a| a.0)),
            };
            if t > until_ps {
                self.now = self.now.max(until_ps);
                return Ok(Step::Reached);
            }
            self.now = t;
            if next_arrival.is_some_and(|a| a.0 == t) {
                let mut out = Vec::new();
                while let Some(&Reverse((at, s))) = self.arrivals.peek() {
                    if at != t {
                        break;
                    }
                    self.arrivals.pop();
                    let d = self.pending.remove(&s).expect("every arrival has its delivery");
                    self.counters.events += 1;
                    self.counters.delivered += 1;
                    self.counters.bytes_delivered += d.bytes;
                    self.in_network -= 1;
                    out.push(d);
                }
                return Ok(Step::Delivered(out));
            }
            let Some((_, c, _)) = next_drain else {
                unreachable!("t came from a drain")
            };
            self.drains.pop();
            self.drained(c as usize)?;
            // every drain of this picosecond before the rates are solved again:
            // flows that end together cost one solve
            while let Some(&Reverse((at, c, v))) = self.drains.peek() {
                if at != t {
                    break;
                }
                self.drains.pop();
                let conn = &self.conns[c as usize];
                if conn.version == v && conn.active {
                    self.drained(c as usize)?;
                }
            }
        }
    }

    /// The head message of `c` finished draining now.
    fn drained(&mut self, c: usize) -> Result<(), FlowError> {
        self.counters.events += 1;
        self.rebase(c);
        let now = self.now;
        let conn = &mut self.conns[c];
        let m = conn
            .queue
            .pop_front()
            .expect("a draining connection has a head message");
        // the integral of the rates it had: its size, up to the drain instant's
        // rounding up to a picosecond (at most one ps at its rate) and f64 error
        let served = conn.served;
        let over = served - m.bytes as f64;
        let tol = 1e-9 * m.bytes as f64 + 1e-6;
        if over < -tol || over > conn.rate.min(1e9) + tol {
            return Err(FlowError::Served {
                conn: c as u32,
                bytes: m.bytes,
                served,
            });
        }
        let at = now + conn.latency_ps;
        let s = self.seq;
        self.seq += 1;
        self.pending.insert(
            s,
            Delivery {
                conn: ConnId(c as u32),
                tag: m.tag,
                posted_ps: m.posted_ps,
                done_ps: at,
                bytes: m.bytes,
            },
        );
        self.arrivals.push(Reverse((at, s)));
        match conn.queue.front() {
            Some(next) => {
                conn.rem = next.bytes as f64;
                conn.served = 0.0;
                conn.t0 = now;
                conn.version = conn.version.wrapping_add(1);
                self.schedule(c);
            }
            None => {
                conn.active = false;
                conn.rem = 0.0;
                conn.rate = 0.0;
                conn.version = conn.version.wrapping_add(1);
                self.rate[c] = 0.0;
                for u in &self.paths[c] {
                    let on = &mut self.on[u.res as usize];
                    if let Some(i) = on.iter().position(|&x| x as usize == c) {
                        on.swap_remove(i);
                    }
                    self.dirty.push(u.res);
                }
            }
        }
        Ok(())
    }

    /// Bring `c`'s head message and the resources' carried bytes up to now.
    fn rebase(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        if !conn.active || conn.t0 == self.now {
            return;
        }
        let dt = (self.now - conn.t0) as f64;
        let b = conn.rate * dt;
        conn.rem -= b;
        conn.served += b;
        conn.t0 = self.now;
        for u in &self.paths[c] {
            self.carried[u.res as usize] += b * u.weight;
        }
    }

    /// Push `c`'s drain event for its current rate and head.
    fn schedule(&mut self, c: usize) {
        let conn = &self.conns[c];
        if !conn.active || conn.rate <= 0.0 {
            return;
        }
        let dt = if conn.rem <= 0.0 {
            0
        } else {
            (conn.rem / conn.rate).ceil() as u64
        };
        self.drains.push(Reverse((self.now + dt, c as u32, conn.version)));
    }

    /// Re-solve the rates of the flows the marked resources reach.
    fn resolve(&mut self) -> Result<(), FlowError> {
        self.mark = self.mark.wrapping_add(1);
        let mark = self.mark;
        self.comp_res.clear();
        let mut stack: Vec<u32> = Vec::new();
        let mut flows = std::mem::take(&mut self.comp_flows);
        flows.retain(|&f| self.conns[f as usize].active && self.paths[f as usize].is_empty());
        for &f in &flows {
            self.mark_conn[f as usize] = mark;
        }
        for r in self.dirty.drain(..) {
            if r != u32::MAX && self.mark_res[r as usize] != mark {
                self.mark_res[r as usize] = mark;
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            self.comp_res.push(r);
            for &f in &self.on[r as usize] {
                if self.mark_conn[f as usize] == mark {
                    continue;
                }
                self.mark_conn[f as usize] = mark;
                flows.push(f);
                for u in &self.paths[f as usize] {
                    if self.mark_res[u.res as usize] != mark {
                        self.mark_res[u.res as usize] = mark;
                        stack.push(u.res);
                    }
                }
            }
        }
        // the same order every time: by connection id
        flows.sort_unstable();
        self.comp_res.sort_unstable();
        self.counters.solves += 1;
        self.counters.flows_resolved += flows.len() as u64;
        let mut newrate = std::mem::take(&mut self.rate);
        self.solver.solve(
            &self.caps,
            &flows,
            &self.paths,
            &self.bounds,
            &self.comp_res,
            &self.on,
            &mut newrate,
        );
        for &f in &flows {
            let c = f as usize;
            let r = newrate[c];
            if r <= 0.0 {
                return Err(FlowError::Starved { conn: f });
            }
            if r != self.conns[c].rate {
                self.rebase(c);
                let conn = &mut self.conns[c];
                conn.rate = r;
                conn.version = conn.version.wrapping_add(1);
                self.schedule(c);
            }
        }
        self.rate = newrate;
        self.comp_flows = Vec::new();
        Ok(())
    }

    /// Check conservation: posted = delivered + in the network, and when idle
    /// nothing is left anywhere.
    pub fn check(&self) -> Result<(), FlowError> {
        let queued: u64 = self.conns.iter().map(|c| c.queue.len() as u64).sum();
        let in_transit = self.pending.len() as u64;
        let c = self.counters;
        if c.posted != c.delivered + queued + in_transit || self.in_network != queued + in_transit {
            return Err(FlowError::Ledger {
                posted: c.posted,
                delivered: c.delivered,
                in_network: queued + in_transit,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(res: &[u32]) -> Vec<Use> {
        res.iter().map(|&r| Use { res: r, weight: 1.0 }).collect()
    }

    fn run_all(s: &mut FlowSim) -> Vec<Delivery> {
        let mut out = Vec::new();
        loop {
            match s.advance(u64::MAX).unwrap() {
                Step::Delivered(d) => out.extend(d),
                Step::Idle => break,
                Step::Reached => panic!("time ran out"),
            }
        }
        s.check().unwrap();
        out
    }

    #[test]
    fn one_message_takes_size_over_rate_plus_latency() {
        let mut s = FlowSim::new();
        let r = s.add_resource(0.05); // 50 GB/s
        let c = s.open(path(&[r]), 1_000_000, f64::INFINITY).unwrap();
        s.post(c, 1 << 20, 7).unwrap();
        let d = run_all(&mut s);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].tag, 7);
        // 1 MiB at 0.05 B/ps = 20,971,520 ps, + 1 µs
        assert_eq!(d[0].done_ps, 20_971_520 + 1_000_000);
    }

    #[test]
    fn a_second_flow_halves_the_first_and_the_first_speeds_up_when_it_ends() {
        let mut s = FlowSim::new();
        let r = s.add_resource(1.0);
        let a = s.open(path(&[r]), 0, f64::INFINITY).unwrap();
        let b = s.open(path(&[r]), 0, f64::INFINITY).unwrap();
        s.post(a, 3000, 1).unwrap();
        assert_eq!(s.advance(1000).unwrap(), Step::Reached); // 1000 B of a drained alone
        s.post(b, 1000, 2).unwrap();
        let d = run_all(&mut s);
        // from 1000 ps both at 0.5: b's 1000 B end at 3000; a has 1000 left, alone at
        // 1.0, ends at 4000
        let t: Vec<(u64, u64)> = d.iter().map(|d| (d.tag, d.done_ps)).collect();
        assert_eq!(t, vec![(2, 3000), (1, 4000)]);
        assert_eq!(s.counters().bytes_delivered, 4000);
    }

    #[test]
    fn messages_on_one_connection_arrive_in_order_back_to_back() {
        let mut s = FlowSim::new();
        let r = s.add_resource(2.0);
        let c = s.open(path(&[r]), 10, f64::INFINITY).unwrap();
        for k in 0..3 {
            s.post(c, 100, k).unwrap();
        }
        let d = run_all(&mut s);
        let t: Vec<(u64, u64)> = d.iter().map(|d| (d.tag, d.done_ps)).collect();
        assert_eq!(t, vec![(0, 60), (1, 110), (2, 160)]);
        // a backlogged connection moving on costs no solve
        assert_eq!(s.counters().solves, 2);
    }

    #[test]
    fn only_the_touched_component_is_resolved() {
        let mut s = FlowSim::new();
        let r0 = s.add_resource(1.0);
        let r1 = s.add_resource(1.0);
        let a = s.open(path(&[r0]), 0, f64::INFINITY).unwrap();
        let b = s.open(path(&[r1]), 0, f64::INFINITY).unwrap();
        s.post(a, 1000, 0).unwrap();
        s.advance(10).unwrap();
        let before = s.counters().flows_resolved;
        s.post(b, 1000, 1).unwrap();
        s.advance(20).unwrap();
        assert_eq!(s.counters().flows_resolved - before, 1, "a's rate was not recomputed");
        run_all(&mut s);
    }

    #[test]
    fn the_same_inputs_give_the_same_deliveries() {
        let go = || {
            let mut s = FlowSim::new();
            let res: Vec<u32> = (0..6).map(|k| s.add_resource(0.5 + k as f64 * 0.1)).collect();
            let conns: Vec<ConnId> = (0..20)
                .map(|k| {
                    s.open(path(&[res[k % 6], res[(k * 7 + 1) % 6]]), 100 + k as u64, f64::INFINITY)
                        .unwrap()
                })
                .collect();
            for (k, c) in conns.iter().enumerate() {
                s.post(*c, 1000 + 37 * k as u64, k as u64).unwrap();
            }
            run_all(&mut s)
        };
        assert_eq!(go(), go());
    }

    #[test]
    fn a_path_with_no_capacity_is_an_error_not_a_hang() {
        let mut s = FlowSim::new();
        let r = s.add_resource(0.0);
        let c = s.open(path(&[r]), 0, f64::INFINITY).unwrap();
        s.post(c, 10, 0).unwrap();
        assert_eq!(s.advance(u64::MAX), Err(FlowError::Starved { conn: 0 }));
        assert!(matches!(
            s.post(ConnId(9), 1, 0),
            Err(FlowError::NoSuch {
                what: "connection",
                index: 9
            })
        ));
    }

    #[test]
    fn each_resource_carries_its_flows_bytes_by_weight() {
        let mut s = FlowSim::new();
        let fwd = s.add_resource(1.0);
        let back = s.add_resource(1.0);
        let c = s
            .open(
                vec![Use { res: fwd, weight: 1.25 }, Use { res: back, weight: 0.5 }],
                0,
                f64::INFINITY,
            )
            .unwrap();
        s.post(c, 1000, 0).unwrap();
        s.post(c, 600, 1).unwrap();
        run_all(&mut s);
        // 1.25 wire bytes per payload byte saturate the forward link: 0.8 B/ps
        assert!((s.rate(c) - 0.0).abs() < 1e-12, "idle after the run");
        let carried = s.carried().to_vec();
        assert!((carried[0] - 1600.0 * 1.25).abs() < 1.0, "{carried:?}");
        assert!((carried[1] - 1600.0 * 0.5).abs() < 1.0, "{carried:?}");
    }
}
