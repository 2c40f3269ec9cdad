/* Number parsing and formatting done exactly as Redis does it, with the C
 * library Redis itself uses: strtod/strtold for input, snprintf "%.17g" and
 * "%.17Lf" for output, and x87 long double arithmetic for INCRBYFLOAT /
 * HINCRBYFLOAT. Rust has no long double, and re-deriving printf's rounding
 * by hand would drift from Redis on edge cases. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RL_MAX_LD_CHARS (5 * 1024)

/* Redis getDoubleFromObject(): strtod over the whole string, no leading
 * space, no NaN, overflow and total underflow refused. */
int rl_string2d(const char *s, size_t len, double *out) {
    char buf[RL_MAX_LD_CHARS];
    char *eptr;
    double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    v = strtod(buf, &eptr);
    if ((size_t)(eptr - buf) != len) return 0;
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)) return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

/* SORT's score: strtod over the C string (it stops at a NUL), leading
 * spaces and the empty string accepted, trailing bytes, ERANGE and NaN
 * refused. */
int rl_sort_score(const char *s, size_t len, double *out) {
    char *buf = malloc(len + 1);
    char *eptr;
    double v;
    int ok;
    if (buf == NULL) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &eptr);
    ok = eptr[0] == '\0' && errno != ERANGE && !isnan(v);
    free(buf);
    if (ok) *out = v;
    return ok;
}

/* Redis zzlStrtod(): strtod of at most 127 bytes, whatever follows them
 * (a listpack sorted set's score as Redis reads it back). */
double rl_zzl_strtod(const char *s, size_t len) {
    char buf[128];
    if (len > sizeof(buf) - 1) len = sizeof(buf) - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return strtod(buf, NULL);
}

/* Redis string2ld(). */
static int rl_string2ld(const char *s, size_t len, long double *out) {
    char buf[RL_MAX_LD_CHARS];
    char *eptr;
    long double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &eptr);
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) ||
        errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* Redis ld2string(..., LD_STR_HUMAN). Returns the length or 0. */
static int rl_ld2string_human(char *buf, size_t len, long double value) {
    int l;
    if (isinf(value)) {
        if (len < 5) return 0;
        if (value > 0) { memcpy(buf, "inf", 3); l = 3; }
        else { memcpy(buf, "-inf", 4); l = 4; }
        buf[l] = '\0';
        return l;
    }
    l = snprintf(buf, len, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > len) return 0;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') { buf[0] = '0'; l = 1; }
    buf[l] = '\0';
    return l;
}

/* INCRBYFLOAT: cur (may be NULL for a missing key = 0) + incr.
 * Returns: >0 length written to out; -1 cur not a float; -2 incr not a float;
 * -3 result NaN or infinite; -4 no room. */
int rl_ld_incr(const char *cur, size_t curlen, const char *incr, size_t incrlen,
               char *out, size_t outlen) {
    long double a = 0, b = 0, r;
    int l;
    if (cur != NULL && !rl_string2ld(cur, curlen, &a)) return -1;
    if (!rl_string2ld(incr, incrlen, &b)) return -2;
    r = a + b;
    if (isnan(r) || isinf(r)) return -3;
    l = rl_ld2string_human(out, outlen, r);
    if (l == 0) return -4;
    return l;
}

/* Parse a long double and print it back in human form (used where Redis
 * echoes a long double it parsed). Returns length, or -1 when not a float. */
int rl_ld_normalize(const char *s, size_t len, char *out, size_t outlen) {
    long double v;
    int l;
    if (!rl_string2ld(s, len, &v)) return -1;
    l = rl_ld2string_human(out, outlen, v);
    return l == 0 ? -4 : l;
}

/* "%.17g" as Redis 7.0 addReplyDouble() prints doubles. */
int rl_fmt_g17(double d, char *out, size_t outlen) {
    return snprintf(out, outlen, "%.17g", d);
}

/* A double widened to long double and printed in Redis's human form
 * (addReplyHumanLongDouble: GEOPOS, WITHCOORD). Returns the length or 0. */
int rl_fmt_human_double(double d, char *out, size_t outlen) {
    return rl_ld2string_human(out, outlen, (long double)d);
}
