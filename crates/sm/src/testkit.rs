//! Fabric builders for tests and benchmarks: regular fat trees, random irregular
//! topologies, and a small reader for the ibsim net files in `../shared/formats`.
//!
//! These exist so the SM can be tested on its own; `crates/fabric` owns the real
//! generators and readers. GUIDs follow ibsim's conventions (CAs from 0x100000, one GUID
//! per node plus one per CA port; switches from 0x200000), so LIDs and dumps line up with
//! OpenSM runs over ibsim on the same files.

use std::collections::HashMap;

use fabric::{Fabric, Guid, LinkRate, NodeId, NodeSpec};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// Errors of the net-file reader.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("line {line}: {msg}")]
    Syntax { line: usize, msg: String },
    #[error("node {0:?} is referenced but never declared")]
    Undeclared(String),
    #[error(transparent)]
    Model(#[from] fabric::ModelError),
}

struct GuidGen {
    ca: u64,
    sw: u64,
}

impl GuidGen {
    fn new() -> Self {
        GuidGen {
            ca: 0x100000,
            sw: 0x200000,
        }
    }
    fn switch(&mut self) -> Guid {
        self.sw += 1;
        Guid(self.sw - 1)
    }
    fn ca(&mut self, ports: u8) -> Guid {
        self.ca += 1 + ports as u64;
        Guid(self.ca - 1 - ports as u64)
    }
}

/// Read an ibsim net file (the subset used by the shared samples: `Switch`/`Hca`
/// headers and `[p] "peer"[rp]` lines, both ends listed). Links are added once.
pub fn ibsim_net(text: &str) -> Result<Fabric, NetError> {
    struct Decl {
        is_switch: bool,
        ports: u8,
        name: String,
        links: Vec<(u8, String, u8, usize)>,
    }
    let mut decls: Vec<Decl> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let syntax = |msg: &str| NetError::Syntax {
            line: i + 1,
            msg: msg.to_string(),
        };
        if line.starts_with("Switch") || line.starts_with("Hca") || line.starts_with("Ca") {
            let is_switch = line.starts_with("Switch");
            let rest = line.trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim();
            let (num, name) = rest
                .split_once('"')
                .ok_or_else(|| syntax("expected `<ports> \"name\"`"))?;
            let ports: u8 = num.trim().parse().map_err(|_| syntax("expected a port count"))?;
            let name = name.split('"').next().unwrap_or("").to_string();
            decls.push(Decl {
                is_switch,
                ports,
                name,
                links: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix('[') {
            let d = decls.last_mut().ok_or_else(|| syntax("port line before any node"))?;
            let (p, rest) = rest.split_once(']').ok_or_else(|| syntax("expected `[port]`"))?;
            let p: u8 = p.trim().parse().map_err(|_| syntax("bad port number"))?;
            let mut parts = rest.split('"');
            parts.next();
            let peer = parts
                .next()
                .ok_or_else(|| syntax("expected a quoted peer"))?
                .to_string();
            let tail = parts.next().unwrap_or("");
            let rp = match tail.trim().strip_prefix('[') {
                Some(t) => t
                    .split(']')
                    .next()
                    .unwrap_or("1")
                    .trim()
                    .parse()
                    .map_err(|_| syntax("bad peer port"))?,
                None => 1,
            };
            d.links.push((p, peer, rp, i + 1));
        }
    }
    let mut f = Fabric::new();
    let mut g = GuidGen::new();
    let mut ids: HashMap<String, NodeId> = HashMap::new();
    for d in &decls {
        let spec = if d.is_switch {
            NodeSpec::switch(d.name.clone(), g.switch(), d.ports)
        } else {
            NodeSpec::ca(d.name.clone(), g.ca(d.ports), d.ports)
        };
        ids.insert(d.name.clone(), f.add_node(spec)?);
    }
    for d in &decls {
        let a = ids[&d.name];
        for (p, peer, rp, line) in &d.links {
            let b = *ids.get(peer).ok_or_else(|| NetError::Undeclared(peer.clone()))?;
            if f.peer(a, *p).is_some() {
                match f.peer(a, *p) {
                    Some((e, _)) if e.node == b && e.port == *rp => continue,
                    _ => {
                        return Err(NetError::Syntax {
                            line: *line,
                            msg: format!("port {p} is cabled twice"),
                        });
                    }
                }
            }
            f.connect(a, *p, b, *rp, LinkRate::NDR_4X, 1.0)?;
        }
    }
    Ok(f)
}

/// A two-level fat tree: `leaves` leaf switches with `hosts` CAs each and one cable to
/// each of `spines` spine switches per `up_per_spine`.
pub fn fat_tree_2(leaves: usize, spines: usize, hosts: usize, up_per_spine: usize) -> Fabric {
    let mut f = Fabric::new();
    let mut g = GuidGen::new();
    let leaf_ports = (hosts + spines * up_per_spine) as u8;
    let spine_ports = (leaves * up_per_spine) as u8;
    let mut ls = Vec::new();
    let mut ss = Vec::new();
    for s in 0..spines {
        ss.push(
            f.add_node(NodeSpec::switch(format!("spine{s}"), g.switch(), spine_ports).level(2))
                .unwrap(),
        );
    }
    for l in 0..leaves {
        ls.push(
            f.add_node(NodeSpec::switch(format!("leaf{l}"), g.switch(), leaf_ports).level(1))
                .unwrap(),
        );
    }
    for (l, &leaf) in ls.iter().enumerate() {
        for h in 0..hosts {
            let c = f
                .add_node(NodeSpec::ca(format!("h{l}_{h}"), g.ca(1), 1).level(0))
                .unwrap();
            f.connect(leaf, (h + 1) as u8, c, 1, LinkRate::NDR_4X, 1.0).unwrap();
        }
        for (s, &sp) in ss.iter().enumerate() {
            for k in 0..up_per_spine {
                let lp = (hosts + s * up_per_spine + k + 1) as u8;
                let sp_port = (l * up_per_spine + k + 1) as u8;
                f.connect(leaf, lp, sp, sp_port, LinkRate::NDR_4X, 1.0).unwrap();
            }
        }
    }
    f
}

/// A three-level fat tree: `pods` pods of `leaves` leaves × `spines` spines (complete
/// bipartite inside a pod), `hosts` CAs per leaf, and `spines × cores_per_spine` core
/// switches: spine s of every pod cables to cores `s*cps .. (s+1)*cps`.
pub fn fat_tree_3(pods: usize, leaves: usize, spines: usize, hosts: usize, cores_per_spine: usize) -> Fabric {
    let mut f = Fabric::new();
    let mut g = GuidGen::new();
    let ncores = spines * cores_per_spine;
    let mut cores = Vec::new();
    for c in 0..ncores {
        cores.push(
            f.add_node(NodeSpec::switch(format!("core{c}"), g.switch(), pods as u8).level(3))
                .unwrap(),
        );
    }
    for p in 0..pods {
        let mut sp = Vec::new();
        for s in 0..spines {
            let id = f
                .add_node(NodeSpec::switch(format!("p{p}s{s}"), g.switch(), (leaves + cores_per_spine) as u8).level(2));
            sp.push(id.unwrap());
        }
        for (s, &spine) in sp.iter().enumerate() {
            for k in 0..cores_per_spine {
                let c = cores[s * cores_per_spine + k];
                f.connect(spine, (leaves + k + 1) as u8, c, (p + 1) as u8, LinkRate::NDR_4X, 1.0)
                    .unwrap();
            }
        }
        for l in 0..leaves {
            let leaf = f
                .add_node(NodeSpec::switch(format!("p{p}l{l}"), g.switch(), (hosts + spines) as u8).level(1))
                .unwrap();
            for h in 0..hosts {
                let c = f
                    .add_node(NodeSpec::ca(format!("h{p}_{l}_{h}"), g.ca(1), 1).level(0))
                    .unwrap();
                f.connect(leaf, (h + 1) as u8, c, 1, LinkRate::NDR_4X, 1.0).unwrap();
            }
            for (s, &spine) in sp.iter().enumerate() {
                f.connect(leaf, (hosts + s + 1) as u8, spine, (l + 1) as u8, LinkRate::NDR_4X, 1.0)
                    .unwrap();
            }
        }
    }
    f
}

/// The 2592-host three-level fat tree of the benchmarks: radix-36 switches, 8 pods of
/// 18 leaves × 18 spines, 18 hosts per leaf, 324 cores (8 ports used each).
pub fn fat_tree_2592() -> Fabric {
    fat_tree_3(8, 18, 18, 18, 18)
}

/// A connected random irregular fabric: a random spanning tree over `switches`
/// switches plus `extra` random switch-to-switch cables, and `cas` single-port CAs on
/// random switches. Same seed, same fabric.
pub fn random_irregular(seed: u64, switches: usize, extra: usize, cas: usize) -> Fabric {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut f = Fabric::new();
    let mut g = GuidGen::new();
    let ports = 32u8;
    let sw: Vec<NodeId> = (0..switches)
        .map(|i| {
            f.add_node(NodeSpec::switch(format!("sw{i}"), g.switch(), ports))
                .unwrap()
        })
        .collect();
    let mut next_port = vec![1u8; switches];
    let cable = |f: &mut Fabric, a: usize, b: usize, next_port: &mut Vec<u8>| -> bool {
        if a == b || next_port[a] > ports || next_port[b] > ports {
            return false;
        }
        f.connect(sw[a], next_port[a], sw[b], next_port[b], LinkRate::NDR_4X, 1.0)
            .unwrap();
        next_port[a] += 1;
        next_port[b] += 1;
        true
    };
    for i in 1..switches {
        let mut tries = 0;
        loop {
            let j = rng.random_range(0..i);
            if cable(&mut f, i, j, &mut next_port) || tries > 100 {
                break;
            }
            tries += 1;
        }
    }
    for _ in 0..extra {
        let a = rng.random_range(0..switches);
        let b = rng.random_range(0..switches);
        cable(&mut f, a, b, &mut next_port);
    }
    for c in 0..cas {
        let mut s = rng.random_range(0..switches);
        for _ in 0..switches {
            if next_port[s] <= ports {
                break;
            }
            s = (s + 1) % switches;
        }
        if next_port[s] > ports {
            break;
        }
        let ca = f.add_node(NodeSpec::ca(format!("h{c}"), g.ca(1), 1)).unwrap();
        f.connect(sw[s], next_port[s], ca, 1, LinkRate::NDR_4X, 1.0).unwrap();
        next_port[s] += 1;
    }
    f
}

/// libumad2sim.so (Debian `libumad2sim0`), if installed: the `LD_PRELOAD` that
/// puts a umad program on an ibsim fabric.
pub fn umad2sim() -> Option<std::path::PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
        "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
        "/usr/lib/umad2sim/libumad2sim.so",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.exists())
}

/// The format samples kept in the repository (`crates/fabric/tests/data/samples`:
/// unchanged copies of ibsim's example nets, ibnetdiscover outputs and ns-3 HPCC
/// topologies), which tests use as inputs.
pub fn samples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/tests/data/samples")
}

/// The environment variable that names the reference folder (`shared/`: OpenSM
/// dumps, scapy-built wire vectors, published formats) that conformance tests read.
pub const REFERENCE_DIR_VAR: &str = "RDMALAB_REFERENCE_DIR";

/// The reference folder: `$RDMALAB_REFERENCE_DIR`, else `../shared` beside the
/// repository. Only conformance tests (the `reference::` modules, which
/// `scripts/test` leaves out and counts when the folder is absent) call this; it
/// panics, naming the folder and the variable, when the folder is not there.
pub fn reference_dir() -> std::path::PathBuf {
    let dir = std::env::var_os(REFERENCE_DIR_VAR).map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        std::path::PathBuf::from,
    );
    assert!(
        dir.join("formats").is_dir(),
        "reference data not found: {} has no formats/ folder; set {REFERENCE_DIR_VAR} to the shared reference folder",
        dir.display()
    );
    dir
}
