//! `compare` on a fabric the user brings (`cluster.topology`, `cluster.mapping`):
//! the generated default cluster written as ibnetdiscover and read back runs as
//! the cluster, servers and rails recognised from the NodeDescriptions or from a
//! mapping file, and bad input is refused naming the file and line or the field.

use std::path::Path;

use lab::scenario::{Scenario, ScenarioError};

/// 4 servers × 2 GPUs at 400G on radix-16 switches, one ring size.
fn small() -> Scenario {
    let mut s = Scenario::default_rail();
    s.cluster.servers = 4;
    s.cluster.gpus_per_server = 2;
    s.cluster.radix = 16;
    s.workload.sizes = vec![8 << 20];
    s.workload.incast = None;
    s.repeats = 1;
    s
}

/// `small()`'s InfiniBand fabric as ibnetdiscover prints it, and the scenario
/// naming it (plus `extra` lines in `[cluster]`), in `dir`.
fn write_case(dir: &Path, extra: &str) -> std::path::PathBuf {
    let s = small();
    let f = lab::cluster::build(&s.cluster, lab::tco::Tech::InfiniBand).unwrap();
    let text = fabric::format::write(&f, fabric::format::Format::Ibnetdiscover).unwrap();
    std::fs::write(dir.join("pod.ibnetdiscover"), text).unwrap();
    let toml = s.to_toml().replacen(
        "[cluster]\n",
        &format!("[cluster]\ntopology = \"pod.ibnetdiscover\"\n{extra}"),
        1,
    );
    let p = dir.join("scenario.toml");
    std::fs::write(&p, toml).unwrap();
    p
}

/// The written fabric as the scenario loader reads it (ibnetdiscover names the
/// nodes by GUID).
fn read_back(dir: &Path) -> fabric::Fabric {
    fabric::format::read_file(
        &dir.join("pod.ibnetdiscover"),
        None,
        &fabric::format::ReadOptions::default(),
    )
    .unwrap()
    .0
}

fn invalid(e: ScenarioError) -> (String, String) {
    match e {
        ScenarioError::Invalid { field, reason, .. } => (field, reason),
        other => panic!("{other}"),
    }
}

#[test]
fn an_ibnetdiscover_dump_runs_as_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_case(dir.path(), "");
    let s = Scenario::load(&p).unwrap();
    let f = s.cluster.imported.as_ref().unwrap();
    assert_eq!(lab::import::shape(f), (4, 2, 400, 16));
    let got = lab::compare::run(&s, &mut |_| {}).unwrap();
    let want = lab::compare::run(&small(), &mut |_| {}).unwrap();
    assert_eq!(got.variants.len(), want.variants.len());
    for (g, w) in got.variants.iter().zip(&want.variants) {
        assert_eq!(g.id, w.id);
        assert_eq!(g.refused.is_some(), w.refused.is_some(), "{}", g.id);
        // the same switches and adapters; ibnetdiscover keeps no cable lengths
        // (2 m everywhere, against 20 m leaf–spine), so times move a little
        match (g.large_ring_busbw(), w.large_ring_busbw()) {
            (Some(a), Some(b)) => assert!((a / b - 1.0).abs() < 0.02, "{}: {a} against {b}", g.id),
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "{}", g.id),
        }
    }
}

#[test]
fn a_mapping_file_gives_servers_and_rails() {
    let dir = tempfile::tempdir().unwrap();
    write_case(dir.path(), "");
    let f = read_back(dir.path());
    // every adapter by name, its rails swapped: mlx5_0 becomes rail 1
    let mut map = String::from("# NODE SERVER RAIL\n");
    for id in f.nodes_of(fabric::NodeKind::Ca) {
        let n = f.node(id);
        let (host, dev) = n.desc.split_once(' ').unwrap();
        let rail = if dev.ends_with('0') { 1 } else { 0 };
        map += &format!("{}  node-{host}  {rail}   # was {dev}\n", n.name);
    }
    std::fs::write(dir.path().join("map.txt"), &map).unwrap();
    let p = write_case(dir.path(), "mapping = \"map.txt\"\n");
    let s = Scenario::load(&p).unwrap();
    let m = s.cluster.imported.as_ref().unwrap();
    assert_eq!(m.hosts[0].name, "node-gpu0");
    let nics = lab::runner::NicMap::from_fabric(m).unwrap();
    // rail 0 of the first server is the adapter its description called mlx5_1
    let was = |id: fabric::NodeId| f.node(f.by_name(&m.node(id).name).unwrap()).desc.clone();
    assert_eq!(was(nics.nic[0][0]), "gpu0 mlx5_1");
    assert_eq!(was(nics.nic[0][1]), "gpu0 mlx5_0");
    assert_eq!(m.node(nics.nic[0][0]).desc, "node-gpu0 mlx5_0");
}

#[test]
fn bad_topologies_and_mappings_are_refused_by_file_line_or_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_case(d, "");
    let f = read_back(d);
    let cas: Vec<String> = f
        .nodes_of(fabric::NodeKind::Ca)
        .map(|id| f.node(id).name.clone())
        .collect();
    let all = |skip: usize| -> String {
        cas.iter()
            .enumerate()
            .filter(|&(i, _)| i != skip)
            .map(|(i, n)| format!("{n} s{} {}\n", i / 2, i % 2))
            .collect()
    };
    let case = |map: &str| {
        std::fs::write(d.join("map.txt"), map).unwrap();
        let p = write_case(d, "mapping = \"map.txt\"\n");
        invalid(Scenario::load(&p).unwrap_err())
    };
    let (field, why) = case(&format!("{}nosuch s9 0\n", all(usize::MAX)));
    assert_eq!(field, "cluster.mapping");
    assert!(
        why.contains("map.txt:9:") && why.contains("nosuch names no channel adapter"),
        "{why}"
    );
    let sw = f
        .nodes_of(fabric::NodeKind::Switch)
        .next()
        .map(|id| f.node(id).name.clone())
        .unwrap();
    let (_, why) = case(&format!("{}{sw} s9 0\n", all(usize::MAX)));
    assert!(
        why.contains("map.txt:9:") && why.contains("not a channel adapter"),
        "{why}"
    );
    let (_, why) = case(&format!("{} s0\n", cas[0]));
    assert!(why.contains("map.txt:1:") && why.contains("NODE SERVER RAIL"), "{why}");
    let (_, why) = case(&format!("{}{} s0 0\n", all(usize::MAX), cas[0]));
    assert!(
        why.contains("map.txt:9:") && why.contains("mapped twice (first on line 1)"),
        "{why}"
    );
    let (_, why) = case(&all(3));
    assert!(why.contains(&cas[3]) && why.contains("on no line"), "{why}");
    // the [cluster] numbers must describe the file
    let p = write_case(d, "");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("servers = 4", "servers = 5");
    std::fs::write(&p, text).unwrap();
    let (field, why) = invalid(Scenario::load(&p).unwrap_err());
    assert_eq!(field, "cluster.servers");
    assert!(why.contains("pod.ibnetdiscover has 4: write 4"), "{why}");
    // a file that is not there, and a mapping without a topology
    let p = d.join("s.toml");
    std::fs::write(
        &p,
        small()
            .to_toml()
            .replacen("[cluster]\n", "[cluster]\ntopology = \"gone.net\"\n", 1),
    )
    .unwrap();
    let (field, _) = invalid(Scenario::load(&p).unwrap_err());
    assert_eq!(field, "cluster.topology");
    std::fs::write(
        &p,
        small()
            .to_toml()
            .replacen("[cluster]\n", "[cluster]\nmapping = \"map.txt\"\n", 1),
    )
    .unwrap();
    let (field, _) = invalid(Scenario::load(&p).unwrap_err());
    assert_eq!(field, "cluster.mapping");
}
