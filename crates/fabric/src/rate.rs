//! Link speeds and widths: InfiniBand generations × lane counts, and Ethernet rates.
//!
//! Data rates are the bit rate left after line encoding, which is what carries
//! packet bytes. Per-lane figures (IBA vol. 1 §5.2 / §6 and the InfiniBand Trade
//! Association roadmap): SDR 2.5 Gbaud 8b/10b → 2 Gb/s, DDR 4, QDR 8;
//! FDR10 10.3125 Gbaud 64b/66b → 10; FDR 14.0625 Gbaud 64b/66b → 13.636…;
//! EDR 25.78125 Gbaud 64b/66b → 25; HDR 50, NDR 100, XDR 200 (PAM4 with FEC,
//! quoted as the usable rate). So NDR 4x carries 400 Gb/s.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An InfiniBand signalling generation (LinkSpeedActive / LinkSpeedExtActive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum IbSpeed {
    Sdr,
    Ddr,
    Qdr,
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
}

impl IbSpeed {
    /// Every generation, slowest first.
    pub const ALL: [IbSpeed; 9] = [
        IbSpeed::Sdr,
        IbSpeed::Ddr,
        IbSpeed::Qdr,
        IbSpeed::Fdr10,
        IbSpeed::Fdr,
        IbSpeed::Edr,
        IbSpeed::Hdr,
        IbSpeed::Ndr,
        IbSpeed::Xdr,
    ];

    /// Usable data rate of one lane in bits per second (after encoding).
    pub fn lane_bps(self) -> u64 {
        match self {
            IbSpeed::Sdr => 2_000_000_000,
            IbSpeed::Ddr => 4_000_000_000,
            IbSpeed::Qdr => 8_000_000_000,
            IbSpeed::Fdr10 => 10_000_000_000,
            // 14.0625 Gbaud × 64/66
            IbSpeed::Fdr => 13_636_363_636,
            IbSpeed::Edr => 25_000_000_000,
            IbSpeed::Hdr => 50_000_000_000,
            IbSpeed::Ndr => 100_000_000_000,
            IbSpeed::Xdr => 200_000_000_000,
        }
    }

    /// The name infiniband-diags prints ("SDR", "FDR10", …).
    pub fn name(self) -> &'static str {
        match self {
            IbSpeed::Sdr => "SDR",
            IbSpeed::Ddr => "DDR",
            IbSpeed::Qdr => "QDR",
            IbSpeed::Fdr10 => "FDR10",
            IbSpeed::Fdr => "FDR",
            IbSpeed::Edr => "EDR",
            IbSpeed::Hdr => "HDR",
            IbSpeed::Ndr => "NDR",
            IbSpeed::Xdr => "XDR",
        }
    }

    /// PortInfo:LinkSpeedActive code (IBA vol. 1 §14.2.5.6): 1 SDR, 2 DDR, 4 QDR;
    /// 0 when the speed is carried in LinkSpeedExtActive instead.
    pub fn link_speed_code(self) -> u8 {
        match self {
            IbSpeed::Sdr => 1,
            IbSpeed::Ddr => 2,
            IbSpeed::Qdr => 4,
            _ => 0,
        }
    }

    /// PortInfo:LinkSpeedExtActive code: 1 FDR, 2 EDR, 4 HDR, 8 NDR, 32 XDR; 0 otherwise.
    /// (FDR10 is signalled in the Mellanox extended PortInfo, not here.)
    pub fn link_speed_ext_code(self) -> u8 {
        match self {
            IbSpeed::Fdr => 1,
            IbSpeed::Edr => 2,
            IbSpeed::Hdr => 4,
            IbSpeed::Ndr => 8,
            IbSpeed::Xdr => 32,
            _ => 0,
        }
    }
}

impl fmt::Display for IbSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IbSpeed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        IbSpeed::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown InfiniBand speed {s:?} (expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR)")
            })
    }
}

/// Lanes per InfiniBand link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IbWidth {
    #[serde(rename = "1x")]
    X1,
    #[serde(rename = "2x")]
    X2,
    #[serde(rename = "4x")]
    X4,
    #[serde(rename = "8x")]
    X8,
    #[serde(rename = "12x")]
    X12,
}

impl IbWidth {
    /// Every width, narrowest first.
    pub const ALL: [IbWidth; 5] = [IbWidth::X1, IbWidth::X2, IbWidth::X4, IbWidth::X8, IbWidth::X12];

    /// Number of lanes.
    pub fn lanes(self) -> u32 {
        match self {
            IbWidth::X1 => 1,
            IbWidth::X2 => 2,
            IbWidth::X4 => 4,
            IbWidth::X8 => 8,
            IbWidth::X12 => 12,
        }
    }

    /// PortInfo:LinkWidthActive code (IBA vol. 1 §14.2.5.6): 1 1x, 2 4x, 4 8x, 8 12x, 16 2x.
    pub fn code(self) -> u8 {
        match self {
            IbWidth::X1 => 1,
            IbWidth::X4 => 2,
            IbWidth::X8 => 4,
            IbWidth::X12 => 8,
            IbWidth::X2 => 16,
        }
    }

    /// Inverse of [`IbWidth::code`].
    pub fn from_code(code: u8) -> Option<IbWidth> {
        IbWidth::ALL.into_iter().find(|w| w.code() == code)
    }

    /// "1x", "4x", …
    pub fn name(self) -> &'static str {
        match self {
            IbWidth::X1 => "1x",
            IbWidth::X2 => "2x",
            IbWidth::X4 => "4x",
            IbWidth::X8 => "8x",
            IbWidth::X12 => "12x",
        }
    }
}

impl fmt::Display for IbWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IbWidth {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        IbWidth::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown link width {s:?} (expected 1x, 2x, 4x, 8x or 12x)"))
    }
}

/// An Ethernet port speed in Gb/s (10 to 800).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EthSpeed(u16);

impl EthSpeed {
    /// The standard Ethernet rates rdmalab models, in Gb/s.
    pub const RATES_GBPS: [u16; 8] = [10, 25, 40, 50, 100, 200, 400, 800];

    /// A standard rate, or an error naming the accepted ones.
    pub fn from_gbps(gbps: u16) -> Result<EthSpeed, String> {
        if Self::RATES_GBPS.contains(&gbps) {
            Ok(EthSpeed(gbps))
        } else {
            Err(format!(
                "unsupported Ethernet speed {gbps}G (expected one of 10, 25, 40, 50, 100, 200, 400, 800)"
            ))
        }
    }

    /// Gb/s.
    pub fn gbps(self) -> u16 {
        self.0
    }
}

/// The rate of one link: an InfiniBand speed × width, or an Ethernet speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LinkRate {
    /// InfiniBand.
    Ib { speed: IbSpeed, width: IbWidth },
    /// Ethernet.
    Eth { gbps: EthSpeed },
}

impl LinkRate {
    /// InfiniBand NDR 4x, 400 Gb/s.
    pub const NDR_4X: LinkRate = LinkRate::Ib {
        speed: IbSpeed::Ndr,
        width: IbWidth::X4,
    };
    /// InfiniBand HDR 4x, 200 Gb/s.
    pub const HDR_4X: LinkRate = LinkRate::Ib {
        speed: IbSpeed::Hdr,
        width: IbWidth::X4,
    };
    /// InfiniBand EDR 4x, 100 Gb/s.
    pub const EDR_4X: LinkRate = LinkRate::Ib {
        speed: IbSpeed::Edr,
        width: IbWidth::X4,
    };

    /// An InfiniBand rate.
    pub fn ib(speed: IbSpeed, width: IbWidth) -> LinkRate {
        LinkRate::Ib { speed, width }
    }

    /// An Ethernet rate; panics only on a non-standard constant, so use
    /// [`EthSpeed::from_gbps`] for user input.
    pub fn eth(gbps: u16) -> Result<LinkRate, String> {
        Ok(LinkRate::Eth {
            gbps: EthSpeed::from_gbps(gbps)?,
        })
    }

    /// Usable data rate in bits per second.
    pub fn data_bps(self) -> u64 {
        match self {
            LinkRate::Ib { speed, width } => speed.lane_bps() * u64::from(width.lanes()),
            LinkRate::Eth { gbps } => u64::from(gbps.0) * 1_000_000_000,
        }
    }

    /// True for InfiniBand.
    pub fn is_ib(self) -> bool {
        matches!(self, LinkRate::Ib { .. })
    }
}

impl fmt::Display for LinkRate {
    /// InfiniBand as infiniband-diags prints it ("4xNDR"); Ethernet as "400G".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkRate::Ib { speed, width } => write!(f, "{width}{speed}"),
            LinkRate::Eth { gbps } => write!(f, "{}G", gbps.0),
        }
    }
}

impl FromStr for LinkRate {
    type Err = String;
    /// Accepts "4xNDR" (infiniband-diags), "NDR4x" / "ndr-4x", and Ethernet "400G" / "400GbE".
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(num) = lower.strip_suffix("gbe").or_else(|| lower.strip_suffix('g'))
            && let Ok(g) = num.parse::<u16>()
        {
            return LinkRate::eth(g);
        }
        // "<w>x<SPEED>"
        if let Some(xpos) = lower.find('x') {
            let (w, sp) = lower.split_at(xpos + 1);
            if let (Ok(width), Ok(speed)) = (w.parse::<IbWidth>(), sp.parse::<IbSpeed>()) {
                return Ok(LinkRate::Ib { speed, width });
            }
        }
        // "<SPEED><w>x" or "<SPEED>-<w>x"
        for speed in IbSpeed::ALL.into_iter().rev() {
            let name = speed.name().to_ascii_lowercase();
            if let Some(rest) = lower.strip_prefix(&name) {
                let rest = rest.trim_start_matches(['-', '_', ' ']);
                if let Ok(width) = rest.parse::<IbWidth>() {
                    return Ok(LinkRate::Ib { speed, width });
                }
            }
        }
        Err(format!(
            "unknown link rate {s:?} (expected an InfiniBand width×speed such as 4xNDR, or an Ethernet speed such as 400G)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndr_4x_is_400g() {
        assert_eq!(LinkRate::NDR_4X.data_bps(), 400_000_000_000);
        assert_eq!(LinkRate::ib(IbSpeed::Sdr, IbWidth::X4).data_bps(), 8_000_000_000);
        assert_eq!(LinkRate::ib(IbSpeed::Qdr, IbWidth::X12).data_bps(), 96_000_000_000);
    }

    #[test]
    fn parse_and_print_round_trip() {
        for speed in IbSpeed::ALL {
            for width in IbWidth::ALL {
                let r = LinkRate::ib(speed, width);
                assert_eq!(r.to_string().parse::<LinkRate>().unwrap(), r);
            }
        }
        for g in EthSpeed::RATES_GBPS {
            let r = LinkRate::eth(g).unwrap();
            assert_eq!(r.to_string().parse::<LinkRate>().unwrap(), r);
        }
        assert_eq!("NDR4x".parse::<LinkRate>().unwrap(), LinkRate::NDR_4X);
        assert!("4xQQQ".parse::<LinkRate>().is_err());
        assert!("33G".parse::<LinkRate>().is_err());
    }

    #[test]
    fn width_codes_round_trip() {
        for w in IbWidth::ALL {
            assert_eq!(IbWidth::from_code(w.code()), Some(w));
        }
    }
}
