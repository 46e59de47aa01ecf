//! InfiniBand diagnostics on real files or rdmalab-built fabrics: dump readers,
//! `check` (ibdiagnet-style verdicts) and `trace` (ibtracert).
//!
//! ```text
//! ibnetdiscover / ibsim net / JSON ──fabric::format──┐
//! opensm-subnet.lst ───────────dumps::SubnetLst──────┼─► Fabric ─┐
//! opensm-lfts.dump | ibroute | dump_fts ──dumps──────┐           ├─► check::check ─► CheckReport
//! opensm-sl2vl.dump, guid2lid ───────────────────────┴► RoutingTables ─┘   trace::trace ─► Trace
//! ```

pub mod check;
pub mod dumps;
pub mod error;
pub mod partitions;
pub mod rails;
pub mod rules;
pub mod trace;

use std::path::Path;

use fabric::Fabric;
use sm::tables::RoutingTables;

pub use check::{CheckOptions, CheckReport, check};
pub use error::DumpError;
pub use trace::{Trace, trace};

use crate::finding::Finding;

/// The files describing one subnet.
#[derive(Clone, Debug, Default)]
pub struct Files<'a> {
    /// Topology: ibnetdiscover output, ibsim net file or rdmalab JSON.
    pub topo: Option<&'a Path>,
    /// `opensm-lfts.dump`, `ibroute` or `dump_fts` output.
    pub lfts: Option<&'a Path>,
    /// `opensm-subnet.lst` (the topology when `topo` is absent; duplicate checks).
    pub subnet_lst: Option<&'a Path>,
    /// `opensm-sl2vl.dump`.
    pub sl2vl: Option<&'a Path>,
    /// OpenSM `guid2lid` cache file.
    pub guid2lid: Option<&'a Path>,
    /// Path SLs (`ibdmchk -c` format or OpenSM-style blocks), for layered engines.
    pub path_sl: Option<&'a Path>,
    /// Instead of an LFT dump: bring the fabric up with rdmalab's SM, trying these
    /// engines in order, with this LMC.
    pub sm: Option<(&'a [sm::routing::EngineKind], u8)>,
}

/// A subnet loaded from files.
pub struct Loaded {
    /// The topology.
    pub fabric: Fabric,
    /// LIDs, LFTs, SL2VL and path SLs.
    pub tables: RoutingTables,
    /// The files, as `kind: path`, for report headers.
    pub inputs: Vec<String>,
    /// Findings made while reading (duplicate GUIDs/LIDs in subnet.lst).
    pub findings: Vec<Finding>,
}

fn read(p: &Path) -> Result<String, DumpError> {
    let file = p.display().to_string();
    let bytes = std::fs::read(p).map_err(|source| DumpError::Io {
        file: file.clone(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        DumpError::Syntax {
            file,
            line,
            expected: "UTF-8 text".into(),
            got: "invalid UTF-8".into(),
        }
    })
}

/// Load a subnet from its files. A topology (`topo` or `subnet_lst`) and an LFT dump
/// are required.
pub fn load(files: &Files<'_>) -> Result<Loaded, DumpError> {
    let mut inputs = Vec::new();
    let mut findings = Vec::new();
    let subnet = match files.subnet_lst {
        Some(p) => {
            let s = dumps::parse_subnet_lst(&read(p)?, &p.display().to_string())?;
            inputs.push(format!("subnet.lst {}", p.display()));
            Some(s.to_fabric()?)
        }
        None => None,
    };
    let fabric = match (files.topo, subnet) {
        (Some(p), sub) => {
            let (f, fmt) = fabric::format::read_file(p, None, &fabric::format::ReadOptions::default())?;
            inputs.insert(0, format!("topology ({}) {}", fmt.name(), p.display()));
            if let Some(s) = sub {
                findings.extend(s.findings);
            }
            f
        }
        (None, Some(s)) => {
            findings.extend(s.findings);
            s.fabric
        }
        (None, None) => {
            return Err(DumpError::Syntax {
                file: "<arguments>".into(),
                line: 0,
                expected: "a topology file (--topo) or an opensm-subnet.lst (--subnet-lst)".into(),
                got: "neither".into(),
            });
        }
    };
    let mut tables = match (files.lfts, files.sm) {
        (Some(lp), _) => {
            let t = dumps::parse_routes(&fabric, &read(lp)?, &lp.display().to_string())?;
            inputs.push(format!("lfts {}", lp.display()));
            t
        }
        (None, Some((engines, lmc))) => {
            let (t, f) = bring_up(&fabric, engines, lmc)?;
            inputs.push(f.0);
            findings.extend(f.1);
            t
        }
        (None, None) => {
            return Err(DumpError::Syntax {
                file: "<arguments>".into(),
                line: 0,
                expected: "an LFT dump (--lfts: opensm-lfts.dump, ibroute or dump_fts output) or --sm <engines>".into(),
                got: "neither".into(),
            });
        }
    };
    if let Some(p) = files.guid2lid {
        let name = p.display().to_string();
        let g = sm::lids::Guid2Lid::parse(&read(p)?, &name)?;
        dumps::apply_guid2lid(&fabric, &mut tables, &g, &name)?;
        inputs.push(format!("guid2lid {}", p.display()));
    }
    if let Some(p) = files.sl2vl {
        let m = dumps::parse_sl2vl(&fabric, &read(p)?, &p.display().to_string())?;
        let vls = m
            .iter()
            .flatten()
            .flatten()
            .flat_map(|r| r.iter())
            .copied()
            .max()
            .unwrap_or(0);
        tables.sl2vl = Some(m);
        tables.vls_used = vls + 1;
        inputs.push(format!("sl2vl {}", p.display()));
    }
    Ok(Loaded {
        fabric,
        tables,
        inputs,
        findings,
    })
}

/// Bring `f` up with rdmalab's Subnet Manager (LIDs, the first engine of `engines`
/// that succeeds, SL2VL) instead of reading dumps. Returns the tables, an input line
/// naming the engine, and a warning per engine that fell back (a silent fallback to a
/// non-deadlock-free engine is one of OpenSM's weak points, infiniband-sm.md §5).
pub fn bring_up(
    f: &Fabric,
    engines: &[sm::routing::EngineKind],
    lmc: u8,
) -> Result<(RoutingTables, (String, Vec<Finding>)), DumpError> {
    let o = sm::run::RunOptions {
        engines: engines.to_vec(),
        lmc,
        validate: false,
        ..Default::default()
    };
    let (t, rep) = sm::run::run(f, &o)?;
    let used = rep.outcome.engine.name();
    let findings = rep
        .outcome
        .fallbacks
        .iter()
        .map(|(e, why)| {
            rules::finding(
                rules::ENGINE_FALLBACK,
                crate::finding::Severity::Warning,
                crate::finding::Location::default(),
                format!("routing engine {} failed ({why}); {used} was used instead", e.name()),
                "give the engine what it needs (root GUIDs for updn/ftree, enough VLs for dfsssp) or choose one that fits the topology".into(),
            )
        })
        .collect();
    Ok((t, (format!("sm rdmalab {used}, LMC {lmc}"), findings)))
}
