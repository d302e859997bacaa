/* SPDX-License-Identifier: Apache-2.0 */
/* MIG layouts: enumeration, checks with reasons, and placement on a partly used GPU. */
#include "migbench/layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDS (MB_MAX_PROFILES * MB_MAX_PLACEMENTS)

/* One (profile, placement) pair, with its memory slices as a bit mask. */
struct cand {
    unsigned profile;
    struct mb_placement pl;
    uint32_t mask;
};

/* What a set of instances uses. */
struct usage {
    uint32_t used;
    unsigned count[MB_MAX_PROFILES];
    unsigned total;
    unsigned compute;
    unsigned me;
};

static uint32_t slice_mask(struct mb_placement p)
{
    if (p.size == 0 || p.start >= 32)
        return 0;
    uint32_t ones = p.size >= 32 ? UINT32_MAX : ((uint32_t)1 << p.size) - 1;
    return ones << p.start;
}

/* Larger profiles first: more memory slices, then more compute slices, plain before +me. */
static int rank_cmp(const struct mb_gpu_model *m, unsigned a, unsigned b)
{
    const struct mb_gi_profile *pa = &m->profiles[a], *pb = &m->profiles[b];
    if (pa->memory_slices != pb->memory_slices)
        return pa->memory_slices > pb->memory_slices ? -1 : 1;
    if (pa->compute_slices != pb->compute_slices)
        return pa->compute_slices > pb->compute_slices ? -1 : 1;
    if (pa->media_extension != pb->media_extension)
        return pa->media_extension ? 1 : -1;
    return a < b ? -1 : a > b ? 1 : 0;
}

static int item_cmp(const struct mb_gpu_model *m, const struct mb_layout_item *a,
                    const struct mb_layout_item *b)
{
    int r = rank_cmp(m, a->profile, b->profile);
    if (r)
        return r;
    return a->placement.start < b->placement.start   ? -1
           : a->placement.start > b->placement.start ? 1
                                                     : 0;
}

void mb_layout_sort(const struct mb_gpu_model *model, struct mb_layout *layout)
{
    /* Insertion sort: layouts hold at most MB_LAYOUT_MAX items. */
    for (size_t i = 1; i < layout->n; i++) {
        struct mb_layout_item x = layout->items[i];
        size_t j = i;
        while (j > 0 && item_cmp(model, &layout->items[j - 1], &x) > 0) {
            layout->items[j] = layout->items[j - 1];
            j--;
        }
        layout->items[j] = x;
    }
}

static void sort_profiles(const struct mb_gpu_model *m, unsigned *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        unsigned x = v[i];
        size_t j = i;
        while (j > 0 && rank_cmp(m, v[j - 1], x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* The candidates of the profiles in mask, largest profile first, then by start. */
static size_t build_cands(const struct mb_gpu_model *m, uint32_t mask, struct cand *out)
{
    unsigned order[MB_MAX_PROFILES];
    size_t np = 0;
    for (unsigned i = 0; i < m->n_profiles; i++)
        if (mask & ((uint32_t)1 << i))
            order[np++] = i;
    sort_profiles(m, order, np);
    size_t n = 0;
    for (size_t k = 0; k < np; k++) {
        const struct mb_gi_profile *p = &m->profiles[order[k]];
        for (size_t j = 0; j < p->n_placements; j++) {
            out[n].profile = order[k];
            out[n].pl = p->placements[j];
            out[n].mask = slice_mask(p->placements[j]);
            n++;
        }
    }
    /* Within one profile, by start (the catalog lists them so, but do not rely on it). */
    for (size_t i = 1; i < n; i++) {
        struct cand x = out[i];
        size_t j = i;
        while (j > 0 && out[j - 1].profile == x.profile && out[j - 1].pl.start > x.pl.start) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}

static bool fits(const struct mb_gpu_model *m, const struct usage *u, unsigned profile,
                 uint32_t mask)
{
    const struct mb_gi_profile *p = &m->profiles[profile];
    return !(u->used & mask) && u->count[profile] < p->max_count &&
           u->total < m->max_gpu_instances && u->total < MB_LAYOUT_MAX &&
           u->compute + p->compute_slices <= m->compute_slices &&
           !(p->media_extension && u->me > 0);
}

static void use(const struct mb_gpu_model *m, struct usage *u, unsigned profile, uint32_t mask)
{
    u->used |= mask;
    u->count[profile]++;
    u->total++;
    u->compute += m->profiles[profile].compute_slices;
    u->me += m->profiles[profile].media_extension;
}

static void unuse(const struct mb_gpu_model *m, struct usage *u, unsigned profile, uint32_t mask)
{
    u->used &= ~mask;
    u->count[profile]--;
    u->total--;
    u->compute -= m->profiles[profile].compute_slices;
    u->me -= m->profiles[profile].media_extension;
}

uint32_t mb_layout_default_profiles(const struct mb_gpu_model *model)
{
    uint32_t mask = 0;
    for (unsigned i = 0; i < model->n_profiles && i < 32; i++)
        if (!model->profiles[i].media_extension)
            mask |= (uint32_t)1 << i;
    return mask;
}

/* ---------------------------------------------------------------------------------------------
 * Enumeration: depth-first over the candidates in their fixed order, each candidate only after
 * the previous one, so every set of instances is produced once.
 */

struct enum_ctx {
    const struct mb_gpu_model *m;
    struct cand cands[MAX_CANDS];
    size_t n_cands;
    bool all;
    int (*fn)(const struct mb_layout *, void *);
    void *arg;
    size_t count;
    struct usage u;
    struct mb_layout cur;
};

static bool is_maximal(const struct enum_ctx *e)
{
    for (size_t k = 0; k < e->n_cands; k++)
        if (fits(e->m, &e->u, e->cands[k].profile, e->cands[k].mask))
            return false;
    return true;
}

static int dfs(struct enum_ctx *e, size_t next)
{
    if (e->cur.n > 0 && (e->all || is_maximal(e))) {
        e->count++;
        if (e->fn) {
            int r = e->fn(&e->cur, e->arg);
            if (r)
                return r;
        }
    }
    for (size_t j = next; j < e->n_cands; j++) {
        const struct cand *c = &e->cands[j];
        if (!fits(e->m, &e->u, c->profile, c->mask))
            continue;
        use(e->m, &e->u, c->profile, c->mask);
        e->cur.items[e->cur.n].profile = c->profile;
        e->cur.items[e->cur.n].placement = c->pl;
        e->cur.n++;
        int r = dfs(e, j + 1);
        e->cur.n--;
        unuse(e->m, &e->u, c->profile, c->mask);
        if (r)
            return r;
    }
    return 0;
}

static int check_model(const struct mb_gpu_model *m, struct mb_error *err)
{
    if (!m)
        return mb_error_set(err, MB_EINVAL, "no GPU model");
    if (m->memory_slices > 32 || m->n_profiles > MB_MAX_PROFILES)
        return mb_error_set(err, MB_EINVAL, "%s: too many slices or profiles", m->name);
    return MB_OK;
}

int mb_layout_enumerate(const struct mb_gpu_model *model, uint32_t profiles, unsigned flags,
                        int (*fn)(const struct mb_layout *layout, void *arg), void *arg,
                        size_t *count, struct mb_error *err)
{
    int rc = check_model(model, err);
    if (rc)
        return rc;
    if (profiles == 0)
        profiles = mb_layout_default_profiles(model);
    if (model->n_profiles < 32 && (profiles >> model->n_profiles) != 0)
        return mb_error_set(err, MB_EINVAL, "%s: profile mask names profiles the model lacks",
                            model->name);
    struct enum_ctx *e = calloc(1, sizeof(*e));
    if (!e)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    e->m = model;
    e->n_cands = build_cands(model, profiles, e->cands);
    e->all = flags & MB_LAYOUT_ALL;
    e->fn = fn;
    e->arg = arg;
    rc = dfs(e, 0);
    if (count)
        *count = e->count;
    free(e);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Checks and placement
 */

void mb_layout_slices_str(struct mb_placement p, char *buf, size_t cap)
{
    if (p.size <= 1)
        snprintf(buf, cap, "%u", p.start);
    else
        snprintf(buf, cap, "%u-%u", p.start, p.start + p.size - 1);
}

int mb_layout_validate(const struct mb_gpu_model *model, const struct mb_layout *layout,
                       struct mb_error *err)
{
    int rc = check_model(model, err);
    if (rc)
        return rc;
    if (layout->n > MB_LAYOUT_MAX)
        return mb_error_set(err, MB_EINVAL, "layout has %zu instances (at most %d)", layout->n,
                            MB_LAYOUT_MAX);
    struct usage u;
    memset(&u, 0, sizeof(u));
    for (size_t i = 0; i < layout->n; i++) {
        const struct mb_layout_item *it = &layout->items[i];
        if (it->profile >= model->n_profiles)
            return mb_error_set(err, MB_EINVAL, "instance %zu: profile index %u out of range", i,
                                it->profile);
        const struct mb_gi_profile *p = &model->profiles[it->profile];
        char sl[32];
        mb_layout_slices_str(it->placement, sl, sizeof(sl));
        bool known = false;
        for (size_t k = 0; k < p->n_placements; k++)
            known = known || (p->placements[k].start == it->placement.start &&
                              p->placements[k].size == it->placement.size);
        if (!known)
            return mb_error_set(err, MB_EINFEASIBLE, "%s cannot be placed at %u:%u on %s", p->name,
                                it->placement.start, it->placement.size, model->name);
        uint32_t mask = slice_mask(it->placement);
        if (u.used & mask)
            return mb_error_set(err, MB_EINFEASIBLE,
                                "%s at memory slices %s overlaps another instance", p->name, sl);
        if (u.count[it->profile] >= p->max_count)
            return mb_error_set(err, MB_EINFEASIBLE, "more than %u %s", p->max_count, p->name);
        if (p->media_extension && u.me)
            return mb_error_set(err, MB_EINFEASIBLE, "more than one +me instance");
        if (u.total >= model->max_gpu_instances)
            return mb_error_set(err, MB_EINFEASIBLE, "more than %u GPU instances",
                                model->max_gpu_instances);
        if (u.compute + p->compute_slices > model->compute_slices)
            return mb_error_set(err, MB_EINFEASIBLE, "more than %u compute slices",
                                model->compute_slices);
        use(model, &u, it->profile, mask);
    }
    return MB_OK;
}

/* The usage of existing instances; MB_EINVAL if they are impossible. */
static int existing_usage(const struct mb_gpu_model *m, const struct mb_layout *existing,
                          struct usage *u, struct mb_error *err)
{
    memset(u, 0, sizeof(*u));
    if (!existing)
        return MB_OK;
    if (existing->n > MB_LAYOUT_MAX)
        return mb_error_set(err, MB_EINVAL, "%zu existing instances (at most %d)", existing->n,
                            MB_LAYOUT_MAX);
    for (size_t i = 0; i < existing->n; i++) {
        const struct mb_layout_item *it = &existing->items[i];
        if (it->profile >= m->n_profiles)
            return mb_error_set(err, MB_EINVAL, "existing instance %zu: profile index %u", i,
                                it->profile);
        if (it->placement.size == 0 || it->placement.start + it->placement.size > m->memory_slices)
            return mb_error_set(err, MB_EINVAL,
                                "existing %s at %u:%u lies outside the %u memory slices",
                                m->profiles[it->profile].name, it->placement.start,
                                it->placement.size, m->memory_slices);
        uint32_t mask = slice_mask(it->placement);
        if (u->used & mask)
            return mb_error_set(err, MB_EINVAL, "existing instances overlap at %u:%u",
                                it->placement.start, it->placement.size);
        u->used |= mask;
        u->count[it->profile]++;
        u->total++;
        u->compute += m->profiles[it->profile].compute_slices;
        u->me += m->profiles[it->profile].media_extension;
    }
    return MB_OK;
}

/* A reason, cut to MB_LAYOUT_REASON_MAX (long ones only lose their tail). */
static void say(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(char *dst, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, MB_LAYOUT_REASON_MAX, fmt, ap);
    va_end(ap);
}

static const char *count_word(unsigned n)
{
    static const char *const w[] = {"no", "one", "two", "three", "four", "five", "six", "seven"};
    return n < 8 ? w[n] : NULL;
}

static int popcount32(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* Reasons that follow from counting alone; returns how many were written. */
static size_t count_reasons(const struct mb_gpu_model *m, const struct usage *have,
                            const unsigned *want, size_t n_want, char (*r)[MB_LAYOUT_REASON_MAX],
                            size_t cap)
{
    size_t n = 0;
    unsigned count[MB_MAX_PROFILES] = {0};
    unsigned me = 0, compute = 0, memory = 0;
    for (size_t i = 0; i < n_want; i++) {
        const struct mb_gi_profile *p = &m->profiles[want[i]];
        count[want[i]]++;
        me += p->media_extension;
        compute += p->compute_slices;
        memory += p->memory_slices;
    }
    for (unsigned k = 0; k < m->n_profiles; k++) {
        const struct mb_gi_profile *p = &m->profiles[k];
        if (!count[k] || count[k] + have->count[k] <= p->max_count || n >= cap)
            continue;
        char limit[80];
        if (p->max_count == 1)
            snprintf(limit, sizeof(limit), "only one %s fits", p->name);
        else if (count_word(p->max_count))
            snprintf(limit, sizeof(limit), "at most %s %s fit", count_word(p->max_count), p->name);
        else
            snprintf(limit, sizeof(limit), "at most %u %s fit", p->max_count, p->name);
        if (have->count[k])
            say(r[n++],
                "%s per GPU and %u %s already there; %u more "
                "asked for",
                limit, have->count[k], have->count[k] == 1 ? "is" : "are", count[k]);
        else
            say(r[n++], "%s per GPU; %u asked for", limit, count[k]);
    }
    if (me + have->me > 1 && n < cap)
        say(r[n++],
            "only one +me (media extension) instance fits per GPU; the +me profiles exclude "
            "each other%s",
            have->me ? ", and one is already there" : "");
    size_t total = n_want + have->total;
    if (total > m->max_gpu_instances && n < cap)
        say(r[n++], "at most %u GPU instances fit on %s; this makes %zu", m->max_gpu_instances,
            m->name, total);
    if (compute + have->compute > m->compute_slices && n < cap) {
        if (have->compute)
            say(r[n++], "needs %u compute slices, but only %u of %u are free", compute,
                m->compute_slices - have->compute, m->compute_slices);
        else
            say(r[n++], "needs %u compute slices; %s has %u", compute, m->name, m->compute_slices);
    }
    unsigned used_mem = (unsigned)popcount32(have->used);
    if (memory + used_mem > m->memory_slices && n < cap) {
        if (used_mem)
            say(r[n++], "needs %u memory slices, but only %u of %u are free", memory,
                m->memory_slices - used_mem, m->memory_slices);
        else
            say(r[n++], "needs %u memory slices; %s has %u", memory, m->name, m->memory_slices);
    }
    return n;
}

/* Backtracking over placements of want[] (sorted largest first). */
struct search {
    const struct mb_gpu_model *m;
    const unsigned *want;
    size_t n;
    uint32_t used;
    int cur[MB_LAYOUT_MAX]; /* placement index per item, -1 skipped */
    int best[MB_LAYOUT_MAX];
    bool found;
    long best_score;
    size_t best_placed;
    bool allow_skip;
};

/* How much room a final arrangement leaves: free (profile, placement) pairs of the model. */
static long room_score(const struct mb_gpu_model *m, uint32_t used)
{
    long score = 0;
    for (size_t i = 0; i < m->n_profiles; i++)
        for (size_t k = 0; k < m->profiles[i].n_placements; k++)
            score += !(slice_mask(m->profiles[i].placements[k]) & used);
    return score;
}

static void solve(struct search *s, size_t i, size_t placed)
{
    if (s->allow_skip && placed + (s->n - i) <= s->best_placed && s->found)
        return;
    if (i == s->n) {
        if (s->allow_skip) {
            if (!s->found || placed > s->best_placed) {
                s->found = true;
                s->best_placed = placed;
                memcpy(s->best, s->cur, sizeof(s->best));
            }
            return;
        }
        long score = room_score(s->m, s->used);
        if (!s->found || score > s->best_score) {
            s->found = true;
            s->best_score = score;
            memcpy(s->best, s->cur, sizeof(s->best));
        }
        return;
    }
    const struct mb_gi_profile *p = &s->m->profiles[s->want[i]];
    /* Equal profiles take increasing placement indices: each arrangement is tried once. */
    int from = 0;
    if (i > 0 && s->want[i - 1] == s->want[i]) {
        for (size_t k = i; k-- > 0 && s->want[k] == s->want[i];)
            if (s->cur[k] >= 0) {
                from = s->cur[k] + 1;
                break;
            }
    }
    for (int k = from; k < (int)p->n_placements; k++) {
        uint32_t mask = slice_mask(p->placements[k]);
        if (s->used & mask)
            continue;
        s->used |= mask;
        s->cur[i] = k;
        solve(s, i + 1, placed + 1);
        s->used &= ~mask;
        s->cur[i] = -1;
    }
    if (s->allow_skip) {
        s->cur[i] = -1;
        solve(s, i + 1, placed);
    }
}

static void join_ranges(const struct mb_gi_profile *p, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < p->n_placements && n + 1 < cap; k++) {
        char sl[32];
        mb_layout_slices_str(p->placements[k], sl, sizeof(sl));
        const char *sep = k == 0 ? "" : k + 1 == p->n_placements ? " or " : ", ";
        int w = snprintf(buf + n, cap - n, "%s%s", sep, sl);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/* Explains the first instance that the best partial arrangement could not place. */
static size_t geometry_reason(const struct mb_gpu_model *m, const struct mb_layout *existing,
                              uint32_t used0, const unsigned *want, size_t n_want,
                              char (*r)[MB_LAYOUT_REASON_MAX])
{
    struct search s;
    memset(&s, 0, sizeof(s));
    s.m = m;
    s.want = want;
    s.n = n_want;
    s.used = used0;
    s.allow_skip = true;
    for (size_t i = 0; i < MB_LAYOUT_MAX; i++)
        s.cur[i] = s.best[i] = -1;
    solve(&s, 0, 0);
    size_t x = 0;
    while (x < n_want && s.best[x] >= 0)
        x++;
    if (x == n_want)
        return 0;
    const struct mb_gi_profile *px = &m->profiles[want[x]];
    char ranges[160];
    join_ranges(px, ranges, sizeof(ranges));

    /* Who sits on px's placements in that arrangement. */
    struct mb_layout_item who[2 * MB_LAYOUT_MAX];
    bool old[2 * MB_LAYOUT_MAX];
    size_t nw = 0;
    uint32_t pmask = 0;
    for (size_t k = 0; k < px->n_placements; k++)
        pmask |= slice_mask(px->placements[k]);
    for (size_t i = 0; existing && i < existing->n; i++)
        if (slice_mask(existing->items[i].placement) & pmask) {
            old[nw] = true;
            who[nw++] = existing->items[i];
        }
    for (size_t i = 0; i < n_want; i++)
        if (s.best[i] >= 0) {
            struct mb_placement pl = m->profiles[want[i]].placements[s.best[i]];
            if (slice_mask(pl) & pmask) {
                old[nw] = false;
                who[nw].profile = want[i];
                who[nw++].placement = pl;
            }
        }
    for (size_t i = 1; i < nw; i++) {
        struct mb_layout_item w = who[i];
        bool xo = old[i];
        size_t j = i;
        while (j > 0 && who[j - 1].placement.start > w.placement.start) {
            who[j] = who[j - 1];
            old[j] = old[j - 1];
            j--;
        }
        who[j] = w;
        old[j] = xo;
    }
    char list[MB_LAYOUT_REASON_MAX] = "";
    size_t n = 0;
    for (size_t i = 0; i < nw && n + 1 < sizeof(list); i++) {
        char sl[32];
        mb_layout_slices_str(who[i].placement, sl, sizeof(sl));
        const char *sep = i == 0 ? "" : i + 1 == nw ? " and " : ", ";
        int w = snprintf(list + n, sizeof(list) - n, "%s%s at %s%s", sep,
                         m->profiles[who[i].profile].name, sl, old[i] ? " (already there)" : "");
        if (w < 0)
            break;
        n += (size_t)w;
    }
    if (nw == 0)
        say(r[0], "%s needs memory slices %s; no arrangement leaves one of them free", px->name,
            ranges);
    else if (px->n_placements == 1)
        say(r[0], "%s needs memory slices %s; %s %s part of them", px->name, ranges, list,
            nw == 1 ? "holds" : "hold");
    else
        say(r[0], "%s needs memory slices %s; %s %s %s free", px->name, ranges, list,
            nw == 1 ? "leaves" : "leave", px->n_placements == 2 ? "neither" : "none of them");
    return 1;
}

static int check_want(const struct mb_gpu_model *m, const unsigned *want, size_t n_want,
                      struct mb_error *err)
{
    if (n_want && !want)
        return mb_error_set(err, MB_EINVAL, "no profiles given");
    for (size_t i = 0; i < n_want; i++)
        if (want[i] >= m->n_profiles)
            return mb_error_set(err, MB_EINVAL, "profile index %u out of range for %s", want[i],
                                m->name);
    return MB_OK;
}

/* The explanation, and the arrangement when there is one (found = true). */
static int analyse(const struct mb_gpu_model *model, const struct mb_layout *existing,
                   const unsigned *add, size_t n_add, char (*reasons)[MB_LAYOUT_REASON_MAX],
                   size_t cap, size_t *n, struct mb_layout *out, struct mb_error *err)
{
    int rc = check_model(model, err);
    if (!rc)
        rc = check_want(model, add, n_add, err);
    struct usage have;
    if (!rc)
        rc = existing_usage(model, existing, &have, err);
    if (rc)
        return rc;
    *n = count_reasons(model, &have, add, n_add, reasons, cap);
    if (*n > 0)
        return MB_OK;
    /* Counting passed, so n_add <= max_gpu_instances and fits MB_LAYOUT_MAX. */
    unsigned want[MB_LAYOUT_MAX];
    memcpy(want, add, n_add * sizeof(*want));
    sort_profiles(model, want, n_add);
    struct search s;
    memset(&s, 0, sizeof(s));
    s.m = model;
    s.want = want;
    s.n = n_add;
    s.used = have.used;
    for (size_t i = 0; i < MB_LAYOUT_MAX; i++)
        s.cur[i] = s.best[i] = -1;
    solve(&s, 0, 0);
    if (s.found) {
        if (out) {
            out->n = n_add;
            for (size_t i = 0; i < n_add; i++) {
                out->items[i].profile = want[i];
                out->items[i].placement = model->profiles[want[i]].placements[s.best[i]];
            }
            mb_layout_sort(model, out);
        }
        return MB_OK;
    }
    if (cap > 0)
        *n = geometry_reason(model, existing, have.used, want, n_add, reasons);
    if (*n == 0 && cap > 0) {
        say(reasons[0], "no arrangement of these instances fits");
        *n = 1;
    }
    return MB_OK;
}

int mb_layout_explain(const struct mb_gpu_model *model, const struct mb_layout *existing,
                      const unsigned *add, size_t n_add, char (*reasons)[MB_LAYOUT_REASON_MAX],
                      size_t cap, size_t *n, struct mb_error *err)
{
    *n = 0;
    return analyse(model, existing, add, n_add, reasons, cap, n, NULL, err);
}

int mb_layout_place(const struct mb_gpu_model *model, const struct mb_layout *existing,
                    const unsigned *add, size_t n_add, struct mb_layout *out, struct mb_error *err)
{
    char reasons[4][MB_LAYOUT_REASON_MAX];
    size_t n = 0;
    struct mb_layout tmp;
    out->n = 0;
    int rc = analyse(model, existing, add, n_add, reasons, 4, &n, &tmp, err);
    if (rc)
        return rc;
    if (n == 0) {
        *out = tmp;
        return MB_OK;
    }
    char msg[MB_ERROR_MSG_MAX] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len + 1 < sizeof(msg); i++) {
        int w = snprintf(msg + len, sizeof(msg) - len, "%s%s", i ? "; " : "", reasons[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return mb_error_set(err, MB_EINFEASIBLE, "%s", msg);
}

/* ---------------------------------------------------------------------------------------------
 * Nearest valid layouts
 */

struct near_entry {
    struct mb_layout layout;
    unsigned count[MB_MAX_PROFILES];
    unsigned dist, drops;
    unsigned compute;
};

struct near_ctx {
    const struct mb_gpu_model *m;
    unsigned want[MB_MAX_PROFILES];
    struct near_entry *best;
    size_t cap, n;
};

static bool near_better(const struct near_entry *a, const struct near_entry *b)
{
    if (a->dist != b->dist)
        return a->dist < b->dist;
    if (a->drops != b->drops)
        return a->drops < b->drops;
    return a->compute > b->compute;
}

static int near_visit(const struct mb_layout *l, void *arg)
{
    struct near_ctx *c = arg;
    struct near_entry e;
    memset(&e, 0, sizeof(e));
    for (size_t i = 0; i < l->n; i++) {
        e.count[l->items[i].profile]++;
        e.compute += c->m->profiles[l->items[i].profile].compute_slices;
    }
    for (size_t k = 0; k < c->m->n_profiles; k++) {
        if (e.count[k] < c->want[k]) {
            e.drops += c->want[k] - e.count[k];
            e.dist += c->want[k] - e.count[k];
        } else {
            e.dist += e.count[k] - c->want[k];
        }
    }
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(c->best[i].count, e.count, sizeof(e.count)) == 0)
            return 0;
    if (c->n == c->cap && !near_better(&e, &c->best[c->n - 1]))
        return 0;
    e.layout = *l;
    size_t pos = c->n < c->cap ? c->n++ : c->n - 1;
    while (pos > 0 && near_better(&e, &c->best[pos - 1])) {
        c->best[pos] = c->best[pos - 1];
        pos--;
    }
    c->best[pos] = e;
    return 0;
}

int mb_layout_nearest(const struct mb_gpu_model *model, const unsigned *want, size_t n_want,
                      struct mb_layout *out, size_t cap, size_t *n, struct mb_error *err)
{
    *n = 0;
    int rc = check_model(model, err);
    if (!rc)
        rc = check_want(model, want, n_want, err);
    if (rc || cap == 0)
        return rc;
    struct near_ctx c;
    memset(&c, 0, sizeof(c));
    c.m = model;
    uint32_t mask = mb_layout_default_profiles(model);
    for (size_t i = 0; i < n_want; i++) {
        if (c.want[want[i]] < UINT32_MAX / 2)
            c.want[want[i]]++;
        mask |= (uint32_t)1 << want[i];
    }
    c.cap = cap;
    c.best = calloc(cap, sizeof(*c.best));
    if (!c.best)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    rc = mb_layout_enumerate(model, mask, MB_LAYOUT_MAXIMAL, near_visit, &c, NULL, err);
    if (!rc) {
        for (size_t i = 0; i < c.n; i++)
            out[i] = c.best[i].layout;
        *n = c.n;
    }
    free(c.best);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Picture
 */

#define CELL 5

size_t mb_layout_picture(const struct mb_gpu_model *model, const struct mb_layout *layout,
                         char *buf, size_t cap)
{
    size_t need = (size_t)model->memory_slices * CELL;
    if (cap == 0)
        return need;
    char line[MB_MAX_MEMORY_SLICES * CELL + 1];
    size_t len = need < sizeof(line) - 1 ? need : sizeof(line) - 1;
    for (size_t s = 0; s + CELL <= len + 0; s += CELL)
        memcpy(line + s, " ... ", CELL);
    for (size_t i = 0; i < layout->n; i++) {
        const struct mb_layout_item *it = &layout->items[i];
        if (it->profile >= model->n_profiles)
            continue;
        const struct mb_gi_profile *p = &model->profiles[it->profile];
        size_t from = (size_t)it->placement.start * CELL;
        size_t width = (size_t)it->placement.size * CELL;
        if (from >= len || width < 2)
            continue;
        if (from + width > len)
            width = len - from;
        char label[16];
        snprintf(label, sizeof(label), "%ug%s", p->compute_slices, p->media_extension ? "+" : "");
        line[from] = '[';
        for (size_t k = 1; k + 1 < width; k++)
            line[from + k] = k - 1 < strlen(label) ? label[k - 1] : '-';
        line[from + width - 1] = ']';
    }
    line[len] = '\0';
    snprintf(buf, cap, "%s", line);
    return need;
}
