//! Reports: terminal tables, JSON/CSV and one self-contained HTML page with inline
//! SVG charts. Reports take results as data; they never run anything.

pub mod compare;
pub mod html;
pub mod sim;
pub mod sm;
pub mod svg;
pub mod topo;
pub mod wire;

pub use html::{Block, Document, Table, Tone};
pub use svg::{Chart, Scale, Series, TickFormat};
