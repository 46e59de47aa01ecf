//! OpenSM's `partitions.conf`, read with OpenSM's grammar and quirks and a file:line
//! error for anything it cannot read.
//!
//! Grammar (reference `failures-isolation-sweeps.md` §1.2, from OpenSM
//! `doc/partition-config.txt` and the parser `opensm/osm_prtn_config.c`):
//!
//! ```text
//! statement  := header ":" properties ";"          # header on ONE line, before ':'
//! header     := [name] ["=" pkey] { "," flag }
//! flag       := ipoib | indx0 | defmember=full|limited|both | rate=N | mtu=N | sl=N
//!             | scope=N | Q_Key=N | TClass=N | FlowLabel=N
//! properties := item { "," item }                   # may continue over several lines
//! item       := (ALL | ALL_CAS | ALL_SWITCHES | ALL_ROUTERS | SELF | NONE | guid)
//!               ["=" full|limited|both]  |  mgid=<gid>[,flags]  (rest of the line)
//! ```
//!
//! Kept from OpenSM: `#` comments to the end of the line; several statements per line;
//! keywords and flags matched as prefixes (`limi` = `limited`); numbers as C `strtoul`
//! base 0 reads them (`0x` hex, leading `0` octal, else decimal); bit 15 of the P_Key
//! cleared (`osm_prtn_make_new`: `pkey &= ~0x8000`); a name starting with a digit and
//! no `=` is the P_Key (`0x8001 : ALL;`); no P_Key gives the lowest unused one from 1
//! up (`generate_pkey`, `osm_prtn.c:294`); `defmember` defaults to limited.
//!
//! Stricter than OpenSM, because each of these silently changes who can talk to whom
//! there: a P_Key defined twice (OpenSM merges the two) is an error naming both lines;
//! an unknown flag or membership word (OpenSM: a warning, then limited) is an error;
//! any error stops the read (OpenSM then falls back to `Default=0x7fff : ALL=full`,
//! which removes all isolation — the caller decides what to do instead).

use fabric::Guid;
use thiserror::Error;

use super::{BASE, FULL};

/// Membership of a port in a partition (bit 15 of the P_Key it gets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Membership {
    /// Bit 15 set: may talk to every member.
    Full,
    /// Bit 15 clear: may talk to full members only.
    Limited,
    /// Both entries; OpenSM without `--allow_both_pkeys` (its default, and ours)
    /// programs only the full one (`partition_add_port`).
    Both,
}

impl Membership {
    /// The word as written in the file.
    pub fn name(self) -> &'static str {
        match self {
            Membership::Full => "full",
            Membership::Limited => "limited",
            Membership::Both => "both",
        }
    }
}

/// Which ports an item names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortSpec {
    /// Every end port: CA and router ports and switch port 0.
    All,
    /// Every CA port.
    AllCas,
    /// Port 0 of every switch.
    AllSwitches,
    /// Every router port.
    AllRouters,
    /// The SM's own port.
    SelfPort,
    /// One port by port GUID (a switch: its node GUID, port 0).
    Guid(Guid),
}

/// One member item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub spec: PortSpec,
    pub membership: Membership,
    /// Line of the item in the file.
    pub line: usize,
}

/// One partition statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Free text, for logs.
    pub name: String,
    /// The partition number: bits 0–14 (bit 15 cleared as OpenSM does).
    pub pkey: u16,
    /// The P_Key was generated (none given).
    pub generated: bool,
    /// Line of the header.
    pub line: usize,
    /// `ipoib`: create the IPoIB broadcast group.
    pub ipoib: bool,
    /// `indx0`: put this P_Key at index 0 of every member port.
    pub indx0: bool,
    /// `defmember`: the membership of items without `=…` (default limited).
    pub defmember: Membership,
    /// Multicast group flags (IBTA codes), kept for IPoIB groups.
    pub mtu: Option<u8>,
    pub rate: Option<u8>,
    pub sl: Option<u8>,
    pub scope: Vec<u8>,
    pub qkey: Option<u32>,
    pub tclass: Option<u8>,
    pub flow_label: Option<u32>,
    /// Member items, in file order (`NONE` adds none).
    pub members: Vec<Member>,
    /// `mgid=` lines (the text after `=`) and their line numbers.
    pub mgids: Vec<(String, usize)>,
}

/// A whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionsConf {
    /// The name used in errors.
    pub file: String,
    pub partitions: Vec<Partition>,
}

impl PartitionsConf {
    /// The partition with this number, if defined.
    pub fn get(&self, pkey: u16) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.pkey == pkey & BASE)
    }
}

/// What is wrong at one place of the file.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ErrorKind {
    #[error("expected {expected}, found {found}")]
    Expected { expected: String, found: String },
    #[error("{value} is not a valid P_Key: {why}")]
    BadPkey { value: String, why: &'static str },
    #[error(
        "P_Key {pkey:#06x} is already defined at line {first_line} (partition {first_name:?}); give each partition one statement"
    )]
    DuplicatePkey {
        pkey: u16,
        first_line: usize,
        first_name: String,
    },
    #[error("{flag}={value}: expected {expected}")]
    BadValue {
        flag: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("port GUID {guid} is not a port of the fabric")]
    UnknownGuid { guid: Guid },
    #[error("more than {max} partitions")]
    TooMany { max: usize },
}

/// A `partitions.conf` error: the file, the line and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{file}:{line}: {kind}")]
pub struct PartitionsError {
    pub file: String,
    pub line: usize,
    pub kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Eq,
    Comma,
    Colon,
    Semi,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

fn describe(t: Option<&Token>) -> String {
    match t.map(|t| &t.tok) {
        None => "the end of the file".into(),
        Some(Tok::Word(w)) => format!("{w:?}"),
        Some(Tok::Eq) => "`=`".into(),
        Some(Tok::Comma) => "`,`".into(),
        Some(Tok::Colon) => "`:`".into(),
        Some(Tok::Semi) => "`;`".into(),
    }
}

/// Split into tokens, comments cut. `mgid=` takes the rest of its line up to `;` as
/// one word (a GID holds `:`), as OpenSM's `mgid` handling consumes the line.
fn lex(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.split('#').next().unwrap_or("");
        let b = s.as_bytes();
        let mut k = 0;
        while k < b.len() {
            let c = b[k];
            let single = match c {
                b'=' => Some(Tok::Eq),
                b',' => Some(Tok::Comma),
                b':' => Some(Tok::Colon),
                b';' => Some(Tok::Semi),
                _ => None,
            };
            if let Some(t) = single {
                out.push(Token { tok: t, line });
                k += 1;
                continue;
            }
            if c.is_ascii_whitespace() {
                k += 1;
                continue;
            }
            let start = k;
            while k < b.len() && !b[k].is_ascii_whitespace() && !b"=,:;".contains(&b[k]) {
                k += 1;
            }
            let w = &s[start..k];
            out.push(Token {
                tok: Tok::Word(w.to_string()),
                line,
            });
            if w == "mgid" {
                let rest = s[k..].trim_start();
                if let Some(after) = rest.strip_prefix('=') {
                    let end = after.find(';').unwrap_or(after.len());
                    out.push(Token { tok: Tok::Eq, line });
                    out.push(Token {
                        tok: Tok::Word(after[..end].trim().to_string()),
                        line,
                    });
                    k = s.len() - (after.len() - end);
                }
            }
        }
    }
    out
}

/// A number as C `strtoul(s, &end, 0)` reads it with nothing left over.
pub(crate) fn c_number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// `word` is a prefix of `keyword` (OpenSM: `strncmp(word, keyword, strlen(word))`).
fn is_kw(word: &str, keyword: &str) -> bool {
    !word.is_empty() && keyword.starts_with(word)
}

struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at)
    }

    fn line(&self) -> usize {
        self.peek().or_else(|| self.toks.last()).map_or(1, |t| t.line)
    }

    fn err(&self, line: usize, kind: ErrorKind) -> PartitionsError {
        PartitionsError {
            file: self.file.to_string(),
            line,
            kind,
        }
    }

    fn expected(&self, what: &str) -> PartitionsError {
        self.err(
            self.line(),
            ErrorKind::Expected {
                expected: what.to_string(),
                found: describe(self.peek()),
            },
        )
    }

    fn word(&mut self, what: &str) -> Result<(String, usize), PartitionsError> {
        match self.peek() {
            Some(Token {
                tok: Tok::Word(w),
                line,
            }) => {
                let r = (w.clone(), *line);
                self.at += 1;
                Ok(r)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek().is_some_and(|x| &x.tok == t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// `[= word]` after a key.
    fn value(&mut self, what: &str) -> Result<Option<String>, PartitionsError> {
        if self.eat(&Tok::Eq) {
            Ok(Some(self.word(what)?.0))
        } else {
            Ok(None)
        }
    }

    fn membership(&self, word: &str, line: usize) -> Result<Membership, PartitionsError> {
        if is_kw(word, "full") {
            Ok(Membership::Full)
        } else if is_kw(word, "limited") {
            Ok(Membership::Limited)
        } else if is_kw(word, "both") {
            Ok(Membership::Both)
        } else {
            Err(self.err(
                line,
                ErrorKind::Expected {
                    expected: "full, limited or both".into(),
                    found: format!("{word:?}"),
                },
            ))
        }
    }

    fn pkey(&self, s: &str, line: usize) -> Result<u16, PartitionsError> {
        let bad = |why| {
            self.err(
                line,
                ErrorKind::BadPkey {
                    value: s.to_string(),
                    why,
                },
            )
        };
        let v = c_number(s).ok_or_else(|| bad("expected a number such as 0x8001"))?;
        if v > 0xffff {
            return Err(bad("a P_Key has 16 bits"));
        }
        // Bit 15 is membership, not part of the partition (osm_prtn_make_new clears it).
        let base = v as u16 & BASE;
        if base == 0 && v != 0 {
            // IBA vol. 1 C10-116: a P_Key whose low 15 bits are zero is invalid.
            return Err(bad("partition number 0 is invalid (IBA C10-116)"));
        }
        Ok(base)
    }

    /// One flag of the header (`ipoib`, `mtu=5`, ...).
    fn flag(&mut self, p: &mut Partition) -> Result<(), PartitionsError> {
        let (name, line) =
            self.word("a flag (ipoib, indx0, defmember=, mtu=, rate=, sl=, scope=, Q_Key=, TClass=, FlowLabel=)")?;
        let val = self.value("a value after `=`")?;
        let num = |flag: &'static str, max: u64, expected: &'static str| -> Result<u64, PartitionsError> {
            let v = val.as_deref().unwrap_or("");
            c_number(v).filter(|&n| n <= max).ok_or_else(|| {
                self.err(
                    line,
                    ErrorKind::BadValue {
                        flag,
                        value: v.to_string(),
                        expected,
                    },
                )
            })
        };
        if is_kw(&name, "ipoib") && val.is_none() {
            p.ipoib = true;
        } else if is_kw(&name, "indx0") && val.is_none() {
            p.indx0 = true;
        } else if is_kw(&name, "defmember") {
            let v = val.unwrap_or_default();
            p.defmember = self.membership(&v, line)?;
        } else if is_kw(&name, "mtu") {
            // IBTA MTU codes 1 (256) .. 5 (4096).
            p.mtu = Some(num("mtu", 5, "an MTU code 1-5 (5 = 4096)")?.max(1) as u8);
        } else if is_kw(&name, "rate") {
            p.rate = Some(num("rate", 63, "an IBTA rate code (3 = 10 Gb/s)")? as u8);
        } else if is_kw(&name, "sl") {
            p.sl = Some(num("sl", 15, "a service level 0-15")? as u8);
        } else if is_kw(&name, "scope") {
            p.scope
                .push(num("scope", 15, "a multicast scope 0-15 (2 = link-local)")? as u8);
        } else if is_kw(&name, "Q_Key") {
            p.qkey = Some(num("Q_Key", u32::MAX as u64, "a 32-bit Q_Key")? as u32);
        } else if is_kw(&name, "TClass") {
            p.tclass = Some(num("TClass", 255, "a traffic class 0-255")? as u8);
        } else if is_kw(&name, "FlowLabel") {
            p.flow_label = Some(num("FlowLabel", 0xfffff, "a 20-bit flow label")? as u32);
        } else {
            return Err(self.err(
                line,
                ErrorKind::Expected {
                    expected:
                        "a flag (ipoib, indx0, defmember=, mtu=, rate=, sl=, scope=, Q_Key=, TClass=, FlowLabel=)"
                            .into(),
                    found: format!("{name:?}"),
                },
            ));
        }
        Ok(())
    }

    /// One member item.
    fn item(&mut self, p: &mut Partition) -> Result<(), PartitionsError> {
        let (name, line) = self.word("a port (ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF, NONE or a port GUID)")?;
        if name == "mgid" {
            let v = self.value("a multicast GID")?.unwrap_or_default();
            p.mgids.push((v, line));
            return Ok(());
        }
        let m = match self.value("full, limited or both")? {
            Some(v) => self.membership(&v, line)?,
            None => p.defmember,
        };
        // OpenSM tests ALL before ALL_CAS: with prefix matching "ALL_C" is ALL_CAS
        // only because "ALL_C" is not a prefix of "ALL".
        let spec = if is_kw(&name, "ALL") {
            PortSpec::All
        } else if is_kw(&name, "ALL_CAS") {
            PortSpec::AllCas
        } else if is_kw(&name, "ALL_SWITCHES") {
            PortSpec::AllSwitches
        } else if is_kw(&name, "ALL_ROUTERS") {
            PortSpec::AllRouters
        } else if is_kw(&name, "SELF") {
            PortSpec::SelfPort
        } else if is_kw(&name, "NONE") {
            return Ok(());
        } else {
            let g = c_number(&name).ok_or_else(|| {
                self.err(
                    line,
                    ErrorKind::Expected {
                        expected: "a port GUID such as 0x0002c90300001234, or ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF, NONE".into(),
                        found: format!("{name:?}"),
                    },
                )
            })?;
            PortSpec::Guid(Guid(g))
        };
        p.members.push(Member {
            spec,
            membership: m,
            line,
        });
        Ok(())
    }

    fn statement(&mut self) -> Result<Partition, PartitionsError> {
        // The header must sit on the line of its ':' (OpenSM reads it from that line).
        let colon = self.toks[self.at..]
            .iter()
            .position(|t| matches!(t.tok, Tok::Colon | Tok::Semi))
            .map(|k| self.at + k);
        let colon_line = match colon.map(|k| &self.toks[k]) {
            Some(Token { tok: Tok::Colon, line }) => *line,
            Some(t) => {
                let t = t.clone();
                return Err(self.err(
                    t.line,
                    ErrorKind::Expected {
                        expected: "`:` after the partition header `name=P_Key[,flags]`".into(),
                        found: describe(Some(&t)),
                    },
                ));
            }
            None => {
                let line = self.line();
                return Err(self.err(
                    line,
                    ErrorKind::Expected {
                        expected: "`:` after the partition header `name=P_Key[,flags]`".into(),
                        found: "the end of the file".into(),
                    },
                ));
            }
        };
        let first = self.line();
        if first != colon_line {
            return Err(self.err(
                first,
                ErrorKind::Expected {
                    expected: "the whole header `name=P_Key[,flags]` on the line of its `:`".into(),
                    found: format!("`:` on line {colon_line}"),
                },
            ));
        }
        let mut p = Partition {
            name: String::new(),
            pkey: 0,
            generated: false,
            line: first,
            ipoib: false,
            indx0: false,
            defmember: Membership::Limited,
            mtu: None,
            rate: None,
            sl: None,
            scope: Vec::new(),
            qkey: None,
            tclass: None,
            flow_label: None,
            members: Vec::new(),
            mgids: Vec::new(),
        };
        let mut pkey_text = None;
        if let Some(Token { tok: Tok::Word(w), .. }) = self.peek() {
            p.name = w.clone();
            self.at += 1;
        }
        if self.eat(&Tok::Eq) {
            pkey_text = Some(self.word("a P_Key such as 0x8001 after `=`")?);
        } else if p.name.starts_with(|c: char| c.is_ascii_digit()) {
            // "0x8001 : ALL;" — a numeric name is the P_Key.
            pkey_text = Some((p.name.clone(), first));
        }
        if p.name.is_empty() && pkey_text.is_none() {
            return Err(self.expected("a partition name or `=P_Key` before `:`"));
        }
        while self.eat(&Tok::Comma) {
            self.flag(&mut p)?;
        }
        if !self.eat(&Tok::Colon) {
            return Err(self.expected("`,` and a flag, or `:`"));
        }
        if let Some((t, line)) = pkey_text {
            p.pkey = self.pkey(&t, line)?;
        }
        // Members: items separated by ',' until ';'.
        if !self.eat(&Tok::Semi) {
            loop {
                self.item(&mut p)?;
                if self.eat(&Tok::Semi) {
                    break;
                }
                if !self.eat(&Tok::Comma) {
                    return Err(self.expected("`,` and another port, or `;` to end the partition"));
                }
            }
        }
        Ok(p)
    }
}

/// Partitions OpenSM keeps at most (`osm_prtn.c`: P_Keys are 15 bits).
const MAX_PARTITIONS: usize = 0x7ffe;

/// Read `text` (named `file` in errors); see the module docs.
pub fn parse(text: &str, file: &str) -> Result<PartitionsConf, PartitionsError> {
    let mut ps = Parser {
        file,
        toks: lex(text),
        at: 0,
    };
    let mut parts: Vec<Partition> = Vec::new();
    while ps.peek().is_some() {
        let p = ps.statement()?;
        if p.pkey != 0
            && let Some(q) = parts.iter().find(|q| q.pkey == p.pkey)
        {
            return Err(ps.err(
                p.line,
                ErrorKind::DuplicatePkey {
                    pkey: p.pkey | FULL,
                    first_line: q.line,
                    first_name: q.name.clone(),
                },
            ));
        }
        if parts.len() == MAX_PARTITIONS {
            return Err(ps.err(p.line, ErrorKind::TooMany { max: MAX_PARTITIONS }));
        }
        parts.push(p);
    }
    // No P_Key given: the lowest number no statement uses, from 1 up (generate_pkey).
    let mut used: std::collections::BTreeSet<u16> = parts.iter().map(|p| p.pkey).collect();
    for p in parts.iter_mut().filter(|p| p.pkey == 0) {
        let k = (1..BASE).find(|k| !used.contains(k)).unwrap_or(BASE);
        used.insert(k);
        p.pkey = k;
        p.generated = true;
    }
    Ok(PartitionsConf {
        file: file.to_string(),
        partitions: parts,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The file of the reference's measured OpenSM run (§1.3).
    pub(crate) const REFERENCE: &str = "\
Default=0x7fff, ipoib : ALL, SELF=full ;
jobA=0x8001, ipoib, mtu=5, rate=7, defmember=full :
    0x100001, 0x100004,     # Hca1 Hca2 full (defmember)
    0x100007=limited ;      # Hca3 limited
storage = 0x0010, indx0 : ALL_CAS=limited, 0x10000a=full ;
0x0020 : 0x100001=both ;
";

    fn err(text: &str) -> PartitionsError {
        parse(text, "p.conf").unwrap_err()
    }

    #[test]
    fn reads_the_reference_file() {
        let c = parse(REFERENCE, "partitions.conf").unwrap();
        let keys: Vec<u16> = c.partitions.iter().map(|p| p.pkey).collect();
        assert_eq!(keys, [0x7fff, 0x0001, 0x0010, 0x0020]);
        let d = &c.partitions[0];
        assert_eq!((d.name.as_str(), d.ipoib, d.line), ("Default", true, 1));
        assert_eq!(
            d.members,
            [
                Member {
                    spec: PortSpec::All,
                    membership: Membership::Limited,
                    line: 1
                },
                Member {
                    spec: PortSpec::SelfPort,
                    membership: Membership::Full,
                    line: 1
                }
            ]
        );
        let a = &c.partitions[1];
        assert_eq!((a.mtu, a.rate, a.defmember), (Some(5), Some(7), Membership::Full));
        let m: Vec<_> = a.members.iter().map(|m| (m.spec, m.membership, m.line)).collect();
        assert_eq!(
            m,
            [
                (PortSpec::Guid(Guid(0x100001)), Membership::Full, 3),
                (PortSpec::Guid(Guid(0x100004)), Membership::Full, 3),
                (PortSpec::Guid(Guid(0x100007)), Membership::Limited, 4),
            ]
        );
        let s = &c.partitions[2];
        assert!(s.indx0 && !s.ipoib);
        assert_eq!(s.members[0].spec, PortSpec::AllCas);
        // A numeric name with no '=' is the P_Key.
        assert_eq!(c.partitions[3].name, "0x0020");
        assert_eq!(c.partitions[3].members[0].membership, Membership::Both);
    }

    #[test]
    fn prefixes_octal_generated_keys_none_and_mgid() {
        let c = parse("a=010, defm=f : AL, limi_x_is_not=limi ;\n", "x");
        // "limi_x_is_not" is no keyword and no number.
        assert_eq!(c.unwrap_err().line, 1);
        let c = parse(
            "a=010, defm=f : AL, 0x5=limi, ALL_C ;\nb : NONE ;\nc : ;\nd=0x2: mgid=ff12:401b::1,mtu=5 ;\n",
            "x",
        );
        let c = c.unwrap();
        assert_eq!(c.partitions[0].pkey, 8, "010 is octal as strtoul reads it");
        let m: Vec<_> = c.partitions[0].members.iter().map(|m| (m.spec, m.membership)).collect();
        assert_eq!(
            m,
            [
                (PortSpec::All, Membership::Full),
                (PortSpec::Guid(Guid(5)), Membership::Limited),
                (PortSpec::AllCas, Membership::Full)
            ]
        );
        // b and c take the lowest unused numbers (1, then 3: 2 is d's).
        assert_eq!((c.partitions[1].pkey, c.partitions[1].generated), (1, true));
        assert!(c.partitions[1].members.is_empty());
        assert_eq!(c.partitions[2].pkey, 3);
        assert_eq!(c.partitions[3].mgids, [("ff12:401b::1,mtu=5".to_string(), 4)]);
        // `;` ends a statement, so "ALL_S;" after it is a statement without ':'.
        let e = err("d=0x2: ALL ; ALL_S;\n");
        assert_eq!(e.line, 1);
        assert!(e.to_string().contains("expected `:` after the partition header"), "{e}");
    }

    #[test]
    fn bit_15_is_cleared_and_duplicates_name_both_lines() {
        let e = err("a=0x8001 : ALL ;\n# x\nb = 0x0001 : ALL=full ;\n");
        assert_eq!(
            e.to_string(),
            "p.conf:3: P_Key 0x8001 is already defined at line 1 (partition \"a\"); give each partition one statement"
        );
        assert_eq!(
            e.kind,
            ErrorKind::DuplicatePkey {
                pkey: 0x8001,
                first_line: 1,
                first_name: "a".into()
            }
        );
    }

    #[test]
    fn syntax_errors_name_the_line_and_what_was_expected() {
        // Missing ';' at the end.
        let e = err("a=0x1 : ALL,\n  0x100001\n");
        assert_eq!(
            e.to_string(),
            "p.conf:2: expected `,` and another port, or `;` to end the partition, found the end of the file"
        );
        // A bad GUID.
        let e = err("a=0x1 :\n 0xZZZZ ;\n");
        assert_eq!(e.line, 2);
        assert!(
            e.to_string()
                .contains("expected a port GUID such as 0x0002c90300001234"),
            "{e}"
        );
        assert!(e.to_string().contains("found \"0xZZZZ\""), "{e}");
        // The header split over two lines.
        let e = err("a=0x1,\n ipoib : ALL ;\n");
        assert_eq!(e.line, 1);
        assert!(e.to_string().contains("on the line of its `:`"), "{e}");
        // Unknown flag and membership words.
        let e = err("x=1 : ALL;\na=0x2, defmemebr=full : ALL ;\n");
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("expected a flag"), "{e}");
        let e = err("a=0x2 : ALL=fullish ;\n");
        assert_eq!(
            e.to_string(),
            "p.conf:1: expected full, limited or both, found \"fullish\""
        );
        // Bad P_Keys and values.
        assert_eq!(
            err("a=0x8000 : ALL ;").to_string(),
            "p.conf:1: 0x8000 is not a valid P_Key: partition number 0 is invalid (IBA C10-116)"
        );
        assert!(err("a=0x10000 : ALL ;").to_string().contains("16 bits"));
        assert_eq!(
            err("a=1, sl=16 : ALL ;").to_string(),
            "p.conf:1: sl=16: expected a service level 0-15"
        );
        assert!(err("a=1 ALL ;").to_string().contains("expected `:`"));
        assert!(err(": ALL ;").to_string().contains("expected a partition name"));
    }

    #[test]
    fn never_panics_on_junk() {
        for s in [
            "",
            ";",
            ":",
            "=",
            "a=",
            "a=:",
            "a:mgid",
            "a:mgid=",
            "x,=,:,;",
            "\u{feff}a=1:ALL;",
            "a=1:ALL=;",
        ] {
            let _ = parse(s, "j");
        }
        assert!(parse("", "j").unwrap().partitions.is_empty());
        assert!(parse("  # only a comment\n", "j").unwrap().partitions.is_empty());
    }
}
