//! Reading and writing topology files.
//!
//! | format | read | write | what survives a round trip through it |
//! |---|---|---|---|
//! | [`Format::Ibnetdiscover`] | yes | yes | GUIDs, port numbers, cabling, IB rates, descriptions, LIDs |
//! | [`Format::Ibsim`] | yes | yes | the above + names, cable lengths and delays (in a trailing `rdmalab:` note ibsim ignores) |
//! | [`Format::Hpcc`] | yes | yes | cabling and rates; node ids become names, GUIDs are synthesised |
//! | [`Format::Json`] | yes | yes | everything: the native, lossless form |
//!
//! ibnetdiscover output and ibsim net files are one family (ibsim reads a superset of
//! ibnetdiscover output, shared InfiniBand reference §2.2), so one parser reads both
//! with ibsim's GUID rules; they differ in what the writers emit.
//!
//! `ibnetdiscover -p` port reports are parsed and checked against a model
//! ([`check_ports_report`]); they carry too little to build one.
//!
//! [`detect`] tells the format from the content; every reader error names the file,
//! the line and what was expected.

mod hpcc;
mod json;
mod net;
mod ports_report;

pub use hpcc::{read_hpcc, write_hpcc};
pub use json::{read_json, write_json};
pub use net::{ibsim_rate, read_net, write_ibnetdiscover, write_ibsim};
pub use ports_report::{ReportEnd, ReportLine, check_ports_report, parse_ports_report};

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use thiserror::Error;

use crate::model::Fabric;

/// A topology file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `ibnetdiscover` output (infiniband-diags).
    Ibnetdiscover,
    /// An ibsim net file.
    Ibsim,
    /// ns-3 HPCC `topology.txt`.
    Hpcc,
    /// rdmalab JSON.
    Json,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [Format::Ibnetdiscover, Format::Ibsim, Format::Hpcc, Format::Json];

    /// Lower-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Ibnetdiscover => "ibnetdiscover",
            Format::Ibsim => "ibsim",
            Format::Hpcc => "hpcc",
            Format::Json => "json",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown format {s:?} (expected ibnetdiscover, ibsim, hpcc or json)"))
    }
}

/// What went wrong on one line.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParseErrorKind {
    /// The file is empty (or only comments and blank lines).
    #[error("the file is empty: expected a topology")]
    Empty,
    /// Not text: NUL bytes or invalid UTF-8.
    #[error("the file is not text (expected a UTF-8 topology file; found {what})")]
    NotText { what: String },
    /// The format could not be recognised.
    #[error(
        "cannot tell the format: expected ibnetdiscover output, an ibsim net file, an ns-3 HPCC topology.txt or rdmalab JSON"
    )]
    UnknownFormat,
    /// A token or line did not have the expected shape.
    #[error("expected {expected}, found {found:?}")]
    Expected { expected: String, found: String },
    /// A link rate that is not known.
    #[error(
        "unknown link speed {found:?} (expected a width×speed such as 4xHDR: widths 1x 2x 4x 8x 12x, speeds SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)"
    )]
    UnknownSpeed { found: String },
    /// A port number beyond the node's port count.
    #[error("port {port} does not exist on {node:?}, which has ports 1 to {num_ports}")]
    PortOutOfRange { node: String, port: u32, num_ports: u8 },
    /// A port listed twice in one node record.
    #[error("port {port} of {node:?} is listed twice")]
    DuplicatePort { node: String, port: u8 },
    /// A link named at one end only.
    #[error(
        "port {port} of {node:?} is cabled to {peer:?} port {peer_port}, but {peer:?} {why} (every link must be listed at both ends)"
    )]
    OneSided {
        node: String,
        port: u8,
        peer: String,
        peer_port: u8,
        why: String,
    },
    /// A link to a node that is never defined.
    #[error("port {port} of {node:?} is cabled to {peer:?}, which is not defined in the file")]
    UnknownPeer { node: String, port: u8, peer: String },
    /// Something the format allows but rdmalab does not model.
    #[error("{what} is not supported")]
    Unsupported { what: String },
    /// The model rejected what the file describes (duplicate GUID or name, …).
    #[error("{0}")]
    Model(#[from] crate::error::ModelError),
    /// JSON syntax or schema error.
    #[error("invalid rdmalab JSON: {0}")]
    Json(String),
}

/// A reader error: file, 1-based line (0 when it concerns the whole file) and what.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{file}:{line}: {kind}")]
pub struct ParseError {
    /// The file, as given (or `<input>` for text with no file).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(file: &str, line: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            file: file.to_string(),
            line,
            kind,
        }
    }
}

/// Reading a topology file failed.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Its content is wrong.
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Writing a topology file failed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum WriteError {
    /// The format describes InfiniBand only.
    #[error("link {link} runs at {rate}, an Ethernet rate; {format} files describe InfiniBand fabrics only")]
    NotInfiniband { link: u32, rate: String, format: Format },
    /// A name or description the format cannot carry.
    #[error("{what} {value:?} cannot be written to {format}: {why}")]
    BadText {
        what: &'static str,
        value: String,
        why: &'static str,
        format: Format,
    },
}

/// How readers fill in what a format does not say.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadOptions {
    /// Cable length for links whose file gives none (ibnetdiscover output never does).
    /// Default 2 m, a rack-local copper cable; its delay is 5 ns/m.
    pub default_length_m: f64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { default_length_m: 2.0 }
    }
}

/// Tell the format of a file from its content. `None` when it is none of them.
pub fn detect(text: &str) -> Option<Format> {
    let t = text.trim_start_matches('\u{feff}');
    let first = t.lines().map(str::trim).find(|l| !l.is_empty())?;
    if first.starts_with('{') {
        return Some(Format::Json);
    }
    if first.split_whitespace().count() == 3 && first.split_whitespace().all(|w| w.parse::<u64>().is_ok()) {
        return Some(Format::Hpcc);
    }
    // ibnetdiscover output starts with its "# Topology file" header and names nodes
    // "S-"/"H-"/"R-" + 16 hex digits; anything else in the family is an ibsim file.
    for l in t.lines().take(100_000) {
        if l.starts_with("# Topology file") {
            return Some(Format::Ibnetdiscover);
        }
        if l.starts_with("Switch") || l.starts_with("Hca") || l.starts_with("Ca") || l.starts_with("Rt") {
            let id = l.split('"').nth(1).unwrap_or("");
            let b = id.as_bytes();
            let generated = b.len() == 18
                && matches!(&b[..2], b"S-" | b"H-" | b"R-")
                && b[2..].iter().all(|c| c.is_ascii_hexdigit());
            return Some(if generated {
                Format::Ibnetdiscover
            } else {
                Format::Ibsim
            });
        }
    }
    None
}

fn check_text(file: &str, bytes: &[u8]) -> Result<String, ParseError> {
    if let Some(pos) = bytes.iter().position(|&b| b == 0) {
        let line = bytes[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(ParseError::new(
            file,
            line,
            ParseErrorKind::NotText {
                what: format!("a NUL byte at offset {pos}"),
            },
        ));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => {
            let pos = e.valid_up_to();
            let line = bytes[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(ParseError::new(
                file,
                line,
                ParseErrorKind::NotText {
                    what: format!("invalid UTF-8 at offset {pos}"),
                },
            ))
        }
    }
}

/// Parse topology text. `file` names it in errors; `format` overrides detection;
/// `base_dir` resolves ibsim `include` lines (none: includes are refused).
pub fn parse(
    file: &str,
    bytes: &[u8],
    format: Option<Format>,
    base_dir: Option<&Path>,
    opts: &ReadOptions,
) -> Result<(Fabric, Format), ParseError> {
    let text = check_text(file, bytes)?;
    if text.trim().is_empty() {
        return Err(ParseError::new(file, 1, ParseErrorKind::Empty));
    }
    let fmt = match format {
        Some(f) => f,
        None => detect(&text).ok_or_else(|| ParseError::new(file, 1, ParseErrorKind::UnknownFormat))?,
    };
    let fab = match fmt {
        Format::Ibnetdiscover | Format::Ibsim => read_net(file, &text, base_dir, opts)?,
        Format::Hpcc => read_hpcc(file, &text)?,
        Format::Json => read_json(file, &text)?,
    };
    Ok((fab, fmt))
}

/// Read a topology file, detecting its format unless `format` is given.
pub fn read_file(path: &Path, format: Option<Format>, opts: &ReadOptions) -> Result<(Fabric, Format), ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path.display().to_string();
    Ok(parse(&name, &bytes, format, path.parent(), opts)?)
}

/// Write a fabric in `format`.
pub fn write(fab: &Fabric, format: Format) -> Result<String, WriteError> {
    match format {
        Format::Ibnetdiscover => write_ibnetdiscover(fab),
        Format::Ibsim => write_ibsim(fab),
        Format::Hpcc => Ok(write_hpcc(fab)),
        Format::Json => Ok(write_json(fab)),
    }
}

/// Group channel adapters into servers by their NodeDescription, which real hosts
/// set to "`<hostname> <device>`" (for example `gpu07 mlx5_3`, the form
/// rdma-core's `rdma-ndd` writes). Adapters whose description does not end in a
/// recognised RDMA device name are left without a server. Hosts are created in order
/// of first appearance, so the result is deterministic.
pub fn infer_hosts(fab: &mut Fabric) {
    if !fab.hosts.is_empty() {
        return;
    }
    let mut by_name: std::collections::HashMap<String, crate::model::HostId> = std::collections::HashMap::new();
    for i in 0..fab.nodes.len() {
        let n = &fab.nodes[i];
        if n.kind != crate::model::NodeKind::Ca || n.host.is_some() {
            continue;
        }
        let mut it = n.desc.split_whitespace();
        let (Some(host), Some(dev), None) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if !is_rdma_device(dev) {
            continue;
        }
        let host = host.to_string();
        let id = match by_name.get(&host) {
            Some(&h) => h,
            None => {
                let h = fab.add_host(host.clone());
                by_name.insert(host, h);
                h
            }
        };
        fab.nodes[i].host = Some(id);
    }
}

/// Device names of RDMA adapters in Linux (`mlx5_0`, `mlx4_1`, `hfi1_0`, `qib0`,
/// `bnxt_re0`, `irdma1`, `efa_0`, `HCA-1`).
fn is_rdma_device(d: &str) -> bool {
    let prefixes = [
        "mlx5_", "mlx4_", "hfi1_", "qib", "bnxt_re", "irdma", "efa_", "HCA-", "ionic_", "erdma_",
    ];
    prefixes.iter().any(|p| {
        d.strip_prefix(p)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats() {
        assert_eq!(detect("{\"format\": 1}"), Some(Format::Json));
        assert_eq!(detect("66 1 65\n0\n"), Some(Format::Hpcc));
        assert_eq!(
            detect("#\n# Topology file: generated on x\n"),
            Some(Format::Ibnetdiscover)
        );
        assert_eq!(detect("# c\nSwitch 8 \"a\"\n[1] \"b\"[1]\n"), Some(Format::Ibsim));
        assert_eq!(
            detect("switchguid=0x10\nSwitch 8 \"S-0000000000000010\"\n"),
            Some(Format::Ibnetdiscover)
        );
        assert_eq!(detect("switchguid=0x10\nSwitch 8 \"leaf1\"\n"), Some(Format::Ibsim));
        assert_eq!(detect("hello"), None);
        // 18 bytes of multi-byte characters must not be sliced mid-character
        assert_eq!(detect("Switch 8 \"€€€€€€\"\n"), Some(Format::Ibsim));
    }

    #[test]
    fn rdma_device_names() {
        assert!(is_rdma_device("mlx5_12"));
        assert!(is_rdma_device("HCA-1"));
        assert!(!is_rdma_device("mlx5_"));
        assert!(!is_rdma_device("Technologies"));
    }
}
