//! `rdmalab train`: one training iteration of a job on a cluster, each network
//! operation priced on the fabric beside the contention-free network.

use lab::train::TrainRun;

/// Seconds as the table shows them: µs, ms or s.
fn secs(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// Bytes with a binary unit.
fn bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The iteration as a terminal report.
pub fn text(r: &TrainRun) -> String {
    let mut s = String::new();
    s += &format!("rdmalab train: {} ({}, {} GPUs)\n", r.job, r.model, r.gpus);
    s += &format!("parallelism: {}\n", r.parallel);
    s += &format!(
        "cluster: {} ({} servers, {} switches), routed by {} in {:.2} s\n",
        r.cluster, r.servers, r.switches, r.routed_by, r.route_s
    );
    s += &format!("placement: {}\n", r.placement);
    if !r.beside.is_empty() {
        s += &format!("sharing: {}\n", r.beside);
    }
    if r.efficiency.is_nan() {
        s += &format!("compute: {}\n\n", r.efficiency_source);
    } else {
        s += &format!(
            "compute: kernel efficiency {:.3} ({})\n\n",
            r.efficiency, r.efficiency_source
        );
    }
    s += &format!(
        "{:<22} {:<14} {:<6} {:>6} {:>10} {:>6} {:>9} {:>12} {:>12} {:>7}\n",
        "operation", "kind", "group", "ranks", "bytes", "count", "overlap", "ideal", "fabric", "ratio"
    );
    for o in &r.ops {
        let ratio = if o.ideal_s > 0.0 { o.fabric_s / o.ideal_s } else { 1.0 };
        s += &format!(
            "{:<22} {:<14} {:<6} {:>6} {:>10} {:>6} {:>9} {:>12} {:>12} {:>7}\n",
            o.op.label,
            format!("{:?}", o.op.kind),
            format!("{:?}", o.op.group),
            o.op.ranks,
            bytes(o.op.bytes),
            o.op.count,
            format!("{:?}", o.op.overlap),
            secs(o.ideal_s),
            if o.on_fabric {
                secs(o.fabric_s)
            } else {
                "(nvlink/ideal)".into()
            },
            format!("{ratio:.3}")
        );
    }
    s += "\n";
    s += &format!(
        "{:<30} {:>12} {:>12} {:>12} {:>12} {:>14}\n",
        "iteration", "compute", "bubble", "exposed comm", "total", "TFLOP/s per GPU"
    );
    for (name, t) in [("contention-free network", &r.ideal), ("on the fabric", &r.fabric)] {
        s += &format!(
            "{:<30} {:>12} {:>12} {:>12} {:>12} {:>14.1}\n",
            name,
            secs(t.compute_s),
            secs(t.bubble_s),
            secs(t.exposed_comm_s),
            secs(t.total_s),
            t.tflops_per_gpu
        )
        .replace("NaN", "-");
    }
    if !r.bytes_per_rank.is_empty() {
        s += "\nbytes one rank sends per iteration, by group:\n";
        for b in &r.bytes_per_rank {
            s += &format!(
                "  {:<10} network {:>16} B   NVLink {:>16} B\n",
                format!("{:?}", b.group),
                b.network,
                b.nvlink
            );
        }
    }
    if let Some(j) = &r.joint {
        s += &format!(
            "\njoint schedule (every job's timeline on one clock, {} iterations of this job, the first left out): mean {}, slowest {}; alone {} ({:+.2}%); each operation beside the others' busiest one above: {}\n",
            j.iterations,
            secs(j.mean_s),
            secs(j.max_s),
            secs(j.alone_s),
            (j.mean_s / j.alone_s - 1.0) * 100.0,
            secs(r.fabric.total_s)
        );
    }
    s += &format!(
        "\nthe fabric's iteration is {:+.2}% against the contention-free network\n",
        (r.fabric.total_s / r.ideal.total_s - 1.0) * 100.0
    );
    s += &format!(
        "engine: {} ({} operations run on the fabric, {} messages, {} events, {:.2} s); whole run {:.2} s\n",
        r.engine, r.price.ops_run, r.price.messages, r.price.events, r.price.wall_s, r.build_s
    );
    s
}
