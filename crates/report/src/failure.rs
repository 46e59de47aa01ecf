//! `rdmalab failure`: a spine link cut during a collective, per variant.

use std::fmt::Write;

use lab::failure::FailureReport;

/// The cut as a terminal report.
pub fn text(r: &FailureReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rdmalab failure: {} ({} GPUs): {} of {} B, a spine link cut at {:.0}% of the collective",
        r.scenario,
        r.gpus,
        r.collective.name(),
        r.size,
        r.at * 100.0
    );
    let _ = writeln!(
        o,
        "InfiniBand: our SM's trap-to-new-tables time at this size, measured here on in-process agents (the SM's own work, no SMP wire time): {:.3} s ({} SMPs, {} LFT blocks changed, subnet {}; bring-up {:.3} s); OpenSM 3.3.23 took 247 ms for the same step on a 648-CA fabric over ibsim (failures-isolation-sweeps.md §2.2)",
        r.sm.seconds,
        r.sm.smps,
        r.sm.lft_blocks_sent,
        if r.sm.subnet_up { "up" } else { "NOT up" },
        r.sm.bring_up_seconds
    );
    let (eth_s, eth_how) = r.eth.recovery();
    let _ = writeln!(o, "Ethernet: {eth_how}: {eth_s:.3} s");
    let _ = writeln!(
        o,
        "NCCL gives up after {:.1} s (4.096 µs × 2^NCCL_IB_TIMEOUT × (NCCL_IB_RETRY_CNT + 1))\n",
        r.nccl_timeout_s
    );
    let w = r.variants.iter().map(|v| v.label.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(
        o,
        "{:<w$} {:>8} {:>10} {:>12} {:>12} {:>14} {:>9} {:>9} {:>12}",
        "variant", "conns", "stall s", "healthy µs", "degraded µs", "with cut µs", "slowdown", "NCCL", "GPU-hours"
    );
    for v in &r.variants {
        let _ = writeln!(
            o,
            "{:<w$} {:>8} {:>10.3} {:>12.1} {:>12.1} {:>14.1} {:>8.1}× {:>9} {:>12.3}",
            v.label,
            v.connections_through_link,
            v.stall_s,
            v.healthy_us,
            v.degraded_us,
            v.with_failure_us,
            v.slowdown,
            if v.nccl_timed_out { "times out" } else { "waits" },
            v.gpu_hours_lost
        );
    }
    for v in &r.variants {
        let _ = writeln!(o, "{}: cut {}; {}", v.label, v.link, v.recovery);
    }
    for (id, why) in &r.not_run {
        let _ = writeln!(o, "{id}: not run ({why})");
    }
    let _ = writeln!(
        o,
        "\nconns: the collective's connections whose data crossed the link; with cut: at·healthy + stall + (1 − at)·degraded (lock-step collectives stall whole)"
    );
    o
}
