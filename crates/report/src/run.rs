//! `rdmalab sim hpcc` and `rdmalab scenario`: their lines of output.

use std::fmt::Write as _;

/// An ns-3 HPCC experiment's run in one line, then the files it wrote.
pub fn hpcc_text(r: &ns3::run::HpccReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} of {} flows finished; {} hops, {} events; {:.1} µs simulated in {:.2} s ({:.1} µs/s, {} thread{}); {} pause transitions; drops {:?}; {}",
        r.finished,
        r.flows,
        r.hops,
        r.events,
        r.simulated_us,
        r.wall_s,
        r.simulated_us / r.wall_s.max(1e-9),
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        r.pause_events,
        r.dropped,
        r.status
    );
    for p in &r.wrote {
        let _ = writeln!(o, "wrote {p}");
    }
    o
}

/// `scenario explain`: every field, its type and meaning, in aligned columns.
pub fn scenario_fields(fields: &[(&str, &str, &str)]) -> String {
    let w = fields.iter().map(|(f, _, _)| f.len()).max().unwrap_or(0);
    let t = fields.iter().map(|(_, t, _)| t.chars().count()).max().unwrap_or(0);
    let mut o = String::new();
    for (field, ty, what) in fields {
        let pad = t - ty.chars().count();
        let _ = writeln!(o, "{field:<w$}  {ty}{:pad$}  {what}", "");
    }
    o
}

/// A titled list of scenario fields.
pub fn scenario_fields_titled(title: &str, fields: &[(&str, &str, &str)]) -> String {
    format!("{title}\n{}", scenario_fields(fields))
}

/// `scenario check` on a packet run: the file is good, and what it runs.
pub fn packet_run_ok(file: &std::path::Path, s: &sim::scenario::Scenario) -> String {
    let fabric = match &s.fabric {
        sim::scenario::FabricSpec::FatTree3 { radix, rate, .. } => format!("fat-tree3 radix {radix} {rate}"),
        sim::scenario::FabricSpec::LeafSpine { radix, rate, .. } => format!("leaf-spine radix {radix} {rate}"),
        sim::scenario::FabricSpec::File { path } => format!("file {}", path.display()),
    };
    let engines: Vec<&str> = s.routing.engines.iter().map(|e| e.name()).collect();
    let kind = match &s.workload {
        sim::scenario::WorkloadSpec::Htsim { .. } => "htsim",
        sim::scenario::WorkloadSpec::Permutation { .. } => "permutation",
        sim::scenario::WorkloadSpec::AllToAll { .. } => "all-to-all",
        sim::scenario::WorkloadSpec::Incast { .. } => "incast",
        sim::scenario::WorkloadSpec::WriteBw { .. } => "write-bw",
        sim::scenario::WorkloadSpec::SendLat { .. } => "send-lat",
        sim::scenario::WorkloadSpec::ReadLat { .. } => "read-lat",
    };
    format!(
        "{}: ok (packet run: {fabric}, routing {}, workload {kind})\n",
        file.display(),
        engines.join(", ")
    )
}

/// `scenario check`: the file is good, and what it holds.
pub fn scenario_ok(file: &std::path::Path, s: &lab::Scenario) -> String {
    format!(
        "{}: ok ({} variants, {} collectives × {} sizes)\n",
        file.display(),
        s.variants.len(),
        s.workload.collectives.len(),
        s.workload.sizes.len()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_aligned_in_columns() {
        let t = super::scenario_fields(&[("a", "int", "x"), ("long.name", "string, default 1", "y")]);
        assert_eq!(t, "a          int                x\nlong.name  string, default 1  y\n");
    }
}
