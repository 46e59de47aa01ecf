//! Every topology reader, with detection and with each format forced, on arbitrary
//! bytes: none may panic, and every error names the input and a line.
#![no_main]

use fabric::ReadOptions;
use fabric::format::{self, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for fmt in [
        None,
        Some(Format::Ibnetdiscover),
        Some(Format::Ibsim),
        Some(Format::Hpcc),
        Some(Format::Json),
    ] {
        if let Err(e) = format::parse("fuzz", data, fmt, None, &ReadOptions::default()) {
            assert!(e.to_string().starts_with("fuzz:"));
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = format::parse_ports_report("fuzz", text);
    }
});
