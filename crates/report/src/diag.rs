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
