//! Print a digest (FNV-1a) of the tables every engine computes on a set of fabrics, so
//! that a speed change can be checked to leave routing byte-for-byte unchanged:
//! `cargo run --release -p rdmalab-sm --example lft_digest [big]` before and after, then
//! `diff` the outputs. `big` adds the radix-48 fat tree (27,648 hosts, ftree).

use fabric::{Fabric, FatTree3Params, TorusParams, fat_tree3, torus};
use sm::routing::{EngineKind, RouteOptions};
use sm::testkit;

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

fn digest(name: &str, f: &Fabric, e: EngineKind, lmc: u8, opts: &RouteOptions) {
    let sm_port = sm::lids::default_sm_port(f).expect("sm port");
    let (mut t, _) = sm::lids::assign(f, sm_port, lmc, None).expect("lids");
    let flat = f.freeze();
    let r = sm::routing::route(f, &flat, &mut t, &[e], opts);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for l in &t.lft {
        fnv(&mut h, &(l.ports.len() as u64).to_le_bytes());
        fnv(&mut h, &l.ports);
    }
    if let Some(s) = &t.sl2vl {
        for n in s {
            for i in n {
                for o in i {
                    fnv(&mut h, o);
                }
            }
        }
    }
    if let Some(p) = &t.path_sl {
        fnv(&mut h, &p.sl);
    }
    fnv(&mut h, &[t.vls_used]);
    let what = match &r {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("error: {e}"),
    };
    println!("{name:<28} {:<7} lmc {lmc}  {h:016x}  {what}", e.name());
}

fn main() {
    let big = std::env::args().nth(1).is_some_and(|a| a == "big");
    let mut fabrics: Vec<(String, Fabric)> = vec![
        ("fat_tree_2592".into(), testkit::fat_tree_2592()),
        (
            "fat_tree3 k36 8 pods".into(),
            fat_tree3(&FatTree3Params {
                pods: Some(8),
                ..Default::default()
            })
            .expect("ft"),
        ),
        (
            "fat_tree3 k12 5 pods 4 hosts".into(),
            fat_tree3(&FatTree3Params {
                radix: 12,
                pods: Some(5),
                hosts_per_leaf: Some(4),
                ..Default::default()
            })
            .expect("ft"),
        ),
        ("fat_tree_2 8x4x6 up2".into(), testkit::fat_tree_2(8, 4, 6, 2)),
        (
            "torus 4x4x3".into(),
            torus(&TorusParams {
                dims: [4, 4, 3],
                hosts_per_switch: 2,
                ..Default::default()
            })
            .expect("torus"),
        ),
    ];
    for (seed, sw, extra, cas) in [(1, 12, 6, 30), (2, 40, 30, 120), (3, 25, 0, 60), (4, 60, 80, 200)] {
        fabrics.push((
            format!("random {seed} {sw}/{extra}/{cas}"),
            testkit::random_irregular(seed, sw, extra, cas),
        ));
    }
    let dir = testkit::samples_dir();
    for n in [
        "credit-loops.converted.net",
        "fattree-648.generated.net",
        "net",
        "net.2sw2path4hca",
    ] {
        if let Ok(text) = std::fs::read_to_string(dir.join(n)) {
            fabrics.push((n.into(), testkit::ibsim_net(&text).expect("net")));
        }
    }
    for (name, f) in &fabrics {
        for e in EngineKind::ALL {
            for lmc in [0u8, 1, 2] {
                digest(name, f, e, lmc, &RouteOptions::default());
            }
        }
        // Roots from a GUID list: the first two switches.
        let roots: Vec<_> = f
            .nodes
            .iter()
            .filter(|n| n.kind == fabric::NodeKind::Switch)
            .take(2)
            .map(|n| n.node_guid)
            .collect();
        let opts = RouteOptions {
            root_guids: roots,
            ..Default::default()
        };
        for e in [EngineKind::UpDn, EngineKind::Ftree] {
            digest(&format!("{name} +roots"), f, e, 0, &opts);
        }
    }
    if big {
        let f = fat_tree3(&FatTree3Params {
            radix: 48,
            ..Default::default()
        })
        .expect("k48");
        digest("fat_tree3 k48", &f, EngineKind::Ftree, 0, &RouteOptions::default());
        digest("fat_tree3 k48", &f, EngineKind::UpDn, 0, &RouteOptions::default());
    }
}
