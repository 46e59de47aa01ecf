//! ns-3 HPCC simulator files (alibaba-edu/High-Precision-Congestion-Control,
//! `simulation/scratch/third.cc`; grammar and every key in the shared simulators
//! reference §1.1.2–§1.1.7): the config file, the flow file and the trace-node
//! file in; `fct.txt` and `pfc.txt` out in ns-3's layout. The topology file is
//! read by `fabric::format::hpcc`.
//!
//! The config is a stream of `KEY value…` tokens. ns-3 skips keys it does not
//! know; here an unknown key (with the rest of its line) becomes a named
//! [`Warning`], and so does every key whose setting rdmalab does not model
//! ([`HpccConfig::unsupported`]), so nothing is silently ignored.

use std::fmt::Write as _;

use sim::engine::Time;
use sim::roce::dcqcn::{AlphaUpdate, Clamp, DcqcnParams, Decrease, Red};
/// The records the RoCE world makes, one per line of fct.txt and pfc.txt.
pub use sim::roce::net::{FctRecord, PfcRecord};

/// A malformed HPCC input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("read {file}:{line}: {what}")]
pub struct HpccError {
    /// File name as given.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What was expected and found.
    pub what: String,
}

/// Something the run will not do as ns-3 would.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    /// File and line.
    pub at: String,
    /// The key.
    pub key: String,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.at, self.key, self.why)
    }
}

struct Tok<'a> {
    file: &'a str,
    toks: Vec<(usize, &'a str)>,
    i: usize,
}

impl<'a> Tok<'a> {
    fn new(file: &'a str, text: &'a str) -> Tok<'a> {
        let toks = text
            .lines()
            .enumerate()
            .flat_map(|(n, l)| l.split_whitespace().map(move |t| (n + 1, t)))
            .collect();
        Tok { file, toks, i: 0 }
    }
    fn peek(&self) -> Option<(usize, &'a str)> {
        self.toks.get(self.i).copied()
    }
    fn last_line(&self) -> usize {
        self.toks.last().map_or(1, |t| t.0)
    }
    fn err(&self, line: usize, what: impl Into<String>) -> HpccError {
        HpccError {
            file: self.file.to_string(),
            line,
            what: what.into(),
        }
    }
    fn next(&mut self, what: &str) -> Result<(usize, &'a str), HpccError> {
        let t = self
            .peek()
            .ok_or_else(|| self.err(self.last_line(), format!("expected {what}, found the end of the file")))?;
        self.i += 1;
        Ok(t)
    }
    fn parse<T: std::str::FromStr>(&mut self, what: &str) -> Result<(usize, T), HpccError> {
        let (l, s) = self.next(what)?;
        s.parse()
            .map(|v| (l, v))
            .map_err(|_| self.err(l, format!("expected {what}, found {s:?}")))
    }
    fn rest_of_line(&mut self, line: usize) -> Vec<&'a str> {
        let mut v = Vec::new();
        while let Some((l, t)) = self.peek() {
            if l != line {
                break;
            }
            v.push(t);
            self.i += 1;
        }
        v
    }
}

/// Parse an ns-3 DataRate string (`100Gbps`, `50Mb/s`, `1000Mb/s`, `25G`) or a
/// plain number of bits per second.
pub fn parse_rate(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    // "1e9" is a number; "25G" splits at 'G'.
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let mult = match unit {
        "" | "bps" | "b/s" => 1.0,
        "kbps" | "Kbps" | "kb/s" | "Kb/s" | "K" | "k" => 1e3,
        "Mbps" | "Mb/s" | "M" => 1e6,
        "Gbps" | "Gb/s" | "G" => 1e9,
        "Tbps" | "Tb/s" | "T" => 1e12,
        "KBps" | "KB/s" => 8e3,
        "MBps" | "MB/s" => 8e6,
        "GBps" | "GB/s" => 8e9,
        _ => return None,
    };
    let bps = v * mult;
    (0.0..1e16).contains(&bps).then_some(bps.round() as u64)
}

/// One per-speed map (`KMAX_MAP 2 100000000000 1600 400000000000 6400`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateMap(pub Vec<(u64, f64)>);

impl RateMap {
    /// The value for a link of `bps`.
    pub fn get(&self, bps: u64) -> Option<f64> {
        self.0.iter().find(|(r, _)| *r == bps).map(|(_, v)| *v)
    }
}

/// Every key `third.cc` parses (reference §1.1.4), with where it was set.
/// `None` = absent (ns-3's default applies; see the `*_or_default` helpers).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HpccConfig {
    pub enable_qcn: Option<bool>,
    pub use_dynamic_pfc_threshold: Option<bool>,
    pub clamp_target_rate: Option<bool>,
    /// µs.
    pub pause_time_us: Option<f64>,
    pub data_rate: Option<String>,
    pub link_delay: Option<String>,
    pub packet_payload_size: Option<u32>,
    pub l2_chunk_size: Option<u32>,
    pub l2_ack_interval: Option<u32>,
    pub l2_back_to_zero: Option<bool>,
    pub topology_file: Option<String>,
    pub flow_file: Option<String>,
    pub trace_file: Option<String>,
    pub trace_output_file: Option<String>,
    pub fct_output_file: Option<String>,
    pub pfc_output_file: Option<String>,
    /// Seconds.
    pub simulator_stop_time: Option<f64>,
    pub cc_mode: Option<u32>,
    /// µs.
    pub alpha_resume_interval: Option<f64>,
    /// µs.
    pub rate_decrease_interval: Option<f64>,
    /// µs.
    pub rp_timer: Option<f64>,
    pub ewma_gain: Option<f64>,
    pub fast_recovery_times: Option<u32>,
    /// bits/s.
    pub rate_ai: Option<u64>,
    pub rate_hai: Option<u64>,
    pub min_rate: Option<u64>,
    pub dctcp_rate_ai: Option<u64>,
    pub error_rate_per_link: Option<f64>,
    pub has_win: Option<bool>,
    pub global_t: Option<bool>,
    pub var_win: Option<bool>,
    pub fast_react: Option<bool>,
    pub u_target: Option<f64>,
    pub mi_thresh: Option<u32>,
    pub int_multi: Option<u32>,
    pub multi_rate: Option<bool>,
    pub sample_feedback: Option<bool>,
    pub pint_log_base: Option<f64>,
    pub pint_prob: Option<f64>,
    pub rate_bound: Option<bool>,
    pub ack_high_prio: Option<bool>,
    /// (µs after 2 s, node a, node b); `0 0 0` = none.
    pub link_down: Option<(u64, u32, u32)>,
    pub enable_trace: Option<bool>,
    /// KB (1000 B) per link rate.
    pub kmax_map: Option<RateMap>,
    pub kmin_map: Option<RateMap>,
    pub pmax_map: Option<RateMap>,
    /// MB (2^20 B).
    pub buffer_size_mb: Option<u64>,
    pub qlen_mon_file: Option<String>,
    pub qlen_mon_start: Option<u64>,
    pub qlen_mon_end: Option<u64>,
    /// Line of each key that was set, for warnings.
    pub lines: Vec<(String, usize)>,
    /// Unknown keys.
    pub warnings: Vec<Warning>,
    /// The file name.
    pub file: String,
}

fn bool01(t: &mut Tok<'_>, key: &str) -> Result<bool, HpccError> {
    let (l, v): (usize, u32) = t.parse(&format!("0 or 1 after {key}"))?;
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(t.err(l, format!("expected 0 or 1 after {key}, found {v}"))),
    }
}

fn rate(t: &mut Tok<'_>, key: &str) -> Result<u64, HpccError> {
    let (l, s) = t.next(&format!("a rate such as 100Mb/s after {key}"))?;
    parse_rate(s).ok_or_else(|| t.err(l, format!("expected a rate such as 100Mb/s after {key}, found {s:?}")))
}

fn rate_map(t: &mut Tok<'_>, key: &str) -> Result<RateMap, HpccError> {
    let (l, n): (usize, u32) = t.parse(&format!("the entry count after {key}"))?;
    if n > 64 {
        return Err(t.err(l, format!("expected at most 64 entries in {key}, found {n}")));
    }
    let mut v = Vec::new();
    for _ in 0..n {
        let r = rate(t, key)?;
        let (_, x): (usize, f64) = t.parse(&format!("a value in {key}"))?;
        v.push((r, x));
    }
    Ok(RateMap(v))
}

impl HpccConfig {
    /// Parse a config file's text (`file` names it in errors and warnings).
    pub fn parse(file: &str, text: &str) -> Result<HpccConfig, HpccError> {
        let mut t = Tok::new(file, text);
        let mut c = HpccConfig {
            file: file.to_string(),
            ..HpccConfig::default()
        };
        while let Some((line, key)) = t.peek() {
            t.i += 1;
            macro_rules! num {
                ($ty:ty) => {
                    t.parse::<$ty>(&format!("a number after {key}"))?.1
                };
            }
            macro_rules! string {
                () => {
                    t.next(&format!("a path after {key}"))?.1.to_string()
                };
            }
            match key {
                "ENABLE_QCN" => c.enable_qcn = Some(bool01(&mut t, key)?),
                "USE_DYNAMIC_PFC_THRESHOLD" => c.use_dynamic_pfc_threshold = Some(bool01(&mut t, key)?),
                "CLAMP_TARGET_RATE" => c.clamp_target_rate = Some(bool01(&mut t, key)?),
                "PAUSE_TIME" => c.pause_time_us = Some(num!(f64)),
                "DATA_RATE" => c.data_rate = Some(string!()),
                "LINK_DELAY" => c.link_delay = Some(string!()),
                "PACKET_PAYLOAD_SIZE" => c.packet_payload_size = Some(num!(u32)),
                "L2_CHUNK_SIZE" => c.l2_chunk_size = Some(num!(u32)),
                "L2_ACK_INTERVAL" => c.l2_ack_interval = Some(num!(u32)),
                "L2_BACK_TO_ZERO" => c.l2_back_to_zero = Some(bool01(&mut t, key)?),
                "TOPOLOGY_FILE" => c.topology_file = Some(string!()),
                "FLOW_FILE" => c.flow_file = Some(string!()),
                "TRACE_FILE" => c.trace_file = Some(string!()),
                "TRACE_OUTPUT_FILE" => c.trace_output_file = Some(string!()),
                "FCT_OUTPUT_FILE" => c.fct_output_file = Some(string!()),
                "PFC_OUTPUT_FILE" => c.pfc_output_file = Some(string!()),
                "SIMULATOR_STOP_TIME" => c.simulator_stop_time = Some(num!(f64)),
                "CC_MODE" => c.cc_mode = Some(num!(u32)),
                "ALPHA_RESUME_INTERVAL" => c.alpha_resume_interval = Some(num!(f64)),
                "RATE_DECREASE_INTERVAL" => c.rate_decrease_interval = Some(num!(f64)),
                "RP_TIMER" => c.rp_timer = Some(num!(f64)),
                "EWMA_GAIN" => c.ewma_gain = Some(num!(f64)),
                "FAST_RECOVERY_TIMES" => c.fast_recovery_times = Some(num!(u32)),
                "RATE_AI" => c.rate_ai = Some(rate(&mut t, key)?),
                "RATE_HAI" => c.rate_hai = Some(rate(&mut t, key)?),
                "MIN_RATE" => c.min_rate = Some(rate(&mut t, key)?),
                "DCTCP_RATE_AI" => c.dctcp_rate_ai = Some(rate(&mut t, key)?),
                "ERROR_RATE_PER_LINK" => c.error_rate_per_link = Some(num!(f64)),
                "HAS_WIN" => c.has_win = Some(bool01(&mut t, key)?),
                "GLOBAL_T" => c.global_t = Some(bool01(&mut t, key)?),
                "VAR_WIN" => c.var_win = Some(bool01(&mut t, key)?),
                "FAST_REACT" => c.fast_react = Some(bool01(&mut t, key)?),
                "U_TARGET" => c.u_target = Some(num!(f64)),
                "MI_THRESH" => c.mi_thresh = Some(num!(u32)),
                "INT_MULTI" => c.int_multi = Some(num!(u32)),
                "MULTI_RATE" => c.multi_rate = Some(bool01(&mut t, key)?),
                "SAMPLE_FEEDBACK" => c.sample_feedback = Some(bool01(&mut t, key)?),
                "PINT_LOG_BASE" => c.pint_log_base = Some(num!(f64)),
                "PINT_PROB" => c.pint_prob = Some(num!(f64)),
                "RATE_BOUND" => c.rate_bound = Some(bool01(&mut t, key)?),
                "ACK_HIGH_PRIO" => c.ack_high_prio = Some(bool01(&mut t, key)?),
                "LINK_DOWN" => {
                    let a = num!(u64);
                    let b = num!(u32);
                    let d = num!(u32);
                    c.link_down = Some((a, b, d));
                }
                "ENABLE_TRACE" => c.enable_trace = Some(bool01(&mut t, key)?),
                "KMAX_MAP" => c.kmax_map = Some(rate_map(&mut t, key)?),
                "KMIN_MAP" => c.kmin_map = Some(rate_map(&mut t, key)?),
                "PMAX_MAP" => c.pmax_map = Some(rate_map(&mut t, key)?),
                "BUFFER_SIZE" => {
                    let (l, mb) = t.parse::<u64>(&format!("a number after {key}"))?;
                    // The switch MMU counts a priority group's bytes in 32 bits.
                    if mb >= 4096 {
                        return Err(t.err(l, format!("BUFFER_SIZE {mb} MB: at most 4095 MB is modelled")));
                    }
                    c.buffer_size_mb = Some(mb);
                }
                "QLEN_MON_FILE" => c.qlen_mon_file = Some(string!()),
                "QLEN_MON_START" => c.qlen_mon_start = Some(num!(u64)),
                "QLEN_MON_END" => c.qlen_mon_end = Some(num!(u64)),
                _ => {
                    let rest = t.rest_of_line(line);
                    c.warnings.push(Warning {
                        at: format!("{file}:{line}"),
                        key: key.to_string(),
                        why: format!(
                            "unknown key (ns-3 third.cc ignores it too); its value{} {} skipped",
                            if rest.len() == 1 { " was" } else { "s were" },
                            if rest.is_empty() {
                                "(none)".to_string()
                            } else {
                                rest.join(" ")
                            }
                        ),
                    });
                    continue;
                }
            }
            c.lines.push((key.to_string(), line));
        }
        Ok(c)
    }

    /// `file:line` where `key` was last set (`file:0` if absent).
    pub fn at(&self, key: &str) -> String {
        let line = self.lines.iter().rev().find(|(k, _)| k == key).map_or(0, |x| x.1);
        format!("{}:{line}", self.file)
    }

    /// Keys set to something rdmalab does not model, each named with why, plus
    /// the unknown keys found while parsing.
    pub fn unsupported(&self) -> Vec<Warning> {
        let mut w = self.warnings.clone();
        let mut add = |key: &str, why: &str| {
            w.push(Warning {
                at: self.at(key),
                key: key.to_string(),
                why: why.to_string(),
            })
        };
        let mode = self.cc_mode.unwrap_or(1);
        match mode {
            1 | 3 | 8 => {}
            7 => add(
                "CC_MODE",
                "7 (TIMELY) is not modelled; only 1 (DCQCN), 3 (HPCC) and 8 (DCTCP) are",
            ),
            10 => add(
                "CC_MODE",
                "10 (HPCC-PINT) is not modelled; only 1 (DCQCN), 3 (HPCC) and 8 (DCTCP) are",
            ),
            _ => add(
                "CC_MODE",
                "unknown congestion-control mode; only 1 (DCQCN), 3 (HPCC) and 8 (DCTCP) are modelled",
            ),
        }
        if self.has_win.unwrap_or(true) && (mode == 1 || mode == 8) && self.lines.iter().any(|(k, _)| k == "HAS_WIN") {
            add(
                "HAS_WIN",
                if mode == 1 {
                    "the BDP window is not modelled for DCQCN; flows are paced by rate only"
                } else {
                    "the BDP window is not modelled for DCTCP; flows are paced by rate only"
                },
            );
        }
        if mode == 3 {
            if self.multi_rate.unwrap_or(true) {
                add(
                    "MULTI_RATE",
                    "1 (a rate per hop) is not modelled; HPCC runs with one rate from the most utilised hop",
                );
            }
            if self.int_multi.is_some_and(|m| m != 1) {
                add(
                    "INT_MULTI",
                    "INT records are carried exact (no 80/128-byte units); the multiplier has no effect",
                );
            }
            if self.global_t == Some(false) {
                add(
                    "GLOBAL_T",
                    "0 (a base RTT per host pair) is not modelled; every QP uses the largest pair RTT",
                );
            }
            for (k, set) in [
                ("PINT_LOG_BASE", self.pint_log_base.is_some()),
                ("PINT_PROB", self.pint_prob.is_some()),
            ] {
                if set {
                    add(k, "PINT parameter: unused under HPCC (ns-3 ignores it as well)");
                }
            }
            for (k, set) in [
                ("ALPHA_RESUME_INTERVAL", self.alpha_resume_interval.is_some()),
                ("RATE_DECREASE_INTERVAL", self.rate_decrease_interval.is_some()),
                ("CLAMP_TARGET_RATE", self.clamp_target_rate.is_some()),
                ("RP_TIMER", self.rp_timer.is_some()),
                ("EWMA_GAIN", self.ewma_gain.is_some()),
                ("FAST_RECOVERY_TIMES", self.fast_recovery_times.is_some()),
                ("RATE_HAI", self.rate_hai.is_some()),
                ("DCTCP_RATE_AI", self.dctcp_rate_ai.is_some()),
            ] {
                if set {
                    add(k, "DCQCN/DCTCP parameter: unused under HPCC (ns-3 ignores it as well)");
                }
            }
        }
        if self.var_win == Some(true) && mode != 3 {
            add("VAR_WIN", "variable windows are not modelled");
        }
        if self.enable_trace.unwrap_or(true) {
            add(
                "ENABLE_TRACE",
                "the binary packet trace (TRACE_OUTPUT_FILE) is not written; use the pcap capture instead",
            );
        }
        if self.error_rate_per_link.is_some_and(|e| e != 0.0) {
            add("ERROR_RATE_PER_LINK", "random per-link loss is not modelled");
        }
        if self.qlen_mon_file.is_some() {
            add("QLEN_MON_FILE", "the queue-length histogram file is not written");
        }
        if (mode == 1 || mode == 8) && self.ewma_gain.is_none() {
            add(
                "EWMA_GAIN",
                "absent: third.cc's default `1 / 16` is integer division (g = 0); rdmalab uses 0 as ns-3 does",
            );
        }
        for (k, set) in [
            ("FAST_REACT", self.fast_react.is_some()),
            ("U_TARGET", self.u_target.is_some()),
            ("MI_THRESH", self.mi_thresh.is_some()),
            ("INT_MULTI", self.int_multi.is_some()),
            ("MULTI_RATE", self.multi_rate.is_some()),
            ("SAMPLE_FEEDBACK", self.sample_feedback.is_some()),
            ("PINT_LOG_BASE", self.pint_log_base.is_some()),
            ("PINT_PROB", self.pint_prob.is_some()),
        ] {
            if set && mode == 1 {
                add(k, "HPCC/PINT parameter: unused under DCQCN (ns-3 ignores it as well)");
            } else if set && mode == 8 {
                add(k, "HPCC/PINT parameter: unused under DCTCP (ns-3 ignores it as well)");
            }
        }
        w
    }

    /// DCQCN parameters for a NIC of `line_bps` as ns-3 would run them
    /// (reference §1.1.6; absent keys take `third.cc`'s defaults of §1.1.4, the
    /// RdmaHw attribute defaults where third.cc leaves them uninitialised).
    pub fn dcqcn(&self, line_bps: u64) -> DcqcnParams {
        let us = |v: Option<f64>, d: f64| Time((v.unwrap_or(d) * 1e6).round() as u64);
        DcqcnParams {
            name: "hpcc-config",
            line_bps: line_bps as f64,
            g: self.ewma_gain.unwrap_or(0.0),
            initial_alpha: 1.0,
            alpha: AlphaUpdate::Periodic {
                period: us(self.alpha_resume_interval, 55.0),
            },
            decrease: Decrease::Periodic {
                period: us(self.rate_decrease_interval, 4.0),
            },
            clamp: if self.clamp_target_rate == Some(true) {
                Clamp::Always
            } else {
                Clamp::AfterIncrease
            },
            increase_timer: us(self.rp_timer, 1500.0),
            byte_counter: None,
            fast_recovery: self.fast_recovery_times.unwrap_or(5),
            rate_ai_bps: self.rate_ai.unwrap_or(5_000_000) as f64,
            rate_hai_bps: self.rate_hai.unwrap_or(50_000_000) as f64,
            min_rate_bps: self.min_rate.unwrap_or(100_000_000) as f64,
            min_dec_factor: 0.5,
            first_cnp_alpha: Some(1.0),
            first_cnp_rate_factor: Some(1.0),
            cnp_interval: Time::ZERO,
            cnp_per_port: false,
            // ns-3 reads RATE_AI and RATE_HAI as absolute rates from the config
            scale_increase_with_line: false,
            red: self.red(line_bps).unwrap_or(Red {
                kmin: u64::MAX,
                kmax: u64::MAX,
                pmax: 0.0,
            }),
        }
    }

    /// HPCC parameters (`CC_MODE 3`) for a NIC of `line_bps` with base RTT
    /// `base_rtt`: `U_TARGET` (third.cc default 0.95), `MI_THRESH` (5),
    /// `RATE_AI` (5 Mb/s, the RdmaHw attribute default), `MIN_RATE` (100 Mb/s),
    /// `FAST_REACT` (1), `SAMPLE_FEEDBACK` (0).
    /// `HAS_WIN` (1) gives a BDP window, `VAR_WIN` (0) scales it with the rate.
    pub fn hpcc(&self, line_bps: u64, base_rtt: Time) -> sim::roce::hpcc_cc::HpccParams {
        sim::roce::hpcc_cc::HpccParams {
            line_bps: line_bps as f64,
            base_rtt,
            eta: self.u_target.unwrap_or(0.95),
            max_stage: self.mi_thresh.unwrap_or(5),
            rate_ai_bps: self.rate_ai.unwrap_or(5_000_000) as f64,
            min_rate_bps: self.min_rate.unwrap_or(100_000_000) as f64,
            fast_react: self.fast_react.unwrap_or(true),
            sample_feedback: self.sample_feedback.unwrap_or(false),
            // third.cc: m_win = the largest pair BDP, rtt·bw/8 (NIC rate).
            window_bytes: if self.has_win.unwrap_or(true) {
                (line_bps as u128 * u128::from(base_rtt.0) / 8 / 1_000_000_000_000) as u64
            } else {
                0
            },
            var_win: self.var_win.unwrap_or(false),
        }
    }

    /// DCTCP parameters (`CC_MODE 8`) for a NIC of `line_bps`: `EWMA_GAIN`,
    /// `DCTCP_RATE_AI` (third.cc default 1000 Mb/s), `MIN_RATE` (100 Mb/s).
    pub fn dctcp(&self, line_bps: u64) -> sim::roce::dctcp::DctcpParams {
        sim::roce::dctcp::DctcpParams {
            line_bps: line_bps as f64,
            g: self.ewma_gain.unwrap_or(0.0),
            rate_ai_bps: self.dctcp_rate_ai.unwrap_or(1_000_000_000) as f64,
            min_rate_bps: self.min_rate.unwrap_or(100_000_000) as f64,
            red: self.red(line_bps).unwrap_or(Red {
                kmin: u64::MAX,
                kmax: u64::MAX,
                pmax: 0.0,
            }),
        }
    }

    /// RED for a link of `bps` from the K/P maps (K in KB = 1000 B).
    pub fn red(&self, bps: u64) -> Option<Red> {
        let kmin = self.kmin_map.as_ref()?.get(bps)?;
        let kmax = self.kmax_map.as_ref()?.get(bps)?;
        let pmax = self.pmax_map.as_ref()?.get(bps)?;
        Some(Red {
            kmin: (kmin * 1000.0) as u64,
            kmax: (kmax * 1000.0) as u64,
            pmax,
        })
    }

    /// Check that the K/P maps cover every link rate in use (ns-3 asserts).
    pub fn check_maps(&self, rates: &[u64]) -> Result<(), HpccError> {
        if !self.enable_qcn.unwrap_or(true) {
            return Ok(());
        }
        for &r in rates {
            if self.red(r).is_none() {
                let line = self.lines.iter().find(|(k, _)| k == "KMAX_MAP").map_or(1, |x| x.1);
                return Err(HpccError {
                    file: self.file.clone(),
                    line,
                    what: format!(
                        "KMAX_MAP, KMIN_MAP and PMAX_MAP must each have an entry for every link rate; {r} b/s is missing"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Simulated stop time (default 3.01 s).
    pub fn stop_time(&self) -> Time {
        Time((self.simulator_stop_time.unwrap_or(3.01) * 1e12).round() as u64)
    }
}

/// One flow of a flow file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpccFlow {
    /// Source node id.
    pub src: u32,
    /// Destination node id.
    pub dst: u32,
    /// Priority group (traffic_gen writes 3).
    pub pg: u8,
    /// Destination port (100 background, 200 incast in fct_analysis.py).
    pub dport: u16,
    /// Message size, bytes.
    pub size: u64,
    /// Start time.
    pub start: Time,
    /// Line in the file.
    pub line: usize,
}

/// Read a flow file: `<n>` then `n` lines of `src dst pg dport size start_s`,
/// sorted by start time. Lines after the n-th are ignored by ns-3: they are
/// returned as a warning. `nodes` bounds the node ids.
pub fn read_flows(file: &str, text: &str, nodes: u32) -> Result<(Vec<HpccFlow>, Vec<Warning>), HpccError> {
    let mut t = Tok::new(file, text);
    let (l0, n): (usize, u64) = t.parse("the flow count")?;
    if n > 100_000_000 {
        return Err(t.err(l0, format!("expected a flow count below 10^8, found {n}")));
    }
    let mut flows = Vec::with_capacity(n as usize);
    let mut last = Time::ZERO;
    for _ in 0..n {
        let (l, src): (usize, u32) = t.parse("a source node id")?;
        let (_, dst): (usize, u32) = t.parse("a destination node id")?;
        let (_, pg): (usize, u8) = t.parse("a priority group 0..7")?;
        let (_, dport): (usize, u16) = t.parse("a destination port")?;
        let (_, size): (usize, u64) = t.parse("a size in bytes")?;
        let (_, start): (usize, f64) = t.parse("a start time in seconds")?;
        for id in [src, dst] {
            if id >= nodes {
                return Err(t.err(l, format!("expected a node id below {nodes}, found {id}")));
            }
        }
        if src == dst {
            return Err(t.err(
                l,
                format!("expected different source and destination, found {src} → {dst}"),
            ));
        }
        if pg > 7 {
            return Err(t.err(l, format!("expected a priority group 0..7, found {pg}")));
        }
        if !(start.is_finite() && (0.0..1e6).contains(&start)) {
            return Err(t.err(l, format!("expected a start time in seconds, found {start}")));
        }
        let st = Time((start * 1e12).round() as u64);
        if st < last {
            return Err(t.err(
                l,
                "expected flows sorted by start time (ns-3 schedules them one after another)",
            ));
        }
        last = st;
        flows.push(HpccFlow {
            src,
            dst,
            pg,
            dport,
            size,
            start: st,
            line: l,
        });
    }
    let mut warnings = Vec::new();
    if let Some((l, _)) = t.peek() {
        let extra = t.toks.len() - t.i;
        warnings.push(Warning {
            at: format!("{file}:{l}"),
            key: "flow count".into(),
            why: format!("the file declares {n} flows; the {extra} tokens after them are ignored, as ns-3 does"),
        });
    }
    Ok((flows, warnings))
}

/// Read a trace-node file: `<n>` then n node ids.
pub fn read_trace_nodes(file: &str, text: &str, nodes: u32) -> Result<Vec<u32>, HpccError> {
    let mut t = Tok::new(file, text);
    let (_, n): (usize, u32) = t.parse("the node count")?;
    let mut v = Vec::new();
    for _ in 0..n {
        let (l, id): (usize, u32) = t.parse("a node id")?;
        if id >= nodes {
            return Err(t.err(l, format!("expected a node id below {nodes}, found {id}")));
        }
        v.push(id);
    }
    Ok(v)
}

/// ns-3's ideal FCT of a flow alone: base RTT plus the bytes with per-packet
/// headers at the bottleneck rate (reference §1.1.7).
pub fn standalone_fct_ns(size: u64, payload: u32, header_bytes: u32, base_rtt_ns: u64, bottleneck_bps: u64) -> u64 {
    let pkts = if size == 0 {
        1
    } else {
        (size - 1) / u64::from(payload.max(1)) + 1
    };
    let bytes = size + pkts * u64::from(header_bytes);
    base_rtt_ns + (u128::from(bytes) * 8 * 1_000_000_000 / u128::from(bottleneck_bps.max(1))) as u64
}

/// fct.txt as ns-3 writes it: `%08x %08x %u %u %lu %lu %lu %lu`.
pub fn write_fct(records: &[FctRecord]) -> String {
    let mut s = String::with_capacity(records.len() * 64);
    for r in records {
        let _ = writeln!(
            s,
            "{:08x} {:08x} {} {} {} {} {} {}",
            r.sip, r.dip, r.sport, r.dport, r.size, r.start_ns, r.fct_ns, r.standalone_ns
        );
    }
    s
}

/// pfc.txt as ns-3 writes it: `time_ns node_id node_type if_index type`.
pub fn write_pfc(records: &[PfcRecord]) -> String {
    let mut s = String::with_capacity(records.len() * 24);
    for r in records {
        let _ = writeln!(
            s,
            "{} {} {} {} {}",
            r.time_ns,
            r.node,
            r.node_type,
            r.if_index,
            u8::from(r.pause)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies of `shared/formats/hpcc` (see `testdata/hpcc/SOURCES.md`).
    fn shared(name: &str) -> Option<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/hpcc");
        std::fs::read_to_string(dir.join(name)).ok()
    }

    #[test]
    fn rates_parse_in_ns3_forms() {
        assert_eq!(parse_rate("100Mb/s"), Some(100_000_000));
        assert_eq!(parse_rate("100Gbps"), Some(100_000_000_000));
        assert_eq!(parse_rate("25000000000"), Some(25_000_000_000));
        assert_eq!(parse_rate("25G"), Some(25_000_000_000));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("10Qb/s"), None);
    }

    #[test]
    fn shared_dcqcn_config_parses_with_named_warnings() {
        let text = shared("config_dcqcn_perm320.txt").expect("testdata/hpcc/config_dcqcn_perm320.txt");
        let c = HpccConfig::parse("config_dcqcn_perm320.txt", &text).unwrap();
        assert_eq!(c.cc_mode, Some(1));
        assert_eq!(c.topology_file.as_deref(), Some("fat.txt"));
        assert_eq!(c.rate_ai, Some(20_000_000));
        assert_eq!(c.min_rate, Some(1_000_000_000));
        assert_eq!(c.rp_timer, Some(300.0));
        assert_eq!(c.buffer_size_mb, Some(32));
        assert_eq!(c.stop_time(), Time(2_000_500_000_000));
        let red = c.red(100_000_000_000).unwrap();
        assert_eq!(
            red,
            Red {
                kmin: 400_000,
                kmax: 1_600_000,
                pmax: 0.2
            }
        );
        c.check_maps(&[100_000_000_000, 400_000_000_000]).unwrap();
        let e = c.check_maps(&[25_000_000_000]).unwrap_err();
        assert!(
            e.to_string().contains("config_dcqcn_perm320.txt:") && e.to_string().contains("25000000000"),
            "{e}"
        );
        let p = c.dcqcn(100_000_000_000);
        assert_eq!(p.increase_timer, Time::us(300));
        assert_eq!(p.fast_recovery, 1);
        assert_eq!(p.g, 0.00390625);
        assert_eq!(p.alpha, AlphaUpdate::Periodic { period: Time::us(1) });
        let w = c.unsupported();
        let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
        assert!(keys.contains(&"QLEN_MON_FILE"), "{keys:?}");
        assert!(keys.contains(&"U_TARGET"));
        assert!(!keys.contains(&"CC_MODE"));
        assert!(
            w.iter()
                .all(|w| w.at.starts_with("config_dcqcn_perm320.txt:") && !w.at.ends_with(":0")),
            "{w:?}"
        );
        // The HPCC example runs CC_MODE 3: modelled, not named.
        let c = HpccConfig::parse("config.txt", &shared("config.txt").unwrap()).unwrap();
        let w = c.unsupported();
        let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
        assert!(!keys.contains(&"CC_MODE") && !keys.contains(&"MULTI_RATE"), "{w:?}");
        assert!(!keys.contains(&"HAS_WIN") && !keys.contains(&"VAR_WIN"), "{w:?}");
        for k in ["PINT_LOG_BASE", "PINT_PROB", "RP_TIMER", "EWMA_GAIN", "RATE_HAI"] {
            assert!(keys.contains(&k), "{k}: {w:?}");
        }
        let p = c.hpcc(100_000_000_000, Time::us(4));
        assert_eq!((p.eta, p.max_stage, p.rate_ai_bps), (0.95, 0, 50e6));
        assert!(p.fast_react && !p.sample_feedback && p.var_win);
        assert_eq!(p.window_bytes, 50_000);
        // MULTI_RATE defaults to 1 in third.cc: absent, it is named.
        let c = HpccConfig::parse("c.txt", "CC_MODE 3\nINT_MULTI 4\n").unwrap();
        let keys: Vec<String> = c.unsupported().into_iter().map(|w| w.key).collect();
        assert!(
            keys.contains(&"MULTI_RATE".into()) && keys.contains(&"INT_MULTI".into()),
            "{keys:?}"
        );
        let c = HpccConfig::parse("c.txt", "CC_MODE 7\n").unwrap();
        assert!(
            c.unsupported()
                .iter()
                .any(|w| w.key == "CC_MODE" && w.why.contains("TIMELY"))
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let c = HpccConfig::parse("c.txt", "CC_MODE 1\nFANCY_KEY 3 4\nEWMA_GAIN 0.5\n").unwrap();
        assert_eq!(c.ewma_gain, Some(0.5));
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.warnings[0].at, "c.txt:2");
        assert!(c.warnings[0].why.contains("3 4"));
        let e = HpccConfig::parse("c.txt", "CC_MODE 1\nRATE_AI fast\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("c.txt", 2));
        let e = HpccConfig::parse("c.txt", "ENABLE_QCN 2\n").unwrap_err();
        assert!(e.to_string().contains("0 or 1"));
        let e = HpccConfig::parse("c.txt", "KMAX_MAP 2 100G 1600\n").unwrap_err();
        assert!(e.to_string().contains("end of the file"), "{e}");
        // The MMU counts a PG's bytes in 32 bits: 4095 MB is the most it takes.
        assert_eq!(
            HpccConfig::parse("c.txt", "BUFFER_SIZE 4095\n").unwrap().buffer_size_mb,
            Some(4095)
        );
        let e = HpccConfig::parse("c.txt", "CC_MODE 1\nBUFFER_SIZE 4096\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("c.txt", 2));
        assert!(e.to_string().contains("BUFFER_SIZE 4096 MB: at most 4095 MB"), "{e}");
        // Absent EWMA_GAIN under DCQCN: the integer-division pitfall is named.
        let c = HpccConfig::parse("c.txt", "CC_MODE 1\n").unwrap();
        assert!(c.unsupported().iter().any(|w| w.key == "EWMA_GAIN"));
    }

    #[test]
    fn flow_files_read_with_extra_lines_warned() {
        let (f, w) = read_flows("flow.txt", &shared("flow.txt").unwrap(), 66).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0],
            HpccFlow {
                src: 2,
                dst: 1,
                pg: 3,
                dport: 100,
                size: 200_000_000,
                start: Time(2_000_000_000_000),
                line: 2
            }
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].at, "flow.txt:4");
        let (f, w) = read_flows("flow_perm320.txt", &shared("flow_perm320.txt").unwrap(), 376).unwrap();
        assert_eq!(f.len(), 320);
        assert!(w.is_empty());
        let e = read_flows("x", "2\n0 1 3 100 10 2\n0 1 3 100 10 1\n", 4).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.what.contains("sorted"));
        let e = read_flows("x", "1\n0 9 3 100 10 2\n", 4).unwrap_err();
        assert!(e.what.contains("below 4"));
        let e = read_flows("x", "3\n0 1 3 100 10 2\n", 4).unwrap_err();
        assert!(e.what.contains("end of the file"));
        assert_eq!(read_trace_nodes("t", "2\n1 3\n", 4).unwrap(), vec![1, 3]);
    }

    #[test]
    fn outputs_match_ns3_layout() {
        let r = FctRecord {
            sip: 0x0b00_0101,
            dip: 0x0b00_0201,
            sport: 10000,
            dport: 100,
            size: 1000,
            start_ns: 2_000_000_000,
            fct_ns: 13_000,
            standalone_ns: 12_100,
        };
        assert_eq!(
            write_fct(&[r]),
            "0b000101 0b000201 10000 100 1000 2000000000 13000 12100\n"
        );
        let p = PfcRecord {
            time_ns: 2_000_001_234,
            node: 320,
            node_type: 1,
            if_index: 3,
            pause: true,
        };
        assert_eq!(
            write_pfc(&[p, PfcRecord { pause: false, ..p }]),
            "2000001234 320 1 3 1\n2000001234 320 1 3 0\n"
        );
        // 1000 B, one 1000 B packet with 48 B of headers at 100G over a 12 µs RTT.
        assert_eq!(standalone_fct_ns(1000, 1000, 48, 12_000, 100_000_000_000), 12_000 + 83);
    }
}
