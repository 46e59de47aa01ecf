//! Conformance against the reference folder (`$RDMALAB_REFERENCE_DIR`, default
//! `../shared`): the wire vectors built with scapy and decoded by tshark. Further
//! reference tests sit in `reference` submodules of `pcap` and `tshark`.
//! `scripts/test` leaves them out, and says how many, when the folder is absent.

mod vectors;
