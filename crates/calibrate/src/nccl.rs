//! nccl-tests' text output (NVIDIA/nccl-tests, `src/common.cu` and `src/util.cu`;
//! reference B5), old and new header variants:
//!
//! ```text
//! # nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807    (since 2025-10)
//! # Collective test starting: all_reduce_perf                          (since 2025-06)
//! # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
//! # Using devices
//! #  Rank  0 Group  0 Pid  12345 on     host-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3   (older: no Group, [0x18])
//! host-a:12345:12400 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_3:1/RoCE [RO]; OOB …  (with NCCL_DEBUG=INFO)
//! #                                                              out-of-place                       in-place
//! #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//! #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//!    536870912     134217728     float     sum      -1    10052   53.41   93.46      0   9676.9   55.48   97.09      0
//! # Out of bounds values : 0 OK
//! # Avg bus bandwidth    : 95.3009
//! ```
//!
//! Columns are found by name in the header line, so `error` (before v2.13) or
//! `#wrong`, `cputime` (`-C 1`), and the columns `-I 1` and `-S 1` add all parse.
//! `mpirun --tag-output` prefixes (`[1,0]<stdout>:`) are stripped. NCCL's own INFO
//! and WARN lines may sit anywhere, rows included; they are skipped.

use crate::Fabric;
use crate::error::ParseError;

/// The nccl-tests collectives this crate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
}

const READS: &str = "all_reduce_perf, all_gather_perf, reduce_scatter_perf and alltoall_perf";

impl Collective {
    /// Every collective read, in report order.
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllToAll,
    ];

    /// The nccl-tests binary.
    pub fn binary(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce_perf",
            Collective::AllGather => "all_gather_perf",
            Collective::ReduceScatter => "reduce_scatter_perf",
            Collective::AllToAll => "alltoall_perf",
        }
    }

    /// busbw = algbw × this for `n` ranks (nccl-tests `doc/PERFORMANCE.md`,
    /// `src/*.cu` GetBw; reference B5): all-reduce 2(n−1)/n, the others (n−1)/n.
    pub fn bus_factor(self, n: u32) -> f64 {
        let n = f64::from(n.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            _ => (n - 1.0) / n,
        }
    }

    /// The factor's formula, for the method text.
    pub fn factor_formula(self) -> &'static str {
        match self {
            Collective::AllReduce => "2(n-1)/n",
            _ => "(n-1)/n",
        }
    }

    /// Whether the printed size is count × type size × ranks (all-gather,
    /// reduce-scatter, all-to-all) rather than count × type size (all-reduce)
    /// (`common.cu`, `all_gather.cu GetCollByteCount`; reference B5).
    pub fn size_is_total(self) -> bool {
        !matches!(self, Collective::AllReduce)
    }

    /// The collective a binary name (`all_reduce_perf`, `./build/alltoall_perf`) runs.
    fn from_binary(name: &str) -> Option<Collective> {
        let n = name.trim();
        Some(match n.rsplit('/').next().unwrap_or(n) {
            "all_reduce_perf" => Collective::AllReduce,
            "all_gather_perf" => Collective::AllGather,
            "reduce_scatter_perf" => Collective::ReduceScatter,
            "alltoall_perf" => Collective::AllToAll,
            _ => return None,
        })
    }
}

/// One half of a row: out-of-place or in-place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Half {
    /// Microseconds per iteration.
    pub time_us: f64,
    /// GB/s (1e9 bytes per second).
    pub algbw: f64,
    pub busbw: f64,
    /// Elements nccl-tests found wrong (0 when it did not check).
    pub wrong: u64,
}

/// One size.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// 1-based line in the file.
    pub line: usize,
    /// nccl-tests' size column, bytes.
    pub size: u64,
    /// Elements per rank.
    pub count: u64,
    pub dtype: String,
    pub redop: String,
    pub root: i64,
    pub out_of_place: Half,
    pub in_place: Half,
}

/// One nccl-tests run as its output shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct NcclRun {
    pub path: String,
    pub collective: Collective,
    /// Where the collective's name came from.
    pub named_by: String,
    /// Ranks: the `# Using devices` lines, else from busbw/algbw.
    pub ranks: u32,
    /// Hosts among the rank lines (0 when there are none).
    pub hosts: u32,
    /// NICs NCCL listed on its `NET/IB : Using` line.
    pub nics_per_host: Option<u32>,
    /// The fabric NCCL said it used, if the output carries NCCL's INFO lines.
    pub fabric: Option<Fabric>,
    /// `# nccl-tests version …` (new header variant only).
    pub version: Option<String>,
    /// `NCCL version …`.
    pub nccl_version: Option<String>,
    /// `NCCL_ALGO` as NCCL said it was set.
    pub algo: Option<String>,
    pub rows: Vec<Row>,
    /// `# Avg bus bandwidth` as printed, GB/s.
    pub avg_bus_bandwidth: Option<f64>,
    /// Its line.
    pub avg_line: Option<usize>,
    pub notes: Vec<String>,
}

fn syntax(path: &str, line: usize, expected: impl Into<String>, found: &str) -> ParseError {
    ParseError::Syntax {
        path: path.into(),
        line,
        expected: expected.into(),
        found: found.trim().to_string(),
    }
}

/// The line without `mpirun --tag-output`'s `[1,0]<stdout>:` prefix.
pub(crate) fn untag(raw: &str) -> &str {
    let t = raw.trim_start();
    if t.starts_with('[')
        && let Some(i) = t.find("]<stdout>:")
    {
        return &t[i + "]<stdout>:".len()..];
    }
    raw
}

/// Whether `t` (trimmed) is the nccl-tests column header line.
pub(crate) fn is_column_header(t: &str) -> bool {
    let mut w = t.trim_start_matches('#').split_whitespace();
    w.next() == Some("size") && w.next() == Some("count") && w.next() == Some("type")
}

/// Bytes of one element of an nccl-tests data type (`-d`).
fn type_size(t: &str) -> Option<u64> {
    Some(match t {
        "int8" | "uint8" | "char" | "f8e4m3" | "f8e5m2" | "fp8_e4m3" | "fp8_e5m2" => 1,
        "half" | "float16" | "bfloat16" => 2,
        "int32" | "uint32" | "int" | "float" | "float32" => 4,
        "int64" | "uint64" | "double" | "float64" => 8,
        _ => return None,
    })
}

/// Column positions found in the header line.
struct Cols {
    n: usize,
    size: usize,
    count: usize,
    dtype: usize,
    redop: usize,
    root: usize,
    /// (time, algbw, busbw, wrong) for out-of-place, then in-place.
    halves: [(usize, usize, usize, Option<usize>); 2],
}

fn columns(path: &str, line: usize, t: &str) -> Result<Cols, ParseError> {
    let names: Vec<&str> = t.trim_start_matches('#').split_whitespace().collect();
    let find = |name: &str, from: usize| names.iter().skip(from).position(|n| *n == name).map(|p| p + from);
    let need = |name: &str, from: usize| {
        find(name, from).ok_or_else(|| {
            syntax(
                path,
                line,
                format!("an nccl-tests column header with a {name:?} column"),
                t,
            )
        })
    };
    let mut halves = [(0, 0, 0, None); 2];
    let mut from = need("root", 0)? + 1;
    for h in &mut halves {
        let time = find("time", from).or_else(|| find("cputime", from)).ok_or_else(|| {
            syntax(
                path,
                line,
                "an nccl-tests column header with out-of-place and in-place time, algbw and busbw columns",
                t,
            )
        })?;
        let algbw = need("algbw", time)?;
        let busbw = need("busbw", algbw)?;
        let wrong = names
            .get(busbw + 1)
            .filter(|n| **n == "#wrong" || **n == "error")
            .map(|_| busbw + 1);
        *h = (time, algbw, busbw, wrong);
        from = busbw + 1;
    }
    Ok(Cols {
        n: names.len(),
        size: need("size", 0)?,
        count: need("count", 0)?,
        dtype: need("type", 0)?,
        redop: need("redop", 0)?,
        root: need("root", 0)?,
        halves,
    })
}

fn num(path: &str, line: usize, t: &str, tok: &str, what: &str) -> Result<f64, ParseError> {
    match tok.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(syntax(
            path,
            line,
            format!("a non-negative number in the {what} column, found {tok:?}"),
            t,
        )),
    }
}

fn row(path: &str, line: usize, t: &str, c: &Cols) -> Result<Row, ParseError> {
    let toks: Vec<&str> = t.split_whitespace().collect();
    if toks.len() < c.n {
        return Err(syntax(
            path,
            line,
            format!(
                "an nccl-tests row of {} fields, as its column header has, found {}",
                c.n,
                toks.len()
            ),
            t,
        ));
    }
    let int = |i: usize, what: &str| {
        toks[i].parse::<u64>().map_err(|_| {
            syntax(
                path,
                line,
                format!("a whole number in the {what} column, found {:?}", toks[i]),
                t,
            )
        })
    };
    let root = toks[c.root]
        .parse::<i64>()
        .map_err(|_| syntax(path, line, format!("an integer root, found {:?}", toks[c.root]), t))?;
    let half = |h: (usize, usize, usize, Option<usize>)| -> Result<Half, ParseError> {
        Ok(Half {
            time_us: num(path, line, t, toks[h.0], "time")?,
            algbw: num(path, line, t, toks[h.1], "algbw")?,
            busbw: num(path, line, t, toks[h.2], "busbw")?,
            // `#wrong` is an integer, `N/A` with -c 0; before v2.13 `error` was a
            // float such as 4e-07 (a tolerance, not a count): neither counts here.
            wrong: h.3.and_then(|i| toks[i].parse::<u64>().ok()).unwrap_or(0),
        })
    };
    Ok(Row {
        line,
        size: int(c.size, "size")?,
        count: int(c.count, "count")?,
        dtype: toks[c.dtype].to_string(),
        redop: toks[c.redop].to_string(),
        root,
        out_of_place: half(c.halves[0])?,
        in_place: half(c.halves[1])?,
    })
}

/// `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [RO]; OOB …`: the fabric and
/// the NICs listed (NCCL's net_ib transport; e.g. nccl-tests#185 shows
/// `[0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]`).
fn net_ib(t: &str) -> Option<(Option<Fabric>, u32)> {
    let rest = &t[t.find("NET/IB : Using")? + "NET/IB : Using".len()..];
    let rest = rest.split(';').next().unwrap_or(rest);
    let mut fabric = None;
    let mut nics = 0;
    for w in rest.split_whitespace() {
        let Some(dev) = w.strip_prefix('[').and_then(|w| w.split_once(']')).map(|(_, d)| d) else {
            continue;
        };
        let f = if dev.ends_with("/IB") {
            Fabric::Infiniband
        } else if dev.ends_with("/RoCE") {
            Fabric::Roce
        } else {
            continue;
        };
        nics += 1;
        if fabric.is_some_and(|g| g != f) {
            return Some((None, nics));
        }
        fabric = Some(f);
    }
    Some((fabric, nics))
}

/// Parse one nccl-tests output. `path` names the file in errors.
pub fn parse(path: &str, text: &str) -> Result<NcclRun, ParseError> {
    let mut cols: Option<(usize, Cols)> = None;
    let mut rows: Vec<Row> = Vec::new();
    let mut name: Option<(usize, String)> = None;
    let mut saw_header = false;
    let mut ranks = 0u32;
    let mut hosts: Vec<String> = Vec::new();
    let mut fabric: Option<(usize, Fabric)> = None;
    let mut nics: Option<u32> = None;
    let mut version = None;
    let mut nccl_version = None;
    let mut algo = None;
    let mut avg = None;
    let mut avg_line = None;
    let mut notes = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = untag(raw).trim();
        if t.is_empty() {
            continue;
        }
        if let Some(v) = t.strip_prefix("# nccl-tests version") {
            version = Some(v.split_whitespace().next().unwrap_or("").to_string());
            saw_header = true;
        } else if let Some(n) = t.strip_prefix("# Collective test starting:") {
            name = Some((line, n.trim().to_string()));
            saw_header = true;
        } else if t.starts_with("# nThread") {
            saw_header = true;
        } else if let Some(r) = t
            .strip_prefix('#')
            .map(str::trim_start)
            .filter(|r| r.starts_with("Rank "))
        {
            // "Rank  0 Group  0 Pid  12345 on     host-a device  0 [0000:18:00] NVIDIA H100"
            let w: Vec<&str> = r.split_whitespace().collect();
            if let Some(p) = w.iter().position(|x| *x == "on")
                && let Some(h) = w.get(p + 1)
            {
                ranks += 1;
                if !hosts.iter().any(|x| x == h) {
                    hosts.push((*h).to_string());
                }
            }
        } else if is_column_header(t) {
            if cols.is_some() {
                notes.push(format!(
                    "line {line}: a second column header (a second test in the same file) was not read"
                ));
                break;
            }
            cols = Some((line, columns(path, line, t)?));
            saw_header = true;
        } else if let Some(v) = t.strip_prefix("# Avg bus bandwidth") {
            let v = v.trim_start().trim_start_matches(':').trim();
            let tok = v.split_whitespace().next().unwrap_or("");
            avg = Some(num(path, line, t, tok, "Avg bus bandwidth")?);
            avg_line = Some(line);
            if v.contains("FAILED") {
                notes.push(format!(
                    "line {line}: nccl-tests marked the average FAILED (below 0.9 × NCCL_TESTS_MIN_BW)"
                ));
            }
        } else if let Some(v) = t.strip_prefix("# Out of bounds values") {
            if v.contains("FAILED") {
                notes.push(format!(
                    "line {line}: nccl-tests found wrong values in the results ({})",
                    v.trim_start_matches([' ', ':'])
                ));
            }
        } else if t.contains("NCCL INFO") || t.starts_with("NCCL version") {
            if let Some((f, n)) = net_ib(t) {
                match (f, fabric) {
                    (Some(f), Some((first, g))) if f != g => {
                        return Err(syntax(
                            path,
                            line,
                            format!("NICs of one fabric (line {first} lists {} NICs)", g.label()),
                            t,
                        ));
                    }
                    (Some(f), None) => fabric = Some((line, f)),
                    (None, _) => {
                        return Err(syntax(path, line, "NICs that are all /IB or all /RoCE", t));
                    }
                    _ => {}
                }
                nics = Some(nics.map_or(n, |m: u32| m.max(n)));
            } else if let Some(v) = t.split("NCCL version ").nth(1) {
                nccl_version.get_or_insert_with(|| v.split_whitespace().next().unwrap_or("").to_string());
            } else if let Some(v) = t.split("NCCL_ALGO set by environment to ").nth(1) {
                algo = Some(v.trim().trim_end_matches('.').to_string());
            } else if t.contains("Using network Socket") {
                return Err(syntax(
                    path,
                    line,
                    "NCCL on an RDMA network (NET/IB); this run used TCP sockets, which says nothing of the fabric's RDMA endpoints",
                    t,
                ));
            }
        } else if let Some((_, c)) = &cols
            && t.starts_with(|ch: char| ch.is_ascii_digit())
        {
            rows.push(row(path, line, t, c)?);
        }
    }
    if !saw_header {
        return Err(ParseError::Unrecognised { path: path.into() });
    }
    let Some((header_line, _)) = cols else {
        return Err(ParseError::Incomplete {
            path: path.into(),
            what: "no nccl-tests column header (\"#       size         count      type   redop    root     time …\")"
                .into(),
        });
    };
    if rows.is_empty() {
        return Err(ParseError::Incomplete {
            path: path.into(),
            what: format!("no result rows after the column header at line {header_line}"),
        });
    }
    let file_name = std::path::Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (collective, named_by) = match &name {
        Some((line, n)) => match Collective::from_binary(n) {
            Some(c) => (c, format!("line {line}")),
            None => {
                return Err(ParseError::UnsupportedTest {
                    path: path.into(),
                    line: *line,
                    saw: format!("nccl-tests {n}"),
                    reads: READS,
                });
            }
        },
        None => match by_file_name(&file_name) {
            Some(c) => (c, format!("the file name {file_name:?}")),
            None => (infer(path, &rows, ranks)?, "its rows (redop and size/count)".into()),
        },
    };
    if ranks == 0 {
        ranks = ranks_from_ratio(path, &rows, collective)?;
    }
    check_rows(path, &rows, collective, ranks)?;
    if let Some(a) = &algo
        && !a.eq_ignore_ascii_case("ring")
    {
        notes.push(format!(
            "NCCL_ALGO={a}: with NVLS or Tree busbw can exceed what the network carries; NCCL_ALGO=RING measures the network (nccl-tests#196)"
        ));
    }
    Ok(NcclRun {
        path: path.into(),
        collective,
        named_by,
        ranks,
        hosts: hosts.len() as u32,
        nics_per_host: nics,
        fabric: fabric.map(|(_, f)| f),
        version,
        nccl_version,
        algo,
        rows,
        avg_bus_bandwidth: avg,
        avg_line,
        notes,
    })
}

/// A collective named in the file name (`all_reduce_perf.txt`, `allreduce-16.log`).
fn by_file_name(f: &str) -> Option<Collective> {
    let f = f.to_ascii_lowercase().replace(['-', '.'], "_");
    if f.contains("all_reduce") || f.contains("allreduce") {
        Some(Collective::AllReduce)
    } else if f.contains("all_gather") || f.contains("allgather") {
        Some(Collective::AllGather)
    } else if f.contains("reduce_scatter") || f.contains("reducescatter") {
        Some(Collective::ReduceScatter)
    } else if f.contains("alltoall") || f.contains("all_to_all") {
        Some(Collective::AllToAll)
    } else {
        None
    }
}

/// The collective from the rows when nothing names it: a reduction whose size is
/// count × type size is an all-reduce (a rooted one is `reduce_perf`), one whose
/// size is that × ranks a reduce-scatter; without a reduction, all-gather and
/// all-to-all print the same columns and cannot be told apart.
fn infer(path: &str, rows: &[Row], ranks: u32) -> Result<Collective, ParseError> {
    let r = rows.iter().find(|r| r.count > 0).unwrap_or(&rows[0]);
    let ts = type_size(&r.dtype);
    let per_rank = ts.and_then(|s| r.count.checked_mul(s));
    let unnamed = |why: &str| ParseError::Incomplete {
        path: path.into(),
        what: format!(
            "it does not name its collective (no \"# Collective test starting:\" line, which nccl-tests prints since 2025-06, and no all_reduce, all_gather, reduce_scatter or alltoall in the file name), and {why}"
        ),
    };
    if r.redop == "none" {
        return Err(unnamed(
            "all_gather_perf and alltoall_perf print the same columns (redop none)",
        ));
    }
    if r.root >= 0 {
        return Err(ParseError::UnsupportedTest {
            path: path.into(),
            line: r.line,
            saw: format!("nccl-tests with root {} (reduce_perf or broadcast_perf)", r.root),
            reads: READS,
        });
    }
    match per_rank {
        Some(b) if b == r.size => Ok(Collective::AllReduce),
        Some(b) if ranks > 0 && b.checked_mul(u64::from(ranks)) == Some(r.size) => Ok(Collective::ReduceScatter),
        _ => Err(unnamed(&format!(
            "its line {} ({} bytes, {} × {}) does not show which",
            r.line, r.size, r.count, r.dtype
        ))),
    }
}

/// Ranks from busbw / algbw when the rank lines are missing.
fn ranks_from_ratio(path: &str, rows: &[Row], c: Collective) -> Result<u32, ParseError> {
    let r = rows
        .iter()
        .flat_map(|r| [r.out_of_place, r.in_place])
        .filter(|h| h.algbw >= 1.0)
        .max_by(|a, b| a.algbw.total_cmp(&b.algbw))
        .ok_or_else(|| ParseError::Incomplete {
            path: path.into(),
            what: "no \"# Using devices\" rank lines and no row with algbw of 1 GB/s or more to tell the number of ranks from busbw/algbw".into(),
        })?;
    let f = r.busbw / r.algbw;
    // all-reduce: f = 2(n-1)/n, n = 2/(2-f); the others: f = (n-1)/n, n = 1/(1-f)
    let n = match c {
        Collective::AllReduce => 2.0 / (2.0 - f),
        _ => 1.0 / (1.0 - f),
    };
    // busbw and algbw are printed to 2 decimals: the ratio is known to within
    // this, and the whole number of ranks must give a factor that close.
    let tol = f * (0.005 / r.busbw.max(0.005) + 0.005 / r.algbw) + 1e-9;
    if !(n.is_finite() && n >= 1.5 && (c.bus_factor(n.round() as u32) - f).abs() <= tol) {
        return Err(ParseError::Incomplete {
            path: path.into(),
            what: format!(
                "no \"# Using devices\" rank lines, and busbw/algbw = {f:.4} gives no whole number of ranks for {}",
                c.binary()
            ),
        });
    }
    Ok(n.round() as u32)
}

/// Every row's busbw is its algbw times the collective's factor for `n` ranks;
/// a row that is not says the collective or the rank count is wrong.
fn check_rows(path: &str, rows: &[Row], c: Collective, n: u32) -> Result<(), ParseError> {
    let f = c.bus_factor(n);
    for r in rows {
        for h in [r.out_of_place, r.in_place] {
            // Printed with 2 decimals: below 1 GB/s the ratio is rounding noise.
            if h.algbw >= 1.0 && (h.busbw - h.algbw * f).abs() > 0.02 * h.busbw + 0.01 {
                return Err(ParseError::Syntax {
                    path: path.into(),
                    line: r.line,
                    expected: format!(
                        "busbw = algbw × {} = {:.2} for {} on {n} ranks",
                        c.factor_formula(),
                        h.algbw * f,
                        c.binary()
                    ),
                    found: format!("algbw {} busbw {}", h.algbw, h.busbw),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
    const ROWS_252: &str = "   536870912     134217728     float     sum      -1    10052   53.41   93.46      0   9676.9   55.48   97.09      0\n  1073741824     268435456     float     sum      -1    20079   53.48   93.58      0    19265   55.74   97.54      0\n";

    fn devices(n: u32) -> String {
        let mut s = String::from("# Using devices\n");
        for r in 0..n {
            s += &format!(
                "#  Rank {r:2} Group  0 Pid {:6} on     node-{} device {:2} [0x07] NVIDIA A100-SXM4-80GB\n",
                4000 + r,
                r / 4,
                r % 4
            );
        }
        s
    }

    #[test]
    fn reads_the_old_header_variant_with_a_collective_named_by_its_rows() {
        let text = format!(
            "# nThread 1 nGpus 1 minBytes 536870912 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n{}#\n{HEAD}{ROWS_252}# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 94.9175 \n#\n",
            devices(8)
        );
        let r = parse("out.txt", &text).unwrap();
        assert_eq!(r.collective, Collective::AllReduce);
        assert_eq!((r.ranks, r.hosts), (8, 2));
        assert_eq!(r.fabric, None);
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].out_of_place.time_us, 10052.0);
        assert_eq!(r.rows[0].in_place.busbw, 97.09);
        assert_eq!(r.avg_bus_bandwidth, Some(94.9175));
        assert!(r.named_by.contains("rows"), "{}", r.named_by);
    }

    #[test]
    fn reads_the_new_variant_with_tags_info_lines_and_pre_213_error_columns() {
        let text = format!(
            "[1,0]<stdout>:# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n[1,0]<stdout>:# Collective test starting: all_gather_perf\n[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\nh:1:2 [0] NCCL INFO NCCL_ALGO set by environment to RING\nh:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_3:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n{}",
            HEAD.replace("#wrong", "error")
        ) + "     1048576         65536     float    none      -1    60.00   17.48   16.38  0e+00    60.10   17.45   16.36  0e+00\nh:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 16 - Destroy COMPLETE\n";
        let r = parse("x.log", &text).unwrap();
        assert_eq!(r.collective, Collective::AllGather);
        assert_eq!(r.fabric, Some(Fabric::Roce));
        assert_eq!(r.nics_per_host, Some(2));
        assert_eq!(r.ranks, 16, "from busbw/algbw = 15/16");
        assert_eq!(r.version.as_deref(), Some("2.19.6"));
        assert_eq!(r.algo.as_deref(), Some("RING"));
    }

    #[test]
    fn malformed_rows_and_wrong_factors_name_the_line() {
        let text = format!(
            "# nThread 1\n{}{HEAD}   536870912     134217728     float     sum      -1    10052   53.41\n",
            devices(8)
        );
        let m = parse("a.txt", &text).unwrap_err().to_string();
        assert!(
            m.starts_with("read a.txt:13: expected an nccl-tests row of 13 fields"),
            "{m}"
        );
        let text = format!("# nThread 1\n{}{HEAD}{ROWS_252}", devices(4));
        let m = parse("a.txt", &text).unwrap_err().to_string();
        assert!(
            m.contains("a.txt:9") && m.contains("busbw = algbw × 2(n-1)/n = 80.11 for all_reduce_perf on 4 ranks"),
            "{m}"
        );
        let text = format!(
            "# nThread 1\n{}{HEAD}{}",
            devices(8),
            ROWS_252.replace("9676.9", "9676,9")
        );
        let m = parse("a.txt", &text).unwrap_err().to_string();
        assert!(
            m.contains("a.txt:13") && m.contains("time column, found \"9676,9\""),
            "{m}"
        );
    }

    #[test]
    fn unsupported_and_unnamed_collectives_are_refused_by_name() {
        let text = format!("# Collective test starting: broadcast_perf\n# nThread 1\n{HEAD}{ROWS_252}");
        let m = parse("b.txt", &text).unwrap_err().to_string();
        assert!(
            m.starts_with("read b.txt:1: nccl-tests broadcast_perf is not a test calibrate reads"),
            "{m}"
        );
        let text = format!("# nThread 1\n{}{HEAD}", devices(2))
            + "     1048576        131072     float    none      -1    60.00   17.48    8.74      0    60.10   17.45    8.72      0\n";
        let m = parse("out.txt", &text).unwrap_err().to_string();
        assert!(
            m.contains("all_gather_perf and alltoall_perf print the same columns"),
            "{m}"
        );
        // named by the file instead
        let r = parse("runs/alltoall_perf-2x8.txt", &text).unwrap();
        assert_eq!(r.collective, Collective::AllToAll);
    }

    #[test]
    fn sockets_and_mixed_fabrics_are_refused() {
        let text = format!("# nThread 1\nh:1:1 [0] NCCL INFO Using network Socket\n{HEAD}{ROWS_252}");
        assert!(parse("s.txt", &text).unwrap_err().to_string().contains("TCP sockets"));
        let text = format!(
            "# nThread 1\nh:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE; OOB\n{HEAD}{ROWS_252}"
        );
        assert!(
            parse("s.txt", &text)
                .unwrap_err()
                .to_string()
                .contains("all /IB or all /RoCE")
        );
    }
}
