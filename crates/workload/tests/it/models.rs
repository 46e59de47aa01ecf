//! Parameter counts from dimensions against independently written closed forms
//! and the published figures.

use workload::model::{Model, Moe, PRESETS};

use crate::close;

/// Dense GQA transformer with SwiGLU, RMSNorms and untied embeddings, written out
/// from training-workloads.md §1.1: per layer `2h² + 2h·g·d_h + 3h·f + 2h`, plus
/// `2·V·h` embeddings and the final norm `h`.
fn dense_closed_form(l: f64, h: f64, f: f64, a: f64, g: f64, v: f64) -> f64 {
    let dh = h / a;
    l * (2.0 * h * h + 2.0 * h * g * dh + 3.0 * h * f + 2.0 * h) + 2.0 * v * h + h
}

#[test]
fn presets_are_within_two_percent_of_the_published_counts() {
    // published: Llama 3 paper Table 3 and the model cards (8B, 70B, 405B); Mixtral
    // abstract (47B total, 13B active); DeepSeek-V3 README (671B total, 37B active)
    let published = [
        ("llama3-8b", 8e9, 8e9),
        ("llama3-70b", 70e9, 70e9),
        ("llama3-405b", 405e9, 405e9),
        ("mixtral-8x7b", 47e9, 13e9),
        ("deepseek-v3", 671e9, 37e9),
    ];
    assert_eq!(published.len(), PRESETS.len());
    for (name, total, active) in published {
        let m = Model::preset(name).unwrap();
        close(m.params() as f64, total, 0.02);
        close(m.active_params() as f64, active, 0.02);
    }
}

#[test]
fn dense_counts_equal_the_closed_form() {
    for (name, l, h, f, a) in [
        ("llama3-8b", 32.0, 4096.0, 14336.0, 32.0),
        ("llama3-70b", 80.0, 8192.0, 28672.0, 64.0),
        ("llama3-405b", 126.0, 16384.0, 53248.0, 128.0),
    ] {
        let m = Model::preset(name).unwrap();
        assert_eq!(
            m.params() as f64,
            dense_closed_form(l, h, f, a, 8.0, 128_256.0),
            "{name}"
        );
        assert_eq!(m.active_params(), m.params());
    }
    // the exact figures training-workloads.md §1.1 derives
    assert_eq!(Model::preset("llama3-8b").unwrap().params(), 8_030_261_248);
    assert_eq!(Model::preset("llama3-405b").unwrap().params(), 405_853_388_800);
}

#[test]
fn moe_active_params_count_top_k_experts_and_the_router() {
    let m = Model::preset("mixtral-8x7b").unwrap();
    let (l, h, f, v) = (32.0, 4096.0, 14336.0, 32_000.0);
    let attn = 2.0 * h * h + 2.0 * h * 8.0 * 128.0 + 2.0 * h;
    let expert = 3.0 * h * f;
    let router = h * 8.0;
    let total = l * (attn + 8.0 * expert + router) + 2.0 * v * h + h;
    let active = l * (attn + 2.0 * expert + router) + 2.0 * v * h + h;
    assert_eq!(m.params() as f64, total);
    assert_eq!(m.active_params() as f64, active);
    // training-workloads.md §1.2's derived figures
    assert_eq!(m.params(), 46_702_792_704);
    assert_eq!(m.active_params(), 12_879_925_248);
    assert_eq!(m.expert_params() as f64, l * 8.0 * expert);

    // DeepSeek-V3: 3 dense layers, then 58 MoE layers of 256 routed + 1 shared
    // experts, 8 per token
    let d = Model::preset("deepseek-v3").unwrap();
    assert_eq!(d.moe_layers(), 58);
    assert!(!d.is_moe_layer(2) && d.is_moe_layer(3) && d.is_moe_layer(60) && !d.is_moe_layer(61));
    let one = 3.0 * 7168.0 * 2048.0;
    assert_eq!((d.params() - d.active_params()) as f64, 58.0 * (256.0 - 8.0) * one);
}

#[test]
fn moe_every_other_layer() {
    let mut m = Model::preset("mixtral-8x7b").unwrap();
    let dense_ffn = 3 * 4096 * 14336u64;
    let before = m.params();
    m.moe.as_mut().unwrap().every = 2;
    // layers 0, 2, …, 30 are MoE; the other 16 become dense FFNs (ffn 14336)
    assert_eq!(m.moe_layers(), 16);
    assert!(m.is_moe_layer(0) && !m.is_moe_layer(1) && m.is_moe_layer(30));
    let moe_ffn = 8 * dense_ffn + 4096 * 8;
    assert_eq!(before - m.params(), 16 * (moe_ffn - dense_ffn));
}

#[test]
fn custom_models_are_checked_by_field() {
    let ok = Model {
        name: "tiny".into(),
        layers: 4,
        hidden: 512,
        ffn: 2048,
        heads: 8,
        kv_heads: 2,
        vocab: 1000,
        moe: Some(Moe {
            experts: 4,
            top_k: 2,
            shared_experts: 0,
            expert_ffn: 1024,
            dense_layers: 1,
            every: 1,
        }),
        mla: None,
    };
    assert_eq!(ok.check(), Ok(()));
    let bad = |f: fn(&mut Model)| {
        let mut m = ok.clone();
        f(&mut m);
        m.check().unwrap_err().to_string()
    };
    assert_eq!(
        bad(|m| m.kv_heads = 3),
        "kv_heads: 3 KV heads do not group the 8 query heads"
    );
    assert_eq!(bad(|m| m.heads = 7), "heads: 7 heads do not split the hidden size 512");
    assert_eq!(bad(|m| m.layers = 0), "layers: must be at least 1");
    assert_eq!(
        bad(|m| m.moe.as_mut().unwrap().top_k = 5),
        "moe.top_k: 5 experts per token, but only 4 experts"
    );
    assert_eq!(
        bad(|m| m.moe.as_mut().unwrap().dense_layers = 4),
        "moe.dense_layers: 4 dense layers leave no MoE layer of 4"
    );
}
