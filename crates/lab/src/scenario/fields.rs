//! Every scenario field with its type and meaning, as `rdmalab scenario explain`
//! prints them: the comparison form ([`FIELDS`]) and the packet-run form
//! ([`PACKET_FIELDS`]).

/// Every scenario field with its meaning and default, for `rdmalab scenario explain`.
pub const FIELDS: &[(&str, &str, &str)] = &[
    ("name", "string", "scenario name, printed in reports"),
    (
        "seed",
        "integer, default 1",
        "seed for every random draw and the RoCEv2 switches' ECMP hash seed; same seed, same results",
    ),
    (
        "repeats",
        "integer 1–16, default 1 (the built-in scenario: 3)",
        "runs of the comparison at seeds seed, seed+1, …; every headline figure carries its min/median/max over them, and the verdict counts a gap only where the ranges part",
    ),
    (
        "engine",
        "packet | flow | auto, default packet",
        "packet: every packet simulated; flow: max-min fair flows on the same routes for the variants the flow engine models (no latency probes; lossy, PFC-off, background-TCP, IPoIB and RoCEv1 variants stay at packet level); auto: packet up to 256 NICs, flow beyond; results name each variant's engine",
    ),
    ("cluster.servers", "integer ≥ 2", "GPU servers"),
    (
        "cluster.gpus_per_server",
        "integer 1–16",
        "GPUs per server; one NIC per GPU, one rail per GPU index",
    ),
    (
        "cluster.nic_gbps",
        "100 | 200 | 400 | 800",
        "NIC and switch port speed; IB variants use EDR/HDR/NDR/XDR 4x",
    ),
    ("cluster.radix", "integer 4–255", "ports per switch"),
    (
        "cluster.host_leaf_m",
        "metres, default 2",
        "server-to-leaf cable length (copper up to 3 m)",
    ),
    (
        "cluster.leaf_spine_m",
        "metres, default 20",
        "leaf-to-spine cable length (optics beyond 3 m)",
    ),
    (
        "cluster.scalable_units",
        "integer ≥ 1, optional",
        "build DGX SuperPOD-style scalable units: servers / units servers per unit, one leaf per rail per unit, spines (and a core tier past two tiers' reach); absent: one leaf per rail for all servers",
    ),
    (
        "cluster.leaf_uplinks",
        "integer ≥ 1, optional",
        "uplinks per leaf of a scalable-unit fabric; default one per server port (non-blocking), fewer oversubscribe the leaves",
    ),
    (
        "cluster.sharp",
        "bool, default false",
        "the InfiniBand switches run SHARP streaming aggregation (Quantum HDR or newer, Aggregation Manager up): InfiniBand variants may run all-reduce-sharp and the advisor's bandwidth row takes InfiniBand's all-reduce with SHARP; needs an InfiniBand variant (Ethernet switches have no SHARP)",
    ),
    (
        "cluster.topology",
        "path, optional",
        "a fabric file to compare instead of a generated one (ibnetdiscover, ibsim net, HPCC or rdmalab JSON), relative to the scenario file: built both ways from its nodes and cables; servers and rails from the adapters' NodeDescriptions (`HOST mlx5_RAIL`) or cluster.mapping; servers, gpus_per_server and nic_gbps must describe it, radix at least its largest switch",
    ),
    (
        "cluster.mapping",
        "path, optional",
        "`NODE SERVER RAIL` per line (an adapter of cluster.topology by node name, node GUID or port GUID; `#` comments): each adapter's server and rail, where the NodeDescriptions do not give them",
    ),
    (
        "gpu.nvlink_gbytes",
        "GB/s, default 450",
        "per-GPU NVLink bandwidth in one direction (H100: 450)",
    ),
    (
        "gpu.nvlink_latency_ns",
        "ns, default 1000",
        "latency of one NVLink transfer",
    ),
    (
        "gpu.nvls",
        "bool, default false",
        "the NVSwitch reduces (NVLink SHARP, H100/H200 HGX): all-reduce-sharp reduces inside each server with NVLS where that is faster than an all-to-all over NVLink",
    ),
    (
        "workload.collectives",
        "list",
        "all-reduce-ring, all-reduce-tree, all-gather, reduce-scatter, all-to-all, all-reduce-sharp (in-network reduction on InfiniBand switches: needs cluster.sharp and engine = \"flow\"; RoCE and IPoIB variants skip it, saying why)",
    ),
    (
        "workload.sizes",
        "list of bytes, ascending",
        "message sizes (nccl-tests' size column)",
    ),
    (
        "workload.probe.bytes",
        "bytes, default 64",
        "small-message probe size for latency percentiles",
    ),
    (
        "workload.probe.interval_us",
        "µs, default 20",
        "gap between probes from one NIC",
    ),
    (
        "workload.incast.senders",
        "integer",
        "N of an N:1 incast run after the collectives",
    ),
    ("workload.incast.bytes", "bytes", "bytes each incast sender writes"),
    (
        "workload.background_tcp_load",
        "fraction in [0, 1), default 0",
        "background TCP per NIC, as a fraction of line rate, during the collectives, and in the training jobs' packet runs, on the RoCEv2 variants (DSCP 0, a lossy class sharing buffers and links with RDMA); IB, IPoIB and RoCEv1 carry none: IB has no lossy Ethernet class to share, IPoIB is itself the TCP, RoCEv1's collectives are refused and its training jobs run as flows",
    ),
    (
        "workload.background_tcp_cc",
        "newreno | dctcp, default newreno",
        "background TCP congestion control; dctcp is ECN-capable and marked where the variant has ECN on",
    ),
    ("variants[].id", "string", "short unique id used in results.json"),
    ("variants[].label", "string", "human label"),
    (
        "variants[].fabric.kind",
        "infiniband | rocev2 | ipoib | rocev1",
        "the fabric the variant runs on (rocev1: its collectives are refused on a routed fabric; training jobs run it on the fabric's layer-2 design, an MLAG spine pair at the spanning tree's root)",
    ),
    (
        "variants[].fabric.engines",
        "list, default [ftree, updn]",
        "InfiniBand: SM routing engines in order of preference",
    ),
    ("variants[].fabric.pfc", "bool", "RoCEv2: PFC on the RDMA priority"),
    (
        "variants[].fabric.dcqcn",
        "dcqcn-paper | nvidia-cx | hpcc-ns3",
        "RoCEv2: DCQCN parameter profile; absent = no DCQCN",
    ),
    ("variants[].fabric.ecn", "bool", "RoCEv2: RED/ECN marking at switches"),
    (
        "variants[].fabric.lossy_hops",
        "list of switch names",
        "RoCEv2: switches that map the RDMA DSCP to a lossy class",
    ),
    (
        "variants[].fabric.retransmit_timeout_us",
        "µs, 1 to 10,000,000; default 500",
        "RoCEv2: the NICs' go-back-N retransmit timeout, what a tail drop costs (NCCL_IB_TIMEOUT n gives 4.096 µs · 2^n, about 4.3 s at the default 20)",
    ),
    (
        "advisor.skills",
        "infiniband | ethernet | both | neither",
        "what the network team knows",
    ),
    (
        "advisor.ethernet_estate",
        "none | some | large",
        "how much Ethernet the organisation already runs",
    ),
    ("advisor.budget", "tight | normal | ample", "budget pressure"),
    ("advisor.sites", "integer", "sites the job must span"),
    (
        "advisor.misconfig_risk",
        "probability 0–1, optional",
        "the chance that the RoCEv2 fabric runs misconfigured (PFC off or the RDMA DSCP on a lossy class somewhere); weights the misconfigured variants' measured outcome in the verdict; absent: from the lint of your configuration when `compare --roce-config` gives one (1 if it runs lossy as written, else the assumption times the linter's miss rate, 0.1), else assumed from skills and estate (0.05 for a team that runs Ethernet, 0.20 otherwise, halved for a large estate), as the report says",
    ),
    (
        "prices.*",
        "USD",
        "unit prices and operating assumptions; see `rdmalab advise --show-prices`",
    ),
    (
        "training.placement",
        "packed | scattered | fragmented, default fragmented",
        "which servers the training jobs get, in turn: the first, round robin over the scalable units, or the gaps churn leaves (drawn from the seed)",
    ),
    (
        "training.qps_per_connection",
        "integer 1–64, default 1",
        "QPs per connection (NCCL_IB_QPS_PER_CONNECTION): each message striped over them; on RoCEv2 each QP hashes onto its own ECMP path",
    ),
    (
        "training.more_qps",
        "integer 1–64, default 4",
        "the QP count the ECMP study sets beside qps_per_connection, on each job's least even operation at flow level",
    ),
    (
        "training.schedule",
        "pairing | joint, default pairing",
        "how several jobs meet: each operation beside the others' busiest one (pairing), or also every job's timeline on one clock at flow level, times each operation's packet factor (joint; slower)",
    ),
    (
        "training.packet_full_bytes",
        "bytes, default 16 MiB",
        "operations whose largest message is at most this run packet by packet at full size in each variant's world",
    ),
    (
        "training.packet_cap_bytes",
        "bytes ≥ 4096, default 2 MiB (the built-in scenario: 512 KiB)",
        "larger operations run as flows at full size, times the packet world's slowdown over flows on the same messages scaled so the largest is this",
    ),
    (
        "training.efficiency",
        "fraction, optional",
        "kernel efficiency of every job's compute; default: fitted on a published run (the report names it)",
    ),
    (
        "training.jobs",
        "list of jobs",
        "[[training.jobs]]: name, model (preset or table), gpu, gpus, seq_len, global_batch, micro_batch, router_skew, [training.jobs.parallel] tp/pp/cp/ep/dp/sharding/order/schedule, as rdmalab train reads a job (docs/TRAINING.md); TP must fit a server",
    ),
];

/// Every field of a packet-run scenario (`sim run`), with its type and meaning.
pub const PACKET_FIELDS: &[(&str, &str, &str)] = &[
    (
        "name",
        "string, default the file name",
        "scenario name, printed in reports",
    ),
    ("seed", "integer", "overrides engine.seed"),
    (
        "fabric.generator",
        "fat-tree3 | leaf-spine | file",
        "how the InfiniBand fabric is made",
    ),
    ("fabric.radix", "integer", "ports per switch [fat-tree3, leaf-spine]"),
    ("fabric.pods", "integer", "pods [fat-tree3; default radix]"),
    (
        "fabric.hosts_per_leaf",
        "integer",
        "hosts per leaf [fat-tree3, leaf-spine]",
    ),
    ("fabric.spines", "integer", "spines [leaf-spine]"),
    ("fabric.leaves", "integer", "leaves [leaf-spine]"),
    (
        "fabric.rate",
        "4xEDR | 4xHDR | 4xNDR | …",
        "link rate [fat-tree3, leaf-spine]",
    ),
    (
        "fabric.cable_m.host_leaf / leaf_spine / spine_core",
        "metres",
        "cable lengths per tier [fat-tree3, leaf-spine]",
    ),
    (
        "fabric.path",
        "path",
        "topology file (ibnetdiscover, ibsim net, HPCC or rdmalab JSON), relative to the scenario [file]",
    ),
    (
        "routing.engines",
        "[minhop | updn | ftree | dfsssp], default [minhop]",
        "SM routing engines, tried in order",
    ),
    ("routing.lmc", "0–7, default 0", "LID mask control"),
    (
        "ib.*",
        "see sim::IbConfig",
        "MTU, switch latency and forwarding, buffers per VL, HCA latencies, ACK coalescing, VL arbitration, congestion control, adaptive routing",
    ),
    ("engine.seed", "integer, default 1", "seed for every random draw"),
    (
        "engine.sample_interval_ps",
        "ps, default 0 (off)",
        "sample utilisation and buffer occupancy this often",
    ),
    (
        "engine.deadlock_check_ps",
        "ps, default 20,000,000",
        "look for a credit deadlock after this long without progress",
    ),
    (
        "workload.kind",
        "htsim | permutation | all-to-all | incast | write-bw | send-lat | read-lat",
        "the traffic",
    ),
    ("workload.file", "path", "htsim connection matrix [htsim]"),
    (
        "workload.bytes",
        "bytes",
        "per flow [permutation (0 = endless), all-to-all, incast]",
    ),
    ("workload.senders", "integer", "senders to host 0 [incast]"),
    (
        "workload.end_us",
        "µs",
        "simulated time [htsim, permutation, all-to-all, incast]",
    ),
    (
        "workload.size / iters / tx_depth / a / b",
        "bytes, count, count, node names",
        "message size, iterations, outstanding writes, the two hosts [write-bw, send-lat, read-lat]",
    ),
];
