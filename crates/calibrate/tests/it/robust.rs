//! Malformed input never panics: the fixtures cut, truncated and with fields
//! replaced by hostile tokens either parse and fit, or give an error naming
//! the file.

use proptest::prelude::*;

use crate::{IB, ROCE, fixture};

const TOKENS: [&str; 12] = [
    "",
    "x",
    "-1",
    "-0.5",
    "nan",
    "inf",
    "1e400",
    "0",
    "0.00",
    "18446744073709551616",
    "N/A",
    "#",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Truncate(usize, usize),
    Token(usize, usize, usize),
    Duplicate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), 0usize..120).prop_map(|(l, k)| Edit::Truncate(l, k)),
        (any::<usize>(), 0usize..16, 0..TOKENS.len()).prop_map(|(l, j, t)| Edit::Token(l, j, t)),
        any::<usize>().prop_map(Edit::Duplicate),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        if lines.is_empty() {
            break;
        }
        let n = lines.len();
        match *e {
            Edit::Delete(l) => {
                lines.remove(l % n);
            }
            Edit::Truncate(l, k) => {
                let line = &mut lines[l % n];
                let cut = line.char_indices().nth(k).map_or(line.len(), |(i, _)| i);
                line.truncate(cut);
            }
            Edit::Token(l, j, t) => {
                let line = &mut lines[l % n];
                let mut toks: Vec<&str> = line.split_whitespace().collect();
                if !toks.is_empty() {
                    let j = j % toks.len();
                    toks[j] = TOKENS[t];
                    *line = format!(" {}", toks.join("   "));
                }
            }
            Edit::Duplicate(l) => {
                let line = lines[l % n].clone();
                lines.insert(l % n, line);
            }
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn edited_fixtures_parse_or_fail_without_panicking(
        file in 0usize..(IB.len() + ROCE.len()),
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let rel = IB.iter().chain(ROCE.iter()).nth(file).unwrap();
        let text = std::fs::read_to_string(fixture(rel)).unwrap();
        let bad = apply(&text, &edits);
        match calibrate::parse(rel, &bad) {
            Ok(input) => {
                let opts = calibrate::Options {
                    fabric: Some(calibrate::Fabric::Roce),
                    ..calibrate::Options::default()
                };
                match calibrate::calibrate(std::slice::from_ref(&input), &opts) {
                    // whatever is fitted reads back
                    Ok(c) => {
                        let text = c.calibration.to_toml();
                        let back = calibrate::Calibration::from_toml("c.toml", &text);
                        prop_assert!(back.is_ok(), "{:?}\n{text}", back.err());
                    }
                    Err(e) => prop_assert!(e.to_string().contains(rel), "{e}"),
                }
            }
            Err(e) => prop_assert!(e.to_string().contains(rel), "{e}"),
        }
    }
}
