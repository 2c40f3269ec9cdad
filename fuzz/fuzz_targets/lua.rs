//! Generated Lua scripts never take the server down.
//!
//! The input drives a small grammar of Lua statements built around the calls
//! that have crashed Redis-compatible servers: `unpack`/`select` with huge and
//! negative counts, `string.rep`/`string.format`/`table.concat`, `loadstring`
//! and `load` with a reader that collects garbage, metatables, `redis.call`
//! with arbitrary argv, and the cjson / cmsgpack / struct / bit functions fed
//! arbitrary bytes. Each statement runs under `pcall`, so one script exercises
//! many calls. Checks: every reply is valid RESP2 and RESP3 for an
//! independent decoder, and the server still answers `PING` afterwards.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlockd::protocol::{Reply, Resp};

/// Integers chosen to sit on every boundary the C code ever computed with.
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7990",
    "7999",
    "8000",
    "65535",
    "2147483646",
    "2147483647",
    "2147483648",
    "-2147483647",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "1e308",
    "-1e308",
    "0/0",
    "1/0",
    "-1/0",
    "0.5",
    "-0.5",
];

/// Formats for string.format and struct that have overflowed before.
const FMTS: &[&str] = &[
    "%d",
    "%s",
    "%q",
    "%5.2f",
    "%99d",
    "%.99f",
    "%x",
    "%c",
    "%-99s",
    "%%",
    "%i",
    "%o",
    "%g",
    "%e",
    "i",
    "i17",
    "i2147483648",
    "c0",
    "c99999999999",
    ">!4i",
    "<Ld",
    "bBhH",
    "s",
    "x",
    "!8",
    "c2147483647",
];

struct Gen<'a> {
    data: &'a [u8],
    pos: usize,
    depth: u32,
}

impl Gen<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.byte() as usize % from.len()]
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// A string literal of the next few input bytes, escaped for Lua.
    fn bytes_lit(&mut self) -> String {
        let n = (self.byte() % 24) as usize;
        let mut s = String::from("'");
        for _ in 0..n {
            s.push_str(&format!("\\{}", self.byte()));
        }
        s.push('\'');
        s
    }

    /// A count for string.rep that keeps the result under 1 MB (bigger ones
    /// only test the allocator), or a negative / zero one.
    fn rep_count(&mut self) -> &'static str {
        ["0", "-1", "-2147483648", "1", "10", "1000", "100000"][self.byte() as usize % 7]
    }

    fn expr(&mut self) -> String {
        self.depth += 1;
        let e = if self.depth > 4 {
            self.pick(INTS).to_string()
        } else {
            match self.byte() % 24 {
                0 | 1 => self.pick(INTS).to_string(),
                2 => self.bytes_lit(),
                3 => format!("{{{}, {}, {}}}", self.expr(), self.expr(), self.expr()),
                4 => format!("unpack({{1, 2, 3}}, {}, {})", self.pick(INTS), self.pick(INTS)),
                5 => format!("select({}, 1, 2, 3)", self.pick(INTS)),
                6 => format!("string.rep({}, {})", self.bytes_lit(), self.rep_count()),
                7 => format!("string.format('{}', {})", self.pick(FMTS), self.expr()),
                8 => format!("table.concat({{1, 'a', 2}}, {}, {}, {})", self.bytes_lit(), self.pick(INTS), self.pick(INTS)),
                9 => format!("loadstring({})", self.bytes_lit()),
                10 => format!(
                    "load((function() local p = {} return function() collectgarbage('collect') local q = p p = nil return q end end)())",
                    self.bytes_lit()
                ),
                11 => format!("setmetatable({{}}, {{__index = function(t, k) return {} end}})", self.expr()),
                12 => format!("redis.pcall({}, {}, {})", self.pick(CMDS), self.bytes_lit(), self.expr()),
                13 => format!("redis.call({}, {})", self.pick(CMDS), self.bytes_lit()),
                14 => format!("cjson.decode({})", self.bytes_lit()),
                15 => format!("cjson.encode({})", self.expr()),
                16 => format!("cmsgpack.unpack({})", self.bytes_lit()),
                17 => format!("cmsgpack.pack({}, {})", self.expr(), self.expr()),
                18 => format!("struct.pack('{}', {})", self.pick(FMTS), self.expr()),
                19 => format!("struct.unpack('{}', {})", self.pick(FMTS), self.bytes_lit()),
                20 => format!("bit.tohex({}, {})", self.pick(INTS), self.pick(INTS)),
                21 => format!("bit.{}({}, {})", self.pick(&["band", "bor", "bxor", "lshift", "rshift", "arshift", "rol"]), self.pick(INTS), self.pick(INTS)),
                22 => format!("tonumber({}, {})", self.bytes_lit(), self.pick(INTS)),
                _ => format!("getmetatable({})", self.expr()),
            }
        };
        self.depth -= 1;
        e
    }

    fn script(&mut self) -> String {
        let mut s = String::from("local r = {}\n");
        let mut n = 0;
        while !self.done() && n < 16 {
            n += 1;
            match self.byte() % 4 {
                0 => s.push_str(&format!("r[#r + 1] = select(2, pcall(function() return {} end))\n", self.expr())),
                1 => s.push_str(&format!("pcall(function() local t = {{{}}} return unpack(t) end)\n", self.expr())),
                2 => s.push_str(&format!("pcall(function() return {{{}}} end)\n", self.expr())),
                _ => s.push_str(&format!("local ok{n}, v{n} = pcall(function() return {} end)\n", self.expr())),
            }
        }
        match self.byte() % 3 {
            0 => s.push_str("return r\n"),
            1 => s.push_str(&format!("return {}\n", self.expr())),
            _ => s.push_str("return #r\n"),
        }
        s
    }
}

const CMDS: &[&str] = &[
    "'set'",
    "'get'",
    "'hincrby'",
    "'pexpire'",
    "'del'",
    "'lpush'",
    "'lrange'",
    "'zadd'",
    "'eval'",
    "'ping'",
    "'nosuchcommand'",
    "'hset'",
    "'publish'",
    "'incrbyfloat'",
    "'setrange'",
    "'sort'",
];

fn check_reply(reply: &Reply) {
    let v2 = reply.to_bytes(Resp::V2);
    if std::str::from_utf8(&v2).is_ok() {
        let (_, used) = redis_protocol::resp2::decode::decode(&v2).expect("valid RESP2").expect("complete RESP2 frame");
        assert_eq!(used, v2.len(), "one RESP2 frame per reply");
        let v3 = reply.to_bytes(Resp::V3);
        let (_, used) =
            redis_protocol::resp3::decode::complete::decode(&v3).expect("valid RESP3").expect("complete RESP3 frame");
        assert_eq!(used, v3.len(), "one RESP3 frame per reply");
    }
}

fuzz_target!(|data: &[u8]| {
    let script = Gen { data, pos: 0, depth: 0 }.script();
    // Replies may nest as deep as Redis allows (~8000 levels): run on a
    // thread with a stack like the server's.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let mut h = rlockd::testing::Harness::new();
            check_reply(&h.run(&["EVAL", script.as_str(), "1", "k"]));
            check_reply(&h.run(&["EVAL", script.as_str(), "0"]));
            assert_eq!(h.run(&["PING"]), Reply::status("PONG"), "server still serves after:\n{script}");
        })
        .expect("spawn")
        .join()
        .expect("script run");
});
