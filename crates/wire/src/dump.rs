//! A field-by-field description of decoded packets, for `rdmalab wire decode`
//! (text and JSON) and for comparing with tshark. Building the description
//! allocates; decoding does not.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::ib::aeth::Syndrome;
use crate::mad::attr::{
    lft, node_description, node_info, notice, pkey_table, port_info, sl2vl, sm_info, switch_info, vl_arb,
};
use crate::mad::header::{self, AttrId, MgmtClass};
use crate::mad::smp::{Route, Smp};
use crate::net::pfc;
use crate::packet::{Checks, Decoded, Encap, IbPacket, IpRepr, UdpChecksum};

/// A described value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// An unsigned integer.
    U(u64),
    /// A hex number with the given digit count, rendered as "0x…" (a string in JSON).
    Hex(u64, u8),
    /// A boolean.
    B(bool),
    /// Text.
    S(String),
    /// A list.
    L(Vec<Val>),
    /// An ordered object.
    O(Obj),
}

/// An ordered list of named values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Obj(pub Vec<(Cow<'static, str>, Val)>);

impl Obj {
    /// Append a field.
    pub fn put(&mut self, k: impl Into<Cow<'static, str>>, v: Val) -> &mut Self {
        self.0.push((k.into(), v));
        self
    }
    /// Look a field up.
    pub fn get(&self, k: &str) -> Option<&Val> {
        self.0.iter().find(|(n, _)| n.as_ref() == k).map(|(_, v)| v)
    }
    /// Look a dotted path up ("bth.psn").
    pub fn path(&self, p: &str) -> Option<&Val> {
        let mut cur = self;
        let mut it = p.split('.').peekable();
        while let Some(k) = it.next() {
            let v = cur.get(k)?;
            if it.peek().is_none() {
                return Some(v);
            }
            match v {
                Val::O(o) => cur = o,
                _ => return None,
            }
        }
        None
    }
}

fn hexs(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// An IPv6 address or GID in RFC 5952 form.
pub fn ipv6_text(a: &[u8; 16]) -> String {
    std::net::Ipv6Addr::from(*a).to_string()
}

fn ipv4_text(a: &[u8; 4]) -> String {
    std::net::Ipv4Addr::from(*a).to_string()
}

/// Describe a decoded frame (without index/timestamp; see [`describe_record`]).
pub fn describe(d: &Decoded<'_>) -> Obj {
    let mut o = Obj::default();
    match d {
        Decoded::Ib { packet, pad, checks } => describe_ib(&mut o, packet, pad, checks),
        Decoded::MacControl { eth, ctl } => {
            o.put("kind", Val::S("mac_control".into()));
            o.put("eth", Val::O(eth_obj(eth)));
            let mut c = Obj::default();
            match ctl {
                pfc::Repr::Pause { quanta } => {
                    c.put("opcode", Val::Hex(pfc::OPCODE_PAUSE as u64, 4));
                    c.put("quanta", Val::U(*quanta as u64));
                }
                pfc::Repr::Pfc { enable, quanta } => {
                    c.put("opcode", Val::Hex(pfc::OPCODE_PFC as u64, 4));
                    c.put("enable", Val::Hex(*enable as u64, 2));
                    c.put("quanta", Val::L(quanta.iter().map(|q| Val::U(*q as u64)).collect()));
                }
            }
            o.put(
                if matches!(ctl, pfc::Repr::Pfc { .. }) {
                    "pfc"
                } else {
                    "pause"
                },
                Val::O(c),
            );
            o.put("ok", Val::B(true));
        }
        Decoded::OtherEthernet { eth } => {
            o.put("kind", Val::S("other_ethernet".into()));
            o.put("eth", Val::O(eth_obj(eth)));
            o.put("ok", Val::B(true));
        }
        Decoded::OtherIb { lrh } => {
            o.put("kind", Val::S("other_ib".into()));
            o.put("lrh", Val::O(lrh_obj(lrh)));
            o.put("ok", Val::B(true));
        }
    }
    o
}

/// Describe one capture record: index, timestamp, length, then the decode or the error.
pub fn describe_record(index: usize, ts_ns: u64, frame: &[u8], link: crate::LinkType) -> Obj {
    let mut o = Obj::default();
    o.put("index", Val::U(index as u64));
    o.put("ts_ns", Val::U(ts_ns));
    o.put("len", Val::U(frame.len() as u64));
    o.put(
        "link",
        Val::S(
            if link == crate::LinkType::Ethernet {
                "ethernet"
            } else {
                "infiniband"
            }
            .into(),
        ),
    );
    match crate::packet::decode(frame, link) {
        Ok(d) => o.0.extend(describe(&d).0),
        Err(e) => {
            o.put("error", Val::S(e.to_string()));
            o.put("ok", Val::B(false));
        }
    }
    o
}

fn eth_obj(e: &crate::net::ethernet::Repr) -> Obj {
    let mut o = Obj::default();
    o.put("dst", Val::S(mac(&e.dst)));
    o.put("src", Val::S(mac(&e.src)));
    if let Some(v) = e.vlan {
        let mut t = Obj::default();
        t.put("pcp", Val::U(v.pcp as u64))
            .put("dei", Val::B(v.dei))
            .put("vid", Val::U(v.vid as u64));
        o.put("vlan", Val::O(t));
    }
    o.put("ethertype", Val::Hex(e.ethertype as u64, 4));
    o
}

fn lrh_obj(l: &crate::ib::lrh::Repr) -> Obj {
    let mut o = Obj::default();
    o.put("vl", Val::U(l.vl as u64))
        .put("lver", Val::U(l.lver as u64))
        .put("sl", Val::U(l.sl as u64))
        .put("lnh", Val::U(l.lnh.bits() as u64))
        .put("dlid", Val::U(l.dlid.0 as u64))
        .put("pktlen", Val::U(l.pkt_len as u64))
        .put("slid", Val::U(l.slid.0 as u64));
    o
}

fn grh_obj(g: &crate::ib::grh::Repr) -> Obj {
    let mut o = Obj::default();
    o.put("ipver", Val::U(g.ipver as u64))
        .put("tclass", Val::U(g.tclass as u64))
        .put("flowlabel", Val::U(g.flow_label as u64))
        .put("paylen", Val::U(g.payload_len as u64))
        .put("nxthdr", Val::U(g.next_header as u64))
        .put("hoplmt", Val::U(g.hop_limit as u64))
        .put("sgid", Val::S(ipv6_text(&g.sgid)))
        .put("dgid", Val::S(ipv6_text(&g.dgid)));
    o
}

fn describe_ib(o: &mut Obj, p: &IbPacket<'_>, pad: &[u8], c: &Checks) {
    o.put("kind", Val::S(p.encap.name().into()));
    match &p.encap {
        Encap::Ib { lrh, grh } => {
            o.put("lrh", Val::O(lrh_obj(lrh)));
            if let Some(g) = grh {
                o.put("grh", Val::O(grh_obj(g)));
            }
        }
        Encap::RoceV1 { eth, grh } => {
            o.put("eth", Val::O(eth_obj(eth)));
            o.put("grh", Val::O(grh_obj(grh)));
        }
        Encap::RoceV2 { eth, ip, udp } => {
            o.put("eth", Val::O(eth_obj(eth)));
            match ip {
                IpRepr::V4(r) => {
                    let mut i = Obj::default();
                    i.put("dscp", Val::U(r.dscp as u64))
                        .put("ecn", Val::U(r.ecn as u64))
                        .put("len", Val::U(r.payload_len as u64 + 20))
                        .put("id", Val::Hex(r.ident as u64, 4))
                        .put("df", Val::B(r.dont_frag))
                        .put("ttl", Val::U(r.ttl as u64))
                        .put("proto", Val::U(r.protocol as u64))
                        .put("src", Val::S(ipv4_text(&r.src)))
                        .put("dst", Val::S(ipv4_text(&r.dst)))
                        .put("checksum_ok", Val::B(c.ipv4_checksum.unwrap_or(false)));
                    o.put("ipv4", Val::O(i));
                }
                IpRepr::V6(r) => {
                    let mut i = Obj::default();
                    i.put("tclass", Val::U(r.traffic_class as u64))
                        .put("dscp", Val::U(r.dscp() as u64))
                        .put("ecn", Val::U(r.ecn() as u64))
                        .put("flow", Val::U(r.flow_label as u64))
                        .put("plen", Val::U(r.payload_len as u64))
                        .put("nxt", Val::U(r.next_header as u64))
                        .put("hlim", Val::U(r.hop_limit as u64))
                        .put("src", Val::S(ipv6_text(&r.src)))
                        .put("dst", Val::S(ipv6_text(&r.dst)));
                    o.put("ipv6", Val::O(i));
                }
            }
            let mut u = Obj::default();
            u.put("srcport", Val::U(udp.src_port as u64))
                .put("dstport", Val::U(udp.dst_port as u64))
                .put("length", Val::U(udp.payload_len as u64 + 8))
                .put("checksum", Val::Hex(udp.checksum as u64, 4))
                .put(
                    "checksum_status",
                    Val::S(
                        match c.udp_checksum {
                            UdpChecksum::Absent => "absent",
                            UdpChecksum::Valid => "valid",
                            UdpChecksum::Invalid => "invalid",
                            UdpChecksum::NotApplicable => "n/a",
                        }
                        .into(),
                    ),
                );
            o.put("udp", Val::O(u));
        }
    }
    let b = &p.bth;
    let mut t = Obj::default();
    t.put("opcode", Val::U(u8::from(b.opcode) as u64))
        .put("opcode_name", Val::S(b.opcode.to_string()))
        .put("se", Val::B(b.se))
        .put("m", Val::B(b.migreq))
        .put("padcnt", Val::U(b.pad_count as u64))
        .put("tver", Val::U(b.tver as u64))
        .put("p_key", Val::U(b.pkey as u64))
        .put("fecn", Val::B(b.fecn))
        .put("becn", Val::B(b.becn))
        .put("destqp", Val::U(b.dqpn as u64))
        .put("a", Val::B(b.ack_req))
        .put("psn", Val::U(b.psn.value() as u64));
    o.put("bth", Val::O(t));
    let x = &p.ext;
    if let Some(r) = x.deth {
        let mut e = Obj::default();
        e.put("q_key", Val::Hex(r.qkey as u64, 8))
            .put("srcqp", Val::U(r.src_qp as u64));
        o.put("deth", Val::O(e));
    }
    if let Some(r) = x.reth {
        let mut e = Obj::default();
        e.put("va", Val::Hex(r.va, 16))
            .put("r_key", Val::Hex(r.rkey as u64, 8))
            .put("dmalen", Val::U(r.dma_len as u64));
        o.put("reth", Val::O(e));
    }
    if let Some(r) = x.atomic_eth {
        let mut e = Obj::default();
        e.put("va", Val::Hex(r.va, 16))
            .put("r_key", Val::Hex(r.rkey as u64, 8))
            .put("swapdt", Val::Hex(r.swap_add, 16))
            .put("cmpdt", Val::Hex(r.compare, 16));
        o.put("atomiceth", Val::O(e));
    }
    if let Some(r) = x.aeth {
        let mut e = Obj::default();
        e.put("syndrome", Val::Hex(r.syndrome.to_byte() as u64, 2));
        match r.syndrome {
            Syndrome::Ack { credits } => {
                e.put("type", Val::S("ACK".into()))
                    .put("credits", Val::U(credits as u64));
            }
            Syndrome::RnrNak(t) => {
                e.put("type", Val::S("RNR NAK".into()))
                    .put("rnr_timer", Val::U(t.0 as u64))
                    .put("rnr_wait_ns", Val::U(t.nanos()));
            }
            Syndrome::Nak(n) => {
                e.put("type", Val::S("NAK".into()))
                    .put("nak_code", Val::U(n.bits() as u64))
                    .put("nak", Val::S(n.name().into()));
            }
            Syndrome::Reserved(_) => {
                e.put("type", Val::S("reserved".into()));
            }
        }
        e.put("msn", Val::U(r.msn as u64));
        o.put("aeth", Val::O(e));
    }
    if let Some(r) = x.atomic_ack_eth {
        let mut e = Obj::default();
        e.put("origremdt", Val::Hex(r.orig, 16));
        o.put("atomicacketh", Val::O(e));
    }
    if let Some(r) = x.immdt {
        o.put("immdt", Val::Hex(r.imm as u64, 8));
    }
    if let Some(r) = x.ieth {
        o.put("ieth", Val::Hex(r.rkey as u64, 8));
    }
    if let Some(r) = x.cnp_reserved {
        o.put("cnp_reserved", Val::S(hexs(&r)));
    }
    o.put("payload_len", Val::U(p.payload.len() as u64));
    o.put("payload", Val::S(hexs(p.payload)));
    o.put("pad", Val::S(hexs(pad)));
    if matches!(p.bth.opcode, crate::ib::Opcode::UdSendOnly)
        && p.bth.dqpn <= 1
        && p.payload.len() == crate::mad::MAD_LEN
    {
        o.put("mad", Val::O(describe_mad(p.payload)));
    }
    let mut i = Obj::default();
    i.put("found", Val::Hex(c.icrc.found as u64, 8))
        .put("computed", Val::Hex(c.icrc.computed as u64, 8))
        .put("ok", Val::B(c.icrc.ok()));
    o.put("icrc", Val::O(i));
    if let Some(v) = c.vcrc {
        let mut i = Obj::default();
        i.put("found", Val::Hex(v.found as u64, 4))
            .put("computed", Val::Hex(v.computed as u64, 4))
            .put("ok", Val::B(v.ok()));
        o.put("vcrc", Val::O(i));
    }
    o.put("ok", Val::B(c.all_ok()));
}

/// Describe a 256-byte MAD: the common header, SMP routing and the attribute.
pub fn describe_mad(m: &[u8]) -> Obj {
    let mut o = Obj::default();
    let h = match header::Packet::new_checked(m).and_then(|p| header::Repr::parse(&p)) {
        Ok(h) => h,
        Err(e) => {
            o.put("error", Val::S(e.to_string()));
            return o;
        }
    };
    o.put("base_version", Val::U(h.base_version as u64))
        .put("mgmt_class", Val::Hex(u8::from(h.mgmt_class) as u64, 2))
        .put("class_version", Val::U(h.class_version as u64))
        .put("method", Val::Hex(u8::from(h.method) as u64, 2))
        .put("method_name", Val::S(h.method.name().into()))
        .put("status", Val::Hex(h.status as u64, 4))
        .put("tid", Val::Hex(h.tid, 16))
        .put("attr_id", Val::Hex(u16::from(h.attr_id) as u64, 4))
        .put("attr_name", Val::S(h.attr_id.name().into()))
        .put("attr_mod", Val::Hex(h.attr_mod as u64, 8));
    if !matches!(h.mgmt_class, MgmtClass::SubnLid | MgmtClass::SubnDirected) {
        o.put("data", Val::S(hexs(&m[24..])));
        return o;
    }
    let smp = match Smp::from_bytes(m) {
        Ok(s) => s,
        Err(e) => {
            o.put("error", Val::S(e.to_string()));
            return o;
        }
    };
    o.put("m_key", Val::Hex(smp.m_key, 16));
    if let Route::Directed(dr) = &smp.route {
        let mut d = Obj::default();
        d.put("direction", Val::U(dr.returning as u64))
            .put("hop_ptr", Val::U(dr.hop_ptr as u64))
            .put("hop_cnt", Val::U(dr.hop_cnt as u64))
            .put("dr_slid", Val::U(dr.dr_slid.0 as u64))
            .put("dr_dlid", Val::U(dr.dr_dlid.0 as u64))
            .put(
                "initial_path",
                Val::L(
                    dr.initial_path[..=dr.hop_cnt as usize]
                        .iter()
                        .map(|p| Val::U(*p as u64))
                        .collect(),
                ),
            )
            .put(
                "return_path",
                Val::L(
                    dr.return_path[..=dr.hop_cnt as usize]
                        .iter()
                        .map(|p| Val::U(*p as u64))
                        .collect(),
                ),
            );
        o.put("dr", Val::O(d));
    }
    o.put("attribute", Val::O(describe_attr(smp.attr_id, &smp.data)));
    o
}

fn visit_obj(v: impl FnOnce(&mut dyn FnMut(&'static str, u64))) -> Obj {
    let mut o = Obj::default();
    v(&mut |k, x| {
        o.put(k, Val::U(x));
    });
    o
}

/// Describe the 64-byte SMP data of attribute `id`.
pub fn describe_attr(id: AttrId, d: &[u8]) -> Obj {
    let r: crate::Result<Obj> = (|| {
        Ok(match id {
            AttrId::NodeInfo => visit_obj(|f| node_info::Repr::from_bytes(d).map(|r| r.visit(f)).unwrap_or(())),
            AttrId::PortInfo => visit_obj(|f| port_info::Repr::from_bytes(d).map(|r| r.visit(f)).unwrap_or(())),
            AttrId::SwitchInfo => visit_obj(|f| switch_info::Repr::from_bytes(d).map(|r| r.visit(f)).unwrap_or(())),
            AttrId::SmInfo => visit_obj(|f| sm_info::Repr::from_bytes(d).map(|r| r.visit(f)).unwrap_or(())),
            AttrId::NodeDescription => {
                let mut o = Obj::default();
                o.put("text", Val::S(node_description::Repr::from_bytes(d)?.text()));
                o
            }
            AttrId::LinearFwdTable => {
                let mut o = Obj::default();
                o.put(
                    "ports",
                    Val::L(
                        lft::Repr::from_bytes(d)?
                            .ports
                            .iter()
                            .map(|p| Val::U(*p as u64))
                            .collect(),
                    ),
                );
                o
            }
            AttrId::PKeyTable => {
                let mut o = Obj::default();
                o.put(
                    "pkeys",
                    Val::L(
                        pkey_table::Repr::from_bytes(d)?
                            .pkeys
                            .iter()
                            .map(|p| Val::Hex(*p as u64, 4))
                            .collect(),
                    ),
                );
                o
            }
            AttrId::SlToVlTable => {
                let mut o = Obj::default();
                o.put(
                    "vl",
                    Val::L(
                        sl2vl::Repr::from_bytes(d)?
                            .vl
                            .iter()
                            .map(|p| Val::U(*p as u64))
                            .collect(),
                    ),
                );
                o
            }
            AttrId::VlArbTable => {
                let mut o = Obj::default();
                let t = vl_arb::Repr::from_bytes(d)?;
                o.put("vl", Val::L(t.entries.iter().map(|e| Val::U(e.vl as u64)).collect()));
                o.put(
                    "weight",
                    Val::L(t.entries.iter().map(|e| Val::U(e.weight as u64)).collect()),
                );
                o
            }
            AttrId::Notice => {
                let n = notice::Notice::parse(d)?;
                let mut o = visit_obj(|f| n.header.visit(f));
                let mut det = Obj::default();
                match n.details {
                    notice::TrapDetails::LinkStateChange { lid } => {
                        det.put("lid", Val::U(lid.0 as u64));
                    }
                    notice::TrapDetails::PortError { lid, port, .. } => {
                        det.put("lid", Val::U(lid.0 as u64)).put("port", Val::U(port as u64));
                    }
                    notice::TrapDetails::CapabilityMaskChange {
                        lid,
                        local_changes,
                        cap_mask,
                        change_flags,
                        cap_mask2,
                    } => {
                        det.put("lid", Val::U(lid.0 as u64))
                            .put("local_changes", Val::B(local_changes))
                            .put("cap_mask", Val::Hex(cap_mask as u64, 8))
                            .put("change_flags", Val::Hex(change_flags as u64, 4))
                            .put("cap_mask2", Val::Hex(cap_mask2 as u64, 4));
                    }
                    notice::TrapDetails::Raw(r) => {
                        det.put("raw", Val::S(hexs(&r)));
                    }
                }
                o.put("details", Val::O(det));
                o
            }
            _ => {
                let mut o = Obj::default();
                o.put("data", Val::S(hexs(d)));
                o
            }
        })
    })();
    r.unwrap_or_else(|e| {
        let mut o = Obj::default();
        o.put("error", Val::S(e.to_string()));
        o
    })
}

/// Render as JSON (keys in field order).
pub fn to_json(o: &Obj) -> String {
    let mut s = String::new();
    obj_json(o, &mut s);
    s
}

fn obj_json(o: &Obj, s: &mut String) {
    s.push('{');
    for (i, (k, v)) in o.0.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        json_str(k, s);
        s.push(':');
        val_json(v, s);
    }
    s.push('}');
}

fn json_str(t: &str, s: &mut String) {
    s.push('"');
    for c in t.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

fn val_json(v: &Val, s: &mut String) {
    match v {
        Val::U(x) => {
            let _ = write!(s, "{x}");
        }
        Val::Hex(x, w) => {
            let _ = write!(s, "\"0x{:0w$x}\"", x, w = *w as usize);
        }
        Val::B(b) => s.push_str(if *b { "true" } else { "false" }),
        Val::S(t) => json_str(t, s),
        Val::L(l) => {
            s.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                val_json(x, s);
            }
            s.push(']');
        }
        Val::O(o) => obj_json(o, s),
    }
}

/// Render as indented text, one field per line.
pub fn to_text(o: &Obj) -> String {
    let mut s = String::new();
    obj_text(o, 0, &mut s);
    s
}

fn scalar_text(v: &Val) -> String {
    match v {
        Val::U(x) => x.to_string(),
        Val::Hex(x, w) => format!("0x{:0w$x}", x, w = *w as usize),
        Val::B(b) => b.to_string(),
        Val::S(t) => t.clone(),
        Val::L(l) => l.iter().map(scalar_text).collect::<Vec<_>>().join(","),
        Val::O(o) => to_json(o),
    }
}

fn obj_text(o: &Obj, depth: usize, s: &mut String) {
    for (k, v) in &o.0 {
        match v {
            Val::O(inner) => {
                let _ = writeln!(s, "{:w$}{k}:", "", w = depth * 2);
                obj_text(inner, depth + 1, s);
            }
            v => {
                let _ = writeln!(s, "{:w$}{k}: {}", "", scalar_text(v), w = depth * 2);
            }
        }
    }
}
