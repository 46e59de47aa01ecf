//! ICRC and VCRC (IBA vol. 1 §7.8; RoCE annexes A16/A17).
//!
//! The ICRC is the IEEE 802.3 CRC-32 (reflected, init and final XOR 0xFFFFFFFF),
//! stored little-endian, over the packet from the (pseudo-)LRH to the last pad byte
//! with the *variant* fields replaced by ones. The masked fields all sit in the first
//! few dozen header bytes, so the masked headers are copied into a small stack buffer
//! and the payload is fed to the SIMD CRC in place: no copy of the payload, no
//! allocation. The CRC is `crc32fast` (PCLMULQDQ carry-less-multiply folding, chosen
//! at run time); the `crc-fast` crate was measured too and was about half as fast
//! over 4 KiB on the development machine (docs/PERFORMANCE.md). The recipe and its cross-checks against
//! scapy and Linux rxe are in `../shared/vectors/wire/README.md`.
//!
//! The VCRC is CRC-16 with polynomial 0x100B, reflected (0xD008), init and final XOR
//! 0xFFFF, over LRH..ICRC unmasked, stored little-endian (IBA §7.8.2).

/// Which masking rules apply (IBA §7.8.1; RoCE annex A16.4, A17.4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IcrcKind {
    /// Native IB, LNH=2: LRH with VL masked, then BTH.
    IbLocal,
    /// Native IB, LNH=3: LRH fully masked, GRH masked (TClass, FlowLabel, HopLmt), BTH.
    IbGlobal,
    /// RoCEv1: dummy LRH of ones, GRH masked, BTH.
    RoceV1,
    /// RoCEv2 over IPv4: dummy LRH, IPv4 (TOS, TTL, checksum masked), UDP (checksum masked), BTH.
    RoceV2Ipv4,
    /// RoCEv2 over IPv6: dummy LRH, IPv6 (TClass, FlowLabel, HopLimit masked), UDP, BTH.
    RoceV2Ipv6,
}

impl IcrcKind {
    /// Bytes of the covered headers from the first covered byte up to and including
    /// the BTH (the dummy LRH of RoCE is not on the wire and not counted).
    pub const fn header_len(self) -> usize {
        match self {
            IcrcKind::IbLocal => 8 + 12,
            IcrcKind::IbGlobal => 8 + 40 + 12,
            IcrcKind::RoceV1 => 40 + 12,
            IcrcKind::RoceV2Ipv4 => 20 + 8 + 12,
            IcrcKind::RoceV2Ipv6 => 40 + 8 + 12,
        }
    }
}

/// The receiver residue: CRC-32 over masked input followed by the ICRC bytes.
pub const ICRC_RESIDUE: u32 = 0x2144_DF1C;
/// The residue of the VCRC CRC-16 over a frame including its VCRC.
pub const VCRC_RESIDUE: u16 = 0xAA90;

#[inline]
fn mask_grh_like(h: &mut [u8]) {
    // Version nibble kept; TClass and FlowLabel to ones; HopLimit (byte 7) to ones.
    h[0] |= 0x0f;
    h[1] = 0xff;
    h[2] = 0xff;
    h[3] = 0xff;
    h[7] = 0xff;
}

/// Compute the ICRC value (the CRC as an integer; the wire carries it
/// little-endian) for a packet whose covered headers (`headers`, exactly
/// [`IcrcKind::header_len`] bytes, from LRH or IP header through the BTH) are
/// followed by `rest` (extended headers, payload and pad, up to but excluding the ICRC).
///
/// Panics if `headers` is shorter than `kind.header_len()`; the packet decoder and
/// builder always pass slices of that length.
#[inline]
pub fn icrc(kind: IcrcKind, headers: &[u8], rest: &[u8]) -> u32 {
    let n = kind.header_len();
    // RoCE packets start with a dummy LRH of ones; it goes in front of the copied
    // headers so the masked prefix is one contiguous CRC update.
    let off = match kind {
        IcrcKind::IbLocal | IcrcKind::IbGlobal => 0,
        _ => 8,
    };
    let mut buf = [0xffu8; 72];
    buf[off..off + n].copy_from_slice(&headers[..n]);
    let h = &mut buf[off..off + n];
    match kind {
        IcrcKind::IbLocal => {
            h[0] |= 0xf0; // VL
        }
        IcrcKind::IbGlobal => {
            h[..8].fill(0xff); // the whole LRH
            mask_grh_like(&mut h[8..48]);
        }
        IcrcKind::RoceV1 => mask_grh_like(&mut h[..40]),
        IcrcKind::RoceV2Ipv4 => {
            h[1] = 0xff; // TOS (DSCP + ECN)
            h[8] = 0xff; // TTL
            h[10] = 0xff; // header checksum
            h[11] = 0xff;
            h[26] = 0xff; // UDP checksum
            h[27] = 0xff;
        }
        IcrcKind::RoceV2Ipv6 => {
            mask_grh_like(&mut h[..40]);
            h[46] = 0xff; // UDP checksum
            h[47] = 0xff;
        }
    }
    h[n - 12 + 4] = 0xff; // BTH byte 4: FECN, BECN, Resv6a
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&buf[..off + n]);
    hasher.update(rest);
    hasher.finalize()
}

const fn vcrc_table() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xD008 } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}
static VCRC_TABLE: [u16; 256] = vcrc_table();

/// Continue a raw (un-finalised) VCRC register over `data`.
#[inline]
fn vcrc_update(mut c: u16, data: &[u8]) -> u16 {
    for &b in data {
        c = (c >> 8) ^ VCRC_TABLE[((c ^ b as u16) & 0xff) as usize];
    }
    c
}

/// The VCRC of `data` (LRH through ICRC, unmasked).
pub fn vcrc(data: &[u8]) -> u16 {
    !vcrc_update(0xffff, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vcrc_matches_readme_example_and_residue() {
        let f: Vec<u8> = (0..)
            .zip(
                "10120001000700051100ffff00000011001234560d000007a2a6cbf7c74e"
                    .as_bytes()
                    .chunks(2),
            )
            .map(|(_, c)| u8::from_str_radix(core::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect();
        let n = f.len();
        assert_eq!(vcrc(&f[..n - 2]).to_le_bytes(), [f[n - 2], f[n - 1]]);
        assert_eq!(!vcrc_update(0xffff, &f), VCRC_RESIDUE);
    }

    #[test]
    fn icrc_ib_local_readme_example() {
        let f: Vec<u8> = "10120001000700051100ffff00000011001234560d000007a2a6cbf7"
            .as_bytes()
            .chunks(2)
            .map(|c| u8::from_str_radix(core::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect();
        let v = icrc(IcrcKind::IbLocal, &f[..20], &f[20..24]);
        assert_eq!(v.to_le_bytes(), [0xa2, 0xa6, 0xcb, 0xf7]);
    }
}
