//! Weighted max-min fair rates by progressive filling.
//!
//! Flows are variables `x_f ≥ 0`; resources are constraints
//! `Σ_{f ∋ r} w_{f,r} · x_f ≤ C_r`; a flow may carry its own bound `x_f ≤ b_f`.
//! Progressive filling raises every unfixed flow at one common level λ; the
//! resource (or bound) that saturates first fixes its flows at λ, and the rest go
//! on. This is the max-min allocation: no flow can be raised without lowering one
//! that is no larger (the constraint system SimGrid's LMM solves, `src/kernel/lmm`,
//! per ../shared/reference/flow-level-and-calibration.md §A1).
//!
//! One solve costs O(E · log R) for E flow–resource incidences and R resources:
//! resources sit in a binary heap keyed by their saturation level, re-keyed lazily
//! (a stale entry carries an old stamp and is skipped). Ties are broken by
//! resource index, so a solve is a function of its inputs alone.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A flow's use of one resource: the resource and the bytes it carries there per
/// byte of the flow's payload (1 on the data path; the ACK share on the way back).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Use {
    /// Resource index.
    pub res: u32,
    /// Bytes on this resource per payload byte of the flow.
    pub weight: f64,
}

/// A saturation level with a total order (ties by resource index).
#[derive(Clone, Copy, Debug)]
struct Level(f64, u32, u32);

impl PartialEq for Level {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Level {}
impl PartialOrd for Level {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Level {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1)).then(self.2.cmp(&o.2))
    }
}

/// Scratch space for [`Solver::solve`], kept between solves so a solve does not
/// allocate once it has seen its largest problem.
#[derive(Clone, Debug, Default)]
pub struct Solver {
    rem: Vec<f64>,
    usage: Vec<f64>,
    stamp: Vec<u32>,
    fixed: Vec<bool>,
    heap: BinaryHeap<Reverse<Level>>,
    bounds: Vec<(f64, u32)>,
    /// Resources that have saturated as the bottleneck of at least two flows
    /// carrying data across them (ACK shares do not count), over every solve:
    /// where a real fabric queues packets (`shared_bottlenecks`).
    shared: Vec<bool>,
}

impl Solver {
    /// Max-min rates of `flows` (indices into `paths` and `bounds`), written into
    /// `rate[f]`. `caps[r]` is resource r's capacity minus what flows outside this
    /// solve already use of it; `resources` are the resources `flows` cross, and
    /// `on[r]` lists the flows that cross r (every one of them in `flows`).
    /// A resource of zero capacity gives its flows rate 0.
    #[allow(clippy::too_many_arguments)] // the solve's inputs are the constraint system itself, kept flat
    pub fn solve(
        &mut self,
        caps: &[f64],
        flows: &[u32],
        paths: &[Vec<Use>],
        bounds: &[f64],
        resources: &[u32],
        on: &[Vec<u32>],
        rate: &mut [f64],
    ) {
        let nres = caps.len();
        if self.rem.len() < nres {
            self.rem.resize(nres, 0.0);
            self.usage.resize(nres, 0.0);
            self.stamp.resize(nres, 0);
        }
        if self.fixed.len() < paths.len() {
            self.fixed.resize(paths.len(), false);
        }
        for &r in resources {
            self.rem[r as usize] = caps[r as usize];
            self.usage[r as usize] = 0.0;
        }
        self.bounds.clear();
        for &f in flows {
            self.fixed[f as usize] = false;
            for u in &paths[f as usize] {
                self.usage[u.res as usize] += u.weight;
            }
            if bounds[f as usize].is_finite() {
                self.bounds.push((bounds[f as usize], f));
            }
        }
        // highest bound last, so the lowest pops first
        self.bounds
            .sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        self.heap.clear();
        for &r in resources {
            let r = r as usize;
            self.stamp[r] = self.stamp[r].wrapping_add(1);
            if self.usage[r] > 0.0 {
                self.heap.push(Reverse(Level(
                    level(self.rem[r], self.usage[r]),
                    r as u32,
                    self.stamp[r],
                )));
            }
        }
        let mut left = flows.len();
        while left > 0 {
            // the lowest resource level that is still current
            let top = loop {
                match self.heap.peek() {
                    Some(Reverse(Level(_, r, s))) if *s != self.stamp[*r as usize] => {
                        self.heap.pop();
                    }
                    t => break t.map(|Reverse(l)| *l),
                }
            };
            let bound = loop {
                match self.bounds.last() {
                    Some(&(_, f)) if self.fixed[f as usize] => {
                        self.bounds.pop();
                    }
                    b => break b.copied(),
                }
            };
            match (top, bound) {
                (Some(Level(lv, r, _)), b) if b.is_none_or(|(bv, _)| lv <= bv) => {
                    self.heap.pop();
                    let data_flows = on[r as usize]
                        .iter()
                        .filter(|&&f| paths[f as usize].iter().any(|u| u.res == r && u.weight >= DATA_WEIGHT))
                        .take(2)
                        .count();
                    if data_flows >= 2 {
                        if self.shared.len() <= r as usize {
                            self.shared.resize(r as usize + 1, false);
                        }
                        self.shared[r as usize] = true;
                    }
                    // fix every unfixed flow on resource r at lv
                    let lv = lv.max(0.0);
                    for &f in &on[r as usize] {
                        if !self.fixed[f as usize] {
                            left -= self.fix(f, lv, paths, rate);
                        }
                    }
                }
                (_, Some((bv, f))) => {
                    self.bounds.pop();
                    left -= self.fix(f, bv.max(0.0), paths, rate);
                }
                (_, None) => {
                    // flows that cross no resource and have no bound: unconstrained
                    for &f in flows {
                        if !self.fixed[f as usize] {
                            self.fixed[f as usize] = true;
                            rate[f as usize] = f64::INFINITY;
                        }
                    }
                    left = 0;
                }
            }
        }
    }

    /// Fix flow f at `x`, take its use off every resource it crosses and re-key
    /// them. Returns 1 (one flow fixed).
    fn fix(&mut self, f: u32, x: f64, paths: &[Vec<Use>], rate: &mut [f64]) -> usize {
        self.fixed[f as usize] = true;
        rate[f as usize] = x;
        for u in &paths[f as usize] {
            let r = u.res as usize;
            self.rem[r] = (self.rem[r] - u.weight * x).max(0.0);
            self.usage[r] -= u.weight;
            self.stamp[r] = self.stamp[r].wrapping_add(1);
            if self.usage[r] > 1e-12 {
                self.heap.push(Reverse(Level(
                    level(self.rem[r], self.usage[r]),
                    r as u32,
                    self.stamp[r],
                )));
            } else {
                self.usage[r] = 0.0;
            }
        }
        1
    }
}

/// A use of at least this weight carries a flow's data (1 and its header
/// bytes); ACK shares are a few hundredths.
const DATA_WEIGHT: f64 = 0.5;

impl Solver {
    /// Every resource that has saturated as the bottleneck of two or more data
    /// flows in any solve so far, in index order.
    pub fn shared_bottlenecks(&self) -> Vec<u32> {
        self.shared
            .iter()
            .enumerate()
            .filter(|(_, s)| **s)
            .map(|(r, _)| r as u32)
            .collect()
    }
}

fn level(rem: f64, usage: f64) -> f64 {
    (rem / usage).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(res: &[u32]) -> Vec<Use> {
        res.iter().map(|&r| Use { res: r, weight: 1.0 }).collect()
    }

    fn run(caps: &[f64], paths: &[Vec<Use>], bounds: &[f64]) -> Vec<f64> {
        let flows: Vec<u32> = (0..paths.len() as u32).collect();
        let res: Vec<u32> = (0..caps.len() as u32).collect();
        let mut on = vec![Vec::new(); caps.len()];
        for (f, p) in paths.iter().enumerate() {
            for u in p {
                on[u.res as usize].push(f as u32);
            }
        }
        let mut rate = vec![f64::NAN; paths.len()];
        Solver::default().solve(caps, &flows, paths, bounds, &res, &on, &mut rate);
        rate
    }

    #[test]
    fn flows_on_one_link_share_it_equally() {
        let r = run(&[12.0], &[one(&[0]), one(&[0]), one(&[0])], &[f64::INFINITY; 3]);
        assert_eq!(r, vec![4.0, 4.0, 4.0]);
    }

    #[test]
    fn parking_lot_gives_the_long_flow_the_bottleneck_share_and_the_rest_to_the_short_ones() {
        // links 0 (cap 10) and 1 (cap 10); flow 0 crosses both, flows 1 and 2 one
        // each, flow 3 also on link 1: link 1 has three flows → 10/3 each; flow 1
        // gets the rest of link 0
        let r = run(
            &[10.0, 10.0],
            &[one(&[0, 1]), one(&[0]), one(&[1]), one(&[1])],
            &[f64::INFINITY; 4],
        );
        let third = 10.0 / 3.0;
        assert!((r[0] - third).abs() < 1e-12, "{r:?}");
        assert!((r[1] - (10.0 - third)).abs() < 1e-12, "{r:?}");
        assert!((r[2] - third).abs() < 1e-12 && (r[3] - third).abs() < 1e-12, "{r:?}");
    }

    #[test]
    fn a_bound_caps_its_flow_and_frees_the_rest_for_the_others() {
        let r = run(&[10.0], &[one(&[0]), one(&[0])], &[2.0, f64::INFINITY]);
        assert_eq!(r, vec![2.0, 8.0]);
    }

    #[test]
    fn weights_count_a_flows_acks_on_the_reverse_link() {
        // flow 0 sends on link 0 and its ACKs (5% of its bytes) cross link 1, where
        // flow 1 sends: flow 1 gets what the ACKs leave
        let paths = vec![
            vec![Use { res: 0, weight: 1.0 }, Use { res: 1, weight: 0.05 }],
            vec![Use { res: 1, weight: 1.0 }],
        ];
        let r = run(&[10.0, 10.0], &paths, &[f64::INFINITY; 2]);
        // on link 1 both rise together: 1.05·λ = 10 → λ = 9.52…; flow 1 fixed there,
        // flow 0 too (it crosses link 1)
        let lv = 10.0 / 1.05;
        assert!((r[0] - lv).abs() < 1e-9 && (r[1] - lv).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn the_allocation_is_feasible_and_every_flow_meets_a_saturated_resource() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for _ in 0..200 {
            let nres = rng.random_range(1..12);
            let caps: Vec<f64> = (0..nres).map(|_| rng.random_range(1.0..100.0)).collect();
            let nf = rng.random_range(1..30);
            let paths: Vec<Vec<Use>> = (0..nf)
                .map(|_| {
                    let mut p: Vec<u32> = (0..rng.random_range(1..=nres.min(4)))
                        .map(|_| rng.random_range(0..nres as u32))
                        .collect();
                    p.sort_unstable();
                    p.dedup();
                    one(&p)
                })
                .collect();
            let r = run(&caps, &paths, &vec![f64::INFINITY; nf]);
            let mut load = vec![0.0; nres];
            for (f, p) in paths.iter().enumerate() {
                for u in p {
                    load[u.res as usize] += r[f];
                }
            }
            for (l, c) in load.iter().zip(&caps) {
                assert!(*l <= c * (1.0 + 1e-9), "over capacity: {l} > {c}");
            }
            // max-min: each flow crosses a saturated resource where it is among the largest
            for (f, p) in paths.iter().enumerate() {
                let ok = p.iter().any(|u| {
                    let r0 = u.res as usize;
                    let sat = load[r0] >= caps[r0] * (1.0 - 1e-9);
                    let largest = paths
                        .iter()
                        .enumerate()
                        .filter(|(_, q)| q.iter().any(|v| v.res == u.res))
                        .all(|(g, _)| r[g] <= r[f] * (1.0 + 1e-9));
                    sat && largest
                });
                assert!(
                    ok,
                    "flow {f} has no bottleneck: rates {r:?} paths {paths:?} caps {caps:?}"
                );
            }
        }
    }
}
