//! Shared helpers: build tables for a fabric with a given engine list.

use fabric::{Fabric, FlatFabric};
use sm::lids;
use sm::routing::{self, EngineKind, RouteOptions, RouteOutcome};
use sm::testkit::umad2sim;
use sm::{RoutingTables, Validation, validate};

pub fn read_net(name: &str) -> Fabric {
    let p = sm::testkit::samples_dir().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    sm::testkit::ibsim_net(&text).unwrap()
}

pub struct Routed {
    pub flat: FlatFabric,
    pub t: RoutingTables,
    pub outcome: RouteOutcome,
}

pub fn route(f: &Fabric, engines: &[EngineKind], lmc: u8, opts: &RouteOptions) -> Result<Routed, routing::RouteError> {
    let sm = lids::default_sm_port(f).unwrap();
    let (mut t, _) = lids::assign(f, sm, lmc, None).unwrap();
    let flat = f.freeze();
    let outcome = routing::route(f, &flat, &mut t, engines, opts)?;
    Ok(Routed { flat, t, outcome })
}

pub fn routed(f: &Fabric, e: EngineKind) -> (Routed, Validation) {
    let r = route(f, &[e], 0, &RouteOptions::default()).unwrap_or_else(|err| panic!("{e}: {err}"));
    let v = validate(&r.flat, &r.t);
    (r, v)
}

// ---------------------------------------------------------------------------------
// Real peers: ibsim (Debian `ibsim-utils`), libumad2sim (`libumad2sim0`), OpenSM and
// infiniband-diags, as child processes of the test. Each test uses its own
// IBSIM_SOCKNAME and working directory (umad2sim writes its fake sysfs under the
// working directory), and kills only the processes it started (by handle, on drop).
// ---------------------------------------------------------------------------------

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Panics naming the Debian packages missing among ibsim, libumad2sim, OpenSM and
/// infiniband-diags (scripts/test installs them all).
pub fn require_ibsim_tools() {
    let missing: Vec<&str> = [
        ("libumad2sim0", umad2sim().is_some()),
        ("ibsim-utils", Path::new("/usr/bin/ibsim").exists()),
        ("opensm", Path::new("/usr/sbin/opensm").exists()),
        ("infiniband-diags", Path::new("/usr/sbin/ibnetdiscover").exists()),
    ]
    .into_iter()
    .filter_map(|(pkg, ok)| (!ok).then_some(pkg))
    .collect();
    // A real-peer test that passes without its peers proves nothing: fail instead.
    assert!(
        missing.is_empty(),
        "not installed: {} (scripts/test installs them)",
        missing.join(", ")
    );
}

/// A child process killed (by its own handle) when dropped.
pub struct Proc {
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
    /// Wait until the log has a line containing `pat` `n` times; panics with the log
    /// after `timeout` or if the process exits first.
    pub fn wait_for(&mut self, pat: &str, n: usize, timeout: Duration) -> String {
        let t0 = Instant::now();
        loop {
            let log = self.log();
            if log.matches(pat).count() >= n {
                return log;
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                let log = self.log();
                if log.matches(pat).count() >= n {
                    return log;
                }
                panic!("process exited ({st}) before logging {pat:?} x{n}:\n{log}");
            }
            assert!(t0.elapsed() < timeout, "no {pat:?} x{n} after {timeout:?}:\n{log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    /// Stop it (SIGKILL) and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    /// SIGTERM, then wait up to `timeout` for a clean exit; returns its status code.
    pub fn terminate(&mut self, timeout: Duration) -> Option<i32> {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One ibsim with its console on a pipe.
pub struct Ibsim {
    pub proc_: Proc,
    stdin: Option<ChildStdin>,
    pub sock: String,
    pub dir: tempfile::TempDir,
    /// Where the diag tools attach (`SIM_HOST`; default: ibsim's first node).
    pub tools_host: Option<String>,
}

impl Ibsim {
    /// Start ibsim on `net` (an ibsim net file's text) with the table limits its
    /// header asks for.
    pub fn start(net: &str, tag: &str) -> Ibsim {
        let dir = tempfile::tempdir().unwrap();
        let net_path = dir.path().join("fabric.net");
        std::fs::write(&net_path, net).unwrap();
        // "# Load with: ibsim -s -N 2988 -S 396 -P 17244 <this file>"
        let limits: Vec<String> = net
            .lines()
            .find_map(|l| l.strip_prefix("# Load with: ibsim -s"))
            .map(|r| {
                r.trim_end_matches("<this file>")
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let sock = format!("rdmalab-sm-{tag}-{}", std::process::id());
        let log = dir.path().join("ibsim.out");
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let mut child = Command::new("ibsim")
            .arg("-s")
            .args(&limits)
            .arg(&net_path)
            .env("IBSIM_SOCKNAME", &sock)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("cannot run ibsim: install ibsim-utils (scripts/test does)");
        let stdin = child.stdin.take();
        let mut sim = Ibsim {
            proc_: Proc { child, log },
            stdin,
            sock,
            dir,
            tools_host: None,
        };
        sim.proc_
            .wait_for("Network simulator ready", 1, Duration::from_secs(60));
        sim
    }

    /// A console command (`Unlink "S1"[3]`, …).
    pub fn console(&mut self, cmd: &str) {
        let s = self.stdin.as_mut().expect("console");
        writeln!(s, "{cmd}").unwrap();
        s.flush().unwrap();
    }

    /// A command for `prog` attached to this ibsim (LD_PRELOAD, IBSIM_SOCKNAME, the
    /// working directory, SIM_HOST when given).
    pub fn cmd(&self, prog: &str, sim_host: Option<&str>) -> Command {
        let mut c = Command::new(prog);
        c.env("LD_PRELOAD", umad2sim().expect("libumad2sim"))
            .env("IBSIM_SOCKNAME", &self.sock)
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        if let Some(h) = sim_host {
            c.env("SIM_HOST", h);
        }
        c
    }

    /// Run a diag tool to completion; its stdout (panics on failure).
    pub fn tool(&self, prog: &str, args: &[&str]) -> String {
        let out = self
            .cmd(prog, self.tools_host.as_deref())
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {prog}: {e} (install infiniband-diags)"));
        assert!(
            out.status.success(),
            "{prog} {args:?} failed: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Start our SM (the crate's `rdmalab-sm-umad` binary) at CA `host`.
    pub fn spawn_sm(&self, host: &str, args: &[&str], name: &str) -> Proc {
        let log = self.dir.path().join(format!("{name}.out"));
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = self
            .cmd(env!("CARGO_BIN_EXE_rdmalab-sm-umad"), Some(host))
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("run rdmalab-sm-umad");
        Proc { child, log }
    }

    /// Start our SM as a daemon at CA `host` with `priority`, polling a master every
    /// 300 ms and dumping its tables to `dump` when it programs the subnet;
    /// `extra` adds flags.
    pub fn spawn_sm_daemon(&self, host: &str, priority: u8, dump: &Path, extra: &[&str], name: &str) -> Proc {
        let prio = priority.to_string();
        let mut args = vec![
            "--daemon",
            "--priority",
            prio.as_str(),
            "--poll-ms",
            "300",
            "--dump",
            dump.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.spawn_sm(host, &args, name)
    }

    /// Start OpenSM (daemon, not `-o`) at CA `host` with `priority`; its log file is
    /// the returned `log`.
    pub fn spawn_opensm(&self, host: &str, priority: u8, name: &str) -> Proc {
        let d = self.dir.path().join(name);
        std::fs::create_dir_all(d.join("cache")).unwrap();
        let log = d.join("osm.log");
        // Flush the log line by line so the test can watch it (OpenSM buffers it
        // otherwise until it exits).
        let conf = d.join("opensm.conf");
        std::fs::write(&conf, "force_log_flush TRUE\n").unwrap();
        let child = self
            .cmd("opensm", Some(host))
            .arg("-F")
            .arg(&conf)
            .args(["-p", &priority.to_string(), "-s", "1", "-f"])
            .arg(&log)
            .env("OSM_TMP_DIR", format!("{}/", d.display()))
            .env("OSM_CACHE_DIR", d.join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot run opensm: install opensm (scripts/test does)");
        Proc { child, log }
    }
}

/// Parse LFTs in the `ibroute` / `opensm-lfts.dump` layout: switch GUID → LID → port.
pub fn parse_lfts(text: &str) -> BTreeMap<u64, BTreeMap<u16, u8>> {
    let mut out: BTreeMap<u64, BTreeMap<u16, u8>> = BTreeMap::new();
    let mut cur = None;
    for line in text.lines() {
        if let Some(i) = line.find(" guid 0x") {
            let g = &line[i + 8..];
            let end = g.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(g.len());
            let guid = u64::from_str_radix(&g[..end], 16).unwrap();
            out.entry(guid).or_default();
            cur = Some(guid);
            continue;
        }
        let mut w = line.split_whitespace();
        let (Some(l), Some(p)) = (w.next(), w.next()) else {
            continue;
        };
        let (Some(l), Some(g)) = (l.strip_prefix("0x"), cur) else {
            continue;
        };
        let (Ok(lid), Ok(port)) = (u16::from_str_radix(l, 16), p.parse::<u8>()) else {
            continue;
        };
        out.get_mut(&g).unwrap().insert(lid, port);
    }
    out
}

/// Parse a guid2lid file: port GUID → base LID.
pub fn parse_guid2lid(text: &str) -> BTreeMap<u64, u16> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let g = u64::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            Some((g, lid))
        })
        .collect()
}

/// The hops `ibtracert` printed: (out port of the previous node, port GUID reached, in
/// port) per `[X] -> … port {0xG}[Y]` line.
pub fn parse_tracert(text: &str) -> Vec<(u8, u64, u8)> {
    let mut v = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((x, rest)) = rest.split_once(']') else {
            continue;
        };
        if !rest.trim_start().starts_with("->") {
            continue;
        }
        let Some(i) = rest.find("{0x") else { continue };
        let g = &rest[i + 3..];
        let Some((g, rest)) = g.split_once("}[") else { continue };
        let Some((y, _)) = rest.split_once(']') else { continue };
        v.push((
            x.parse().unwrap(),
            u64::from_str_radix(g, 16).unwrap(),
            y.parse().unwrap(),
        ));
    }
    v
}

/// The path our LFTs predict from CA port (`src`, port 1) to `dlid`: the same triples
/// as [`parse_tracert`]. `None` if the LFTs lead nowhere.
pub fn predict_path(
    f: &fabric::Fabric,
    lfts: &BTreeMap<u64, BTreeMap<u16, u8>>,
    src: fabric::NodeId,
    src_port: u8,
    dlid: u16,
) -> Option<Vec<(u8, u64, u8)>> {
    let port_guid = |n: fabric::NodeId, p: u8| {
        let node = f.node(n);
        if node.kind == fabric::NodeKind::Switch {
            node.node_guid.0
        } else {
            node.ports[p as usize].guid.0
        }
    };
    let mut v = Vec::new();
    let (mut at, mut out) = (src, src_port);
    for _ in 0..64 {
        let (peer, _) = f.peer(at, out)?;
        v.push((out, port_guid(peer.node, peer.port), peer.port));
        let n = f.node(peer.node);
        if n.kind != fabric::NodeKind::Switch {
            return Some(v);
        }
        out = *lfts.get(&n.node_guid.0)?.get(&dlid)?;
        if out == 0 {
            return Some(v);
        }
        at = peer.node;
    }
    None
}
