//! Traffic matrices and the driver that runs them: one RC QP pair per flow, a
//! WRITE (or a SEND when the receiver's completion matters) of the flow's size,
//! started at its time or by a trigger; completion time and goodput per flow.

use std::collections::BTreeMap;

use fabric::NodeId;
use rand::seq::SliceRandom;
use serde::Serialize;

use crate::engine::Time;
use crate::ib::hca::{CqeOp, QpId, QpOptions};
use crate::ib::sim::{RunStatus, Sim};

use super::{LatencyRecorder, LatencyStats, WorkloadError};

/// How a flow starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Start {
    /// At a time.
    At(Time),
    /// When a trigger fires.
    Trigger(u32),
}

impl Start {
    /// The trigger id, if the flow waits for one.
    pub fn trigger(self) -> Option<u32> {
        match self {
            Start::Trigger(t) => Some(t),
            Start::At(_) => None,
        }
    }
}

/// The verb a flow uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FlowOp {
    Write,
    Send,
}

/// One connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Flow {
    pub id: u32,
    /// Host indices (into the host list the matrix is run with).
    pub src: u32,
    pub dst: u32,
    /// Bytes; `u64::MAX` = endless.
    pub bytes: u64,
    pub start: Option<Start>,
    pub send_done_trigger: Option<u32>,
    pub recv_done_trigger: Option<u32>,
    pub op: FlowOp,
    /// Priority: used as the IB service level.
    pub prio: u8,
}

/// Trigger kinds (htsim's `connection_matrix.cpp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TriggerKind {
    /// Fires the first time it is activated.
    Oneshot,
    /// Fires every time it is activated.
    Multishot,
    /// Fires once it has been activated `count` times.
    Barrier,
}

/// A trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Trigger {
    pub id: u32,
    pub kind: TriggerKind,
    pub count: u32,
}

/// A traffic matrix over `hosts` hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub hosts: u32,
    pub flows: Vec<Flow>,
    pub triggers: Vec<Trigger>,
}

impl Matrix {
    fn simple(hosts: u32, pairs: impl IntoIterator<Item = (u32, u32)>, bytes: u64) -> Matrix {
        let flows = pairs
            .into_iter()
            .enumerate()
            .map(|(i, (src, dst))| Flow {
                id: i as u32 + 1,
                src,
                dst,
                bytes,
                start: Some(Start::At(Time::ZERO)),
                send_done_trigger: None,
                recv_done_trigger: None,
                op: FlowOp::Write,
                prio: 0,
            })
            .collect();
        Matrix {
            hosts,
            flows,
            triggers: Vec::new(),
        }
    }

    /// A random permutation without fixed points (every host sends to exactly one
    /// other host and receives from exactly one), drawn from `rng`.
    pub fn permutation(hosts: u32, bytes: u64, rng: &mut impl rand::Rng) -> Matrix {
        let mut dst: Vec<u32> = (0..hosts).collect();
        if hosts > 1 {
            loop {
                dst.shuffle(rng);
                if dst.iter().enumerate().all(|(i, &d)| i as u32 != d) {
                    break;
                }
            }
        }
        Matrix::simple(
            hosts,
            (0..hosts)
                .filter(|&s| hosts > 1 || s != dst[s as usize])
                .map(|s| (s, dst[s as usize])),
            bytes,
        )
    }

    /// Every host sends `bytes` to every other host.
    pub fn all_to_all(hosts: u32, bytes: u64) -> Matrix {
        Matrix::simple(
            hosts,
            (0..hosts).flat_map(|s| (0..hosts).filter(move |&d| d != s).map(move |d| (s, d))),
            bytes,
        )
    }

    /// `senders` hosts (1..=senders) each send `bytes` to host 0.
    pub fn incast(hosts: u32, senders: u32, bytes: u64) -> Matrix {
        Matrix::simple(hosts, (1..=senders.min(hosts.saturating_sub(1))).map(|s| (s, 0)), bytes)
    }
}

/// One flow's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct FlowResult {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
    /// Bytes requested (`null` = endless).
    pub bytes: Option<u64>,
    pub start_ps: Option<u64>,
    pub finish_ps: Option<u64>,
    /// Flow completion time.
    pub fct_ps: Option<u64>,
    /// Payload bytes the receiver got.
    pub delivered_bytes: u64,
    /// delivered bytes × 8 / (finish or end − start).
    pub goodput_bps: f64,
}

/// What running a matrix produced.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixReport {
    pub flows: Vec<FlowResult>,
    pub completed: usize,
    pub fct: LatencyStats,
    /// Sum of goodput over flows.
    pub aggregate_goodput_bps: f64,
    pub end_ps: u64,
}

/// Run `m` on `sim`; host `i` of the matrix is CA `hosts[i]` (port 1). Stops when
/// every flow is done, at `end`, or on deadlock (reported in `Err`). `progress` is
/// called with the simulated time now and then.
pub fn run_matrix(
    sim: &mut Sim,
    hosts: &[NodeId],
    m: &Matrix,
    end: Time,
    progress: &mut dyn FnMut(Time),
) -> Result<MatrixReport, WorkloadError> {
    let nf = m.flows.len();
    let mut qps: Vec<(QpId, QpId)> = Vec::with_capacity(nf);
    for f in &m.flows {
        for h in [f.src, f.dst] {
            if h as usize >= hosts.len() {
                return Err(WorkloadError::NoHost {
                    flow: f.id,
                    host: h,
                    hosts: hosts.len(),
                });
            }
        }
        let o = QpOptions {
            sl: if f.prio > 0 { Some(f.prio & 15) } else { None },
            ..QpOptions::default()
        };
        qps.push(sim.create_rc_pair(hosts[f.src as usize], hosts[f.dst as usize], &o)?);
    }
    // Timed starts in (time, flow order); triggered starts by trigger id.
    let mut timed: BTreeMap<(Time, usize), ()> = BTreeMap::new();
    let mut by_trigger: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, f) in m.flows.iter().enumerate() {
        match f.start {
            Some(Start::At(t)) => {
                timed.insert((t, i), ());
            }
            Some(Start::Trigger(tid)) => by_trigger.entry(tid).or_default().push(i),
            None => {}
        }
    }
    let mut activations: BTreeMap<u32, u32> = BTreeMap::new();
    let mut fired_once: BTreeMap<u32, bool> = BTreeMap::new();
    let mut start = vec![None::<Time>; nf];
    let mut finish = vec![None::<Time>; nf];
    let mut finite_out = 0u64;
    let mut endless_running = 0u64;
    let mut fct = LatencyRecorder::default();
    let chunk = Time((end.0 / 200).max(1_000_000));
    let mut done_flows = 0usize;

    let post = |sim: &mut Sim,
                i: usize,
                start: &mut Vec<Option<Time>>,
                finite_out: &mut u64,
                endless: &mut u64|
     -> Result<(), WorkloadError> {
        let f = &m.flows[i];
        start[i] = Some(sim.now());
        if f.bytes == u64::MAX {
            *endless += 1;
        } else {
            *finite_out += 1;
        }
        match f.op {
            FlowOp::Write => sim.post_write(qps[i].0, f.bytes, i as u64)?,
            FlowOp::Send => sim.post_send(qps[i].0, f.bytes, i as u64)?,
        }
        Ok(())
    };

    loop {
        // Start every flow due now.
        while let Some((&(t, i), _)) = timed.iter().next() {
            if t > sim.now() {
                break;
            }
            timed.remove(&(t, i));
            post(sim, i, &mut start, &mut finite_out, &mut endless_running)?;
        }
        if sim.now() >= end || (timed.is_empty() && finite_out == 0 && endless_running == 0) {
            break;
        }
        let next_start = timed.keys().next().map_or(Time::NEVER, |k| k.0);
        let until = next_start.min(end).min(sim.now() + chunk);
        match sim.run(until) {
            RunStatus::Deadlock(d) => return Err(WorkloadError::Deadlock(d)),
            RunStatus::Idle => {
                if timed.is_empty() && sim.cq_pending() == 0 {
                    if finite_out > 0 {
                        return Err(WorkloadError::Stalled(finite_out));
                    }
                    break;
                }
            }
            RunStatus::TimeLimit => progress(sim.now()),
            RunStatus::Completion => {}
        }
        let mut fire: Vec<u32> = Vec::new();
        while let Some(node) = sim.next_cq_event() {
            while let Some(c) = sim.poll_cq(node) {
                let i = match c.op {
                    CqeOp::Write | CqeOp::Send => c.wr_id as usize,
                    CqeOp::Recv => match qps.iter().position(|q| q.1 == c.qp) {
                        Some(i) => i,
                        None => continue,
                    },
                    _ => continue,
                };
                let f = &m.flows[i];
                if c.op == CqeOp::Recv {
                    if let Some(t) = f.recv_done_trigger {
                        fire.push(t);
                    }
                    continue;
                }
                finish[i] = Some(c.done);
                finite_out -= 1;
                done_flows += 1;
                fct.record((c.done - c.posted).0);
                if let Some(t) = f.send_done_trigger {
                    fire.push(t);
                }
            }
        }
        let mut k = 0;
        while k < fire.len() {
            let tid = fire[k];
            k += 1;
            let Some(tr) = m.triggers.iter().find(|t| t.id == tid) else {
                continue;
            };
            let n = activations.entry(tid).or_insert(0);
            *n += 1;
            let goes = match tr.kind {
                TriggerKind::Oneshot => !fired_once.get(&tid).copied().unwrap_or(false),
                TriggerKind::Multishot => true,
                TriggerKind::Barrier => *n == tr.count,
            };
            if goes {
                fired_once.insert(tid, true);
                for &i in by_trigger.get(&tid).map(Vec::as_slice).unwrap_or(&[]) {
                    if start[i].is_none() || tr.kind == TriggerKind::Multishot {
                        post(sim, i, &mut start, &mut finite_out, &mut endless_running)?;
                    }
                }
            }
        }
    }
    let end_t = sim.now();
    let mut flows = Vec::with_capacity(nf);
    let mut agg = 0.0;
    for (i, f) in m.flows.iter().enumerate() {
        let delivered = sim.qp_rx_bytes(qps[i].1);
        let s = start[i];
        let stop = finish[i].unwrap_or(end_t);
        let goodput = match s {
            Some(s) if stop > s => delivered as f64 * 8.0 / (stop - s).as_secs_f64(),
            _ => 0.0,
        };
        agg += goodput;
        flows.push(FlowResult {
            id: f.id,
            src: f.src,
            dst: f.dst,
            bytes: (f.bytes != u64::MAX).then_some(f.bytes),
            start_ps: s.map(|t| t.0),
            finish_ps: finish[i].map(|t| t.0),
            fct_ps: match (s, finish[i]) {
                (Some(s), Some(e)) => Some((e - s).0),
                _ => None,
            },
            delivered_bytes: delivered,
            goodput_bps: goodput,
        });
    }
    Ok(MatrixReport {
        flows,
        completed: done_flows,
        fct: fct.stats(),
        aggregate_goodput_bps: agg,
        end_ps: end_t.0,
    })
}

impl MatrixReport {
    /// One CSV row per flow.
    pub fn csv(&self) -> String {
        let mut s = String::from("id,src,dst,bytes,start_ps,finish_ps,fct_ps,delivered_bytes,goodput_bps\n");
        let o = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
        for f in &self.flows {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{:.0}\n",
                f.id,
                f.src,
                f.dst,
                o(f.bytes),
                o(f.start_ps),
                o(f.finish_ps),
                o(f.fct_ps),
                f.delivered_bytes,
                f.goodput_bps
            ));
        }
        s
    }
}
