//! perftest's text output (linux-rdma/perftest), as `ctx_print_test_info`,
//! `print_report_bw` and `print_report_lat` print it (reference B4):
//!
//! ```text
//! ---------------------------------------------------------------------------------------
//!                     RDMA_Write Latency Test                   <- title: the verb and the test kind
//!  Dual-port       : OFF          Device         : mlx5_0       <- " Key : value", tab-separated pairs
//!  ...
//!  Link type       : IB                                         <- IB or Ethernet (RoCE); Transport type says IB on both
//!  Max inline data : 220[B]
//! ---------------------------------------------------------------------------------------
//!  local address: LID 0x0b QPN 0x0121 PSN 0x3a5f0c ...
//! ---------------------------------------------------------------------------------------
//!  #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec] ...   <- the table's header
//!  2       1000          0.96           3.87         1.01 ...              <- one row per size
//! ---------------------------------------------------------------------------------------   <- closes the table
//! ```
//!
//! Header keys are matched by name and unknown keys kept, since perftest adds keys
//! across versions (`Lock-free` since 24.10, `Using Enhanced Reorder` since 25.10).
//! Text inside the table that is not a row (the "Conflicting CPU frequency" warning
//! perftest writes to stderr, often interleaved in captured logs) is skipped and
//! noted; a line that starts like a row but does not parse is an error with its
//! line. Negative values, seen on busy hosts (perftest#82), are refused.

use crate::Fabric;
use crate::error::ParseError;

/// The perftest tools this crate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    /// `ib_write_bw`: RDMA WRITE throughput (TX depth 128 by default).
    WriteBw,
    /// `ib_write_lat`: RDMA WRITE ping-pong, half the round trip.
    WriteLat,
    /// `ib_send_lat`: SEND ping-pong, half the round trip.
    SendLat,
    /// `ib_read_lat`: RDMA READ, the full round trip (perftest's `rtt_factor` 1).
    ReadLat,
}

impl Tool {
    /// The binary's name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::WriteBw => "ib_write_bw",
            Tool::WriteLat => "ib_write_lat",
            Tool::SendLat => "ib_send_lat",
            Tool::ReadLat => "ib_read_lat",
        }
    }

    /// Whether the tool prints a latency table.
    pub fn is_latency(self) -> bool {
        !matches!(self, Tool::WriteBw)
    }
}

/// What calibrate reads, for error messages.
const READS: &str = "ib_write_bw, ib_write_lat, ib_send_lat and ib_read_lat";

/// The header block: every `Key : value` pair as printed, and the ones the
/// calibration uses, parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// Every pair, in order, as printed (trimmed).
    pub fields: Vec<(String, String)>,
    /// `Device`.
    pub device: Option<String>,
    /// `Mtu`, bytes.
    pub mtu: Option<u32>,
    /// `Max inline data`, bytes (0 in bandwidth tests).
    pub max_inline: Option<u32>,
    /// `Link type` as printed (`IB`, `Ethernet`).
    pub link_type: Option<String>,
    /// `GID index` (printed for RoCE and global routing).
    pub gid_index: Option<u32>,
    /// `TX depth`.
    pub tx_depth: Option<u32>,
    /// `Number of qps`.
    pub qps: Option<u32>,
}

impl Header {
    /// The value printed for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Units of a bandwidth table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BwUnit {
    /// `MB/sec` (before perftest 24.07) or `MiB/sec`: both 2^20 bytes per second,
    /// perftest's default `format_factor` 0x100000.
    MiBps,
    /// `Gb/sec` (`--report_gbits`): 1e9 bits per second (format factor 125,000,000).
    Gbps,
}

impl BwUnit {
    /// Bytes per second in one unit (reference B8 step 1).
    pub fn bytes_per_s(self) -> f64 {
        match self {
            BwUnit::MiBps => 1_048_576.0,
            BwUnit::Gbps => 1.25e8,
        }
    }
}

/// One row of a bandwidth table.
#[derive(Clone, Debug, PartialEq)]
pub struct BwRow {
    /// 1-based line in the file.
    pub line: usize,
    pub bytes: u64,
    pub iterations: u64,
    /// `BW peak`, bytes per second (0 when perftest did not measure it).
    pub peak_bytes_per_s: f64,
    /// `BW average`, bytes per second.
    pub average_bytes_per_s: f64,
    /// `MsgRate[Mpps]`: messages (not packets) per microsecond.
    pub msg_rate_mpps: f64,
}

/// One row of a latency table, microseconds as printed. Columns an old perftest
/// does not print are `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct LatRow {
    /// 1-based line in the file.
    pub line: usize,
    pub bytes: u64,
    pub iterations: u64,
    pub t_min: f64,
    pub t_max: f64,
    /// The median of the kept samples: what calibration uses (reference B8 step 2).
    pub t_typical: f64,
    pub t_avg: Option<f64>,
    pub t_stdev: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
}

/// The result table.
#[derive(Clone, Debug, PartialEq)]
pub enum Table {
    Bw { unit: BwUnit, rows: Vec<BwRow> },
    Lat { rows: Vec<LatRow> },
}

/// One perftest run as its output shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct PerftestRun {
    pub path: String,
    pub tool: Tool,
    /// The title line as printed, e.g. `RDMA_Write Latency Test`.
    pub title: String,
    /// `Bidirectional` in the title: the client printed the sum of both directions.
    pub bidirectional: bool,
    pub fabric: Fabric,
    pub header: Header,
    pub table: Table,
    /// What was skipped on the way (warnings inside the table, a second table).
    pub notes: Vec<String>,
}

impl PerftestRun {
    /// Result rows.
    pub fn rows(&self) -> usize {
        match &self.table {
            Table::Bw { rows, .. } => rows.len(),
            Table::Lat { rows } => rows.len(),
        }
    }
}

/// A title line: `<Verb> [Bidirectional ][Post List ]BW Test` or `<Verb> Latency Test`.
struct Title {
    text: String,
    verb: String,
    latency: bool,
    bidirectional: bool,
}

fn title_of(t: &str) -> Option<Title> {
    let (head, latency) = if let Some(h) = t.strip_suffix(" Latency Test") {
        (h, true)
    } else if let Some(h) = t.strip_suffix(" BW Test") {
        (h, false)
    } else {
        return None;
    };
    let mut words = head.split_whitespace();
    let verb = words.next()?.to_string();
    // A title is a handful of words, never a sentence that happens to end so.
    let rest: Vec<&str> = words.collect();
    if rest.len() > 3 || verb.contains(':') {
        return None;
    }
    Some(Title {
        text: t.to_string(),
        bidirectional: rest.contains(&"Bidirectional"),
        verb,
        latency,
    })
}

/// The tool behind a title, or the error naming what the file says.
fn tool_of(path: &str, line: usize, t: &Title) -> Result<Tool, ParseError> {
    let kind = if t.latency { "lat" } else { "bw" };
    let known = |tool: &str| ParseError::UnsupportedTest {
        path: path.into(),
        line,
        saw: format!("perftest test {:?} ({tool})", t.text),
        reads: READS,
    };
    match (t.verb.as_str(), t.latency) {
        ("RDMA_Write", false) => Ok(Tool::WriteBw),
        ("RDMA_Write", true) => Ok(Tool::WriteLat),
        ("Send", true) => Ok(Tool::SendLat),
        ("RDMA_Read", true) => Ok(Tool::ReadLat),
        ("Send", false) => Err(known("ib_send_bw")),
        ("RDMA_Read", false) => Err(known("ib_read_bw")),
        ("Atomic", _) => Err(known(&format!("ib_atomic_{kind}"))),
        ("Send_imm", _) => Err(known(&format!("ib_send_{kind} with immediate data"))),
        ("RDMA_Write_imm", _) => Err(known(&format!("ib_write_{kind} with immediate data"))),
        (v, _) => Err(ParseError::UnsupportedTest {
            path: path.into(),
            line,
            saw: format!("perftest test {:?} (unknown verb {v:?})", t.text),
            reads: READS,
        }),
    }
}

/// A line of dashes (perftest's `RESULT_LINE`).
fn is_rule(t: &str) -> bool {
    t.len() >= 20 && t.bytes().all(|b| b == b'-')
}

/// The leading number of `4096[B]`.
fn leading_u32(v: &str) -> Option<u32> {
    let d: String = v.chars().take_while(char::is_ascii_digit).collect();
    d.parse().ok()
}

/// `Key : value` pairs of one header line. Pairs are separated by runs of tabs;
/// a piece with no colon belongs to the next one (`rdma_cm QPs\t : OFF`).
fn header_pairs(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut carry = String::new();
    for piece in line.split('\t').filter(|p| !p.trim().is_empty()) {
        let piece = format!("{carry}{piece}");
        match piece.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.push((k.trim().to_string(), v.trim().to_string()));
                carry.clear();
            }
            _ => carry = piece,
        }
    }
    out
}

/// Which columns a latency table has, by its header.
#[derive(Clone, Copy, Debug)]
struct LatCols {
    avg: bool,
    stdev: bool,
    percentiles: bool,
}

impl LatCols {
    fn values(self) -> usize {
        3 + usize::from(self.avg) + usize::from(self.stdev) + 2 * usize::from(self.percentiles)
    }
}

#[derive(Clone, Copy, Debug)]
enum TableKind {
    Bw { unit: BwUnit, sl: bool },
    Lat(LatCols),
}

fn syntax(path: &str, line: usize, expected: impl Into<String>, found: &str) -> ParseError {
    ParseError::Syntax {
        path: path.into(),
        line,
        expected: expected.into(),
        found: found.trim().to_string(),
    }
}

/// The kind of table a `#bytes …` header line opens.
fn table_kind(path: &str, line: usize, t: &str) -> Result<TableKind, ParseError> {
    if t.contains("t_typical[") {
        if t.contains("[cycles]") {
            return Err(syntax(
                path,
                line,
                "latencies in microseconds (the table is in cycles: rerun without -C / --report-cycles)",
                t,
            ));
        }
        if !(t.contains("t_min[usec]") && t.contains("t_max[usec]") && t.contains("t_typical[usec]")) {
            return Err(syntax(
                path,
                line,
                "a latency table header with t_min[usec], t_max[usec] and t_typical[usec]",
                t,
            ));
        }
        return Ok(TableKind::Lat(LatCols {
            avg: t.contains("t_avg["),
            stdev: t.contains("t_stdev["),
            percentiles: t.contains("99.9%"),
        }));
    }
    if t.contains("t_avg[") {
        return Err(syntax(
            path,
            line,
            "a latency table with t_typical (this is a duration-mode table, perftest -D, which prints only t_avg: rerun without -D)",
            t,
        ));
    }
    if let Some(i) = t.find("BW average[") {
        let unit = &t[i + "BW average[".len()..];
        let unit = unit.split(']').next().unwrap_or("");
        let unit = match unit {
            "MB/sec" | "MiB/sec" => BwUnit::MiBps,
            "Gb/sec" => BwUnit::Gbps,
            u => {
                return Err(syntax(
                    path,
                    line,
                    format!("a bandwidth unit MB/sec, MiB/sec or Gb/sec (found {u:?})"),
                    t,
                ));
            }
        };
        if !t.contains("MsgRate[Mpps]") {
            return Err(syntax(
                path,
                line,
                "a bandwidth table header with MsgRate[Mpps] after BW average",
                t,
            ));
        }
        return Ok(TableKind::Bw {
            unit,
            sl: t.contains("#sl"),
        });
    }
    Err(syntax(
        path,
        line,
        "a perftest result table header (\" #bytes #iterations    t_min[usec] …\" or \" #bytes     #iterations    BW peak[…] …\")",
        t,
    ))
}

/// The numbers of a row: every token a non-negative finite number.
fn numbers(path: &str, line: usize, t: &str, what: &str, want: usize) -> Result<Vec<f64>, ParseError> {
    let mut out = Vec::new();
    for tok in t.split_whitespace() {
        match tok.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => out.push(v),
            Ok(v) if v.is_finite() => {
                return Err(syntax(
                    path,
                    line,
                    format!(
                        "{what} of non-negative numbers (perftest prints negative values when timestamps go wrong on busy hosts, perftest#82: rerun), found {v} in"
                    ),
                    t,
                ));
            }
            _ => {
                return Err(syntax(path, line, format!("{what} of numbers, found {tok:?} in"), t));
            }
        }
    }
    if out.len() < want {
        return Err(syntax(
            path,
            line,
            format!("{what} of {want} numbers, found {} in", out.len()),
            t,
        ));
    }
    Ok(out)
}

fn integer(path: &str, line: usize, v: f64, what: &str, t: &str) -> Result<u64, ParseError> {
    if v.fract() != 0.0 || v > u64::MAX as f64 {
        return Err(syntax(path, line, format!("a whole number of {what}, found {v}"), t));
    }
    Ok(v as u64)
}

/// Parse one perftest output. `path` names the file in errors.
pub fn parse(path: &str, text: &str) -> Result<PerftestRun, ParseError> {
    let mut title: Option<(usize, Title)> = None;
    let mut header = Header::default();
    let mut table: Option<(usize, TableKind)> = None;
    let mut closed = false;
    let mut bw_rows = Vec::new();
    let mut lat_rows = Vec::new();
    let mut notes = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if is_rule(t) {
            if table.is_some() && (!bw_rows.is_empty() || !lat_rows.is_empty()) {
                closed = true;
            }
            continue;
        }
        if let Some(ti) = title_of(t) {
            if let Some((first, _)) = &title {
                if closed || table.is_some() {
                    notes.push(format!(
                        "line {line}: a second test ({:?}) follows the first (line {first}); only the first was read",
                        ti.text
                    ));
                    break;
                }
                return Err(syntax(path, line, "one perftest test title per run", t));
            }
            tool_of(path, line, &ti)?;
            title = Some((line, ti));
            continue;
        }
        if t.starts_with("#bytes") {
            if title.is_none() {
                return Err(syntax(
                    path,
                    line,
                    "the test title (e.g. \"RDMA_Write BW Test\") before the result table",
                    t,
                ));
            }
            if table.is_some() {
                notes.push(format!(
                    "line {line}: a second result table (e.g. --report-both's remote side) was not read"
                ));
                break;
            }
            table = Some((line, table_kind(path, line, t)?));
            continue;
        }
        match table {
            Some((_, kind)) if !closed => {
                if !t.starts_with(|c: char| c.is_ascii_digit()) {
                    notes.push(format!("line {line}: skipped text inside the table: {t:?}"));
                    continue;
                }
                match kind {
                    TableKind::Bw { sl, .. } => {
                        let want = if sl { 6 } else { 5 };
                        let v = numbers(
                            path,
                            line,
                            t,
                            "a bandwidth row (#bytes #iterations BW peak BW average MsgRate)",
                            want,
                        )?;
                        let o = usize::from(sl);
                        bw_rows.push((line, v[0], v[1 + o], v[2 + o], v[3 + o], v[4 + o], t.to_string()));
                    }
                    TableKind::Lat(c) => {
                        let want = 2 + c.values();
                        let v = numbers(path, line, t, "a latency row", want)?;
                        if v.len() != want {
                            return Err(syntax(
                                path,
                                line,
                                format!(
                                    "a latency row of {want} numbers, as its header has columns, found {} in",
                                    v.len()
                                ),
                                t,
                            ));
                        }
                        lat_rows.push((line, v, t.to_string()));
                    }
                }
            }
            Some(_) => {}
            None if title.is_some() => {
                for (k, v) in header_pairs(raw) {
                    match k.as_str() {
                        "Device" => header.device = Some(v.clone()),
                        "Mtu" => header.mtu = leading_u32(&v),
                        "Max inline data" => header.max_inline = leading_u32(&v),
                        "Link type" => header.link_type = Some(v.clone()),
                        "GID index" => header.gid_index = leading_u32(&v),
                        "TX depth" => header.tx_depth = leading_u32(&v),
                        "Number of qps" => header.qps = leading_u32(&v),
                        _ => {}
                    }
                    header.fields.push((k, v));
                }
            }
            // before the title: a shell prompt, the command, server banners
            None => {}
        }
    }
    let Some((title_line, ti)) = title else {
        return Err(ParseError::Unrecognised { path: path.into() });
    };
    let tool = tool_of(path, title_line, &ti)?;
    let Some((table_line, kind)) = table else {
        return Err(ParseError::Incomplete {
            path: path.into(),
            what: format!("no result table (a \" #bytes …\" header line) after the test title at line {title_line}"),
        });
    };
    let fabric = match header.link_type.as_deref() {
        Some("IB") => Fabric::Infiniband,
        Some("Ethernet") => Fabric::Roce,
        Some(other) => {
            let line = text
                .lines()
                .position(|l| l.contains("Link type"))
                .map_or(title_line, |p| p + 1);
            return Err(syntax(path, line, "Link type IB or Ethernet", other));
        }
        None => {
            return Err(ParseError::Incomplete {
                path: path.into(),
                what: format!(
                    "the header after the test title at line {title_line} has no \"Link type\" line, which says whether the run was InfiniBand (IB) or RoCE (Ethernet)"
                ),
            });
        }
    };
    let table = match kind {
        TableKind::Bw { unit, .. } => {
            if tool.is_latency() {
                return Err(syntax(
                    path,
                    table_line,
                    format!("a latency table for {}", tool.name()),
                    "a bandwidth table header",
                ));
            }
            let mut rows = Vec::with_capacity(bw_rows.len());
            for (line, bytes, iters, peak, avg, rate, t) in bw_rows {
                rows.push(BwRow {
                    line,
                    bytes: integer(path, line, bytes, "bytes", &t)?,
                    iterations: integer(path, line, iters, "iterations", &t)?,
                    peak_bytes_per_s: peak * unit.bytes_per_s(),
                    average_bytes_per_s: avg * unit.bytes_per_s(),
                    msg_rate_mpps: rate,
                });
            }
            Table::Bw { unit, rows }
        }
        TableKind::Lat(c) => {
            if !tool.is_latency() {
                return Err(syntax(
                    path,
                    table_line,
                    format!("a bandwidth table for {}", tool.name()),
                    "a latency table header",
                ));
            }
            let mut rows = Vec::with_capacity(lat_rows.len());
            for (line, v, t) in lat_rows {
                let mut k = 5;
                let mut next = |on: bool| {
                    on.then(|| {
                        k += 1;
                        v[k - 1]
                    })
                };
                let t_avg = next(c.avg);
                let t_stdev = next(c.stdev);
                let p99 = next(c.percentiles);
                let p999 = next(c.percentiles);
                rows.push(LatRow {
                    line,
                    bytes: integer(path, line, v[0], "bytes", &t)?,
                    iterations: integer(path, line, v[1], "iterations", &t)?,
                    t_min: v[2],
                    t_max: v[3],
                    t_typical: v[4],
                    t_avg,
                    t_stdev,
                    p99,
                    p999,
                });
            }
            Table::Lat { rows }
        }
    };
    let run = PerftestRun {
        path: path.into(),
        tool,
        title: ti.text,
        bidirectional: ti.bidirectional,
        fabric,
        header,
        table,
        notes,
    };
    if run.rows() == 0 {
        return Err(ParseError::Incomplete {
            path: path.into(),
            what: format!("no result rows after the table header at line {table_line}"),
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = "---------------------------------------------------------------------------------------";

    fn lat(title: &str, link: &str, rows: &str) -> String {
        format!(
            "{RULE}\n                    {title}\n Dual-port       : OFF\t\tDevice         : mlx5_0\n Number of qps   : 1\t\tTransport type : IB\n Mtu             : 4096[B]\n Link type       : {link}\n Max inline data : 220[B]\n rdma_cm QPs\t : OFF\n{RULE}\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n{rows}{RULE}\n"
        )
    }

    #[test]
    fn reads_a_latency_run_and_its_header() {
        let text = lat(
            "RDMA_Write Latency Test",
            "IB",
            " 2       1000          0.96           3.87         1.01     \t       1.02        \t0.05\t\t1.12 \t\t3.87\n",
        );
        let r = parse("w.txt", &text).unwrap();
        assert_eq!(r.tool, Tool::WriteLat);
        assert_eq!(r.fabric, Fabric::Infiniband);
        assert_eq!(r.header.mtu, Some(4096));
        assert_eq!(r.header.max_inline, Some(220));
        assert_eq!(r.header.get("rdma_cm QPs"), Some("OFF"));
        assert_eq!(r.header.get("Transport type"), Some("IB"));
        let Table::Lat { rows } = &r.table else { panic!() };
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].bytes, 2);
        assert_eq!(rows[0].t_typical, 1.01);
        assert_eq!(rows[0].p999, Some(3.87));
        assert_eq!(rows[0].line, 11);
    }

    #[test]
    fn an_ethernet_link_is_roce_and_a_warning_in_the_table_is_skipped() {
        let text = lat(
            "Send Latency Test",
            "Ethernet",
            "Conflicting CPU frequency values detected: 2428.573000 != 3004.218000. CPU Frequency is not max.\n 2       1000          5.43           7.90         5.84     \t       5.87        \t0.12\t\t6.51 \t\t7.90\n",
        );
        let r = parse("s.txt", &text).unwrap();
        assert_eq!((r.tool, r.fabric), (Tool::SendLat, Fabric::Roce));
        assert_eq!(r.rows(), 1);
        assert!(r.notes[0].contains("Conflicting CPU frequency"), "{:?}", r.notes);
    }

    #[test]
    fn a_bad_row_names_its_line_and_what_was_expected() {
        let text = lat(
            "RDMA_Write Latency Test",
            "IB",
            " 2       1000          0.96   x  3.87\n",
        );
        let e = parse("w.txt", &text).unwrap_err();
        let m = e.to_string();
        assert!(m.starts_with("read w.txt:11: expected a latency row"), "{m}");
        assert!(m.contains("\"x\""), "{m}");
        let text = lat(
            "RDMA_Write Latency Test",
            "IB",
            " 2       1000          -0.96           3.87         1.01   1.02  0.05  1.12  3.87\n",
        );
        let m = parse("w.txt", &text).unwrap_err().to_string();
        assert!(m.contains("non-negative") && m.contains("perftest#82"), "{m}");
        let text = lat(
            "RDMA_Write Latency Test",
            "IB",
            " 2       1000          0.96  3.87  1.01\n",
        );
        let m = parse("w.txt", &text).unwrap_err().to_string();
        assert!(m.contains("w.txt:11") && m.contains("9 numbers, found 5 in"), "{m}");
    }

    #[test]
    fn tests_it_does_not_read_are_refused_by_name() {
        let text = lat("Send BW Test", "IB", "");
        let m = parse("x.txt", &text).unwrap_err().to_string();
        assert_eq!(
            m,
            "read x.txt:2: perftest test \"Send BW Test\" (ib_send_bw) is not a test calibrate reads (it reads ib_write_bw, ib_write_lat, ib_send_lat and ib_read_lat)"
        );
        let m = parse("x.txt", &lat("Frobnicate Latency Test", "IB", ""))
            .unwrap_err()
            .to_string();
        assert!(m.contains("unknown verb \"Frobnicate\""), "{m}");
    }

    #[test]
    fn bandwidth_units_convert_to_bytes_per_second() {
        let gb = format!(
            "{RULE}\n                    RDMA_Write BW Test\n Link type       : IB\n{RULE}\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 2          5000           0.042350            0.042185            2.636533\n 65536      5000           96.51              96.49\t\t   0.184046\n{RULE}\n"
        );
        let r = parse("b.txt", &gb).unwrap();
        let Table::Bw { unit, rows } = &r.table else { panic!() };
        assert_eq!(*unit, BwUnit::Gbps);
        assert!((rows[1].average_bytes_per_s - 96.49 * 1.25e8).abs() < 1.0);
        // MB/sec means MiB/s (perftest's format_factor 0x100000)
        let mb = gb.replace("Gb/sec", "MB/sec");
        let r = parse("b.txt", &mb).unwrap();
        let Table::Bw { rows, .. } = &r.table else { panic!() };
        assert!((rows[1].average_bytes_per_s - 96.49 * 1_048_576.0).abs() < 1.0);
        // a cycles table and a duration-mode latency table are refused with the fix
        let m = parse(
            "c.txt",
            &lat("RDMA_Write Latency Test", "IB", "").replace("[usec]", "[cycles]"),
        )
        .unwrap_err()
        .to_string();
        assert!(m.contains("rerun without -C"), "{m}");
    }

    #[test]
    fn no_link_type_no_table_no_rows_are_errors() {
        let text = lat("RDMA_Write Latency Test", "IB", "").replace(" Link type       : IB\n", "");
        let m = parse("n.txt", &text).unwrap_err().to_string();
        assert!(m.contains("no \"Link type\""), "{m}");
        let m = parse("n.txt", &lat("RDMA_Write Latency Test", "IB", ""))
            .unwrap_err()
            .to_string();
        assert!(m.contains("no result rows after the table header at line 10"), "{m}");
        let m = parse("n.txt", "hello\n").unwrap_err().to_string();
        assert!(m.contains("not perftest or nccl-tests output"), "{m}");
    }

    #[test]
    fn header_pairs_split_on_tabs_and_join_a_split_key() {
        assert_eq!(
            header_pairs(" Dual-port       : OFF\t\tDevice         : mlx5_0"),
            vec![("Dual-port".into(), "OFF".into()), ("Device".into(), "mlx5_0".into())]
        );
        assert_eq!(
            header_pairs(" rdma_cm QPs\t : OFF"),
            vec![("rdma_cm QPs".into(), "OFF".into())]
        );
    }
}
