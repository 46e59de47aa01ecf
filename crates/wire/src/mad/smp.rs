//! Subnet management packets (IBA vol. 1 §14.2.1): LID-routed (class 0x01) and
//! directed-route (class 0x81), and the directed-route forwarding rules of §14.2.2
//! (C14-9 outgoing, C14-13 returning) for an in-process SMA or switch model.
//!
//! ```text
//! 0..24    common MAD header; DR: status bit 15 = D (1 = returning),
//!          byte 6 = HopPointer, byte 7 = HopCount
//! 24..32   M_Key
//! 32..34   DrSLID   34..36 DrDLID (DR; 0xFFFF = permissive)   36..64 reserved
//! 64..128  SMP data (the attribute, 64 bytes)
//! 128..192 InitialPath[64]   192..256 ReturnPath[64]   (DR; reserved when LID-routed)
//! ```

use super::MAD_LEN;
use super::header::{self, AttrId, Method, MgmtClass};
use crate::bytes::{be16, be64, put16, put64};
use crate::error::{Error, Result, need, room};
use crate::ids::Lid;

/// Most hops a directed route may have (the path arrays hold 64 entries, index 0 unused).
pub const MAX_HOPS: u8 = 63;
/// Bytes of SMP data.
pub const DATA_LEN: usize = 64;

/// The directed-route part of a DR SMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrRoute {
    /// D bit: false = outgoing (SM → node), true = returning (node → SM).
    pub returning: bool,
    /// Hop pointer.
    pub hop_ptr: u8,
    /// Hop count (≤ 63).
    pub hop_cnt: u8,
    /// Directed-route SLID (permissive for a pure directed route).
    pub dr_slid: Lid,
    /// Directed-route DLID (permissive for a pure directed route).
    pub dr_dlid: Lid,
    /// Egress port at each hop: `initial_path[i]` is the port hop `i` leaves by (index 0 unused).
    pub initial_path: [u8; 64],
    /// Ingress port recorded at each hop on the way out, used to come back.
    pub return_path: [u8; 64],
}

impl DrRoute {
    /// A pure directed route along `ports` (the egress port at hop 1, 2, …).
    /// Errors if there are more than 63 hops.
    pub fn new(ports: &[u8]) -> Result<DrRoute> {
        if ports.len() > MAX_HOPS as usize {
            return Err(Error::Unrepresentable {
                header: "DR SMP",
                field: "hop count",
                value: ports.len() as u64,
                expected: "at most 63 hops",
            });
        }
        let mut initial_path = [0u8; 64];
        initial_path[1..=ports.len()].copy_from_slice(ports);
        Ok(DrRoute {
            returning: false,
            hop_ptr: 0,
            hop_cnt: ports.len() as u8,
            dr_slid: Lid::PERMISSIVE,
            dr_dlid: Lid::PERMISSIVE,
            initial_path,
            return_path: [0; 64],
        })
    }
    /// The egress ports of the path, hop 1 first.
    pub fn path(&self) -> &[u8] {
        &self.initial_path[1..=(self.hop_cnt.min(MAX_HOPS)) as usize]
    }
}

/// Why a node drops a DR SMP (IBA §14.2.2 C14-9 / C14-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DrDiscard {
    /// The hop pointer is not one the rules accept at this stage.
    BadHopPointer {
        /// Hop pointer found.
        hop_ptr: u8,
        /// Hop count.
        hop_cnt: u8,
    },
    /// Only switches forward directed-route SMPs.
    NotASwitch,
    /// The path names a port the node does not have.
    NoSuchPort(u8),
    /// Hop count above 63.
    HopCountTooLarge(u8),
}

/// What a node does next with a DR SMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DrStep {
    /// Transmit it out of this port.
    Forward(u8),
    /// Hand it to the local SMA (outgoing) or to the SM (returning).
    Deliver,
    /// Continue LID-routed toward this LID (mixed routes: DrDLID/DrSLID not permissive).
    LidRoute(Lid),
    /// Drop it.
    Discard(DrDiscard),
}

impl DrRoute {
    fn bad(&self) -> DrStep {
        DrStep::Discard(DrDiscard::BadHopPointer {
            hop_ptr: self.hop_ptr,
            hop_cnt: self.hop_cnt,
        })
    }
    fn port(&self, p: u8, num_ports: u8) -> DrStep {
        if p == 0 || p > num_ports {
            DrStep::Discard(DrDiscard::NoSuchPort(p))
        } else {
            DrStep::Forward(p)
        }
    }

    /// The SM sends an outgoing request (C14-9:1): hop pointer 0 → 1, out of
    /// `InitialPath[1]`; with hop count 0 the SMP is for the SM's own node's SMA.
    /// `num_ports` is the sending node's port count.
    pub fn originate(&mut self, num_ports: u8) -> DrStep {
        if self.hop_cnt > MAX_HOPS {
            return DrStep::Discard(DrDiscard::HopCountTooLarge(self.hop_cnt));
        }
        if self.returning || self.hop_ptr != 0 {
            return self.bad();
        }
        self.hop_ptr = 1;
        if self.hop_cnt == 0 {
            DrStep::Deliver
        } else {
            self.port(self.initial_path[1], num_ports)
        }
    }

    /// A node received an SMP on `in_port` (dispatches on the D bit).
    pub fn receive(&mut self, in_port: u8, is_switch: bool, num_ports: u8) -> DrStep {
        if self.hop_cnt > MAX_HOPS {
            return DrStep::Discard(DrDiscard::HopCountTooLarge(self.hop_cnt));
        }
        if self.returning {
            self.receive_returning(is_switch, num_ports)
        } else {
            self.receive_outgoing(in_port, is_switch, num_ports)
        }
    }

    /// Outgoing SMP arrives at a node through `in_port` (C14-9:2, C14-9:3).
    ///
    /// - `0 < hop_ptr < hop_cnt`: an intermediate hop; only switches forward. Record
    ///   `ReturnPath[hop_ptr] = in_port`, advance, leave by `InitialPath[hop_ptr]`.
    /// - `hop_ptr == hop_cnt`: the end of the directed part. Record the return port,
    ///   advance to `hop_cnt + 1` and deliver to the SMA (or continue LID-routed to DrDLID).
    pub fn receive_outgoing(&mut self, in_port: u8, is_switch: bool, num_ports: u8) -> DrStep {
        let (p, c) = (self.hop_ptr, self.hop_cnt);
        if p != 0 && p < c {
            if !is_switch {
                return DrStep::Discard(DrDiscard::NotASwitch);
            }
            self.return_path[p as usize] = in_port;
            self.hop_ptr = p + 1;
            self.port(self.initial_path[p as usize + 1], num_ports)
        } else if p == c && p != 0 {
            self.return_path[p as usize] = in_port;
            self.hop_ptr = p + 1;
            if self.dr_dlid == Lid::PERMISSIVE {
                DrStep::Deliver
            } else {
                DrStep::LidRoute(self.dr_dlid)
            }
        } else {
            self.bad()
        }
    }

    /// The SMA turns a request into its response: D = 1, paths and hop pointer kept
    /// (the hop pointer is `hop_cnt + 1` after delivery).
    pub fn turn_around(&mut self) {
        self.returning = true;
    }

    /// The responder sends the returning SMP (C14-13:1): hop pointer `hop_cnt + 1`
    /// → `hop_cnt`, out of `ReturnPath[hop_cnt]`. With hop count 0 the response is for
    /// the SM on the same node.
    pub fn respond(&mut self, num_ports: u8) -> DrStep {
        if !self.returning || self.hop_ptr != self.hop_cnt.wrapping_add(1) {
            return self.bad();
        }
        if self.hop_cnt == 0 {
            self.hop_ptr = 0;
            return DrStep::Deliver;
        }
        self.hop_ptr = self.hop_cnt;
        self.port(self.return_path[self.hop_cnt as usize], num_ports)
    }

    /// Returning SMP arrives at a node (C14-13:2, C14-13:3).
    ///
    /// - `2 ≤ hop_ptr ≤ hop_cnt`: an intermediate switch; step back and leave by
    ///   `ReturnPath[hop_ptr]`.
    /// - `hop_ptr == 1`: back at the SM's node; hop pointer 0 and deliver to the SM
    ///   (or continue LID-routed to DrSLID).
    pub fn receive_returning(&mut self, is_switch: bool, num_ports: u8) -> DrStep {
        let (p, c) = (self.hop_ptr, self.hop_cnt);
        if p >= 2 && p <= c {
            if !is_switch {
                return DrStep::Discard(DrDiscard::NotASwitch);
            }
            self.hop_ptr = p - 1;
            self.port(self.return_path[self.hop_ptr as usize], num_ports)
        } else if p == 1 {
            self.hop_ptr = 0;
            if self.dr_slid == Lid::PERMISSIVE {
                DrStep::Deliver
            } else {
                DrStep::LidRoute(self.dr_slid)
            }
        } else {
            self.bad()
        }
    }
}

/// How an SMP is routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// LID-routed (class 0x01): LRH DLID picks the node.
    Lid,
    /// Directed route (class 0x81).
    Directed(DrRoute),
}

/// A zero-copy view of a 256-byte SMP.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }
    /// Wrap after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }
    /// Ensure all 256 bytes are present.
    pub fn check_len(&self) -> Result<()> {
        need("SMP", self.buffer.as_ref(), MAD_LEN)
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// The common MAD header view.
    pub fn header(&self) -> header::Packet<&[u8]> {
        header::Packet::new_unchecked(&self.b()[..header::HEADER_LEN])
    }
    /// True for class 0x81.
    pub fn is_directed(&self) -> bool {
        self.b()[1] == 0x81
    }
    /// D bit (DR only).
    pub fn direction_returning(&self) -> bool {
        self.b()[4] & 0x80 != 0
    }
    /// Hop pointer (DR only).
    pub fn hop_ptr(&self) -> u8 {
        self.b()[6]
    }
    /// Hop count (DR only).
    pub fn hop_cnt(&self) -> u8 {
        self.b()[7]
    }
    /// M_Key.
    pub fn m_key(&self) -> u64 {
        be64(self.b(), 24)
    }
    /// DrSLID.
    pub fn dr_slid(&self) -> Lid {
        Lid(be16(self.b(), 32))
    }
    /// DrDLID.
    pub fn dr_dlid(&self) -> Lid {
        Lid(be16(self.b(), 34))
    }
    /// The 64-byte SMP data.
    pub fn data(&self) -> &[u8] {
        &self.b()[64..128]
    }
    /// InitialPath.
    pub fn initial_path(&self) -> &[u8] {
        &self.b()[128..192]
    }
    /// ReturnPath.
    pub fn return_path(&self) -> &[u8] {
        &self.b()[192..256]
    }
}

/// A parsed SMP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Smp {
    /// Method.
    pub method: Method,
    /// Status: 16 bits LID-routed; the low 15 bits for DR (the D bit is in [`DrRoute`]).
    pub status: u16,
    /// Transaction id.
    pub tid: u64,
    /// Attribute id.
    pub attr_id: AttrId,
    /// Attribute modifier (e.g. port number, LFT block).
    pub attr_mod: u32,
    /// M_Key.
    pub m_key: u64,
    /// Routing.
    pub route: Route,
    /// SMP data: the attribute.
    pub data: [u8; 64],
}

/// Alias in the Packet/Repr naming.
pub type Repr = Smp;

impl Smp {
    /// A Get request with zero data.
    pub fn get(attr_id: AttrId, attr_mod: u32, tid: u64, route: Route) -> Smp {
        Smp {
            method: Method::Get,
            status: 0,
            tid,
            attr_id,
            attr_mod,
            m_key: 0,
            route,
            data: [0; 64],
        }
    }
    /// A Set request carrying `data`.
    pub fn set(attr_id: AttrId, attr_mod: u32, tid: u64, route: Route, data: [u8; 64]) -> Smp {
        Smp {
            method: Method::Set,
            status: 0,
            tid,
            attr_id,
            attr_mod,
            m_key: 0,
            route,
            data,
        }
    }
    /// The management class this SMP uses.
    pub fn mgmt_class(&self) -> MgmtClass {
        match self.route {
            Route::Lid => MgmtClass::SubnLid,
            Route::Directed(_) => MgmtClass::SubnDirected,
        }
    }
    /// Turn a request into its response: method GetResp (or the R-bit form), the
    /// given status and data, and for DR the D bit set.
    pub fn into_response(mut self, status: u16, data: [u8; 64]) -> Smp {
        self.method = self.method.response();
        self.status = status;
        self.data = data;
        if let Route::Directed(dr) = &mut self.route {
            dr.turn_around();
        }
        self
    }

    /// Parse. Base and class versions must be 1, the class 0x01 or 0x81, and the hop
    /// count at most 63.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Smp> {
        p.check_len()?;
        let h = header::Repr::parse(&p.header())?;
        if h.base_version != 1 {
            return Err(Error::BadField {
                header: "SMP",
                field: "BaseVersion",
                value: h.base_version as u64,
                expected: "1",
            });
        }
        if h.class_version != 1 {
            return Err(Error::BadField {
                header: "SMP",
                field: "ClassVersion",
                value: h.class_version as u64,
                expected: "1",
            });
        }
        let (route, status) = match h.mgmt_class {
            MgmtClass::SubnLid => (Route::Lid, h.status),
            MgmtClass::SubnDirected => {
                let hop_cnt = p.hop_cnt();
                if hop_cnt > MAX_HOPS {
                    return Err(Error::BadField {
                        header: "DR SMP",
                        field: "HopCount",
                        value: hop_cnt as u64,
                        expected: "at most 63",
                    });
                }
                let mut initial_path = [0u8; 64];
                initial_path.copy_from_slice(p.initial_path());
                let mut return_path = [0u8; 64];
                return_path.copy_from_slice(p.return_path());
                let dr = DrRoute {
                    returning: p.direction_returning(),
                    hop_ptr: p.hop_ptr(),
                    hop_cnt,
                    dr_slid: p.dr_slid(),
                    dr_dlid: p.dr_dlid(),
                    initial_path,
                    return_path,
                };
                (Route::Directed(dr), h.status & 0x7fff)
            }
            c => {
                return Err(Error::BadField {
                    header: "SMP",
                    field: "MgmtClass",
                    value: u8::from(c) as u64,
                    expected: "0x01 (LID-routed) or 0x81 (directed route)",
                });
            }
        };
        let mut data = [0u8; 64];
        data.copy_from_slice(p.data());
        Ok(Smp {
            method: h.method,
            status,
            tid: h.tid,
            attr_id: h.attr_id,
            attr_mod: h.attr_mod,
            m_key: p.m_key(),
            route,
            data,
        })
    }

    /// Parse from raw bytes.
    pub fn from_bytes(b: &[u8]) -> Result<Smp> {
        Smp::parse(&Packet::new_checked(b)?)
    }

    /// Bytes [`Smp::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Write all 256 bytes (reserved areas zero).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("SMP", b, MAD_LEN)?;
        let b = &mut b[..MAD_LEN];
        b.fill(0);
        let (status, class_specific) = match &self.route {
            Route::Lid => (self.status, 0),
            Route::Directed(dr) => {
                if dr.hop_cnt > MAX_HOPS {
                    return Err(Error::Unrepresentable {
                        header: "DR SMP",
                        field: "hop count",
                        value: dr.hop_cnt as u64,
                        expected: "at most 63",
                    });
                }
                (
                    (self.status & 0x7fff) | ((dr.returning as u16) << 15),
                    ((dr.hop_ptr as u16) << 8) | dr.hop_cnt as u16,
                )
            }
        };
        header::Repr {
            base_version: 1,
            mgmt_class: self.mgmt_class(),
            class_version: 1,
            method: self.method,
            status,
            class_specific,
            tid: self.tid,
            attr_id: self.attr_id,
            attr_mod: self.attr_mod,
        }
        .emit(&mut header::Packet::new_unchecked(&mut b[..24]))?;
        put64(b, 24, self.m_key);
        if let Route::Directed(dr) = &self.route {
            put16(b, 32, dr.dr_slid.0);
            put16(b, 34, dr.dr_dlid.0);
            b[128..192].copy_from_slice(&dr.initial_path);
            b[192..256].copy_from_slice(&dr.return_path);
        }
        b[64..128].copy_from_slice(&self.data);
        Ok(())
    }

    /// Write into a 256-byte buffer.
    pub fn to_bytes(&self, b: &mut [u8]) -> Result<()> {
        self.emit(&mut Packet::new_unchecked(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SM (hop 0, a CA port 1) → S1 (in 1, out 5) → S2 (in 2, out 7) → CA (in 1).
    #[test]
    fn dr_walk_out_and_back() {
        let mut r = DrRoute::new(&[1, 5, 7]).unwrap();
        assert_eq!(r.originate(1), DrStep::Forward(1));
        assert_eq!(r.receive(1, true, 36), DrStep::Forward(5)); // S1
        assert_eq!(r.receive(2, true, 36), DrStep::Forward(7)); // S2
        assert_eq!(r.receive(1, false, 1), DrStep::Deliver); // target CA
        assert_eq!(r.hop_ptr, 4);
        assert_eq!(&r.return_path[1..4], &[1, 2, 1]);
        r.turn_around();
        assert_eq!(r.respond(1), DrStep::Forward(1)); // CA back out its port 1
        assert_eq!(r.receive(7, true, 36), DrStep::Forward(2)); // S2 → ReturnPath[2]
        assert_eq!(r.receive(5, true, 36), DrStep::Forward(1)); // S1 → ReturnPath[1]
        assert_eq!(r.receive(1, false, 1), DrStep::Deliver); // SM
        assert_eq!(r.hop_ptr, 0);
    }

    #[test]
    fn dr_rules_discard() {
        let mut r = DrRoute::new(&[1, 5]).unwrap();
        r.originate(1);
        assert_eq!(r.receive(1, false, 1), DrStep::Discard(DrDiscard::NotASwitch));
        let mut r = DrRoute::new(&[1, 40]).unwrap();
        r.originate(1);
        assert_eq!(r.receive(1, true, 36), DrStep::Discard(DrDiscard::NoSuchPort(40)));
        let mut r = DrRoute::new(&[]).unwrap();
        assert_eq!(r.originate(1), DrStep::Deliver);
        r.turn_around();
        assert_eq!(r.respond(1), DrStep::Deliver);
        assert!(DrRoute::new(&[1; 64]).is_err());
    }

    #[test]
    fn smp_round_trip_with_a5_fill() {
        let mut dr = DrRoute::new(&[1, 3, 4]).unwrap();
        dr.hop_ptr = 2;
        dr.return_path[1] = 9;
        let s = Smp {
            status: 0x1c,
            m_key: 0x1122,
            ..Smp::get(AttrId::PortInfo, 3, 0xdead_beef, Route::Directed(dr))
        }
        .into_response(0x1c, [7; 64]);
        let mut buf = [0xa5u8; 256];
        s.to_bytes(&mut buf).unwrap();
        assert_eq!(buf[1], 0x81);
        assert_eq!(buf[3], 0x81);
        assert_eq!(buf[4] & 0x80, 0x80);
        assert_eq!((buf[6], buf[7]), (2, 3));
        assert_eq!(Smp::from_bytes(&buf).unwrap(), s);
        let l = Smp::get(AttrId::NodeInfo, 0, 1, Route::Lid);
        l.to_bytes(&mut buf).unwrap();
        assert_eq!(Smp::from_bytes(&buf).unwrap(), l);
        assert!(buf[128..].iter().all(|&x| x == 0));
    }
}
