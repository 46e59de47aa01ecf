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
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Cable lengths.
    pub cabling: Cabling,
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
        let leaves = self.sus * r;
        // two tiers: every leaf reaches every spine
        let need = (leaves * u).div_ceil(k);
        if let Some(s) = (need..=u).find(|&s| u.is_multiple_of(s) && (leaves * (u / s)) <= k) {
            return Ok(SuperPodShape {
                tiers: 2,
                leaves,
                spines: s,
                cores: 0,
                sus_per_pod: self.sus,
                leaf_spine_links: u / s,
                spines_per_block: s,
                cores_per_group: 0,
                spine_core_links: 0,
            });
        }
        // three tiers: pods of SUs, a spine block per (pod, rail)
        let h = k / 2;
        let per_pod = self.sus.min(h);
        if !self.sus.is_multiple_of(per_pod) {
            return Err(bad(
                "sus",
                format!(
                    "{} SUs do not form whole pods of {per_pod} (a spine of {k} ports takes {h} leaves)",
                    self.sus
                ),
            ));
        }
        if !h.is_multiple_of(per_pod) {
            return Err(bad(
                "sus",
                format!("{per_pod} SUs per pod do not divide a spine's {h} down-ports evenly"),
            ));
        }
        let m = h / per_pod;
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
            leaves,
            spines,
            cores: block * per_group,
            sus_per_pod: per_pod,
            leaf_spine_links: m,
            spines_per_block: block,
            cores_per_group: per_group,
            spine_core_links: h / per_group,
        })
    }
}

/// Generate the SuperPOD. Each GPU server is a host holding its `rails`
/// single-port CAs; NIC r of every server of SU `s` is cabled to leaf `suS-railR`.
pub fn superpod(p: &SuperPodParams) -> Result<Fabric, GenError> {
    let sh = p.shape()?;
    p.cabling.check()?;
    let k = p.radix as u8;
    let (n, r) = (p.servers_per_su, p.rails);
    let u = p.uplinks.unwrap_or(n);
    let mut b = Build::new();
    let (wsu, wr) = (width(p.sus as usize), width(r as usize));
    let ws = width((p.sus * n) as usize);
    // leaves[su][rail]
    let mut leaves: Vec<Vec<NodeId>> = Vec::with_capacity(p.sus as usize);
    for su in 0..p.sus {
        leaves.push(
            (0..r)
                .map(|ri| b.switch(format!("su{su:0wsu$}-rail{ri:0wr$}"), k, 1))
                .collect::<Result<_, _>>()?,
        );
    }
    for su in 0..p.sus {
        for srv in 0..n {
            let g = su * n + srv;
            let host = format!("gpu{g:0ws$}");
            let h = b.f.add_host(host.clone());
            for ri in 0..r {
                let spec = NodeSpec::ca(format!("{host}-mlx5_{ri}"), b.guids.ca(), 1)
                    .desc(format!("{host} mlx5_{ri}"))
                    .level(0)
                    .host(h);
                let ca = b.f.add_node(spec)?;
                b.cable(
                    leaves[su as usize][ri as usize],
                    (srv + 1) as u8,
                    ca,
                    1,
                    p.rate,
                    p.cabling.host_leaf_m,
                )?;
            }
        }
    }
    if sh.tiers == 2 {
        let wsp = width(sh.spines as usize);
        let spines: Vec<NodeId> = (0..sh.spines)
            .map(|i| b.switch(format!("spine{i:0wsp$}"), k, 2))
            .collect::<Result<_, _>>()?;
        let m = sh.leaf_spine_links;
        for (li, &leaf) in leaves.iter().flatten().enumerate() {
            for (si, &spine) in spines.iter().enumerate() {
                for t in 0..m {
                    let lp = n + 1 + si as u32 * m + t;
                    let sp = li as u32 * m + t + 1;
                    b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
                }
            }
        }
        return Ok(b.f);
    }
    let pods = p.sus / sh.sus_per_pod;
    let h = p.radix / 2;
    let (wp, wb) = (width(pods as usize), width(sh.spines_per_block as usize));
    // blocks[pod][rail][i]
    let mut blocks: Vec<Vec<Vec<NodeId>>> = Vec::with_capacity(pods as usize);
    for pod in 0..pods {
        let mut rails = Vec::with_capacity(r as usize);
        for ri in 0..r {
            rails.push(
                (0..sh.spines_per_block)
                    .map(|i| b.switch(format!("pod{pod:0wp$}-rail{ri:0wr$}-spine{i:0wb$}"), k, 2))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        blocks.push(rails);
    }
    let m = sh.leaf_spine_links;
    for su in 0..p.sus {
        let (pod, slot) = (su / sh.sus_per_pod, su % sh.sus_per_pod);
        for ri in 0..r {
            let leaf = leaves[su as usize][ri as usize];
            for (i, &spine) in blocks[pod as usize][ri as usize].iter().enumerate() {
                for t in 0..m {
                    let lp = n + 1 + i as u32 * m + t;
                    let sp = slot * m + t + 1;
                    b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
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
            .map(|j| b.switch(format!("core{i:0wg$}-{j:0wc$}"), k, 3))
            .collect::<Result<_, _>>()?;
        // the group's spines in (pod, rail) order fill each core's ports in turn
        let mut next_port = vec![1u32; cores.len()];
        for pod in 0..pods {
            for ri in 0..r {
                let spine = blocks[pod as usize][ri as usize][i as usize];
                for (j, &core) in cores.iter().enumerate() {
                    for t in 0..c {
                        let sp = h + 1 + j as u32 * c + t;
                        let cp = next_port[j];
                        next_port[j] += 1;
                        b.cable(spine, sp as u8, core, cp as u8, p.rate, p.cabling.spine_core_m)?;
                    }
                }
            }
        }
    }
    Ok(b.f)
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
}
