//! The comparison: one scenario, every fabric variant, the same workload and seed.

use crate::advisor::Evidence;
use crate::results::CompareResults;

/// The advisor's view of a comparison's results: one [`Evidence`] per variant.
pub fn evidence(r: &CompareResults) -> Vec<Evidence> {
    r.variants
        .iter()
        .map(|v| Evidence {
            id: v.id.clone(),
            label: v.label.clone(),
            kind: Some(v.kind),
            refused: v.refused.clone(),
            busbw_gbs: v.large_ring_busbw(),
            busbw_bound_gbs: r.busbw_bound_gbs,
            p50_us: v.latency.as_ref().map(|l| l.p50_us),
            p99_us: v.latency.as_ref().map(|l| l.p99_us),
            p999_us: v.latency.as_ref().map(|l| l.p999_us),
            jitter_us: v.latency.as_ref().map(|l| l.jitter_us),
            drops: v.counters.drops,
            retransmissions: v.counters.retransmissions,
            pause_time_us: v.counters.pause_time_us,
            ecn_marks: v.counters.ecn_marks,
            cnps: v.counters.cnps,
            deadlocks: v.counters.deadlocks,
            storms: v.counters.storms,
            config_errors: v.findings.iter().filter(|f| f.starts_with("error")).count() as u64,
        })
        .collect()
}
