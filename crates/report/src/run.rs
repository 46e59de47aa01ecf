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

/// The warnings of an HPCC experiment's run, one `rdmalab: warning:` line each,
/// for stderr beside [`hpcc_text`] (the JSON report carries them in `warnings`).
pub fn hpcc_warnings(r: &ns3::run::HpccReport) -> String {
    r.warnings.iter().map(|w| format!("rdmalab: warning: {w}\n")).collect()
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
        "{}: ok ({} variants, {} collectives × {} sizes{})\n",
        file.display(),
        s.variants.len(),
        s.workload.collectives.len(),
        s.workload.sizes.len(),
        s.training
            .as_ref()
            .map_or(String::new(), |t| format!(", {} training jobs", t.jobs.len()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpcc() -> ns3::run::HpccReport {
        ns3::run::HpccReport {
            flows: 4,
            finished: 3,
            hops: 12_000,
            events: 30_000,
            simulated_us: 100.0,
            wall_s: 0.5,
            threads: 2,
            dropped: vec![("buffer".into(), 7)],
            pause_events: 5,
            status: "reached the stop time".into(),
            warnings: vec!["unknown key FOO".into(), "3 flow lines past the count".into()],
            wrote: vec!["out/fct.txt".into(), "out/pfc.txt".into()],
        }
    }

    #[test]
    fn hpcc_run_is_one_line_then_the_files() {
        assert_eq!(
            hpcc_text(&hpcc()),
            "3 of 4 flows finished; 12000 hops, 30000 events; 100.0 µs simulated in 0.50 s (200.0 µs/s, 2 threads); \
             5 pause transitions; drops [(\"buffer\", 7)]; reached the stop time\nwrote out/fct.txt\nwrote out/pfc.txt\n"
        );
        let mut one = hpcc();
        one.threads = 1;
        assert!(hpcc_text(&one).contains("(200.0 µs/s, 1 thread);"));
    }

    #[test]
    fn hpcc_warnings_are_one_line_each() {
        assert_eq!(
            hpcc_warnings(&hpcc()),
            "rdmalab: warning: unknown key FOO\nrdmalab: warning: 3 flow lines past the count\n"
        );
        let mut none = hpcc();
        none.warnings.clear();
        assert_eq!(hpcc_warnings(&none), "");
    }

    #[test]
    fn scenario_check_says_what_the_file_holds() {
        let p = std::path::Path::new("s.toml");
        assert_eq!(
            scenario_ok(p, &lab::Scenario::default_rail()),
            "s.toml: ok (7 variants, 5 collectives × 4 sizes)\n"
        );
        let run = "[fabric]\ngenerator = \"fat-tree3\"\nradix = 4\nrate = \"4xHDR\"\n[workload]\nkind = \"all-to-all\"\nbytes = 4096\nend_us = 10\n";
        let s = lab::ScenarioFile::parse(run, p).unwrap().packet_run(p).unwrap();
        assert_eq!(
            packet_run_ok(p, &s),
            "s.toml: ok (packet run: fat-tree3 radix 4 4xHDR, routing minhop, workload all-to-all)\n"
        );
    }

    #[test]
    fn fields_are_aligned_in_columns() {
        let t = super::scenario_fields(&[("a", "int", "x"), ("long.name", "string, default 1", "y")]);
        assert_eq!(t, "a          int                x\nlong.name  string, default 1  y\n");
    }
}
