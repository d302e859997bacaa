/* SPDX-License-Identifier: Apache-2.0 */
/* The selection syntax of run --cells / --only / --shard (run/selection.h). */
#include "run/selection.h"

#include <stdint.h>
#include <string.h>

/* Digits only: *out gets the value, SIZE_MAX when it does not fit (an index past any cell). */
static bool parse_index(const char *p, size_t len, size_t *out)
{
    if (len == 0)
        return false;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        unsigned d = (unsigned)(p[i] - '0');
        v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
    }
    *out = v;
    return true;
}

bool mb__selection_is_index(const char *name, size_t len)
{
    size_t a;
    const char *dash = memchr(name, '-', len);
    if (!dash)
        return parse_index(name, len, &a);
    return parse_index(name, (size_t)(dash - name), &a) &&
           parse_index(dash + 1, len - (size_t)(dash - name) - 1, &a);
}

static int mark_name(const char *p, size_t len, const char *opt,
                     const struct mb__selection_cells *c, bool *keep, struct mb_error *err)
{
    bool found = false;
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->names[i]) == len && strncmp(c->names[i], p, len) == 0)
            found = keep[i] = true;
    for (size_t i = 0; !found && i < c->n_runs; i++)
        if (strlen(c->runs[i]) == len && strncmp(c->runs[i], p, len) == 0)
            found = true; /* a run skipped here: its note says why */
    if (!found)
        return mb_error_set(err, MB_EINVAL,
                            "%s: '%.*s' is neither a cell index, a range A-B nor a run of the "
                            "experiment",
                            opt, (int)(len > 200 ? 200 : len), p);
    return MB_OK;
}

/* Marks the cells one item names: "N", "A-B" or a run name. */
static int mark_item(const char *p, size_t len, const char *opt,
                     const struct mb__selection_cells *c, bool *keep, struct mb_error *err)
{
    const char *dash = memchr(p, '-', len);
    size_t a, b;
    int shown = (int)(len > 200 ? 200 : len);
    if (len == 0)
        return mb_error_set(err, MB_EINVAL, "%s: an empty item (two commas, or one at an end)",
                            opt);
    if (parse_index(p, len, &a)) {
        b = a;
    } else if (dash && parse_index(p, (size_t)(dash - p), &a) &&
               parse_index(dash + 1, len - (size_t)(dash - p) - 1, &b)) {
        if (b < a)
            return mb_error_set(err, MB_EINVAL, "%s: '%.*s' is an empty range", opt, shown, p);
    } else {
        return mark_name(p, len, opt, c, keep, err);
    }
    if (b >= c->n)
        return mb_error_set(err, MB_EINVAL, "%s: '%.*s' is past the last cell (%zu cells: 0-%zu)",
                            opt, shown, p, c->n, c->n ? c->n - 1 : 0);
    for (size_t i = a; i <= b; i++)
        keep[i] = true;
    return MB_OK;
}

int mb__selection_mark(const char *list, const char *opt, const struct mb__selection_cells *c,
                       bool *keep, struct mb_error *err)
{
    if (!list[0])
        return mb_error_set(err, MB_EINVAL, "%s: empty; name at least one cell", opt);
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        int rc = mark_item(p, len, opt, c, keep, err);
        if (rc != MB_OK)
            return rc;
        if (!p[len])
            return MB_OK;
        p += len + 1;
    }
}

int mb__selection_shard(const char *shard, size_t *i, size_t *n, struct mb_error *err)
{
    const char *slash = strchr(shard, '/');
    if (!slash || !parse_index(shard, (size_t)(slash - shard), i) ||
        !parse_index(slash + 1, strlen(slash + 1), n) || *n == 0 || *i >= *n)
        return mb_error_set(err, MB_EINVAL,
                            "--shard: expected I/N with 0 <= I < N (e.g. 0/4), got '%.200s'",
                            shard);
    return MB_OK;
}
