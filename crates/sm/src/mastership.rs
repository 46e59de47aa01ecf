//! SM mastership per IBA vol. 1 §14.4 (SMInfo, the SM state machine): who of several
//! SMs on a subnet is MASTER, who stands by, and how they hand over.
//!
//! * [`SmInfoAgent`] is this SM's SMInfo attribute (port GUID, priority, SMState,
//!   ActCount) and answers SubnGet/SubnSet(SMInfo) from other SMs; Set's attribute
//!   modifier carries a signal (1 HANDOVER, 2 ACKNOWLEDGE, 3 DISABLE, 4 STANDBY,
//!   5 DISCOVER), checked for legality the way the IBA (and OpenSM's
//!   `osm_sminfo_rcv.c`) do: HANDOVER/DISABLE/STANDBY/DISCOVER only from a MASTER,
//!   ACKNOWLEDGE only from a STANDBY SM.
//! * [`decide`] is the DISCOVERING decision after a sweep found the other SMs: a MASTER
//!   elsewhere, or a higher SM (priority, then lower port GUID) still discovering or
//!   standing by, sends us to STANDBY; otherwise we are MASTER.
//! * [`handover_target`]: a MASTER that finds a higher SM in STANDBY hands over to it.
//! * [`Poller`]: a STANDBY SM polls the master with SubnGet(SMInfo); after
//!   `max_misses` polls in a row without an answer from a MASTER it goes back to
//!   DISCOVERING (OpenSM: `polling_retry_number`, default 4).
//! * [`query`] and [`send_set`]: one SMInfo exchange over any [`Transport`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use fabric::Guid;
use wire::mad::attr::{SmState, sm_info};
use wire::mad::{AttrId, DrRoute, Method, Route, Smp};

use crate::sma::{MAD_LEN, Transport};

/// SMInfo Set attribute modifiers (IBA Table 158).
pub mod attr_mod {
    pub const HANDOVER: u32 = 1;
    pub const ACKNOWLEDGE: u32 = 2;
    pub const DISABLE: u32 = 3;
    pub const STANDBY: u32 = 4;
    pub const DISCOVER: u32 = 5;
}

/// OpenSM's default SM_Key (`sm_key 0x0000000000000001` in opensm.conf).
pub const DEFAULT_SM_KEY: u64 = 1;

/// MAD status for "invalid value in the attribute or modifier" (code 7 in bits 2–4).
pub const STATUS_INVALID_FIELD: u16 = 7 << 2;
/// MAD status for "unsupported method/attribute combination".
pub const STATUS_UNSUPPORTED: u16 = 3 << 2;

/// A signal another SM sent us with SubnSet(SMInfo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Handover { from: Guid },
    Acknowledge { from: Guid },
    Disable { from: Guid },
    Standby { from: Guid },
    Discover { from: Guid },
}

/// This SM's SMInfo and the signals received; see the module docs.
#[derive(Clone, Debug)]
pub struct SmInfoAgent {
    pub guid: Guid,
    pub priority: u8,
    pub state: SmState,
    pub act_count: u32,
    pub sm_key: u64,
    /// Give the SM_Key to every requester, not only to a MASTER. The IBA returns 0 to
    /// unauthenticated requesters, but OpenSM 3.3.23 ignores an SM whose SMInfo
    /// carries a key other than its own ("ERR 2F18 … doesn't match our local
    /// sm_key"), even while it is itself only discovering; true by default for interop.
    pub reveal_key: bool,
    /// Signals received and accepted, oldest first.
    pub signals: VecDeque<Signal>,
    /// Requests answered.
    pub answered: u64,
}

impl SmInfoAgent {
    /// A fresh SM in DISCOVERING.
    pub fn new(guid: Guid, priority: u8) -> SmInfoAgent {
        SmInfoAgent {
            guid,
            priority: priority.min(15),
            state: SmState::Discovering,
            act_count: 0,
            sm_key: DEFAULT_SM_KEY,
            reveal_key: true,
            signals: VecDeque::new(),
            answered: 0,
        }
    }

    /// Our SMInfo as a Repr; the SM_Key is given only to a MASTER asking (IBA
    /// C14-42.1.1; zero otherwise).
    pub fn repr(&self, to_master: bool) -> sm_info::Repr {
        sm_info::Repr {
            guid: self.guid,
            sm_key: if to_master || self.reveal_key { self.sm_key } else { 0 },
            act_count: self.act_count,
            priority: self.priority,
            sm_state: self.state,
        }
    }

    /// Answer an SMInfo request: `Some((status, data))` for SubnGet/SubnSet(SMInfo),
    /// `None` for anything else. A legal Set queues its signal.
    pub fn handle_request(&mut self, req: &Smp) -> Option<(u16, [u8; 64])> {
        if req.attr_id != AttrId::SmInfo || !matches!(req.method, Method::Get | Method::Set) {
            return None;
        }
        let remote = sm_info::Repr::from_bytes(&req.data).ok();
        let from_master = remote.is_some_and(|r| r.sm_state == SmState::Master);
        let mut data = [0u8; 64];
        let _ = self.repr(from_master).to_bytes(&mut data);
        self.answered += 1;
        if req.method == Method::Get {
            return Some((0, data));
        }
        let Some(r) = remote else {
            return Some((STATUS_INVALID_FIELD, data));
        };
        let from = r.guid;
        let signal = match req.attr_mod {
            attr_mod::ACKNOWLEDGE if r.sm_state == SmState::Standby => Signal::Acknowledge { from },
            attr_mod::HANDOVER if r.sm_state == SmState::Master => Signal::Handover { from },
            attr_mod::DISABLE if r.sm_state == SmState::Master => Signal::Disable { from },
            attr_mod::STANDBY if r.sm_state == SmState::Master => Signal::Standby { from },
            attr_mod::DISCOVER if r.sm_state == SmState::Master => Signal::Discover { from },
            _ => return Some((STATUS_INVALID_FIELD, data)),
        };
        // The transition must be legal in our state too (IBA Figure 254 / OpenSM
        // osm_sm_state_mgr_check_legality).
        let legal = matches!(
            (self.state, signal),
            (SmState::Discovering, Signal::Handover { .. })
                | (SmState::Standby, _)
                | (SmState::NotActive, Signal::Standby { .. })
                | (SmState::Master, Signal::Handover { .. } | Signal::Acknowledge { .. })
        );
        if !legal {
            return Some((STATUS_INVALID_FIELD, data));
        }
        self.signals.push_back(signal);
        Some((0, data))
    }
}

/// Is SM `a` higher than SM `b`: higher priority, or the same priority and the lower
/// port GUID (IBA §14.4.1.1).
pub fn is_higher(a_priority: u8, a_guid: Guid, b_priority: u8, b_guid: Guid) -> bool {
    a_priority > b_priority || (a_priority == b_priority && a_guid.0 < b_guid.0)
}

/// Another SM found on the subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSm {
    /// Its port GUID (as discovered).
    pub port_guid: Guid,
    /// Directed route from our port to it.
    pub path: Vec<u8>,
    /// What it answered.
    pub info: sm_info::Repr,
}

/// What a DISCOVERING SM becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Master,
    /// Stand by and poll this SM.
    Standby(RemoteSm),
}

/// The DISCOVERING decision; see the module docs.
pub fn decide(priority: u8, guid: Guid, remotes: &[RemoteSm]) -> Role {
    if let Some(m) = remotes
        .iter()
        .filter(|r| r.info.sm_state == SmState::Master && r.info.guid != guid)
        .max_by(|a, b| order(a).cmp(&order(b)))
    {
        return Role::Standby(m.clone());
    }
    if let Some(h) = remotes
        .iter()
        .filter(|r| {
            matches!(r.info.sm_state, SmState::Discovering | SmState::Standby)
                && is_higher(r.info.priority, r.info.guid, priority, guid)
        })
        .max_by(|a, b| order(a).cmp(&order(b)))
    {
        return Role::Standby(h.clone());
    }
    Role::Master
}

/// Sort key: higher SMs compare greater.
fn order(r: &RemoteSm) -> (u8, std::cmp::Reverse<u64>) {
    (r.info.priority, std::cmp::Reverse(r.info.guid.0))
}

/// For a MASTER: the highest STANDBY SM above us, to hand over to.
pub fn handover_target(priority: u8, guid: Guid, remotes: &[RemoteSm]) -> Option<&RemoteSm> {
    remotes
        .iter()
        .filter(|r| r.info.sm_state == SmState::Standby && is_higher(r.info.priority, r.info.guid, priority, guid))
        .max_by(|a, b| order(a).cmp(&order(b)))
}

/// A STANDBY SM's view of the master it polls.
#[derive(Clone, Debug)]
pub struct Poller {
    pub master: RemoteSm,
    pub misses: u32,
    pub max_misses: u32,
    pub polls: u64,
}

/// What one poll says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollOutcome {
    /// The master answered as MASTER (or a higher SM still standing by).
    Alive,
    /// No good answer, but not yet `max_misses` in a row.
    Missed(u32),
    /// The master is gone (or no longer the master): rediscover.
    Lost,
}

impl Poller {
    pub fn new(master: RemoteSm, max_misses: u32) -> Poller {
        Poller {
            master,
            misses: 0,
            max_misses: max_misses.max(1),
            polls: 0,
        }
    }

    /// Record one poll's answer (`None`: no answer). A polled SM that is not MASTER
    /// counts as alive only while it stays DISCOVERING/STANDBY and higher than us.
    pub fn record(&mut self, answer: Option<&sm_info::Repr>, own_priority: u8, own_guid: Guid) -> PollOutcome {
        self.polls += 1;
        let alive = match answer {
            Some(a) if a.sm_state == SmState::Master => true,
            Some(a) if matches!(a.sm_state, SmState::Discovering | SmState::Standby) => {
                is_higher(a.priority, a.guid, own_priority, own_guid)
            }
            Some(_) => false,
            None => false,
        };
        if alive {
            self.misses = 0;
            if let Some(a) = answer {
                self.master.info = *a;
            }
            return PollOutcome::Alive;
        }
        if answer.is_some() {
            // It answered but is no master (NOTACTIVE, or a lower SM now): rediscover.
            return PollOutcome::Lost;
        }
        self.misses += 1;
        if self.misses >= self.max_misses {
            PollOutcome::Lost
        } else {
            PollOutcome::Missed(self.misses)
        }
    }
}

/// Transaction ids of mastership exchanges live in their own range so they never meet
/// a sweep's.
const TID_BASE: u64 = 0x4000_0000;

/// One SMInfo exchange: what it needs to know about MADs that arrive meanwhile.
#[derive(Debug, Default)]
pub struct Exchange {
    next_tid: u64,
    /// Trap numbers that arrived while waiting.
    pub traps: Vec<u16>,
}

impl Exchange {
    fn tid(&mut self) -> u64 {
        self.next_tid = self.next_tid.wrapping_add(1) & 0x3fff_ffff;
        TID_BASE | self.next_tid
    }

    /// SubnGet(SMInfo) (or SubnSet with `set = Some((attr_mod, our info))`) to the SM
    /// at the end of `path`; waits up to `timeout` for the answer, `retries` resends.
    pub fn sminfo(
        &mut self,
        tr: &mut dyn Transport,
        path: &[u8],
        set: Option<(u32, sm_info::Repr)>,
        timeout: Duration,
        retries: u32,
    ) -> Option<(u16, sm_info::Repr)> {
        let dr = DrRoute::new(path).ok()?;
        for _ in 0..=retries {
            let tid = self.tid();
            let mut smp = Smp::get(AttrId::SmInfo, 0, tid, Route::Directed(dr));
            if let Some((m, info)) = set {
                smp.method = Method::Set;
                smp.attr_mod = m;
                let _ = info.to_bytes(&mut smp.data);
            }
            let mut b = [0u8; MAD_LEN];
            smp.to_bytes(&mut b).ok()?;
            if tr.send(&b).is_err() {
                return None;
            }
            let deadline = Instant::now() + timeout;
            let mut buf = [0u8; MAD_LEN];
            while Instant::now() < deadline {
                let t0 = Instant::now();
                let Some(n) = tr.recv(&mut buf) else {
                    // An in-process transport says "nothing" at once; do not spin.
                    if t0.elapsed() < Duration::from_millis(1) {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    continue;
                };
                let Ok(r) = Smp::from_bytes(&buf[..n]) else { continue };
                if r.method == Method::Trap {
                    if let Ok(no) = wire::mad::attr::notice::Notice::parse(&r.data)
                        && let Some(t) = no.details.trap_number()
                    {
                        self.traps.push(t);
                    }
                    continue;
                }
                if r.tid == tid && r.attr_id == AttrId::SmInfo && r.method == Method::GetResp {
                    let info = sm_info::Repr::from_bytes(&r.data).ok()?;
                    return Some((r.status, info));
                }
            }
        }
        None
    }
}

/// SubnGet(SMInfo) of the SM at `path`.
pub fn query(
    x: &mut Exchange,
    tr: &mut dyn Transport,
    path: &[u8],
    timeout: Duration,
    retries: u32,
) -> Option<sm_info::Repr> {
    x.sminfo(tr, path, None, timeout, retries)
        .filter(|(st, _)| *st == 0)
        .map(|(_, i)| i)
}

/// SubnSet(SMInfo) with a signal; returns the answer's status and SMInfo.
pub fn send_set(
    x: &mut Exchange,
    tr: &mut dyn Transport,
    path: &[u8],
    signal: u32,
    ours: sm_info::Repr,
    timeout: Duration,
    retries: u32,
) -> Option<(u16, sm_info::Repr)> {
    x.sminfo(tr, path, Some((signal, ours)), timeout, retries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(guid: u64, priority: u8, state: SmState) -> RemoteSm {
        RemoteSm {
            port_guid: Guid(guid),
            path: vec![1, 2],
            info: sm_info::Repr {
                guid: Guid(guid),
                sm_key: 0,
                act_count: 7,
                priority,
                sm_state: state,
            },
        }
    }

    fn set(attr_mod: u32, from: &RemoteSm) -> Smp {
        let mut d = [0u8; 64];
        from.info.to_bytes(&mut d).unwrap();
        Smp::set(
            AttrId::SmInfo,
            attr_mod,
            9,
            Route::Directed(DrRoute::new(&[1]).unwrap()),
            d,
        )
    }

    #[test]
    fn higher_is_priority_then_lower_guid() {
        assert!(is_higher(5, Guid(9), 4, Guid(1)));
        assert!(!is_higher(4, Guid(1), 5, Guid(9)));
        assert!(is_higher(5, Guid(1), 5, Guid(2)));
        assert!(!is_higher(5, Guid(2), 5, Guid(1)));
        assert!(!is_higher(5, Guid(2), 5, Guid(2)));
    }

    #[test]
    fn a_master_anywhere_sends_us_to_standby_whatever_its_priority() {
        let m = remote(0x50, 1, SmState::Master);
        assert_eq!(decide(15, Guid(0x10), std::slice::from_ref(&m)), Role::Standby(m));
    }

    #[test]
    fn a_higher_standby_or_discovering_sm_keeps_us_out_of_master() {
        let hi = remote(0x50, 9, SmState::Discovering);
        let lo = remote(0x60, 2, SmState::Standby);
        assert_eq!(decide(5, Guid(0x10), &[lo.clone(), hi.clone()]), Role::Standby(hi));
        assert_eq!(decide(5, Guid(0x10), std::slice::from_ref(&lo)), Role::Master);
        // Same priority: the lower GUID wins.
        let same = remote(0x05, 5, SmState::Standby);
        assert_eq!(decide(5, Guid(0x10), std::slice::from_ref(&same)), Role::Standby(same));
        assert_eq!(
            decide(5, Guid(0x01), &[remote(0x05, 5, SmState::Standby)]),
            Role::Master
        );
        assert_eq!(decide(5, Guid(0x10), &[]), Role::Master);
    }

    #[test]
    fn master_hands_over_only_to_a_higher_standby() {
        let rs = [
            remote(0x50, 9, SmState::Standby),
            remote(0x40, 12, SmState::Discovering),
            remote(0x30, 3, SmState::Standby),
        ];
        assert_eq!(
            handover_target(5, Guid(0x10), &rs).map(|r| r.port_guid),
            Some(Guid(0x50))
        );
        assert_eq!(handover_target(10, Guid(0x10), &rs), None);
    }

    #[test]
    fn get_answers_our_sminfo_and_hides_the_key_from_non_masters() {
        let mut a = SmInfoAgent::new(Guid(0x1234), 7);
        a.sm_key = 0xfeed;
        a.reveal_key = false;
        a.state = SmState::Standby;
        a.act_count = 42;
        let req = Smp::get(AttrId::SmInfo, 0, 3, Route::Lid);
        let (st, d) = a.handle_request(&req).unwrap();
        assert_eq!(st, 0);
        let r = sm_info::Repr::from_bytes(&d).unwrap();
        assert_eq!(
            (r.guid, r.priority, r.sm_state, r.act_count, r.sm_key),
            (Guid(0x1234), 7, SmState::Standby, 42, 0)
        );
        let m = remote(0x99, 1, SmState::Master);
        let mut req = set(0, &m);
        req.method = Method::Get;
        let (_, d) = a.handle_request(&req).unwrap();
        assert_eq!(sm_info::Repr::from_bytes(&d).unwrap().sm_key, 0xfeed);
        // Not SMInfo: not ours to answer.
        assert!(
            a.handle_request(&Smp::get(AttrId::NodeInfo, 0, 4, Route::Lid))
                .is_none()
        );
    }

    #[test]
    fn handover_from_a_master_is_accepted_in_standby_and_queued() {
        let mut a = SmInfoAgent::new(Guid(0x10), 9);
        a.state = SmState::Standby;
        let m = remote(0x50, 1, SmState::Master);
        assert_eq!(a.handle_request(&set(attr_mod::HANDOVER, &m)).unwrap().0, 0);
        assert_eq!(a.signals.pop_front(), Some(Signal::Handover { from: Guid(0x50) }));
    }

    #[test]
    fn illegal_sets_are_refused_with_a_status_and_not_queued() {
        let mut a = SmInfoAgent::new(Guid(0x10), 9);
        a.state = SmState::Standby;
        // HANDOVER from an SM that says it is only standing by.
        let s = remote(0x50, 1, SmState::Standby);
        assert_eq!(
            a.handle_request(&set(attr_mod::HANDOVER, &s)).unwrap().0,
            STATUS_INVALID_FIELD
        );
        // ACKNOWLEDGE from a master.
        let m = remote(0x50, 1, SmState::Master);
        assert_eq!(
            a.handle_request(&set(attr_mod::ACKNOWLEDGE, &m)).unwrap().0,
            STATUS_INVALID_FIELD
        );
        // Unknown modifier.
        assert_eq!(a.handle_request(&set(9, &m)).unwrap().0, STATUS_INVALID_FIELD);
        // DISCOVER while we are MASTER is not a legal transition.
        a.state = SmState::Master;
        assert_eq!(
            a.handle_request(&set(attr_mod::DISCOVER, &m)).unwrap().0,
            STATUS_INVALID_FIELD
        );
        assert!(a.signals.is_empty());
        // ACKNOWLEDGE from a standby SM while we are master: fine.
        assert_eq!(a.handle_request(&set(attr_mod::ACKNOWLEDGE, &s)).unwrap().0, 0);
        assert_eq!(a.signals.len(), 1);
    }

    #[test]
    fn poller_declares_the_master_lost_after_max_misses_in_a_row() {
        let m = remote(0x50, 9, SmState::Master);
        let mut p = Poller::new(m.clone(), 3);
        assert_eq!(p.record(None, 1, Guid(0x10)), PollOutcome::Missed(1));
        assert_eq!(p.record(None, 1, Guid(0x10)), PollOutcome::Missed(2));
        assert_eq!(p.record(Some(&m.info), 1, Guid(0x10)), PollOutcome::Alive);
        assert_eq!(p.misses, 0);
        assert_eq!(p.record(None, 1, Guid(0x10)), PollOutcome::Missed(1));
        assert_eq!(p.record(None, 1, Guid(0x10)), PollOutcome::Missed(2));
        assert_eq!(p.record(None, 1, Guid(0x10)), PollOutcome::Lost);
        // A polled SM that answers NOTACTIVE is lost at once.
        let mut p = Poller::new(m, 3);
        let na = remote(0x50, 9, SmState::NotActive).info;
        assert_eq!(p.record(Some(&na), 1, Guid(0x10)), PollOutcome::Lost);
    }

    /// Two agents talking through a scripted transport: a Get over the wire gets our
    /// SMInfo back with the transaction id it carried.
    #[test]
    fn query_over_a_transport_matches_the_answer_by_tid() {
        struct Loop {
            agent: SmInfoAgent,
            out: VecDeque<[u8; MAD_LEN]>,
        }
        impl Transport for Loop {
            fn send(&mut self, mad: &[u8; MAD_LEN]) -> Result<(), crate::sma::TransportError> {
                let req = Smp::from_bytes(mad).unwrap();
                let (st, d) = self.agent.handle_request(&req).unwrap();
                // A stray trap first, then the answer.
                let mut trap = [0u8; MAD_LEN];
                let n = wire::mad::attr::notice::Notice::trap(
                    2,
                    wire::Lid(3),
                    wire::mad::attr::notice::TrapDetails::LinkStateChange { lid: wire::Lid(3) },
                );
                let mut s = Smp::get(AttrId::Notice, 0, 77, Route::Lid);
                s.method = Method::Trap;
                n.emit(&mut s.data).unwrap();
                s.to_bytes(&mut trap).unwrap();
                self.out.push_back(trap);
                let mut b = [0u8; MAD_LEN];
                req.into_response(st, d).to_bytes(&mut b).unwrap();
                self.out.push_back(b);
                Ok(())
            }
            fn recv(&mut self, buf: &mut [u8; MAD_LEN]) -> Option<usize> {
                let b = self.out.pop_front()?;
                buf.copy_from_slice(&b);
                Some(MAD_LEN)
            }
        }
        let mut other = SmInfoAgent::new(Guid(0x77), 12);
        other.state = SmState::Master;
        let mut tr = Loop {
            agent: other,
            out: VecDeque::new(),
        };
        let mut x = Exchange::default();
        let got = query(&mut x, &mut tr, &[1, 3], Duration::from_millis(50), 0).unwrap();
        assert_eq!(
            (got.guid, got.priority, got.sm_state),
            (Guid(0x77), 12, SmState::Master)
        );
        assert_eq!(x.traps, vec![128]);
        let ours = SmInfoAgent::new(Guid(0x10), 1);
        let mut ours = ours.repr(false);
        ours.sm_state = SmState::Master;
        tr.agent.state = SmState::Standby;
        let (st, _) = send_set(
            &mut x,
            &mut tr,
            &[1, 3],
            attr_mod::HANDOVER,
            ours,
            Duration::from_millis(50),
            0,
        )
        .unwrap();
        assert_eq!(st, 0);
        assert_eq!(
            tr.agent.signals.pop_front(),
            Some(Signal::Handover { from: Guid(0x10) })
        );
    }
}
