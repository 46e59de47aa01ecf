//! Which of a cluster's servers a job gets: packed, scattered over the units,
//! or fragmented by the churn of earlier jobs.

/// A placement in words: its kind and the servers and units it took.
pub(crate) fn describe_placement(p: Placement, servers: &[usize], per_su: usize) -> String {
    let units: std::collections::BTreeSet<usize> = servers.iter().map(|s| s / per_su.max(1)).collect();
    let runs = servers.windows(2).filter(|w| w[1] != w[0] + 1).count() + usize::from(!servers.is_empty());
    format!(
        "{}: {} servers in {} unit(s), {} contiguous run(s)",
        p.name(),
        servers.len(),
        units.len(),
        runs
    )
}

/// Rounds of arrivals (first fit, until the job would no longer fit) and
/// departures (each running job with probability 1/2) before a fragmented
/// placement takes its servers: enough for the first-fit gaps to spread over
/// the cluster. A model of churn, not a measured trace.
pub const CHURN_ROUNDS: usize = 8;

/// Which of the cluster's servers a job gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// The first servers, unit by unit: the job's rings stay on as few leaves as
    /// they can.
    #[default]
    Packed,
    /// Round robin over the scalable units (server 0 of every unit, then server
    /// 1, …): every data-parallel ring crosses the spines.
    Scattered,
    /// The free servers a busy cluster leaves: over [`CHURN_ROUNDS`] rounds,
    /// earlier jobs of 1, 2, 4 or 8 servers (drawn from the run's seed) take
    /// servers first fit until the job would no longer fit, then each finishes
    /// with probability 1/2; the job takes the free servers in order, wherever
    /// the gaps are.
    Fragmented,
}

impl Placement {
    /// The servers (indices into the fabric's servers, in rank order) a job of
    /// `need` servers gets on `total` servers in units of `per_su`.
    pub fn servers(self, total: usize, per_su: usize, need: usize, seed: u64) -> Vec<usize> {
        let need = need.min(total);
        match self {
            Placement::Packed => (0..need).collect(),
            Placement::Scattered => {
                let units = total.div_ceil(per_su.max(1));
                (0..per_su.max(1))
                    .flat_map(|i| (0..units).map(move |u| u * per_su + i))
                    .filter(|&s| s < total)
                    .take(need)
                    .collect()
            }
            Placement::Fragmented => {
                use rand::{Rng, SeedableRng};
                let mut rng = rand_pcg::Pcg64::seed_from_u64(seed ^ 0x706c_6163_656d_656e);
                let mut busy = vec![false; total];
                let mut jobs: Vec<Vec<usize>> = Vec::new();
                for _ in 0..CHURN_ROUNDS {
                    loop {
                        let size = [1usize, 2, 4, 8][rng.random_range(0..4)];
                        let free: Vec<usize> = (0..total).filter(|&s| !busy[s]).collect();
                        if free.len() < need + size {
                            break;
                        }
                        let got: Vec<usize> = free.into_iter().take(size).collect();
                        for &s in &got {
                            busy[s] = true;
                        }
                        jobs.push(got);
                    }
                    jobs.retain(|j| {
                        let done = rng.random_bool(0.5);
                        if done {
                            for &s in j {
                                busy[s] = false;
                            }
                        }
                        !done
                    });
                }
                (0..total).filter(|&s| !busy[s]).take(need).collect()
            }
        }
    }

    /// As the reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Packed => "packed",
            Placement::Scattered => "scattered over the units",
            Placement::Fragmented => "fragmented after churn",
        }
    }
}
