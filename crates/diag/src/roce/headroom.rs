//! PFC headroom (XOFF) and the PFC trigger point, as SONiC computes them.
//!
//! The XOFF formula is SONiC's dynamic-buffer headroom calculation
//! (`doc/qos/dynamically-headroom-calculation.md`, sonic-swss
//! `cfgmgr/buffer_headroom_mellanox.lua`), transcribed in roce-config.md §3.2:
//!
//! ```text
//! worst_case_factor = ceil(cell/64) if cell > 128 else ceil(2*cell/(1+cell))
//! spp_by_byte       = 100*64 / ((spp*64 + (100-spp)*lossless_mtu)/100)
//! cell_occupancy    = (100 - spp_by_byte + spp_by_byte*worst_case_factor)/100
//! peer_response     = pause_quanta[speed]*512/8
//! bytes_on_cable    = 2*cable_m*speed_Mbps*1e9/198e6/(8*1000)
//! kb_on_tile        = speed_Gbps*120/8                        (Spectrum-4/5 only)
//! propagation       = port_mtu + bytes_on_cable + mac_phy_delay + peer_response + kb_on_tile
//! xoff              = ceil_1024(lossless_mtu + propagation*cell_occupancy)
//! ```
//!
//! Checked against the SN5600 `pg_profile_lookup.ini` fixture (generated with
//! small_packet_percentage 100): every row is reproduced within 1 KiB, the formula
//! never above the table (see the unit test).

/// Pause quanta the peer may still send after a PAUSE, by port speed in Mb/s
/// (SONiC design doc and the Mellanox lua; 1 quantum = 512 bit times).
pub fn pause_quanta(speed_mbps: u64) -> Option<u64> {
    Some(match speed_mbps {
        10_000 => 67,
        25_000 => 80,
        40_000 => 118,
        50_000 => 147,
        100_000 => 394,
        200_000 => 453,
        400_000 => 905,
        800_000 => 905,
        _ => return None,
    })
}

/// ASIC constants that change the result (`platform/mellanox/asic_table.j2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asic {
    /// Buffer cell size in bytes; `None` = unknown ASIC, no cell overhead assumed
    /// (the lower bound: a real ASIC needs at least this much).
    pub cell: Option<u64>,
    /// Spectrum-4/5 add the bytes held on the tile.
    pub tile: bool,
    /// Name for messages.
    pub name: &'static str,
}

impl Asic {
    /// Guess the ASIC from DEVICE_METADATA `platform`/`hwsku` (Mellanox naming:
    /// SN2xxx Spectrum-1 cell 96, SN3xxx Spectrum-2 and SN4xxx Spectrum-3 cell 144,
    /// SN5xxx Spectrum-4 cell 192).
    pub fn from_metadata(platform: &str, hwsku: &str) -> Asic {
        let s = format!("{platform} {hwsku}").to_ascii_lowercase();
        let has = |p: &str| s.contains(&format!("msn{p}")) || s.contains(&format!("sn{p}"));
        if has("2") {
            Asic {
                cell: Some(96),
                tile: false,
                name: "Spectrum-1",
            }
        } else if has("3") {
            Asic {
                cell: Some(144),
                tile: false,
                name: "Spectrum-2",
            }
        } else if has("4") {
            Asic {
                cell: Some(144),
                tile: false,
                name: "Spectrum-3",
            }
        } else if has("5") {
            Asic {
                cell: Some(192),
                tile: true,
                name: "Spectrum-4",
            }
        } else {
            Asic {
                cell: None,
                tile: false,
                name: "unknown ASIC (no cell overhead assumed)",
            }
        }
    }
}

/// Inputs of the XOFF computation for one port.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadroomInput {
    /// Port speed (PORT.speed, Mb/s).
    pub speed_mbps: u64,
    /// Cable length (CABLE_LENGTH, metres).
    pub cable_m: f64,
    /// The port MTU (PORT.mtu, default 9100).
    pub port_mtu: u64,
    /// LOSSLESS_TRAFFIC_PATTERN.mtu (default 1024, buffers_config.j2).
    pub lossless_mtu: u64,
    /// LOSSLESS_TRAFFIC_PATTERN.small_packet_percentage (default 50).
    pub small_packet_pct: u64,
    /// Buffer constants.
    pub asic: Asic,
}

/// MAC/PHY delay: 0.8 KB (asic_table.j2).
const MAC_PHY_DELAY: f64 = 0.8 * 1024.0;

/// Required XOFF bytes, or `None` when the speed has no pause-quanta entry.
pub fn required_xoff(i: &HeadroomInput) -> Option<u64> {
    let quanta = pause_quanta(i.speed_mbps)?;
    let occupancy = match i.asic.cell {
        None => 1.0,
        Some(cell) => {
            let wcf = if cell > 128 {
                cell.div_ceil(64)
            } else {
                (2 * cell).div_ceil(1 + cell)
            } as f64;
            let spp = i.small_packet_pct.min(100) as f64;
            let spp_by_byte = 100.0 * 64.0 / ((spp * 64.0 + (100.0 - spp) * i.lossless_mtu as f64) / 100.0);
            (100.0 - spp_by_byte + spp_by_byte * wcf) / 100.0
        }
    };
    let peer_response = (quanta * 512 / 8) as f64;
    let on_cable = 2.0 * i.cable_m * i.speed_mbps as f64 * 1e9 / 198_000_000.0 / 8000.0;
    let tile = if i.asic.tile {
        i.speed_mbps as f64 / 1000.0 * 120.0 / 8.0
    } else {
        0.0
    };
    let prop = i.port_mtu as f64 + on_cable + MAC_PHY_DELAY + peer_response + tile;
    let x = i.lossless_mtu as f64 + prop * occupancy;
    Some(((x / 1024.0).ceil() as u64) * 1024)
}

/// Where a single congested PG starts pausing: `alpha/(1+alpha) * pool` with
/// `alpha = 2^dynamic_th` (swss-schema; roce-config.md §3.4, T_1 of §3.6).
pub fn pfc_trigger_dynamic(pool_bytes: u64, dynamic_th: i32) -> u64 {
    let alpha = 2f64.powi(dynamic_th.clamp(-8, 7));
    (alpha / (1.0 + alpha) * pool_bytes as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_sn5600_lookup_table() {
        let text = include_str!("../../tests/data/roce/mellanox-sn5600-pg_profile_lookup.ini");
        let asic = Asic::from_metadata("x86_64-nvidia_sn5600-r0", "ACS-SN5600");
        assert_eq!(asic.cell, Some(192));
        let mut rows = 0;
        for line in text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        {
            let f: Vec<&str> = line.split_whitespace().collect();
            let speed: u64 = f[0].parse().unwrap();
            let cable: f64 = f[1].trim_end_matches('m').parse().unwrap();
            let table_xoff: u64 = f[4].parse().unwrap();
            let got = required_xoff(&HeadroomInput {
                speed_mbps: speed,
                cable_m: cable,
                port_mtu: 9100,
                lossless_mtu: 1024,
                small_packet_pct: 100,
                asic,
            })
            .unwrap();
            assert!(
                got <= table_xoff && table_xoff - got <= 1024,
                "{speed} {cable}m: {got} vs {table_xoff}"
            );
            rows += 1;
        }
        assert_eq!(rows, 24);
    }

    #[test]
    fn trigger_point() {
        assert_eq!(pfc_trigger_dynamic(5_088_768, 0), 2_544_384);
        // roce-config.md §3.6: alpha 1/8 over 10.9 MB gives about 1.21 MB.
        let t = pfc_trigger_dynamic(10_875_072, -3);
        assert!((1_200_000..1_220_000).contains(&t), "{t}");
    }
}
