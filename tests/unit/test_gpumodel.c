/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU model (src/device/gpumodel.c) against the published measurements shipped in
 * data/gpumodel.json: every MIGPerf throughput within 10 % (and its OOM), the energy-optimal
 * power limit of the ResNet-50 preset within 8 points of each calibrated GPU's published optimum;
 * and, through the emulated A100-80GB and H100-80GB with modelled jobs attached, the study's
 * effect: seven small-batch jobs on 7 x 1g do at least 1.5x the work per joule of the same jobs
 * one after another on the whole GPU, while batch 64 (the largest that fits a 1g.10gb) gains
 * under 1.2x. The emulator runs on a manual clock, so nothing here depends on time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/emu.h"
#include "device/gpumodel.h"
#include "migbench/catalog.h"
#include "migbench/device.h"

static const struct mb_gi_profile *profile(const struct mb_gpu_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_profiles; i++)
        if (strcmp(m->profiles[i].name, name) == 0)
            return &m->profiles[i];
    fail_msg("%s has no profile %s", m->name, name);
    return NULL;
}

/* Every MIGPerf row: the model's throughput (or ms/step) on that profile within 10 %; an OOM
 * row is one where the preset's footprint does not fit the profile's memory. */
static void test_migperf(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_catalog *cat;
    assert_int_equal(mb__gm_load(&err), MB_OK);
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    size_t checked = 0, oom = 0;
    for (size_t i = 0; i < mb__gm_n_measurements(); i++) {
        const struct mb_gm_measurement *r = mb__gm_measurement(i);
        if (strcmp(r->source, "MIGPerf") != 0)
            continue;
        const struct mb_gpu_model *m;
        assert_int_equal(mb_catalog_find(cat, r->gpu, &m, &err), MB_OK);
        const struct mb_gi_profile *p = profile(m, r->profile);
        const struct mb_gm_workload *w = mb__gm_workload(r->workload);
        assert_non_null(w);
        bool fits = mb__gm_mem_mib(w, r->batch) <= (double)p->memory_mib;
        if (r->oom) {
            assert_false(fits);
            oom++;
            continue;
        }
        assert_true(fits);
        struct mb_gm_gpu g;
        mb__gm_gpu_for(&g, m, 60, 400, 0.15);
        struct mb_gm_job j;
        mb__gm_job_init(&j, w, r->batch, p->sm_count,
                        (double)p->memory_slices / (double)m->memory_slices);
        struct mb_gm_result res;
        mb__gm_solve(&g, &j, 1, 0, &res);
        assert_false(res.capped);
        double pred = strcmp(r->quantity, "step_ms") == 0 ? 1000.0 * r->batch / j.rate : j.rate;
        double ratio = pred / r->value;
        if (fabs(ratio - 1) > 0.10)
            fail_msg("%s batch %u on %s: model %.2f, measured %.2f (ratio %.3f)", r->workload,
                     r->batch, r->profile, pred, r->value, ratio);
        checked++;
    }
    assert_int_equal(checked, 19); /* 15 ResNet-50 rows with a value, 4 BERT rows */
    assert_int_equal(oom, 1);
    mb_catalog_destroy(cat);
}

/* The limit (1 W steps from 30 % to 100 % of the maximum) with the least energy per unit. */
static double optimal_limit(const struct mb_gm_gpu *g, struct mb_gm_job *j, double *saving)
{
    struct mb_gm_result r;
    mb__gm_solve(g, j, 1, 0, &r);
    double e0 = r.power_w / j->rate, best = e0, best_l = g->max_w;
    for (double l = 0.3 * g->max_w; l <= g->max_w; l += 1) {
        mb__gm_solve(g, j, 1, l, &r);
        double e = r.power_w / j->rate;
        if (e < best) {
            best = e;
            best_l = l;
        }
    }
    *saving = 1 - best / e0;
    return best_l;
}

/* Zeus: ResNet-50 (batch 256) on each calibration GPU; the optimum within 8 points of TDP. */
static void test_zeus_optimum(void **state)
{
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < mb__gm_n_measurements(); i++) {
        const struct mb_gm_measurement *r = mb__gm_measurement(i);
        if (strcmp(r->quantity, "optimal_limit_w") != 0)
            continue;
        struct mb_gm_gpu g;
        double kappa, saving;
        assert_int_equal(mb__gm_calibration_gpu(r->gpu, &g, &kappa), MB_OK);
        struct mb_gm_job j;
        mb__gm_job_init(&j, mb__gm_workload(r->workload), r->batch, g.sm_full, 1.0);
        j.kappa = kappa;
        double l = optimal_limit(&g, &j, &saving);
        double points = 100.0 * fabs(l - r->value) / g.max_w;
        if (points > 8)
            fail_msg("%s: model optimum %.0f W, published %.0f W (%.1f points of %.0f W)", r->gpu,
                     l, r->value, points, g.max_w);
        assert_true(saving > 0.15 && saving < 0.30);
        checked++;
    }
    assert_int_equal(checked, 2);
}

/* The emulated A100 and H100 with their default power: for the sweeps' job (ResNet-50 at batch
 * 256) the optimum falls where the published sweeps put it (50-67 % of the maximum limit, 15-30 %
 * less energy). */
static void test_emulated_optimum(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        double idle, max;
    } gpus[] = {{"A100-SXM4-80GB", 60, 400}, {"H100-SXM5-80GB", 70, 700}};
    struct mb_error err;
    struct mb_catalog *cat;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    for (size_t i = 0; i < 2; i++) {
        const struct mb_gpu_model *m;
        assert_int_equal(mb_catalog_find(cat, gpus[i].model, &m, &err), MB_OK);
        struct mb_gm_gpu g;
        mb__gm_gpu_for(&g, m, gpus[i].idle, gpus[i].max, 0.17);
        struct mb_gm_job j;
        mb__gm_job_init(&j, mb__gm_workload("resnet50"), 256, g.sm_full, 1.0);
        double saving, l = optimal_limit(&g, &j, &saving);
        print_message("%s: ResNet-50 batch 256 least energy at %.0f W (%.0f %% of %.0f W), %.1f %% "
                      "less than at the default limit\n",
                      m->name, l, 100 * l / g.max_w, g.max_w, 100 * saving);
        if (l < 0.5 * g.max_w || l > 0.67 * g.max_w || saving < 0.15 || saving > 0.30)
            fail_msg("%s: optimum %.0f W (%.0f %%), saving %.1f %%", m->name, l, 100 * l / g.max_w,
                     100 * saving);
    }
    mb_catalog_destroy(cat);
}

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

/* Units done and energy used in 10 s of manual clock by the attached jobs (pids 100..). */
static void measure(struct mb_device *dev, size_t n, double *units, double *joules)
{
    struct mb_error err;
    double rate_sum = 0, speed;
    for (size_t i = 0; i < n; i++) {
        double rate;
        assert_int_equal(mb__emu_job_rate(dev, (unsigned)(100 + i), &rate, &speed, &err), MB_OK);
        rate_sum += rate;
    }
    double e0 = mb__emu_energy_j(dev);
    assert_int_equal(mb__emu_advance(dev, 10000000000LL, &err), MB_OK);
    *units = rate_sum * 10;
    *joules = mb__emu_energy_j(dev) - e0;
}

/* Work per joule of n jobs of resnet50 at batch on n x 1g.10gb, over the same n jobs one after
 * another on the whole GPU (MIG off). */
static double sharing_gain(const char *model, double batch, size_t n)
{
    char spec[128];
    struct mb_error err;
    struct mb__emu_job job = {"resnet50", batch, 0, false};
    snprintf(spec, sizeof(spec), "emu:%s:mig=on:clock=manual", model);
    struct mb_device *dev = open_ok(spec);
    for (size_t i = 0; i < n; i++) {
        unsigned gi, ci;
        assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK);
        assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
        assert_int_equal(
            mb__emu_attach_job(dev, (unsigned)(100 + i), (int)gi, (int)ci, &job, "j", &err), MB_OK);
    }
    double mig_units, mig_j;
    measure(dev, n, &mig_units, &mig_j);
    mb_device_close(dev);

    snprintf(spec, sizeof(spec), "emu:%s:clock=manual", model);
    dev = open_ok(spec);
    assert_int_equal(mb__emu_attach_job(dev, 100, -1, -1, &job, "j", &err), MB_OK);
    double seq_units, seq_j;
    measure(dev, 1, &seq_units, &seq_j);
    mb_device_close(dev);
    return (mig_units / mig_j) / (seq_units / seq_j);
}

static void test_sharing_pays_small_batches(void **state)
{
    (void)state;
    static const char *const models[] = {"A100-80GB", "H100-80GB"};
    for (size_t i = 0; i < 2; i++) {
        double small = sharing_gain(models[i], 8, 7);
        double large = sharing_gain(models[i], 64, 7);
        print_message("%s: 7 x 1g against one after another, work per joule: batch 8 %.2fx, "
                      "batch 64 %.2fx\n",
                      models[i], small, large);
        if (small < 1.5)
            fail_msg("%s: batch 8 gains %.2fx work per joule, expected >= 1.5x", models[i], small);
        if (large >= 1.2)
            fail_msg("%s: batch 64 gains %.2fx work per joule, expected < 1.2x", models[i], large);
    }
}

/* A job whose footprint does not fit its instance is refused as out of memory; an unknown preset
 * is bad input. */
static void test_oom_and_unknown(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_device *dev = open_ok("emu:A100-80GB:mig=on:clock=manual");
    unsigned gi, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    struct mb__emu_job big = {"resnet50", 128, 0, false}, bad = {"no-such", 0, 0, false};
    assert_int_equal(mb__emu_attach_job(dev, 7, (int)gi, (int)ci, &big, "j", &err),
                     MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "out of memory"));
    assert_int_equal(mb__emu_attach_job(dev, 7, (int)gi, (int)ci, &bad, "j", &err), MB_EINVAL);
    double rate, speed;
    assert_int_equal(mb__emu_job_rate(dev, 7, &rate, &speed, &err), MB_ENOTFOUND);
    mb_device_close(dev);
}

/* Time-slicing: two jobs on the whole GPU each get half of the time, less the context-switch
 * loss; MPS: two 50 % clients each get half the SMs and half the bandwidth, less contention. */
static void test_timeslice_and_mps(void **state)
{
    (void)state;
    struct mb_error err;
    struct mb_device *dev = open_ok("emu:H100-80GB:clock=manual");
    struct mb__emu_job job = {"gpt2-medium", 0, 0, false};
    double alone, shared, speed;
    assert_int_equal(mb__emu_attach_job(dev, 100, -1, -1, &job, "a", &err), MB_OK);
    assert_int_equal(mb__emu_job_rate(dev, 100, &alone, &speed, &err), MB_OK);
    assert_int_equal(mb__emu_attach_job(dev, 101, -1, -1, &job, "b", &err), MB_OK);
    assert_int_equal(mb__emu_job_rate(dev, 100, &shared, &speed, &err), MB_OK);
    assert_true(fabs(shared / alone - (1 - mb__gm_timeslice_loss()) / 2) < 1e-9);
    mb_device_close(dev);

    dev = open_ok("emu:H100-80GB:clock=manual");
    struct mb__emu_job half = {"gpt2-medium", 0, 50, false};
    assert_int_equal(mb__emu_attach_job(dev, 100, -1, -1, &half, "a", &err), MB_OK);
    assert_int_equal(mb__emu_attach_job(dev, 101, -1, -1, &half, "b", &err), MB_OK);
    double mps;
    assert_int_equal(mb__emu_job_rate(dev, 100, &mps, &speed, &err), MB_OK);
    /* The same job alone on half the SMs with half the bandwidth, times the interference. */
    struct mb_catalog *cat;
    const struct mb_gpu_model *m;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    assert_int_equal(mb_catalog_find(cat, "H100-80GB", &m, &err), MB_OK);
    struct mb_gm_gpu g;
    mb__gm_gpu_for(&g, m, 70, 700, 0.17);
    struct mb_gm_job j;
    mb__gm_job_init(&j, mb__gm_workload("gpt2-medium"), 1024, g.sm_full / 2, 0.5);
    struct mb_gm_job both[2] = {j, j};
    struct mb_gm_result r;
    mb__gm_solve(&g, both, 2, 0, &r);
    assert_true(fabs(mps - both[0].rate * (1 - mb__gm_mps_interference())) < 1e-6 * mps);
    assert_true(mps > shared); /* concurrent halves beat taking turns on this model */
    mb_catalog_destroy(cat);
    mb_device_close(dev);
}

/* The state file publishes each job's demand: a second handle (another process) sees the modelled
 * job and its rate; a state naming an unknown preset is refused with the field. */
static void test_state_file_publishes_jobs(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-gpumodel-XXXXXX", spec[256], path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/gpu.json", dir);
    snprintf(spec, sizeof(spec), "emu:A100-80GB:clock=manual:state=%s", path);
    struct mb_error err;
    struct mb_device *a = open_ok(spec), *b = open_ok(spec);
    struct mb__emu_job job = {"resnet50", 32, 0, false};
    assert_int_equal(mb__emu_attach_job(a, 4242, -1, -1, &job, "j", &err), MB_OK);
    double ra, rb, s;
    assert_int_equal(mb__emu_job_rate(a, 4242, &ra, &s, &err), MB_OK);
    assert_int_equal(mb__emu_job_rate(b, 4242, &rb, &s, &err), MB_OK);
    assert_true(ra > 0 && fabs(ra - rb) < 1e-9);
    mb_device_close(a);
    mb_device_close(b);

    FILE *f = fopen(path, "r");
    char text[8192];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *w = strstr(text, "\"resnet50\"");
    assert_non_null(w);
    memcpy(w, "\"resnet99\"", 10);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    struct mb_device *bad = NULL;
    assert_int_equal(mb_device_open(spec, &bad, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "processes[0].workload"));
    remove(path);
    snprintf(path, sizeof(path), "%s/gpu.json.lock", dir);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migperf),
        cmocka_unit_test(test_zeus_optimum),
        cmocka_unit_test(test_emulated_optimum),
        cmocka_unit_test(test_sharing_pays_small_batches),
        cmocka_unit_test(test_oom_and_unknown),
        cmocka_unit_test(test_timeslice_and_mps),
        cmocka_unit_test(test_state_file_publishes_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
