//! Arrival order across connections (`src/server/connection.rs`): commands
//! that have fully arrived run in the order their last byte was read, as on
//! redis-server's event loop; blocked clients are served in the order they
//! blocked; every subscriber sees one order of
//! messages and keyspace events. These are correctness properties: no
//! sleeps, no wall-clock thresholds.

use crate::common;
use crate::common::oracle::Oracle;
use crate::common::resp::{encode, RawConn, Value};

const ROUNDS: usize = 300;

/// The Redlock race of issue 17: two clients send the same `SET key token
/// NX PX` to two servers, client 1's commands written first (1 → A, 1 → B,
/// 2 → A, 2 → B, from one thread). Returns in how many rounds A and B chose
/// different winners.
fn split_winners(a: u16, b: u16) -> usize {
    let mut conns = [RawConn::connect(a), RawConn::connect(b), RawConn::connect(a), RawConn::connect(b)];
    let mut splits = 0;
    for round in 0..ROUNDS {
        let key = format!("race:{}:{round}", std::process::id());
        for (i, w) in conns.iter_mut().enumerate() {
            let token = format!("client{}", i / 2 + 1);
            let frame = encode(&[
                b"SET".to_vec(),
                key.clone().into_bytes(),
                token.into_bytes(),
                b"NX".to_vec(),
                b"PX".to_vec(),
                b"5000".to_vec(),
            ]);
            w.send_raw(&frame);
        }
        let won: Vec<bool> = conns
            .iter_mut()
            .map(|r| match r.read() {
                Some(Value::Simple(ok)) if ok == b"OK" => true,
                Some(Value::Bulk(None)) | Some(Value::Null) => false,
                v => panic!("unexpected reply {v:?}"),
            })
            .collect();
        // Exactly one client wins on each server.
        assert!(won[0] != won[2] && won[1] != won[3], "round {round}: {won:?}");
        if won[0] != won[1] {
            splits += 1;
        }
    }
    splits
}

#[test]
fn redlock_race_picks_the_same_winner_on_every_server_as_redis_does() {
    let (a, b) = (common::server(), common::server());
    let ours = split_winners(a.port(), b.port());
    let theirs = match (Oracle::start(), Oracle::start()) {
        (Some(ra), Some(rb)) => Some(split_winners(ra.port, rb.port)),
        _ => None,
    };
    eprintln!("split winners in {ROUNDS} rounds: rlockd {ours}, redis-server {theirs:?}");
    // Redis shows none on this race; allow a little noise over its count.
    let allowed = theirs.unwrap_or(0) + 2;
    assert!(ours <= allowed, "rlockd split the winners in {ours} of {ROUNDS} rounds (redis-server: {theirs:?})");
}

#[test]
fn blocked_clients_are_served_in_the_order_they_blocked() {
    let srv = common::server();
    let mut admin = common::conn(&srv);
    let mut waiters = Vec::new();
    for i in 0..6 {
        let mut c = RawConn::connect(srv.port());
        c.send(&[b"BLPOP".to_vec(), b"queue".to_vec(), b"0".to_vec()]);
        common::wait_blocked(&mut admin, i + 1);
        waiters.push(c);
    }
    let mut pusher = RawConn::connect(srv.port());
    let values: Vec<String> = (0..6).map(|i| format!("v{i}")).collect();
    let mut push = vec![b"RPUSH".to_vec(), b"queue".to_vec()];
    push.extend(values.iter().map(|v| v.clone().into_bytes()));
    assert_eq!(pusher.cmd(&push.iter().map(|a| std::str::from_utf8(a).unwrap()).collect::<Vec<_>>()), Value::Int(6));
    for (i, c) in waiters.iter_mut().enumerate() {
        let got = c.read().expect("reply");
        let want = Value::Agg(
            b'*',
            Some(vec![Value::Bulk(Some(b"queue".to_vec())), Value::Bulk(Some(values[i].clone().into_bytes()))]),
        );
        assert_eq!(got, want, "waiter {i} (blocked {i}th) gets the {i}th value");
    }
}

/// Several publishers and writers at once: every subscriber sees the same
/// sequence of messages and keyspace events (one server order), whatever
/// its protocol or whether it matched by channel or pattern.
#[test]
fn every_subscriber_sees_messages_and_keyspace_events_in_one_order() {
    const WRITERS: usize = 4;
    const N: usize = 200;
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]), Value::Simple(b"OK".to_vec()));
    let mut subs = Vec::new();
    for (resp3, pattern) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut c = RawConn::connect(port);
        if resp3 {
            c.cmd(&["HELLO", "3"]);
        }
        if pattern {
            c.cmd(&["PSUBSCRIBE", "ord*"]);
            c.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
        } else {
            c.cmd(&["SUBSCRIBE", "ord"]);
            c.cmd(&["SUBSCRIBE", "__keyevent@0__:set"]);
        }
        subs.push(c);
    }
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            std::thread::spawn(move || {
                let mut c = RawConn::connect(port);
                for chunk in (0..N).collect::<Vec<_>>().chunks(8) {
                    let mut batch = Vec::new();
                    for i in chunk {
                        batch.extend(encode(&[b"PUBLISH".to_vec(), b"ord".to_vec(), format!("{w}:{i}").into_bytes()]));
                        batch.extend(encode(&[b"SET".to_vec(), format!("k{w}:{i}").into_bytes(), b"v".to_vec()]));
                    }
                    c.send_raw(&batch);
                    for _ in 0..chunk.len() * 2 {
                        c.read().expect("reply");
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    // What each subscriber saw, reduced to the message or key it names.
    let sequences: Vec<Vec<Vec<u8>>> = subs
        .into_iter()
        .map(|mut c| {
            (0..WRITERS * N * 2)
                .map(|_| match c.read().expect("message") {
                    Value::Agg(_, Some(items)) => match items.last() {
                        Some(Value::Bulk(Some(payload))) => payload.clone(),
                        v => panic!("no payload: {v:?}"),
                    },
                    v => panic!("not a message: {v:?}"),
                })
                .collect()
        })
        .collect();
    for (i, s) in sequences.iter().enumerate().skip(1) {
        assert_eq!(s, &sequences[0], "subscriber {i} saw another order than subscriber 0");
    }
    // Each writer's own order is kept inside the one order.
    for w in 0..WRITERS {
        let mine: Vec<&Vec<u8>> = sequences[0].iter().filter(|p| p.starts_with(format!("{w}:").as_bytes())).collect();
        assert_eq!(mine.len(), N);
        for (i, p) in mine.iter().enumerate() {
            assert_eq!(**p, format!("{w}:{i}").into_bytes());
        }
    }
}
