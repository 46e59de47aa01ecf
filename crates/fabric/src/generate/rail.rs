//! Rail-optimized GPU pods.
//!
//! A GPU server has R NICs, one per GPU ("rail"). NIC `r` of every server is cabled to
//! the leaf of rail `r`, so same-rank GPUs on different servers are one switch apart,
//! the layout of NVIDIA DGX SuperPOD scalable units. Leaves are joined by spines.
//!
//! ```text
//!        spine0 ........ spineS-1
//!        /  |  \            |
//!     rail0 rail1 ... rail(R-1)     one leaf per rail, N server ports each
//!      | \    | \        |
//!     gpu0:nic0 gpu0:nic1 ... gpu(N-1):nic(R-1)
//! ```

use serde::{Deserialize, Serialize};

use super::{Build, Cabling, GenError, bad, check_radix, width};
use crate::model::{Fabric, NodeId, NodeSpec};
use crate::rate::LinkRate;

/// A rail-optimized pod of `servers` GPU servers with `rails` single-port NICs each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RailParams {
    /// GPU servers (N).
    pub servers: u32,
    /// NICs (rails) per server (R): one leaf per rail.
    pub rails: u32,
    /// Ports per switch.
    pub radix: u32,
    /// Uplinks per leaf (default N: non-blocking).
    pub uplinks: Option<u32>,
    /// Spines (default: the fewest that take every leaf uplink, with the uplinks
    /// spread evenly). Must divide the uplinks.
    pub spines: Option<u32>,
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Cable lengths.
    pub cabling: Cabling,
}

impl Default for RailParams {
    fn default() -> Self {
        RailParams {
            servers: 16,
            rails: 8,
            radix: 64,
            uplinks: None,
            spines: None,
            rate: LinkRate::NDR_4X,
            cabling: Cabling::default(),
        }
    }
}

/// Generate a rail-optimized pod. Each GPU server is a [`crate::HostId`] holding
/// its R single-port CAs, named `gpuNN-mlx5_r` with NodeDescription `gpuNN mlx5_r`.
pub fn rail(p: &RailParams) -> Result<Fabric, GenError> {
    let k = check_radix("radix", p.radix)? as u32;
    p.cabling.check()?;
    let n = p.servers;
    if n == 0 || n >= k {
        return Err(bad(
            "servers",
            format!("{n} servers need {n} leaf ports plus uplinks on a {k}-port leaf"),
        ));
    }
    if p.rails == 0 || p.rails > 15 {
        return Err(bad("rails", format!("{} NICs per server; 1 to 15 supported", p.rails)));
    }
    let u = p.uplinks.unwrap_or(n);
    if u == 0 || n + u > k {
        return Err(bad(
            "uplinks",
            format!("{u} uplinks + {n} server ports exceed {k} ports"),
        ));
    }
    let r = p.rails;
    let s = match p.spines {
        Some(s) => s,
        None => (1..=u)
            .find(|&s| u.is_multiple_of(s) && r * (u / s) <= k)
            .ok_or_else(|| {
                bad(
                    "rails",
                    format!("{r} leaves × {u} uplinks do not fit on {k}-port spines"),
                )
            })?,
    };
    if s == 0 || !u.is_multiple_of(s) {
        return Err(bad(
            "spines",
            format!("{s} spines do not divide the {u} uplinks of each leaf evenly"),
        ));
    }
    let per = u / s;
    if r * per > k {
        return Err(bad(
            "spines",
            format!("{s} spines would need {} ports each, more than {k}", r * per),
        ));
    }
    let mut b = Build::new();
    let (wr, ws, wn) = (width(r as usize), width(s as usize), width(n as usize));
    let leaves: Vec<NodeId> = (0..r)
        .map(|i| b.switch(format!("rail{i:0wr$}"), k as u8, 1))
        .collect::<Result<_, _>>()?;
    let spines: Vec<NodeId> = (0..s)
        .map(|i| b.switch(format!("spine{i:0ws$}"), k as u8, 2))
        .collect::<Result<_, _>>()?;
    for srv in 0..n {
        let host_name = format!("gpu{srv:0wn$}");
        let h = b.f.add_host(host_name.clone());
        for (ri, &leaf) in leaves.iter().enumerate() {
            let g = b.guids.ca();
            let spec = NodeSpec::ca(format!("{host_name}-mlx5_{ri}"), g, 1)
                .desc(format!("{host_name} mlx5_{ri}"))
                .level(0)
                .host(h);
            let ca = b.f.add_node(spec)?;
            b.cable(leaf, (srv + 1) as u8, ca, 1, p.rate, p.cabling.host_leaf_m)?;
        }
    }
    for (li, &leaf) in leaves.iter().enumerate() {
        for (si, &spine) in spines.iter().enumerate() {
            for t in 0..per {
                let lp = n + 1 + si as u32 * per + t;
                let sp = li as u32 * per + t + 1;
                b.cable(leaf, lp as u8, spine, sp as u8, p.rate, p.cabling.leaf_spine_m)?;
            }
        }
    }
    Ok(b.f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HostId, NodeKind};

    #[test]
    fn pod_16x8() {
        let f = rail(&RailParams::default()).unwrap();
        assert_eq!(f.hosts.len(), 16);
        assert_eq!(f.count(NodeKind::Ca), 128);
        // 8 rail leaves; 16 uplinks each; 8 × 16/s ≤ 64 → s = 2
        assert_eq!(f.count(NodeKind::Switch), 10);
        let nics: Vec<_> = f.nodes.iter().filter(|n| n.host == Some(HostId(3))).collect();
        assert_eq!(nics.len(), 8);
        // NIC r of every server sits on leaf r
        for (ri, nic) in nics.iter().enumerate() {
            let me = f.by_name(&nic.name).unwrap();
            let leaf = f.peer(me, 1).unwrap().0;
            assert_eq!(f.node(leaf.node).name, format!("rail{ri}"));
            assert_eq!(leaf.port, 4);
        }
    }
}
