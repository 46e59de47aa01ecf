//! tshark (Debian `tshark` 4.0) decodes every pcap that `craft` writes from the
//! example specs, with no malformed-packet or expert entries, and every field it
//! shows equals ours. Test names contain "tshark" so nextest runs them one at a time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use wire::craft::craft;
use wire::dump::{Obj, Val, describe};
use wire::pcap::CaptureLink;

use crate::support::{example_specs, examples_dir};

const USER0_UAT: &str = r#"uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0","""#;

fn tshark(pcap: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = Command::new("tshark");
    c.arg("-r").arg(pcap).args([
        "--disable-protocol",
        "rpcordma",
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
    ]);
    c.args(extra);
    c.output()
        .expect("tshark runs (Debian package tshark; installed by scripts/test)")
}

fn flatten(v: &Value, out: &mut BTreeMap<String, Value>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            match x {
                Value::Object(_) => flatten(x, out),
                _ => {
                    out.entry(k.clone()).or_insert_with(|| x.clone());
                }
            }
        }
    }
}

/// tshark's number forms: decimal, 0x-hex, or colon-separated hex bytes.
fn num(s: &str) -> Option<u128> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok();
    }
    if s.contains(':') {
        let h: String = s.split(':').collect();
        return u128::from_str_radix(&h, 16).ok();
    }
    s.parse().ok()
}

fn our_num(v: &Val) -> Option<u128> {
    match v {
        Val::U(x) | Val::Hex(x, _) => Some(*x as u128),
        Val::B(b) => Some(*b as u128),
        _ => None,
    }
}

struct Cmp<'a> {
    t: &'a BTreeMap<String, Value>,
    what: String,
    checked: usize,
}

impl Cmp<'_> {
    fn tstr(&self, field: &str) -> Option<String> {
        self.t.get(field).map(|v| match v {
            Value::String(s) => s.clone(),
            o => o.to_string(),
        })
    }
    /// Our value must equal tshark's field (which must exist).
    fn eq(&mut self, field: &str, ours: Option<&Val>) {
        let Some(ours) = ours else {
            panic!("{}: we have no value to compare with {field}", self.what)
        };
        let t = self
            .tstr(field)
            .unwrap_or_else(|| panic!("{}: tshark shows no {field}", self.what));
        match ours {
            Val::S(s) => assert_eq!(t.to_lowercase(), s.to_lowercase(), "{}: {field}", self.what),
            v => assert_eq!(num(&t), our_num(v), "{}: {field}: tshark {t:?}, ours {v:?}", self.what),
        }
        self.checked += 1;
    }
    fn eq_num(&mut self, field: &str, ours: u128) {
        let t = self
            .tstr(field)
            .unwrap_or_else(|| panic!("{}: tshark shows no {field}", self.what));
        assert_eq!(num(&t), Some(ours), "{}: {field}: tshark {t:?}", self.what);
        self.checked += 1;
    }
    fn list(&self, field: &str) -> Vec<u128> {
        match self.t.get(field) {
            Some(Value::Array(a)) => a.iter().map(|x| num(x.as_str().unwrap()).unwrap()).collect(),
            Some(Value::String(s)) => vec![num(s).unwrap()],
            _ => panic!("{}: tshark shows no {field}", self.what),
        }
    }
    fn obj<'o>(o: &'o Obj, k: &str) -> Option<&'o Obj> {
        match o.path(k) {
            Some(Val::O(x)) => Some(x),
            _ => None,
        }
    }
}

fn ulist(v: Option<&Val>) -> Vec<u128> {
    match v {
        Some(Val::L(l)) => l.iter().map(|x| our_num(x).unwrap()).collect(),
        o => panic!("not a list: {o:?}"),
    }
}

fn compare_eth(c: &mut Cmp<'_>, o: &Obj) {
    if let Some(e) = Cmp::obj(o, "eth") {
        c.eq("eth.dst", e.get("dst"));
        c.eq("eth.src", e.get("src"));
        if let Some(v) = Cmp::obj(e, "vlan") {
            c.eq("vlan.priority", v.get("pcp"));
            c.eq("vlan.dei", v.get("dei"));
            c.eq("vlan.id", v.get("vid"));
            c.eq("vlan.etype", e.get("ethertype"));
        } else {
            c.eq("eth.type", e.get("ethertype"));
        }
    }
}

/// Compare one packet's fields.
fn compare(c: &mut Cmp<'_>, o: &Obj) {
    compare_eth(c, o);
    if let Some(i) = Cmp::obj(o, "ipv4") {
        for (t, k) in [
            ("ip.dsfield.dscp", "dscp"),
            ("ip.dsfield.ecn", "ecn"),
            ("ip.len", "len"),
            ("ip.id", "id"),
            ("ip.flags.df", "df"),
            ("ip.ttl", "ttl"),
            ("ip.proto", "proto"),
            ("ip.src", "src"),
            ("ip.dst", "dst"),
        ] {
            c.eq(t, i.get(k));
        }
        c.eq_num("ip.checksum.status", 1); // PROTO_CHECKSUM_E_GOOD
    }
    if let Some(i) = Cmp::obj(o, "ipv6") {
        for (t, k) in [
            ("ipv6.tclass", "tclass"),
            ("ipv6.tclass.dscp", "dscp"),
            ("ipv6.tclass.ecn", "ecn"),
            ("ipv6.flow", "flow"),
            ("ipv6.plen", "plen"),
            ("ipv6.nxt", "nxt"),
            ("ipv6.hlim", "hlim"),
            ("ipv6.src", "src"),
            ("ipv6.dst", "dst"),
        ] {
            c.eq(t, i.get(k));
        }
    }
    if let Some(u) = Cmp::obj(o, "udp") {
        for (t, k) in [
            ("udp.srcport", "srcport"),
            ("udp.dstport", "dstport"),
            ("udp.length", "length"),
            ("udp.checksum", "checksum"),
        ] {
            c.eq(t, u.get(k));
        }
        let want = match u.get("checksum_status") {
            Some(Val::S(s)) if s == "valid" => 1, // GOOD
            // A zero checksum is NOT_PRESENT over IPv4 and ILLEGAL over IPv6 (RFC 8200 §8.1).
            Some(Val::S(s)) if s == "absent" && o.get("ipv6").is_some() => 4,
            Some(Val::S(s)) if s == "absent" => 3,
            s => panic!("{}: udp checksum {s:?}", c.what),
        };
        c.eq_num("udp.checksum.status", want);
    }
    if let Some(l) = Cmp::obj(o, "lrh") {
        for k in ["vl", "lver", "sl", "lnh", "dlid", "pktlen", "slid"] {
            c.eq(&format!("infiniband.lrh.{k}"), l.get(k));
        }
    }
    if let Some(g) = Cmp::obj(o, "grh") {
        for k in [
            "ipver",
            "tclass",
            "flowlabel",
            "paylen",
            "nxthdr",
            "hoplmt",
            "sgid",
            "dgid",
        ] {
            c.eq(&format!("infiniband.grh.{k}"), g.get(k));
        }
    }
    let Some(b) = Cmp::obj(o, "bth") else { return };
    for k in ["opcode", "se", "m", "padcnt", "tver", "p_key", "destqp", "a", "psn"] {
        c.eq(&format!("infiniband.bth.{k}"), b.get(k));
    }
    // tshark 4.0 shows BTH byte 4 (FECN, BECN, Resv6a) as "infiniband.reserved".
    if let Some(Value::String(r)) = c.t.get("infiniband.reserved")
        && r.len() == 2
    {
        let byte = num(&format!("0x{r}")).unwrap();
        c.checked += 1;
        assert_eq!(
            (byte >> 7) & 1,
            our_num(b.get("fecn").unwrap()).unwrap(),
            "{}: fecn",
            c.what
        );
        assert_eq!(
            (byte >> 6) & 1,
            our_num(b.get("becn").unwrap()).unwrap(),
            "{}: becn",
            c.what
        );
    }
    if let Some(x) = Cmp::obj(o, "reth") {
        for k in ["va", "r_key", "dmalen"] {
            c.eq(&format!("infiniband.reth.{k}"), x.get(k));
        }
    }
    if let Some(x) = Cmp::obj(o, "atomiceth") {
        // tshark reuses the RETH fields for the AtomicETH VA and R_Key.
        c.eq("infiniband.reth.va", x.get("va"));
        c.eq("infiniband.reth.r_key", x.get("r_key"));
        c.eq("infiniband.atomiceth.swapdt", x.get("swapdt"));
        c.eq("infiniband.atomiceth.cmpdt", x.get("cmpdt"));
    }
    if let Some(x) = Cmp::obj(o, "aeth") {
        c.eq("infiniband.aeth.syndrome", x.get("syndrome"));
        c.eq("infiniband.aeth.msn", x.get("msn"));
    }
    if let Some(x) = Cmp::obj(o, "atomicacketh") {
        c.eq("infiniband.atomicacketh.origremdt", x.get("origremdt"));
    }
    if let Some(x) = Cmp::obj(o, "deth") {
        c.eq("infiniband.deth.q_key", x.get("q_key"));
        c.eq("infiniband.deth.srcqp", x.get("srcqp"));
    }
    if o.get("immdt").is_some() {
        c.eq("infiniband.immdt", o.get("immdt"));
    }
    if o.get("ieth").is_some() {
        c.eq("infiniband.ieth", o.get("ieth"));
    }
    let is_cnp = matches!(b.get("opcode"), Some(Val::U(0x81)));
    if let Some(m) = Cmp::obj(o, "mad") {
        compare_mad(c, m);
    } else if !is_cnp
        && let (Some(Val::S(p)), Some(Val::S(pad))) = (o.get("payload"), o.get("pad"))
        && !p.is_empty()
    {
        // data.data includes the pad bytes.
        c.eq(
            "data.data",
            Some(&Val::S(
                format!("{p}{pad}")
                    .as_bytes()
                    .chunks(2)
                    .map(|x| std::str::from_utf8(x).unwrap())
                    .collect::<Vec<_>>()
                    .join(":"),
            )),
        );
    }
    if !is_cnp {
        // tshark shows the ICRC wire bytes read big-endian.
        let found = match Cmp::obj(o, "icrc").and_then(|i| i.get("found")) {
            Some(Val::Hex(x, _)) => (*x as u32).swap_bytes(),
            v => panic!("{v:?}"),
        };
        c.eq_num("infiniband.invariant.crc", found as u128);
    }
    if let Some(Val::Hex(x, _)) = Cmp::obj(o, "vcrc").and_then(|i| i.get("found")) {
        c.eq_num("infiniband.variant.crc", (*x as u16).swap_bytes() as u128);
    }
}

/// PortInfo/SwitchInfo fields tshark 4.0 does not show (IBA 1.2+ additions).
const TSHARK_LACKS: &[&str] = &[
    "mcast_pkey_trap_suppression",
    "capability_mask2",
    "link_speed_ext_active",
    "link_speed_ext_supported",
    "link_speed_ext_enabled",
    "multicast_fdb_top",
];

fn tshark_attr_name(ours: &str) -> String {
    match ours {
        "gid_prefix" => "guid".into(),
        "phys_state" => "portphysicalstate".into(),
        "vl_arb_high_cap" => "vlarbitrationhighcap".into(),
        "vl_arb_low_cap" => "vlarbitrationlowcap".into(),
        "oper_vls" => "operationalvls".into(),
        "default_mcast_primary_port" => "defaultmulticastprimaryport".into(),
        "default_mcast_not_primary_port" => "defaultmulticastnotprimaryport".into(),
        "optimized_sl2vl" => "optimizedsltovlmappingprogramming".into(),
        "enhanced_port0" => "enhancedportzero".into(),
        k if k.starts_with("m_key") || k.starts_with("p_key") || k.starts_with("q_key") || k == "sm_key" => {
            let (a, b) = k.split_at(5);
            format!("{a}{}", b.replace('_', ""))
        }
        k => k.replace('_', ""),
    }
}

fn compare_mad(c: &mut Cmp<'_>, m: &Obj) {
    for (t, k) in [
        ("baseversion", "base_version"),
        ("mgmtclass", "mgmt_class"),
        ("classversion", "class_version"),
        ("method", "method"),
        ("status", "status"),
        ("transactionid", "tid"),
        ("attributeid", "attr_id"),
        ("attributemodifier", "attr_mod"),
    ] {
        c.eq(&format!("infiniband.mad.{t}"), m.get(k));
    }
    c.eq("infiniband.smplid.mkey", m.get("m_key"));
    if let Some(d) = Cmp::obj(m, "dr") {
        c.eq("infiniband.smpdirected.hoppointer", d.get("hop_ptr"));
        c.eq("infiniband.smpdirected.hopcount", d.get("hop_cnt"));
        c.eq("infiniband.smpdirected.drslid", d.get("dr_slid"));
        c.eq("infiniband.smpdirected.drdlid", d.get("dr_dlid"));
        for (t, k) in [
            ("infiniband.smpdirected.initialpath", "initial_path"),
            ("infiniband.smpdirected.returnpath", "return_path"),
        ] {
            let ours = ulist(d.get(k));
            let theirs = c.tstr(t).unwrap();
            let bytes: Vec<u128> = theirs
                .split(':')
                .map(|x| u128::from_str_radix(x, 16).unwrap())
                .collect();
            assert_eq!(&bytes[..ours.len()], &ours[..], "{}: {t}", c.what);
            c.checked += 1;
        }
    }
    let a = Cmp::obj(m, "attribute").expect("attribute");
    let prefix = match m.get("attr_name") {
        Some(Val::S(s)) => match s.as_str() {
            "NodeInfo" => "nodeinfo",
            "PortInfo" => "portinfo",
            "SwitchInfo" => "switchinfo",
            "SMInfo" => "sminfo",
            "Notice" => "notice",
            "NodeDescription" => {
                c.eq("infiniband.nodedescription.nodestring", a.get("text"));
                return;
            }
            "LinearForwardingTable" => {
                assert_eq!(
                    c.list("infiniband.linearforwardingtable.port"),
                    ulist(a.get("ports")),
                    "{}",
                    c.what
                );
                c.checked += 64;
                return;
            }
            "P_KeyTable" => {
                let ours = ulist(a.get("pkeys"));
                assert_eq!(
                    c.list("infiniband.p_keytable.p_keybase"),
                    ours.iter().map(|p| p & 0x7fff).collect::<Vec<_>>(),
                    "{}",
                    c.what
                );
                assert_eq!(
                    c.list("infiniband.p_keytable.membershiptype"),
                    ours.iter().map(|p| p >> 15).collect::<Vec<_>>(),
                    "{}",
                    c.what
                );
                c.checked += 64;
                return;
            }
            "SLtoVLMappingTable" => {
                let ours = ulist(a.get("vl"));
                assert_eq!(
                    c.list("infiniband.sltovlmappingtable.sltovlhighbits"),
                    ours.iter().step_by(2).copied().collect::<Vec<_>>()
                );
                assert_eq!(
                    c.list("infiniband.sltovlmappingtable.sltovllowbits"),
                    ours.iter().skip(1).step_by(2).copied().collect::<Vec<_>>()
                );
                c.checked += 16;
                return;
            }
            "VLArbitrationTable" => {
                assert_eq!(
                    c.list("infiniband.vlarbitrationtable.vl"),
                    ulist(a.get("vl")),
                    "{}",
                    c.what
                );
                assert_eq!(
                    c.list("infiniband.vlarbitrationtable.weight"),
                    ulist(a.get("weight")),
                    "{}",
                    c.what
                );
                c.checked += 64;
                return;
            }
            o => panic!("{}: no tshark comparison for attribute {o}", c.what),
        },
        v => panic!("{v:?}"),
    };
    for (k, v) in &a.0 {
        if k == "details" || TSHARK_LACKS.contains(&k.as_ref()) {
            continue;
        }
        let name = match (prefix, k.as_ref()) {
            ("notice", "notice_type") => "type".to_string(),
            ("notice", "producer_type") => "producertypevendorid".into(),
            ("notice", "trap_number") => "trapnumberdeviceid".into(),
            ("notice", "toggle") => "noticetoggle".into(),
            ("notice", "count") => "noticecount".into(),
            _ => tshark_attr_name(k),
        };
        c.eq(&format!("infiniband.{prefix}.{name}"), Some(v));
    }
    if let Some(d) = Cmp::obj(a, "details") {
        for (k, v) in &d.0 {
            match k.as_ref() {
                "lid" => c.eq("infiniband.trap.lidaddr", Some(v)),
                "port" => c.eq("infiniband.trap.portno", Some(v)),
                "cap_mask" => c.eq("infiniband.trap.capabilitymask", Some(v)),
                "local_changes" => c.eq("infiniband.trap.otherlocalchanges", Some(v)),
                "change_flags" => {
                    let f = our_num(v).unwrap();
                    c.eq_num("infiniband.trap.nodedescriptionchange", f & 1);
                    c.eq_num("infiniband.trap.linkwidthenabledchange", (f >> 1) & 1);
                    c.eq_num("infiniband.trap.linkspeecenabledchange", (f >> 2) & 1);
                }
                // CapabilityMask2 of trap 144 is not shown by tshark 4.0.
                "cap_mask2" => {}
                o => panic!("{}: trap detail {o} not compared", c.what),
            }
        }
    }
}

fn compare_mac_control(c: &mut Cmp<'_>, o: &Obj) {
    compare_eth(c, o);
    if let Some(p) = Cmp::obj(o, "pfc") {
        c.eq("macc.opcode", p.get("opcode"));
        c.eq("macc.cbfc.enbv", p.get("enable"));
        for (i, q) in ulist(p.get("quanta")).into_iter().enumerate() {
            c.eq_num(&format!("macc.cbfc.pause_time.c{i}"), q);
        }
    }
    if let Some(p) = Cmp::obj(o, "pause") {
        c.eq("macc.opcode", p.get("opcode"));
        c.eq("macc.pause_time", p.get("quanta"));
    }
}

/// Craft `spec` into `out` (optionally forcing a link type), run tshark, compare.
/// Returns (packets, fields compared).
fn check_spec(spec: &Path, out: &Path, link: Option<CaptureLink>, extra: &[&str]) -> (usize, usize) {
    let text = std::fs::read_to_string(spec).unwrap();
    let mut crafted = craft(&text, &spec.display().to_string()).unwrap();
    if let Some(l) = link {
        crafted.link = l;
    }
    crafted.write_pcap(out).unwrap();
    // Expert info: nothing at all (no errors, warnings, notes, malformed packets).
    let mut args = extra.to_vec();
    args.extend(["-q", "-z", "expert"]);
    let e = tshark(out, &args);
    assert!(
        e.status.success(),
        "{}: tshark failed: {}",
        spec.display(),
        String::from_utf8_lossy(&e.stderr)
    );
    let expert = String::from_utf8_lossy(&e.stdout);
    assert!(
        expert.trim().is_empty(),
        "{}: tshark expert info:\n{expert}",
        spec.display()
    );
    let mut args = extra.to_vec();
    args.extend(["-T", "json", "--no-duplicate-keys"]);
    let j = tshark(out, &args);
    assert!(j.status.success(), "{}", String::from_utf8_lossy(&j.stderr));
    let json: Value = serde_json::from_slice(&j.stdout).unwrap();
    let pkts = json.as_array().unwrap();
    assert_eq!(pkts.len(), crafted.frames.len(), "{}", spec.display());
    let mut checked = 0;
    for (i, (p, (_, frame))) in pkts.iter().zip(&crafted.frames).enumerate() {
        let mut t = BTreeMap::new();
        flatten(&p["_source"]["layers"], &mut t);
        let what = format!("{} packet {}", spec.display(), i + 1);
        assert!(
            !t.contains_key("_ws.malformed") && !t.contains_key("_ws.expert"),
            "{what}: tshark flags it"
        );
        let d = wire::decode(frame, crafted.link.frame_link()).unwrap();
        let o = describe(&d);
        let mut c = Cmp {
            t: &t,
            what,
            checked: 0,
        };
        let protos = c.tstr("frame.protocols").unwrap();
        match o.get("kind") {
            Some(Val::S(k)) if k == "mac_control" => {
                assert!(protos.ends_with("macc"), "{}: {protos}", c.what);
                compare_mac_control(&mut c, &o);
            }
            Some(Val::S(_)) => {
                assert!(protos.contains("infiniband"), "{}: {protos}", c.what);
                compare(&mut c, &o);
            }
            k => panic!("{k:?}"),
        }
        assert!(c.checked >= 5, "{}: only {} fields compared", c.what, c.checked);
        checked += c.checked;
    }
    (pkts.len(), checked)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wire-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn check_example(file: &str) {
    let spec = examples_dir().join(file);
    let out = tmp(&file.replace(".toml", ".pcap"));
    let (n, f) = check_spec(&spec, &out, None, &[]);
    assert!(n >= 4 && f >= 5 * n, "{file}: {n} packets, {f} fields");
}

/// One test per example spec (each stays well under the 20 s budget).
macro_rules! tshark_examples {
    ($($name:ident => $file:literal),* $(,)?) => {
        $( #[test] fn $name() { check_example($file); } )*

        #[test]
        fn tshark_example_tests_cover_every_spec() {
            let mut have: Vec<&str> = vec![$($file),*];
            have.sort();
            let all: Vec<String> = example_specs().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
            assert_eq!(have, all, "add a tshark test line for every examples/wire spec");
        }
    };
}

tshark_examples! {
    tshark_example_ib_native => "ib_native.toml",
    tshark_example_ib_smp => "ib_smp.toml",
    tshark_example_pfc => "pfc.toml",
    tshark_example_roce_v1 => "roce_v1.toml",
    tshark_example_roce_v2_ipv4 => "roce_v2_ipv4.toml",
    tshark_example_roce_v2_ipv6 => "roce_v2_ipv6.toml",
    tshark_example_roce_v2_loss => "roce_v2_loss.toml",
}

#[test]
fn tshark_decodes_native_ib_written_as_dlt_147() {
    for name in ["ib_native.toml", "ib_smp.toml"] {
        let out = tmp(&format!("user0-{name}.pcap"));
        let (n, _) = check_spec(
            &examples_dir().join(name),
            &out,
            Some(CaptureLink::IbUser0),
            &["-o", USER0_UAT],
        );
        assert!(n >= 6);
    }
}

/// Against the reference folder's scapy-built pcaps.
mod reference {
    use std::collections::BTreeMap;

    use serde_json::Value;
    use wire::dump::describe;
    use wire::pcap::CaptureLink;

    use super::{Cmp, compare, flatten, tshark};

    #[test]
    fn tshark_reads_the_reference_vectors_like_we_do() {
        // The committed reference pcaps (built by scapy) go through the same comparison
        // path: tshark's fields equal our decode of each frame.
        for (file, link) in [
            ("roce_v2_ipv4.pcap", CaptureLink::Ethernet),
            ("roce_v2_ipv6.pcap", CaptureLink::Ethernet),
            ("roce_v1.pcap", CaptureLink::Ethernet),
            ("ib_native.pcap", CaptureLink::IbErf),
        ] {
            let path = crate::support::vectors_dir().join(file);
            let j = tshark(&path, &["-T", "json", "--no-duplicate-keys"]);
            let json: Value = serde_json::from_slice(&j.stdout).unwrap();
            let recs: Vec<_> = wire::pcap::CaptureReader::open(&path)
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(json.as_array().unwrap().len(), recs.len());
            for (p, r) in json.as_array().unwrap().iter().zip(&recs) {
                let mut t = BTreeMap::new();
                flatten(&p["_source"]["layers"], &mut t);
                let d = wire::decode(&r.data, link.frame_link()).unwrap();
                let o = describe(&d);
                let mut c = Cmp {
                    t: &t,
                    what: format!("{file} frame {}", r.index),
                    checked: 0,
                };
                compare(&mut c, &o);
                assert!(c.checked >= 10);
            }
        }
    }
}
