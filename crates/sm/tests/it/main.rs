//! Integration tests of the Subnet Manager crate (one binary, modules per area).

mod opensm_live;
mod partitions;
mod props;
mod reference;
mod routing;
mod support;
mod sweep;
mod umad_ibsim;
