/* SPDX-License-Identifier: Apache-2.0 */
/* cell.json's typed record: encode -> decode -> equal, nulls kept null, hostile input bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/cell_record.h"
#include "migbench/results.h"

/* Job 0 has every figure known; job 1 has every figure unknown (null) and no instance/CPUs. */
static void fill_jobs(struct mb_cell_record *r)
{
    r->n_jobs = 2;
    struct mb_cell_job *j = &r->jobs[0];
    snprintf(j->name, sizeof(j->name), "a-1");
    snprintf(j->workload, sizeof(j->workload), "a");
    snprintf(j->unit, sizeof(j->unit), "images");
    char *argv[] = {"/bin/train", "--batch", "64", "", NULL};
    assert_int_equal(mb_cell_job_set_argv(j, argv), MB_OK);
    assert_int_equal(mb_cell_job_add_env(j, "MIGBENCH_PROGRESS_FD", "pipe"), MB_OK);
    assert_int_equal(mb_cell_job_add_env(j, "CUDA_VISIBLE_DEVICES", "MIG-1"), MB_OK);
    j->has_instance = true;
    snprintf(j->inst_profile, sizeof(j->inst_profile), "3g.40gb");
    snprintf(j->inst_requested, sizeof(j->inst_requested), "3g");
    snprintf(j->inst_uuid, sizeof(j->inst_uuid), "MIG-1");
    j->has_cpus = true;
    j->cpus.n = 3;
    j->cpus.cpus[0] = 0, j->cpus.cpus[1] = 2, j->cpus.cpus[2] = 5;
    j->cores = mb_cell_num(true, 3);
    j->omp_num_threads = mb_cell_num(true, 3);
    j->thread_percentage = mb_cell_num(true, 57);
    j->cooldown = (struct mb_cell_cooldown){.seconds = mb_cell_num(true, 4.5),
                                            .ended = "near_idle",
                                            .reference = "idle_baseline",
                                            .reference_w = mb_cell_num(true, 61.25),
                                            .power_w = mb_cell_num(true, 63.5)};
    j->exit_code = mb_cell_num(true, 0);
    j->steps = mb_cell_num(true, 1200);
    j->units = mb_cell_num(true, 76800);
    j->tp_mean = mb_cell_num(true, 512.25);
    j->tp_ci95 = mb_cell_num(true, 3.5);
    snprintf(j->tp_unit_per_s, sizeof(j->tp_unit_per_s), "images/s");
    j->window = (struct mb_cell_window){mb_cell_num(true, 1e9), mb_cell_num(true, 6e9),
                                        mb_cell_num(true, 5)};
    j->completion_s = mb_cell_num(true, 7.25);
    j->started_ns = mb_cell_num(true, 5e8);
    j->ended_ns = mb_cell_num(true, 7.75e9);
    snprintf(j->log, sizeof(j->log), "jobs/a-1.log");
    j = &r->jobs[1];
    snprintf(j->name, sizeof(j->name), "b-2");
    snprintf(j->workload, sizeof(j->workload), "b");
    snprintf(j->unit, sizeof(j->unit), "steps");
    j->exit_signal = mb_cell_num(true, 9);
    snprintf(j->tp_unit_per_s, sizeof(j->tp_unit_per_s), "steps/s");
    j->tp_has_reason = true;
    snprintf(j->tp_reason, sizeof(j->tp_reason), "no window");
    snprintf(j->log, sizeof(j->log), "jobs/b-2.log");
}

static void fill_device(struct mb_cell_device *d)
{
    snprintf(d->backend, sizeof(d->backend), "emu");
    d->emulated = true;
    d->has_gpu = d->gpu = true;
    snprintf(d->name, sizeof(d->name), "NVIDIA H100 80GB HBM3 (emulated)");
    snprintf(d->model, sizeof(d->model), "H100-80GB");
    snprintf(d->uuid, sizeof(d->uuid), "GPU-1");
    snprintf(d->driver_version, sizeof(d->driver_version), "535.0");
    d->power_limit_mw = mb_cell_num(true, 650000);
    d->has_sensor = true;
    d->sensor.power_kind = MB_POWER_AVERAGED;
    d->sensor.power_update_period_ms = 100;
    d->sensor.power_avg_window_ms = 1000;
    d->sensor.has_energy_counter = true;
    snprintf(d->sensor.scope, sizeof(d->sensor.scope), "board");
    snprintf(d->sensor.source, sizeof(d->sensor.source), "catalog");
    d->has_mig = true;
    d->mig_mode = 1;
    d->n_inst = 1;
    d->inst[0] = (struct mb_cell_instance){.profile = "3g.40gb",
                                           .requested = "3g",
                                           .placement = {4, 4},
                                           .gi_id = 2,
                                           .ci_id = 0,
                                           .uuid = "MIG-1"};
}

static struct mb_cell_record *full_record(void)
{
    struct mb_cell_record *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->schema = MB_RESULTS_SCHEMA;
    snprintf(r->experiment, sizeof(r->experiment), "study");
    snprintf(r->experiment_sha, sizeof(r->experiment_sha), "0123456789abcdef");
    snprintf(r->run, sizeof(r->run), "mix.cap-60pct");
    snprintf(r->mode, sizeof(r->mode), "mig");
    r->rep = 2;
    snprintf(r->fail_job, sizeof(r->fail_job), "b-2");
    snprintf(r->fail_reason, sizeof(r->fail_reason), "job b-2 was killed by signal 9");
    snprintf(r->fail_log_tail, sizeof(r->fail_log_tail), "step 3\nKilled\n");
    snprintf(r->migbench_version, sizeof(r->migbench_version), "9.9.9");
    mb_cell_slurm_from_env(&r->slurm);
    r->started_unix = 1764700000.5;
    r->t0_ns = 123456789;
    r->start_offset_s = 1.25;
    r->window = (struct mb_cell_window){mb_cell_num(true, 1e9), {0, 0}, mb_cell_num(true, 5)};
    fill_device(&r->device);
    r->power = (struct mb_cell_power){.active = true,
                                      .requested = "60%",
                                      .base_run = "mix",
                                      .requested_mw = mb_cell_num(true, 420000),
                                      .set_by_migbench = true,
                                      .throttle_valid = true,
                                      .throttle_reasons = 0x4};
    r->has_mps = true;
    r->n_mps_pct = 2;
    r->mps_pct[0] = 57, r->mps_pct[1] = 43;
    snprintf(r->mps_pipe_dir, sizeof(r->mps_pipe_dir), "/r/mps/pipe");
    snprintf(r->mps_log_dir, sizeof(r->mps_log_dir), "/r/mps/log");
    snprintf(r->mps_daemon, sizeof(r->mps_daemon), "none (emulated GPU)");
    r->reconfigure_seconds = mb_cell_num(true, 0.75);
    r->has_on = true;
    snprintf(r->on, sizeof(r->on), "3g.40gb");
    r->energy = (struct mb_cell_energy){.counter_j = mb_cell_num(true, 1500.5),
                                        .integrated_j = mb_cell_num(true, 1510),
                                        .gap_pct = mb_cell_num(true, 0.63),
                                        .flag = "ok",
                                        .method = "counter",
                                        .note = "power: Not Supported",
                                        .idle_power_w = mb_cell_num(true, 61),
                                        .samples = 100,
                                        .missed_updates = mb_cell_num(true, 0)};
    r->load.present = true;
    r->load.all = (struct mb_hostload){.steal_ok = true,
                                       .steal_pct = 12.5,
                                       .load_ok = true,
                                       .load1 = 3.25,
                                       .cpus = 2,
                                       .job_cores = 1,
                                       .verdict_ok = true,
                                       .loaded = true,
                                       .why = "CPU steal 12.5 %"};
    snprintf(r->load.source, sizeof(r->load.source), "/proc");
    r->load.n_windows = 2;
    r->load.windows[0] = r->load.all;
    /* windows[1]: nothing measured, so no verdict: "loaded" null */
    fill_jobs(r);
    return r;
}

static char *encode_text(const struct mb_cell_record *r)
{
    cJSON *o = mb_cell_record_encode(r);
    assert_non_null(o);
    char *t = cJSON_Print(o);
    cJSON_Delete(o);
    assert_non_null(t);
    return t;
}

static struct mb_cell_record *decode_text(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    struct mb_cell_record *r = malloc(sizeof(*r));
    assert_non_null(r);
    struct mb_error err;
    assert_int_equal(mb_cell_record_decode(root, r, &err), MB_OK);
    cJSON_Delete(root);
    return r;
}

static void assert_opt(struct mb_opt a, struct mb_opt b)
{
    assert_int_equal(a.valid, b.valid);
    if (a.valid)
        assert_true(a.v == b.v);
}

static void assert_jobs_equal(const struct mb_cell_job *a, const struct mb_cell_job *b)
{
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->argc, b->argc);
    for (size_t k = 0; k < a->argc; k++)
        assert_string_equal(a->argv[k], b->argv[k]);
    assert_int_equal(a->n_env, b->n_env);
    for (size_t k = 0; k < a->n_env; k++)
        assert_string_equal(a->env[k], b->env[k]);
    assert_int_equal(a->has_instance, b->has_instance);
    assert_string_equal(a->inst_uuid, b->inst_uuid);
    assert_int_equal(a->has_cpus, b->has_cpus);
    assert_int_equal(a->cpus.n, b->cpus.n);
    assert_memory_equal(a->cpus.cpus, b->cpus.cpus, a->cpus.n * sizeof(unsigned));
    assert_opt(a->thread_percentage, b->thread_percentage);
    assert_opt(a->cooldown.reference_w, b->cooldown.reference_w);
    assert_string_equal(a->cooldown.ended, b->cooldown.ended);
    assert_opt(a->exit_code, b->exit_code);
    assert_opt(a->exit_signal, b->exit_signal);
    assert_opt(a->tp_mean, b->tp_mean);
    assert_int_equal(a->tp_has_reason, b->tp_has_reason);
    assert_string_equal(a->tp_reason, b->tp_reason);
    assert_opt(a->window.end_ns, b->window.end_ns);
    assert_opt(a->completion_s, b->completion_s);
}

/* encode -> decode gives the record back; encoding that again gives the same document. */
static void test_round_trip(void **state)
{
    (void)state;
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_ARRAY_JOB_ID", "70", 1);
    setenv("SLURM_ARRAY_TASK_ID", "3", 1);
    unsetenv("SLURMD_NODENAME");
    struct mb_cell_record *r = full_record();
    char *text = encode_text(r);
    struct mb_cell_record *d = decode_text(text);
    assert_false(d->ok);
    assert_string_equal(d->fail_job, "b-2");
    assert_string_equal(d->fail_log_tail, r->fail_log_tail);
    assert_true(d->slurm.present);
    assert_string_equal(d->slurm.job, "70_3");
    assert_string_equal(d->slurm.node, "");
    assert_true(d->t0_ns == r->t0_ns && d->started_unix == r->started_unix);
    assert_opt(d->window.end_ns, r->window.end_ns);
    assert_string_equal(d->device.model, "H100-80GB");
    assert_true(d->device.has_gpu && d->device.gpu);
    assert_int_equal(d->device.sensor.power_kind, MB_POWER_AVERAGED);
    assert_int_equal(d->device.sensor.power_avg_window_ms, 1000);
    assert_int_equal(d->device.n_inst, 1);
    assert_int_equal(d->device.inst[0].placement.start, 4);
    assert_true(d->power.throttle_valid && d->power.throttle_reasons == 0x4);
    assert_opt(d->power.enforced_mw, r->power.enforced_mw);
    assert_int_equal(d->n_mps_pct, 2);
    assert_int_equal(d->mps_pct[1], 43);
    assert_true(d->has_on);
    assert_true(d->load.present && d->load.all.loaded && d->load.all.steal_ok);
    assert_string_equal(d->load.all.why, "CPU steal 12.5 %");
    assert_int_equal(d->load.n_windows, 2);
    assert_false(d->load.windows[1].verdict_ok);
    assert_false(d->load.all.other_ok);
    assert_opt(d->energy.gap_pct, r->energy.gap_pct);
    assert_string_equal(d->energy.method, "counter");
    assert_string_equal(d->energy.note, "power: Not Supported");
    assert_opt(d->energy.mean_power_w, r->energy.mean_power_w);
    assert_int_equal(d->n_jobs, 2);
    for (size_t i = 0; i < 2; i++)
        assert_jobs_equal(&r->jobs[i], &d->jobs[i]);
    char *again = encode_text(d);
    assert_string_equal(text, again);
    free(again);
    free(text);
    mb_cell_record_free(d);
    free(d);

    /* An ok cell outside Slurm: "failure" null, no "slurm", no "on", "mps"/"mig" null. */
    unsetenv("SLURM_JOB_ID");
    r->ok = true;
    mb_cell_slurm_from_env(&r->slurm);
    r->has_on = r->has_mps = r->device.has_mig = r->device.has_sensor = r->power.active = false;
    r->device.has_gpu = false; /* a cell from before "gpu": null, and read back so */
    text = encode_text(r);
    assert_non_null(strstr(text, "\"gpu\":\tnull"));
    assert_non_null(strstr(text, "\"failure\":\tnull"));
    assert_non_null(strstr(text, "\"mps\":\tnull"));
    assert_non_null(strstr(text, "\"power_limit\":\tnull"));
    assert_null(strstr(text, "\"slurm\""));
    assert_null(strstr(text, "\"on\""));
    d = decode_text(text);
    assert_true(d->ok && !d->slurm.present && !d->has_on && !d->has_mps && !d->power.active);
    assert_false(d->device.has_gpu);
    again = encode_text(d);
    assert_string_equal(text, again);
    free(again);
    free(text);
    mb_cell_record_free(d);
    free(d);
    mb_cell_record_free(r);
    free(r);
}

/* Unknown figures stay null both ways; a non-finite figure is written as null, never 0. */
static void test_nulls(void **state)
{
    (void)state;
    struct mb_cell_record *r = full_record();
    r->energy.counter_j = mb_cell_num(true, NAN);
    r->jobs[0].steps = mb_cell_num(false, 5);
    char *text = encode_text(r);
    cJSON *root = cJSON_Parse(text);
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(root, "energy");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(en, "counter_j")));
    const cJSON *j1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "jobs"), 1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j1, "completion_s")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j1, "instance")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j1, "cpus")));
    cJSON_Delete(root);
    struct mb_cell_record *d = decode_text(text);
    assert_false(d->energy.counter_j.valid);
    assert_false(d->jobs[0].steps.valid);
    assert_false(d->jobs[1].exit_code.valid);
    free(text);
    mb_cell_record_free(d);
    free(d);
    mb_cell_record_free(r);
    free(r);
}

/* A damaged or foreign document: refused when not an object or of another schema; arrays and
 * strings bounded by the record's fields; mistyped values unknown. */
static void test_hostile(void **state)
{
    (void)state;
    struct mb_cell_record *r = malloc(sizeof(*r));
    struct mb_error err;
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(mb_cell_record_decode(arr, r, &err), MB_EPARSE);
    cJSON_Delete(arr);
    cJSON *o = cJSON_Parse("{\"schema\": 2}");
    assert_int_equal(mb_cell_record_decode(o, r, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "field 'schema'"));
    cJSON_Delete(o);
    /* 40 jobs, a 2000-byte run name, a string where a number goes, CPUs out of range. */
    cJSON *root = cJSON_CreateObject();
    char name[2001];
    memset(name, 'x', 2000);
    name[2000] = '\0';
    cJSON_AddStringToObject(root, "run", name);
    cJSON_AddStringToObject(root, "t0_ns", "12");
    cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
    for (int i = 0; i < 40; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON *cpus = cJSON_AddArrayToObject(j, "cpus");
        cJSON_AddItemToArray(cpus, cJSON_CreateNumber(1e12));
        cJSON_AddItemToArray(cpus, cJSON_CreateNumber(-1));
        cJSON_AddItemToArray(cpus, cJSON_CreateNumber(7));
        cJSON_AddItemToArray(jobs, j);
    }
    assert_int_equal(mb_cell_record_decode(root, r, &err), MB_OK);
    assert_int_equal(r->n_jobs, MB_EXP_MAX_JOBS);
    assert_int_equal(strlen(r->run), sizeof(r->run) - 1);
    assert_true(r->t0_ns == 0);
    assert_int_equal(r->jobs[0].cpus.n, 1);
    assert_int_equal(r->jobs[0].cpus.cpus[0], 7);
    mb_cell_record_free(r);
    cJSON_Delete(root);
    free(r);
}

/* Every cell.json the goldens hold (older writers among them) decodes. */
static void test_goldens_decode(void **state)
{
    (void)state;
    static const char *const cells[] = {"results-h100/mig/0/cell.json",
                                        "results-h100/mps/2/cell.json",
                                        "results-h100/exclusive/1/cell.json"};
    for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/tests/golden/%s", MB_SOURCE_DIR, cells[i]);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        struct mb_cell_record *d = decode_text(buf);
        assert_true(d->n_jobs > 0);
        assert_true(d->mode[0] != '\0');
        assert_true(d->jobs[0].argc > 0);
        mb_cell_record_free(d);
        free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_nulls),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_goldens_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
