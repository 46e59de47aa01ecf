//! The scenario loader's tests: defaults, every field's refusal, imported fabrics.
use super::*;

#[test]
fn default_round_trips_through_toml() {
    let s = Scenario::default_rail();
    s.validate("builtin").unwrap();
    let text = s.to_toml();
    let back = Scenario::from_toml(&text, "x.toml").unwrap();
    assert_eq!(back, s);
    assert_eq!(s.cluster.servers * s.cluster.gpus_per_server, 128);
    assert_eq!(s.variants.len(), 7);
}

/// The 1-based line of `text` that holds `needle`.
fn text_line(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// The 1-based line of the table header above the line that holds `needle`.
fn table_line(text: &str, needle: &str) -> usize {
    let lines: Vec<&str> = text.lines().take(text_line(text, needle)).collect();
    lines.iter().rposition(|l| l.starts_with('[')).unwrap() + 1
}

#[test]
fn errors_name_the_file_and_the_field() {
    let s = Scenario::default_rail();
    let text = s.to_toml().replace("servers = 16", "servers = 16\nserverz = 3");
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    assert!(
        e.contains("bad.toml") && e.contains("serverz") && e.contains("line"),
        "{e}"
    );
    let text = s.to_toml().replace("nic_gbps = 400", "nic_gbps = 300");
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    assert!(e.contains("cluster.nic_gbps") && e.contains("300"), "{e}");
    let text = s.to_toml().replace("dcqcn = \"nvidia-cx\"", "dcqcn = \"nvidia\"");
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    // A variant's fabric is an internally tagged table: serde reports the line of
    // its header, with the value and what was expected.
    let line = table_line(&text, "\"nvidia\"");
    assert!(
        e.contains(&format!("bad.toml: TOML parse error at line {line},"))
            && e.contains("unknown variant `nvidia`, expected one of `dcqcn-paper`, `nvidia-cx`, `hpcc-ns3`"),
        "{e}"
    );
    let text = s.to_toml().replacen("\"ftree\"", "\"fattree\"", 1);
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    let line = table_line(&text, "\"fattree\"");
    assert!(
        e.contains(&format!("line {line},")) && e.contains("unknown variant `fattree`"),
        "{e}"
    );
    let text = s
        .to_toml()
        .replace("background_tcp_load = 0.0", "background_tcp_load = 1.5");
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    assert!(
        e.contains("workload.background_tcp_load") && e.contains("outside [0, 1)"),
        "{e}"
    );
    let text = s
        .to_toml()
        .replace("background_tcp_load = 0.0", "background_tcp_load = 0.1");
    assert_eq!(
        Scenario::from_toml(&text, "ok.toml")
            .unwrap()
            .workload
            .background_tcp_load,
        0.1
    );
    let text = s
        .to_toml()
        .replace("background_tcp_cc = \"newreno\"", "background_tcp_cc = \"bbr\"");
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err().to_string();
    let line = text_line(&text, "\"bbr\"");
    assert!(
        e.contains(&format!("line {line},")) && e.contains("unknown variant `bbr`, expected `newreno` or `dctcp`"),
        "{e}"
    );
    let e = Scenario::from_toml("\u{0}\u{1}garbage", "g.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("g.toml:"), "{e}");
}

#[test]
fn every_field_is_explained() {
    let text = Scenario::default_rail().to_toml();
    for key in [
        "servers",
        "gpus_per_server",
        "nic_gbps",
        "radix",
        "nvlink_gbytes",
        "collectives",
        "sizes",
        "background_tcp_load",
        "background_tcp_cc",
        "skills",
        "budget",
    ] {
        assert!(text.contains(key));
        assert!(FIELDS.iter().any(|(f, _, _)| f.ends_with(key)), "{key} not explained");
    }
}

#[test]
fn one_file_model_reads_both_forms_and_says_which_command_runs_each() {
    let p = Path::new("s.toml");
    let cmp = ScenarioFile::parse(&Scenario::default_rail().to_toml(), p).unwrap();
    assert!(matches!(cmp, ScenarioFile::Comparison(_)));
    let e = cmp.packet_run(p).unwrap_err().to_string();
    assert_eq!(
        e,
        "s.toml: is a comparison scenario ([cluster] and [[variants]]): run it with `rdmalab compare`"
    );
    let run = "[fabric]\ngenerator = \"fat-tree3\"\nradix = 4\nrate = \"4xHDR\"\n[workload]\nkind = \"all-to-all\"\nbytes = 4096\nend_us = 10\n";
    let f = ScenarioFile::parse(run, p).unwrap();
    let ScenarioFile::PacketRun(sc) = f.clone() else {
        panic!("{f:?}")
    };
    assert_eq!(sc.display_name(), "s");
    assert!(
        f.comparison(p)
            .unwrap_err()
            .to_string()
            .contains("run it with `rdmalab sim run`")
    );
    // a packet run's own errors keep their line
    let bad = run.replace("radix = 4", "radix = 4\nradx = 5");
    let e = ScenarioFile::parse(&bad, p).unwrap_err().to_string();
    // (serde reports an unknown key of a tagged table at the table's line)
    assert!(e.contains("unknown field `radx`") && e.contains("line 1"), "{e}");
    let both = format!("{run}[cluster]\nservers = 2\n");
    assert!(
        ScenarioFile::parse(&both, p)
            .unwrap_err()
            .to_string()
            .contains("give one")
    );
}

/// Every key the example packet runs use is explained by PACKET_FIELDS.
#[test]
fn every_packet_run_key_is_explained() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let t: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (section, v) in &t {
            let keys: Vec<String> = match v {
                toml::Value::Table(inner) => inner.keys().map(|k| format!("{section}.{k}")).collect(),
                _ => vec![section.clone()],
            };
            for k in keys {
                let known = PACKET_FIELDS.iter().any(|(f, _, _)| {
                    *f == k
                        || f.strip_suffix('*').is_some_and(|p| k.starts_with(p))
                        || f.split(" / ").any(|part| part == k || k.ends_with(part))
                        || f.starts_with(&format!("{k}."))
                });
                assert!(known, "{}: {k} not in PACKET_FIELDS", path.display());
                n += 1;
            }
        }
    }
    assert!(n > 20, "{n} keys checked");
}

#[test]
fn a_lossy_hop_that_names_no_switch_is_refused_at_load_naming_the_field() {
    let text = Scenario::default_rail()
        .to_toml()
        .replace("lossy_hops = [\"rail0\"]", "lossy_hops = [\"rail9\"]");
    let e = Scenario::from_toml(&text, "s.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("s.toml: field `variants[3].fabric.lossy_hops`: \"rail9\" is not a switch of this cluster (its switches: rail0, "),
        "{e}"
    );
}

/// Scalable units: a pod that divides into them builds as a SuperPOD; one that
/// does not, zero units, or leaf uplinks without units are refused by field.
#[test]
fn repeats_and_misconfig_risk_out_of_range_name_the_field() {
    for (text, field) in [("repeats = 0\n", "repeats"), ("repeats = 17\n", "repeats")] {
        let src = Scenario::default_rail().to_toml().replace("repeats = 3\n", text);
        let e = Scenario::from_toml(&src, "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains(field) && e.contains("1..=16"), "{e}");
    }
    let mut s = Scenario::default_rail();
    s.advisor.misconfig_risk = Some(1.5);
    let e = s.validate("y.toml").unwrap_err().to_string();
    assert!(
        e.contains("y.toml") && e.contains("advisor.misconfig_risk") && e.contains("probability"),
        "{e}"
    );
}

/// SHARP asked of a scenario that cannot have it is refused naming the
/// field: the collective without `cluster.sharp`, `cluster.sharp` with only
/// Ethernet variants, and the collective at packet level.
#[test]
fn sharp_without_the_hardware_or_the_engine_names_the_field() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-4su-1024-sharp.toml");
    let text = std::fs::read_to_string(&ex).unwrap();
    let s = Scenario::from_toml(&text, "x.toml").unwrap();
    assert!(s.cluster.sharp && s.gpu.nvls);
    assert!(s.workload.collectives.contains(&Collective::AllReduceSharp));
    // round trip keeps both fields
    assert_eq!(Scenario::from_toml(&s.to_toml(), "y.toml").unwrap(), s);
    let cases = [
        (
            text.replace("sharp = true\n", ""),
            "x.toml: field `workload.collectives`: all-reduce-sharp needs switches that aggregate: set cluster.sharp = true",
        ),
        (
            text.replace(
                "kind = \"infiniband\"\nengines = [\"ftree\", \"updn\"]",
                "kind = \"rocev2\"\npfc = true",
            ),
            "x.toml: field `cluster.sharp`: no InfiniBand variant to use it: SHARP aggregates in InfiniBand switches (Quantum HDR or newer); Ethernet switches have no in-network reduction",
        ),
        (
            text.replace("engine = \"flow\"", "engine = \"packet\""),
            "x.toml: field `engine`: all-reduce-sharp runs at flow level only (the switches reduce, so it has no packet-level schedule); 1024 NICs under engine = \"packet\" run packet by packet: set engine = \"flow\"",
        ),
    ];
    for (t, want) in cases {
        let e = Scenario::from_toml(&t, "x.toml").unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}");
    }
    // auto past 256 NICs runs the flow engine
    let auto = text.replace("engine = \"flow\"", "engine = \"auto\"");
    Scenario::from_toml(&auto, "x.toml").unwrap();
    // the built-in default has neither field, so its TOML is unchanged
    let d = Scenario::default_rail().to_toml();
    assert!(!d.contains("sharp") && !d.contains("nvls"), "{d}");
}

#[test]
fn scalable_units_build_a_superpod_and_bad_values_name_the_field() {
    let base = Scenario::default_rail().to_toml();
    let with = |extra: &str| base.replace("leaf_spine_m = 20.0\n", &format!("leaf_spine_m = 20.0\n{extra}"));
    let ok = Scenario::from_toml(&with("scalable_units = 2\n"), "s.toml");
    // the default's lossy hop names a switch of the one-leaf-per-rail pod
    assert!(ok.is_err_and(|e| e.to_string().contains("lossy_hops")));
    let mut s = Scenario::default_rail();
    s.variants
        .retain(|v| !matches!(&v.fabric, VariantFabric::Rocev2 { lossy_hops, .. } if !lossy_hops.is_empty()));
    s.cluster.scalable_units = Some(2);
    s.validate("s.toml").unwrap();
    let f = crate::cluster::build(&s.cluster, crate::tco::Tech::InfiniBand).unwrap();
    // 2 units × 8 rails of leaves, and spines
    assert!(f.count(fabric::NodeKind::Switch) > 16);
    for (extra, field) in [
        ("scalable_units = 3\n", "cluster.scalable_units"),
        ("scalable_units = 0\n", "cluster.scalable_units"),
        ("leaf_uplinks = 4\n", "cluster.leaf_uplinks"),
    ] {
        let e = Scenario::from_toml(&with(extra), "s.toml").unwrap_err().to_string();
        assert!(e.contains(&format!("field `{field}`")), "{extra}: {e}");
    }
}

/// The built-in default: at least 512 GPUs in two scalable units, every
/// variant, two jobs (one dense, one MoE) after churn, four seeds; it reads
/// back from its own TOML.
#[test]
fn the_training_default_round_trips_and_holds_two_jobs_on_two_units() {
    let s = Scenario::default_training();
    s.validate("builtin").unwrap();
    let back = Scenario::from_toml(&s.to_toml(), "x.toml").unwrap();
    assert_eq!(back, s);
    assert_eq!(s.cluster.servers * s.cluster.gpus_per_server, 512);
    assert_eq!(s.cluster.scalable_units, Some(2));
    assert_eq!(s.variants.len(), 7);
    assert_eq!(s.repeats, 4);
    let t = s.training.as_ref().unwrap();
    assert_eq!(t.placement, crate::train::Placement::Fragmented);
    let jobs: Vec<workload::job::Job> = t.jobs.iter().map(|j| j.check(512).unwrap()).collect();
    assert_eq!(jobs.len(), 2);
    assert!(jobs[0].model.moe.is_none() && jobs[1].model.moe.is_some());
}

/// Each bad training job is refused naming `training.jobs[i].field`: an
/// unknown model or GPU, parallel sizes that do not divide the GPUs, TP wider
/// than a server, a job or jobs larger than the cluster, a repeated name.
#[test]
fn bad_training_jobs_are_refused_by_field() {
    let base = Scenario::default_training().to_toml();
    let err = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        Scenario::from_toml(&base.replacen(from, to, 1), "t.toml")
            .unwrap_err()
            .to_string()
    };
    let cases = [
        (
            "model = \"llama3-70b\"",
            "model = \"llama9\"",
            "training.jobs[0].model",
            "unknown preset",
        ),
        (
            "gpu = \"h100\"",
            "gpu = \"z100\"",
            "training.jobs[0].gpu",
            "unknown preset",
        ),
        ("gpus = 192", "gpus = 200", "training.jobs[0].", "200"),
        ("tp = 8", "tp = 16", "training.jobs[0].parallel.tp", "16"),
        ("gpus = 192", "gpus = 1024", "training.jobs[0].gpus", "1024"),
        (
            "name = \"mixtral-8x7b\"",
            "name = \"llama3-70b\"",
            "training.jobs[1].name",
            "earlier job",
        ),
    ];
    for (from, to, field, says) in cases {
        let e = err(from, to);
        assert!(
            e.starts_with("t.toml:") && e.contains(field) && e.contains(says),
            "{to}: {e}"
        );
    }
    // two jobs together larger than the cluster
    let e = err("gpus = 192\nseq_len = 4096", "gpus = 384\nseq_len = 4096");
    assert!(e.contains("training.jobs") && e.contains("servers together"), "{e}");
    let e = err("[[training.jobs]]", "bogus = 1\n[[training.jobs]]");
    assert!(e.contains("bogus"), "{e}");
}
