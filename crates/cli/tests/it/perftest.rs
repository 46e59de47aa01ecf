//! `rdmalab sim perftest` with the published NICs (`lab::endpoints`) against the
//! published figures those NICs cite (docs/VALIDATION.md §12b): within 10%.

use super::{out, rdmalab};

fn json(args: &[&str]) -> serde_json::Value {
    let o = rdmalab(args, None);
    assert!(o.status.success(), "{}", super::err(&o));
    serde_json::from_str(&out(&o)).unwrap()
}

/// One-way latency (p50, the t_typical perftest prints) in ns.
fn lat_ns(test: &str, extra: &[&str]) -> f64 {
    let mut a = vec!["sim", "perftest", test, "-s", "2", "-n", "200", "--json"];
    a.extend_from_slice(extra);
    json(&a)["result"]["latency"]["p50_ps"].as_f64().unwrap() / 1e3
}

/// Average payload rate in Gb/s.
fn bw_gbps(extra: &[&str]) -> f64 {
    let mut a = vec!["sim", "perftest", "write-bw", "-n", "2000", "--json"];
    a.extend_from_slice(extra);
    json(&a)["result"]["bw_avg_bps"].as_f64().unwrap() / 1e9
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got / want - 1.0).abs() <= tol
}

#[test]
fn sim_perftest_default_nics_match_the_published_figures() {
    let (ib_ns, _) = lab::endpoints::PUBLISHED_ONE_WAY_NS;
    // ib_write_lat and ib_send_lat back to back, 2 bytes: 611 ns against the
    // vendor's 600 (the cable and one small packet on top)
    for test in ["write-lat", "send-lat"] {
        let b2b = lat_ns(test, &["--back-to-back"]);
        assert!(within(b2b, ib_ns, 0.10), "{test}: {b2b} ns against {ib_ns}");
        assert!((b2b - 610.9).abs() < 0.5, "{test}: {b2b} (docs/VALIDATION.md §12b)");
        // one switch adds its 130 ns and a cable
        let one = lat_ns(test, &[]);
        assert!((one - 750.9).abs() < 0.5, "{test}: {one}");
        // without the NIC model only the wire is left: the figure is the NIC's
        let ideal = lat_ns(test, &["--back-to-back", "--nic", "ideal"]);
        assert!(ideal < 20.0, "{test}: {ideal}");
    }
    // ib_write_bw at perftest's default 64 KiB: on EDR, the published 96.6 Gb/s;
    // on NDR, 96.6% of 400 (over the ngc_multinode_perf pass mark of 90%)
    let edr = bw_gbps(&["--rate", "4xEDR", "--back-to-back"]);
    assert!(within(edr, lab::endpoints::PUBLISHED_EDR_WRITE_BW_GBPS, 0.10), "{edr}");
    assert!((edr - 96.6).abs() < 0.05, "{edr}");
    let ndr = bw_gbps(&["--back-to-back"]);
    assert!((ndr - 386.4).abs() < 0.2 && ndr >= 0.9 * 400.0, "{ndr}");
    // the ideal NIC would exceed the measured ceiling: the wire alone allows 99%
    let ideal = bw_gbps(&["--rate", "4xEDR", "--back-to-back", "--nic", "ideal"]);
    assert!(ideal > 98.0, "{ideal}");
}
