//! The engine core, independent of any network model: simulated time, the event
//! queue with per-link FIFOs, the packet slab, the conservation ledger and the
//! determinism hash. Ethernet, RoCE and IB models all sit on top of these.

pub mod ledger;
pub(crate) mod prefetch;
pub mod queue;
pub(crate) mod ring;
pub mod store;
pub(crate) mod table;
pub mod time;
pub mod trace;

pub use ledger::{DropReason, Ledger, LedgerError};
pub use queue::{EventQueue, Fifo, Packed, PackedQueue};
pub use store::{PacketId, Slab};
pub(crate) use table::Table;
pub use time::Time;
pub use trace::TraceHash;
