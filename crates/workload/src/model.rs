//! Transformer models by their dimensions, and the published presets.
//!
//! Parameter counts are computed from the dimensions, never copied: attention
//! (grouped-query `2h² + 2h·g·d_h`, or DeepSeek's multi-head latent attention),
//! SwiGLU feed-forward `3·h·f` per expert, RMSNorms, a router `h·E` per MoE layer,
//! and untied input and output embeddings `2·V·h` (the form whose count matches the
//! Llama 3 8B card's 8.03B; ../shared/reference/training-workloads.md §1.1).

use serde::{Deserialize, Serialize};

/// Mixture-of-experts layers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Moe {
    /// Routed experts `E`.
    pub experts: u32,
    /// Experts per token (top-k).
    pub top_k: u32,
    /// Shared experts every token goes through.
    #[serde(default)]
    pub shared_experts: u32,
    /// FFN size of one expert.
    pub expert_ffn: u64,
    /// The first layers that are dense (FFN size `ffn`) before the MoE layers.
    #[serde(default)]
    pub dense_layers: u32,
    /// After the dense layers, every `every`-th layer is a MoE layer (1: all of
    /// them; 2: alternate MoE and dense, as Megatron's `--moe-layer-freq 2`).
    #[serde(default = "one")]
    pub every: u32,
}

fn one() -> u32 {
    1
}

/// DeepSeek's multi-head latent attention.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mla {
    /// Query low-rank dimension.
    pub q_lora: u64,
    /// Key/value low-rank dimension.
    pub kv_lora: u64,
    /// Per-head query/key dimension without RoPE.
    pub qk_nope: u64,
    /// Per-head RoPE dimension.
    pub qk_rope: u64,
    /// Per-head value dimension.
    pub v_head: u64,
}

/// A decoder-only transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// A name for reports.
    pub name: String,
    /// Layers `L`.
    pub layers: u32,
    /// Hidden size `h`.
    pub hidden: u64,
    /// FFN (intermediate) size `f` of a dense layer.
    pub ffn: u64,
    /// Query heads `a`.
    pub heads: u32,
    /// Key/value heads `g` (grouped-query attention; `a` for plain multi-head).
    pub kv_heads: u32,
    /// Vocabulary `V`.
    pub vocab: u64,
    /// Mixture-of-experts layers, if any.
    #[serde(default)]
    pub moe: Option<Moe>,
    /// Multi-head latent attention instead of GQA, if any.
    #[serde(default)]
    pub mla: Option<Mla>,
}

/// A model dimension that does not hold what it must.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {why}")]
pub struct ModelError {
    /// The field, as a scenario spells it under the model's table.
    pub field: &'static str,
    /// What is wrong.
    pub why: String,
}

/// The presets' names, as a scenario spells them.
pub const PRESETS: &[&str] = &["llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3"];

impl Model {
    /// A preset by name ([`PRESETS`]).
    pub fn preset(name: &str) -> Option<Model> {
        let llama = |name: &str, layers, hidden, ffn, heads| Model {
            name: name.into(),
            layers,
            hidden,
            ffn,
            heads,
            // Llama 3 paper Table 3: "Key/Value Heads 8"; vocab 128,256
            // (llama-models sku_list.py LLAMA3_VOCAB_SIZE)
            kv_heads: 8,
            vocab: 128_256,
            moe: None,
            mla: None,
        };
        Some(match name {
            // Llama 3 paper Table 3 (layers, model dimension, FFN dimension, heads)
            "llama3-8b" => llama(name, 32, 4_096, 14_336, 32),
            "llama3-70b" => llama(name, 80, 8_192, 28_672, 64),
            "llama3-405b" => llama(name, 126, 16_384, 53_248, 128),
            // Mixtral paper (arXiv 2401.04088) Table 1: 32 layers, dim 4096, hidden
            // 14336, 32 heads, 8 KV heads, vocab 32000, 8 experts, top-2
            "mixtral-8x7b" => Model {
                name: name.into(),
                layers: 32,
                hidden: 4_096,
                ffn: 14_336,
                heads: 32,
                kv_heads: 8,
                vocab: 32_000,
                moe: Some(Moe {
                    experts: 8,
                    top_k: 2,
                    shared_experts: 0,
                    expert_ffn: 14_336,
                    dense_layers: 0,
                    every: 1,
                }),
                mla: None,
            },
            // DeepSeek-V3 inference/configs/config_671B.json: n_layers 61,
            // n_dense_layers 3, dim 7168, inter_dim 18432, moe_inter_dim 2048,
            // n_routed_experts 256, n_shared_experts 1, n_activated_experts 8,
            // n_heads 128, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim
            // 128, qk_rope_head_dim 64, v_head_dim 128, vocab_size 129280
            "deepseek-v3" => Model {
                name: name.into(),
                layers: 61,
                hidden: 7_168,
                ffn: 18_432,
                heads: 128,
                kv_heads: 128,
                vocab: 129_280,
                moe: Some(Moe {
                    experts: 256,
                    top_k: 8,
                    shared_experts: 1,
                    expert_ffn: 2_048,
                    dense_layers: 3,
                    every: 1,
                }),
                mla: Some(Mla {
                    q_lora: 1_536,
                    kv_lora: 512,
                    qk_nope: 128,
                    qk_rope: 64,
                    v_head: 128,
                }),
            },
            _ => return None,
        })
    }

    /// Per-head dimension of queries and keys (GQA: `h / a`).
    pub fn head_qk(&self) -> u64 {
        match &self.mla {
            Some(m) => m.qk_nope.saturating_add(m.qk_rope),
            None => self.hidden / u64::from(self.heads.max(1)),
        }
    }

    /// Per-head dimension of values.
    pub fn head_v(&self) -> u64 {
        match &self.mla {
            Some(m) => m.v_head,
            None => self.hidden / u64::from(self.heads.max(1)),
        }
    }

    /// Parameters of one layer's attention block, its norms included.
    pub fn attention_params(&self) -> u64 {
        narrow(self.attention_wide())
    }

    fn attention_wide(&self) -> u128 {
        let (h, a) = (self.hidden, u64::from(self.heads));
        let norms = prod(&[2, h]);
        match &self.mla {
            Some(m) => sum(&[
                prod(&[h, m.q_lora]),
                prod(&[m.q_lora, a, m.qk_nope.saturating_add(m.qk_rope)]),
                prod(&[h, m.kv_lora.saturating_add(m.qk_rope)]),
                prod(&[m.kv_lora, a, m.qk_nope.saturating_add(m.v_head)]),
                prod(&[a, m.v_head, h]),
                u128::from(m.q_lora),
                u128::from(m.kv_lora),
                norms,
            ]),
            None => {
                let kv = prod(&[u64::from(self.kv_heads), self.head_qk()]);
                sum(&[prod(&[2, h, h]), prod(&[2, h]).saturating_mul(kv), norms])
            }
        }
    }

    /// Whether layer `i` (0-based) has a mixture of experts: the layers after the
    /// first `dense_layers`, every `every`-th of them.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        self.moe.as_ref().is_some_and(|m| {
            i < self.layers && i >= m.dense_layers && (i - m.dense_layers).is_multiple_of(m.every.max(1))
        })
    }

    /// Layers with a mixture of experts.
    pub fn moe_layers(&self) -> u32 {
        self.moe.as_ref().map_or(0, |m| {
            let after = self.layers - m.dense_layers.min(self.layers);
            after.div_ceil(m.every.max(1))
        })
    }

    /// Check the dimensions of a model given by hand: every size at least 1, the
    /// heads splitting the hidden size, the KV heads grouping the query heads, top-k
    /// within the experts. The error names the field (`kv_heads`, `moe.top_k`, …).
    pub fn check(&self) -> Result<(), ModelError> {
        let bad = |field: &'static str, why: String| Err(ModelError { field, why });
        for (field, v) in [
            ("layers", u64::from(self.layers)),
            ("hidden", self.hidden),
            ("ffn", self.ffn),
            ("heads", u64::from(self.heads)),
            ("kv_heads", u64::from(self.kv_heads)),
            ("vocab", self.vocab),
        ] {
            if v == 0 {
                return bad(field, "must be at least 1".into());
            }
        }
        if self.mla.is_none() && !self.hidden.is_multiple_of(u64::from(self.heads)) {
            return bad(
                "heads",
                format!("{} heads do not split the hidden size {}", self.heads, self.hidden),
            );
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return bad(
                "kv_heads",
                format!("{} KV heads do not group the {} query heads", self.kv_heads, self.heads),
            );
        }
        if let Some(m) = &self.moe {
            for (field, v) in [
                ("moe.experts", u64::from(m.experts)),
                ("moe.top_k", u64::from(m.top_k)),
                ("moe.expert_ffn", m.expert_ffn),
                ("moe.every", u64::from(m.every)),
            ] {
                if v == 0 {
                    return bad(field, "must be at least 1".into());
                }
            }
            if m.top_k > m.experts {
                return bad(
                    "moe.top_k",
                    format!("{} experts per token, but only {} experts", m.top_k, m.experts),
                );
            }
            if m.dense_layers >= self.layers {
                return bad(
                    "moe.dense_layers",
                    format!("{} dense layers leave no MoE layer of {}", m.dense_layers, self.layers),
                );
            }
        }
        if let Some(m) = &self.mla {
            for (field, v) in [
                ("mla.q_lora", m.q_lora),
                ("mla.kv_lora", m.kv_lora),
                ("mla.qk_nope", m.qk_nope),
                ("mla.v_head", m.v_head),
            ] {
                if v == 0 {
                    return bad(field, "must be at least 1".into());
                }
            }
        }
        let total = self.count_wide(false);
        if total > u128::from(MAX_PARAMS) {
            return bad(
                "hidden",
                format!("the dimensions give {total} parameters, more than 2^53"),
            );
        }
        Ok(())
    }

    /// Parameters of every routed expert together (what expert parallelism shards).
    pub fn expert_params(&self) -> u64 {
        narrow(self.moe.as_ref().map_or(0, |m| {
            prod(&[
                u64::from(self.moe_layers()),
                u64::from(m.experts),
                3,
                self.hidden,
                m.expert_ffn,
            ])
        }))
    }

    /// Feed-forward parameters of one layer: (total, active per token).
    fn ffn_wide(&self, moe_layer: bool) -> (u128, u128) {
        let h = self.hidden;
        match (&self.moe, moe_layer) {
            (Some(m), true) => {
                let one = prod(&[3, h, m.expert_ffn]);
                let router = prod(&[h, u64::from(m.experts)]);
                let shared = one.saturating_mul(u128::from(m.shared_experts));
                (
                    sum(&[one.saturating_mul(u128::from(m.experts)), shared, router]),
                    sum(&[one.saturating_mul(u128::from(m.top_k)), shared, router]),
                )
            }
            _ => (prod(&[3, h, self.ffn]), prod(&[3, h, self.ffn])),
        }
    }

    /// The count in 128 bits, saturating: at most `u128::MAX`, never a panic.
    fn count_wide(&self, active: bool) -> u128 {
        let dense = u128::from(self.layers - self.moe_layers());
        let pick = |(t, a): (u128, u128)| if active { a } else { t };
        sum(&[
            self.attention_wide().saturating_mul(u128::from(self.layers)),
            pick(self.ffn_wide(false)).saturating_mul(dense),
            pick(self.ffn_wide(true)).saturating_mul(u128::from(self.moe_layers())),
            prod(&[2, self.vocab, self.hidden]),
            u128::from(self.hidden),
        ])
    }

    fn count(&self, active: bool) -> u64 {
        narrow(self.count_wide(active))
    }

    /// All parameters.
    pub fn params(&self) -> u64 {
        self.count(false)
    }

    /// Parameters a token goes through (all of them for a dense model).
    pub fn active_params(&self) -> u64 {
        self.count(true)
    }
}

/// The largest parameter count a model may have: every count and byte size the
/// workload arithmetic derives from it (bytes at 8 per parameter, FLOPs as
/// `f64`) stays exact.
pub const MAX_PARAMS: u64 = 1 << 53;

/// Saturating product in 128 bits.
fn prod(xs: &[u64]) -> u128 {
    xs.iter().fold(1u128, |p, &x| p.saturating_mul(u128::from(x)))
}

/// Saturating sum in 128 bits.
fn sum(xs: &[u128]) -> u128 {
    xs.iter().fold(0u128, |s, &x| s.saturating_add(x))
}

/// 128 bits to 64, saturating.
fn narrow(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(got: u64, want: f64, tol: f64) -> bool {
        ((got as f64 - want) / want).abs() <= tol
    }

    /// The presets' counts from their dimensions against the published figures:
    /// Llama 3's exact counts (training-workloads.md §1.1, which the model cards
    /// round to 8B/70B/405B), Mixtral's "47B"/"13B" (paper abstract; exact
    /// 46,702,792,704 / 12,879,925,248 per §1.2), DeepSeek-V3's 671B / 37B (README).
    #[test]
    fn preset_parameter_counts_match_the_published_figures() {
        let p = |n: &str| Model::preset(n).unwrap();
        assert_eq!(p("llama3-8b").params(), 8_030_261_248);
        assert_eq!(p("llama3-70b").params(), 70_553_706_496);
        assert_eq!(p("llama3-405b").params(), 405_853_388_800);
        assert_eq!(p("llama3-405b").active_params(), 405_853_388_800);
        assert_eq!(p("mixtral-8x7b").params(), 46_702_792_704);
        assert_eq!(p("mixtral-8x7b").active_params(), 12_879_925_248);
        let ds = p("deepseek-v3");
        assert!(within(ds.params(), 671e9, 0.02), "{}", ds.params());
        assert!(within(ds.active_params(), 37e9, 0.02), "{}", ds.active_params());
        for n in PRESETS {
            assert_eq!(p(n).name, *n);
        }
        assert!(Model::preset("gpt-5").is_none());
    }
}
