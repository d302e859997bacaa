/* SPDX-License-Identifier: Apache-2.0 */
/* The layout engine: enumeration counts, checks with reasons, placement beside existing ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "migbench/catalog.h"
#include "migbench/layout.h"

static struct mb_catalog *cat;

static int setup(void **state)
{
    (void)state;
    return mb_catalog_create(&cat, NULL) == MB_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mb_catalog_destroy(cat);
    return 0;
}

static const struct mb_gpu_model *model(const char *name)
{
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, name, &m, NULL), MB_OK);
    return m;
}

static unsigned prof(const struct mb_gpu_model *m, const char *name)
{
    const struct mb_gi_profile *p = mb_model_profile(m, name);
    assert_non_null(p);
    return (unsigned)(p - m->profiles);
}

static uint32_t mask_of(const struct mb_gpu_model *m, const char *const *names, size_t n)
{
    uint32_t mask = 0;
    for (size_t i = 0; i < n; i++)
        mask |= 1u << prof(m, names[i]);
    return mask;
}

/* Every enumerated layout must pass validation; maximal ones must admit no further instance. */
struct check_ctx {
    const struct mb_gpu_model *m;
    uint32_t mask;
    bool maximal;
    size_t seen;
};

static int check_each(const struct mb_layout *l, void *arg)
{
    struct check_ctx *c = arg;
    struct mb_error err;
    if (mb_layout_validate(c->m, l, &err) != MB_OK)
        fail_msg("enumerated layout invalid: %s", err.msg);
    if (c->maximal) {
        for (unsigned p = 0; p < c->m->n_profiles; p++) {
            if (!(c->mask & (1u << p)))
                continue;
            struct mb_layout out;
            if (mb_layout_place(c->m, l, &p, 1, &out, NULL) == MB_OK)
                fail_msg("layout of %zu items is not maximal: %s still fits", l->n,
                         c->m->profiles[p].name);
        }
    }
    /* Items come largest first. */
    struct mb_layout sorted = *l;
    mb_layout_sort(c->m, &sorted);
    assert_memory_equal(&sorted, l, sizeof(*l));
    c->seen++;
    return 0;
}

static void test_a100_nineteen(void **state)
{
    (void)state;
    static const char *const classic[] = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};
    const struct mb_gpu_model *m = model("A100-40GB");
    uint32_t mask = mask_of(m, classic, 5);
    struct check_ctx c = {m, mask, true, 0};
    size_t n = 0;
    assert_int_equal(mb_layout_enumerate(m, mask, MB_LAYOUT_MAXIMAL, check_each, &c, &n, NULL),
                     MB_OK);
    assert_int_equal(n, 19);
    assert_int_equal(c.seen, 19);
    /* Same on the 80GB part and on the H100 with their names. */
    static const char *const h100[] = {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"};
    m = model("H100");
    assert_int_equal(mb_layout_enumerate(m, mask_of(m, h100, 5), 0, NULL, NULL, &n, NULL), MB_OK);
    assert_int_equal(n, 19);
}

/* Counts over every model must match a brute force over all subsets of candidates. */
static size_t brute(const struct mb_gpu_model *m, uint32_t mask, bool all)
{
    struct mb_layout_item cand[64];
    size_t nc = 0;
    for (unsigned p = 0; p < m->n_profiles; p++)
        if (mask & (1u << p))
            for (size_t k = 0; k < m->profiles[p].n_placements; k++) {
                cand[nc].profile = p;
                cand[nc++].placement = m->profiles[p].placements[k];
            }
    assert_true(nc <= 30);
    size_t count = 0;
    for (uint64_t set = 1; set < (1ull << nc); set++) {
        struct mb_layout l = {0};
        if ((size_t)__builtin_popcountll(set) > MB_LAYOUT_MAX)
            continue;
        for (size_t i = 0; i < nc; i++)
            if (set & (1ull << i))
                l.items[l.n++] = cand[i];
        if (mb_layout_validate(m, &l, NULL) != MB_OK)
            continue;
        bool maximal = true;
        for (size_t i = 0; i < nc && maximal && !all; i++) {
            if (set & (1ull << i))
                continue;
            struct mb_layout l2 = l;
            l2.items[l2.n++] = cand[i];
            maximal = mb_layout_validate(m, &l2, NULL) != MB_OK;
        }
        count += all || maximal;
    }
    return count;
}

static void test_counts_match_brute_force(void **state)
{
    (void)state;
    /* A30 (all five profiles, +me included) and the A100 default set are small enough. */
    const struct mb_gpu_model *m = model("A30");
    uint32_t all_a30 = (1u << m->n_profiles) - 1;
    size_t n;
    assert_int_equal(mb_layout_enumerate(m, all_a30, MB_LAYOUT_ALL, NULL, NULL, &n, NULL), MB_OK);
    assert_int_equal(n, brute(m, all_a30, true));
    assert_int_equal(mb_layout_enumerate(m, all_a30, 0, NULL, NULL, &n, NULL), MB_OK);
    assert_int_equal(n, brute(m, all_a30, false));
    m = model("A100-40GB");
    uint32_t def = mb_layout_default_profiles(m);
    assert_int_equal(mb_layout_enumerate(m, def, MB_LAYOUT_ALL, NULL, NULL, &n, NULL), MB_OK);
    size_t b = brute(m, def, true);
    assert_int_equal(n, b);
    assert_int_equal(mb_layout_enumerate(m, def, 0, NULL, NULL, &n, NULL), MB_OK);
    assert_int_equal(n, brute(m, def, false));
}

static void test_a30_me_exclusive(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("A30");
    unsigned want[] = {prof(m, "1g.6gb+me"), prof(m, "2g.12gb+me")};
    struct mb_layout out;
    struct mb_error err;
    assert_int_equal(mb_layout_place(m, NULL, want, 2, &out, &err), MB_EINFEASIBLE);
    assert_non_null(strstr(err.msg, "+me"));
    /* Default profiles leave +me out. */
    uint32_t def = mb_layout_default_profiles(m);
    assert_false(def & (1u << prof(m, "1g.6gb+me")));
    assert_true(def & (1u << prof(m, "1g.6gb")));
}

static void test_check_valid(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("H100");
    unsigned want[] = {prof(m, "1g.10gb"), prof(m, "3g.40gb"), prof(m, "1g.10gb"),
                       prof(m, "2g.20gb")};
    struct mb_layout out;
    struct mb_error err;
    assert_int_equal(mb_layout_place(m, NULL, want, 4, &out, &err), MB_OK);
    assert_int_equal(out.n, 4);
    assert_int_equal(mb_layout_validate(m, &out, &err), MB_OK);
    /* Creation order: largest first. */
    assert_string_equal(m->profiles[out.items[0].profile].name, "3g.40gb");
    assert_string_equal(m->profiles[out.items[1].profile].name, "2g.20gb");
    assert_string_equal(m->profiles[out.items[3].profile].name, "1g.10gb");
    /* 1g cannot start at 7, so the 3g must take 4-7. */
    assert_int_equal(out.items[0].placement.start, 4);
    char pic[128];
    mb_layout_picture(m, &out, pic, sizeof(pic));
    assert_string_equal(pic, "[2g------][1g-][1g-][3g----------------]");
}

static void expect_reason(const struct mb_gpu_model *m, const struct mb_layout *existing,
                          const char *const *names, size_t n, const char *fragment)
{
    unsigned want[64];
    for (size_t i = 0; i < n; i++)
        want[i] = prof(m, names[i]);
    char reasons[4][MB_LAYOUT_REASON_MAX];
    size_t nr = 0;
    assert_int_equal(mb_layout_explain(m, existing, want, n, reasons, 4, &nr, NULL), MB_OK);
    bool hit = false;
    for (size_t i = 0; i < nr; i++)
        hit = hit || strstr(reasons[i], fragment);
    if (!hit) {
        for (size_t i = 0; i < nr; i++)
            fprintf(stderr, "reason: %s\n", reasons[i]);
        fail_msg("no reason contains '%s'", fragment);
    }
    struct mb_layout out;
    struct mb_error err;
    assert_int_equal(mb_layout_place(m, existing, want, n, &out, &err), MB_EINFEASIBLE);
    assert_non_null(strstr(err.msg, fragment));
}

static void test_check_reasons(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("H100");
    static const char *const two4g[] = {"4g.40gb", "4g.40gb"};
    expect_reason(m, NULL, two4g, 2, "only one 4g.40gb fits per GPU; 2 asked for");
    static const char *const four2g[] = {"2g.20gb", "2g.20gb", "2g.20gb", "2g.20gb"};
    expect_reason(m, NULL, four2g, 4, "at most three 2g.20gb fit");
    static const char *const eight1g[] = {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb",
                                          "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"};
    expect_reason(m, NULL, eight1g, 8, "at most 7 GPU instances fit");
    static const char *const c8[] = {"4g.40gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"};
    expect_reason(m, NULL, c8, 5, "needs 8 compute slices; H100-SXM5-80GB has 7");
    static const char *const m9[] = {"3g.40gb", "3g.40gb", "1g.10gb"};
    expect_reason(m, NULL, m9, 3, "needs 9 memory slices; H100-SXM5-80GB has 8");

    /* Geometry: a 2g at 4-5 and a 1g at 0 leave no half free for a 3g. */
    struct mb_layout existing = {.n = 2};
    existing.items[0].profile = prof(m, "2g.20gb");
    existing.items[0].placement = (struct mb_placement){4, 2};
    existing.items[1].profile = prof(m, "1g.10gb");
    existing.items[1].placement = (struct mb_placement){0, 1};
    static const char *const one3g[] = {"3g.40gb"};
    expect_reason(m, &existing, one3g, 1,
                  "3g.40gb needs memory slices 0-3 or 4-7; 1g.10gb at 0 (already there) and "
                  "2g.20gb at 4-5 (already there) leave neither free");
    static const char *const one4g[] = {"4g.40gb"};
    expect_reason(m, &existing, one4g, 1, "4g.40gb needs memory slices 0-3; 1g.10gb at 0");
    /* Counting with instances already there. */
    static const char *const another2g3[] = {"2g.20gb", "2g.20gb", "2g.20gb"};
    expect_reason(m, &existing, another2g3, 3, "and 1 is already there");
}

static void test_place_beside_existing(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("A100-80GB");
    struct mb_layout existing = {.n = 1};
    existing.items[0].profile = prof(m, "3g.40gb");
    existing.items[0].placement = (struct mb_placement){0, 4};
    unsigned want[] = {prof(m, "1g.10gb"), prof(m, "2g.20gb")};
    struct mb_layout out;
    struct mb_error err;
    assert_int_equal(mb_layout_place(m, &existing, want, 2, &out, &err), MB_OK);
    assert_int_equal(out.n, 2);
    struct mb_layout whole = existing;
    for (size_t i = 0; i < out.n; i++)
        whole.items[whole.n++] = out.items[i];
    assert_int_equal(mb_layout_validate(m, &whole, &err), MB_OK);
    assert_string_equal(m->profiles[out.items[0].profile].name, "2g.20gb");
    assert_int_equal(out.items[0].placement.start, 4);
    assert_int_equal(out.items[1].placement.start, 6);

    /* A second 1g has no slice left: 1g cannot start at 7. */
    static const char *const more[] = {"1g.10gb", "2g.20gb", "1g.10gb"};
    expect_reason(m, &existing, more, 3,
                  "1g.10gb needs memory slices 0, 1, 2, 3, 4, 5 or 6; 3g.40gb at 0-3 (already "
                  "there), 2g.20gb at 4-5 and 1g.10gb at 6 leave none of them free");

    /* Room: one 1g beside a 3g at 0-3 goes where it leaves a 2g or 1g.20gb placement free. */
    unsigned one[] = {prof(m, "1g.10gb")};
    assert_int_equal(mb_layout_place(m, &existing, one, 1, &out, &err), MB_OK);
    assert_int_equal(out.n, 1);
    assert_true(out.items[0].placement.start == 4 || out.items[0].placement.start == 6);

    /* Bad existing: overlapping instances. */
    struct mb_layout bad = {.n = 2};
    bad.items[0].profile = prof(m, "2g.20gb");
    bad.items[0].placement = (struct mb_placement){0, 2};
    bad.items[1].profile = prof(m, "1g.10gb");
    bad.items[1].placement = (struct mb_placement){1, 1};
    assert_int_equal(mb_layout_place(m, &bad, one, 1, &out, &err), MB_EINVAL);
    unsigned badidx[] = {99};
    assert_int_equal(mb_layout_place(m, NULL, badidx, 1, &out, &err), MB_EINVAL);
}

static void test_validate(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("H100");
    struct mb_layout l = {.n = 1};
    l.items[0].profile = prof(m, "1g.10gb");
    l.items[0].placement = (struct mb_placement){7, 1};
    struct mb_error err;
    assert_int_equal(mb_layout_validate(m, &l, &err), MB_EINFEASIBLE);
    assert_non_null(strstr(err.msg, "cannot be placed at 7:1"));
    l.n = 2;
    l.items[0].placement = (struct mb_placement){4, 1};
    l.items[1].profile = prof(m, "3g.40gb");
    l.items[1].placement = (struct mb_placement){4, 4};
    assert_int_equal(mb_layout_validate(m, &l, &err), MB_EINFEASIBLE);
    assert_non_null(strstr(err.msg, "overlaps"));
}

static void test_nearest(void **state)
{
    (void)state;
    const struct mb_gpu_model *m = model("H100");
    unsigned want[] = {prof(m, "4g.40gb"), prof(m, "1g.10gb"), prof(m, "1g.10gb"),
                       prof(m, "1g.10gb"), prof(m, "1g.10gb")};
    struct mb_layout near[3];
    size_t n = 0;
    assert_int_equal(mb_layout_nearest(m, want, 5, near, 3, &n, NULL), MB_OK);
    assert_true(n >= 1);
    /* Dropping one 1g is the nearest fix. */
    assert_int_equal(near[0].n, 4);
    assert_string_equal(m->profiles[near[0].items[0].profile].name, "4g.40gb");
    for (size_t i = 0; i < n; i++)
        assert_int_equal(mb_layout_validate(m, &near[i], NULL), MB_OK);
}

static void test_every_model_all(void **state)
{
    (void)state;
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        uint32_t def = mb_layout_default_profiles(m);
        struct check_ctx c = {m, def, true, 0};
        size_t n_max = 0, n_all = 0;
        assert_int_equal(mb_layout_enumerate(m, 0, 0, check_each, &c, &n_max, NULL), MB_OK);
        c.maximal = false;
        assert_int_equal(mb_layout_enumerate(m, 0, MB_LAYOUT_ALL, check_each, &c, &n_all, NULL),
                         MB_OK);
        assert_true(n_max > 0 && n_all > n_max);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a100_nineteen),    cmocka_unit_test(test_counts_match_brute_force),
        cmocka_unit_test(test_a30_me_exclusive), cmocka_unit_test(test_check_valid),
        cmocka_unit_test(test_check_reasons),    cmocka_unit_test(test_place_beside_existing),
        cmocka_unit_test(test_validate),         cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_every_model_all),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
