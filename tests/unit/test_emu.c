/* SPDX-License-Identifier: Apache-2.0 */
/* The emulated MIG GPU: NVML's MIG rules and codes, ids, UUIDs, state files, the power model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/emu.h"
#include "migbench/device.h"

#define MIB (1024ull * 1024ull)

static struct mb_device *open_ok(const char *spec)
{
    struct mb_device *dev = NULL;
    struct mb_error err;
    mb_error_clear(&err);
    int rc = mb_device_open(spec, &dev, &err);
    if (rc != MB_OK)
        fail_msg("open %s: %s", spec, err.msg);
    return dev;
}

static int open_rc(const char *spec, struct mb_error *err)
{
    struct mb_device *dev = NULL;
    int rc = mb_device_open(spec, &dev, err);
    mb_device_close(dev);
    return rc;
}

static unsigned create_gi(struct mb_device *dev, unsigned profile, int start, unsigned size)
{
    struct mb_error err;
    unsigned id = 999;
    struct mb_placement pl = {(unsigned)start, size};
    int rc = mb_device_mig_create_gi(dev, profile, start < 0 ? NULL : &pl, &id, &err);
    if (rc != MB_OK)
        fail_msg("create_gi %u: %s", profile, err.msg);
    return id;
}

static int create_gi_rc(struct mb_device *dev, unsigned profile, int start, unsigned size,
                        struct mb_error *err)
{
    unsigned id;
    struct mb_placement pl = {(unsigned)start, size};
    return mb_device_mig_create_gi(dev, profile, start < 0 ? NULL : &pl, &id, err);
}

static void get_instances(struct mb_device *dev, struct mb_mig_instance *out, size_t *n)
{
    struct mb_error err;
    int rc = mb_device_mig_instances(dev, out, MB_MAX_MIG_INSTANCES, n, &err);
    if (rc != MB_OK)
        fail_msg("instances: %s", err.msg);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct mb_error err;
    assert_int_equal(open_rc("emu", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "model is required"));
    assert_int_equal(open_rc("emu:NoSuchGPU", &err), MB_ENOTFOUND);
    assert_int_equal(open_rc("emu:H100-80GB:bogus=1", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "bogus"));
    assert_int_equal(open_rc("emu:H100-80GB:load=2", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:mig=maybe", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:idle_w=500:max_w=100", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:fail=create_gi:x:busy", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:fail=frob:1:busy", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:fail=create_gi:1:nonsense", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:trace=/nonexistent/trace.csv", &err), MB_EIO);
    assert_int_equal(open_rc("emu:H100-80GB:trace=/dev/null:load=0.5", &err), MB_EINVAL);
}

static void test_identity(void **state)
{
    (void)state;
    struct mb_device *a = open_ok("emu:H100-80GB");
    struct mb_device *b = open_ok("emu:h100-sxm5-80gb");
    struct mb_device *c = open_ok("emu:H100-80GB:index=1");
    struct mb_device_info ia, ib, ic;
    struct mb_error err;
    assert_int_equal(mb_device_info(a, &ia, &err), MB_OK);
    assert_int_equal(mb_device_info(b, &ib, &err), MB_OK);
    assert_int_equal(mb_device_info(c, &ic, &err), MB_OK);
    assert_string_equal(ia.backend, "emu");
    assert_string_equal(mb_device_backend(a), "emu");
    assert_true(ia.emulated);
    assert_true(ia.mig_capable);
    uint32_t caps = mb_device_caps(a);
    assert_true(caps & MB_CAP_EMULATED);
    assert_true(caps & MB_CAP_GPU);
    assert_true(caps & MB_CAP_MIG);
    assert_false(caps & MB_CAP_CPU_PARTITIONS);
    assert_string_equal(ia.model, "H100-SXM5-80GB");
    assert_string_equal(ia.name, "NVIDIA H100 80GB HBM3");
    assert_memory_equal(ia.uuid, "GPU-", 4);
    assert_int_equal(strlen(ia.uuid), 4 + 36);
    assert_string_equal(ia.uuid, ib.uuid); /* stable across opens and aliases */
    assert_string_not_equal(ia.uuid, ic.uuid);
    assert_int_equal(ic.index, 1);
    assert_true(ia.mem_total_valid);
    assert_true(ia.mem_total_bytes > 80000ull * MIB);
    mb_device_close(a);
    mb_device_close(b);
    mb_device_close(c);
}

/* Each emulated GPU has its own UUID: from its state file (the same file, named relatively or
 * absolutely, is the same GPU), else from its spec's options. */
static void test_uuid_per_gpu(void **state)
{
    (void)state;
    char cwd[512], abs_a[700], spec[800];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(abs_a, sizeof(abs_a), "%s/mb-uuid-a-%ld.json", cwd, (long)getpid());
    const char *specs[4] = {"emu:H100-80GB", "emu:H100-80GB:state=/tmp/mb-uuid-b.json",
                            "emu:H100-80GB:load=0.5", NULL};
    char uuids[5][MB_UUID_MAX];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=%s", abs_a);
    specs[3] = spec;
    for (int i = 0; i < 4; i++) {
        struct mb_device *d = open_ok(specs[i]);
        struct mb_device_info info;
        assert_int_equal(mb_device_info(d, &info, NULL), MB_OK);
        snprintf(uuids[i], sizeof(uuids[i]), "%s", info.uuid);
        mb_device_close(d);
    }
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            assert_string_not_equal(uuids[i], uuids[k]);
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=mb-uuid-a-%ld.json", (long)getpid());
    struct mb_device *d = open_ok(spec);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(d, &info, NULL), MB_OK);
    assert_string_equal(info.uuid, uuids[3]);
    mb_device_close(d);
    unlink(abs_a);
    unlink("/tmp/mb-uuid-b.json");
    char lock[720];
    snprintf(lock, sizeof(lock), "%s.lock", abs_a);
    unlink(lock);
    unlink("/tmp/mb-uuid-b.json.lock");
}

static void test_mig_mode_pending(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:A100-40GB");
    struct mb_error err;
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_OK);
    assert_int_equal(m.current, 0);
    assert_int_equal(m.pending, 0);
    /* MIG operations on a disabled GPU fail as NVML's NOT_SUPPORTED does. */
    assert_int_equal(create_gi_rc(dev, 19, -1, 0, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "disabled"));
    struct mb_device_profile prof[MB_MAX_PROFILES];
    size_t n;
    assert_int_equal(mb_device_mig_profiles(dev, prof, MB_MAX_PROFILES, &n, &err), MB_EUNSUPPORTED);
    /* Placements are listed whatever the mode (NVML does the same). */
    struct mb_placement pl[MB_MAX_PLACEMENTS];
    assert_int_equal(mb_device_mig_placements(dev, 9, pl, MB_MAX_PLACEMENTS, &n, &err), MB_OK);
    assert_int_equal(n, 2);
    assert_int_equal(pl[0].start, 0);
    assert_int_equal(pl[0].size, 4);
    assert_int_equal(pl[1].start, 4);
    assert_int_equal(mb_device_mig_placements(dev, 9, pl, 1, &n, &err), MB_ERANGE);
    assert_int_equal(n, 2);
    assert_int_equal(mb_device_mig_placements(dev, 77, pl, MB_MAX_PLACEMENTS, &n, &err), MB_EINVAL);

    /* Enabling is pending until a reset. */
    assert_int_equal(mb_device_mig_set_mode(dev, 1, &err), MB_OK);
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_OK);
    assert_int_equal(m.current, 0);
    assert_int_equal(m.pending, 1);
    assert_int_equal(create_gi_rc(dev, 19, -1, 0, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "reset"));
    assert_int_equal(mb_device_mig_set_mode(dev, 2, &err), MB_EINVAL);
    assert_int_equal(mb__emu_reset(dev, &err), MB_OK);
    assert_int_equal(mb_device_mig_mode(dev, &m, &err), MB_OK);
    assert_int_equal(m.current, 1);
    assert_int_equal(m.pending, 1);
    create_gi(dev, 19, -1, 0);
    /* Disabling while GPU instances exist is refused (NVML: IN_USE). */
    assert_int_equal(mb_device_mig_set_mode(dev, 0, &err), MB_EBUSY);
    mb_device_close(dev);
}

static void test_auto_placement_and_ids(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:mig=on");
    struct mb_error err;
    /* mig-geometry.md §8.3: H100 7x1g lands at 6,4,5,0,1,2,3; GI id = 7 + start (§8.2). */
    static const unsigned want_start[] = {6, 4, 5, 0, 1, 2, 3};
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(create_gi(dev, 19, -1, 0), 7 + want_start[i]);
    assert_int_equal(create_gi_rc(dev, 19, -1, 0, &err), MB_ENORESOURCES);
    struct mb_device_profile prof[MB_MAX_PROFILES];
    size_t n;
    assert_int_equal(mb_device_mig_profiles(dev, prof, MB_MAX_PROFILES, &n, &err), MB_OK);
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(prof[i].remaining, 0);
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    get_instances(dev, inst, &n);
    assert_int_equal(n, 7);
    assert_int_equal(inst[0].gi_id, 7);
    assert_int_equal(inst[0].placement.start, 0);
    assert_false(inst[0].has_ci);
    assert_string_equal(inst[0].uuid, "");
    mb_device_close(dev);
}

static void test_placement_rules(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:mig=on");
    struct mb_error err;
    /* Not a placement of 3g (valid starts 0 and 4, size 4): INVALID_ARGUMENT. */
    assert_int_equal(create_gi_rc(dev, 9, 2, 4, &err), MB_EINVAL);
    assert_int_equal(create_gi_rc(dev, 9, 4, 3, &err), MB_EINVAL);
    assert_int_equal(create_gi_rc(dev, 12345, -1, 0, &err), MB_EINVAL);
    assert_int_equal(create_gi(dev, 9, 4, 4), 2); /* second half -> GI 2 */
    /* Overlap: INSUFFICIENT_RESOURCES. */
    assert_int_equal(create_gi_rc(dev, 9, 4, 4, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "overlaps"));
    assert_int_equal(create_gi_rc(dev, 19, 5, 1, &err), MB_ENORESOURCES);
    assert_int_equal(create_gi(dev, 5, 0, 4), 1); /* 4g at 0:4 -> GI 1 */
    /* 4 + 3 compute slices: the GPU is full. */
    assert_int_equal(create_gi_rc(dev, 19, -1, 0, &err), MB_ENORESOURCES);
    assert_int_equal(mb_device_mig_destroy_gi(dev, 1, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, 1, &err), MB_ENOTFOUND);
    /* Double-memory 1g at 2:2 -> quarter id 3 + 1 = 4; 2g automatic goes to 0:2 -> GI 3. */
    assert_int_equal(create_gi(dev, 15, 2, 2), 4);
    assert_int_equal(create_gi(dev, 14, -1, 0), 3);
    /* Max count: 2g has 3, but no 2-slice room is left now. */
    assert_int_equal(create_gi_rc(dev, 14, -1, 0, &err), MB_ENORESOURCES);
    /* 7g needs the whole GPU. */
    assert_int_equal(create_gi_rc(dev, 0, 0, 8, &err), MB_ENORESOURCES);
    mb_device_close(dev);
}

static void test_max_counts_and_me(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:A30:mig=on");
    struct mb_error err;
    /* A30: 1g.6gb+me (21) and 2g.12gb+me (6); only one +me instance per GPU. */
    unsigned me = create_gi(dev, 21, 0, 1);
    assert_int_equal(me, 3); /* A30: quarters are 3..6 */
    assert_int_equal(create_gi_rc(dev, 6, 2, 2, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "+me"));
    /* Max GPU instances 4 on A30: three more 1g fill it. */
    create_gi(dev, 14, -1, 0);
    create_gi(dev, 14, -1, 0);
    create_gi(dev, 14, -1, 0);
    assert_int_equal(create_gi_rc(dev, 14, -1, 0, &err), MB_ENORESOURCES);
    mb_device_close(dev);

    dev = open_ok("emu:H100-80GB:mig=on");
    /* Max count: 4g.40gb has max_count 1 even though 4:4 is not one of its placements. */
    create_gi(dev, 5, -1, 0);
    assert_int_equal(create_gi_rc(dev, 5, -1, 0, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "maximum"));
    create_gi(dev, 20, -1, 0); /* 1g+me */
    assert_int_equal(create_gi_rc(dev, 20, -1, 0, &err), MB_ENORESOURCES);
    struct mb_device_profile prof[MB_MAX_PROFILES];
    size_t n;
    assert_int_equal(mb_device_mig_profiles(dev, prof, MB_MAX_PROFILES, &n, &err), MB_OK);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(prof[i].name, "1g.10gb") == 0)
            assert_int_equal(prof[i].remaining, 2); /* 4:4 holds the 4g; 1g at 7 is invalid */
        if (strcmp(prof[i].name, "3g.40gb") == 0)
            assert_int_equal(prof[i].remaining, 0);
    }
    assert_int_equal(mb_device_mig_profiles(dev, prof, 2, &n, &err), MB_ERANGE);
    assert_int_equal(n, 7);
    mb_device_close(dev);
}

static void test_compute_instances(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:mig=on");
    struct mb_error err;
    unsigned gi = create_gi(dev, 9, 0, 4);
    assert_int_equal(gi, 1);
    unsigned ci = 99;
    /* 4c is not a CI option of a 3g GI. */
    assert_int_equal(mb_device_mig_create_ci(dev, gi, 3, &ci, &err), MB_EINVAL);
    assert_int_equal(mb_device_mig_create_ci(dev, 14, -1, &ci, &err), MB_ENOTFOUND);
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(mb_device_mig_create_ci(dev, gi, 0, &ci, &err), MB_OK);
        assert_int_equal(ci, k);
    }
    assert_int_equal(mb_device_mig_create_ci(dev, gi, 0, &ci, &err), MB_ENORESOURCES);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_ENORESOURCES);
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n;
    get_instances(dev, inst, &n);
    assert_int_equal(n, 3);
    assert_true(inst[1].has_ci);
    assert_int_equal(inst[1].ci_id, 1);
    assert_int_equal(inst[1].ci_slices, 1);
    assert_memory_equal(inst[1].uuid, "MIG-", 4);
    assert_string_not_equal(inst[0].uuid, inst[1].uuid);
    char uuid1[MB_UUID_MAX];
    memcpy(uuid1, inst[1].uuid, sizeof(uuid1));
    /* A GI with compute instances cannot be destroyed (NVML: IN_USE). */
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "compute instance"));
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi, 7, &err), MB_ENOTFOUND);
    for (unsigned k = 0; k < 3; k++)
        assert_int_equal(mb_device_mig_destroy_ci(dev, gi, k, &err), MB_OK);
    /* Default CI: the whole GI (3c, CI profile id 2). */
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    get_instances(dev, inst, &n);
    assert_int_equal(n, 1);
    assert_int_equal(inst[0].ci_profile_id, 2);
    assert_int_equal(inst[0].ci_slices, 3);
    assert_int_equal(inst[0].mem_total_bytes, 40448ull * MIB);
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_OK);

    /* The same GI and CI ids give the same MIG UUID in a new process. */
    struct mb_device *again = open_ok("emu:H100-80GB:mig=on");
    assert_int_equal(create_gi(again, 9, 0, 4), 1);
    assert_int_equal(mb_device_mig_create_ci(again, 1, 0, &ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(again, 1, 0, &ci, &err), MB_OK);
    get_instances(again, inst, &n);
    assert_string_equal(inst[1].uuid, uuid1);
    mb_device_close(again);

    /* The double-memory 1g uses CI profile 7 on Hopper. */
    unsigned g2 = create_gi(dev, 15, 6, 2);
    assert_int_equal(g2, 6);
    assert_int_equal(mb_device_mig_create_ci(dev, g2, -1, &ci, &err), MB_OK);
    get_instances(dev, inst, &n);
    assert_int_equal(inst[0].ci_profile_id, 7);
    mb_device_close(dev);
}

static void test_processes(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:mig=on");
    struct mb_error err;
    unsigned gi = create_gi(dev, 14, 0, 2), ci;
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    assert_int_equal(mb__emu_attach_process(dev, 100, -1, -1, MIB, "x", &err), MB_EINVAL);
    assert_int_equal(mb__emu_attach_process(dev, 100, (int)gi, 5, MIB, "x", &err), MB_ENOTFOUND);
    assert_int_equal(mb__emu_attach_process(dev, 100, (int)gi, (int)ci, 30000 * MIB, "x", &err),
                     MB_ENORESOURCES);
    assert_int_equal(mb__emu_attach_process(dev, 100, (int)gi, (int)ci, 1000 * MIB, "train", &err),
                     MB_OK);
    assert_int_equal(mb__emu_attach_process(dev, 100, (int)gi, (int)ci, MIB, "dup", &err),
                     MB_EINVAL);
    struct mb_process procs[4];
    size_t n;
    assert_int_equal(mb_device_processes(dev, procs, 4, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(procs[0].pid, 100);
    assert_int_equal(procs[0].gi_id, (int)gi);
    assert_int_equal(procs[0].ci_id, (int)ci);
    assert_int_equal(procs[0].used_mem_bytes, 1000 * MIB);
    assert_string_equal(procs[0].name, "train");
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi, ci, &err), MB_EBUSY);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "process"));
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    get_instances(dev, inst, &n);
    assert_int_equal(inst[0].mem_used_bytes, 1000 * MIB);
    /* Activity: a GI with a process is busy, one without is idle (Hopper has GPM). */
    struct mb_mig_activity act;
    assert_int_equal(mb_device_mig_activity(dev, gi, &act, &err), MB_OK);
    assert_true(act.valid & MB_ACT_SM_UTIL);
    assert_true(act.sm_util_pct > 99.0);
    unsigned idle_gi = create_gi(dev, 19, -1, 0);
    assert_int_equal(mb_device_mig_activity(dev, idle_gi, &act, &err), MB_OK);
    assert_true(act.sm_util_pct == 0.0);
    assert_int_equal(mb_device_mig_activity(dev, 14, &act, &err), MB_ENOTFOUND);
    assert_int_equal(mb__emu_detach_process(dev, 100, &err), MB_OK);
    assert_int_equal(mb__emu_detach_process(dev, 100, &err), MB_ENOTFOUND);
    assert_int_equal(mb_device_mig_destroy_ci(dev, gi, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_OK);
    mb_device_close(dev);

    /* No GPM before Hopper. */
    dev = open_ok("emu:A100-40GB:mig=on");
    gi = create_gi(dev, 19, -1, 0);
    assert_int_equal(mb_device_mig_activity(dev, gi, &act, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);

    /* MIG disabled: processes run on the whole GPU, utilisation is reported. */
    dev = open_ok("emu:H100-80GB");
    assert_int_equal(mb__emu_attach_process(dev, 7, 0, 0, MIB, NULL, &err), MB_EINVAL);
    assert_int_equal(mb__emu_attach_process(dev, 7, -1, -1, MIB, NULL, &err), MB_OK);
    assert_int_equal(mb__emu_reset(dev, &err), MB_EBUSY);
    mb_device_close(dev);
}

static char tmpdir[64];

static int setup_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/mb-test-emu-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
    (void)state;
    /* The directory is flat: remove its files, then it. */
    DIR *d = opendir(tmpdir);
    if (!d)
        return -1;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", tmpdir, e->d_name);
        unlink(path);
    }
    closedir(d);
    return rmdir(tmpdir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_state_file_shared(void **state)
{
    (void)state;
    char spec[256];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on:state=%s/gpu.json", tmpdir);
    struct mb_device *a = open_ok(spec);
    struct mb_device *b = open_ok(spec);
    struct mb_error err;
    unsigned gi = create_gi(a, 9, 4, 4), ci;
    assert_int_equal(mb_device_mig_create_ci(b, gi, -1, &ci, &err), MB_OK);
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES];
    size_t n;
    get_instances(a, inst, &n);
    assert_int_equal(n, 1);
    assert_true(inst[0].has_ci);
    assert_int_equal(mb__emu_attach_process(a, 42, (int)gi, (int)ci, MIB, "job", &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_ci(b, gi, ci, &err), MB_EBUSY);
    assert_int_equal(mb__emu_detach_process(b, 42, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_ci(b, gi, ci, &err), MB_OK);
    assert_int_equal(mb_device_mig_destroy_gi(b, gi, &err), MB_OK);
    get_instances(a, inst, &n);
    assert_int_equal(n, 0);
    mb_device_close(a);
    mb_device_close(b);

    /* The file outlives the handles; "mig=off" does not reset an existing GPU. */
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=%s/gpu.json", tmpdir);
    a = open_ok(spec);
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(a, &m, &err), MB_OK);
    assert_int_equal(m.current, 1);
    mb_device_close(a);

    /* A state file of another model, and a corrupt one, are refused. */
    snprintf(spec, sizeof(spec), "emu:A100-40GB:state=%s/gpu.json", tmpdir);
    assert_int_equal(open_rc(spec, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "H100"));
    char path[128];
    snprintf(path, sizeof(path), "%s/bad.json", tmpdir);
    write_file(path, "{\"model\": \"H100-SXM5-80GB\", \"mig_current\": 7}");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=%s", path);
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "mig_current"));
    write_file(path, "not json");
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    /* Well-formed JSON that describes an impossible GPU is refused too. */
    write_file(path, "{\"model\": \"H100-SXM5-80GB\", \"mig_current\": 1, \"mig_pending\": 1,"
                     " \"gpu_instances\": [{\"id\": 2, \"profile_id\": 9, \"start\": 4, "
                     "\"size\": 4}, {\"id\": 13, \"profile_id\": 19, \"start\": 6, \"size\": 1}]}");
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "overlap"));
    write_file(path, "{\"model\": \"H100-SXM5-80GB\", \"mig_current\": 1, \"mig_pending\": 1,"
                     " \"gpu_instances\": [{\"id\": 2, \"profile_id\": 9, \"start\": 2, "
                     "\"size\": 4}]}");
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "not a placement"));
    write_file(path, "{\"model\": \"H100-SXM5-80GB\", \"mig_current\": 0, \"mig_pending\": 0,"
                     " \"processes\": [{\"pid\": 1, \"gi\": 3, \"ci\": 0, \"mem_bytes\": 0}]}");
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "processes"));
}

static uint64_t energy(struct mb_device *dev)
{
    struct mb_telemetry t;
    struct mb_error err;
    if (mb_device_telemetry(dev, &t, &err) != MB_OK)
        fail_msg("telemetry: %s", err.msg);
    assert_true(t.valid & MB_TEL_ENERGY);
    return t.energy_mj;
}

static void advance(struct mb_device *dev, double s)
{
    struct mb_error err;
    assert_int_equal(mb__emu_advance(dev, (int64_t)(s * 1e9 + 0.5), &err), MB_OK);
}

static void test_energy_constant(void **state)
{
    (void)state;
    struct mb_device *dev =
        open_ok("emu:H100-80GB:clock=manual:idle_w=100:max_w=300:load=0.5:energy0_mj=1000");
    assert_int_equal(energy(dev), 1000);
    advance(dev, 2.5);
    assert_int_equal(energy(dev), 1000 + 500000); /* 200 W for 2.5 s */
    struct mb_telemetry t;
    struct mb_error err;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_mw, 200000);
    assert_int_equal(t.power_limit_mw, 300000);
    assert_true(t.valid & MB_TEL_UTIL_GPU); /* MIG disabled */
    assert_int_equal(t.util_gpu_pct, 50);
    assert_true(t.valid & MB_TEL_TEMP);
    /* The monotonic clock is not advanced by hand. */
    struct mb_device *mono = open_ok("emu:H100-80GB");
    assert_int_equal(mb__emu_advance(mono, 1, &err), MB_ESTATE);
    mb_device_close(mono);
    mb_device_close(dev);
}

static void test_energy_traces(void **state)
{
    (void)state;
    char path[128], spec[256];
    snprintf(path, sizeof(path), "%s/ramp.csv", tmpdir);
    write_file(path, "# t_seconds,watts\n0,0\n10,100\n");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:clock=manual:trace=%s", path);
    struct mb_device *dev = open_ok(spec);
    advance(dev, 5);
    assert_int_equal(energy(dev), 125000); /* integral of 10t from 0 to 5 */
    advance(dev, 5);
    assert_int_equal(energy(dev), 500000);
    advance(dev, 10);
    assert_int_equal(energy(dev), 1500000); /* holds 100 W after the last point */
    mb_device_close(dev);

    snprintf(path, sizeof(path), "%s/step.csv", tmpdir);
    write_file(path, "0,100\n4,100\n4.5,300\n10,300\n");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:clock=manual:trace=%s", path);
    dev = open_ok(spec);
    advance(dev, 10);
    assert_int_equal(energy(dev), 2150000); /* 400 + 100 + 1650 J */
    mb_device_close(dev);

    /* Bad traces name the file, the line and the field. */
    struct mb_error err;
    snprintf(path, sizeof(path), "%s/bad.csv", tmpdir);
    write_file(path, "0,100\n5,abc\n");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:trace=%s", path);
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "bad.csv:2"));
    assert_non_null(strstr(err.msg, "watts"));
    write_file(path, "5,100\n5,100\n");
    assert_int_equal(open_rc(spec, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "increase"));
}

static void test_energy_wrap_and_none(void **state)
{
    (void)state;
    struct mb_device *dev =
        open_ok("emu:H100-80GB:clock=manual:idle_w=100:max_w=100:energy0_mj=90000:wrap_mj=100000");
    struct mb_sensor_info s;
    struct mb_error err;
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_int_equal(s.energy_wrap_mj, 100000);
    assert_int_equal(energy(dev), 90000);
    advance(dev, 0.25); /* +25 J -> 115000 mJ, wrapped */
    assert_int_equal(energy(dev), 15000);
    mb_device_close(dev);

    dev = open_ok("emu:H100-80GB:counter=none");
    struct mb_telemetry t;
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_false(t.valid & MB_TEL_ENERGY);
    assert_true(t.valid & MB_TEL_POWER);
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_false(s.has_energy_counter);
    assert_non_null(strstr(s.source, "emulated"));
    mb_device_close(dev);

    /* A counter that publishes every 100 ms. */
    dev = open_ok("emu:H100-80GB:clock=manual:idle_w=100:max_w=100:energy_update_ms=100");
    advance(dev, 0.15);
    assert_int_equal(energy(dev), 10000);
    advance(dev, 0.04);
    assert_int_equal(energy(dev), 10000);
    advance(dev, 0.01);
    assert_int_equal(energy(dev), 20000);
    mb_device_close(dev);
}

static void test_sensor_semantics(void **state)
{
    (void)state;
    char path[128], spec[256];
    snprintf(path, sizeof(path), "%s/jump.csv", tmpdir);
    write_file(path, "0,100\n1,100\n1.001,300\n");
    snprintf(spec, sizeof(spec), "emu:H100-80GB:clock=manual:trace=%s", path);
    struct mb_device *dev = open_ok(spec);
    struct mb_sensor_info s;
    struct mb_error err;
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);
    assert_int_equal(s.power_update_period_ms, 100);
    assert_int_equal(s.power_avg_window_ms, 1000);
    assert_true(s.has_instant);
    assert_true(s.has_average);
    struct mb_telemetry t;
    advance(dev, 1.05);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_mw, 100000); /* published at 1.0 s: the step is not seen yet */
    advance(dev, 0.1);                    /* 1.15 s: published at 1.1 over [0.1, 1.1] */
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_mw, 119900);
    assert_int_equal(t.power_avg_mw, 119900);
    assert_int_equal(t.power_instant_mw, 300000); /* 25 ms boxcar over [1.075, 1.1] */
    advance(dev, 0.049);                          /* 1.199 s: same update period */
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(t.power_mw, 119900);
    mb_device_close(dev);

    /* A100: an instant reading only (no averaged field on GA100). */
    dev = open_ok("emu:A100-40GB");
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_INSTANT);
    assert_int_equal(s.power_avg_window_ms, 25);
    assert_false(s.has_average);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_false(t.valid & MB_TEL_POWER_AVG);
    mb_device_close(dev);

    /* The sensor facts come from the catalog: GB200's scope is the Grace module, as for nvml. */
    dev = open_ok("emu:GB200");
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_string_equal(s.scope, "module (GPU+CPU)");
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);
    mb_device_close(dev);
    /* A --catalog model without a sensor entry: the emulator's generic sensor, unverified. */
    snprintf(path, sizeof(path), "%s/cat.json", tmpdir);
    write_file(path, "{\"X-TEST\": {\"compute_slices\": 1, \"memory_slices\": 1,"
                     " \"max_gpu_instances\": 1, \"profiles\": [{\"name\": \"1g.1gb\","
                     " \"nvml_profile_id\": 0, \"nvidia_smi_profile_id\": 19,"
                     " \"compute_slices\": 1, \"memory_slices\": 1, \"max_count\": 1,"
                     " \"placements\": [[0,1]]}]}}");
    snprintf(spec, sizeof(spec), "emu:X-TEST:catalog=%s", path);
    dev = open_ok(spec);
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_int_equal(s.power_kind, MB_POWER_AVERAGED);
    assert_int_equal(s.power_avg_window_ms, 1000);
    assert_string_equal(s.scope, "board");
    mb_device_close(dev);
    /* An option that changes the kind takes the window of that kind, not the catalog's. */
    dev = open_ok("emu:A100-40GB:sensor=averaged");
    assert_int_equal(mb_device_sensor(dev, &s, &err), MB_OK);
    assert_int_equal(s.power_avg_window_ms, 1000);
    mb_device_close(dev);

    /* MIG enabled: utilisation is unsupported, never 0. */
    dev = open_ok("emu:H100-80GB:mig=on");
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_false(t.valid & MB_TEL_UTIL_GPU);
    assert_false(t.valid & MB_TEL_UTIL_MEM);
    mb_device_close(dev);
}

static void test_load_follows_processes(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:mig=on:clock=manual:idle_w=70:max_w=700");
    struct mb_error err;
    unsigned gi = create_gi(dev, 0, 0, 8), ci;
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    advance(dev, 1);
    assert_int_equal(energy(dev), 70000);
    assert_int_equal(mb__emu_attach_process(dev, 9, (int)gi, (int)ci, MIB, "job", &err), MB_OK);
    advance(dev, 1);
    assert_int_equal(energy(dev), 70000 + 700000);
    assert_int_equal(mb__emu_detach_process(dev, 9, &err), MB_OK);
    advance(dev, 2);
    assert_int_equal(energy(dev), 770000 + 140000);
    mb_device_close(dev);
}

static void test_faults(void **state)
{
    (void)state;
    struct mb_device *dev = open_ok("emu:H100-80GB:fail=create_gi:2:noresources:mig=on,"
                                    "fail=mig_destroy_gi:1:in_use");
    struct mb_error err;
    unsigned a = create_gi(dev, 19, -1, 0);
    assert_int_equal(create_gi_rc(dev, 19, -1, 0, &err), MB_ENORESOURCES);
    assert_non_null(strstr(err.msg, "injected"));
    create_gi(dev, 19, -1, 0);
    assert_int_equal(mb_device_mig_destroy_gi(dev, a, &err), MB_EBUSY);
    assert_int_equal(mb_device_mig_destroy_gi(dev, a, &err), MB_OK);
    mb_device_close(dev);

    dev = open_ok("emu:H100-80GB:lost_after=3");
    struct mb_device_info info;
    struct mb_telemetry t;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_OK);
    assert_int_equal(mb_device_telemetry(dev, &t, &err), MB_EGONE);
    assert_int_equal(mb_device_info(dev, &info, &err), MB_EGONE);
    mb_device_close(dev);
}

static void expect_mode(struct mb_device *dev, int current, int pending)
{
    struct mb_mig_mode m;
    assert_int_equal(mb_device_mig_mode(dev, &m, NULL), MB_OK);
    assert_int_equal(m.current, current);
    assert_int_equal(m.pending, pending);
}

/* Activation (NVML's unbind/reset of an idle GPU): only with no process, holder or instance. */
static void test_mig_switch_mode(void **state)
{
    (void)state;
    char spec[256];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:state=%s/switch.json", tmpdir);
    struct mb_device *dev = open_ok(spec);
    struct mb_error err;
    mb_error_clear(&err);
    /* A process on the GPU: busy, with its PID; the mode stays pending, in the state file too. */
    assert_int_equal(mb__emu_attach_process(dev, 5150, -1, -1, MIB, "train", &err), MB_OK);
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "5150"));
    assert_non_null(strstr(err.msg, "pending"));
    struct mb_device *other = open_ok(spec);
    expect_mode(other, 0, 1);
    mb_device_close(other);
    assert_int_equal(mb__emu_detach_process(dev, 5150, &err), MB_OK);
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_OK);
    expect_mode(dev, 1, 1);
    /* Instances are in the way of disabling. */
    unsigned gi = create_gi(dev, 19, -1, 0);
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "GPU instances exist"));
    expect_mode(dev, 1, 1);
    assert_int_equal(mb_device_mig_destroy_gi(dev, gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_OK);
    expect_mode(dev, 0, 0);
    /* Asking for the current mode is a no-op success. */
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_OK);
    assert_int_equal(mb_device_mig_switch_mode(dev, 3, &err), MB_EINVAL);
    mb_device_close(dev);

    /* Clients that hold the GPU without being compute processes. */
    dev = open_ok("emu:A100-40GB:busy=77+78");
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EBUSY);
    assert_non_null(strstr(err.msg, "77, 78"));
    expect_mode(dev, 0, 1);
    struct mb_process ps[4];
    size_t n = 9;
    assert_int_equal(mb_device_processes(dev, ps, 4, &n, &err), MB_OK);
    assert_int_equal(n, 0);
    mb_device_close(dev);

    /* A passthrough VM: the reset cannot be done here. */
    dev = open_ok("emu:H100-80GB:mig=on:reset=unavailable");
    assert_int_equal(mb_device_mig_switch_mode(dev, 0, &err), MB_ERESET_REQUIRED);
    assert_non_null(strstr(err.msg, "reboot"));
    expect_mode(dev, 1, 0);
    mb_device_close(dev);

    /* Injected failures reach it like any operation. */
    dev = open_ok("emu:H100-80GB:fail=mig_switch_mode:1:perm");
    assert_int_equal(mb_device_mig_switch_mode(dev, 1, &err), MB_EPERM);
    expect_mode(dev, 0, 0);
    mb_device_close(dev);

    assert_int_equal(open_rc("emu:H100-80GB:busy=x", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:busy=1+", &err), MB_OK);
    assert_int_equal(open_rc("emu:H100-80GB:reset=maybe", &err), MB_EINVAL);
    assert_int_equal(open_rc("emu:H100-80GB:count=2", &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "mb_device_spec_expand"));
    assert_int_equal(open_rc("emu:H100-80GB:count=1", &err), MB_OK);
}

/* emu:MODEL:count=N: N GPUs, each with its own index, UUID and state file. */
static void test_spec_expand(void **state)
{
    (void)state;
    char spec[256], want[512];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:count=4,mig=on,state=%s/node.json,index=2", tmpdir);
    struct mb_device_spec_list l = {0};
    struct mb_error err;
    assert_int_equal(mb_device_spec_expand(spec, &l, &err), MB_OK);
    assert_int_equal(l.n, 4);
    snprintf(want, sizeof(want), "emu:H100-80GB:index=2,state=%s/node.2.json,mig=on", tmpdir);
    assert_string_equal(l.specs[0], want);
    char uuids[4][MB_UUID_MAX];
    for (size_t i = 0; i < l.n; i++) {
        struct mb_device *dev = open_ok(l.specs[i]);
        struct mb_device_info info;
        assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
        assert_int_equal(info.index, 2 + i);
        snprintf(uuids[i], sizeof(uuids[i]), "%s", info.uuid);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(uuids[k], uuids[i]);
        /* An instance on this GPU lands in its own state file only. */
        create_gi(dev, 19, -1, 0);
        mb_device_close(dev);
        char path[256];
        snprintf(path, sizeof(path), "%s/node.%zu.json", tmpdir, 2 + i);
        assert_int_equal(access(path, R_OK), 0);
    }
    mb_device_spec_list_free(&l);
    assert_int_equal(l.n, 0);

    /* Options with ':' inside survive; a spec without count is returned as it is. */
    assert_int_equal(
        mb_device_spec_expand("emu:A100-40GB:count=2,fail=create_gi:2:noresources", &l, &err),
        MB_OK);
    assert_string_equal(l.specs[1], "emu:A100-40GB:index=1,fail=create_gi:2:noresources");
    mb_device_close(open_ok(l.specs[1]));
    mb_device_spec_list_free(&l);
    assert_int_equal(mb_device_spec_expand("emu:A100-40GB:mig=on", &l, &err), MB_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.specs[0], "emu:A100-40GB:mig=on");
    mb_device_spec_list_free(&l);
    assert_int_equal(mb_device_spec_expand("host", &l, &err), MB_OK);
    assert_string_equal(l.specs[0], "host");
    mb_device_spec_list_free(&l);

    assert_int_equal(mb_device_spec_expand("emu:H100-80GB:count=0", &l, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "count=0"));
    assert_int_equal(mb_device_spec_expand("emu:H100-80GB:count=65", &l, &err), MB_EINVAL);
    assert_int_equal(mb_device_spec_expand("emu:H100-80GB:count=8,index=60", &l, &err), MB_EINVAL);
    assert_int_equal(l.n, 0);
    assert_int_equal(mb_device_spec_expand("", &l, &err), MB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_uuid_per_gpu),
        cmocka_unit_test(test_mig_mode_pending),
        cmocka_unit_test(test_auto_placement_and_ids),
        cmocka_unit_test(test_placement_rules),
        cmocka_unit_test(test_max_counts_and_me),
        cmocka_unit_test(test_compute_instances),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_state_file_shared),
        cmocka_unit_test(test_energy_constant),
        cmocka_unit_test(test_energy_traces),
        cmocka_unit_test(test_energy_wrap_and_none),
        cmocka_unit_test(test_sensor_semantics),
        cmocka_unit_test(test_load_follows_processes),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_mig_switch_mode),
        cmocka_unit_test(test_spec_expand),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
