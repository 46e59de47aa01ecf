//! `rdmalab diag` and `rdmalab lint`: the checks' and traces' output. The
//! ibdiagnet-style check text, the ibtracert-style trace and the linter's finding
//! lines are formats `diag` defines with its reports (its tests read them); this
//! module picks the form a command asked for and frames it.

use crate::Form;

/// `diag check`: ibdiagnet-style text, or the report as JSON.
pub fn check(r: &diag::ib::CheckReport, form: Form) -> String {
    match form {
        Form::Text => r.render_text(),
        Form::Json => r.render_json() + "\n",
    }
}

/// `diag partitions`: ibdiagnet-style text, or the report as JSON.
pub fn partitions(r: &diag::ib::partitions::PartitionsReport, form: Form) -> String {
    match form {
        Form::Text => r.render_text(),
        Form::Json => r.render_json() + "\n",
    }
}

/// `diag trace`: the ibtracert-style path, or the trace as JSON.
pub fn trace(t: &diag::ib::Trace, form: Form) -> serde_json::Result<String> {
    Ok(match form {
        Form::Text => t.text.clone(),
        Form::Json => serde_json::to_string_pretty(t)? + "\n",
    })
}

/// `diag roce-trace`: each hop with its QoS, or the trace as JSON.
pub fn roce_trace(t: &diag::roce::trace::RoceTrace, form: Form) -> serde_json::Result<String> {
    Ok(match form {
        Form::Text => t.text.clone(),
        Form::Json => serde_json::to_string_pretty(t)? + "\n",
    })
}

/// `lint roce`: one line per finding and a summary, or the report as JSON.
pub fn lint(r: &diag::roce::LintReport, form: Form) -> String {
    match form {
        Form::Text => r.render_text(),
        Form::Json => r.render_json() + "\n",
    }
}

#[cfg(test)]
mod tests {
    use fabric::generate::{LeafSpineParams, leaf_spine};

    use super::*;

    /// A radix-4 leaf–spine routed by ftree.
    fn routed() -> (fabric::Fabric, sm::RoutingTables) {
        let f = leaf_spine(&LeafSpineParams {
            radix: 4,
            ..Default::default()
        })
        .unwrap();
        let o = sm::run::RunOptions {
            engines: vec![sm::routing::EngineKind::Ftree],
            ..Default::default()
        };
        let (t, _) = sm::run::run(&f, &o).unwrap();
        (f, t)
    }

    #[test]
    fn check_text_counts_paths_and_json_parses() {
        let (f, t) = routed();
        let r = diag::ib::check(&f, &t, vec!["topology ls4".into()], Vec::new(), &Default::default());
        let text = check(&r, Form::Text);
        assert!(text.starts_with("-I- Input: topology ls4\n"), "{text}");
        assert!(
            text.contains("-I- CA-to-CA paths: 56 checked, 0 unreachable, 0 non-minimal, max 4 hops"),
            "{text}"
        );
        assert!(
            text.ends_with("-I- Summary: 0 error(s), 0 warning(s), 0 info\n"),
            "{text}"
        );
        insta::assert_snapshot!(text);
        let j = check(&r, Form::Json);
        assert!(j.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert!(v.is_object(), "{j}");
    }

    #[test]
    fn trace_is_ibtracert_text_or_json_with_the_hops() {
        let (f, t) = routed();
        let tr = diag::ib::trace(&f, &t, "1", "5").unwrap();
        assert_eq!(
            trace(&tr, Form::Text).unwrap(),
            "From switch {0x0002c90301000000} portnum 0 lid 1-1 \"leaf0\"\n\
             [4] -> switch port {0x0002c90301000005}[1] lid 5-5 \"spine1\"\n\
             To switch {0x0002c90301000005} portnum 0 lid 5-5 \"spine1\"\n"
        );
        let v: serde_json::Value = serde_json::from_str(&trace(&tr, Form::Json).unwrap()).unwrap();
        assert_eq!(v["dst_lid"], 5);
        assert_eq!(v["hops"][0]["node"], "spine1");
        assert_eq!(v["arrived"], true);
    }

    #[test]
    fn lint_of_the_clean_example_finds_nothing() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/roce/clean");
        let files: Vec<_> = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"]
            .iter()
            .map(|f| dir.join(f))
            .collect();
        let r = diag::roce::lint_paths(&files, &Default::default()).unwrap();
        assert_eq!(
            lint(&r, Form::Text),
            "lint roce: 3 file(s), RDMA DSCP 26, CNP DSCP 48: 0 error(s), 0 warning(s), 0 info\n"
        );
        let v: serde_json::Value = serde_json::from_str(&lint(&r, Form::Json)).unwrap();
        assert!(v.is_object());
    }
}
