//! Fitting: from parsed perftest and nccl-tests runs to the parameters of the
//! calibration file, per fabric, after the reference's recipe (B8).
//!
//! | parameter | from | model |
//! |---|---|---|
//! | `ib_*_lat` `inline_latency`, `inline_ns_per_byte` | t_typical (median; B8 step 2) of sizes up to the header's `Max inline data` | t = a + s·b, least squares on relative error |
//! | `ib_*_lat` `latency`, `bandwidth` | t_typical of larger sizes (or every size when there is no inline limit, `ib_read_lat`) | t = a + s/B (B8 step 2's piecewise line, broken at the inline limit) |
//! | `ib_write_bw` `message_cost` | 1/MsgRate where the message rate limits (B8 step 4) | t = a |
//! | `ib_write_bw` `peak_bandwidth` | size/time where the line limits (B8 step 5) | t = s/B; rows within 2× of the knee a·B are left out |
//! | `endpoint` `tx_latency` | `ib_write_lat`'s fixed latency − `path_ns` | what the model's NIC adds on send |
//! | `endpoint` `rx_latency` | `ib_send_lat`'s − `ib_write_lat`'s fixed latency | what a SEND costs the receiver beyond a WRITE |
//! | collective `alpha`, `beta_bus` | out-of-place and in-place times from `nccl_min_bytes` up | T = α + S·factor/β_bus (B8 step 6) |
//! | collective `busbw_largest`, `avg_bus_bandwidth`, `busbw_per_nic` | the largest size; the footer as printed; β_bus / NICs per host | |
//!
//! Every measured row comes back as a [`RowCheck`]: the fitted value at that row
//! and its error, or why it was left out.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::Fabric;
use crate::error::FitError;
use crate::file::{Calibration, FORMAT, Name, Parameter, Scope, Source, Unit};
use crate::fit::{self, Line};
use crate::input::Input;
use crate::nccl::{Collective, NcclRun};
use crate::perftest::{BwRow, LatRow, PerftestRun, Table, Tool};

/// Choices of a calibration.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// One-way time of the perftest path's cables and switches, ns, subtracted
    /// from the measured WRITE latency to give `tx_latency` (0: back to back on a
    /// short cable, whose few ns the model's own cable adds back).
    pub path_ns: f64,
    /// nccl-tests rows below this size are left out of the α–β fits: NCCL runs
    /// small sizes with its LL and LL128 protocols (and, with NCCL_ALGO unset,
    /// other algorithms), each with its own latency and bandwidth, so one line
    /// describes the large sizes only.
    pub nccl_min_bytes: u64,
    /// The fabric of nccl-tests files that do not say theirs.
    pub fabric: Option<Fabric>,
    /// Latency runs (their paths, as given) measured through one switch; each
    /// pairs with the back-to-back run of the same test and fabric to give the
    /// switch's latency (flow-level-and-calibration.md B8 step 3).
    pub one_hop: Vec<String>,
    /// What the one-hop path adds besides the switch, ns: its second cable
    /// (about 5 ns per metre), taken off the difference.
    pub one_hop_extra_ns: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            path_ns: 0.0,
            nccl_min_bytes: 1 << 20,
            fabric: None,
            one_hop: Vec::new(),
            one_hop_extra_ns: 0.0,
        }
    }
}

/// One measured row against its fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RowCheck {
    pub fabric: Fabric,
    pub scope: Scope,
    pub path: String,
    /// 1-based line in the file.
    pub line: usize,
    /// Message or collective size, bytes.
    pub size: u64,
    /// What was measured: `t_typical`, `time per message`, `out-of-place time`,
    /// `in-place time`.
    pub series: &'static str,
    pub measured: f64,
    /// What the fitted parameters give at this size.
    pub fitted: f64,
    /// `ns` or `us`.
    pub unit: Unit,
    /// (fitted − measured) / measured.
    pub error: f64,
    /// Why the row is not part of the fit (its error then says how far the fit
    /// is from it anyway).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

/// A calibration and the check of every row behind it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibrated {
    pub calibration: Calibration,
    pub rows: Vec<RowCheck>,
}

/// Round to 6 significant digits, so the file shows measured precision.
fn sig(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    format!("{v:.5e}").parse().unwrap_or(v)
}

/// A residual rounded up at the 7th decimal, so the file never understates it.
fn resid(v: f64) -> f64 {
    (v * 1e7).ceil() / 1e7
}

/// Builds parameters and row checks for one fabric.
struct Out<'a> {
    fabric: Fabric,
    params: &'a mut Vec<Parameter>,
    rows: &'a mut Vec<RowCheck>,
}

impl Out<'_> {
    #[expect(clippy::too_many_arguments, reason = "one parameter's fields, named at each call")]
    fn param(
        &mut self,
        scope: Scope,
        name: Name,
        value: f64,
        sources: Vec<String>,
        residual: f64,
        rows: usize,
        excluded: Vec<String>,
        method: String,
    ) {
        self.params.push(Parameter {
            fabric: self.fabric,
            scope,
            name,
            value: sig(value),
            unit: name.unit(),
            sources,
            residual: resid(residual),
            rows: rows as u32,
            excluded,
            method,
        });
    }
}

/// Largest |error| over rows that were fitted.
fn worst(errs: impl IntoIterator<Item = f64>) -> f64 {
    errs.into_iter().fold(0.0, |m, e: f64| m.max(e.abs()))
}

/// "size 4096 (line 31): why".
fn excluded_text(size: u64, line: usize, why: &str) -> String {
    format!("size {size} (line {line}): {why}")
}

/// A latency tool's fit: the fixed (small-message) latency in ns, its residual
/// and rows.
struct LatFit {
    fixed_ns: f64,
    residual: f64,
    rows: usize,
}

fn fit_latency(o: &mut Out<'_>, run: &PerftestRun, rows: &[LatRow]) -> Result<LatFit, FitError> {
    let scope = Scope::of_tool(run.tool);
    let src = vec![run.path.clone()];
    let split = match run.tool {
        // READ has no inline data; its header prints "Outstand reads" instead.
        Tool::ReadLat => None,
        _ => run.header.max_inline.filter(|&m| m > 0),
    };
    let rtt = if run.tool == Tool::ReadLat {
        "; the full round trip (perftest does not halve READ latency, rtt_factor 1)"
    } else {
        "; one way (perftest halves the WRITE and SEND ping-pong)"
    };
    let mut zero = Vec::new();
    let (mut small, mut large) = (Vec::new(), Vec::new());
    for r in rows {
        if r.t_typical <= 0.0 {
            zero.push(r);
        } else if split.is_some_and(|m| r.bytes <= u64::from(m)) {
            small.push(r);
        } else {
            large.push(r);
        }
    }
    let excluded: Vec<String> = zero
        .iter()
        .map(|r| excluded_text(r.bytes, r.line, "t_typical printed as 0.00"))
        .collect();
    for r in &zero {
        o.rows.push(RowCheck {
            fabric: o.fabric,
            scope,
            path: run.path.clone(),
            line: r.line,
            size: r.bytes,
            series: "t_typical",
            measured: 0.0,
            fitted: 0.0,
            unit: Unit::Ns,
            error: 0.0,
            excluded: Some("t_typical printed as 0.00".into()),
        });
    }
    let segment = |o: &mut Out<'_>, seg: &[&LatRow], inline: bool| -> Result<(Line, f64), FitError> {
        let pts: Vec<(f64, f64)> = seg.iter().map(|r| (r.bytes as f64, r.t_typical * 1e3)).collect();
        let sizes = {
            let mut s: Vec<u64> = seg.iter().map(|r| r.bytes).collect();
            s.dedup();
            s.len()
        };
        let mut l = fit::line(&pts).expect("positive t_typical rows");
        if sizes < 2 {
            l.c = 0.0;
        }
        if l.a < 0.0 {
            return Err(FitError::Model {
                path: run.path.clone(),
                what: format!(
                    "{}'s t_typical over {}–{} B gives a line t = a + s·b with a negative intercept ({:.1} ns): the rows do not follow one line",
                    run.tool.name(),
                    seg[0].bytes,
                    seg[seg.len() - 1].bytes,
                    l.a
                ),
            });
        }
        let errs: Vec<f64> = seg
            .iter()
            .map(|r| fit::relative(l.at(r.bytes as f64), r.t_typical * 1e3))
            .collect();
        for (r, e) in seg.iter().zip(&errs) {
            o.rows.push(RowCheck {
                fabric: o.fabric,
                scope,
                path: run.path.clone(),
                line: r.line,
                size: r.bytes,
                series: "t_typical",
                measured: r.t_typical * 1e3,
                fitted: l.at(r.bytes as f64),
                unit: Unit::Ns,
                error: *e,
                excluded: None,
            });
        }
        let residual = worst(errs);
        let (lo, hi) = (seg[0].bytes, seg[seg.len() - 1].bytes);
        let range = if sizes < 2 {
            format!("the one size, {lo} B: t_typical (median) as printed, slope not measured")
        } else {
            format!(
                "least squares on relative error of t_typical (median) = a + s·b over {} rows, {lo}–{hi} B",
                seg.len()
            )
        };
        let limit = split.map_or(String::new(), |m| {
            if inline {
                format!(", up to the inline limit (Max inline data {m} B)")
            } else {
                format!(", above the inline limit (Max inline data {m} B)")
            }
        });
        if inline {
            o.param(
                scope,
                Name::InlineLatency,
                l.a,
                src.clone(),
                residual,
                seg.len(),
                excluded.clone(),
                format!("a of {range}{limit}{rtt}"),
            );
            if sizes >= 2 {
                o.param(
                    scope,
                    Name::InlineNsPerByte,
                    l.c,
                    src.clone(),
                    residual,
                    seg.len(),
                    excluded.clone(),
                    format!("b of {range}{limit}"),
                );
            }
        } else {
            if sizes >= 2 && l.c <= 0.0 {
                return Err(FitError::Model {
                    path: run.path.clone(),
                    what: format!(
                        "{}'s t_typical does not grow with size over {lo}–{hi} B (fitted slope {:.3e} ns/B), so no bandwidth can be fitted; is it one run of -a?",
                        run.tool.name(),
                        l.c
                    ),
                });
            }
            o.param(
                scope,
                Name::Latency,
                l.a,
                src.clone(),
                residual,
                seg.len(),
                excluded.clone(),
                format!("a of {range}{limit}{rtt}"),
            );
            if sizes >= 2 {
                o.param(
                    scope,
                    Name::Bandwidth,
                    1.0 / l.c,
                    src.clone(),
                    residual,
                    seg.len(),
                    excluded.clone(),
                    format!("1/b of {range}{limit}: bytes per ns = GB/s"),
                );
            }
        }
        Ok((l, residual))
    };
    let first = if !small.is_empty() {
        let (l, r) = segment(o, &small, true)?;
        Some((l, r, small.len()))
    } else {
        None
    };
    let second = if !large.is_empty() {
        let (l, r) = segment(o, &large, false)?;
        Some((l, r, large.len()))
    } else {
        None
    };
    let (l, residual, n) = first.or(second).ok_or_else(|| FitError::Model {
        path: run.path.clone(),
        what: "no row with a t_typical above 0".into(),
    })?;
    Ok(LatFit {
        fixed_ns: l.a,
        residual,
        rows: n,
    })
}

/// Where a bandwidth-test row sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Regime {
    /// The message rate limits: time per message is constant.
    Messages,
    /// The line limits: time per message grows with size.
    Line,
    /// Within 2× of the knee: neither alone.
    Knee,
}

fn fit_bw(o: &mut Out<'_>, run: &PerftestRun, rows: &[BwRow]) -> Result<(), FitError> {
    let scope = Scope::IbWriteBw;
    let src = vec![run.path.clone()];
    // Time per message, ns: perftest's MsgRate is messages per µs; a
    // bidirectional run's client prints the sum of both directions.
    let dirs = if run.bidirectional { 2.0 } else { 1.0 };
    let mut skipped = Vec::new();
    let pts: Vec<(&BwRow, f64)> = rows
        .iter()
        .filter_map(|r| {
            if r.msg_rate_mpps > 0.0 {
                Some((r, dirs * 1e3 / r.msg_rate_mpps))
            } else {
                skipped.push(r);
                None
            }
        })
        .collect();
    if pts.is_empty() {
        return Err(FitError::Model {
            path: run.path.clone(),
            what: "every row prints MsgRate 0".into(),
        });
    }
    let s = |r: &BwRow| r.bytes as f64;
    let (first, last) = (pts[0], pts[pts.len() - 1]);
    // A flat curve is all message rate; one that grows as fast as the size is
    // all line rate; otherwise start from its two ends and iterate.
    let flat = last.1 / first.1 < 1.1;
    let linear = s(last.0) > s(first.0) && (last.1 / first.1) / (s(last.0) / s(first.0)) > 0.9;
    let mut a = first.1;
    let mut b = s(last.0) / last.1;
    let classify = |a: f64, b: f64, r: &BwRow| {
        if flat || (pts.len() == 1 && r.bytes < 16 * 1024) {
            Regime::Messages
        } else if linear || pts.len() == 1 {
            Regime::Line
        } else {
            let knee = a * b;
            if s(r) <= knee / 2.0 {
                Regime::Messages
            } else if s(r) >= 2.0 * knee {
                Regime::Line
            } else {
                Regime::Knee
            }
        }
    };
    let mut regimes: Vec<Regime> = pts.iter().map(|(r, _)| classify(a, b, r)).collect();
    for _ in 0..16 {
        let m: Vec<f64> = pts
            .iter()
            .zip(&regimes)
            .filter(|(_, g)| **g == Regime::Messages)
            .map(|((_, t), _)| *t)
            .collect();
        let l: Vec<(f64, f64)> = pts
            .iter()
            .zip(&regimes)
            .filter(|(_, g)| **g == Regime::Line)
            .map(|((r, t), _)| (s(r), *t))
            .collect();
        if let Some(v) = fit::constant(&m) {
            a = v;
        }
        if let Some(c) = fit::proportional(&l) {
            b = 1.0 / c;
        }
        let next: Vec<Regime> = pts.iter().map(|(r, _)| classify(a, b, r)).collect();
        if next == regimes {
            break;
        }
        regimes = next;
    }
    let has = |g: Regime| regimes.contains(&g);
    let knee = a * b;
    let knee_why = format!(
        "between the message-rate and line-rate limits (within 2x of the knee a·B = {knee:.0} B), where perftest's {} outstanding messages overlap the two and max(a, s/B) does not hold",
        run.header.tx_depth.map_or("queued".to_string(), |d| d.to_string())
    );
    let mut excluded: Vec<String> = skipped
        .iter()
        .map(|r| excluded_text(r.bytes, r.line, "MsgRate printed as 0"))
        .collect();
    let (mut e_m, mut e_l) = (Vec::new(), Vec::new());
    for ((r, t), g) in pts.iter().zip(&regimes) {
        let fitted = match g {
            Regime::Messages => a,
            Regime::Line => s(r) / b,
            Regime::Knee => a.max(s(r) / b),
        };
        let e = fit::relative(fitted, *t);
        match g {
            Regime::Messages => e_m.push(e),
            Regime::Line => e_l.push(e),
            Regime::Knee => excluded.push(excluded_text(r.bytes, r.line, &knee_why)),
        }
        o.rows.push(RowCheck {
            fabric: o.fabric,
            scope,
            path: run.path.clone(),
            line: r.line,
            size: r.bytes,
            series: "time per message",
            measured: *t,
            fitted,
            unit: Unit::Ns,
            error: e,
            excluded: (*g == Regime::Knee).then(|| knee_why.clone()),
        });
    }
    let bidi = if run.bidirectional {
        " (bidirectional: the client's sum halved)"
    } else {
        ""
    };
    if has(Regime::Messages) {
        o.param(
            scope,
            Name::MessageCost,
            a,
            src.clone(),
            worst(e_m.iter().copied()),
            e_m.len(),
            excluded.clone(),
            format!(
                "least squares on relative error of the time per message 1/MsgRate{bidi} = a over the {} rows the message rate limits (per-QP issue cost, reference B8 step 4)",
                e_m.len()
            ),
        );
    }
    if has(Regime::Line) {
        o.param(
            scope,
            Name::PeakBandwidth,
            b,
            src,
            worst(e_l.iter().copied()),
            e_l.len(),
            excluded,
            format!(
                "least squares on relative error of the time per message 1/MsgRate{bidi} = s/B over the {} rows the line limits (B8 step 5); bytes per ns = GB/s",
                e_l.len()
            ),
        );
    }
    Ok(())
}

fn fit_collective(o: &mut Out<'_>, run: &NcclRun, min_bytes: u64) -> Result<(), FitError> {
    let scope = Scope::of_collective(run.collective);
    let src = vec![run.path.clone()];
    let n = run.ranks;
    let f = run.collective.bus_factor(n);
    let mut excluded = Vec::new();
    let mut pts = Vec::new();
    let mut samples = Vec::new();
    let mut why_of = BTreeMap::new();
    for r in &run.rows {
        let why = if r.size == 0 {
            Some("size 0".to_string())
        } else if r.size < min_bytes {
            Some(format!(
                "below {min_bytes} B (nccl_min_bytes): NCCL runs small sizes with its LL/LL128 protocols, whose latency and bandwidth are not the large sizes' line"
            ))
        } else if r.out_of_place.wrong > 0 || r.in_place.wrong > 0 {
            Some("nccl-tests counted wrong elements".to_string())
        } else if r.out_of_place.time_us <= 0.0 || r.in_place.time_us <= 0.0 {
            Some("time printed as 0".to_string())
        } else {
            None
        };
        match why {
            Some(w) => {
                excluded.push(excluded_text(r.size, r.line, &w));
                why_of.insert(r.line, w);
            }
            None => {
                pts.push((r.size as f64, r.out_of_place.time_us));
                pts.push((r.size as f64, r.in_place.time_us));
            }
        }
        samples.push((r, "out-of-place time", r.out_of_place.time_us));
        samples.push((r, "in-place time", r.in_place.time_us));
    }
    let sizes = {
        let mut s: Vec<u64> = run
            .rows
            .iter()
            .filter(|r| !why_of.contains_key(&r.line))
            .map(|r| r.size)
            .collect();
        s.dedup();
        s.len()
    };
    let formula = run.collective.factor_formula();
    if sizes >= 2 {
        let mut l = fit::line(&pts).expect("positive times");
        let mut through_origin = None;
        if l.a < 0.0 {
            through_origin = Some(l.a);
            l = Line {
                a: 0.0,
                c: fit::proportional(&pts).expect("positive sizes and times"),
            };
        }
        if l.c <= 0.0 {
            return Err(FitError::Model {
                path: run.path.clone(),
                what: format!(
                    "{}'s time does not grow with size from {min_bytes} B up (fitted slope {:.3e} µs/B)",
                    run.collective.binary(),
                    l.c
                ),
            });
        }
        let mut errs = Vec::new();
        for (r, series, t) in &samples {
            let fitted = l.at(r.size as f64);
            let e = if *t > 0.0 { fit::relative(fitted, *t) } else { 0.0 };
            let ex = why_of.get(&r.line).cloned();
            if ex.is_none() {
                errs.push(e);
            }
            o.rows.push(RowCheck {
                fabric: o.fabric,
                scope,
                path: run.path.clone(),
                line: r.line,
                size: r.size,
                series,
                measured: *t,
                fitted,
                unit: Unit::Us,
                error: e,
                excluded: ex,
            });
        }
        let residual = worst(errs.iter().copied());
        // S bytes, T µs: β_bus = factor / c bytes per µs = factor / (c·1e3) GB/s.
        let beta = f / (l.c * 1e3);
        let fitted_sizes: Vec<u64> = run
            .rows
            .iter()
            .filter(|r| !why_of.contains_key(&r.line))
            .map(|r| r.size)
            .collect();
        let range = format!(
            "least squares on relative error of T = α + S·{formula}/β_bus (n = {n} ranks, factor {f:.4}; reference B5, B8 step 6) over the out-of-place and in-place times of {} rows, {}–{} B (rows below nccl_min_bytes, {min_bytes} B, left out)",
            fitted_sizes.len(),
            fitted_sizes[0],
            fitted_sizes[fitted_sizes.len() - 1]
        );
        let origin = through_origin.map_or(String::new(), |a| {
            format!(
                "; the intercept came out negative ({a:.1} µs), too small against these sizes to measure, so α is 0 and β_bus is fitted through the origin"
            )
        });
        o.param(
            scope,
            Name::Alpha,
            l.a,
            src.clone(),
            residual,
            errs.len(),
            excluded.clone(),
            format!("α of {range}{origin}"),
        );
        o.param(
            scope,
            Name::BetaBus,
            beta,
            src.clone(),
            residual,
            errs.len(),
            excluded.clone(),
            format!("β_bus of {range}{origin}"),
        );
        if let Some(k) = run.nics_per_host.filter(|&k| k > 0)
            && run.collective != Collective::AllToAll
        {
            o.param(
                scope,
                Name::BusbwPerNic,
                beta / f64::from(k),
                src.clone(),
                residual,
                errs.len(),
                excluded.clone(),
                format!(
                    "β_bus / {k} NICs per host (NCCL's NET/IB line): T = α + S·factor/(k·B_nic), reference B8 step 6"
                ),
            );
        }
    } else {
        for (r, series, t) in &samples {
            o.rows.push(RowCheck {
                fabric: o.fabric,
                scope,
                path: run.path.clone(),
                line: r.line,
                size: r.size,
                series,
                measured: *t,
                fitted: *t,
                unit: Unit::Us,
                error: 0.0,
                excluded: Some(
                    why_of
                        .get(&r.line)
                        .cloned()
                        .unwrap_or_else(|| "one size only: no α–β line can be fitted".to_string()),
                ),
            });
        }
    }
    if let Some(r) = run
        .rows
        .iter()
        .rev()
        .find(|r| !why_of.contains_key(&r.line) || sizes < 2)
    {
        o.param(
            scope,
            Name::BusbwLargest,
            (r.out_of_place.busbw + r.in_place.busbw) / 2.0,
            src.clone(),
            0.0,
            1,
            Vec::new(),
            format!(
                "mean of the out-of-place and in-place busbw at {} B (line {}), as printed",
                r.size, r.line
            ),
        );
    }
    if let (Some(avg), Some(line)) = (run.avg_bus_bandwidth, run.avg_line) {
        o.param(
            scope,
            Name::AvgBusBandwidth,
            avg,
            src,
            0.0,
            run.rows.len(),
            Vec::new(),
            format!(
                "as printed (line {line}): nccl-tests' mean busbw over every row, out-of-place and in-place, small sizes included, so below the large sizes' busbw"
            ),
        );
    }
    Ok(())
}

/// Fit every input. Each (fabric, test) may come once; nccl-tests files that do
/// not say their fabric take `opts.fabric`.
pub fn calibrate(inputs: &[Input], opts: &Options) -> Result<Calibrated, FitError> {
    if inputs.is_empty() {
        return Err(FitError::Empty);
    }
    let mut by: BTreeMap<(Fabric, Scope), &Input> = BTreeMap::new();
    let mut hop: BTreeMap<(Fabric, Tool), &PerftestRun> = BTreeMap::new();
    let mut sources = Vec::new();
    for i in inputs {
        let fabric = i
            .fabric()
            .or(opts.fabric)
            .ok_or_else(|| FitError::NoFabric { path: i.path().into() })?;
        if opts.one_hop.iter().any(|p| p == i.path()) {
            let run = match i {
                Input::Perftest(r) if matches!(r.tool, Tool::WriteLat | Tool::SendLat) => r,
                _ => {
                    return Err(FitError::Model {
                        path: i.path().into(),
                        what: format!(
                            "{} given as a one-hop run: only ib_write_lat and ib_send_lat give a switch's latency",
                            i.test()
                        ),
                    });
                }
            };
            if let Some(prev) = hop.insert((fabric, run.tool), run) {
                return Err(FitError::Duplicate {
                    test: format!("{} through one switch", i.test()),
                    fabric,
                    first: prev.path.clone(),
                    second: run.path.clone(),
                });
            }
            let mut notes = i.notes().to_vec();
            notes.push(
                "through one switch (--one-hop): pairs with the back-to-back run for the switch's latency".into(),
            );
            sources.push(Source {
                path: i.path().into(),
                test: i.test().into(),
                fabric,
                rows: i.rows() as u32,
                notes,
            });
            continue;
        }
        let scope = match i {
            Input::Perftest(r) => Scope::of_tool(r.tool),
            Input::Nccl(r) => Scope::of_collective(r.collective),
        };
        if let Some(prev) = by.insert((fabric, scope), i) {
            return Err(FitError::Duplicate {
                test: i.test().into(),
                fabric,
                first: prev.path().into(),
                second: i.path().into(),
            });
        }
        let mut notes = i.notes().to_vec();
        if let Input::Nccl(r) = i {
            if r.fabric.is_none() {
                notes.push(format!(
                    "fabric {fabric} from --fabric (the output carries no NCCL NET/IB line)"
                ));
            }
            let all: Vec<f64> = r
                .rows
                .iter()
                .flat_map(|x| [x.out_of_place.busbw, x.in_place.busbw])
                .collect();
            let mean = all.iter().sum::<f64>() / all.len() as f64;
            if let Some(avg) = r.avg_bus_bandwidth
                && (avg - mean).abs() > 0.01 * avg.max(0.01)
            {
                notes.push(format!(
                    "the footer's Avg bus bandwidth {avg} is not the mean of the rows' busbw ({mean:.4}): rows missing from the file?"
                ));
            }
        }
        sources.push(Source {
            path: i.path().into(),
            test: i.test().into(),
            fabric,
            rows: i.rows() as u32,
            notes,
        });
    }
    let mut params = Vec::new();
    let mut rows = Vec::new();
    for fabric in Fabric::ALL {
        let mut out = Out {
            fabric,
            params: &mut params,
            rows: &mut rows,
        };
        let start = out.params.len();
        let perftest = |t: Tool| match by.get(&(fabric, Scope::of_tool(t))) {
            Some(Input::Perftest(r)) => Some(r),
            _ => None,
        };
        let mut fixed: BTreeMap<Tool, (LatFit, String)> = BTreeMap::new();
        for tool in [Tool::WriteLat, Tool::SendLat, Tool::ReadLat] {
            if let Some(run) = perftest(tool)
                && let Table::Lat { rows } = &run.table
            {
                fixed.insert(tool, (fit_latency(&mut out, run, rows)?, run.path.clone()));
            }
        }
        if let Some(run) = perftest(Tool::WriteBw)
            && let Table::Bw { rows, .. } = &run.table
        {
            fit_bw(&mut out, run, rows)?;
        }
        // the endpoint parameters go first among this fabric's
        let mut endpoint = Vec::new();
        let mut eo = Out {
            fabric,
            params: &mut endpoint,
            rows: &mut Vec::new(),
        };
        if let Some((w, wpath)) = fixed.get(&Tool::WriteLat) {
            let tx = w.fixed_ns - opts.path_ns;
            if tx < 0.0 {
                return Err(FitError::Model {
                    path: wpath.clone(),
                    what: format!(
                        "the path's {} ns (--path-ns) exceed ib_write_lat's fixed one-way latency, {:.1} ns",
                        opts.path_ns, w.fixed_ns
                    ),
                });
            }
            eo.param(
                Scope::Endpoint,
                Name::TxLatency,
                tx,
                vec![wpath.clone()],
                w.residual,
                w.rows,
                Vec::new(),
                format!(
                    "ib_write_lat's fixed one-way latency ({:.1} ns) minus the perftest path's {} ns (path_ns): the NIC, PCIe and host time of a WRITE, applied as the simulated NIC's send latency",
                    w.fixed_ns, opts.path_ns
                ),
            );
            if let Some((s, spath)) = fixed.get(&Tool::SendLat) {
                let mut rx = s.fixed_ns - w.fixed_ns;
                let mut zeroed = String::new();
                if rx < 0.0 {
                    if -rx > 0.05 * w.fixed_ns {
                        return Err(FitError::Model {
                            path: spath.clone(),
                            what: format!(
                                "ib_send_lat's fixed latency ({:.1} ns) is below ib_write_lat's ({:.1} ns) by more than 5%; a SEND costs the receiver more than a WRITE (a receive WQE, a CQE to poll), so the two runs cannot be from the same hosts and settings",
                                s.fixed_ns, w.fixed_ns
                            ),
                        });
                    }
                    zeroed = format!("; measured {rx:.1} ns, within 5% of the WRITE latency (noise), so 0");
                    rx = 0.0;
                }
                eo.param(
                    Scope::Endpoint,
                    Name::RxLatency,
                    rx,
                    vec![wpath.clone(), spath.clone()],
                    w.residual.max(s.residual),
                    s.rows,
                    Vec::new(),
                    format!(
                        "ib_send_lat's fixed latency ({:.1} ns) minus ib_write_lat's ({:.1} ns): what a SEND costs the receiver beyond a WRITE (receive WQE, CQE, poll), applied as the simulated NIC's receive latency{zeroed}",
                        s.fixed_ns, w.fixed_ns
                    ),
                );
            }
        }
        // the switch: the same test through one switch against back to back
        for tool in [Tool::WriteLat, Tool::SendLat] {
            let Some(run) = hop.get(&(fabric, tool)) else {
                continue;
            };
            let Some((b2b, b2b_path)) = fixed.get(&tool) else {
                return Err(FitError::Model {
                    path: run.path.clone(),
                    what: format!(
                        "a one-hop {} needs the back-to-back {} of the same hosts on {fabric} to give the switch's latency",
                        tool.name(),
                        tool.name()
                    ),
                });
            };
            let Table::Lat { rows: hop_rows } = &run.table else {
                continue;
            };
            // fitted alone: its curve is not the endpoint's
            let h = fit_latency(
                &mut Out {
                    fabric,
                    params: &mut Vec::new(),
                    rows: &mut Vec::new(),
                },
                run,
                hop_rows,
            )?;
            let sw = h.fixed_ns - b2b.fixed_ns - opts.one_hop_extra_ns;
            if sw < 0.0 {
                return Err(FitError::Model {
                    path: run.path.clone(),
                    what: format!(
                        "its fixed latency ({:.1} ns) is not above the back-to-back run's ({:.1} ns) plus --one-hop-extra-ns ({} ns): a switch cannot take negative time",
                        h.fixed_ns, b2b.fixed_ns, opts.one_hop_extra_ns
                    ),
                });
            }
            eo.param(
                Scope::Endpoint,
                Name::SwitchLatency,
                sw,
                vec![b2b_path.clone(), run.path.clone()],
                h.residual.max(b2b.residual),
                h.rows,
                Vec::new(),
                format!(
                    "{}'s fixed one-way latency through one switch ({:.1} ns) minus back to back ({:.1} ns) minus the one-hop path's other additions ({} ns, --one-hop-extra-ns): one switch's port-to-port latency (flow-level-and-calibration.md B8 step 3), applied to every switch of the fabric",
                    tool.name(),
                    h.fixed_ns,
                    b2b.fixed_ns,
                    opts.one_hop_extra_ns
                ),
            );
            break;
        }
        for c in Collective::ALL {
            if let Some(Input::Nccl(run)) = by.get(&(fabric, Scope::of_collective(c))) {
                fit_collective(&mut out, run, opts.nccl_min_bytes)?;
            }
        }
        params.splice(start..start, endpoint);
    }
    Ok(Calibrated {
        calibration: Calibration {
            format: FORMAT,
            generator: format!("rdmalab-calibrate {}", env!("CARGO_PKG_VERSION")),
            path_ns: opts.path_ns,
            nccl_min_bytes: opts.nccl_min_bytes,
            sources,
            parameters: params,
        },
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_keeps_six_digits_and_residuals_round_up() {
        assert_eq!(sig(1003.561234), 1003.56);
        assert_eq!(sig(0.000_812_345_6), 0.000_812_346);
        assert_eq!(resid(0.012_345_61), 0.012_345_7);
        assert!(resid(0.03) >= 0.03);
    }
}
