//! The body of the cargo-fuzz target (`fuzz/fuzz_targets/decode.rs`), kept in the
//! library so the corpus replay test runs exactly the same code.
//!
//! Input: byte 0 picks the link type (even: Ethernet, odd: InfiniBand), the rest
//! is the frame. Properties: decoding never panics; a decoded IB/RoCE packet
//! re-emits and decodes to the same headers; a MAD payload parses or errors
//! without panicking; ERF unwrapping and SMP parsing never panic.

use crate::packet::{Decoded, LinkType, decode};

/// Run one fuzz input. Panics only if a property is violated.
pub fn decode_one(data: &[u8]) {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let link = if sel & 1 == 0 {
        LinkType::Ethernet
    } else {
        LinkType::Infiniband
    };
    let _ = crate::pcap::erf_unwrap(frame);
    let _ = crate::mad::smp::Smp::from_bytes(frame);
    let Ok(d) = decode(frame, link) else { return };
    let _ = crate::dump::describe(&d);
    if let Decoded::Ib { packet, .. } = d {
        let mut buf = [0u8; 16384];
        let Ok(n) = packet.emit(&mut buf) else { return };
        match decode(&buf[..n], link) {
            Ok(Decoded::Ib {
                packet: again, checks, ..
            }) => {
                assert!(checks.icrc.ok(), "re-emitted packet has a bad ICRC");
                assert_eq!(again.bth.opcode, packet.bth.opcode);
                assert_eq!(again.bth.psn, packet.bth.psn);
                assert_eq!(again.bth.dqpn, packet.bth.dqpn);
                assert_eq!(again.ext, packet.ext);
                assert_eq!(again.payload, packet.payload);
            }
            other => panic!("re-emitted packet decodes as {other:?}"),
        }
    }
}
