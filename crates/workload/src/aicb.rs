//! SimAI/AICB text workload files, read into the per-rank [`CommOp`] list a
//! generated [`crate::iteration::Iteration`] produces.
//!
//! The format (training-workloads.md §7.2; aliyun/aicb
//! `workload_generator/SimAI_training_workload_generator.py`, aliyun/SimAI
//! `astra-sim-alibabacloud/astra-sim/workload/Workload.cc`):
//!
//! ```text
//! <policy> [model_parallel_NPU_group: t] [ep: e] [pp: p] [vpp: v] [ga: m] [all_gpus: n]
//!          [checkpoints: k ids…] [checkpoint_initiates: k ids…] [pp_comm[:] bytes]
//! <number of layer lines>
//! <name> <dep> <fwd_compute> <fwd_comm> <fwd_size> <ig_compute> <ig_comm> <ig_size>
//!        <wg_compute> <wg_comm> <wg_size> <wg_update>
//! ```
//!
//! Tokens are separated by any whitespace (AICB writes tabs). Compute times are in
//! Ticks, 1 ns each (SimAI's `Common.hh`). A comm type is `NONE`, `ALLREDUCE`,
//! `ALLGATHER`, `REDUCESCATTER`, `ALLTOALL`, `ALLREDUCEALLTOALL` or `BROADCAST`,
//! optionally suffixed `_EP` (expert-parallel group) or `_DP_EP` (expert data
//! parallel); without a suffix the forward and input-gradient columns run in the
//! tensor-parallel group and the weight-gradient column in the data-parallel
//! group. A comm size is the per-rank buffer (the `S` of [`crate::comm`]): AICB
//! writes `s·h·2` for a TP all-reduce of an activation.
//!
//! One file describes every rank of the job (SPMD), so its operations are one
//! rank's: each layer line's three collectives once per pass, plus the pipeline's
//! `pp_comm` send forward and backward per micro-batch when `pp` > 1.

use std::fmt;

use crate::comm::{CommKind, CommOp, Group, Link, Overlap, Phase};
use crate::parallel::Parallelism;

/// The parallelism policy of line 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `DATA`.
    Data,
    /// `HYBRID_TRANSFORMER`.
    HybridTransformer,
    /// `HYBRID_TRANSFORMER_FWD_IN_BCKWD` (AICB's Megatron workloads).
    HybridTransformerFwdInBckwd,
    /// `HYBRID_DLRM`, with ASTRA-sim 1.0's last bottom layer when given.
    HybridDlrm(Option<u32>),
    /// `HYBRID_DLRM_ENHANCED`, likewise.
    HybridDlrmEnhanced(Option<u32>),
    /// `MODEL`.
    Model,
    /// `HYBRID_DATA_MODEL`.
    HybridDataModel,
    /// `HYBRID_MODEL_DATA`.
    HybridModelData,
    /// `HYBRID_CUSTOMIZED`.
    HybridCustomized,
    /// `MICRO` (AICB's micro-benchmarks).
    Micro,
    /// `DISTRIBUTED_INFERENCE`.
    DistributedInference,
}

/// Line 1 of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The parallelism policy.
    pub policy: Policy,
    /// `model_parallel_NPU_group`: the tensor-parallel size.
    pub tp: Option<u32>,
    /// `ep`.
    pub ep: Option<u32>,
    /// `pp`.
    pub pp: Option<u32>,
    /// `vpp` (AICB writes the number of layers).
    pub vpp: Option<u32>,
    /// `ga`: gradient-accumulation steps, i.e. micro-batches.
    pub ga: Option<u32>,
    /// `all_gpus`.
    pub all_gpus: Option<u32>,
    /// `checkpoints`: layer ids.
    pub checkpoints: Vec<u32>,
    /// `checkpoint_initiates`: layer ids.
    pub checkpoint_initiates: Vec<u32>,
    /// `pp_comm`: bytes sent between pipeline stages per micro-batch and direction.
    pub pp_comm: Option<u64>,
}

/// One column group of a layer line: compute, then the collective it issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Compute time, ns.
    pub compute_ns: u64,
    /// The collective, its group and its per-rank size in bytes; `None` for `NONE`.
    pub comm: Option<(CommKind, Group, u64)>,
}

/// One layer line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Its line number in the file (1-based).
    pub line: usize,
    /// Layer name.
    pub name: String,
    /// Dependency (`-1` for none).
    pub dep: i64,
    /// Forward pass.
    pub fwd: Pass,
    /// Input-gradient pass.
    pub ig: Pass,
    /// Weight-gradient pass.
    pub wg: Pass,
    /// Weight-update time, ns.
    pub wg_update_ns: u64,
}

/// A workload file, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// The file name errors report.
    pub file: String,
    /// Line 1.
    pub header: Header,
    /// The layer lines.
    pub layers: Vec<Layer>,
}

/// What is wrong at a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// No header line.
    Empty,
    /// No layer-count line.
    MissingCount,
    /// A policy keyword the format does not have.
    UnknownPolicy(String),
    /// A header key the format does not have.
    UnknownKey(String),
    /// A header key without its value.
    MissingValue(&'static str),
    /// A token that should be a number.
    BadNumber {
        /// What the token is (a column or header key).
        what: &'static str,
        /// The token.
        token: String,
    },
    /// A layer line without the format's 12 columns.
    Columns(usize),
    /// A comm-type token the format does not have.
    UnknownComm {
        /// The column.
        column: &'static str,
        /// The token.
        token: String,
    },
    /// Fewer layer lines than line 2 declares.
    TooFewLayers {
        /// Declared on line 2.
        declared: usize,
        /// Found.
        found: usize,
    },
    /// A non-empty line after the declared layers.
    ExtraLine,
    /// A collective whose group size needs a header value the file does not give.
    GroupSize {
        /// The header key.
        key: &'static str,
        /// The group.
        group: Group,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Empty => write!(f, "expected a header line, found an empty file"),
            ErrorKind::MissingCount => write!(f, "expected the number of layer lines, found the end of the file"),
            ErrorKind::UnknownPolicy(p) => write!(f, "unknown parallelism policy {p:?}"),
            ErrorKind::UnknownKey(k) => write!(f, "unknown header key {k:?}"),
            ErrorKind::MissingValue(k) => write!(f, "header key {k:?} has no value"),
            ErrorKind::BadNumber { what, token } => write!(f, "{what}: expected a number, found {token:?}"),
            ErrorKind::Columns(n) => write!(f, "expected 12 columns, found {n}"),
            ErrorKind::UnknownComm { column, token } => write!(f, "{column}: unknown comm type {token:?}"),
            ErrorKind::TooFewLayers { declared, found } => {
                write!(f, "line 2 declares {declared} layers, found {found}")
            }
            ErrorKind::ExtraLine => write!(f, "a line after the declared layers"),
            ErrorKind::GroupSize { key, group } => {
                write!(f, "a {group:?} collective needs the header's {key:?}, which is absent")
            }
        }
    }
}

/// A workload file that cannot be read: names the file and the line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("read AICB workload {file}:{line}: {kind}")]
pub struct Error {
    /// The file.
    pub file: String,
    /// The line, 1-based.
    pub line: usize,
    /// What is wrong.
    pub kind: ErrorKind,
}

const COLUMNS: [&str; 12] = [
    "name",
    "dep",
    "fwd_compute",
    "fwd_comm",
    "fwd_size",
    "ig_compute",
    "ig_comm",
    "ig_size",
    "wg_compute",
    "wg_comm",
    "wg_size",
    "wg_update",
];

fn number<T: std::str::FromStr>(what: &'static str, token: &str) -> Result<T, ErrorKind> {
    token.parse().map_err(|_| ErrorKind::BadNumber {
        what,
        token: token.to_owned(),
    })
}

fn policy(token: &str) -> Option<Policy> {
    Some(match token {
        "DATA" => Policy::Data,
        "HYBRID_TRANSFORMER" => Policy::HybridTransformer,
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD" => Policy::HybridTransformerFwdInBckwd,
        "HYBRID_DLRM" => Policy::HybridDlrm(None),
        "HYBRID_DLRM_ENHANCED" => Policy::HybridDlrmEnhanced(None),
        "MODEL" => Policy::Model,
        "HYBRID_DATA_MODEL" => Policy::HybridDataModel,
        "HYBRID_MODEL_DATA" => Policy::HybridModelData,
        "HYBRID_CUSTOMIZED" => Policy::HybridCustomized,
        "MICRO" => Policy::Micro,
        "DISTRIBUTED_INFERENCE" => Policy::DistributedInference,
        _ => return None,
    })
}

fn header(line: &str) -> Result<Header, ErrorKind> {
    let mut tokens = line.split_whitespace().peekable();
    let first = tokens.next().ok_or(ErrorKind::Empty)?;
    let mut h = Header {
        policy: policy(first).ok_or_else(|| ErrorKind::UnknownPolicy(first.to_owned()))?,
        tp: None,
        ep: None,
        pp: None,
        vpp: None,
        ga: None,
        all_gpus: None,
        checkpoints: Vec::new(),
        checkpoint_initiates: Vec::new(),
        pp_comm: None,
    };
    // ASTRA-sim 1.0's DLRM policies carry the last bottom layer after the keyword.
    if let Policy::HybridDlrm(last) | Policy::HybridDlrmEnhanced(last) = &mut h.policy
        && let Some(t) = tokens.next_if(|t| t.parse::<u32>().is_ok())
    {
        *last = Some(number("last_bottom_layer", t)?);
    }
    while let Some(key) = tokens.next() {
        let (name, value): (&'static str, &mut Option<u32>) = match key {
            "model_parallel_NPU_group:" => ("model_parallel_NPU_group", &mut h.tp),
            "ep:" => ("ep", &mut h.ep),
            "pp:" => ("pp", &mut h.pp),
            "vpp:" => ("vpp", &mut h.vpp),
            "ga:" => ("ga", &mut h.ga),
            "all_gpus:" => ("all_gpus", &mut h.all_gpus),
            "pp_comm:" | "pp_comm" => {
                let t = tokens.next().ok_or(ErrorKind::MissingValue("pp_comm"))?;
                h.pp_comm = Some(number("pp_comm", t)?);
                continue;
            }
            "checkpoints:" | "checkpoint_initiates:" => {
                let name = if key == "checkpoints:" {
                    "checkpoints"
                } else {
                    "checkpoint_initiates"
                };
                let n: usize = number(name, tokens.next().ok_or(ErrorKind::MissingValue(name))?)?;
                let mut ids = Vec::new();
                for _ in 0..n {
                    ids.push(number(name, tokens.next().ok_or(ErrorKind::MissingValue(name))?)?);
                }
                if key == "checkpoints:" {
                    h.checkpoints = ids;
                } else {
                    h.checkpoint_initiates = ids;
                }
                continue;
            }
            other => return Err(ErrorKind::UnknownKey(other.to_owned())),
        };
        *value = Some(number(name, tokens.next().ok_or(ErrorKind::MissingValue(name))?)?);
    }
    Ok(h)
}

fn comm(
    column: &'static str,
    token: &str,
    size: u64,
    plain: Group,
) -> Result<Option<(CommKind, Group, u64)>, ErrorKind> {
    let (base, group) = if let Some(b) = token.strip_suffix("_DP_EP") {
        (b, Group::ExpertDp)
    } else if let Some(b) = token.strip_suffix("_EP") {
        (b, Group::Ep)
    } else {
        (token, plain)
    };
    let kind = match base {
        "NONE" => return Ok(None),
        "ALLREDUCE" => CommKind::AllReduce,
        "ALLGATHER" => CommKind::AllGather,
        "REDUCESCATTER" => CommKind::ReduceScatter,
        "ALLTOALL" => CommKind::AllToAll,
        // SimAI's hierarchical all-reduce: an all-reduce's data, another algorithm
        "ALLREDUCEALLTOALL" => CommKind::AllReduce,
        "BROADCAST" => CommKind::Broadcast,
        _ => {
            return Err(ErrorKind::UnknownComm {
                column,
                token: token.to_owned(),
            });
        }
    };
    Ok(Some((kind, group, size)))
}

fn layer(number_in_file: usize, line: &str) -> Result<Layer, ErrorKind> {
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() != COLUMNS.len() {
        return Err(ErrorKind::Columns(t.len()));
    }
    let pass = |i: usize, plain: Group| -> Result<Pass, ErrorKind> {
        let size = number(COLUMNS[i + 2], t[i + 2])?;
        Ok(Pass {
            compute_ns: number(COLUMNS[i], t[i])?,
            comm: comm(COLUMNS[i + 1], t[i + 1], size, plain)?,
        })
    };
    Ok(Layer {
        line: number_in_file,
        name: t[0].to_owned(),
        dep: number("dep", t[1])?,
        fwd: pass(2, Group::Tp)?,
        ig: pass(5, Group::Tp)?,
        wg: pass(8, Group::Dp)?,
        wg_update_ns: number("wg_update", t[11])?,
    })
}

impl Workload {
    /// Read a workload file's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Workload, Error> {
        let err = |line: usize, kind| Error {
            file: file.to_owned(),
            line,
            kind,
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (_, first) = lines.next().ok_or_else(|| err(1, ErrorKind::Empty))?;
        let header = header(first).map_err(|k| err(1, k))?;
        let (n, second) = lines.next().ok_or_else(|| err(2, ErrorKind::MissingCount))?;
        let declared: usize = number("layer count", second.trim()).map_err(|k| err(n, k))?;
        let mut layers = Vec::with_capacity(declared.min(1 << 16));
        let mut last = n;
        for (n, line) in lines {
            last = n;
            if line.trim().is_empty() {
                continue;
            }
            if layers.len() == declared {
                return Err(err(n, ErrorKind::ExtraLine));
            }
            layers.push(layer(n, line).map_err(|k| err(n, k))?);
        }
        if layers.len() < declared {
            return Err(err(
                last,
                ErrorKind::TooFewLayers {
                    declared,
                    found: layers.len(),
                },
            ));
        }
        Ok(Workload {
            file: file.to_owned(),
            header,
            layers,
        })
    }

    /// The parallelism the header describes (Megatron's rank order), for group
    /// sizes and spans; `dp = all_gpus / (tp·pp)` when `all_gpus` is given.
    pub fn parallelism(&self) -> (Parallelism, Option<u32>) {
        let h = &self.header;
        let p = Parallelism {
            tp: h.tp.unwrap_or(1).max(1),
            pp: h.pp.unwrap_or(1).max(1),
            ep: h.ep.unwrap_or(1).max(1),
            ..Parallelism::default()
        };
        let mp = u64::from(p.tp) * u64::from(p.pp);
        // the quotient is at most `n`, a u32
        let dp = h.all_gpus.map(|n| (u64::from(n) / mp).max(1) as u32);
        (p, dp)
    }

    /// Compute time of one pass through every layer line (forward, input and
    /// weight gradients, weight update), ns; saturates at `u64::MAX`.
    pub fn compute_ns(&self) -> u64 {
        self.layers
            .iter()
            .flat_map(|l| [l.fwd.compute_ns, l.ig.compute_ns, l.wg.compute_ns, l.wg_update_ns])
            .fold(0u64, u64::saturating_add)
    }

    /// One rank's operations: each layer line's collectives (forward and input
    /// gradient exposed, weight gradient hidden behind backward as SimAI issues it
    /// non-blocking), then the pipeline sends. Groups that fit `nvlink_domain`
    /// GPUs under Megatron's rank order run on NVLink.
    pub fn ops(&self, nvlink_domain: u32) -> Result<Vec<CommOp>, Error> {
        let (p, dp) = self.parallelism();
        let mut ops = Vec::new();
        for l in &self.layers {
            for (pass, phase, overlap) in [
                (&l.fwd, Phase::Forward, Overlap::Exposed),
                (&l.ig, Phase::Backward, Overlap::Exposed),
                (&l.wg, Phase::Backward, Overlap::Backward),
            ] {
                let Some((kind, group, bytes)) = pass.comm else {
                    continue;
                };
                let missing = |key| Error {
                    file: self.file.clone(),
                    line: l.line,
                    kind: ErrorKind::GroupSize { key, group },
                };
                let (ranks, dp) = match group {
                    Group::Tp => (p.tp, dp.unwrap_or(1)),
                    Group::Ep => (p.ep, dp.unwrap_or(p.ep)),
                    Group::Dp => {
                        let d = dp.ok_or_else(|| missing("all_gpus"))?;
                        (d, d)
                    }
                    Group::ExpertDp => {
                        let d = dp.ok_or_else(|| missing("all_gpus"))?;
                        ((d / p.ep).max(1), d)
                    }
                    // the grammar has no column for these groups
                    Group::Cp | Group::Pp => (1, 1),
                };
                ops.push(CommOp {
                    label: l.name.clone(),
                    kind,
                    group,
                    ranks,
                    bytes,
                    count: 1,
                    phase,
                    overlap,
                    link: link(&p, group, dp, nvlink_domain),
                });
            }
        }
        if let (Some(bytes), true) = (self.header.pp_comm, p.pp > 1) {
            let m = u64::from(self.header.ga.unwrap_or(1).max(1));
            for phase in [Phase::Forward, Phase::Backward] {
                ops.push(CommOp {
                    label: "pp_comm".into(),
                    kind: CommKind::SendRecv,
                    group: Group::Pp,
                    ranks: 2,
                    bytes,
                    count: m,
                    phase,
                    overlap: Overlap::Exposed,
                    link: link(&p, Group::Pp, dp.unwrap_or(1), nvlink_domain),
                });
            }
        }
        Ok(ops)
    }
}

fn link(p: &Parallelism, group: Group, dp: u32, domain: u32) -> Link {
    if u64::from(domain).is_multiple_of(p.span(group, dp)) {
        Link::NvLink
    } else {
        Link::Network
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_micro_benchmark_reads() {
        let w = Workload::parse("m.txt", "MICRO\n2\nmicro_test -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 4096 1\nmicro_test\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLTOALL_EP\t8192\t1\n\n").unwrap();
        assert_eq!(w.header.policy, Policy::Micro);
        assert_eq!(w.layers[0].wg.comm, Some((CommKind::AllReduce, Group::Dp, 4096)));
        assert_eq!(w.layers[1].wg.comm, Some((CommKind::AllToAll, Group::Ep, 8192)));
        assert_eq!(w.compute_ns(), 8);
        // a DP collective without all_gpus cannot size its group
        let e = w.ops(8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "read AICB workload m.txt:3: a Dp collective needs the header's \"all_gpus\", which is absent"
        );
    }

    #[test]
    fn dlrm_keeps_its_last_bottom_layer() {
        let w = Workload::parse("d.txt", "HYBRID_DLRM 3\n0\n").unwrap();
        assert_eq!(w.header.policy, Policy::HybridDlrm(Some(3)));
    }
}
