//! TCP over IPoIB: what kernel bypass saves.
//!
//! Verbs move bytes NIC to NIC with no CPU per byte; IPoIB runs TCP through the
//! kernel, so every byte is copied and checksummed by a core and every message
//! costs system calls and interrupts. This model turns a stream of application
//! writes into CPU time on each side and a throughput ceiling, and carries a TCP
//! congestion window so that start-up and loss show as they do in a real stack.
//!
//! Constants and where they come from (change them in [`IpoibConfig`]; each
//! default is listed with its source):
//!
//! | knob | default | source |
//! |---|---|---|
//! | datagram-mode MTU | IB MTU − 4 (2044 at 2 KB, 4092 at 4 KB) | RFC 4391; Linux `Documentation/infiniband/ipoib.rst` (shared simulators reference §1.9) |
//! | connected-mode MTU | 65520 | same |
//! | send cost per byte | 0.384 ns/B | derived from Guo et al. SIGCOMM'16 §1: 8 TCP connections at 40 Gb/s take 6% of a 32-core Xeon to send: 1.92 cores / 5 GB/s (reference §3.3) |
//! | receive cost per byte | 0.768 ns/B | same paper: 12% to receive |
//! | system call | 300 ns | a getpid() loop on Skylake with KPTI (blog.i0.pm, "what a syscall actually costs") [unverified; one measurement] |
//! | interrupt + softirq per NAPI batch | 2 µs, every 64 segments | rdmalab assumption (NAPI's default budget is 64 packets); not from a measurement: set it from yours |
//! | initial window | 10 segments | RFC 6928 |
//! | receive window cap | 6,291,456 B | Linux `net.ipv4.tcp_rmem` default maximum (`Documentation/networking/ip-sysctl.rst`) |
//!
//! The per-byte figures already include the copy, checksum, protocol and
//! interrupt work of the 2016 measurement; the separate per-message and
//! per-interrupt terms make small messages cost what they do.

use crate::engine::Time;

/// IPoIB transport mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpoibMode {
    /// Over UD: the IP MTU is the IB MTU minus the 4-byte IPoIB header.
    Datagram,
    /// Over RC: IP MTU up to 65520.
    Connected,
}

/// The kernel cost model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IpoibConfig {
    /// Transport mode.
    pub mode: IpoibMode,
    /// IB path MTU (payload bytes per IB packet).
    pub ib_mtu: u32,
    /// CPU per system call, ns.
    pub syscall_ns: f64,
    /// Sender CPU per byte, ns.
    pub send_ns_per_byte: f64,
    /// Receiver CPU per byte, ns.
    pub recv_ns_per_byte: f64,
    /// CPU per receive interrupt (with softirq), ns.
    pub irq_ns: f64,
    /// Segments handled per interrupt (NAPI batch).
    pub segments_per_irq: u32,
    /// Initial congestion window, segments.
    pub initial_window: u32,
    /// Receive-window cap, bytes.
    pub rwnd_max: u64,
}

impl Default for IpoibConfig {
    fn default() -> Self {
        IpoibConfig {
            mode: IpoibMode::Connected,
            ib_mtu: 4096,
            syscall_ns: 300.0,
            send_ns_per_byte: 1.92 / 5.0,
            recv_ns_per_byte: 3.84 / 5.0,
            irq_ns: 2000.0,
            segments_per_irq: 64,
            initial_window: 10,
            rwnd_max: 6_291_456,
        }
    }
}

/// IPv4 (20) + TCP with timestamps (32) header bytes per segment.
pub const IP_TCP_HEADERS: u32 = 52;

/// CPU cost of one application write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriteCost {
    /// TCP segments.
    pub segments: u64,
    /// Sender CPU, ns.
    pub send_ns: f64,
    /// Receiver CPU, ns.
    pub recv_ns: f64,
    /// IB packets on the wire (a connected-mode segment spans several).
    pub ib_packets: u64,
}

impl IpoibConfig {
    /// The IP MTU.
    pub fn ip_mtu(&self) -> u32 {
        match self.mode {
            IpoibMode::Datagram => self.ib_mtu - 4,
            IpoibMode::Connected => 65_520,
        }
    }

    /// TCP payload per segment.
    pub fn mss(&self) -> u32 {
        self.ip_mtu() - IP_TCP_HEADERS
    }

    /// CPU cost of sending `bytes` in one `write()` and receiving it in one `read()`.
    pub fn write_cost(&self, bytes: u64) -> WriteCost {
        let mss = u64::from(self.mss());
        let segments = bytes.div_ceil(mss).max(1);
        let irqs = segments.div_ceil(u64::from(self.segments_per_irq.max(1)));
        let wire_per_seg = u64::from(self.ip_mtu()) + 4;
        let ib_packets = match self.mode {
            IpoibMode::Datagram => segments,
            IpoibMode::Connected => {
                let full = bytes / mss;
                let rest = bytes % mss;
                let tail = if rest > 0 {
                    (rest + u64::from(IP_TCP_HEADERS) + 4).div_ceil(u64::from(self.ib_mtu))
                } else {
                    0
                };
                (full * wire_per_seg.div_ceil(u64::from(self.ib_mtu)) + tail).max(1)
            }
        };
        WriteCost {
            segments,
            send_ns: self.syscall_ns + bytes as f64 * self.send_ns_per_byte,
            recv_ns: self.syscall_ns + bytes as f64 * self.recv_ns_per_byte + irqs as f64 * self.irq_ns,
            ib_packets,
        }
    }

    /// The most one stream can carry, bits/s, with one core per side busy all the
    /// time and `write_size`-byte writes: the slower side sets it.
    pub fn cpu_ceiling_bps(&self, write_size: u64) -> f64 {
        let c = self.write_cost(write_size);
        let worst = c.send_ns.max(c.recv_ns);
        write_size as f64 * 8.0 / (worst * 1e-9)
    }

    /// Steady throughput of one stream, bits/s: the least of the link (after
    /// IPoIB/IP/TCP headers), the CPU ceiling and the window over the RTT.
    pub fn stream_bps(&self, link_bps: u64, rtt: Time, write_size: u64) -> f64 {
        let eff = f64::from(self.mss()) / f64::from(self.ip_mtu() + 4);
        let link = link_bps as f64 * eff;
        let win = self.rwnd_max as f64 * 8.0 / rtt.as_secs_f64().max(1e-12);
        link.min(self.cpu_ceiling_bps(write_size)).min(win)
    }
}

/// One stream's steady throughput on the same path, bits/s: RDMA verbs, where
/// the NIC moves the bytes (the link rate times the payload share of each IB
/// packet, `mtu / (mtu + 26)`: LRH 8, BTH 12, ICRC 4, VCRC 2, the first packet's
/// RETH ignored; IBA vol. 1 §5.4, §9), against TCP over IPoIB
/// ([`IpoibConfig::stream_bps`]).
pub fn verbs_vs_ipoib(cfg: &IpoibConfig, link_bps: u64, rtt: Time, write_size: u64) -> (f64, f64) {
    let mtu = f64::from(cfg.ib_mtu);
    let verbs = link_bps as f64 * mtu / (mtu + 26.0);
    (verbs, cfg.stream_bps(link_bps, rtt, write_size))
}

/// A TCP Reno-style congestion window (RFC 5681): slow start from the initial
/// window, +1 MSS per RTT in congestion avoidance, halved on loss; capped by the
/// receive window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cwnd {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    cap: u64,
    acked: u64,
    /// Losses seen.
    pub losses: u64,
}

impl Cwnd {
    /// A window for `cfg`.
    pub fn new(cfg: &IpoibConfig) -> Cwnd {
        let mss = u64::from(cfg.mss());
        Cwnd {
            mss,
            cwnd: mss * u64::from(cfg.initial_window),
            ssthresh: u64::MAX,
            cap: cfg.rwnd_max,
            acked: 0,
            losses: 0,
        }
    }

    /// Bytes that may be in flight.
    pub fn window(&self) -> u64 {
        self.cwnd.min(self.cap)
    }

    /// `bytes` were newly acknowledged.
    pub fn on_ack(&mut self, bytes: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += bytes;
        } else {
            self.acked += bytes;
            while self.acked >= self.cwnd {
                self.acked -= self.cwnd;
                self.cwnd += self.mss;
            }
        }
        self.cwnd = self.cwnd.min(self.cap.max(self.mss));
    }

    /// A loss (three duplicate ACKs): halve.
    pub fn on_loss(&mut self) {
        self.losses += 1;
        self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtus_follow_rfc4391_and_the_kernel() {
        let d = IpoibConfig {
            mode: IpoibMode::Datagram,
            ib_mtu: 2048,
            ..IpoibConfig::default()
        };
        assert_eq!(d.ip_mtu(), 2044);
        assert_eq!(IpoibConfig { ib_mtu: 4096, ..d }.ip_mtu(), 4092);
        assert_eq!(IpoibConfig::default().ip_mtu(), 65_520);
    }

    #[test]
    fn kernel_costs_cap_one_stream_far_below_a_400g_link() {
        let c = IpoibConfig::default();
        // One 1 MiB write: the receiver pays 0.768 ns/B plus a syscall and a few interrupts.
        let w = c.write_cost(1 << 20);
        assert_eq!(w.segments, (1u64 << 20).div_ceil(65_468));
        assert!(
            (w.recv_ns - (300.0 + 1048576.0 * 0.768 + 1.0 * 2000.0)).abs() < 1e-6,
            "{w:?}"
        );
        let ceiling = c.cpu_ceiling_bps(1 << 20);
        // ≈ 8 bits / 0.77 ns ≈ 10.4 Gb/s: a core per side, not the link, limits it.
        assert!(ceiling > 9e9 && ceiling < 11e9, "{ceiling}");
        let s = c.stream_bps(400_000_000_000, Time::us(5), 1 << 20);
        assert_eq!(s, ceiling);
        // Small writes are worse: the syscall dominates.
        assert!(c.cpu_ceiling_bps(64) < 1e9);
        // Datagram mode: many more segments and interrupts per byte.
        let d = IpoibConfig {
            mode: IpoibMode::Datagram,
            ..c
        };
        assert!(d.write_cost(1 << 20).segments > 200);
        assert!(d.cpu_ceiling_bps(1 << 20) < ceiling);
        // A long RTT makes the window the limit: 6 MiB / 10 ms ≈ 5 Gb/s.
        let far = c.stream_bps(400_000_000_000, Time::ms(10), 1 << 20);
        assert!((far - 6_291_456.0 * 8.0 / 0.01).abs() < 1.0);
    }

    #[test]
    fn verbs_keep_the_link_ipoib_keeps_a_core() {
        // NDR 4x (400 Gb/s), 4 KiB IB MTU, 5 µs RTT, 1 MiB writes.
        let (v, i) = verbs_vs_ipoib(&IpoibConfig::default(), 400_000_000_000, Time::us(5), 1 << 20);
        assert!((v - 400e9 * 4096.0 / 4122.0).abs() < 1.0);
        assert!(v / i > 35.0, "verbs {v:.3e} vs IPoIB {i:.3e}");
    }

    #[test]
    fn window_slow_starts_then_grows_linearly_and_halves_on_loss() {
        let c = IpoibConfig {
            rwnd_max: u64::MAX,
            ..IpoibConfig::default()
        };
        let mut w = Cwnd::new(&c);
        let mss = u64::from(c.mss());
        assert_eq!(w.window(), 10 * mss);
        // One RTT's worth of ACKs doubles it in slow start.
        let cw = w.window();
        w.on_ack(cw);
        assert_eq!(w.window(), 20 * mss);
        w.on_loss();
        assert_eq!(w.window(), 10 * mss);
        // Congestion avoidance: +1 MSS per window of ACKs.
        let cw = w.window();
        w.on_ack(cw);
        assert_eq!(w.window(), 11 * mss);
        let capped = Cwnd::new(&IpoibConfig::default());
        let mut capped = capped;
        for _ in 0..100 {
            let cw = capped.window();
            capped.on_ack(cw);
        }
        assert_eq!(capped.window(), 6_291_456);
    }
}
