//! What the advisor reads of a comparison's results.

use crate::advisor::Evidence;
use crate::results::CompareResults;

/// The advisor's view of a comparison's results: one [`Evidence`] per variant.
pub fn evidence(r: &CompareResults) -> Vec<Evidence> {
    let spread = |id: &str, figure: &str| {
        r.spread
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.figures.iter().find(|f| f.figure == figure))
    };
    r.variants
        .iter()
        .map(|v| {
            let bw = spread(&v.id, crate::results::RING_BUSBW);
            // the SHARP all-reduce decides only where the scenario's switches have SHARP
            let sharp = r.spec.cluster.sharp && v.kind == crate::advisor::FabricKind::Infiniband;
            let sharp_bw = spread(&v.id, crate::results::SHARP_BUSBW).filter(|_| sharp);
            let p99 = spread(&v.id, crate::results::PROBE_P99);
            Evidence {
                busbw_range: bw.map(|s| (s.min, s.max)),
                p99_range: p99.map(|s| (s.min, s.max)),
                id: v.id.clone(),
                label: v.label.clone(),
                kind: Some(v.kind),
                role: v.role,
                user_config: v.user_config,
                refused: v.refused.clone(),
                busbw_gbs: bw.map(|s| s.median).or(v.large_ring_busbw()),
                busbw_bound_gbs: v.busbw_bound_gbs,
                sharp_busbw_gbs: sharp_bw
                    .map(|s| s.median)
                    .or(v.large_busbw(crate::collective::Collective::AllReduceSharp))
                    .filter(|_| sharp),
                sharp_busbw_range: sharp_bw.map(|s| (s.min, s.max)),
                p50_us: v.latency.as_ref().map(|l| l.p50_us),
                p99_us: p99.map(|s| s.median).or(v.latency.as_ref().map(|l| l.p99_us)),
                p999_us: v.latency.as_ref().map(|l| l.p999_us),
                jitter_us: v.latency.as_ref().map(|l| l.jitter_us),
                delivered: v.counters.packets_delivered,
                drops: v.counters.drops,
                retransmissions: v.counters.retransmissions,
                pause_time_us: v.counters.pause_time_us,
                ecn_marks: v.counters.ecn_marks,
                cnps: v.counters.cnps,
                deadlocks: v.counters.deadlocks,
                storms: v.counters.storms,
                config_errors: v.findings.iter().filter(|f| f.starts_with("error")).count() as u64,
                tcp: v.tcp.as_ref().map(|t| crate::advisor::TcpEvidence {
                    load: t.load,
                    quiet_busbw_gbs: t.quiet_busbw_gbs,
                    quiet_p99_us: t.quiet_p99_us,
                    drops: t.drops,
                    retransmissions: t.retransmissions,
                }),
            }
        })
        .collect()
}
