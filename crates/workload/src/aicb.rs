//! AICB / SimAI text workloads (the files SimAI's astra-sim reads): one iteration
//! of a training job as layers, each with a forward, an input-gradient and a
//! weight-gradient phase of compute and one collective.
//!
//! Grammar (aliyun/aicb `workload_generator/SimAI_training_workload_generator.py`,
//! aliyun/SimAI `astra-sim/workload/Workload.cc`; training-workloads.md §7.2):
//! - line 1: a parallelism policy keyword, then `key: value` pairs —
//!   `model_parallel_NPU_group` (TP), `ep`, `pp`, `vpp`, `ga` (micro-batches),
//!   `all_gpus`, `pp_comm`, and `checkpoints`/`checkpoint_initiates` (a count and
//!   that many layer ids);
//! - line 2: the number of layer lines;
//! - then per layer 12 whitespace-separated columns: name, dependency, and for
//!   forward / input gradient / weight gradient a compute time (ticks of 1 ns),
//!   a collective and its size in bytes; last the weight-update time.
//!
//! Collectives: `NONE`, `ALLREDUCE`, `ALLGATHER`, `REDUCESCATTER`, `ALLTOALL`,
//! `ALLREDUCEALLTOALL`, `BROADCAST`, optionally suffixed `_EP` (expert-parallel
//! group) or `_DP_EP` (expert-data-parallel group); unsuffixed, the forward and
//! input-gradient collectives run in the TP group and the weight-gradient one in
//! the DP group.

use std::collections::BTreeMap;

/// A collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Coll {
    /// No communication.
    None,
    /// All-reduce.
    AllReduce,
    /// All-gather.
    AllGather,
    /// Reduce-scatter.
    ReduceScatter,
    /// All-to-all.
    AllToAll,
    /// All-reduce then all-to-all (SimAI's combined MoE collective).
    AllReduceAllToAll,
    /// Broadcast.
    Broadcast,
}

/// The rank group a collective runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Tensor parallel.
    Tp,
    /// Data parallel.
    Dp,
    /// Expert parallel.
    Ep,
    /// Expert data parallel.
    DpEp,
}

/// One phase of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Compute time, ns.
    pub compute_ns: u64,
    /// The collective.
    pub coll: Coll,
    /// Its group.
    pub group: Group,
    /// Its size, bytes (the collective's buffer, as the file gives it).
    pub bytes: u64,
}

/// One layer line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// The layer's name.
    pub name: String,
    /// Forward.
    pub fwd: Phase,
    /// Input gradient.
    pub ig: Phase,
    /// Weight gradient.
    pub wg: Phase,
    /// Weight-update time, ns.
    pub update_ns: u64,
}

/// A parsed workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aicb {
    /// The parallelism policy keyword.
    pub policy: String,
    /// Header values by key (`model_parallel_NPU_group`, `ep`, `pp`, `vpp`, `ga`,
    /// `all_gpus`, `pp_comm`).
    pub header: BTreeMap<String, u64>,
    /// The layers, in file order.
    pub layers: Vec<Layer>,
}

/// A line that does not follow the grammar: the file, the line and what was expected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}:{line}: {why}")]
pub struct AicbError {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What was wrong and what was expected.
    pub why: String,
}

fn coll(s: &str, column: &str, default: Group) -> Result<(Coll, Group), String> {
    let (base, group) = if let Some(b) = s.strip_suffix("_DP_EP") {
        (b, Group::DpEp)
    } else if let Some(b) = s.strip_suffix("_EP") {
        (b, Group::Ep)
    } else {
        (s, default)
    };
    let c = match base {
        "NONE" => Coll::None,
        "ALLREDUCE" => Coll::AllReduce,
        "ALLGATHER" => Coll::AllGather,
        "REDUCESCATTER" => Coll::ReduceScatter,
        "ALLTOALL" => Coll::AllToAll,
        "ALLREDUCEALLTOALL" => Coll::AllReduceAllToAll,
        "BROADCAST" => Coll::Broadcast,
        _ => {
            return Err(format!(
                "{column}: {s:?} is not a collective (NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL, BROADCAST, with _EP or _DP_EP)"
            ));
        }
    };
    Ok((c, group))
}

impl Aicb {
    /// Parse a workload file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Aicb, AicbError> {
        let err = |line: usize, why: String| AicbError {
            file: file.into(),
            line,
            why,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .filter(|(_, l)| !l.trim().is_empty());
        let (n1, head) = lines
            .next()
            .ok_or_else(|| err(1, "empty file; expected a policy line".into()))?;
        let mut tok = head.split_whitespace();
        let policy = tok.next().unwrap_or_default().to_string();
        let mut header = BTreeMap::new();
        let toks: Vec<&str> = tok.collect();
        let mut i = 0;
        while i < toks.len() {
            let key = toks[i].trim_end_matches(':');
            let val = toks
                .get(i + 1)
                .ok_or_else(|| err(n1, format!("`{key}` has no value")))?;
            let v: u64 = val
                .parse()
                .map_err(|_| err(n1, format!("`{key}`: {val:?} is not a whole number")))?;
            i += 2;
            if key == "checkpoints" || key == "checkpoint_initiates" {
                i += v as usize; // the listed layer ids
            }
            header.insert(key.to_string(), v);
        }
        let (n2, count) = lines
            .next()
            .ok_or_else(|| err(n1 + 1, "expected the number of layer lines".into()))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| err(n2, format!("{:?} is not the number of layer lines", count.trim())))?;
        let mut layers = Vec::with_capacity(count);
        for (n, l) in lines.by_ref().take(count) {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.len() != 12 {
                return Err(err(
                    n,
                    format!(
                        "{} columns; a layer line has 12 (name, dependency, then compute, collective, size for fwd, ig and wg, then the update time)",
                        c.len()
                    ),
                ));
            }
            let num = |k: usize, what: &str| -> Result<u64, AicbError> {
                c[k].parse()
                    .map_err(|_| err(n, format!("{what}: {:?} is not a whole number", c[k])))
            };
            let phase = |k: usize, what: &str, g: Group| -> Result<Phase, AicbError> {
                let (coll, group) = coll(c[k + 1], what, g).map_err(|why| err(n, why))?;
                Ok(Phase {
                    compute_ns: num(k, what)?,
                    coll,
                    group,
                    bytes: num(k + 2, what)?,
                })
            };
            c[1].parse::<i64>()
                .map_err(|_| err(n, format!("dependency: {:?} is not an integer", c[1])))?;
            layers.push(Layer {
                name: c[0].to_string(),
                fwd: phase(2, "forward", Group::Tp)?,
                ig: phase(5, "input gradient", Group::Tp)?,
                wg: phase(8, "weight gradient", Group::Dp)?,
                update_ns: num(11, "weight update")?,
            });
        }
        if layers.len() != count {
            return Err(err(
                text.lines().count(),
                format!("line 2 promises {count} layer lines; the file has {}", layers.len()),
            ));
        }
        if let Some((n, l)) = lines.next() {
            return Err(err(n, format!("{:?} after the {count} layer lines", l.trim())));
        }
        Ok(Aicb { policy, header, layers })
    }

    /// A header value, or 1 when absent.
    pub fn get(&self, key: &str) -> u64 {
        self.header.get(key).copied().unwrap_or(1).max(1)
    }

    /// The size of each group: TP from `model_parallel_NPU_group`, DP =
    /// `all_gpus / (tp · pp)`, EP from `ep`, expert-DP = DP / EP.
    pub fn group_size(&self, g: Group) -> u64 {
        let (tp, pp, ep) = (self.get("model_parallel_NPU_group"), self.get("pp"), self.get("ep"));
        let dp = (self.get("all_gpus") / (tp * pp)).max(1);
        match g {
            Group::Tp => tp,
            Group::Dp => dp,
            Group::Ep => ep,
            Group::DpEp => (dp / ep).max(1),
        }
    }

    /// The collective bytes the file gives per group and collective over one
    /// iteration: forward and input-gradient phases once per micro-batch (`ga`),
    /// weight-gradient phases once.
    pub fn collective_bytes(&self) -> BTreeMap<(Group, Coll), u64> {
        let ga = self.get("ga");
        let mut out = BTreeMap::new();
        for l in &self.layers {
            for (p, times) in [(&l.fwd, ga), (&l.ig, ga), (&l.wg, 1)] {
                if p.coll != Coll::None && p.bytes > 0 {
                    *out.entry((p.group, p.coll)).or_insert(0) += p.bytes * times;
                }
            }
        }
        out
    }

    /// Bytes one rank sends in one iteration, NCCL's ring factors on each
    /// collective's size in its group: all-reduce `2(n−1)/n·S`, all-gather,
    /// reduce-scatter and all-to-all `(n−1)/n·S`, broadcast `S`.
    pub fn bytes_per_rank(&self) -> f64 {
        self.collective_bytes()
            .iter()
            .map(|(&(g, c), &s)| {
                let n = self.group_size(g) as f64;
                let f = if n <= 1.0 {
                    0.0
                } else {
                    match c {
                        Coll::AllReduce => 2.0 * (n - 1.0) / n,
                        Coll::AllGather | Coll::ReduceScatter | Coll::AllToAll => (n - 1.0) / n,
                        Coll::AllReduceAllToAll => 3.0 * (n - 1.0) / n,
                        Coll::Broadcast => 1.0,
                        Coll::None => 0.0,
                    }
                };
                f * s as f64
            })
            .sum()
    }
}
