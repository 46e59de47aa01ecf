//! Directed-route SMPs carried hop by hop through a small fabric, the way an
//! in-process SMA/switch model uses the §14.2.2 helpers: each hop decodes the
//! native IB packet, applies the rule, and re-emits it.
//!
//! ```text
//!   SM (CA, port 1) ──1┤ S1 ├5── 2┤ S2 ├7── 1 CA2
//! ```

use wire::ib::Opcode;
use wire::mad::attr::{NodeType, node_info};
use wire::mad::header::{AttrId, Method};
use wire::mad::mad_packet;
use wire::mad::smp::{DrRoute, DrStep, Route, Smp};
use wire::packet::{Decoded, Encap, LinkType, decode};
use wire::{Guid, Lid};

struct Node {
    is_switch: bool,
    ports: u8,
    guid: u64,
    /// Neighbour per port: (node index, its port).
    links: Vec<(u8, usize, u8)>,
}

fn fabric() -> Vec<Node> {
    vec![
        Node {
            is_switch: false,
            ports: 1,
            guid: 0x10,
            links: vec![(1, 1, 1)],
        },
        Node {
            is_switch: true,
            ports: 36,
            guid: 0x20,
            links: vec![(1, 0, 1), (5, 2, 2)],
        },
        Node {
            is_switch: true,
            ports: 36,
            guid: 0x30,
            links: vec![(2, 1, 5), (7, 3, 1)],
        },
        Node {
            is_switch: false,
            ports: 1,
            guid: 0x40,
            links: vec![(1, 2, 7)],
        },
    ]
}

fn wire_hop(smp: &Smp) -> Vec<u8> {
    let mut mad = [0u8; 256];
    smp.to_bytes(&mut mad).unwrap();
    let p = mad_packet(Lid::PERMISSIVE, Lid::PERMISSIVE, 0, 0, &mad);
    let mut buf = vec![0u8; p.buffer_len()];
    let n = p.emit(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn unwire(frame: &[u8]) -> Smp {
    match decode(frame, LinkType::Infiniband).unwrap() {
        Decoded::Ib { packet, checks, .. } => {
            assert!(checks.all_ok());
            assert_eq!(packet.bth.opcode, Opcode::UdSendOnly);
            assert_eq!(packet.bth.dqpn, 0);
            let Encap::Ib { lrh, .. } = packet.encap else { panic!() };
            assert_eq!(lrh.vl, 15, "SMPs ride VL15");
            Smp::from_bytes(packet.payload).unwrap()
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn dr_get_node_info_crosses_two_switches_and_returns() {
    let f = fabric();
    let dr = DrRoute::new(&[1, 5, 7]).unwrap();
    let mut smp = Smp::get(AttrId::NodeInfo, 0, 0x42, Route::Directed(dr));
    let Route::Directed(r) = &mut smp.route else {
        unreachable!()
    };
    let mut at = 0usize;
    let mut step = r.originate(f[0].ports);
    let mut hops = 0;
    // Outgoing: forward until delivered to an SMA.
    let mut in_port = 0;
    loop {
        match step {
            DrStep::Forward(p) => {
                let (_, next, next_port) = *f[at].links.iter().find(|l| l.0 == p).expect("cabled port");
                let frame = wire_hop(&smp);
                smp = unwire(&frame);
                at = next;
                in_port = next_port;
                hops += 1;
                let Route::Directed(r) = &mut smp.route else {
                    unreachable!()
                };
                step = r.receive(in_port, f[at].is_switch, f[at].ports);
            }
            DrStep::Deliver => break,
            s => panic!("outgoing: {s:?}"),
        }
    }
    assert_eq!((at, hops), (3, 3));
    // The SMA answers with NodeInfo, LocalPortNum = the port the SMP entered by.
    let ni = node_info::Repr {
        base_version: 1,
        class_version: 1,
        node_type: NodeType::Ca,
        num_ports: 1,
        node_guid: Guid(f[at].guid),
        port_guid: Guid(f[at].guid + 1),
        local_port_num: in_port,
        ..Default::default()
    };
    let mut data = [0u8; 64];
    ni.to_bytes(&mut data).unwrap();
    smp = smp.into_response(0, data);
    assert_eq!(smp.method, Method::GetResp);
    let Route::Directed(r) = &mut smp.route else {
        unreachable!()
    };
    step = r.respond(f[at].ports);
    loop {
        match step {
            DrStep::Forward(p) => {
                let (_, next, next_port) = *f[at].links.iter().find(|l| l.0 == p).expect("cabled port");
                smp = unwire(&wire_hop(&smp));
                at = next;
                let Route::Directed(r) = &mut smp.route else {
                    unreachable!()
                };
                step = r.receive(next_port, f[at].is_switch, f[at].ports);
            }
            DrStep::Deliver => break,
            s => panic!("returning: {s:?}"),
        }
    }
    assert_eq!(at, 0, "the response reached the SM's node");
    let got = node_info::Repr::from_bytes(&smp.data).unwrap();
    assert_eq!(got.node_guid, Guid(0x40));
    assert_eq!(got.local_port_num, 1);
    assert_eq!(smp.tid, 0x42);
}

#[test]
fn dr_smp_through_a_ca_is_discarded() {
    // Path 1 then 1 again: the second hop would need CA2... here the SM's own
    // neighbour is a switch; ask it to go out of port 1 back to the SM's CA and on.
    let f = fabric();
    let mut r = DrRoute::new(&[1, 1, 1]).unwrap();
    assert_eq!(r.originate(f[0].ports), DrStep::Forward(1));
    assert_eq!(r.receive(1, true, 36), DrStep::Forward(1)); // S1 sends back to the SM CA
    assert!(
        matches!(r.receive(1, false, 1), DrStep::Discard(_)),
        "a CA does not forward"
    );
}
