#!/usr/bin/env python3
"""Write the Chakra execution-trace fixtures (run from this folder).

all_reduce_4npus_1MB/: the bytes of ASTRA-sim's
examples/workload/microbenchmarks/all_reduce/4npus_1MB/all_reduce.{0..3}.et as
reference/training-workloads.md section 7.1 lists them (81 bytes, every rank the
same).

mixed_8npus/: eight ranks, each a compute node and four collectives with
dependencies, encoded here field by field from the schema's field numbers
(et_def.proto: Node id 1, name 2, type 3, ctrl_deps 4, data_deps 5,
duration_micros 7, attr 10; AttributeProto name 1, int64_val 9, bool_val 27;
GlobalMetadata version 1), each message prefixed by its length as a varint.
"""


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def lenfield(field, data):
    return key(field, 2) + varint(len(data)) + data


def uint(field, v):
    return key(field, 0) + varint(v)


def attr_int64(name, v):
    return lenfield(10, lenfield(1, name.encode()) + uint(9, v))


def attr_bool(name, v):
    return lenfield(10, lenfield(1, name.encode()) + uint(27, 1 if v else 0))


def node(nid, name, ntype, deps=(), duration=0, attrs=b""):
    body = b""
    if nid:
        body += uint(1, nid)
    body += lenfield(2, name.encode()) + uint(3, ntype)
    if deps:
        packed = b"".join(varint(d) for d in deps)
        body += lenfield(5, packed)
    if duration:
        body += uint(7, duration)
    return body + attrs


def stream(version, nodes):
    meta = lenfield(1, version.encode())
    out = varint(len(meta)) + meta
    for n in nodes:
        out += varint(len(n)) + n
    return out


ASTRA = bytes.fromhex(
    "070a05302e302e3448"
    "1214" + b"all_reduce_4npus_1MB".hex() + "1807"
    "520e0a09" + b"is_cpu_op".hex() + "d80100"
    "520d0a09" + b"comm_type".hex() + "4800"
    "520f0a09" + b"comm_size".hex() + "48808040"
)
assert len(ASTRA) == 81
for r in range(4):
    with open(f"all_reduce_4npus_1MB/all_reduce.{r}.et", "wb") as f:
        f.write(ASTRA)

MiB = 1 << 20
COMP, COLL = 4, 7
ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 6, 7


def coll(nid, name, ctype, size, deps):
    a = attr_bool("is_cpu_op", False) + attr_int64("comm_type", ctype) + attr_int64("comm_size", size)
    return node(nid, name, COLL, deps, attrs=a)


nodes = [
    node(1, "forward", COMP, duration=2000, attrs=attr_bool("is_cpu_op", False)),
    coll(2, "moe_dispatch", ALL_TO_ALL, 16 * MiB, [1]),
    node(3, "backward", COMP, [2], duration=4000, attrs=attr_bool("is_cpu_op", False)),
    coll(4, "grad_reduce_scatter", REDUCE_SCATTER, 64 * MiB, [3]),
    coll(5, "param_all_gather", ALL_GATHER, 8 * MiB, [4]),
    coll(6, "loss_all_reduce", ALL_REDUCE, 4 * MiB, [1]),
]
for r in range(8):
    with open(f"mixed_8npus/mixed.{r}.et", "wb") as f:
        f.write(stream("1.0.0", nodes))
