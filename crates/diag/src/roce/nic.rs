//! NIC-side RoCE settings: `mlnx_qos` output and DCQCN/RoCE sysfs dumps.
//!
//! `mlnx_qos` (Mellanox/mlnx-tools `python/mlnx_qos`, `pretty_print()`; roce-config.md
//! §2.1) prints, among other lines:
//!
//! ```text
//! Priority trust state: dscp
//! dscp2prio mapping:
//!         prio:3 dscp:31,30,29,28,27,26,25,24,
//! Cable len: 7
//! PFC configuration:
//!         priority    0   1   2   3   4   5   6   7
//!         enabled     0   0   0   1   0   0   0   0
//!         buffer      0   0   0   1   0   0   0   0
//! tc: 3 ratelimit: unlimited, tsa: vendor
//!          priority:  3
//! ```
//!
//! There is no standard dump of the DCQCN sysfs tree, so rdmalab reads what
//! `grep -H . FILES` prints: one `<path>:<value>` line per file (blank lines and `#`
//! comments are skipped). For example:
//!
//! ```text
//! grep -H . /sys/class/net/eth0/ecn/roce_np/enable/* /sys/class/net/eth0/ecn/roce_rp/enable/* \
//!           /sys/class/net/eth0/ecn/roce_np/cnp_dscp /sys/class/net/eth0/ecn/roce_np/cnp_802p_prio \
//!           /sys/class/net/eth0/mtu /sys/class/infiniband/mlx5_0/tc/1/traffic_class \
//!           /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos
//! ```
//!
//! Paths understood (roce-config.md §2.2–2.3): `…/ecn/roce_np/enable/<p>`,
//! `…/ecn/roce_rp/enable/<p>`, `…/ecn/roce_np/cnp_dscp`, `…/ecn/roce_np/cnp_802p_prio`,
//! other `…/ecn/roce_{rp,np}/<param>` (kept as numbers), `/sys/class/net/<if>/mtu`,
//! `/sys/class/net/<if>/qos/trust`, `/sys/class/infiniband/<dev>/tc/<port>/traffic_class`
//! (`Global tclass=<n>`), `/sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_tos`
//! and the upstream debugfs `…/cc_params/np_cnp_dscp`, `np_cnp_prio`. Other paths are
//! ignored (a full `grep -r` of a device directory is fine).

use std::collections::BTreeMap;

use crate::roce::error::LintError;

/// How the NIC classifies received and sent RoCE packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// By the DSCP of the IP header.
    Dscp,
    /// By the VLAN PCP (ignores L3 marking).
    Pcp,
}

/// What one `mlnx_qos` output says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MlnxQos {
    /// Priority trust state.
    pub trust: Option<Trust>,
    /// DSCP → priority as printed (only when trust is dscp).
    pub dscp2prio: BTreeMap<u8, u8>,
    /// Cable length the NIC sizes its headroom for.
    pub cable_len_m: Option<u32>,
    /// PFC enabled per priority 0..7.
    pub pfc: Option<[bool; 8]>,
    /// Receive buffer per priority 0..7.
    pub buffer: Option<[u8; 8]>,
    /// Priority → TC.
    pub prio_tc: BTreeMap<u8, u8>,
    /// TC → transmission selection (`strict`, `ets`, `vendor`).
    pub tsa: BTreeMap<u8, String>,
}

impl MlnxQos {
    /// The NIC priority of `dscp`: the explicit map, else the driver default
    /// `dscp >> 3` (roce-config.md §2.1, seen in the captured sample).
    pub fn prio_of_dscp(&self, dscp: u8) -> u8 {
        self.dscp2prio.get(&dscp).copied().unwrap_or(dscp >> 3)
    }

    /// Parse `mlnx_qos` output.
    pub fn parse(file: &str, text: &str) -> Result<MlnxQos, LintError> {
        let err = |line: usize, expected: &str, got: &str| LintError::Nic {
            file: file.to_string(),
            line,
            expected: expected.to_string(),
            got: got.chars().take(80).collect(),
        };
        let mut q = MlnxQos::default();
        let mut saw_any = false;
        let mut cur_tc: Option<u8> = None;
        for (i, raw) in text.lines().enumerate() {
            let ln = i + 1;
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(v) = line.strip_prefix("Priority trust state:") {
                saw_any = true;
                q.trust = Some(match v.trim() {
                    "dscp" => Trust::Dscp,
                    "pcp" => Trust::Pcp,
                    other => return Err(err(ln, "trust state dscp or pcp", other)),
                });
            } else if let Some(v) = line.strip_prefix("prio:") {
                // "prio:3 dscp:31,30,29,28,27,26,25,24,"
                let (p, rest) = v.split_once(' ').ok_or_else(|| err(ln, "prio:<n> dscp:<list>", line))?;
                let p: u8 = p
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&p| p < 8)
                    .ok_or_else(|| err(ln, "a priority 0..7", p))?;
                let list = rest
                    .trim()
                    .strip_prefix("dscp:")
                    .ok_or_else(|| err(ln, "dscp:<list>", rest))?;
                for d in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let d: u8 = d
                        .parse()
                        .ok()
                        .filter(|&d| d < 64)
                        .ok_or_else(|| err(ln, "a DSCP 0..63", d))?;
                    q.dscp2prio.insert(d, p);
                }
            } else if let Some(v) = line.strip_prefix("Cable len:") {
                saw_any = true;
                q.cable_len_m = Some(v.trim().parse().map_err(|_| err(ln, "a cable length in metres", v))?);
            } else if line.starts_with("PFC configuration") {
                saw_any = true;
            } else if let Some(v) = line.strip_prefix("enabled") {
                let vals = eight(v).ok_or_else(|| err(ln, "eight 0/1 values after 'enabled'", v))?;
                if vals.iter().any(|&x| x > 1) {
                    return Err(err(ln, "0 or 1 per priority", v));
                }
                q.pfc = Some(vals.map(|x| x == 1));
            } else if let Some(v) = line.strip_prefix("buffer") {
                q.buffer = Some(eight(v).ok_or_else(|| err(ln, "eight buffer numbers after 'buffer'", v))?);
            } else if let Some(v) = line.strip_prefix("tc:") {
                // "tc: 3 ratelimit: unlimited, tsa: vendor"
                let tc_s = v.split_whitespace().next().unwrap_or("");
                let tc: u8 = tc_s
                    .parse()
                    .ok()
                    .filter(|&t| t < 8)
                    .ok_or_else(|| err(ln, "a TC 0..7", tc_s))?;
                cur_tc = Some(tc);
                if let Some((_, tsa)) = v.split_once("tsa:") {
                    let tsa = tsa.split(',').next().unwrap_or("").trim().to_string();
                    q.tsa.insert(tc, tsa);
                }
            } else if let Some(v) = line.strip_prefix("priority:") {
                let tc = cur_tc.ok_or_else(|| err(ln, "a 'tc:' line before 'priority:'", line))?;
                for p in v.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()) {
                    let p: u8 = p
                        .parse()
                        .ok()
                        .filter(|&p| p < 8)
                        .ok_or_else(|| err(ln, "a priority 0..7", p))?;
                    q.prio_tc.insert(p, tc);
                }
            }
            // Other lines (DCBX mode, header rows, buffer sizes) carry nothing the rules use.
        }
        if !saw_any {
            return Err(err(
                1,
                "mlnx_qos output (a 'Priority trust state:' or 'PFC configuration:' line)",
                "",
            ));
        }
        Ok(q)
    }
}

/// Eight whitespace-separated numbers.
fn eight(s: &str) -> Option<[u8; 8]> {
    let v: Vec<u8> = s.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
    v.try_into().ok()
}

/// RoCE/DCQCN settings of one interface or device, from a sysfs dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsNic {
    /// Interface (`eth0`) or RDMA device (`mlx5_0`) name.
    pub name: String,
    /// Notification point (CNP generation) enabled per priority.
    pub np_enable: BTreeMap<u8, bool>,
    /// Reaction point (rate limiting) enabled per priority.
    pub rp_enable: BTreeMap<u8, bool>,
    /// DSCP of the CNPs it sends.
    pub cnp_dscp: Option<u8>,
    /// 802.1p priority of the CNPs it sends.
    pub cnp_prio: Option<u8>,
    /// Interface MTU.
    pub mtu: Option<u32>,
    /// ToS byte RoCE traffic is sent with (traffic_class or default_roce_tos).
    pub tos: Option<u8>,
    /// QoS trust (sysfs qos/trust).
    pub trust: Option<Trust>,
    /// Other numeric DCQCN parameters, `roce_rp/rpg_gd` style keys.
    pub params: BTreeMap<String, u64>,
    /// First line that mentioned this NIC.
    pub line: usize,
}

/// Parse a `path:value` sysfs dump into one record per interface/device, in name order.
pub fn parse_sysfs(file: &str, text: &str) -> Result<Vec<SysfsNic>, LintError> {
    let err = |line: usize, expected: &str, got: &str| LintError::Nic {
        file: file.to_string(),
        line,
        expected: expected.to_string(),
        got: got.chars().take(80).collect(),
    };
    let mut nics: BTreeMap<String, SysfsNic> = BTreeMap::new();
    let mut any = false;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (path, value) = line.split_once(':').ok_or_else(|| err(ln, "<path>:<value>", line))?;
        if !path.starts_with('/') {
            return Err(err(ln, "an absolute sysfs path before ':'", path));
        }
        let value = value.trim();
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let num = |v: &str| -> Result<u64, LintError> { v.parse().map_err(|_| err(ln, "a number", v)) };
        let small = |v: &str, max: u64, what: &str| -> Result<u8, LintError> {
            let n = num(v)?;
            if n > max { Err(err(ln, what, v)) } else { Ok(n as u8) }
        };
        // /sys/class/net/<if>/...
        let (name, rest): (&str, &[&str]) = match parts.as_slice() {
            ["sys", "class", "net", ifn, rest @ ..] => (ifn, rest),
            ["sys", "class", "infiniband", dev, rest @ ..] => (dev, rest),
            ["sys", "kernel", "config", "rdma_cm", dev, rest @ ..] => (dev, rest),
            ["sys", "kernel", "debug", "mlx5", pci, rest @ ..] => (pci, rest),
            _ => continue,
        };
        let nic = nics.entry(name.to_string()).or_insert_with(|| SysfsNic {
            name: name.to_string(),
            line: ln,
            ..SysfsNic::default()
        });
        any = true;
        match rest {
            ["ecn", proto @ ("roce_np" | "roce_rp"), "enable", p] => {
                let p = small(p, 7, "a priority 0..7 in the path")?;
                let on = small(value, 1, "0 or 1")? == 1;
                if *proto == "roce_np" {
                    nic.np_enable.insert(p, on);
                } else {
                    nic.rp_enable.insert(p, on);
                }
            }
            ["ecn", "roce_np", "cnp_dscp"] | ["cc_params", "np_cnp_dscp"] => {
                nic.cnp_dscp = Some(small(value, 63, "a DSCP 0..63")?)
            }
            ["ecn", "roce_np", "cnp_802p_prio"] | ["cc_params", "np_cnp_prio"] => {
                nic.cnp_prio = Some(small(value, 7, "a priority 0..7")?)
            }
            ["ecn", proto @ ("roce_np" | "roce_rp"), param] => {
                nic.params.insert(format!("{proto}/{param}"), num(value)?);
            }
            ["mtu"] => nic.mtu = Some(num(value)?.min(u32::MAX as u64) as u32),
            ["qos", "trust"] => {
                nic.trust = Some(match value {
                    "dscp" => Trust::Dscp,
                    "pcp" => Trust::Pcp,
                    other => return Err(err(ln, "dscp or pcp", other)),
                })
            }
            ["tc", _, "traffic_class"] => {
                // "Global tclass=106"; an empty override reads as nothing.
                let v = value.rsplit('=').next().unwrap_or("").trim();
                if !v.is_empty() {
                    nic.tos = Some(small(v, 255, "a ToS byte 0..255")?);
                }
            }
            ["ports", _, "default_roce_tos"] => nic.tos = Some(small(value, 255, "a ToS byte 0..255")?),
            _ => {}
        }
    }
    if !any {
        return Err(err(
            1,
            "sysfs dump lines such as /sys/class/net/<if>/ecn/roce_np/enable/3:1",
            "",
        ));
    }
    Ok(nics.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
        prio:0 dscp:07,06,05,04,03,02,01,00,
        prio:3 dscp:31,30,29,28,27,26,25,24,
        prio:6 dscp:55,54,53,52,51,50,49,48,
Cable len: 7
PFC configuration:
        priority    0   1   2   3   4   5   6   7
        enabled     0   0   0   1   0   0   0   0
tc: 0 ratelimit: unlimited, tsa: vendor
         priority:  1
tc: 1 ratelimit: unlimited, tsa: vendor
         priority:  0
tc: 3 ratelimit: unlimited, tsa: strict
         priority:  3
";

    #[test]
    fn parses_mlnx_qos_sample() {
        let q = MlnxQos::parse("q.txt", SAMPLE).unwrap();
        assert_eq!(q.trust, Some(Trust::Dscp));
        assert_eq!(q.prio_of_dscp(26), 3);
        assert_eq!(q.prio_of_dscp(48), 6);
        assert_eq!(q.cable_len_m, Some(7));
        assert_eq!(q.pfc.unwrap(), [false, false, false, true, false, false, false, false]);
        assert_eq!(q.prio_tc.get(&0), Some(&1));
        assert_eq!(q.tsa.get(&3).map(String::as_str), Some("strict"));
    }

    #[test]
    fn mlnx_qos_errors_name_the_line() {
        let bad = SAMPLE.replace("enabled     0   0   0   1", "enabled     0   0   0   x");
        match MlnxQos::parse("q.txt", &bad).unwrap_err() {
            LintError::Nic { line, .. } => assert_eq!(line, 10),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn parses_sysfs_dump() {
        let t = "/sys/class/net/eth0/ecn/roce_np/enable/3:1
/sys/class/net/eth0/ecn/roce_rp/enable/3:0
/sys/class/net/eth0/ecn/roce_np/cnp_dscp:48
/sys/class/net/eth0/ecn/roce_rp/rpg_gd:11
/sys/class/net/eth0/mtu:9000
/sys/class/infiniband/mlx5_0/tc/1/traffic_class:Global tclass=106
";
        let v = parse_sysfs("s.txt", t).unwrap();
        assert_eq!(v.len(), 2);
        let eth = &v[0];
        assert_eq!(eth.name, "eth0");
        assert_eq!(eth.np_enable.get(&3), Some(&true));
        assert_eq!(eth.rp_enable.get(&3), Some(&false));
        assert_eq!(eth.cnp_dscp, Some(48));
        assert_eq!(eth.mtu, Some(9000));
        assert_eq!(eth.params.get("roce_rp/rpg_gd"), Some(&11));
        assert_eq!(v[1].tos, Some(106));
        assert!(matches!(
            parse_sysfs("s", "/sys/class/net/eth0/mtu:lots"),
            Err(LintError::Nic { line: 1, .. })
        ));
    }
}
