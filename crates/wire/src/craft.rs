//! Packets from a readable TOML spec, for `rdmalab wire craft` and for tests.
//! Each `[[packet]]` names its encapsulation and the fields to set; everything
//! derived (lengths, checksums, pad, ICRC, VCRC) is computed by the builder.
//! Examples covering every header kind live in `examples/wire/`.
//!
//! ```toml
//! link = "ethernet"            # or "ib-erf" / "ib-user0"; default from the packets
//! [[packet]]
//! encap = "roce_v2_ipv4"       # roce_v2_ipv6, roce_v1, ib_local, ib_global, pfc, pause
//! opcode = "RC SEND_ONLY"      # a name or a number
//! dqpn = 0x11
//! psn = 0xfffffe
//! payload = "68656c6c6f"       # or payload_len = 4096, or payload_text = "hello"
//! ```

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Deserialize;

use crate::ib::aeth::{NakCode, RnrTimer, Syndrome};
use crate::ib::{Opcode, aeth, atomic_ack_eth, atomic_eth, bth, deth, grh, ieth, immdt, lrh, reth};
use crate::ids::Lid;
use crate::mad::attr::{
    lft, node_description, node_info, notice, pkey_table, port_info, sl2vl, sm_info, switch_info, vl_arb,
};
use crate::mad::header::{AttrId, Method};
use crate::mad::smp::{DrRoute, Route, Smp};
use crate::net::{ethernet, ipv4, ipv6, pfc, udp};
use crate::packet::{Encap, ExtHeaders, IbPacket, IpRepr, emit_mac_control};
use crate::pcap::{CaptureError, CaptureLink, CaptureWriter};
use crate::psn::Psn;

/// A spec error: which packet and field, and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum CraftError {
    /// The TOML does not parse or does not match the schema (the message has the line).
    #[error("parse spec {origin}: {message}")]
    Toml {
        /// File name.
        origin: String,
        /// toml's message, with line and column.
        message: String,
    },
    /// A field value is wrong.
    #[error("spec {origin}: packet {packet}: {field}: {message}")]
    Field {
        /// File name.
        origin: String,
        /// 1-based packet number.
        packet: usize,
        /// Field name.
        field: String,
        /// What was expected.
        message: String,
    },
    /// The builder refused the packet.
    #[error("spec {origin}: packet {packet}: build")]
    Build {
        /// File name.
        origin: String,
        /// 1-based packet number.
        packet: usize,
        /// Cause.
        #[source]
        source: crate::Error,
    },
    /// Writing the capture failed.
    #[error(transparent)]
    Capture(#[from] CaptureError),
}

/// A number or a name (opcodes, methods, attributes, syndromes).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NumOrName {
    /// A number.
    Num(u64),
    /// A name.
    Name(String),
}

/// The whole spec file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// "ethernet", "ib-erf" or "ib-user0".
    pub link: Option<String>,
    /// Timestamp of the first packet (ns since the epoch); default 1 700 000 000 s.
    pub start_ns: Option<u64>,
    /// Gap between packets, ns (default 1000).
    pub interval_ns: Option<u64>,
    /// The packets.
    #[serde(rename = "packet", default)]
    pub packets: Vec<PacketSpec>,
}

/// 802.1Q tag.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanSpec {
    /// PCP.
    #[serde(default)]
    pub pcp: u8,
    /// DEI.
    #[serde(default)]
    pub dei: bool,
    /// VID.
    #[serde(default)]
    pub vid: u16,
}

/// LRH fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LrhSpec {
    /// VL (default 0; 15 for SMPs).
    pub vl: Option<u8>,
    /// LVer.
    #[serde(default)]
    pub lver: u8,
    /// SL.
    #[serde(default)]
    pub sl: u8,
    /// DLID.
    pub dlid: Option<u16>,
    /// SLID.
    pub slid: Option<u16>,
}

/// GRH fields.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrhSpec {
    /// Traffic class.
    #[serde(default)]
    pub tclass: u8,
    /// Flow label.
    #[serde(default)]
    pub flow_label: u32,
    /// Hop limit (default 64).
    pub hop_limit: Option<u8>,
    /// Source GID (IPv6 text).
    pub sgid: Option<String>,
    /// Destination GID.
    pub dgid: Option<String>,
}

/// RETH fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RethSpec {
    /// VA.
    pub va: u64,
    /// R_Key.
    pub rkey: u32,
    /// DMA length.
    pub dma_len: u32,
}

/// AETH fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AethSpec {
    /// The syndrome byte, or `"ack"`, `"ack:<credits>"`, `"rnr:<timer>"`, `"nak:<code or name>"`.
    pub syndrome: NumOrName,
    /// MSN.
    #[serde(default)]
    pub msn: u32,
}

/// DETH fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DethSpec {
    /// Q_Key.
    pub qkey: u32,
    /// Source QP.
    pub src_qp: u32,
}

/// AtomicETH fields.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtomicSpec {
    /// VA.
    pub va: u64,
    /// R_Key.
    pub rkey: u32,
    /// Swap or add data.
    pub swap_add: u64,
    /// Compare data.
    #[serde(default)]
    pub compare: u64,
}

/// PFC frame.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSpec {
    /// Priority-enable vector.
    pub enable: u8,
    /// Eight pause times in quanta.
    pub quanta: Vec<u16>,
}

/// A trap's details.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrapSpec {
    /// 128, 129, 130, 131 or 144.
    pub number: u16,
    /// LIDADDR.
    pub lid: u16,
    /// Port (129–131).
    #[serde(default)]
    pub port: u8,
    /// Capability mask (144).
    #[serde(default)]
    pub cap_mask: u32,
    /// LocalChanges (144).
    #[serde(default)]
    pub local_changes: bool,
    /// ChangeFlags (144).
    #[serde(default)]
    pub change_flags: u16,
    /// CapabilityMask2 (144).
    #[serde(default)]
    pub cap_mask2: u16,
    /// Producer type (1 CA, 2 switch, 3 router); default 2.
    pub producer: Option<u32>,
    /// IssuerLID; default = lid.
    pub issuer_lid: Option<u16>,
}

/// An SMP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmpSpec {
    /// Method name or number (default Get).
    pub method: Option<NumOrName>,
    /// Attribute name (e.g. "PortInfo") or id.
    pub attr: NumOrName,
    /// AttributeModifier.
    #[serde(default)]
    pub attr_mod: u32,
    /// Transaction id.
    #[serde(default)]
    pub tid: u64,
    /// M_Key.
    #[serde(default)]
    pub m_key: u64,
    /// Status.
    #[serde(default)]
    pub status: u16,
    /// Directed route: egress port per hop. Absent = LID-routed.
    pub dr_path: Option<Vec<u8>>,
    /// Hop pointer (default 0).
    pub hop_ptr: Option<u8>,
    /// D bit.
    #[serde(default)]
    pub returning: bool,
    /// ReturnPath entries from index 1.
    pub return_path: Option<Vec<u8>>,
    /// DrSLID (default 0xFFFF).
    pub dr_slid: Option<u16>,
    /// DrDLID (default 0xFFFF).
    pub dr_dlid: Option<u16>,
    /// Attribute fields by name (NodeInfo, PortInfo, SwitchInfo, SMInfo): numbers,
    /// or strings such as "0xfe80000000000000" for values above TOML's i64 range.
    pub fields: Option<BTreeMap<String, NumOrName>>,
    /// NodeDescription text.
    pub text: Option<String>,
    /// LinearForwardingTable ports (up to 64).
    pub ports: Option<Vec<u8>>,
    /// P_KeyTable entries (up to 32).
    pub pkeys: Option<Vec<u16>>,
    /// SLtoVLMappingTable VLs (16).
    pub sl2vl: Option<Vec<u8>>,
    /// VLArbitrationTable (VL, weight) pairs (up to 32).
    pub vlarb: Option<Vec<[u8; 2]>>,
    /// Notice (trap).
    pub trap: Option<TrapSpec>,
    /// Raw 64-byte data as hex, for other attributes.
    pub data: Option<String>,
}

/// One packet.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketSpec {
    /// roce_v2_ipv4, roce_v2_ipv6, roce_v1, ib_local, ib_global, pfc, pause.
    pub encap: String,
    /// Timestamp override, ns.
    pub ts_ns: Option<u64>,
    /// Ethernet source MAC.
    pub eth_src: Option<String>,
    /// Ethernet destination MAC.
    pub eth_dst: Option<String>,
    /// 802.1Q tag.
    pub vlan: Option<VlanSpec>,
    /// IP source.
    pub ip_src: Option<String>,
    /// IP destination.
    pub ip_dst: Option<String>,
    /// DSCP.
    pub dscp: Option<u8>,
    /// ECN.
    pub ecn: Option<u8>,
    /// IPv4 TTL / IPv6 hop limit.
    pub ttl: Option<u8>,
    /// IPv4 identification.
    pub ip_id: Option<u16>,
    /// IPv4 DF (default true).
    pub df: Option<bool>,
    /// IPv6 flow label.
    pub flow_label: Option<u32>,
    /// UDP source port.
    pub udp_sport: Option<u16>,
    /// Compute the UDP checksum (default: no for IPv4, yes for IPv6).
    pub udp_checksum: Option<bool>,
    /// LRH.
    pub lrh: Option<LrhSpec>,
    /// GRH.
    pub grh: Option<GrhSpec>,
    /// Opcode name or number.
    pub opcode: Option<NumOrName>,
    /// SE.
    pub se: Option<bool>,
    /// MigReq.
    pub migreq: Option<bool>,
    /// TVer.
    pub tver: Option<u8>,
    /// P_Key (default 0xFFFF).
    pub pkey: Option<u16>,
    /// FECN.
    pub fecn: Option<bool>,
    /// BECN.
    pub becn: Option<bool>,
    /// Destination QP.
    pub dqpn: Option<u32>,
    /// AckReq.
    pub ack_req: Option<bool>,
    /// PSN.
    pub psn: Option<u32>,
    /// RETH.
    pub reth: Option<RethSpec>,
    /// AETH.
    pub aeth: Option<AethSpec>,
    /// DETH.
    pub deth: Option<DethSpec>,
    /// Immediate data.
    pub immdt: Option<u32>,
    /// IETH R_Key.
    pub ieth: Option<u32>,
    /// AtomicETH.
    pub atomic: Option<AtomicSpec>,
    /// AtomicAckETH original data.
    pub atomic_ack: Option<u64>,
    /// Payload as hex.
    pub payload: Option<String>,
    /// Payload as text.
    pub payload_text: Option<String>,
    /// Payload of this many pattern bytes.
    pub payload_len: Option<usize>,
    /// An SMP as payload (UD SEND_ONLY to QP0 by default).
    pub smp: Option<SmpSpec>,
    /// PFC frame content.
    pub pfc: Option<PfcSpec>,
    /// Link-level PAUSE quanta.
    pub pause_quanta: Option<u16>,
}

/// The frames a spec describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crafted {
    /// Capture link type.
    pub link: CaptureLink,
    /// (timestamp ns, frame) in order.
    pub frames: Vec<(u64, Vec<u8>)>,
}

impl Crafted {
    /// Write the frames as a pcap.
    pub fn write_pcap(&self, path: &std::path::Path) -> Result<(), CaptureError> {
        let mut w = CaptureWriter::create(path, self.link)?;
        for (ts, f) in &self.frames {
            w.write(*ts, f)?;
        }
        w.finish()?;
        Ok(())
    }
}

struct Ctx<'a> {
    origin: &'a str,
    packet: usize,
}

impl Ctx<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> CraftError {
        CraftError::Field {
            origin: self.origin.into(),
            packet: self.packet,
            field: field.into(),
            message: message.into(),
        }
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s: String = s.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
        .collect()
}

fn parse_u64(t: &str) -> Option<u64> {
    let t = t.trim().replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

fn parse_mac(c: &Ctx<'_>, f: &str, s: &Option<String>, def: [u8; 6]) -> Result<[u8; 6], CraftError> {
    match s {
        None => Ok(def),
        Some(t) => unhex(t)
            .and_then(|v| <[u8; 6]>::try_from(v).ok())
            .ok_or_else(|| c.err(f, format!("{t:?} is not a MAC address like 02:00:00:00:00:01"))),
    }
}

fn parse_v6(c: &Ctx<'_>, f: &str, s: &Option<String>, def: &str) -> Result<[u8; 16], CraftError> {
    let t = s.as_deref().unwrap_or(def);
    t.parse::<Ipv6Addr>()
        .map(|a| a.octets())
        .map_err(|_| c.err(f, format!("{t:?} is not an IPv6 address or GID")))
}

fn parse_v4(c: &Ctx<'_>, f: &str, s: &Option<String>, def: &str) -> Result<[u8; 4], CraftError> {
    let t = s.as_deref().unwrap_or(def);
    t.parse::<Ipv4Addr>()
        .map(|a| a.octets())
        .map_err(|_| c.err(f, format!("{t:?} is not an IPv4 address")))
}

fn parse_syndrome(c: &Ctx<'_>, s: &NumOrName) -> Result<Syndrome, CraftError> {
    let bad = || {
        c.err(
            "aeth.syndrome",
            "expected a byte or \"ack\", \"ack:<credits>\", \"rnr:<timer 0-31>\", \"nak:<code or name>\"",
        )
    };
    match s {
        NumOrName::Num(n) => u8::try_from(*n).map(Syndrome::from_byte).map_err(|_| bad()),
        NumOrName::Name(t) => {
            let t = t.trim().to_ascii_lowercase();
            let (kind, arg) = t.split_once(':').map(|(a, b)| (a, Some(b))).unwrap_or((&t, None));
            let num = |a: Option<&str>, max: u8| -> Option<u8> {
                a.and_then(|x| x.trim().parse::<u8>().ok()).filter(|v| *v <= max)
            };
            match kind {
                "ack" => Ok(Syndrome::Ack {
                    credits: if arg.is_some() {
                        num(arg, 31).ok_or_else(bad)?
                    } else {
                        31
                    },
                }),
                "rnr" => Ok(Syndrome::RnrNak(RnrTimer(num(arg, 31).ok_or_else(bad)?))),
                "nak" => {
                    let a = arg.ok_or_else(bad)?.trim();
                    let code = match a {
                        "psn-sequence-error" | "psn-seq-err" => NakCode::PsnSequenceError,
                        "invalid-request" => NakCode::InvalidRequest,
                        "remote-access-error" => NakCode::RemoteAccessError,
                        "remote-operational-error" => NakCode::RemoteOperationalError,
                        "invalid-rd-request" => NakCode::InvalidRdRequest,
                        n => NakCode::from_bits(n.parse::<u8>().ok().filter(|v| *v < 32).ok_or_else(bad)?),
                    };
                    Ok(Syndrome::Nak(code))
                }
                _ => Err(bad()),
            }
        }
    }
}

fn build_smp(c: &Ctx<'_>, s: &SmpSpec) -> Result<[u8; 256], CraftError> {
    let method = match &s.method {
        None => Method::Get,
        Some(NumOrName::Num(n)) => Method::from(u8::try_from(*n).map_err(|_| c.err("smp.method", "expected 0..=255"))?),
        Some(NumOrName::Name(t)) => {
            let all = [
                Method::Get,
                Method::Set,
                Method::Send,
                Method::Trap,
                Method::Report,
                Method::TrapRepress,
                Method::GetResp,
                Method::ReportResp,
            ];
            *all.iter()
                .find(|m| m.name().eq_ignore_ascii_case(t))
                .ok_or_else(|| c.err("smp.method", format!("unknown method {t:?}")))?
        }
    };
    let attr = match &s.attr {
        NumOrName::Num(n) => AttrId::from(u16::try_from(*n).map_err(|_| c.err("smp.attr", "expected 0..=65535"))?),
        NumOrName::Name(t) => {
            AttrId::from_name(t).ok_or_else(|| c.err("smp.attr", format!("unknown attribute {t:?}")))?
        }
    };
    let route = match &s.dr_path {
        None => Route::Lid,
        Some(p) => {
            let mut dr = DrRoute::new(p).map_err(|e| c.err("smp.dr_path", e.to_string()))?;
            dr.hop_ptr = s.hop_ptr.unwrap_or(0);
            dr.returning = s.returning;
            dr.dr_slid = Lid(s.dr_slid.unwrap_or(0xffff));
            dr.dr_dlid = Lid(s.dr_dlid.unwrap_or(0xffff));
            if let Some(r) = &s.return_path {
                if r.len() > 63 {
                    return Err(c.err("smp.return_path", "at most 63 entries"));
                }
                dr.return_path[1..=r.len()].copy_from_slice(r);
            }
            Route::Directed(dr)
        }
    };
    let mut data = [0u8; 64];
    macro_rules! by_fields {
        ($m:ident) => {{
            let mut r = $m::Repr::default();
            for (k, v) in s.fields.iter().flatten() {
                let v = match v {
                    NumOrName::Num(n) => *n,
                    NumOrName::Name(t) => parse_u64(t)
                        .ok_or_else(|| c.err(&format!("smp.fields.{k}"), format!("{t:?} is not a number")))?,
                };
                if !r.set_field(k, v) {
                    return Err(c.err(
                        &format!("smp.fields.{k}"),
                        format!(
                            "not a field of {}; expected one of {:?}",
                            attr.name(),
                            $m::Repr::FIELD_NAMES
                        ),
                    ));
                }
            }
            r.to_bytes(&mut data).map_err(|e| c.err("smp", e.to_string()))?;
        }};
    }
    if let Some(h) = &s.data {
        let b = unhex(h)
            .filter(|b| b.len() <= 64)
            .ok_or_else(|| c.err("smp.data", "expected at most 64 bytes of hex"))?;
        data[..b.len()].copy_from_slice(&b);
    } else {
        match attr {
            AttrId::NodeInfo => by_fields!(node_info),
            AttrId::PortInfo => by_fields!(port_info),
            AttrId::SwitchInfo => by_fields!(switch_info),
            AttrId::SmInfo => by_fields!(sm_info),
            AttrId::NodeDescription => node_description::Repr::new(s.text.as_deref().unwrap_or(""))
                .and_then(|r| r.to_bytes(&mut data))
                .map_err(|e| c.err("smp.text", e.to_string()))?,
            AttrId::LinearFwdTable => {
                let p = s.ports.clone().unwrap_or_default();
                if p.len() > 64 {
                    return Err(c.err("smp.ports", "at most 64 ports per block"));
                }
                let mut ports = [lft::DROP; 64];
                ports[..p.len()].copy_from_slice(&p);
                lft::Repr { ports }
                    .to_bytes(&mut data)
                    .map_err(|e| c.err("smp.ports", e.to_string()))?;
            }
            AttrId::PKeyTable => {
                let p = s.pkeys.clone().unwrap_or_default();
                if p.len() > 32 {
                    return Err(c.err("smp.pkeys", "at most 32 P_Keys per block"));
                }
                let mut pkeys = [0u16; 32];
                pkeys[..p.len()].copy_from_slice(&p);
                pkey_table::Repr { pkeys }
                    .to_bytes(&mut data)
                    .map_err(|e| c.err("smp.pkeys", e.to_string()))?;
            }
            AttrId::SlToVlTable => {
                let v = s.sl2vl.clone().unwrap_or_default();
                if v.len() > 16 || v.iter().any(|x| *x > 15) {
                    return Err(c.err("smp.sl2vl", "at most 16 VLs, each 0..=15"));
                }
                let mut vl = [0u8; 16];
                vl[..v.len()].copy_from_slice(&v);
                sl2vl::Repr { vl }
                    .to_bytes(&mut data)
                    .map_err(|e| c.err("smp.sl2vl", e.to_string()))?;
            }
            AttrId::VlArbTable => {
                let v = s.vlarb.clone().unwrap_or_default();
                if v.len() > 32 || v.iter().any(|e| e[0] > 15) {
                    return Err(c.err("smp.vlarb", "at most 32 [vl, weight] pairs, vl 0..=15"));
                }
                let mut t = vl_arb::Repr::default();
                for (i, e) in v.iter().enumerate() {
                    t.entries[i] = vl_arb::Entry { vl: e[0], weight: e[1] };
                }
                t.to_bytes(&mut data).map_err(|e| c.err("smp.vlarb", e.to_string()))?;
            }
            AttrId::Notice => {
                let t = s
                    .trap
                    .as_ref()
                    .ok_or_else(|| c.err("smp.trap", "a Notice needs [packet.smp.trap]"))?;
                let d = match t.number {
                    128 => notice::TrapDetails::LinkStateChange { lid: Lid(t.lid) },
                    129..=131 => notice::TrapDetails::PortError {
                        trap: t.number,
                        lid: Lid(t.lid),
                        port: t.port,
                    },
                    144 => notice::TrapDetails::CapabilityMaskChange {
                        lid: Lid(t.lid),
                        local_changes: t.local_changes,
                        cap_mask: t.cap_mask,
                        change_flags: t.change_flags,
                        cap_mask2: t.cap_mask2,
                    },
                    n => return Err(c.err("smp.trap.number", format!("{n} is not one of 128, 129, 130, 131, 144"))),
                };
                notice::Notice::trap(t.producer.unwrap_or(2), Lid(t.issuer_lid.unwrap_or(t.lid)), d)
                    .emit(&mut data)
                    .map_err(|e| c.err("smp.trap", e.to_string()))?;
            }
            _ => {}
        }
    }
    let smp = Smp {
        method,
        status: s.status,
        tid: s.tid,
        attr_id: attr,
        attr_mod: s.attr_mod,
        m_key: s.m_key,
        route,
        data,
    };
    let mut out = [0u8; 256];
    smp.to_bytes(&mut out).map_err(|e| c.err("smp", e.to_string()))?;
    Ok(out)
}

fn opcode_of(c: &Ctx<'_>, o: &Option<NumOrName>, has_smp: bool) -> Result<Opcode, CraftError> {
    match o {
        None if has_smp => Ok(Opcode::UdSendOnly),
        None => Err(c.err("opcode", "missing; give a name such as \"RC SEND_ONLY\" or a number")),
        Some(NumOrName::Num(n)) => u8::try_from(*n)
            .map(Opcode::from)
            .map_err(|_| c.err("opcode", "expected 0..=255")),
        Some(NumOrName::Name(t)) => {
            Opcode::from_name(t).ok_or_else(|| c.err("opcode", format!("unknown opcode {t:?}")))
        }
    }
}

/// Build one packet into `buf` (cleared first). Returns `true` for an IB (non-Ethernet) frame.
fn build(c: &Ctx<'_>, p: &PacketSpec, buf: &mut Vec<u8>) -> Result<bool, CraftError> {
    buf.clear();
    let eth = |c: &Ctx<'_>| -> Result<ethernet::Repr, CraftError> {
        Ok(ethernet::Repr {
            dst: parse_mac(c, "eth_dst", &p.eth_dst, [0x02, 0, 0, 0, 0, 0x02])?,
            src: parse_mac(c, "eth_src", &p.eth_src, [0x02, 0, 0, 0, 0, 0x01])?,
            vlan: p.vlan.as_ref().map(|v| ethernet::VlanTag {
                pcp: v.pcp & 7,
                dei: v.dei,
                vid: v.vid & 0xfff,
            }),
            ethertype: 0,
        })
    };
    match p.encap.as_str() {
        "pfc" | "pause" => {
            let mut e = eth(c)?;
            if p.eth_dst.is_none() {
                e.dst = pfc::MAC_CONTROL_DST;
            }
            let ctl = if p.encap == "pfc" {
                let f = p
                    .pfc
                    .as_ref()
                    .ok_or_else(|| c.err("pfc", "a pfc packet needs [packet.pfc] with enable and quanta"))?;
                let quanta: [u16; 8] = f
                    .quanta
                    .clone()
                    .try_into()
                    .map_err(|_| c.err("pfc.quanta", "expected exactly 8 values"))?;
                pfc::Repr::Pfc {
                    enable: f.enable,
                    quanta,
                }
            } else {
                pfc::Repr::Pause {
                    quanta: p
                        .pause_quanta
                        .ok_or_else(|| c.err("pause_quanta", "a pause packet needs pause_quanta"))?,
                }
            };
            buf.resize(64, 0);
            let n = emit_mac_control(&e, &ctl, buf).map_err(|source| CraftError::Build {
                origin: c.origin.into(),
                packet: c.packet,
                source,
            })?;
            buf.truncate(n);
            return Ok(false);
        }
        _ => {}
    }
    let smp_bytes = p.smp.as_ref().map(|s| build_smp(c, s)).transpose()?;
    let opcode = opcode_of(c, &p.opcode, smp_bytes.is_some())?;
    let pad_payload: Vec<u8>;
    let payload: &[u8] = if let Some(s) = &smp_bytes {
        s
    } else if let Some(h) = &p.payload {
        pad_payload = unhex(h).ok_or_else(|| c.err("payload", "expected an even number of hex digits"))?;
        &pad_payload
    } else if let Some(t) = &p.payload_text {
        t.as_bytes()
    } else if let Some(n) = p.payload_len {
        pad_payload = (0..n).map(|i| (i * 7 + 1) as u8).collect();
        &pad_payload
    } else {
        &[]
    };
    let mad_qp = smp_bytes.as_ref().map(|_| p.dqpn.unwrap_or(0));
    let grh = |c: &Ctx<'_>, g: &GrhSpec| -> Result<grh::Repr, CraftError> {
        Ok(grh::Repr {
            ipver: 6,
            tclass: g.tclass,
            flow_label: g.flow_label & 0xfffff,
            payload_len: 0,
            next_header: grh::NXTHDR_IBA,
            hop_limit: g.hop_limit.unwrap_or(64),
            sgid: parse_v6(c, "grh.sgid", &g.sgid, "fe80::2:c903:0:1")?,
            dgid: parse_v6(c, "grh.dgid", &g.dgid, "fe80::2:c903:0:2")?,
        })
    };
    let is_ib;
    let encap = match p.encap.as_str() {
        "ib_local" | "ib_global" => {
            is_ib = true;
            let l = p.lrh.clone().unwrap_or_default();
            let lrh = lrh::Repr {
                vl: l.vl.unwrap_or(if mad_qp == Some(0) { 15 } else { 0 }),
                lver: l.lver,
                sl: l.sl,
                lnh: lrh::Lnh::IbaLocal,
                dlid: Lid(l
                    .dlid
                    .unwrap_or(if matches!(p.smp.as_ref().map(|s| s.dr_path.is_some()), Some(true)) {
                        0xffff
                    } else {
                        2
                    })),
                slid: Lid(l
                    .slid
                    .unwrap_or(if matches!(p.smp.as_ref().map(|s| s.dr_path.is_some()), Some(true)) {
                        0xffff
                    } else {
                        1
                    })),
                pkt_len: 0,
            };
            if lrh.vl > 15 || lrh.sl > 15 || lrh.lver > 15 {
                return Err(c.err("lrh", "vl, sl and lver are 4-bit fields"));
            }
            let g = if p.encap == "ib_global" {
                Some(grh(c, &p.grh.clone().unwrap_or_default())?)
            } else {
                None
            };
            Encap::Ib { lrh, grh: g }
        }
        "roce_v1" => {
            is_ib = false;
            Encap::RoceV1 {
                eth: eth(c)?,
                grh: grh(c, &p.grh.clone().unwrap_or_default())?,
            }
        }
        "roce_v2_ipv4" | "roce_v2_ipv6" => {
            is_ib = false;
            let dscp = p.dscp.unwrap_or(0);
            let ecn = p.ecn.unwrap_or(0);
            if dscp > 63 || ecn > 3 {
                return Err(c.err("dscp/ecn", "dscp is 0..=63 and ecn 0..=3"));
            }
            let v4 = p.encap == "roce_v2_ipv4";
            let ip = if v4 {
                IpRepr::V4(ipv4::Repr {
                    dscp,
                    ecn,
                    ident: p.ip_id.unwrap_or(0),
                    dont_frag: p.df.unwrap_or(true),
                    ttl: p.ttl.unwrap_or(64),
                    protocol: 17,
                    src: parse_v4(c, "ip_src", &p.ip_src, "192.0.2.1")?,
                    dst: parse_v4(c, "ip_dst", &p.ip_dst, "192.0.2.2")?,
                    payload_len: 0,
                })
            } else {
                IpRepr::V6(ipv6::Repr {
                    traffic_class: (dscp << 2) | ecn,
                    flow_label: p.flow_label.unwrap_or(0) & 0xfffff,
                    next_header: 17,
                    hop_limit: p.ttl.unwrap_or(64),
                    src: parse_v6(c, "ip_src", &p.ip_src, "2001:db8::1")?,
                    dst: parse_v6(c, "ip_dst", &p.ip_dst, "2001:db8::2")?,
                    payload_len: 0,
                })
            };
            let csum = p.udp_checksum.unwrap_or(!v4);
            Encap::RoceV2 {
                eth: eth(c)?,
                ip,
                udp: udp::Repr {
                    src_port: p.udp_sport.unwrap_or(49152),
                    dst_port: udp::ROCE_V2_PORT,
                    payload_len: 0,
                    checksum: csum as u16,
                },
            }
        }
        e => {
            return Err(c.err(
                "encap",
                format!("{e:?} is not one of roce_v2_ipv4, roce_v2_ipv6, roce_v1, ib_local, ib_global, pfc, pause"),
            ));
        }
    };
    let psn = p.psn.unwrap_or(0);
    if psn > Psn::MASK {
        return Err(c.err("psn", "a PSN is 24 bits"));
    }
    let dqpn = p.dqpn.unwrap_or(mad_qp.unwrap_or(0));
    if dqpn > 0xff_ffff {
        return Err(c.err("dqpn", "a QPN is 24 bits"));
    }
    let bth = bth::Repr {
        opcode,
        se: p.se.unwrap_or(false),
        migreq: p.migreq.unwrap_or(false),
        pad_count: 0,
        tver: p.tver.unwrap_or(0),
        pkey: p.pkey.unwrap_or(0xffff),
        fecn: p.fecn.unwrap_or(false),
        becn: p.becn.unwrap_or(opcode == Opcode::Cnp),
        dqpn,
        ack_req: p.ack_req.unwrap_or(false),
        psn: Psn::new(psn),
    };
    let layout = opcode.layout().unwrap_or_default();
    let want = |present: bool, needed: bool, name: &str| -> Result<(), CraftError> {
        match (present, needed) {
            (false, true) => Err(c.err(name, format!("opcode {opcode} needs this header"))),
            (true, false) => Err(c.err(name, format!("opcode {opcode} does not carry this header"))),
            _ => Ok(()),
        }
    };
    let deth_default = mad_qp.map(|q| deth::Repr {
        qkey: if q == 0 { 0 } else { crate::mad::QP1_QKEY },
        src_qp: q,
    });
    want(p.reth.is_some(), layout.reth, "reth")?;
    want(p.aeth.is_some(), layout.aeth, "aeth")?;
    want(p.deth.is_some() || deth_default.is_some(), layout.deth, "deth")?;
    want(p.immdt.is_some(), layout.immdt, "immdt")?;
    want(p.ieth.is_some(), layout.ieth, "ieth")?;
    want(p.atomic.is_some(), layout.atomic_eth, "atomic")?;
    want(p.atomic_ack.is_some(), layout.atomic_ack_eth, "atomic_ack")?;
    if !payload.is_empty() && opcode.layout().is_some() && !layout.payload {
        return Err(c.err("payload", format!("opcode {opcode} carries no payload")));
    }
    let ext = ExtHeaders {
        deth: p
            .deth
            .as_ref()
            .map(|d| deth::Repr {
                qkey: d.qkey,
                src_qp: d.src_qp & 0xff_ffff,
            })
            .or(deth_default),
        reth: p.reth.as_ref().map(|r| reth::Repr {
            va: r.va,
            rkey: r.rkey,
            dma_len: r.dma_len,
        }),
        atomic_eth: p.atomic.as_ref().map(|a| atomic_eth::Repr {
            va: a.va,
            rkey: a.rkey,
            swap_add: a.swap_add,
            compare: a.compare,
        }),
        aeth: p
            .aeth
            .as_ref()
            .map(|a| {
                parse_syndrome(c, &a.syndrome).map(|s| aeth::Repr {
                    syndrome: s,
                    msn: a.msn & 0xff_ffff,
                })
            })
            .transpose()?,
        atomic_ack_eth: p.atomic_ack.map(|o| atomic_ack_eth::Repr { orig: o }),
        immdt: p.immdt.map(|i| immdt::Repr { imm: i }),
        ieth: p.ieth.map(|r| ieth::Repr { rkey: r }),
        cnp_reserved: layout.cnp_reserved.then_some([0u8; 16]),
    };
    let pkt = IbPacket {
        encap,
        bth,
        ext,
        payload,
    };
    buf.resize(pkt.buffer_len(), 0);
    let n = pkt.emit(buf).map_err(|source| CraftError::Build {
        origin: c.origin.into(),
        packet: c.packet,
        source,
    })?;
    buf.truncate(n);
    Ok(is_ib)
}

/// Parse a spec and build its frames. `origin` names the spec in errors.
pub fn craft(text: &str, origin: &str) -> Result<Crafted, CraftError> {
    let spec: Spec = toml::from_str(text).map_err(|e| CraftError::Toml {
        origin: origin.into(),
        message: e.to_string(),
    })?;
    if spec.packets.is_empty() {
        return Err(CraftError::Toml {
            origin: origin.into(),
            message: "no [[packet]] tables".into(),
        });
    }
    let mut frames = Vec::with_capacity(spec.packets.len());
    let start = spec.start_ns.unwrap_or(1_700_000_000_000_000_000);
    let step = spec.interval_ns.unwrap_or(1000);
    let mut kinds = (0, 0);
    for (i, p) in spec.packets.iter().enumerate() {
        let c = Ctx { origin, packet: i + 1 };
        let mut buf = Vec::new();
        if build(&c, p, &mut buf)? {
            kinds.1 += 1;
        } else {
            kinds.0 += 1;
        }
        frames.push((p.ts_ns.unwrap_or(start + step * i as u64), buf));
    }
    let link = match spec.link.as_deref() {
        Some("ethernet") => CaptureLink::Ethernet,
        Some("ib-erf") => CaptureLink::IbErf,
        Some("ib-user0") => CaptureLink::IbUser0,
        Some(o) => {
            return Err(CraftError::Toml {
                origin: origin.into(),
                message: format!("link {o:?} is not one of \"ethernet\", \"ib-erf\", \"ib-user0\""),
            });
        }
        None if kinds.1 > 0 => CaptureLink::IbErf,
        None => CaptureLink::Ethernet,
    };
    let want_ib = link != CaptureLink::Ethernet;
    if (want_ib && kinds.0 > 0) || (!want_ib && kinds.1 > 0) {
        return Err(CraftError::Toml {
            origin: origin.into(),
            message: "a capture holds either Ethernet frames (RoCE, PFC) or native IB frames, not both".into(),
        });
    }
    Ok(Crafted { link, frames })
}
