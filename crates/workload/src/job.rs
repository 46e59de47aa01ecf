//! A training job: a model × a parallelism × a GPU type × a batch, as a scenario
//! writes it ([`JobSpec`], TOML through serde), and checked field by field into a
//! [`Job`].
//!
//! ```toml
//! name = "405b"
//! model = "llama3-405b"        # a preset, or a table of dimensions
//! gpu = "h100"                 # a preset, or a table
//! gpus = 8192
//! seq_len = 8192
//! global_batch = 2048          # sequences per iteration
//! micro_batch = 1
//! [parallel]
//! tp = 8
//! pp = 16
//! schedule = { interleaved = 4 }
//! sharding = "fsdp-no-reshard"
//! ```

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::gpu::Gpu;
use crate::model::Model;
use crate::parallel::{Parallelism, PipelineSchedule};

/// A model by preset name or by its dimensions.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelSpec {
    /// A preset name ([`crate::model::PRESETS`]), resolved by [`JobSpec::check`].
    Preset(String),
    /// A model given by its dimensions.
    Custom(Model),
}

/// A GPU by preset name or by its figures.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuSpec {
    /// A preset name ([`crate::gpu::PRESETS`]), resolved by [`JobSpec::check`].
    Preset(String),
    /// A GPU given by its figures.
    Custom(Gpu),
}

/// Deserialize "a string names a preset, a table gives the thing itself" without
/// serde's untagged enums, whose errors lose the table's own field errors.
macro_rules! preset_or_table {
    ($spec:ident, $inner:ty, $what:literal) => {
        impl Serialize for $spec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $spec::Preset(n) => s.serialize_str(n),
                    $spec::Custom(m) => m.serialize(s),
                }
            }
        }

        impl<'de> Deserialize<'de> for $spec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $spec;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "a {} preset name or a table", $what)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$spec, E> {
                        Ok($spec::Preset(v.to_owned()))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$spec, A::Error> {
                        <$inner>::deserialize(de::value::MapAccessDeserializer::new(map)).map($spec::Custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

preset_or_table!(ModelSpec, Model, "model");
preset_or_table!(GpuSpec, Gpu, "GPU");

fn one() -> u64 {
    1
}

fn no_skew() -> f64 {
    1.0
}

fn is_no_skew(v: &f64) -> bool {
    *v == 1.0
}

/// A job as a scenario writes it. Scalars come first and tables last so that the
/// TOML form serializes in the order it reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// A name for reports.
    pub name: String,
    /// GPUs the job runs on.
    pub gpus: u32,
    /// Sequence length, tokens.
    pub seq_len: u64,
    /// Global batch, sequences per iteration.
    pub global_batch: u64,
    /// Micro-batch, sequences.
    #[serde(default = "one")]
    pub micro_batch: u64,
    /// Router skew of a MoE model: tokens sent by the busiest rank of an
    /// all-to-all over the mean (1 = uniform routing, as the dropless benchmark
    /// rows of training-workloads.md §6.6 force). Scales the all-to-all bytes.
    #[serde(default = "no_skew", skip_serializing_if = "is_no_skew")]
    pub router_skew: f64,
    /// The model.
    pub model: ModelSpec,
    /// The GPU type.
    pub gpu: GpuSpec,
    /// Parallelism.
    #[serde(default)]
    pub parallel: Parallelism,
}

/// A checked job: presets resolved, every size consistent. Made by
/// [`JobSpec::check`]; the fields are public for reading, and the arithmetic in
/// [`crate::iteration`] relies on the invariants `check` establishes.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The job's name.
    pub name: String,
    /// The model.
    pub model: Model,
    /// The GPU.
    pub gpu: Gpu,
    /// GPUs the job runs on.
    pub gpus: u32,
    /// Parallelism, with `dp` filled in.
    pub parallel: Parallelism,
    /// Sequence length, tokens.
    pub seq_len: u64,
    /// Global batch, sequences.
    pub global_batch: u64,
    /// Micro-batch, sequences.
    pub micro_batch: u64,
    /// Router skew (≥ 1).
    pub router_skew: f64,
}

/// Why a job cannot run as written. Every message starts with the job's name and
/// the field as the scenario spells it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JobError {
    /// A model preset that does not exist.
    #[error("job {job}: model: unknown preset {name:?} (presets: {presets})")]
    UnknownModel {
        /// The job's name.
        job: String,
        /// The name given.
        name: String,
        /// The presets there are.
        presets: String,
    },
    /// A GPU preset that does not exist.
    #[error("job {job}: gpu: unknown preset {name:?} (presets: {presets})")]
    UnknownGpu {
        /// The job's name.
        job: String,
        /// The name given.
        name: String,
        /// The presets there are.
        presets: String,
    },
    /// A model given by hand whose dimensions do not fit together.
    #[error("job {job}: model.{source}")]
    BadModel {
        /// The job's name.
        job: String,
        /// The dimension and what is wrong with it.
        source: crate::model::ModelError,
    },
    /// A size that must be at least 1.
    #[error("job {job}: {field}: must be at least 1")]
    Zero {
        /// The job's name.
        job: String,
        /// The field.
        field: &'static str,
    },
    /// A GPU figure that must be a positive number.
    #[error("job {job}: {field}: must be a positive number")]
    NotPositive {
        /// The job's name.
        job: String,
        /// The field.
        field: &'static str,
    },
    /// More GPUs than the cluster has.
    #[error("job {job}: gpus: {gpus} GPUs, but the cluster has {cluster}")]
    LargerThanCluster {
        /// The job's name.
        job: String,
        /// GPUs asked for.
        gpus: u32,
        /// GPUs in the cluster.
        cluster: u32,
    },
    /// `tp·pp·dp·cp` is not the job's GPU count (with `dp` given).
    #[error(
        "job {job}: parallel.dp: tp × pp × dp × cp = {tp} × {pp} × {dp} × {cp} = {product}, but the job has {gpus} GPUs"
    )]
    GpuProduct {
        /// The job's name.
        job: String,
        /// Tensor parallel.
        tp: u32,
        /// Pipeline parallel.
        pp: u32,
        /// Data parallel.
        dp: u32,
        /// Context parallel.
        cp: u32,
        /// Their product.
        product: u64,
        /// The job's GPUs.
        gpus: u32,
    },
    /// `tp·pp·cp` does not divide the job's GPUs (with `dp` derived).
    #[error("job {job}: parallel: tp × pp × cp = {product} does not divide the job's {gpus} GPUs")]
    ModelParallelDoesNotDivide {
        /// The job's name.
        job: String,
        /// `tp·pp·cp`.
        product: u64,
        /// The job's GPUs.
        gpus: u32,
    },
    /// Tensor parallelism across NVLink domains.
    #[error("job {job}: parallel.tp: {tp} is wider than the {gpu}'s NVLink domain of {domain}")]
    TpWiderThanNvlink {
        /// The job's name.
        job: String,
        /// Tensor parallel.
        tp: u32,
        /// The GPU.
        gpu: String,
        /// GPUs per NVLink domain.
        domain: u32,
    },
    /// Tensor parallelism that does not split the heads.
    #[error("job {job}: parallel.tp: {tp} does not divide the model's {count} {what}")]
    TpHeads {
        /// The job's name.
        job: String,
        /// Tensor parallel.
        tp: u32,
        /// "query heads" or "KV heads".
        what: &'static str,
        /// How many the model has.
        count: u32,
    },
    /// More pipeline chunks than layers (plus an embedding-only and a head-only chunk).
    #[error(
        "job {job}: parallel.pp: {chunks} pipeline chunks (pp {pp} × {virtual_stages} virtual stages) for {layers} layers"
    )]
    PpLayers {
        /// The job's name.
        job: String,
        /// Pipeline parallel.
        pp: u32,
        /// Virtual stages per rank.
        virtual_stages: u32,
        /// `pp · v`.
        chunks: u64,
        /// The model's layers.
        layers: u32,
    },
    /// Expert parallelism for a dense model.
    #[error("job {job}: parallel.ep: {ep} for a dense model (no experts)")]
    EpDense {
        /// The job's name.
        job: String,
        /// Expert parallel.
        ep: u32,
    },
    /// Expert parallelism that does not divide the data × context ranks.
    #[error("job {job}: parallel.ep: {ep} does not divide dp × cp = {dp_cp}")]
    EpGroup {
        /// The job's name.
        job: String,
        /// Expert parallel.
        ep: u32,
        /// `dp · cp`.
        dp_cp: u64,
    },
    /// Expert parallelism that does not divide the experts.
    #[error("job {job}: parallel.ep: {ep} does not divide the model's {experts} experts")]
    EpExperts {
        /// The job's name.
        job: String,
        /// Expert parallel.
        ep: u32,
        /// Routed experts.
        experts: u32,
    },
    /// A sequence that does not split over the context-parallel ranks.
    #[error("job {job}: seq_len: {seq_len} tokens do not split into 2 × cp = {chunks} chunks")]
    SeqCp {
        /// The job's name.
        job: String,
        /// Sequence length.
        seq_len: u64,
        /// `2·cp`: causal load balancing gives each rank two chunks (Megatron's
        /// context-parallel guide; Llama 3 §3.3.2).
        chunks: u64,
    },
    /// A global batch that does not split over the replicas and micro-batches.
    #[error(
        "job {job}: global_batch: {global_batch} sequences do not split into dp = {dp} replicas × micro_batch {micro_batch}"
    )]
    GlobalBatch {
        /// The job's name.
        job: String,
        /// Global batch.
        global_batch: u64,
        /// Data-parallel replicas.
        dp: u32,
        /// Micro-batch.
        micro_batch: u64,
    },
    /// An interleaved schedule whose micro-batches are not a multiple of `pp`.
    #[error(
        "job {job}: parallel.schedule: the interleaved schedule needs the {micro_batches} micro-batches to be a multiple of pp = {pp}"
    )]
    InterleavedMicroBatches {
        /// The job's name.
        job: String,
        /// Micro-batches per pipeline.
        micro_batches: u64,
        /// Pipeline parallel.
        pp: u32,
    },
    /// A batch whose byte counts do not fit 64 bits.
    #[error("job {job}: global_batch: {global_batch} sequences of {seq_len} tokens give byte counts beyond 64 bits")]
    TooLarge {
        /// The job's name.
        job: String,
        /// Global batch.
        global_batch: u64,
        /// Sequence length.
        seq_len: u64,
    },
    /// A router skew below 1 or not finite.
    #[error("job {job}: router_skew: {skew} is not a factor of at least 1 (busiest rank over the mean)")]
    RouterSkew {
        /// The job's name.
        job: String,
        /// The skew given.
        skew: f64,
    },
}

impl JobError {
    /// The field the error is about, as a scenario spells it.
    pub fn field(&self) -> String {
        match self {
            JobError::UnknownModel { .. } => "model".into(),
            JobError::UnknownGpu { .. } => "gpu".into(),
            JobError::BadModel { source, .. } => format!("model.{}", source.field),
            JobError::Zero { field, .. } | JobError::NotPositive { field, .. } => (*field).into(),
            JobError::LargerThanCluster { .. } => "gpus".into(),
            JobError::GpuProduct { .. } => "parallel.dp".into(),
            JobError::ModelParallelDoesNotDivide { .. } => "parallel".into(),
            JobError::TpWiderThanNvlink { .. } | JobError::TpHeads { .. } => "parallel.tp".into(),
            JobError::PpLayers { .. } => "parallel.pp".into(),
            JobError::EpDense { .. } | JobError::EpGroup { .. } | JobError::EpExperts { .. } => "parallel.ep".into(),
            JobError::SeqCp { .. } => "seq_len".into(),
            JobError::GlobalBatch { .. } | JobError::TooLarge { .. } => "global_batch".into(),
            JobError::InterleavedMicroBatches { .. } => "parallel.schedule".into(),
            JobError::RouterSkew { .. } => "router_skew".into(),
        }
    }
}

impl JobSpec {
    /// Read a job from TOML. Unknown fields are refused by name; preset names are
    /// checked by [`JobSpec::check`].
    pub fn from_toml(text: &str) -> Result<JobSpec, toml::de::Error> {
        toml::from_str(text)
    }

    /// This job as TOML.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(self)
    }

    /// Resolve the presets and check the job against a cluster of `cluster_gpus`.
    pub fn check(&self, cluster_gpus: u32) -> Result<Job, JobError> {
        let job = || self.name.clone();
        let zero = |field| JobError::Zero { job: job(), field };
        let model = match &self.model {
            ModelSpec::Preset(n) => Model::preset(n).ok_or_else(|| JobError::UnknownModel {
                job: job(),
                name: n.clone(),
                presets: crate::model::PRESETS.join(", "),
            })?,
            ModelSpec::Custom(m) => {
                m.check().map_err(|source| JobError::BadModel { job: job(), source })?;
                m.clone()
            }
        };
        let gpu = match &self.gpu {
            GpuSpec::Preset(n) => Gpu::preset(n).ok_or_else(|| JobError::UnknownGpu {
                job: job(),
                name: n.clone(),
                presets: crate::gpu::PRESETS.join(", "),
            })?,
            GpuSpec::Custom(g) => {
                for (field, v) in [
                    ("gpu.bf16_tflops", g.bf16_tflops),
                    ("gpu.nvlink_gbs", g.nvlink_gbs),
                    ("gpu.nvlink_domain", f64::from(g.nvlink_domain)),
                ] {
                    if !(v.is_finite() && v > 0.0) {
                        return Err(JobError::NotPositive { job: job(), field });
                    }
                }
                g.clone()
            }
        };
        let p = &self.parallel;
        for (field, v) in [
            ("gpus", self.gpus),
            ("parallel.tp", p.tp),
            ("parallel.pp", p.pp),
            ("parallel.cp", p.cp),
            ("parallel.ep", p.ep),
            ("parallel.dp", p.dp.unwrap_or(1)),
            ("parallel.schedule", p.schedule.virtual_stages()),
        ] {
            if v == 0 {
                return Err(zero(field));
            }
        }
        for (field, v) in [
            ("seq_len", self.seq_len),
            ("global_batch", self.global_batch),
            ("micro_batch", self.micro_batch),
        ] {
            if v == 0 {
                return Err(zero(field));
            }
        }
        if self.gpus > cluster_gpus {
            return Err(JobError::LargerThanCluster {
                job: job(),
                gpus: self.gpus,
                cluster: cluster_gpus,
            });
        }
        let mp = u64::from(p.tp)
            .saturating_mul(u64::from(p.pp))
            .saturating_mul(u64::from(p.cp));
        let dp = match p.dp {
            Some(dp) => {
                let product = mp.saturating_mul(u64::from(dp));
                if product != u64::from(self.gpus) {
                    return Err(JobError::GpuProduct {
                        job: job(),
                        tp: p.tp,
                        pp: p.pp,
                        dp,
                        cp: p.cp,
                        product,
                        gpus: self.gpus,
                    });
                }
                dp
            }
            None => {
                if !u64::from(self.gpus).is_multiple_of(mp) {
                    return Err(JobError::ModelParallelDoesNotDivide {
                        job: job(),
                        product: mp,
                        gpus: self.gpus,
                    });
                }
                // mp divides gpus, a u32, so the quotient fits
                (u64::from(self.gpus) / mp) as u32
            }
        };
        if p.tp > gpu.nvlink_domain {
            return Err(JobError::TpWiderThanNvlink {
                job: job(),
                tp: p.tp,
                gpu: gpu.name.clone(),
                domain: gpu.nvlink_domain,
            });
        }
        for (what, count) in [("query heads", model.heads), ("KV heads", model.kv_heads)] {
            // Megatron splits the query groups over TP; with fewer KV heads than TP
            // ranks each KV head would be replicated, which this model does not count.
            if !count.is_multiple_of(p.tp) {
                return Err(JobError::TpHeads {
                    job: job(),
                    tp: p.tp,
                    what,
                    count,
                });
            }
        }
        let v = p.schedule.virtual_stages();
        let chunks = u64::from(p.pp) * u64::from(v);
        // Every chunk holds a layer, except that the first may hold only the
        // embedding and the last only the output head (Llama 3 §3.3.2 takes a layer
        // off the first and the last stage).
        if chunks > u64::from(model.layers) + 2 {
            return Err(JobError::PpLayers {
                job: job(),
                pp: p.pp,
                virtual_stages: v,
                chunks,
                layers: model.layers,
            });
        }
        let dp_cp = u64::from(dp) * u64::from(p.cp);
        match &model.moe {
            Some(m) => {
                if !dp_cp.is_multiple_of(u64::from(p.ep)) {
                    return Err(JobError::EpGroup {
                        job: job(),
                        ep: p.ep,
                        dp_cp,
                    });
                }
                if !m.experts.is_multiple_of(p.ep) {
                    return Err(JobError::EpExperts {
                        job: job(),
                        ep: p.ep,
                        experts: m.experts,
                    });
                }
            }
            None if p.ep > 1 => return Err(JobError::EpDense { job: job(), ep: p.ep }),
            None => {}
        }
        if p.cp > 1 && !self.seq_len.is_multiple_of(2 * u64::from(p.cp)) {
            return Err(JobError::SeqCp {
                job: job(),
                seq_len: self.seq_len,
                chunks: 2 * u64::from(p.cp),
            });
        }
        // saturating; sizes this large are refused below as `TooLarge`
        let replicas = u64::from(dp).saturating_mul(self.micro_batch);
        if !self.global_batch.is_multiple_of(replicas) {
            return Err(JobError::GlobalBatch {
                job: job(),
                global_batch: self.global_batch,
                dp,
                micro_batch: self.micro_batch,
            });
        }
        let m = self.global_batch / replicas;
        if matches!(p.schedule, PipelineSchedule::Interleaved(_)) && !m.is_multiple_of(u64::from(p.pp)) {
            return Err(JobError::InterleavedMicroBatches {
                job: job(),
                micro_batches: m,
                pp: p.pp,
            });
        }
        // The iteration's byte counts and operation counts are u64 products of
        // these sizes; refuse sizes whose products do not fit.
        let per_token = u64::from(model.moe.as_ref().map_or(1, |m| m.top_k.max(1)))
            .saturating_mul(model.hidden)
            .max(u64::from(model.kv_heads).saturating_mul(model.head_qk().saturating_add(model.head_v())));
        let fits = [
            [self.global_batch, self.seq_len, per_token, 2 * crate::iteration::BF16],
            [self.global_batch, u64::from(model.layers), u64::from(v), 8],
        ]
        .iter()
        .all(|xs| xs.iter().try_fold(1u64, |p, &x| p.checked_mul(x)).is_some());
        if !fits {
            return Err(JobError::TooLarge {
                job: job(),
                global_batch: self.global_batch,
                seq_len: self.seq_len,
            });
        }
        if !(self.router_skew.is_finite() && self.router_skew >= 1.0) {
            return Err(JobError::RouterSkew {
                job: job(),
                skew: self.router_skew,
            });
        }
        Ok(Job {
            name: self.name.clone(),
            model,
            gpu,
            gpus: self.gpus,
            parallel: Parallelism {
                dp: Some(dp),
                ..p.clone()
            },
            seq_len: self.seq_len,
            global_batch: self.global_batch,
            micro_batch: self.micro_batch,
            router_skew: self.router_skew,
        })
    }
}

impl Job {
    /// Data-parallel replicas `d`.
    pub fn dp(&self) -> u32 {
        // `check` always fills it in
        self.parallel.dp.unwrap_or(1)
    }

    /// Micro-batches per pipeline per iteration `m = B / (d·b)`.
    pub fn micro_batches(&self) -> u64 {
        self.global_batch / (u64::from(self.dp()) * self.micro_batch)
    }

    /// Tokens per iteration `B·s`.
    pub fn tokens(&self) -> u64 {
        self.global_batch * self.seq_len
    }
}
