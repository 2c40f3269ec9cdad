//! How long `Server::start_cluster(3)` takes in-process: from the call to
//! three nodes accepting connections with the slots assigned (BENCHMARKS.md,
//! "Cluster start-up"); with a second argument, that many replicas per
//! primary, each in sync when the call returns; a third, that many
//! primaries (default 3).
//!
//!     cargo run --release --example cluster_startup [rounds] [replicas] [primaries]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let replicas: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    let primaries: usize = std::env::args().nth(3).and_then(|a| a.parse().ok()).unwrap_or(3);
    let (mut started, mut answered) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        let t = Instant::now();
        let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(primaries).with_replicas(replicas))
            .expect("start a cluster");
        started.push(t.elapsed());
        // Then every node answers CLUSTER INFO with the cluster ok.
        for addr in cluster.addrs() {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n").expect("write");
            let mut buf = [0u8; 512];
            let n = s.read(&mut buf).expect("read");
            assert!(String::from_utf8_lossy(&buf[..n]).contains("cluster_state:ok"));
        }
        answered.push(t.elapsed());
        drop(cluster);
    }
    println!("{primaries} primaries, {replicas} replica(s) each");
    report("start returned", &mut started);
    report("every node answered CLUSTER INFO", &mut answered);
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let n = times.len();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}, {n} rounds: median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(times[n / 2]),
        ms(times[n * 9 / 10]),
        ms(times[0]),
        ms(times[n - 1])
    );
}
