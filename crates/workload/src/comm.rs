//! Communication operations of one rank, typed by kind, group, phase and overlap:
//! the list a generated iteration ([`crate::iteration`]) and an imported workload
//! file ([`crate::aicb`]) both produce, and a network model prices.
//!
//! Sizes follow training-workloads.md §0: an operation's `bytes` is the per-rank
//! buffer `S` (all-reduce: the buffer; reduce-scatter: the per-rank input;
//! all-gather: the per-rank output; all-to-all: what one rank holds to exchange;
//! send/recv and broadcast: the message), and one rank sends `factor(n)·S` with
//! NCCL's ring factors, the same ones nccl-tests turns into bus bandwidth (§5.8).

use serde::{Deserialize, Serialize};

pub use crate::parallel::Group;

/// A collective or point-to-point operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommKind {
    /// All-reduce.
    AllReduce,
    /// Reduce-scatter.
    ReduceScatter,
    /// All-gather.
    AllGather,
    /// All-to-all.
    AllToAll,
    /// One send to a neighbour (and the matching receive).
    SendRecv,
    /// Broadcast.
    Broadcast,
}

impl CommKind {
    /// Bytes one rank sends per byte of `S` among `n` ranks: all-reduce
    /// `2(n−1)/n`; reduce-scatter, all-gather, all-to-all `(n−1)/n`; send/recv and
    /// broadcast 1 (nccl-tests' busbw factors, `doc/PERFORMANCE.md`). A collective
    /// of one rank sends nothing.
    pub fn bus_factor(self, n: u32) -> f64 {
        if n <= 1 && self != CommKind::SendRecv {
            return 0.0;
        }
        let n = f64::from(n);
        match self {
            CommKind::AllReduce => 2.0 * (n - 1.0) / n,
            CommKind::ReduceScatter | CommKind::AllGather | CommKind::AllToAll => (n - 1.0) / n,
            CommKind::SendRecv | CommKind::Broadcast => 1.0,
        }
    }
}

/// Which pass an operation belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Forward pass.
    Forward,
    /// Backward pass (input and weight gradients).
    Backward,
}

/// What an operation's time hides behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overlap {
    /// Nothing: it sits on the critical path of every micro-batch it belongs to
    /// (tensor-, context-, expert-parallel and pipeline traffic in Megatron's
    /// default settings).
    Exposed,
    /// The backward compute of one micro-batch (gradient reduction launched
    /// bucket by bucket as gradients become ready, Megatron's
    /// `overlap_grad_reduce`; only the last micro-batch's backward is left once
    /// gradients are accumulated).
    Backward,
    /// The forward compute of one micro-batch (parameter all-gather prefetched,
    /// Megatron's `overlap_param_gather`, FSDP's prefetch).
    Forward,
}

/// Where an operation's bytes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Link {
    /// Inside one NVLink domain.
    NvLink,
    /// Across the scale-out network.
    Network,
}

/// One communication operation of one rank, repeated `count` times per iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommOp {
    /// What it is for, for reports (`tp`, `dp-grads`, an imported layer's name).
    pub label: String,
    /// The operation.
    pub kind: CommKind,
    /// The group it runs in.
    pub group: Group,
    /// Ranks in the group (2 for a send/recv).
    pub ranks: u32,
    /// Per-rank buffer `S`, bytes (see the module doc).
    pub bytes: u64,
    /// Times per iteration.
    pub count: u64,
    /// The pass it belongs to.
    pub phase: Phase,
    /// What hides it.
    pub overlap: Overlap,
    /// Where it travels.
    pub link: Link,
}

impl CommOp {
    /// Bytes this rank sends for one occurrence: `bus_factor(ranks) · bytes`.
    pub fn sent(&self) -> f64 {
        self.kind.bus_factor(self.ranks) * self.bytes as f64
    }

    /// Bytes this rank sends per iteration (`count` occurrences).
    pub fn sent_per_iteration(&self) -> f64 {
        self.sent() * self.count as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_are_nccl_tests() {
        assert_eq!(CommKind::AllReduce.bus_factor(8), 2.0 * 7.0 / 8.0);
        assert_eq!(CommKind::ReduceScatter.bus_factor(64), 63.0 / 64.0);
        assert_eq!(CommKind::AllGather.bus_factor(4), 0.75);
        assert_eq!(CommKind::AllToAll.bus_factor(2), 0.5);
        assert_eq!(CommKind::SendRecv.bus_factor(2), 1.0);
        assert_eq!(CommKind::Broadcast.bus_factor(16), 1.0);
        assert_eq!(CommKind::AllReduce.bus_factor(1), 0.0);
    }
}
