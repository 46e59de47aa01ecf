//! Capture files: the reference folder's pcaps read back to the frames listed in
//! vectors.json; what we write reads back; pcapng is read.

use std::borrow::Cow;

use wire::LinkType;
use wire::pcap::{CaptureLink, CaptureReader, CaptureWriter, erf_header, erf_unwrap};

use crate::support::unhex;

#[test]
fn written_captures_read_back_for_every_link_type() {
    let dir = std::env::temp_dir().join(format!("wire-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ib = unhex("10120001000700051100ffff00000011001234560d000007a2a6cbf7c74e");
    for link in [
        CaptureLink::Ethernet,
        CaptureLink::IbErf,
        CaptureLink::IbUser0,
        CaptureLink::IbRaw,
    ] {
        let path = dir.join(format!("t{}.pcap", link.dlt()));
        let mut w = CaptureWriter::create(&path, link).unwrap();
        w.write(1_700_000_000_123_456_789, &ib).unwrap();
        w.write(1_700_000_000_123_457_000, &ib[..8]).unwrap();
        w.finish().unwrap();
        let recs: Vec<_> = CaptureReader::open(&path).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].data, ib);
        assert_eq!(recs[0].ts_ns, 1_700_000_000_123_456_789, "{link:?}");
        assert_eq!(recs[1].data, &ib[..8]);
        assert_eq!(recs[0].link, link.frame_link());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pcapng_is_read_with_per_interface_link_types() {
    use pcap_file::DataLink;
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;

    let dir = std::env::temp_dir().join(format!("wire-pcapng-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.pcapng");
    // vectors.json's first frame (v4_rc_send_only, a RoCEv2 SEND over IPv4).
    let eth = unhex(concat!(
        "02000000000202000000000108004502003c000140004011b6aac0000201c0000202c00012b7",
        "0028000004a0ffff000000118012345601080f161d242b323940474e555c00007e65349b"
    ));
    let ib = unhex("10120001000700051100ffff00000011001234560d000007a2a6cbf7c74e");
    let mut erf = erf_header(5, ib.len()).to_vec();
    erf.extend_from_slice(&ib);
    {
        let f = std::fs::File::create(&path).unwrap();
        let mut w = PcapNgWriter::new(f).unwrap();
        for dl in [DataLink::ETHERNET, DataLink::ERF] {
            w.write_pcapng_block(InterfaceDescriptionBlock {
                linktype: dl,
                snaplen: 65535,
                options: vec![],
            })
            .unwrap();
        }
        for (iface, data) in [(0u32, &eth), (1, &erf)] {
            w.write_pcapng_block(EnhancedPacketBlock {
                interface_id: iface,
                timestamp: std::time::Duration::from_micros(7),
                original_len: data.len() as u32,
                data: Cow::Borrowed(&data[..]),
                options: vec![],
            })
            .unwrap();
        }
    }
    let recs: Vec<_> = CaptureReader::open(&path).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].link, &recs[0].data), (LinkType::Ethernet, &eth));
    assert_eq!((recs[1].link, &recs[1].data), (LinkType::Infiniband, &ib));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_erf_records_are_typed_errors() {
    assert!(erf_unwrap(&[0u8; 10]).unwrap_err().contains("shorter"));
    let mut h = erf_header(0, 4).to_vec();
    h.extend_from_slice(&[1, 2]); // rlen says 20, only 18 present
    assert!(erf_unwrap(&h).unwrap_err().contains("rlen"));
    let mut h = erf_header(0, 4).to_vec();
    h[8] = 7;
    h.extend_from_slice(&[1, 2, 3, 4]);
    assert!(erf_unwrap(&h).unwrap_err().contains("type 7"));
    let missing = std::path::Path::new("/nonexistent/x.pcap");
    assert!(
        CaptureReader::open(missing)
            .unwrap_err()
            .to_string()
            .contains("/nonexistent/x.pcap")
    );
}

/// Against the reference folder's scapy-built pcaps.
mod reference {
    use wire::LinkType;
    use wire::pcap::{CaptureReader, erf_header};

    use crate::support::{hex, vectors, vectors_dir};

    #[test]
    fn reference_pcaps_hold_the_vector_frames() {
        let all = vectors();
        for v in all["packets"].as_array().unwrap() {
            let file = v["pcap"].as_str().unwrap();
            let n = v["frame_number"].as_u64().unwrap() as usize;
            let rec = CaptureReader::open(&vectors_dir().join(file))
                .unwrap()
                .nth(n - 1)
                .unwrap_or_else(|| panic!("{file} has no frame {n}"))
                .unwrap();
            assert_eq!(rec.index, n);
            assert_eq!(hex(&rec.data), v["hex"].as_str().unwrap(), "{file} frame {n}");
            let want = if v["linktype"].as_u64() == Some(1) {
                LinkType::Ethernet
            } else {
                LinkType::Infiniband
            };
            assert_eq!(rec.link, want);
            if let Some(e) = v.get("erf_header_hex") {
                // Our ERF header for the same timestamp and length is byte-identical.
                assert_eq!(
                    hex(&erf_header(rec.ts_ns, rec.data.len())),
                    e.as_str().unwrap(),
                    "{file} frame {n}"
                );
            }
        }
        // The DLT 247 copy holds the same frames as the ERF one.
        let a: Vec<_> = CaptureReader::open(&vectors_dir().join("ib_native.pcap"))
            .unwrap()
            .map(|r| r.unwrap().data)
            .collect();
        let b: Vec<_> = CaptureReader::open(&vectors_dir().join("ib_native_linktype247.pcap"))
            .unwrap()
            .map(|r| r.unwrap().data)
            .collect();
        assert_eq!(a.len(), 6);
        assert_eq!(a, b);
    }
}
