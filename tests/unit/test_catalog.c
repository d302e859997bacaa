/* SPDX-License-Identifier: Apache-2.0 */
/* The MIG catalog: built-in models against data/mig-catalog.json, names, statuses, bad files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_io.h"
#include "migbench/catalog.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int setup(void **state)
{
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK) {
        fprintf(stderr, "catalog: %s\n", err.msg);
        return -1;
    }
    *state = cat;
    return 0;
}

static int teardown(void **state)
{
    mb_catalog_destroy(*state);
    return 0;
}

static const char *const nine[] = {"A30-24GB",       "A100-SXM4-40GB", "A100-SXM4-80GB",
                                   "H100-SXM5-80GB", "H100-NVL-94GB",  "GH200-H100-96GB",
                                   "H200-141GB",     "B200-180GB",     "GB200-186GB"};

static void test_models(void **state)
{
    const struct mb_catalog *cat = *state;
    assert_int_equal(mb_catalog_count(cat), 9);
    for (size_t i = 0; i < 9; i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        assert_string_equal(m->name, nine[i]);
        assert_false(m->user_supplied);
        bool a30 = i == 0;
        assert_int_equal(m->compute_slices, a30 ? 4 : 7);
        assert_int_equal(m->memory_slices, a30 ? 4 : 8);
        assert_int_equal(m->max_gpu_instances, a30 ? 4 : 7);
    }
    assert_null(mb_catalog_model(cat, 9));
}

/* Every profile of every model equals the JSON file, read here independently. */
static void test_tables_match_json(void **state)
{
    const struct mb_catalog *cat = *state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/data/mig-catalog.json", MB_SOURCE_DIR);
    char *text = read_all(path);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    size_t checked = 0;
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        const cJSON *jm = cJSON_GetObjectItemCaseSensitive(root, m->name);
        assert_non_null(jm);
        const cJSON *jps = cJSON_GetObjectItemCaseSensitive(jm, "profiles");
        assert_int_equal(cJSON_GetArraySize(jps), m->n_profiles);
        size_t k = 0;
        const cJSON *jp;
        cJSON_ArrayForEach(jp, jps)
        {
            const struct mb_gi_profile *p = &m->profiles[k++];
            assert_string_equal(p->name, cJSON_GetObjectItem(jp, "name")->valuestring);
            assert_ptr_equal(mb_model_profile(m, p->name), p);
            assert_int_equal(p->nvml_enum, cJSON_GetObjectItem(jp, "nvml_profile_id")->valueint);
            assert_int_equal(p->driver_id,
                             cJSON_GetObjectItem(jp, "nvidia_smi_profile_id")->valueint);
            assert_int_equal(p->compute_slices,
                             cJSON_GetObjectItem(jp, "compute_slices")->valueint);
            assert_int_equal(p->memory_slices, cJSON_GetObjectItem(jp, "memory_slices")->valueint);
            assert_int_equal(p->max_count, cJSON_GetObjectItem(jp, "max_count")->valueint);
            const cJSON *mem = cJSON_GetObjectItem(jp, "memory_mib");
            assert_int_equal(p->memory_mib, cJSON_IsNull(mem) ? -1 : (int64_t)mem->valuedouble);
            const cJSON *sm = cJSON_GetObjectItem(jp, "sm_count");
            assert_int_equal(p->sm_count, cJSON_IsNull(sm) ? -1 : sm->valueint);
            const cJSON *pl = cJSON_GetObjectItem(jp, "placements");
            assert_int_equal(p->n_placements, cJSON_GetArraySize(pl));
            for (size_t j = 0; j < p->n_placements; j++) {
                const cJSON *pair = cJSON_GetArrayItem(pl, (int)j);
                assert_int_equal(p->placements[j].start, cJSON_GetArrayItem(pair, 0)->valueint);
                assert_int_equal(p->placements[j].size, cJSON_GetArrayItem(pair, 1)->valueint);
            }
            assert_int_equal(p->media_extension, strstr(p->name, "+me") != NULL);
            checked++;
        }
    }
    assert_int_equal(checked, 5 + 8 * 7);
    cJSON_Delete(root);
    free(text);
}

/* The placement table of mig-geometry.md section 2, by compute/memory slices, on every model. */
static void test_tables_match_reference(void **state)
{
    const struct mb_catalog *cat = *state;
    struct row {
        unsigned c, m;
        bool me;
        unsigned max;
        const char *starts;
    };
    static const struct row eight[] = {
        {1, 1, false, 7, "0123456"}, {1, 1, true, 1, "0123456"}, {1, 2, false, 4, "0246"},
        {2, 2, false, 3, "024"},     {3, 4, false, 2, "04"},     {4, 4, false, 1, "0"},
        {7, 8, false, 1, "0"},
    };
    static const struct row a30[] = {
        {1, 1, false, 4, "0123"}, {1, 1, true, 1, "0123"}, {2, 2, false, 2, "02"},
        {2, 2, true, 1, "02"},    {4, 4, false, 1, "0"},
    };
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        bool is_a30 = m->memory_slices == 4;
        size_t nrows = is_a30 ? 5 : 7;
        assert_int_equal(m->n_profiles, nrows);
        for (size_t r = 0; r < nrows; r++) {
            const struct row *row = is_a30 ? &a30[r] : &eight[r];
            const struct mb_gi_profile *found = NULL;
            for (size_t k = 0; k < m->n_profiles; k++) {
                const struct mb_gi_profile *p = &m->profiles[k];
                if (p->compute_slices == row->c && p->memory_slices == row->m &&
                    p->media_extension == row->me)
                    found = p;
            }
            assert_non_null(found);
            assert_int_equal(found->max_count, row->max);
            assert_int_equal(found->n_placements, strlen(row->starts));
            for (size_t j = 0; j < found->n_placements; j++) {
                assert_int_equal(found->placements[j].start, (unsigned)(row->starts[j] - '0'));
                assert_int_equal(found->placements[j].size, row->m);
            }
        }
    }
}

static void test_driver_ids(void **state)
{
    const struct mb_catalog *cat = *state;
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "H100-SXM5-80GB", &m, NULL), MB_OK);
    static const struct {
        const char *name;
        int id;
    } h100[] = {{"1g.10gb", 19}, {"1g.10gb+me", 20}, {"1g.20gb", 15}, {"2g.20gb", 14},
                {"3g.40gb", 9},  {"4g.40gb", 5},     {"7g.80gb", 0}};
    for (size_t i = 0; i < 7; i++) {
        const struct mb_gi_profile *p = mb_model_profile(m, h100[i].name);
        assert_non_null(p);
        assert_int_equal(p->driver_id, h100[i].id);
        assert_ptr_equal(mb_model_profile_by_driver_id(m, h100[i].id), p);
    }
    assert_null(mb_model_profile_by_driver_id(m, 42));
    assert_null(mb_model_profile_by_driver_id(m, -1));
    assert_non_null(mb_model_profile(m, "3G.40GB"));
    assert_null(mb_model_profile(m, "3g.20gb"));
    assert_null(mb_model_profile(m, ""));
    assert_int_equal(mb_catalog_find(cat, "A30", &m, NULL), MB_OK);
    assert_int_equal(mb_model_profile(m, "4g.24gb")->driver_id, 0);
    assert_int_equal(mb_model_profile(m, "2g.12gb+me")->driver_id, 6);
}

static void test_statuses(void **state)
{
    const struct mb_catalog *cat = *state;
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "B200", &m, NULL), MB_OK);
    const struct mb_gi_profile *p = mb_model_profile(m, "3g.90gb");
    assert_non_null(p);
    assert_int_equal(p->memory_mib, -1);
    assert_int_equal(p->sm_count, -1);
    assert_int_equal(p->decoders, -1);
    assert_int_equal(p->copy_engines, 6);
    assert_true(p->driver_id_unverified);
    assert_int_equal(p->placements_status, MB_VALUE_UNVERIFIED);
    assert_int_equal(p->values_status, MB_VALUE_UNVERIFIED);
    assert_non_null(strstr(p->status_note, "memory_mib"));
    p = mb_model_profile(m, "1g.23gb");
    assert_false(p->driver_id_unverified);
    assert_int_equal(p->placements_status, MB_VALUE_INFERRED);
    assert_int_equal(p->values_status, MB_VALUE_VERIFIED);
    assert_non_null(strstr(p->status_note, "inferred"));
    assert_int_equal(m->total_memory_mib, -1);
    assert_int_equal(m->sm_full_gpu, -1);

    assert_int_equal(mb_catalog_find(cat, "H100", &m, NULL), MB_OK);
    for (size_t i = 0; i < m->n_profiles; i++) {
        assert_int_equal(m->profiles[i].placements_status, MB_VALUE_VERIFIED);
        assert_string_equal(m->profiles[i].status_note, "");
    }
    assert_int_equal(m->total_memory_mib, 81559);
    assert_int_equal(m->sm_full_gpu, 132);
    /* Compute-instance options: a 7g GI offers 1, 2, 3, 4 and 7 compute slices, 7 is default. */
    unsigned seen = 0;
    for (size_t i = 0; i < m->n_ci_profiles; i++) {
        const struct mb_ci_profile *ci = &m->ci_profiles[i];
        if (ci->gi_compute_slices != 7)
            continue;
        seen |= 1u << ci->ci_slices;
        assert_int_equal(ci->is_default, ci->ci_slices == 7);
    }
    assert_int_equal(seen, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 7));

    assert_int_equal(mb_catalog_find(cat, "A100-80GB", &m, NULL), MB_OK);
    assert_int_equal(m->profiles[0].placements_status, MB_VALUE_INFERRED);
    assert_string_equal(mb_value_status_str(MB_VALUE_INFERRED), "inferred");
    assert_string_equal(mb_value_status_str(MB_VALUE_UNVERIFIED), "unverified");
}

static void test_aliases(void **state)
{
    const struct mb_catalog *cat = *state;
    static const struct {
        const char *alias, *model;
    } cases[] = {
        {"H100", "H100-SXM5-80GB"},
        {"h100-80gb", "H100-SXM5-80GB"},
        {"H100-SXM5-80GB", "H100-SXM5-80GB"},
        {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
        {"NVIDIA H100 PCIe", "H100-SXM5-80GB"},
        {"nvidia h100 nvl", "H100-NVL-94GB"},
        {"H100 NVL", "H100-NVL-94GB"},
        {"A100-40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100-PCIE-40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"},
        {"a100-sxm4-80gb", "A100-SXM4-80GB"},
        {"A30", "A30-24GB"},
        {"NVIDIA A30", "A30-24GB"},
        {"H200", "H200-141GB"},
        {"NVIDIA H200", "H200-141GB"},
        {"GH200", "GH200-H100-96GB"},
        {"NVIDIA GH200 480GB", "GH200-H100-96GB"},
        {"B200", "B200-180GB"},
        {"NVIDIA B200", "B200-180GB"},
        {"GB200", "GB200-186GB"},
        {"  h100_80gb  ", "H100-SXM5-80GB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct mb_gpu_model *m = NULL;
        struct mb_error err;
        int rc = mb_catalog_find(cat, cases[i].alias, &m, &err);
        if (rc != MB_OK)
            fprintf(stderr, "'%s': %s\n", cases[i].alias, err.msg);
        assert_int_equal(rc, MB_OK);
        assert_string_equal(m->name, cases[i].model);
    }
}

static void test_ambiguous_and_unknown(void **state)
{
    const struct mb_catalog *cat = *state;
    const struct mb_gpu_model *m = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_find(cat, "A100", &m, &err), MB_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err.msg, "ambiguous"));
    assert_non_null(strstr(err.msg, "A100-SXM4-40GB"));
    assert_non_null(strstr(err.msg, "A100-SXM4-80GB"));

    assert_int_equal(mb_catalog_find(cat, "H10", &m, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "did you mean"));
    assert_non_null(strstr(err.msg, "H100-SXM5-80GB"));
    assert_int_equal(mb_catalog_find(cat, "B2000", &m, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "B200-180GB"));
    assert_int_equal(mb_catalog_find(cat, "V100", &m, &err), MB_ENOTFOUND);
    assert_non_null(strstr(err.msg, "'V100'"));
    assert_int_equal(mb_catalog_find(cat, "", &m, &err), MB_EINVAL);
    assert_int_equal(mb_catalog_find(cat, "   ", &m, &err), MB_EINVAL);
    char huge[4096];
    memset(huge, 'h', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    assert_int_equal(mb_catalog_find(cat, huge, &m, &err), MB_ENOTFOUND);
    assert_int_equal(mb_catalog_find(cat, "zzzzzzzzzzzzzzzzzzzzzzz", &m, &err), MB_ENOTFOUND);
    assert_null(m);
}

/* Sensor facts per model: every built-in model has them, with a status and its note. */
static void test_sensor_facts(void **state)
{
    const struct mb_catalog *cat = *state;
    const struct mb_gpu_model *m = NULL;
    struct mb_error err;
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_model_sensor *s = &mb_catalog_model(cat, i)->sensor;
        assert_true(s->known);
        assert_true(s->power_kind == MB_POWER_INSTANT || s->power_kind == MB_POWER_AVERAGED);
        assert_true(s->power_avg_window_ms > 0 && s->power_update_period_ms > 0);
        assert_true(s->scope[0] != '\0');
        assert_true(s->note[0] != '\0');
    }
    assert_int_equal(mb_catalog_find(cat, "A100-40GB", &m, &err), MB_OK);
    assert_int_equal(m->sensor.power_kind, MB_POWER_INSTANT);
    assert_int_equal(m->sensor.power_avg_window_ms, 25);
    assert_int_equal(m->sensor.power_update_period_ms, 100);
    assert_int_equal(m->sensor.average_field, 0);
    assert_int_equal(m->sensor.energy_update_period_ms, 100);
    assert_string_equal(m->sensor.scope, "board");
    assert_int_equal(m->sensor.status, MB_VALUE_VERIFIED);
    assert_non_null(strstr(m->sensor.note, "Yang"));
    assert_int_equal(mb_catalog_find(cat, "H200", &m, &err), MB_OK);
    assert_int_equal(m->sensor.power_kind, MB_POWER_AVERAGED);
    assert_int_equal(m->sensor.power_avg_window_ms, 1000);
    assert_int_equal(m->sensor.average_field, 1);
    assert_int_equal(m->sensor.status, MB_VALUE_INFERRED);
    assert_int_equal(mb_catalog_find(cat, "GH200", &m, &err), MB_OK);
    assert_string_equal(m->sensor.scope, "module (GPU+CPU)");
}

/* ---- catalog files ---- */

static const char *write_tmp(const char *body)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/test_catalog_%ld.json", MB_BINARY_DIR, (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    return path;
}

#define GOOD_PROFILE                                                                               \
    "{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"nvidia_smi_profile_id\": 19,"                \
    " \"compute_slices\": 1, \"memory_slices\": 1, \"memory_mib\": 1024, \"max_count\": 2,"        \
    " \"placements\": [[0,1],[1,1]], \"placements_status\": \"UNVERIFIED\"}"

/* Model-independent sizes resolve on every model; exact names keep working. */
static void test_sizes(void **state)
{
    const struct mb_catalog *cat = *state;
    struct mb_error err;
    const struct mb_gi_profile *p;
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        bool a30 = m->compute_slices == 4;
        /* Every profile: its exact name and its size spelling both resolve to it. */
        for (size_t k = 0; k < m->n_profiles; k++) {
            const struct mb_gi_profile *want = &m->profiles[k];
            assert_int_equal(mb_model_profile_resolve(m, want->name, &p, &err), MB_OK);
            assert_ptr_equal(p, want);
            char sz[MB_SIZE_NAME_MAX];
            mb_model_profile_size_name(m, want, sz, sizeof(sz));
            assert_true(mb_profile_is_size(sz));
            assert_int_equal(mb_model_profile_resolve(m, sz, &p, &err), MB_OK);
            assert_ptr_equal(p, want);
        }
        /* The plain sizes: that many compute slices, the fewest memory slices, no +me. */
        static const struct {
            const char *size;
            unsigned compute;
            bool media;
            bool on_a30;
        } plain[] = {{"1g", 1, false, true}, {"2g", 2, false, true},    {"3g", 3, false, false},
                     {"4g", 4, false, true}, {"7g", 7, false, false},   {"1g+me", 1, true, true},
                     {"2G", 2, false, true}, {"1g.2m", 1, false, false}};
        for (size_t k = 0; k < sizeof(plain) / sizeof(plain[0]); k++) {
            int rc = mb_model_profile_resolve(m, plain[k].size, &p, &err);
            if (a30 && !plain[k].on_a30) {
                assert_int_equal(rc, MB_ENOTFOUND);
                assert_null(p);
                assert_non_null(strstr(err.msg, "A30-24GB has no"));
                assert_non_null(strstr(err.msg, "1g, 1g+me, 2g, 2g+me, 4g"));
                continue;
            }
            assert_int_equal(rc, MB_OK);
            assert_int_equal(p->compute_slices, plain[k].compute);
            assert_int_equal(p->media_extension, plain[k].media);
            for (size_t j = 0; j < m->n_profiles; j++)
                if (m->profiles[j].compute_slices == p->compute_slices &&
                    m->profiles[j].media_extension == p->media_extension &&
                    strcmp(plain[k].size, "1g.2m") != 0)
                    assert_true(m->profiles[j].memory_slices >= p->memory_slices);
            if (strcmp(plain[k].size, "1g.2m") == 0)
                assert_int_equal(p->memory_slices, 2);
        }
        /* Not a size and not a profile of the model: MB_EINVAL naming both kinds of name. */
        static const char *const bad[] = {"5g",     "6g",     "0g",     "3g.3m",  "3g+mx",
                                          "3g.40",  "3g.4m.", "g",      "",       "3gb",
                                          "1g.2m+", "13g",    "1g.16m", "3g.99gb"};
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            assert_false(mb_profile_is_size(bad[k]));
            assert_int_equal(mb_model_profile_resolve(m, bad[k], &p, &err), MB_EINVAL);
            assert_null(p);
            assert_non_null(strstr(err.msg, m->name));
            assert_non_null(strstr(err.msg, m->profiles[0].name));
            assert_non_null(strstr(err.msg, "or a size: 1g,"));
        }
    }

    /* The same file on different GPUs: sizes name each model's own profiles. */
    static const struct {
        const char *model, *size, *profile;
    } cases[] = {
        {"H200-141GB", "3g", "3g.71gb"},        {"H200-141GB", "4g", "4g.71gb"},
        {"H200-141GB", "1g.2m", "1g.35gb"},     {"H200-141GB", "1g+me", "1g.18gb+me"},
        {"H200-141GB", "7g", "7g.141gb"},       {"H100-SXM5-80GB", "3g", "3g.40gb"},
        {"H100-SXM5-80GB", "1g", "1g.10gb"},    {"H100-SXM5-80GB", "1g.1m", "1g.10gb"},
        {"A100-SXM4-40GB", "1g", "1g.5gb"},     {"A100-SXM4-40GB", "1g.2m", "1g.10gb"},
        {"A100-SXM4-40GB", "4g.4m", "4g.20gb"}, {"A30-24GB", "2g+me", "2g.12gb+me"},
        {"A30-24GB", "4g", "4g.24gb"},          {"B200-180GB", "3g", "3g.90gb"},
        {"H200-141GB", "3G.71GB", "3g.71gb"},   {"A30-24GB", "1G+ME", "1g.6gb+me"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct mb_gpu_model *m;
        assert_int_equal(mb_catalog_find(cat, cases[k].model, &m, &err), MB_OK);
        assert_int_equal(mb_model_profile_resolve(m, cases[k].size, &p, &err), MB_OK);
        assert_string_equal(p->name, cases[k].profile);
    }

    /* Spellings: shortest first. */
    const struct mb_gpu_model *h200;
    assert_int_equal(mb_catalog_find(cat, "H200", &h200, &err), MB_OK);
    char sz[MB_SIZE_NAME_MAX];
    mb_model_profile_size_name(h200, mb_model_profile(h200, "1g.35gb"), sz, sizeof(sz));
    assert_string_equal(sz, "1g.2m");
    mb_model_profile_size_name(h200, mb_model_profile(h200, "1g.18gb+me"), sz, sizeof(sz));
    assert_string_equal(sz, "1g+me");
    mb_model_profile_size_name(h200, mb_model_profile(h200, "2g.35gb"), sz, sizeof(sz));
    assert_string_equal(sz, "2g");

    /* An exact name of another model is not a size: the message lists this model's names. */
    assert_int_equal(mb_model_profile_resolve(h200, "3g.40gb", &p, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "H200-141GB has no profile '3g.40gb'"));
    assert_non_null(strstr(err.msg, "3g.71gb"));
    assert_non_null(strstr(err.msg, "1g, 1g+me, 1g.2m, 2g, 3g, 4g, 7g"));
    assert_int_equal(mb_model_profile_resolve(h200, NULL, &p, &err), MB_EINVAL);
}

static void test_load_good(void **state)
{
    (void)state;
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    const char *path =
        write_tmp("{\"_comment\": \"test\",\n"
                  " \"X-TEST-2GB\": {\"compute_slices\": 2, \"memory_slices\": 2,"
                  " \"max_gpu_instances\": 2, \"aliases\": [\"Tiny GPU\"],"
                  " \"profiles\": [" GOOD_PROFILE "]},\n"
                  " \"h100-sxm5-80gb\": {\"compute_slices\": 2, \"memory_slices\": 2,"
                  " \"max_gpu_instances\": 2, \"profiles\": [" GOOD_PROFILE "]}}\n");
    int rc = mb_catalog_load_file(cat, path, &err);
    if (rc)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    assert_int_equal(mb_catalog_count(cat), 10);
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "tiny gpu", &m, &err), MB_OK);
    assert_string_equal(m->name, "X-TEST-2GB");
    assert_true(m->user_supplied);
    assert_int_equal(m->total_memory_mib, -1);
    assert_int_equal(m->profiles[0].sm_count, -1);
    assert_int_equal(m->profiles[0].placements_status, MB_VALUE_UNVERIFIED);
    /* No sensor entry: nothing is known, nothing is 0-as-a-value. */
    assert_false(m->sensor.known);
    assert_int_equal(m->sensor.power_kind, MB_POWER_UNKNOWN);
    assert_int_equal(m->sensor.average_field, -1);
    /* The H100 was replaced in place. */
    assert_int_equal(mb_catalog_find(cat, "H100", &m, &err), MB_OK);
    assert_true(m->user_supplied);
    assert_int_equal(m->memory_slices, 2);
    assert_string_equal(mb_catalog_model(cat, 3)->name, "h100-sxm5-80gb");
    unlink(path);
    mb_catalog_destroy(cat);
}

/* Catalog files that must be refused: the status and what the message names. */
static const struct {
    const char *body;
    int status;
    const char *expect[3];
} bad_catalogs[] = {
    {"{\n \"X\": {\n  \"compute_slices\": 7,,\n", MB_EPARSE, {":3:", "not valid JSON"}},
    {"", MB_EPARSE, {":1:1", "not valid JSON"}},
    {"[1, 2]", MB_EPARSE, {"expected a JSON object"}},
    {"{}", MB_EPARSE, {"no models"}},
    {"{\"X\": 3}", MB_EPARSE, {"model 'X'", "expected an object"}},
    {"{\"X\": {\"memory_slices\": 8, \"max_gpu_instances\": 7, \"profiles\": []}}",
     MB_EPARSE,
     {"model 'X'", "field 'compute_slices'", "missing"}},
    {"{\"X\": {\"compute_slices\": 7.5, \"memory_slices\": 8, \"max_gpu_instances\": 7}}",
     MB_EPARSE,
     {"field 'compute_slices'", "integer"}},
    {"{\"X\": {\"compute_slices\": 7, \"memory_slices\": 99, \"max_gpu_instances\": 7}}",
     MB_EPARSE,
     {"field 'memory_slices'", "out of range"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": []}}",
     MB_EPARSE,
     {"field 'profiles'", "0 entries"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"compute_slices\": 1,"
     " \"memory_slices\": 1, \"max_count\": 2, \"placements\": [[0,1],[2,1]]}]}}",
     MB_EPARSE,
     {"profile '1g.1gb'", "field 'placements'", "runs past"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"compute_slices\": 1,"
     " \"memory_slices\": 1, \"max_count\": 2, \"placements\": [[0,2]]}]}}",
     MB_EPARSE,
     {"field 'placements'", "has size 2"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"compute_slices\": 1,"
     " \"memory_slices\": 1, \"max_count\": 2, \"placements\": [[0,1],\"x\"]}]}}",
     MB_EPARSE,
     {"field 'placements'", "entry 1"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [" GOOD_PROFILE ", " GOOD_PROFILE "]}}",
     MB_EPARSE,
     {"appears twice"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g,1gb\", \"nvml_profile_id\": 0}]}}",
     MB_EPARSE,
     {"field 'name'", "contains ','"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": \"zero\"}]}}",
     MB_EPARSE,
     {"profile '1g.1gb'", "field 'nvml_profile_id'", "expected an integer"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"compute_slices\": 1,"
     " \"memory_slices\": 1, \"max_count\": 2, \"placements\": [[0,1]],"
     " \"placements_status\": \"probably\"}]}}",
     MB_EPARSE,
     {"field 'placements_status'"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"sensor\": {\"power_kind\": \"sometimes\"}, \"profiles\": [" GOOD_PROFILE "]}}",
     MB_EPARSE,
     {"model 'X'", "field 'sensor.power_kind'", "\"instant\" or \"averaged\""}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"sensor\": {\"power_avg_window_ms\": 0}, \"profiles\": [" GOOD_PROFILE "]}}",
     MB_EPARSE,
     {"model 'X'", "field 'power_avg_window_ms'", "out of range"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"sensor\": {\"status\": \"maybe\"}, \"profiles\": [" GOOD_PROFILE "]}}",
     MB_EPARSE,
     {"field 'sensor.status'"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"sensor\": [], \"profiles\": [" GOOD_PROFILE "]}}",
     MB_EPARSE,
     {"field 'sensor'", "expected an object"}},
    {"{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
     " \"profiles\": [" GOOD_PROFILE "]}, \"x\": {}}",
     MB_EPARSE,
     {"model 'x'", "appears twice"}},
};

/*
 * A catalog at the end of a long path: the message keeps the model, profile and field and the
 * file's name, giving up the path's beginning (it cut the field short once a checkout's path
 * passed about 170 characters).
 */
static void test_load_bad_long_path(void **state)
{
    (void)state;
    char dir[4096];
    int n = snprintf(dir, sizeof(dir), "%s/test_catalog_%ld", MB_BINARY_DIR, (long)getpid());
    assert_int_equal(mkdir(dir, 0700), 0);
    size_t levels = 0;
    while (n < 700) {
        n += snprintf(dir + n, sizeof(dir) - (size_t)n, "/%s",
                      "a-directory-name-of-forty-characters-xx");
        assert_int_equal(mkdir(dir, 0700), 0);
        levels++;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/cat.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"X\": {\"compute_slices\": 2, \"memory_slices\": 2, \"max_gpu_instances\": 2,"
          " \"profiles\": [{\"name\": \"1g.1gb\", \"nvml_profile_id\": 0, \"compute_slices\": 1,"
          " \"memory_slices\": 1, \"max_count\": 2, \"placements\": [[0,1]],"
          " \"placements_status\": \"probably\"}]}}",
          f);
    fclose(f);
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_load_file(cat, path, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "a-directory-name-of-forty-characters-xx/cat.json: "));
    assert_non_null(strstr(err.msg, "model 'X': profile '1g.1gb': field 'placements_status': "));
    assert_true(strncmp(err.msg, "...", 3) == 0);
    mb_catalog_destroy(cat);
    unlink(path);
    for (; levels + 1 > 0; levels--) {
        assert_int_equal(rmdir(dir), 0);
        *strrchr(dir, '/') = '\0';
    }
}

static void test_load_bad(void **state)
{
    (void)state;
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    for (size_t i = 0; i < sizeof(bad_catalogs) / sizeof(bad_catalogs[0]); i++) {
        const char *path = write_tmp(bad_catalogs[i].body);
        mb_error_clear(&err);
        int rc = mb_catalog_load_file(cat, path, &err);
        if (rc != bad_catalogs[i].status)
            fprintf(stderr, "case %zu: %d %s\n", i, rc, err.msg);
        assert_int_equal(rc, bad_catalogs[i].status);
        assert_non_null(strstr(err.msg, path));
        for (size_t k = 0; k < 3 && bad_catalogs[i].expect[k]; k++) {
            if (!strstr(err.msg, bad_catalogs[i].expect[k]))
                fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err.msg,
                        bad_catalogs[i].expect[k]);
            assert_non_null(strstr(err.msg, bad_catalogs[i].expect[k]));
        }
        /* A failed load changes nothing. */
        assert_int_equal(mb_catalog_count(cat), 9);
        assert_false(mb_catalog_model(cat, 3)->user_supplied);
        unlink(path);
    }
    assert_int_equal(mb_catalog_load_file(cat, "/nonexistent/cat.json", &err), MB_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/cat.json"));
    assert_int_equal(mb_catalog_load_file(cat, MB_SOURCE_DIR, &err), MB_EIO);
    mb_catalog_destroy(cat);
    mb_catalog_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_tables_match_json),
        cmocka_unit_test(test_tables_match_reference),
        cmocka_unit_test(test_driver_ids),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_sensor_facts),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_ambiguous_and_unknown),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_load_good),
        cmocka_unit_test(test_load_bad),
        cmocka_unit_test(test_load_bad_long_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
