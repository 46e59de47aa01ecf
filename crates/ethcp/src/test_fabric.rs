//! Small fabrics shared by the unit tests.

use fabric::{Fabric, Guid, LinkRate, NodeId, NodeSpec};

/// Two leaves with 2 hosts each, two spines.
pub(crate) fn leaf_spine_2x2() -> (Fabric, Vec<NodeId>, Vec<NodeId>, Vec<NodeId>) {
    let mut f = Fabric::new();
    let r = LinkRate::eth(100).unwrap();
    let leaves: Vec<NodeId> = (0..2)
        .map(|i| {
            f.add_node(NodeSpec::switch(format!("leaf{i}"), Guid(0x10 + i), 4))
                .unwrap()
        })
        .collect();
    let spines: Vec<NodeId> = (0..2)
        .map(|i| {
            f.add_node(NodeSpec::switch(format!("spine{i}"), Guid(0x20 + i), 2))
                .unwrap()
        })
        .collect();
    let mut hosts = Vec::new();
    for (li, &l) in leaves.iter().enumerate() {
        for k in 0..2u8 {
            let h = f
                .add_node(NodeSpec::ca(
                    format!("h{li}{k}"),
                    Guid(0x100 + (li as u64) * 16 + u64::from(k) * 2),
                    1,
                ))
                .unwrap();
            f.connect(l, 1 + k, h, 1, r, 2.0).unwrap();
            hosts.push(h);
        }
        for (si, &s) in spines.iter().enumerate() {
            f.connect(l, 3 + si as u8, s, 1 + li as u8, r, 10.0).unwrap();
        }
    }
    (f, leaves, spines, hosts)
}
