//! Listener, server lifecycle and background tasks.
//!
//! Each [`Server`] owns its own tokio runtime on its own threads, so it works
//! the same from `#[test]`, `#[tokio::test]` (any flavour) and a binary, and
//! many servers can live in one process. Dropping the handle stops it.

pub mod connection;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::clock::Clock;
use crate::config::Config;
use crate::core::Shared;
use crate::error::Error;

/// A running server. Stops when dropped (or with [`Server::stop`]).
pub struct Server {
    addr: SocketAddr,
    password: Option<String>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a server on `127.0.0.1`, on a free port, with defaults.
    pub fn start() -> Result<Server, Error> {
        Self::start_with(Config::default())
    }

    /// Starts a server with `config`. Returns once it accepts connections.
    pub fn start_with(config: Config) -> Result<Server, Error> {
        let std_listener = std::net::TcpListener::bind(config.bind)
            .map_err(|source| Error::Bind { addr: config.bind.to_string(), source })?;
        std_listener.set_nonblocking(true).map_err(Error::Runtime)?;
        let addr = std_listener.local_addr().map_err(Error::Runtime)?;
        let mut cfg = config.clone();
        cfg.bind = addr;
        let shared = Arc::new(Shared::new(&cfg, crate::cmd::table().len())?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.worker_threads.max(2))
            .thread_stack_size(crate::script::SCRIPT_THREAD_STACK)
            .thread_name("rlockd")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let s2 = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("rlockd-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(std_listener) {
                        Ok(l) => run(l, s2).await,
                        Err(e) => tracing::error!("cannot register listener: {e}"),
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .map_err(Error::Runtime)?;
        tracing::debug!(%addr, "rlockd listening");
        Ok(Server { addr, password: config.requirepass.clone(), shared, thread: Some(thread) })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `redis://[:password@]host:port` for clients.
    pub fn url(&self) -> String {
        match &self.password {
            Some(pw) => format!("redis://:{}@{}", pw, self.addr),
            None => format!("redis://{}", self.addr),
        }
    }

    /// The server's clock (all expiry and `TIME` read it).
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// True once shutdown was requested (by `SHUTDOWN`, a signal or `stop`).
    pub fn is_shutting_down(&self) -> bool {
        *self.shared.shutdown.borrow()
    }

    /// A receiver that changes when shutdown is requested.
    pub fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shared.shutdown.subscribe()
    }

    /// Resolves once shutdown is requested (by `SHUTDOWN`, a signal handler
    /// or [`stop`](Self::stop)), also when that happened before the call.
    pub fn shutdown_requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.shared.shutdown.subscribe();
        async move { crate::core::shutdown_requested(&mut rx).await }
    }

    /// Stops the server and waits for its threads to finish.
    pub fn stop(mut self) {
        self.shutdown_and_join();
    }

    /// Blocks until the server stops (after `SHUTDOWN` or [`stop`](Self::stop) from elsewhere).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn shutdown_and_join(&mut self) {
        self.shared.request_shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_and_join();
    }
}

async fn run(listener: TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    tokio::spawn(active_expire(shared.clone()));
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => break,
            r = listener.accept() => match r {
                Ok((socket, peer)) => {
                    tokio::spawn(connection::handle(shared.clone(), socket, peer));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }
    tracing::debug!("rlockd stopping");
}

/// Active expiry: every `1000/hz` ms, delete every due key in slices of at
/// most ~1 ms of lock time, yielding between slices so other clients never
/// wait long.
async fn active_expire(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let hz = {
            let mut core = shared.core.lock().await;
            core.stats.sample_ops(shared.clock.now_ms());
            core.config.hz.max(1)
        };
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = tokio::time::sleep(Duration::from_millis(1000 / hz)) => {}
        }
        loop {
            let mut more = false;
            {
                let mut core = shared.core.lock().await;
                if !core.active_expire || shared.script.running.load(Ordering::Relaxed) {
                    break;
                }
                let now = shared.clock.now_ms();
                let start = Instant::now();
                let ks = &mut core.ks;
                'dbs: for i in 0..ks.dbs.len() {
                    loop {
                        let n = ks.dbs[i].expire_due(i, now, 128, &mut ks.sig);
                        if n < 128 {
                            break;
                        }
                        if start.elapsed() > Duration::from_micros(1000) {
                            more = true;
                            break 'dbs;
                        }
                    }
                }
                core.after_command();
            }
            if !more {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}
