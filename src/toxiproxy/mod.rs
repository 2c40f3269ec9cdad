//! Toxiproxy's HTTP API, served by the `rlockd` binary (`--toxiproxy
//! PORT`), so that tests written against Toxiproxy — its clients in every
//! language, `@testcontainers/toxiproxy` — inject their network faults into
//! rlockd unchanged.
//!
//! A proxy is what it is in Toxiproxy: a TCP listener on its `listen`
//! address forwarding each connection to its `upstream`, through the
//! toxics of the proxy (`link.rs`). Clients connect to the proxy's address,
//! as they do with Toxiproxy; the faults are made in the bytes between the
//! two sockets, so they act on any upstream, an rlockd node or not.
//! rlockd's own `RLOCKD FAULT`s work on commands instead and need no proxy.
//! At start one proxy per node is listed, named `rlockd-<node port>`,
//! listening on a free port of the bind address and forwarding to that
//! node; a test may use it, delete it or create its own.
//!
//! The API is Toxiproxy 2.12's: the routes of its `api.go`, the JSON it
//! prints (field order included), its status codes and error bodies
//! (`{"error":"proxy not found","status":404}` as plain text with a
//! newline, as Go's `http.Error` sends it), its defaults (a toxic's
//! `downstream`, toxicity 1, name `<type>_<stream>`; a proxy enabled) and
//! its refusal of browsers (a `User-Agent` starting with `Mozilla/`).
//! Differences: a proxy without a `listen` address listens on a free port
//! of 127.0.0.1 (Toxiproxy: every address); a body Go's JSON decoder
//! refuses is refused with serde_json's words after `bad request body: `.

mod http;
mod link;
mod toxic;

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{watch, Mutex};

use http::{Request, Response};
use link::{Chain, Running};
use toxic::{json_str, string_field, top_type_error, ApiError, Toxic};

/// The Toxiproxy version `/version` reports: the API served is its.
pub const TOXIPROXY_VERSION: &str = "2.12.0";

/// The API server, on its own thread, until dropped.
pub struct ToxiproxyApi {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ToxiproxyApi {
    /// Listens on `bind` and lists one proxy per node (`rlockd-<port>`,
    /// listening on a free port of `proxy_ip`).
    pub fn start(bind: SocketAddr, proxy_ip: std::net::IpAddr, nodes: &[SocketAddr]) -> std::io::Result<ToxiproxyApi> {
        let listener = std::net::TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let nodes = nodes.to_vec();
        let thread = std::thread::Builder::new().name("toxiproxy".into()).spawn(move || {
            rt.block_on(async move {
                let state = Arc::new(Mutex::new(State::default()));
                let mut first_error = None;
                {
                    let mut st = state.lock().await;
                    for node in nodes {
                        let name = format!("rlockd-{}", node.port());
                        let listen = SocketAddr::new(proxy_ip, 0).to_string();
                        if let Err(e) = st.add(&name, &listen, &node.to_string(), true) {
                            first_error.get_or_insert(e.message);
                        }
                    }
                }
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Some(e.to_string()));
                        return;
                    }
                };
                let _ = ready_tx.send(first_error);
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                            continue;
                        };
                        tokio::spawn(serve(http::Conn::new(stream), state.clone()));
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stopped => {}
                }
                let mut st = state.lock().await;
                for p in std::mem::take(&mut st.proxies).into_values() {
                    if let Some(r) = p.running {
                        r.stop().await;
                    }
                }
            });
        })?;
        match ready_rx.recv() {
            Ok(None) => Ok(ToxiproxyApi { addr, stop: Some(stop), thread: Some(thread) }),
            Ok(Some(e)) => Err(std::io::Error::other(e)),
            Err(_) => Err(std::io::Error::other("the Toxiproxy API thread ended")),
        }
    }

    /// Where the API listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ToxiproxyApi {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Default)]
struct State {
    proxies: BTreeMap<String, Proxy>,
    /// Numbers each toxic created or updated.
    generation: u64,
}

struct Proxy {
    name: String,
    listen: String,
    upstream: String,
    enabled: bool,
    /// In the order they were added.
    toxics: Vec<Toxic>,
    chain: watch::Sender<Chain>,
    running: Option<Running>,
}

/// Go's error for a name that is not taken.
fn proxy_not_found() -> ApiError {
    ApiError::new("proxy not found", 404)
}

impl Proxy {
    fn new(name: &str, listen: &str, upstream: &str) -> Proxy {
        Proxy {
            name: name.to_string(),
            listen: listen.to_string(),
            upstream: upstream.to_string(),
            enabled: false,
            toxics: Vec::new(),
            chain: watch::Sender::new(Arc::new(Vec::new())),
            running: None,
        }
    }

    /// Toxiproxy's order: the upstream toxics, then the downstream ones.
    fn toxic_array(&self) -> Vec<&Toxic> {
        let up = self.toxics.iter().filter(|t| t.stream == toxic::Stream::Upstream);
        up.chain(self.toxics.iter().filter(|t| t.stream == toxic::Stream::Downstream)).collect()
    }

    fn toxics_json(&self) -> String {
        let parts: Vec<String> = self.toxic_array().iter().map(|t| t.json()).collect();
        format!("[{}]", parts.join(","))
    }

    fn json(&self) -> String {
        format!(
            "{{\"name\":{},\"listen\":{},\"upstream\":{},\"enabled\":{},\"toxics\":{}}}",
            json_str(&self.name),
            json_str(&self.listen),
            json_str(&self.upstream),
            self.enabled,
            self.toxics_json()
        )
    }

    fn publish(&self) {
        self.chain.send_replace(Arc::new(self.toxics.clone()));
    }

    /// Starts listening (Toxiproxy's `start`): the address it got becomes
    /// `listen`.
    fn start(&mut self) -> Result<(), ApiError> {
        let addr = resolve(&self.listen)?;
        let listener = bind(addr)
            .map_err(|e| ApiError::new(format!("listen tcp {}: bind: {}", self.listen, go_errno(&e)), 500))?;
        if let Ok(a) = listener.local_addr() {
            self.listen = a.to_string();
        }
        self.running = Some(link::start(listener, self.upstream.clone(), self.chain.subscribe()));
        self.enabled = true;
        Ok(())
    }

    /// Stops listening and closes every connection.
    async fn stop(&mut self) {
        self.enabled = false;
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }

    /// Toxiproxy's `Differs`: another listen address (resolved) or upstream.
    fn differs(&self, listen: &str, upstream: &str) -> Result<bool, ApiError> {
        let resolved = resolve(listen)?;
        Ok(resolved.to_string() != self.listen || upstream != self.upstream)
    }
}

/// A listen address as Go's `ResolveTCPAddr` takes it (`host:port`, the
/// host a name or an address; empty: see the module's differences).
fn resolve(listen: &str) -> Result<SocketAddr, ApiError> {
    let text = if listen.is_empty() { "127.0.0.1:0" } else { listen };
    let err = |why: &str| ApiError::new(format!("address {listen}: {why}"), 500);
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(err("missing port in address"));
    };
    let port: u16 = port.parse().map_err(|_| ApiError::new(format!("lookup tcp/{port}: unknown port"), 500))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| ApiError::new(format!("lookup {host}: no such host"), 500))?
        .collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| err("no suitable address found"))
}

fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(socket.into())
}

/// An OS error as Go prints it: `address already in use`.
fn go_errno(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    let mut c = text.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => text,
    }
}

impl State {
    fn get(&mut self, name: &str) -> Result<&mut Proxy, ApiError> {
        self.proxies.get_mut(name).ok_or_else(proxy_not_found)
    }

    /// `ProxyCollection.Add`.
    fn add(&mut self, name: &str, listen: &str, upstream: &str, enabled: bool) -> Result<&Proxy, ApiError> {
        if self.proxies.contains_key(name) {
            return Err(ApiError::new("proxy already exists", 409));
        }
        let mut p = Proxy::new(name, listen, upstream);
        if enabled {
            p.start()?;
        }
        Ok(self.proxies.entry(name.to_string()).or_insert(p))
    }

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }
}

/// One API connection: requests answered in turn.
async fn serve(mut conn: http::Conn, state: Arc<Mutex<State>>) {
    loop {
        let req = match conn.request().await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(bad) => {
                conn.respond(None, bad).await;
                return;
            }
        };
        let resp = if req.user_agent.starts_with("Mozilla/") {
            Response::text(403, "User agent not allowed")
        } else {
            let mut st = state.lock().await;
            route(&mut st, &req).await.unwrap_or_else(|e| {
                Response::text(e.status, &format!("{{\"error\":{},\"status\":{}}}", json_str(&e.message), e.status))
            })
        };
        if !conn.respond(Some(&req), resp).await {
            return;
        }
    }
}

/// The routes of Toxiproxy's `api.go`; an unknown path is gorilla/mux's
/// 404, a known path with another method its 405.
async fn route(st: &mut State, req: &Request) -> Result<Response, ApiError> {
    let parts: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    let m = req.method.as_str();
    let update = m == "POST" || m == "PATCH";
    match (parts.as_slice(), m) {
        (["reset"], "POST") => reset(st).await,
        (["proxies"], "GET") => Ok(index(st)),
        (["proxies"], "POST") => create_proxy(st, &req.body).await,
        (["populate"], "POST") => Ok(populate(st, &req.body).await),
        (["proxies", p], "GET") => Ok(Response::json(200, st.get(p)?.json())),
        (["proxies", p], _) if update => update_proxy(st, p, &req.body).await,
        (["proxies", p], "DELETE") => {
            let mut proxy = st.proxies.remove(*p).ok_or_else(proxy_not_found)?;
            proxy.stop().await;
            Ok(Response::empty(204))
        }
        (["proxies", p, "toxics"], "GET") => Ok(Response::json(200, st.get(p)?.toxics_json())),
        (["proxies", p, "toxics"], "POST") => {
            let generation = st.next_generation();
            let proxy = st.get(p)?;
            let t = toxic::create(&req.body, generation, |n| proxy.toxics.iter().any(|t| t.name == n))?;
            let body = t.json();
            proxy.toxics.push(t);
            proxy.publish();
            Ok(Response::json(200, body))
        }
        (["proxies", p, "toxics", t], "GET") => {
            let proxy = st.get(p)?;
            let t = proxy.toxics.iter().find(|x| x.name == *t).ok_or_else(toxic_not_found)?;
            Ok(Response::json(200, t.json()))
        }
        (["proxies", p, "toxics", t], _) if update => {
            let generation = st.next_generation();
            let proxy = st.get(p)?;
            let toxic = proxy.toxics.iter_mut().find(|x| x.name == *t).ok_or_else(toxic_not_found)?;
            toxic.update(&req.body, generation)?;
            let body = toxic.json();
            proxy.publish();
            Ok(Response::json(200, body))
        }
        (["proxies", p, "toxics", t], "DELETE") => {
            let proxy = st.get(p)?;
            let i = proxy.toxics.iter().position(|x| x.name == *t).ok_or_else(toxic_not_found)?;
            proxy.toxics.remove(i);
            proxy.publish();
            Ok(Response::empty(204))
        }
        (["version"], "GET") => Ok(Response {
            status: 200,
            content_type: "application/json;charset=utf-8",
            body: format!("{{\"version\": \"{TOXIPROXY_VERSION}\"}}\n").into_bytes(),
        }),
        (
            ["reset"]
            | ["proxies"]
            | ["populate"]
            | ["proxies", _]
            | ["proxies", _, "toxics"]
            | ["proxies", _, "toxics", _]
            | ["version"],
            _,
        ) => Ok(Response::empty(405)),
        _ => Ok(Response::text(404, "404 page not found")),
    }
}

fn toxic_not_found() -> ApiError {
    ApiError::new("toxic not found", 404)
}

fn index(st: &State) -> Response {
    let parts: Vec<String> = st.proxies.values().map(|p| format!("{}:{}", json_str(&p.name), p.json())).collect();
    Response::json(200, format!("{{{}}}", parts.join(",")))
}

/// `POST /reset`: every proxy enabled, every toxic removed.
async fn reset(st: &mut State) -> Result<Response, ApiError> {
    for p in st.proxies.values_mut() {
        if !p.enabled {
            p.start()?;
        }
        p.toxics.clear();
        p.publish();
    }
    Ok(Response::empty(204))
}

/// A proxy's fields from a body: `(name, listen, upstream, enabled)`, each
/// `None` when absent.
type ProxyInput = (Option<String>, Option<String>, Option<String>, Option<bool>);

fn proxy_input(v: &Value, go_type: &str) -> Result<ProxyInput, ApiError> {
    let Value::Object(obj) = v else { return Err(top_type_error(v, go_type)) };
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(toxic::go_type_error(other, "Proxy.enabled", "bool")),
    };
    Ok((
        string_field(obj, "name", "Proxy.name")?,
        string_field(obj, "listen", "Proxy.listen")?,
        string_field(obj, "upstream", "Proxy.upstream")?,
        enabled,
    ))
}

async fn create_proxy(st: &mut State, body: &[u8]) -> Result<Response, ApiError> {
    let v = toxic::parse_body(body)?;
    let (name, listen, upstream, enabled) = proxy_input(&v, "toxiproxy.Proxy")?;
    let name = name.unwrap_or_default();
    let upstream = upstream.unwrap_or_default();
    if name.is_empty() {
        return Err(ApiError::new("missing required field: name", 400));
    }
    if upstream.is_empty() {
        return Err(ApiError::new("missing required field: upstream", 400));
    }
    let p = st.add(&name, &listen.unwrap_or_default(), &upstream, enabled.unwrap_or(true))?;
    Ok(Response::json(201, p.json()))
}

/// `POST /proxies/{proxy}`: Toxiproxy's `Update`. A new listen address or
/// upstream stops the proxy first; then it is started or stopped as
/// `enabled` says.
async fn update_proxy(st: &mut State, name: &str, body: &[u8]) -> Result<Response, ApiError> {
    let p = st.get(name)?;
    let v = toxic::parse_body(body)?;
    let (_, listen, upstream, enabled) = proxy_input(&v, "toxiproxy.Proxy")?;
    let listen = listen.unwrap_or_else(|| p.listen.clone());
    let upstream = upstream.unwrap_or_else(|| p.upstream.clone());
    let enabled = enabled.unwrap_or(p.enabled);
    if p.differs(&listen, &upstream)? {
        p.stop().await;
        p.listen = listen;
        p.upstream = upstream;
    }
    if enabled != p.enabled {
        if enabled {
            p.start()?;
        } else {
            p.stop().await;
        }
    }
    Ok(Response::json(200, p.json()))
}

/// `POST /populate`: each proxy of the list created, or replaced when its
/// listen address or upstream differs (an identical one is kept as it is).
async fn populate(st: &mut State, body: &[u8]) -> Response {
    let reply = |done: Option<Vec<String>>, err: Option<ApiError>| {
        let proxies = done.map_or("null".to_string(), |d| format!("[{}]", d.join(",")));
        match err {
            None => Response::json(201, format!("{{\"proxies\":{proxies}}}")),
            Some(e) => Response::json(
                e.status,
                format!("{{\"error\":{},\"status\":{},\"proxies\":{proxies}}}", json_str(&e.message), e.status),
            ),
        }
    };
    let inputs = match toxic::parse_body(body) {
        Ok(Value::Array(items)) => {
            match items.iter().map(|i| proxy_input(i, "toxiproxy.Proxy")).collect::<Result<Vec<_>, _>>() {
                Ok(v) => v,
                Err(e) => return reply(None, Some(e)),
            }
        }
        Ok(other) => return reply(None, Some(top_type_error(&other, "[]struct { toxiproxy.Proxy; Enabled *bool }"))),
        Err(e) => return reply(None, Some(e)),
    };
    for (i, (name, _, upstream, _)) in inputs.iter().enumerate() {
        if name.as_deref().unwrap_or_default().is_empty() {
            return reply(None, Some(ApiError::new(format!("missing required field: name at proxy {}", i + 1), 400)));
        }
        if upstream.as_deref().unwrap_or_default().is_empty() {
            return reply(
                None,
                Some(ApiError::new(format!("missing required field: upstream at proxy {}", i + 1), 400)),
            );
        }
    }
    let mut done = Vec::new();
    for (name, listen, upstream, enabled) in inputs {
        let (name, upstream) = (name.unwrap_or_default(), upstream.unwrap_or_default());
        let listen = listen.unwrap_or_default();
        if let Some(existing) = st.proxies.get_mut(&name) {
            match existing.differs(&listen, &upstream) {
                Ok(false) => {
                    done.push(existing.json());
                    continue;
                }
                Ok(true) => existing.stop().await,
                Err(e) => return reply(Some(done), Some(e)),
            }
            st.proxies.remove(&name);
        }
        match st.add(&name, &listen, &upstream, enabled.unwrap_or(true)) {
            Ok(p) => done.push(p.json()),
            Err(e) => return reply(Some(done), Some(e)),
        }
    }
    reply(Some(done), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_resolve_as_go_does() {
        assert_eq!(resolve("127.0.0.1:0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(resolve("localhost:26379").unwrap().to_string(), "127.0.0.1:26379");
        assert_eq!(resolve("[::1]:5").unwrap().to_string(), "[::1]:5");
        assert_eq!(resolve("nohost").unwrap_err().message, "address nohost: missing port in address");
        assert_eq!(go_errno(&std::io::Error::from_raw_os_error(libc::EADDRINUSE)), "address already in use");
    }
}
