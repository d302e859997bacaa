/* SPDX-License-Identifier: Apache-2.0 */
/* Experiment sessions: open an experiment on a device, select cells, run them (session.h). */
#define _DEFAULT_SOURCE /* readlink */
#include "results/journal_events.h"
#include "results/results_json.h"
#include "migbench/session.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "migbench/powercap.h"
#include "mig/migmode.h"
#include "run/multirun.h"
#include "results/cell.h"
#include "run/selection.h"
#include "migbench/results.h"

struct mb_session;

/* A worker's context for the runner's events on several GPUs. */
struct gpu_ev {
    struct mb_session *s;
    size_t gpu;
};

struct mb_session {
    struct mb_visible vis; /* CUDA_VISIBLE_DEVICES resolved (follow_visible) */
    const struct mb_experiment *exp;
    struct mb_session_opts o;
    struct mb_catalog *cat;
    struct mb_device *dev;
    struct mb_device_info info;
    uint32_t caps;
    const struct mb_gpu_model *model;
    struct mb_cell *all; /* every cell for this device, in experiment order */
    size_t n_all;
    struct mb_cell *mode_all; /* the cells before the GPU's MIG mode removed n_mode_skipped */
    size_t n_mode_all, n_mode_skipped;
    struct mb_cell *sel; /* the selection */
    size_t *sel_index;   /* its positions in all */
    size_t n_sel;
    bool selected; /* a selection was given */
    bool shared;   /* the journal is shared with other selections (no --resume) */
    bool checked;  /* mb_session_check passed */
    char dir[PATH_MAX];
    char jpath[PATH_MAX + 32];
    char python[MB_EXP_PATH_MAX];
    char wdir[PATH_MAX];
    cJSON *events; /* the journal read for resume; NULL otherwise */
    struct mb_journal *journal;
    struct mb_runner_power power;
    struct mb_runner_opts ro;
    char ledger[PATH_MAX]; /* the power-limit record; "" when limits cannot be set here */
    const char *helper;    /* MIGBENCH_POWER_HELPER, or NULL */
    /* Every GPU of the session; gpus[0] is dev, and gro[0] differs from ro only in its events. */
    struct mb_device_spec_list specs;
    size_t n_gpus;
    struct mb_device *gpus[MB_MAX_DEVICES];
    struct mb_device_info ginfo[MB_MAX_DEVICES];
    struct mb_runner_power gpower[MB_MAX_DEVICES];
    struct mb_runner_opts gro[MB_MAX_DEVICES];
    struct gpu_ev gev[MB_MAX_DEVICES];
    pthread_mutex_t lock; /* the callbacks, from the workers */
    /* run_node on one GPU without MIG-mode phases (serial): a progress event per cell with the
     * estimate of the cells after it, errors and the interruption named by cell. */
    bool serial;
    const double *est, *est_after; /* per selected cell, while run_node runs */
    size_t last_cell;              /* serial: the cell the queue took last */
};

static void say(struct mb_session *s, enum mb_session_event_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct mb_session *s, enum mb_session_event_kind kind, const char *fmt, ...)
{
    if (!s->o.on_event)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct mb_session_event ev = {.kind = kind, .text = text, .n_cells = s->n_sel};
    s->o.on_event(s->o.ctx, &ev);
}

/* ---- accessors ------------------------------------------------------------------------------ */

size_t mb_session_cells(const struct mb_session *s, const struct mb_cell **cells,
                        const size_t **index)
{
    if (cells)
        *cells = s->sel;
    if (index)
        *index = s->sel_index;
    return s->n_sel;
}

const struct mb_experiment *mb_session_experiment(const struct mb_session *s)
{
    return s->exp;
}

size_t mb_session_gpus(const struct mb_session *s)
{
    return s->n_gpus;
}

struct mb_device *mb_session_device(const struct mb_session *s)
{
    return s->dev;
}

uint32_t mb_session_caps(const struct mb_session *s)
{
    return s->caps;
}

const struct mb_gpu_model *mb_session_model(const struct mb_session *s)
{
    return s->model;
}

size_t mb_session_mig_mode_cells(const struct mb_session *s, const struct mb_cell **cells,
                                 size_t *n_cells)
{
    if (cells)
        *cells = s->mode_all;
    if (n_cells)
        *n_cells = s->n_mode_all;
    return s->n_mode_skipped;
}

const struct mb_device_info *mb_session_device_info(const struct mb_session *s)
{
    return &s->info;
}

const char *mb_session_results_dir(const struct mb_session *s)
{
    return s->dir;
}

/* ---- estimates and tools -------------------------------------------------------------------- */

double mb_session_cell_estimate(const struct mb_experiment *exp, const struct mb_exp_run *r,
                                bool *unknown)
{
    const struct mb_exp_measure *m = &exp->measure;
    double per_job = 0;
    if (m->warmup.kind == MB_AMOUNT_TIME)
        per_job += (double)m->warmup.ns / 1e9;
    else
        *unknown = true;
    if (m->duration.kind == MB_AMOUNT_TIME)
        per_job += (double)m->duration.ns / 1e9;
    else if (m->duration.kind == MB_AMOUNT_STABLE)
        per_job += (double)m->max_duration_ns / 1e9; /* the cap: an upper bound */
    else
        *unknown = true;
    double phases = r->mode == MB_MODE_EXCLUSIVE ? (double)r->n_jobs : 1.0;
    double sec = (double)m->idle_ns / 1e9 + phases * per_job + (double)m->cooldown_ns / 1e9;
    if (r->mode == MB_MODE_EXCLUSIVE && r->n_jobs > 1)
        sec += (double)(r->n_jobs - 1) * (double)m->cooldown_ns / 1e9;
    return sec + 0.5; /* the random start offset averages half a second */
}

/*
 * Finds {workloads}: $MIGBENCH_WORKLOADS, else <dir of this executable>/../workloads (a build
 * tree), else ../share/migbench/workloads (an installed prefix).
 */
static void workloads_dir(char *out, size_t cap)
{
    const char *env = getenv("MIGBENCH_WORKLOADS");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(out, cap, "workloads");
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%.*s/../workloads", (int)(cap > 16 ? cap - 16 : 0), exe);
    char installed[PATH_MAX + 40];
    int m = snprintf(installed, sizeof(installed), "%s/../share/migbench/workloads", exe);
    if (m > 0 && (size_t)m < cap && access(out, F_OK) != 0 && access(installed, F_OK) == 0)
        memcpy(out, installed, (size_t)m + 1);
}

static bool needs_python(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct mb_exp_run *r = &exp->runs[cells[i].run];
        for (size_t j = 0; j < r->n_jobs; j++) {
            const struct mb_exp_workload *w = &exp->workloads[r->job_workload[j]];
            for (size_t k = 0; k < w->n_command; k++)
                if (strstr(w->command[k], "{python}"))
                    return true;
        }
    }
    return false;
}

int mb_session_resolve_tools(const struct mb_experiment *exp, const struct mb_cell *cells, size_t n,
                             char *python, size_t python_cap, char *wdir, size_t wdir_cap,
                             struct mb_error *err)
{
    python[0] = '\0';
    if (needs_python(exp, cells, n) &&
        mb_experiment_resolve_python(exp, NULL, python, python_cap, err) != MB_OK)
        return mb_error_restatus(err, MB_EINVAL);
    workloads_dir(wdir, wdir_cap);
    return MB_OK;
}

/* ---- opening -------------------------------------------------------------------------------- */

/*
 * MIG mode decides what a GPU can run without a reset, and migbench never resets a GPU: mig runs
 * need it on; on a measured GPU the whole-GPU modes need it off (with MIG on, CUDA sees no device
 * outside an instance). Runs that cannot run are dropped with a note, so one file serves GPUs in
 * either mode.
 */
static void filter_by_mig_mode(struct mb_session *s)
{
    struct mb_mig_mode mm;
    if (s->o.manage_mig_mode || !(s->caps & MB_CAP_GPU) ||
        mb_device_mig_mode(s->dev, &mm, NULL) != MB_OK)
        return; /* with phases every cell runs, each in its mode */
    bool measured = !(s->caps & MB_CAP_EMULATED);
    /* Kept for mb_session_mig_mode_cells (the two phases a user could run by hand). */
    free(s->mode_all);
    s->n_mode_all = s->n_mode_skipped = 0;
    if ((s->mode_all = malloc((s->n_all ? s->n_all : 1) * sizeof(*s->mode_all)))) {
        memcpy(s->mode_all, s->all, s->n_all * sizeof(*s->all));
        s->n_mode_all = s->n_all;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n_all; i++) {
        const struct mb_exp_run *r = &s->exp->runs[s->all[i].run];
        const char *why = NULL;
        int need = mb_migmode_run_needs(r);
        if (need == 1 && !mm.current)
            why = mm.pending ? "MIG mode is enabled but pending a GPU reset"
                             : "MIG mode is disabled on the GPU (nvidia-smi -mig 1 and a reset "
                               "enable it)";
        else if (need == 0 && measured && mm.current)
            why = "MIG mode is enabled on the GPU; whole-GPU runs need it disabled";
        if (!why)
            s->all[k++] = s->all[i];
        else if (i == 0 || s->all[i - 1].run != s->all[i].run)
            say(s, MB_SESSION_NOTE, "run '%s' skipped: %s", r->name, why);
    }
    s->n_mode_skipped = s->mode_all ? s->n_all - k : 0;
    s->n_all = k;
}

/*
 * Inside a Slurm job or a Kubernetes pod the scheduler names the job's GPU by UUID in
 * CUDA_VISIBLE_DEVICES, and NVML's GPU 0 need not be it: for auto and nvml specs the session
 * runs on the GPU that names (a MIG instance's parent: a cell needs the whole GPU). Emulated and
 * host devices are taken as given.
 */
static void follow_visible(struct mb_session *s)
{
    const char *spec = s->o.device_spec;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd || (strcmp(spec, "auto") != 0 && strncmp(spec, "nvml", 4) != 0))
        return;
    struct mb_error e;
    if (mb_device_resolve_visible(spec, cvd, &s->vis, &e) != MB_OK) {
        say(s, MB_SESSION_WARN, "%s; running on %s", e.msg, spec);
        return;
    }
    if (!s->vis.resolved || strcmp(s->vis.spec, spec) == 0)
        return;
    say(s, MB_SESSION_NOTE, "CUDA_VISIBLE_DEVICES=%s: running on %s%s", s->vis.entry, s->vis.spec,
        s->vis.has_instance ? " (the MIG instance's GPU: a cell needs the whole GPU)" : "");
    s->o.device_spec = s->vis.spec;
}

/* Every GPU the spec names (one, usually); they must be one kind of device and one model. */
static int open_gpus(struct mb_session *s, struct mb_error *err)
{
    int rc = mb_device_spec_expand(s->o.device_spec, &s->specs, err);
    if (rc != MB_OK)
        return rc;
    for (size_t g = 0; g < s->specs.n; g++) {
        const char *sp = s->specs.specs[g];
        struct mb_error e;
        if ((rc = mb_device_open(sp, &s->gpus[g], err)) != MB_OK)
            return rc;
        s->n_gpus = g + 1;
        if (mb_device_info(s->gpus[g], &s->ginfo[g], &e) != MB_OK)
            return mb_error_set(err, MB_EDEVICE, "device %s: %s", sp, e.msg);
        const struct mb_device_info *i0 = &s->ginfo[0], *ig = &s->ginfo[g];
        if (strcmp(i0->backend, ig->backend) != 0 || strcmp(i0->model, ig->model) != 0)
            return mb_error_set(err, MB_EINVAL,
                                "--device %s: %s is a %s (%s), %s a %s (%s): one run compares "
                                "GPUs of one model; run them separately",
                                s->o.device_spec, sp, ig->model, ig->backend, s->specs.specs[0],
                                i0->model, i0->backend);
    }
    return MB_OK;
}

static int open_device(struct mb_session *s, struct mb_error *err)
{
    follow_visible(s);
    int rc = mb_catalog_create(&s->cat, err);
    if (rc != MB_OK || (rc = open_gpus(s, err)) != MB_OK)
        return rc;
    s->dev = s->gpus[0];
    s->info = s->ginfo[0];
    s->caps = mb_device_caps(s->dev);
    if ((s->caps & MB_CAP_GPU) && s->info.model[0] &&
        mb_catalog_find(s->cat, s->info.model, &s->model, NULL) != MB_OK) {
        s->model = NULL;
        say(s, MB_SESSION_WARN, "GPU model '%s' is not in the MIG catalog", s->info.model);
    }
    return MB_OK;
}

/*
 * The power-limit axis (docs/power.md): where the device can set its limit, the path of its
 * restore record; elsewhere the runs with a limit other than "default" are skipped with a note.
 * Changes nothing.
 */
static int power_open(struct mb_session *s, char ***notes, size_t *n_notes, struct mb_error *err)
{
    char why[MB_ERROR_MSG_MAX] = "the device cannot set its power limit";
    s->helper = getenv("MIGBENCH_POWER_HELPER");
    if (s->helper && !s->helper[0])
        s->helper = NULL;
    if (s->n_gpus > 1)
        snprintf(why, sizeof(why),
                 "the power-limit axis runs on one GPU at a time; give one GPU "
                 "with --device");
    else if (s->caps & MB_CAP_SET_POWER_LIMIT) {
        struct mb_error e;
        if (mb_powercap_ledger_path(s->o.device_spec, s->info.uuid, getenv("MIGBENCH_STATE_DIR"),
                                    s->ledger, sizeof(s->ledger), &e) == MB_OK)
            return MB_OK;
        s->ledger[0] = '\0';
        snprintf(why, sizeof(why), "%s", e.msg);
    }
    size_t before = *n_notes;
    int rc = mb_experiment_power_filter(s->exp, s->all, &s->n_all, notes, n_notes, err);
    for (size_t i = before; rc == MB_OK && i < *n_notes; i++)
        say(s, MB_SESSION_NOTE, "%s (%s)", (*notes)[i], why);
    return rc;
}

/* Every limit the selection will set fits the device's range; changes nothing. */
static int power_check(struct mb_session *s, struct mb_error *err)
{
    if (!s->ledger[0])
        return MB_OK;
    /* The same check as the dry run's. */
    return mb_experiment_power_check_device(s->exp, s->dev, s->o.device_spec, s->sel, s->n_sel,
                                            err);
}

/* Before anything runs: a limit that a dead run set comes back (its record's owner is gone). */
static int power_recover(struct mb_session *s, struct mb_error *err)
{
    if (!s->ledger[0])
        return MB_OK;
    struct mb_powercap pc = {s->dev, s->ledger, s->helper};
    enum mb_powercap_outcome o;
    int rc = mb_powercap_recover(&pc, &o, err);
    if (rc != MB_OK) {
        char msg[MB_ERROR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return mb_error_set(err, rc, "power limit left by an earlier run: %.900s; nothing was run",
                            msg);
    }
    if (o == MB_PC_RESTORED)
        say(s, MB_SESSION_NOTE, "restored the power limit that an interrupted run had set");
    else if (o == MB_PC_FOREIGN)
        say(s, MB_SESSION_NOTE,
            "an interrupted run's power limit was changed since by someone "
            "else; left as it is");
    return MB_OK;
}

/* On every way out: a limit this process set and has not restored yet goes back now. */
static void power_close(struct mb_session *s)
{
    if (!s->ledger[0] || !s->dev)
        return;
    struct mb_powercap pc = {s->dev, s->ledger, s->helper};
    enum mb_powercap_outcome o;
    struct mb_error e;
    if (mb_powercap_restore(&pc, &o, &e) != MB_OK)
        say(s, MB_SESSION_WARN, "cannot restore the power limit: %s (the next run restores it)",
            e.msg);
    else if (o == MB_PC_RESTORED)
        say(s, MB_SESSION_NOTE, "power limit restored");
}

static int open_cells(struct mb_session *s, struct mb_error *err)
{
    char **notes = NULL;
    size_t n_notes = 0;
    int rc =
        mb_experiment_cells(s->exp, s->caps, s->o.only, &s->all, &s->n_all, &notes, &n_notes, err);
    if (rc != MB_OK)
        return mb_error_restatus(err, MB_EINVAL);
    for (size_t i = 0; i < n_notes; i++)
        say(s, MB_SESSION_NOTE, "%s", notes[i]);
    filter_by_mig_mode(s);
    /* Only the runs that will run here are held to this model's profile names. */
    size_t shown = n_notes;
    if (s->model && (rc = mb_experiment_check_cells(s->exp, s->model, s->all, &s->n_all, &notes,
                                                    &n_notes, err)) != MB_OK) {
        mb_notes_free(notes, n_notes);
        return mb_error_restatus(err, MB_EINVAL);
    }
    for (size_t i = shown; i < n_notes; i++)
        say(s, MB_SESSION_NOTE, "%s", notes[i]);
    rc = power_open(s, &notes, &n_notes, err);
    mb_notes_free(notes, n_notes);
    if (rc != MB_OK)
        return rc;
    if (s->n_all == 0)
        return mb_error_set(err, MB_EINVAL, "no run of %s applies to %s", s->exp->path,
                            s->o.device_spec);
    return mb_session_select(s, NULL, NULL, err);
}

/* The journal's experiment must be this one (same file and --set options). */
static int check_same_experiment(struct mb_session *s, const cJSON *events, const char *what,
                                 struct mb_error *err)
{
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events)
    {
        struct mb_jev e;
        if (!mb_jev_decode(ev, &e) || e.kind != MB_JEV_EXPERIMENT_STARTED || !e.experiment_sha)
            continue;
        const char *sha = e.experiment_sha;
        if (strcmp(sha, s->exp->sha) != 0)
            return mb_error_set(err, MB_EINVAL,
                                "%s%s was started from a different experiment file or --set "
                                "options (sha %s, now %s); %s with the same ones",
                                what, s->dir, sha, s->exp->sha,
                                s->o.resume ? "resume" : "continue");
        break;
    }
    return MB_OK;
}

static int read_journal(struct mb_session *s, const char *what, struct mb_error *err)
{
    size_t skipped = 0;
    struct mb_error e;
    int rc = mb_journal_read(s->jpath, &s->events, &skipped, &e);
    if (rc != MB_OK)
        return mb_error_set(err, rc == MB_ENOTFOUND ? MB_EINVAL : rc, "%s%s", what, e.msg);
    if (skipped)
        say(s, MB_SESSION_NOTE, "journal: skipped %zu torn line%s", skipped,
            skipped == 1 ? "" : "s");
    return check_same_experiment(s, s->events, what, err);
}

/* Every journal*.jsonl of the directory must be of this experiment (a task's own journal). */
static int check_all_journals(struct mb_session *s, struct mb_error *err)
{
    DIR *d = opendir(s->dir);
    if (!d)
        return MB_OK; /* no directory yet: nothing to join */
    int rc = MB_OK;
    struct dirent *e;
    while (rc == MB_OK && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "journal", 7) != 0 || len < 6 ||
            strcmp(e->d_name + len - 6, ".jsonl") != 0)
            continue;
        char path[PATH_MAX + 300];
        snprintf(path, sizeof(path), "%s/%s", s->dir, e->d_name);
        cJSON *events = NULL;
        size_t skipped = 0;
        if (mb_journal_read(path, &events, &skipped, NULL) == MB_OK)
            rc = check_same_experiment(s, events, "", err);
        cJSON_Delete(events);
    }
    closedir(d);
    return rc;
}

/*
 * --journal NAME names journal-NAME.jsonl, as the help and docs write it; the whole file name
 * (what the Slurm scripts pass) is taken as it is. NAME: letters, digits, '-', '_', '.'.
 */
static int journal_file(const char *jn, char *out, size_t cap, struct mb_error *err)
{
    size_t n = strlen(jn);
    bool whole = n > 14 && strncmp(jn, "journal-", 8) == 0 && strcmp(jn + n - 6, ".jsonl") == 0;
    /* "x.jsonl" is neither NAME nor the file name: journal-x.jsonl.jsonl would surprise. */
    bool ok = n > 0 && n <= 200 && jn[0] != '.' && jn[0] != '-' &&
              (whole || n < 6 || strcmp(jn + n - 6, ".jsonl") != 0);
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)jn[i]) || jn[i] == '-' || jn[i] == '_' || jn[i] == '.';
    if (!ok)
        return mb_error_set(err, MB_EINVAL,
                            "--journal '%.200s': expected a NAME (letters, digits, '-', '_', '.') "
                            "for journal-NAME.jsonl, or that file name",
                            jn);
    snprintf(out, cap, whole ? "%s" : "journal-%s.jsonl", jn);
    return MB_OK;
}

static int open_results(struct mb_session *s, struct mb_error *err)
{
    if (s->o.results_dir)
        snprintf(s->dir, sizeof(s->dir), "%s", s->o.results_dir);
    else
        snprintf(s->dir, sizeof(s->dir), "results/%s", s->exp->name);
    char jfile[256] = "journal.jsonl";
    if (s->o.journal_name) {
        int rc = journal_file(s->o.journal_name, jfile, sizeof(jfile), err);
        if (rc != MB_OK)
            return rc;
        if (s->o.resume)
            return mb_error_set(err, MB_EINVAL, "--journal: --resume reads journal.jsonl");
    }
    int n = snprintf(s->jpath, sizeof(s->jpath), "%s/%s", s->dir, jfile);
    if (n < 0 || (size_t)n >= sizeof(s->jpath))
        return mb_error_set(err, MB_EINVAL, "--results %s: the path is too long", s->dir);
    struct stat st;
    if (stat(s->dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return mb_error_set(err, MB_EINVAL, "--results %s: exists and is not a directory", s->dir);
    if (s->o.resume)
        return read_journal(s, "--resume: ", err);
    return MB_OK;
}

/* Several GPUs or phases: the runner's notes, and a line when a cell starts, with the GPU. */
static void gpu_runner_event(void *ctx, const struct mb_runner_event *ev)
{
    const struct gpu_ev *ge = ctx;
    struct mb_session *s = ge->s;
    if (!s->o.on_runner_event || (ev->kind != MB_RUNNER_NOTE && ev->kind != MB_RUNNER_CELL_START))
        return;
    char text[768];
    if (ev->kind == MB_RUNNER_CELL_START)
        snprintf(text, sizeof(text), "started");
    else
        snprintf(text, sizeof(text), "%s", ev->text ? ev->text : "");
    if (s->n_gpus > 1) {
        size_t used = strlen(text);
        snprintf(text + used, sizeof(text) - used, " (gpu %zu)", ge->gpu);
    }
    struct mb_runner_event copy = *ev;
    copy.kind = MB_RUNNER_NOTE;
    copy.text = text;
    pthread_mutex_lock(&s->lock);
    s->o.on_runner_event(s->o.ctx, &copy);
    pthread_mutex_unlock(&s->lock);
}

/* Each GPU's runner options: the session's, with its own device, spec, cool-down state. */
static void gpu_runner_opts(struct mb_session *s)
{
    bool lines = s->n_gpus > 1 || s->o.manage_mig_mode;
    for (size_t g = 0; g < s->n_gpus; g++) {
        s->gro[g] = s->ro;
        s->gro[g].dev = s->gpus[g];
        s->gro[g].device_spec = s->specs.specs[g];
        s->gro[g].power = g == 0 ? &s->power : &s->gpower[g];
        s->gro[g].seed = s->ro.seed + g;
        s->gev[g] = (struct gpu_ev){s, g};
        if (lines) {
            s->gro[g].on_event = gpu_runner_event;
            s->gro[g].ctx = &s->gev[g];
        }
    }
}

int mb_session_open(const struct mb_experiment *exp, const struct mb_session_opts *opts,
                    struct mb_session **out, struct mb_error *err)
{
    *out = NULL;
    struct mb_session *s = calloc(1, sizeof(*s));
    if (!s)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    s->exp = exp;
    s->o = *opts;
    pthread_mutex_init(&s->lock, NULL);
    int rc = open_device(s, err);
    if (rc == MB_OK)
        rc = open_cells(s, err);
    if (rc == MB_OK)
        rc = open_results(s, err);
    if (rc == MB_OK)
        rc = mb_session_resolve_tools(exp, s->all, s->n_all, s->python, sizeof(s->python), s->wdir,
                                      sizeof(s->wdir), err);
    if (rc != MB_OK) {
        mb_session_close(s);
        return rc;
    }
    s->ro = (struct mb_runner_opts){
        .exp = exp,
        .dev = s->dev,
        .device_spec = s->o.device_spec, /* follow_visible may have moved it */
        .model = s->model,
        .results_dir = s->dir,
        .python = s->python[0] ? s->python : NULL,
        .workloads_dir = s->wdir,
        .stop = opts->stop,
        .on_event = opts->on_runner_event,
        .ctx = opts->ctx,
        .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32),
        .power = &s->power,
        .power_ledger = s->ledger[0] ? s->ledger : NULL,
        .power_helper = s->helper,
    };
    gpu_runner_opts(s);
    *out = s;
    return MB_OK;
}

void mb_session_close(struct mb_session *s)
{
    if (!s)
        return;
    power_close(s);
    cJSON_Delete(s->events);
    mb_journal_close(s->journal);
    free(s->all);
    free(s->mode_all);
    free(s->sel);
    free(s->sel_index);
    for (size_t g = 0; g < s->n_gpus; g++)
        mb_device_close(s->gpus[g]); /* gpus[0] is dev */
    mb_device_spec_list_free(&s->specs);
    pthread_mutex_destroy(&s->lock);
    mb_catalog_destroy(s->cat);
    free(s);
}

/* ---- selection ------------------------------------------------------------------------------ */

int mb_session_select(struct mb_session *s, const char *list, const char *shard,
                      struct mb_error *err)
{
    bool *keep = calloc(s->n_all + 1, sizeof(*keep));
    struct mb_cell *sel = calloc(s->n_all + 1, sizeof(*sel));
    size_t *idx = calloc(s->n_all + 1, sizeof(*idx));
    const char **names = calloc(s->n_all + 1, sizeof(*names));
    const char **runs = calloc(s->exp->n_runs + 1, sizeof(*runs));
    int rc =
        keep && sel && idx && names && runs ? MB_OK : mb_error_set(err, MB_ENOMEM, "out of memory");
    /* --only is a selection as --cells is (its runs' cells), under the same rules. */
    const char *opt = "--cells";
    if (!list && s->o.only) {
        list = s->o.only;
        opt = "--only";
    }
    for (size_t i = 0; rc == MB_OK && i < s->n_all; i++)
        names[i] = s->exp->runs[s->all[i].run].name;
    for (size_t i = 0; rc == MB_OK && i < s->exp->n_runs; i++)
        runs[i] = s->exp->runs[i].name;
    struct mb__selection_cells sc = {names, s->n_all, runs, s->exp->n_runs};
    if (rc == MB_OK && list)
        rc = mb__selection_mark(list, opt, &sc, keep, err);
    free(names);
    free(runs);
    size_t si = 0, sn = 1;
    if (rc == MB_OK && shard)
        rc = mb__selection_shard(shard, &si, &sn, err);
    size_t n = 0, seen = 0;
    for (size_t i = 0; rc == MB_OK && i < s->n_all; i++) {
        if (list && !keep[i])
            continue;
        if (seen++ % sn != si)
            continue;
        sel[n] = s->all[i];
        idx[n++] = i;
    }
    free(keep);
    if (rc != MB_OK) {
        free(sel);
        free(idx);
        return rc;
    }
    free(s->sel);
    free(s->sel_index);
    s->sel = sel;
    s->sel_index = idx;
    s->n_sel = n;
    s->selected = list || shard;
    return MB_OK;
}

/* ---- running -------------------------------------------------------------------------------- */

static int journal_started(struct mb_session *s, struct mb_error *err)
{
    struct mb_jev e = mb_jev_init(MB_JEV_EXPERIMENT_STARTED);
    e.experiment = s->exp->name;
    e.experiment_sha = s->exp->sha;
    e.file = s->exp->path;
    e.overrides = s->exp->overrides;
    e.n_overrides = s->exp->n_overrides;
    e.device = s->o.device_spec;
    e.gpus = s->specs.specs;
    e.n_gpus = s->n_gpus;
    e.manage_mig_mode = s->o.manage_mig_mode;
    e.backend = s->info.backend;
    e.cells = (double)s->n_sel;
    e.cell_indices = s->selected ? s->sel_index : NULL;
    e.n_cell_indices = s->n_sel;
    e.resume = s->o.resume;
    e.pid = (long)getpid();
    e.version = MB_VERSION_STRING;
    cJSON *ev = mb_jev_encode(&e);
    if (!ev)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = mb_journal_append(s->journal, ev, err);
    cJSON_Delete(ev);
    return rc;
}

/* The leftovers of each GPU from its own handle; MPS daemons (the host's) once. */
static int cleanup_gpus(struct mb_session *s, const struct mb_leftovers *left, size_t *removed,
                        struct mb_error *err)
{
    if (s->n_gpus == 1)
        return mb_runner_cleanup(&s->gro[0], left, removed, err);
    struct mb_leftovers *mine = malloc(sizeof(*mine));
    if (!mine)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    for (size_t g = 0; g < s->n_gpus && rc == MB_OK; g++) {
        memset(mine, 0, sizeof(*mine));
        for (size_t i = 0; i < left->n_mig; i++)
            if (strcmp(left->mig[i].gpu_uuid, s->ginfo[g].uuid) == 0)
                mine->mig[mine->n_mig++] = left->mig[i];
        if (g == 0) {
            mine->n_mps = left->n_mps;
            memcpy(mine->mps, left->mps, sizeof(left->mps));
        }
        size_t n = 0;
        rc = mb_runner_cleanup(&s->gro[g], mine, &n, err);
        *removed += n;
    }
    free(mine);
    return rc;
}

/* The MIG instances the dead run left on every GPU, by the ledger (mb_runner_mig_leftovers). */
static int mig_leftovers(struct mb_session *s, const struct mb_leftovers *left, size_t *n,
                         struct mb_error *err)
{
    *n = 0;
    struct mb_leftovers *mine = malloc(sizeof(*mine));
    if (!mine)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    for (size_t g = 0; g < s->n_gpus && rc == MB_OK; g++) {
        size_t k = 0;
        memset(mine, 0, sizeof(*mine));
        for (size_t i = 0; i < left->n_mig; i++)
            if (s->n_gpus == 1 || strcmp(left->mig[i].gpu_uuid, s->ginfo[g].uuid) == 0)
                mine->mig[mine->n_mig++] = left->mig[i];
        rc = mb_runner_mig_leftovers(&s->gro[g], mine, &k, err);
        *n += k;
    }
    free(mine);
    return rc;
}

/* What a dead run left (MIG ledger, MPS daemons of the journal) is removed before anything else
 * runs. */
static int resume_cleanup(struct mb_session *s, struct mb_error *err)
{
    struct mb_leftovers *left = malloc(sizeof(*left));
    if (!left)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = mb_journal_leftovers(s->events, left, err);
    size_t removed = 0, n_mig = 0;
    if (rc == MB_OK)
        rc = mig_leftovers(s, left, &n_mig, err);
    if (rc == MB_OK) {
        if (n_mig || left->n_mps)
            say(s, MB_SESSION_NOTE,
                "resume: removing %zu MIG instance%s and %zu MPS daemon%s left by the "
                "interrupted run",
                n_mig, n_mig == 1 ? "" : "s", left->n_mps, left->n_mps == 1 ? "" : "s");
        rc = cleanup_gpus(s, left, &removed, err);
    }
    free(left);
    if (rc != MB_OK) {
        char msg[MB_ERROR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        return mb_error_set(err, rc, "resume: %.900s; nothing else was run", msg);
    }
    return MB_OK;
}

/*
 * Each GPU's check of the selected cells. With MIG-mode phases only the cells of the mode a GPU
 * has now can be checked there; the others are checked by the runner after the switch.
 */
static int preflight(struct mb_session *s, struct mb_error *err)
{
    struct mb_cell *now = malloc((s->n_sel ? s->n_sel : 1) * sizeof(*now));
    if (!now)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    for (size_t g = 0; g < s->n_gpus && rc == MB_OK; g++) {
        struct mb_mig_mode mm = {0, 0};
        bool mig = mb_device_mig_mode(s->gpus[g], &mm, NULL) == MB_OK;
        size_t k = 0;
        for (size_t i = 0; i < s->n_sel; i++) {
            int need = mb_migmode_run_needs(&s->exp->runs[s->sel[i].run]);
            if (!s->o.manage_mig_mode || !mig || need < 0 || need == mm.current)
                now[k++] = s->sel[i];
        }
        rc = k ? mb_runner_preflight(&s->gro[g], now, k, err) : MB_OK;
    }
    free(now);
    return rc == MB_EUNSUPPORTED ? mb_error_restatus(err, MB_EINVAL) : rc;
}

int mb_session_check(struct mb_session *s, struct mb_error *err)
{
    if (s->n_sel == 0)
        return mb_error_set(err, MB_EINVAL, "the selection holds no cell of %s", s->exp->path);
    if (s->o.journal_name) {
        int jrc = check_all_journals(s, err);
        if (jrc != MB_OK)
            return jrc;
    }
    if (!s->o.resume && access(s->jpath, F_OK) == 0) {
        if (!s->selected)
            return mb_error_set(err, MB_EINVAL,
                                "%s already holds results; add --resume to continue that "
                                "experiment, or --results DIR for a new directory",
                                s->dir);
        /* A selection joins the directory of the same experiment. */
        int rc = read_journal(s, "", err);
        cJSON_Delete(s->events);
        s->events = NULL;
        if (rc != MB_OK)
            return rc;
    }
    /* Nothing has changed yet: refuse here what cannot run (mps off nvml, MIG disabled). A
     * resume checks after the dead run's leftovers are gone. */
    int rc = power_check(s, err);
    if (rc == MB_OK && !s->o.resume)
        rc = preflight(s, err);
    s->checked = rc == MB_OK;
    return rc;
}

int mb_session_start(struct mb_session *s, struct mb_error *err)
{
    int rc;
    if (!s->checked && (rc = mb_session_check(s, err)) != MB_OK)
        return rc;
    /* Selections without --resume run side by side (one Slurm array task per cell); a whole
     * experiment or a resume owns the directory. */
    s->shared = s->selected && !s->o.resume;
    if ((rc = mb_results_mkdirs(s->dir, 0755, err)) != MB_OK ||
        (rc = (s->shared ? mb_journal_open_shared : mb_journal_open)(s->jpath, &s->journal, err)) !=
            MB_OK)
        return rc;
    s->ro.journal = s->journal;
    for (size_t g = 0; g < s->n_gpus; g++)
        s->gro[g].journal = s->journal;
    if ((rc = power_recover(s, err)) != MB_OK)
        return rc;
    if (s->o.resume) {
        if ((rc = resume_cleanup(s, err)) != MB_OK)
            return rc;
        if ((rc = preflight(s, err)) != MB_OK)
            return rc;
    }
    return journal_started(s, err);
}

static void journal_interrupted(struct mb_session *s, int sig, const struct mb_cell *c)
{
    struct mb_jev e = mb_jev_init(MB_JEV_INTERRUPTED);
    e.signal = sig;
    e.run = s->exp->runs[c->run].name;
    e.rep = (int)c->rep;
    cJSON *ev = mb_jev_encode(&e);
    if (ev)
        mb_journal_append(s->journal, ev, NULL);
    cJSON_Delete(ev);
}

/*
 * Whether a cell needs no run: it has a cell.json, and (for a selection without --resume, such
 * as a Slurm array task resubmitted for it) that says ok. A failed cell is run again.
 */
static bool cell_settled(const struct mb_session *s, const char *run, unsigned rep)
{
    if (!mb_results_cell_done(s->dir, run, rep))
        return false;
    if (s->o.resume)
        return true;
    char path[PATH_MAX + 200];
    snprintf(path, sizeof(path), "%s/%s/%u/cell.json", s->dir, run, rep);
    struct mb_cell_status cs;
    if (mb__cell_read_status(path, &cs, NULL) != MB_OK)
        return true; /* unreadable: not ours to overwrite */
    return !cs.failed;
}

/*
 * A failed cell about to run again keeps its record: cell.json becomes cell.failed-<n>.json
 * (n from 1, the first free), which nothing reads as the cell's result.
 */
static int keep_failed_attempt(struct mb_session *s, const char *run, unsigned rep,
                               struct mb_error *err)
{
    char from[PATH_MAX + 200], to[PATH_MAX + 300];
    snprintf(from, sizeof(from), "%s/%s/%u/cell.json", s->dir, run, rep);
    if (access(from, F_OK) != 0)
        return MB_OK;
    for (unsigned n = 1; n < 10000; n++) {
        snprintf(to, sizeof(to), "%s/%s/%u/cell.failed-%u.json", s->dir, run, rep, n);
        if (access(to, F_OK) == 0)
            continue;
        if (rename(from, to) != 0)
            return mb_error_set(err, MB_EIO, "%s: cannot keep the failed attempt: %s", from,
                                strerror(errno));
        pthread_mutex_lock(&s->lock);
        say(s, MB_SESSION_NOTE, "%s %u: failed before (kept as %s); running it again", run, rep,
            strrchr(to, '/') + 1);
        pthread_mutex_unlock(&s->lock);
        return MB_OK;
    }
    return mb_error_set(err, MB_ERANGE, "%s: too many failed attempts kept", from);
}

/*
 * The one cell step, for the loop of one GPU (mb_session_run_cell) and the workers of several
 * (run_node, through mb_multirun): a settled cell is skipped; in a shared directory the cell is
 * claimed (skipped when another invocation holds it); a failed attempt of a selection is kept;
 * the cell runs on ro (MB_EINTR without running once stopped); the claim is released. Notes go
 * out under the lock the workers' callbacks take.
 */
static int claim_and_run(struct mb_session *s, struct mb_runner_opts *ro, size_t i, bool *failed,
                         bool *skipped, struct mb_error *err)
{
    *failed = false;
    *skipped = false;
    const struct mb_cell *c = &s->sel[i];
    const struct mb_exp_run *r = &s->exp->runs[c->run];
    if ((s->o.resume || s->selected) && cell_settled(s, r->name, c->rep)) {
        *skipped = true;
        return MB_OK;
    }
    int claim = -1;
    if (s->shared) {
        int crc = mb_results_cell_claim(s->dir, r->name, c->rep, &claim, err);
        if (crc == MB_EBUSY) {
            pthread_mutex_lock(&s->lock);
            say(s, MB_SESSION_NOTE, "%s %u: running in another invocation; skipped", r->name,
                c->rep);
            pthread_mutex_unlock(&s->lock);
            *skipped = true;
            return MB_OK;
        }
        if (crc != MB_OK)
            return crc;
        /* Finished by another invocation between the check above and the claim. */
        if (cell_settled(s, r->name, c->rep)) {
            mb_results_cell_release(claim);
            *skipped = true;
            return MB_OK;
        }
    }
    if (s->selected && !s->o.resume) {
        int krc = keep_failed_attempt(s, r->name, c->rep, err);
        if (krc != MB_OK) {
            mb_results_cell_release(claim);
            return krc;
        }
    }
    int rc = *s->o.stop ? MB_EINTR : mb_runner_run_cell(ro, c, failed, err);
    mb_results_cell_release(claim);
    return rc;
}

int mb_session_run_cell(struct mb_session *s, size_t i, bool *failed, bool *skipped,
                        struct mb_error *err)
{
    *failed = false;
    *skipped = false;
    if (i >= s->n_sel || !s->journal)
        return mb_error_set(err, MB_EINVAL, "cell %zu: not selected, or the session not started",
                            i);
    const struct mb_cell *c = &s->sel[i];
    const struct mb_exp_run *r = &s->exp->runs[c->run];
    int rc = claim_and_run(s, &s->ro, i, failed, skipped, err);
    if (rc == MB_EINTR || *s->o.stop) {
        int sig = *s->o.stop ? *s->o.stop : SIGINT;
        journal_interrupted(s, sig, c);
        return mb_error_set(err, MB_EINTR, "interrupted by signal %d during %s %u", sig, r->name,
                            c->rep);
    }
    if (rc != MB_OK)
        return mb_error_prefix(err, "%s %u: ", r->name, c->rep);
    return MB_OK;
}

static void cell_event(struct mb_session *s, size_t i, double est, double after)
{
    if (!s->o.on_event)
        return;
    const struct mb_exp_run *r = &s->exp->runs[s->sel[i].run];
    struct mb_session_event ev = {
        .kind = MB_SESSION_CELL,
        .cell = i,
        .n_cells = s->n_sel,
        .run = r->name,
        .mode = mb_exp_mode_str(r->mode),
        .rep = s->sel[i].rep,
        .cell_estimate_s = est,
        .remaining_after_s = after,
    };
    s->o.on_event(s->o.ctx, &ev);
}

/*
 * A worker's cell (mb_multirun's run_cell hook): the one cell step on that GPU's runner. A serial
 * run announces the cell first (a settled one is skipped unannounced) and names a failure by it.
 */
static int node_run_cell(void *ctx, struct mb_runner_opts *ro, size_t cell, bool *failed,
                         bool *skipped, struct mb_error *err)
{
    struct mb_session *s = ctx;
    if (!s->serial)
        return claim_and_run(s, ro, cell, failed, skipped, err);
    const struct mb_cell *c = &s->sel[cell];
    const struct mb_exp_run *r = &s->exp->runs[c->run];
    s->last_cell = cell;
    *failed = *skipped = false;
    if ((s->o.resume || s->selected) && cell_settled(s, r->name, c->rep)) {
        *skipped = true;
        return MB_OK;
    }
    cell_event(s, cell, s->est[cell], s->est_after[cell]);
    int rc = claim_and_run(s, ro, cell, failed, skipped, err);
    if (rc != MB_OK && rc != MB_EINTR)
        return mb_error_prefix(err, "%s %u: ", r->name, c->rep);
    return rc;
}

/* The workers' notes and cell ends reach the caller under the lock its runner events take. */
static void node_note(void *ctx, size_t gpu, const char *line)
{
    struct mb_session *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (s->n_gpus > 1)
        say(s, MB_SESSION_NOTE, "%s (gpu %zu)", line, gpu);
    else
        say(s, MB_SESSION_NOTE, "%s", line);
    pthread_mutex_unlock(&s->lock);
}

static void node_cell_done(void *ctx, size_t gpu, size_t cell, int status, bool failed)
{
    struct mb_session *s = ctx;
    (void)gpu;
    if (status != MB_OK || !s->o.on_event)
        return;
    struct mb_session_event ev = {.kind = MB_SESSION_CELL_DONE,
                                  .cell = cell,
                                  .n_cells = s->n_sel,
                                  .run = s->exp->runs[s->sel[cell].run].name,
                                  .rep = s->sel[cell].rep,
                                  .failed = failed};
    pthread_mutex_lock(&s->lock);
    s->o.on_event(s->o.ctx, &ev);
    pthread_mutex_unlock(&s->lock);
}

/* Each selected cell's estimate (est[i]) and the estimate of the cells after it in the
 * selection (est[n_sel + i]); NULL when out of memory. */
static double *cell_estimates(const struct mb_session *s)
{
    double *est = calloc(s->n_sel ? 2 * s->n_sel : 1, sizeof(*est));
    if (!est)
        return NULL;
    bool unknown = false;
    for (size_t i = 0; i < s->n_sel; i++)
        est[i] = mb_session_cell_estimate(s->exp, &s->exp->runs[s->sel[i].run], &unknown);
    double total = 0;
    for (size_t i = 0; i < s->n_sel; i++)
        total += est[i];
    for (size_t i = 0; i < s->n_sel; i++) {
        total -= est[i];
        est[s->n_sel + i] = total;
    }
    return est;
}

/* The interruption: journaled with the cell it came in (or after), said with the signal. */
static int node_interrupted(struct mb_session *s, const struct mb_multirun_result *res,
                            struct mb_session_summary *sum, struct mb_error *err)
{
    int sig = *s->o.stop ? *s->o.stop : SIGINT;
    const struct mb_cell *c = &s->sel[s->serial ? s->last_cell : res->interrupted_cell];
    journal_interrupted(s, sig, c);
    sum->signal = sig;
    if (s->serial)
        return mb_error_set(err, MB_EINTR, "interrupted by signal %d during %s %u", sig,
                            s->exp->runs[c->run].name, c->rep);
    return mb_error_set(err, MB_EINTR, "interrupted by signal %d%s", sig,
                        res->phased.restores ? " (MIG modes restored)" : "");
}

/*
 * The one cell driver: the selected cells through the GPU queue (mb_multirun), on every GPU at
 * once, in MIG-mode phases with manage_mig_mode. One GPU without phases is the same queue with
 * one worker on this thread, the cells in selection order (serial). An interruption restores
 * the switched GPUs and is journaled.
 */
static int run_node(struct mb_session *s, struct mb_session_summary *sum, struct mb_error *err)
{
    double *est = cell_estimates(s);
    if (!est)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    s->serial = s->n_gpus == 1 && !s->o.manage_mig_mode;
    s->est = est;
    s->est_after = est + s->n_sel;
    s->last_cell = 0;
    struct mb_multirun_opts mo = {.exp = s->exp,
                                  .cells = s->sel,
                                  .n_cells = s->n_sel,
                                  .gpus = s->serial ? &s->ro : s->gro,
                                  .n_gpus = s->n_gpus,
                                  .journal = s->journal,
                                  .old_journal = s->events,
                                  .run_cell = node_run_cell,
                                  .manage_mig_mode = s->o.manage_mig_mode,
                                  .pin_reps = s->o.pin_reps,
                                  .est_s = est,
                                  .stop = s->o.stop,
                                  .note = node_note,
                                  .cell_done = node_cell_done,
                                  .ctx = s};
    struct mb_multirun_result res;
    int rc = mb_multirun(&mo, NULL, &res);
    s->est = s->est_after = NULL;
    free(est);
    sum->ok = res.ok;
    sum->failed = res.failed;
    sum->skipped = res.skipped;
    if (res.interrupted)
        return node_interrupted(s, &res, sum, err);
    if (rc != MB_OK) {
        if (err)
            *err = res.phased.err;
        return s->serial ? rc : mb_error_prefix(err, "gpu %zu: ", res.phased.failed_gpu);
    }
    return MB_OK;
}

static void journal_finished(struct mb_session *s, const struct mb_session_summary *sum)
{
    struct mb_jev e = mb_jev_init(MB_JEV_EXPERIMENT_FINISHED);
    e.n_ok = (double)sum->ok;
    e.n_failed = (double)sum->failed;
    e.n_skipped = (double)sum->skipped;
    cJSON *ev = mb_jev_encode(&e);
    if (ev)
        mb_journal_append(s->journal, ev, NULL);
    cJSON_Delete(ev);
}

int mb_session_run(struct mb_session *s, struct mb_session_summary *sum, struct mb_error *err)
{
    memset(sum, 0, sizeof(*sum));
    int rc = run_node(s, sum, err);
    if (rc == MB_OK)
        journal_finished(s, sum);
    return rc;
}
