//! The InfiniBand node models: the switch and the HCA (with its RC/UD transport and
//! verbs-shaped API).

pub mod hca;
pub mod switch;
