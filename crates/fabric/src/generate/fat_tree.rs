//! Folded-Clos ("fat tree") fabrics: 2-tier leaf–spine, 3-tier k-ary fat trees and
//! multi-pod fabrics joined by long inter-pod cables.
//!
//! ```text
//!            core  core  core  core          tier 3 (3-tier / multi-pod only)
//!              \    / \   /  \   /
//!            spine spine    spine spine      tier 2
//!              | \ / |        | \ / |
//!            leaf  leaf     leaf  leaf       tier 1
//!            |||   |||      |||   |||
//!            hosts hosts    hosts hosts      tier 0
//!            `--- pod 0 --' `--- pod 1 --'
//! ```
//! Port numbering (the same as the ibsim fat-tree generator in the shared
//! InfiniBand reference §6): a leaf's ports `1..=h` face hosts and the following
//! ports face spines, spine-major (`h + 1 + s·u + t` is cable `t` to spine `s`); a
//! spine's ports face leaves first (leaf-major) and then cores, core-major.

use serde::{Deserialize, Serialize};

use super::{Build, Cabling, GenError, bad, check_radix, width};
use crate::model::{Fabric, NodeId};
use crate::rate::LinkRate;

/// A 2-tier leaf–spine fabric (a two-level fat tree when not oversubscribed).
///
/// With the defaults (radix 36, oversubscription 1) this is the classic 648-host
/// two-level fat tree of 36 leaves × 18 spines on which OpenSM was measured
/// (shared InfiniBand reference §1.7); radix 64 gives the other measured shape,
/// 64 leaves × 32 spines with 2,048 hosts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeafSpineParams {
    /// Ports per switch.
    pub radix: u32,
    /// Host ports per leaf; the rest are uplinks. Default: from `oversubscription`.
    pub hosts_per_leaf: Option<u32>,
    /// Host ports : uplinks at a leaf (1 = non-blocking, 3 = 3:1).
    pub oversubscription: f64,
    /// Number of spines. Default: one per leaf uplink (one cable per leaf–spine pair).
    /// Must divide the leaf's uplink count.
    pub spines: Option<u32>,
    /// Number of leaves. Default: as many as the spines have ports for.
    pub leaves: Option<u32>,
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Cable lengths.
    pub cabling: Cabling,
}

impl Default for LeafSpineParams {
    fn default() -> Self {
        LeafSpineParams {
            radix: 36,
            hosts_per_leaf: None,
            oversubscription: 1.0,
            spines: None,
            leaves: None,
            rate: LinkRate::NDR_4X,
            cabling: Cabling::default(),
        }
    }
}

/// A 3-tier k-ary fat tree (Al-Fares et al., "A Scalable, Commodity Data Center
/// Network Architecture", SIGCOMM 2008), optionally with fewer than `k` pods.
///
/// Each pod holds k/2 leaves and k/2 spines; every leaf has one cable to every spine
/// of its pod. Spine `j` of every pod connects to core group `j`. With all k pods
/// there are (k/2)² cores, each with one cable per pod, and k³/4 hosts: k = 64 gives
/// 65,536 hosts. With `pods` = P < k, group `j` has the fewest cores `m` (a divisor of
/// k/2, m ≥ P/2) whose ports still take every spine uplink, each spine running k/(2m)
/// parallel cables to each core of its group.
///
/// `radix 36, pods 8` is rdmalab's 2,592-host 3-tier tree: 8 pods × 18 leaves × 18
/// hosts; 144 leaves, 144 spines and 18 groups × 6 = 108 cores with 3 cables to each
/// spine (24 of 36 core ports used), non-blocking at every tier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FatTree3Params {
    /// k: ports per switch (even).
    pub radix: u32,
    /// Number of pods (default and maximum: k).
    pub pods: Option<u32>,
    /// Hosts per leaf (default and maximum: k/2; fewer leaves ports unused).
    pub hosts_per_leaf: Option<u32>,
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Cable lengths.
    pub cabling: Cabling,
}

impl Default for FatTree3Params {
    fn default() -> Self {
        FatTree3Params {
            radix: 36,
            pods: None,
            hosts_per_leaf: None,
            rate: LinkRate::NDR_4X,
            cabling: Cabling::default(),
        }
    }
}

/// Several leaf–spine pods (for example in different buildings) joined by a core
/// tier over long cables. The core tier sits at a central site and every spine–core
/// cable is `inter_pod_m` long, so traffic between pods crosses two of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MultiPodParams {
    /// Number of pods.
    pub pods: u32,
    /// Ports per switch.
    pub radix: u32,
    /// Leaves per pod.
    pub leaves_per_pod: u32,
    /// Hosts per leaf.
    pub hosts_per_leaf: u32,
    /// Spines per pod; each leaf has `radix - hosts_per_leaf` uplinks spread evenly
    /// over them (must divide).
    pub spines_per_pod: u32,
    /// Uplinks per spine to the core tier; fewer than its downlinks oversubscribes the
    /// long haul, which is usual when it is kilometres of optics.
    pub spine_uplinks: u32,
    /// Length of each spine–core cable, in metres (kilometres between sites).
    pub inter_pod_m: f64,
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Cable lengths inside a pod (`spine_core_m` is replaced by `inter_pod_m`).
    pub cabling: Cabling,
}

impl Default for MultiPodParams {
    fn default() -> Self {
        MultiPodParams {
            pods: 2,
            radix: 36,
            leaves_per_pod: 18,
            hosts_per_leaf: 18,
            spines_per_pod: 18,
            spine_uplinks: 9,
            inter_pod_m: 2_000.0,
            rate: LinkRate::NDR_4X,
            cabling: Cabling::default(),
        }
    }
}

/// Generate a 2-tier leaf–spine fabric.
pub fn leaf_spine(p: &LeafSpineParams) -> Result<Fabric, GenError> {
    let k = check_radix("radix", p.radix)? as u32;
    p.cabling.check()?;
    let h = match p.hosts_per_leaf {
        Some(h) => h,
        None => {
            let r = p.oversubscription;
            if !(r.is_finite() && r > 0.0) {
                return Err(bad("oversubscription", format!("{r} is not a positive ratio")));
            }
            (f64::from(k) * r / (1.0 + r)).round() as u32
        }
    };
    if h == 0 || h >= k {
        return Err(bad(
            "hosts_per_leaf",
            format!("{h} host ports leave no uplinks on a {k}-port leaf"),
        ));
    }
    let u = k - h;
    let s = p.spines.unwrap_or(u);
    if s == 0 || !u.is_multiple_of(s) {
        return Err(bad(
            "spines",
            format!("{s} spines do not divide the {u} uplinks of each leaf evenly"),
        ));
    }
    let per = u / s;
    let max_leaves = k / per;
    let l = p.leaves.unwrap_or(max_leaves);
    if l == 0 || l > max_leaves {
        return Err(bad(
            "leaves",
            format!("{l} leaves; each spine has {k} ports and takes {per} cable(s) per leaf, so 1 to {max_leaves}"),
        ));
    }
    let mut b = Build::new();
    let (wl, ws, wh) = (width(l as usize), width(s as usize), width((l * h) as usize));
    let leaves: Vec<NodeId> = (0..l)
        .map(|i| b.switch(format!("leaf{i:0wl$}"), k as u8, 1))
        .collect::<Result<_, _>>()?;
    let spines: Vec<NodeId> = (0..s)
        .map(|i| b.switch(format!("spine{i:0ws$}"), k as u8, 2))
        .collect::<Result<_, _>>()?;
    for (li, &leaf) in leaves.iter().enumerate() {
        for hi in 0..h {
            let (_, ca) = b.single_nic_host(format!("host{:0wh$}", li as u32 * h + hi))?;
            b.cable(leaf, (hi + 1) as u8, ca, 1, p.rate, p.cabling.host_leaf_m)?;
        }
    }
    for (li, &leaf) in leaves.iter().enumerate() {
        for (si, &spine) in spines.iter().enumerate() {
            for t in 0..per {
                let lp = h + 1 + si as u32 * per + t;
                let sp = li as u32 * per + t + 1;
                b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
            }
        }
    }
    Ok(b.f)
}

/// Shape of a 3-tier tree, after validation.
struct Shape {
    k: u32,
    pods: u32,
    leaves: u32,
    hosts: u32,
    spines: u32,
    /// Cables from each leaf to each spine of its pod.
    ls: u32,
    /// Uplinks per spine.
    spine_up: u32,
    /// Cores per group (one group per spine index).
    m: u32,
    rate: LinkRate,
    host_leaf_m: f64,
    leaf_spine_m: f64,
    spine_core_m: f64,
}

/// Smallest divisor `m` of `up` such that `pods · up / m` cables fit on a core.
fn cores_per_group(k: u32, pods: u32, up: u32) -> Option<u32> {
    (1..=up).find(|&m| up.is_multiple_of(m) && pods * (up / m) <= k)
}

fn three_tier(sh: &Shape) -> Result<Fabric, GenError> {
    let Shape {
        k,
        pods,
        leaves,
        hosts,
        spines,
        ls,
        spine_up,
        m,
        rate,
        ..
    } = *sh;
    let sc = spine_up / m; // cables per spine–core pair
    let mut b = Build::new();
    let (wp, wl, ws) = (width(pods as usize), width(leaves as usize), width(spines as usize));
    let wh = width((pods * leaves * hosts) as usize);
    let (wg, wm) = (width(spines as usize), width(m as usize));
    // Cores first, grouped by spine index, so their GUIDs are the lowest of the
    // switches: the root of the tree reads first in every dump.
    let mut cores = Vec::with_capacity((spines * m) as usize);
    for g in 0..spines {
        for c in 0..m {
            cores.push(b.switch(format!("core{g:0wg$}-{c:0wm$}"), k as u8, 3)?);
        }
    }
    let mut host_no = 0u32;
    for pod in 0..pods {
        let spine_ids: Vec<NodeId> = (0..spines)
            .map(|s| b.switch(format!("pod{pod:0wp$}-spine{s:0ws$}"), k as u8, 2))
            .collect::<Result<_, _>>()?;
        let leaf_ids: Vec<NodeId> = (0..leaves)
            .map(|l| b.switch(format!("pod{pod:0wp$}-leaf{l:0wl$}"), k as u8, 1))
            .collect::<Result<_, _>>()?;
        for &leaf in &leaf_ids {
            for hi in 0..hosts {
                let (_, ca) = b.single_nic_host(format!("host{host_no:0wh$}"))?;
                host_no += 1;
                b.cable(leaf, (hi + 1) as u8, ca, 1, rate, sh.host_leaf_m)?;
            }
        }
        for (li, &leaf) in leaf_ids.iter().enumerate() {
            for (si, &spine) in spine_ids.iter().enumerate() {
                for t in 0..ls {
                    let lp = hosts + 1 + si as u32 * ls + t;
                    let sp = li as u32 * ls + t + 1;
                    b.cable(leaf, lp as u8, spine, sp as u8, rate, sh.leaf_spine_m)?;
                }
            }
        }
        let spine_down = leaves * ls;
        for (si, &spine) in spine_ids.iter().enumerate() {
            for c in 0..m {
                let core = cores[(si as u32 * m + c) as usize];
                for t in 0..sc {
                    let sp = spine_down + 1 + c * sc + t;
                    let cp = pod * sc + t + 1;
                    b.cable(spine, sp as u8, core, cp as u8, rate, sh.spine_core_m)?;
                }
            }
        }
    }
    Ok(b.f)
}

/// Generate a 3-tier k-ary fat tree.
pub fn fat_tree3(p: &FatTree3Params) -> Result<Fabric, GenError> {
    let k = check_radix("radix", p.radix)? as u32;
    p.cabling.check()?;
    if !k.is_multiple_of(2) || k < 4 {
        return Err(bad(
            "radix",
            format!("{k}: a k-ary fat tree needs an even k of at least 4"),
        ));
    }
    let half = k / 2;
    let pods = p.pods.unwrap_or(k);
    if pods == 0 || pods > k {
        return Err(bad("pods", format!("{pods} pods; a {k}-ary fat tree has 1 to {k}")));
    }
    let hosts = p.hosts_per_leaf.unwrap_or(half);
    if hosts == 0 || hosts > half {
        return Err(bad(
            "hosts_per_leaf",
            format!("{hosts}; a {k}-ary fat tree leaf takes 1 to {half} hosts"),
        ));
    }
    let m = cores_per_group(k, pods, half).ok_or_else(|| bad("pods", "no core group size fits"))?;
    three_tier(&Shape {
        k,
        pods,
        leaves: half,
        hosts,
        spines: half,
        ls: 1,
        spine_up: half,
        m,
        rate: p.rate,
        host_leaf_m: p.cabling.host_leaf_m,
        leaf_spine_m: p.cabling.leaf_spine_m,
        spine_core_m: p.cabling.spine_core_m,
    })
}

/// Generate a multi-pod fabric with long inter-pod cables.
pub fn multi_pod(p: &MultiPodParams) -> Result<Fabric, GenError> {
    let k = check_radix("radix", p.radix)? as u32;
    p.cabling.check()?;
    if !(p.inter_pod_m.is_finite() && p.inter_pod_m >= 0.0) {
        return Err(bad(
            "inter_pod_m",
            format!("{} is not a non-negative length in metres", p.inter_pod_m),
        ));
    }
    if p.pods == 0 {
        return Err(bad("pods", "at least one pod is needed"));
    }
    let h = p.hosts_per_leaf;
    if h == 0 || h >= k {
        return Err(bad(
            "hosts_per_leaf",
            format!("{h} host ports leave no uplinks on a {k}-port leaf"),
        ));
    }
    let u = k - h;
    let s = p.spines_per_pod;
    if s == 0 || !u.is_multiple_of(s) {
        return Err(bad(
            "spines_per_pod",
            format!("{s} spines do not divide the {u} uplinks of each leaf evenly"),
        ));
    }
    let ls = u / s;
    let down = p.leaves_per_pod * ls;
    if p.leaves_per_pod == 0 || down >= k {
        return Err(bad(
            "leaves_per_pod",
            format!(
                "{} leaves × {ls} cable(s) leave no uplink port on a {k}-port spine",
                p.leaves_per_pod
            ),
        ));
    }
    if p.spine_uplinks == 0 || p.spine_uplinks > k - down {
        return Err(bad(
            "spine_uplinks",
            format!("{}; each spine has {} free ports", p.spine_uplinks, k - down),
        ));
    }
    let m = cores_per_group(k, p.pods, p.spine_uplinks).ok_or_else(|| {
        bad(
            "pods",
            format!(
                "{} pods × {} uplinks do not fit on {k}-port cores",
                p.pods, p.spine_uplinks
            ),
        )
    })?;
    three_tier(&Shape {
        k,
        pods: p.pods,
        leaves: p.leaves_per_pod,
        hosts: h,
        spines: s,
        ls,
        spine_up: p.spine_uplinks,
        m,
        rate: p.rate,
        host_leaf_m: p.cabling.host_leaf_m,
        leaf_spine_m: p.cabling.leaf_spine_m,
        spine_core_m: p.inter_pod_m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn degree_ok(f: &Fabric) {
        // Every CA is cabled; no switch exceeds its radix (the model enforces it).
        for n in &f.nodes {
            if n.kind == NodeKind::Ca {
                assert!(n.ports[1].link.is_some(), "{} unplugged", n.name);
            }
        }
    }

    #[test]
    fn leaf_spine_648() {
        let f = leaf_spine(&LeafSpineParams::default()).unwrap();
        assert_eq!(f.count(NodeKind::Ca), 648);
        assert_eq!(f.count(NodeKind::Switch), 54);
        assert_eq!(f.links.len(), 648 + 36 * 18);
        assert_eq!(f.hosts.len(), 648);
        let l0 = f.by_name("leaf00").unwrap();
        let s3 = f.by_name("spine03").unwrap();
        // leaf port 19 + 3 → spine 3 port 1
        assert_eq!(f.peer(l0, 22).unwrap().0.node, s3);
        assert_eq!(f.peer(l0, 22).unwrap().0.port, 1);
        degree_ok(&f);
        let flat = f.freeze();
        let d = flat.bfs_hops(f.by_name("host000").unwrap());
        assert_eq!(d[f.by_name("host647").unwrap().idx()], 4);
    }

    #[test]
    fn leaf_spine_radix_64_is_the_2048_host_tree() {
        let f = leaf_spine(&LeafSpineParams {
            radix: 64,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.count(NodeKind::Ca), 2048);
        assert_eq!(f.count(NodeKind::Switch), 64 + 32);
    }

    #[test]
    fn leaf_spine_oversubscribed() {
        let p = LeafSpineParams {
            oversubscription: 3.0,
            ..Default::default()
        };
        let f = leaf_spine(&p).unwrap();
        // 27 hosts + 9 uplinks per leaf; 9 spines × 36 ports → 36 leaves.
        assert_eq!(f.count(NodeKind::Ca), 27 * 36);
        assert_eq!(f.count(NodeKind::Switch), 36 + 9);
        let bad = LeafSpineParams {
            spines: Some(7),
            ..Default::default()
        };
        assert!(matches!(leaf_spine(&bad), Err(GenError::Param { param: "spines", .. })));
    }

    #[test]
    fn fat_tree3_2592() {
        let f = fat_tree3(&FatTree3Params {
            pods: Some(8),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.count(NodeKind::Ca), 2592);
        assert_eq!(f.count(NodeKind::Switch), 144 + 144 + 108);
        let cores = f.nodes.iter().filter(|n| n.level == Some(3)).count();
        assert_eq!(cores, 108);
        degree_ok(&f);
        let flat = f.freeze();
        let d = flat.bfs_hops(f.by_name("host0000").unwrap());
        assert_eq!(d[f.by_name("host2591").unwrap().idx()], 6);
    }

    #[test]
    fn fat_tree3_full_k8() {
        let f = fat_tree3(&FatTree3Params {
            radix: 8,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.count(NodeKind::Ca), 128);
        assert_eq!(f.count(NodeKind::Switch), 5 * 16);
        // every switch port used
        for n in f.nodes.iter().filter(|n| n.is_switch()) {
            assert!(n.port_nums().all(|p| n.ports[p as usize].link.is_some()), "{}", n.name);
        }
    }

    #[test]
    fn multi_pod_has_long_links() {
        let f = multi_pod(&MultiPodParams::default()).unwrap();
        assert_eq!(f.count(NodeKind::Ca), 648);
        let long = f.links.iter().filter(|l| l.length_m >= 1000.0).count();
        assert_eq!(long, 2 * 18 * 9);
        assert_eq!(
            f.links.iter().find(|l| l.length_m >= 1000.0).unwrap().delay_ps,
            10_000_000
        );
    }

    #[test]
    fn generators_are_deterministic() {
        let a = fat_tree3(&FatTree3Params {
            radix: 8,
            pods: Some(3),
            ..Default::default()
        })
        .unwrap();
        let b = fat_tree3(&FatTree3Params {
            radix: 8,
            pods: Some(3),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(a, b);
    }
}
