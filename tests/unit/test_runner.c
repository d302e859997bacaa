/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cell runner through its library API: MPS start/stop with a fake nvidia-cuda-mps-control on
 * PATH that records what it is asked (the nvml backend is stood in for by an emulated GPU), and
 * --resume's cleanup, which must remove what the journal names and nothing else.
 * MB_TEST_THREADS: the runner's meter samples on its own thread.
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/results_json.h"
#include "migbench/device.h"
#include "migbench/experiment.h"
#include "migbench/results.h"
#include "migbench/runner.h"

static char dir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-runner-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A stand-in nvidia-cuda-mps-control first on PATH that logs its argv, environment and
 * stdin to log (cap bytes). */
static void install_fake_mps(char *log, size_t cap)
{
    char bindir[128], fake[160], path_env[4096];
    snprintf(bindir, sizeof(bindir), "%s/bin", dir);
    mkdir(bindir, 0755);
    snprintf(fake, sizeof(fake), "%s/nvidia-cuda-mps-control", bindir);
    snprintf(log, cap, "%s/mps.log", dir);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "echo \"argv:$*\" >>'%s'\n"
            "echo \"pipe:$CUDA_MPS_PIPE_DIRECTORY log:$CUDA_MPS_LOG_DIRECTORY\" >>'%s'\n"
            "[ \"$1\" = -d ] && exit 0\n"
            "while read -r cmd; do echo \"stdin:$cmd\" >>'%s'; done\n",
            log, log, log);
    fclose(f);
    chmod(fake, 0755);
    snprintf(path_env, sizeof(path_env), "%s:%s", bindir, getenv("PATH"));
    setenv("PATH", path_env, 1);
}

/* The jobs of res's cell m/0 got their percentages (4 and 3 of 7 compute slices) and the pipe
 * directory. */
static void check_mps_jobs(const char *res, const char *pipe_dir)
{
    struct mb_error err;
    char cpath[200];
    snprintf(cpath, sizeof(cpath), "%s/m/0/cell.json", res);
    cJSON *c;
    assert_int_equal(mb_results_read_json(cpath, 1 << 20, &c, &err), MB_OK);
    cJSON *jobs = cJSON_GetObjectItem(c, "jobs");
    cJSON *j0 = cJSON_GetArrayItem(jobs, 0), *j1 = cJSON_GetArrayItem(jobs, 1);
    cJSON *env0 = cJSON_GetObjectItem(j0, "env");
    assert_string_equal(cJSON_GetObjectItem(env0, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")->valuestring,
                        "57");
    assert_string_equal(cJSON_GetObjectItem(env0, "CUDA_MPS_PIPE_DIRECTORY")->valuestring,
                        pipe_dir);
    assert_int_equal(cJSON_GetObjectItem(j1, "thread_percentage")->valueint, 43);
    cJSON *mps = cJSON_GetObjectItem(c, "mps");
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(mps, "thread_percentage"), 1)->valueint,
                     43);
    cJSON_Delete(c);
}

static void test_mps_cell(void **state)
{
    (void)state;
    char log[160], res[128], yaml[4096];
    install_fake_mps(log, sizeof(log));
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: mps\nworkloads:\n"
             "  a: {command: [\"%s/fixtures/fx_steady\", --rate, \"20\", --duration, \"30\"]}\n"
             "runs:\n"
             "  - {name: m, mode: mps, jobs: [a, a], match_layout: [4g.40gb, 3g.40gb]}\n"
             "measure: {warmup: 100ms, duration: 600ms, grace: 1s, progress_timeout: 5s}\n",
             MB_BINARY_DIR);
    struct mb_error err;
    struct mb_experiment *exp;
    assert_int_equal(mb_experiment_parse("mps.yaml", yaml, strlen(yaml), NULL, 0, &exp, &err),
                     MB_OK);
    const char *spec = "emu:H100-80GB";
    struct mb_device *dev;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    snprintf(res, sizeof(res), "%s/res", dir);
    assert_int_equal(mb_results_mkdirs(res, 0755, &err), MB_OK);
    char jpath[160];
    snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", res);
    struct mb_journal *j;
    assert_int_equal(mb_journal_open(jpath, &j, &err), MB_OK);
    volatile sig_atomic_t stop = 0;
    struct mb_runner_opts o = {
        .exp = exp,
        .dev = dev,
        .device_spec = spec,
        .results_dir = res,
        .workloads_dir = "/nonexistent",
        .journal = j,
        .stop = &stop,
    };
    struct mb_cell cell = {0, 0};
    bool failed = true;
    int rc = mb_runner_run_cell(&o, &cell, &failed, &err);
    if (rc != MB_OK)
        fail_msg("%s", err.msg);
    assert_false(failed);
    mb_journal_close(j);

    /* The daemon was started with private directories and told to quit through stdin. */
    char *l = slurp(log);
    assert_non_null(l);
    char want[512];
    snprintf(want, sizeof(want), "argv:-d\npipe:%s/mps/m-0/pipe log:%s/mps/m-0/log\n", res, res);
    assert_non_null(strstr(l, want));
    assert_non_null(strstr(l, "argv:\n"));
    assert_non_null(strstr(l, "stdin:quit\n"));
    assert_true(strstr(l, "argv:-d") < strstr(l, "stdin:quit"));
    free(l);
    char pipe_dir[200];
    snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps/m-0/pipe", res);
    struct stat st;
    assert_int_equal(stat(pipe_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    check_mps_jobs(res, pipe_dir);

    /* The journal records the daemon's start and stop, so nothing is left outstanding. */
    cJSON *events;
    size_t skipped;
    assert_int_equal(mb_journal_read(jpath, &events, &skipped, &err), MB_OK);
    struct mb_leftovers *left = malloc(sizeof(*left));
    assert_int_equal(mb_journal_leftovers(events, left, &err), MB_OK);
    assert_int_equal(left->n_mps, 0);
    free(left);
    cJSON_Delete(events);

    /* Preflight: an emulated GPU runs mps (without a daemon when the NVIDIA utilities are not
     * there, see run_emu.sh); the host cannot. */
    assert_int_equal(mb_runner_preflight(&o, &cell, 1, &err), MB_OK);
    struct mb_device *host;
    assert_int_equal(mb_device_open("host", &host, &err), MB_OK);
    o.dev = host;
    assert_int_equal(mb_runner_preflight(&o, &cell, 1, &err), MB_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "nvml backend"));
    mb_device_close(host);
    mb_device_close(dev);
    mb_experiment_destroy(exp);
}

static void test_cleanup_only_ours(void **state)
{
    (void)state;
    struct mb_error err;
    char spec[200];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on:state=%s/gpu.json", dir);
    struct mb_device *dev;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    struct mb_device_info info;
    assert_int_equal(mb_device_info(dev, &info, &err), MB_OK);
    struct mb_device_profile prof[MB_MAX_PROFILES];
    size_t n = 0;
    assert_int_equal(mb_device_mig_profiles(dev, prof, MB_MAX_PROFILES, &n, &err), MB_OK);
    unsigned id3 = 0, id1 = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(prof[i].name, "3g.40gb") == 0)
            id3 = prof[i].driver_id;
        if (strcmp(prof[i].name, "1g.10gb") == 0)
            id1 = prof[i].driver_id;
    }
    /* Ours (per the journal): a 3g.40gb at slice 0 with its CI. Someone else's: a 1g.10gb. */
    struct mb_placement p0 = {0, 4}, p6 = {6, 1};
    unsigned gi_ours, ci_ours, gi_theirs;
    assert_int_equal(mb_device_mig_create_gi(dev, id3, &p0, &gi_ours, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi_ours, -1, &ci_ours, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_gi(dev, id1, &p6, &gi_theirs, &err), MB_OK);

    struct mb_leftovers *left = calloc(1, sizeof(*left));
    left->n_mig = 2;
    snprintf(left->mig[0].gpu_uuid, sizeof(left->mig[0].gpu_uuid), "%s", info.uuid);
    left->mig[0].gi_id = gi_ours;
    left->mig[0].has_ci = true;
    left->mig[0].ci_id = ci_ours;
    snprintf(left->mig[0].profile, sizeof(left->mig[0].profile), "3g.40gb");
    left->mig[0].placement = p0;
    /* The journal says the dead run made a 2g.20gb under gi_theirs's id: the id was reused. */
    left->mig[1] = left->mig[0];
    left->mig[1].gi_id = gi_theirs;
    left->mig[1].has_ci = false;
    snprintf(left->mig[1].profile, sizeof(left->mig[1].profile), "2g.20gb");
    left->mig[1].placement = (struct mb_placement){4, 2};

    char jpath[160];
    snprintf(jpath, sizeof(jpath), "%s/cleanup.jsonl", dir);
    struct mb_journal *j;
    assert_int_equal(mb_journal_open(jpath, &j, &err), MB_OK);
    volatile sig_atomic_t stop = 0;
    struct mb_runner_opts o = {
        .dev = dev, .device_spec = spec, .journal = j, .stop = &stop, .results_dir = dir};
    size_t outstanding = 0;
    assert_int_equal(mb_runner_mig_leftovers(&o, left, &outstanding, &err), MB_OK);
    assert_int_equal(outstanding, 1); /* the reused id is not adopted */
    size_t removed = 0;
    assert_int_equal(mb_runner_cleanup(&o, left, &removed, &err), MB_OK);
    assert_int_equal(removed, 1);
    mb_journal_close(j);

    struct mb_mig_instance cur[32];
    assert_int_equal(mb_device_mig_instances(dev, cur, 32, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(cur[0].gi_id, gi_theirs);

    /* Afterwards the journal has nothing outstanding. */
    cJSON *events;
    size_t skipped;
    assert_int_equal(mb_journal_read(jpath, &events, &skipped, &err), MB_OK);
    assert_int_equal(mb_journal_leftovers(events, left, &err), MB_OK);
    assert_int_equal(left->n_mig, 0);
    cJSON_Delete(events);
    free(left);
    mb_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mps_cell),
        cmocka_unit_test(test_cleanup_only_ours),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
