//! The InfiniBand node models: the switch and the HCA (with its RC/UD transport and
//! verbs-shaped API), the forwarding state the SM programmed, and the context a
//! model's step borrows.

pub(crate) mod forward;
pub mod hca;
pub(crate) mod step;
pub mod switch;
