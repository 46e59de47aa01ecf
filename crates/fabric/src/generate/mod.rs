//! Topology generators: each is a parameter struct (with `Default` giving a
//! sensible cluster) and a function returning a [`Fabric`].
//!
//! Every generator is deterministic: the same parameters give the same names,
//! GUIDs, port numbers and cables, byte for byte.
//!
//! GUIDs follow one scheme ([`GuidAlloc`]): switches take one GUID each (a switch's
//! ports share its node GUID, IBA vol. 1 §14.2.5.3), channel adapters take a block of
//! 16 so that port `p` has GUID node + `p` — the convention of ibsim
//! (`sim_net.c` reserves `nports + 1` GUIDs per CA) and of ConnectX firmware. Both
//! sit under the Mellanox OUI `00:02:c9` so they read like real fabric GUIDs.
//!
//! Node tiers (`Node::level`): 0 host adapters, 1 leaf, 2 spine, 3 core.
//! Cable lengths are per tier (see [`Cabling`]); their delay is 5 ns/m.

mod fat_tree;
mod rail;
mod superpod;
mod torus;

pub use fat_tree::{FatTree3Params, LeafSpineParams, MultiPodParams, fat_tree3, leaf_spine, multi_pod};
pub use rail::{RailParams, rail};
pub use superpod::{SuperPodParams, SuperPodShape, superpod};
pub use torus::{TorusParams, torus};

use thiserror::Error;
use wire::Guid;

use crate::error::ModelError;
use crate::model::{Fabric, HostId, NodeId, NodeSpec};
use crate::rate::LinkRate;

/// A generator was given parameters that do not describe a buildable fabric.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum GenError {
    /// One parameter is out of range or inconsistent with the others.
    #[error("invalid parameter `{param}`: {reason}")]
    Param { param: &'static str, reason: String },
    /// The model rejected what the generator built (a bug in the generator).
    #[error("building the model failed")]
    Model(#[from] ModelError),
}

pub(crate) fn bad(param: &'static str, reason: impl Into<String>) -> GenError {
    GenError::Param {
        param,
        reason: reason.into(),
    }
}

/// Cable lengths per tier, in metres.
///
/// Defaults follow common data-centre practice: passive copper (DAC) reaches about
/// 3 m at 100G/lane, so servers sit in the leaf's rack on 2 m copper; leaf–spine runs
/// cross rows on 20 m active optics; spine–core runs cross the hall on 50 m optics.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cabling {
    /// Host adapter to leaf.
    pub host_leaf_m: f64,
    /// Leaf to spine.
    pub leaf_spine_m: f64,
    /// Spine to core (within one site).
    pub spine_core_m: f64,
}

impl Default for Cabling {
    fn default() -> Self {
        Cabling {
            host_leaf_m: 2.0,
            leaf_spine_m: 20.0,
            spine_core_m: 50.0,
        }
    }
}

impl Cabling {
    fn check(&self) -> Result<(), GenError> {
        let all: [(&'static str, f64); 3] = [
            ("host_leaf_m", self.host_leaf_m),
            ("leaf_spine_m", self.leaf_spine_m),
            ("spine_core_m", self.spine_core_m),
        ];
        for (name, v) in all {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(name, format!("{v} is not a non-negative length in metres")));
            }
        }
        Ok(())
    }
}

/// Hands out deterministic GUIDs.
///
/// ```text
/// switches  0x0002c903_01000000 + i        (one GUID each)
/// CAs       0x0002c903_02000000 + 16 i     (port p = node + p, up to 15 ports)
/// routers   0x0002c903_03000000 + 16 i
/// ```
/// Room for 16 M switches and 1 M adapters: far beyond any generated fabric.
#[derive(Clone, Debug, Default)]
pub struct GuidAlloc {
    switches: u64,
    cas: u64,
    routers: u64,
}

impl GuidAlloc {
    /// Base of switch GUIDs.
    pub const SWITCH_BASE: u64 = 0x0002_c903_0100_0000;
    /// Base of CA GUIDs.
    pub const CA_BASE: u64 = 0x0002_c903_0200_0000;
    /// Base of router GUIDs.
    pub const ROUTER_BASE: u64 = 0x0002_c903_0300_0000;

    /// The next switch GUID.
    pub fn switch(&mut self) -> Guid {
        self.switches += 1;
        Guid(Self::SWITCH_BASE + self.switches - 1)
    }

    /// The next CA node GUID (its ports are node GUID + port number).
    pub fn ca(&mut self) -> Guid {
        self.cas += 1;
        Guid(Self::CA_BASE + 16 * (self.cas - 1))
    }

    /// The next router node GUID.
    pub fn router(&mut self) -> Guid {
        self.routers += 1;
        Guid(Self::ROUTER_BASE + 16 * (self.routers - 1))
    }
}

/// Builder state shared by the generators.
pub(crate) struct Build {
    pub f: Fabric,
    pub guids: GuidAlloc,
}

impl Build {
    pub fn new() -> Build {
        Build {
            f: Fabric::new(),
            guids: GuidAlloc::default(),
        }
    }

    /// A switch of `radix` ports at `level`.
    pub fn switch(&mut self, name: String, radix: u8, level: u8) -> Result<NodeId, GenError> {
        let g = self.guids.switch();
        Ok(self.f.add_node(NodeSpec::switch(name, g, radix).level(level))?)
    }

    /// A server with one single-port adapter named like the server; the adapter's
    /// NodeDescription is "`<server> mlx5_0`", the form real hosts report.
    pub fn single_nic_host(&mut self, name: String) -> Result<(HostId, NodeId), GenError> {
        let h = self.f.add_host(name.clone());
        let g = self.guids.ca();
        let desc = format!("{name} mlx5_0");
        let id = self.f.add_node(NodeSpec::ca(name, g, 1).desc(desc).level(0).host(h))?;
        Ok((h, id))
    }

    pub fn cable(&mut self, a: NodeId, pa: u8, b: NodeId, pb: u8, rate: LinkRate, len: f64) -> Result<(), GenError> {
        self.f.connect(a, pa, b, pb, rate, len)?;
        Ok(())
    }
}

/// Checks a radix: switches have 1..=254 ports here (NumPorts is a byte and port
/// 255 is reserved in LFTs, IBA vol. 1 §14.2.5.10).
pub(crate) fn check_radix(param: &'static str, radix: u32) -> Result<u8, GenError> {
    if (2..=254).contains(&radix) {
        Ok(radix as u8)
    } else {
        Err(bad(param, format!("{radix} ports; a switch has 2 to 254")))
    }
}

/// Decimal digits needed to print `n - 1` (so names sort in order).
pub(crate) fn width(n: usize) -> usize {
    let mut w = 1;
    let mut m = n.saturating_sub(1);
    while m >= 10 {
        m /= 10;
        w += 1;
    }
    w
}
