/* SPDX-License-Identifier: Apache-2.0 */
/* The monitor on the emulator: energy since start, MIG rows, runs found by UUID, renderings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_io.h"
#include "migbench/device.h"
#include "migbench/live.h"
#include "migbench/monitor.h"
#include "migbench/prom.h"

static struct mb_monitor *open_monitor(const char *spec, const char *live_dir)
{
    const char *specs[1] = {spec};
    struct mb_monitor_opts o = {.specs = specs, .n_specs = 1, .live_dir = live_dir};
    struct mb_monitor *m = NULL;
    struct mb_error err;
    int rc = mb_monitor_create(&o, &m, &err);
    if (rc != MB_OK)
        fail_msg("%s", err.msg);
    return m;
}

static void test_energy_from_counter(void **state)
{
    (void)state;
    struct mb_monitor *m = open_monitor("emu:H100-80GB:idle_w=100:max_w=100", "");
    struct mb_monitor_snapshot *a = calloc(2, sizeof(*a)), *b = a + 1;
    assert_int_equal(mb_monitor_sample(m, a, NULL), MB_OK);
    assert_int_equal(mb_monitor_sample(m, b, NULL), MB_OK);
    const struct mb_monitor_gpu *g0 = &a->gpus[0], *g1 = &b->gpus[0];
    assert_int_equal(a->seq, 1);
    assert_int_equal(b->seq, 2);
    assert_true(g0->info.emulated);
    assert_true(g0->energy_ok && g0->energy_j == 0);
    assert_string_equal(g1->energy_source, "counter");
    /* exactly the counter's steps between the samples */
    assert_true(g1->energy_j == (double)(g1->tel.energy_mj - g0->tel.energy_mj) / 1000.0);
    assert_int_equal(mb_monitor_sample(m, NULL, NULL), MB_EINVAL);
    mb_monitor_destroy(m);
    free(a);
}

static void test_energy_integrated_without_counter(void **state)
{
    (void)state;
    struct mb_monitor *m = open_monitor("emu:A100-40GB:counter=none", "");
    struct mb_monitor_snapshot *s = calloc(3, sizeof(*s));
    for (int i = 0; i < 3; i++)
        assert_int_equal(mb_monitor_sample(m, &s[i], NULL), MB_OK);
    double want = 0;
    for (int i = 1; i < 3; i++) {
        const struct mb_telemetry *t = &s[i].gpus[0].tel, *l = &s[i - 1].gpus[0].tel;
        want += (double)(t->t_ns - l->t_ns) / 1e9 * ((double)t->power_mw + l->power_mw) / 2000.0;
    }
    assert_false(s[2].gpus[0].tel.valid & MB_TEL_ENERGY);
    assert_string_equal(s[2].gpus[0].energy_source, "integrated");
    assert_true(s[2].gpus[0].energy_ok);
    assert_true(s[2].gpus[0].energy_j > want - 1e-9 && s[2].gpus[0].energy_j < want + 1e-9);
    mb_monitor_destroy(m);
    free(s);
}

/* Creates one GPU instance of profile name (with its default compute instance). */
static void make_instance(const char *spec, const char *name)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    struct mb_device_profile prof[32];
    size_t n = 0;
    assert_int_equal(mb_device_mig_profiles(dev, prof, 32, &n, &err), MB_OK);
    size_t i = 0;
    while (i < n && strcmp(prof[i].name, name) != 0)
        i++;
    assert_true(i < n);
    struct mb_placement pl[8];
    size_t np = 0;
    assert_int_equal(mb_device_mig_placements(dev, prof[i].driver_id, pl, 8, &np, &err), MB_OK);
    assert_true(np > 0);
    unsigned gi = 0, ci = 0;
    size_t k = 0; /* the first free placement */
    while (k < np && mb_device_mig_create_gi(dev, prof[i].driver_id, &pl[k], &gi, &err) != MB_OK)
        k++;
    assert_true(k < np);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    mb_device_close(dev);
}

static void test_mig_rows_runs_and_outputs(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-monitor-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char spec[200], live[100], path[160];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on,state=%s/gpu.json", dir);
    snprintf(live, sizeof(live), "%s/rt", dir);
    make_instance(spec, "3g.40gb");
    make_instance(spec, "1g.10gb");
    struct mb_monitor *m = open_monitor(spec, live);
    struct mb_monitor_snapshot *s = calloc(1, sizeof(*s));
    /* a run on this GPU (its UUID) and one elsewhere */
    assert_int_equal(mb_monitor_sample(m, s, NULL), MB_OK);
    struct mb_live_cell c;
    memset(&c, 0, sizeof(c));
    c.pid = (long)getpid();
    snprintf(c.run, sizeof(c.run), "mix");
    snprintf(c.device_uuid, sizeof(c.device_uuid), "%s", s->gpus[0].info.uuid);
    c.n_jobs = 1;
    snprintf(c.jobs[0].name, sizeof(c.jobs[0].name), "a");
    snprintf(c.jobs[0].unit, sizeof(c.jobs[0].unit), "images");
    c.jobs[0].rate_valid = true;
    c.jobs[0].rate = 42;
    assert_int_equal(mb_live_write(live, &c, NULL), MB_OK);
    assert_int_equal(mb_monitor_sample(m, s, NULL), MB_OK);
    const struct mb_monitor_gpu *g = &s->gpus[0];
    assert_true(g->mig_ok && g->mig.current);
    assert_int_equal(g->n_inst, 2);
    assert_int_equal(g->n_cells, 1);
    assert_string_equal(g->cells[0].run, "mix");
    snprintf(c.device_uuid, sizeof(c.device_uuid), "GPU-elsewhere");
    assert_int_equal(mb_live_write(live, &c, NULL), MB_OK);
    assert_int_equal(mb_monitor_sample(m, s, NULL), MB_OK);
    assert_int_equal(s->gpus[0].n_cells, 0);
    snprintf(c.device_uuid, sizeof(c.device_uuid), "%s", s->gpus[0].info.uuid);
    assert_int_equal(mb_live_write(live, &c, NULL), MB_OK);
    assert_int_equal(mb_monitor_sample(m, s, NULL), MB_OK);

    /* JSON: one line, parsable, utilisation null under MIG (not 0) */
    char *text = NULL;
    assert_int_equal(mb_monitor_format(s, MB_MONITOR_JSON, &text, NULL), MB_OK);
    assert_non_null(strchr(text, '\n'));
    assert_null(strchr(text, '\n')[1] ? "more" : NULL);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "gpus"), 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(g0, "util_gpu_pct")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g0, "instances")), 2);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g0, "runs"), 0);
    assert_string_equal(cJSON_GetObjectItem(r0, "run")->valuestring, "mix");
    cJSON_Delete(o);
    free(text);
    assert_int_equal(mb_monitor_format(s, MB_MONITOR_PLAIN, &text, NULL), MB_OK);
    assert_non_null(strstr(text, " util=- "));
    assert_non_null(strstr(text, " run=/mix#0 phase= job=a:42images/s"));
    free(text);
    assert_int_equal(mb_monitor_format(s, MB_MONITOR_SCREEN, &text, NULL), MB_OK);
    assert_non_null(strstr(text, "3g.40gb"));
    assert_null(strchr(text, '\033'));
    free(text);

    /* Prometheus: no whole-GPU power or energy on a row with GPU_I_ID */
    struct mb_prom *p = NULL;
    assert_int_equal(mb_prom_create(&p, NULL), MB_OK);
    assert_int_equal(mb_monitor_prom(s, p, NULL), MB_OK);
    assert_int_equal(mb_prom_text(p, &text, NULL, NULL), MB_OK);
    size_t mig_rows = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "GPU_I_ID="))
            continue;
        mig_rows++;
        assert_null(strstr(line, "POWER"));
        assert_null(strstr(line, "ENERGY"));
        assert_null(strstr(line, "energy"));
        assert_null(strstr(line, "power"));
    }
    assert_true(mig_rows >= 4);
    free(text);
    mb_prom_destroy(p);

    mb_live_remove(live, (long)getpid());
    mb_monitor_destroy(m);
    free(s);
    rmdir(live);
    snprintf(path, sizeof(path), "%s/gpu.json", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/gpu.json.lock", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/gpu.json.owned.json", dir);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

static void test_bad_spec(void **state)
{
    (void)state;
    const char *specs[1] = {"emu:NOPE"};
    struct mb_monitor_opts o = {.specs = specs, .n_specs = 1, .live_dir = ""};
    struct mb_monitor *m = (struct mb_monitor *)1;
    struct mb_error err;
    assert_int_not_equal(mb_monitor_create(&o, &m, &err), MB_OK);
    assert_null(m);
    assert_non_null(strstr(err.msg, "NOPE"));
    mb_monitor_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_from_counter),
        cmocka_unit_test(test_energy_integrated_without_counter),
        cmocka_unit_test(test_mig_rows_runs_and_outputs),
        cmocka_unit_test(test_bad_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
