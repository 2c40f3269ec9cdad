//! A proxy's listener and its connections: each accepted client is joined
//! to a new connection to the upstream, and the bytes of each direction go
//! through the toxics of that `stream`, as Toxiproxy's links do.
//!
//! A direction is a reader (the socket into a queue of timestamped chunks,
//! up to 1,024 ahead, Toxiproxy's latency buffer) and a writer that takes
//! each chunk through the toxics in the order they were added, read afresh
//! for each chunk (a toxic added or removed acts on connections already
//! open). Per connection and toxic the `toxicity` dice are rolled once
//! (again when the toxic is updated): a toxic that lost the roll lets the
//! bytes through. When either direction ends, both sockets close, as in
//! Toxiproxy (a `reset_peer` closes them with a TCP RST: `SO_LINGER` 0).
//!
//! What each toxic does (Toxiproxy's semantics): `latency` holds a chunk
//! until `latency` ± `jitter` ms after it was read; `bandwidth` lets `rate`
//! KB/s through; `slow_close` waits `delay` ms before closing once the
//! source closed; `timeout` lets nothing through and closes after `timeout`
//! ms (0: never; removing it closes the connections it held);
//! `reset_peer` resets the connection `timeout` ms after the next bytes;
//! `slicer` cuts chunks into pieces around `average_size` ± `size_variation`
//! bytes, `delay` µs apart; `limit_data` closes once `bytes` went through.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::{sleep, sleep_until, Instant};

use super::toxic::{Kind, Stream, Toxic};

/// The toxics of a proxy, both streams, in the order they were added.
pub type Chain = Arc<Vec<Toxic>>;

/// A proxy's accept loop while it is enabled.
pub struct Running {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting, closes every connection, and returns once the
    /// listening socket and the connections are closed.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Starts accepting on `listener`, forwarding to `upstream`.
pub fn start(listener: TcpListener, upstream: String, chain: watch::Receiver<Chain>) -> Running {
    let (stop, mut stopped) = oneshot::channel();
    let task = tokio::spawn(async move {
        let mut conns = JoinSet::new();
        loop {
            tokio::select! {
                biased;
                _ = &mut stopped => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                accepted = listener.accept() => {
                    let Ok((client, _)) = accepted else {
                        // Out of descriptors, most likely: wait before trying again.
                        sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    conns.spawn(connection(client, upstream.clone(), chain.clone()));
                }
            }
        }
        drop(listener);
        conns.shutdown().await;
    });
    Running { stop, task }
}

/// How a direction ended.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Close {
    Fin,
    Reset,
}

async fn connection(client: TcpStream, upstream: String, chain: watch::Receiver<Chain>) {
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let (up_tx, up_rx) = mpsc::channel(1024);
    let (down_tx, down_rx) = mpsc::channel(1024);
    let close = {
        let up = direction(read(&mut cr, up_tx), Writer::new(Stream::Upstream, chain.clone()).run(up_rx, &mut sw));
        let down = direction(read(&mut sr, down_tx), Writer::new(Stream::Downstream, chain).run(down_rx, &mut cw));
        tokio::select! {
            c = up => c,
            c = down => c,
        }
    };
    if close == Close::Reset {
        // No FIN first (a write half shuts down when dropped): the sockets
        // close with linger 0, which sends an RST.
        for s in [cw.as_ref(), sw.as_ref()] {
            let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
        }
        cw.forget();
        sw.forget();
    }
}

/// A direction ends when its writer does; its reader runs beside it.
async fn direction(
    reader: impl std::future::Future<Output = ()>,
    writer: impl std::future::Future<Output = Close>,
) -> Close {
    tokio::pin!(reader, writer);
    let mut reading = true;
    loop {
        tokio::select! {
            c = &mut writer => return c,
            _ = &mut reader, if reading => reading = false,
        }
    }
}

/// A chunk read and when.
struct Chunk {
    at: Instant,
    data: Bytes,
}

/// Reads until the end or an error, then drops the sender: the writer sees
/// the source closed.
async fn read(src: &mut OwnedReadHalf, tx: mpsc::Sender<Chunk>) {
    let mut buf = BytesMut::with_capacity(32 * 1024);
    loop {
        buf.reserve(32 * 1024);
        match src.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let chunk = Chunk { at: Instant::now(), data: buf.split().freeze() };
                if tx.send(chunk).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// One direction's writer and what it keeps per toxic.
struct Writer {
    stream: Stream,
    chain: watch::Receiver<Chain>,
    /// The dice rolled per toxic generation: does it act on this link.
    rolled: HashMap<u64, bool>,
    /// When each `timeout` toxic (by generation) started holding this link.
    holding_since: HashMap<u64, Instant>,
    /// The `timeout` toxics (by name) this link has been under.
    timeouts_seen: HashSet<String>,
    /// Bytes through each `limit_data` toxic (by name).
    sent: HashMap<String, i64>,
}

impl Writer {
    fn new(stream: Stream, chain: watch::Receiver<Chain>) -> Writer {
        Writer {
            stream,
            chain,
            rolled: HashMap::new(),
            holding_since: HashMap::new(),
            timeouts_seen: HashSet::new(),
            sent: HashMap::new(),
        }
    }

    /// This direction's toxics that act on this link, in order.
    fn active(&mut self) -> Vec<Toxic> {
        let chain = self.chain.borrow_and_update().clone();
        let mine: Vec<&Toxic> = chain.iter().filter(|t| t.stream == self.stream).collect();
        self.rolled.retain(|g, _| mine.iter().any(|t| t.generation == *g));
        let mut out = Vec::new();
        for t in mine {
            let hit = *self.rolled.entry(t.generation).or_insert_with(|| rand::rng().random::<f32>() < t.toxicity);
            if hit {
                out.push(t.clone());
            }
        }
        out
    }

    /// Whether a `timeout` toxic this link was under has been removed
    /// (Toxiproxy then closes the link).
    fn timeout_removed(&mut self) -> bool {
        let chain = self.chain.borrow().clone();
        let now: HashSet<&str> = chain
            .iter()
            .filter(|t| t.stream == self.stream && matches!(t.kind, Kind::Timeout { .. }))
            .map(|t| t.name.as_str())
            .collect();
        let gone = self.timeouts_seen.iter().any(|n| !now.contains(n.as_str()));
        self.timeouts_seen = now.into_iter().map(str::to_string).collect();
        gone
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Chunk>, dest: &mut OwnedWriteHalf) -> Close {
        loop {
            if self.timeout_removed() {
                return Close::Fin;
            }
            let active = self.active();
            if let Some(t) = active.iter().find(|t| matches!(t.kind, Kind::Timeout { .. })) {
                let Kind::Timeout { timeout } = t.kind else { unreachable!() };
                let since = *self.holding_since.entry(t.generation).or_insert_with(Instant::now);
                let deadline = (timeout > 0).then(|| since + ms(timeout));
                tokio::select! {
                    biased;
                    _ = self.chain.changed() => continue,
                    _ = sleep_until(deadline.unwrap_or(since)), if deadline.is_some() => return Close::Fin,
                    chunk = rx.recv() => match chunk {
                        None => return Close::Fin,
                        Some(_) => continue, // held back for good
                    },
                }
            }
            let chunk = tokio::select! {
                biased;
                _ = self.chain.changed() => continue,
                chunk = rx.recv() => chunk,
            };
            let Some(chunk) = chunk else {
                // The source closed: slow_close waits before passing it on.
                if let Some(d) = active.iter().find_map(|t| match t.kind {
                    Kind::SlowClose { delay } => Some(delay),
                    _ => None,
                }) {
                    sleep(ms(d)).await;
                }
                return Close::Fin;
            };
            if let Some(close) = self.pass(chunk, &active, dest).await {
                return close;
            }
        }
    }

    /// Takes one chunk through the toxics and writes it; `Some` when the
    /// link is to close.
    async fn pass(&mut self, chunk: Chunk, active: &[Toxic], dest: &mut OwnedWriteHalf) -> Option<Close> {
        let mut at = chunk.at;
        let mut data = chunk.data;
        let mut slicer = None;
        let mut rate = 0;
        let mut limit_reached = false;
        for t in active {
            match t.kind {
                Kind::Latency { latency, jitter } => {
                    let mut delay = latency;
                    if jitter > 0 {
                        delay += rand::rng().random_range(-jitter..jitter);
                    }
                    let until = at + ms(delay.max(0));
                    if until > Instant::now() {
                        // Removing the toxic lets a held chunk go at once.
                        let name = t.name.clone();
                        let removed = async {
                            loop {
                                if self.chain.changed().await.is_err() {
                                    return std::future::pending().await;
                                }
                                if !self.chain.borrow().iter().any(|x| x.name == name) {
                                    return;
                                }
                            }
                        };
                        tokio::select! {
                            _ = sleep_until(until) => {}
                            _ = removed => {}
                        }
                    }
                    at = until;
                }
                Kind::ResetPeer { timeout } => {
                    sleep(ms(timeout)).await;
                    return Some(Close::Reset);
                }
                Kind::LimitData { bytes } => {
                    let sent = self.sent.entry(t.name.clone()).or_insert(0);
                    let remaining = (bytes - *sent).max(0) as usize;
                    if data.len() > remaining {
                        data.truncate(remaining);
                    }
                    *sent += data.len() as i64;
                    if *sent >= bytes {
                        limit_reached = true;
                    }
                }
                Kind::Slicer { average_size, size_variation, delay } => {
                    slicer = Some((average_size, size_variation, delay));
                }
                Kind::Bandwidth { rate: r } => rate = r,
                Kind::Noop | Kind::Timeout { .. } | Kind::SlowClose { .. } => {}
            }
        }
        let pieces = match slicer {
            Some((avg, var, _)) => slices(&data, avg, var),
            None => vec![data],
        };
        // The slicer's pieces are `delay` µs apart on average: the timer
        // counts milliseconds, so the pieces due by the time a sleep ends
        // go together.
        let mut due = Instant::now();
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                if let Some((_, _, delay)) = slicer {
                    due += Duration::from_micros(delay.max(0) as u64);
                    if due > Instant::now() {
                        sleep_until(due).await;
                    }
                }
            }
            if write(dest, piece, rate).await.is_err() {
                return Some(Close::Fin);
            }
        }
        limit_reached.then_some(Close::Fin)
    }
}

/// Writes `data`, at `rate` KB/s when it is positive (in pieces of 100 ms).
async fn write(dest: &mut OwnedWriteHalf, data: &[u8], rate: i64) -> std::io::Result<()> {
    if rate <= 0 {
        return dest.write_all(data).await;
    }
    for piece in data.chunks((rate as usize).saturating_mul(100).max(1)) {
        sleep(Duration::from_micros(piece.len() as u64 * 1000 / rate as u64)).await;
        dest.write_all(piece).await?;
    }
    Ok(())
}

/// Toxiproxy's slicer: halves a chunk until each piece is within
/// `variation` of `average` bytes, moving each cut by up to ± `variation`.
fn slices(data: &Bytes, average: i64, variation: i64) -> Vec<Bytes> {
    fn cut(start: i64, end: i64, average: i64, variation: i64, out: &mut Vec<(i64, i64)>) {
        if (end - start) - average <= variation || end - start < 2 {
            out.push((start, end));
            return;
        }
        let mut mid = start + (end - start) / 2;
        if variation > 0 {
            mid += rand::rng().random_range(-variation..variation);
        }
        let mid = mid.clamp(start + 1, end - 1);
        cut(start, mid, average, variation, out);
        cut(mid, end, average, variation, out);
    }
    let mut bounds = Vec::new();
    cut(0, data.len() as i64, average, variation.max(0), &mut bounds);
    bounds.into_iter().map(|(a, b)| data.slice(a as usize..b as usize)).collect()
}

fn ms(n: i64) -> Duration {
    Duration::from_millis(n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slicer_cuts_into_pieces_near_the_average() {
        let data = Bytes::from(vec![7u8; 1000]);
        let pieces = slices(&data, 10, 0);
        assert!(pieces.len() >= 64, "{}", pieces.len());
        assert!(pieces.iter().all(|p| p.len() <= 10 && !p.is_empty()));
        assert_eq!(pieces.iter().map(Bytes::len).sum::<usize>(), 1000);
        let pieces = slices(&data, 100, 20);
        assert_eq!(pieces.concat(), vec![7u8; 1000]);
        assert!(pieces.iter().all(|p| p.len() <= 120));
    }
}
