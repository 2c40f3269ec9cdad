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
 * same from run to run) are kept, and the caller stores the others through
 * the C API (which keeps the collector's invariants). So `#t`, `ipairs`,
 * `next` and `unpack` see exactly a fresh array. */
#include <string.h>

#include "lstate.h"
#include "lobject.h"
#include "ltable.h"

/* Largest array part refilled: a run with more arguments gets a new table,
 * and a large one is never kept (at most 64 slots: one bit each below). */
#define RLOCKD_REFILL_MAX 64

/* The value on top of the stack, a table refilled with the `n` strings
 * `ptrs[i]`/`lens[i]`: returns -1 if it cannot be (it is left as is);
 * otherwise clears its slots past `n` and returns the mask of slots
 * 1..n (bit i-1) that already hold their string. */
long long rlockd_lua_refill_array(lua_State *L, int n, const char *const *ptrs, const size_t *lens) {
    const TValue *o = L->top - 1;
    Table *h;
    long long kept = 0;
    int i;
    if (!ttistable(o)) return -1;
    h = hvalue(o);
    if (h->metatable != NULL || n > h->sizearray || h->sizearray > RLOCKD_REFILL_MAX) return -1;
    if (h->lsizenode > 2) return -1;
    for (i = 0; i < sizenode(h); i++) {
        if (!ttisnil(gval(gnode(h, i)))) return -1;
    }
    for (i = 0; i < n; i++) {
        const TValue *v = &h->array[i];
        if (ttisstring(v) && tsvalue(v)->len == lens[i] && memcmp(svalue(v), ptrs[i], lens[i]) == 0)
            kept |= 1LL << i;
    }
    for (i = n; i < h->sizearray; i++) setnilvalue(&h->array[i]);
    return kept;
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
