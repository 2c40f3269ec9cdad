/* rlockd's own addition to the Lua VM it builds (not a patch of Lua's files).
 *
 * Every EVAL/EVALSHA sets the globals KEYS and ARGV to arrays of its
 * arguments. Building two new tables per run (and collecting them later),
 * and interning every argument again, was the largest part of Lua's share
 * of a lock script. Each cached script keeps its own two tables instead, and
 * a run refills them. A script cannot keep a reference to a table past its
 * run (the sandbox leaves it no writable global state), so a table is
 * refilled when nothing of what the previous run may have done to it can
 * show: no metatable, no entry outside the array part, an array part large
 * enough but small. Slots past the new arguments are cleared here; slots
 * that already hold the wanted string (a lock's lease or owner id, the
 * same from run to run) are kept, and the others are stored with the write
 * barrier the C API applies. So `#t`, `ipairs`, `next` and `unpack` see
 * exactly a fresh array. */
#include <string.h>

#include "lstate.h"
#include "lobject.h"
#include "ltable.h"
#include "lgc.h"
#include "lstring.h"

/* Largest array part refilled: a run with more arguments gets a new table,
 * and a large one is never kept. */
#define RLOCKD_REFILL_MAX 64

/* True if `h` can be refilled with n arguments: nothing a script may have
 * done to it shows (no metatable, no entry outside the array part) and its
 * array part is large enough but small. */
static int refillable(const Table *h, int n) {
    int i;
    if (h->metatable != NULL || n > h->sizearray || h->sizearray > RLOCKD_REFILL_MAX) return 0;
    if (h->lsizenode > 2) return 0;
    for (i = 0; i < sizenode(h); i++) {
        if (!ttisnil(gval(gnode(h, i)))) return 0;
    }
    return 1;
}

/* One run's KEYS or ARGV in one call (what the C API took about twenty
 * calls for, each resolving its stack index again): the table registered
 * at `table_ref` is refilled with the n strings ptrs[i]/lens[i] and set as
 * the field, registered at `name_ref`, of the table registered at
 * `globals_ref`. Slots already holding their string keep it (not interned
 * again); the others get theirs as `lua_pushlstring` + `lua_rawseti` would
 * store it, with the same write barrier; slots past n are cleared. The
 * collector gets its step afterwards, when every new string is in the
 * table. Returns 0, or -1 (nothing changed) if the table cannot be refilled
 * or a reference is not what it should be: the caller builds a new table. */
int rlockd_lua_set_arg_table(lua_State *L, int globals_ref, int name_ref, int table_ref, int n,
                             const char *const *ptrs, const size_t *lens) {
    Table *reg = hvalue(registry(L));
    const TValue *g = luaH_getnum(reg, globals_ref);
    const TValue *name = luaH_getnum(reg, name_ref);
    const TValue *t = luaH_getnum(reg, table_ref);
    TValue table;
    Table *h;
    int i;
    if (!ttistable(g) || !ttisstring(name) || !ttistable(t) || hvalue(g) == reg) return -1;
    h = hvalue(t);
    if (!refillable(h, n)) return -1;
    for (i = 0; i < n; i++) {
        TValue *v = &h->array[i];
        if (ttisstring(v) && tsvalue(v)->len == lens[i] && memcmp(svalue(v), ptrs[i], lens[i]) == 0) continue;
        setsvalue(L, v, luaS_newlstr(L, ptrs[i], lens[i]));
        luaC_barriert(L, h, v);
    }
    for (i = n; i < h->sizearray; i++) setnilvalue(&h->array[i]);
    /* `luaH_set` may move the globals' nodes, never the registry's. */
    setobj(L, &table, t);
    {
        TValue *slot = luaH_set(L, hvalue(g), name);
        setobj2t(L, slot, &table);
        luaC_barriert(L, hvalue(g), &table);
    }
    luaC_checkGC(L);
    return 0;
}

/* Marks the table on top of the stack read-only (the `rlockd_readonly`
 * field our patch adds to `Table`, see lua/vm/patches.rs): from then on an
 * assignment to it through the VM raises `Attempt to modify a readonly
 * table`; raw writes through the C API still go through. Returns 0, or -1
 * if the value on top is not a table. */
int rlockd_lua_set_readonly(lua_State *L) {
    const TValue *o = L->top - 1;
    if (!ttistable(o)) return -1;
    hvalue(o)->rlockd_readonly = 1;
    return 0;
}

/* 1 if the value on top of the stack is a table marked read-only, else 0. */
int rlockd_lua_is_readonly(lua_State *L) {
    const TValue *o = L->top - 1;
    return ttistable(o) && hvalue(o)->rlockd_readonly;
}
