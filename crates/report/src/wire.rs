//! `rdmalab wire`: decoded packets, capture statistics and crafted captures as
//! text or JSON. Decoding streams: a capture is written record by record, so a
//! large one never sits in memory.

use std::io::{self, Write};

use wire::dump::{Obj, Val, to_json, to_text};

/// How a decode is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `packet N` and the fields indented, then a count of packets and errors.
    Text,
    /// One JSON array of the packets' objects.
    Json,
}

/// Writes a decoded capture record by record and counts the bad ones (those
/// whose `ok` field is not true).
#[derive(Debug)]
pub struct DecodeWriter<W: Write> {
    out: W,
    form: Form,
    n: usize,
    bad: usize,
}

impl<W: Write> DecodeWriter<W> {
    /// Start a decode on `out` (JSON opens its array).
    pub fn new(mut out: W, form: Form) -> io::Result<DecodeWriter<W>> {
        if form == Form::Json {
            writeln!(out, "[")?;
        }
        Ok(DecodeWriter {
            out,
            form,
            n: 0,
            bad: 0,
        })
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
        if o.get("ok") != Some(&Val::B(true)) {
            self.bad += 1;
        }
        self.n += 1;
        Ok(())
    }

    /// Write a record the capture reader could not read, as a bad packet with
    /// its number and the reader's error.
    pub fn record_error(&mut self, error: &str) -> io::Result<()> {
        let mut o = Obj::default();
        o.put("index", Val::U(self.n as u64 + 1))
            .put("error", Val::S(error.to_string()))
            .put("ok", Val::B(false));
        self.record(&o)
    }

    /// Close the decode: JSON closes its array, text counts the packets and the
    /// bad ones. Returns how many were bad.
    pub fn finish(mut self) -> io::Result<usize> {
        match self.form {
            Form::Json => writeln!(self.out, "\n]")?,
            Form::Text => writeln!(self.out, "{} packets, {} with errors", self.n, self.bad)?,
        }
        self.out.flush()?;
        Ok(self.bad)
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

    /// Bad packets written so far.
    pub fn bad(&self) -> usize {
        self.bad
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

    fn obj(k: u64, ok: bool) -> Obj {
        let mut o = Obj::default();
        o.put("index", Val::U(k)).put("ok", Val::B(ok));
        o
    }

    #[test]
    fn text_numbers_the_packets_and_counts_the_bad_ones() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Text).unwrap();
        w.record(&obj(1, true)).unwrap();
        w.record(&obj(2, false)).unwrap();
        w.record(&obj(3, true)).unwrap();
        assert_eq!((w.count(), w.bad()), (3, 1));
        assert_eq!(w.finish().unwrap(), 1);
        let t = String::from_utf8(buf).unwrap();
        assert!(t.starts_with("packet 1\n  "), "{t}");
        assert!(t.contains("packet 3\n"), "{t}");
        assert!(t.ends_with("3 packets, 1 with errors\n"), "{t}");
    }

    #[test]
    fn json_is_one_array_that_parses() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Json).unwrap();
        w.record(&obj(1, true)).unwrap();
        w.record(&obj(2, true)).unwrap();
        assert_eq!(w.finish().unwrap(), 0);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(v[1]["index"], 2);
    }

    #[test]
    fn an_unreadable_record_is_a_bad_packet_with_its_number_and_error() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Json).unwrap();
        w.record(&obj(1, true)).unwrap();
        w.record_error("record 2: truncated").unwrap();
        assert_eq!(w.finish().unwrap(), 1);
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v[1]["index"], 2);
        assert_eq!(v[1]["error"], "record 2: truncated");
        assert_eq!(v[1]["ok"], false);
    }

    #[test]
    fn an_aborted_json_decode_is_still_an_array() {
        let mut buf = Vec::new();
        let mut w = DecodeWriter::new(&mut buf, Form::Json).unwrap();
        w.record(&obj(1, true)).unwrap();
        w.abort().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
    }

    #[test]
    fn crafted_line_names_the_link_type() {
        let l = crafted_line(6, wire::pcap::CaptureLink::IbErf, std::path::Path::new("x.pcap"));
        assert_eq!(l, "wrote 6 packets (IbErf, link type 197) to x.pcap");
    }
}
