//! The README's Rust blocks, each as written there (`readme.rs` checks that
//! the lines are the README's, so rustfmt leaves this file alone: see
//! `main.rs`): whole tests as they are, fragments as the body of a test.

#[test]
fn my_lock_test() {
    let srv = rlockd::Server::start().unwrap();          // 127.0.0.1, free port
    let client = redis::Client::open(srv.url()).unwrap(); // redis://127.0.0.1:PORT
    let mut con = client.get_connection().unwrap();
    let ok: Option<String> = redis::cmd("SET").arg("lock").arg("me")
        .arg("NX").arg("PX").arg(30_000).query(&mut con).unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
} // server stops here

#[test]
fn options() -> Result<(), rlockd::Error> {
    let srv = rlockd::Server::start_with(rlockd::Config {
        requirepass: Some("secret".into()),
        databases: 16,
        params: vec![("notify-keyspace-events".into(), "KEA".into())],
        ..Default::default()
    })?;
    srv.url();   // redis://:secret@127.0.0.1:PORT
    srv.clock(); // the server's clock (all expiry reads it)
    srv.stop();  // or just drop it
    Ok(())
}

#[test]
fn lease_expires_while_the_holder_is_paused() {
    let srv = rlockd::Server::start().unwrap();
    let mut con = redis::Client::open(srv.url()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("SET").arg("lock").arg("me").arg("PX").arg(30_000).query(&mut con).unwrap();
    srv.clock().freeze(true);
    assert_eq!(srv.locks()[0].kind, "token");
    srv.advance_clock(30_000); // no sleeping: the lease is over now
    assert!(srv.locks().is_empty());
}

#[test]
fn cluster_seeds() {
    // In-process, from a Rust test: three nodes on free ports.
    let cluster = rlockd::Server::start_cluster(3).unwrap();
    let seeds = cluster.urls(); // ["redis://127.0.0.1:PORT", ...]
    assert_eq!(seeds.len(), 3);
}

#[test]
fn cluster_failover() {
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(3).with_replicas(1)).unwrap();
    cluster.failover(3).unwrap(); // node 3 (node 0's replica) takes node 0's slots
    assert_eq!(cluster.primary_of(0), Some(3));
}
