//! A generator of Lua scripts from fuzzer bytes.
//!
//! The bytes steer a small grammar of Lua statements and expressions aimed at
//! the places where a Lua VM and its C libraries have broken before: library
//! calls with extreme arguments (huge, negative and boundary counts for
//! `unpack`, `select`, `string.rep`, `string.byte`, `table.concat`…),
//! `string.format` specifiers, `loadstring` of arbitrary or generated source,
//! metatables whose metamethods recurse, `redis.call`/`redis.pcall` with
//! arbitrary command lines (`unpack` of long tables into them included), the
//! decoders of cjson, cmsgpack and struct fed arbitrary bytes, and `bit`.
//!
//! Every script terminates quickly by construction: loops are bounded and
//! shallow, recursion only happens through metamethods or functions that
//! recurse without a tail call (so Lua's own stack limits end it), and
//! `string.rep` only ever repeats a short literal a bounded number of times
//! (or a negative one). A script that runs for long or allocates without
//! bound is a generator bug, not a finding.

use arbitrary::Unstructured;
use std::fmt::Write;

/// Numbers at and around the boundaries C code tends to get wrong.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "8",
    "255",
    "256",
    "1000",
    "7999",
    "8000",
    "8001",
    "65535",
    "100000",
    "2147483647",
    "-2147483647",
    "-2147483648",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "-4294967296",
    "2^53",
    "-2^53",
    "2^63",
    "-2^63",
    "2^64",
    "1e308",
    "-1e308",
    "1e-310",
    "1/0",
    "-1/0",
    "0/0",
    "0.5",
    "-0.5",
    "-0",
    "math.huge",
    "-math.huge",
];

/// Counts for `string.rep`: boundaries that end at once (zero, negative) and
/// positive ones small enough that repeating a 64-byte literal stays cheap.
/// (Lua 5.1 truncates the count to a C int: -2147483649 would become
/// 2147483647 and ask for gigabytes, as it does on Redis.)
const REP_COUNTS: &[&str] =
    &["0", "1", "-1", "2", "-2147483648", "-1e308", "0/0", "-1/0", "1000", "8000", "65536", "100000"];

const FORMATS: &[&str] = &[
    "%d", "%i", "%u", "%c", "%x", "%X", "%o", "%e", "%E", "%f", "%g", "%G", "%q", "%s", "%%", "%", "%5.2f", "%-5d",
    "%05d", "%+d", "% d", "%#x", "%.99f", "%99d", "%100d", "%.100f", "%-99s", "%099.99f", "%-+ #0d", "%z", "%10q",
    "%.3s", "%s%s%s%s", "%d%d", "%a", "%n", "%p", "%ld", "%lld", "%hhd", "%5", "%.",
];

const PATTERNS: &[&str] = &[
    "a",
    ".",
    "%a+",
    "%d*",
    "(%w+)=(%w+)",
    "^a",
    "a$",
    "%",
    "[",
    "[^",
    "(",
    ")",
    "%b()",
    "%f[%w]",
    "(()",
    "%1",
    "[%",
    "[a-",
    "%z",
    "(.-)",
    "[]]",
    "[^]]",
    "%g",
    "(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))",
];

const COMMANDS: &[&str] = &[
    "ping",
    "set",
    "get",
    "del",
    "incr",
    "incrby",
    "incrbyfloat",
    "append",
    "getrange",
    "setrange",
    "mget",
    "mset",
    "hset",
    "hget",
    "hgetall",
    "hincrby",
    "hdel",
    "lpush",
    "rpush",
    "lpop",
    "lrange",
    "lindex",
    "lset",
    "linsert",
    "sadd",
    "smembers",
    "srem",
    "sinter",
    "zadd",
    "zrange",
    "zrangebyscore",
    "zincrby",
    "zrem",
    "zscore",
    "expire",
    "pexpire",
    "ttl",
    "pttl",
    "exists",
    "type",
    "keys",
    "scan",
    "echo",
    "time",
    "dbsize",
    "select",
    "flushall",
    "eval",
    "evalsha",
    "script",
    "multi",
    "exec",
    "watch",
    "subscribe",
    "publish",
    "blpop",
    "brpop",
    "client",
    "config",
    "debug",
    "shutdown",
    "hello",
    "auth",
    "object",
    "sort",
    "bitfield",
    "setbit",
    "getbit",
    "bitcount",
    "lcs",
    "copy",
    "rename",
    "info",
    "command",
    "function",
    "fcall",
    "xadd",
    "wait",
    "monitor",
    "acl",
    "lmpop",
    "zunionstore",
    "sintercard",
    "pfadd",
    "geoadd",
    "unknowncmd",
    "",
];

const STRUCT_FORMATS: &[&str] = &[
    "i",
    "I",
    "b",
    "B",
    "h",
    "H",
    "l",
    "L",
    "T",
    "f",
    "d",
    "s",
    "c0",
    "c",
    "c1",
    "x",
    "<",
    ">",
    "!",
    "=",
    "i4",
    "I8",
    "i16",
    "i17",
    "i32",
    "i33",
    "c2147483647",
    "c4294967296",
    "i2147483648",
    "!99999999999",
    "c99999999999999999999",
    "<i2>I4",
    "!8d",
    "bc0",
    "Bc0",
    "i0",
    "!0",
];

const BIT_FNS: &[&str] =
    &["tobit", "tohex", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror", "bswap"];

const CJSON_FNS: &[&str] = &[
    "encode_keep_buffer",
    "encode_max_depth",
    "decode_max_depth",
    "encode_number_precision",
    "encode_sparse_array",
    "encode_invalid_numbers",
    "decode_invalid_numbers",
];

/// Builds one script. Never fails: when the bytes run out, choices fall to
/// their first option.
pub struct LuaGen<'a> {
    u: Unstructured<'a>,
    out: String,
    vars: usize,
    depth: usize,
}

impl<'a> LuaGen<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        LuaGen { u: Unstructured::new(data), out: String::new(), vars: 0, depth: 0 }
    }

    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        self.u.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn pick(&mut self, from: &[&'static str]) -> &'static str {
        from[self.below(from.len())]
    }

    /// A Lua string literal holding up to `max` arbitrary bytes.
    pub fn bytes_literal(&mut self, max: usize) -> String {
        let len = self.below(max + 1);
        let bytes = self.u.bytes(len.min(self.u.len())).unwrap_or(&[]);
        lua_quote(bytes)
    }

    fn number(&mut self) -> String {
        match self.below(4) {
            0 | 1 => self.pick(NUMBERS).to_string(),
            2 => format!("{}", self.u.arbitrary::<i8>().unwrap_or(0)),
            _ => format!("{}", self.u.arbitrary::<i32>().unwrap_or(0)),
        }
    }

    fn var(&mut self) -> Option<String> {
        (self.vars > 0).then(|| format!("v{}", self.below(self.vars)))
    }

    fn table(&mut self) -> String {
        match self.below(12) {
            0 => "{}".into(),
            1 => "{1, 2, 3}".into(),
            2 => "{a = 1, b = 'x'}".into(),
            3 => "{nil, nil, 3}".into(),
            4 => "KEYS".into(),
            5 => "ARGV".into(),
            6 => format!("setmetatable({{}}, {})", self.metatable()),
            7 => format!("{{{}, {}, {}}}", self.expr(), self.expr(), self.expr()),
            8 => {
                // A long array, for unpacking many values into a call.
                let n = self.pick(&["100", "7990", "8000", "100000"]);
                format!("(function() local t = {{}} for i = 1, {n} do t[i] = i end return t end)()")
            }
            9 => "(function() local t = {} t[1] = t t.self = t return t end)()".into(),
            10 => {
                let depth = self.pick(&["10", "999", "1000", "1001", "7995", "8000", "20000"]);
                format!("(function() local t = {{}} local c = t for i = 1, {depth} do c[1] = {{}} c = c[1] end return t end)()")
            }
            _ => format!("{{[{}] = {}, [{}] = {}}}", self.number(), self.expr(), self.number(), self.expr()),
        }
    }

    fn metatable(&mut self) -> String {
        let event = self.pick(&[
            "__index",
            "__newindex",
            "__call",
            "__tostring",
            "__concat",
            "__eq",
            "__lt",
            "__le",
            "__unm",
            "__add",
            "__len",
            "__mode",
            "__metatable",
        ]);
        let body = match self.below(5) {
            // Recurses through the same metamethod: Lua's C stack limit ends it.
            0 => "function(t, ...) return t[1] .. tostring(t) .. (t + 1) end".to_string(),
            1 => "function(t, k) return rawget(t, k) end".to_string(),
            2 => format!("function(...) return {} end", self.expr()),
            3 => format!("function() error({}) end", self.expr()),
            _ => self.expr(),
        };
        format!("{{{event} = {body}}}")
    }

    fn string(&mut self) -> String {
        match self.below(6) {
            0 => "''".into(),
            1 => "'abc'".into(),
            2 => format!("'{}'", self.pick(FORMATS)),
            3 => "KEYS[1]".into(),
            4 => "ARGV[1]".into(),
            _ => self.bytes_literal(64),
        }
    }

    fn args(&mut self, max: usize) -> String {
        let n = self.below(max + 1);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.expr());
        }
        v.join(", ")
    }

    /// One expression. Depth-bounded: deep in the tree only leaves are made.
    pub fn expr(&mut self) -> String {
        if self.depth > 4 {
            return match self.below(3) {
                0 => self.number(),
                1 => self.string(),
                _ => self.var().unwrap_or_else(|| "nil".into()),
            };
        }
        self.depth += 1;
        let e = self.expr_inner();
        self.depth -= 1;
        e
    }

    fn expr_inner(&mut self) -> String {
        match self.below(40) {
            0 => self.number(),
            1 => self.string(),
            2 => self.table(),
            3 => self.var().unwrap_or_else(|| "nil".into()),
            4 => self.pick(&["nil", "true", "false", "cjson.null", "redis", "_G", "KEYS[1]", "ARGV[3]"]).into(),
            5 => format!("unpack({}, {}, {})", self.table(), self.number(), self.number()),
            6 => format!("{{unpack({})}}", self.table()),
            7 => format!(
                "select({}, {})",
                self.pick(&["'#'", "1", "-1", "2", "0", "-2147483648", "2147483647", "'x'"]),
                self.args(3)
            ),
            8 => format!("string.rep({}, {}{})", self.bytes_literal(64), self.pick(REP_COUNTS), self.rep_sep()),
            9 => format!("string.format({}, {})", self.format_string(), self.args(3)),
            10 => format!("string.sub({}, {}, {})", self.string(), self.number(), self.number()),
            11 => format!("string.byte({}, {}, {})", self.string(), self.number(), self.number()),
            12 => format!("string.char({})", self.args(3)),
            13 => {
                let f = self.pick(&["find", "match", "gmatch", "gsub"]);
                let pat = self.pick(PATTERNS);
                let extra = if f == "gsub" { format!(", {}", self.expr()) } else { String::new() };
                format!("string.{f}({}, '{pat}'{extra})", self.string())
            }
            14 => format!("table.concat({}, {}, {}, {})", self.table(), self.string(), self.number(), self.number()),
            15 => {
                let f = self.pick(&["insert", "remove", "getn", "maxn", "sort"]);
                match f {
                    "sort" => format!(
                        "table.sort({}, {})",
                        self.table(),
                        self.pick(&["nil", "function(a, b) return true end", "function(a, b) return a < b end"])
                    ),
                    _ => format!("table.{f}({})", self.args(3)),
                }
            }
            16 => format!("tostring({})", self.expr()),
            17 => format!("tonumber({}, {})", self.expr(), self.pick(&["10", "2", "16", "36", "1", "37", "0", "-1"])),
            18 => format!("loadstring({})", self.loadstring_source()),
            19 => format!("{{pcall({}, {})}}", self.function(), self.args(2)),
            20 => format!("setmetatable({}, {})", self.table(), self.metatable()),
            21 => format!("getmetatable({})", self.expr()),
            22 => {
                let f = self.pick(&["rawget", "rawset", "rawequal", "next", "type", "ipairs", "pairs", "assert"]);
                format!("{f}({})", self.args(3))
            }
            23 => {
                let f = self.pick(&[
                    "floor", "ceil", "fmod", "modf", "max", "min", "random", "ldexp", "frexp", "pow", "sqrt", "log",
                    "abs",
                ]);
                format!("math.{f}({})", self.args(2))
            }
            24 | 25 | 26 => self.redis_call(),
            27 => {
                let f = self.pick(&[
                    "sha1hex",
                    "error_reply",
                    "status_reply",
                    "log",
                    "setresp",
                    "set_repl",
                    "replicate_commands",
                    "breakpoint",
                    "debug",
                    "acl_check_cmd",
                ]);
                format!("redis.{f}({})", self.args(3))
            }
            28 => format!("cjson.decode({})", self.decoder_input()),
            29 => format!("cjson.encode({})", self.expr()),
            30 => format!("cjson.{}({})", self.pick(CJSON_FNS), self.args(2)),
            31 => {
                let f = self.pick(&["unpack", "unpack_one", "unpack_limit"]);
                format!("cmsgpack.{f}({}, {}, {})", self.decoder_input(), self.number(), self.number())
            }
            32 => format!("cmsgpack.pack({})", self.args(3)),
            33 => format!("struct.unpack({}, {}, {})", self.struct_format(), self.decoder_input(), self.number()),
            34 => format!("struct.pack({}, {})", self.struct_format(), self.args(3)),
            35 => format!("struct.size({})", self.struct_format()),
            36 => format!("bit.{}({}, {})", self.pick(BIT_FNS), self.number(), self.number()),
            37 => {
                let op = self.pick(&["+", "-", "*", "/", "%", "^", "..", "==", "~=", "<", "<=", "and", "or"]);
                format!("({} {op} {})", self.expr(), self.expr())
            }
            38 => format!("({}{})", self.pick(&["-", "not ", "#"]), self.expr()),
            _ => format!("coroutine.wrap({})({})", self.function(), self.args(2)),
        }
    }

    fn rep_sep(&mut self) -> String {
        if self.below(2) == 0 {
            String::new()
        } else {
            format!(", {}", self.bytes_literal(8))
        }
    }

    fn format_string(&mut self) -> String {
        if self.below(3) == 0 {
            return self.bytes_literal(16);
        }
        let n = 1 + self.below(3);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(self.pick(FORMATS));
        }
        format!("'{s}'")
    }

    fn struct_format(&mut self) -> String {
        if self.below(4) == 0 {
            // Arbitrary characters from the format alphabet, digits included.
            let n = self.below(12);
            let mut s = String::new();
            for _ in 0..n {
                let c = b"<>!=xbBhHlLTiIcsfd0123456789"[self.below(28)];
                s.push(c as char);
            }
            return format!("'{s}'");
        }
        let n = 1 + self.below(3);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(self.pick(STRUCT_FORMATS));
        }
        format!("'{s}'")
    }

    /// Bytes for a decoder: arbitrary, or arbitrary after a well-formed prefix.
    fn decoder_input(&mut self) -> String {
        match self.below(6) {
            0 => format!(
                "{} .. {}",
                self.pick(&[
                    "'['",
                    "'{\"a\":'",
                    "'\\145'",
                    "'\\220\\255\\255'",
                    "'\\221\\255\\255\\255\\255'",
                    "'\\219\\127\\255\\255\\255'"
                ]),
                self.bytes_literal(64)
            ),
            1 => format!(
                "string.rep({}, {})",
                self.pick(&["'['", "'{\"a\":'", "'\\145'", "'\\129\\1'", "'\\\\u'"]),
                self.pick(&["1000", "1001", "8000", "100000"])
            ),
            2 => format!("cjson.encode({})", self.expr()),
            3 => format!("cmsgpack.pack({})", self.args(2)),
            _ => self.bytes_literal(128),
        }
    }

    /// Source for `loadstring`: raw bytes (the lexer and parser on garbage),
    /// a binary-chunk header, or a generated script.
    fn loadstring_source(&mut self) -> String {
        match self.below(4) {
            0 => self.bytes_literal(128),
            1 => format!("'\\27Lua\\81\\0' .. {}", self.bytes_literal(64)),
            2 => format!(
                "string.rep({}, {})",
                self.pick(&["'('", "'{'", "'a.'", "'--[['", "'[==['", "'\"\\\\'"]),
                self.pick(&["100", "199", "200", "201", "1000", "100000"])
            ),
            _ => {
                if self.depth > 2 {
                    return "'return 1'".into();
                }
                let saved = (std::mem::take(&mut self.out), self.vars);
                self.vars = 0;
                self.depth += 1;
                self.block(3);
                self.depth -= 1;
                let inner = std::mem::replace(&mut self.out, saved.0);
                self.vars = saved.1;
                lua_quote(inner.as_bytes())
            }
        }
    }

    fn function(&mut self) -> String {
        match self.below(6) {
            0 => "error".into(),
            1 => "redis.call".into(),
            2 => "unpack".into(),
            // Non-tail recursion: ends with Lua's "stack overflow".
            3 => "function(...) local function f(n) return 1 + f(n + 1) end return f(1) end".into(),
            4 => "string.byte".into(),
            _ => format!("function(...) return {} end", self.expr()),
        }
    }

    fn redis_call(&mut self) -> String {
        let f = self.pick(&["redis.call", "redis.pcall"]);
        let cmd = if self.below(8) == 0 { self.bytes_literal(12) } else { format!("'{}'", self.pick(COMMANDS)) };
        let args = match self.below(6) {
            0 => format!(", unpack({})", self.table()),
            1 => String::new(),
            _ => {
                let a = self.args(4);
                if a.is_empty() {
                    a
                } else {
                    format!(", {a}")
                }
            }
        };
        format!("{f}({cmd}{args})")
    }

    fn stmt(&mut self, budget: usize) {
        match self.below(9) {
            0..=2 => {
                let e = self.expr();
                let _ = writeln!(self.out, "local v{} = {e}", self.vars);
                self.vars += 1;
            }
            3 | 4 => {
                // Keep going after an error, as lock scripts using pcall do.
                let e = self.expr();
                let _ = writeln!(self.out, "local ok{0}, v{0} = pcall(function() return {e} end)", self.vars);
                self.vars += 1;
            }
            5 if budget > 0 && self.depth < 2 => {
                let n = self.pick(&["1", "3", "10"]);
                let _ = writeln!(self.out, "for i = 1, {n} do");
                self.depth += 1;
                let vars = self.vars;
                self.stmts(budget - 1);
                self.vars = vars;
                self.depth -= 1;
                let _ = writeln!(self.out, "end");
            }
            6 if budget > 0 && self.depth < 3 => {
                let c = self.expr();
                let _ = writeln!(self.out, "if {c} then");
                let vars = self.vars;
                self.depth += 1;
                self.stmts(budget - 1);
                self.vars = vars;
                let _ = writeln!(self.out, "else");
                self.stmts(budget - 1);
                self.vars = vars;
                self.depth -= 1;
                let _ = writeln!(self.out, "end");
            }
            7 => {
                let e = self.expr();
                let _ = writeln!(self.out, "pcall({e})");
            }
            _ => {
                let e = self.expr();
                let _ = writeln!(self.out, "local v{} = {{{e}}}", self.vars);
                self.vars += 1;
            }
        }
    }

    fn stmts(&mut self, budget: usize) {
        let n = 1 + self.below(4);
        for _ in 0..n {
            self.stmt(budget);
        }
    }

    /// Statements, then a `return`.
    fn block(&mut self, budget: usize) {
        self.stmts(budget);
        let e = self.expr();
        let _ = writeln!(self.out, "return {e}");
    }

    /// The whole script.
    pub fn script(&mut self) -> String {
        let n = 1 + self.below(8);
        for _ in 0..n {
            self.stmt(2);
        }
        let ret = match self.below(4) {
            0 => format!("{{{}}}", self.args(4)),
            _ => self.expr(),
        };
        let _ = writeln!(self.out, "return {ret}");
        std::mem::take(&mut self.out)
    }

    /// Whatever bytes the script did not consume, for KEYS and ARGV.
    pub fn rest(&mut self) -> Vec<u8> {
        let n = self.u.len();
        self.u.bytes(n).unwrap_or(&[]).to_vec()
    }
}

/// A Lua string literal holding exactly `bytes` (decimal escapes for
/// anything but plain printable ASCII).
pub fn lua_quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        if (b.is_ascii_alphanumeric() || b" _.,:;!?()[]{}<>=+-*/%#&|^~@$'".contains(&b)) && b != b'"' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\{b:03}");
        }
    }
    s.push('"');
    s
}
