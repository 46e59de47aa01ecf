//! The conservation ledger: every packet created is delivered, dropped with a
//! reason, or still in flight when the run ends. The check is arithmetic over
//! counters kept on the hot path plus the live count of the packet slab, so a
//! packet that leaks (freed twice, never freed) shows up as an imbalance.

use serde::Serialize;

/// Why a packet was dropped. Lossless InfiniBand must never produce any of these
/// in a correct configuration; each one names a configuration or model fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The LFT had no port for the destination LID.
    NoRoute,
    /// The LFT pointed at an uncabled port.
    DeadPort,
    /// The LFT sent the packet back out of the port it came in on.
    Loopback,
    /// The destination LID is owned by no CA port (or a switch that does not consume data).
    UnknownDestination,
    /// The destination QP does not exist or is in the wrong state.
    BadQp,
    /// The packet's hop count exceeded the limit (a forwarding loop).
    HopLimit,
    /// The receiving port's P_Key table has no entry matching the packet's P_Key
    /// (IBA vol. 1 §10.9.3; a CA counts PortInfo:P_KeyViolations and drops it).
    PKeyViolation,
}

impl DropReason {
    /// Every reason, in report order.
    pub const ALL: [DropReason; 7] = [
        DropReason::NoRoute,
        DropReason::DeadPort,
        DropReason::Loopback,
        DropReason::UnknownDestination,
        DropReason::BadQp,
        DropReason::HopLimit,
        DropReason::PKeyViolation,
    ];

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::NoRoute => "no_route",
            DropReason::DeadPort => "dead_port",
            DropReason::Loopback => "loopback",
            DropReason::UnknownDestination => "unknown_destination",
            DropReason::BadQp => "bad_qp",
            DropReason::HopLimit => "hop_limit",
            DropReason::PKeyViolation => "p_key_violation",
        }
    }
}

/// Counters of packets created, delivered and dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// Packets created by end nodes.
    pub created: u64,
    /// Packets consumed by their destination.
    pub delivered: u64,
    /// Drops by reason, indexed like [`DropReason::ALL`].
    pub dropped: [u64; 7],
}

/// A ledger that does not balance.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("balance packets: created {created} != delivered {delivered} + dropped {dropped} + in flight {in_flight}")]
pub struct LedgerError {
    /// Packets created.
    pub created: u64,
    /// Packets consumed by their destination.
    pub delivered: u64,
    /// Packets dropped, every reason.
    pub dropped: u64,
    /// Packets alive when the ledger was checked.
    pub in_flight: u64,
}

impl Ledger {
    /// Count a drop.
    #[inline]
    pub fn drop_one(&mut self, r: DropReason) {
        self.dropped[r as usize] += 1;
    }

    /// Total drops.
    pub fn total_dropped(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Check `created == delivered + dropped + in_flight`.
    pub fn check(&self, in_flight: u64) -> Result<(), LedgerError> {
        let dropped = self.total_dropped();
        if self.created == self.delivered + dropped + in_flight {
            Ok(())
        } else {
            Err(LedgerError {
                created: self.created,
                delivered: self.delivered,
                dropped,
                in_flight,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balances_and_catches_leaks() {
        let mut l = Ledger {
            created: 10,
            delivered: 7,
            ..Ledger::default()
        };
        l.drop_one(DropReason::NoRoute);
        assert!(l.check(2).is_ok());
        assert_eq!(l.check(1).unwrap_err().dropped, 1);
    }
}
