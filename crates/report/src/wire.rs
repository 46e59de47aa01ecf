//! `rdmalab wire`: decoded packets, capture statistics and crafted captures as
//! text or JSON. Decoding streams: a capture is written record by record, so a
//! large one never sits in memory.

use std::io::{self, Write};

use wire::dump::{Obj, to_json, to_text};

/// How a decode is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `packet N` and the fields indented, then a count of packets and errors.
    Text,
    /// One JSON array of the packets' objects.
    Json,
}

/// Writes a decoded capture record by record.
#[derive(Debug)]
pub struct DecodeWriter<W: Write> {
    out: W,
    form: Form,
    n: usize,
}

impl<W: Write> DecodeWriter<W> {
    /// Start a decode on `out` (JSON opens its array).
    pub fn new(mut out: W, form: Form) -> io::Result<DecodeWriter<W>> {
        if form == Form::Json {
            writeln!(out, "[")?;
        }
        Ok(DecodeWriter { out, form, n: 0 })
    }

    /// Write one packet's fields.
    pub fn record(&mut self, o: &Obj) -> io::Result<()> {
        match self.form {
            Form::Json => {
                if self.n > 0 {
                    writeln!(self.out, ",")?;
                }
                write!(self.out, "{}", to_json(o))?;
            }
            Form::Text => {
                writeln!(self.out, "packet {}", self.n + 1)?;
                for line in to_text(o).lines() {
                    writeln!(self.out, "  {line}")?;
                }
            }
        }
        self.n += 1;
        Ok(())
    }

    /// Close the decode: JSON closes its array, text counts the packets and the
    /// `bad` ones.
    pub fn finish(mut self, bad: usize) -> io::Result<()> {
        match self.form {
            Form::Json => writeln!(self.out, "\n]")?,
            Form::Text => writeln!(self.out, "{} packets, {bad} with errors", self.n)?,
        }
        self.out.flush()
    }

    /// Close a JSON array cut short by an error (text needs nothing).
    pub fn abort(mut self) -> io::Result<()> {
        if self.form == Form::Json {
            writeln!(self.out, "\n]")?;
        }
        self.out.flush()
    }

    /// Packets written so far.
    pub fn count(&self) -> usize {
        self.n
    }
}

/// A capture's statistics (`wire stats`) as text or one JSON line.
pub fn stats(o: &Obj, form: Form) -> String {
    match form {
        Form::Json => format!("{}\n", to_json(o)),
        Form::Text => to_text(o),
    }
}

/// The line `wire craft` prints on stderr after writing a capture.
pub fn crafted_line(frames: usize, link: wire::pcap::CaptureLink, path: &std::path::Path) -> String {
    format!(
        "wrote {frames} packets ({link:?}, link type {}) to {}",
        link.dlt(),
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::dump::Val;

    fn obj(k: u64) -> Obj {
        let mut o = Obj::default();
        o.put("index", Val::U(k)).put("ok", Val::B(true));
        o
    }

    #[test]
    fn text_numbers_the_packets_and_counts_them() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Text).unwrap();
        w.record(&obj(1)).unwrap();
        w.record(&obj(2)).unwrap();
        w.finish(1).unwrap();
        let t = String::from_utf8(buf).unwrap();
        assert!(t.starts_with("packet 1\n  "), "{t}");
        assert!(t.contains("packet 2\n"), "{t}");
        assert!(t.ends_with("2 packets, 1 with errors\n"), "{t}");
    }

    #[test]
    fn json_is_one_array_that_parses() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Json).unwrap();
        w.record(&obj(1)).unwrap();
        w.record(&obj(2)).unwrap();
        w.finish(0).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(v[1]["index"], 2);
    }
}
