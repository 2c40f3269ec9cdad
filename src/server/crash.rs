//! [`Server::crash`] and [`Server::revive`]: test control's crash of a node
//! from Rust (as `RLOCKD REPL CRASH`/`REVIVE`; the detail is in
//! `cmd/crash.rs`).

impl super::Server {
    /// Crashes this node as a killed redis-server: its port refuses
    /// connections, its clients are cut, what its replicas had not received
    /// is lost and their links go down. Sentinels watching it flag it down
    /// after their `down-after-milliseconds` — at once with `noticed_at_once`
    /// — and fail over. Its state stays for [`revive`](Self::revive).
    ///
    /// ```no_run
    /// let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).unwrap();
    /// let ip = "127.0.0.1".parse().unwrap();
    /// let sentinels = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).unwrap();
    /// nodes[0].crash(true).unwrap();
    /// let new = sentinels[0].wait_for_master("mymaster", nodes[1].addr(), std::time::Duration::from_secs(10));
    /// assert!(new);
    /// nodes[0].revive().unwrap(); // it comes back as the new primary's replica
    /// ```
    pub fn crash(&self, noticed_at_once: bool) -> Result<(), crate::error::Error> {
        let shared = self.shared.clone();
        on_own_runtime(async move { crate::cmd::crash::crash(&shared, noticed_at_once).await })
            .map_err(crate::error::Error::Config)
    }

    /// Brings this crashed node back on its address (see
    /// [`crash`](Self::crash)).
    pub fn revive(&self) -> Result<(), crate::error::Error> {
        let shared = self.shared.clone();
        on_own_runtime(async move { crate::cmd::crash::revive(&shared).await }).map_err(crate::error::Error::Config)
    }
}

/// Runs `f` on a runtime of its own, on a helper thread (also inside
/// `#[tokio::test]`).
fn on_own_runtime<R: Send>(f: impl std::future::Future<Output = R> + Send) -> R {
    std::thread::scope(|s| {
        s.spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f))
            .join()
            .expect("crash control")
    })
}
