//! Partition enforcement at CA ports (IBA vol. 1 §10.9; reference
//! `failures-isolation-sweeps.md` §1.5): a data packet whose BTH P_Key matches no
//! entry of the receiving port's P_Key table is dropped (`DropReason::PKeyViolation`)
//! and counted in that port's P_KeyViolations (PortInfo bytes 46–47), as Linux's
//! `qib_bad_pkey`/`hfi1_bad_pkey` do. A match is the same non-zero partition number
//! with at least one full member (`sm::partitions::pkeys_match`). Trap 257 to the SM
//! is not modelled (the run has no SM in the loop).
//!
//! Off until a table is set ([`crate::Sim::set_partitions`]): with no partitions the
//! receive path costs one predictable branch and every count is as before.
//! Switch-port enforcement (PartitionEnforcementInbound/Outbound) is not modelled:
//! the CA's check drops the same packets, one hop later.
//!
//! Cost: one `Vec<u16>` per CA port with a table (a scan of at most PartitionCap
//! entries per received packet, 2–4 in practice) and one counter per global port.

use sm::partitions::pkeys_match;

/// The tables and counters; see the module docs.
#[derive(Clone, Debug, Default)]
pub(crate) struct PkeyCheck {
    /// Any table set: the check runs.
    pub(crate) on: bool,
    /// Each global port's table (`None`: this port checks nothing).
    tables: Vec<Option<Vec<u16>>>,
    /// P_KeyViolations by global port.
    violations: Vec<u64>,
}

impl PkeyCheck {
    pub(crate) fn new(ports: usize) -> PkeyCheck {
        PkeyCheck {
            on: false,
            tables: Vec::new(),
            violations: vec![0; ports],
        }
    }

    /// Give global port `gp` a table (entries 0 are empty slots).
    pub(crate) fn set(&mut self, gp: u32, table: &[u16]) {
        if self.tables.len() < self.violations.len() {
            self.tables.resize(self.violations.len(), None);
        }
        self.tables[gp as usize] = Some(table.iter().copied().filter(|k| k & 0x7fff != 0).collect());
        self.on = true;
    }

    /// The packet's P_Key passes port `gp`'s table; a violation is counted.
    #[inline]
    pub(crate) fn admits(&mut self, gp: u32, pkey: u16) -> bool {
        let Some(Some(t)) = self.tables.get(gp as usize) else {
            return true;
        };
        if t.iter().any(|&e| pkeys_match(e, pkey)) {
            return true;
        }
        self.violations[gp as usize] += 1;
        false
    }

    /// P_KeyViolations of global port `gp`.
    pub(crate) fn violations(&self, gp: u32) -> u64 {
        self.violations.get(gp as usize).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_admits_what_its_table_matches_and_counts_the_rest() {
        let mut c = PkeyCheck::new(4);
        assert!(c.admits(1, 0x1234), "no table: no check");
        c.set(1, &[0x8001, 0x0002, 0, 0]);
        assert!(c.admits(1, 0x0001), "limited packet, full entry");
        assert!(c.admits(1, 0x8001));
        assert!(c.admits(1, 0x8002), "full packet, limited entry");
        assert!(!c.admits(1, 0x0002), "both limited");
        assert!(!c.admits(1, 0xffff), "not in the default partition");
        assert!(c.admits(2, 0xffff), "port 2 has no table");
        assert_eq!((c.violations(1), c.violations(2)), (2, 0));
    }
}
