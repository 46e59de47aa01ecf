//! Management datagrams (IBA vol. 1 ch. 13) and subnet management packets
//! (ch. 14): the common MAD header, LID-routed and directed-route SMPs with the
//! §14.2.2 forwarding rules, and the SMP attributes a Subnet Manager needs.
//!
//! A MAD is 256 bytes and rides as the payload of a UD SEND_ONLY to QP0 (SMPs,
//! on VL15) or QP1 (GMPs).

pub mod attr;
mod field;
pub mod header;
pub mod smp;

pub use header::{AttrId, MadStatus, Method, MgmtClass};
pub use smp::{DrRoute, DrStep, Route, Smp};

/// Size of every MAD (IBA §13.4.1).
pub const MAD_LEN: usize = 256;

use crate::ib::{Opcode, bth, deth, lrh};
use crate::ids::Lid;
use crate::packet::{Encap, ExtHeaders, IbPacket};
use crate::psn::Psn;

/// The Q_Key of QP1 (GSI) (IBA §13.5.1); QP0 ignores the Q_Key and uses 0.
pub const QP1_QKEY: u32 = 0x8001_0000;

/// A native IB packet carrying a MAD to QP0 (`qp` = 0, an SMP, on VL15) or QP1
/// (`qp` = 1, a GMP, on VL0): LRH, BTH UD SEND_ONLY with P_Key 0xFFFF, DETH from
/// source QP `qp`, and the 256-byte `mad`. Directed-route SMPs use the permissive
/// DLID/SLID where the route says so (IBA §14.2.2).
pub fn mad_packet(slid: Lid, dlid: Lid, qp: u32, sl: u8, mad: &[u8; MAD_LEN]) -> IbPacket<'_> {
    IbPacket {
        encap: Encap::Ib {
            lrh: lrh::Repr {
                vl: if qp == 0 { 15 } else { 0 },
                lver: 0,
                sl,
                lnh: lrh::Lnh::IbaLocal,
                dlid,
                slid,
                pkt_len: 0,
            },
            grh: None,
        },
        bth: bth::Repr {
            opcode: Opcode::UdSendOnly,
            se: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dqpn: qp,
            ack_req: false,
            psn: Psn::new(0),
        },
        ext: ExtHeaders {
            deth: Some(deth::Repr {
                qkey: if qp == 0 { 0 } else { QP1_QKEY },
                src_qp: qp,
            }),
            ..ExtHeaders::default()
        },
        payload: mad,
    }
}
