//! ns-3 HPCC `topology.txt` (alibaba-edu/High-Precision-Congestion-Control,
//! `simulation/scratch/third.cc`; grammar in the shared simulators reference §1.1.1):
//!
//! ```text
//! <node_num> <switch_num> <link_num>
//! <switch ids …>
//! <src> <dst> <rate> <delay> <error_rate>      × link_num
//! ```
//! ns-3 reads it with `ifstream >>`, so line breaks do not matter and lines after the
//! last link are ignored (the shipped `mix/topology.txt` has notes there). Nodes not
//! listed as switches are hosts.
//!
//! The format has no ports, GUIDs or lengths. Reading numbers each node's ports in
//! the order its links appear, names nodes `host<id>` / `sw<id>`, derives GUIDs from
//! the id (switches 0x0002c90301000000 + id, hosts 0x0002c90302000000 + 16·id), and
//! turns each delay into a cable length at 5 ns/m (keeping the exact delay). Rates
//! are Ethernet, as HPCC simulates RoCE; writing an InfiniBand fabric keeps its data
//! rate (NDR 4x → 400Gbps).

use std::fmt::Write as _;

use wire::Guid;

use super::{ParseError, ParseErrorKind as K};
use crate::generate::GuidAlloc;
use crate::model::{DEFAULT_PS_PER_METRE, Fabric, NodeId, NodeKind, NodeSpec};
use crate::rate::LinkRate;

struct Tokens<'a> {
    file: &'a str,
    it: Box<dyn Iterator<Item = (usize, &'a str)> + 'a>,
    last_line: usize,
}

impl<'a> Tokens<'a> {
    fn new(file: &'a str, text: &'a str) -> Tokens<'a> {
        let it = text
            .lines()
            .enumerate()
            .flat_map(|(i, l)| l.split_whitespace().map(move |t| (i + 1, t)));
        Tokens {
            file,
            it: Box::new(it),
            last_line: 1,
        }
    }

    fn next(&mut self, what: &str) -> Result<(usize, &'a str), ParseError> {
        match self.it.next() {
            Some((l, t)) => {
                self.last_line = l;
                Ok((l, t))
            }
            None => Err(ParseError::new(
                self.file,
                self.last_line,
                K::Expected {
                    expected: what.into(),
                    found: "end of file".into(),
                },
            )),
        }
    }

    fn num(&mut self, what: &str) -> Result<(usize, u64), ParseError> {
        let (l, t) = self.next(what)?;
        t.parse().map(|n| (l, n)).map_err(|_| {
            ParseError::new(
                self.file,
                l,
                K::Expected {
                    expected: what.into(),
                    found: t.into(),
                },
            )
        })
    }
}

fn parse_rate(s: &str) -> Option<LinkRate> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let bps = match unit {
        "bps" | "b/s" => v,
        "kbps" | "Kbps" | "kb/s" => v * 1e3,
        "Mbps" | "Mb/s" => v * 1e6,
        "Gbps" | "Gb/s" => v * 1e9,
        "Tbps" | "Tb/s" => v * 1e12,
        _ => return None,
    };
    let g = bps / 1e9;
    if g.fract() != 0.0 || g > f64::from(u16::MAX) {
        return None;
    }
    LinkRate::eth(g as u16).ok()
}

fn parse_delay_ps(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-' || c == '+'))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1e12,
        "ms" => 1e9,
        "us" => 1e6,
        "ns" => 1e3,
        "ps" => 1.0,
        _ => return None,
    };
    let ps = (v * mult).round();
    (0.0..1e18).contains(&ps).then_some(ps as u64)
}

/// Read an ns-3 HPCC `topology.txt`.
pub fn read_hpcc(file: &str, text: &str) -> Result<Fabric, ParseError> {
    let mut t = Tokens::new(file, text);
    let (l0, n) = t.num("the node count (first of three numbers: nodes, switches, links)")?;
    let (_, s) = t.num("the switch count")?;
    let (_, m) = t.num("the link count")?;
    if n == 0 || n > 1 << 20 || s > n || m > 1 << 24 {
        return Err(ParseError::new(
            file,
            l0,
            K::Expected {
                expected: "a node count of 1 to 1048576 with no more switches than nodes".into(),
                found: format!("{n} {s} {m}"),
            },
        ));
    }
    let mut is_switch = vec![false; n as usize];
    for _ in 0..s {
        let (l, id) = t.num("a switch node id")?;
        if id >= n {
            return Err(ParseError::new(
                file,
                l,
                K::Expected {
                    expected: format!("a switch id below {n}"),
                    found: id.to_string(),
                },
            ));
        }
        if std::mem::replace(&mut is_switch[id as usize], true) {
            return Err(ParseError::new(
                file,
                l,
                K::Expected {
                    expected: "each switch id once".into(),
                    found: id.to_string(),
                },
            ));
        }
    }
    struct L {
        line: usize,
        a: u32,
        b: u32,
        rate: LinkRate,
        delay: u64,
    }
    let mut links = Vec::with_capacity(m as usize);
    let mut degree = vec![0u32; n as usize];
    for _ in 0..m {
        let (l, a) = t.num("a link source node id")?;
        let (_, b) = t.num("a link destination node id")?;
        for id in [a, b] {
            if id >= n {
                return Err(ParseError::new(
                    file,
                    l,
                    K::Expected {
                        expected: format!("a node id below {n}"),
                        found: id.to_string(),
                    },
                ));
            }
        }
        if a == b {
            return Err(ParseError::new(
                file,
                l,
                K::Expected {
                    expected: "a link between two different nodes".into(),
                    found: format!("{a} {b}"),
                },
            ));
        }
        let (lr, r) = t.next("a link rate such as 100Gbps")?;
        let rate = parse_rate(r).ok_or_else(|| ParseError::new(file, lr, K::UnknownSpeed { found: r.into() }))?;
        let (ld, d) = t.next("a link delay such as 1000ns")?;
        let delay = parse_delay_ps(d).ok_or_else(|| {
            ParseError::new(
                file,
                ld,
                K::Expected {
                    expected: "a delay such as 1000ns or 0.001ms".into(),
                    found: d.into(),
                },
            )
        })?;
        let (le, e) = t.next("a link error rate")?;
        let er: f64 = e.parse().map_err(|_| {
            ParseError::new(
                file,
                le,
                K::Expected {
                    expected: "an error rate number".into(),
                    found: e.into(),
                },
            )
        })?;
        if er != 0.0 {
            return Err(ParseError::new(
                file,
                le,
                K::Unsupported {
                    what: format!("a non-zero link error rate ({e})"),
                },
            ));
        }
        for id in [a, b] {
            degree[id as usize] += 1;
            if degree[id as usize] > 254 {
                return Err(ParseError::new(
                    file,
                    l,
                    K::Expected {
                        expected: "at most 254 links per node".into(),
                        found: format!("node {id}"),
                    },
                ));
            }
        }
        links.push(L {
            line: l,
            a: a as u32,
            b: b as u32,
            rate,
            delay,
        });
    }
    let mut fab = Fabric::new();
    for id in 0..n as usize {
        let ports = degree[id].max(1) as u8;
        let spec = if is_switch[id] {
            NodeSpec::switch(format!("sw{id}"), Guid(GuidAlloc::SWITCH_BASE + id as u64), ports)
        } else {
            let h = fab.add_host(format!("host{id}"));
            NodeSpec::ca(format!("host{id}"), Guid(GuidAlloc::CA_BASE + 16 * id as u64), ports).host(h)
        };
        fab.add_node(spec).map_err(|e| ParseError::new(file, l0, K::Model(e)))?;
    }
    let mut next = vec![1u8; n as usize];
    for l in links {
        let (pa, pb) = (next[l.a as usize], next[l.b as usize]);
        next[l.a as usize] += 1;
        next[l.b as usize] += 1;
        let len = l.delay as f64 / DEFAULT_PS_PER_METRE as f64;
        fab.connect_with_delay(NodeId(l.a), pa, NodeId(l.b), pb, l.rate, len, l.delay)
            .map_err(|e| ParseError::new(file, l.line, K::Model(e)))?;
    }
    Ok(fab)
}

/// Write an ns-3 HPCC `topology.txt`. Node ids are model node indices, so a file
/// read and written again keeps its numbering (and flow files stay valid); routers
/// are listed as switches.
pub fn write_hpcc(fab: &Fabric) -> String {
    let switches: Vec<String> = fab
        .node_ids()
        .filter(|&n| fab.node(n).kind != NodeKind::Ca)
        .map(|n| n.0.to_string())
        .collect();
    let mut out = String::with_capacity(fab.links.len() * 32 + 16);
    let _ = writeln!(out, "{} {} {}", fab.nodes.len(), switches.len(), fab.links.len());
    let _ = writeln!(out, "{}", switches.join(" "));
    for l in &fab.links {
        let bps = l.rate.data_bps();
        let rate = if bps % 1_000_000_000 == 0 {
            format!("{}Gbps", bps / 1_000_000_000)
        } else {
            format!("{bps}bps")
        };
        let delay = if l.delay_ps % 1000 == 0 {
            format!("{}ns", l.delay_ps / 1000)
        } else {
            format!("{}ps", l.delay_ps)
        };
        let _ = writeln!(out, "{} {} {rate} {delay} 0", l.a.node.0, l.b.node.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_delay_ps("0.001ms"), Some(1_000_000));
        assert_eq!(parse_delay_ps("1000ns"), Some(1_000_000));
        assert_eq!(parse_rate("100Gbps"), LinkRate::eth(100).ok());
        assert_eq!(parse_rate("7Gbps"), None);
    }

    #[test]
    fn extra_lines_after_links_are_ignored_like_ns3() {
        let f = read_hpcc(
            "t",
            "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\nnotes here\n",
        )
        .unwrap();
        assert_eq!(f.links.len(), 2);
        assert_eq!(f.count(NodeKind::Switch), 1);
        assert_eq!(f.links[0].length_m, 200.0);
    }
}
