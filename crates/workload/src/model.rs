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
            Some(m) => m.qk_nope + m.qk_rope,
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
        let (h, a) = (self.hidden, u64::from(self.heads));
        let norms = 2 * h;
        match &self.mla {
            Some(m) => {
                let q = h * m.q_lora + m.q_lora * a * (m.qk_nope + m.qk_rope);
                let kv = h * (m.kv_lora + m.qk_rope) + m.kv_lora * a * (m.qk_nope + m.v_head);
                let o = a * m.v_head * h;
                q + kv + o + m.q_lora + m.kv_lora + norms
            }
            None => {
                let kv = u64::from(self.kv_heads) * self.head_qk();
                2 * h * h + 2 * h * kv + norms
            }
        }
    }

    /// Layers with a mixture of experts.
    pub fn moe_layers(&self) -> u32 {
        self.moe
            .as_ref()
            .map_or(0, |m| self.layers - m.dense_layers.min(self.layers))
    }

    /// Parameters of every routed expert together (what expert parallelism shards).
    pub fn expert_params(&self) -> u64 {
        self.moe.as_ref().map_or(0, |m| {
            u64::from(self.moe_layers()) * u64::from(m.experts) * 3 * self.hidden * m.expert_ffn
        })
    }

    /// Feed-forward parameters of one layer: (total, active per token).
    fn ffn_params(&self, moe_layer: bool) -> (u64, u64) {
        let h = self.hidden;
        match (&self.moe, moe_layer) {
            (Some(m), true) => {
                let one = 3 * h * m.expert_ffn;
                let router = h * u64::from(m.experts);
                let shared = u64::from(m.shared_experts) * one;
                (
                    u64::from(m.experts) * one + shared + router,
                    u64::from(m.top_k) * one + shared + router,
                )
            }
            _ => (3 * h * self.ffn, 3 * h * self.ffn),
        }
    }

    fn count(&self, active: bool) -> u64 {
        let dense = self.layers - self.moe_layers();
        let pick = |(t, a): (u64, u64)| if active { a } else { t };
        u64::from(self.layers) * self.attention_params()
            + u64::from(dense) * pick(self.ffn_params(false))
            + u64::from(self.moe_layers()) * pick(self.ffn_params(true))
            + 2 * self.vocab * self.hidden
            + self.hidden
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
