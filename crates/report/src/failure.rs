//! `rdmalab failure`: a fault during a collective, per variant.

use std::fmt::Write;

use lab::failure::{FailureReport, Fault};

/// The fault in words.
fn fault_words(r: &FailureReport) -> String {
    match &r.fault {
        Fault::LinkDown => format!("{} cut", r.link),
        Fault::SwitchDown { .. } => format!("{} down", r.link),
        Fault::Flap(p) => format!(
            "{} flapping: down {} times, every {} s, {} s each",
            r.link, p.flaps, p.period_s, p.down_s
        ),
        Fault::Degraded { gbps, ber, llr } => {
            let mut w = format!("{} degraded:", r.link);
            if let Some(g) = gbps {
                let _ = write!(w, " trained at {g} Gb/s");
            }
            if let Some(b) = ber {
                let _ = write!(
                    w,
                    " bit errors {b:e} after FEC (InfiniBand LLR {})",
                    if *llr { "on" } else { "off" }
                );
            }
            w
        }
        Fault::NicStorm { .. } => format!("{}'s receive pipeline stuck", r.link),
    }
}

/// The fault as a terminal report.
pub fn text(r: &FailureReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rdmalab failure: {} ({} GPUs): {} of {} B; at {:.0}% of the collective: {}",
        r.scenario,
        r.gpus,
        r.collective.name(),
        r.size,
        r.at * 100.0,
        fault_words(r)
    );
    for s in &r.sm {
        let _ = writeln!(
            o,
            "InfiniBand, {}: our SM's sweep {:.2} ms = {} SMPs × {:.2} µs (deterministic); measured here {:.2} ms wall on in-process agents ({} LFT blocks changed, subnet {})",
            s.change,
            s.model_s * 1e3,
            s.smps,
            lab::failure::recovery::SM_WALL_PER_SMP_S * 1e6,
            s.wall_s * 1e3,
            s.lft_blocks_sent,
            if s.subnet_up { "up" } else { "NOT up" }
        );
    }
    if !r.sm.is_empty() {
        let _ = writeln!(
            o,
            "(the SM's own work, no SMP wire time; bring-up {:.3} s wall; OpenSM 3.3.23 took 247 ms from trap to SUBNET UP for a link on a 648-CA fabric over ibsim, failures-isolation-sweeps.md §2.2)",
            r.sm_bring_up_wall_s
        );
    }
    let (eth_s, eth_how) = r.eth.recovery();
    let _ = writeln!(o, "Ethernet: {eth_how}: {eth_s:.3} s");
    let _ = writeln!(
        o,
        "NCCL gives up after {:.1} s (4.096 µs × 2^NCCL_IB_TIMEOUT × (NCCL_IB_RETRY_CNT + 1)); a restart then costs {:.0} s more (restart and half a checkpoint interval)\n",
        r.nccl_timeout_s, r.restart_loss_s
    );
    let w = r.variants.iter().map(|v| v.label.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(
        o,
        "{:<w$} {:>6} {:>11} {:>10} {:>12} {:>12} {:>14} {:>10} {:>9} {:>12}",
        "variant",
        "conns",
        "recovery s",
        "stall s",
        "healthy µs",
        "faulted µs",
        "with fault µs",
        "slowdown",
        "job",
        "GPU-hours"
    );
    let opt = |x: Option<f64>, p: usize| x.map_or_else(|| "–".to_string(), |v| format!("{v:.p$}"));
    for v in &r.variants {
        let _ = writeln!(
            o,
            "{:<w$} {:>6} {:>11} {:>10.3} {:>12.1} {:>12} {:>14.1} {:>9.1}× {:>9} {:>12.3}",
            v.label,
            v.connections_through_link,
            opt(v.recovery_s, 3),
            v.stall_s,
            v.healthy_us,
            opt(v.degraded_us, 1),
            v.with_failure_us,
            v.slowdown,
            if v.restart { "restarts" } else { "waits" },
            v.gpu_hours_lost
        );
    }
    for v in &r.variants {
        let _ = writeln!(o, "{}: {}; {}", v.label, v.link, v.recovery);
        if let Some(wall) = v.recovery_wall_s {
            let _ = writeln!(o, "  measured here: {:.2} ms wall", wall * 1e3);
        }
        for f in &v.flaps {
            let _ = writeln!(o, "  down at {:.1} s: stall {:.3} s ({})", f.at_s, f.stall_s, f.why);
        }
    }
    for (id, why) in &r.not_run {
        let _ = writeln!(o, "{id}: not run ({why})");
    }
    let _ = writeln!(
        o,
        "\nconns: the collective's connections the fault touched; recovery: fault to repaired or contained (– never, or nothing to repair); with fault: at·healthy + stall + (1 − at)·faulted (lock-step collectives stall whole; a flapping link adds each down's stall); a job that restarts loses NCCL's wait and the restart on every GPU"
    );
    o
}
