//! `rdmalab advise`: the decision table and TCO, from a comparison's measured
//! evidence (results.json) and the team's answers, given as flags or through a
//! short questionnaire.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lab::advisor::{Answers, Budget, Estate, Evidence, Skills};
use lab::{CompareResults, PriceTable, Scenario, Tech};

use super::CliError;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SkillsArg {
    Infiniband,
    Ethernet,
    Both,
    Neither,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EstateArg {
    None,
    Some,
    Large,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BudgetArg {
    Tight,
    Normal,
    Ample,
}

/// Recommend InfiniBand or RoCEv2 from measured evidence, your answers and a TCO.
#[derive(Debug, Args)]
pub struct AdviseCmd {
    /// results.json written by `rdmalab compare` (its measurements fill the table).
    /// Without it the table shows only the TCO and your answers.
    #[arg(long)]
    results: Option<PathBuf>,
    /// Scenario whose cluster is priced (default: the one in --results, else the built-in default).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// What the network team knows.
    #[arg(long, value_enum)]
    skills: Option<SkillsArg>,
    /// How much Ethernet the organisation already runs.
    #[arg(long, value_enum)]
    estate: Option<EstateArg>,
    /// Budget pressure.
    #[arg(long, value_enum)]
    budget: Option<BudgetArg>,
    /// Sites the training job must span.
    #[arg(long)]
    sites: Option<u32>,
    /// Price table (TOML; keys as `--show-prices` prints them) overriding the defaults.
    #[arg(long)]
    prices: Option<PathBuf>,
    /// Print the price table in use and exit.
    #[arg(long)]
    show_prices: bool,
    /// Ask the questions on the terminal.
    #[arg(long, short)]
    interactive: bool,
    /// Print the advice as JSON.
    #[arg(long)]
    json: bool,
}

fn ask<R: BufRead, W: Write>(
    input: &mut R,
    out: &mut W,
    q: &str,
    choices: &[&str],
    default: &str,
) -> anyhow::Result<String> {
    loop {
        if choices.is_empty() {
            write!(out, "{q} (default {default}): ")?;
        } else {
            write!(out, "{q} [{}] (default {default}): ", choices.join("/"))?;
        }
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(default.to_string());
        }
        let a = line.trim().to_ascii_lowercase();
        if a.is_empty() {
            return Ok(default.to_string());
        }
        if choices.is_empty() || choices.contains(&a.as_str()) {
            return Ok(a);
        }
        writeln!(out, "  please answer one of: {}", choices.join(", "))?;
    }
}

impl AdviseCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        let results: Option<CompareResults> =
            match &self.results {
                Some(p) => {
                    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                    Some(serde_json::from_str(&text).with_context(|| {
                        format!("{} is not a results.json written by `rdmalab compare`", p.display())
                    })?)
                }
                None => None,
            };
        let scenario = match (&self.scenario, &results) {
            (Some(p), _) => lab::ScenarioFile::load(p)?.comparison(p)?,
            (None, Some(r)) => r.spec.clone(),
            (None, None) => Scenario::default_rail(),
        };
        let prices = match &self.prices {
            Some(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                PriceTable::from_toml(&text).with_context(|| format!("{}: not a valid price table", p.display()))?
            }
            None => scenario.prices.clone(),
        };
        if self.show_prices {
            out!("{}", prices.to_toml()?);
            return Ok(());
        }
        let mut answers: Answers = scenario.advisor.clone();
        if self.interactive {
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            let mut out = std::io::stderr();
            let s = ask(
                &mut input,
                &mut out,
                "What does your network team run today?",
                &["infiniband", "ethernet", "both", "neither"],
                "ethernet",
            )?;
            answers.skills = match s.as_str() {
                "infiniband" => Skills::Infiniband,
                "both" => Skills::Both,
                "neither" => Skills::Neither,
                _ => Skills::Ethernet,
            };
            let e = ask(
                &mut input,
                &mut out,
                "How much Ethernet do you already operate?",
                &["none", "some", "large"],
                "some",
            )?;
            answers.ethernet_estate = match e.as_str() {
                "none" => Estate::None,
                "large" => Estate::Large,
                _ => Estate::Some,
            };
            let b = ask(
                &mut input,
                &mut out,
                "Budget pressure?",
                &["tight", "normal", "ample"],
                "normal",
            )?;
            answers.budget = match b.as_str() {
                "tight" => Budget::Tight,
                "ample" => Budget::Ample,
                _ => Budget::Normal,
            };
            loop {
                let n = ask(
                    &mut input,
                    &mut out,
                    "How many sites must one training job span?",
                    &[],
                    "1",
                )?;
                match n.parse::<u32>() {
                    Ok(v) if v >= 1 => {
                        answers.sites = v;
                        break;
                    }
                    _ => writeln!(out, "  please answer a whole number of sites, 1 or more")?,
                }
            }
        }
        if let Some(s) = self.skills {
            answers.skills = match s {
                SkillsArg::Infiniband => Skills::Infiniband,
                SkillsArg::Ethernet => Skills::Ethernet,
                SkillsArg::Both => Skills::Both,
                SkillsArg::Neither => Skills::Neither,
            };
        }
        if let Some(e) = self.estate {
            answers.ethernet_estate = match e {
                EstateArg::None => Estate::None,
                EstateArg::Some => Estate::Some,
                EstateArg::Large => Estate::Large,
            };
        }
        if let Some(b) = self.budget {
            answers.budget = match b {
                BudgetArg::Tight => Budget::Tight,
                BudgetArg::Normal => Budget::Normal,
                BudgetArg::Ample => Budget::Ample,
            };
        }
        if let Some(n) = self.sites {
            if n == 0 {
                return Err(CliError::bad_input("--sites must be 1 or more".into()));
            }
            answers.sites = n;
        }
        let evidence: Vec<Evidence> = results.as_ref().map(lab::compare::evidence).unwrap_or_default();
        let fabric =
            lab::cluster::build(&scenario.cluster, Tech::InfiniBand).context("building the scenario's cluster")?;
        let advice = lab::advise(&answers, &evidence, &fabric, &prices);
        if self.json {
            out!("{}", report::json(&advice)?);
        } else {
            out!("{}", report::compare::advice_text(&advice, results.is_some()));
        }
        Ok(())
    }
}
