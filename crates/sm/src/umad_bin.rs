//! `rdmalab-sm-umad`: the umad SM driver without the CLI's dependencies, for the
//! crate's ibsim tests and the bench script. Users run `rdmalab sm run --umad`, which
//! calls the same library code ([`sm::umad_daemon::run_umad`]).
//!
//! ```text
//! rdmalab-sm-umad [--ca NAME] [--port N] [--once|--daemon] [--priority P]
//!                 [--engine LIST] [--lmc N] [--max-smps N] [--light-ms MS] [--poll-ms MS]
//!                 [--dump DIR] [--partitions FILE]
//! ```

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sm::routing::EngineKind;
use sm::umad::UmadOptions;
use sm::umad_daemon::{DaemonOptions, Event, event_line, install_stop_handler, run_umad, write_sweep_dumps};

fn parse() -> Result<(UmadOptions, DaemonOptions, Option<std::path::PathBuf>), String> {
    let mut u = UmadOptions::default();
    let mut d = DaemonOptions {
        once: true,
        ..Default::default()
    };
    let mut dump = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let num = |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name}: {v:?} is not a number"));
        match a.as_str() {
            "--ca" => u.ca = Some(val("--ca")?),
            "--port" => u.port = num("--port", val("--port")?)? as u8,
            "--once" => d.once = true,
            "--daemon" => d.once = false,
            "--priority" => {
                let p = num("--priority", val("--priority")?)?;
                if p > 15 {
                    return Err(format!("--priority {p} is out of range (0-15)"));
                }
                d.priority = p as u8;
            }
            "--engine" => d.sweep.engines = EngineKind::parse_list(&val("--engine")?)?,
            "--lmc" => d.sweep.lmc = num("--lmc", val("--lmc")?)? as u8,
            "--max-smps" => d.sweep.max_in_flight = num("--max-smps", val("--max-smps")?)? as usize,
            "--light-ms" => d.light_interval = Duration::from_millis(num("--light-ms", val("--light-ms")?)?),
            "--poll-ms" => d.poll_interval = Duration::from_millis(num("--poll-ms", val("--poll-ms")?)?),
            "--dump" => dump = Some(val("--dump")?.into()),
            "--no-validate" => d.sweep.validate = false,
            "--partitions" => {
                let path = val("--partitions")?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
                let conf = sm::partitions::parse(&text, &path).map_err(|e| e.to_string())?;
                d.sweep.partitions = Some(std::sync::Arc::new(conf));
            }
            x => return Err(format!("unknown argument {x:?}")),
        }
    }
    Ok((u, d, dump))
}

fn main() -> ExitCode {
    let (u, d, dump) = match parse() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("rdmalab-sm-umad: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = install_stop_handler();
    let t0 = std::time::Instant::now();
    let mut dump_err = None;
    let res = run_umad(
        u,
        &d,
        &|| stop.load(Ordering::SeqCst),
        &mut |p| {
            println!(
                "port {}/{} GUID {} LID {} state {}",
                p.ca, p.port, p.port_guid, p.lid, p.state
            )
        },
        &mut |e| {
            // Dumps first, so that whoever reads the log line finds them written.
            if let (Event::Sweep { report, sm }, Some(dir)) = (&e, &dump)
                && let Err(err) = write_sweep_dumps(dir, sm, report)
            {
                dump_err = Some(format!("{}: {err}", dir.display()));
            }
            println!("[{:9.3} s] {}", t0.elapsed().as_secs_f64(), event_line(&e));
        },
    );
    match res {
        Ok((out, _)) => {
            println!(
                "exit: state {} after {} heavy and {} light sweeps{}",
                sm::umad_daemon::state_name(out.state),
                out.heavy_sweeps,
                out.light_sweeps,
                if out.subnet_up { ", subnet up" } else { "" }
            );
            if let Some(e) = dump_err {
                eprintln!("rdmalab-sm-umad: cannot write dumps to {e}");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rdmalab-sm-umad: {e}");
            ExitCode::from(1)
        }
    }
}
