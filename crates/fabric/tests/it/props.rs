//! Property tests: no reader panics on arbitrary input, and all errors name a line.

use fabric::ReadOptions;
use fabric::format::{self, Format};
use proptest::prelude::*;

fn all_readers(bytes: &[u8]) {
    for fmt in [
        None,
        Some(Format::Ibnetdiscover),
        Some(Format::Ibsim),
        Some(Format::Hpcc),
        Some(Format::Json),
    ] {
        if let Err(e) = format::parse("fuzz", bytes, fmt, None, &ReadOptions::default()) {
            assert_eq!(e.file, "fuzz");
            let s = e.to_string();
            assert!(s.starts_with("fuzz:"), "{s}");
        }
    }
}

/// Lines that look like the formats, so mutations reach deep parser states.
fn plausible_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("Switch\t8 \"S1\"\t\t# \"sw\" enhanced port 0 lid 1 lmc 0".to_string()),
        Just("Ca\t2 \"H1\"\t\t# \"h\"".to_string()),
        Just("Hca 1 \"H2\"".to_string()),
        Just("switchguid=0x200000(200000)".to_string()),
        Just("caguid=0x100000".to_string()),
        Just("3 1 2".to_string()),
        Just("0 2 100Gbps 1000ns 0".to_string()),
        (1u32..12, "[A-Z][0-9]", 0u32..12, "(4x|1x|12x)(SDR|QDR|HDR|NDR|Q)")
            .prop_map(|(p, n, rp, r)| format!("[{p}]\t\"{n}\"[{rp}]\t\t# \"d\" lid 2 {r}")),
        (1u32..4, "[A-Z][0-9]", 0u32..12)
            .prop_map(|(p, n, rp)| format!("[{p}](100001) \t\"{n}\"[{rp}]\t\t# lid 2 lmc 0 \"s\" lid 1 4xSDR")),
        "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        all_readers(&bytes);
    }

    #[test]
    fn plausible_text_never_panics(lines in proptest::collection::vec(plausible_line(), 0..24)) {
        all_readers(lines.join("\n").as_bytes());
    }

    #[test]
    fn unicode_text_never_panics(
        prefix in prop_oneof![Just(""), Just("Switch 8 \""), Just("Ca 2 \""), Just("[1]\t\""), Just("[1]("), Just("3 1 1\n2\n0 2 ")],
        body in "\\PC{0,120}",
        more in proptest::collection::vec("\\PC{0,40}", 0..6),
    ) {
        let text = format!("{prefix}{body}\n{}", more.join("\n"));
        all_readers(text.as_bytes());
        all_readers(format!("Switch 8 \"S-0000000000000001\"\n{text}").as_bytes());
    }

    #[test]
    fn truncated_samples_never_panic(cut in 0usize..4000, which in 0usize..4) {
        let name = ["sim-2sw4hca.lmc0.topo", "net.2sw2path4hca", "topology.txt", "rdma-core-manpage-example.topo"][which];
        let bytes = std::fs::read(super::data(&format!("samples/{name}"))).unwrap();
        all_readers(&bytes[..cut.min(bytes.len())]);
    }
}

#[test]
fn json_never_panics_on_mutations() {
    let f = fabric::leaf_spine(&fabric::LeafSpineParams {
        radix: 4,
        ..Default::default()
    })
    .unwrap();
    let text = format::write(&f, Format::Json).unwrap();
    for cut in (0..text.len()).step_by(7) {
        all_readers(&text.as_bytes()[..cut]);
    }
}
