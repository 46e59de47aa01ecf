//! ibnetdiscover output and ibsim net files: one reader, two writers.
//!
//! Grammar: shared InfiniBand reference §2.1 (ibnetdiscover, rdma-core
//! `ibnetdiscover.c`) and §2.2 (ibsim `sim_net.c`). The reader follows ibsim's rules,
//! which accept both:
//! - GUIDs come from running bases (CAs from 0x100000, switches from 0x200000) that
//!   `switchguid=` / `caguid=` / `hcaguids=` / `rtguid=` lines reset (`=`) or offset
//!   (`+`); a switch takes one GUID, a CA with n ports takes n + 1 (port p = node + p).
//!   ibnetdiscover output puts such a line before every node, so its GUIDs are kept.
//! - `vendid=`, `devid=`, `sysimgguid=` apply to the next node only.
//! - A record is a `Switch`/`Ca`/`Hca`/`Rt` header and the `[port]` lines that follow;
//!   a port's remote port defaults to 1; every link must be listed at both ends.
//! - The rate comes from the ibnetdiscover tail (`… lid 4 4xEDR`), else from ibsim's
//!   enabled masks (`w=`, `s=`, `e=`, with `width=`/`speed=`/`extspeed=` defaults),
//!   else 4xSDR (what ibsim brings a link up at). A trailing `rdmalab: <rate> <len>m
//!   [<delay>ps]` note, which ibsim ignores, carries the true rate and cable.
//!
//! rdmalab is stricter than ibsim where ibsim would silently ignore a mistake: an
//! unrecognised line is an error, not skipped.
//!
//! One file because ibnetdiscover output and ibsim net files are one grammar (the
//! reader accepts both) and the two writers must round-trip through that reader; tests
//! start at the `#[cfg(test)]` module near the end.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use wire::{Guid, Lid};

use super::{ParseError, ParseErrorKind as K, ReadOptions, WriteError, infer_hosts};
use crate::format::Format;
use crate::model::{Endpoint, Fabric, NodeId, NodeKind, NodeSpec, delay_for_length};
use crate::rate::{IbSpeed, IbWidth, LinkRate};

/// ibsim's per-type GUID bases (`absguids[]` in `sim_net.c`): routers, CAs, switches.
const CA_BASE: u64 = 0x100000;
const SW_BASE: u64 = 0x200000;
const RT_BASE: u64 = u64::MAX;
/// ibsim keeps `include` nesting to 9 levels (`MAX_INCLUDE`).
const MAX_INCLUDE: usize = 9;

#[derive(Clone, Copy, Default, Debug)]
struct Masks {
    w: Option<u32>,
    s: Option<u32>,
    e: Option<u32>,
}

#[derive(Debug)]
struct PortDecl {
    file: usize,
    line: usize,
    port: u32,
    peer: String,
    peer_port: u32,
    local_guid: Option<u64>,
    remote_guid: Option<u64>,
    tail_rate: Option<LinkRate>,
    note_rate: Option<LinkRate>,
    length_m: Option<f64>,
    delay_ps: Option<u64>,
    masks: Masks,
    lid: Option<u16>,
    lmc: Option<u8>,
}

#[derive(Debug)]
struct NodeDecl {
    file: usize,
    line: usize,
    kind: NodeKind,
    name: String,
    desc: String,
    nports: u32,
    guid: u64,
    sysimg: Option<u64>,
    vendid: Option<u32>,
    devid: Option<u16>,
    esp0: Option<bool>,
    lid: Option<u16>,
    lmc: Option<u8>,
    ports: Vec<PortDecl>,
}

struct State {
    files: Vec<String>,
    nodes: Vec<NodeDecl>,
    abs: [u64; 3],
    cur: [u64; 3],
    vendid: Option<u32>,
    devid: Option<u16>,
    sysimg: Option<u64>,
    defaults: Masks,
    prefix: String,
    depth: usize,
}

fn kind_idx(k: NodeKind) -> usize {
    match k {
        NodeKind::Router => 0,
        NodeKind::Ca => 1,
        NodeKind::Switch => 2,
    }
}

/// `strtoull(s, 0, 0)`-style number at the start of `s`: `0x` hex, else decimal.
fn c_number(s: &str) -> Option<u64> {
    let s = s.trim_start();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        u64::from_str_radix(&h[..end], 16).ok()
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().ok()
    }
}

fn expected(st: &State, file: usize, line: usize, what: &str, found: &str) -> ParseError {
    let found: String = found.chars().take(80).collect();
    ParseError::new(
        &st.files[file],
        line,
        K::Expected {
            expected: what.to_string(),
            found,
        },
    )
}

/// Read ibnetdiscover output or an ibsim net file.
pub fn read_net(file: &str, text: &str, base_dir: Option<&Path>, opts: &ReadOptions) -> Result<Fabric, ParseError> {
    let mut st = State {
        files: vec![file.to_string()],
        nodes: Vec::new(),
        abs: [RT_BASE, CA_BASE, SW_BASE],
        cur: [RT_BASE, CA_BASE, SW_BASE],
        vendid: None,
        devid: None,
        sysimg: None,
        defaults: Masks {
            w: Some(3),
            s: Some(1),
            e: Some(0),
        },
        prefix: String::new(),
        depth: 0,
    };
    parse_text(&mut st, 0, text, base_dir)?;
    if st.nodes.is_empty() {
        return Err(ParseError::new(
            file,
            text.lines().count().max(1),
            K::Expected {
                expected: "at least one node record (Switch, Ca, Hca or Rt)".into(),
                found: "none".into(),
            },
        ));
    }
    build(&st, opts)
}

fn parse_text(st: &mut State, fidx: usize, text: &str, base_dir: Option<&Path>) -> Result<(), ParseError> {
    let mut in_record = false;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.starts_with('[') || line.starts_with('@') {
            if !in_record {
                return Err(expected(
                    st,
                    fidx,
                    ln,
                    "a port line only after a Switch/Ca/Hca/Rt header",
                    line,
                ));
            }
            if line.starts_with('@') {
                return Err(ParseError::new(
                    &st.files[fidx],
                    ln,
                    K::Unsupported {
                        what: "ibsim port aliases (@)".into(),
                    },
                ));
            }
            let pd = parse_port(st, fidx, ln, line)?;
            let node = st.nodes.last_mut().expect("in_record implies a node");
            if node.ports.len() as u32 >= node.nports {
                // ibsim stops a record after nports port lines; more is a mistake.
                let (name, n) = (node.name.clone(), node.nports);
                return Err(expected(
                    st,
                    fidx,
                    ln,
                    &format!("at most {n} port lines for {name:?}"),
                    line,
                ));
            }
            node.ports.push(pd);
            continue;
        }
        let t = line.trim();
        if t.is_empty() {
            in_record = false;
            continue;
        }
        if line.starts_with('#') {
            continue; // comments may sit inside a record, as in ibsim
        }
        in_record = false;
        if line.starts_with("Switch") || line.starts_with("Hca") || line.starts_with("Ca") || line.starts_with("Rt") {
            let nd = parse_header(st, fidx, ln, line)?;
            st.nodes.push(nd);
            in_record = true;
        } else if let Some((k, rest)) = guid_line(line) {
            let (rel, val) = match rest.chars().next() {
                Some('=') => (false, &rest[1..]),
                Some('+') => (true, &rest[1..]),
                _ => return Err(expected(st, fidx, ln, "'=' or '+' then a GUID", line)),
            };
            let g = c_number(val).ok_or_else(|| expected(st, fidx, ln, "a GUID such as 0x200000", line))?;
            if rel {
                st.cur[k] = st.abs[k].wrapping_add(g);
            } else {
                st.abs[k] = g;
                st.cur[k] = g;
            }
        } else if let Some(v) = line.strip_prefix("vendid=") {
            let n = c_number(v)
                .filter(|&n| n <= 0xff_ffff)
                .ok_or_else(|| expected(st, fidx, ln, "a 24-bit vendor id", line))?;
            st.vendid = Some(n as u32);
        } else if let Some(v) = line.strip_prefix("devid=") {
            let n = c_number(v)
                .filter(|&n| n <= 0xffff)
                .ok_or_else(|| expected(st, fidx, ln, "a 16-bit device id", line))?;
            st.devid = Some(n as u16);
        } else if let Some(v) = line.strip_prefix("sysimgguid=") {
            st.sysimg = Some(c_number(v).ok_or_else(|| expected(st, fidx, ln, "a system image GUID", line))?);
        } else if let Some((which, v)) = ["width=", "speed=", "extspeed="]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|v| (*p, v)))
        {
            let n = c_number(v).ok_or_else(|| expected(st, fidx, ln, "a link mask number", line))? as u32;
            match which {
                "width=" => st.defaults.w = Some(n),
                "speed=" => st.defaults.s = Some(n),
                _ => st.defaults.e = Some(n),
            }
        } else if let Some(v) = line.strip_prefix("module=") {
            let v = v.trim().trim_matches('"');
            st.prefix = v.to_string();
        } else if let Some(v) = line.strip_prefix("include") {
            let name = v.trim().trim_matches('"');
            let Some(dir) = base_dir else {
                return Err(ParseError::new(
                    &st.files[fidx],
                    ln,
                    K::Unsupported {
                        what: "include without a file system path".into(),
                    },
                ));
            };
            if name.is_empty() {
                return Err(expected(st, fidx, ln, "include \"<file>\"", line));
            }
            if st.depth + 1 >= MAX_INCLUDE {
                return Err(ParseError::new(
                    &st.files[fidx],
                    ln,
                    K::Unsupported {
                        what: format!("include nesting deeper than {MAX_INCLUDE}"),
                    },
                ));
            }
            let path: PathBuf = dir.join(name);
            let bytes = std::fs::read(&path).map_err(|e| {
                expected(
                    st,
                    fidx,
                    ln,
                    "an include file that can be read",
                    &format!("{} ({e})", path.display()),
                )
            })?;
            let pname = path.display().to_string();
            let text = super::check_text(&pname, &bytes)?;
            st.files.push(pname);
            let child = st.files.len() - 1;
            st.depth += 1;
            parse_text(st, child, &text, path.parent())?;
            st.depth -= 1;
        } else if line.starts_with("do ") || line.starts_with("pdebug") {
            // ibsim console commands and parser debugging: no effect on the topology.
        } else if t == "Non-Chassis Nodes" || t.starts_with("Chassis ") || t.starts_with("Chassis\t") {
            // ibnetdiscover -g section headings.
        } else {
            return Err(expected(
                st,
                fidx,
                ln,
                "a node record (Switch, Ca, Hca, Rt), a GUID/vendid/devid line, a blank line or a # comment",
                line,
            ));
        }
    }
    Ok(())
}

fn guid_line(line: &str) -> Option<(usize, &str)> {
    for (p, k) in [("switchguid", 2), ("hcaguids", 1), ("caguid", 1), ("rtguid", 0)] {
        if let Some(rest) = line.strip_prefix(p) {
            return Some((k, rest.trim_start()));
        }
    }
    None
}

/// The text between the first pair of double quotes, and what follows.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let a = s.find('"')?;
    let b = s[a + 1..].find('"')? + a + 1;
    Some((&s[a + 1..b], &s[b + 1..]))
}

fn number_after<'a>(s: &'a str, key: &str) -> Option<(u64, &'a str)> {
    let i = s.find(key)?;
    let rest = &s[i + key.len()..];
    let n = c_number(rest)?;
    Some((n, rest))
}

fn parse_header(st: &mut State, fidx: usize, ln: usize, line: &str) -> Result<NodeDecl, ParseError> {
    let (kind, kw) = if line.starts_with("Switch") {
        (NodeKind::Switch, "Switch")
    } else if line.starts_with("Hca") {
        (NodeKind::Ca, "Hca")
    } else if line.starts_with("Ca") {
        (NodeKind::Ca, "Ca")
    } else {
        (NodeKind::Router, "Rt")
    };
    let after = &line[kw.len()..];
    let nstr = after.trim_start();
    let nend = nstr.find(|c: char| !c.is_ascii_digit()).unwrap_or(nstr.len());
    let nports: u32 = nstr[..nend]
        .parse()
        .ok()
        .filter(|&n| (1..=254).contains(&n))
        .ok_or_else(|| expected(st, fidx, ln, &format!("{kw} <ports 1-254> \"<id>\""), line))?;
    let (id, rest) = quoted(&nstr[nend..])
        .ok_or_else(|| expected(st, fidx, ln, &format!("{kw} {nports} \"<id>\" with a quoted id"), line))?;
    if id.is_empty() || id.contains('#') || id.contains('@') {
        return Err(expected(st, fidx, ln, "a non-empty node id without '#' or '@'", id));
    }
    let name = if st.prefix.is_empty() {
        id.to_string()
    } else {
        format!("{}#{id}", st.prefix)
    };
    let mut desc = None;
    let (mut esp0, mut lid, mut lmc) = (None, None, None);
    if let Some(h) = rest.find('#') {
        let t = rest[h + 1..].trim_start();
        let flags;
        if let Some(q) = t.strip_prefix('"') {
            let end = q
                .rfind('"')
                .ok_or_else(|| expected(st, fidx, ln, "a closing quote after the node description", line))?;
            desc = Some(q[..end].to_string());
            flags = &q[end + 1..];
        } else {
            let cut = [" enhanced port ", " base port ", " lid ", " lmc "]
                .iter()
                .filter_map(|k| t.find(k))
                .min()
                .unwrap_or(t.len());
            let d = t[..cut].trim();
            if !d.is_empty() {
                desc = Some(d.to_string());
            }
            flags = &t[cut..];
        }
        if flags.contains("enhanced port 0") {
            esp0 = Some(true);
        } else if flags.contains("base port 0") {
            esp0 = Some(false);
        }
        if let Some((n, _)) = number_after(flags, "lid ") {
            lid = Some(u16::try_from(n).map_err(|_| expected(st, fidx, ln, "a 16-bit LID", flags))?);
        }
        if let Some((n, _)) = number_after(flags, "lmc ") {
            lmc = Some(
                u8::try_from(n)
                    .ok()
                    .filter(|&m| m <= 7)
                    .ok_or_else(|| expected(st, fidx, ln, "an LMC of 0 to 7", flags))?,
            );
        }
    }
    let k = kind_idx(kind);
    let guid = st.cur[k];
    st.cur[k] = st.cur[k].wrapping_add(if kind == NodeKind::Switch {
        1
    } else {
        u64::from(nports) + 1
    });
    Ok(NodeDecl {
        file: fidx,
        line: ln,
        kind,
        desc: desc.unwrap_or_else(|| name.clone()),
        name,
        nports,
        guid,
        sysimg: st.sysimg.take(),
        vendid: st.vendid.take(),
        devid: st.devid.take(),
        esp0,
        lid,
        lmc,
        ports: Vec::new(),
    })
}

/// `[digits]` at the start of `s`, then optional `[ext N]`; returns the number and the rest.
fn bracket_num(s: &str) -> Option<(u32, &str)> {
    let r = s.strip_prefix('[')?;
    let end = r.find(']')?;
    let n = r[..end].trim().parse().ok()?;
    let mut rest = &r[end + 1..];
    if let Some(x) = rest.strip_prefix("[ext ") {
        rest = &x[x.find(']')? + 1..];
    }
    Some((n, rest))
}

fn paren_guid(s: &str) -> Option<(Option<u64>, &str)> {
    let t = s.trim_start();
    match t.strip_prefix('(') {
        None => Some((None, s)),
        Some(r) => {
            let end = r.find(')')?;
            let g = u64::from_str_radix(r[..end].trim().trim_start_matches("0x"), 16).ok()?;
            Some((Some(g), &r[end + 1..]))
        }
    }
}

fn parse_rate_token(st: &State, fidx: usize, ln: usize, tok: &str) -> Result<LinkRate, ParseError> {
    tok.parse::<LinkRate>()
        .map_err(|_| ParseError::new(&st.files[fidx], ln, K::UnknownSpeed { found: tok.to_string() }))
}

fn parse_port(st: &State, fidx: usize, ln: usize, line: &str) -> Result<PortDecl, ParseError> {
    let (port, rest) =
        bracket_num(line).ok_or_else(|| expected(st, fidx, ln, "[<port number>] at the start of a port line", line))?;
    let (local_guid, rest) = paren_guid(rest).ok_or_else(|| expected(st, fidx, ln, "(<hex port GUID>)", line))?;
    let (peer, rest) = quoted(rest).ok_or_else(|| {
        expected(
            st,
            fidx,
            ln,
            "a quoted remote node id such as \"S-0000000000200000\"",
            line,
        )
    })?;
    if peer.is_empty() {
        return Err(expected(st, fidx, ln, "a non-empty remote node id", line));
    }
    let peer = if st.prefix.is_empty() || peer.contains('#') {
        peer.to_string()
    } else {
        format!("{}#{peer}", st.prefix)
    };
    let (peer_port, rest) = if rest.starts_with('[') {
        bracket_num(rest).ok_or_else(|| expected(st, fidx, ln, "[<remote port number>] after the remote id", line))?
    } else {
        (1, rest) // ibsim: the remote port defaults to 1
    };
    let (remote_guid, rest) = paren_guid(rest).ok_or_else(|| expected(st, fidx, ln, "(<hex port GUID>)", line))?;
    let (opts, tail) = match rest.find('#') {
        Some(h) => (&rest[..h], Some(&rest[h + 1..])),
        None => (rest, None),
    };
    let mut masks = Masks::default();
    for tok in opts.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| expected(st, fidx, ln, "a port option w=<mask>, s=<mask> or e=<mask>", tok))?;
        let n = c_number(v).ok_or_else(|| expected(st, fidx, ln, "a numeric link mask", tok))? as u32;
        match k {
            "w" => masks.w = Some(n),
            "s" => masks.s = Some(n),
            "e" => masks.e = Some(n),
            _ => {
                return Err(expected(
                    st,
                    fidx,
                    ln,
                    "a port option w=<mask>, s=<mask> or e=<mask>",
                    tok,
                ));
            }
        }
    }
    let mut pd = PortDecl {
        file: fidx,
        line: ln,
        port,
        peer,
        peer_port,
        local_guid,
        remote_guid,
        tail_rate: None,
        note_rate: None,
        length_m: None,
        delay_ps: None,
        masks,
        lid: None,
        lmc: None,
    };
    if let Some(tail) = tail {
        let (tail, note) = match tail.find("rdmalab:") {
            Some(i) => (&tail[..i], Some(&tail[i + "rdmalab:".len()..])),
            None => (tail, None),
        };
        // Local "lid N lmc M" (CA lines) sits before the quoted remote description.
        let first_q = tail.find('"').unwrap_or(tail.len());
        let local = &tail[..first_q];
        if let Some((n, _)) = number_after(local, "lid ") {
            pd.lid = Some(u16::try_from(n).map_err(|_| expected(st, fidx, ln, "a 16-bit LID", local))?);
        }
        if let Some((n, _)) = number_after(local, "lmc ") {
            pd.lmc = Some(
                u8::try_from(n)
                    .ok()
                    .filter(|&m| m <= 7)
                    .ok_or_else(|| expected(st, fidx, ln, "an LMC of 0 to 7", local))?,
            );
        }
        let remote = match tail.rfind('"') {
            Some(q) if q > first_q => &tail[q + 1..],
            _ => &tail[first_q.min(tail.len())..],
        };
        let toks: Vec<&str> = remote.split_whitespace().collect();
        if let Some(i) = toks.iter().position(|&t| t == "lid")
            && let Some(rt) = toks.get(i + 2)
        {
            pd.tail_rate = Some(parse_rate_token(st, fidx, ln, rt)?);
        }
        if let Some(note) = note {
            let mut it = note.split_whitespace();
            let r = it
                .next()
                .ok_or_else(|| expected(st, fidx, ln, "a rate after \"rdmalab:\"", note))?;
            pd.note_rate = Some(parse_rate_token(st, fidx, ln, r)?);
            for tok in it {
                if let Some(ps) = tok.strip_suffix("ps") {
                    pd.delay_ps = Some(
                        ps.parse()
                            .map_err(|_| expected(st, fidx, ln, "a delay such as 10000ps", tok))?,
                    );
                } else if let Some(m) = tok.strip_suffix('m') {
                    let v: f64 = m
                        .parse()
                        .map_err(|_| expected(st, fidx, ln, "a cable length such as 20m", tok))?;
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(expected(st, fidx, ln, "a non-negative cable length", tok));
                    }
                    pd.length_m = Some(v);
                } else {
                    return Err(expected(
                        st,
                        fidx,
                        ln,
                        "a cable length (20m) or delay (100000ps) after the rate",
                        tok,
                    ));
                }
            }
        }
    }
    Ok(pd)
}

/// The rate ibsim brings a link up at from the two ends' enabled masks.
fn rate_from_masks(a: Masks, b: Masks, d: Masks) -> Option<LinkRate> {
    let w = a.w.or(d.w).unwrap_or(3) & b.w.or(d.w).unwrap_or(3);
    let s = a.s.or(d.s).unwrap_or(1) & b.s.or(d.s).unwrap_or(1);
    let e = a.e.or(d.e).unwrap_or(0) & b.e.or(d.e).unwrap_or(0);
    // PortInfo:LinkWidthEnabled bits (IBA vol. 1 §14.2.5.6): 1 1x, 2 4x, 4 8x, 8 12x, 16 2x.
    let width = [
        (8, IbWidth::X12),
        (4, IbWidth::X8),
        (2, IbWidth::X4),
        (16, IbWidth::X2),
        (1, IbWidth::X1),
    ]
    .into_iter()
    .find(|(bit, _)| w & bit != 0)?
    .1;
    // LinkSpeedExtEnabled: 1 FDR, 2 EDR, 4 HDR, 8 NDR; LinkSpeedEnabled: 1 SDR, 2 DDR, 4 QDR.
    let speed = [
        (8, IbSpeed::Ndr),
        (4, IbSpeed::Hdr),
        (2, IbSpeed::Edr),
        (1, IbSpeed::Fdr),
    ]
    .into_iter()
    .find(|(bit, _)| e & bit != 0)
    .map(|x| x.1)
    .or_else(|| {
        [(4, IbSpeed::Qdr), (2, IbSpeed::Ddr), (1, IbSpeed::Sdr)]
            .into_iter()
            .find(|(bit, _)| s & bit != 0)
            .map(|x| x.1)
    })?;
    Some(LinkRate::ib(speed, width))
}

fn build(st: &State, opts: &ReadOptions) -> Result<Fabric, ParseError> {
    let err = |f: usize, l: usize, k: K| ParseError::new(&st.files[f], l, k);
    let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(st.nodes.len());
    for (i, n) in st.nodes.iter().enumerate() {
        if by_name.insert(n.name.as_str(), i).is_some() {
            return Err(err(
                n.file,
                n.line,
                K::Model(crate::error::ModelError::DuplicateName { name: n.name.clone() }),
            ));
        }
    }
    // Per node, the declaration index of each port (checking range and duplicates).
    let mut port_decl: Vec<Vec<Option<u32>>> = Vec::with_capacity(st.nodes.len());
    for n in &st.nodes {
        let mut v = vec![None; n.nports as usize + 1];
        for (j, p) in n.ports.iter().enumerate() {
            if p.port == 0 {
                return Err(err(p.file, p.line, K::Expected { expected: "a port number from 1 (port 0 is the switch's internal management port and cannot be cabled)".into(), found: "0".into() }));
            }
            if p.port > n.nports {
                return Err(err(
                    p.file,
                    p.line,
                    K::PortOutOfRange {
                        node: n.name.clone(),
                        port: p.port,
                        num_ports: n.nports as u8,
                    },
                ));
            }
            if v[p.port as usize].replace(j as u32).is_some() {
                return Err(err(
                    p.file,
                    p.line,
                    K::DuplicatePort {
                        node: n.name.clone(),
                        port: p.port as u8,
                    },
                ));
            }
        }
        port_decl.push(v);
    }
    // Port GUIDs of CAs/routers: their own `[p](guid)` lines, else a peer's `(guid)`.
    let mut port_guids: Vec<Option<Vec<Guid>>> = st
        .nodes
        .iter()
        .map(|n| {
            (n.kind != NodeKind::Switch).then(|| {
                (1..=u64::from(n.nports))
                    .map(|p| Guid(n.guid.wrapping_add(p)))
                    .collect()
            })
        })
        .collect();
    for (i, n) in st.nodes.iter().enumerate() {
        for p in &n.ports {
            if let (Some(g), Some(v)) = (p.local_guid, port_guids[i].as_mut()) {
                v[p.port as usize - 1] = Guid(g);
            }
        }
    }
    for n in &st.nodes {
        for p in &n.ports {
            let (Some(g), Some(&j)) = (p.remote_guid, by_name.get(p.peer.as_str())) else {
                continue;
            };
            let peer = &st.nodes[j];
            if p.peer_port >= 1
                && p.peer_port <= peer.nports
                && port_decl[j][p.peer_port as usize]
                    .map(|d| peer.ports[d as usize].local_guid.is_none())
                    .unwrap_or(true)
                && let Some(v) = port_guids[j].as_mut()
            {
                v[p.peer_port as usize - 1] = Guid(g);
            }
        }
    }
    let mut fab = Fabric::new();
    for (i, n) in st.nodes.iter().enumerate() {
        let mut spec = match n.kind {
            NodeKind::Switch => NodeSpec::switch(n.name.clone(), Guid(n.guid), n.nports as u8),
            _ => {
                let mut s = NodeSpec::ca(n.name.clone(), Guid(n.guid), n.nports as u8);
                s.kind = n.kind;
                s
            }
        };
        spec.desc = n.desc.clone();
        spec.sys_image_guid = n.sysimg.map(Guid);
        spec.port_guids = port_guids[i].take();
        if let Some(v) = n.vendid {
            spec.vendor_id = v;
        }
        if let Some(d) = n.devid {
            spec.device_id = d;
        }
        if let Some(e) = n.esp0 {
            spec.enhanced_port0 = e;
        }
        let id = fab.add_node(spec).map_err(|e| err(n.file, n.line, K::Model(e)))?;
        let node = fab.node_mut(id);
        if n.kind == NodeKind::Switch {
            node.ports[0].lid = n.lid.filter(|&l| l != 0).map(Lid);
            node.ports[0].lmc = n.lmc.unwrap_or(0);
        }
        for p in &n.ports {
            if n.kind != NodeKind::Switch {
                node.ports[p.port as usize].lid = p.lid.filter(|&l| l != 0).map(Lid);
                node.ports[p.port as usize].lmc = p.lmc.unwrap_or(0);
            }
        }
    }
    for (i, n) in st.nodes.iter().enumerate() {
        let me = NodeId(i as u32);
        for p in &n.ports {
            if fab.peer(me, p.port as u8).is_some() {
                continue; // made from the other end
            }
            let Some(&j) = by_name.get(p.peer.as_str()) else {
                return Err(err(
                    p.file,
                    p.line,
                    K::UnknownPeer {
                        node: n.name.clone(),
                        port: p.port as u8,
                        peer: p.peer.clone(),
                    },
                ));
            };
            let peer = &st.nodes[j];
            if p.peer_port == 0 || p.peer_port > peer.nports {
                return Err(err(
                    p.file,
                    p.line,
                    K::PortOutOfRange {
                        node: peer.name.clone(),
                        port: p.peer_port,
                        num_ports: peer.nports as u8,
                    },
                ));
            }
            let one_sided = |why: String| {
                err(
                    p.file,
                    p.line,
                    K::OneSided {
                        node: n.name.clone(),
                        port: p.port as u8,
                        peer: peer.name.clone(),
                        peer_port: p.peer_port as u8,
                        why,
                    },
                )
            };
            let Some(d) = port_decl[j][p.peer_port as usize] else {
                return Err(one_sided(format!("lists no cable on port {}", p.peer_port)));
            };
            let q = &peer.ports[d as usize];
            if q.peer != n.name || q.peer_port != p.port {
                return Err(one_sided(format!(
                    "lists port {} as cabled to {:?} port {} (line {})",
                    p.peer_port, q.peer, q.peer_port, q.line
                )));
            }
            // Each end reports its own port's active rate; they agree on a healthy
            // link. Where a dump disagrees (the rdma-core man-page example has a link
            // shown 4xSDR from one end and 1xSDR from the other) the link carries the
            // slower one, so that is what the model keeps.
            let pick = |a: Option<LinkRate>, b: Option<LinkRate>| -> Result<Option<LinkRate>, ParseError> {
                Ok(match (a, b) {
                    (Some(x), Some(y)) => Some(if y.data_bps() < x.data_bps() { y } else { x }),
                    (x, y) => x.or(y),
                })
            };
            let rate = match pick(p.note_rate, q.note_rate)? {
                Some(r) => r,
                None => match pick(p.tail_rate, q.tail_rate)? {
                    Some(r) => r,
                    None => rate_from_masks(p.masks, q.masks, st.defaults).ok_or_else(|| {
                        err(
                            p.file,
                            p.line,
                            K::Expected {
                                expected: "link masks (w=, s=, e=) that both ends share".into(),
                                found: format!("{:?} vs {:?}", p.masks, q.masks),
                            },
                        )
                    })?,
                },
            };
            let len = p.length_m.or(q.length_m).unwrap_or(opts.default_length_m);
            let delay = p.delay_ps.or(q.delay_ps).unwrap_or_else(|| delay_for_length(len));
            fab.connect_with_delay(me, p.port as u8, NodeId(j as u32), p.peer_port as u8, rate, len, delay)
                .map_err(|e| err(p.file, p.line, K::Model(e)))?;
        }
    }
    infer_hosts(&mut fab);
    Ok(fab)
}

/// The rate ibsim 0.10 is told for a link: it parses SDR, DDR, QDR, FDR, EDR and
/// HDR at 1x/2x/4x/8x/12x but not FDR10, NDR or XDR ("cannot parse speed",
/// measured; shared InfiniBand reference §2.2). Those are written as the nearest
/// generation it knows: FDR10 → QDR (the same 4x 40 Gb/s class), NDR and XDR → HDR.
/// The true rate follows in the `rdmalab:` note, which ibsim ignores.
pub fn ibsim_rate(r: LinkRate) -> LinkRate {
    match r {
        LinkRate::Ib {
            speed: IbSpeed::Fdr10,
            width,
        } => LinkRate::ib(IbSpeed::Qdr, width),
        LinkRate::Ib {
            speed: IbSpeed::Ndr | IbSpeed::Xdr,
            width,
        } => LinkRate::ib(IbSpeed::Hdr, width),
        other => other,
    }
}

fn check_ib(fab: &Fabric, format: Format) -> Result<(), WriteError> {
    match fab.links.iter().position(|l| !l.rate.is_ib()) {
        Some(i) => Err(WriteError::NotInfiniband {
            link: i as u32,
            rate: fab.links[i].rate.to_string(),
            format,
        }),
        None => Ok(()),
    }
}

fn check_desc(d: &str, format: Format) -> Result<(), WriteError> {
    if d.contains('"') || d.contains('\n') || d.contains('\r') {
        return Err(WriteError::BadText {
            what: "node description",
            value: d.into(),
            why: "it contains a quote or a line break",
            format,
        });
    }
    Ok(())
}

fn nodes_in_dump_order(fab: &Fabric) -> Vec<NodeId> {
    // ibnetdiscover lists switches, then CAs, then routers.
    let mut v: Vec<NodeId> = fab.nodes_of(NodeKind::Switch).collect();
    v.extend(fab.nodes_of(NodeKind::Ca));
    v.extend(fab.nodes_of(NodeKind::Router));
    v
}

fn lid_of(fab: &Fabric, e: Endpoint) -> u16 {
    let n = fab.node(e.node);
    let p = if n.is_switch() { 0 } else { e.port as usize };
    n.ports[p].lid.map(|l| l.0).unwrap_or(0)
}

fn ibnd_name(fab: &Fabric, id: NodeId) -> String {
    let n = fab.node(id);
    let prefix = match n.kind {
        NodeKind::Switch => 'S',
        NodeKind::Ca => 'H',
        NodeKind::Router => 'R',
    };
    format!("{prefix}-{:016x}", n.node_guid.0)
}

fn ids_block(out: &mut String, fab: &Fabric, id: NodeId, guid_kw: &str) {
    let n = fab.node(id);
    let _ = writeln!(
        out,
        "vendid=0x{:x}\ndevid=0x{:x}\nsysimgguid=0x{:x}",
        n.vendor_id, n.device_id, n.sys_image_guid.0
    );
    if n.is_switch() {
        let _ = writeln!(out, "{guid_kw}=0x{:x}({:x})", n.node_guid.0, n.node_guid.0);
    } else {
        let _ = writeln!(out, "{guid_kw}=0x{:x}", n.node_guid.0);
    }
}

fn kind_words(k: NodeKind) -> (&'static str, &'static str) {
    match k {
        NodeKind::Switch => ("Switch", "switchguid"),
        NodeKind::Ca => ("Ca", "caguid"),
        NodeKind::Router => ("Rt", "rtguid"),
    }
}

/// Write `ibnetdiscover` output (infiniband-diags 44 layout). Node ids are
/// `S-`/`H-`/`R-` + the node GUID, as ibnetdiscover prints them; cable lengths
/// cannot be expressed. Ethernet fabrics are refused.
pub fn write_ibnetdiscover(fab: &Fabric) -> Result<String, WriteError> {
    check_ib(fab, Format::Ibnetdiscover)?;
    for n in &fab.nodes {
        check_desc(&n.desc, Format::Ibnetdiscover)?;
    }
    let order = nodes_in_dump_order(fab);
    let mut out = String::with_capacity(fab.links.len() * 140 + fab.nodes.len() * 120);
    let start = order.first().map(|&id| {
        let n = fab.node(id);
        (
            n.node_guid.0,
            if n.is_switch() {
                n.node_guid.0
            } else {
                n.ports.get(1).map(|p| p.guid.0).unwrap_or(0)
            },
        )
    });
    let (sg, sp) = start.unwrap_or((0, 0));
    let _ = write!(
        out,
        "#\n# Topology file: generated by rdmalab\n#\n# Initiated from node {sg:016x} port {sp:016x}\n\nNon-Chassis Nodes\n"
    );
    for id in order {
        let n = fab.node(id);
        let (kw, guid_kw) = kind_words(n.kind);
        out.push('\n');
        ids_block(&mut out, fab, id, guid_kw);
        if n.is_switch() {
            let _ = writeln!(
                out,
                "{kw}\t{} \"{}\"\t\t# \"{}\" {} port 0 lid {} lmc {}",
                n.num_ports(),
                ibnd_name(fab, id),
                n.desc,
                if n.enhanced_port0 { "enhanced" } else { "base" },
                n.ports[0].lid.map(|l| l.0).unwrap_or(0),
                n.ports[0].lmc
            );
        } else {
            let _ = writeln!(
                out,
                "{kw}\t{} \"{}\"\t\t# \"{}\"",
                n.num_ports(),
                ibnd_name(fab, id),
                n.desc
            );
        }
        for p in n.port_nums() {
            let Some((peer, l)) = fab.peer(id, p) else { continue };
            let pn = fab.node(peer.node);
            let rate = fab.link(l).rate;
            let remote_guid = if pn.is_switch() {
                String::new()
            } else {
                format!("({:x}) ", pn.ports[peer.port as usize].guid.0)
            };
            let rlid = lid_of(fab, peer);
            if n.is_switch() {
                let _ = writeln!(
                    out,
                    "[{p}]\t\"{}\"[{}]{remote_guid}\t\t# \"{}\" lid {rlid} {rate}",
                    ibnd_name(fab, peer.node),
                    peer.port,
                    pn.desc
                );
            } else {
                let port = &n.ports[p as usize];
                let _ = writeln!(
                    out,
                    "[{p}]({:x}) \t\"{}\"[{}]{remote_guid}\t\t# lid {} lmc {} \"{}\" lid {rlid} {rate}",
                    port.guid.0,
                    ibnd_name(fab, peer.node),
                    peer.port,
                    port.lid.map(|l| l.0).unwrap_or(0),
                    port.lmc,
                    pn.desc
                );
            }
        }
    }
    Ok(out)
}

/// ibsim reads lines of at most 255 characters (`MAXLINE` 256 in `sim_net.c`).
const IBSIM_MAX_LINE: usize = 255;
/// ibsim node ids hold at most 63 characters (`NODEIDLEN` 64).
const IBSIM_MAX_ID: usize = 63;

fn check_ibsim_name(name: &str) -> Result<(), WriteError> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.contains(['"', '#', '@', '\n', '\r']) {
        Some("ibsim reserves '#' and '@' and ids cannot hold quotes or line breaks")
    } else if name.len() > IBSIM_MAX_ID {
        Some("ibsim node ids hold at most 63 characters")
    } else {
        None
    };
    match why {
        Some(why) => Err(WriteError::BadText {
            what: "node name",
            value: name.into(),
            why,
            format: Format::Ibsim,
        }),
        None => Ok(()),
    }
}

fn fmt_len(m: f64) -> String {
    format!("{m}m")
}

fn note(fab: &Fabric, l: crate::model::LinkId) -> String {
    let link = fab.link(l);
    let mut s = format!(" rdmalab: {} {}", link.rate, fmt_len(link.length_m));
    if link.delay_ps != delay_for_length(link.length_m) {
        let _ = write!(s, " {}ps", link.delay_ps);
    }
    s
}

/// Write an ibsim net file that Debian's ibsim 0.10 loads: every link is listed at
/// both ends, node ids are rdmalab's names, a `switchguid=`/`caguid=`/`rtguid=` line
/// before each node makes ibsim use rdmalab's GUIDs, and rates are spelled as
/// [`ibsim_rate`] maps them, with the true rate, length and delay in a trailing
/// `rdmalab:` note ibsim ignores. Ethernet fabrics are refused.
pub fn write_ibsim(fab: &Fabric) -> Result<String, WriteError> {
    check_ib(fab, Format::Ibsim)?;
    for n in &fab.nodes {
        check_ibsim_name(&n.name)?;
        check_desc(&n.desc, Format::Ibsim)?;
    }
    let order = nodes_in_dump_order(fab);
    let mut out = String::with_capacity(fab.links.len() * 150 + fab.nodes.len() * 120);
    let _ = write!(
        out,
        "# ibsim net file written by rdmalab: {} switches, {} CAs, {} routers, {} links.\n\
         # Load with: ibsim -s{} <this file>\n\
         # ibsim 0.10 cannot parse FDR10, NDR or XDR: such links are spelled QDR/HDR for it;\n\
         # the true rate, cable length and delay follow \"rdmalab:\" (ibsim ignores it).\n",
        fab.count(NodeKind::Switch),
        fab.count(NodeKind::Ca),
        fab.count(NodeKind::Router),
        fab.links.len(),
        ibsim_limits(fab)
    );
    let mut line = String::new();
    for id in order {
        let n = fab.node(id);
        let (kw, guid_kw) = kind_words(n.kind);
        out.push('\n');
        ids_block(&mut out, fab, id, guid_kw);
        line.clear();
        if n.is_switch() {
            let _ = write!(
                line,
                "{kw}\t{} \"{}\"\t\t# \"{}\" {} port 0 lid {} lmc {}",
                n.num_ports(),
                n.name,
                n.desc,
                if n.enhanced_port0 { "enhanced" } else { "base" },
                n.ports[0].lid.map(|l| l.0).unwrap_or(0),
                n.ports[0].lmc
            );
        } else {
            let _ = write!(line, "{kw}\t{} \"{}\"\t\t# \"{}\"", n.num_ports(), n.name, n.desc);
        }
        push_line(&mut out, &line)?;
        for p in n.port_nums() {
            let Some((peer, l)) = fab.peer(id, p) else { continue };
            let pn = fab.node(peer.node);
            let shown = ibsim_rate(fab.link(l).rate);
            let rlid = lid_of(fab, peer);
            line.clear();
            if n.is_switch() {
                let _ = write!(
                    line,
                    "[{p}]\t\"{}\"[{}]\t\t# \"{}\" lid {rlid} {shown}{}",
                    pn.name,
                    peer.port,
                    pn.desc,
                    note(fab, l)
                );
            } else {
                let port = &n.ports[p as usize];
                let _ = write!(
                    line,
                    "[{p}]({:x})\t\"{}\"[{}]\t\t# lid {} lmc {} \"{}\" lid {rlid} {shown}{}",
                    port.guid.0,
                    pn.name,
                    peer.port,
                    port.lid.map(|l| l.0).unwrap_or(0),
                    port.lmc,
                    pn.desc,
                    note(fab, l)
                );
            }
            push_line(&mut out, &line)?;
        }
    }
    Ok(out)
}

/// ibsim 0.10's table sizes (banner: MaxNetNodes 2048, MaxNetSwitches 256,
/// MaxNetPorts 13312) and the `-N`/`-S`/`-P` flags a fabric needs beyond them; a
/// switch uses NumPorts + 1 port slots (port 0), a CA NumPorts.
fn ibsim_limits(fab: &Fabric) -> String {
    let nodes = fab.nodes.len();
    let switches = fab.count(NodeKind::Switch);
    let ports: usize = fab
        .nodes
        .iter()
        .map(|n| n.num_ports() as usize + usize::from(n.is_switch()))
        .sum();
    let mut s = String::new();
    if nodes > 2048 {
        let _ = write!(s, " -N {nodes}");
    }
    if switches > 256 {
        let _ = write!(s, " -S {switches}");
    }
    if ports > 13312 {
        let _ = write!(s, " -P {ports}");
    }
    s
}

fn push_line(out: &mut String, line: &str) -> Result<(), WriteError> {
    if line.len() > IBSIM_MAX_LINE {
        return Err(WriteError::BadText {
            what: "line",
            value: line.to_string(),
            why: "ibsim reads at most 255 characters per line (shorten the node description)",
            format: Format::Ibsim,
        });
    }
    out.push_str(line);
    out.push('\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(s: &str) -> Result<Fabric, ParseError> {
        read_net("t.net", s, None, &ReadOptions::default())
    }

    #[test]
    fn ibsim_guid_bases() {
        let f =
            rd("Switch 8 \"S1\"\n[1] \"H1\"[1]\n\nSwitch 8 \"S2\"\n\nHca 2 \"H1\"\n[1] \"S1\"[1]\n\nHca 1 \"H2\"\n")
                .unwrap();
        assert_eq!(f.node(f.by_name("S1").unwrap()).node_guid, Guid(0x200000));
        assert_eq!(f.node(f.by_name("S2").unwrap()).node_guid, Guid(0x200001));
        assert_eq!(f.node(f.by_name("H1").unwrap()).node_guid, Guid(0x100000));
        assert_eq!(f.node(f.by_name("H2").unwrap()).node_guid, Guid(0x100003));
        assert_eq!(f.links[0].rate, LinkRate::ib(IbSpeed::Sdr, IbWidth::X4));
    }

    #[test]
    fn relative_guids_and_masks() {
        let f = rd("switchguid=0x5000\nswitchguid+0x10\nSwitch 8 \"S1\"\n[1] \"H1\"[1] w=8 s=4\n\ncaguid=0x9000\nHca 1 \"H1\"\n[1] \"S1\"[1] w=8 s=6\n").unwrap();
        assert_eq!(f.node(NodeId(0)).node_guid, Guid(0x5010));
        assert_eq!(f.node(NodeId(1)).node_guid, Guid(0x9000));
        assert_eq!(f.links[0].rate, LinkRate::ib(IbSpeed::Qdr, IbWidth::X12));
    }

    #[test]
    fn one_sided_link_is_an_error_with_line() {
        let e = rd("Switch 8 \"S1\"\n[1] \"H1\"[1]\n\nHca 1 \"H1\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(matches!(e.kind, K::OneSided { .. }), "{e}");
    }

    #[test]
    fn ndr_maps_to_hdr_for_ibsim() {
        assert_eq!(ibsim_rate(LinkRate::NDR_4X), LinkRate::HDR_4X);
        assert_eq!(ibsim_rate(LinkRate::EDR_4X), LinkRate::EDR_4X);
    }
}
