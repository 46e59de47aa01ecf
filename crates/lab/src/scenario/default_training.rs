//! The built-in default of `rdmalab compare`: two scalable units and two
//! training jobs.

use super::*;

impl Scenario {
    /// The built-in default of `rdmalab compare`: two DGX SuperPOD-style
    /// scalable units (64 servers × 8 GPUs, 512 GPUs, radix-64 switches at
    /// 400G, non-blocking), every variant of [`Scenario::default_rail`], and
    /// two training jobs that take their servers after churn (a dense
    /// Llama 3 70B and a Mixtral 8x7B with expert parallelism, 192 GPUs each),
    /// placed in turn from the free servers the churn leaves. The MoE job's
    /// expert all-to-all runs between rails and its rings cross the units
    /// when its servers do, so its traffic crosses the spines and meets in
    /// ECMP; the dense job's rings stay on their rails' leaves while its
    /// servers share a unit (the churn decides). Four seeds: placement, hot experts and the
    /// Ethernet switches' hash differ with each. The ring all-reduce at 1 MiB
    /// (latency regime) and the incast keep the benchmark tables (the jobs'
    /// expert all-to-all stands for the collective one); the flow engine runs
    /// what it models past 256 NICs (`engine = "auto"`).
    pub fn default_training() -> Scenario {
        let mut s = Scenario::default_rail();
        s.name = "superpod-2su-512-two-jobs".into();
        s.repeats = 4;
        s.engine = Engine::Auto;
        s.cluster.servers = 64;
        s.cluster.scalable_units = Some(2);
        s.workload.collectives = vec![Collective::AllReduceRing];
        s.workload.sizes = vec![1 << 20];
        // The misconfiguration: the rail-0 leaves of both units lost the
        // RDMA DSCP-to-lossless-class map (one leaf template pushed without
        // its QoS section), so the RDMA traffic they take in is lossy and
        // they send no pause upstream. A leaf is where a skewed all-to-all's
        // incast queues (the hot receiver's downlink); a misconfigured spine
        // sees ECMP's share of it and hardly queues (75 drops and no longer
        // iteration at seed 1, docs/TRAINING.md).
        for v in &mut s.variants {
            if let VariantFabric::Rocev2 { lossy_hops, .. } = &mut v.fabric
                && !lossy_hops.is_empty()
            {
                *lossy_hops = vec!["su0-rail0".into(), "su1-rail0".into()];
                v.label = "RoCEv2 misconfigured (RDMA DSCP lossy on the rail-0 leaves)".into();
            }
        }
        let job = |text: &str| workload::job::JobSpec::from_toml(text).unwrap_or_else(|e| panic!("built-in job: {e}"));
        s.training = Some(Training {
            placement: crate::train::Placement::Fragmented,
            qps_per_connection: 1,
            more_qps: 4,
            schedule: crate::train::joint::Schedule::Pairing,
            packet_cap_bytes: 512 << 10,
            packet_full_bytes: 16 << 20,
            efficiency: None,
            jobs: vec![
                // Llama 3 70B with TP 8 inside the server, PP 4 and DP 6 over
                // the fabric, Llama 3's rank order (training-workloads.md §6.6)
                job(
                    "name = \"llama3-70b\"\nmodel = \"llama3-70b\"\ngpu = \"h100\"\ngpus = 192\nseq_len = 8192\nglobal_batch = 96\n\
                     [parallel]\ntp = 8\npp = 4\nsharding = \"zero-1\"\norder = \"llama3\"\n",
                ),
                // Mixtral 8x7B with EP 8 over four servers' GPUs (TP 2): its
                // all-to-all leaves the rails for the spines. Router skew 1.25:
                // Switch Transformer's training capacity factor, the most an
                // expert takes over the mean before tokens drop (Fedus et al.,
                // JMLR 2022, §2.1 and Table 1)
                job(
                    "name = \"mixtral-8x7b\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = 192\nseq_len = 4096\nglobal_batch = 192\nrouter_skew = 1.25\n\
                     [parallel]\ntp = 2\npp = 1\nep = 8\nsharding = \"zero-1\"\norder = \"megatron\"\n",
                ),
            ],
        });
        s
    }
}
