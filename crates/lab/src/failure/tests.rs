use super::*;

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
