/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Safe MIG-mode switching on the emulated GPU: the preflight refusals (processes, instances
 * migbench does not own), the journal written before anything changes, refused activations that
 * leave the GPU as found, restore, and what a crashed run left to restore.
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

#include "device/emu.h"
#include "migbench/device.h"
#include "mig/migmode.h"

struct log {
    cJSON *events;
    int fail_journal; /* fail the Nth journal call (1-based); 0 never */
    int calls;
    unsigned owned_gi; /* the GI the ledger says migbench made; 99 none */
    int released;
};

static bool owns(void *ctx, const struct mb_mig_instance *inst)
{
    return ((struct log *)ctx)->owned_gi == inst->gi_id;
}

static void released(void *ctx, const struct mb_mig_instance *inst)
{
    struct log *l = ctx;
    assert_int_equal(inst->gi_id, l->owned_gi);
    l->released++;
}

static int journal(void *ctx, const cJSON *ev, struct mb_error *err)
{
    struct log *l = ctx;
    if (++l->calls == l->fail_journal)
        return mb_error_set(err, MB_EIO, "journal: disk full (test)");
    cJSON_AddItemToArray(l->events, cJSON_Duplicate(ev, 1));
    return MB_OK;
}

static struct mb_migmode_hooks hooks_for(struct log *l)
{
    memset(l, 0, sizeof(*l));
    l->events = cJSON_CreateArray();
    l->owned_gi = 99;
    return (struct mb_migmode_hooks){owns, released, journal, l};
}

static const char *event_name(const struct log *l, int i)
{
    const cJSON *ev = cJSON_GetArrayItem(l->events, i);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "event");
    return cJSON_IsString(name) ? name->valuestring : "(none)";
}

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(spec, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

static void expect_mode(struct mb_device *dev, int current, int pending)
{
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, NULL), MB_OK);
    assert_int_equal(m.current, current);
    assert_int_equal(m.pending, pending);
}

static void test_switch_and_restore(void **state)
{
    (void)state;
    struct log l;
    struct mb_migmode_hooks h = hooks_for(&l);
    struct mb_device *dev = open_ok("emu:H100-80GB");
    struct mb_migmode_plan plan;
    struct mb_error err;
    mb_error_clear(&err);
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_OK);
    assert_true(plan.needed);
    char line[512];
    mb_migmode_describe(&plan, line, sizeof(line));
    assert_non_null(strstr(line, "emu:0 (NVIDIA H100 80GB HBM3, emulated)"));
    assert_non_null(strstr(line, "MIG mode disabled -> enabled"));
    assert_non_null(strstr(line, "journaled and restored"));
    expect_mode(dev, 0, 0); /* planning changes nothing */

    assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), MB_OK);
    expect_mode(dev, 1, 1);
    assert_int_equal(cJSON_GetArraySize(l.events), 2);
    assert_string_equal(event_name(&l, 0), "mig_mode_original");
    assert_string_equal(event_name(&l, 1), "mig_mode_switched");

    /* What a crash here would leave: one GPU to restore, with its original mode. */
    struct mb_migmode_record recs[4];
    size_t n = 0;
    assert_int_equal(mb_migmode_outstanding(l.events, recs, 4, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(recs[0].original_current, 0);
    assert_int_equal(recs[0].original_pending, 0);
    assert_string_equal(recs[0].gpu_uuid, plan.rec.gpu_uuid);

    /* A second switch does not journal another original; a plan already met is a no-op. */
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_OK);
    assert_false(plan.needed);
    mb_migmode_describe(&plan, line, sizeof(line));
    assert_non_null(strstr(line, "already enabled"));
    assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), MB_OK);
    assert_int_equal(cJSON_GetArraySize(l.events), 2);

    assert_int_equal(mb_migmode_restore(dev, &recs[0], &h, &err), MB_OK);
    expect_mode(dev, 0, 0);
    assert_string_equal(event_name(&l, 3), "mig_mode_restored");
    assert_int_equal(mb_migmode_outstanding(l.events, recs, 4, &n, &err), MB_OK);
    assert_int_equal(n, 0);
    mb_device_close(dev);
    cJSON_Delete(l.events);
}

/* Compute processes and other people's instances stop the switch before anything changes. */
static void test_preflight_refusals(void **state)
{
    (void)state;
    struct log l;
    struct mb_migmode_hooks h = hooks_for(&l);
    struct mb_device *dev = open_ok("emu:H100-80GB");
    struct mb_migmode_plan plan;
    struct mb_error err;
    assert_int_equal(mb__emu_attach_process(dev, 31337, -1, -1, 1 << 20, "py", &err), MB_OK);
    assert_int_equal(mb__emu_attach_process(dev, 31338, -1, -1, 1 << 20, "py", &err), MB_OK);
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "2 compute processes run on the GPU (PIDs 31337, 31338)"));
    assert_non_null(strstr(err.msg, "stop them"));
    mb_device_close(dev);

    dev = open_ok("emu:H100-80GB:mig=on");
    unsigned gi_a, gi_b, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi_a, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_gi(dev, 9, NULL, &gi_b, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi_b, -1, &ci, &err), MB_OK);
    assert_int_equal(mb_migmode_plan(dev, 0, &h, &plan, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "2 MIG instances that migbench did not create"));
    assert_non_null(strstr(err.msg, "1g.10gb"));
    assert_non_null(strstr(err.msg, "3g.40gb"));
    /* A plan made when the GPU was free does not switch a GPU that is no longer free. */
    l.owned_gi = gi_a;
    assert_int_equal(mb_migmode_plan(dev, 0, &h, &plan, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "1 MIG instance that migbench did not create exists"));
    assert_int_equal(
        mb_migmode_switch(dev,
                          &(struct mb_migmode_plan){.needed = true, .target = 0, .rec = plan.rec},
                          true, &h, &err),
        MB_EBUSY);
    expect_mode(dev, 1, 1);
    assert_int_equal(cJSON_GetArraySize(l.events), 0);

    /* migbench's own instances go first, and the ledger hears of it. */
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi_b, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi_b, &err), MB_OK);
    assert_int_equal(mb_migmode_plan(dev, 0, &h, &plan, &err), MB_OK);
    assert_int_equal(plan.n_owned, 1);
    char line[512];
    mb_migmode_describe(&plan, line, sizeof(line));
    assert_non_null(strstr(line, "1 MIG instance migbench made go first"));
    assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), MB_OK);
    assert_int_equal(l.released, 1);
    expect_mode(dev, 0, 0);
    mb_device_close(dev);

    /* The host cannot change a MIG mode. */
    dev = open_ok("host");
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);
    cJSON_Delete(l.events);
}

/* Busy and reset-required activations leave the GPU as found and say what to do. */
static void test_refused_activation(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        int status;
        const char *text;
    } cases[] = {
        {"emu:H100-80GB:reset=unavailable", MB_ERESET_REQUIRED, "reboot"},
        {"emu:H100-80GB:busy=4040", MB_EBUSY, "4040"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct log l;
        struct mb_migmode_hooks h = hooks_for(&l);
        struct mb_device *dev = open_ok(cases[i].spec);
        struct mb_migmode_plan plan;
        struct mb_error err;
        assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_OK);
        assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), cases[i].status);
        assert_non_null(strstr(err.msg, cases[i].text));
        assert_non_null(strstr(err.msg, "cannot switch MIG mode disabled -> enabled"));
        assert_non_null(strstr(err.msg, "left in its original mode"));
        expect_mode(dev, 0, 0);
        struct mb_migmode_record recs[2];
        size_t n = 9;
        assert_int_equal(mb_migmode_outstanding(l.events, recs, 2, &n, &err), MB_OK);
        assert_int_equal(n, 0);
        mb_device_close(dev);
        cJSON_Delete(l.events);
    }

    /* A journal that cannot be written stops the switch before the GPU changes. */
    struct log l;
    struct mb_migmode_hooks h = hooks_for(&l);
    l.fail_journal = 1;
    struct mb_device *dev = open_ok("emu:A100-40GB");
    struct mb_migmode_plan plan;
    struct mb_error err;
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_OK);
    assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), MB_EIO);
    expect_mode(dev, 0, 0);
    mb_device_close(dev);
    cJSON_Delete(l.events);
}

/* A crashed run's journal, a fresh process: the original (with its pending mode) comes back. */
static void test_restore_after_crash(void **state)
{
    (void)state;
    char dir[] = "/tmp/mb-test-migmode-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char spec[256], path[200];
    snprintf(path, sizeof(path), "%s/gpu.json", dir);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=%s", path);
    struct log l;
    struct mb_migmode_hooks h = hooks_for(&l);
    struct mb_device *dev = open_ok(spec);
    struct mb_error err;
    /* Found: MIG off with enable pending (someone staged it and never reset). */
    assert_int_equal(mb_device_mig_set_mode(dev, 1, &err), MB_OK);
    struct mb_migmode_plan plan;
    assert_int_equal(mb_migmode_plan(dev, 1, &h, &plan, &err), MB_OK);
    assert_int_equal(mb_migmode_switch(dev, &plan, true, &h, &err), MB_OK);
    unsigned gi;
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK);
    mb_device_close(dev); /* the crash */

    struct mb_migmode_record recs[2];
    size_t n = 0;
    assert_int_equal(mb_migmode_outstanding(l.events, recs, 2, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    dev = open_ok(spec);
    l.owned_gi = gi; /* the journal's leftover instance */
    assert_int_equal(mb_migmode_restore(dev, &recs[0], &h, &err), MB_OK);
    expect_mode(dev, 0, 1);
    struct mb_mig_instance inst[4];
    assert_int_equal(mb_device_mig_instances(dev, inst, 4, &n, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);

    /* Another GPU is not restored from this record. */
    dev = open_ok("emu:H100-80GB:index=3:mig=on");
    assert_int_equal(mb_migmode_restore(dev, &recs[0], &h, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "not the GPU"));
    expect_mode(dev, 1, 1);
    mb_device_close(dev);
    cJSON_Delete(l.events);
    unlink(path);
    snprintf(path, sizeof(path), "%s/gpu.json.lock", dir);
    unlink(path);
    rmdir(dir);
}

/* Phases: the runs of the current mode first, then the others, order kept within each. */
static void test_order_cells(void **state)
{
    (void)state;
    static const char text[] = "version: 1\n"
                               "name: phases\n"
                               "manage_mig_mode: true\n"
                               "workloads:\n"
                               "  a: {command: [true], unit: steps}\n"
                               "runs:\n"
                               "  - {name: solo, mode: exclusive, jobs: [a]}\n"
                               "  - {name: mix, mode: mig, layout: [3g, 3g], jobs: [a, a]}\n"
                               "  - {name: ts, mode: timeslice, jobs: [a, a]}\n"
                               "  - {name: cpu, mode: partition, jobs: [a, a]}\n"
                               "measure: {repetitions: 2}\n";
    struct mb_experiment *exp = NULL;
    struct mb_error err;
    if (mb_experiment_parse("phases.yaml", text, sizeof(text) - 1, NULL, 0, &exp, &err) != MB_OK)
        fail_msg("%s", err.msg);
    assert_true(exp->manage_mig_mode);
    struct mb_cell cells[8];
    for (size_t i = 0; i < 8; i++)
        cells[i] = (struct mb_cell){i / 2, (unsigned)(i % 2)};
    int mode_of[8];
    /* MIG off now: solo, ts, cpu, then mix. */
    assert_int_equal(mb_migmode_order_cells(exp, cells, 8, 0, mode_of), 1);
    static const size_t off_first[8] = {0, 0, 2, 2, 3, 3, 1, 1};
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(cells[i].run, off_first[i]);
    assert_int_equal(cells[1].rep, 1);
    assert_int_equal(mode_of[0], 0);
    assert_int_equal(mode_of[4], -1);
    assert_int_equal(mode_of[7], 1);
    /* MIG on now: mix (and cpu) first. */
    assert_int_equal(mb_migmode_order_cells(exp, cells, 8, 1, NULL), 1);
    assert_int_equal(cells[0].run, 3);
    assert_int_equal(cells[2].run, 1);
    assert_int_equal(cells[4].run, 0);
    /* Only one kind: no switch. */
    assert_int_equal(mb_migmode_order_cells(exp, cells, 4, 1, NULL), 0);
    mb_experiment_destroy(exp);

    static const char bad[] = "version: 1\nname: x\nmanage_mig_mode: sometimes\n"
                              "workloads:\n  a: {command: [true], unit: steps}\n"
                              "runs:\n  - {name: s, mode: exclusive, jobs: [a]}\n";
    assert_int_equal(mb_experiment_parse("bad.yaml", bad, sizeof(bad) - 1, NULL, 0, &exp, &err),
                     MB_EPARSE);
    assert_non_null(strstr(err.msg, "bad.yaml:3"));
    assert_non_null(strstr(err.msg, "manage_mig_mode"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_and_restore), cmocka_unit_test(test_preflight_refusals),
        cmocka_unit_test(test_refused_activation), cmocka_unit_test(test_restore_after_crash),
        cmocka_unit_test(test_order_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
