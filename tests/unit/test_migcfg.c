/* SPDX-License-Identifier: Apache-2.0 */
/* mig-parted config files: the accepted shape, and errors naming file, line and field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "migbench/catalog.h"
#include "migbench/migcfg.h"

static const char good[] = "version: v1\n"
                           "mig-configs:\n"
                           "  all-disabled:\n"
                           "    - devices: all\n"
                           "      mig-enabled: false\n"
                           "  mixed:\n"
                           "    - devices: [0, 1]\n"
                           "      mig-enabled: true\n"
                           "      mig-devices:\n"
                           "        \"1g.10gb\": 2\n"
                           "        \"3g.40gb\": 1\n"
                           "        2g.20gb: 1\n"
                           "    - devices: [2]\n"
                           "      mig-enabled: true\n"
                           "      device-filter: [\"0x233010DE\"]\n"
                           "      mig-devices: {}\n";

static void test_good(void **state)
{
    (void)state;
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    int rc = mb_migcfg_parse(good, strlen(good), "good.yaml", &cfg, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    assert_int_equal(mb_migcfg_count(cfg), 2);
    assert_string_equal(mb_migcfg_source(cfg), "good.yaml");
    const struct mb_migcfg_config *off = mb_migcfg_find(cfg, "all-disabled");
    assert_non_null(off);
    assert_true(off->entries[0].all_devices);
    assert_false(off->entries[0].mig_enabled);
    assert_ptr_equal(mb_migcfg_entry_for(off, 5), &off->entries[0]);

    const struct mb_migcfg_config *mixed = mb_migcfg_config(cfg, 1);
    assert_string_equal(mixed->name, "mixed");
    assert_int_equal(mixed->line, 6);
    assert_int_equal(mixed->n_entries, 2);
    const struct mb_migcfg_entry *e = mb_migcfg_entry_for(mixed, 1);
    assert_ptr_equal(e, &mixed->entries[0]);
    assert_int_equal(e->n_devices, 2);
    assert_int_equal(e->n_profiles, 3);
    assert_string_equal(e->profiles[0].name, "1g.10gb");
    assert_int_equal(e->profiles[0].count, 2);
    assert_int_equal(e->profiles[0].line, 10);
    assert_false(e->device_filter);
    assert_true(mb_migcfg_entry_for(mixed, 2)->device_filter);
    assert_null(mb_migcfg_entry_for(mixed, 3));
    assert_null(mb_migcfg_find(cfg, "nope"));

    /* Profiles against a model: repeated by count, largest first. */
    struct mb_catalog *cat = NULL;
    assert_int_equal(mb_catalog_create(&cat, NULL), MB_OK);
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "H100", &m, NULL), MB_OK);
    unsigned idx[16];
    size_t n = 0;
    assert_int_equal(mb_migcfg_profiles(cfg, e, m, idx, 16, &n, &err), MB_OK);
    assert_int_equal(n, 4);
    assert_string_equal(m->profiles[idx[0]].name, "3g.40gb");
    assert_string_equal(m->profiles[idx[1]].name, "2g.20gb");
    assert_string_equal(m->profiles[idx[2]].name, "1g.10gb");
    assert_string_equal(m->profiles[idx[3]].name, "1g.10gb");
    assert_int_equal(mb_migcfg_profiles(cfg, e, m, idx, 3, &n, &err), MB_ERANGE);
    /* The A100-40GB has a 1g.10gb (its double-memory 1g) but no 3g.40gb. */
    assert_int_equal(mb_catalog_find(cat, "A100-40GB", &m, NULL), MB_OK);
    assert_int_equal(mb_migcfg_profiles(cfg, e, m, idx, 16, &n, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "good.yaml:11: field 'mig-devices': unknown profile "
                                    "'3g.40gb' for A100-SXM4-40GB"));
    mb_catalog_destroy(cat);
    mb_migcfg_destroy(cfg);
    mb_migcfg_destroy(NULL);
}

static void test_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text, *expect;
    } cases[] = {
        {"", "empty file"},
        {"version: v1\nmig-configs: [\n", "bad.yaml:3:1: not valid YAML"},
        {"- a\n- b\n", "bad.yaml:1: expected a mapping"},
        {"mig-configs: {}\n", "field 'version': missing"},
        {"version: v2\nmig-configs: {}\n", "bad.yaml:1: field 'version': 'v2' is not supported"},
        {"version: v1\n", "field 'mig-configs': missing"},
        {"version: v1\nmig-configs: {}\nextra: 1\n", "bad.yaml:3: field 'extra': unknown"},
        {"version: v1\nmig-configs: {}\n", "no configs"},
        {"version: v1\nmig-configs:\n  a: 3\n", "bad.yaml:3: field 'a': expected a list"},
        {"version: v1\nmig-configs:\n  a: []\n", "field 'a': no entries"},
        {"version: v1\nmig-configs:\n  a:\n    - mig-enabled: true\n",
         "bad.yaml:4: field 'devices': missing"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n", "field 'mig-enabled': missing"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: maybe\n",
         "bad.yaml:5: field 'mig-enabled': expected true or false"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: true\n",
         "bad.yaml:4: field 'devices': expected 'all'"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: [0, 0]\n      mig-enabled: true\n",
         "device 0 is listed twice"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: []\n      mig-enabled: true\n",
         "field 'devices': empty list"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: [-1]\n      mig-enabled: true\n",
         "field 'devices': expected a whole number"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        1g.10gb: two\n",
         "bad.yaml:7: field 'mig-devices': expected a whole number, got 'two'"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        1g.10gb: 1000\n",
         "out of range 0..64"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        1c.3g.40gb: 1\n",
         "splits a GPU instance into compute instances"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        \"1g 10gb\": 1\n",
         "is not a profile name"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
         "      mig-devices:\n        1g.10gb: 1\n",
         "mig-enabled is false"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devcies: {}\n",
         "bad.yaml:6: field 'mig-devcies': unknown field"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        1g.10gb: 1\n        1G.10GB: 2\n",
         "bad.yaml:8: field 'mig-devices': profile '1G.10GB' is listed twice"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
         "  a:\n    - devices: all\n      mig-enabled: true\n",
         "bad.yaml:6:3: duplicate key 'a' (first on line 3)"},
        {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: \"true\"\n",
         "expected true or false"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mb_migcfg *cfg = (struct mb_migcfg *)1;
        struct mb_error err;
        mb_error_clear(&err);
        int rc = mb_migcfg_parse(cases[i].text, strlen(cases[i].text), "bad.yaml", &cfg, &err);
        if (rc != MB_EPARSE || !strstr(err.msg, cases[i].expect))
            fprintf(stderr, "case %zu: rc %d: '%s' (want '%s')\n", i, rc, err.msg, cases[i].expect);
        assert_int_equal(rc, MB_EPARSE);
        assert_null(cfg);
        assert_non_null(strstr(err.msg, cases[i].expect));
    }
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    assert_int_equal(mb_migcfg_load("/nonexistent/x.yaml", &cfg, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.yaml"));
    static const char nul[] = "version: v1\0";
    assert_int_equal(mb_migcfg_parse(nul, sizeof(nul), "nul.yaml", &cfg, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "NUL"));
}

/* Nested aliases must not blow up: the one YAML loader refuses aliases while parsing. */
static void test_alias_bomb(void **state)
{
    (void)state;
    static const char bomb[] = "version: v1\n"
                               "x: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
                               "y: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                               "z: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                               "mig-configs: {}\n";
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    assert_int_equal(mb_migcfg_parse(bomb, strlen(bomb), "bomb.yaml", &cfg, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "bomb.yaml:3:"));
    assert_non_null(strstr(err.msg, "aliases (*a) are not supported"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_alias_bomb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
