//! Studies expanded, run, resumed and merged on this machine.

use std::path::{Path, PathBuf};

use sweep::{ShardState, Study};

fn write(dir: &Path, study: &str) -> PathBuf {
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/small.toml"),
        dir.join("base.toml"),
    )
    .unwrap();
    let p = dir.join("study.toml");
    std::fs::write(&p, study).unwrap();
    p
}

const GRID: &str =
    "name = \"g\"\nscenario = \"base.toml\"\n[grid]\n\"cluster.nic_gbps\" = [200, 400]\nseed = [1, 2, 3]\n";

#[test]
fn a_grid_is_every_combination_and_each_shard_is_a_checked_scenario() {
    let d = tempfile::tempdir().unwrap();
    let s = Study::load(&write(d.path(), GRID)).unwrap();
    assert_eq!(s.shards.len(), 6);
    assert_eq!(s.fields, ["cluster.nic_gbps", "seed"]);
    let got: Vec<(u32, u64)> = s
        .shards
        .iter()
        .map(|x| (x.scenario.cluster.nic_gbps, x.scenario.seed))
        .collect();
    assert_eq!(got, [(200, 1), (200, 2), (200, 3), (400, 1), (400, 2), (400, 3)]);
    // everything not swept is the base's
    assert!(s.shards.iter().all(|x| x.scenario.cluster.servers == 4));
}

#[test]
fn points_and_a_seeded_sample_expand_deterministically() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "name = \"p\"\nscenario = \"base.toml\"\n[[points]]\n\"cluster.servers\" = 8\n[[points]]\nseed = 9\n",
    );
    let s = Study::load(&p).unwrap();
    assert_eq!(s.shards.len(), 2);
    assert_eq!(
        (s.shards[0].scenario.cluster.servers, s.shards[1].scenario.seed),
        (8, 9)
    );
    let r = "name = \"r\"\nscenario = \"base.toml\"\n[random]\nsamples = 5\nseed = 3\n\"cluster.servers\" = { min = 2, max = 12 }\n";
    let a = Study::load(&write(d.path(), r)).unwrap();
    let b = Study::load(&write(d.path(), r)).unwrap();
    assert_eq!(a.shards, b.shards);
    assert!(a.shards.iter().all(|x| (2..=12).contains(&x.scenario.cluster.servers)));
}

#[test]
fn bad_studies_name_the_file_and_the_field() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            GRID.replace("cluster.nic_gbps", "cluster.nic_gbit"),
            "`cluster.nic_gbit` is not a scenario field",
        ),
        (GRID.replace("[200, 400]", "[]"), "`cluster.nic_gbps`: an empty list"),
        (
            "name = \"r\"\n[random]\nsamples = 2\nseed = 1\nseed_x = 1\n".to_string(),
            "`seed_x` is not a scenario field",
        ),
        (
            "name = \"r\"\n[random]\nsamples = 2\nseed = 1\n\"cluster.servers\" = { min = 9, max = 3 }\n".to_string(),
            "`cluster.servers`: an empty range",
        ),
        (
            GRID.replace("[200, 400]", "[200, 300]"),
            "shard 3 (cluster.nic_gbps=300, seed=1)",
        ),
        (GRID.replace("[grid]", "[grids]"), "unknown key `grids`"),
    ];
    for (text, want) in cases {
        let p = write(d.path(), &text);
        let e = Study::load(&p).unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
        assert!(e.contains(want), "{want}: {e}");
    }
}

#[test]
fn a_study_runs_resumes_after_a_kill_and_merges_as_a_whole_run_does() {
    let d = tempfile::tempdir().unwrap();
    let s = Study::load(&write(d.path(), GRID)).unwrap();
    // the whole study in one go
    let whole = d.path().join("whole");
    sweep::prepare(&s, &whole).unwrap();
    let (ok, failed) = sweep::run_local(&whole, &sweep::pending(&s, &whole), 2, &|_, _| {}).unwrap();
    assert_eq!((ok, failed), (6, 0));
    // a second folder: two shards, then a run killed while writing a third
    // (its temporary file is left, its results.json is not)
    let cut = d.path().join("cut");
    sweep::prepare(&s, &cut).unwrap();
    sweep::run_local(&cut, &[0, 1], 1, &|_, _| {}).unwrap();
    std::fs::write(sweep::run::shard_dir(&cut, 2).join("results.tmp999"), b"{\"half").unwrap();
    assert_eq!(sweep::state(&cut, 2), ShardState::Missing);
    let again = Study::from_out(&cut).unwrap();
    assert_eq!(again.shards, s.shards);
    assert_eq!(sweep::pending(&again, &cut), [2, 3, 4, 5]);
    sweep::run_local(&cut, &sweep::pending(&again, &cut), 2, &|_, _| {}).unwrap();
    let (a, b) = (sweep::merge(&s, &whole), sweep::merge(&again, &cut));
    assert_eq!(a, b);
    assert_eq!((a.done, a.failed, a.missing), (6, 0, 0));
    assert_eq!(sweep::csv(&a), sweep::csv(&b));
    // every shard's results.json is compare's, and the recommendation is read
    assert!(
        a.rows
            .iter()
            .all(|r| r.recommendation.is_some() && r.metrics.contains_key("ib.ring_busbw_gbs"))
    );
    // the folder holds this study: another is refused
    let other = Study::load(&write(d.path(), &GRID.replace("[1, 2, 3]", "[1, 2]"))).unwrap();
    assert!(
        sweep::prepare(&other, &cut)
            .unwrap_err()
            .to_string()
            .contains("holds another study")
    );
}

#[test]
fn a_shard_that_failed_twice_is_reported_and_not_retried() {
    let d = tempfile::tempdir().unwrap();
    let s = Study::load(&write(d.path(), GRID)).unwrap();
    let out = d.path().join("o");
    sweep::prepare(&s, &out).unwrap();
    // shard 1's scenario broken on disk: it fails each time it runs
    let sp = sweep::run::shard_dir(&out, 1).join("scenario.toml");
    std::fs::write(&sp, "name = \"x\"\n[cluster]\nservers = 1\n").unwrap();
    for _ in 0..3 {
        sweep::run_local(&out, &sweep::pending(&s, &out), 2, &|_, _| {}).unwrap();
    }
    match sweep::state(&out, 1) {
        ShardState::Failed { attempts, last } => {
            assert_eq!(attempts, sweep::MAX_ATTEMPTS);
            assert!(last.contains("scenario.toml"), "{last}");
        }
        other => panic!("{other:?}"),
    }
    assert!(sweep::pending(&s, &out).is_empty());
    let m = sweep::merge(&s, &out);
    assert_eq!((m.done, m.failed, m.missing), (5, 1, 0));
}
