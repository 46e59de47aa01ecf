//! The InfiniBand world's closed set of events, the two ways its hot path is
//! compiled (`Mode`), and `Core`: the engine parts every step works with.

use rand_pcg::Pcg64Mcg;

use crate::engine::{DropReason, Ledger, PackedQueue, PacketId, Time, TraceHash};
use crate::ib::packet::Packets;

/// The closed set of events. Each is a few bytes and `Copy`; the payload is a
/// component id, never a pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head of link direction `dir`'s FIFO reaches the far port (for a
    /// cut-through switch: its header has arrived and the switch latency passed).
    Arrive { dir: u32 },
    /// Transmitter `gp` may be able to send (its line went idle, credits came back,
    /// or a packet became eligible). Valid only if its time equals the port's
    /// `wake_at` (in its record of the links, `net::PortHot`).
    TxWake { gp: u32 },
    /// A posted work request of QP `qp` reaches the HCA.
    QpReady { qp: u32 },
    /// Take a utilisation / occupancy sample.
    Sample,
    /// Look for a credit deadlock.
    Watchdog,
}

/// The kind bits of a packed [`Event`]: its top 3 of 28.
pub(crate) const TAG_SHIFT: u32 = 25;
/// The id bits of a packed [`Event`].
pub(crate) const ID_MASK: u32 = (1 << TAG_SHIFT) - 1;
/// [`Event::Arrive`]'s kind bits.
pub(crate) const TAG_ARRIVE: u32 = 0;
/// [`Event::TxWake`]'s kind bits.
pub(crate) const TAG_TX_WAKE: u32 = 1;

impl crate::engine::Packed for Event {
    /// Kind in the top 3 of 28 bits, id in the low 25 (33 M ports or QPs). The
    /// run loop works on this word (see `trace_word`) and decodes it only to
    /// dispatch an event that is not an arrival.
    #[inline]
    fn pack(self) -> u32 {
        match self {
            Event::Arrive { dir } => dir,
            Event::TxWake { gp } => (TAG_TX_WAKE << TAG_SHIFT) | gp,
            Event::QpReady { qp } => (2 << TAG_SHIFT) | qp,
            Event::Sample => 3 << TAG_SHIFT,
            Event::Watchdog => 4 << TAG_SHIFT,
        }
    }

    #[inline]
    fn unpack(v: u32) -> Event {
        let id = v & ID_MASK;
        match v >> TAG_SHIFT {
            TAG_ARRIVE => Event::Arrive { dir: id },
            TAG_TX_WAKE => Event::TxWake { gp: id },
            2 => Event::QpReady { qp: id },
            3 => Event::Sample,
            _ => Event::Watchdog,
        }
    }
}

/// Largest port or QP id an event can carry.
pub(crate) const MAX_ID: usize = 1 << TAG_SHIFT;

/// What the trace hash folds for a packed event: its kind in the high 32 bits,
/// its id in the low 32. Computed from the word without decoding it: a `match`
/// on the kind was, in valgrind's branch model, a mispredict every second
/// event (no CPU time measurably changed).
#[inline(always)]
pub(crate) fn trace_word(w: u32) -> u64 {
    (u64::from(w >> TAG_SHIFT) << 32) | u64::from(w & ID_MASK)
}

/// How the hot path is compiled: [`crate::Sim::run`] runs its event loop as
/// [`Fast`] when the run allows it, and as [`Generic`] otherwise. A `Fast` loop
/// knows at compile time what a plain run (see
/// [`crate::ib::forward::Forwarding::plain`]) with cut-through switches and no
/// capture would test at every hop (one data VL, no SL→VL tables, no adaptive
/// routing, no congestion control), so those tests and the code behind them
/// are gone from it: about 5% fewer instructions on the ft432 benchmark and
/// 2% less time (docs/PERFORMANCE.md). The `Generic` loop is right for every
/// run.
pub(crate) trait Mode {
    /// The run is plain, its switches cut through, and nothing is captured.
    const FAST: bool;
}

/// The event loop for any run.
pub(crate) struct Generic;

impl Mode for Generic {
    const FAST: bool = false;
}

/// The event loop for a plain, cut-through run without capture (see [`Mode`]).
pub(crate) struct Fast;

impl Mode for Fast {
    const FAST: bool = true;
}

/// The engine parts of the InfiniBand world: simulated time, the event queue,
/// the packet store, the conservation ledger, the trace hash and the one random
/// generator. [`crate::Sim`] owns it and lends it, whole, to the model that
/// handles an event; its fields are the engine's own types, each with its own
/// API, so they are open to the crate.
pub(crate) struct Core {
    /// Current simulated time.
    pub(crate) now: Time,
    pub(crate) q: PackedQueue<Event>,
    pub(crate) trace: TraceHash,
    pub(crate) rng: Pcg64Mcg,
    pub(crate) pkts: Packets,
    pub(crate) ledger: Ledger,
}

impl Core {
    /// Remove a packet from the world as dropped.
    #[inline]
    pub(crate) fn drop_packet(&mut self, p: PacketId, why: DropReason) {
        self.ledger.drop_one(why);
        self.pkts.remove(p);
    }

    /// Remove a packet from the world as delivered.
    #[inline]
    pub(crate) fn deliver_packet(&mut self, p: PacketId) {
        self.ledger.delivered += 1;
        self.pkts.remove(p);
    }
}
