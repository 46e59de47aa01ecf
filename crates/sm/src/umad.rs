//! The real management path: a [`Transport`] over the kernel's umad interface through
//! libibumad (rdma-core), loaded at run time with `dlopen("libibumad.so.3")` so that a
//! default build, and every command that does not ask for it, needs no RDMA library.
//!
//! [`UmadTransport::open`] initialises libibumad, reads the local port (`umad_get_port`:
//! CA name, port number, LID, SM LID, port GUID, capability mask), opens it
//! (`umad_open_port`), registers one agent for directed-route SMPs (class 0x81) and one
//! for LID-routed SMPs (class 0x01) with the request methods an SM must see (Get, Set,
//! Trap, TrapRepress, Report) and opens the port's `issm` device, which sets
//! PortInfo:CapabilityMask.IsSM while it stays open (what `opensm` does; under
//! `LD_PRELOAD=libumad2sim.so` the same calls reach ibsim instead of the kernel).
//!
//! Sends carry a timeout so the kernel can match responses (`umad_send`'s timeout; the
//! SM does its own retries). The kernel and ibsim both rewrite the upper 32 bits of a
//! request's transaction id with their agent or client number and keep the lower 32, so
//! the transport remembers the upper half per outstanding request and restores it on
//! the response. A request that comes back with a non-zero umad status (timed out, or
//! ibsim's "no route") is counted and dropped: the SM sees no answer and retries.
//!
//! SMInfo requests from other SMs (SubnGet/SubnSet(SMInfo), directed or LID-routed) are
//! answered here, while the SM sweeps, from a shared [`SmInfoAgent`]; Set signals
//! (HANDOVER, ACKNOWLEDGE, …) are queued on it for [`crate::mastership`] to act on.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_long, c_uint, c_void};
use std::rc::Rc;
use std::time::{Duration, Instant};

use fabric::Guid;
use thiserror::Error;
use wire::mad::{AttrId, Method, Smp};

use crate::mastership::SmInfoAgent;
use crate::sma::{MAD_LEN, Transport, TransportError};

/// The shared object this module loads.
pub const LIBIBUMAD: &str = "libibumad.so.3";
/// The Debian package that ships it.
pub const LIBIBUMAD_PACKAGE: &str = "libibumad3";

/// Management class of LID-routed SMPs.
pub const CLASS_SUBN_LID: u8 = 0x01;
/// Management class of directed-route SMPs.
pub const CLASS_SUBN_DIRECTED: u8 = 0x81;

/// Why the umad transport could not be set up.
#[derive(Debug, Error)]
pub enum UmadError {
    #[error("cannot load {lib}: {reason}; the umad transport needs rdma-core's libibumad (Debian package {package})")]
    Load {
        lib: &'static str,
        package: &'static str,
        reason: String,
    },
    #[error("{lib} has no symbol {symbol}: {reason}")]
    Symbol {
        lib: &'static str,
        symbol: &'static str,
        reason: String,
    },
    #[error("umad_init failed with {code}")]
    Init { code: i32 },
    #[error("no usable InfiniBand port {}: umad_get_port failed with {code} ({})", describe(ca, *port), errno_str(*code))]
    GetPort { ca: Option<String>, port: u8, code: i32 },
    #[error("umad_open_port({ca}, {port}) failed with {code} ({})", errno_str(*code))]
    Open { ca: String, port: u8, code: i32 },
    #[error("umad_register(class {class:#04x}) on {ca}/{port} failed with {code} ({})", errno_str(*code))]
    Register { ca: String, port: u8, class: u8, code: i32 },
    #[error("cannot open {path} to claim the SM role (IsSM): {reason}")]
    Issm { path: String, reason: String },
    #[error("bad CA name {0:?}: contains a NUL byte")]
    BadCaName(String),
}

fn describe(ca: &Option<String>, port: u8) -> String {
    let p = if port == 0 {
        "first active".to_string()
    } else {
        port.to_string()
    };
    match ca {
        Some(c) => format!("{c}/{p}"),
        None => format!("(first CA)/{p}"),
    }
}

fn errno_str(code: i32) -> String {
    std::io::Error::from_raw_os_error(code.abs()).to_string()
}

/// `umad_port_t` (rdma-core `umad.h`); `capmask`, `gid_prefix` and `port_guid` are in
/// network byte order.
#[repr(C)]
struct UmadPortRaw {
    ca_name: [c_char; 20],
    portnum: c_int,
    base_lid: c_uint,
    lmc: c_uint,
    sm_lid: c_uint,
    sm_sl: c_uint,
    state: c_uint,
    phys_state: c_uint,
    rate: c_uint,
    capmask: u32,
    gid_prefix: u64,
    port_guid: u64,
    pkeys_size: c_uint,
    pkeys: *mut u16,
    link_layer: [c_char; 20],
}

type FnInit = unsafe extern "C" fn() -> c_int;
type FnGetPort = unsafe extern "C" fn(*const c_char, c_int, *mut UmadPortRaw) -> c_int;
type FnReleasePort = unsafe extern "C" fn(*mut UmadPortRaw) -> c_int;
type FnOpenPort = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type FnClosePort = unsafe extern "C" fn(c_int) -> c_int;
type FnSize = unsafe extern "C" fn() -> usize;
type FnStatus = unsafe extern "C" fn(*mut c_void) -> c_int;
type FnSetAddr = unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, c_int) -> c_int;
type FnSend = unsafe extern "C" fn(c_int, c_int, *mut c_void, c_int, c_int, c_int) -> c_int;
type FnRecv = unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, c_int) -> c_int;
type FnRegister = unsafe extern "C" fn(c_int, c_int, c_int, u8, *mut c_long) -> c_int;
type FnUnregister = unsafe extern "C" fn(c_int, c_int) -> c_int;
type FnIssmPath = unsafe extern "C" fn(*const c_char, c_int, *mut c_char, c_int) -> c_int;

/// libibumad's entry points, resolved once.
struct Lib {
    init: FnInit,
    get_port: FnGetPort,
    release_port: FnReleasePort,
    open_port: FnOpenPort,
    close_port: FnClosePort,
    size: FnSize,
    status: FnStatus,
    set_addr: FnSetAddr,
    send: FnSend,
    recv: FnRecv,
    register: FnRegister,
    unregister: FnUnregister,
    issm_path: FnIssmPath,
    /// Keeps the library mapped while the pointers above live.
    _lib: libloading::Library,
}

impl Lib {
    fn load() -> Result<Lib, UmadError> {
        Lib::load_named(LIBIBUMAD)
    }

    fn load_named(name: &'static str) -> Result<Lib, UmadError> {
        // SAFETY: loading libibumad runs its (trivial) initialisers; it has no
        // constructor with preconditions.
        let lib = unsafe { libloading::Library::new(name) }.map_err(|e| UmadError::Load {
            lib: name,
            package: LIBIBUMAD_PACKAGE,
            reason: e.to_string(),
        })?;
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                // SAFETY: the symbol has this C signature in rdma-core's umad.h (ABI 3).
                let s: libloading::Symbol<'_, $ty> =
                    unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| UmadError::Symbol {
                        lib: LIBIBUMAD,
                        symbol: $name,
                        reason: e.to_string(),
                    })?;
                *s
            }};
        }
        Ok(Lib {
            init: sym!("umad_init", FnInit),
            get_port: sym!("umad_get_port", FnGetPort),
            release_port: sym!("umad_release_port", FnReleasePort),
            open_port: sym!("umad_open_port", FnOpenPort),
            close_port: sym!("umad_close_port", FnClosePort),
            size: sym!("umad_size", FnSize),
            status: sym!("umad_status", FnStatus),
            set_addr: sym!("umad_set_addr", FnSetAddr),
            send: sym!("umad_send", FnSend),
            recv: sym!("umad_recv", FnRecv),
            register: sym!("umad_register", FnRegister),
            unregister: sym!("umad_unregister", FnUnregister),
            issm_path: sym!("umad_get_issm_path", FnIssmPath),
            _lib: lib,
        })
    }
}

/// Is libibumad loadable here? (`Err` names the library and the package.)
pub fn probe() -> Result<(), UmadError> {
    Lib::load().map(|_| ())
}

/// The local port the SM runs on, as libibumad reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalPort {
    pub ca: String,
    pub port: u8,
    pub lid: u16,
    pub lmc: u8,
    pub sm_lid: u16,
    /// PortInfo:PortState (1 Down … 4 Active).
    pub state: u8,
    pub port_guid: Guid,
    pub capmask: u32,
}

/// Settings of the transport.
#[derive(Clone, Debug)]
pub struct UmadOptions {
    /// CA name (`None`: the first CA).
    pub ca: Option<String>,
    /// Port number (0: the first active port).
    pub port: u8,
    /// How long [`Transport::recv`] waits for a MAD before reporting none.
    pub recv_timeout: Duration,
    /// Timeout handed to `umad_send` for requests (the kernel matches responses to
    /// requests only while they wait).
    pub send_timeout_ms: u32,
    /// Claim the SM role (open `issm`, which sets IsSM on the port).
    pub claim_issm: bool,
}

impl Default for UmadOptions {
    fn default() -> Self {
        UmadOptions {
            ca: None,
            port: 0,
            recv_timeout: Duration::from_millis(100),
            send_timeout_ms: 200,
            claim_issm: true,
        }
    }
}

/// Counters of the transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UmadStats {
    pub sent: u64,
    pub received: u64,
    /// Sends that came back with a non-zero umad status (timed out or unroutable).
    pub dropped: u64,
    /// SMInfo requests answered.
    pub sminfo_answered: u64,
    /// Traps answered with TrapRepress.
    pub traps_repressed: u64,
    /// Other unsolicited requests ignored.
    pub ignored: u64,
    /// umad_recv errors other than a timeout.
    pub recv_errors: u64,
}

/// Bits of the method mask an SM registers for (IBA methods 0x01 Get, 0x02 Set,
/// 0x05 Trap, 0x06 Report, 0x07 TrapRepress).
fn method_mask() -> [c_long; 16 / std::mem::size_of::<c_long>()] {
    let bits: u128 = (1 << 0x01) | (1 << 0x02) | (1 << 0x05) | (1 << 0x06) | (1 << 0x07);
    let mut m = [0 as c_long; 16 / std::mem::size_of::<c_long>()];
    let w = std::mem::size_of::<c_long>() * 8;
    for (i, slot) in m.iter_mut().enumerate() {
        *slot = ((bits >> (i * w)) & ((1u128 << w) - 1)) as c_long;
    }
    m
}

/// A [`Transport`] over libibumad; see the module docs.
pub struct UmadTransport {
    lib: Lib,
    fd: c_int,
    dr_agent: c_int,
    lid_agent: c_int,
    issm_fd: c_int,
    hdr: usize,
    sbuf: Vec<u8>,
    rbuf: Vec<u8>,
    opts: UmadOptions,
    local: LocalPort,
    /// Upper 32 TID bits of outstanding requests, by lower 32 bits.
    tid_hi: HashMap<u32, u32>,
    agent: Rc<RefCell<SmInfoAgent>>,
    /// Counters.
    pub stats: UmadStats,
}

impl std::fmt::Debug for UmadTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UmadTransport")
            .field("local", &self.local)
            .field("stats", &self.stats)
            .finish()
    }
}

fn c_name(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl UmadTransport {
    /// Load libibumad, open the port and register the SMI agents. `agent` answers
    /// SMInfo requests; its GUID is set here from the port.
    pub fn open(opts: UmadOptions, agent: Rc<RefCell<SmInfoAgent>>) -> Result<UmadTransport, UmadError> {
        let lib = Lib::load()?;
        // SAFETY: plain C calls with valid arguments; see rdma-core umad.h.
        let rc = unsafe { (lib.init)() };
        if rc < 0 {
            return Err(UmadError::Init { code: rc });
        }
        let ca_c = match &opts.ca {
            Some(c) => Some(CString::new(c.as_str()).map_err(|_| UmadError::BadCaName(c.clone()))?),
            None => None,
        };
        let ca_ptr = ca_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: an all-zero umad_port_t is a valid out-parameter.
        let mut raw: UmadPortRaw = unsafe { std::mem::zeroed() };
        // SAFETY: ca_ptr is NULL or a NUL-terminated string; raw is writable.
        let rc = unsafe { (lib.get_port)(ca_ptr, opts.port as c_int, &mut raw) };
        if rc < 0 {
            return Err(UmadError::GetPort {
                ca: opts.ca.clone(),
                port: opts.port,
                code: rc,
            });
        }
        let local = LocalPort {
            ca: c_name(&raw.ca_name),
            port: raw.portnum as u8,
            lid: raw.base_lid as u16,
            lmc: raw.lmc as u8,
            sm_lid: raw.sm_lid as u16,
            state: raw.state as u8,
            port_guid: Guid(u64::from_be(raw.port_guid)),
            capmask: u32::from_be(raw.capmask),
        };
        // SAFETY: raw was filled by umad_get_port.
        unsafe { (lib.release_port)(&mut raw) };
        let ca_name = CString::new(local.ca.as_str()).map_err(|_| UmadError::BadCaName(local.ca.clone()))?;
        // SAFETY: valid C string and port number.
        let fd = unsafe { (lib.open_port)(ca_name.as_ptr(), local.port as c_int) };
        if fd < 0 {
            return Err(UmadError::Open {
                ca: local.ca.clone(),
                port: local.port,
                code: fd,
            });
        }
        let mut agents = [0; 2];
        for (k, class) in [CLASS_SUBN_DIRECTED, CLASS_SUBN_LID].into_iter().enumerate() {
            let mut mask = method_mask();
            // SAFETY: fd is open; mask is 16 bytes as umad_register expects.
            let id = unsafe { (lib.register)(fd, class as c_int, 1, 0, mask.as_mut_ptr()) };
            if id < 0 {
                // SAFETY: fd is open.
                unsafe { (lib.close_port)(fd) };
                return Err(UmadError::Register {
                    ca: local.ca.clone(),
                    port: local.port,
                    class,
                    code: id,
                });
            }
            agents[k] = id;
        }
        let mut issm_fd = -1;
        if opts.claim_issm {
            let mut path = [0 as c_char; 256];
            // SAFETY: path holds 256 bytes.
            let rc = unsafe { (lib.issm_path)(ca_name.as_ptr(), local.port as c_int, path.as_mut_ptr(), 256) };
            let p = if rc < 0 {
                String::new()
            } else {
                // SAFETY: umad_get_issm_path wrote a NUL-terminated string.
                unsafe { CStr::from_ptr(path.as_ptr()) }.to_string_lossy().into_owned()
            };
            // `open` (not open64) so that libumad2sim's interposer sees it, as it sees
            // opensm's.
            // SAFETY: path is NUL-terminated.
            issm_fd = if rc < 0 {
                -1
            } else {
                unsafe { libc::open(path.as_ptr(), libc::O_RDWR) }
            };
            if issm_fd < 0 {
                let reason = if rc < 0 {
                    format!("umad_get_issm_path failed with {rc}")
                } else {
                    std::io::Error::last_os_error().to_string()
                };
                // SAFETY: fd is open.
                unsafe { (lib.close_port)(fd) };
                return Err(UmadError::Issm { path: p, reason });
            }
        }
        // SAFETY: no arguments.
        let hdr = unsafe { (lib.size)() };
        agent.borrow_mut().guid = local.port_guid;
        Ok(UmadTransport {
            lib,
            fd,
            dr_agent: agents[0],
            lid_agent: agents[1],
            issm_fd,
            hdr,
            sbuf: vec![0; hdr + MAD_LEN],
            rbuf: vec![0; hdr + MAD_LEN],
            opts,
            local,
            tid_hi: HashMap::new(),
            agent,
            stats: UmadStats::default(),
        })
    }

    /// The local port.
    pub fn local(&self) -> &LocalPort {
        &self.local
    }

    /// The SMInfo agent this transport answers from.
    pub fn agent(&self) -> Rc<RefCell<SmInfoAgent>> {
        self.agent.clone()
    }

    /// Change how long `recv` waits.
    pub fn set_recv_timeout(&mut self, d: Duration) {
        self.opts.recv_timeout = d;
    }

    /// Send `mad` to `dlid` (0xFFFF for directed route) with the agent of its class.
    fn send_raw(&mut self, mad: &[u8; MAD_LEN], dlid: u16, timeout_ms: u32) -> Result<(), TransportError> {
        let class = mad[1];
        let agent = match class {
            CLASS_SUBN_DIRECTED => self.dr_agent,
            CLASS_SUBN_LID => self.lid_agent,
            c => {
                return Err(TransportError::BadRequest(format!(
                    "management class {c:#04x} is not an SMP class"
                )));
            }
        };
        self.sbuf[..self.hdr].fill(0);
        self.sbuf[self.hdr..].copy_from_slice(mad);
        let p = self.sbuf.as_mut_ptr() as *mut c_void;
        // SAFETY: sbuf holds umad_size() + 256 bytes.
        unsafe { (self.lib.set_addr)(p, dlid as c_int, 0, 0, 0) };
        // Requests wait for a response; responses and TrapRepress do not.
        let is_request = mad[3] & 0x80 == 0 && mad[3] != u8::from(Method::TrapRepress);
        if is_request {
            let tid = u64::from_be_bytes(mad[8..16].try_into().expect("8 bytes"));
            self.tid_hi.insert(tid as u32, (tid >> 32) as u32);
        }
        // SAFETY: fd and agent are open/registered, p is a full umad buffer.
        let rc = unsafe {
            (self.lib.send)(
                self.fd,
                agent,
                p,
                MAD_LEN as c_int,
                if is_request { timeout_ms as c_int } else { 0 },
                0,
            )
        };
        if rc < 0 {
            return Err(TransportError::BadRequest(format!(
                "umad_send on {}/{} failed: {}",
                self.local.ca,
                self.local.port,
                errno_str(rc)
            )));
        }
        self.stats.sent += 1;
        Ok(())
    }

    /// Send a LID-routed SMP to `dlid`.
    pub fn send_to_lid(&mut self, mad: &[u8; MAD_LEN], dlid: u16) -> Result<(), TransportError> {
        let t = self.opts.send_timeout_ms;
        self.send_raw(mad, dlid, t)
    }

    /// Answer an SMInfo request (`src_lid` is the requester's LID for LID-routed ones).
    fn answer_sminfo(&mut self, mad: &[u8], src_lid: u16) {
        let Ok(req) = Smp::from_bytes(mad) else {
            self.stats.ignored += 1;
            return;
        };
        let Some((status, data)) = self.agent.borrow_mut().handle_request(&req) else {
            self.stats.ignored += 1;
            return;
        };
        // The response keeps the request's header, paths and hop pointer; it changes
        // the method, the status (D bit kept set for directed route) and the data.
        let mut out = [0u8; MAD_LEN];
        out.copy_from_slice(&mad[..MAD_LEN]);
        out[3] = u8::from(Method::GetResp);
        let directed = out[1] == CLASS_SUBN_DIRECTED;
        let st = if directed { (status & 0x7fff) | 0x8000 } else { status };
        out[4..6].copy_from_slice(&st.to_be_bytes());
        out[64..128].copy_from_slice(&data);
        let dlid = if directed { 0xffff } else { src_lid };
        if self.send_raw(&out, dlid, 0).is_ok() {
            self.stats.sminfo_answered += 1;
        }
    }
}

impl Transport for UmadTransport {
    fn send(&mut self, mad: &[u8; MAD_LEN]) -> Result<(), TransportError> {
        if mad[1] != CLASS_SUBN_DIRECTED {
            return Err(TransportError::BadRequest(
                "a LID-routed SMP needs a destination LID (use send_to_lid)".into(),
            ));
        }
        let t = self.opts.send_timeout_ms;
        self.send_raw(mad, 0xffff, t)
    }

    fn recv(&mut self, buf: &mut [u8; MAD_LEN]) -> Option<usize> {
        let deadline = Instant::now() + self.opts.recv_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = left.as_millis().min(i32::MAX as u128) as c_int;
            let mut len = MAD_LEN as c_int;
            let p = self.rbuf.as_mut_ptr() as *mut c_void;
            // SAFETY: rbuf holds umad_size() + 256 bytes; len says 256.
            let rc = unsafe { (self.lib.recv)(self.fd, p, &mut len, ms) };
            if rc < 0 {
                if rc != -libc::ETIMEDOUT && rc != -libc::EAGAIN && rc != -libc::EINTR {
                    self.stats.recv_errors += 1;
                }
                if Instant::now() >= deadline || rc == -libc::ETIMEDOUT {
                    return None;
                }
                continue;
            }
            // SAFETY: p is the buffer umad_recv just filled.
            let status = unsafe { (self.lib.status)(p) };
            let n = (len.max(0) as usize).min(MAD_LEN);
            if status != 0 {
                self.stats.dropped += 1;
                let m = &self.rbuf[self.hdr..self.hdr + MAD_LEN];
                let tid = u64::from_be_bytes(m[8..16].try_into().expect("8 bytes"));
                self.tid_hi.remove(&(tid as u32));
                if Instant::now() >= deadline {
                    return None;
                }
                continue;
            }
            self.stats.received += 1;
            let (mad, addr_lid) = {
                let m = &self.rbuf[self.hdr..self.hdr + MAD_LEN];
                // ib_mad_addr.lid (network order) sits at offset 20 + 8 of ib_user_mad.
                let lid = u16::from_be_bytes([self.rbuf[28], self.rbuf[29]]);
                let mut a = [0u8; MAD_LEN];
                a.copy_from_slice(m);
                (a, lid)
            };
            let method = mad[3];
            let is_response = method & 0x80 != 0;
            let attr = u16::from_be_bytes([mad[16], mad[17]]);
            if is_response {
                let tid = u64::from_be_bytes(mad[8..16].try_into().expect("8 bytes"));
                let hi = self.tid_hi.remove(&(tid as u32)).unwrap_or((tid >> 32) as u32);
                buf.copy_from_slice(&mad);
                buf[8..16].copy_from_slice(&(((hi as u64) << 32) | (tid & 0xffff_ffff)).to_be_bytes());
                return Some(n);
            }
            if method == u8::from(Method::Trap) {
                // IBA §13.4.9: the SM answers a trap with TrapRepress (same TID and
                // attribute) so the sender stops repeating it.
                let mut rep = mad;
                rep[3] = u8::from(Method::TrapRepress);
                if self.send_raw(&rep, addr_lid, 0).is_ok() {
                    self.stats.traps_repressed += 1;
                }
                buf.copy_from_slice(&mad);
                return Some(n);
            }
            if attr == u16::from(AttrId::SmInfo) {
                self.answer_sminfo(&mad, addr_lid);
            } else {
                self.stats.ignored += 1;
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        // SAFETY: the agents and fds were opened by `open` and are released once.
        unsafe {
            (self.lib.unregister)(self.fd, self.dr_agent);
            (self.lib.unregister)(self.fd, self.lid_agent);
            (self.lib.close_port)(self.fd);
            if self.issm_fd >= 0 {
                libc::close(self.issm_fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_mask_has_the_sm_methods() {
        let m = method_mask();
        let mut bits = 0u128;
        let w = std::mem::size_of::<c_long>() * 8;
        for (i, x) in m.iter().enumerate() {
            bits |= ((*x as u64) as u128) << (i * w);
        }
        assert_eq!(bits, 0b1110_0110);
    }

    #[test]
    fn umad_port_layout_matches_rdma_core() {
        // x86_64 / aarch64 LP64 layout of umad_port_t.
        assert_eq!(std::mem::size_of::<UmadPortRaw>(), 112);
        assert_eq!(std::mem::offset_of!(UmadPortRaw, capmask), 52);
        assert_eq!(std::mem::offset_of!(UmadPortRaw, port_guid), 64);
        assert_eq!(std::mem::offset_of!(UmadPortRaw, pkeys), 80);
    }

    #[test]
    fn a_missing_library_is_a_typed_error_naming_it_and_the_package() {
        let Err(e) = Lib::load_named("libibumad-not-here.so.3") else {
            panic!("loaded a library that does not exist");
        };
        assert!(matches!(e, UmadError::Load { .. }), "{e:?}");
        let s = e.to_string();
        assert!(s.contains("libibumad-not-here.so.3") && s.contains("libibumad3"), "{s}");
    }
}
