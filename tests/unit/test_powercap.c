/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The power-limit restore ledger on the emulated GPU: the record is written before the change and
 * keeps the first original; restore at the end; a crash (a record left by a dead pid) recovered at
 * the next start; a live owner's record left alone; a limit someone else changed left alone; a
 * record from another boot dropped; a GPU migbench never changed never touched; failed changes
 * leave no record; the site helper called as an argv vector; limits as text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migbench/device.h"
#include "migbench/powercap.h"

static char dir[128], state[256], spec[512], ledger[512];

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-powercap-%ld", (long)getpid());
    mkdir(dir, 0755);
    snprintf(state, sizeof(state), "%s/gpu.json", dir);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:idle_w=70:max_w=700:state=%s", state);
    snprintf(ledger, sizeof(ledger), "%s.powercap.json", state);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    const char *names[] = {"gpu.json", "gpu.json.lock", "gpu.json.powercap.json", "helper.sh",
                           "helper.args"};
    char p[300];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

static struct mb_device *open_ok(const char *s)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    if (mb_device_open(s, &dev, &err) != MB_OK)
        fail_msg("open %s: %s", s, err.msg);
    return dev;
}

static uint32_t limit_of(struct mb_device *dev)
{
    struct mb_power_limit pl;
    struct mb_error err;
    assert_int_equal(mb_device_power_limit(dev, &pl, &err), MB_OK);
    return pl.limit_mw;
}

static bool exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* A pid that existed and is dead now. */
static long dead_pid(void)
{
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    return (long)c;
}

static void write_record(long pid, const char *boot, uint32_t original, uint32_t set)
{
    struct mb_device *dev = open_ok(spec);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, NULL), MB_OK);
    mb_device_close(dev);
    char own_boot[64] = "";
    FILE *b = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (b) {
        if (fgets(own_boot, sizeof(own_boot), b))
            own_boot[strcspn(own_boot, "\n")] = '\0';
        fclose(b);
    }
    FILE *f = fopen(ledger, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"version\":1,\"uuid\":\"%s\",\"original_mw\":%u,\"set_mw\":%u,\"pid\":%ld,"
            "\"pid_start\":%d,\"boot_id\":\"%s\",\"time_unix_s\":1}\n",
            info.uuid, original, set, pid, pid == (long)getppid() ? 0 : 1, boot ? boot : own_boot);
    fclose(f);
}

/* Adds prev_mw to the record written by write_record. */
static void f_prev(uint32_t prev)
{
    char buf[1024] = "";
    FILE *f = fopen(ledger, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    char *brace = strrchr(buf, '}');
    assert_non_null(brace);
    snprintf(brace, sizeof(buf) - (size_t)(brace - buf), ",\"prev_mw\":%u}\n", prev);
    f = fopen(ledger, "w");
    assert_non_null(f);
    fputs(buf, f);
    fclose(f);
}

static void test_set_and_restore(void **st)
{
    (void)st;
    struct mb_device *dev = open_ok(spec);
    struct mb_powercap pc = {dev, ledger, NULL};
    struct mb_error err;
    uint32_t enforced = 0;
    assert_int_equal(mb_powercap_set(&pc, 400000, &enforced, &err), MB_OK);
    assert_int_equal(enforced, 400000);
    struct mb_powercap_record rec;
    assert_int_equal(mb_powercap_read(ledger, &rec, &err), MB_OK);
    assert_int_equal(rec.original_mw, 700000);
    assert_int_equal(rec.set_mw, 400000);
    assert_int_equal(rec.pid, (long)getpid());
    /* A second change keeps the first original. */
    assert_int_equal(mb_powercap_set(&pc, 300000, NULL, &err), MB_OK);
    assert_int_equal(mb_powercap_read(ledger, &rec, &err), MB_OK);
    assert_int_equal(rec.original_mw, 700000);
    assert_int_equal(rec.set_mw, 300000);
    /* A second change that fails leaves the record as it was, so the restore still knows 300 W. */
    assert_int_equal(mb_powercap_set(&pc, 100000, NULL, &err), MB_ERANGE);
    assert_int_equal(mb_powercap_read(ledger, &rec, &err), MB_OK);
    assert_int_equal(rec.set_mw, 300000);
    assert_int_equal(rec.prev_mw, 400000);
    /* Recovery at start leaves a live owner's (our own) record alone. */
    enum mb_powercap_outcome o;
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_HELD);
    assert_int_equal(limit_of(dev), 300000);
    assert_int_equal(mb_powercap_restore(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_RESTORED);
    assert_int_equal(limit_of(dev), 700000);
    assert_false(exists(ledger));
    /* Nothing recorded: restore touches nothing, even a limit changed by someone else. */
    assert_int_equal(mb_device_set_power_limit(dev, 500000, &err), MB_OK);
    assert_int_equal(mb_powercap_restore(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_NONE);
    assert_int_equal(limit_of(dev), 500000);
    /* A site's limit is the original: it comes back, not the default. */
    assert_int_equal(mb_powercap_set(&pc, 250000, NULL, &err), MB_OK);
    assert_int_equal(mb_powercap_restore(&pc, &o, &err), MB_OK);
    assert_int_equal(limit_of(dev), 500000);
    assert_int_equal(mb_device_set_power_limit(dev, 700000, &err), MB_OK);
    mb_device_close(dev);
}

static void test_crash_recovery(void **st)
{
    (void)st;
    struct mb_device *dev = open_ok(spec);
    struct mb_powercap pc = {dev, ledger, NULL};
    struct mb_error err;
    enum mb_powercap_outcome o;
    /* A run that died after setting 350 W. */
    assert_int_equal(mb_device_set_power_limit(dev, 350000, &err), MB_OK);
    write_record(dead_pid(), NULL, 700000, 350000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_RESTORED);
    assert_int_equal(limit_of(dev), 700000);
    assert_false(exists(ledger));
    /* Died between recording a second change (to 300 W) and making it: the GPU still holds the
     * first one (350 W), which migbench set too, so it comes back. */
    assert_int_equal(mb_device_set_power_limit(dev, 350000, &err), MB_OK);
    write_record(dead_pid(), NULL, 700000, 300000);
    f_prev(350000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_RESTORED);
    assert_int_equal(limit_of(dev), 700000);
    /* Died before its change took effect: the limit is the original, only the record goes. */
    write_record(dead_pid(), NULL, 700000, 350000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_UNCHANGED);
    assert_false(exists(ledger));
    /* Someone else changed the limit after the dead run: left alone. */
    assert_int_equal(mb_device_set_power_limit(dev, 600000, &err), MB_OK);
    write_record(dead_pid(), NULL, 700000, 350000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_FOREIGN);
    assert_int_equal(limit_of(dev), 600000);
    assert_false(exists(ledger));
    /* A record from an earlier boot: dropped, GPU untouched. */
    write_record(dead_pid(), "another-boot", 700000, 600000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_STALE);
    assert_int_equal(limit_of(dev), 600000);
    assert_false(exists(ledger));
    /* A live owner (our parent stands in for another migbench; start time unknown, so its pid
     * alone says it lives): nothing touched, set refused. */
    assert_int_equal(mb_device_set_power_limit(dev, 350000, &err), MB_OK);
    write_record((long)getppid(), NULL, 700000, 350000);
    assert_int_equal(mb_powercap_recover(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_HELD);
    assert_int_equal(mb_powercap_restore(&pc, &o, &err), MB_OK);
    assert_int_equal(o, MB_PC_HELD);
    assert_int_equal(mb_powercap_set(&pc, 300000, NULL, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "held by another migbench"));
    assert_int_equal(limit_of(dev), 350000);
    unlink(ledger);
    assert_int_equal(mb_device_set_power_limit(dev, 700000, &err), MB_OK);
    mb_device_close(dev);
}

static void test_failures_leave_nothing(void **st)
{
    (void)st;
    struct mb_device *dev = open_ok(spec);
    struct mb_powercap pc = {dev, ledger, NULL};
    struct mb_error err;
    assert_int_equal(mb_powercap_set(&pc, 100000, NULL, &err), MB_ERANGE);
    assert_false(exists(ledger));
    assert_int_equal(limit_of(dev), 700000);
    mb_device_close(dev);
    char denied[600];
    snprintf(denied, sizeof(denied), "%s:limit_perm=deny", spec);
    dev = open_ok(denied);
    pc.dev = dev;
    assert_int_equal(mb_powercap_set(&pc, 400000, NULL, &err), MB_EPERM);
    assert_false(exists(ledger));
    /* A record for another GPU is never applied to this one. */
    FILE *f = fopen(ledger, "w");
    assert_non_null(f);
    fputs("{\"uuid\":\"GPU-other\",\"original_mw\":700000,\"set_mw\":400000,\"pid\":1}\n", f);
    fclose(f);
    assert_int_equal(mb_powercap_recover(&pc, NULL, &err), MB_ESTATE);
    assert_non_null(strstr(err.msg, "GPU-other"));
    /* A damaged record names its field. */
    f = fopen(ledger, "w");
    assert_non_null(f);
    fputs("{\"uuid\":\"GPU-x\",\"original_mw\":0,\"set_mw\":400000,\"pid\":1}\n", f);
    fclose(f);
    assert_int_equal(mb_powercap_recover(&pc, NULL, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "original_mw"));
    unlink(ledger);
    mb_device_close(dev);
}

/* The helper stands in for a site's privileged one: it records its argv and writes the limit into
 * the emulator's state file (what the real one would do through NVML as root). */
static void test_helper(void **st)
{
    (void)st;
    char helper[300], args[300];
    snprintf(helper, sizeof(helper), "%s/helper.sh", dir);
    snprintf(args, sizeof(args), "%s/helper.args", dir);
    FILE *f = fopen(helper, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\nprintf '%%s|' \"$@\" >>'%s'\n"
            "[ \"$3\" = 111111 ] && exit 3\n"
            "exec python3 -c 'import json,sys; p=sys.argv[1]; s=json.load(open(p)); "
            "s[\"power_limit_mw\"]=int(sys.argv[2]); json.dump(s, open(p, \"w\"))' '%s' \"$3\"\n",
            args, state);
    fclose(f);
    chmod(helper, 0755);
    struct mb_device *dev = open_ok(spec);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, NULL), MB_OK);
    struct mb_powercap pc = {dev, ledger, helper};
    struct mb_error err;
    uint32_t enforced = 0;
    assert_int_equal(mb_powercap_set(&pc, 450000, &enforced, &err), MB_OK);
    assert_int_equal(enforced, 450000);
    assert_int_equal(mb_powercap_restore(&pc, NULL, &err), MB_OK);
    assert_int_equal(limit_of(dev), 700000);
    assert_int_equal(mb_powercap_set(&pc, 111111, NULL, &err), MB_EPERM);
    assert_non_null(strstr(err.msg, "exit status 3"));
    assert_false(exists(ledger));
    char want[512], got[512] = "";
    snprintf(want, sizeof(want), "set|%s|450000|set|%s|700000|set|%s|111111|", info.uuid, info.uuid,
             info.uuid);
    f = fopen(args, "r");
    assert_non_null(f);
    assert_non_null(fgets(got, sizeof(got), f));
    fclose(f);
    assert_string_equal(got, want);
    mb_device_close(dev);
}

static void test_paths_and_text(void **st)
{
    (void)st;
    char p[512];
    struct mb_error err;
    assert_int_equal(mb_powercap_ledger_path("emu:H100-80GB:mig=on,state=/x/g.json", "GPU-1", NULL,
                                             p, sizeof(p), &err),
                     MB_OK);
    assert_string_equal(p, "/x/g.json.powercap.json");
    assert_int_equal(mb_powercap_ledger_path("emu:H100-80GB", "GPU-1", NULL, p, sizeof(p), &err),
                     MB_EUNSUPPORTED);
    assert_int_equal(mb_powercap_ledger_path("nvml:0", "GPU-a/b", "/s", p, sizeof(p), &err), MB_OK);
    assert_string_equal(p, "/s/powercap-GPU-a_b.json");
    assert_int_equal(mb_powercap_ledger_path("nvml:0", "GPU-a", NULL, p, sizeof(p), &err), MB_OK);
    assert_string_equal(p, "/var/lib/migbench/powercap-GPU-a.json");
    assert_int_equal(mb_powercap_ledger_path("nvml:0", "GPU-a", "/s", p, 8, &err), MB_ERANGE);

    struct mb_power_setting ps;
    char buf[32];
    assert_int_equal(mb_power_setting_parse("default", &ps, &err), MB_OK);
    assert_int_equal(ps.kind, MB_PSET_DEFAULT);
    assert_string_equal(ps.text, "default");
    assert_int_equal(mb_power_setting_parse("80%", &ps, &err), MB_OK);
    assert_true(ps.kind == MB_PSET_PERCENT && ps.value == 80);
    mb_power_setting_format(&ps, MB_PSET_CANONICAL, buf, sizeof(buf));
    assert_string_equal(buf, "80%");
    mb_power_setting_format(&ps, MB_PSET_SLUG, buf, sizeof(buf));
    assert_string_equal(buf, "80pct");
    assert_int_equal(mb_power_setting_parse("250W", &ps, &err), MB_OK);
    assert_true(ps.kind == MB_PSET_WATTS && ps.value == 250);
    struct mb_power_setting bare;
    assert_int_equal(mb_power_setting_parse("250", &bare, &err), MB_OK);
    assert_true(bare.kind == MB_PSET_WATTS && bare.value == 250);
    /* The user's spelling is kept for the records; the two ask for the same limit. */
    assert_string_equal(bare.text, "250");
    assert_true(mb_power_setting_same(&ps, &bare));
    mb_power_setting_format(&bare, MB_PSET_CANONICAL, buf, sizeof(buf));
    assert_string_equal(buf, "250W");
    assert_int_equal(mb_power_setting_parse("120%", &ps, &err), MB_EINVAL);
    assert_int_equal(ps.kind, MB_PSET_NONE);
    assert_int_equal(mb_power_setting_parse("250kW", &ps, &err), MB_EINVAL);
    assert_int_equal(mb_power_setting_parse("-5W", &ps, &err), MB_EINVAL);
    assert_int_equal(mb_power_setting_parse("", &ps, &err), MB_EINVAL);
    assert_int_equal(mb_power_setting_parse("250.0000000000000000000W", &ps, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "longer than"));

    struct mb_power_limit pl = {.valid = MB_PL_RANGE | MB_PL_DEFAULT,
                                .min_mw = 200000,
                                .max_mw = 700000,
                                .default_mw = 700000};
    uint32_t mw;
    struct mb_power_setting pct80 = {MB_PSET_PERCENT, 80, "80%"};
    struct mb_power_setting def = {MB_PSET_DEFAULT, 0, "default"};
    struct mb_power_setting w250 = {MB_PSET_WATTS, 250, "250W"};
    struct mb_power_setting w150 = {MB_PSET_WATTS, 150, "150W"};
    struct mb_power_setting pct20 = {MB_PSET_PERCENT, 20, "20%"};
    struct mb_power_setting none = {MB_PSET_NONE, 0, ""};
    assert_int_equal(mb_powercap_resolve(&pct80, &pl, &mw, &err), MB_OK);
    assert_int_equal(mw, 560000);
    assert_int_equal(mb_powercap_resolve(&def, &pl, &mw, &err), MB_OK);
    assert_int_equal(mw, 700000);
    assert_int_equal(mb_powercap_resolve(&w250, &pl, &mw, &err), MB_OK);
    assert_int_equal(mw, 250000);
    assert_int_equal(mb_powercap_resolve(&w150, &pl, &mw, &err), MB_ERANGE);
    assert_non_null(strstr(err.msg, "200..700 W"));
    assert_int_equal(mb_powercap_resolve(&pct20, &pl, &mw, &err), MB_ERANGE);
    assert_int_equal(mb_powercap_resolve(&none, &pl, &mw, &err), MB_EINVAL);
    pl.valid = MB_PL_LIMIT;
    assert_int_equal(mb_powercap_resolve(&def, &pl, &mw, &err), MB_EUNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_and_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_leave_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_helper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paths_and_text, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
