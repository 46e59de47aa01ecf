//! 3-D torus of switches with hosts at every switch.
//!
//! Port layout (the one OpenSM's torus-2QoS examples and the shared
//! `torus-5x5x5.generated.net` use): 1 +x, 2 −x, 3 +y, 4 −y, 5 +z, 6 −z, then hosts
//! from port 7. A ring of size 2 gets two parallel cables between its switches; a
//! dimension of size 1 has none.

use serde::{Deserialize, Serialize};

use super::{Build, GenError, bad, check_radix};
use crate::model::Fabric;
use crate::rate::LinkRate;

/// A 3-D torus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TorusParams {
    /// Switches along x, y and z.
    pub dims: [u32; 3],
    /// Hosts (single-NIC servers) per switch.
    pub hosts_per_switch: u32,
    /// Ports per switch (default and minimum: 6 + hosts per switch).
    pub radix: Option<u32>,
    /// Rate of every cable.
    pub rate: LinkRate,
    /// Switch-to-switch cable length in metres (neighbours sit in adjacent racks).
    pub link_m: f64,
    /// Host-to-switch cable length in metres.
    pub host_m: f64,
}

impl Default for TorusParams {
    fn default() -> Self {
        TorusParams {
            dims: [4, 4, 4],
            hosts_per_switch: 1,
            radix: None,
            rate: LinkRate::NDR_4X,
            link_m: 5.0,
            host_m: 2.0,
        }
    }
}

/// Generate a 3-D torus. Switches are `T<x>_<y>_<z>`, hosts `H<x>_<y>_<z>_<i>`.
pub fn torus(p: &TorusParams) -> Result<Fabric, GenError> {
    let [dx, dy, dz] = p.dims;
    if p.dims.iter().any(|&d| d == 0 || d > 256) {
        return Err(bad("dims", format!("{dx}x{dy}x{dz}: each dimension must be 1 to 256")));
    }
    if u64::from(dx) * u64::from(dy) * u64::from(dz) > 1 << 20 {
        return Err(bad("dims", format!("{dx}x{dy}x{dz} is more than 2^20 switches")));
    }
    let radix = check_radix("radix", p.radix.unwrap_or(6 + p.hosts_per_switch))?;
    if u32::from(radix) < 6 + p.hosts_per_switch {
        return Err(bad(
            "radix",
            format!("{radix} ports; a torus switch needs 6 + {} hosts", p.hosts_per_switch),
        ));
    }
    for (name, v) in [("link_m", p.link_m), ("host_m", p.host_m)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad(
                if name == "link_m" { "link_m" } else { "host_m" },
                format!("{v} is not a length"),
            ));
        }
    }
    let mut b = Build::new();
    let idx = |x: u32, y: u32, z: u32| ((x * dy + y) * dz + z) as usize;
    let mut sw = Vec::with_capacity((dx * dy * dz) as usize);
    for x in 0..dx {
        for y in 0..dy {
            for z in 0..dz {
                sw.push(b.switch(format!("T{x}_{y}_{z}"), radix, 1)?);
            }
        }
    }
    for x in 0..dx {
        for y in 0..dy {
            for z in 0..dz {
                let me = sw[idx(x, y, z)];
                let nbrs = [
                    (dx, idx((x + 1) % dx, y, z)),
                    (dy, idx(x, (y + 1) % dy, z)),
                    (dz, idx(x, y, (z + 1) % dz)),
                ];
                for (d, (size, n)) in nbrs.into_iter().enumerate() {
                    if size > 1 {
                        let plus = (2 * d + 1) as u8;
                        b.cable(me, plus, sw[n], plus + 1, p.rate, p.link_m)?;
                    }
                }
                for i in 0..p.hosts_per_switch {
                    let (_, ca) = b.single_nic_host(format!("H{x}_{y}_{z}_{i}"))?;
                    b.cable(me, (7 + i) as u8, ca, 1, p.rate, p.host_m)?;
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

    #[test]
    fn torus_5x5x5_matches_shared_sample_layout() {
        let f = torus(&TorusParams {
            dims: [5, 5, 5],
            radix: Some(8),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.count(NodeKind::Switch), 125);
        assert_eq!(f.count(NodeKind::Ca), 125);
        assert_eq!(f.links.len(), 3 * 125 + 125);
        // sample: T0_0_0 [1] "T1_0_0"[2], [2] "T4_0_0"[1], [6] "T0_0_4"[5]
        let t = f.by_name("T0_0_0").unwrap();
        let name = |p: u8| {
            let e = f.peer(t, p).unwrap().0;
            (f.node(e.node).name.clone(), e.port)
        };
        assert_eq!(name(1), ("T1_0_0".into(), 2));
        assert_eq!(name(2), ("T4_0_0".into(), 1));
        assert_eq!(name(6), ("T0_0_4".into(), 5));
        assert_eq!(name(7), ("H0_0_0_0".into(), 1));
    }

    #[test]
    fn ring_of_two_has_parallel_cables() {
        let f = torus(&TorusParams {
            dims: [2, 1, 1],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(f.links.len(), 2 + 2);
    }
}
