//! Rule ids and rationale of the InfiniBand checks.

use crate::finding::{Finding, Location, Severity};

/// An InfiniBand check: id and why it matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, e.g. `credit-loop`.
    pub id: &'static str,
    /// Why it matters, with its source.
    pub why: &'static str,
}

/// A CA port cannot reach a CA LID by the LFTs.
pub const UNREACHABLE: Rule = Rule {
    id: "unreachable",
    why: "every CA must reach every CA LID through the programmed LFTs, or RDMA connections between them fail (ibdiagnet 'all CA-to-CA paths', infiniband-sm.md §3.4)",
};
/// A route is longer than the shortest path.
pub const NON_MINIMAL: Rule = Rule {
    id: "non-minimal",
    why: "longer paths add latency and load; deadlock-free engines (updn, dfsssp layers) may take them on purpose (infiniband-sm.md §1.2)",
};
/// A cycle in the channel dependency graph.
pub const CREDIT_LOOP: Rule = Rule {
    id: "credit-loop",
    why: "a cycle of (port, VL) channels whose buffers wait on each other for credits can deadlock the fabric under load (ibdm CredLoops.cpp; infiniband-sm.md §3.4)",
};
/// Two nodes or ports share a GUID.
pub const DUPLICATE_GUID: Rule = Rule {
    id: "duplicate-guid",
    why: "the SM identifies nodes and ports by GUID; duplicates make it merge two devices, so one of them gets no LID or wrong routes (IBA vol. 1 §14.2.5.3)",
};
/// Two ports share a LID.
pub const DUPLICATE_LID: Rule = Rule {
    id: "duplicate-lid",
    why: "a LID must name one port: with two owners the LFTs deliver to one of them only (IBA vol. 1 §4.1.3)",
};
/// A link runs below the expected width or speed.
pub const LINK_DEGRADED: Rule = Rule {
    id: "link-degraded",
    why: "a link that trained to fewer lanes or a lower speed (bad cable, dirty connector) silently cuts the bandwidth of every route through it (ibdiagnet link-width/speed check)",
};
/// Routes are unevenly spread over switch-to-switch ports.
pub const ROUTE_IMBALANCE: Rule = Rule {
    id: "route-imbalance",
    why: "the busiest port bounds all-to-all bandwidth: routing engines spread destinations over equal-cost ports to avoid hot links (OpenSM minhop/updn port balancing, infiniband-sm.md §1.2)",
};
/// A node has no usable connection to the rest of the fabric.
pub const ISOLATED_NODE: Rule = Rule {
    id: "isolated-node",
    why: "a node that is not cabled to the subnet cannot be managed or reached by the SM",
};
/// An end port has no LID.
pub const NO_LID: Rule = Rule {
    id: "no-lid",
    why: "a port without a LID is not addressable: the SM did not sweep it or it is not in the dumps",
};

/// A leaf carries NICs of more than one rail.
pub const RAIL_MIXED: Rule = Rule {
    id: "rail-mixed",
    why: "in a rail-optimized fabric NIC r of every server of a scalable unit shares one leaf, so same-index GPUs are one switch apart and NCCL's rail-local rings never cross a spine (DGX SuperPOD RA, Network Fabrics; training-workloads.md §8.1)",
};
/// One rail of a scalable unit is spread over several leaves.
pub const RAIL_SPLIT: Rule = Rule {
    id: "rail-split",
    why: "a rail split over leaves sends rail-local traffic through the spines, where it meets other traffic and ECMP (DGX SuperPOD RA, Network Fabrics)",
};
/// A server has two NICs on one leaf.
pub const RAIL_SERVER: Rule = Rule {
    id: "rail-server",
    why: "two NICs of a server on one leaf means a rail lost its own NIC: a miscabled port (DGX SuperPOD RA, Network Fabrics)",
};
/// A leaf has fewer uplinks than NIC links.
pub const RAIL_UPLINKS: Rule = Rule {
    id: "rail-uplinks",
    why: "the SuperPOD leaves are non-blocking (32 NIC ports, 32 uplinks); fewer uplinks oversubscribe every cross-leaf flow of the rail (DGX SuperPOD H100 RA, Table 4)",
};

/// The requested routing engine failed and another one was used.
pub const ENGINE_FALLBACK: Rule = Rule {
    id: "engine-fallback",
    why: "OpenSM falls back silently (e.g. to minhop, which is not deadlock free); the tables in force are not the ones asked for (infiniband-sm.md §5)",
};

/// Two hosts of one tenant share no partition they can talk in.
pub const TENANT_CANNOT_TALK: Rule = Rule {
    id: "tenant-cannot-talk",
    why: "hosts talk only when their ports share a partition with at least one full member; otherwise the receiving HCA drops every packet and counts a P_Key violation (IBA vol. 1 §10.9; failures-isolation-sweeps.md §1.1, §1.5)",
};
/// Hosts of two tenants share a partition they can talk in.
pub const TENANT_LEAK: Rule = Rule {
    id: "tenant-leak",
    why: "a shared partition with a full member on either side lets two tenants' hosts exchange RDMA traffic: the isolation partitions exist to give is gone (IBA vol. 1 §10.9; failures-isolation-sweeps.md §1.1)",
};
/// A CA port in a tenant's partition is in no tenant group.
pub const HOST_NOT_IN_TENANTS: Rule = Rule {
    id: "host-not-in-tenants",
    why: "a port the tenant file does not list, inside a tenant's partition, can reach that tenant's hosts: either the tenant file or the partition is out of date",
};

/// Build a finding for `rule`.
pub fn finding(rule: Rule, severity: Severity, location: Location, message: String, fix: String) -> Finding {
    Finding {
        rule: rule.id,
        severity,
        location,
        message,
        why: rule.why,
        fix,
    }
}
