//! How a job splits over its GPUs: tensor, pipeline, data, context and expert
//! parallel sizes, the pipeline schedule, the data-parallel sharding, and the
//! order ranks are laid out in (which decides what stays inside NVLink).
//!
//! The checks that tie these sizes to a model, a GPU and a batch are in
//! [`crate::job::JobSpec::check`]; each failure is a [`crate::job::JobError`] that
//! names the field.

use serde::{Deserialize, Serialize};

/// The pipeline schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PipelineSchedule {
    /// 1F1B (PipeDream-flush): bubble `(p − 1) / m` (Narayanan et al. SC'21 §2.2).
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Interleaved 1F1B with `v` model chunks ("virtual stages") per rank: bubble
    /// `(p − 1) / (v·m)`; Megatron needs `m` to be a multiple of `p` (SC'21 §2.2.2;
    /// Llama 3 §3.3.2 writes it `(PP−1)/(V·M)`).
    #[serde(rename = "interleaved")]
    Interleaved(u32),
}

impl PipelineSchedule {
    /// Model chunks per pipeline rank (`v`; 1 for 1F1B).
    pub fn virtual_stages(self) -> u32 {
        match self {
            PipelineSchedule::OneFOneB => 1,
            PipelineSchedule::Interleaved(v) => v,
        }
    }

    /// Idle time over ideal compute time with `p` stages and `m` micro-batches:
    /// `(p − 1) / (v·m)`. As a share of the whole step it is `(p−1)/(v·m + p − 1)`.
    pub fn bubble(self, p: u32, m: u64) -> f64 {
        if m == 0 {
            return 0.0;
        }
        f64::from(p.saturating_sub(1)) / (f64::from(self.virtual_stages().max(1)) * m as f64)
    }
}

/// How data-parallel replicas share state (ZeRO §7; Llama 3 §3.3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharding {
    /// Plain DDP: every replica holds everything; gradients all-reduced.
    #[default]
    #[serde(alias = "ddp")]
    None,
    /// ZeRO-1 (Megatron's distributed optimizer): optimizer state sharded;
    /// gradients reduce-scattered, updated parameters all-gathered.
    #[serde(rename = "zero-1")]
    Zero1,
    /// ZeRO-2: gradients sharded too; same traffic as ZeRO-1.
    #[serde(rename = "zero-2")]
    Zero2,
    /// ZeRO-3: parameters sharded; all-gathered in forward and again in backward,
    /// gradients reduce-scattered (1.5× DDP's bytes).
    #[serde(rename = "zero-3")]
    Zero3,
    /// FSDP full shard: ZeRO-3's traffic.
    Fsdp,
    /// Llama 3's FSDP: parameters not resharded after forward, so one all-gather
    /// and one reduce-scatter per iteration (DDP's bytes).
    FsdpNoReshard,
}

/// The order of the parallel dimensions from innermost (consecutive ranks) to
/// outermost. A group whose ranks fit one NVLink domain talks over NVLink; any
/// other group crosses the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankOrder {
    /// Megatron-Core's default `tp-cp-ep-dp-pp` (`parallel_state.py`
    /// `initialize_model_parallel`): pipeline outermost.
    #[default]
    Megatron,
    /// Llama 3's `[TP, CP, PP, DP]` (§3.3.2, Figure 5): data parallel outermost.
    Llama3,
}

/// A communicating group of ranks, by the parallelism that forms it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// Tensor parallel.
    Tp,
    /// Context parallel.
    Cp,
    /// Expert parallel.
    Ep,
    /// Pipeline neighbours (a stage and the next).
    Pp,
    /// Data parallel over `dp × cp` (dense gradients and parameters).
    Dp,
    /// Expert data parallel over `dp × cp / ep` (expert gradients and parameters).
    ExpertDp,
}

fn one() -> u32 {
    1
}

/// Parallel sizes, schedule, sharding and rank order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parallelism {
    /// Tensor parallel `t`.
    #[serde(default = "one")]
    pub tp: u32,
    /// Pipeline parallel `p`.
    #[serde(default = "one")]
    pub pp: u32,
    /// Data-parallel replicas `d`; when absent, `gpus / (tp·pp·cp)`. When given,
    /// `tp·pp·dp·cp` must equal the job's GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<u32>,
    /// Context parallel `c`.
    #[serde(default = "one")]
    pub cp: u32,
    /// Expert parallel `e`, carved out of the `dp × cp` ranks (Megatron's
    /// convention: `e` divides `dp·cp`; expert gradients reduce over the remaining
    /// `dp·cp/e`).
    #[serde(default = "one")]
    pub ep: u32,
    /// Pipeline schedule.
    #[serde(default)]
    pub schedule: PipelineSchedule,
    /// Data-parallel sharding.
    #[serde(default)]
    pub sharding: Sharding,
    /// Megatron sequence parallelism: TP all-reduces become reduce-scatter +
    /// all-gather (Korthikanti et al. §4.2.2).
    #[serde(default)]
    pub sequence_parallel: bool,
    /// Rank layout.
    #[serde(default)]
    pub order: RankOrder,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            tp: 1,
            pp: 1,
            dp: None,
            cp: 1,
            ep: 1,
            schedule: PipelineSchedule::OneFOneB,
            sharding: Sharding::None,
            sequence_parallel: false,
            order: RankOrder::Megatron,
        }
    }
}

impl Parallelism {
    /// Ranks one `group` spans when laid out in [`Parallelism::order`] with `dp`
    /// replicas: the product of every dimension size up to and including the
    /// group's outermost one. The group lies inside one NVLink domain of `n` GPUs
    /// exactly when this span divides `n` (domains are aligned blocks of ranks, and
    /// the group's members differ only in digits below the span).
    pub fn span(&self, group: Group, dp: u32) -> u64 {
        let (t, c, p, d, e) = (
            u64::from(self.tp),
            u64::from(self.cp),
            u64::from(self.pp),
            u64::from(dp),
            u64::from(self.ep),
        );
        // Strides of the data-parallel and pipeline dimensions (saturating: an
        // absurd size reads as "wider than any domain", never an overflow).
        let (dp_stride, pp_stride) = match self.order {
            RankOrder::Megatron => (t.saturating_mul(c), t.saturating_mul(c).saturating_mul(d)),
            RankOrder::Llama3 => (t.saturating_mul(c).saturating_mul(p), t.saturating_mul(c)),
        };
        match group {
            Group::Tp => t,
            Group::Cp => t.saturating_mul(c),
            Group::Pp => pp_stride.saturating_mul(p),
            Group::Dp | Group::ExpertDp => dp_stride.saturating_mul(d).max(t.saturating_mul(c)),
            // EP ranks are the first `e` of the dp × cp ranks: inside the CP
            // dimension while it suffices, then across data-parallel replicas.
            Group::Ep => {
                if e <= c {
                    t.saturating_mul(e)
                } else {
                    dp_stride.saturating_mul(e.div_ceil(c.max(1)))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bubble_is_p_minus_one_over_v_m() {
        assert_eq!(PipelineSchedule::OneFOneB.bubble(16, 32), 15.0 / 32.0);
        assert_eq!(PipelineSchedule::Interleaved(4).bubble(16, 32), 15.0 / 128.0);
        assert_eq!(PipelineSchedule::OneFOneB.bubble(1, 32), 0.0);
    }

    #[test]
    fn spans_follow_the_rank_order() {
        let p = Parallelism {
            tp: 8,
            pp: 16,
            cp: 2,
            ..Parallelism::default()
        };
        // Megatron: tp 8, cp 16, dp 16·4 = 64, pp outermost
        assert_eq!(p.span(Group::Tp, 4), 8);
        assert_eq!(p.span(Group::Cp, 4), 16);
        assert_eq!(p.span(Group::Dp, 4), 64);
        assert_eq!(p.span(Group::Pp, 4), 1024);
        let l = Parallelism {
            order: RankOrder::Llama3,
            ..p
        };
        // Llama 3: tp, cp, pp 16·16 = 256, dp outermost
        assert_eq!(l.span(Group::Pp, 4), 256);
        assert_eq!(l.span(Group::Dp, 4), 1024);
        // EP 4 over cp 2 × dp: two CP ranks, then two replicas
        let e = Parallelism { ep: 4, ..p };
        assert_eq!(e.span(Group::Ep, 4), 32);
        let e = Parallelism { ep: 2, ..e };
        assert_eq!(e.span(Group::Ep, 4), 16);
    }
}
