//! What the subnet manager programmed, as the switches apply it (IBA vol. 1
//! §18.2.4): every switch's linear forwarding table, the SL→VL tables, and, in
//! a plain run, each QP's route precomputed from the tables.

use sm::RoutingTables;

use crate::engine::{DropReason, Table};
use crate::ib::event::Mode;
use crate::ib::net::{Links, NodeModel, PortHot};
use crate::ib::packet::{NO_ROUTE, NONE, PktHot, flag};

/// Where a node's forwarding entries sit in [`Forwarding`]'s table, and its
/// first global port.
#[derive(Clone, Copy, Debug)]
struct FwdSpan {
    off: u32,
    len: u32,
    base: u32,
}

/// A forwarding entry: the LFT has no route for the LID.
const FWD16_NO_ROUTE: u16 = u16::MAX;
/// A forwarding entry: the LFT names a port the switch lacks or that has no cable.
const FWD16_DEAD: u16 = u16::MAX - 1;

/// Forwarding decisions beside global port ids (which stay below 2^25).
const FWD_NO_ROUTE: u32 = u32::MAX;
/// The LFT names port 0 (the switch itself) for a data packet.
const FWD_UNKNOWN: u32 = u32::MAX - 1;
/// The LFT names a port the switch lacks or that has no cable.
const FWD_DEAD: u32 = u32::MAX - 2;
/// The LFT sends the packet back out of the port it came in (only in a
/// decision carried by a packet, never in the table).
const FWD_LOOPBACK: u32 = u32::MAX - 3;

/// The forwarding decision [`Forwarding::lft_code`] encoded.
#[inline(always)]
pub(crate) fn fwd_decode(code: u32) -> Result<u32, DropReason> {
    match code {
        FWD_NO_ROUTE => Err(DropReason::NoRoute),
        FWD_UNKNOWN => Err(DropReason::UnknownDestination),
        FWD_DEAD => Err(DropReason::DeadPort),
        FWD_LOOPBACK => Err(DropReason::Loopback),
        og => Ok(og),
    }
}

/// Most route entries kept ([`Forwarding::build_route`]): 32 MB.
const ROUTE_BUDGET: usize = 1 << 23;
// A route's index rides in a packet's 28 route bits.
const _: () = assert!(ROUTE_BUDGET < NO_ROUTE as usize);

/// The switches' forwarding state. The LFTs of a 432-host fat tree take
/// 220 KB (two bytes an entry); routes cost one word a switch a QP passes, at
/// most [`ROUTE_BUDGET`] in all. Read by the switches when a packet arrives
/// and by every transmitter towards a switch (see [`Forwarding::stamp`]);
/// written only when a QP is created.
#[derive(Debug)]
pub(crate) struct Forwarding {
    /// Every switch's LFT flattened, each entry the output port number (`0` for
    /// the switch itself) or a `FWD16_*` code: `fwd[span[node].off + dlid]`,
    /// for LIDs below `span[node].len`. Two bytes an entry keep the tables
    /// of a 432-host fat tree at 220 KB (440 KB with global port ids). In a
    /// `plain` run a QP's packets read `routes` instead.
    fwd: Table<u16>,
    span: Table<FwdSpan>,
    /// Routes of the QPs of a `plain` simulation, back to back: route `r`'s
    /// `h`-th entry, `routes[r + h]`, is what the switch a packet reaches after
    /// `h + 1` links will decide for it (a [`Forwarding::lft_code`]). A QP's
    /// packets all follow one path, so one short run of entries a QP, read at
    /// every send, stays in cache where the LFT entries (one line a switch and
    /// destination) did not.
    routes: Table<u32>,
    /// One data VL, no SL→VL tables, no adaptive routing, no congestion control:
    /// a switch's decision depends on the LFT alone, so the transmitter makes
    /// it for the next switch, and a switch may forward a packet that finds its
    /// output idle and empty without queueing it first (see
    /// [`crate::ib::switch::Switches::arrive`]).
    plain: bool,
    /// The SM's SL→VL tables, `[node][in port][out port]` (`None`: all VL 0).
    sl2vl: Option<Vec<Vec<Vec<[u8; 16]>>>>,
}

impl Forwarding {
    /// Copy in the tables of `tables` for the ports of `links`; a run starts
    /// not plain ([`Self::plain`] is set once the world is built).
    pub(crate) fn new(tables: &RoutingTables, port_base: &[u32], links: &Links) -> Forwarding {
        let mut fwd = Vec::new();
        let mut span = Vec::with_capacity(tables.lft.len());
        for (node, l) in tables.lft.iter().enumerate() {
            let base = port_base[node];
            span.push(FwdSpan {
                off: fwd.len() as u32,
                len: l.ports.len() as u32,
                base,
            });
            let nports = port_base[node + 1] - base;
            fwd.extend(l.ports.iter().map(|&o| match o {
                sm::NO_ROUTE => FWD16_NO_ROUTE,
                o if o == 0 || u32::from(o) < nports && links.ports[(base + u32::from(o)) as usize].peer != NONE => {
                    u16::from(o)
                }
                _ => FWD16_DEAD,
            }));
        }
        Forwarding {
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            fwd: unsafe { crate::engine::Table::trusted(fwd) },
            span: unsafe { crate::engine::Table::trusted(span) },
            routes: Table::default(),
            plain: false,
            sl2vl: tables.sl2vl.clone(),
        }
    }

    /// Set whether the run is plain (see [`Self::plain`]): once the world is
    /// built, and off in tests that compare a run with and without the
    /// shortcuts it allows.
    pub(crate) fn set_plain(&mut self, plain: bool) {
        self.plain = plain;
    }

    /// The run is plain (see [`Self::plain`]), known at compile time in a
    /// [`crate::ib::event::Fast`] loop.
    #[inline(always)]
    pub(crate) fn is_plain<M: Mode>(&self) -> bool {
        M::FAST || self.plain
    }

    /// The SM programmed SL→VL tables.
    #[inline]
    pub(crate) fn has_sl2vl(&self) -> bool {
        self.sl2vl.is_some()
    }

    /// The address of route entry `i`, for a prefetch hint (any `i` will do).
    #[inline(always)]
    pub(crate) fn route_addr(&self, i: usize) -> *const u8 {
        self.routes.as_ptr().wrapping_add(i).cast::<u8>()
    }

    /// The decision of `node`'s LFT for `dlid`, for a packet that comes in at
    /// `in_gp`, as one word: the global output port or a `FWD_*` code
    /// ([`fwd_decode`] makes it a result). For a plain switch the transmitter
    /// finds it (in the sending QP's route, else by this lookup) and leaves it
    /// in the packet's `in_link` (unused on a wire), so the arrival need not
    /// read the LFT and can prefetch the output port's record. Plain switches'
    /// tables do not change during a run. Out of line: a plain run's packets
    /// mostly carry a route, and inlined into the send for the rest it cost
    /// the hop 12 instructions (callgrind).
    #[inline(never)]
    pub(crate) fn lft_code(&self, node: usize, dlid: u16, in_gp: u32) -> u32 {
        let sp = self.span[node];
        if u32::from(dlid) >= sp.len {
            return FWD_NO_ROUTE;
        }
        match self.fwd[(sp.off + u32::from(dlid)) as usize] {
            FWD16_NO_ROUTE => FWD_NO_ROUTE,
            0 => FWD_UNKNOWN,
            FWD16_DEAD => FWD_DEAD,
            o if sp.base + u32::from(o) == in_gp => FWD_LOOPBACK,
            o => sp.base + u32::from(o),
        }
    }

    /// [`Self::lft_code`] as the output port or the reason to drop.
    #[inline]
    pub(crate) fn lft_out(&self, node: usize, dlid: u16, in_gp: u32) -> Result<u32, DropReason> {
        fwd_decode(self.lft_code(node, dlid, in_gp))
    }

    /// The decision the far switch will take for packet `pk`, about to leave
    /// over the link of port record `pt`, when the run is plain and the link
    /// leads to a switch (`None` otherwise): the next entry of the packet's
    /// route, else the LFT's.
    #[inline(always)]
    pub(crate) fn stamp<M: Mode>(&self, pt: &PortHot, pk: &PktHot) -> Option<u32> {
        (self.is_plain::<M>() && pt.peer_model == NodeModel::IbSwitch && pk.flags & flag::VL15 == 0).then(|| {
            // A route covers every send its packets can make (see
            // `build_route`); the checked read costs a compare and keeps a
            // wrong index from reading another QP's route.
            let r = pk.route();
            match self.routes.get((r + u32::from(pk.hops)) as usize) {
                Some(&code) if r != NO_ROUTE => {
                    debug_assert_eq!(code, self.lft_code(pt.peer_node as usize, pk.dlid, pt.peer));
                    code
                }
                _ => self.lft_code(pt.peer_node as usize, pk.dlid, pt.peer),
            }
        })
    }

    /// Precompute the decisions the switches will take for packets sent from
    /// CA port `gp` to `dlid` (see `routes`): the walk stops at an end node, at
    /// a decision that drops the packet, or past `hop_limit` (where the packet
    /// is dropped on arrival). [`NO_ROUTE`] when the simulation is not `plain`
    /// (forwarding then depends on more than the LFT), when the port's cable
    /// does not lead to a switch, or when the routes already hold
    /// [`ROUTE_BUDGET`] entries (a huge all-to-all keeps reading the LFTs).
    pub(crate) fn build_route(&mut self, links: &Links, hop_limit: u8, gp: u32, dlid: u16) -> u32 {
        let start = self.routes.len();
        let hops = usize::from(hop_limit) + 1;
        if !self.plain || start + hops > ROUTE_BUDGET {
            return NO_ROUTE;
        }
        let mut g = gp;
        for _ in 0..hops {
            let pt = &links.ports[g as usize];
            if pt.peer == NONE || pt.peer_model != NodeModel::IbSwitch {
                break;
            }
            let code = self.lft_code(pt.peer_node as usize, dlid, pt.peer);
            self.routes.push(code);
            if code as usize >= links.ports.len() {
                break;
            }
            g = code;
        }
        if self.routes.len() == start {
            NO_ROUTE
        } else {
            start as u32
        }
    }

    /// SL→VL of (switch, in port, out port) for `sl`; VL 0 when the SM programmed none.
    #[inline]
    pub(crate) fn switch_vl(&self, node: usize, in_port: u8, out_port: u8, sl: u8) -> u8 {
        match &self.sl2vl {
            None => 0,
            Some(t) => t
                .get(node)
                .and_then(|x| x.get(in_port as usize))
                .and_then(|x| x.get(out_port as usize))
                .map_or(0, |m| m[(sl & 15) as usize]),
        }
    }

    /// VL of `sl` leaving CA port (`node`, `port`) with `nvl` data VLs: the SM's
    /// SL2VL for the port if it programmed one (`sl2vl[node][0][port]`), VL 0
    /// when it programmed none.
    pub(crate) fn ca_vl(&self, nvl: usize, node: usize, port: u8, sl: u8) -> u8 {
        match &self.sl2vl {
            None => 0,
            Some(t) => t
                .get(node)
                .and_then(|x| x.first())
                .and_then(|x| x.get(port as usize))
                .map_or((sl as usize % nvl) as u8, |m| m[(sl & 15) as usize].min(nvl as u8 - 1)),
        }
    }
}
