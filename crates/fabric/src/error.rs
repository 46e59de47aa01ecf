//! Errors raised while building a fabric model.

use thiserror::Error;
use wire::Guid;

/// A fabric model could not be built as asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    #[error("node name {name:?} is used twice")]
    DuplicateName { name: String },
    #[error("node GUID {guid} is used by both {first:?} and {second:?}")]
    DuplicateGuid { guid: Guid, first: String, second: String },
    #[error("node {name:?} has no ports")]
    NoPorts { name: String },
    #[error("node {name:?} has {expected} ports but {got} port GUIDs were given")]
    PortGuidCount { name: String, expected: usize, got: usize },
    #[error("no node with id {id}")]
    UnknownNode { id: u32 },
    #[error("no link with id {id}")]
    UnknownLink { id: u32 },
    #[error("port {port} of {node:?} does not exist (it has ports 1..={num_ports})")]
    PortOutOfRange { node: String, port: u8, num_ports: u8 },
    #[error("port {port} of {node:?} is already cabled to port {peer_port} of {peer:?}")]
    PortInUse {
        node: String,
        port: u8,
        peer: String,
        peer_port: u8,
    },
    #[error("port {port} of {node:?} cannot be cabled to itself")]
    SelfLoop { node: String, port: u8 },
    #[error("cable length {length_m} m is not a finite non-negative number")]
    BadLength { length_m: f64 },
}
