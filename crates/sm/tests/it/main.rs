//! Integration tests of the Subnet Manager crate (one binary, modules per area).

mod support;
mod routing;
mod opensm_dumps;
mod opensm_live;
mod props;
mod sweep;
