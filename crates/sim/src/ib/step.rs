//! [`Cx`]: the parts of the InfiniBand world that every node model's step
//! works with, besides the model's own state.

use crate::ib::config::IbConfig;
use crate::ib::event::Core;
use crate::ib::forward::Forwarding;
use crate::ib::metrics::Stats;
use crate::ib::net::Links;

/// The parts one event's work reaches besides the state of the model handling
/// it: the engine ([`Core`]), the links, the counters, the configuration and
/// the forwarding state (which every transmitter towards a switch reads, see
/// [`Forwarding::stamp`]). [`crate::Sim`] owns one and lends it, with the
/// model an event concerns (`&mut Switches` or `&mut Hcas`), as a split borrow
/// of its fields: one pointer, through which each part sits at a fixed offset,
/// so a step reads a table's address with one load, as from the world itself.
/// The alternative, a struct of five references built per event, puts each
/// part one more load away and is written out for every step not inlined:
/// 4.4% more instructions on the 1 ms ft432 permutation (3,466 M against
/// 3,318 M with the same inlining; callgrind, 2026-12-05).
pub(crate) struct Cx {
    pub(crate) core: Core,
    pub(crate) links: Links,
    pub(crate) stats: Stats,
    pub(crate) ib: IbConfig,
    pub(crate) fwd: Forwarding,
}
