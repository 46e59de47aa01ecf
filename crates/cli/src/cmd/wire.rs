//! `rdmalab wire …`: decode, craft and summarise IB/RoCE packet captures
//! (library: crates/wire).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use report::wire::{DecodeWriter, Form};
use wire::dump::describe_record;
use wire::pcap::CaptureReader;
use wire::stats::Stats;

use super::CliError;

/// Wire subcommands.
#[derive(Debug, Subcommand)]
pub enum WireCmd {
    /// Decode every packet of a pcap/pcapng: all header fields, ICRC/VCRC verdicts,
    /// one error per bad packet without stopping. Exit 1 if any packet is bad.
    Decode {
        /// The capture (pcap or pcapng; Ethernet, ERF, DLT 147 or 247).
        file: PathBuf,
        /// A JSON array with one object per packet, in capture order.
        #[arg(long)]
        json: bool,
    },
    /// Build packets from a TOML spec (see examples/wire/) and write a pcap.
    Craft {
        /// The spec.
        spec: PathBuf,
        /// Output pcap.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Summarise a capture: packets by opcode and QP, PSN gaps, retransmissions,
    /// NAKs, CNPs, pause frames and pause time.
    Stats {
        /// The capture.
        file: PathBuf,
        /// Link speed for converting pause quanta to time, Gb/s.
        #[arg(long, default_value_t = 100.0)]
        link_gbps: f64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

impl WireCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            WireCmd::Decode { file, json } => decode(file, json),
            WireCmd::Craft { spec, output } => {
                let text =
                    std::fs::read_to_string(&spec).with_context(|| format!("failed to read {}", spec.display()))?;
                let c = wire::craft::craft(&text, &spec.display().to_string())?;
                c.write_pcap(&output)?;
                eprintln!("{}", report::wire::crafted_line(c.frames.len(), c.link, &output));
                Ok(())
            }
            WireCmd::Stats { file, link_gbps, json } => {
                if !(link_gbps > 0.0 && link_gbps.is_finite()) {
                    return Err(CliError::bad_input(format!(
                        "--link-gbps must be a positive number, got {link_gbps}"
                    )));
                }
                let mut s = Stats::default();
                for rec in CaptureReader::open(&file)? {
                    match rec {
                        Ok(r) => s.add(wire::decode(&r.data, r.link).as_ref()),
                        Err(e @ wire::pcap::CaptureError::Record { .. }) => {
                            eprintln!("rdmalab: warning: {e}");
                            s.records += 1;
                            s.decode_errors += 1;
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                let o = s.describe(link_gbps);
                let text = report::wire::stats(&o, if json { Form::Json } else { Form::Text });
                std::io::stdout().lock().write_all(text.as_bytes())?;
                Ok(())
            }
        }
    }
}

fn decode(file: PathBuf, json: bool) -> Result<(), CliError> {
    let reader = CaptureReader::open(&file)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut w = DecodeWriter::new(out, if json { Form::Json } else { Form::Text })?;
    for rec in reader {
        match rec {
            Ok(r) => w.record(&describe_record(r.index, r.ts_ns, &r.data, r.link))?,
            Err(e @ wire::pcap::CaptureError::Record { .. }) => w.record_error(&e.to_string())?,
            Err(e) => {
                w.abort()?;
                return Err(e.into());
            }
        }
    }
    if w.finish()? > 0 {
        return Err(CliError::findings());
    }
    Ok(())
}
