//! `sweep`: a study run, merged, its status read, and bad input.

use crate::{err, out, rdmalab};

fn study(dir: &std::path::Path, grid: &str) -> String {
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/small.toml"),
        dir.join("base.toml"),
    )
    .unwrap();
    let p = dir.join("study.toml");
    std::fs::write(&p, format!("name = \"s\"\nscenario = \"base.toml\"\n[grid]\n{grid}")).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn sweep_runs_merges_and_reports_a_study() {
    let d = tempfile::tempdir().unwrap();
    let s = study(d.path(), "\"cluster.nic_gbps\" = [200, 400]\nseed = [1, 2]\n");
    let o = d.path().join("out");
    let r = rdmalab(&["sweep", "run", &s, "-o", o.to_str().unwrap(), "--local", "2"], None);
    assert!(r.status.success(), "{}", err(&r));
    assert!(out(&r).contains("4 shards run (4 done, 0 failed)"), "{}", out(&r));
    let m = rdmalab(&["sweep", "merge", o.to_str().unwrap()], None);
    assert!(m.status.success(), "{}", err(&m));
    assert!(
        out(&m).contains("cluster.nic_gbps = 400: recommendation"),
        "{}",
        out(&m)
    );
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("merged.json")).unwrap()).unwrap();
    assert_eq!(merged["done"], 4);
    // every figure in merged.json is the shard's own results.json
    for row in merged["rows"].as_array().unwrap() {
        let i = row["index"].as_u64().unwrap();
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(o.join(format!("shards/{i:05}/results.json"))).unwrap())
                .unwrap();
        assert_eq!(row["recommendation"], r["advice"]["recommendation"]);
        let ib = r["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == "ib")
            .unwrap();
        let ring = ib["collectives"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["op"] == "all-reduce-ring")
            .unwrap();
        let last = ring["rows"].as_array().unwrap().last().unwrap();
        assert_eq!(row["metrics"]["ib.ring_busbw_gbs"], last["busbw_per_nic"]);
    }
    let csv = std::fs::read_to_string(o.join("merged.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    let st = rdmalab(&["sweep", "status", o.to_str().unwrap()], None);
    assert!(
        out(&st).contains("4 shards, 4 done, 0 failed, 0 missing"),
        "{}",
        out(&st)
    );
    // nothing left to resume
    let re = rdmalab(&["sweep", "resume", o.to_str().unwrap()], None);
    assert!(out(&re).contains("0 shards run"), "{}", out(&re));
}

#[test]
fn sweep_refuses_an_unknown_field_and_an_empty_axis_by_name() {
    let d = tempfile::tempdir().unwrap();
    for (grid, want) in [
        (
            "\"cluster.nic_speed\" = [200]\n",
            "`cluster.nic_speed` is not a scenario field",
        ),
        ("seed = []\n", "`seed`: an empty list"),
    ] {
        let s = study(d.path(), grid);
        let r = rdmalab(&["sweep", "run", &s, "-o", d.path().join("o").to_str().unwrap()], None);
        assert_eq!(r.status.code(), Some(2), "{}", err(&r));
        assert!(err(&r).contains(&s) && err(&r).contains(want), "{}", err(&r));
    }
}

/// The merged study's page renders in headless Chromium, and every figure of its
/// spreads table, read back from the rendered DOM, equals merged.json's.
#[test]
fn sweep_report_renders_in_chromium_with_the_merged_figures() {
    let Some(chromium) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        panic!("chromium is not installed; scripts/test installs the Debian package `chromium`");
    };
    let d = tempfile::tempdir().unwrap();
    let s = study(d.path(), "\"cluster.nic_gbps\" = [200, 400]\nseed = [1, 2]\n");
    let o = d.path().join("out");
    assert!(
        rdmalab(&["sweep", "run", &s, "-o", o.to_str().unwrap(), "--local", "2"], None)
            .status
            .success()
    );
    assert!(rdmalab(&["sweep", "merge", o.to_str().unwrap()], None).status.success());
    let dom = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", d.path().join("profile").display()))
        .arg(format!("file://{}", o.join("report.html").display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("merged.json")).unwrap()).unwrap();
    let spreads = merged["spreads"].as_array().unwrap();
    assert!(dom.contains("<table id=\"decisions\""), "decisions table missing");
    // one chart per metric and numeric swept field
    assert_eq!(dom.matches("<svg").count(), spreads.len() / 2, "charts");
    // the spreads table, cell by cell
    let table = &dom[dom.find("<table id=\"spreads\"").unwrap()..];
    let body = &table[table.find("<tbody>").unwrap() + 7..table.find("</tbody>").unwrap()];
    let rows: Vec<Vec<String>> = body
        .split("<tr>")
        .filter(|r| !r.is_empty())
        .map(|r| {
            r.split("<td>")
                .skip(1)
                .map(|c| c[..c.find("</td>").unwrap()].to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), spreads.len());
    for (r, s) in rows.iter().zip(spreads) {
        assert_eq!(r[0], s["field"].as_str().unwrap());
        assert_eq!(r[2], s["metric"].as_str().unwrap());
        for (i, k) in [(4, "min"), (5, "median"), (6, "max")] {
            assert_eq!(r[i].parse::<f64>().unwrap(), s[k].as_f64().unwrap(), "{k} of {r:?}");
        }
    }
}
