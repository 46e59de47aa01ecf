//! Several jobs on one fabric in a joint schedule: every job's iterations run
//! on one clock, each network operation posted when its job's timeline
//! reaches it and sharing the fabric (max-min fair flows) with whatever the
//! other jobs have in flight at that moment.
//!
//! On planes every plane's ports are resources of the one flow network, so
//! one clock serves them all and an operation is done when its last plane's
//! share is.
//!
//! A job's iteration is the timeline [`workload::iteration::Iteration::time`]
//! adds up, laid out in time:
//! - the forward-overlapped operations (parameter all-gather) start with the
//!   first micro-batch's forward, which cannot end before they do;
//! - each micro-batch: forward, backward, then its share of the exposed
//!   operations one after another (`count` occurrences spread over the `m`
//!   micro-batches);
//! - the backward-overlapped operations (gradient reduction) start with the
//!   last micro-batch's backward, which cannot end before they do;
//! - the pipeline bubble, idle, at its fraction of the micro-batches' time.
//!
//! Alone, that timeline is the analytic iteration (a test holds it to 1%);
//! beside other jobs an operation queues behind what they send at that
//! moment, not behind a fixed partner (each operation beside the others'
//! busiest one, `run_jobs`' pairing): less where the jobs' phases keep their
//! heavy operations apart, more where a job's short iterations never stop. The first job starts at 0 and every other one a
//! fraction of its own iteration later, drawn from the seed (jobs are not
//! launched in step); they loop until each has done [`ITERATIONS`], so the
//! shorter ones meet the longer ones at several phases.

use std::collections::{HashMap, VecDeque};

use super::*;

/// How `compare` has several jobs meet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Each operation priced beside the others' busiest one.
    #[default]
    Pairing,
    /// That, and every job's timeline on one clock ([`joint`]).
    Joint,
}

impl Schedule {
    /// The default.
    pub fn is_pairing(&self) -> bool {
        *self == Schedule::Pairing
    }
}

/// Iterations every job completes in a joint run; the first, started in step
/// with the other jobs, is not counted in the mean.
pub const ITERATIONS: u32 = 3;

/// A job's iterations in a joint schedule.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JointTime {
    /// Iterations it completed while the run lasted.
    pub iterations: u32,
    /// Mean iteration after the first, s.
    pub mean_s: f64,
    /// Slowest iteration after the first, s.
    pub max_s: f64,
    /// Its iteration alone in the same schedule, s.
    pub alone_s: f64,
}

/// What a job's timeline does next.
#[derive(Clone, Debug)]
enum Act {
    /// Compute (or idle) for this long, ps.
    Compute(u64),
    /// Queue these operations (indices into the job's operations) on the
    /// side chain, one after another, beside what follows.
    Side(Vec<usize>),
    /// Wait for the side chain to finish.
    Join,
    /// One occurrence of an exposed operation.
    Comm(usize),
    /// The pipeline bubble: idle for its fraction of this iteration's
    /// micro-batches.
    Bubble,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    Free,
    Until(u64),
    /// Messages left, when they were posted and the operation's packet
    /// factor: done at `posted + (last delivery − posted) × factor`.
    Msgs(usize, u64, f64),
    Side,
}

/// A message on a plane: (plane, from, to, bytes, QP lane).
type PlaneMsg = (usize, NodeId, NodeId, u64, u16);

struct Timeline {
    acts: Vec<Act>,
    /// Per operation: one occurrence's messages, on their planes (empty:
    /// priced off the fabric, for `off_ps`).
    msgs: Vec<Vec<PlaneMsg>>,
    off_ps: Vec<u64>,
    /// Per operation: hybrid pricing's packet-level slowdown over its flows
    /// (1 at flow level), applied to each occurrence's flow time.
    stretch: Vec<f64>,
    /// m · (t_f + t_b), ps, and the bubble fraction.
    compute_ps: u64,
    bubble: f64,
}

struct State {
    pc: usize,
    main: Wait,
    side: VecDeque<usize>,
    side_wait: Wait,
    comm_from: Option<u64>,
    exposed_ps: u64,
    started: u64,
    done: Vec<u64>,
}

/// Why a joint schedule could not be run.
#[derive(Debug, thiserror::Error)]
pub enum JointError {
    /// The jobs' networks are not one fabric priced by flows.
    #[error("{0}")]
    Unsupported(String),
    /// A route or a flow run failed.
    #[error("run the joint schedule")]
    Run(#[source] crate::runner::RunError),
}

/// The timeline of one job's iteration on `net` at `eff`.
fn timeline(nets: &PlaneNets<'_>, it: &workload::iteration::Iteration, eff: f64) -> Timeline {
    let net = &nets.nets[0];
    let ps = |s: f64| (s * 1e12).round() as u64;
    let m = it.micro_batches.max(1);
    let (t_f, t_b) = it.compute_per_micro_batch_s(eff);
    let mut msgs = Vec::with_capacity(it.ops.len());
    let mut off_ps = Vec::with_capacity(it.ops.len());
    let mut stretch = Vec::with_capacity(it.ops.len());
    for op in &it.ops {
        match net.on_fabric(op) {
            Some(groups) => {
                let mut all = Vec::new();
                for (p, n) in nets.nets.iter().enumerate() {
                    all.extend(
                        n.striped(&n.messages(op, &groups))
                            .into_iter()
                            .map(|(a, b, x, q)| (p, a, b, x, q)),
                    );
                }
                msgs.push(all);
                off_ps.push(0);
                stretch.push(nets.detail(op).and_then(|d| d.packet_factor).unwrap_or(1.0));
            }
            None => {
                msgs.push(Vec::new());
                off_ps.push(ps(net.ideal.op_time_s(op)));
                stretch.push(1.0);
            }
        }
    }
    let chain = |o: workload::comm::Overlap| -> Vec<usize> {
        it.ops
            .iter()
            .enumerate()
            .filter(|(_, op)| op.overlap == o)
            .flat_map(|(i, op)| std::iter::repeat_n(i, op.count as usize))
            .collect()
    };
    let (fwd, bwd) = (
        chain(workload::comm::Overlap::Forward),
        chain(workload::comm::Overlap::Backward),
    );
    let mut acts = Vec::new();
    for k in 0..m {
        if k == 0 && !fwd.is_empty() {
            acts.push(Act::Side(fwd.clone()));
        }
        acts.push(Act::Compute(ps(t_f)));
        if k == 0 && !fwd.is_empty() {
            acts.push(Act::Join);
        }
        let last = k + 1 == m && !bwd.is_empty();
        if last {
            acts.push(Act::Side(bwd.clone()));
        }
        acts.push(Act::Compute(ps(t_b)));
        if last {
            acts.push(Act::Join);
        }
        for (i, op) in it.ops.iter().enumerate() {
            if op.overlap == workload::comm::Overlap::Exposed {
                // this micro-batch's share of the op's occurrences
                let n = (k + 1) * op.count / m - k * op.count / m;
                acts.extend(std::iter::repeat_n(Act::Comm(i), n as usize));
            }
        }
    }
    acts.push(Act::Bubble);
    Timeline {
        acts,
        msgs,
        off_ps,
        stretch,
        compute_ps: ps(m as f64 * (t_f + t_b)),
        bubble: it.bubble(),
    }
}

/// Run `jobs` (each a job's network, all on one fabric, and its iteration)
/// at `eff`, each alone and then all in one joint schedule, job `k > 0`
/// started a fraction of its iteration (drawn from `seed`) after the first.
pub fn joint(
    jobs: &[(&PlaneNets<'_>, &workload::iteration::Iteration)],
    eff: f64,
    seed: u64,
) -> Result<Vec<JointTime>, JointError> {
    if let Some(f) = jobs
        .iter()
        .flat_map(|(f, _)| &f.nets)
        .find(|f| f.pricing == Pricing::Packet)
    {
        return Err(JointError::Unsupported(format!(
            "the joint schedule runs on flows (times hybrid pricing's packet factors); {} was priced by {}",
            f.job.name,
            engine_name(f.pricing)
        )));
    }
    let lines: Vec<Timeline> = jobs.iter().map(|(f, it)| timeline(f, it, eff)).collect();
    let nets: Vec<&PlaneNets<'_>> = jobs.iter().map(|(f, _)| *f).collect();
    let mut alone = Vec::with_capacity(jobs.len());
    for k in 0..jobs.len() {
        let a = run(&nets[k..=k], &lines[k..=k], &[0])?.remove(0);
        alone.push(*a.get(1).or(a.first()).unwrap_or(&0));
    }
    // the first job starts at 0, every other one a seeded fraction of its own
    // iteration later: jobs are not started in step
    let offsets: Vec<u64> = alone
        .iter()
        .enumerate()
        .map(|(k, &a)| {
            if k == 0 {
                0
            } else {
                (a as f64 * unit(seed, k as u64)) as u64
            }
        })
        .collect();
    let together = run(&nets, &lines, &offsets)?;
    let mut out = Vec::with_capacity(jobs.len());
    for (k, done) in together.into_iter().enumerate() {
        let later = if done.len() > 1 { &done[1..] } else { &done[..] };
        let s = |ps: u64| ps as f64 / 1e12;
        out.push(JointTime {
            iterations: done.len() as u32,
            mean_s: s(later.iter().sum::<u64>()) / later.len().max(1) as f64,
            max_s: s(later.iter().copied().max().unwrap_or(0)),
            alone_s: s(alone[k]),
        });
    }
    Ok(out)
}

/// A draw in [0, 1) from the seed and a job's index (splitmix64).
fn unit(seed: u64, k: u64) -> f64 {
    let mut z = seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x6a6f_696e_745f_7374;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// One run of the timelines on one clock, job `k` starting at `offsets[k]`
/// ps, until every job has done [`ITERATIONS`]: each job's iteration times,
/// ps.
fn run(nets: &[&PlaneNets<'_>], lines: &[Timeline], offsets: &[u64]) -> Result<Vec<Vec<u64>>, JointError> {
    use crate::runner::RunError;
    // every plane's ports in one flow network: one clock for all
    let planes: Vec<&Fabric> = nets[0].nets.iter().map(|n| n.fabric).collect();
    if nets
        .iter()
        .any(|n| n.nets.len() != planes.len() || n.nets.iter().zip(&planes).any(|(x, f)| !std::ptr::eq(x.fabric, *f)))
    {
        return Err(JointError::Unsupported("the jobs are on different fabrics".into()));
    }
    let mut sim = FlowSim::new();
    let ports: Vec<Ports> = planes.iter().map(|f| Ports::build(f, &mut sim)).collect();
    let mut conns: HashMap<(usize, usize, NodeId, NodeId, u16), flow::ConnId> = HashMap::new();
    let mut opened = vec![0u32; nets.len()];
    let mut st: Vec<State> = offsets
        .iter()
        .map(|&at| State {
            pc: 0,
            main: if at > 0 { Wait::Until(at) } else { Wait::Free },
            side: VecDeque::new(),
            side_wait: Wait::Free,
            comm_from: None,
            exposed_ps: 0,
            started: at,
            done: Vec::new(),
        })
        .collect();
    // post one occurrence of job j's op on channel ch (0 main, 1 side)
    let mut post = |sim: &mut FlowSim, j: usize, op: usize, ch: u64| -> Result<Wait, RunError> {
        let l = &lines[j];
        if l.msgs[op].is_empty() {
            return Ok(Wait::Until(sim.now_ps() + l.off_ps[op]));
        }
        for &(p, a, b, n, q) in &l.msgs[op] {
            let c = match conns.get(&(j, p, a, b, q)) {
                Some(&c) => c,
                None => {
                    let (f, net) = (planes[p], &nets[j].nets[p]);
                    let (data, ack) = match net.routing {
                        Route::Ib(t) => (flow::path::ib_route(f, t, a, b), flow::path::ib_route(f, t, b, a)),
                        Route::Eth(table, hash, cfg) => {
                            let r = flow::path::EthRouting {
                                table,
                                hash,
                                rocev1: cfg.routing.rocev1.is_some(),
                            };
                            let k = opened[j];
                            (r.route(f, a, b, k), r.route(f, b, a, k))
                        }
                    };
                    opened[j] += 1;
                    let (data, ack) = (data.map_err(RunError::FlowPath)?, ack.map_err(RunError::FlowPath)?);
                    let c = flow::path::open(sim, f, &ports[p], &net.wire, &data, &ack).map_err(RunError::Flow)?;
                    conns.insert((j, p, a, b, q), c);
                    c
                }
            };
            sim.post(c, n, (j as u64) << 1 | ch).map_err(RunError::Flow)?;
        }
        Ok(Wait::Msgs(l.msgs[op].len(), sim.now_ps(), l.stretch[op]))
    };
    loop {
        let now = sim.now_ps();
        // every job runs its timeline until it waits
        for (j, s) in st.iter_mut().enumerate() {
            let l = &lines[j];
            loop {
                if let Wait::Until(t) = s.side_wait
                    && now >= t
                {
                    s.side_wait = Wait::Free;
                }
                if s.side_wait == Wait::Free
                    && let Some(op) = s.side.pop_front()
                {
                    s.side_wait = post(&mut sim, j, op, 1).map_err(JointError::Run)?;
                    continue;
                }
                match s.main {
                    Wait::Until(t) if now >= t => s.main = Wait::Free,
                    Wait::Side if s.side_wait == Wait::Free && s.side.is_empty() => s.main = Wait::Free,
                    _ => {}
                }
                if s.main != Wait::Free {
                    break;
                }
                if let Some(from) = s.comm_from.take() {
                    s.exposed_ps += now - from;
                }
                if s.pc == l.acts.len() {
                    if now == s.started {
                        return Err(JointError::Unsupported(format!(
                            "{}'s iteration takes no time: nothing to schedule",
                            nets[j].nets[0].job.name
                        )));
                    }
                    s.done.push(now - s.started);
                    s.started = now;
                    s.pc = 0;
                    s.exposed_ps = 0;
                }
                let act = &l.acts[s.pc];
                s.pc += 1;
                s.main = match act {
                    Act::Compute(ps) => Wait::Until(now + ps),
                    Act::Side(ops) => {
                        s.side.extend(ops.iter().copied());
                        Wait::Free
                    }
                    Act::Join => Wait::Side,
                    Act::Comm(op) => {
                        s.comm_from = Some(now);
                        post(&mut sim, j, *op, 0).map_err(JointError::Run)?
                    }
                    Act::Bubble => Wait::Until(now + (l.bubble * (l.compute_ps + s.exposed_ps) as f64).round() as u64),
                };
            }
        }
        if st.iter().all(|s| s.done.len() as u32 >= ITERATIONS) {
            break;
        }
        let next = st
            .iter()
            .flat_map(|s| [s.main, s.side_wait])
            .filter_map(|w| match w {
                Wait::Until(t) => Some(t),
                _ => None,
            })
            .min()
            .unwrap_or(u64::MAX);
        match sim.advance(next).map_err(|e| JointError::Run(RunError::Flow(e)))? {
            Step::Delivered(ds) => {
                for d in ds {
                    let s = &mut st[(d.tag >> 1) as usize];
                    let w = if d.tag & 1 == 0 { &mut s.main } else { &mut s.side_wait };
                    if let Wait::Msgs(n, from, x) = *w {
                        *w = if n > 1 {
                            Wait::Msgs(n - 1, from, x)
                        } else if x > 1.0 {
                            // the packet level's slowdown on the operation's own
                            // pattern, after its flows
                            Wait::Until(from + ((d.done_ps - from) as f64 * x).round() as u64)
                        } else {
                            Wait::Free
                        };
                    }
                }
            }
            Step::Reached => {}
            Step::Idle if next == u64::MAX => {
                return Err(JointError::Run(RunError::Stalled(0)));
            }
            Step::Idle => {}
        }
    }
    sim.check().map_err(|e| JointError::Run(RunError::Flow(e)))?;
    Ok(st.into_iter().map(|s| s.done).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::job::JobSpec;

    /// Mixtral on 64 GPUs beside a small dense job of 128 whose iterations
    /// are 150 times shorter, both scattered over four units of two uplinks
    /// per leaf (measured 2026-12-05, seed 1): the dense job runs some 380
    /// iterations during the MoE's three, so the MoE's long exposed
    /// all-to-alls always meet its traffic: 1.155 s against 1.006 s alone,
    /// more than pricing each operation beside the dense job's busiest one
    /// gives (1.116 s); the dense job's slowest iterations (those meeting the
    /// MoE's gradient reduction) take twice its alone time.
    #[test]
    fn a_job_of_short_iterations_costs_a_long_one_more_than_a_fixed_pairing() {
        let moe = JobSpec::from_toml(
            "name = \"moe-64\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = 64\nseq_len = 4096\nglobal_batch = 64\nrouter_skew = 1.25\n\
             [parallel]\ntp = 2\nep = 8\n",
        )
        .unwrap();
        let dense = JobSpec::from_toml(include_str!("../../../../examples/train/small-128.toml")).unwrap();
        let cluster = TrainCluster {
            sus: Some(4),
            servers_per_su: 8,
            leaf_uplinks: Some(2),
            placement: Placement::Scattered,
            ..TrainCluster::default()
        };
        let r = run_jobs(&[moe, dense], &cluster, Pricing::Flow, None, 1).unwrap();
        let (m, d) = (r[0].joint.clone().unwrap(), r[1].joint.clone().unwrap());
        assert_eq!(m.iterations, ITERATIONS);
        assert!(d.iterations > 300, "{d:?}");
        assert!((m.alone_s - 1.006).abs() < 0.002, "{m:?}");
        assert!((m.mean_s - 1.155).abs() < 0.005, "{m:?}");
        assert!((r[0].fabric.total_s - 1.116).abs() < 0.005, "{}", r[0].fabric.total_s);
        assert!(d.max_s > 1.9 * d.alone_s && d.mean_s > d.alone_s, "{d:?}");
    }
}
