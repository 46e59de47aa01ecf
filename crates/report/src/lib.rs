//! Reports: terminal tables, JSON/CSV and one self-contained HTML page with inline
//! SVG charts. Reports take results as data; they never run anything.

pub mod calibrate;
pub mod compare;
pub mod diag;
pub mod failure;
pub mod html;
pub mod run;
pub mod sim;
pub mod sm;
pub mod svg;
pub mod sweep;
pub mod topo;
pub mod train;
pub mod wire;

pub use html::{Block, Document, Table, Tone};
pub use svg::{Chart, Scale, Series, TickFormat};
pub use wire::Form;

/// Any serializable result as pretty JSON with a closing newline: the form every
/// `--json` flag prints.
pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}
