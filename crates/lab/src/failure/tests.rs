use super::*;
use fabric::NodeId;

/// NCCL's timeout is the IBA formula at NCCL's defaults (about 34 s).
#[test]
fn nccl_waits_34_s_at_its_defaults() {
    let s = NcclTimeout::default().seconds();
    assert!((s - 34.36).abs() < 0.01, "{s}");
    let t = NcclTimeout {
        ib_timeout: 14,
        retry_cnt: 7,
    }
    .seconds();
    assert!((t - 0.537).abs() < 0.001, "{t}");
}

fn small() -> Scenario {
    let mut s = Scenario::default_rail();
    s.cluster.servers = 8;
    s.cluster.gpus_per_server = 2;
    s.cluster.scalable_units = Some(2);
    s
}

fn opts(fault: Fault) -> FailureOptions {
    FailureOptions {
        op: Collective::AllReduceRing,
        size: 16 << 20,
        at: 0.5,
        link: None,
        fault,
        eth: EthTimers::default(),
        nccl: NcclTimeout::default(),
    }
}

fn var<'a>(r: &'a FailureReport, id: &str) -> &'a VariantFailure {
    r.variants.iter().find(|v| v.id == id).unwrap()
}

/// A spine link cut on two scalable units: InfiniBand stalls for the SM
/// recovery this run made (SMPs × the measured cost per SMP: the same SM code,
/// not a constant), Ethernet for its BFD timers, and only a BGP hold time past
/// NCCL's timeout makes NCCL give up; the collective's time with the cut follows
/// the stated model.
#[test]
fn the_cut_stalls_each_fabric_for_its_own_recovery() {
    let s = small();
    let r = run(&s, &opts(Fault::LinkDown)).unwrap();
    assert_eq!(r.sm.len(), 1);
    let sm = &r.sm[0];
    assert!(sm.subnet_up && sm.smps > 0 && sm.lft_blocks_sent > 0, "{sm:?}");
    assert_eq!(sm.model_s, sm.smps as f64 * recovery::SM_WALL_PER_SMP_S);
    let ib = var(&r, "ib");
    assert!(ib.connections_through_link > 0);
    assert_eq!(ib.stall_s, sm.model_s);
    assert_eq!(ib.recovery_s, Some(sm.model_s));
    assert_eq!(ib.recovery_wall_s, Some(sm.wall_s));
    for v in r.variants.iter().filter(|v| v.id != "ib") {
        assert!(v.connections_through_link > 0, "{v:?}");
        assert!((v.stall_s - 0.9).abs() < 1e-12, "{v:?}");
        let want = 0.5 * v.healthy_us + v.stall_s * 1e6 + 0.5 * v.degraded_us.unwrap();
        assert!((v.with_failure_us - want).abs() < 1e-6);
        assert!(!v.nccl_timed_out && !v.restart);
        // 16 GPUs idle for the extra time
        assert!((v.gpu_hours_lost - (v.with_failure_us - v.healthy_us) / 1e6 / 3600.0 * 16.0).abs() < 1e-12);
    }
    let ids: Vec<&str> = r.not_run.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["roce-misconfig", "roce-lossy", "ipoib", "rocev1"]);
    // the same fault again: the SM sends the same SMPs, so the figure repeats
    let again = run(&s, &opts(Fault::LinkDown)).unwrap();
    assert_eq!(again.sm[0].smps, sm.smps);
    assert_eq!(var(&again, "ib").stall_s, ib.stall_s);
    // without BFD a 60 s hold time outlasts NCCL's 34 s: the job restarts
    let mut o = opts(Fault::LinkDown);
    o.eth = EthTimers {
        bfd_interval_ms: None,
        bgp_hold_s: 60.0,
        ..EthTimers::default()
    };
    let r = run(&s, &o).unwrap();
    let lost = r.nccl_timeout_s + r.restart_loss_s;
    for v in r.variants.iter().filter(|v| v.id != "ib") {
        assert_eq!(v.recovery_s, Some(60.0));
        assert!(v.nccl_timed_out && v.restart);
        assert!((v.gpu_hours_lost - lost / 3600.0 * 16.0).abs() < 1e-12, "{v:?}");
    }
    assert!(!var(&r, "ib").restart);
    // restart: 150 s and half of Young's interval at 16 GPUs
    let m = FailureModel::default();
    assert!((r.restart_loss_s - 150.0 - m.checkpoint_interval_s(16) / 2.0).abs() < 1e-9);
}

/// Bad input is refused naming what is wrong.
#[test]
fn bad_faults_are_refused_by_name() {
    let s = small();
    for (sw, port, why) in [
        ("nosuch", 1, "no switch of that name"),
        ("spine0", 200, "has ports"),
        ("su0-rail0", 1, "cabled to a NIC"),
    ] {
        let mut o = opts(Fault::LinkDown);
        o.link = Some((sw.into(), port));
        let e = run(&s, &o).unwrap_err().to_string();
        assert!(e.contains(&format!("{sw}/{port}")) && e.contains(why), "{e}");
    }
    let mut o = opts(Fault::LinkDown);
    o.at = 1.5;
    assert!(run(&s, &o).unwrap_err().to_string().contains("at 1.5"));
    let cases: Vec<(Fault, &str)> = vec![
        (
            Fault::SwitchDown {
                switch: Some("nosuch".into()),
            },
            "switch nosuch: no switch of that name",
        ),
        (
            Fault::SwitchDown {
                switch: Some("gpu0-mlx5_0".into()),
            },
            "not a switch",
        ),
        (
            Fault::NicStorm {
                nic: Some("spine0".into()),
                watchdog_ms: Some(200.0),
                nic_prevention_ms: None,
            },
            "nic spine0: spine0 is a Switch, not a NIC",
        ),
        (
            Fault::Degraded {
                gbps: Some(300),
                ber: None,
                llr: true,
            },
            "--degraded-gbps: an InfiniBand 4xNDR link cannot train at 300 Gb/s; fewer lanes give 100, 200",
        ),
        (
            Fault::Degraded {
                gbps: Some(400),
                ber: None,
                llr: true,
            },
            "--degraded-gbps: 400 Gb/s is not below",
        ),
        (
            Fault::Degraded {
                gbps: None,
                ber: None,
                llr: true,
            },
            "give --degraded-gbps and/or --ber",
        ),
        (
            Fault::Degraded {
                gbps: None,
                ber: Some(0.5),
                llr: true,
            },
            "--ber: expected",
        ),
        (
            Fault::Flap(FlapPlan {
                flaps: 2,
                period_s: 1.0,
                down_s: 2.0,
            }),
            "--flap-down-s",
        ),
    ];
    for (fault, want) in cases {
        let e = run(&s, &opts(fault.clone())).unwrap_err();
        assert!(e.is_input(), "{e}");
        assert!(e.to_string().contains(want), "{fault:?}: {e}");
    }
    let mut o = opts(Fault::SwitchDown { switch: None });
    o.link = Some(("spine0".into(), 1));
    assert!(run(&s, &o).unwrap_err().to_string().starts_with("--link:"));
    // a fault with no variant to run it on
    let mut only = small();
    only.variants.retain(|v| matches!(v.fabric, VariantFabric::Ipoib));
    let e = run(&only, &opts(Fault::LinkDown)).unwrap_err();
    assert!(e.to_string().starts_with("fault link:"), "{e}");
}

/// A spine down is routed around (the SM's sweep of the fabric without it; BFD on
/// every session at once) on two 256-GPU scalable units; on the small cluster,
/// whose one spine joins the units, the fabric splits and the job restarts; a rail
/// leaf down cuts its NICs off and the job restarts on both fabrics.
#[test]
fn a_switch_down_is_routed_around_unless_it_carries_nics() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-2su-512.toml");
    let mut s = crate::ScenarioFile::load(&p).unwrap().comparison(&p).unwrap();
    s.variants.retain(|v| v.id == "ib" || v.id == "roce-tuned");
    let r = run(&s, &opts(Fault::SwitchDown { switch: None })).unwrap();
    assert!(r.link.starts_with("switch spine"), "{}", r.link);
    assert!(r.sm[0].subnet_up && r.sm[0].smps > 0);
    assert_eq!(r.variants.len(), 2);
    for v in &r.variants {
        assert!(!v.restart && v.degraded_us.is_some(), "{v:?}");
        let want = if v.id == "ib" { r.sm[0].model_s } else { 0.9 };
        assert_eq!(v.recovery_s, Some(want));
        assert!(v.connections_through_link > 0, "{v:?}");
        assert_eq!(v.stall_s, want);
    }
    // the SM's work follows the change: a switch is not a link
    let link = run(&s, &opts(Fault::LinkDown)).unwrap();
    assert_ne!(link.sm[0].smps, r.sm[0].smps);
    let s = small();
    let split = run(&s, &opts(Fault::SwitchDown { switch: None })).unwrap();
    for v in &split.variants {
        assert!(v.restart && v.recovery.contains("split"), "{v:?}");
    }
    let leaf = run(
        &s,
        &opts(Fault::SwitchDown {
            switch: Some("su0-rail0".into()),
        }),
    )
    .unwrap();
    for v in &leaf.variants {
        assert!(
            v.restart && v.degraded_us.is_none() && v.connections_through_link > 0,
            "{v:?}"
        );
        assert!((v.gpu_hours_lost - (leaf.nccl_timeout_s + leaf.restart_loss_s) / 3600.0 * 16.0).abs() < 1e-9);
        assert!(v.recovery.contains("cut off"), "{}", v.recovery);
    }
}

/// A flapping link: on InfiniBand every transition is one sweep of the SM (ten
/// sweeps for five flaps), each down stalls for its sweep; on Ethernet each down
/// stalls for BFD's detection, until dampening suppresses the link.
#[test]
fn a_flapping_link_costs_each_fabric_per_transition() {
    let s = small();
    let plan = FlapPlan {
        flaps: 5,
        period_s: 2.0,
        down_s: 1.0,
    };
    let mut o = opts(Fault::Flap(plan));
    o.eth.dampening = Some(Dampening::default());
    let r = run(&s, &o).unwrap();
    assert_eq!(r.sm.len(), 10);
    assert!(r.sm.iter().all(|x| x.subnet_up && x.smps > 0), "{:?}", r.sm);
    let ib = var(&r, "ib");
    let downs: f64 = r.sm.iter().step_by(2).map(|x| x.model_s).sum();
    assert!((ib.stall_s - downs).abs() < 1e-12, "{ib:?}");
    assert_eq!(ib.flaps.len(), 5);
    for v in r.variants.iter().filter(|v| v.id != "ib") {
        let st: Vec<f64> = v.flaps.iter().map(|f| f.stall_s).collect();
        assert_eq!(st, [0.9, 0.9, 0.9, 0.0, 0.0], "{v:?}");
        assert!((v.stall_s - 2.7).abs() < 1e-12);
        assert!((v.with_failure_us - v.healthy_us - 2.7e6).abs() < 1e-3);
    }
}

/// A degraded link slows the collective without a stall: trained at 100 Gb/s
/// (4x → 1x NDR; 400G → 100G) the faulted run is slower than the healthy one; bit
/// errors at 1e-6 cost InfiniBand's LLR 0.1% of the link and RoCE's go-back-N a
/// third or more, so RoCE slows more.
#[test]
fn a_degraded_link_slows_the_collective_without_a_stall() {
    let s = small();
    let r = run(
        &s,
        &opts(Fault::Degraded {
            gbps: Some(100),
            ber: None,
            llr: true,
        }),
    )
    .unwrap();
    for v in &r.variants {
        assert_eq!(v.stall_s, 0.0);
        assert!(v.recovery_s.is_none() && !v.restart);
        assert!(v.degraded_us.unwrap() > v.healthy_us * 1.01, "{v:?}");
        let want = 0.5 * v.healthy_us + 0.5 * v.degraded_us.unwrap();
        assert!((v.with_failure_us - want).abs() < 1e-6);
    }
    assert!(var(&r, "ib").recovery.contains("1xNDR"), "{}", var(&r, "ib").recovery);
    let r = run(
        &s,
        &opts(Fault::Degraded {
            gbps: None,
            ber: Some(1e-6),
            llr: true,
        }),
    )
    .unwrap();
    let ib = var(&r, "ib");
    let roce = var(&r, "roce-tuned");
    assert!(ib.recovery.contains("LLR") && roce.recovery.contains("go-back-N"));
    let slow = |v: &VariantFailure| v.degraded_us.unwrap() / v.healthy_us;
    assert!(slow(roce) > slow(ib), "{roce:?} {ib:?}");
    assert!(slow(ib) < 1.002, "{ib:?}");
}

/// A NIC that stops receiving: the job restarts on both fabrics; RoCE's fabric
/// is blocked until the PFC watchdog (200 ms), or the NIC's stall prevention
/// (8 s) without it, InfiniBand's until the VL stalls (1.88 s).
#[test]
fn a_stuck_nic_restarts_the_job_and_blocks_the_fabric_until_contained() {
    let s = small();
    let storm = |wd: Option<f64>, nic: Option<f64>| {
        run(
            &s,
            &opts(Fault::NicStorm {
                nic: None,
                watchdog_ms: wd,
                nic_prevention_ms: nic,
            }),
        )
        .unwrap()
    };
    let r = storm(Some(200.0), Some(8000.0));
    assert!(r.sm.is_empty());
    for v in &r.variants {
        assert!(v.restart && v.connections_through_link == 2, "{v:?}");
        let want = if v.id == "ib" { 7.0 * 4.096e-6 * 65536.0 } else { 0.2 };
        assert!((v.recovery_s.unwrap() - want).abs() < 1e-12, "{v:?}");
    }
    let r = storm(None, Some(8000.0));
    assert_eq!(var(&r, "roce-tuned").recovery_s, Some(8.0));
    let r = storm(None, None);
    assert_eq!(var(&r, "roce-tuned").recovery_s, None);
}

/// The deterministic InfiniBand recovery (SMPs × the cost per SMP measured on a
/// whole heavy sweep) against the same recovery's wall time, at 1,024 GPUs. A
/// build's speed differs (a test build runs the SM several times slower than the
/// release build the constant was measured with), so the cost per SMP is
/// measured again here the same way (a heavy sweep of the 2,592-host radix-36 fat
/// tree); the wall time must lie within a factor 3 of SMPs × that cost: the
/// recovery's mix of work (routing every LID, few LFT blocks) is not a full
/// sweep's, and wall times on the shared 2-core machine vary by ±30%.
/// (Release build, 2026-12-05: 8,754 SMPs → 6.6 ms modelled, 4 ms wall.)
#[test]
fn ib_recovery_model_agrees_with_the_wall_clock_at_1024_gpus() {
    let f = fabric::fat_tree3(&fabric::FatTree3Params {
        radix: 36,
        pods: Some(8),
        ..Default::default()
    })
    .unwrap();
    let mut tr = sm::sma::InProcess::new(f, (NodeId(0), 0));
    let mut mgr = sm::sweep::SubnetManager::new(
        sm::sweep::SweepOptions {
            engines: vec![sm::routing::EngineKind::Ftree],
            validate: false,
            ..Default::default()
        },
        1,
    );
    let t0 = std::time::Instant::now();
    let full = mgr.heavy_sweep(&mut tr);
    let per_smp_here = t0.elapsed().as_secs_f64() / full.smps_sent as f64;
    assert_eq!(full.smps_sent, 82_297, "the sweep the constant was measured on");
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-4su-1024.toml");
    let s = crate::ScenarioFile::load(&p).unwrap().comparison(&p).unwrap();
    let ib = crate::cluster::build(&s.cluster, Tech::InfiniBand).unwrap();
    let spec = CollectiveSpec::new(
        Collective::AllReduceRing,
        s.cluster.servers,
        s.cluster.gpus_per_server,
        256 << 20,
    )
    .unwrap();
    let engines = ib_engines(&s);
    let edges = ring_edges(
        &ib,
        &Net::Ib(engines.clone()).routing(&ib).unwrap(),
        &NicMap::from_fabric(&ib).unwrap(),
        &spec,
    )
    .unwrap();
    let l = busiest(&ib, &edges, Collective::AllReduceRing).unwrap();
    let k = ib.link(l).clone();
    let (_, rec) = recovery::sm_recoveries(
        &ib,
        None,
        &engines,
        &[("down".into(), Change::Unlink(vec![(k.a.node, k.a.port)]))],
    );
    let r = &rec[0];
    assert_eq!(r.smps, 8_754, "{r:?}");
    assert_eq!(r.model_s, 8_754.0 * recovery::SM_WALL_PER_SMP_S);
    let here = r.smps as f64 * per_smp_here;
    let ratio = r.wall_s / here;
    assert!(
        (1.0 / 3.0..=3.0).contains(&ratio),
        "wall {} s, model here {here} s, ratio {ratio}",
        r.wall_s
    );
}

/// compare's failure figures are deterministic and come from the same SM code:
/// the InfiniBand recovery is the SMPs its sweep sent × the measured cost (and a
/// larger fabric's sweep sends more), Ethernet's the configured BFD defaults, and
/// the monthly loss is the failure model's with that recovery.
#[test]
fn compare_recovery_is_deterministic_and_follows_the_sm_and_the_timers() {
    use crate::advisor::FabricKind;
    let s = small();
    let kinds = vec![
        ("ib".to_string(), FabricKind::Infiniband),
        ("roce-tuned".to_string(), FabricKind::Rocev2),
    ];
    let a = compare_recovery(&s, &kinds).unwrap().unwrap();
    let b = compare_recovery(&s, &kinds).unwrap().unwrap();
    assert_eq!(a, b);
    let ib = &a.variants[0];
    assert!(a.smps > 0);
    assert_eq!(ib.recovery_s, a.smps as f64 * recovery::SM_WALL_PER_SMP_S);
    assert_eq!(a.variants[1].recovery_s, EthTimers::default().recovery().0);
    assert_eq!(a.variants[1].recovery_s, 0.9);
    let m = FailureModel::default();
    for v in &a.variants {
        let c = m.cost_with_reroute(v.recovery_s, 16, s.prices.gpu_hour).unwrap();
        assert_eq!(v.lost_gpu_hours_per_month, c.lost_gpu_hours_per_month);
        assert!((v.gpu_hours_per_interruption - c.lost_s_per_interruption * 16.0 / 3600.0).abs() < 1e-12);
        if v.connections_through_link > 0 {
            assert!((v.gpu_hours_per_link_failure - v.recovery_s * 16.0 / 3600.0).abs() < 1e-15);
        }
    }
    let mut big = small();
    big.cluster.servers = 16;
    let c = compare_recovery(&big, &kinds).unwrap().unwrap();
    assert!(
        c.smps > a.smps && c.variants[0].recovery_s > ib.recovery_s,
        "{} vs {}",
        c.smps,
        a.smps
    );
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// The figures docs/VALIDATION.md §13 quotes for the 1,024-GPU SuperPOD (ring
/// all-reduce of 256 MiB, fault at half way), each within the stated tolerance:
/// SMP counts exactly, times within 1%.
#[test]
fn figures_quoted_in_validation_13_at_1024_gpus() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lab/superpod-4su-1024.toml");
    let mut s = crate::ScenarioFile::load(&p).unwrap().comparison(&p).unwrap();
    s.variants.retain(|v| v.id == "ib" || v.id == "roce-tuned");
    let go = |fault: Fault, eth: EthTimers| {
        let mut o = opts(fault);
        o.size = 256 << 20;
        o.eth = eth;
        run(&s, &o).unwrap()
    };
    let plain = EthTimers::default();
    let r = go(Fault::LinkDown, plain);
    assert_eq!((r.sm[0].smps, r.sm[0].lft_blocks_sent), (8_754, 322));
    assert!(close(r.sm[0].model_s, 6.55e-3, 0.01), "{:?}", r.sm[0]);
    assert!(close(var(&r, "ib").healthy_us, 2131.7, 0.01));
    assert!(close(var(&r, "roce-tuned").gpu_hours_lost, 0.256, 0.01));
    let r = go(Fault::SwitchDown { switch: None }, plain);
    assert_eq!(r.link, "switch spine00 (64 links)");
    assert_eq!((r.sm[0].smps, r.sm[0].lft_blocks_sent), (9_099, 799));
    assert_eq!(var(&r, "ib").connections_through_link, 32);
    let flap = Fault::Flap(FlapPlan {
        flaps: 5,
        period_s: 2.0,
        down_s: 1.0,
    });
    let r = go(flap.clone(), plain);
    assert!(close(var(&r, "ib").stall_s, 0.0328, 0.01), "{}", var(&r, "ib").stall_s);
    assert!(close(var(&r, "roce-tuned").stall_s, 4.5, 1e-9));
    assert!(close(var(&r, "roce-tuned").gpu_hours_lost, 1.280, 0.01));
    let damp = EthTimers {
        dampening: Some(Dampening::default()),
        ..plain
    };
    let r = go(flap, damp);
    assert!(close(var(&r, "roce-tuned").stall_s, 2.7, 1e-9));
    let r = go(
        Fault::Degraded {
            gbps: Some(100),
            ber: None,
            llr: true,
        },
        plain,
    );
    assert!(close(var(&r, "ib").degraded_us.unwrap(), 5398.1, 0.01));
    assert!(close(var(&r, "roce-tuned").degraded_us.unwrap(), 5445.4, 0.01));
    let r = go(
        Fault::Degraded {
            gbps: None,
            ber: Some(1e-6),
            llr: true,
        },
        plain,
    );
    assert!(var(&r, "ib").recovery.contains("99.90% of the rate left"));
    let roce = var(&r, "roce-tuned");
    assert!(
        roce.recovery.contains("(14 packets in flight): 67.86%"),
        "{}",
        roce.recovery
    );
    assert!(close(roce.degraded_us.unwrap(), 2200.6, 0.01));
    let r = go(
        Fault::NicStorm {
            nic: None,
            watchdog_ms: Some(200.0),
            nic_prevention_ms: Some(8000.0),
        },
        plain,
    );
    for v in &r.variants {
        assert!(v.restart && close(v.gpu_hours_lost, 710.0, 0.01), "{v:?}");
    }
    assert!(close(var(&r, "ib").recovery_s.unwrap(), 1.879, 0.01));
}

/// The default comparison's failure figures (128 GPUs, docs/VALIDATION.md §13).
#[test]
fn figures_quoted_for_the_default_comparison() {
    use crate::advisor::FabricKind;
    let s = Scenario::default_rail();
    let kinds = vec![
        ("ib".to_string(), FabricKind::Infiniband),
        ("roce-tuned".to_string(), FabricKind::Rocev2),
    ];
    let r = compare_recovery(&s, &kinds).unwrap().unwrap();
    assert_eq!(r.link, "rail0/17 — spine0/1");
    assert_eq!((r.smps, r.lft_blocks_sent), (1_346, 16));
    assert!(close(r.variants[0].recovery_s, 1.01e-3, 0.01));
    for v in &r.variants {
        assert_eq!(v.connections_through_link, 0);
        assert!(close(v.gpu_hours_per_interruption, 239.1, 0.01), "{v:?}");
        assert!(close(v.lost_gpu_hours_per_month, 44.2, 0.01), "{v:?}");
        assert!(close(v.usd_per_month, 123.0, 0.01), "{v:?}");
    }
}
