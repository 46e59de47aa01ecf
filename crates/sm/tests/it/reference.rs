//! Conformance against the reference folder (`$RDMALAB_REFERENCE_DIR`, default
//! `../shared`): OpenSM's own dumps. `scripts/test` leaves these out, and says how
//! many, when the folder is absent.

mod opensm_dumps;
