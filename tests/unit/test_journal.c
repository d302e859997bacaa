/* SPDX-License-Identifier: Apache-2.0 */
/* The journal (append, torn lines, leftovers, shared by threads) and atomic result files.
 * Starts threads: MB_TEST_THREADS. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/journal_events.h"
#include "results/results_json.h"
#include "migbench/results.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mb-test-journal-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void append_event(struct mb_journal *j, const char *name, int gi, int ci)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", name);
    cJSON_AddStringToObject(o, "gpu_uuid", "GPU-1");
    if (gi >= 0)
        cJSON_AddNumberToObject(o, "gi_id", gi);
    if (ci >= 0)
        cJSON_AddNumberToObject(o, "ci_id", ci);
    if (strcmp(name, "mig_created") == 0 && ci < 0) {
        cJSON_AddStringToObject(o, "profile", "3g.40gb");
        cJSON *pl = cJSON_AddObjectToObject(o, "placement");
        cJSON_AddNumberToObject(pl, "start", 4);
        cJSON_AddNumberToObject(pl, "size", 4);
    }
    struct mb_error err;
    assert_int_equal(mb_journal_append(j, o, &err), MB_OK);
    assert_non_null(cJSON_GetObjectItem(o, "t_unix"));
    cJSON_Delete(o);
}

static void test_append_and_read(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    struct mb_journal *j;
    struct mb_error err;
    assert_int_equal(mb_journal_open(path, &j, &err), MB_OK);
    /* One writer at a time. */
    struct mb_journal *j2;
    assert_int_equal(mb_journal_open(path, &j2, &err), MB_EBUSY);
    assert_null(j2);
    assert_non_null(strstr(err.msg, "in use by another migbench run"));
    append_event(j, "experiment_started", -1, -1);
    append_event(j, "cell_started", -1, -1);
    /* A string with a newline stays on one line. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "cell_failed");
    cJSON_AddStringToObject(o, "reason", "line one\nline two");
    assert_int_equal(mb_journal_append(j, o, &err), MB_OK);
    cJSON_Delete(o);
    /* Not an event. */
    o = cJSON_CreateObject();
    assert_int_equal(mb_journal_append(j, o, &err), MB_EINVAL);
    cJSON_Delete(o);
    mb_journal_close(j);

    cJSON *events;
    size_t skipped;
    assert_int_equal(mb_journal_read(path, &events, &skipped, &err), MB_OK);
    assert_int_equal(cJSON_GetArraySize(events), 3);
    assert_int_equal(skipped, 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(events, 2), "reason")->valuestring,
                        "line one\nline two");
    cJSON_Delete(events);

    char missing[160];
    snprintf(missing, sizeof(missing), "%s/none.jsonl", dir);
    assert_int_equal(mb_journal_read(missing, &events, &skipped, &err), MB_ENOTFOUND);
    assert_null(events);
}

static void test_torn_line(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/torn.jsonl", dir);
    struct mb_journal *j;
    struct mb_error err;
    assert_int_equal(mb_journal_open(path, &j, &err), MB_OK);
    append_event(j, "cell_started", -1, -1);
    mb_journal_close(j);
    /* A crash in the middle of a write leaves half a line. */
    FILE *f = fopen(path, "a");
    fputs("{\"event\":\"mig_created\",\"gi_", f);
    fclose(f);
    cJSON *events;
    size_t skipped;
    assert_int_equal(mb_journal_read(path, &events, &skipped, &err), MB_OK);
    assert_int_equal(cJSON_GetArraySize(events), 1);
    assert_int_equal(skipped, 1);
    cJSON_Delete(events);
    /* Reopening repairs the tail so that the next event is whole. */
    assert_int_equal(mb_journal_open(path, &j, &err), MB_OK);
    append_event(j, "cell_finished", -1, -1);
    mb_journal_close(j);
    assert_int_equal(mb_journal_read(path, &events, &skipped, &err), MB_OK);
    assert_int_equal(cJSON_GetArraySize(events), 2);
    assert_int_equal(skipped, 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(events, 1), "event")->valuestring,
                        "cell_finished");
    cJSON_Delete(events);
    /* Lines that are JSON but not events are skipped too. */
    f = fopen(path, "a");
    fputs("[1,2]\n\n{\"no_event\":1}\n", f);
    fclose(f);
    assert_int_equal(mb_journal_read(path, &events, &skipped, &err), MB_OK);
    assert_int_equal(cJSON_GetArraySize(events), 2);
    assert_int_equal(skipped, 3);
    cJSON_Delete(events);
}

/* A failing write or fsync is reported, never ignored. */
static void test_write_failure(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    struct mb_journal *j;
    struct mb_error err;
    assert_int_equal(mb_journal_open("/dev/full", &j, &err), MB_OK);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "cell_started");
    assert_int_equal(mb_journal_append(j, o, &err), MB_EIO);
    assert_non_null(strstr(err.msg, "cannot write journal"));
    cJSON_Delete(o);
    mb_journal_close(j);
    char path[128];
    snprintf(path, sizeof(path), "%s/nodir/journal.jsonl", dir);
    assert_int_equal(mb_journal_open(path, &j, &err), MB_EIO);
    assert_null(j);
}

static void test_leftovers(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/left.jsonl", dir);
    struct mb_journal *j;
    struct mb_error err;
    assert_int_equal(mb_journal_open(path, &j, &err), MB_OK);
    append_event(j, "mig_created", 1, -1); /* GI 1 */
    append_event(j, "mig_created", 1, 0);  /* its CI 0 */
    append_event(j, "mig_created", 2, -1);
    append_event(j, "mig_created", 2, 0);
    append_event(j, "mig_destroyed", 2, 0); /* GI 2 fully removed */
    append_event(j, "mig_destroyed", 2, -1);
    append_event(j, "mig_created", 5, -1); /* GI 5 created, CI never */
    /* A current run's instance names its ledger: the ledger's to clean, not a journal leftover. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "mig_created");
    cJSON_AddStringToObject(o, "gpu_uuid", "GPU-1");
    cJSON_AddNumberToObject(o, "gi_id", 7);
    cJSON_AddStringToObject(o, "ledger", "/var/lib/migbench/owned-GPU-1.json");
    assert_int_equal(mb_journal_append(j, o, &err), MB_OK);
    cJSON_Delete(o);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "mps_started");
    cJSON_AddNumberToObject(o, "pid", 4242);
    cJSON_AddStringToObject(o, "pipe_dir", "/r/mps/pipe");
    cJSON_AddStringToObject(o, "log_dir", "/r/mps/log");
    mb_journal_append(j, o, &err);
    cJSON_Delete(o);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "mps_started");
    cJSON_AddStringToObject(o, "pipe_dir", "/r/mps2/pipe");
    mb_journal_append(j, o, &err);
    cJSON_Delete(o);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "mps_stopped");
    cJSON_AddStringToObject(o, "pipe_dir", "/r/mps2/pipe");
    mb_journal_append(j, o, &err);
    cJSON_Delete(o);
    mb_journal_close(j);

    cJSON *events;
    size_t skipped;
    assert_int_equal(mb_journal_read(path, &events, &skipped, &err), MB_OK);
    struct mb_leftovers *l = malloc(sizeof(*l));
    assert_int_equal(mb_journal_leftovers(events, l, &err), MB_OK);
    assert_int_equal(l->n_mig, 2);
    assert_int_equal(l->mig[0].gi_id, 1);
    assert_true(l->mig[0].has_ci);
    assert_int_equal(l->mig[0].ci_id, 0);
    assert_string_equal(l->mig[0].profile, "3g.40gb");
    assert_int_equal(l->mig[0].placement.start, 4);
    assert_int_equal(l->mig[0].placement.size, 4);
    assert_string_equal(l->mig[0].gpu_uuid, "GPU-1");
    assert_int_equal(l->mig[1].gi_id, 5);
    assert_false(l->mig[1].has_ci);
    assert_int_equal(l->n_mps, 1);
    assert_int_equal(l->mps[0].pid, 4242);
    assert_string_equal(l->mps[0].pipe_dir, "/r/mps/pipe");
    free(l);
    cJSON_Delete(events);
}

static int count_entries(const char *d)
{
    DIR *dp = opendir(d);
    assert_non_null(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)))
        if (e->d_name[0] != '.')
            n++;
    closedir(dp);
    return n;
}

/* Selections share a journal: sharers coexist, an owner and sharers exclude each other, and
 * lines appended by several processes at once stay whole. */
static void test_shared_journal(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/shared.jsonl", dir);
    struct mb_journal *a, *b, *owner;
    struct mb_error err;
    assert_int_equal(mb_journal_open_shared(path, &a, &err), MB_OK);
    assert_int_equal(mb_journal_open_shared(path, &b, &err), MB_OK);
    assert_int_equal(mb_journal_open(path, &owner, &err), MB_EBUSY);
    assert_null(owner);
    mb_journal_close(b);
    enum { WRITERS = 4, LINES = 200 };
    pid_t kids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        kids[w] = fork();
        assert_true(kids[w] >= 0);
        if (kids[w] == 0) {
            struct mb_journal *k;
            if (mb_journal_open_shared(path, &k, &err) != MB_OK)
                _exit(3);
            char pad[2048];
            memset(pad, 'a' + w, sizeof(pad) - 1);
            pad[sizeof(pad) - 1] = '\0';
            for (int i = 0; i < LINES; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "event", "tick");
                cJSON_AddStringToObject(o, "pad", pad);
                if (mb_journal_append(k, o, &err) != MB_OK)
                    _exit(4);
                cJSON_Delete(o);
            }
            mb_journal_close(k);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int st;
        assert_int_equal(waitpid(kids[w], &st, 0), kids[w]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    mb_journal_close(a);
    cJSON *ev;
    size_t skipped;
    assert_int_equal(mb_journal_read(path, &ev, &skipped, &err), MB_OK);
    assert_int_equal(skipped, 0);
    assert_int_equal(cJSON_GetArraySize(ev), WRITERS * LINES);
    cJSON_Delete(ev);
    /* With the sharers gone, an owner opens it, and then sharers are refused. */
    assert_int_equal(mb_journal_open(path, &owner, &err), MB_OK);
    assert_int_equal(mb_journal_open_shared(path, &b, &err), MB_EBUSY);
    mb_journal_close(owner);
}

/* A cell claimed by one invocation is busy for another until released. */
static void test_cell_claim(void **state)
{
    (void)state;
    struct mb_error err;
    int fd, fd2;
    assert_int_equal(mb_results_cell_claim(dir, "solo", 0, &fd, &err), MB_OK);
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0)
        _exit(mb_results_cell_claim(dir, "solo", 0, &fd2, &err) == MB_EBUSY ? 0 : 1);
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(mb_results_cell_claim(dir, "solo", 1, &fd2, &err), MB_OK);
    mb_results_cell_release(fd2);
    mb_results_cell_release(fd);
    kid = fork();
    assert_true(kid >= 0);
    if (kid == 0)
        _exit(mb_results_cell_claim(dir, "solo", 0, &fd2, &err) == MB_OK ? 0 : 1);
    assert_int_equal(waitpid(kid, &st, 0), kid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_atomic_cell(void **state)
{
    (void)state;
    char cdir[160], path[200];
    struct mb_error err;
    assert_int_equal(mb_results_cell_dir(dir, "mix-4-2-1", 3, cdir, sizeof(cdir), &err), MB_OK);
    assert_false(mb_results_cell_done(dir, "mix-4-2-1", 3));
    assert_int_equal(mb_results_mkdirs(cdir, 0755, &err), MB_OK);
    assert_int_equal(mb_results_mkdirs(cdir, 0755, &err), MB_OK); /* exists: fine */
    snprintf(path, sizeof(path), "%s/cell.json", cdir);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema", 1);
    cJSON_AddStringToObject(o, "status", "ok");
    assert_int_equal(mb_results_write_json(path, o, &err), MB_OK);
    assert_true(mb_results_cell_done(dir, "mix-4-2-1", 3));
    cJSON_ReplaceItemInObject(o, "status", cJSON_CreateString("failed"));
    assert_int_equal(mb_results_write_json(path, o, &err), MB_OK);
    cJSON_Delete(o);
    assert_int_equal(count_entries(cdir), 1); /* no temporary file left */
    cJSON *back;
    assert_int_equal(mb_results_read_json(path, 1 << 20, &back, &err), MB_OK);
    assert_string_equal(cJSON_GetObjectItem(back, "status")->valuestring, "failed");
    cJSON_Delete(back);
    /* A failed write leaves neither a file nor a temporary. */
    char bad[200];
    snprintf(bad, sizeof(bad), "%s/missing/cell.json", cdir);
    o = cJSON_CreateObject();
    assert_int_equal(mb_results_write_json(bad, o, &err), MB_EIO);
    cJSON_Delete(o);
    assert_int_equal(count_entries(cdir), 1);
    /* Reading: absent, too big, not JSON. */
    assert_int_equal(mb_results_read_json(bad, 100, &back, &err), MB_ENOTFOUND);
    assert_int_equal(mb_results_read_json(path, 5, &back, &err), MB_EIO);
    FILE *f = fopen(path, "w");
    fputs("{\"schema\": ", f);
    fclose(f);
    assert_int_equal(mb_results_read_json(path, 100, &back, &err), MB_EPARSE);
    /* A file where a directory is needed. */
    char clash[220];
    snprintf(clash, sizeof(clash), "%s/x", path);
    assert_int_equal(mb_results_mkdirs(clash, 0755, &err), MB_EIO);
}

/* The workers of a multi-GPU run append to one journal at once: every line arrives whole. */
struct appender {
    struct mb_journal *j;
    int id;
    int failures;
};

static void *append_many(void *arg)
{
    struct appender *a = arg;
    for (int i = 0; i < 200; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "cell_started");
        cJSON_AddNumberToObject(ev, "gpu", a->id);
        cJSON_AddNumberToObject(ev, "i", i);
        /* Long enough that a torn or interleaved write would show. */
        char pad[600];
        memset(pad, 'a' + a->id, sizeof(pad) - 1);
        pad[sizeof(pad) - 1] = '\0';
        cJSON_AddStringToObject(ev, "pad", pad);
        if (mb_journal_append(a->j, ev, NULL) != MB_OK)
            a->failures++;
        cJSON_Delete(ev);
    }
    return NULL;
}

static void test_shared_by_threads(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/threads.jsonl", dir);
    struct mb_journal *j = NULL;
    assert_int_equal(mb_journal_open(path, &j, NULL), MB_OK);
    pthread_t t[4];
    struct appender a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct appender){j, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, append_many, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    mb_journal_close(j);
    cJSON *events = NULL;
    size_t skipped = 9;
    assert_int_equal(mb_journal_read(path, &events, &skipped, NULL), MB_OK);
    assert_int_equal(skipped, 0);
    assert_int_equal(cJSON_GetArraySize(events), 800);
    int next[4] = {0};
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        int gpu = (int)cJSON_GetObjectItem(ev, "gpu")->valuedouble;
        /* Each worker's lines in its own order, its padding intact. */
        assert_int_equal((int)cJSON_GetObjectItem(ev, "i")->valuedouble, next[gpu]++);
        const char *pad = cJSON_GetObjectItem(ev, "pad")->valuestring;
        assert_int_equal(strspn(pad, (char[]){(char)('a' + gpu), 0}), 599);
    }
    cJSON_Delete(events);
}

/* Each kind's encoder and decoder agree, field by field (journal_events.h). */
static void test_event_codecs(void **state)
{
    (void)state;
    struct mb_jev e = mb_jev_init(MB_JEV_MIG_CREATED);
    e.run = "mix";
    e.rep = 2;
    e.gpu_uuid = "GPU-1";
    e.has_gi = true;
    e.gi_id = 3;
    e.profile = "3g.40gb";
    e.placement = (struct mb_placement){4, 4};
    e.ledger = "/s/owned.json";
    cJSON *o = mb_jev_encode(&e);
    assert_non_null(o);
    struct mb_jev d;
    assert_true(mb_jev_decode(o, &d));
    assert_int_equal(d.kind, MB_JEV_MIG_CREATED);
    assert_string_equal(d.event, "mig_created");
    assert_string_equal(d.run, "mix");
    assert_int_equal(d.rep, 2);
    assert_string_equal(d.gpu_uuid, "GPU-1");
    assert_true(d.has_gi && !d.has_ci);
    assert_int_equal(d.gi_id, 3);
    assert_string_equal(d.profile, "3g.40gb");
    assert_int_equal(d.placement.start, 4);
    assert_int_equal(d.placement.size, 4);
    assert_string_equal(d.ledger, "/s/owned.json");
    cJSON_Delete(o);

    e = mb_jev_init(MB_JEV_MIG_MODE_ORIGINAL);
    e.gpu_uuid = "GPU-2";
    e.device = "nvml:1";
    e.original_current = 0;
    e.original_pending = 1;
    e.mode = 0;
    o = mb_jev_encode(&e);
    assert_true(mb_jev_decode(o, &d));
    assert_int_equal(d.kind, MB_JEV_MIG_MODE_ORIGINAL);
    assert_int_equal(d.original_current, 0);
    assert_int_equal(d.original_pending, 1);
    assert_string_equal(d.device, "nvml:1");
    cJSON_Delete(o);

    e = mb_jev_init(MB_JEV_CLEANUP);
    e.what = "mig_ledger";
    e.removed = 2;
    e.ok = true;
    o = mb_jev_encode(&e);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "reason")));
    assert_true(mb_jev_decode(o, &d));
    assert_string_equal(d.what, "mig_ledger");
    assert_true(d.ok && d.removed == 2);
    cJSON_Delete(o);

    e = mb_jev_init(MB_JEV_CELL_FAILED);
    e.run = "r";
    e.rep = 0;
    e.gpu_uuid = "GPU-1";
    e.seconds = 1.5;
    e.reason = "job a: exited 1";
    o = mb_jev_encode(&e);
    assert_true(mb_jev_decode(o, &d));
    assert_int_equal(d.kind, MB_JEV_CELL_FAILED);
    assert_string_equal(d.reason, "job a: exited 1");
    assert_true(d.seconds == 1.5);
    cJSON_Delete(o);

    /* A line that is not an event, and an event of a kind this migbench does not know. */
    o = cJSON_Parse("{\"run\":\"x\"}");
    assert_false(mb_jev_decode(o, &d));
    cJSON_Delete(o);
    o = cJSON_Parse(
        "{\"event\":\"job_paused\",\"run\":\"x\",\"rep\":1,\"slurm\":{\"job\":\"7_1\"}}");
    assert_true(mb_jev_decode(o, &d));
    assert_int_equal(d.kind, MB_JEV_OTHER);
    assert_string_equal(d.slurm_job, "7_1");
    cJSON_Delete(o);
}

/* An event as one line of text (the caller frees it). */
static char *encode_line(const struct mb_jev *e)
{
    cJSON *o = mb_jev_encode(e);
    assert_non_null(o);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    assert_non_null(t);
    return t;
}

static void decode_line(const char *line, struct mb_jev *d, cJSON **keep)
{
    *keep = cJSON_Parse(line);
    assert_true(mb_jev_decode(*keep, d));
}

/* The events written for people (job_started, cooldown, power_limit_*): their documents as the
 * runner always wrote them, and each read back as its kind. */
static void test_written_kinds(void **state)
{
    (void)state;
    struct mb_jev e = mb_jev_init(MB_JEV_JOB_STARTED), d;
    e.run = "mix", e.rep = 1, e.job = "a-1", e.pid = 321, e.gpu_uuid = "GPU-1";
    char *t = encode_line(&e);
    assert_string_equal(t, "{\"event\":\"job_started\",\"run\":\"mix\",\"rep\":1,"
                           "\"job\":\"a-1\",\"pid\":321}");
    cJSON *o;
    decode_line(t, &d, &o);
    assert_int_equal(d.kind, MB_JEV_JOB_STARTED);
    assert_true(strcmp(d.job, "a-1") == 0 && d.pid == 321);
    cJSON_Delete(o);
    free(t);

    e = mb_jev_init(MB_JEV_COOLDOWN);
    e.run = "alone", e.rep = 0, e.job = "b";
    e.cooldown = (struct mb_cell_cooldown){.seconds = {1, 2.5},
                                           .ended = "near_idle",
                                           .reference = "idle_baseline",
                                           .reference_w = {1, 60},
                                           .power_w = {0, 0}};
    t = encode_line(&e);
    assert_string_equal(t, "{\"event\":\"cooldown\",\"run\":\"alone\",\"rep\":0,"
                           "\"before_job\":\"b\",\"seconds\":2.5,\"ended\":\"near_idle\","
                           "\"reference\":\"idle_baseline\",\"reference_w\":60,\"power_w\":null}");
    decode_line(t, &d, &o);
    assert_int_equal(d.kind, MB_JEV_COOLDOWN);
    assert_string_equal(d.job, "b");
    assert_true(d.cooldown.seconds.valid && d.cooldown.seconds.v == 2.5);
    assert_false(d.cooldown.power_w.valid);
    assert_string_equal(d.cooldown.ended, "near_idle");
    cJSON_Delete(o);
    free(t);

    e = mb_jev_init(MB_JEV_POWER_LIMIT_SET);
    e.run = "r.cap-80pct", e.rep = 0, e.requested = "80%", e.limit_mw = 560000;
    e.ledger = "/s/power.json";
    t = encode_line(&e);
    assert_string_equal(t,
                        "{\"event\":\"power_limit_set\",\"run\":\"r.cap-80pct\",\"rep\":0,"
                        "\"requested\":\"80%\",\"limit_mw\":560000,\"ledger\":\"/s/power.json\"}");
    decode_line(t, &d, &o);
    assert_int_equal(d.kind, MB_JEV_POWER_LIMIT_SET);
    assert_true(strcmp(d.requested, "80%") == 0 && d.limit_mw == 560000);
    cJSON_Delete(o);
    free(t);

    e = mb_jev_init(MB_JEV_POWER_LIMIT_RESTORED);
    e.run = "r.cap-80pct", e.rep = 0, e.outcome = "restored";
    t = encode_line(&e);
    assert_string_equal(t, "{\"event\":\"power_limit_restored\",\"run\":\"r.cap-80pct\","
                           "\"rep\":0,\"outcome\":\"restored\"}");
    decode_line(t, &d, &o);
    assert_int_equal(d.kind, MB_JEV_POWER_LIMIT_RESTORED);
    assert_string_equal(d.outcome, "restored");
    cJSON_Delete(o);
    free(t);
}

/* experiment_started through its encoder: the keys in the order the session always wrote them,
 * cell_indices only for a selection; its experiment_sha read back by the decoder. */
static void test_experiment_started(void **state)
{
    (void)state;
    struct mb_jev e = mb_jev_init(MB_JEV_EXPERIMENT_STARTED);
    char *ov[] = {"reps=2", "measure.window_s=5"};
    char *gpus[] = {"emu:h100,0", "emu:h100,1"};
    size_t idx[] = {3, 5};
    e.experiment = "mix";
    e.experiment_sha = "0123456789abcdef";
    e.file = "/x/mix.yaml";
    e.overrides = ov;
    e.n_overrides = 2;
    e.device = "emu:h100,0-1";
    e.gpus = gpus;
    e.n_gpus = 2;
    e.manage_mig_mode = true;
    e.backend = "emu";
    e.cells = 2;
    e.cell_indices = idx;
    e.n_cell_indices = 2;
    e.pid = 4242;
    e.version = "1.2.3";
    cJSON *o = mb_jev_encode(&e);
    char *text = cJSON_PrintUnformatted(o);
    assert_string_equal(
        text, "{\"event\":\"experiment_started\",\"experiment\":\"mix\",\"experiment_sha\":"
              "\"0123456789abcdef\",\"file\":\"/x/mix.yaml\",\"overrides\":[\"reps=2\","
              "\"measure.window_s=5\"],\"device\":\"emu:h100,0-1\",\"gpus\":[\"emu:h100,0\","
              "\"emu:h100,1\"],\"manage_mig_mode\":true,\"backend\":\"emu\",\"cells\":2,"
              "\"cell_indices\":[3,5],\"resume\":false,\"pid\":4242,\"migbench_version\":"
              "\"1.2.3\"}");
    free(text);
    struct mb_jev d;
    assert_true(mb_jev_decode(o, &d));
    assert_int_equal(d.kind, MB_JEV_EXPERIMENT_STARTED);
    assert_string_equal(d.experiment_sha, "0123456789abcdef");
    cJSON_Delete(o);
    e.cell_indices = NULL; /* the whole experiment */
    o = mb_jev_encode(&e);
    assert_null(cJSON_GetObjectItemCaseSensitive(o, "cell_indices"));
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_read),   cmocka_unit_test(test_torn_line),
        cmocka_unit_test(test_event_codecs),      cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_leftovers),         cmocka_unit_test(test_atomic_cell),
        cmocka_unit_test(test_shared_journal),    cmocka_unit_test(test_cell_claim),
        cmocka_unit_test(test_shared_by_threads), cmocka_unit_test(test_experiment_started),
        cmocka_unit_test(test_written_kinds),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
