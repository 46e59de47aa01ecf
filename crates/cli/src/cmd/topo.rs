//! `rdmalab topo …`: generate, inspect and convert cluster topologies
//! (the library side is `crates/fabric`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use fabric::format::{self, Format};
use fabric::generate::{
    Cabling, FatTree3Params, LeafSpineParams, MultiPodParams, RailParams, SuperPodParams, TorusParams, fat_tree3,
    leaf_spine, multi_pod, rail, superpod, torus,
};
use fabric::summary::summarize;
use fabric::{Fabric, LinkRate, ReadOptions};

use super::CliError;

/// Topology subcommands.
#[derive(Debug, Subcommand)]
pub enum TopoCmd {
    /// Generate a cluster fabric and write it as a topology file.
    ///
    /// Example: `rdmalab topo gen fat-tree --radix 36 --format ibsim -o ft648.net`
    Gen(GenArgs),
    /// Summarise a topology: counts, tiers, oversubscription, bisection, diameter,
    /// bill of materials. Reads FILE, or generates with --gen.
    Info(InfoArgs),
    /// Convert a topology file to another format.
    Convert(ConvertArgs),
}

/// The generators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// k-ary fat tree: 2 tiers (radix 36 → 648 hosts) or 3 with --tiers 3
    /// (radix 36 --pods 8 → 2,592 hosts; radix 64 → 65,536).
    FatTree,
    /// 2-tier leaf–spine with any oversubscription.
    LeafSpine,
    /// Rail-optimized GPU pod: --servers N × --rails R NICs, one leaf per rail.
    Rail,
    /// 3-D torus: --dims X,Y,Z.
    Torus,
    /// Leaf–spine pods joined by a core tier over long (km) cables.
    MultiPod,
    /// DGX SuperPOD-style rail-optimized scalable units: --sus N units of --servers
    /// (default 32) × --rails (8), one leaf per rail per unit; two tiers up to the
    /// spines' reach, three (pods of units, a core tier) beyond (--sus 128 with
    /// radix 64 → 32,768 GPUs).
    Superpod,
}

/// Generator parameters; each applies to the kinds its help names.
#[derive(Debug, Args, Default, Clone)]
pub struct GenParams {
    /// Ports per switch [all kinds; default 36, rail 64, torus 6 + hosts].
    #[arg(long)]
    pub radix: Option<u32>,
    /// Link rate, e.g. 4xNDR, 4xHDR, 400G [all; default 4xNDR].
    #[arg(long)]
    pub rate: Option<LinkRate>,
    /// Tiers of a fat tree: 2 or 3 [fat-tree; default 2].
    #[arg(long)]
    pub tiers: Option<u8>,
    /// Pods [fat-tree 3 tiers (default k), multi-pod (default 2)].
    #[arg(long)]
    pub pods: Option<u32>,
    /// Hosts per leaf [fat-tree, leaf-spine, multi-pod].
    #[arg(long)]
    pub hosts_per_leaf: Option<u32>,
    /// Host ports : uplinks at a leaf, e.g. 3 for 3:1 [leaf-spine; default 1].
    #[arg(long)]
    pub oversubscription: Option<f64>,
    /// Leaves [fat-tree 2 tiers, leaf-spine; default: all the spines can take].
    #[arg(long)]
    pub leaves: Option<u32>,
    /// Spines [leaf-spine, rail].
    #[arg(long)]
    pub spines: Option<u32>,
    /// GPU servers [rail; default 16] or servers per scalable unit [superpod; default 32].
    #[arg(long)]
    pub servers: Option<u32>,
    /// NICs (rails) per server [rail, superpod; default 8].
    #[arg(long)]
    pub rails: Option<u32>,
    /// Uplinks per leaf [rail, superpod; default = servers].
    #[arg(long)]
    pub uplinks: Option<u32>,
    /// Scalable units [superpod; default 4].
    #[arg(long)]
    pub sus: Option<u32>,
    /// Independent planes, a NIC port on each [superpod; default 1; 2 = Alibaba HPN's dual plane].
    #[arg(long)]
    pub planes: Option<u32>,
    /// Two ToRs per rail and unit, every NIC cabled to both [superpod].
    #[arg(long)]
    pub dual_tor: bool,
    /// Torus size X,Y,Z [torus; default 4,4,4].
    #[arg(long, value_delimiter = ',')]
    pub dims: Option<Vec<u32>>,
    /// Hosts per switch [torus; default 1].
    #[arg(long)]
    pub hosts_per_switch: Option<u32>,
    /// Leaves per pod [multi-pod; default 18].
    #[arg(long)]
    pub leaves_per_pod: Option<u32>,
    /// Spines per pod [multi-pod; default 18].
    #[arg(long)]
    pub spines_per_pod: Option<u32>,
    /// Uplinks per spine to the core [multi-pod; default 9].
    #[arg(long)]
    pub spine_uplinks: Option<u32>,
    /// Spine–core cable length in metres [multi-pod; default 2000].
    #[arg(long)]
    pub inter_pod_m: Option<f64>,
    /// Host–leaf cable length in metres [default 2].
    #[arg(long)]
    pub host_leaf_m: Option<f64>,
    /// Leaf–spine cable length in metres [default 20].
    #[arg(long)]
    pub leaf_spine_m: Option<f64>,
    /// Spine–core cable length in metres [fat-tree 3 tiers; default 50].
    #[arg(long)]
    pub spine_core_m: Option<f64>,
    /// Switch–switch cable length in metres [torus; default 5].
    #[arg(long)]
    pub link_m: Option<f64>,
}

impl GenParams {
    /// Every flag and whether it was given.
    fn given(&self) -> [(&'static str, bool); 24] {
        [
            ("--radix", self.radix.is_some()),
            ("--rate", self.rate.is_some()),
            ("--tiers", self.tiers.is_some()),
            ("--pods", self.pods.is_some()),
            ("--hosts-per-leaf", self.hosts_per_leaf.is_some()),
            ("--oversubscription", self.oversubscription.is_some()),
            ("--leaves", self.leaves.is_some()),
            ("--spines", self.spines.is_some()),
            ("--servers", self.servers.is_some()),
            ("--rails", self.rails.is_some()),
            ("--uplinks", self.uplinks.is_some()),
            ("--sus", self.sus.is_some()),
            ("--planes", self.planes.is_some()),
            ("--dual-tor", self.dual_tor),
            ("--dims", self.dims.is_some()),
            ("--hosts-per-switch", self.hosts_per_switch.is_some()),
            ("--leaves-per-pod", self.leaves_per_pod.is_some()),
            ("--spines-per-pod", self.spines_per_pod.is_some()),
            ("--spine-uplinks", self.spine_uplinks.is_some()),
            ("--inter-pod-m", self.inter_pod_m.is_some()),
            ("--host-leaf-m", self.host_leaf_m.is_some()),
            ("--leaf-spine-m", self.leaf_spine_m.is_some()),
            ("--spine-core-m", self.spine_core_m.is_some()),
            ("--link-m", self.link_m.is_some()),
        ]
    }

    /// Flags given that `kind` does not use.
    fn unused_for(&self, kind: Kind, tiers: u8) -> Vec<&'static str> {
        let given = self.given();
        let allowed: &[&str] = match (kind, tiers) {
            (Kind::FatTree, 3) => &[
                "--radix",
                "--rate",
                "--tiers",
                "--pods",
                "--hosts-per-leaf",
                "--host-leaf-m",
                "--leaf-spine-m",
                "--spine-core-m",
            ],
            (Kind::FatTree, _) => &[
                "--radix",
                "--rate",
                "--tiers",
                "--leaves",
                "--host-leaf-m",
                "--leaf-spine-m",
            ],
            (Kind::LeafSpine, _) => &[
                "--radix",
                "--rate",
                "--hosts-per-leaf",
                "--oversubscription",
                "--leaves",
                "--spines",
                "--host-leaf-m",
                "--leaf-spine-m",
            ],
            (Kind::Rail, _) => &[
                "--radix",
                "--rate",
                "--servers",
                "--rails",
                "--uplinks",
                "--spines",
                "--host-leaf-m",
                "--leaf-spine-m",
            ],
            (Kind::Superpod, _) => &[
                "--radix",
                "--rate",
                "--sus",
                "--servers",
                "--rails",
                "--uplinks",
                "--planes",
                "--dual-tor",
                "--host-leaf-m",
                "--leaf-spine-m",
                "--spine-core-m",
            ],
            (Kind::Torus, _) => &[
                "--radix",
                "--rate",
                "--dims",
                "--hosts-per-switch",
                "--link-m",
                "--host-leaf-m",
            ],
            (Kind::MultiPod, _) => &[
                "--radix",
                "--rate",
                "--pods",
                "--leaves-per-pod",
                "--hosts-per-leaf",
                "--spines-per-pod",
                "--spine-uplinks",
                "--inter-pod-m",
                "--host-leaf-m",
                "--leaf-spine-m",
            ],
        };
        given
            .iter()
            .filter(|(f, g)| *g && !allowed.contains(f))
            .map(|(f, _)| *f)
            .collect()
    }

    fn cabling(&self) -> Cabling {
        let d = Cabling::default();
        Cabling {
            host_leaf_m: self.host_leaf_m.unwrap_or(d.host_leaf_m),
            leaf_spine_m: self.leaf_spine_m.unwrap_or(d.leaf_spine_m),
            spine_core_m: self.spine_core_m.unwrap_or(d.spine_core_m),
        }
    }

    /// Build the fabric.
    pub fn build(&self, kind: Kind) -> anyhow::Result<Fabric> {
        let tiers = self.tiers.unwrap_or(2);
        if kind == Kind::FatTree && !(2..=3).contains(&tiers) {
            bail!("--tiers {tiers}: a fat tree here has 2 or 3 tiers");
        }
        let unused = self.unused_for(kind, tiers);
        if !unused.is_empty() {
            let name = kind
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            let what = if kind == Kind::FatTree {
                format!("a {tiers}-tier fat-tree")
            } else {
                name
            };
            let verb = if unused.len() == 1 { "does" } else { "do" };
            bail!(
                "{} {verb} not apply to {what} (see `rdmalab topo gen --help`)",
                unused.join(", ")
            );
        }
        let rate = self.rate.unwrap_or(LinkRate::NDR_4X);
        let cabling = self.cabling();
        let f = match kind {
            Kind::FatTree if tiers == 3 => fat_tree3(&FatTree3Params {
                radix: self.radix.unwrap_or(36),
                pods: self.pods,
                hosts_per_leaf: self.hosts_per_leaf,
                rate,
                cabling,
            }),
            Kind::FatTree => leaf_spine(&LeafSpineParams {
                radix: self.radix.unwrap_or(36),
                leaves: self.leaves,
                rate,
                cabling,
                ..Default::default()
            }),
            Kind::LeafSpine => leaf_spine(&LeafSpineParams {
                radix: self.radix.unwrap_or(36),
                hosts_per_leaf: self.hosts_per_leaf,
                oversubscription: self.oversubscription.unwrap_or(1.0),
                spines: self.spines,
                leaves: self.leaves,
                rate,
                cabling,
            }),
            Kind::Rail => {
                let d = RailParams::default();
                rail(&RailParams {
                    servers: self.servers.unwrap_or(d.servers),
                    rails: self.rails.unwrap_or(d.rails),
                    radix: self.radix.unwrap_or(d.radix),
                    uplinks: self.uplinks,
                    spines: self.spines,
                    rate,
                    cabling,
                })
            }
            Kind::Superpod => {
                let d = SuperPodParams::default();
                superpod(&SuperPodParams {
                    sus: self.sus.unwrap_or(d.sus),
                    servers_per_su: self.servers.unwrap_or(d.servers_per_su),
                    rails: self.rails.unwrap_or(d.rails),
                    radix: self.radix.unwrap_or(d.radix),
                    uplinks: self.uplinks,
                    rate,
                    cabling,
                    planes: self.planes.unwrap_or(d.planes),
                    dual_tor: self.dual_tor,
                })
            }
            Kind::Torus => {
                let d = TorusParams::default();
                let dims = match self.dims.as_deref() {
                    Some(&[x, y, z]) => [x, y, z],
                    Some(v) => bail!("--dims takes three sizes X,Y,Z, got {} value(s)", v.len()),
                    None => d.dims,
                };
                torus(&TorusParams {
                    dims,
                    hosts_per_switch: self.hosts_per_switch.unwrap_or(d.hosts_per_switch),
                    radix: self.radix,
                    rate,
                    link_m: self.link_m.unwrap_or(d.link_m),
                    host_m: self.host_leaf_m.unwrap_or(d.host_m),
                })
            }
            Kind::MultiPod => {
                let d = MultiPodParams::default();
                multi_pod(&MultiPodParams {
                    pods: self.pods.unwrap_or(d.pods),
                    radix: self.radix.unwrap_or(d.radix),
                    leaves_per_pod: self.leaves_per_pod.unwrap_or(d.leaves_per_pod),
                    hosts_per_leaf: self.hosts_per_leaf.unwrap_or(d.hosts_per_leaf),
                    spines_per_pod: self.spines_per_pod.unwrap_or(d.spines_per_pod),
                    spine_uplinks: self.spine_uplinks.unwrap_or(d.spine_uplinks),
                    inter_pod_m: self.inter_pod_m.unwrap_or(d.inter_pod_m),
                    rate,
                    cabling,
                })
            }
        };
        f.with_context(|| {
            format!(
                "failed to generate a {}",
                kind.to_possible_value()
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            )
        })
    }
}

/// `topo gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// What to generate.
    #[arg(value_enum)]
    pub kind: Kind,
    #[command(flatten)]
    pub params: GenParams,
    /// Output format.
    #[arg(long, short = 'f', default_value = "json")]
    pub format: Format,
    /// Output file (default: standard output).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `topo info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Topology file (format detected from content unless --from is given).
    #[arg(required_unless_present = "gen_kind", conflicts_with = "gen_kind")]
    pub file: Option<PathBuf>,
    /// Summarise a generated fabric instead of a file.
    #[arg(long = "gen", value_enum)]
    pub gen_kind: Option<Kind>,
    #[command(flatten)]
    pub params: GenParams,
    /// Read FILE as this format instead of detecting it.
    #[arg(long)]
    pub from: Option<Format>,
    /// Cable length in metres for links the file gives none (ibnetdiscover never does).
    #[arg(long, default_value_t = 2.0)]
    pub default_length_m: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `topo convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input topology file.
    pub input: PathBuf,
    /// Output format.
    #[arg(long)]
    pub to: Format,
    /// Read the input as this format instead of detecting it.
    #[arg(long)]
    pub from: Option<Format>,
    /// Cable length in metres for links the input gives none (ibnetdiscover never does).
    #[arg(long, default_value_t = 2.0)]
    pub default_length_m: f64,
    /// Output file (default: standard output).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Overwrite the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

impl TopoCmd {
    /// Run the subcommand.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            TopoCmd::Gen(a) => {
                let f = a.params.build(a.kind)?;
                let text = format::write(&f, a.format).context("failed to write the topology")?;
                emit(a.output.as_deref(), a.force, &text)?;
            }
            TopoCmd::Info(a) => {
                let f = match (&a.file, a.gen_kind) {
                    (_, Some(kind)) => a.params.build(kind)?,
                    (Some(path), None) => {
                        if a.params.given().iter().any(|(_, g)| *g) {
                            return Err(CliError::bad_input("generator flags need --gen <kind>".into()));
                        }
                        read(path, a.from, a.default_length_m)?
                    }
                    (None, None) => return Err(CliError::bad_input("give a FILE or --gen <kind>".into())),
                };
                let s = summarize(&f);
                let text = if a.json {
                    report::json(&s).context("failed to encode the summary")?
                } else {
                    report::topo::summary_text(&s)
                };
                emit(None, false, &text)?;
            }
            TopoCmd::Convert(a) => {
                let f = read(&a.input, a.from, a.default_length_m)?;
                let text = format::write(&f, a.to).context("failed to write the topology")?;
                emit(a.output.as_deref(), a.force, &text)?;
            }
        }
        Ok(())
    }
}

fn read(path: &Path, from: Option<Format>, default_length_m: f64) -> anyhow::Result<Fabric> {
    if !(default_length_m.is_finite() && default_length_m >= 0.0) {
        bail!("--default-length-m {default_length_m}: expected a non-negative length in metres");
    }
    let opts = ReadOptions { default_length_m };
    let (f, _) = format::read_file(path, from, &opts).context("failed to read the topology")?;
    Ok(f)
}

/// Write to `out` (never silently replacing a file unless `force`) or to stdout.
fn emit(out: Option<&Path>, force: bool, text: &str) -> anyhow::Result<()> {
    match out {
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(text.as_bytes())?;
            so.flush()?;
        }
        Some(p) => {
            let mut file = if force {
                std::fs::File::create(p)
            } else {
                std::fs::OpenOptions::new().write(true).create_new(true).open(p)
            }
            .with_context(|| {
                if p.exists() && !force {
                    format!("{} already exists (pass --force to overwrite it)", p.display())
                } else {
                    format!("cannot create {}", p.display())
                }
            })?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    #[derive(Debug, Parser)]
    struct T {
        #[command(subcommand)]
        c: TopoCmd,
    }

    #[test]
    fn clap_definition_is_valid() {
        T::command().debug_assert();
    }

    #[test]
    fn flags_that_do_not_apply_are_refused() {
        let t = T::try_parse_from(["t", "gen", "torus", "--rails", "4"]).unwrap();
        let TopoCmd::Gen(a) = t.c else { panic!() };
        let e = a.params.build(a.kind).unwrap_err().to_string();
        assert!(e.contains("--rails"), "{e}");
    }

    #[test]
    fn readme_command_summarises_the_648_host_tree() {
        let t = T::try_parse_from(["t", "info", "--gen", "fat-tree", "--radix", "36"]).unwrap();
        let TopoCmd::Info(a) = t.c else { panic!() };
        let s = summarize(&a.params.build(a.gen_kind.unwrap()).unwrap());
        assert_eq!(s.nodes.cas, 648);
        let text = report::topo::summary_text(&s);
        assert!(text.contains("54 × 36-port"), "{text}");
    }
}
