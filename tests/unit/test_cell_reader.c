/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cell.json's readers against its writer: a record with every field the analysis and the status
 * readers use set to a value of its own is encoded (mb_cell_record_encode, as the runner writes
 * it), written to a file and read back by the analysis's reader (mb__an_parse_cell) and the
 * status reader (mb__cell_read_status); each value must arrive. A key renamed on one side only
 * fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migbench/results.h"
#include "results/analysis_internal.h"
#include "results/cell.h"
#include "results/cell_record.h"

static char dir[64];
static char path[128];

static void set_job(struct mb_cell_job *j, size_t i)
{
    snprintf(j->name, sizeof(j->name), "job-%zu", i);
    snprintf(j->workload, sizeof(j->workload), "wl-%zu", i);
    snprintf(j->unit, sizeof(j->unit), "images");
    char a0[32];
    snprintf(a0, sizeof(a0), "/opt/bin/train%zu", i);
    char *argv[] = {a0, "--batch", "64", NULL};
    assert_int_equal(mb_cell_job_set_argv(j, argv), MB_OK);
    assert_int_equal(mb_cell_job_add_env(j, "CUDA_VISIBLE_DEVICES", i ? "MIG-b" : "MIG-a"), MB_OK);
    j->has_instance = true;
    snprintf(j->inst_profile, sizeof(j->inst_profile), i ? "3g.40gb" : "4g.40gb");
    snprintf(j->inst_requested, sizeof(j->inst_requested), i ? "3g" : "4g");
    snprintf(j->inst_uuid, sizeof(j->inst_uuid), i ? "MIG-b" : "MIG-a");
    j->has_cpus = true;
    j->cpus.n = 2 + (unsigned)i;
    for (unsigned k = 0; k < j->cpus.n; k++)
        j->cpus.cpus[k] = k + 4 * (unsigned)i;
    j->cores = mb_cell_num(true, 2.0 + (double)i);
    j->thread_percentage = mb_cell_num(true, i ? 30 : 70);
    j->steps = mb_cell_num(true, 100 + (double)i);
    j->units = mb_cell_num(true, 6400 + (double)i);
    j->tp_mean = mb_cell_num(true, 210.5 + (double)i);
    j->tp_ci95 = mb_cell_num(true, 1.5 + (double)i);
    snprintf(j->tp_unit_per_s, sizeof(j->tp_unit_per_s), "images/s");
    j->window = (struct mb_cell_window){mb_cell_num(true, 2e9 + (double)i * 1e6),
                                        mb_cell_num(true, 12e9), mb_cell_num(true, 9.75)};
    j->started_ns = mb_cell_num(true, 1e9 + (double)i);
    j->ended_ns = mb_cell_num(true, 13e9 + (double)i);
    snprintf(j->log, sizeof(j->log), "jobs/job-%zu.log", i);
}

static void set_device(struct mb_cell_device *d)
{
    snprintf(d->backend, sizeof(d->backend), "emu");
    d->emulated = true;
    d->has_gpu = d->gpu = true;
    snprintf(d->name, sizeof(d->name), "Emulated H100");
    snprintf(d->model, sizeof(d->model), "H100-80GB");
    snprintf(d->uuid, sizeof(d->uuid), "GPU-7");
    snprintf(d->driver_version, sizeof(d->driver_version), "550.1");
    d->power_limit_mw = mb_cell_num(true, 650000);
    d->has_sensor = true;
    d->sensor.power_kind = MB_POWER_AVERAGED;
    d->sensor.power_update_period_ms = 100;
    d->sensor.has_energy_counter = true;
    d->has_mig = true;
    d->mig_mode = 1;
    d->n_inst = 2;
    /* Listed in the other order than the jobs: the job finds its instance by UUID. */
    d->inst[0] = (struct mb_cell_instance){.profile = "3g.40gb", .gi_id = 9, .uuid = "MIG-b"};
    d->inst[1] = (struct mb_cell_instance){.profile = "4g.40gb", .gi_id = 5, .uuid = "MIG-a"};
}

/* Every field a reader of cell.json uses, each with a value of its own. */
static struct mb_cell_record *every_field(bool ok)
{
    struct mb_cell_record *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->schema = MB_RESULTS_SCHEMA;
    snprintf(r->experiment, sizeof(r->experiment), "drift");
    snprintf(r->experiment_sha, sizeof(r->experiment_sha), "fnv1a64:00aa11bb22cc33dd");
    snprintf(r->run, sizeof(r->run), "pair.cap-80pct");
    snprintf(r->mode, sizeof(r->mode), "mig");
    r->rep = 3;
    r->ok = ok;
    snprintf(r->fail_job, sizeof(r->fail_job), "job-1");
    snprintf(r->fail_reason, sizeof(r->fail_reason), "exited with code 3");
    snprintf(r->migbench_version, sizeof(r->migbench_version), "7.7.7");
    r->slurm = (struct mb_cell_slurm){.present = true, .job = "41_2", .job_id = "43"};
    r->t0_ns = 5e8;
    r->window = (struct mb_cell_window){mb_cell_num(true, 2e9), mb_cell_num(true, 12e9),
                                        mb_cell_num(true, 10)};
    set_device(&r->device);
    r->power = (struct mb_cell_power){.active = true,
                                      .requested = "80%",
                                      .base_run = "pair",
                                      .requested_mw = mb_cell_num(true, 560000),
                                      .enforced_mw = mb_cell_num(true, 555000),
                                      .throttle_valid = true,
                                      .throttle_reasons = 0x24};
    r->reconfigure_seconds = mb_cell_num(true, 3.25);
    r->has_on = true;
    snprintf(r->on, sizeof(r->on), "7g.80gb");
    r->energy = (struct mb_cell_energy){.counter_j = mb_cell_num(true, 4000.25),
                                        .integrated_j = mb_cell_num(true, 4040.5),
                                        .gap_pct = mb_cell_num(true, 1.01),
                                        .flag = "gap",
                                        .method = "counter",
                                        .idle_power_w = mb_cell_num(true, 60.5),
                                        .mean_power_w = mb_cell_num(true, 400.25),
                                        .peak_power_w = mb_cell_num(true, 450.75),
                                        .samples = 101,
                                        .missed_updates = mb_cell_num(true, 2)};
    r->load.present = true;
    r->load.all = (struct mb_hostload){.verdict_ok = true, .loaded = true, .why = "load1 9.5"};
    r->n_jobs = 2;
    for (size_t i = 0; i < r->n_jobs; i++)
        set_job(&r->jobs[i], i);
    return r;
}

static void write_record(const struct mb_cell_record *r)
{
    cJSON *o = mb_cell_record_encode(r);
    assert_non_null(o);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    assert_non_null(text);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
}

struct parsed {
    struct mb_an_experiment *e;
    struct mb_an_cell c;
    struct run_meta *m;
};

static struct parsed *parse(void)
{
    struct parsed *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->e = calloc(1, sizeof(*p->e));
    p->m = calloc(1, sizeof(*p->m));
    assert_true(p->e && p->m);
    struct mb_error err;
    int rc = mb__an_parse_cell(p->e, &p->c, p->m, path, "dirrun", 0, &err);
    if (rc != MB_OK)
        fail_msg("%s", err.msg);
    return p;
}

static void parsed_free(struct parsed *p)
{
    mb__an_free_meta(p->m);
    free(p->e);
    free(p);
}

static void assert_num(struct mb_opt o, double v)
{
    assert_true(o.valid);
    if (o.v != v)
        fail_msg("%g != %g", o.v, v);
}

static void check_experiment(const struct mb_an_experiment *e)
{
    assert_string_equal(e->name, "drift");
    assert_string_equal(e->sha, "fnv1a64:00aa11bb22cc33dd");
    assert_string_equal(e->migbench_version, "7.7.7");
    assert_string_equal(e->backend, "emu");
    assert_string_equal(e->device_name, "Emulated H100");
    assert_string_equal(e->model, "H100-80GB");
    assert_string_equal(e->uuid, "GPU-7");
    assert_string_equal(e->driver_version, "550.1");
    assert_true(e->emulated);
    assert_false(e->cpu_device);
    assert_num(e->power_limit_w, 650);
    assert_non_null(strstr(e->sensor, "power_kind=averaged"));
    assert_non_null(strstr(e->sensor, "power_update_period_ms=100"));
    assert_non_null(strstr(e->sensor, "has_energy_counter=true"));
    assert_int_equal(e->nworkloads, 2);
    assert_string_equal(e->workload_names[1], "wl-1");
    assert_true(e->workload_sig[0] != 0 && e->workload_sig[0] != e->workload_sig[1]);
}

static void check_cell(const struct mb_an_cell *c)
{
    assert_int_equal(c->rep, 3);
    assert_string_equal(c->path, path);
    assert_true(c->t0_ns == 500000000);
    assert_num(c->window_s, 10);
    assert_true(c->window_start_ns == 2000000000 && c->window_end_ns == 12000000000);
    assert_num(c->reconfigure_s, 3.25);
    assert_num(c->counter_j, 4000.25);
    assert_num(c->integrated_j, 4040.5);
    assert_num(c->gap_pct, 1.01);
    assert_num(c->idle_power_w, 60.5);
    assert_num(c->mean_power_w, 400.25);
    assert_num(c->peak_power_w, 450.75);
    assert_num(c->samples, 101);
    assert_num(c->missed_updates, 2);
    assert_string_equal(c->energy_flag, "gap");
    assert_true(c->has_energy && c->energy_mj == 4000250);
    assert_string_equal(c->energy_source, "counter");
    assert_string_equal(c->power_limit, "80%");
    assert_string_equal(c->base_run, "pair");
    assert_num(c->enforced_w, 555);
    assert_true(c->throttle_valid && c->throttle_reasons == 0x24);
    assert_string_equal(c->gpu_uuid, "GPU-7");
    assert_int_equal(c->outside_load, 1);
    assert_string_equal(c->outside_load_why, "load1 9.5");
    assert_int_equal(c->njobs, 2);
    for (size_t i = 0; i < 2; i++) {
        const struct mb_an_cell_job *j = &c->jobs[i];
        char name[16];
        snprintf(name, sizeof(name), "job-%zu", i);
        assert_string_equal(j->name, name);
        assert_num(j->throughput, 210.5 + (double)i);
        assert_num(j->throughput_ci95, 1.5 + (double)i);
        assert_num(j->steps, 100 + (double)i);
        assert_num(j->units, 6400 + (double)i);
        assert_num(j->window_s, 9.75);
        assert_true(j->has_window && j->window_end_ns == 12000000000);
        assert_true(j->window_start_ns == 2000000000 + (int64_t)i * 1000000);
        assert_num(j->work, (210.5 + (double)i) * 9.75);
        assert_true(j->has_times && j->started_ns == 1000000000 + (int64_t)i);
        assert_true(j->ended_ns == 13000000000 + (int64_t)i);
        assert_int_equal(j->gi_id, i ? 9 : 5);
    }
}

static void check_meta(const struct run_meta *m)
{
    assert_string_equal(m->run, "pair.cap-80pct");
    assert_string_equal(m->mode, "mig");
    assert_string_equal(m->on, "7g.80gb");
    assert_int_equal(m->njobs, 2);
    for (size_t i = 0; i < 2; i++) {
        char want[32];
        snprintf(want, sizeof(want), "wl-%zu", i);
        assert_string_equal(m->workload[i], want);
        assert_string_equal(m->unit[i], "images/s");
        assert_string_equal(m->instance[i], i ? "3g.40gb" : "4g.40gb");
        assert_num(m->pct[i], i ? 30 : 70);
        assert_int_equal(m->cpus[i], 2 + (int)i);
        assert_num(m->cores[i], 2.0 + (double)i);
        assert_int_equal(m->argc[i], 3);
        snprintf(want, sizeof(want), "/opt/bin/train%zu", i);
        assert_string_equal(m->argv[i][0], want);
        assert_string_equal(m->argv[i][2], "64");
    }
}

/* An ok cell: every field the runner writes arrives in the analysis. */
static void test_every_field_arrives(void **state)
{
    (void)state;
    struct mb_cell_record *r = every_field(true);
    write_record(r);
    struct parsed *p = parse();
    assert_true(p->c.ok);
    check_experiment(p->e);
    check_cell(&p->c);
    check_meta(p->m);
    parsed_free(p);
    struct mb_cell_status st;
    assert_int_equal(mb__cell_read_status(path, &st, NULL), MB_OK);
    assert_true(st.ok && !st.failed);
    assert_string_equal(st.slurm_job, "41_2");
    mb_cell_record_free(r);
    free(r);
}

/* A failed cell: its job and reason reach the analysis and the status reader. */
static void test_failure_arrives(void **state)
{
    (void)state;
    struct mb_cell_record *r = every_field(false);
    write_record(r);
    struct parsed *p = parse();
    assert_false(p->c.ok);
    assert_string_equal(p->c.failure, "job-1: exited with code 3");
    parsed_free(p);
    struct mb_cell_status st;
    assert_int_equal(mb__cell_read_status(path, &st, NULL), MB_OK);
    assert_true(!st.ok && st.failed);
    assert_string_equal(st.reason, "exited with code 3");
    mb_cell_record_free(r);
    free(r);
}

/* What older writers recorded differently still reads: a job's window inside "throughput", a
 * recorded device.gpu flag, no "rep" (the directory's), instances matched by position. */
static void test_older_cells(void **state)
{
    (void)state;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"schema\": 1, \"run\": \"r\", \"mode\": \"mps\", \"status\": \"killed\","
          " \"device\": {\"backend\": \"cpu0\", \"gpu\": false, \"sensor\": {\"period_ms\": 20},"
          " \"mig\": {\"instances\": [{\"gi_id\": 4, \"profile\": \"2g.20gb\"}]}},"
          " \"mps\": {\"thread_percentage\": [40]},"
          " \"jobs\": [{\"name\": \"a\", \"unit\": \"tokens\", \"argv\": [\"x\", 3],"
          " \"throughput\": {\"mean\": 2, \"window\": {\"start_ns\": 1e9, \"end_ns\": 3e9}}}]}",
          f);
    fclose(f);
    struct parsed *p = parse();
    assert_false(p->c.ok);
    assert_string_equal(p->c.failure, "killed");
    assert_int_equal(p->c.rep, 0);
    assert_true(p->e->cpu_device);
    assert_string_equal(p->e->sensor, "period_ms=20");
    const struct mb_an_cell_job *j = &p->c.jobs[0];
    assert_num(j->window_s, 2);
    assert_num(j->work, 4);
    assert_int_equal(j->gi_id, 4);
    assert_string_equal(p->m->instance[0], "2g.20gb");
    assert_string_equal(p->m->workload[0], "a");
    assert_string_equal(p->m->unit[0], "tokens/s");
    assert_num(p->m->pct[0], 40);
    assert_int_equal(p->m->argc[0], 2);
    parsed_free(p);
    struct mb_cell_status st;
    assert_int_equal(mb__cell_read_status(path, &st, NULL), MB_OK);
    assert_true(!st.ok && !st.failed);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-cellreader-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/cell.json", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_arrives),
        cmocka_unit_test(test_failure_arrives),
        cmocka_unit_test(test_older_cells),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
