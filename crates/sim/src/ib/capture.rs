//! Writing a captured port's packets to a pcap file through `crates/wire`: each
//! simulated packet is emitted as the native IB frame it stands for (LRH, BTH,
//! the opcode's extension headers, a zero payload of the right length, ICRC and
//! VCRC computed by the wire builder), timestamped at the start of its
//! transmission, in ERF type-21 records that Wireshark/tshark decode as InfiniBand.
//!
//! The simulator's QP ids are written as the BTH destination QPN (24 bits) and
//! P_Key 0xffff; GRHs are not emitted (the simulator does not model GIDs), so a
//! run with `grh = true` captures its packets as local ones.

use std::path::Path;

use wire::ib::aeth::Syndrome;
use wire::ib::lrh::Lnh;
use wire::ib::{aeth, bth, deth, lrh, reth};
use wire::packet::{Encap, ExtHeaders, IbPacket};
use wire::pcap::{CaptureLink, CaptureWriter};
use wire::{Lid, Psn};

use crate::engine::Time;
use crate::ib::packet::{Opcode, Packet, flag};

/// A capture that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CaptureFileError {
    /// The pcap writer failed.
    #[error("write capture {path}: {message}")]
    Write { path: String, message: String },
    /// A packet could not be encoded (a model fault).
    #[error("encode captured packet {index} ({opcode:?}): {message}")]
    Encode {
        index: usize,
        opcode: Opcode,
        message: String,
    },
}

/// Encode one simulated packet as a native IB frame into `buf`; returns its length.
pub fn encode(pk: &Packet, payload_scratch: &mut Vec<u8>, buf: &mut Vec<u8>) -> Result<usize, String> {
    let mut ext = ExtHeaders::default();
    let carries_payload = !matches!(pk.opcode, Opcode::ReadRequest | Opcode::Acknowledge);
    match pk.opcode {
        Opcode::WriteFirst | Opcode::WriteOnly => {
            ext.reth = Some(reth::Repr {
                va: 0,
                rkey: 0,
                dma_len: pk.payload,
            })
        }
        Opcode::ReadRequest => {
            ext.reth = Some(reth::Repr {
                va: 0,
                rkey: 0,
                dma_len: pk.payload,
            })
        }
        Opcode::ReadResponseFirst | Opcode::ReadResponseLast | Opcode::ReadResponseOnly | Opcode::Acknowledge => {
            ext.aeth = Some(aeth::Repr {
                syndrome: Syndrome::Ack { credits: 31 },
                msn: 0,
            })
        }
        Opcode::UdSendOnly => {
            ext.deth = Some(deth::Repr {
                qkey: 0,
                src_qp: pk.src_qp & 0xff_ffff,
            })
        }
        _ => {}
    }
    let plen = if carries_payload { pk.payload as usize } else { 0 };
    payload_scratch.clear();
    payload_scratch.resize(plen, 0);
    let p = IbPacket {
        encap: Encap::Ib {
            lrh: lrh::Repr {
                vl: if pk.flags & flag::VL15 != 0 { 15 } else { pk.vl },
                lver: 0,
                sl: pk.sl,
                lnh: Lnh::IbaLocal,
                dlid: Lid(pk.dlid),
                slid: Lid(pk.slid),
                pkt_len: 0,
            },
            grh: None,
        },
        bth: bth::Repr {
            opcode: wire::ib::Opcode::from(pk.opcode as u8),
            se: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: pk.pkey,
            fecn: pk.flags & flag::FECN != 0,
            becn: pk.flags & flag::BECN != 0,
            dqpn: pk.dst_qp & 0xff_ffff,
            ack_req: pk.flags & flag::ACK_REQ != 0,
            psn: Psn::new(pk.psn & 0xff_ffff),
        },
        ext,
        payload: payload_scratch,
    };
    buf.clear();
    buf.resize(p.buffer_len(), 0);
    p.emit(buf).map_err(|e| e.to_string())
}

/// Write `packets` (start time, packet) to `path` as an ERF-in-pcap InfiniBand capture.
pub fn write_pcap(path: &Path, packets: &[(Time, Packet)]) -> Result<usize, CaptureFileError> {
    let werr = |e: wire::pcap::CaptureError| CaptureFileError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut w = CaptureWriter::create(path, CaptureLink::IbErf).map_err(werr)?;
    let mut payload = Vec::new();
    let mut buf = Vec::new();
    for (i, (t, pk)) in packets.iter().enumerate() {
        let n = encode(pk, &mut payload, &mut buf).map_err(|message| CaptureFileError::Encode {
            index: i,
            opcode: pk.opcode,
            message,
        })?;
        w.write(t.0 / 1_000, &buf[..n]).map_err(werr)?;
    }
    w.finish().map_err(werr)?;
    Ok(packets.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_frames_decode_with_the_sizes_the_model_charges() {
        for (op, payload) in [
            (Opcode::WriteFirst, 4096u32),
            (Opcode::WriteMiddle, 4096),
            (Opcode::SendOnly, 13),
            (Opcode::Acknowledge, 0),
            (Opcode::ReadRequest, 65536),
            (Opcode::ReadResponseOnly, 8),
            (Opcode::UdSendOnly, 256),
        ] {
            let pk = Packet {
                slid: 3,
                dlid: 7,
                dst_qp: 5,
                src_qp: 4,
                psn: 0xff_fffe,
                payload,
                wire: op.wire_bytes(if op == Opcode::ReadRequest { 0 } else { payload }, false),
                opcode: op,
                ..Packet::default()
            };
            let (mut s, mut b) = (Vec::new(), Vec::new());
            let n = encode(&pk, &mut s, &mut b).unwrap();
            assert_eq!(n as u32, pk.wire, "{op:?}");
            let d = wire::decode(&b[..n], wire::LinkType::Infiniband).unwrap();
            let wire::Decoded::Ib { checks, .. } = d else {
                panic!("{op:?} decoded as {d:?}")
            };
            assert!(checks.all_ok(), "{op:?}");
        }
    }
}
