//! Jobs read from TOML and checked: every refusal names its field.

use workload::job::{GpuSpec, JobError, JobSpec, ModelSpec};
use workload::model::Model;
use workload::parallel::{PipelineSchedule, RankOrder, Sharding};

/// Llama 3 405B as in the paper's Table 4 first row (training-workloads.md §6.1).
const LLAMA405: &str = r#"
name = "405b"
model = "llama3-405b"
gpu = "h100"
gpus = 8192
seq_len = 8192
global_batch = 2048
[parallel]
tp = 8
pp = 16
dp = 64
sharding = "fsdp-no-reshard"
schedule = { interleaved = 4 }
order = "llama3"
"#;

fn spec() -> JobSpec {
    JobSpec::from_toml(LLAMA405).unwrap()
}

#[test]
fn the_llama3_405b_job_reads_and_checks() {
    let s = spec();
    assert_eq!(s.model, ModelSpec::Preset("llama3-405b".into()));
    let j = s.check(16_384).unwrap();
    assert_eq!((j.dp(), j.micro_batches(), j.tokens()), (64, 32, 16_777_216));
    assert_eq!(j.parallel.schedule, PipelineSchedule::Interleaved(4));
    assert_eq!(j.parallel.sharding, Sharding::FsdpNoReshard);
    assert_eq!(j.parallel.order, RankOrder::Llama3);
    assert_eq!(j.model, Model::preset("llama3-405b").unwrap());
    // dp may be left out: derived as gpus / (tp·pp·cp)
    let mut s = spec();
    s.parallel.dp = None;
    assert_eq!(s.check(8192).unwrap().dp(), 64);
}

/// The error, its message, and the field it names.
fn refuse(s: JobSpec, cluster: u32) -> (String, String) {
    let e: JobError = s.check(cluster).unwrap_err();
    (e.field(), e.to_string())
}

#[track_caller]
fn refused(edit: impl FnOnce(&mut JobSpec), cluster: u32, field: &str, message: &str) {
    let mut s = spec();
    edit(&mut s);
    let (f, m) = refuse(s, cluster);
    assert_eq!(f, field);
    assert_eq!(m, message);
    assert!(m.starts_with(&format!("job 405b: {field}: ")), "{m}");
}

#[test]
fn every_bad_job_names_its_field() {
    refused(
        |s| s.model = ModelSpec::Preset("llama4-2t".into()),
        16_384,
        "model",
        "job 405b: model: unknown preset \"llama4-2t\" (presets: llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3)",
    );
    refused(
        |s| s.gpu = GpuSpec::Preset("h300".into()),
        16_384,
        "gpu",
        "job 405b: gpu: unknown preset \"h300\" (presets: h100, h200, b200, gb200, a100)",
    );
    refused(
        |_| {},
        4096,
        "gpus",
        "job 405b: gpus: 8192 GPUs, but the cluster has 4096",
    );
    refused(
        |s| s.parallel.dp = Some(32),
        16_384,
        "parallel.dp",
        "job 405b: parallel.dp: tp × pp × dp × cp = 8 × 16 × 32 × 1 = 4096, but the job has 8192 GPUs",
    );
    refused(
        |s| {
            s.parallel.dp = None;
            s.gpus = 8200;
        },
        16_384,
        "parallel",
        "job 405b: parallel: tp × pp × cp = 128 does not divide the job's 8200 GPUs",
    );
    refused(
        |s| {
            s.parallel.tp = 16;
            s.parallel.dp = Some(32);
        },
        16_384,
        "parallel.tp",
        "job 405b: parallel.tp: 16 is wider than the h100's NVLink domain of 8",
    );
    refused(
        |s| {
            s.parallel.tp = 3;
            s.parallel.pp = 1;
            s.parallel.dp = Some(1);
            s.gpus = 3;
            s.global_batch = 3;
        },
        16_384,
        "parallel.tp",
        "job 405b: parallel.tp: 3 does not divide the model's 128 query heads",
    );
    refused(
        |s| {
            s.gpu = GpuSpec::Preset("gb200".into());
            s.parallel.tp = 16;
            s.parallel.dp = Some(32);
        },
        16_384,
        "parallel.tp",
        "job 405b: parallel.tp: 16 does not divide the model's 8 KV heads",
    );
    refused(
        |s| {
            s.parallel.schedule = PipelineSchedule::Interleaved(9);
        },
        16_384,
        "parallel.pp",
        "job 405b: parallel.pp: 144 pipeline chunks (pp 16 × 9 virtual stages) for 126 layers",
    );
    refused(
        |s| s.parallel.ep = 2,
        16_384,
        "parallel.ep",
        "job 405b: parallel.ep: 2 for a dense model (no experts)",
    );
    refused(
        |s| s.global_batch = 2000,
        16_384,
        "global_batch",
        "job 405b: global_batch: 2000 sequences do not split into dp = 64 replicas × micro_batch 1",
    );
    refused(
        |s| s.global_batch = 64 * 8,
        16_384,
        "parallel.schedule",
        "job 405b: parallel.schedule: the interleaved schedule needs the 8 micro-batches to be a multiple of pp = 16",
    );
    refused(
        |s| {
            s.parallel.cp = 16;
            s.parallel.dp = Some(4);
            s.seq_len = 131_072 + 16;
        },
        16_384,
        "seq_len",
        "job 405b: seq_len: 131088 tokens do not split into 2 × cp = 32 chunks",
    );
    refused(
        |s| s.micro_batch = 0,
        16_384,
        "micro_batch",
        "job 405b: micro_batch: must be at least 1",
    );
    refused(
        |s| s.parallel.pp = 0,
        16_384,
        "parallel.pp",
        "job 405b: parallel.pp: must be at least 1",
    );
    refused(
        |s| s.router_skew = 0.5,
        16_384,
        "router_skew",
        "job 405b: router_skew: 0.5 is not a factor of at least 1 (busiest rank over the mean)",
    );
    let mut gpu = workload::Gpu::preset("h100").unwrap();
    gpu.bf16_tflops = 0.0;
    refused(
        |s| s.gpu = GpuSpec::Custom(gpu),
        16_384,
        "gpu.bf16_tflops",
        "job 405b: gpu.bf16_tflops: must be a positive number",
    );
    let mut custom = Model::preset("llama3-8b").unwrap();
    custom.kv_heads = 5;
    refused(
        |s| s.model = ModelSpec::Custom(custom),
        16_384,
        "model.kv_heads",
        "job 405b: model.kv_heads: 5 KV heads do not group the 32 query heads",
    );
}

#[test]
fn absurd_sizes_are_refused_not_overflowed() {
    refused(
        |s| s.seq_len = 1 << 50,
        16_384,
        "global_batch",
        "job 405b: global_batch: 2048 sequences of 1125899906842624 tokens give byte counts beyond 64 bits",
    );
    let mut huge = Model::preset("llama3-8b").unwrap();
    huge.hidden = 1 << 40;
    huge.heads = 1 << 20;
    huge.kv_heads = 1 << 20;
    let (f, m) = {
        let mut s = spec();
        s.model = ModelSpec::Custom(huge);
        refuse(s, 16_384)
    };
    assert_eq!(f, "model.hidden");
    assert!(m.ends_with("parameters, more than 2^53"), "{m}");
    refused(
        |s| {
            s.parallel.tp = u32::MAX;
            s.parallel.pp = u32::MAX;
            s.parallel.cp = u32::MAX;
        },
        16_384,
        "parallel.dp",
        "job 405b: parallel.dp: tp × pp × dp × cp = 4294967295 × 4294967295 × 64 × 4294967295 = 18446744073709551615, but the job has 8192 GPUs",
    );
    refused(
        |s| s.micro_batch = u64::MAX,
        16_384,
        "global_batch",
        "job 405b: global_batch: 2048 sequences do not split into dp = 64 replicas × micro_batch 18446744073709551615",
    );
}

#[test]
fn moe_jobs_check_expert_parallelism() {
    let moe = |ep: u32, gpus: u32| {
        JobSpec::from_toml(&format!(
            "name = \"moe\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = {gpus}\nseq_len = 4096\nglobal_batch = 1024\n[parallel]\nep = {ep}\n"
        ))
        .unwrap()
    };
    assert_eq!(moe(8, 64).check(64).unwrap().parallel.ep, 8);
    let (f, m) = refuse(moe(16, 64), 64);
    assert_eq!(f, "parallel.ep");
    assert_eq!(m, "job moe: parallel.ep: 16 does not divide the model's 8 experts");
    let (f, m) = refuse(moe(8, 12), 64);
    assert_eq!(f, "parallel.ep");
    assert_eq!(m, "job moe: parallel.ep: 8 does not divide dp × cp = 12");
}

#[test]
fn toml_refuses_unknown_fields_and_types_by_name() {
    let e = JobSpec::from_toml(&LLAMA405.replace("tp = 8", "tp = 8\ntensor = 2")).unwrap_err();
    assert!(e.to_string().contains("unknown field `tensor`"), "{e}");
    let e =
        JobSpec::from_toml(&LLAMA405.replace("sharding = \"fsdp-no-reshard\"", "sharding = \"zero-4\"")).unwrap_err();
    assert!(e.to_string().contains("unknown variant `zero-4`"), "{e}");
    // a custom model table with a misspelt dimension is refused by that name
    let e = JobSpec::from_toml(&LLAMA405.replace(
        "model = \"llama3-405b\"",
        "model = { name = \"m\", layers = 2, hidden = 64, ffn = 128, heads = 4, kv_heads = 4, vocabulary = 10 }",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("unknown field `vocabulary`"), "{e}");
}

#[test]
fn a_job_round_trips_through_toml() {
    let s = spec();
    let text = s.to_toml().unwrap();
    assert_eq!(JobSpec::from_toml(&text).unwrap(), s);
    // and with a model and a GPU given by hand, a router skew and sequence parallelism
    let mut c = spec();
    c.model = ModelSpec::Custom(Model::preset("deepseek-v3").unwrap());
    let mut gpu = workload::Gpu::preset("b200").unwrap();
    gpu.name = "b200-custom".into();
    c.gpu = GpuSpec::Custom(gpu);
    c.router_skew = 1.25;
    c.parallel.sequence_parallel = true;
    let text = c.to_toml().unwrap();
    let back = JobSpec::from_toml(&text).unwrap();
    assert_eq!(back, c, "{text}");
    assert!(text.contains("[model.moe]"), "{text}");
}
