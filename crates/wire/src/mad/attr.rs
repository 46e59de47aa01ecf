//! SMP attributes (IBA vol. 1 §14.2.5) as `Packet<T>` views and `Repr`s over the
//! 64-byte SMP data block. Bit positions follow IBA and the bit offsets of rdma-core
//! `libibmad/fields.c`; see also `../shared/reference/infiniband-sm.md` §3.2.

use crate::bytes::{be16, put16};
use crate::error::{Error, Result, need, room};
use crate::ids::{Guid, Lid};
use crate::mad::field::{attribute, wire_enum};

wire_enum! {
    /// NodeInfo:NodeType.
    NodeType {
        /// 1: channel adapter.
        Ca = 1,
        /// 2: switch.
        Switch = 2,
        /// 3: router.
        Router = 3,
    }
}

wire_enum! {
    /// PortInfo:PortState (IBA Table 148).
    PortState {
        /// 0: no state change (in a Set).
        NoChange = 0,
        /// 1: Down.
        Down = 1,
        /// 2: Initialize.
        Init = 2,
        /// 3: Armed.
        Armed = 3,
        /// 4: Active.
        Active = 4,
    }
}

wire_enum! {
    /// PortInfo:PortPhysicalState.
    PhysState {
        /// 0: no state change.
        NoChange = 0,
        /// 1: Sleep.
        Sleep = 1,
        /// 2: Polling.
        Polling = 2,
        /// 3: Disabled.
        Disabled = 3,
        /// 4: PortConfigurationTraining.
        Training = 4,
        /// 5: LinkUp.
        LinkUp = 5,
        /// 6: LinkErrorRecovery.
        LinkErrorRecovery = 6,
        /// 7: Phy Test.
        PhyTest = 7,
    }
}

wire_enum! {
    /// An IB MTU code (NeighborMTU, MTUCap).
    Mtu {
        /// 256 bytes.
        Mtu256 = 1,
        /// 512 bytes.
        Mtu512 = 2,
        /// 1024 bytes.
        Mtu1024 = 3,
        /// 2048 bytes.
        Mtu2048 = 4,
        /// 4096 bytes.
        Mtu4096 = 5,
    }
}

impl Mtu {
    /// Bytes, or `None` for unknown codes.
    pub fn bytes(self) -> Option<u32> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }
}

wire_enum! {
    /// SMInfo:SMState.
    SmState {
        /// 0: not active.
        NotActive = 0,
        /// 1: discovering.
        Discovering = 1,
        /// 2: standby.
        Standby = 2,
        /// 3: master.
        Master = 3,
    }
}

/// LinkWidth bits (Enabled/Supported/Active): 1x, 4x, 8x, 12x, 2x.
pub mod width {
    /// 1x.
    pub const X1: u8 = 0x01;
    /// 4x.
    pub const X4: u8 = 0x02;
    /// 8x.
    pub const X8: u8 = 0x04;
    /// 12x.
    pub const X12: u8 = 0x08;
    /// 2x (IBA 1.3).
    pub const X2: u8 = 0x10;
    /// Lanes of a single active-width bit, 0 if not exactly one known bit.
    pub fn lanes(w: u8) -> u32 {
        match w {
            X1 => 1,
            X2 => 2,
            X4 => 4,
            X8 => 8,
            X12 => 12,
            _ => 0,
        }
    }
}

/// LinkSpeed bits (Supported/Enabled/Active) and LinkSpeedExt bits.
pub mod speed {
    /// SDR 2.5 Gb/s per lane.
    pub const SDR: u8 = 0x1;
    /// DDR 5 Gb/s.
    pub const DDR: u8 = 0x2;
    /// QDR 10 Gb/s.
    pub const QDR: u8 = 0x4;
    /// LinkSpeedExt: FDR 14.0625 Gb/s.
    pub const EXT_FDR: u8 = 0x1;
    /// LinkSpeedExt: EDR 25.78125 Gb/s.
    pub const EXT_EDR: u8 = 0x2;
    /// LinkSpeedExt: HDR 53.125 Gb/s (PAM4).
    pub const EXT_HDR: u8 = 0x4;
    /// LinkSpeedExt: NDR 106.25 Gb/s.
    pub const EXT_NDR: u8 = 0x8;
}

/// PortInfo:CapabilityMask bits the SM uses (IBA Table 148).
pub mod cap {
    /// Bit 1: IsSM.
    pub const IS_SM: u32 = 1 << 1;
    /// Bit 2: IsNoticeSupported.
    pub const IS_NOTICE_SUPPORTED: u32 = 1 << 2;
    /// Bit 3: IsTrapSupported.
    pub const IS_TRAP_SUPPORTED: u32 = 1 << 3;
    /// Bit 14: IsExtendedSpeedsSupported.
    pub const IS_EXTENDED_SPEEDS_SUPPORTED: u32 = 1 << 14;
    /// Bit 15: IsCapabilityMask2Supported.
    pub const IS_CAP_MASK2_SUPPORTED: u32 = 1 << 15;
    /// Bit 16: IsCommunicationManagementSupported.
    pub const IS_CM_SUPPORTED: u32 = 1 << 16;
    /// Bit 19: IsDeviceManagementSupported.
    pub const IS_DEVICE_MGMT_SUPPORTED: u32 = 1 << 19;
    /// Bit 25: IsClientReregistrationSupported.
    pub const IS_CLIENT_REREG_SUPPORTED: u32 = 1 << 25;
}

/// NodeInfo (0x0011, 40 bytes).
pub mod node_info {
    use super::*;
    attribute! {
        /// NodeInfo (IBA §14.2.5.3).
        "NodeInfo", 40, {
            /// BaseVersion (1).
            base_version / set_base_version: u8 = [u8 0],
            /// ClassVersion (1).
            class_version / set_class_version: u8 = [u8 1],
            /// NodeType.
            node_type / set_node_type: NodeType = [u8 2],
            /// Number of external ports.
            num_ports / set_num_ports: u8 = [u8 3],
            /// SystemImageGUID.
            system_image_guid / set_system_image_guid: Guid = [u64 4],
            /// NodeGUID.
            node_guid / set_node_guid: Guid = [u64 12],
            /// PortGUID of the port the SMP arrived on (switches: port 0).
            port_guid / set_port_guid: Guid = [u64 20],
            /// PartitionCap: P_Key table entries.
            partition_cap / set_partition_cap: u16 = [u16 28],
            /// DeviceID.
            device_id / set_device_id: u16 = [u16 30],
            /// Revision.
            revision / set_revision: u32 = [u32 32],
            /// LocalPortNum: the port the SMP arrived on.
            local_port_num / set_local_port_num: u8 = [u8 36],
            /// VendorID (24 bits).
            vendor_id / set_vendor_id: u32 = [u24 37],
        }
    }
}

/// PortInfo (0x0015, 64 bytes). AttributeModifier = port number.
pub mod port_info {
    use super::*;
    attribute! {
        /// PortInfo (IBA §14.2.5.6).
        "PortInfo", 64, {
            /// M_Key.
            m_key / set_m_key: u64 = [u64 0],
            /// GID prefix.
            gid_prefix / set_gid_prefix: u64 = [u64 8],
            /// Base LID.
            lid / set_lid: Lid = [u16 16],
            /// MasterSMLID.
            master_sm_lid / set_master_sm_lid: Lid = [u16 18],
            /// CapabilityMask (see [`cap`]).
            capability_mask / set_capability_mask: u32 = [u32 20],
            /// DiagCode.
            diag_code / set_diag_code: u16 = [u16 24],
            /// M_KeyLeasePeriod.
            m_key_lease_period / set_m_key_lease_period: u16 = [u16 26],
            /// LocalPortNum.
            local_port_num / set_local_port_num: u8 = [u8 28],
            /// LinkWidthEnabled (see [`width`]).
            link_width_enabled / set_link_width_enabled: u8 = [u8 29],
            /// LinkWidthSupported.
            link_width_supported / set_link_width_supported: u8 = [u8 30],
            /// LinkWidthActive.
            link_width_active / set_link_width_active: u8 = [u8 31],
            /// LinkSpeedSupported (see [`speed`]).
            link_speed_supported / set_link_speed_supported: u8 = [bits 32 4 4],
            /// PortState.
            port_state / set_port_state: PortState = [bits 32 0 4],
            /// PortPhysicalState.
            phys_state / set_phys_state: PhysState = [bits 33 4 4],
            /// LinkDownDefaultState.
            link_down_default_state / set_link_down_default_state: u8 = [bits 33 0 4],
            /// M_KeyProtectBits.
            m_key_protect_bits / set_m_key_protect_bits: u8 = [bits 34 6 2],
            /// LMC.
            lmc / set_lmc: u8 = [bits 34 0 3],
            /// LinkSpeedActive.
            link_speed_active / set_link_speed_active: u8 = [bits 35 4 4],
            /// LinkSpeedEnabled.
            link_speed_enabled / set_link_speed_enabled: u8 = [bits 35 0 4],
            /// NeighborMTU.
            neighbor_mtu / set_neighbor_mtu: Mtu = [bits 36 4 4],
            /// MasterSMSL.
            master_sm_sl / set_master_sm_sl: u8 = [bits 36 0 4],
            /// VLCap (1: VL0, 2: VL0–1, 3: VL0–3, 4: VL0–7, 5: VL0–14).
            vl_cap / set_vl_cap: u8 = [bits 37 4 4],
            /// InitType.
            init_type / set_init_type: u8 = [bits 37 0 4],
            /// VLHighLimit.
            vl_high_limit / set_vl_high_limit: u8 = [u8 38],
            /// VLArbitrationHighCap.
            vl_arb_high_cap / set_vl_arb_high_cap: u8 = [u8 39],
            /// VLArbitrationLowCap.
            vl_arb_low_cap / set_vl_arb_low_cap: u8 = [u8 40],
            /// InitTypeReply.
            init_type_reply / set_init_type_reply: u8 = [bits 41 4 4],
            /// MTUCap.
            mtu_cap / set_mtu_cap: Mtu = [bits 41 0 4],
            /// VLStallCount.
            vl_stall_count / set_vl_stall_count: u8 = [bits 42 5 3],
            /// HOQLife.
            hoq_life / set_hoq_life: u8 = [bits 42 0 5],
            /// OperationalVLs (same coding as VLCap).
            oper_vls / set_oper_vls: u8 = [bits 43 4 4],
            /// PartitionEnforcementInbound.
            partition_enforcement_inbound / set_partition_enforcement_inbound: bool = [bits 43 3 1],
            /// PartitionEnforcementOutbound.
            partition_enforcement_outbound / set_partition_enforcement_outbound: bool = [bits 43 2 1],
            /// FilterRawInbound.
            filter_raw_inbound / set_filter_raw_inbound: bool = [bits 43 1 1],
            /// FilterRawOutbound.
            filter_raw_outbound / set_filter_raw_outbound: bool = [bits 43 0 1],
            /// M_KeyViolations.
            m_key_violations / set_m_key_violations: u16 = [u16 44],
            /// P_KeyViolations.
            p_key_violations / set_p_key_violations: u16 = [u16 46],
            /// Q_KeyViolations.
            q_key_violations / set_q_key_violations: u16 = [u16 48],
            /// GUIDCap.
            guid_cap / set_guid_cap: u8 = [u8 50],
            /// ClientReregister.
            client_reregister / set_client_reregister: bool = [bits 51 7 1],
            /// MulticastPKeyTrapSuppressionEnabled (2 bits).
            mcast_pkey_trap_suppression / set_mcast_pkey_trap_suppression: u8 = [bits 51 5 2],
            /// SubnetTimeOut.
            subnet_timeout / set_subnet_timeout: u8 = [bits 51 0 5],
            /// RespTimeValue.
            resp_time_value / set_resp_time_value: u8 = [bits 52 0 5],
            /// LocalPhyErrors threshold.
            local_phy_errors / set_local_phy_errors: u8 = [bits 53 4 4],
            /// OverrunErrors threshold.
            overrun_errors / set_overrun_errors: u8 = [bits 53 0 4],
            /// MaxCreditHint.
            max_credit_hint / set_max_credit_hint: u16 = [u16 54],
            /// LinkRoundTripLatency (24 bits).
            link_round_trip_latency / set_link_round_trip_latency: u32 = [u24 57],
            /// CapabilityMask2.
            capability_mask2 / set_capability_mask2: u16 = [u16 60],
            /// LinkSpeedExtActive.
            link_speed_ext_active / set_link_speed_ext_active: u8 = [bits 62 4 4],
            /// LinkSpeedExtSupported.
            link_speed_ext_supported / set_link_speed_ext_supported: u8 = [bits 62 0 4],
            /// LinkSpeedExtEnabled (5 bits).
            link_speed_ext_enabled / set_link_speed_ext_enabled: u8 = [bits 63 0 5],
        }
    }
}

/// SwitchInfo (0x0012, 20 bytes used).
pub mod switch_info {
    use super::*;
    attribute! {
        /// SwitchInfo (IBA §14.2.5.4).
        "SwitchInfo", 20, {
            /// LinearFDBCap.
            linear_fdb_cap / set_linear_fdb_cap: u16 = [u16 0],
            /// RandomFDBCap.
            random_fdb_cap / set_random_fdb_cap: u16 = [u16 2],
            /// MulticastFDBCap.
            multicast_fdb_cap / set_multicast_fdb_cap: u16 = [u16 4],
            /// LinearFDBTop: the highest LID the LFT holds.
            linear_fdb_top / set_linear_fdb_top: u16 = [u16 6],
            /// DefaultPort.
            default_port / set_default_port: u8 = [u8 8],
            /// DefaultMulticastPrimaryPort.
            default_mcast_primary_port / set_default_mcast_primary_port: u8 = [u8 9],
            /// DefaultMulticastNotPrimaryPort.
            default_mcast_not_primary_port / set_default_mcast_not_primary_port: u8 = [u8 10],
            /// LifeTimeValue (5 bits).
            life_time_value / set_life_time_value: u8 = [bits 11 3 5],
            /// PortStateChange: set by the switch, cleared by the SM writing 1.
            port_state_change / set_port_state_change: bool = [bits 11 2 1],
            /// OptimizedSLtoVLMappingProgramming (2 bits).
            optimized_sl2vl / set_optimized_sl2vl: u8 = [bits 11 0 2],
            /// LIDsPerPort.
            lids_per_port / set_lids_per_port: u16 = [u16 12],
            /// PartitionEnforcementCap.
            partition_enforcement_cap / set_partition_enforcement_cap: u16 = [u16 14],
            /// InboundEnforcementCap.
            inbound_enforcement_cap / set_inbound_enforcement_cap: bool = [bits 16 7 1],
            /// OutboundEnforcementCap.
            outbound_enforcement_cap / set_outbound_enforcement_cap: bool = [bits 16 6 1],
            /// FilterRawInboundCap.
            filter_raw_inbound_cap / set_filter_raw_inbound_cap: bool = [bits 16 5 1],
            /// FilterRawOutboundCap.
            filter_raw_outbound_cap / set_filter_raw_outbound_cap: bool = [bits 16 4 1],
            /// EnhancedPort0.
            enhanced_port0 / set_enhanced_port0: bool = [bits 16 3 1],
            /// MulticastFDBTop.
            multicast_fdb_top / set_multicast_fdb_top: u16 = [u16 18],
        }
    }
}

/// SMInfo (0x0020, 21 bytes).
pub mod sm_info {
    use super::*;
    attribute! {
        /// SMInfo (IBA §14.2.5.13).
        "SMInfo", 21, {
            /// The SM's port GUID.
            guid / set_guid: Guid = [u64 0],
            /// SM_Key.
            sm_key / set_sm_key: u64 = [u64 8],
            /// ActCount: incremented by a master SM as a heartbeat.
            act_count / set_act_count: u32 = [u32 16],
            /// Priority (4 bits).
            priority / set_priority: u8 = [bits 20 4 4],
            /// SMState.
            sm_state / set_sm_state: SmState = [bits 20 0 4],
        }
    }
}

/// Notice (0x0002): traps (IBA §13.4.8.2). The SMP data holds the first 64 bytes;
/// IssuerGID (bytes 64–79) does not fit an SMP and is not carried.
pub mod notice {
    use super::*;
    attribute! {
        /// Notice header and raw DataDetails.
        "Notice", 64, {
            /// IsGeneric.
            is_generic / set_is_generic: bool = [bits 0 7 1],
            /// Type (0 fatal, 1 urgent, 2 security, 3 SM, 4 informational).
            notice_type / set_notice_type: u8 = [bits 0 0 7],
            /// ProducerType (generic: 1 CA, 2 switch, 3 router, 4 class manager) or VendorID.
            producer_type / set_producer_type: u32 = [u24 1],
            /// TrapNumber (generic) or DeviceID.
            trap_number / set_trap_number: u16 = [u16 4],
            /// IssuerLID.
            issuer_lid / set_issuer_lid: Lid = [u16 6],
            /// NoticeToggle.
            toggle / set_toggle: bool = [bits 8 7 1],
            /// NoticeCount (15 bits).
            count / set_count: u16 = [u16 8],
        }
    }

    /// Offset of DataDetails.
    pub const DETAILS_AT: usize = 10;

    /// The trap-specific DataDetails this crate models.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum TrapDetails {
        /// Trap 128: link state change on a switch; LIDADDR of the switch.
        LinkStateChange {
            /// The switch's LID.
            lid: Lid,
        },
        /// Traps 129 (local link integrity threshold), 130 (excessive buffer
        /// overrun threshold), 131 (flow control update watchdog): LIDADDR and PORTNO.
        PortError {
            /// 129, 130 or 131.
            trap: u16,
            /// LID of the port's node.
            lid: Lid,
            /// Port number.
            port: u8,
        },
        /// Trap 144: a port's capability mask (or P_Key/LID) changed.
        CapabilityMaskChange {
            /// LID.
            lid: Lid,
            /// LocalChanges bit.
            local_changes: bool,
            /// New CapabilityMask.
            cap_mask: u32,
            /// ChangeFlags.
            change_flags: u16,
            /// New CapabilityMask2.
            cap_mask2: u16,
        },
        /// Any other trap or a vendor notice: the 54 raw bytes.
        Raw([u8; 54]),
    }

    impl TrapDetails {
        /// The trap number this detail belongs to (None for raw).
        pub fn trap_number(&self) -> Option<u16> {
            match self {
                TrapDetails::LinkStateChange { .. } => Some(128),
                TrapDetails::PortError { trap, .. } => Some(*trap),
                TrapDetails::CapabilityMaskChange { .. } => Some(144),
                TrapDetails::Raw(_) => None,
            }
        }
        /// Decode DataDetails according to the trap number (generic notices only).
        pub fn parse(is_generic: bool, trap: u16, d: &[u8]) -> Result<TrapDetails> {
            need("Notice DataDetails", d, 54)?;
            Ok(match (is_generic, trap) {
                (true, 128) => TrapDetails::LinkStateChange { lid: Lid(be16(d, 0)) },
                (true, 129..=131) => TrapDetails::PortError {
                    trap,
                    lid: Lid(be16(d, 2)),
                    port: d[4],
                },
                (true, 144) => TrapDetails::CapabilityMaskChange {
                    lid: Lid(be16(d, 2)),
                    local_changes: d[5] & 1 != 0,
                    cap_mask: crate::bytes::be32(d, 6),
                    change_flags: be16(d, 10),
                    cap_mask2: be16(d, 12),
                },
                _ => {
                    let mut r = [0u8; 54];
                    r.copy_from_slice(&d[..54]);
                    TrapDetails::Raw(r)
                }
            })
        }
        /// Write the 54 DataDetails bytes.
        pub fn emit(&self, d: &mut [u8]) -> Result<()> {
            room("Notice DataDetails", d, 54)?;
            d[..54].fill(0);
            match *self {
                TrapDetails::LinkStateChange { lid } => put16(d, 0, lid.0),
                TrapDetails::PortError { lid, port, .. } => {
                    put16(d, 2, lid.0);
                    d[4] = port;
                }
                TrapDetails::CapabilityMaskChange {
                    lid,
                    local_changes,
                    cap_mask,
                    change_flags,
                    cap_mask2,
                } => {
                    put16(d, 2, lid.0);
                    d[5] = local_changes as u8;
                    crate::bytes::put32(d, 6, cap_mask);
                    put16(d, 10, change_flags);
                    put16(d, 12, cap_mask2);
                }
                TrapDetails::Raw(r) => d[..54].copy_from_slice(&r),
            }
            Ok(())
        }
    }

    /// A whole Notice: header fields plus details.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Notice {
        /// The header fields (`count` holds only the low 15 bits).
        pub header: Repr,
        /// DataDetails.
        pub details: TrapDetails,
    }

    impl Notice {
        /// A generic trap from a node of `producer` type (1 CA, 2 switch, 3 router)
        /// with the IBA type for that trap (128–131: urgent; 144: informational).
        pub fn trap(producer: u32, issuer: Lid, details: TrapDetails) -> Notice {
            let trap = details.trap_number().unwrap_or(0);
            let notice_type = if trap == 144 { 4 } else { 1 };
            Notice {
                header: Repr {
                    is_generic: true,
                    notice_type,
                    producer_type: producer,
                    trap_number: trap,
                    issuer_lid: issuer,
                    toggle: false,
                    count: 0,
                },
                details,
            }
        }
        /// Parse the 64-byte SMP data.
        pub fn parse(d: &[u8]) -> Result<Notice> {
            let mut header = Repr::from_bytes(d)?;
            header.count &= 0x7fff;
            let details = TrapDetails::parse(header.is_generic, header.trap_number, &d[DETAILS_AT..])?;
            Ok(Notice { header, details })
        }
        /// Write the 64-byte SMP data.
        pub fn emit(&self, d: &mut [u8]) -> Result<()> {
            let mut h = self.header;
            h.count = (h.count & 0x7fff) | ((h.toggle as u16) << 15);
            h.to_bytes(d)?;
            self.details.emit(&mut d[DETAILS_AT..])
        }
    }
}

/// NodeDescription (0x0010): 64 bytes of UTF-8, NUL padded.
pub mod node_description {
    use super::*;

    /// Length.
    pub const LEN: usize = 64;

    /// A node description.
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Repr(pub [u8; 64]);

    impl core::fmt::Debug for Repr {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "NodeDescription({:?})", self.text())
        }
    }

    impl Repr {
        /// From text; errors if longer than 64 bytes.
        pub fn new(text: &str) -> Result<Repr> {
            if text.len() > LEN {
                return Err(Error::Unrepresentable {
                    header: "NodeDescription",
                    field: "text",
                    value: text.len() as u64,
                    expected: "at most 64 bytes",
                });
            }
            let mut b = [0u8; 64];
            b[..text.len()].copy_from_slice(text.as_bytes());
            Ok(Repr(b))
        }
        /// The text up to the first NUL (invalid UTF-8 is replaced lossily).
        pub fn text(&self) -> String {
            let end = self.0.iter().position(|&c| c == 0).unwrap_or(LEN);
            String::from_utf8_lossy(&self.0[..end]).into_owned()
        }
        /// Parse.
        pub fn from_bytes(b: &[u8]) -> Result<Repr> {
            need("NodeDescription", b, LEN)?;
            let mut r = [0u8; 64];
            r.copy_from_slice(&b[..LEN]);
            Ok(Repr(r))
        }
        /// Write.
        pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
            room("NodeDescription", b, LEN)?;
            b[..LEN].copy_from_slice(&self.0);
            Ok(())
        }
    }
}

/// LinearForwardingTable (0x0019): AttributeModifier = block; 64 one-byte egress
/// ports for LIDs `64*block ..= 64*block+63`; 0 = the switch itself, 0xFF = drop.
pub mod lft {
    use super::*;
    /// Entries per block.
    pub const BLOCK: usize = 64;
    /// "No route" port value.
    pub const DROP: u8 = 0xff;
    /// One 64-entry block.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Repr {
        /// Egress port per LID in the block.
        pub ports: [u8; 64],
    }
    impl Repr {
        /// Parse.
        pub fn from_bytes(b: &[u8]) -> Result<Repr> {
            need("LinearForwardingTable", b, BLOCK)?;
            let mut ports = [0u8; 64];
            ports.copy_from_slice(&b[..BLOCK]);
            Ok(Repr { ports })
        }
        /// Write.
        pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
            room("LinearForwardingTable", b, BLOCK)?;
            b[..BLOCK].copy_from_slice(&self.ports);
            Ok(())
        }
        /// The block holding `lid` and the index inside it.
        pub fn locate(lid: Lid) -> (u32, usize) {
            ((lid.0 as usize / BLOCK) as u32, lid.0 as usize % BLOCK)
        }
    }
}

/// P_KeyTable (0x0016): AttributeModifier = block (and port for switches in bits
/// 16–31); 32 P_Keys, bit 15 = full membership.
pub mod pkey_table {
    use super::*;
    /// Entries per block.
    pub const BLOCK: usize = 32;
    /// One block.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Repr {
        /// The P_Keys.
        pub pkeys: [u16; 32],
    }
    impl Repr {
        /// Parse.
        pub fn from_bytes(b: &[u8]) -> Result<Repr> {
            need("P_KeyTable", b, 64)?;
            let mut pkeys = [0u16; 32];
            for (i, k) in pkeys.iter_mut().enumerate() {
                *k = be16(b, 2 * i);
            }
            Ok(Repr { pkeys })
        }
        /// Write.
        pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
            room("P_KeyTable", b, 64)?;
            for (i, k) in self.pkeys.iter().enumerate() {
                put16(b, 2 * i, *k);
            }
            Ok(())
        }
    }
}

/// SLtoVLMappingTable (0x0017, 8 bytes): 16 four-bit VLs, SL0 in the high nibble
/// of byte 0. AttributeModifier: input port << 8 | output port for switches.
pub mod sl2vl {
    use super::*;
    /// Length.
    pub const LEN: usize = 8;
    /// The table.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Repr {
        /// VL per SL.
        pub vl: [u8; 16],
    }
    impl Repr {
        /// Parse.
        pub fn from_bytes(b: &[u8]) -> Result<Repr> {
            need("SLtoVLMappingTable", b, LEN)?;
            let mut vl = [0u8; 16];
            for (sl, v) in vl.iter_mut().enumerate() {
                *v = if sl % 2 == 0 { b[sl / 2] >> 4 } else { b[sl / 2] & 0xf };
            }
            Ok(Repr { vl })
        }
        /// Write (VLs masked to 4 bits).
        pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
            room("SLtoVLMappingTable", b, LEN)?;
            for (byte, pair) in b[..LEN].iter_mut().zip(self.vl.chunks_exact(2)) {
                *byte = ((pair[0] & 0xf) << 4) | (pair[1] & 0xf);
            }
            Ok(())
        }
    }
}

/// VLArbitrationTable (0x0018): 32 (VL, weight) entries per block. AttributeModifier
/// (high 16 bits): 1 = low priority 0–31, 2 = low 32–63, 3 = high 0–31, 4 = high 32–63.
pub mod vl_arb {
    use super::*;
    /// Entries per block.
    pub const BLOCK: usize = 32;
    /// One entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Entry {
        /// VL (4 bits).
        pub vl: u8,
        /// Weight in 64-byte units.
        pub weight: u8,
    }
    /// One block.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Repr {
        /// Entries.
        pub entries: [Entry; 32],
    }
    impl Repr {
        /// Parse.
        pub fn from_bytes(b: &[u8]) -> Result<Repr> {
            need("VLArbitrationTable", b, 64)?;
            let mut entries = [Entry::default(); 32];
            for (i, e) in entries.iter_mut().enumerate() {
                *e = Entry {
                    vl: b[2 * i] & 0xf,
                    weight: b[2 * i + 1],
                };
            }
            Ok(Repr { entries })
        }
        /// Write.
        pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
            room("VLArbitrationTable", b, 64)?;
            for (i, e) in self.entries.iter().enumerate() {
                b[2 * i] = e.vl & 0xf;
                b[2 * i + 1] = e.weight;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_info_bit_positions() {
        let mut b = [0u8; 64];
        let r = port_info::Repr {
            lid: Lid(0x1234),
            lmc: 2,
            port_state: PortState::Active,
            phys_state: PhysState::LinkUp,
            link_speed_supported: 7,
            neighbor_mtu: Mtu::Mtu4096,
            master_sm_sl: 3,
            vl_cap: 4,
            mtu_cap: Mtu::Mtu4096,
            oper_vls: 4,
            m_key_protect_bits: 1,
            link_speed_ext_enabled: 0x1f,
            link_speed_ext_active: speed::EXT_HDR,
            link_round_trip_latency: 0xabcdef,
            client_reregister: true,
            subnet_timeout: 18,
            ..Default::default()
        };
        r.to_bytes(&mut b).unwrap();
        assert_eq!(&b[16..18], &[0x12, 0x34]);
        assert_eq!(b[32], 0x74);
        assert_eq!(b[33], 0x50);
        assert_eq!(b[34], 0x42);
        assert_eq!(b[36], 0x53);
        assert_eq!(b[37], 0x40);
        assert_eq!(b[41], 0x05);
        assert_eq!(b[43], 0x40);
        assert_eq!(b[51], 0x80 | 18);
        assert_eq!(&b[57..60], &[0xab, 0xcd, 0xef]);
        assert_eq!(b[62], 0x40);
        assert_eq!(b[63], 0x1f);
        assert_eq!(port_info::Repr::from_bytes(&b).unwrap(), r);
    }

    #[test]
    fn notice_traps_round_trip() {
        for d in [
            notice::TrapDetails::LinkStateChange { lid: Lid(7) },
            notice::TrapDetails::PortError {
                trap: 130,
                lid: Lid(9),
                port: 4,
            },
            notice::TrapDetails::CapabilityMaskChange {
                lid: Lid(3),
                local_changes: true,
                cap_mask: 0x0251_0a6a,
                change_flags: 4,
                cap_mask2: 0x20,
            },
        ] {
            let n = notice::Notice::trap(2, Lid(12), d);
            let mut b = [0xa5u8; 64];
            n.emit(&mut b).unwrap();
            assert_eq!(b[0] & 0x80, 0x80);
            assert_eq!(notice::Notice::parse(&b).unwrap(), n);
        }
    }

    #[test]
    fn tables_round_trip() {
        let mut b = [0xa5u8; 64];
        let s = sl2vl::Repr {
            vl: [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 14],
        };
        s.to_bytes(&mut b).unwrap();
        assert_eq!(b[0], 0x01);
        assert_eq!(sl2vl::Repr::from_bytes(&b).unwrap(), s);
        let nd = node_description::Repr::new("leaf01 mlx5_0").unwrap();
        nd.to_bytes(&mut b).unwrap();
        assert_eq!(node_description::Repr::from_bytes(&b).unwrap().text(), "leaf01 mlx5_0");
        assert!(node_description::Repr::new(&"x".repeat(65)).is_err());
        assert_eq!(lft::Repr::locate(Lid(130)), (2, 2));
    }
}
