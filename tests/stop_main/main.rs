//! Starting and stopping servers from a plain `main` (no test harness, no
//! runtime of the caller's): hundreds of servers, none of which ever sees a
//! client, must each stop when dropped.

fn main() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..300 {
            let srv = rlockd::Server::start().expect("start rlockd");
            drop(srv);
        }
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(()) => println!("300 servers started and stopped from main: 1 passed, 0 failed"),
        Err(_) => {
            eprintln!("a server did not stop when dropped");
            std::process::exit(1);
        }
    }
}
