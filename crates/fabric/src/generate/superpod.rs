//! Rail-optimized scalable units, as the NVIDIA DGX SuperPOD reference
//! architectures build them.
//!
//! A scalable unit (SU) is `servers_per_su` GPU servers with `rails` NICs each;
//! the SU has one leaf per rail, and NIC r of every server of the SU sits on the
//! SU's rail-r leaf, so two GPUs of one index in one SU are one switch apart
//! (DGX SuperPOD H100 RA, "Network Fabrics": SU = 32 DGX H100, 8 leaves).
//!
//! - **Two tiers** while the spines can be shared by every leaf: `S` spines, each
//!   leaf cabled to every spine with `uplinks / S` links, `S` the smallest count
//!   that takes all leaf uplinks and divides a leaf's uplinks. This gives the H100
//!   RA's Table 4: 1–4 SUs with 4, 8, 16 and 16 spines.
//! - **Three tiers** beyond: SUs are grouped in pods of up to `radix / 2`; each
//!   (pod, rail) has its own block of spines, every leaf of the pod's rail cabled
//!   to every spine of the block (`radix / 2` down-ports per spine, `radix / 2`
//!   up); spine `i` of every block joins core group `i`. This gives the B200 RA's
//!   counts: 16 SUs = 128 leaves, 128 spines, 64 cores; 32 SUs = 256 / 256 / 128;
//!   64 SUs = 512 / 512 / 256 (DGX SuperPOD B200 RA, "DGX SuperPOD Architecture").
//!
//! Servers are hosts numbered across the whole pod, `gpuNNNN` (SU `s` holds
//! servers `s·servers_per_su` onwards); NIC r of a server is `gpuNNNN-mlx5_r`
//! with NodeDescription `gpuNNNN mlx5_r`, the form ibnetdiscover shows.

use super::{Build, Cabling, GenError, bad, check_radix, width};
use crate::model::{Fabric, NodeId, NodeSpec};
use crate::rate::LinkRate;

/// A rail-optimized SuperPOD.
#[derive(Clone, Debug, PartialEq)]
pub struct SuperPodParams {
    /// Scalable units.
    pub sus: u32,
    /// GPU servers per SU (32 in the DGX SuperPOD RAs).
    pub servers_per_su: u32,
    /// NICs (rails) per server (8).
    pub rails: u32,
    /// Ports per switch (64: NVIDIA Quantum QM9700, 64 NDR ports).
    pub radix: u32,
    /// Uplinks per leaf (default `servers_per_su`: non-blocking; fewer
    /// oversubscribe the leaf).
    pub uplinks: Option<u32>,
    /// Rate of every cable (with several ports per NIC: each port's).
    pub rate: LinkRate,
    /// Cable lengths.
    pub cabling: Cabling,
    /// Independent planes (1: one fabric). With `P` planes every NIC has a
    /// port per plane, port `p` cabled to plane `p - 1`, and each plane is
    /// its own set of leaves, spines and cores that never meet the others:
    /// Alibaba HPN's dual-plane design (SIGCOMM'24, §4: each 400G NIC as two
    /// 200G ports, one per plane), or one plane per port of a multi-plane
    /// NIC.
    pub planes: u32,
    /// Two ToRs per rail and SU in each plane, each NIC cabled to both
    /// (port 2 of the pair to the second leaf), both leaves under the plane's
    /// spines: a leaf or its cable failing leaves every NIC connected
    /// (HPN's non-stacked dual-ToR, §4.1).
    pub dual_tor: bool,
}

impl Default for SuperPodParams {
    fn default() -> Self {
        SuperPodParams {
            sus: 4,
            servers_per_su: 32,
            rails: 8,
            radix: 64,
            uplinks: None,
            rate: LinkRate::NDR_4X,
            cabling: Cabling::default(),
            planes: 1,
            dual_tor: false,
        }
    }
}

/// The shape [`superpod`] builds for some parameters: what a reader of the RA
/// tables compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperPodShape {
    /// 2 or 3.
    pub tiers: u8,
    /// Leaves (SUs × rails).
    pub leaves: u32,
    /// Spines.
    pub spines: u32,
    /// Core switches (0 in two tiers).
    pub cores: u32,
    /// SUs per pod (three tiers; all SUs in two).
    pub sus_per_pod: u32,
    /// Links from each leaf to each spine it reaches.
    pub leaf_spine_links: u32,
    /// Spines per (pod, rail) block (three tiers) or in all (two).
    pub spines_per_block: u32,
    /// Core switches per core group (three tiers).
    pub cores_per_group: u32,
    /// Links from each spine to each core of its group.
    pub spine_core_links: u32,
    /// Planes (the switch counts above are of all planes together).
    pub planes: u32,
    /// Leaves per rail, SU and plane (2 with dual ToRs).
    pub tors: u32,
}

impl SuperPodParams {
    /// Check the parameters and work out the shape.
    pub fn shape(&self) -> Result<SuperPodShape, GenError> {
        let k = u32::from(check_radix("radix", self.radix)?);
        let (n, r) = (self.servers_per_su, self.rails);
        if self.sus == 0 {
            return Err(bad("sus", "at least one scalable unit"));
        }
        if r == 0 || r > 15 {
            return Err(bad("rails", format!("{r} NICs per server; 1 to 15 supported")));
        }
        let u = self.uplinks.unwrap_or(n);
        if n == 0 || u == 0 || n + u > k {
            return Err(bad(
                "servers_per_su",
                format!("{n} server ports + {u} uplinks do not fit a {k}-port leaf"),
            ));
        }
        if self.planes == 0 || self.planes > 8 {
            return Err(bad("planes", format!("{} planes; 1 to 8 supported", self.planes)));
        }
        let (np, t) = (self.planes, if self.dual_tor { 2 } else { 1 });
        // one plane's leaves; the counts returned are of all planes
        let leaves = self.sus * r * t;
        // two tiers: every leaf reaches every spine
        let need = (leaves * u).div_ceil(k);
        if let Some(s) = (need..=u).find(|&s| u.is_multiple_of(s) && (leaves * (u / s)) <= k) {
            return Ok(SuperPodShape {
                tiers: 2,
                leaves: leaves * np,
                spines: s * np,
                cores: 0,
                sus_per_pod: self.sus,
                leaf_spine_links: u / s,
                spines_per_block: s,
                cores_per_group: 0,
                spine_core_links: 0,
                planes: np,
                tors: t,
            });
        }
        // three tiers: pods of SUs, a spine block per (pod, rail) taking the
        // pod's leaves of that rail (both of a ToR pair)
        let h = k / 2;
        if h < t {
            return Err(bad("radix", format!("a {k}-port spine cannot take a ToR pair")));
        }
        let per_pod = self.sus.min(h / t);
        if !self.sus.is_multiple_of(per_pod) {
            return Err(bad(
                "sus",
                format!(
                    "{} SUs do not form whole pods of {per_pod} (a spine of {k} ports takes {h} leaves)",
                    self.sus
                ),
            ));
        }
        if !h.is_multiple_of(per_pod * t) {
            return Err(bad(
                "sus",
                format!(
                    "{} leaves per pod and rail do not divide a spine's {h} down-ports evenly",
                    per_pod * t
                ),
            ));
        }
        let m = h / (per_pod * t);
        if !u.is_multiple_of(m) {
            return Err(bad(
                "uplinks",
                format!("{u} leaf uplinks do not split into {m} links per spine"),
            ));
        }
        let block = u / m;
        let pods = self.sus / per_pod;
        let spines = pods * r * block;
        // core group i: spine i of every block, h uplinks each
        let group_ports = pods * r * h;
        if !group_ports.is_multiple_of(k) {
            return Err(bad(
                "sus",
                format!("{group_ports} spine uplinks per core group do not fill {k}-port cores"),
            ));
        }
        let per_group = group_ports / k;
        if per_group == 0 || !h.is_multiple_of(per_group) {
            return Err(bad(
                "sus",
                format!("{h} spine uplinks do not split evenly over {per_group} core switches"),
            ));
        }
        Ok(SuperPodShape {
            tiers: 3,
            leaves: leaves * np,
            spines: spines * np,
            cores: block * per_group * np,
            sus_per_pod: per_pod,
            leaf_spine_links: m,
            spines_per_block: block,
            cores_per_group: per_group,
            spine_core_links: h / per_group,
            planes: np,
            tors: t,
        })
    }
}

/// Generate the SuperPOD. Each GPU server is a host holding its `rails` CAs;
/// NIC r of every server of SU `s` is cabled to leaf `suS-railR`. With planes
/// or dual ToRs a NIC has a port per (plane, ToR), port `p·T + side + 1`
/// cabled to plane `p`'s leaf `pP-suS-railR` (dual ToRs: `…-a`, `…-b`), and
/// every plane is built like the single one (its switches prefixed `pP-`).
pub fn superpod(p: &SuperPodParams) -> Result<Fabric, GenError> {
    let sh = p.shape()?;
    p.cabling.check()?;
    let k = p.radix as u8;
    let (n, r) = (p.servers_per_su, p.rails);
    let (np, t) = (sh.planes, sh.tors);
    let mut b = Build::new();
    let (wsu, wr) = (width(p.sus as usize), width(r as usize));
    let ws = width((p.sus * n) as usize);
    let prefix = |plane: u32| if np > 1 { format!("p{plane}-") } else { String::new() };
    let side_name = |side: u32| match (t, side) {
        (1, _) => "",
        (_, 0) => "-a",
        _ => "-b",
    };
    // leaves[plane][su][rail · t + side]
    let mut leaves: Vec<Vec<Vec<NodeId>>> = Vec::with_capacity(np as usize);
    for plane in 0..np {
        let mut sus = Vec::with_capacity(p.sus as usize);
        for su in 0..p.sus {
            let mut row = Vec::with_capacity((r * t) as usize);
            for ri in 0..r {
                for side in 0..t {
                    row.push(b.switch(
                        format!("{}su{su:0wsu$}-rail{ri:0wr$}{}", prefix(plane), side_name(side)),
                        k,
                        1,
                    )?);
                }
            }
            sus.push(row);
        }
        leaves.push(sus);
    }
    let ports = (np * t) as u8;
    for su in 0..p.sus {
        for srv in 0..n {
            let g = su * n + srv;
            let host = format!("gpu{g:0ws$}");
            let h = b.f.add_host(host.clone());
            for ri in 0..r {
                let spec = NodeSpec::ca(format!("{host}-mlx5_{ri}"), b.guids.ca(), ports)
                    .desc(format!("{host} mlx5_{ri}"))
                    .level(0)
                    .host(h);
                let ca = b.f.add_node(spec)?;
                for plane in 0..np {
                    for side in 0..t {
                        b.cable(
                            leaves[plane as usize][su as usize][(ri * t + side) as usize],
                            (srv + 1) as u8,
                            ca,
                            (plane * t + side + 1) as u8,
                            p.rate,
                            p.cabling.host_leaf_m,
                        )?;
                    }
                }
            }
        }
    }
    for (plane, leaves) in leaves.iter().enumerate() {
        upper_tiers(p, &sh, &mut b, leaves, &prefix(plane as u32))?;
    }
    Ok(b.f)
}

/// One plane's spines (and cores) over its `leaves[su][rail · t + side]`.
fn upper_tiers(
    p: &SuperPodParams,
    sh: &SuperPodShape,
    b: &mut Build,
    leaves: &[Vec<NodeId>],
    prefix: &str,
) -> Result<(), GenError> {
    let k = p.radix as u8;
    let (n, r, t) = (p.servers_per_su, p.rails, sh.tors);
    let u = p.uplinks.unwrap_or(n);
    if sh.tiers == 2 {
        let count = sh.spines / sh.planes;
        let wsp = width(count as usize);
        let spines: Vec<NodeId> = (0..count)
            .map(|i| b.switch(format!("{prefix}spine{i:0wsp$}"), k, 2))
            .collect::<Result<_, _>>()?;
        let m = sh.leaf_spine_links;
        for (li, &leaf) in leaves.iter().flatten().enumerate() {
            for (si, &spine) in spines.iter().enumerate() {
                for l in 0..m {
                    let lp = n + 1 + si as u32 * m + l;
                    let sp = li as u32 * m + l + 1;
                    b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
                }
            }
        }
        return Ok(());
    }
    let pods = p.sus / sh.sus_per_pod;
    let h = p.radix / 2;
    let (wr, wp, wb) = (
        width(r as usize),
        width(pods as usize),
        width(sh.spines_per_block as usize),
    );
    // blocks[pod][rail][i]
    let mut blocks: Vec<Vec<Vec<NodeId>>> = Vec::with_capacity(pods as usize);
    for pod in 0..pods {
        let mut rails = Vec::with_capacity(r as usize);
        for ri in 0..r {
            rails.push(
                (0..sh.spines_per_block)
                    .map(|i| b.switch(format!("{prefix}pod{pod:0wp$}-rail{ri:0wr$}-spine{i:0wb$}"), k, 2))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        blocks.push(rails);
    }
    let m = sh.leaf_spine_links;
    for su in 0..p.sus {
        let (pod, slot) = (su / sh.sus_per_pod, su % sh.sus_per_pod);
        for ri in 0..r {
            for side in 0..t {
                let leaf = leaves[su as usize][(ri * t + side) as usize];
                for (i, &spine) in blocks[pod as usize][ri as usize].iter().enumerate() {
                    for l in 0..m {
                        let lp = n + 1 + i as u32 * m + l;
                        let sp = (slot * t + side) * m + l + 1;
                        b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
                    }
                }
            }
        }
    }
    debug_assert_eq!(u, sh.spines_per_block * m);
    let wg = width(sh.spines_per_block as usize);
    let wc = width(sh.cores_per_group as usize);
    let c = sh.spine_core_links;
    for i in 0..sh.spines_per_block {
        let cores: Vec<NodeId> = (0..sh.cores_per_group)
            .map(|j| b.switch(format!("{prefix}core{i:0wg$}-{j:0wc$}"), k, 3))
            .collect::<Result<_, _>>()?;
        // the group's spines in (pod, rail) order fill each core's ports in turn
        let mut next_port = vec![1u32; cores.len()];
        for pod in 0..pods {
            for ri in 0..r {
                let spine = blocks[pod as usize][ri as usize][i as usize];
                for (j, &core) in cores.iter().enumerate() {
                    for l in 0..c {
                        let sp = h + 1 + j as u32 * c + l;
                        let cp = next_port[j];
                        next_port[j] += 1;
                        b.cable(spine, sp as u8, core, cp as u8, p.rate, p.cabling.spine_core_m)?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn shape(sus: u32) -> SuperPodShape {
        SuperPodParams {
            sus,
            ..SuperPodParams::default()
        }
        .shape()
        .unwrap()
    }

    /// DGX SuperPOD H100 RA, Table 4 (leaf, spine per SU count; two tiers) and the
    /// B200 RA's three-tier counts (leaf, spine, core).
    #[test]
    fn the_reference_architectures_switch_counts() {
        let two = [(1, 8, 4), (2, 16, 8), (3, 24, 16), (4, 32, 16)];
        for (sus, leaf, spine) in two {
            let s = shape(sus);
            assert_eq!((s.tiers, s.leaves, s.spines, s.cores), (2, leaf, spine, 0), "{sus} SUs");
        }
        // the RA's 16, 32 and 64 SUs; 128 SUs (32,768 GPUs) continues the pattern
        let three = [
            (16, 128, 128, 64),
            (32, 256, 256, 128),
            (64, 512, 512, 256),
            (128, 1024, 1024, 512),
        ];
        for (sus, leaf, spine, core) in three {
            let s = shape(sus);
            assert_eq!(
                (s.tiers, s.leaves, s.spines, s.cores),
                (3, leaf, spine, core),
                "{sus} SUs"
            );
        }
    }

    #[test]
    fn every_port_is_used_once_and_cables_equal_the_gpu_count_per_tier() {
        for sus in [2, 16] {
            let p = SuperPodParams {
                sus,
                ..SuperPodParams::default()
            };
            let f = superpod(&p).unwrap();
            let gpus = (sus * 32 * 8) as usize;
            assert_eq!(f.count(NodeKind::Ca), gpus);
            let tier = |a: u8, b: u8| {
                f.links
                    .iter()
                    .filter(|l| {
                        let (x, y) = (f.node(l.a.node).level, f.node(l.b.node).level);
                        (x, y) == (Some(a), Some(b)) || (x, y) == (Some(b), Some(a))
                    })
                    .count()
            };
            assert_eq!(tier(0, 1), gpus);
            assert_eq!(tier(1, 2), gpus, "non-blocking leaves: as many uplinks as servers");
            if sus == 16 {
                assert_eq!(tier(2, 3), gpus);
            }
            // every switch port cabled exactly once
            for id in f.nodes_of(NodeKind::Switch) {
                let node = f.node(id);
                let used = node.port_nums().filter(|&q| f.peer(id, q).is_some()).count();
                assert_eq!(used, 64, "{}", node.name);
            }
        }
    }

    #[test]
    fn nic_r_of_every_server_in_an_su_sits_on_that_sus_rail_r_leaf() {
        let f = superpod(&SuperPodParams {
            sus: 32,
            ..SuperPodParams::default()
        })
        .unwrap();
        for name in ["gpu0000-mlx5_0", "gpu0031-mlx5_7", "gpu0032-mlx5_3", "gpu1023-mlx5_5"] {
            let ca = f.by_name(name).unwrap();
            let g: u32 = name[3..7].parse().unwrap();
            let r: u32 = name[13..].parse().unwrap();
            let leaf = f.peer(ca, 1).unwrap().0.node;
            assert_eq!(f.node(leaf).name, format!("su{:02}-rail{r}", g / 32), "{name}");
        }
    }

    #[test]
    fn parameters_that_do_not_build_are_refused_by_name() {
        let e = |p: SuperPodParams| p.shape().unwrap_err().to_string();
        let d = SuperPodParams::default;
        assert!(e(SuperPodParams { sus: 0, ..d() }).contains("`sus`"));
        assert!(e(SuperPodParams { rails: 0, ..d() }).contains("`rails`"));
        assert!(
            e(SuperPodParams {
                servers_per_su: 40,
                ..d()
            })
            .contains("`servers_per_su`")
        );
        // 48 SUs: pods of 32 do not divide them
        assert!(e(SuperPodParams { sus: 48, ..d() }).contains("whole pods"));
    }

    fn small(planes: u32, dual_tor: bool) -> SuperPodParams {
        SuperPodParams {
            sus: 2,
            servers_per_su: 4,
            rails: 4,
            radix: 16,
            planes,
            dual_tor,
            ..SuperPodParams::default()
        }
    }

    /// Two planes (Alibaba HPN's dual plane): every NIC has a port on each,
    /// port p on plane p-1's rail leaf, and no cable joins the planes' switches.
    #[test]
    fn two_planes_give_every_nic_a_port_on_each_and_never_meet() {
        let one = small(1, false).shape().unwrap();
        let p = small(2, false);
        let sh = p.shape().unwrap();
        assert_eq!((sh.planes, sh.tors), (2, 1));
        assert_eq!(
            (sh.leaves, sh.spines, sh.cores),
            (2 * one.leaves, 2 * one.spines, 2 * one.cores)
        );
        let f = superpod(&p).unwrap();
        assert_eq!(f.count(NodeKind::Switch) as u32, sh.leaves + sh.spines);
        for ca in f.nodes_of(NodeKind::Ca) {
            let n = f.node(ca);
            assert_eq!(n.num_ports(), 2);
            let rail = n.name.rsplit('_').next().unwrap();
            for port in 1..=2u8 {
                let (leaf, _) = f.peer(ca, port).unwrap();
                let name = &f.node(leaf.node).name;
                assert!(
                    name.starts_with(&format!("p{}-su", port - 1)) && name.ends_with(&format!("-rail{rail}")),
                    "{} port {port} on {name}",
                    n.name
                );
            }
        }
        for l in &f.links {
            let (a, b) = (&f.node(l.a.node), &f.node(l.b.node));
            if a.kind == NodeKind::Switch && b.kind == NodeKind::Switch {
                assert_eq!(a.name[..2], b.name[..2], "{} to {}", a.name, b.name);
            }
        }
        assert_eq!(crate::summary::diameter(&f), Some(4));
    }

    /// Dual ToRs: each rail of each SU has a leaf pair, every NIC is cabled to
    /// both, and both sit under every spine; the switch counts double.
    #[test]
    fn dual_tors_cable_each_nic_to_both_leaves_of_its_pair() {
        let one = small(1, false).shape().unwrap();
        let p = small(1, true);
        let sh = p.shape().unwrap();
        assert_eq!(sh.tors, 2);
        assert_eq!(sh.leaves, 2 * one.leaves);
        let f = superpod(&p).unwrap();
        for ca in f.nodes_of(NodeKind::Ca) {
            let n = f.node(ca);
            let sides: Vec<String> = (1..=2u8)
                .map(|port| f.node(f.peer(ca, port).unwrap().0.node).name.clone())
                .collect();
            assert!(
                sides[0].ends_with("-a") && sides[1].ends_with("-b"),
                "{}: {sides:?}",
                n.name
            );
            assert_eq!(sides[0].trim_end_matches("-a"), sides[1].trim_end_matches("-b"));
        }
        // every leaf's uplinks reach every spine
        for leaf in f.nodes_of(NodeKind::Switch).filter(|&x| f.node(x).level == Some(1)) {
            let spines: std::collections::BTreeSet<_> = f
                .node(leaf)
                .port_nums()
                .filter_map(|q| f.peer(leaf, q))
                .map(|(e, _)| e.node)
                .filter(|&x| f.node(x).level == Some(2))
                .collect();
            assert_eq!(spines.len() as u32, sh.spines, "{}", f.node(leaf).name);
        }
        assert_eq!(crate::summary::diameter(&f), Some(4));
        // three tiers take the pairs too: 64-port switches, 16 SUs of 32
        let big = SuperPodParams {
            sus: 16,
            dual_tor: true,
            ..SuperPodParams::default()
        }
        .shape()
        .unwrap();
        assert_eq!(
            (big.tiers, big.leaves, big.sus_per_pod, big.leaf_spine_links),
            (3, 256, 16, 1)
        );
        let e = SuperPodParams {
            planes: 0,
            ..SuperPodParams::default()
        }
        .shape()
        .unwrap_err()
        .to_string();
        assert!(e.contains("planes"), "{e}");
    }
}
