//! The fixes our Lua 5.1.5 carries, applied by `build.rs` to a copy of the
//! `lua-src` crate's sources in `OUT_DIR` before they are compiled.
//!
//! Redis does not run upstream Lua 5.1.5: its `deps/lua` carries security
//! fixes, and a server that runs users' scripts must carry them too. Each
//! patch here is written for rlockd from the public description of the bug
//! (the CVE advisory and the upstream Lua bug list) and names what it fixes.
//! Each has a regression test that runs its public reproducer against rlockd
//! and, in the differential suite, against redis-server
//! (`tests/it/lua_vm_cves.rs`, `tests/diff/lua_vm_cves.redis`).
//!
//! An edit is a piece of the pristine source (`find`) and what replaces it.
//! `build.rs` fails the build when `find` is not found exactly once — unless
//! the replacement is already there, which means the registry copy carries
//! the fix itself. So a new `lua-src` release can never silently drop a fix.
//!
//! | fix | file | what it closes |
//! |---|---|---|
//! | CVE-2025-46817 | `lbaselib.c`, `ltable.c` | `unpack` count overflow (one `EVAL` crashed the server); `luaH_getnum` index overflow |
//! | CVE-2025-49844 | `lparser.c` | use-after-free of the chunk name when a collection runs during parsing |
//! | CVE-2025-46819 | `llex.c` | out-of-bounds reads: huge long-bracket separators, errors before the first token |
//! | CVE-2014-5461 | `ldo.c` | vararg stack check (already in `lua-src`; asserted present) |
//! | (speed, not a fix) | `lobject.h`, `ltable.c`, `lvm.c` | a read-only mark on tables: an `EVAL` script's globals without the proxy's extra lookups |
//!
//! Fixed on the Rust side: CVE-2021-32626 (a `redis.call` reply is measured
//! and the Lua stack grown before anything is pushed: `convert::push_slots`),
//! CVE-2025-46818 (the metatables of basic types are read-only, see
//! `sandbox.rs`). Script replies nest until the Lua stack runs out, as
//! Redis's do (7995 levels); server threads have 64 MiB (virtual) stacks for
//! that recursion. The sources are compiled at `-O2` in every profile, so
//! debug test builds run the same machine code as the release binary (the
//! `unpack` overflow only crashed once the optimiser had dropped an overflow
//! check).
//!
//! Adding a patch: write the edit from the public description of the bug
//! (never copy another project's patched file); add a `Patch` to `PATCHES`
//! with the smallest `find` that is unique in its file, add its reproducer
//! to the two test files, and a row to the table above. A test that does not
//! fail without the edit is not a regression test: check it against the
//! unpatched build once.

/// One replacement in one file.
pub struct Edit {
    /// Exact text of the unpatched source (must occur exactly once).
    pub find: &'static str,
    /// What the text becomes.
    pub replace: &'static str,
}

/// A fix: one identifier, one file, one or more edits.
pub struct Patch {
    /// The CVE (or upstream bug) it fixes.
    pub id: &'static str,
    /// File under `lua-5.1.5/`.
    pub file: &'static str,
    /// The edits, applied in order.
    pub edits: &'static [Edit],
}

pub const PATCHES: &[Patch] = &[
    // CVE-2025-46817: `unpack(t, i, e)` computed the count as `e - i + 1` in
    // int. With `e = 2147483647` the sum overflows; because signed overflow
    // is undefined, the compiler may drop the `n <= 0` test that was meant to
    // catch it, `lua_checkstack` accepts the negative count, and the loop
    // pushes values far past the end of the Lua stack (a segfault, or worse).
    // The loop's `i++ < e` also overflows when `e` is INT_MAX. Count in
    // unsigned arithmetic, refuse any count the stack cannot hold, and never
    // step the index past `e`.
    Patch {
        id: "CVE-2025-46817 (unpack count overflow)",
        file: "lbaselib.c",
        edits: &[Edit {
            find: "  n = e - i + 1;  /* number of elements */
  if (n <= 0 || !lua_checkstack(L, n))  /* n <= 0 means arith. overflow */
    return luaL_error(L, \"too many results to unpack\");
  lua_rawgeti(L, 1, i);  /* push arg[i] (avoiding overflow problems) */
  while (i++ < e)  /* push arg[i + 1...e] */
    lua_rawgeti(L, 1, i);
  return n;",
            replace: "  {
    /* rlockd: CVE-2025-46817. The span e - i is computed unsigned (it
       cannot overflow there), counts the stack cannot hold are refused
       before anything is pushed, and i is never incremented past e. */
    unsigned int span = (unsigned int)e - (unsigned int)i;
    (void)n;
    if (span >= (unsigned int)INT_MAX || !lua_checkstack(L, (int)(span + 1)))
      return luaL_error(L, \"too many results to unpack\");
    lua_rawgeti(L, 1, i);
    while (i < e) {
      i++;
      lua_rawgeti(L, 1, i);
    }
    return (int)(span + 1);
  }",
        }],
    },
    // CVE-2025-46817, second half: the array-part test in `luaH_getnum`
    // computed `key - 1` in int, which overflows for INT_MIN (reachable
    // through `unpack(t, -2147483648, ...)`). Compare the key itself.
    Patch {
        id: "CVE-2025-46817 (luaH_getnum index overflow)",
        file: "ltable.c",
        edits: &[Edit {
            find: "  if (cast(unsigned int, key-1) < cast(unsigned int, t->sizearray))",
            replace: "  if (1 <= key && key <= t->sizearray)  /* rlockd: CVE-2025-46817 */",
        }],
    },
    // CVE-2025-49844: `luaY_parser` created the chunk-name string and handed
    // it to the lexer without anchoring it anywhere the collector can see. A
    // garbage collection triggered while parsing (a script that allocates
    // heavily, then calls `loadstring` on a large source) could free the name
    // while the lexer still used it for error messages: a use-after-free.
    // Keep the name on the Lua stack for the whole parse.
    Patch {
        id: "CVE-2025-49844 (parser chunk name use-after-free)",
        file: "lparser.c",
        edits: &[
            Edit {
                find: "  lexstate.buff = buff;
  luaX_setinput(L, &lexstate, z, luaS_new(L, name));",
                replace: "  /* rlockd: CVE-2025-49844. The chunk name stays on the stack (where the
     collector sees it) until the parse is over. */
  TString *chunkname = luaS_new(L, name);
  setsvalue2s(L, L->top, chunkname);
  incr_top(L);
  lexstate.buff = buff;
  luaX_setinput(L, &lexstate, z, chunkname);",
            },
            Edit {
                find: "  close_func(&lexstate);
  lua_assert(funcstate.prev == NULL);",
                replace: "  close_func(&lexstate);
  L->top--;  /* rlockd: CVE-2025-49844, release the chunk name */
  lua_assert(funcstate.prev == NULL);",
            },
        ],
    },
    // CVE-2025-46819: two out-of-bounds reads in the lexer.
    // (1) A long-bracket delimiter with over 2^30 '=' (a 1 GB source built
    // with string.rep) overflowed the int arithmetic `2*(2 + sep)` that cuts
    // the delimiters off a long string, so the string was built from memory
    // outside the buffer. The separator is now counted in size_t with the
    // encoding later Lua versions use: count + 2 for a well-formed `[=*[`,
    // 1 for a lone bracket, 0 for an unfinished `[==`.
    // (2) An error raised before the first token was read (a chunk of more
    // than INT_MAX lines) printed "near <token>" from an uninitialised token,
    // reading a garbage buffer. The current token starts as "none".
    Patch {
        id: "CVE-2025-46819 (lexer out-of-bounds reads)",
        file: "llex.c",
        edits: &[
            Edit {
                find: "void luaX_setinput (lua_State *L, LexState *ls, ZIO *z, TString *source) {
",
                replace: "void luaX_setinput (lua_State *L, LexState *ls, ZIO *z, TString *source) {
  ls->t.token = 0;  /* rlockd: CVE-2025-46819, no token read yet */
",
            },
            Edit {
                find: "static int skip_sep (LexState *ls) {
  int count = 0;",
                replace: "/* rlockd: CVE-2025-46819. Returns count + 2 for a well-formed '[=*[' or
   ']=*]', 1 for a bracket with no '=', 0 for an unfinished '[=*'. */
static size_t skip_sep (LexState *ls) {
  size_t count = 0;",
            },
            Edit {
                find: "  return (ls->current == s) ? count : (-count) - 1;",
                replace: "  if (ls->current == s) return count + 2;
  return (count == 0) ? 1 : 0;",
            },
            Edit {
                find: "static void read_long_string (LexState *ls, SemInfo *seminfo, int sep) {",
                replace: "static void read_long_string (LexState *ls, SemInfo *seminfo, size_t sep) {",
            },
            Edit {
                find: "    seminfo->ts = luaX_newstring(ls, luaZ_buffer(ls->buff) + (2 + sep),
                                     luaZ_bufflen(ls->buff) - 2*(2 + sep));",
                replace: "    seminfo->ts = luaX_newstring(ls, luaZ_buffer(ls->buff) + sep,
                                     luaZ_bufflen(ls->buff) - 2 * sep);",
            },
            Edit {
                find: "          int sep = skip_sep(ls);
          luaZ_resetbuffer(ls->buff);  /* `skip_sep' may dirty the buffer */
          if (sep >= 0) {",
                replace: "          size_t sep = skip_sep(ls);
          luaZ_resetbuffer(ls->buff);  /* `skip_sep' may dirty the buffer */
          if (sep >= 2) {",
            },
            Edit {
                find: "        int sep = skip_sep(ls);
        if (sep >= 0) {
          read_long_string(ls, seminfo, sep);
          return TK_STRING;
        }
        else if (sep == -1) return '[';
        else luaX_lexerror(ls, \"invalid long string delimiter\", TK_STRING);",
                replace: "        size_t sep = skip_sep(ls);
        if (sep >= 2) {
          read_long_string(ls, seminfo, sep);
          return TK_STRING;
        }
        else if (sep == 0)  /* '[=' with no second bracket */
          luaX_lexerror(ls, \"invalid long string delimiter\", TK_STRING);
        return '[';",
            },
        ],
    },
    // CVE-2014-5461 (Lua 5.1 bug list, fixed in 5.2.2): a vararg function
    // with many fixed parameters, called with few arguments, had its fixed
    // parameters copied above the frame without room being checked: a stack
    // overflow. The check must cover `maxstacksize + numparams`. The
    // `lua-src` copy already carries this fix; the edit documents it and
    // fails the build should a future copy lose it.
    Patch {
        id: "CVE-2014-5461 (vararg stack check)",
        file: "ldo.c",
        edits: &[Edit {
            find: "    luaD_checkstack(L, p->maxstacksize);\n",
            replace: "    luaD_checkstack(L, p->maxstacksize + p->numparams);\n",
        }],
    },
    // Not a security fix: speed, with every reply unchanged. An `EVAL`
    // script used to reach its globals through the read-only proxy of the
    // globals table (see src/script/sandbox.rs), so every `redis`, `KEYS`
    // and `ARGV` it named cost two table lookups and a metatable lookup.
    // Its function now has the real globals table as its environment, and
    // that table carries a read-only mark: any assignment through the VM
    // (`SETGLOBAL`, and so `x = 1` in the script or in a function it
    // defines) raises `Attempt to modify a readonly table` with the script's
    // position, exactly the error the proxy's `__newindex` raised (checked
    // against redis-server 7.0.15 by `tests/diff`). Reads are unchanged: a
    // missing global still reaches the real table's `__index`. A script has
    // no other way to the real table (`getfenv`, `setfenv` and `debug` are
    // removed; `_G` is the proxy), and the engine's own writes (KEYS/ARGV)
    // are raw. Three edits: the mark in `Table` (it fits the padding after
    // `lsizenode`), cleared by `luaH_new`, checked by `luaV_settable` before
    // it touches the table; `rlockd_lua_set_readonly` (lua/vm/tables.c)
    // sets it. Regression test: `tests/it/scripting.rs`,
    // `script_globals_stay_read_only`.
    Patch {
        id: "rlockd: read-only mark on tables (lobject.h)",
        file: "lobject.h",
        edits: &[Edit {
            find: "  lu_byte lsizenode;  /* log2 of size of `node' array */\n",
            replace: "  lu_byte lsizenode;  /* log2 of size of `node' array */\n  lu_byte rlockd_readonly;  /* rlockd: assignments through the VM raise */\n",
        }],
    },
    Patch {
        id: "rlockd: read-only mark on tables (ltable.c)",
        file: "ltable.c",
        edits: &[Edit {
            find: "  t->flags = cast_byte(~0);\n",
            replace: "  t->flags = cast_byte(~0);\n  t->rlockd_readonly = 0;\n",
        }],
    },
    Patch {
        id: "rlockd: read-only mark on tables (lvm.c)",
        file: "lvm.c",
        edits: &[Edit {
            find: "      TValue *oldval = luaH_set(L, h, key); /* do a primitive set */\n",
            replace: "      TValue *oldval;\n      if (h->rlockd_readonly)  /* rlockd: a script's read-only globals */\n        luaG_runerror(L, \"Attempt to modify a readonly table\");\n      oldval = luaH_set(L, h, key); /* do a primitive set */\n",
        }],
    },
];
