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
}

/// A subnet loaded from files.
pub struct Loaded {
    pub fabric: Fabric,
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
            let (f, fmt) =
                fabric::format::read_file(p, None, &fabric::format::ReadOptions::default())?;
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
    let Some(lp) = files.lfts else {
        return Err(DumpError::Syntax {
            file: "<arguments>".into(),
            line: 0,
            expected: "an LFT dump (--lfts): opensm-lfts.dump, ibroute or dump_fts output".into(),
            got: "none".into(),
        });
    };
    let mut tables = dumps::parse_routes(&fabric, &read(lp)?, &lp.display().to_string())?;
    inputs.push(format!("lfts {}", lp.display()));
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
