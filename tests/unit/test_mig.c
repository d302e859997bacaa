/* SPDX-License-Identifier: Apache-2.0 */
/* The MIG ownership ledger on the emulated H100 with a state file (mig.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/mig.h"
#include "migbench/report_verbs.h"

struct fx {
    char dir[256];
    char spec[512];
    char ledger[512];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/mb-test-mig-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->spec, sizeof(f->spec), "emu:H100-80GB:mig=on:state=%s/gpu.json", f->dir);
    snprintf(f->ledger, sizeof(f->ledger), "%s/gpu.json.owned.json", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char p[600];
    const char *names[] = {"gpu.json", "gpu.json.owned.json", "gpu.json.lock", "bad.json"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", f->dir, names[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static struct mb_device *open_dev(const struct fx *f)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(f->spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", f->spec, err.msg);
    return dev;
}

static struct mb_mig_ledger *open_ledger(struct mb_device *dev, const char *spec)
{
    struct mb_mig_ledger *l = NULL;
    struct mb_error err;
    if (mb_mig_ledger_open(dev, spec, &l, &err) != MB_OK)
        fail_msg("ledger: %s", err.msg);
    return l;
}

/* The driver id of a profile of the emulated H100. */
static unsigned driver_id(const char *name)
{
    struct mb_catalog *cat = NULL;
    const struct mb_gpu_model *m = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_find(cat, "H100-80GB", &m, &err), MB_OK);
    const struct mb_gi_profile *p = mb_model_profile(m, name);
    assert_non_null(p);
    unsigned id = (unsigned)p->driver_id;
    mb_catalog_destroy(cat);
    return id;
}

/* Creates one instance the way migbench does: intent, create, confirm. */
static unsigned make(struct mb_device *dev, struct mb_mig_ledger *l, const char *profile,
                     unsigned start, unsigned size, enum mb_mig_creator by, const char *exp)
{
    struct mb_error err;
    struct mb_mig_owned o;
    memset(&o, 0, sizeof(o));
    o.profile_id = driver_id(profile);
    snprintf(o.profile, sizeof(o.profile), "%s", profile);
    o.placement = (struct mb_placement){start, size};
    o.creator = by;
    snprintf(o.experiment, sizeof(o.experiment), "%s", exp ? exp : "");
    if (l && mb_mig_ledger_intend(l, &o, &err) != MB_OK)
        fail_msg("intend: %s", err.msg);
    unsigned gi = 0, ci = 0;
    if (mb_device_mig_create_gi(dev, o.profile_id, &o.placement, &gi, &err) != MB_OK)
        fail_msg("create_gi: %s", err.msg);
    if (mb_device_mig_create_ci(dev, gi, -1, &ci, &err) != MB_OK)
        fail_msg("create_ci: %s", err.msg);
    if (l && mb_mig_ledger_confirm(l, o.placement, gi, true, ci, "MIG-x", &err) != MB_OK)
        fail_msg("confirm: %s", err.msg);
    return gi;
}

static size_t n_instances(struct mb_device *dev)
{
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t n = 0;
    struct mb_error err;
    assert_int_equal(mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, &err), MB_OK);
    return n;
}

static size_t count_by(struct mb_mig_ledger *l, enum mb_mig_creator by)
{
    size_t n = 0;
    for (size_t i = 0; i < mb_mig_ledger_count(l); i++)
        n += mb_mig_ledger_entry(l, i)->creator == by;
    return n;
}

/* A run that dies (no teardown), a mig apply, and an instance made without any ledger. */
static void test_killed_run_and_apply(void **state)
{
    struct fx *f = *state;
    char exp[300];
    snprintf(exp, sizeof(exp), "%s", f->dir);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct mb_device *dev = open_dev(f);
        struct mb_mig_ledger *l = open_ledger(dev, f->spec);
        make(dev, l, "2g.20gb", 0, 2, MB_MIG_BY_RUN, exp);
        make(dev, l, "2g.20gb", 2, 2, MB_MIG_BY_RUN, exp);
        _exit(0); /* killed: nothing torn down */
    }
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    struct mb_device *dev = open_dev(f);
    struct mb_mig_ledger *l = open_ledger(dev, f->spec);
    assert_string_equal(mb_mig_ledger_path(l), f->ledger);
    make(dev, l, "1g.10gb", 4, 1, MB_MIG_BY_MIG, NULL);    /* mig apply */
    make(dev, NULL, "1g.10gb", 6, 1, MB_MIG_BY_MIG, NULL); /* someone else's */
    struct mb_error err;
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 3);
    assert_int_equal(count_by(l, MB_MIG_BY_RUN), 2);
    for (size_t i = 0; i < mb_mig_ledger_count(l); i++) {
        const struct mb_mig_owned *o = mb_mig_ledger_entry(l, i);
        assert_true(o->confirmed && o->has_gi && o->has_ci);
        assert_int_equal(o->pid, o->creator == MB_MIG_BY_RUN ? (long)child : (long)getpid());
        assert_true(o->time_unix > 0);
    }
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t n = 0;
    assert_int_equal(mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, &err), MB_OK);
    assert_int_equal(n, 4);
    size_t owned = 0;
    for (size_t i = 0; i < n; i++)
        owned += mb_mig_ledger_owner(l, &gis[i]) != NULL;
    assert_int_equal(owned, 3);
    /* `mig show` marks exactly the ledger's three as migbench's. */
    struct mb_device_info info;
    struct mb_mig_mode mode = {.current = true, .pending = true};
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    const struct mb_gpu_model *m = NULL;
    struct mb_catalog *cat = NULL;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_find(cat, "H100-80GB", &m, &err), MB_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    mb_mig_show_text_write(out, "emu 0", &info, m, &mode, gis, n, l);
    assert_int_equal(fclose(out), 0);
    assert_non_null(strstr(text, "# emu 0: "));
    assert_non_null(strstr(text, ", MIG enabled (pending enabled)\n# [2g------][2g------][1g-]"));
    size_t mine = 0, others = 0;
    for (const char *s = text; (s = strstr(s, "  migbench  ")); s++)
        mine++;
    for (const char *s = text; (s = strstr(s, "  -         ")); s++)
        others++;
    assert_int_equal(mine, 3);
    assert_int_equal(others, 1);
    free(text);
    mb_catalog_destroy(cat);

    /* Another experiment's resume touches nothing. */
    size_t removed = 99;
    assert_int_equal(mb_mig_clear_run(dev, l, "/nonexistent/elsewhere", &removed, &err), MB_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(n_instances(dev), 4);
    /* The dead run's resume removes exactly its two instances. */
    assert_int_equal(mb_mig_clear_run(dev, l, exp, &removed, &err), MB_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(n_instances(dev), 2);
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 1);
    assert_int_equal(count_by(l, MB_MIG_BY_MIG), 1);

    /* Destroying the apply's instance empties the ledger, and the file goes. */
    assert_int_equal(mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, &err), MB_OK);
    for (size_t i = 0; i < n; i++)
        if (mb_mig_ledger_owner(l, &gis[i]))
            assert_int_equal(mb_mig_destroy(dev, l, &gis[i], NULL, &err), MB_OK);
    assert_int_equal(access(f->ledger, F_OK), -1);
    assert_int_equal(n_instances(dev), 1);
    mb_mig_ledger_close(l);
    mb_device_close(dev);
}

/* An intent whose process died before creating anything is pruned; a live instance's is kept. */
static void test_dead_intent_pruned(void **state)
{
    struct fx *f = *state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct mb_device *dev = open_dev(f);
        struct mb_mig_ledger *l = open_ledger(dev, f->spec);
        struct mb_mig_owned o;
        memset(&o, 0, sizeof(o));
        o.profile_id = driver_id("3g.40gb");
        snprintf(o.profile, sizeof(o.profile), "3g.40gb");
        o.placement = (struct mb_placement){4, 4};
        o.creator = MB_MIG_BY_RUN;
        struct mb_error err;
        _exit(mb_mig_ledger_intend(l, &o, &err) == MB_OK ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct mb_device *dev = open_dev(f);
    struct mb_mig_ledger *l = open_ledger(dev, f->spec);
    make(dev, l, "1g.10gb", 0, 1, MB_MIG_BY_MIG, NULL);
    struct mb_error err;
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 2);
    assert_false(mb_mig_ledger_entry(l, 0)->confirmed && mb_mig_ledger_entry(l, 1)->confirmed);
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t n = 0;
    assert_int_equal(mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_prune(l, gis, n, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 1);
    assert_true(mb_mig_ledger_entry(l, 0)->confirmed);
    assert_int_equal(mb_mig_destroy(dev, l, &gis[0], NULL, &err), MB_OK);
    mb_mig_ledger_close(l);
    mb_device_close(dev);
}

/* Two processes writing intents at once lose none (the ledger's lock). */
static void test_concurrent_writers(void **state)
{
    struct fx *f = *state;
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            struct mb_device *dev = open_dev(f);
            struct mb_mig_ledger *l = open_ledger(dev, f->spec);
            int bad = 0;
            for (unsigned i = 0; i < 4; i++) {
                struct mb_mig_owned o;
                memset(&o, 0, sizeof(o));
                snprintf(o.profile, sizeof(o.profile), "1g.10gb");
                o.profile_id = 19;
                o.placement = (struct mb_placement){(unsigned)k * 4 + i, 1};
                struct mb_error err;
                bad += mb_mig_ledger_intend(l, &o, &err) != MB_OK;
            }
            _exit(bad);
        }
    }
    for (int k = 0; k < 2; k++) {
        int st = 0;
        assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    struct mb_device *dev = open_dev(f);
    struct mb_mig_ledger *l = open_ledger(dev, f->spec);
    struct mb_error err;
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 8);
    /* Both writers are dead and nothing was created: all of it goes. */
    assert_int_equal(mb_mig_ledger_prune(l, NULL, 0, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 0);
    assert_int_equal(access(f->ledger, F_OK), -1);
    mb_mig_ledger_close(l);
    mb_device_close(dev);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* A record for another GPU, or with an entry out of range, is refused and left alone. */
static void test_bad_records(void **state)
{
    struct fx *f = *state;
    struct mb_device *dev = open_dev(f);
    struct mb_mig_ledger *l = open_ledger(dev, f->spec);
    struct mb_error err;
    write_file(f->ledger,
               "{\"version\": 2, \"device_uuid\": \"GPU-other\", \"gpu_instances\": []}");
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "the record is for GPU GPU-other"));
    struct mb_mig_owned o;
    memset(&o, 0, sizeof(o));
    o.placement = (struct mb_placement){0, 1};
    snprintf(o.profile, sizeof(o.profile), "1g.10gb");
    assert_int_equal(mb_mig_ledger_intend(l, &o, &err), MB_EINVAL);
    write_file(f->ledger, "{\"device_uuid\": \"x\", \"gpu_instances\": [{\"gi_id\": 1e300}]}");
    assert_int_not_equal(mb_mig_ledger_load(l, &err), MB_OK);
    write_file(f->ledger, "[1, 2");
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "not a migbench ownership record"));
    unlink(f->ledger);
    mb_mig_ledger_close(l);
    mb_device_close(dev);
}

/* An emulated GPU without a state file keeps no ledger: every operation is a no-op. */
static void test_no_ledger(void **state)
{
    (void)state;
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open("emu:H100-80GB:mig=on", &dev, &err), MB_OK);
    struct mb_mig_ledger *l = open_ledger(dev, "emu:H100-80GB:mig=on");
    assert_string_equal(mb_mig_ledger_path(l), "");
    struct mb_mig_owned o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(mb_mig_ledger_intend(l, &o, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_load(l, &err), MB_OK);
    assert_int_equal(mb_mig_ledger_count(l), 0);
    mb_mig_ledger_close(l);
    mb_device_close(dev);
}

static struct mb_mig_gi live(unsigned id, const char *profile, unsigned start, unsigned size)
{
    struct mb_mig_gi g;
    memset(&g, 0, sizeof(g));
    g.id = id;
    g.profile_id = driver_id(profile);
    snprintf(g.profile_name, sizeof(g.profile_name), "%s", profile);
    g.placement = (struct mb_placement){start, size};
    return g;
}

/* apply's diff: keep what matches, remove the rest, place the missing beside the kept. */
static void test_diff(void **state)
{
    (void)state;
    struct mb_catalog *cat = NULL;
    const struct mb_gpu_model *m = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_find(cat, "H100-80GB", &m, &err), MB_OK);
    unsigned p3 = (unsigned)(mb_model_profile(m, "3g.40gb") - m->profiles);
    unsigned p2 = (unsigned)(mb_model_profile(m, "2g.20gb") - m->profiles);
    unsigned p4 = (unsigned)(mb_model_profile(m, "4g.40gb") - m->profiles);
    struct mb_mig_gi gis[2] = {live(1, "3g.40gb", 0, 4), live(7, "1g.10gb", 6, 1)};
    struct mb_mig_diff d;
    unsigned want[] = {p3, p2};
    assert_int_equal(mb_mig_diff(m, gis, 2, want, 2, &d, &err), MB_OK);
    assert_int_equal(d.kept, 1);
    assert_int_equal(d.n_remove, 1);
    assert_int_equal(d.remove[0], 1);
    assert_int_equal(d.create.n, 1);
    assert_int_equal(d.create.items[0].profile, p2);
    assert_false(d.replaced_all);
    bool match = true;
    assert_int_equal(mb_mig_matches(m, gis, 2, want, 2, &match, &err), MB_OK);
    assert_false(match);
    assert_int_equal(mb_mig_matches(m, gis, 1, want, 1, &match, &err), MB_OK);
    assert_true(match);
    /* apply --dry-run and show --yaml print that plan and the live instances. */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    const struct mb_mig_gi *rm[1] = {&gis[d.remove[0]]};
    mb_mig_apply_dry_run_write(out, m, rm, 1, &d.create, d.kept);
    struct mb_mig_mode mode = {.current = true};
    mb_mig_show_yaml_write(out, 3, &mode, gis, 2);
    mode.current = false;
    mb_mig_show_yaml_write(out, 4, &mode, gis, 2);
    assert_int_equal(fclose(out), 0);
    assert_non_null(strstr(text, "would remove GPU instance 7 (1g.10gb at 6:1)\nwould create "
                                 "2g.20gb at "));
    assert_non_null(strstr(text, "would keep 1 GPU instance\n"));
    assert_non_null(strstr(text, "    - devices: [3]\n      mig-enabled: true\n      mig-devices:\n"
                                 "        \"3g.40gb\": 1\n        \"1g.10gb\": 1\n"));
    assert_non_null(strstr(text, "    - devices: [4]\n      mig-enabled: false\n"));
    free(text);
    /* A kept 3g at 0-3 blocks the 4g's only placement: everything is replaced. */
    unsigned big[] = {p4, p3};
    assert_int_equal(mb_mig_diff(m, gis, 1, big, 2, &d, &err), MB_OK);
    assert_true(d.replaced_all);
    assert_int_equal(d.kept, 0);
    assert_int_equal(d.n_remove, 1);
    assert_int_equal(d.create.n, 2);
    /* An instance the catalog does not know stops the plan. */
    gis[1].profile_id = 999;
    snprintf(gis[1].profile_name, sizeof(gis[1].profile_name), "9g.999gb");
    assert_int_equal(mb_mig_diff(m, gis, 2, want, 2, &d, &err), MB_EDEVICE);
    assert_non_null(strstr(err.msg, "unknown to the catalog"));
    mb_catalog_destroy(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_killed_run_and_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_intent_pruned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_records, setup, teardown),
        cmocka_unit_test(test_no_ledger),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
