//! perftest-like tests (linux-rdma/perftest): `ib_write_bw`, `ib_send_lat`,
//! `ib_read_lat`, run over the verbs-shaped API. Their reports carry what perftest
//! prints; `report::sim` prints them in perftest's layout.

use fabric::NodeId;
use serde::Serialize;

use crate::engine::Time;
use crate::ib::hca::{CqeOp, QpOptions};
use crate::ib::sim::{RunStatus, Sim};

use super::{LatencyRecorder, LatencyStats, WorkloadError};

/// Outcome of a bandwidth test.
#[derive(Clone, Debug, Serialize)]
pub struct BwReport {
    pub test: String,
    pub msg_bytes: u64,
    pub iterations: u64,
    /// From the first post to the last completion.
    pub duration_ps: u64,
    /// Best rate over any window of `tx_depth` consecutive completions.
    pub bw_peak_bps: f64,
    /// Payload bytes × 8 / duration.
    pub bw_avg_bps: f64,
    /// Messages per second, millions.
    pub msg_rate_mpps: f64,
}

/// Outcome of a latency test.
#[derive(Clone, Debug, Serialize)]
pub struct LatReport {
    pub test: String,
    pub msg_bytes: u64,
    pub iterations: u64,
    pub latency: LatencyStats,
}

fn drive(sim: &mut Sim) -> Result<(), WorkloadError> {
    match sim.run(Time::NEVER) {
        RunStatus::Deadlock(d) => Err(WorkloadError::Deadlock(d)),
        RunStatus::Idle if sim.cq_pending() == 0 => Err(WorkloadError::Stalled(1)),
        _ => Ok(()),
    }
}

/// `ib_write_bw`: keep `tx_depth` RDMA WRITEs of `size` bytes outstanding from `a`
/// to `b` until `iters` have completed.
pub fn write_bw(
    sim: &mut Sim,
    a: NodeId,
    b: NodeId,
    size: u64,
    iters: u64,
    tx_depth: u64,
) -> Result<BwReport, WorkloadError> {
    let (qa, _) = sim.create_rc_pair(a, b, &QpOptions::default())?;
    let t0 = sim.now();
    let mut posted = 0;
    while posted < iters.min(tx_depth.max(1)) {
        sim.post_write(qa, size, posted)?;
        posted += 1;
    }
    let mut done_times = Vec::with_capacity(iters as usize);
    while (done_times.len() as u64) < iters {
        drive(sim)?;
        while let Some(n) = sim.next_cq_event() {
            while let Some(c) = sim.poll_cq(n) {
                if c.op == CqeOp::Write && c.qp == qa {
                    done_times.push(c.done);
                    if posted < iters {
                        sim.post_write(qa, size, posted)?;
                        posted += 1;
                    }
                }
            }
        }
    }
    let last = *done_times.last().expect("iters > 0");
    let dur = (last - t0).0.max(1);
    let w = tx_depth.max(1) as usize;
    let mut peak: f64 = 0.0;
    for k in w..done_times.len() {
        let dt = (done_times[k] - done_times[k - w]).as_secs_f64();
        if dt > 0.0 {
            peak = peak.max((w as u64 * size) as f64 * 8.0 / dt);
        }
    }
    let avg = (iters * size) as f64 * 8.0 / (dur as f64 / 1e12);
    Ok(BwReport {
        test: "RDMA_Write BW Test".into(),
        msg_bytes: size,
        iterations: iters,
        duration_ps: dur,
        bw_peak_bps: peak.max(avg),
        bw_avg_bps: avg,
        msg_rate_mpps: iters as f64 / (dur as f64 / 1e12) / 1e6,
    })
}

/// `ib_send_lat`: ping-pong SENDs of `size` bytes between `a` and `b`. Each
/// sample is the one-way time from `a`'s post to `b`'s receive completion: the
/// simulator sees both clocks, so it need not halve a round trip as perftest does
/// (which would fold `b`'s ACK, sent just ahead of its reply, into the figure).
/// Every iteration starts on an idle fabric.
pub fn send_lat(sim: &mut Sim, a: NodeId, b: NodeId, size: u64, iters: u64) -> Result<LatReport, WorkloadError> {
    let (qa, qb) = sim.create_rc_pair(a, b, &QpOptions::default())?;
    let mut rec = LatencyRecorder::default();
    for i in 0..iters {
        let t0 = sim.now();
        sim.post_send(qa, size, i)?;
        // Wait for b's receive, answer, wait for a's receive.
        let mut phase = 0;
        while phase < 2 {
            drive(sim)?;
            while let Some(n) = sim.next_cq_event() {
                while let Some(c) = sim.poll_cq(n) {
                    if c.op != CqeOp::Recv {
                        continue;
                    }
                    if phase == 0 && c.qp == qb {
                        rec.record((c.done - t0).0);
                        sim.post_send(qb, size, i)?;
                        phase = 1;
                    } else if phase == 1 && c.qp == qa {
                        phase = 2;
                    }
                }
            }
        }
        // Let the ACKs drain so every iteration starts from an idle fabric.
        settle(sim)?;
    }
    Ok(LatReport {
        test: "Send Latency Test".into(),
        msg_bytes: size,
        iterations: iters,
        latency: rec.stats(),
    })
}

/// `ib_write_lat`: RDMA WRITEs of `size` bytes from `a` to `b`, one at a time.
/// Each sample is the one-way time from `a`'s post to its data placed in `b`'s
/// memory, where perftest's peer polls the buffer's last byte; perftest reports
/// half its ping-pong's round trip, the same figure on a symmetric pair. Every
/// iteration starts on an idle fabric.
pub fn write_lat(sim: &mut Sim, a: NodeId, b: NodeId, size: u64, iters: u64) -> Result<LatReport, WorkloadError> {
    let (qa, qb) = sim.create_rc_pair(a, b, &QpOptions::default())?;
    let mut rec = LatencyRecorder::default();
    for i in 0..iters {
        let t0 = sim.now();
        sim.post_write(qa, size, i)?;
        let mut done = false;
        while !done {
            drive(sim)?;
            while let Some(n) = sim.next_cq_event() {
                while let Some(c) = sim.poll_cq(n) {
                    done |= c.op == CqeOp::Write && c.qp == qa;
                }
            }
        }
        // the ACK comes back after the data landed
        rec.record((sim.write_placed(qb) - t0).0);
        settle(sim)?;
    }
    Ok(LatReport {
        test: "RDMA_Write Latency Test".into(),
        msg_bytes: size,
        iterations: iters,
        latency: rec.stats(),
    })
}

/// `ib_read_lat`: one RDMA READ of `size` bytes at a time; each sample is the full
/// post-to-completion time, as perftest reports it.
pub fn read_lat(sim: &mut Sim, a: NodeId, b: NodeId, size: u64, iters: u64) -> Result<LatReport, WorkloadError> {
    let (qa, _) = sim.create_rc_pair(a, b, &QpOptions::default())?;
    let mut rec = LatencyRecorder::default();
    for i in 0..iters {
        sim.post_read(qa, size, i)?;
        let mut got = false;
        while !got {
            drive(sim)?;
            while let Some(n) = sim.next_cq_event() {
                while let Some(c) = sim.poll_cq(n) {
                    if c.op == CqeOp::Read && c.qp == qa {
                        rec.record((c.done - c.posted).0);
                        got = true;
                    }
                }
            }
        }
        settle(sim)?;
    }
    Ok(LatReport {
        test: "RDMA_Read Latency Test".into(),
        msg_bytes: size,
        iterations: iters,
        latency: rec.stats(),
    })
}

/// Run until nothing is left in flight, discarding completions.
fn settle(sim: &mut Sim) -> Result<(), WorkloadError> {
    loop {
        match sim.run(Time::NEVER) {
            RunStatus::Deadlock(d) => return Err(WorkloadError::Deadlock(d)),
            RunStatus::Idle => return Ok(()),
            _ => {
                while let Some(n) = sim.next_cq_event() {
                    while sim.poll_cq(n).is_some() {}
                }
            }
        }
    }
}
