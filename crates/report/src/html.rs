//! A self-contained HTML document: inline CSS, inline SVG, no scripts, no
//! external requests — it opens from disk, from an e-mail attachment or a CI
//! artifact store the same way.

use std::fmt::Write;

use crate::svg::Chart;

/// A table cell's emphasis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Bad,
    Warn,
}

/// A table for the HTML report.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub id: String,
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<(String, Tone)>>,
}

/// One block of the document.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Heading(String),
    Paragraph(String),
    /// A bulleted list.
    List(Vec<String>),
    Table(Table),
    Chart(Chart),
    /// Preformatted text (terminal output, configuration).
    Pre(String),
}

/// The whole document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub title: String,
    pub subtitle: String,
    pub blocks: Vec<Block>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}\
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
.sub{color:#666;margin-top:0}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}caption{text-align:left;font-weight:600;padding:.3rem 0}\
th,td{border:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}th{background:#f4f4f4}\
td.good{background:#e6f4ea}td.bad{background:#fce8e6}td.warn{background:#fef7e0}\
svg.chart{display:block;margin:1rem 0;width:100%;height:auto;font-family:inherit}pre{background:#f7f7f7;padding:.8rem;overflow:auto;font-size:.85rem}";

impl Document {
    /// Render the complete page.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>\n<h1>{}</h1><p class=\"sub\">{}</p>\n",
            esc(&self.title),
            esc(&self.title),
            esc(&self.subtitle)
        );
        for b in &self.blocks {
            match b {
                Block::Heading(h) => {
                    let _ = writeln!(o, "<h2>{}</h2>", esc(h));
                }
                Block::Paragraph(p) => {
                    let _ = writeln!(o, "<p>{}</p>", esc(p));
                }
                Block::List(items) => {
                    o.push_str("<ul>");
                    for i in items {
                        let _ = write!(o, "<li>{}</li>", esc(i));
                    }
                    o.push_str("</ul>\n");
                }
                Block::Pre(t) => {
                    let _ = writeln!(o, "<pre>{}</pre>", esc(t));
                }
                Block::Chart(c) => {
                    o.push_str(&c.render());
                    o.push('\n');
                }
                Block::Table(t) => {
                    let _ = write!(
                        o,
                        "<table id=\"{}\"><caption>{}</caption><thead><tr>",
                        esc(&t.id),
                        esc(&t.caption)
                    );
                    for h in &t.header {
                        let _ = write!(o, "<th>{}</th>", esc(h));
                    }
                    o.push_str("</tr></thead><tbody>");
                    for r in &t.rows {
                        o.push_str("<tr>");
                        for (cell, tone) in r {
                            let class = match tone {
                                Tone::Plain => "",
                                Tone::Good => " class=\"good\"",
                                Tone::Bad => " class=\"bad\"",
                                Tone::Warn => " class=\"warn\"",
                            };
                            let _ = write!(o, "<td{class}>{}</td>", esc(cell));
                        }
                        o.push_str("</tr>");
                    }
                    o.push_str("</tbody></table>\n");
                }
            }
        }
        o.push_str("</body></html>\n");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_tables_with_tones_and_escapes() {
        let d = Document {
            title: "A <b> report".into(),
            subtitle: "sub".into(),
            blocks: vec![
                Block::Heading("Results".into()),
                Block::Table(Table {
                    id: "t".into(),
                    caption: "cap".into(),
                    header: vec!["variant".into(), "busbw".into()],
                    rows: vec![vec![("IB".into(), Tone::Good), ("46.1".into(), Tone::Plain)]],
                }),
                Block::List(vec!["x & y".into()]),
            ],
        };
        let h = d.render();
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("<title>A &lt;b&gt; report</title>"));
        assert!(h.contains("<td class=\"good\">IB</td><td>46.1</td>"));
        assert!(h.contains("<li>x &amp; y</li>"));
        assert!(!h.contains("<script"));
    }
}
