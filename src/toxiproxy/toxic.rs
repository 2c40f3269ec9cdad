//! A toxic as Toxiproxy's API shows and takes it: its type and attributes,
//! its `stream` and `toxicity`, and the JSON of both ways.
//!
//! Toxiproxy decodes a body with Go's `encoding/json` onto its structs: an
//! unknown field is ignored, a missing one keeps its value (zero on create,
//! the current one on update), a field of the wrong JSON type is refused
//! with Go's message, which [`go_type_error`] words.

use serde_json::{Map, Value};

/// Toxiproxy's toxic types, with their attributes (all Go `int64`/`int`;
/// times in milliseconds but the slicer's `delay`, in microseconds).
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Noop,
    Latency { latency: i64, jitter: i64 },
    Bandwidth { rate: i64 },
    SlowClose { delay: i64 },
    Timeout { timeout: i64 },
    ResetPeer { timeout: i64 },
    Slicer { average_size: i64, size_variation: i64, delay: i64 },
    LimitData { bytes: i64 },
}

/// Which way the bytes a toxic acts on flow: `upstream` from the client to
/// the server, `downstream` back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Upstream,
    Downstream,
}

/// One toxic of a proxy.
#[derive(Clone, Debug)]
pub struct Toxic {
    pub name: String,
    /// As given (`latency`…); the API shows it back as given.
    pub type_name: String,
    /// As given: Toxiproxy keeps `"Upstream"` as written and parses it
    /// without case.
    pub stream_name: String,
    pub stream: Stream,
    pub toxicity: f32,
    pub kind: Kind,
    /// Changes on every create and update: a connection rolls its
    /// `toxicity` dice again for a new generation, as Toxiproxy re-runs an
    /// updated toxic.
    pub generation: u64,
}

/// An API error: Toxiproxy's message and HTTP status.
#[derive(Debug, PartialEq)]
pub struct ApiError {
    pub message: String,
    pub status: u16,
}

impl ApiError {
    pub fn new(message: impl Into<String>, status: u16) -> ApiError {
        ApiError { message: message.into(), status }
    }

    /// `bad request body: <why>` (400).
    pub fn bad_body(why: &str) -> ApiError {
        ApiError::new(format!("bad request body: {why}"), 400)
    }
}

/// The attribute names of a type, in the order Toxiproxy prints them, and
/// its zero value; `None` for a type Toxiproxy does not know.
fn zero(type_name: &str) -> Option<Kind> {
    Some(match type_name {
        "noop" => Kind::Noop,
        "latency" => Kind::Latency { latency: 0, jitter: 0 },
        "bandwidth" => Kind::Bandwidth { rate: 0 },
        "slow_close" => Kind::SlowClose { delay: 0 },
        "timeout" => Kind::Timeout { timeout: 0 },
        "reset_peer" => Kind::ResetPeer { timeout: 0 },
        "slicer" => Kind::Slicer { average_size: 0, size_variation: 0, delay: 0 },
        "limit_data" => Kind::LimitData { bytes: 0 },
        _ => return None,
    })
}

impl Kind {
    /// `(json name, Go struct field, value)` of each attribute, in order.
    fn fields(&mut self) -> Vec<(&'static str, &'static str, &mut i64)> {
        match self {
            Kind::Noop => vec![],
            Kind::Latency { latency, jitter } => {
                vec![("latency", "LatencyToxic.latency", latency), ("jitter", "LatencyToxic.jitter", jitter)]
            }
            Kind::Bandwidth { rate } => vec![("rate", "BandwidthToxic.rate", rate)],
            Kind::SlowClose { delay } => vec![("delay", "SlowCloseToxic.delay", delay)],
            Kind::Timeout { timeout } => vec![("timeout", "TimeoutToxic.timeout", timeout)],
            Kind::ResetPeer { timeout } => vec![("timeout", "ResetToxic.timeout", timeout)],
            Kind::Slicer { average_size, size_variation, delay } => vec![
                ("average_size", "SlicerToxic.average_size", average_size),
                ("size_variation", "SlicerToxic.size_variation", size_variation),
                ("delay", "SlicerToxic.delay", delay),
            ],
            Kind::LimitData { bytes } => vec![("bytes", "LimitDataToxic.bytes", bytes)],
        }
    }

    /// Sets the attributes present in `attrs` (a JSON object or `null`).
    fn merge(&mut self, attrs: &Value) -> Result<(), ApiError> {
        let obj = match attrs {
            Value::Null => return Ok(()),
            Value::Object(o) => o,
            other => return Err(go_type_error(other, "ToxicWrapper.attributes", "toxics.Toxic")),
        };
        for (json, go, slot) in self.fields() {
            match obj.get(json) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) => match n.as_i64() {
                    Some(v) => *slot = v,
                    None => {
                        return Err(ApiError::bad_body(&format!(
                            "json: cannot unmarshal number {n} into Go struct field {go} of type int64"
                        )))
                    }
                },
                Some(other) => return Err(go_type_error(other, go, "int64")),
            }
        }
        Ok(())
    }

    fn attributes_json(&self) -> String {
        let mut k = self.clone();
        let parts: Vec<String> = k.fields().into_iter().map(|(name, _, v)| format!("\"{name}\":{v}")).collect();
        format!("{{{}}}", parts.join(","))
    }
}

/// Go's `json: cannot unmarshal <kind> into Go value of type <type>`, for
/// a body that is not the object expected.
pub fn top_type_error(got: &Value, go_type: &str) -> ApiError {
    ApiError::bad_body(&format!("json: cannot unmarshal {} into Go value of type {go_type}", json_kind(got)))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `json: cannot unmarshal <kind> into Go struct field <field> of type
/// <type>`, as a 400.
pub fn go_type_error(got: &Value, field: &str, go_type: &str) -> ApiError {
    let kind = json_kind(got);
    ApiError::bad_body(&format!("json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"))
}

/// A string field of a JSON object (absent or `null`: `None`).
pub fn string_field(obj: &Map<String, Value>, key: &str, field: &str) -> Result<Option<String>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(go_type_error(other, field, "string")),
    }
}

fn toxicity_field(obj: &Map<String, Value>) -> Result<Option<f32>, ApiError> {
    match obj.get("toxicity") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64().map(|f| f as f32)),
        Some(other) => Err(go_type_error(other, "ToxicWrapper.toxicity", "float32")),
    }
}

/// Parses a body as a JSON value; an empty body is Go's `EOF`.
pub fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_body("EOF"));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_body(&e.to_string()))
}

/// The body of `POST /proxies/{proxy}/toxics` made into a toxic, with
/// Toxiproxy's defaults (`downstream`, toxicity 1, name `<type>_<stream>`)
/// and its checks in its order. `exists` says whether a name is taken.
pub fn create(body: &[u8], generation: u64, exists: impl Fn(&str) -> bool) -> Result<Toxic, ApiError> {
    let value = parse_body(body)?;
    let Value::Object(obj) = &value else {
        return Err(top_type_error(&value, "toxics.ToxicWrapper"));
    };
    let name = string_field(obj, "name", "ToxicWrapper.name")?.unwrap_or_default();
    let type_name = string_field(obj, "type", "ToxicWrapper.type")?.unwrap_or_default();
    let stream_name = string_field(obj, "stream", "ToxicWrapper.stream")?.unwrap_or_else(|| "downstream".into());
    let toxicity = toxicity_field(obj)?.unwrap_or(1.0);
    let stream = match stream_name.to_ascii_lowercase().as_str() {
        "downstream" => Stream::Downstream,
        "upstream" => Stream::Upstream,
        _ => return Err(ApiError::new("stream was invalid, can be either upstream or downstream", 400)),
    };
    let name = if name.is_empty() { format!("{type_name}_{stream_name}") } else { name };
    let Some(mut kind) = zero(&type_name) else {
        return Err(ApiError::new("invalid toxic type", 400));
    };
    if exists(&name) {
        return Err(ApiError::new("toxic already exists", 409));
    }
    kind.merge(obj.get("attributes").unwrap_or(&Value::Null))?;
    Ok(Toxic { name, type_name, stream_name, stream, toxicity, kind, generation })
}

impl Toxic {
    /// `POST /proxies/{proxy}/toxics/{toxic}`: the attributes given are
    /// changed, the others kept; `toxicity` likewise.
    pub fn update(&mut self, body: &[u8], generation: u64) -> Result<(), ApiError> {
        let value = parse_body(body)?;
        let Value::Object(obj) = &value else {
            return Err(top_type_error(&value, "struct { Attributes interface {}; Toxicity float32 }"));
        };
        let mut kind = self.kind.clone();
        kind.merge(obj.get("attributes").unwrap_or(&Value::Null))?;
        let toxicity = toxicity_field(obj)?.unwrap_or(self.toxicity);
        self.kind = kind;
        self.toxicity = toxicity;
        self.generation = generation;
        Ok(())
    }

    /// The toxic as Toxiproxy prints it.
    pub fn json(&self) -> String {
        format!(
            "{{\"attributes\":{},\"name\":{},\"type\":{},\"stream\":{},\"toxicity\":{}}}",
            self.kind.attributes_json(),
            json_str(&self.name),
            json_str(&self.type_name),
            json_str(&self.stream_name),
            go_float(self.toxicity)
        )
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serialises")
}

/// A float32 as Go's `encoding/json` writes it: `1`, `0.5`.
fn go_float(f: f32) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_json_as_toxiproxy_prints_them() {
        let t = create(br#"{"type":"latency","attributes":{"latency":100}}"#, 1, |_| false).unwrap();
        assert_eq!(
            t.json(),
            r#"{"attributes":{"latency":100,"jitter":0},"name":"latency_downstream","type":"latency","stream":"downstream","toxicity":1}"#
        );
        let t = create(br#"{"type":"slicer","stream":"upstream","toxicity":0.5,"name":"s"}"#, 1, |_| false).unwrap();
        assert_eq!(t.stream, Stream::Upstream);
        assert!(t.json().contains(r#""average_size":0,"size_variation":0,"delay":0"#), "{}", t.json());
        assert!(t.json().ends_with(r#""toxicity":0.5}"#));
    }

    #[test]
    fn errors_in_toxiproxys_order_and_words() {
        let e = |body: &str| create(body.as_bytes(), 1, |n| n == "taken").unwrap_err();
        assert_eq!(e(""), ApiError::new("bad request body: EOF", 400));
        assert_eq!(
            e(r#"{"type":"latency","stream":"sideways"}"#).message,
            "stream was invalid, can be either upstream or downstream"
        );
        assert_eq!(e(r#"{"type":"nope"}"#), ApiError::new("invalid toxic type", 400));
        assert_eq!(e(r#"{"type":"latency","name":"taken"}"#), ApiError::new("toxic already exists", 409));
        assert_eq!(
            e(r#"{"type":"latency","attributes":{"latency":"1"}}"#).message,
            "bad request body: json: cannot unmarshal string into Go struct field LatencyToxic.latency of type int64"
        );
    }

    #[test]
    fn update_keeps_what_is_not_given() {
        let mut t =
            create(br#"{"type":"latency","attributes":{"latency":100,"jitter":5},"toxicity":0.25}"#, 1, |_| false)
                .unwrap();
        t.update(br#"{"attributes":{"latency":300}}"#, 2).unwrap();
        assert_eq!(t.kind, Kind::Latency { latency: 300, jitter: 5 });
        assert_eq!(t.toxicity, 0.25);
        assert_eq!(t.generation, 2);
    }
}
