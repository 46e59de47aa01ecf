//! A training job: a model × a parallelism × a GPU type, read from a scenario and
//! checked field by field.

use serde::{Deserialize, Serialize};

use crate::gpu::Gpu;
use crate::model::Model;

/// The pipeline schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Schedule {
    /// 1F1B (PipeDream-flush): bubble `(p − 1) / m`.
    #[default]
    OneFOneB,
    /// Interleaved 1F1B with `v` model chunks per rank: bubble `(p − 1) / (v·m)`;
    /// needs `m` to be a multiple of `p` (Narayanan et al. SC'21 §2.2).
    Interleaved(u32),
}

/// How data-parallel replicas share state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharding {
    /// Plain DDP: all-reduce of the gradients.
    #[default]
    Ddp,
    /// ZeRO-1/2 or Megatron's distributed optimizer: reduce-scatter of gradients
    /// and all-gather of the updated parameters.
    Zero1,
    /// ZeRO-3 / FSDP full shard: parameters all-gathered in forward and again in
    /// backward, gradients reduce-scattered.
    Zero3,
    /// Llama 3's FSDP: parameters not resharded after forward (one all-gather),
    /// gradients reduce-scattered (Llama 3 §3.3.2).
    FsdpNoReshard,
}

/// Parallelism sizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parallelism {
    /// Tensor parallel.
    #[serde(default = "one")]
    pub tp: u32,
    /// Pipeline parallel.
    #[serde(default = "one")]
    pub pp: u32,
    /// Context parallel.
    #[serde(default = "one")]
    pub cp: u32,
    /// Expert parallel (carved out of the data-parallel × context-parallel ranks).
    #[serde(default = "one")]
    pub ep: u32,
    /// Pipeline schedule.
    #[serde(default)]
    pub schedule: Schedule,
    /// Data-parallel sharding.
    #[serde(default)]
    pub sharding: Sharding,
}

fn one() -> u32 {
    1
}

/// A job as a scenario writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// A name for reports.
    pub name: String,
    /// A model preset (`llama3-70b`, …) — or give `custom_model`.
    #[serde(default)]
    pub model: Option<String>,
    /// A model by its dimensions.
    #[serde(default)]
    pub custom_model: Option<Model>,
    /// A GPU preset (`h100`, `h200`, `b200`, `a100`).
    pub gpu: String,
    /// GPUs the job runs on.
    pub gpus: u32,
    /// Parallelism.
    pub parallel: Parallelism,
    /// Sequence length, tokens.
    pub seq_len: u64,
    /// Global batch, sequences per iteration.
    pub global_batch: u64,
    /// Micro-batch, sequences.
    #[serde(default = "one_u64")]
    pub micro_batch: u64,
}

fn one_u64() -> u64 {
    1
}

/// A checked job.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The job's name.
    pub name: String,
    /// The model, presets resolved.
    pub model: Model,
    /// The GPU, preset resolved.
    pub gpu: Gpu,
    /// GPUs the job runs on.
    pub gpus: u32,
    /// Parallelism.
    pub parallel: Parallelism,
    /// Sequence length, tokens.
    pub seq_len: u64,
    /// Global batch, sequences.
    pub global_batch: u64,
    /// Micro-batch, sequences.
    pub micro_batch: u64,
}

/// Why a job cannot run as written: names the field and what it expected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    /// A field that does not hold what it must.
    #[error("job {job}: {field}: {why}")]
    Field {
        /// The job's name.
        job: String,
        /// The field, as the scenario spells it.
        field: &'static str,
        /// What is wrong and what was expected.
        why: String,
    },
}

impl JobSpec {
    /// Resolve the presets and check the job against a cluster of `cluster_gpus`.
    pub fn check(&self, cluster_gpus: u32) -> Result<Job, JobError> {
        let err = |field: &'static str, why: String| JobError::Field {
            job: self.name.clone(),
            field,
            why,
        };
        let model = match (&self.model, &self.custom_model) {
            (Some(n), None) => Model::preset(n).ok_or_else(|| {
                err(
                    "model",
                    format!("unknown model {n:?}; presets: {}", crate::model::PRESETS.join(", ")),
                )
            })?,
            (None, Some(m)) => m.clone(),
            (Some(_), Some(_)) => return Err(err("model", "give model or custom_model, not both".into())),
            (None, None) => return Err(err("model", "give a model preset or custom_model".into())),
        };
        let gpu = Gpu::preset(&self.gpu).ok_or_else(|| {
            err(
                "gpu",
                format!(
                    "unknown GPU {:?}; presets: {}",
                    self.gpu,
                    crate::gpu::PRESETS.join(", ")
                ),
            )
        })?;
        let p = &self.parallel;
        for (field, v) in [
            ("parallel.tp", p.tp),
            ("parallel.pp", p.pp),
            ("parallel.cp", p.cp),
            ("parallel.ep", p.ep),
        ] {
            if v == 0 {
                return Err(err(field, "must be at least 1".into()));
            }
        }
        if self.gpus == 0 {
            return Err(err("gpus", "must be at least 1".into()));
        }
        if self.gpus > cluster_gpus {
            return Err(err(
                "gpus",
                format!("{} GPUs, but the cluster has {cluster_gpus}", self.gpus),
            ));
        }
        let mp = u64::from(p.tp) * u64::from(p.pp) * u64::from(p.cp);
        if !u64::from(self.gpus).is_multiple_of(mp) {
            return Err(err(
                "parallel",
                format!("tp × pp × cp = {mp} does not divide the job's {} GPUs", self.gpus),
            ));
        }
        let dp = u64::from(self.gpus) / mp;
        if p.tp > gpu.nvlink_domain {
            return Err(err(
                "parallel.tp",
                format!(
                    "{} is wider than the {}'s NVLink domain of {}",
                    p.tp, gpu.name, gpu.nvlink_domain
                ),
            ));
        }
        if !u64::from(model.heads).is_multiple_of(u64::from(p.tp)) {
            return Err(err(
                "parallel.tp",
                format!("{} does not divide the model's {} heads", p.tp, model.heads),
            ));
        }
        if p.pp > model.layers {
            return Err(err(
                "parallel.pp",
                format!("{} stages for {} layers", p.pp, model.layers),
            ));
        }
        match &model.moe {
            Some(m) => {
                if !(dp * u64::from(p.cp)).is_multiple_of(u64::from(p.ep)) {
                    return Err(err(
                        "parallel.ep",
                        format!("{} does not divide dp × cp = {}", p.ep, dp * u64::from(p.cp)),
                    ));
                }
                if !m.experts.is_multiple_of(p.ep) {
                    return Err(err(
                        "parallel.ep",
                        format!("{} does not divide the model's {} experts", p.ep, m.experts),
                    ));
                }
            }
            None if p.ep > 1 => {
                return Err(err("parallel.ep", format!("{} for a dense model (no experts)", p.ep)));
            }
            None => {}
        }
        if self.micro_batch == 0 || self.seq_len == 0 {
            return Err(err("micro_batch", "micro_batch and seq_len must be at least 1".into()));
        }
        if !self.seq_len.is_multiple_of(u64::from(p.cp)) {
            return Err(err(
                "seq_len",
                format!("{} tokens do not split over cp = {}", self.seq_len, p.cp),
            ));
        }
        if !self.global_batch.is_multiple_of(dp * self.micro_batch) || self.global_batch == 0 {
            return Err(err(
                "global_batch",
                format!(
                    "{} sequences do not split into dp = {dp} replicas × micro_batch {}",
                    self.global_batch, self.micro_batch
                ),
            ));
        }
        let m = self.global_batch / (dp * self.micro_batch);
        if let Schedule::Interleaved(v) = p.schedule {
            if v == 0 {
                return Err(err("parallel.schedule", "interleaved needs at least 1 chunk".into()));
            }
            if !m.is_multiple_of(u64::from(p.pp)) {
                return Err(err(
                    "parallel.schedule",
                    format!(
                        "the interleaved schedule needs the {m} micro-batches to be a multiple of pp = {}",
                        p.pp
                    ),
                ));
            }
        }
        Ok(Job {
            name: self.name.clone(),
            model,
            gpu,
            gpus: self.gpus,
            parallel: p.clone(),
            seq_len: self.seq_len,
            global_batch: self.global_batch,
            micro_batch: self.micro_batch,
        })
    }
}

impl Job {
    /// Data-parallel replicas `d = gpus / (tp·pp·cp)`.
    pub fn dp(&self) -> u64 {
        let p = &self.parallel;
        u64::from(self.gpus) / (u64::from(p.tp) * u64::from(p.pp) * u64::from(p.cp))
    }

    /// Micro-batches per pipeline per iteration `m = B / (d·b)`.
    pub fn micro_batches(&self) -> u64 {
        self.global_batch / (self.dp() * self.micro_batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama405(gpus: u32) -> JobSpec {
        toml::from_str(&format!(
            r#"
name = "405b"
model = "llama3-405b"
gpu = "h100"
gpus = {gpus}
seq_len = 8192
global_batch = 2048
[parallel]
tp = 8
pp = 16
sharding = "fsdp-no-reshard"
schedule = {{ interleaved = 4 }}
"#
        ))
        .unwrap()
    }

    #[test]
    fn the_llama3_405b_job_reads_and_checks() {
        let j = llama405(8192).check(16_384).unwrap();
        assert_eq!(j.dp(), 64);
        assert_eq!(j.micro_batches(), 32);
        assert_eq!(j.parallel.schedule, Schedule::Interleaved(4));
        assert_eq!(j.parallel.sharding, Sharding::FsdpNoReshard);
    }

    #[test]
    fn every_bad_job_names_its_field() {
        let e = |s: JobSpec, n: u32| s.check(n).unwrap_err().to_string();
        let mut s = llama405(8192);
        s.model = Some("llama4-2t".into());
        assert!(e(s, 8192).starts_with("job 405b: model: unknown model \"llama4-2t\"; presets: llama3-8b"));
        let mut s = llama405(8192);
        s.gpu = "h300".into();
        assert!(e(s, 8192).contains("gpu: unknown GPU \"h300\""));
        assert_eq!(
            e(llama405(8192), 4096),
            "job 405b: gpus: 8192 GPUs, but the cluster has 4096"
        );
        let mut s = llama405(8200);
        s.gpus = 8200;
        assert!(e(s, 16_384).contains("parallel: tp × pp × cp = 128 does not divide the job's 8200 GPUs"));
        let mut s = llama405(8192);
        s.parallel.tp = 16;
        assert!(e(s, 16_384).contains("parallel.tp: 16 is wider than the h100's NVLink domain of 8"));
        let mut s = llama405(8192);
        s.global_batch = 2000;
        assert!(e(s, 16_384).contains("global_batch: 2000 sequences do not split into dp = 64"));
        let mut s = llama405(8192);
        s.parallel.ep = 2;
        assert!(e(s, 16_384).contains("parallel.ep: 2 for a dense model"));
        let mut s = llama405(8192);
        s.global_batch = 64 * 8;
        assert!(e(s, 16_384).contains("parallel.schedule: the interleaved schedule needs the 8 micro-batches"));
        // a TOML field that does not exist is refused by name
        let bad = toml::from_str::<JobSpec>(
            "name = \"x\"\ngpu = \"h100\"\ngpus = 8\nseq_len = 1\nglobal_batch = 8\ntensor = 2\n[parallel]\n",
        );
        assert!(bad.unwrap_err().to_string().contains("unknown field `tensor`"));
    }
}
