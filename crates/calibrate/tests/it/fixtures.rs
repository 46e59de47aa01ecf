//! Every fixture parses as the test and fabric it is, and is consistent in
//! itself the way perftest and nccl-tests print (MsgRate × size = BW average;
//! busbw = algbw × factor; the footer is the mean busbw of every row).

use calibrate::nccl::Collective;
use calibrate::perftest::Table;
use calibrate::{Fabric, Input, Tool};

use crate::{IB, ROCE, inputs};

#[test]
fn every_fixture_parses_as_its_test_and_fabric() {
    let want: [(&str, Option<Fabric>, usize); 13] = [
        ("ib_write_lat", Some(Fabric::Infiniband), 23),
        ("ib_send_lat", Some(Fabric::Infiniband), 23),
        ("ib_read_lat", Some(Fabric::Infiniband), 1),
        ("ib_write_bw", Some(Fabric::Infiniband), 23),
        // nccl-tests without NCCL_DEBUG=INFO does not say its fabric
        ("all_reduce_perf", None, 5),
        ("ib_write_lat", Some(Fabric::Roce), 23),
        ("ib_send_lat", Some(Fabric::Roce), 1),
        ("ib_read_lat", Some(Fabric::Roce), 1),
        ("ib_write_bw", Some(Fabric::Roce), 23),
        ("all_reduce_perf", Some(Fabric::Roce), 18),
        ("all_gather_perf", Some(Fabric::Roce), 18),
        ("reduce_scatter_perf", Some(Fabric::Roce), 18),
        ("alltoall_perf", Some(Fabric::Roce), 18),
    ];
    let rels: Vec<&str> = IB.iter().chain(ROCE.iter()).copied().collect();
    for ((rel, input), (test, fabric, rows)) in rels.iter().zip(inputs(&rels)).zip(want) {
        assert_eq!(
            (input.test(), input.fabric(), input.rows()),
            (test, fabric, rows),
            "{rel}"
        );
    }
}

#[test]
fn the_ucx_6242_row_and_its_interleaved_warning() {
    let [Input::Perftest(r)] = &inputs(&["roce/ib_send_lat.txt"])[..] else {
        panic!()
    };
    assert_eq!(r.tool, Tool::SendLat);
    assert_eq!(r.header.device.as_deref(), Some("mlx5_bond_0"));
    assert_eq!(
        (r.header.mtu, r.header.gid_index, r.header.max_inline),
        (Some(1024), Some(3), Some(236))
    );
    let Table::Lat { rows } = &r.table else { panic!() };
    assert_eq!((rows[0].t_min, rows[0].t_max, rows[0].t_typical), (5.43, 7.90, 5.84));
    assert!(
        r.notes.iter().any(|n| n.contains("CPU Frequency is not max")),
        "{:?}",
        r.notes
    );
}

#[test]
fn bandwidth_fixtures_keep_msgrate_times_size_equal_to_bw_average() {
    for rel in ["ib-edr/ib_write_bw.txt", "roce/ib_write_bw.txt"] {
        let [Input::Perftest(r)] = &inputs(&[rel])[..] else {
            panic!()
        };
        let Table::Bw { rows, .. } = &r.table else { panic!() };
        for row in rows {
            let from_rate = row.msg_rate_mpps * 1e6 * row.bytes as f64;
            let e = (from_rate / row.average_bytes_per_s - 1.0).abs();
            // BW average is printed with 2 decimals: 0.17 Gb/s at 8 B is ±3%
            let tol = 0.005 / (row.average_bytes_per_s / 1.25e8).min(row.average_bytes_per_s / 1_048_576.0) + 1e-3;
            assert!(
                e <= tol,
                "{rel}:{} MsgRate × size {from_rate} vs BW average {}",
                row.line,
                row.average_bytes_per_s
            );
            assert!(row.peak_bytes_per_s >= row.average_bytes_per_s, "{rel}:{}", row.line);
        }
    }
}

#[test]
fn nccl_fixtures_print_busbw_from_algbw_and_the_footer_as_the_mean() {
    let rels = [
        "ib-hdr/all_reduce_perf.txt",
        "roce/all_reduce_perf.txt",
        "roce/all_gather_perf.txt",
        "roce/reduce_scatter_perf.txt",
        "roce/alltoall_perf.txt",
    ];
    for (rel, input) in rels.iter().zip(inputs(&rels)) {
        let Input::Nccl(r) = input else { panic!("{rel}") };
        // nccl-tests#252: 2(n-1)/n = 1.75 gives n = 8 ranks (reference B5)
        assert_eq!(r.ranks, if rel.starts_with("ib") { 8 } else { 16 }, "{rel}");
        let all: Vec<f64> = r
            .rows
            .iter()
            .flat_map(|x| [x.out_of_place.busbw, x.in_place.busbw])
            .collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let avg = r.avg_bus_bandwidth.unwrap();
        assert!((avg - mean).abs() < 1e-4 * avg, "{rel}: footer {avg} vs mean {mean}");
        for x in &r.rows {
            // size = count × 4 B (× ranks for the collectives that print the total)
            let per = if r.collective.size_is_total() {
                u64::from(r.ranks)
            } else {
                1
            };
            assert_eq!(x.size, x.count * 4 * per, "{rel}:{}", x.line);
        }
    }
    let [Input::Nccl(r)] = &inputs(&["roce/reduce_scatter_perf.txt"])[..] else {
        panic!()
    };
    assert_eq!(r.collective, Collective::ReduceScatter, "read through mpirun's tags");
    assert_eq!((r.nics_per_host, r.algo.as_deref()), (Some(8), Some("RING")));
    assert_eq!(r.nccl_version.as_deref(), Some("2.23.4+cuda12.6"));
}
