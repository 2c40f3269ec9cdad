//! A Sentinel connection's subscriptions to the group's events: the
//! channels (`+switch-master`…) and patterns (`*`) it follows, the
//! confirmations `SUBSCRIBE` and its kin answer, and the messages an event
//! becomes. Each Sentinel has its own bus (`group.rs`); no client publishes
//! (`PUBLISH` answers 0).

use bytes::{Bytes, BytesMut};

use crate::protocol::{Reply, Resp};

/// What a connection subscribed to.
#[derive(Debug, Default)]
pub(super) struct Subscriptions {
    channels: Vec<Bytes>,
    patterns: Vec<Bytes>,
}

impl Subscriptions {
    /// How many channels and patterns.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Forgets them all (`RESET`).
    pub fn clear(&mut self) {
        self.channels.clear();
        self.patterns.clear();
    }

    /// `SUBSCRIBE` (`PSUBSCRIBE` with `pattern`) of `names`: one
    /// confirmation per name.
    pub fn subscribe(&mut self, pattern: bool, names: &[Bytes], resp: Resp) -> Reply {
        let kind = if pattern { "psubscribe" } else { "subscribe" };
        let mut out = Vec::new();
        for name in names {
            let list = if pattern { &mut self.patterns } else { &mut self.channels };
            if !list.contains(name) {
                list.push(name.clone());
            }
            out.push(confirm(resp, kind, Reply::Bulk(name.clone()), self.count()));
        }
        many(out, resp)
    }

    /// `UNSUBSCRIBE` (`PUNSUBSCRIBE` with `pattern`) of `names`, of all
    /// when there are none: one confirmation per name (one with no name if
    /// there was nothing to leave).
    pub fn unsubscribe(&mut self, pattern: bool, names: &[Bytes], resp: Resp) -> Reply {
        let kind = if pattern { "punsubscribe" } else { "unsubscribe" };
        let list = if pattern { &mut self.patterns } else { &mut self.channels };
        let names: Vec<Bytes> = if names.is_empty() { list.clone() } else { names.to_vec() };
        let mut out = Vec::new();
        for name in &names {
            let list = if pattern { &mut self.patterns } else { &mut self.channels };
            list.retain(|p| p != name);
            out.push(confirm(resp, kind, Reply::Bulk(name.clone()), self.count()));
        }
        if out.is_empty() {
            out.push(confirm(resp, kind, Reply::Nil, self.count()));
        }
        many(out, resp)
    }

    /// Writes the event `text` on `channel` to `out` for each subscription
    /// it matches.
    pub fn deliver(&self, resp: Resp, channel: &str, text: &str, out: &mut BytesMut) {
        let b = |s: &str| Reply::bulk(Bytes::copy_from_slice(s.as_bytes()));
        let push = |items: Vec<Reply>| if resp == Resp::V3 { Reply::Push(items) } else { Reply::Array(items) };
        if self.channels.iter().any(|ch| ch == channel.as_bytes()) {
            push(vec![b("message"), b(channel), b(text)]).encode(resp, out);
        }
        for p in &self.patterns {
            if crate::glob::matches(p, channel.as_bytes(), false) {
                push(vec![b("pmessage"), Reply::Bulk(p.clone()), b(channel), b(text)]).encode(resp, out);
            }
        }
    }
}

fn confirm(resp: Resp, kind: &str, name: Reply, count: usize) -> Reply {
    let items = vec![Reply::bulk_str(kind), name, Reply::Int(count as i64)];
    if resp == Resp::V3 {
        Reply::Push(items)
    } else {
        Reply::Array(items)
    }
}

/// Several replies written back to back (one per channel).
fn many(mut replies: Vec<Reply>, resp: Resp) -> Reply {
    if replies.len() == 1 {
        return replies.pop().expect("one");
    }
    let first = replies.remove(0);
    Reply::ThenPushes(Box::new(first), replies.iter().map(|r| r.to_bytes(resp)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: &Reply) -> String {
        String::from_utf8_lossy(&r.to_bytes(Resp::V2)).into_owned()
    }

    #[test]
    fn subscribe_confirms_each_name_and_delivers_by_channel_and_pattern() {
        let mut s = Subscriptions::default();
        let r = s.subscribe(false, &[Bytes::from("a"), Bytes::from("a")], Resp::V2);
        assert_eq!(s.count(), 1);
        assert!(text(&r).starts_with("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"));
        s.subscribe(true, &[Bytes::from("+switch*")], Resp::V2);
        let mut out = BytesMut::new();
        s.deliver(Resp::V2, "+switch-master", "m 1 2 3 4", &mut out);
        assert_eq!(&out[..], b"*4\r\n$8\r\npmessage\r\n$8\r\n+switch*\r\n$14\r\n+switch-master\r\n$9\r\nm 1 2 3 4\r\n");
        out.clear();
        s.deliver(Resp::V3, "a", "x", &mut out);
        assert_eq!(&out[..], b">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n");
    }

    #[test]
    fn unsubscribe_of_nothing_confirms_with_no_name() {
        let mut s = Subscriptions::default();
        assert_eq!(text(&s.unsubscribe(true, &[], Resp::V2)), "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n");
        s.subscribe(false, &[Bytes::from("a"), Bytes::from("b")], Resp::V2);
        s.unsubscribe(false, &[], Resp::V2);
        assert_eq!(s.count(), 0);
    }
}
