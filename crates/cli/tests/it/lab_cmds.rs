//! `scenario` and `advise`.

use crate::{err, out, rdmalab};

#[test]
fn scenario_explain_lists_every_field() {
    let o = rdmalab(&["scenario", "explain"], None);
    assert!(o.status.success(), "{}", err(&o));
    insta::assert_snapshot!(out(&o));
}

#[test]
fn scenario_show_round_trips_through_check() {
    let o = rdmalab(&["scenario", "show"], None);
    assert!(o.status.success());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, out(&o)).unwrap();
    let c = rdmalab(&["scenario", "check", p.to_str().unwrap()], None);
    assert!(c.status.success(), "{}", err(&c));
    assert!(
        out(&c).contains("ok (7 variants, 1 collectives × 1 sizes, 2 training jobs)"),
        "{}",
        out(&c)
    );
}

/// The documented background-TCP example is a valid scenario that differs from
/// the default only in its name and its background load.
#[test]
fn scenario_background_tcp_example_checks() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/rail-16x8-400g-tcp.toml");
    let c = rdmalab(&["scenario", "check", p.to_str().unwrap()], None);
    assert!(c.status.success(), "{}", err(&c));
    let example = lab::Scenario::load(&p).unwrap();
    let mut default = lab::Scenario::default_rail();
    assert_eq!(example.workload.background_tcp_load, 0.1);
    default.name = example.name.clone();
    default.workload.background_tcp_load = 0.1;
    assert_eq!(example, default);
}

#[test]
fn scenario_check_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    let good = out(&rdmalab(&["scenario", "show"], None));
    std::fs::write(&p, good.replace("radix = 64", "radix = \"sixty-four\"")).unwrap();
    let c = rdmalab(&["scenario", "check", p.to_str().unwrap()], None);
    assert_eq!(c.status.code(), Some(2));
    let e = err(&c);
    assert!(
        e.contains("bad.toml") && e.contains("line 10, column 9") && e.contains("radix"),
        "{e}"
    );
    std::fs::write(&p, good.replace("servers = 64", "servers = 1")).unwrap();
    let e = err(&rdmalab(&["scenario", "check", p.to_str().unwrap()], None));
    assert!(e.contains("cluster.servers") && e.contains("at least 2"), "{e}");
    let e = err(&rdmalab(&["scenario", "check", "/nonexistent/x.toml"], None));
    assert!(e.contains("/nonexistent/x.toml"), "{e}");
}

#[test]
fn advise_without_results_prices_the_default_cluster() {
    let o = rdmalab(&["advise", "--skills", "infiniband", "--budget", "normal"], None);
    assert!(o.status.success(), "{}", err(&o));
    let t = out(&o);
    assert!(t.contains("no results.json given"));
    // 16 servers × 8 NICs, 8 rail leaves + 2 spines of 64 ports
    assert!(t.contains("128 × InfiniBand adapter 400G"), "{t}");
    assert!(t.contains("10 × InfiniBand switch, 64 × 400G"), "{t}");
    assert!(t.contains("recommendation: InfiniBand"), "{t}");
}

#[test]
fn advise_questionnaire_reads_answers_and_reasks_on_bad_input() {
    let o = rdmalab(&["advise", "-i"], Some("ethernet\nlarge\ntight\nmany\n3\n"));
    assert!(o.status.success(), "{}", err(&o));
    assert!(err(&o).contains("please answer a whole number"));
    let t = out(&o);
    assert!(
        t.contains("skills Ethernet, Ethernet estate Large, budget Tight, sites 3"),
        "{t}"
    );
    assert!(t.contains("recommendation: RoCEv2"), "{t}");
}

#[test]
fn advise_rejects_a_price_table_with_a_typo() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("prices.toml");
    std::fs::write(&p, "nic_400gg = 1.0\n").unwrap();
    let o = rdmalab(&["advise", "--prices", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("nic_400gg"), "{}", err(&o));
}

/// `rdmalab failure`: a spine link cut during a ring all-reduce on 512 GPUs; the
/// InfiniBand stall is the SM recovery modelled from the SMPs it sent, Ethernet's
/// the BFD default; every fault kind runs; bad input is refused by name (exit 2).
#[test]
fn failure_cuts_a_spine_link_on_every_variant() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-2su-512.toml");
    let p = p.to_str().unwrap();
    let o = rdmalab(&["failure", p, "--size", "16777216", "--json"], None);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(j["gpus"], 512);
    assert_eq!(j["fault"]["kind"], "link-down");
    let sm = &j["sm"][0];
    let model = sm["model_s"].as_f64().unwrap();
    assert_eq!(
        model,
        sm["smps"].as_f64().unwrap() * lab::failure::recovery::SM_WALL_PER_SMP_S
    );
    let vs = j["variants"].as_array().unwrap();
    assert_eq!(vs.len(), 3, "{vs:?}");
    for v in vs {
        let stall = v["stall_s"].as_f64().unwrap();
        if v["id"] == "ib" {
            assert_eq!(stall, model);
            assert_eq!(v["recovery_wall_s"], sm["wall_s"]);
        } else {
            assert!((stall - 0.9).abs() < 1e-12, "{v}");
        }
        assert!(v["slowdown"].as_f64().unwrap() > 1.0, "{v}");
        assert_eq!(v["nccl_timed_out"], false);
    }
    for (args, want) in [
        (&["--fault", "switch"][..], "switch spine"),
        (&["--fault", "flap", "--flaps", "2", "--dampening"][..], "flap 2: link"),
        (
            &["--fault", "degrade", "--degraded-gbps", "200", "--ber", "1e-7"][..],
            "trained at 2xNDR",
        ),
        (
            &["--fault", "nic-storm", "--no-pfcwd"][..],
            "NIC's stall prevention stops them (8000 ms)",
        ),
    ] {
        let mut a = vec!["failure", p, "--size", "16777216"];
        a.extend_from_slice(args);
        let o = rdmalab(&a, None);
        assert!(o.status.success(), "{args:?}: {}", err(&o));
        assert!(out(&o).contains(want), "{args:?}: {}", out(&o));
    }
    for (args, want) in [
        (&["--link", "spine9:1"][..], "spine9/1: no switch of that name"),
        (&["--op", "all-reduce"][..], "all-reduce-ring"),
        (
            &["--fault", "meltdown"][..],
            "--fault \"meltdown\": expected one of link, switch, flap, degrade, nic-storm",
        ),
        (
            &["--fault", "switch", "--switch", "spine99"][..],
            "switch spine99: no switch of that name",
        ),
        (
            &["--fault", "nic-storm", "--nic", "gpu999-mlx5_0"][..],
            "nic gpu999-mlx5_0: no NIC of that name",
        ),
        (
            &["--fault", "degrade", "--degraded-gbps", "300"][..],
            "--degraded-gbps: an InfiniBand 4xNDR link cannot train at 300 Gb/s",
        ),
        (
            &["--fault", "link", "--ber", "1e-6"][..],
            "--ber does not apply to --fault link",
        ),
    ] {
        let mut a = vec!["failure", p, "--size", "16777216"];
        a.extend_from_slice(args);
        let o = rdmalab(&a, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(want), "{args:?}: {}", err(&o));
    }
}

/// `rdmalab compare` on the SHARP example: InfiniBand runs the all-reduce with
/// SHARP (its table and the advisor's row say so), RoCEv2 skips it saying why.
/// SHARP on a scenario with no InfiniBand variant, or at packet level through
/// `--engine`, is bad input (exit 2) naming the field.
#[test]
fn compare_runs_sharp_on_infiniband_only_and_refuses_it_by_field() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-4su-1024-sharp.toml");
    let dir = tempfile::tempdir().unwrap();
    let o = rdmalab(
        &[
            "compare",
            p.to_str().unwrap(),
            "--tables",
            "-o",
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    for want in [
        "# InfiniBand NDR (SM, ftree) with SHARP — all_reduce (SHARP)",
        "Mechanism and bandwidth (weight 2): InfiniBand with SHARP (cluster.sharp = true",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // the report's per-variant detail says how SHARP ran and why RoCEv2 skipped it
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for want in [
        "finding: note: all-reduce-sharp ran as NCCL&#x27;s NVLS",
        "finding: note: all-reduce-sharp not run: Ethernet switches have no in-network reduction",
    ] {
        assert!(
            html.contains(want) || html.contains(&want.replace("&#x27;", "'")),
            "{want}"
        );
    }
    let src = std::fs::read_to_string(&p).unwrap();
    let roce = dir.path().join("roce.toml");
    std::fs::write(
        &roce,
        src.replace(
            "kind = \"infiniband\"\nengines = [\"ftree\", \"updn\"]",
            "kind = \"rocev2\"\npfc = true",
        ),
    )
    .unwrap();
    let o = rdmalab(
        &["compare", roce.to_str().unwrap(), "-o", dir.path().to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("field `cluster.sharp`: no InfiniBand variant to use it"),
        "{}",
        err(&o)
    );
    let o = rdmalab(
        &[
            "compare",
            p.to_str().unwrap(),
            "--engine",
            "packet",
            "-o",
            dir.path().to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("with --engine: field `engine`: all-reduce-sharp runs at flow level only"),
        "{}",
        err(&o)
    );
}
