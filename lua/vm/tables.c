/* rlockd's own addition to the Lua VM it builds (not a patch of Lua's files).
 *
 * Every EVAL/EVALSHA sets the globals KEYS and ARGV to arrays of its
 * arguments. Building two new tables per run (and collecting them later) was
 * the largest part of Lua's share of a lock script. A script cannot keep a
 * reference to a table past its run (the sandbox leaves it no writable
 * global state), so the previous run's table is refilled instead, when
 * nothing of what the script may have done to it can show: no metatable, no
 * entry outside the array part, an array part large enough but small. The
 * caller then stores the new arguments at 1..n through the C API (which
 * keeps the collector's invariants); everything past them is already nil,
 * so `#t`, `ipairs`, `next` and `unpack` see exactly a fresh array. */
#include "lstate.h"
#include "lobject.h"
#include "ltable.h"

/* Largest array part refilled (a run with more arguments gets a new table,
 * and a large one is never kept). */
#define RLOCKD_REFILL_MAX 64

/* If the value on top of the stack is a table that can be refilled with `n`
 * values, empties it and returns 1; otherwise returns 0 and leaves it. */
int rlockd_lua_refill_array(lua_State *L, int n) {
    const TValue *o = L->top - 1;
    Table *h;
    int i;
    if (!ttistable(o)) return 0;
    h = hvalue(o);
    if (h->metatable != NULL || n > h->sizearray || h->sizearray > RLOCKD_REFILL_MAX) return 0;
    if (h->lsizenode > 2) return 0;
    for (i = 0; i < sizenode(h); i++) {
        if (!ttisnil(gval(gnode(h, i)))) return 0;
    }
    for (i = 0; i < h->sizearray; i++) setnilvalue(&h->array[i]);
    return 1;
}
