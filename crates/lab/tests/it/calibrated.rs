//! `compare` with NIC latencies from a calibration file: the variants it
//! reaches take them in place of the published NICs' (probe latency moves by the
//! difference of send + receive), the others do not, and the results say where
//! they came from.

use lab::results::{Endpoints, NicLatency};

fn small() -> lab::Scenario {
    let mut s = lab::Scenario::default_rail();
    s.cluster.servers = 4;
    s.cluster.gpus_per_server = 2;
    s.cluster.radix = 16;
    s.workload.sizes = vec![8 << 20];
    s.workload.incast = None;
    s
}

#[test]
fn calibrated_endpoints_reach_the_verbs_and_rocev2_variants_only() {
    let s = small();
    let plain = lab::compare::run(&s, &mut |_| {}).unwrap();
    assert_eq!(plain.calibration, None);
    let e = Endpoints {
        source: "calibration.toml".into(),
        infiniband: Some(NicLatency {
            tx_ps: 993_670,
            rx_ps: 90_881,
        }),
        rocev2: Some(NicLatency {
            tx_ps: 5_582_890,
            rx_ps: 257_107,
        }),
        infiniband_switch_ps: None,
        rocev2_switch_ps: None,
        applied_to: Vec::new(),
    };
    let cal = lab::compare::run_calibrated(&s, None, Some(&e), &mut |_| {}).unwrap();
    let c = cal.calibration.as_ref().unwrap();
    assert_eq!(c.source, "calibration.toml");
    let kinds: Vec<(&str, lab::FabricKind)> = cal.variants.iter().map(|v| (v.id.as_str(), v.kind)).collect();
    for (id, kind) in kinds {
        let p = plain.variants.iter().find(|v| v.id == id).unwrap();
        let v = cal.variants.iter().find(|v| v.id == id).unwrap();
        // the calibration's pair replaces the published NIC's one-way latency
        let published = |m: lab::endpoints::NicModel| m.latency.tx_ps + m.latency.rx_ps;
        let add = match kind {
            lab::FabricKind::Infiniband => Some(993_670 + 90_881 - published(lab::endpoints::IB_HCA)),
            lab::FabricKind::Rocev2 => Some(5_582_890 + 257_107 - published(lab::endpoints::ROCE_NIC)),
            _ => None,
        };
        assert_eq!(c.applied_to.iter().any(|a| a == id), add.is_some(), "{id}");
        match (add, &p.latency, &v.latency) {
            (Some(add), Some(pl), Some(vl)) => {
                let grew = (vl.p50_us - pl.p50_us) * 1e6;
                // every probe crosses one sending and one receiving NIC
                assert!(p.bring_up.contains("NIC latency as published"), "{id}: {}", p.bring_up);
                assert!(
                    (grew - add as f64).abs() < 0.02 * add as f64,
                    "{id}: p50 grew {grew} ps, NICs add {add}"
                );
                assert!(
                    v.bring_up.contains("NIC latency from the calibration file"),
                    "{id}: {}",
                    v.bring_up
                );
            }
            (None, pl, vl) => {
                assert_eq!(pl, vl, "{id}: not calibrated, unchanged");
                assert_eq!(p.bring_up, v.bring_up);
            }
            (Some(_), pl, vl) => panic!("{id}: probes ran {:?} / {:?}", pl.is_some(), vl.is_some()),
        }
    }
}

/// A calibration file's switch latencies (a one-hop against a back-to-back
/// latency run) replace the model's on every switch of their fabric: a probe
/// across one switch moves by the difference, the NICs stay the published ones,
/// and the bring-up says so.
#[test]
fn calibrated_switch_latency_replaces_the_models_on_its_fabric() {
    let s = small();
    let plain = lab::compare::run(&s, &mut |_| {}).unwrap();
    let e = Endpoints {
        source: "calibration.toml".into(),
        infiniband: None,
        rocev2: None,
        infiniband_switch_ps: Some(330_000),
        rocev2_switch_ps: Some(1_000_000),
        applied_to: Vec::new(),
    };
    let cal = lab::compare::run_calibrated(&s, None, Some(&e), &mut |_| {}).unwrap();
    for v in &cal.variants {
        let p = plain.variants.iter().find(|x| x.id == v.id).unwrap();
        // the model's switches: InfiniBand 130 ns, Ethernet 600 ns
        let moved = match v.kind {
            lab::FabricKind::Infiniband => 200_000.0,
            lab::FabricKind::Rocev2 => 400_000.0,
            _ => 0.0,
        };
        match (&p.latency, &v.latency) {
            (Some(pl), Some(vl)) if moved > 0.0 => {
                let grew = (vl.p50_us - pl.p50_us) * 1e6;
                assert!((grew - moved).abs() < 0.02 * moved, "{}: {grew} against {moved}", v.id);
                assert!(
                    v.bring_up.contains("switch latency from the calibration file"),
                    "{}",
                    v.bring_up
                );
                assert!(v.bring_up.contains("NIC latency as published"), "{}", v.bring_up);
            }
            (pl, vl) => assert_eq!(pl, vl, "{}", v.id),
        }
    }
}
