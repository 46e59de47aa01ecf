//! The SM as a process on a real port: mastership (IBA §14.4) around the sweeps.
//!
//! ```text
//!  DISCOVERING ── discover_only, SubnGet(SMInfo) of every IsSM port ──▶ decide
//!     │ Master                                     │ Standby(m)
//!     ▼                                            ▼
//!  MASTER: heavy sweep ("subnet up"); then     STANDBY: program nothing; poll m with
//!  light sweeps every light_interval, traps     SubnGet(SMInfo) every poll_interval;
//!  (128, 144) trigger sweeps; a higher SM in    `poll_misses` misses in a row → back to
//!  STANDBY gets HANDOVER and we stand by.       DISCOVERING; HANDOVER from m → MASTER.
//! ```
//!
//! SMInfo requests are answered by the transport from the shared [`SmInfoAgent`]
//! throughout. [`run`] works over any [`Transport`] (tests use the in-process fabric);
//! [`run_umad`] opens the umad transport first.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fabric::Guid;
use wire::mad::attr::SmState;
use wire::mad::{Method, Smp};

use crate::mastership::{self, Exchange, PollOutcome, Poller, RemoteSm, Role, Signal, SmInfoAgent};
use crate::sma::{MAD_LEN, Transport};
use crate::sweep::{Issue, SubnetManager, SweepOptions, SweepReport};
use crate::umad::{LocalPort, UmadError, UmadOptions, UmadTransport};

/// Settings of the SM process.
#[derive(Clone, Debug)]
pub struct DaemonOptions {
    pub sweep: SweepOptions,
    /// SMInfo priority (0–15).
    pub priority: u8,
    /// Bring the subnet up (or find the master) once, then return.
    pub once: bool,
    /// MASTER: time between light sweeps.
    pub light_interval: Duration,
    /// STANDBY: time between polls of the master.
    pub poll_interval: Duration,
    /// STANDBY: polls in a row without an answer before the master counts as gone.
    pub poll_misses: u32,
    /// Wait for one SMInfo answer.
    pub sminfo_timeout: Duration,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        DaemonOptions {
            sweep: SweepOptions::default(),
            priority: 0,
            once: false,
            light_interval: Duration::from_secs(2),
            poll_interval: Duration::from_secs(1),
            poll_misses: 3,
            sminfo_timeout: Duration::from_millis(300),
        }
    }
}

/// What happened, as it happens.
#[derive(Debug)]
pub enum Event<'a> {
    /// A state change and why.
    State { state: SmState, reason: String },
    /// A discovery pass found these SMs.
    Discovered {
        switches: usize,
        cas: usize,
        sms: &'a [RemoteSm],
        issues: &'a [Issue],
    },
    /// A heavy sweep finished (`sm` holds the model and tables).
    Sweep {
        report: &'a SweepReport,
        sm: &'a SubnetManager,
    },
    /// A trap arrived.
    Trap(u16),
    /// A poll of the master.
    Poll { master: Guid, outcome: PollOutcome },
}

/// How [`run`] ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub state: SmState,
    pub heavy_sweeps: u32,
    pub light_sweeps: u32,
    /// The last heavy sweep was "subnet up".
    pub subnet_up: bool,
    /// The master we stood by for, if we ended in STANDBY.
    pub master: Option<RemoteSm>,
}

fn set_state(agent: &Rc<RefCell<SmInfoAgent>>, s: SmState, reason: String, on: &mut dyn FnMut(Event<'_>)) {
    let changed = agent.borrow().state != s;
    agent.borrow_mut().state = s;
    if changed {
        on(Event::State { state: s, reason });
    }
}

/// Wait `d` while taking MADs: traps are returned; SMInfo requests are answered by the
/// transport; anything else is dropped. Returns early on a stop request or a signal.
fn idle(tr: &mut dyn Transport, agent: &Rc<RefCell<SmInfoAgent>>, d: Duration, stop: &dyn Fn() -> bool) -> Vec<u16> {
    let deadline = Instant::now() + d;
    let mut traps = Vec::new();
    let mut buf = [0u8; MAD_LEN];
    while Instant::now() < deadline && !stop() && agent.borrow().signals.is_empty() {
        let t0 = Instant::now();
        match tr.recv(&mut buf) {
            Some(n) => {
                if let Ok(s) = Smp::from_bytes(&buf[..n])
                    && s.method == Method::Trap
                    && let Ok(no) = wire::mad::attr::notice::Notice::parse(&s.data)
                {
                    traps.push(no.details.trap_number().unwrap_or(no.header.trap_number));
                }
                if !traps.is_empty() {
                    break;
                }
            }
            None => {
                // An in-process transport answers "nothing" at once; do not spin.
                if t0.elapsed() < Duration::from_millis(5) {
                    std::thread::sleep(
                        Duration::from_millis(10).min(deadline.saturating_duration_since(Instant::now())),
                    );
                }
            }
        }
    }
    traps
}

/// Ask every other SM found by the last discovery for its SMInfo.
fn survey(
    tr: &mut dyn Transport,
    mgr: &SubnetManager,
    own: Guid,
    x: &mut Exchange,
    timeout: Duration,
    retries: u32,
) -> Vec<RemoteSm> {
    let mut out = Vec::new();
    for (g, path) in &mgr.sm_ports {
        if *g == own {
            continue;
        }
        if let Some(info) = mastership::query(x, tr, path, timeout, retries) {
            out.push(RemoteSm {
                port_guid: *g,
                path: path.clone(),
                info,
            });
        }
    }
    out
}

/// Run the SM; see the module docs. `stop` is polled between steps.
pub fn run(
    tr: &mut dyn Transport,
    agent: &Rc<RefCell<SmInfoAgent>>,
    mgr: &mut SubnetManager,
    opts: &DaemonOptions,
    stop: &dyn Fn() -> bool,
    on: &mut dyn FnMut(Event<'_>),
) -> Outcome {
    let own = agent.borrow().guid;
    let prio = agent.borrow().priority;
    let mut x = Exchange::default();
    let mut out = Outcome {
        state: SmState::Discovering,
        heavy_sweeps: 0,
        light_sweeps: 0,
        subnet_up: false,
        master: None,
    };
    agent.borrow_mut().state = SmState::Discovering;
    on(Event::State {
        state: SmState::Discovering,
        reason: format!("starting, priority {prio}, port GUID {own}"),
    });
    let mut poller: Option<Poller> = None;
    let mut master_fresh = true;
    while !stop() {
        let state = agent.borrow().state;
        match state {
            SmState::Discovering | SmState::NotActive => {
                let (switches, cas, issues) = mgr.discover_only(tr);
                let sms = survey(tr, mgr, own, &mut x, opts.sminfo_timeout, 2);
                on(Event::Discovered {
                    switches,
                    cas,
                    sms: &sms,
                    issues: &issues,
                });
                let handover = take_handover(agent);
                // Becoming master over a fabric another SM configured: keep its LIDs
                // (the guid2lid cache wins where it already has a port).
                let adopt = |mgr: &mut SubnetManager| {
                    for (g, r) in std::mem::take(&mut mgr.seen_lids) {
                        mgr.guid2lid.map.entry(g).or_insert(r);
                    }
                };
                match (handover, mastership::decide(prio, own, &sms)) {
                    (Some(from), _) => {
                        adopt(mgr);
                        set_state(agent, SmState::Master, format!("HANDOVER from {from}"), on);
                        master_fresh = true;
                    }
                    (None, Role::Master) => {
                        adopt(mgr);
                        set_state(agent, SmState::Master, "no master and no higher SM found".into(), on);
                        master_fresh = true;
                    }
                    (None, Role::Standby(m)) => {
                        let why = format!(
                            "{} SM {} (priority {}) found",
                            if m.info.sm_state == SmState::Master {
                                "MASTER"
                            } else {
                                "higher"
                            },
                            m.info.guid,
                            m.info.priority
                        );
                        poller = Some(Poller::new(m, opts.poll_misses));
                        set_state(agent, SmState::Standby, why, on);
                    }
                }
            }
            SmState::Master => {
                if master_fresh || mgr.need_heavy {
                    // Right after DISCOVERING decided: the fabric was just walked.
                    let rep = if master_fresh {
                        mgr.heavy_sweep_reusing_discovery(tr)
                    } else {
                        mgr.heavy_sweep(tr)
                    };
                    master_fresh = false;
                    out.heavy_sweeps += 1;
                    out.subnet_up = rep.subnet_up;
                    {
                        let mut a = agent.borrow_mut();
                        a.act_count = a.act_count.wrapping_add(rep.smps_sent as u32);
                    }
                    for t in &rep.traps {
                        on(Event::Trap(*t));
                    }
                    on(Event::Sweep { report: &rep, sm: mgr });
                    if let Some(p) = hand_over(tr, agent, mgr, opts, &mut x, on) {
                        poller = Some(p);
                        continue;
                    }
                    if opts.once {
                        break;
                    }
                    continue;
                }
                let traps = idle(tr, agent, opts.light_interval, stop);
                for t in &traps {
                    on(Event::Trap(*t));
                    if matches!(*t, 128 | 144) {
                        mgr.need_heavy = true;
                    }
                }
                let sig = agent.borrow_mut().signals.pop_front();
                if let Some(Signal::Handover { .. }) = sig {
                    mgr.need_heavy = true;
                }
                if stop() {
                    break;
                }
                out.light_sweeps += 1;
                agent.borrow_mut().act_count += 1;
                let (due, issues, traps) = mgr.light_sweep(tr);
                for t in &traps {
                    on(Event::Trap(*t));
                }
                let _ = issues;
                if due || traps.iter().any(|t| matches!(*t, 128 | 144)) {
                    mgr.need_heavy = true;
                } else if !mgr.sm_ports.is_empty() {
                    // Other SMs are few: ask them every light sweep, so that a higher
                    // SM that came up and stood by for us gets the subnet.
                    if let Some(p) = hand_over(tr, agent, mgr, opts, &mut x, on) {
                        poller = Some(p);
                    }
                }
            }
            SmState::Standby => {
                if opts.once {
                    break;
                }
                let traps = idle(tr, agent, opts.poll_interval, stop);
                let _ = traps; // a standby SM leaves traps to the master
                if let Some(from) = take_handover(agent) {
                    // The master configured the fabric: read its LIDs, keep them.
                    let _ = mgr.discover_only(tr);
                    for (g, r) in std::mem::take(&mut mgr.seen_lids) {
                        mgr.guid2lid.map.entry(g).or_insert(r);
                    }
                    set_state(agent, SmState::Master, format!("HANDOVER from {from}"), on);
                    master_fresh = true;
                    poller = None;
                    continue;
                }
                // DISCOVER/DISABLE from the master.
                let sig = agent.borrow_mut().signals.pop_front();
                match sig {
                    Some(Signal::Discover { .. }) => {
                        set_state(agent, SmState::Discovering, "DISCOVER from the master".into(), on);
                        continue;
                    }
                    Some(Signal::Disable { .. }) => {
                        set_state(agent, SmState::NotActive, "DISABLE from the master".into(), on);
                        break;
                    }
                    _ => {}
                }
                if stop() {
                    break;
                }
                let Some(p) = poller.as_mut() else {
                    set_state(agent, SmState::Discovering, "no master to poll".into(), on);
                    continue;
                };
                let path = p.master.path.clone();
                let ans = mastership::query(&mut x, tr, &path, opts.sminfo_timeout, 0);
                let outcome = p.record(ans.as_ref(), prio, own);
                on(Event::Poll {
                    master: p.master.info.guid,
                    outcome,
                });
                if outcome == PollOutcome::Lost {
                    let g = p.master.info.guid;
                    poller = None;
                    set_state(
                        agent,
                        SmState::Discovering,
                        format!("master {g} stopped answering SMInfo"),
                        on,
                    );
                }
            }
            SmState::Unknown(_) => break,
        }
    }
    out.state = agent.borrow().state;
    out.master = poller.map(|p| p.master);
    out
}

/// One log line for an event (what `rdmalab sm run --umad` prints).
pub fn event_line(e: &Event<'_>) -> String {
    match e {
        Event::State { state, reason } => format!("state {}: {reason}", state_name(*state)),
        Event::Discovered {
            switches,
            cas,
            sms,
            issues,
        } => {
            let mut s = format!("discovered {switches} switches, {cas} CAs, {} other SM(s)", sms.len());
            for r in sms.iter() {
                s.push_str(&format!(
                    "; SM {} priority {} {}",
                    r.info.guid,
                    r.info.priority,
                    state_name(r.info.sm_state)
                ));
            }
            if !issues.is_empty() {
                s.push_str(&format!("; {} issue(s)", issues.len()));
            }
            s
        }
        Event::Sweep { report, .. } => {
            format!(
                "heavy sweep: {} switches, {} CAs, {} links; {} SMPs sent, {} resent; {} LFT blocks sent, {} unchanged; {} issue(s); {}{}",
                report.switches,
                report.cas,
                report.links,
                report.smps_sent,
                report.resends,
                report.lft_blocks_sent,
                report.lft_blocks_unchanged,
                report.issues.len(),
                if report.subnet_up { "SUBNET UP" } else { "subnet NOT up" },
                if report.changes.is_empty() {
                    String::new()
                } else {
                    format!("; changes: {}", report.changes.join("; "))
                }
            ) + &report.pkeys.as_ref().map_or(String::new(), |p| {
                format!(
                    "; partitions: {} port P_Key tables, {} P_KeyTable blocks sent{}",
                    p.ports,
                    p.blocks_sent,
                    if p.fell_back {
                        " (FELL BACK to Default=0x7fff : ALL=full)"
                    } else {
                        ""
                    }
                )
            })
        }
        Event::Trap(t) => format!("trap {t} received"),
        Event::Poll { master, outcome } => format!("poll of master {master}: {outcome:?}"),
    }
}

/// IBA name of an SMState.
pub fn state_name(s: SmState) -> &'static str {
    match s {
        SmState::NotActive => "NOTACTIVE",
        SmState::Discovering => "DISCOVERING",
        SmState::Standby => "STANDBY",
        SmState::Master => "MASTER",
        SmState::Unknown(_) => "UNKNOWN",
    }
}

/// Write `opensm-lfts.dump`, `opensm-subnet.lst`, `guid2lid` and `sm-report.json` for
/// the last heavy sweep of `mgr` into `dir`.
pub fn write_sweep_dumps(dir: &std::path::Path, mgr: &SubnetManager, report: &SweepReport) -> std::io::Result<()> {
    let (Some(f), Some(t)) = (mgr.fabric.as_ref(), mgr.tables.as_ref()) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(&report.to_json(Some(f))).unwrap_or_default() + "\n";
    let files = [
        ("opensm-lfts.dump", crate::dump::lfts_dump(f, t)),
        (
            "opensm-subnet.lst",
            crate::dump::subnet_lst(f, t, Some(fabric::NodeId(0))),
        ),
        ("guid2lid", crate::lids::Guid2Lid::from_tables(f, t).to_text()),
        ("sm-report.json", json),
    ];
    for (name, text) in files {
        // Write then rename, so a reader never sees half a file.
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    Ok(())
}

/// As MASTER: survey the other SMs and hand over to the highest STANDBY SM above us
/// (IBA §14.4.1.2): SubnSet(SMInfo) HANDOVER; on a good answer we stand by and poll it.
fn hand_over(
    tr: &mut dyn Transport,
    agent: &Rc<RefCell<SmInfoAgent>>,
    mgr: &SubnetManager,
    opts: &DaemonOptions,
    x: &mut Exchange,
    on: &mut dyn FnMut(Event<'_>),
) -> Option<Poller> {
    let (own, prio) = {
        let a = agent.borrow();
        (a.guid, a.priority)
    };
    let sms = survey(tr, mgr, own, x, opts.sminfo_timeout, 1);
    let t = mastership::handover_target(prio, own, &sms)?.clone();
    let ours = agent.borrow().repr(false);
    let ans = mastership::send_set(
        x,
        tr,
        &t.path,
        mastership::attr_mod::HANDOVER,
        ours,
        opts.sminfo_timeout,
        2,
    );
    if ans.is_none_or(|(st, _)| st != 0) {
        return None;
    }
    let why = format!(
        "handed over to higher SM {} (priority {})",
        t.info.guid, t.info.priority
    );
    set_state(agent, SmState::Standby, why, on);
    Some(Poller::new(t, opts.poll_misses))
}

fn take_handover(agent: &Rc<RefCell<SmInfoAgent>>) -> Option<Guid> {
    let mut a = agent.borrow_mut();
    let k = a.signals.iter().position(|s| matches!(s, Signal::Handover { .. }))?;
    match a.signals.remove(k) {
        Some(Signal::Handover { from }) => Some(from),
        _ => None,
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Make SIGINT and SIGTERM request a clean stop; returns the flag they set.
pub fn install_stop_handler() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    &STOP
}

/// Open the umad port and [`run`] the SM on it. `on_open` sees the local port first.
pub fn run_umad(
    umad: UmadOptions,
    opts: &DaemonOptions,
    stop: &dyn Fn() -> bool,
    on_open: &mut dyn FnMut(&LocalPort),
    on: &mut dyn FnMut(Event<'_>),
) -> Result<(Outcome, SubnetManager), UmadError> {
    let agent = Rc::new(RefCell::new(SmInfoAgent::new(Guid(0), opts.priority)));
    let mut tr = UmadTransport::open(umad, agent.clone())?;
    on_open(tr.local());
    let mut mgr = SubnetManager::new(opts.sweep.clone(), tr.local().port);
    let out = run(&mut tr, &agent, &mut mgr, opts, stop, on);
    Ok((out, mgr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sma::InProcess;
    use fabric::generate::{LeafSpineParams, leaf_spine};

    fn fabric() -> fabric::Fabric {
        leaf_spine(&LeafSpineParams {
            radix: 4,
            leaves: Some(2),
            spines: Some(2),
            hosts_per_leaf: Some(2),
            ..Default::default()
        })
        .unwrap()
    }

    /// Alone on the subnet, `--once` discovers, finds no other SM, becomes MASTER and
    /// brings the subnet up with one heavy sweep.
    #[test]
    fn alone_it_becomes_master_and_brings_the_subnet_up_once() {
        let f = fabric();
        let sm = crate::lids::default_sm_port(&f).unwrap();
        let mut tr = InProcess::new(f, sm);
        let agent = Rc::new(RefCell::new(SmInfoAgent::new(Guid(0x10), 3)));
        let mut mgr = SubnetManager::new(SweepOptions::default(), sm.1.max(1));
        let opts = DaemonOptions {
            once: true,
            ..Default::default()
        };
        let mut states = Vec::new();
        let out = run(&mut tr, &agent, &mut mgr, &opts, &|| false, &mut |e| {
            if let Event::State { state, .. } = e {
                states.push(state)
            }
        });
        assert_eq!(states, vec![SmState::Discovering, SmState::Master]);
        assert_eq!(out.state, SmState::Master);
        assert_eq!(out.heavy_sweeps, 1);
        assert!(out.subnet_up);
        assert!(agent.borrow().act_count > 0);
    }

    /// The in-process fabric, with a cable to pull on request (from the event hook).
    struct Pull {
        inner: InProcess,
        pull: Rc<std::cell::Cell<Option<(fabric::NodeId, u8)>>>,
    }
    impl Transport for Pull {
        fn send(&mut self, mad: &[u8; MAD_LEN]) -> Result<(), crate::sma::TransportError> {
            if let Some((n, p)) = self.pull.take() {
                assert!(self.inner.unlink(n, p), "no cable at {n:?}/{p}");
            }
            self.inner.send(mad)
        }
        fn recv(&mut self, buf: &mut [u8; MAD_LEN]) -> Option<usize> {
            self.inner.recv(buf)
        }
    }

    /// As a daemon it keeps light-sweeping until told to stop, and a link going down
    /// (trap 128) triggers a second heavy sweep that reports the change.
    #[test]
    fn daemon_reroutes_after_an_unlink_and_stops_on_request() {
        let f = fabric();
        let sm = crate::lids::default_sm_port(&f).unwrap();
        let spine = f
            .nodes
            .iter()
            .position(|n| n.kind == fabric::NodeKind::Switch && n.name.contains("spine"))
            .expect("a spine");
        let pull = Rc::new(std::cell::Cell::new(None));
        let mut tr = Pull {
            inner: InProcess::new(f, sm),
            pull: pull.clone(),
        };
        let agent = Rc::new(RefCell::new(SmInfoAgent::new(Guid(0x10), 3)));
        let mut mgr = SubnetManager::new(SweepOptions::default(), sm.1.max(1));
        let opts = DaemonOptions {
            light_interval: Duration::from_millis(20),
            ..Default::default()
        };
        let stop = std::cell::Cell::new(false);
        let sweeps = std::cell::Cell::new(0);
        let changes = RefCell::new(Vec::new());
        let out = run(&mut tr, &agent, &mut mgr, &opts, &|| stop.get(), &mut |e| {
            if let Event::Sweep { report, .. } = e {
                sweeps.set(sweeps.get() + 1);
                assert!(report.subnet_up);
                changes.borrow_mut().extend(report.changes.iter().cloned());
                if sweeps.get() == 1 {
                    pull.set(Some((fabric::NodeId(spine as u32), 1)));
                } else {
                    stop.set(true);
                }
            }
        });
        assert_eq!(out.heavy_sweeps, 2);
        assert!(out.light_sweeps >= 1);
        assert_eq!(out.state, SmState::Master);
        assert!(
            changes.borrow().iter().any(|c| c.contains("went down")),
            "{:?}",
            changes.borrow()
        );
    }
}
