//! The scenario's cluster as a fabric, built the same way for every variant so the
//! comparison is like for like: same switches, same cables, same ports; only the
//! technology (and so the link encoding and the bring-up) differs.

use fabric::generate::{SuperPodParams, superpod};
use fabric::{Cabling, Fabric, GenError, IbSpeed, IbWidth, LinkRate, RailParams, rail};

use crate::scenario::Cluster;
use crate::tco::Tech;

/// The link rate of `tech` at `gbps`: InfiniBand 4x at the matching generation
/// (100 EDR, 200 HDR, 400 NDR, 800 XDR), or Ethernet at that speed.
pub fn link_rate(tech: Tech, gbps: u32) -> Result<LinkRate, GenError> {
    let bad = |reason: String| GenError::Param {
        param: "nic_gbps",
        reason,
    };
    match tech {
        Tech::InfiniBand => {
            let speed = match gbps {
                100 => IbSpeed::Edr,
                200 => IbSpeed::Hdr,
                400 => IbSpeed::Ndr,
                800 => IbSpeed::Xdr,
                g => {
                    return Err(bad(format!(
                        "{g} Gb/s has no InfiniBand 4x generation (100, 200, 400, 800)"
                    )));
                }
            };
            Ok(LinkRate::ib(speed, IbWidth::X4))
        }
        Tech::Ethernet => LinkRate::eth(gbps as u16).map_err(bad),
    }
}

/// Build the cluster's rail-optimized fabric for `tech`: scalable units as the
/// DGX SuperPOD reference architecture cables them when `scalable_units` is set,
/// else one leaf per rail.
/// The switch a scenario names: by node name, or (a fabric read from a file,
/// whose nodes ibnetdiscover names by GUID) by its NodeDescription when one
/// switch alone has it.
pub fn switch_named(f: &Fabric, name: &str) -> Option<fabric::NodeId> {
    let sw = |id: &fabric::NodeId| f.node(*id).kind == fabric::NodeKind::Switch;
    if let Some(id) = f.by_name(name).filter(sw) {
        return Some(id);
    }
    let mut by_desc = f
        .nodes_of(fabric::NodeKind::Switch)
        .filter(|&id| f.node(id).desc == name);
    match (by_desc.next(), by_desc.next()) {
        (Some(id), None) => Some(id),
        _ => None,
    }
}

pub fn build(c: &Cluster, tech: Tech) -> Result<Fabric, GenError> {
    if let Some(f) = &c.imported {
        return crate::import::retype(f, tech);
    }
    if let Some(sus) = c.scalable_units {
        return superpod(&SuperPodParams {
            sus,
            servers_per_su: c.servers / sus.max(1),
            rails: c.gpus_per_server,
            radix: c.radix,
            uplinks: c.leaf_uplinks,
            rate: link_rate(tech, c.nic_gbps)?,
            cabling: Cabling {
                host_leaf_m: c.host_leaf_m,
                leaf_spine_m: c.leaf_spine_m,
                ..Cabling::default()
            },
            ..SuperPodParams::default()
        });
    }
    rail(&RailParams {
        servers: c.servers,
        rails: c.gpus_per_server,
        radix: c.radix,
        uplinks: None,
        spines: None,
        rate: link_rate(tech, c.nic_gbps)?,
        cabling: Cabling {
            host_leaf_m: c.host_leaf_m,
            leaf_spine_m: c.leaf_spine_m,
            ..Cabling::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use fabric::NodeKind;

    #[test]
    fn default_cluster_builds_both_ways_with_the_same_shape() {
        let s = Scenario::default_rail();
        let ib = build(&s.cluster, Tech::InfiniBand).unwrap();
        let eth = build(&s.cluster, Tech::Ethernet).unwrap();
        assert_eq!(ib.count(NodeKind::Ca), 128);
        assert_eq!(ib.count(NodeKind::Switch), eth.count(NodeKind::Switch));
        assert_eq!(ib.links.len(), eth.links.len());
        assert_eq!(ib.links[0].rate.data_bps(), 400_000_000_000);
        assert_eq!(eth.links[0].rate.data_bps(), 400_000_000_000);
        assert!(ib.links[0].rate.is_ib() && !eth.links[0].rate.is_ib());
        // the misconfigured hop of the default scenario names a real switch
        for v in &s.variants {
            if let crate::scenario::VariantFabric::Rocev2 { lossy_hops, .. } = &v.fabric {
                for h in lossy_hops {
                    assert!(eth.by_name(h).is_some(), "no switch named {h}");
                }
            }
        }
    }

    #[test]
    fn unknown_speed_is_refused() {
        assert!(link_rate(Tech::InfiniBand, 300).is_err());
        assert!(link_rate(Tech::Ethernet, 300).is_err());
    }
}
