/* SPDX-License-Identifier: Apache-2.0 */
/* From a parsed experiment to what runs: the interpreter, each job's argv, the cells. */
#include "migbench/experiment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/experiment_internal.h"
#include "migbench/catalog.h"
#include "migbench/proc.h"

/* ---- interpreter ------------------------------------------------------------------------- */

/* Runs argv with stdio on /dev/null; true when it exits 0 within timeout_s. */
static bool runs_ok(char *const argv[], int timeout_s, char *why, size_t cap)
{
    char msg[256];
    int code = mb_proc_run_helper(argv, NULL, NULL, NULL, timeout_s * 1000, msg, sizeof(msg));
    if (code == 0)
        return true;
    if (code > 0)
        snprintf(why, cap, "'import torch' failed (exit %d)", code);
    else if (code == MB_PROC_HELPER_TIMEOUT)
        snprintf(why, cap, "did not finish within %ds", timeout_s);
    else
        snprintf(why, cap, "%.150s", msg);
    return false;
}

static bool is_exec(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Finds name in a PATH-style list; false when absent. */
static bool search_path(const char *name, const char *path_env, char *out, size_t cap)
{
    if (!path_env)
        return false;
    const char *p = path_env;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char cand[MB_EXP_PATH_MAX];
        if (len == 0)
            snprintf(cand, sizeof(cand), "./%s", name);
        else
            snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, p, name);
        if (is_exec(cand) && strlen(cand) < cap) {
            snprintf(out, cap, "%s", cand);
            return true;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    return false;
}

int mb__experiment_resolve_python(const char *spec, const char *path_env, const char *fallback,
                                  int timeout_s, char *out, size_t cap, struct mb_error *err)
{
    if (!path_env)
        path_env = getenv("PATH");
    if (strcmp(spec, "auto") != 0) {
        char found[MB_EXP_PATH_MAX];
        if (strchr(spec, '/')) {
            if (!is_exec(spec))
                return mb_error_set(err, MB_ENOTFOUND, "python: '%s' is not an executable file",
                                    spec);
            snprintf(found, sizeof(found), "%s", spec);
        } else if (!search_path(spec, path_env, found, sizeof(found))) {
            return mb_error_set(err, MB_ENOTFOUND, "python: '%s' is not on PATH", spec);
        }
        if (strlen(found) >= cap)
            return mb_error_set(err, MB_ERANGE, "python: path too long");
        snprintf(out, cap, "%s", found);
        return MB_OK;
    }
    char tried[MB_ERROR_MSG_MAX] = "";
    char cands[2][MB_EXP_PATH_MAX];
    size_t n = 0;
    if (search_path("python3", path_env, cands[n], sizeof(cands[n])))
        n++;
    else
        snprintf(tried, sizeof(tried), "no python3 on PATH");
    if (fallback && (n == 0 || strcmp(cands[0], fallback) != 0))
        snprintf(cands[n++], sizeof(cands[0]), "%s", fallback);
    for (size_t i = 0; i < n; i++) {
        char why[160];
        char *argv[] = {cands[i], (char *)"-c", (char *)"import torch", NULL};
        if (!is_exec(cands[i]))
            snprintf(why, sizeof(why), "not an executable file");
        else if (runs_ok(argv, timeout_s, why, sizeof(why))) {
            if (strlen(cands[i]) >= cap)
                return mb_error_set(err, MB_ERANGE, "python: path too long");
            snprintf(out, cap, "%s", cands[i]);
            return MB_OK;
        }
        size_t l = strlen(tried);
        snprintf(tried + l, sizeof(tried) - l, "%s%s: %s", l ? "; " : "", cands[i], why);
    }
    return mb_error_set(err, MB_ENOTFOUND,
                        "python: auto found no interpreter that can 'import torch' (%s); install "
                        "python3-torch or set python: /path/to/python3",
                        tried);
}

int mb_experiment_resolve_python(const struct mb_experiment *exp, const char *path_env, char *out,
                                 size_t cap, struct mb_error *err)
{
    return mb__experiment_resolve_python(exp->python, path_env, "/usr/bin/python3", 120, out, cap,
                                         err);
}

/* ---- argv, cells ------------------------------------------------------------------------- */

static char *substitute(const char *in, const char *python, const char *workloads)
{
    size_t cap = strlen(in) + 1;
    size_t np = strlen(python), nw = strlen(workloads);
    for (const char *p = in; *p; p++) {
        if (strncmp(p, "{python}", 8) == 0)
            cap += np;
        else if (strncmp(p, "{workloads}", 11) == 0)
            cap += nw;
    }
    char *out = malloc(cap);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *p = in; *p;) {
        if (strncmp(p, "{python}", 8) == 0) {
            memcpy(o, python, np);
            o += np;
            p += 8;
        } else if (strncmp(p, "{workloads}", 11) == 0) {
            memcpy(o, workloads, nw);
            o += nw;
            p += 11;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

void mb_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

int mb_experiment_job_argv(const struct mb_exp_workload *w, const char *python,
                           const char *workloads_dir, bool on_gpu, char ***argv_out,
                           struct mb_error *err)
{
    *argv_out = NULL;
    size_t n_extra = on_gpu ? w->n_gpu_args : w->n_host_args;
    char *const *extra = on_gpu ? w->gpu_args : w->host_args;
    size_t n = w->n_command + n_extra;
    char **argv = calloc(n + 1, sizeof(*argv));
    if (!argv)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *src = i < w->n_command ? w->command[i] : extra[i - w->n_command];
        argv[i] = substitute(src, python ? python : "{python}",
                             workloads_dir ? workloads_dir : "{workloads}");
        if (!argv[i]) {
            mb_argv_free(argv);
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        }
    }
    *argv_out = argv;
    return MB_OK;
}

bool mb_exp_run_applies(const struct mb_exp_run *run, uint32_t caps, char *why, size_t cap)
{
    bool gpu = (caps & MB_CAP_GPU) != 0;
    const char *reason = NULL;
    if (run->mode == MB_MODE_PARTITION && gpu)
        reason = "mode partition is for the host CPU";
    else if ((run->mode == MB_MODE_MIG || run->mode == MB_MODE_MPS || run->on[0]) && !gpu)
        reason = run->mode == MB_MODE_MPS ? "mode mps needs a GPU"
                 : run->on[0]             ? "exclusive on a MIG instance needs a GPU"
                                          : "mode mig needs a GPU";
    else if (run->only && !(run->only & (gpu ? MB_ONLY_GPU : MB_ONLY_HOST)))
        reason = gpu ? "only: host" : "only: gpu";
    if (reason && why)
        snprintf(why, cap, "%s", reason);
    return reason == NULL;
}

/* Compute slices of a profile name ("4g.40gb" -> 4). */
static unsigned profile_slices(const char *name)
{
    return (unsigned)(name[0] - '0');
}

void mb_exp_run_thread_pct(const struct mb_exp_run *run, unsigned model_compute_slices,
                           unsigned out[MB_EXP_MAX_JOBS])
{
    unsigned total = model_compute_slices ? model_compute_slices : 7;
    for (size_t i = 0; i < run->n_jobs; i++) {
        unsigned p;
        if (run->n_thread_pct)
            p = run->thread_pct[i];
        else if (run->n_match_layout)
            p = (unsigned)lround(100.0 * profile_slices(run->match_layout[i]) / total);
        else
            p = (unsigned)(100 / run->n_jobs);
        out[i] = p < 1 ? 1 : p > 100 ? 100 : p;
    }
}

unsigned mb_experiment_repetitions(const struct mb_experiment *exp, uint32_t caps)
{
    if (exp->measure.repetitions > 0)
        return (unsigned)exp->measure.repetitions;
    return (caps & MB_CAP_GPU) && !(caps & MB_CAP_EMULATED) ? 4 : 1;
}

void mb_notes_free(char **notes, size_t n)
{
    if (!notes)
        return;
    for (size_t i = 0; i < n; i++)
        free(notes[i]);
    free(notes);
}

static bool in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        if (l == len && strncmp(p, name, len) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

int mb_experiment_cells(const struct mb_experiment *exp, uint32_t caps, const char *only_runs,
                        struct mb_cell **cells, size_t *n_cells, char ***notes, size_t *n_notes,
                        struct mb_error *err)
{
    *cells = NULL;
    *n_cells = 0;
    *notes = NULL;
    *n_notes = 0;
    if (only_runs && !only_runs[0])
        return mb_error_set(err, MB_EINVAL, "--only: empty; name at least one run of %s",
                            exp->path);
    if (only_runs) {
        /* Every name given must be a run: a typo must not silently run nothing. */
        const char *p = only_runs;
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t l = comma ? (size_t)(comma - p) : strlen(p);
            bool ok = false;
            for (size_t i = 0; i < exp->n_runs; i++)
                if (strlen(exp->runs[i].name) == l && strncmp(exp->runs[i].name, p, l) == 0)
                    ok = true;
            if (!ok)
                return mb_error_set(err, MB_EINVAL, "--only: '%.*s' is not a run of %s", (int)l, p,
                                    exp->path);
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    unsigned reps = mb_experiment_repetitions(exp, caps);
    struct mb_cell *cs = calloc(exp->n_runs * reps + 1, sizeof(*cs));
    char **ns = calloc(exp->n_runs + 1, sizeof(*ns));
    if (!cs || !ns) {
        free(cs);
        free(ns);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    size_t nc = 0, nn = 0;
    for (size_t i = 0; i < exp->n_runs; i++) {
        const struct mb_exp_run *r = &exp->runs[i];
        if (only_runs && only_runs[0] && !in_list(only_runs, r->name))
            continue;
        char why[128];
        if (!mb_exp_run_applies(r, caps, why, sizeof(why))) {
            char buf[256];
            snprintf(buf, sizeof(buf), "run '%s' skipped: %s", r->name, why);
            ns[nn] = strdup(buf);
            if (!ns[nn]) {
                free(cs);
                mb_notes_free(ns, nn);
                return mb_error_set(err, MB_ENOMEM, "out of memory");
            }
            nn++;
            continue;
        }
        for (unsigned k = 0; k < reps; k++) {
            cs[nc].run = i;
            cs[nc].rep = k;
            nc++;
        }
    }
    *cells = cs;
    *n_cells = nc;
    *notes = ns;
    *n_notes = nn;
    return MB_OK;
}
