//! MLCommons Chakra execution traces, the workload format ASTRA-sim reads:
//! one file per rank, `<prefix>.<rank>.et`, each a stream of protobuf messages
//! prefixed by their length as a varint, a `GlobalMetadata` first and then the
//! rank's `Node`s (schema `ChakraProtoMsg` of mlcommons/chakra
//! `schema/protobuf/et_def.proto`; field numbers in
//! reference/training-workloads.md §7.1).
//!
//! What a trace becomes here: its collectives (`COMM_COLL_NODE`, with the
//! `comm_type` and `comm_size` attributes ASTRA-sim reads) over all the trace's
//! ranks, its compute nodes by `duration_micros`, and the dependency graph that
//! orders them. Point-to-point nodes and collectives restricted by
//! `involved_dim` are refused by name: they need a communicator mapping this
//! reader does not take yet.

use std::collections::BTreeMap;

use crate::comm::{CommKind, CommOp, Group, Link, Overlap, Phase};

/// `GlobalMetadata` (the fields read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GlobalMetadata {
    #[prost(string, tag = "1")]
    pub version: String,
}

/// `AttributeProto`: a name and one value of the `value` oneof (the members
/// the feeder reads; others decode as absent).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Attribute {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(oneof = "Value", tags = "7, 9, 13, 27, 28, 29")]
    pub value: Option<Value>,
}

/// `BoolList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BoolList {
    #[prost(bool, repeated, tag = "1")]
    pub values: Vec<bool>,
}

/// The `AttributeProto.value` members read here.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(int32, tag = "7")]
    Int32(i32),
    #[prost(int64, tag = "9")]
    Int64(i64),
    #[prost(uint64, tag = "13")]
    Uint64(u64),
    #[prost(bool, tag = "27")]
    Bool(bool),
    #[prost(message, tag = "28")]
    BoolList(BoolList),
    #[prost(string, tag = "29")]
    Str(String),
}

/// `Node` (the fields read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(int32, tag = "3")]
    pub r#type: i32,
    #[prost(uint64, repeated, tag = "4")]
    pub ctrl_deps: Vec<u64>,
    #[prost(uint64, repeated, tag = "5")]
    pub data_deps: Vec<u64>,
    #[prost(uint64, tag = "7")]
    pub duration_micros: u64,
    #[prost(message, repeated, tag = "10")]
    pub attr: Vec<Attribute>,
}

/// `NodeType` values (et_def.proto).
pub mod node_type {
    pub const COMP: i32 = 4;
    pub const COMM_SEND: i32 = 5;
    pub const COMM_RECV: i32 = 6;
    pub const COMM_COLL: i32 = 7;
}

impl Node {
    fn attr(&self, name: &str) -> Option<&Value> {
        self.attr.iter().find(|a| a.name == name).and_then(|a| a.value.as_ref())
    }
    fn int(&self, name: &str) -> Option<i64> {
        match self.attr(name)? {
            Value::Int32(v) => Some(i64::from(*v)),
            Value::Int64(v) => Some(*v),
            Value::Uint64(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }
}

/// What is wrong with a trace, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rank's file could not be read.
    #[error("{file}: {why}")]
    Read {
        /// The file.
        file: String,
        /// The system's reason.
        why: String,
    },
    /// Not a stream of length-prefixed Chakra messages.
    #[error(
        "{file}: byte {at}: {why} (a Chakra trace is length-prefixed protobuf messages, a GlobalMetadata and then Nodes)"
    )]
    Decode {
        /// The file.
        file: String,
        /// Where the bad message starts.
        at: usize,
        /// The decoder's reason.
        why: String,
    },
    /// The file name does not end in `.<rank>.et`.
    #[error("{0}: a Chakra trace is named <prefix>.<rank>.et, one file per rank")]
    Name(String),
    /// A rank of `0..n` has no file.
    #[error("{prefix}.{rank}.et is missing: the trace has ranks 0..{n} and every rank needs its file")]
    MissingRank {
        /// The prefix.
        prefix: String,
        /// The missing rank.
        rank: u32,
        /// Ranks found (the highest plus one).
        n: u32,
    },
    /// A rank whose collectives differ from rank 0's.
    #[error(
        "{file}: collective {index} (in dependency order) is {got}, rank 0's is {want}: every rank of a trace runs the same collectives"
    )]
    Mismatch {
        /// The rank's file.
        file: String,
        /// Which collective, from 0.
        index: usize,
        /// This rank's.
        got: String,
        /// Rank 0's.
        want: String,
    },
    /// A node this reader cannot turn into work.
    #[error("{file}: node {id} ({name:?}): {why}")]
    Node {
        /// The file.
        file: String,
        /// The node's id.
        id: u64,
        /// The node's name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

/// One rank's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    /// Its file.
    pub file: String,
    /// `GlobalMetadata.version`.
    pub version: String,
    /// Its nodes in file order.
    pub nodes: Vec<Node>,
}

impl RankTrace {
    /// Decode one rank's file.
    pub fn decode(file: &str, bytes: &[u8]) -> Result<RankTrace, Error> {
        use prost::Message as _;
        let bad = |at: usize, why: String| Error::Decode {
            file: file.to_string(),
            at,
            why,
        };
        let mut buf = bytes;
        let meta = GlobalMetadata::decode_length_delimited(&mut buf).map_err(|e| bad(0, e.to_string()))?;
        let mut nodes = Vec::new();
        while !buf.is_empty() {
            let at = bytes.len() - buf.len();
            nodes.push(Node::decode_length_delimited(&mut buf).map_err(|e| bad(at, e.to_string()))?);
        }
        Ok(RankTrace {
            file: file.to_string(),
            version: meta.version,
            nodes,
        })
    }
}

/// A whole trace: every rank's file.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// `<prefix>` of `<prefix>.<rank>.et`.
    pub prefix: String,
    /// Rank by rank.
    pub ranks: Vec<RankTrace>,
}

/// What a node of rank 0 does.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// Compute for this long, s.
    Compute(f64),
    /// A collective over every rank: the index of its operation in [`Trace::ops`].
    Comm(usize),
    /// Nothing on the network or the GPU (metadata, memory nodes).
    None,
}

/// One node of rank 0, in dependency order: its work and the earlier steps
/// (indices) it waits for.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What it does.
    pub work: Work,
    /// The steps it depends on (data and control).
    pub deps: Vec<usize>,
}

impl Trace {
    /// Read every rank of the trace that `one` (any rank's file) belongs to.
    pub fn read(one: &std::path::Path) -> Result<Trace, Error> {
        let shown = one.display().to_string();
        let name = one
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Name(shown.clone()))?;
        let stem = name.strip_suffix(".et").ok_or_else(|| Error::Name(shown.clone()))?;
        let (pre, rank) = stem.rsplit_once('.').ok_or_else(|| Error::Name(shown.clone()))?;
        rank.parse::<u32>().map_err(|_| Error::Name(shown.clone()))?;
        let dir = one.parent().unwrap_or(std::path::Path::new(""));
        let mut found: BTreeMap<u32, std::path::PathBuf> = BTreeMap::new();
        let entries = std::fs::read_dir(if dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            dir
        })
        .map_err(|e| Error::Read {
            file: dir.display().to_string(),
            why: e.to_string(),
        })?;
        for e in entries.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { continue };
            if let Some(r) = n
                .strip_prefix(pre)
                .and_then(|x| x.strip_prefix('.'))
                .and_then(|x| x.strip_suffix(".et"))
                .and_then(|x| x.parse::<u32>().ok())
            {
                found.insert(r, e.path());
            }
        }
        let n = found.keys().next_back().map_or(0, |r| r + 1);
        let prefix = dir.join(pre).display().to_string();
        let mut ranks = Vec::with_capacity(n as usize);
        for r in 0..n {
            let path = found.get(&r).ok_or_else(|| Error::MissingRank {
                prefix: prefix.clone(),
                rank: r,
                n,
            })?;
            let file = path.display().to_string();
            let bytes = std::fs::read(path).map_err(|e| Error::Read {
                file: file.clone(),
                why: e.to_string(),
            })?;
            ranks.push(RankTrace::decode(&file, &bytes)?);
        }
        Ok(Trace { prefix, ranks })
    }

    /// The collectives of the trace as operations over its `n` ranks (group
    /// [`Group::Dp`]: every rank, in the Megatron placement of a tp 1, pp 1
    /// job), one per distinct (kind, size) in rank 0's file with its count, and
    /// rank 0's nodes as steps in dependency order. Sizes follow ASTRA-sim's reading of
    /// `comm_size`: all-reduce, reduce-scatter and all-to-all the full buffer,
    /// all-gather each rank's input (so the buffer is `n` times it). Every rank
    /// must list the same collectives in the same order (an SPMD trace);
    /// otherwise the first difference is named.
    pub fn ops(&self) -> Result<(Vec<CommOp>, Vec<Step>), Error> {
        if self.ranks.is_empty() {
            return Err(Error::Name(format!("{}.<rank>.et", self.prefix)));
        }
        let n = self.ranks.len() as u32;
        let mut ops: Vec<CommOp> = Vec::new();
        let mut steps = Vec::new();
        let mut colls: Vec<Vec<(CommKind, u64)>> = Vec::with_capacity(self.ranks.len());
        for (r, rt) in self.ranks.iter().enumerate() {
            let mut list = Vec::new();
            let order = topo_order(rt)?;
            let first = r == 0;
            // node index -> step index (rank 0)
            let mut step_of = vec![usize::MAX; rt.nodes.len()];
            let by_id: BTreeMap<u64, usize> = rt.nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
            for &i in &order {
                let node = &rt.nodes[i];
                let mut work = Work::None;
                let bad = |why: String| Error::Node {
                    file: rt.file.clone(),
                    id: node.id,
                    name: node.name.clone(),
                    why,
                };
                match node.r#type {
                    node_type::COMM_COLL => {
                        if let Some(Value::BoolList(d)) = node.attr("involved_dim")
                            && d.values.iter().any(|x| !x)
                        {
                            return Err(bad(format!(
                                "involved_dim {:?} restricts the collective to some network dimensions; only collectives over every rank are read",
                                d.values
                            )));
                        }
                        let t = node
                            .int("comm_type")
                            .ok_or_else(|| bad("no comm_type attribute".into()))?;
                        let size = node
                            .int("comm_size")
                            .ok_or_else(|| bad("no comm_size attribute".into()))?;
                        let size = u64::try_from(size).map_err(|_| bad(format!("comm_size {size} is negative")))?;
                        // CollectiveCommType: ALL_REDUCE 0, ALL_GATHER 2, BROADCAST 5,
                        // ALL_TO_ALL 6, REDUCE_SCATTER 7
                        let (kind, bytes) = match t {
                            0 => (CommKind::AllReduce, size),
                            2 => (CommKind::AllGather, size * u64::from(n)),
                            5 => (CommKind::Broadcast, size),
                            6 => (CommKind::AllToAll, size),
                            7 => (CommKind::ReduceScatter, size),
                            other => {
                                return Err(bad(format!(
                                    "comm_type {other} is not read (all-reduce 0, all-gather 2, broadcast 5, all-to-all 6, reduce-scatter 7 are)"
                                )));
                            }
                        };
                        list.push((kind, bytes));
                        if first {
                            let k = match ops.iter().position(|o| o.kind == kind && o.bytes == bytes) {
                                Some(k) => {
                                    ops[k].count += 1;
                                    k
                                }
                                None => {
                                    ops.push(CommOp {
                                        label: node.name.clone(),
                                        kind,
                                        group: Group::Dp,
                                        ranks: n,
                                        bytes,
                                        count: 1,
                                        phase: Phase::Forward,
                                        overlap: Overlap::Exposed,
                                        link: Link::Network,
                                    });
                                    ops.len() - 1
                                }
                            };
                            work = Work::Comm(k);
                        }
                    }
                    node_type::COMM_SEND | node_type::COMM_RECV => {
                        return Err(bad(
                            "point-to-point sends and receives are not read yet (collectives and compute are)".into(),
                        ));
                    }
                    node_type::COMP => work = Work::Compute(node.duration_micros as f64 * 1e-6),
                    // metadata, memory loads and stores: no network work
                    _ => {}
                }
                if first {
                    let deps = node
                        .data_deps
                        .iter()
                        .chain(&node.ctrl_deps)
                        .map(|d| step_of[by_id[d]])
                        .collect();
                    step_of[i] = steps.len();
                    steps.push(Step { work, deps });
                }
            }
            colls.push(list);
        }
        for (r, list) in colls.iter().enumerate().skip(1) {
            if let Some(k) = (0..list.len().max(colls[0].len())).find(|&k| list.get(k) != colls[0].get(k)) {
                let show = |c: Option<&(CommKind, u64)>| {
                    c.map_or("nothing".to_string(), |(kind, b)| format!("{kind:?} of {b} B"))
                };
                return Err(Error::Mismatch {
                    file: self.ranks[r].file.clone(),
                    index: k,
                    got: show(list.get(k)),
                    want: show(colls[0].get(k)),
                });
            }
        }
        Ok((ops, steps))
    }
}

/// The nodes of one rank in an order that puts every dependency first (file
/// order among the ready ones); a dependency on an unknown id or a cycle is
/// named.
fn topo_order(rt: &RankTrace) -> Result<Vec<usize>, Error> {
    let index: BTreeMap<u64, usize> = rt.nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut indeg = vec![0usize; rt.nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); rt.nodes.len()];
    for (i, n) in rt.nodes.iter().enumerate() {
        for d in n.data_deps.iter().chain(&n.ctrl_deps) {
            let &j = index.get(d).ok_or_else(|| Error::Node {
                file: rt.file.clone(),
                id: n.id,
                name: n.name.clone(),
                why: format!("depends on node {d}, which the file does not have"),
            })?;
            indeg[i] += 1;
            users[j].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..rt.nodes.len()).filter(|&i| indeg[i] == 0).collect();
    let mut out = Vec::with_capacity(rt.nodes.len());
    while let Some(i) = ready.pop_first() {
        out.push(i);
        for &u in &users[i] {
            indeg[u] -= 1;
            if indeg[u] == 0 {
                ready.insert(u);
            }
        }
    }
    if out.len() < rt.nodes.len() {
        let stuck = (0..rt.nodes.len()).find(|&i| indeg[i] > 0).expect("a node left");
        let n = &rt.nodes[stuck];
        return Err(Error::Node {
            file: rt.file.clone(),
            id: n.id,
            name: n.name.clone(),
            why: "its dependencies form a cycle".into(),
        });
    }
    Ok(out)
}

/// The time from the first step to the last done when every step starts as
/// soon as what it depends on is done (`time` gives each step's length): the
/// trace's critical path, as a replay with unlimited streams runs it.
pub fn critical_path(steps: &[Step], time: impl Fn(&Work) -> f64) -> f64 {
    let mut end = vec![0.0f64; steps.len()];
    for (i, s) in steps.iter().enumerate() {
        let start = s.deps.iter().map(|&d| end[d]).fold(0.0, f64::max);
        end[i] = start + time(&s.work);
    }
    end.into_iter().fold(0.0, f64::max)
}
