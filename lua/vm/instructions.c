/* rlockd's own addition to the Lua VM it builds (not a patch of Lua's files).
 *
 * The count hook fires every `basehookcount` VM instructions; between two
 * firings Lua keeps the instructions still to go in `L->hookcount`, which the
 * C API does not expose. With it, the instructions a script executed are
 * counted exactly — firings x period + what was used of the last period —
 * with the hook firing as rarely as Redis's own (every 100,000), instead of
 * a hook on every instruction. rlockd reports the figure per cached script
 * (`RLOCKD SCRIPTS`, `INFO scriptstats`): unlike time, it is the same on any
 * machine, however busy. */
#include "lstate.h"

int rlockd_lua_hook_remaining(lua_State *L) {
    return L->hookcount;
}
