//! Capture files: pcap write and read, pcapng read (through the `pcap-file` crate).
//!
//! Link types (tcpdump.org LINKTYPE_* values):
//! - 1 ETHERNET: RoCEv1/RoCEv2 and PFC frames, without FCS.
//! - 197 ERF: native IB, each record a 16-byte ERF header of type 21 (INFINIBAND)
//!   followed by LRH..VCRC. This is what tshark 4.0 opens (see
//!   `../shared/vectors/wire/README.md`).
//! - 147 USER0: native IB, bare LRH..VCRC; tshark decodes it with the user-DLT
//!   table entry `"User 0 (DLT=147)","infiniband","0","","0",""`.
//! - 247 INFINIBAND: read only (tshark 4.0 cannot open it).
//!
//! Reading allocates per record (a capture is a file, not a hot path); packet
//! parsing of the returned bytes does not.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::packet::LinkType;

/// ERF record type of an InfiniBand frame.
pub const ERF_TYPE_INFINIBAND: u8 = 21;
/// ERF record type of an Ethernet frame (2 bytes of offset/pad precede it).
pub const ERF_TYPE_ETH: u8 = 2;
/// ERF header length.
pub const ERF_HEADER_LEN: usize = 16;

/// How frames are stored in a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaptureLink {
    /// LINKTYPE_ETHERNET (1).
    Ethernet,
    /// LINKTYPE_ERF (197) with ERF type 21 records.
    IbErf,
    /// LINKTYPE_USER0 (147), bare IB frames.
    IbUser0,
    /// LINKTYPE_INFINIBAND (247), bare IB frames (read only by tshark: no).
    IbRaw,
}

impl CaptureLink {
    /// The pcap link type number.
    pub fn dlt(self) -> u32 {
        match self {
            CaptureLink::Ethernet => 1,
            CaptureLink::IbErf => 197,
            CaptureLink::IbUser0 => 147,
            CaptureLink::IbRaw => 247,
        }
    }
    /// From a pcap link type number.
    pub fn from_dlt(d: u32) -> Option<CaptureLink> {
        match d {
            1 => Some(CaptureLink::Ethernet),
            197 => Some(CaptureLink::IbErf),
            147 => Some(CaptureLink::IbUser0),
            247 => Some(CaptureLink::IbRaw),
            _ => None,
        }
    }
    /// What the frames inside are.
    pub fn frame_link(self) -> LinkType {
        match self {
            CaptureLink::Ethernet => LinkType::Ethernet,
            _ => LinkType::Infiniband,
        }
    }
}

/// A capture file error.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Opening, reading or writing failed.
    #[error("access {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a readable pcap/pcapng.
    #[error("read {path}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A link type this crate does not decode.
    #[error(
        "read {path}: link type {dlt} is not supported (expected 1 Ethernet, 197 ERF, 147 USER0 or 247 InfiniBand)"
    )]
    UnsupportedLinkType {
        /// The file.
        path: PathBuf,
        /// The link type.
        dlt: u32,
    },
    /// One record could not be unwrapped (e.g. a bad ERF header); reading can go on.
    #[error("read {path}: record {index}: {what}")]
    Record {
        /// The file.
        path: PathBuf,
        /// 1-based record number.
        index: usize,
        /// What is wrong.
        what: String,
    },
    /// Writing a record failed.
    #[error("write {path}: {what}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
}

/// The 16-byte ERF header for an IB frame of `len` bytes at `ts_ns`.
pub fn erf_header(ts_ns: u64, len: usize) -> [u8; ERF_HEADER_LEN] {
    let secs = ts_ns / 1_000_000_000;
    let frac = ((ts_ns % 1_000_000_000) << 32) / 1_000_000_000;
    let ts = (secs << 32) | frac;
    let mut h = [0u8; ERF_HEADER_LEN];
    h[0..8].copy_from_slice(&ts.to_le_bytes());
    h[8] = ERF_TYPE_INFINIBAND;
    h[9] = 0x04; // flags: varying-length record
    h[10..12].copy_from_slice(&((ERF_HEADER_LEN + len) as u16).to_be_bytes());
    h[14..16].copy_from_slice(&(len as u16).to_be_bytes());
    h
}

/// Unwrap an ERF record: the link type and the frame inside.
pub fn erf_unwrap(rec: &[u8]) -> Result<(LinkType, &[u8]), String> {
    if rec.len() < ERF_HEADER_LEN {
        return Err(format!(
            "ERF record of {} bytes is shorter than its 16-byte header",
            rec.len()
        ));
    }
    let ty = rec[8];
    let rlen = u16::from_be_bytes([rec[10], rec[11]]) as usize;
    let wlen = u16::from_be_bytes([rec[14], rec[15]]) as usize;
    if rlen > rec.len() || rlen < ERF_HEADER_LEN {
        return Err(format!("ERF rlen {rlen} does not fit the {}-byte record", rec.len()));
    }
    // Extension headers: while the type's top bit is set, 8 more bytes follow.
    let mut at = ERF_HEADER_LEN;
    let mut more = ty & 0x80 != 0;
    while more {
        if at + 8 > rlen {
            return Err("ERF extension headers run past rlen".into());
        }
        more = rec[at] & 0x80 != 0;
        at += 8;
    }
    match ty & 0x7f {
        ERF_TYPE_INFINIBAND => {
            let body = &rec[at..rlen];
            Ok((LinkType::Infiniband, &body[..wlen.min(body.len())]))
        }
        ERF_TYPE_ETH => {
            if at + 2 > rlen {
                return Err("ERF Ethernet record misses its 2-byte pad".into());
            }
            let body = &rec[at + 2..rlen];
            Ok((LinkType::Ethernet, &body[..wlen.min(body.len())]))
        }
        t => Err(format!(
            "ERF record type {t} is not supported (expected 21 InfiniBand or 2 Ethernet)"
        )),
    }
}

/// Writes a pcap (nanosecond timestamps) of one link type.
pub struct CaptureWriter<W: Write> {
    inner: PcapWriter<W>,
    link: CaptureLink,
    path: PathBuf,
    scratch: Vec<u8>,
}

impl<W: Write> std::fmt::Debug for CaptureWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureWriter")
            .field("link", &self.link)
            .field("path", &self.path)
            .finish()
    }
}

impl CaptureWriter<BufWriter<File>> {
    /// Create `path`.
    pub fn create(path: &Path, link: CaptureLink) -> Result<Self, CaptureError> {
        let f = File::create(path).map_err(|source| CaptureError::Io {
            path: path.into(),
            source,
        })?;
        CaptureWriter::new(BufWriter::new(f), link, path)
    }
}

impl<W: Write> CaptureWriter<W> {
    /// Start a capture on `w`; `path` names it in errors.
    pub fn new(w: W, link: CaptureLink, path: &Path) -> Result<Self, CaptureError> {
        let header = PcapHeader {
            datalink: DataLink::from(link.dlt()),
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
            snaplen: 65535,
            ..PcapHeader::default()
        };
        let inner = PcapWriter::with_header(w, header).map_err(|e| CaptureError::Write {
            path: path.into(),
            what: e.to_string(),
        })?;
        Ok(CaptureWriter {
            inner,
            link,
            path: path.into(),
            scratch: Vec::new(),
        })
    }

    /// Append one frame (Ethernet without FCS, or IB LRH..VCRC) captured at `ts_ns`.
    pub fn write(&mut self, ts_ns: u64, frame: &[u8]) -> Result<(), CaptureError> {
        let timestamp = std::time::Duration::from_nanos(ts_ns);
        let data: &[u8] = if self.link == CaptureLink::IbErf {
            self.scratch.clear();
            self.scratch.extend_from_slice(&erf_header(ts_ns, frame.len()));
            self.scratch.extend_from_slice(frame);
            &self.scratch
        } else {
            frame
        };
        let pkt = PcapPacket::new(timestamp, data.len() as u32, data);
        self.inner.write_packet(&pkt).map_err(|e| CaptureError::Write {
            path: self.path.clone(),
            what: e.to_string(),
        })?;
        Ok(())
    }

    /// Flush and return the underlying writer.
    pub fn finish(self) -> Result<W, CaptureError> {
        let mut w = self.inner.into_writer();
        w.flush().map_err(|source| CaptureError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(w)
    }
}

/// One captured frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based position in the file.
    pub index: usize,
    /// Timestamp, nanoseconds since the epoch.
    pub ts_ns: u64,
    /// What the frame is.
    pub link: LinkType,
    /// The frame (ERF header removed).
    pub data: Vec<u8>,
    /// Original length on the wire, as the capture records it.
    pub orig_len: u32,
}

enum Source {
    Pcap(PcapReader<BufReader<File>>, CaptureLink),
    PcapNg(PcapNgReader<BufReader<File>>),
}

/// Reads pcap or pcapng (chosen by the magic number).
pub struct CaptureReader {
    src: Source,
    path: PathBuf,
    index: usize,
    done: bool,
}

impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("path", &self.path)
            .field("index", &self.index)
            .finish()
    }
}

impl CaptureReader {
    /// Open `path`.
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        let io = |source| CaptureError::Io {
            path: path.into(),
            source,
        };
        let mut f = File::open(path).map_err(io)?;
        let mut magic = [0u8; 4];
        let n = f.read(&mut magic).map_err(io)?;
        drop(f);
        let f = BufReader::new(File::open(path).map_err(io)?);
        let fmt = |e: pcap_file::PcapError| CaptureError::Format {
            path: path.into(),
            what: e.to_string(),
        };
        let src = if n == 4 && magic == [0x0a, 0x0d, 0x0d, 0x0a] {
            Source::PcapNg(PcapNgReader::new(f).map_err(fmt)?)
        } else {
            let r = PcapReader::new(f).map_err(fmt)?;
            let dlt = u32::from(r.header().datalink);
            let link =
                CaptureLink::from_dlt(dlt).ok_or(CaptureError::UnsupportedLinkType { path: path.into(), dlt })?;
            Source::Pcap(r, link)
        };
        Ok(CaptureReader {
            src,
            path: path.into(),
            index: 0,
            done: false,
        })
    }

    /// The link type of a classic pcap (None for pcapng, where it is per interface).
    pub fn link(&self) -> Option<CaptureLink> {
        match &self.src {
            Source::Pcap(_, l) => Some(*l),
            Source::PcapNg(_) => None,
        }
    }

    fn unwrap_frame(&self, link: CaptureLink, data: &[u8], ts_ns: u64, orig_len: u32) -> Result<Record, CaptureError> {
        let (fl, frame) = if link == CaptureLink::IbErf {
            erf_unwrap(data).map_err(|what| CaptureError::Record {
                path: self.path.clone(),
                index: self.index,
                what,
            })?
        } else {
            (link.frame_link(), data)
        };
        Ok(Record {
            index: self.index,
            ts_ns,
            link: fl,
            data: frame.to_vec(),
            orig_len,
        })
    }
}

impl Iterator for CaptureReader {
    type Item = Result<Record, CaptureError>;

    /// The next record; a file-level error ends the iteration after it is returned.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            match &mut self.src {
                Source::Pcap(r, link) => {
                    let link = *link;
                    let p = match r.next_packet()? {
                        Ok(p) => p,
                        Err(e) => {
                            self.done = true;
                            return Some(Err(CaptureError::Format {
                                path: self.path.clone(),
                                what: e.to_string(),
                            }));
                        }
                    };
                    self.index += 1;
                    let ts = p.timestamp.as_nanos() as u64;
                    let (data, orig) = (p.data.into_owned(), p.orig_len);
                    return Some(self.unwrap_frame(link, &data, ts, orig));
                }
                Source::PcapNg(r) => {
                    let b = match r.next_block()? {
                        Ok(b) => b,
                        Err(e) => {
                            self.done = true;
                            return Some(Err(CaptureError::Format {
                                path: self.path.clone(),
                                what: e.to_string(),
                            }));
                        }
                    };
                    let (iface, ts, orig, data) = match b {
                        Block::EnhancedPacket(p) => (
                            p.interface_id,
                            p.timestamp.as_nanos() as u64,
                            p.original_len,
                            p.data.into_owned(),
                        ),
                        Block::SimplePacket(p) => (0, 0, p.original_len, p.data.into_owned()),
                        Block::Packet(p) => (p.interface_id as u32, p.timestamp, p.original_len, p.data.into_owned()),
                        _ => continue,
                    };
                    self.index += 1;
                    let dlt = match r.interfaces().get(iface as usize) {
                        Some(i) => u32::from(i.linktype),
                        None => {
                            return Some(Err(CaptureError::Record {
                                path: self.path.clone(),
                                index: self.index,
                                what: format!("packet names interface {iface}, which is not described"),
                            }));
                        }
                    };
                    let Some(link) = CaptureLink::from_dlt(dlt) else {
                        return Some(Err(CaptureError::UnsupportedLinkType {
                            path: self.path.clone(),
                            dlt,
                        }));
                    };
                    return Some(self.unwrap_frame(link, &data, ts, orig));
                }
            }
        }
    }
}
