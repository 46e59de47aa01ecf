//! The calibration file: every fitted parameter with its value, unit, the files
//! it came from, how it was fitted and the fit's residual, as TOML.
//!
//! ```toml
//! format = 1
//! generator = "rdmalab-calibrate 0.1.0"
//! path_ns = 0.0
//! nccl_min_bytes = 1048576
//!
//! [[source]]
//! path = "ib_write_lat.txt"
//! test = "ib_write_lat"
//! fabric = "infiniband"
//! rows = 23
//!
//! [[parameter]]
//! fabric = "infiniband"
//! scope = "endpoint"
//! name = "tx_latency"
//! value = 1003.6
//! unit = "ns"
//! sources = ["ib_write_lat.txt"]
//! residual = 0.0071     # largest |fitted − measured| / measured over the rows fitted
//! rows = 7
//! method = "…"
//! ```
//!
//! Reading it back checks every field beyond its type: the unit each parameter
//! must have, the scope it belongs to, finite values, no parameter twice. Errors
//! name the file, the `[[parameter]]` (1-based) and the field.

use serde::{Deserialize, Serialize};

use crate::Fabric;
use crate::error::FileError;
use crate::nccl::Collective;
use crate::perftest::Tool;

/// The file format this code writes and reads.
pub const FORMAT: u32 = 1;

/// What a parameter describes: the endpoints (what the simulators take), a
/// perftest tool's curve, or an nccl-tests collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Derived from several tools: what `compare --calibration` applies.
    Endpoint,
    IbWriteBw,
    IbWriteLat,
    IbSendLat,
    IbReadLat,
    AllReducePerf,
    AllGatherPerf,
    ReduceScatterPerf,
    AlltoallPerf,
}

impl Scope {
    /// The scope of a perftest tool.
    pub fn of_tool(t: Tool) -> Scope {
        match t {
            Tool::WriteBw => Scope::IbWriteBw,
            Tool::WriteLat => Scope::IbWriteLat,
            Tool::SendLat => Scope::IbSendLat,
            Tool::ReadLat => Scope::IbReadLat,
        }
    }

    /// The scope of an nccl-tests collective.
    pub fn of_collective(c: Collective) -> Scope {
        match c {
            Collective::AllReduce => Scope::AllReducePerf,
            Collective::AllGather => Scope::AllGatherPerf,
            Collective::ReduceScatter => Scope::ReduceScatterPerf,
            Collective::AllToAll => Scope::AlltoallPerf,
        }
    }

    /// As written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Endpoint => "endpoint",
            Scope::IbWriteBw => "ib_write_bw",
            Scope::IbWriteLat => "ib_write_lat",
            Scope::IbSendLat => "ib_send_lat",
            Scope::IbReadLat => "ib_read_lat",
            Scope::AllReducePerf => "all_reduce_perf",
            Scope::AllGatherPerf => "all_gather_perf",
            Scope::ReduceScatterPerf => "reduce_scatter_perf",
            Scope::AlltoallPerf => "alltoall_perf",
        }
    }

    fn kind(self) -> ScopeKind {
        match self {
            Scope::Endpoint => ScopeKind::Endpoint,
            Scope::IbWriteBw => ScopeKind::Bw,
            Scope::IbWriteLat | Scope::IbSendLat | Scope::IbReadLat => ScopeKind::Lat,
            _ => ScopeKind::Collective,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Endpoint,
    Lat,
    Bw,
    Collective,
}

/// A parameter's name; each has one unit and belongs to one kind of scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Name {
    /// endpoint: time from a post to the NIC sending, and everything of a WRITE's
    /// one-way latency the fabric model does not add itself (ns).
    TxLatency,
    /// endpoint: what a SEND costs the receiver beyond a WRITE: receive WQE,
    /// CQE, poll (ns).
    RxLatency,
    /// endpoint: one switch's port-to-port latency, from the same latency test
    /// through one switch and back to back (flow-level-and-calibration.md B8
    /// step 3) (ns).
    SwitchLatency,
    /// latency tool: intercept of the line over sizes up to the inline limit (ns).
    InlineLatency,
    /// latency tool: slope of that line (ns per byte).
    InlineNsPerByte,
    /// latency tool: intercept of the line over sizes above the inline limit, or
    /// over every size when the test has no inline limit (ns).
    Latency,
    /// latency tool: 1 / slope of that line (GB/s).
    Bandwidth,
    /// ib_write_bw: time per message while the message rate limits (ns).
    MessageCost,
    /// ib_write_bw: bandwidth while the line limits (GB/s).
    PeakBandwidth,
    /// collective: α of time = α + size × factor / β_bus (µs).
    Alpha,
    /// collective: β_bus of that line (GB/s).
    BetaBus,
    /// collective: mean busbw (out-of-place and in-place) at the largest size (GB/s).
    BusbwLargest,
    /// collective: nccl-tests' own `# Avg bus bandwidth` line (GB/s).
    AvgBusBandwidth,
    /// collective: β_bus over the NICs per host NCCL listed (GB/s).
    BusbwPerNic,
}

impl Name {
    /// The one unit this parameter is recorded in.
    pub fn unit(self) -> Unit {
        match self {
            Name::TxLatency
            | Name::RxLatency
            | Name::SwitchLatency
            | Name::InlineLatency
            | Name::Latency
            | Name::MessageCost => Unit::Ns,
            Name::InlineNsPerByte => Unit::NsPerByte,
            Name::Alpha => Unit::Us,
            Name::Bandwidth
            | Name::PeakBandwidth
            | Name::BetaBus
            | Name::BusbwLargest
            | Name::AvgBusBandwidth
            | Name::BusbwPerNic => Unit::GBps,
        }
    }

    /// As written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Name::TxLatency => "tx_latency",
            Name::RxLatency => "rx_latency",
            Name::SwitchLatency => "switch_latency",
            Name::InlineLatency => "inline_latency",
            Name::InlineNsPerByte => "inline_ns_per_byte",
            Name::Latency => "latency",
            Name::Bandwidth => "bandwidth",
            Name::MessageCost => "message_cost",
            Name::PeakBandwidth => "peak_bandwidth",
            Name::Alpha => "alpha",
            Name::BetaBus => "beta_bus",
            Name::BusbwLargest => "busbw_largest",
            Name::AvgBusBandwidth => "avg_bus_bandwidth",
            Name::BusbwPerNic => "busbw_per_nic",
        }
    }

    fn kind(self) -> ScopeKind {
        match self {
            Name::TxLatency | Name::RxLatency | Name::SwitchLatency => ScopeKind::Endpoint,
            Name::InlineLatency | Name::InlineNsPerByte | Name::Latency | Name::Bandwidth => ScopeKind::Lat,
            Name::MessageCost | Name::PeakBandwidth => ScopeKind::Bw,
            _ => ScopeKind::Collective,
        }
    }

    /// Whether the value may be negative (a slope fitted to noise).
    fn signed(self) -> bool {
        matches!(self, Name::InlineNsPerByte)
    }
}

/// Units of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    #[serde(rename = "ns")]
    Ns,
    #[serde(rename = "ns/B")]
    NsPerByte,
    #[serde(rename = "us")]
    Us,
    /// 1e9 bytes per second (nccl-tests' GB/s).
    #[serde(rename = "GB/s")]
    GBps,
}

impl Unit {
    /// As written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::NsPerByte => "ns/B",
            Unit::Us => "us",
            Unit::GBps => "GB/s",
        }
    }
}

/// One input file, as the fit read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// As given on the command line.
    pub path: String,
    /// `ib_write_lat`, `all_reduce_perf`, …
    pub test: String,
    pub fabric: Fabric,
    /// Result rows read.
    pub rows: u32,
    /// What the parser skipped or the fit wants said about this file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One fitted parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameter {
    pub fabric: Fabric,
    pub scope: Scope,
    pub name: Name,
    pub value: f64,
    pub unit: Unit,
    /// The files it came from.
    pub sources: Vec<String>,
    /// Largest |fitted − measured| / measured over the rows fitted (0 for a value
    /// read as printed).
    pub residual: f64,
    /// Rows fitted.
    pub rows: u32,
    /// Rows of the sources left out of this fit, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
    /// How it was obtained, in words.
    pub method: String,
}

/// A whole calibration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// [`FORMAT`].
    pub format: u32,
    /// What wrote it.
    pub generator: String,
    /// One-way time of the perftest path's cables and switches subtracted from
    /// the measured latency to give `tx_latency` (ns; 0: back to back).
    pub path_ns: f64,
    /// nccl-tests rows below this size are left out of the α–β fits.
    pub nccl_min_bytes: u64,
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
    #[serde(default, rename = "parameter")]
    pub parameters: Vec<Parameter>,
}

/// The endpoint latencies of one fabric, as the simulators take them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Endpoint {
    pub tx_ns: f64,
    pub rx_ns: f64,
}

const HEADER: &str = "\
# rdmalab calibration, written by `rdmalab calibrate`: parameters fitted from perftest and
# nccl-tests output. Each [[parameter]] names its fabric, scope (endpoint, a perftest tool or
# an nccl-tests binary), name, value and unit, the files it came from, the rows fitted, the
# fit's residual (largest |fitted - measured| / measured over those rows), the rows left out
# and why, and the method. `rdmalab compare --calibration FILE` applies the endpoint
# parameters (tx_latency, rx_latency) to the simulated NICs.
";

impl Calibration {
    /// The parameter `name` of `scope` on `fabric`.
    pub fn get(&self, fabric: Fabric, scope: Scope, name: Name) -> Option<&Parameter> {
        self.parameters
            .iter()
            .find(|p| p.fabric == fabric && p.scope == scope && p.name == name)
    }

    /// One switch's latency on `fabric`, ns, when a one-hop run gave it.
    pub fn switch_latency(&self, fabric: Fabric) -> Option<f64> {
        Some(self.get(fabric, Scope::Endpoint, Name::SwitchLatency)?.value)
    }

    /// The endpoint latencies of `fabric`, when both were fitted.
    pub fn endpoint(&self, fabric: Fabric) -> Option<Endpoint> {
        Some(Endpoint {
            tx_ns: self.get(fabric, Scope::Endpoint, Name::TxLatency)?.value,
            rx_ns: self.get(fabric, Scope::Endpoint, Name::RxLatency)?.value,
        })
    }

    /// The file's text: a comment saying what it is, then the TOML.
    pub fn to_toml(&self) -> String {
        // A plain struct of strings, numbers and arrays always serializes.
        let body = toml::to_string(self).expect("a calibration serializes to TOML");
        format!("{HEADER}\n{body}")
    }

    /// Read a calibration file's text; `path` names it in errors.
    pub fn from_toml(path: &str, text: &str) -> Result<Calibration, FileError> {
        let c: Calibration = toml::from_str(text).map_err(|e| FileError::Toml {
            path: path.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        c.check(path)?;
        Ok(c)
    }

    /// Every field beyond its type.
    fn check(&self, path: &str) -> Result<(), FileError> {
        let top = |field: &str, expected: &str, found: String| FileError::Field {
            path: path.into(),
            field: field.into(),
            expected: expected.into(),
            found,
        };
        if self.format != FORMAT {
            return Err(top("format", "1", self.format.to_string()));
        }
        if !(self.path_ns.is_finite() && self.path_ns >= 0.0) {
            return Err(top(
                "path_ns",
                "a finite number of nanoseconds, 0 or more",
                self.path_ns.to_string(),
            ));
        }
        for (i, p) in self.parameters.iter().enumerate() {
            let bad = |field: &str, expected: String, found: String| FileError::Parameter {
                path: path.into(),
                index: i + 1,
                what: format!("{} {} {}", p.fabric, p.scope.name(), p.name.name()),
                field: field.into(),
                problem: format!("expected {expected}, found {found}"),
            };
            if p.name.kind() != p.scope.kind() {
                let scopes = match p.name.kind() {
                    ScopeKind::Endpoint => "endpoint",
                    ScopeKind::Lat => "ib_write_lat, ib_send_lat or ib_read_lat",
                    ScopeKind::Bw => "ib_write_bw",
                    ScopeKind::Collective => "all_reduce_perf, all_gather_perf, reduce_scatter_perf or alltoall_perf",
                };
                return Err(bad(
                    "scope",
                    format!("{scopes} for {}", p.name.name()),
                    p.scope.name().into(),
                ));
            }
            if p.unit != p.name.unit() {
                return Err(bad(
                    "unit",
                    format!("{:?} for {}", p.name.unit().name(), p.name.name()),
                    format!("{:?}", p.unit.name()),
                ));
            }
            if !p.value.is_finite() || (p.value < 0.0 && !p.name.signed()) {
                return Err(bad(
                    "value",
                    if p.name.signed() {
                        "a finite number".into()
                    } else {
                        "a finite number, 0 or more".into()
                    },
                    p.value.to_string(),
                ));
            }
            if !(p.residual.is_finite() && p.residual >= 0.0) {
                return Err(bad(
                    "residual",
                    "a finite fraction, 0 or more".into(),
                    p.residual.to_string(),
                ));
            }
            if p.sources.is_empty() {
                return Err(bad("sources", "at least one file".into(), "[]".into()));
            }
            if let Some(j) = self.parameters[..i]
                .iter()
                .position(|q| (q.fabric, q.scope, q.name) == (p.fabric, p.scope, p.name))
            {
                return Err(bad(
                    "name",
                    format!("each parameter once (parameter {} has it)", j + 1),
                    p.name.name().into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Calibration {
        Calibration {
            format: FORMAT,
            generator: "test".into(),
            path_ns: 0.0,
            nccl_min_bytes: 1 << 20,
            sources: vec![Source {
                path: "w.txt".into(),
                test: "ib_write_lat".into(),
                fabric: Fabric::Infiniband,
                rows: 3,
                notes: vec![],
            }],
            parameters: vec![
                Parameter {
                    fabric: Fabric::Infiniband,
                    scope: Scope::Endpoint,
                    name: Name::TxLatency,
                    value: 1003.5,
                    unit: Unit::Ns,
                    sources: vec!["w.txt".into()],
                    residual: 0.004,
                    rows: 3,
                    excluded: vec![],
                    method: "m".into(),
                },
                Parameter {
                    fabric: Fabric::Infiniband,
                    scope: Scope::Endpoint,
                    name: Name::RxLatency,
                    value: 80.0,
                    unit: Unit::Ns,
                    sources: vec!["w.txt".into(), "s.txt".into()],
                    residual: 0.0,
                    rows: 3,
                    excluded: vec!["size 4096 (line 20): why".into()],
                    method: "m".into(),
                },
            ],
        }
    }

    #[test]
    fn round_trips_and_gives_the_endpoints() {
        let c = sample();
        let text = c.to_toml();
        assert!(text.starts_with("# rdmalab calibration"));
        let back = Calibration::from_toml("c.toml", &text).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            back.endpoint(Fabric::Infiniband),
            Some(Endpoint {
                tx_ns: 1003.5,
                rx_ns: 80.0
            })
        );
        assert_eq!(back.endpoint(Fabric::Roce), None);
    }

    #[test]
    fn bad_fields_name_the_file_the_parameter_and_the_field() {
        let text = sample().to_toml();
        let cases = [
            (
                "unit = \"ns\"",
                "unit = \"us\"",
                "[[parameter]] 1 (infiniband endpoint tx_latency): field `unit`: expected \"ns\" for tx_latency, found \"us\"",
            ),
            (
                "value = 80.0",
                "value = -80.0",
                "[[parameter]] 2 (infiniband endpoint rx_latency): field `value`: expected a finite number, 0 or more, found -80",
            ),
            (
                "scope = \"endpoint\"\nname = \"rx_latency\"",
                "scope = \"ib_write_lat\"\nname = \"rx_latency\"",
                "field `scope`: expected endpoint for rx_latency, found ib_write_lat",
            ),
            (
                "name = \"rx_latency\"",
                "name = \"tx_latency\"",
                "[[parameter]] 2 (infiniband endpoint tx_latency): field `name`: expected each parameter once (parameter 1 has it)",
            ),
            (
                "format = 1",
                "format = 2",
                "read c.toml: field `format`: expected 1, found 2",
            ),
        ];
        for (from, to, want) in cases {
            assert!(text.contains(from), "{from}");
            let e = Calibration::from_toml("c.toml", &text.replacen(from, to, 1)).unwrap_err();
            let m = e.to_string();
            assert!(m.starts_with("read c.toml: "), "{m}");
            assert!(m.contains(want), "{to}: {m}");
        }
        // TOML's own errors keep the line and show the field
        for (from, to, want) in [
            ("value = 80.0", "value = \"80\"", "value = \"80\""),
            ("rows = 3\nexcluded", "rows = 3\nexcludd", "unknown field `excludd`"),
            (
                "fabric = \"infiniband\"\nscope",
                "fabric = \"ethernet\"\nscope",
                "unknown variant `ethernet`",
            ),
        ] {
            let m = Calibration::from_toml("c.toml", &text.replacen(from, to, 1))
                .unwrap_err()
                .to_string();
            assert!(m.starts_with("read c.toml: TOML parse error at line "), "{m}");
            assert!(m.contains(want), "{to}: {m}");
        }
    }
}
