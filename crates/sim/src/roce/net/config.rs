//! The RoCE world's settings, grouped by the part of the model they set.

use super::*;

/// How the NICs control congestion.
#[derive(Clone, Debug, PartialEq)]
pub enum CongestionControl {
    /// Line rate, no reaction to ECN.
    None,
    /// DCQCN with these parameters (`line_bps` is replaced per NIC).
    Dcqcn(DcqcnParams),
    /// DCTCP as HPCC ns-3 runs it (`CC_MODE 8`): ACKs echo CE, the sender's rate
    /// follows α (`line_bps` is replaced per NIC).
    Dctcp(crate::roce::dctcp::DctcpParams),
    /// HPCC as HPCC ns-3 runs it (`CC_MODE 3`): switches append INT records at
    /// egress, ACKs echo them, the sender's rate follows the most utilised hop
    /// (`line_bps` is replaced per NIC).
    Hpcc(crate::roce::hpcc_cc::HpccParams),
}

/// Parameters of a RoCE run.
/// The Ethernet world's settings, grouped by the part of the model they set.
#[derive(Clone, Debug)]
pub struct RoceConfig {
    /// The NICs: transport, congestion control and receive side.
    pub nic: NicConfig,
    /// The switches: shared buffer, ECN marking, PFC watchdog, pipeline latency, DSCP mapping.
    pub switch: SwitchConfig,
    /// Priority flow control (IEEE 802.1Qbb) on the RDMA priority.
    pub pfc: PfcConfig,
    /// Layer 3 and layer 2 forwarding: the ECMP hash, convergence and repair after failures, static overrides, RoCEv1's L2 mode.
    pub routing: RoutingConfig,
    /// Faults injected into the run.
    pub faults: FaultConfig,
    /// What the run watches and records.
    pub observe: ObserveConfig,
    /// Seed for every random draw (ECN marking).
    pub seed: u64,
}

/// The NICs: transport, congestion control and receive side.
#[derive(Clone, Debug)]
pub struct NicConfig {
    /// Payload bytes per packet.
    pub mtu: u32,
    /// NIC congestion control.
    pub cc: CongestionControl,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Retransmit timeout.
    pub rto: Time,
    /// Responder ACK coalescing (1 = every packet, as HPCC's L2_ACK_INTERVAL 1).
    pub ack_every: u32,
    /// NIC receive buffer on the lossless priority.
    pub nic_rx: NicRxConfig,
    /// NIC PFC stall prevention (`pfc-prevention-tout`).
    pub nic_stall_prevention: Option<Time>,
    /// The most payload a NIC port sends, in parts per million of its line rate:
    /// the NIC's own ceiling (DMA, PCIe) below the wire's. After a data frame the
    /// port idles until the frame's payload would have taken this long at that
    /// rate; ACKs, CNPs and pause frames are not held. 0 (and 1,000,000) leave
    /// the NIC at line rate.
    pub payload_ppm: u32,
    /// HPCC `ACK_HIGH_PRIO`: the NIC's ACK/NAK/CNP queue (always served before
    /// data) is checked against PFC class 0, which is never paused, instead of the
    /// data class (reference §1.1.4). Switches do not prioritise ACKs either way.
    pub ack_high_prio: bool,
}

/// The switches: shared buffer, ECN marking, PFC watchdog, pipeline latency, DSCP mapping.
#[derive(Clone, Debug)]
pub struct SwitchConfig {
    /// Switch shared buffer, bytes.
    pub buffer_bytes: u64,
    /// ECN marking at switches (RED per link rate from `red`, else the DCQCN profile's).
    pub ecn: bool,
    /// RED per link rate (bits/s); rates not listed use the profile's curve.
    pub red: Vec<(u64, Red)>,
    /// PFC watchdog on every switch lossless queue.
    pub watchdog: Option<WdConfig>,
    /// Switches whose DSCP map sends the RDMA DSCP to a lossy class (TC 0): the
    /// misconfiguration of one hop that breaks losslessness end to end.
    pub lossy_rdma_switches: Vec<NodeId>,
    /// A switch's port-to-port pipeline latency (parse, lookup, queueing
    /// logic), added to every frame it sends; 0 keeps HPCC ns-3's ideal switch.
    pub switch_latency: Time,
}

/// Priority flow control (IEEE 802.1Qbb) on the RDMA priority.
#[derive(Clone, Debug)]
pub struct PfcConfig {
    /// PFC on priority 3 at every switch and NIC.
    pub enabled: bool,
    /// PFC pause time semantics.
    pub pause_mode: PauseMode,
    /// Quanta written into XOFF frames.
    pub pause_quanta: u16,
}

/// Layer 3 and layer 2 forwarding: the ECMP hash, convergence and repair after failures, static overrides, RoCEv1's L2 mode.
#[derive(Clone, Debug)]
pub struct RoutingConfig {
    /// ECMP hash (the seed is mixed with each switch's node id).
    pub hash: HashConfig,
    /// ECMP convergence delay after a link failure.
    pub ecmp_convergence: Time,
    /// Local repair: a switch next to a failed link reroutes at once over the
    /// shortest paths that avoid it (its own view), while the others keep their
    /// old ECMP groups until `ecmp_convergence` — the window in which routes
    /// bounce (Hu et al., HotNets'16). Off: packets sent into the dead link are
    /// lost until convergence.
    pub local_repair: bool,
    /// Static route overrides: (switch, destination host, egress port).
    pub route_overrides: Vec<(NodeId, NodeId, u8)>,
    /// Run RoCEv1 (EtherType 0x8915, no IP header) in a fabric laid out as this:
    /// flows that would need a router are refused, and ECMP hashes see only the
    /// MAC addresses. `None` = RoCEv2.
    pub rocev1: Option<ethcp::L2Mode>,
}

/// Faults injected into the run (none by default).
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    /// NICs whose receive pipeline is stuck: they pause without end.
    pub faulty_nics: Vec<NodeId>,
    /// Drop every n-th data packet sent on these links (either direction).
    pub loss_every: Vec<(LinkId, u64)>,
}

/// What the run watches and records.
#[derive(Clone, Debug)]
pub struct ObserveConfig {
    /// Check for a PFC deadlock this often (0 = never).
    pub deadlock_check: Time,
    /// Record PFC frames received (pfc.txt).
    pub record_pfc: bool,
    /// Capture every frame sent out of this (node, port), pause frames included
    /// (write it with [`RoceSim::write_pcap`]).
    pub capture: Option<(NodeId, u8)>,
}

impl Default for RoceConfig {
    /// A lossless RoCEv2 fabric in the HPCC ns-3 style: 1000-byte payloads, PFC
    /// and ECN on, DCQCN `hpcc-ns3` (line rate filled per NIC), go-back-N, a
    /// 32 MB buffer, pauses until XON, no watchdog.
    fn default() -> Self {
        RoceConfig {
            nic: NicConfig::default(),
            switch: SwitchConfig::default(),
            pfc: PfcConfig::default(),
            routing: RoutingConfig::default(),
            faults: FaultConfig::default(),
            observe: ObserveConfig::default(),
            seed: 1,
        }
    }
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            mtu: 1000,
            cc: CongestionControl::Dcqcn(crate::roce::dcqcn::Profile::HpccNs3.params(100_000_000_000)),
            recovery: Recovery::GoBackN,
            rto: Time::us(500),
            ack_every: 1,
            nic_rx: NicRxConfig::default(),
            nic_stall_prevention: None,
            payload_ppm: 0,
            ack_high_prio: true,
        }
    }
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer_bytes: 32 << 20,
            ecn: true,
            red: Vec::new(),
            watchdog: None,
            lossy_rdma_switches: Vec::new(),
            switch_latency: Time::ZERO,
        }
    }
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            enabled: true,
            pause_mode: PauseMode::UntilXon,
            pause_quanta: 0xffff,
        }
    }
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            hash: HashConfig {
                fields: field::FIVE_TUPLE,
                seed: 0,
                func: HashFn::Murmur3,
            },
            ecmp_convergence: Time::us(100),
            local_repair: false,
            route_overrides: Vec::new(),
            rocev1: None,
        }
    }
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            deadlock_check: Time::us(500),
            record_pfc: true,
            capture: None,
        }
    }
}

/// The NIC's receive buffer for the lossless priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicRxConfig {
    /// Bytes.
    pub size: u64,
    /// XOFF at or above this many bytes.
    pub xoff_at: u64,
    /// XON at or below this many bytes.
    pub xon_at: u64,
    /// Host drain rate, bits/s (0 = the host takes every packet at once).
    pub drain_bps: u64,
}

impl Default for NicRxConfig {
    /// 1 MiB with XOFF at 768 KiB and XON at 512 KiB, drained at once: a healthy
    /// NIC never pauses; set `drain_bps` below the line rate for a slow receiver
    /// (Guo et al. §4.4).
    fn default() -> Self {
        NicRxConfig {
            size: 1 << 20,
            xoff_at: 768 << 10,
            xon_at: 512 << 10,
            drain_bps: 0,
        }
    }
}
