//! Fuzz the whole-packet decoder (and ERF/SMP parsing) with the properties in
//! `wire::fuzzing::decode_one`. See ../README.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wire::fuzzing::decode_one(data);
});
