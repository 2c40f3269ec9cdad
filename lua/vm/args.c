/* rlockd's own addition to the Lua VM it builds (not a patch of Lua's files).
 *
 * `redis.call`/`redis.pcall` read every argument as bytes (a string as it
 * is, a number to be formatted as `%.17g`, anything else refused). Through
 * the C API that is two calls per argument (`lua_type`, then
 * `lua_tolstring` or `lua_tonumber`), each resolving the stack index again;
 * here one call reads them all from the C function's frame. Nothing is
 * converted in place and nothing is allocated, so the collector and the
 * stack are left exactly as found. */
#include <stddef.h>

#include "lstate.h"
#include "lobject.h"

/* Arguments 1..n of the running C function (n must not exceed its
 * `lua_gettop`): a string's bytes in ptrs[i]/lens[i], or for a number
 * ptrs[i] = NULL and its value in nums[i]. Returns 0, or i + 1 for the
 * first argument i that is neither (the slots after it are not written). */
int rlockd_lua_call_args(lua_State *L, int n, const char **ptrs, size_t *lens, lua_Number *nums) {
    int i;
    if (n > L->top - L->base) return 1;
    for (i = 0; i < n; i++) {
        const TValue *o = L->base + i;
        if (ttisstring(o)) {
            ptrs[i] = svalue(o);
            lens[i] = tsvalue(o)->len;
        } else if (ttisnumber(o)) {
            ptrs[i] = NULL;
            lens[i] = 0;
            nums[i] = nvalue(o);
        } else {
            return i + 1;
        }
    }
    return 0;
}
