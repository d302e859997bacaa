/* SPDX-License-Identifier: Apache-2.0 */
/* Experiment files: YAML -> validated struct mb_experiment -> cells. */
#include "migbench/experiment.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "run/experiment_internal.h"
#include "run/selection.h"
#include "base/yaml_internal.h"
#include "base/yaml_read.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "migbench/powercap.h"
#include "migbench/proc.h"

extern char **environ;

#define NS_PER_S 1000000000LL
#define FIELD_MAX MB__EXP_FIELD_MAX

/*
 * A YAML node kept with its line. libyaml's document API gives marks, but we need to add nodes
 * for --set overrides and to name where an override came from, so the document is copied into
 * this small tree first.
 */
const char *mb_exp_mode_str(enum mb_exp_mode m)
{
    switch (m) {
    case MB_MODE_EXCLUSIVE:
        return "exclusive";
    case MB_MODE_TIMESLICE:
        return "timeslice";
    case MB_MODE_PARTITION:
        return "partition";
    case MB_MODE_MIG:
        return "mig";
    case MB_MODE_MPS:
        return "mps";
    }
    return "unknown";
}

/* ---- overrides --------------------------------------------------------------------------- */

static int apply_override(struct mb__yread *c, struct mb__ynode *root, const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (!eq || eq == ov)
        return mb_error_set(c->err, MB_EINVAL,
                            "--set %s: expected KEY=VALUE, e.g. measure.duration=30s", ov);
    char key[FIELD_MAX];
    size_t klen = (size_t)(eq - ov);
    if (klen >= sizeof(key))
        return mb_error_set(c->err, MB_EINVAL, "--set %s: key too long", ov);
    memcpy(key, ov, klen);
    key[klen] = '\0';
    const char *val = eq + 1;
    struct mb__ynode *v = NULL;
    int rc = mb__yread_load(c, val, strlen(val), ov, &v);
    if (rc != MB_OK)
        return rc;
    if (!v) {
        v = calloc(1, sizeof(*v));
        if (!v || !(v->str = strdup(""))) {
            free(v);
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        }
        v->kind = MB__Y_SCALAR;
        v->origin = ov;
    }
    struct mb__ynode *m = root;
    char *save = NULL;
    char *part = strtok_r(key, ".", &save);
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        if (m->kind != MB__Y_MAP) {
            mb__ynode_free(v);
            return mb_error_set(c->err, MB_EINVAL, "--set %s: '%s' is inside a non-mapping", ov,
                                part);
        }
        if (!part[0] || strchr(part, '[')) {
            mb__ynode_free(v);
            return mb_error_set(c->err, MB_EINVAL,
                                "--set %s: keys are dotted names of mappings (no indexes)", ov);
        }
        size_t i;
        for (i = 0; i < m->n; i++)
            if (strcmp(m->keys[i], part) == 0)
                break;
        if (!next) {
            if (i < m->n) {
                mb__ynode_free(m->items[i]);
                m->items[i] = v;
                m->key_lines[i] = 0;
            } else if (mb__ynode_append(m, part, 0, v) != MB_OK) {
                mb__ynode_free(v);
                return mb_error_set(c->err, MB_ENOMEM, "out of memory");
            }
            return MB_OK;
        }
        if (i == m->n) {
            struct mb__ynode *nm = calloc(1, sizeof(*nm));
            if (!nm || mb__ynode_append(m, part, 0, nm) != MB_OK) {
                free(nm);
                mb__ynode_free(v);
                return mb_error_set(c->err, MB_ENOMEM, "out of memory");
            }
            nm->kind = MB__Y_MAP;
            nm->origin = ov;
        }
        m = m->items[i];
        part = next;
    }
    mb__ynode_free(v);
    return mb_error_set(c->err, MB_EINVAL, "--set %s: empty key", ov);
}

/* Builds a field path into a FIELD_MAX buffer; long paths are cut, never overrun. */
static void fieldf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fieldf(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, FIELD_MAX, fmt, ap);
    va_end(ap);
}

/* ---- typed readers ----------------------------------------------------------------------- */

static int check_keys(struct mb__yread *c, const struct mb__ynode *m, const char *field,
                      const char *const *allowed)
{
    for (size_t i = 0; i < m->n; i++) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(m->keys[i], *a) == 0)
                ok = true;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                if (a != allowed)
                    strncat(list, ", ", sizeof(list) - strlen(list) - 1);
                strncat(list, *a, sizeof(list) - strlen(list) - 1);
            }
            char f[FIELD_MAX];
            if (field[0])
                fieldf(f, "%s.%s", field, m->keys[i]);
            else
                fieldf(f, "%s", m->keys[i]);
            return mb__yread_fail(c, m->key_lines[i] ? m->key_lines[i] : m->items[i]->line,
                                  m->items[i]->origin, f, "unknown key (expected one of: %s)",
                                  list);
        }
    }
    return MB_OK;
}

static bool safe_name(const char *s)
{
    if (!s[0] || s[0] == '.' || s[0] == '-')
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

static int get_name(struct mb__yread *c, const struct mb__ynode *n, const char *field, char *out)
{
    int rc = mb__yread_string(c, n, field, out, MB_EXP_NAME_MAX);
    if (rc)
        return rc;
    if (!safe_name(out))
        return mb__yread_fail(
            c, n->line, n->origin, field,
            "'%s' is not a usable name (letters, digits, '-', '_', '.'; not starting "
            "with '.' or '-')",
            out);
    return MB_OK;
}

static int get_argv(struct mb__yread *c, const struct mb__ynode *n, const char *field, char **out,
                    size_t *n_out)
{
    int rc = mb__yread_want(c, n, MB__Y_SEQ, field,
                            "a list of strings (an argv vector, not a shell string)");
    if (rc)
        return rc;
    if (n->n > MB_EXP_MAX_ARGS)
        return mb__yread_fail(c, n->line, n->origin, field, "more than %d arguments",
                              MB_EXP_MAX_ARGS);
    for (size_t i = 0; i < n->n; i++) {
        char f[FIELD_MAX];
        fieldf(f, "%s[%zu]", field, i);
        const struct mb__ynode *it = n->items[i];
        if (it->kind != MB__Y_SCALAR)
            return mb__yread_fail(c, it->line, it->origin, f, "expected a string, got %s",
                                  mb__ykind_word(it->kind));
        if (strlen(it->str) >= MB_EXP_ARG_MAX)
            return mb__yread_fail(c, it->line, it->origin, f, "longer than %d characters",
                                  MB_EXP_ARG_MAX - 1);
        out[i] = strdup(it->str);
        if (!out[i])
            return mb_error_set(c->err, MB_ENOMEM, "out of memory");
        *n_out = i + 1;
    }
    return MB_OK;
}

int mb_amount_parse(const char *text, bool allow_steps, bool allow_stable, struct mb_amount *out,
                    struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    while (isspace((unsigned char)*text))
        text++;
    if (strcmp(text, "stable") == 0) {
        if (!allow_stable)
            return mb_error_set(err, MB_EPARSE, "'stable' is only allowed for measure.duration");
        out->kind = MB_AMOUNT_STABLE;
        return MB_OK;
    }
    if (strcmp(text, "completion") == 0) {
        if (!allow_stable)
            return mb_error_set(err, MB_EPARSE,
                                "'completion' is only allowed for measure.duration");
        out->kind = MB_AMOUNT_COMPLETION;
        return MB_OK;
    }
    const char *end;
    double v;
    int nrc = text[0] == '-' || text[0] == '+' ? MB_EPARSE : mb_num_parse(text, &v, &end);
    if (nrc == MB_ERANGE)
        return mb_error_set(err, MB_EPARSE, "'%s': the number is out of range", text);
    if (nrc != MB_OK || v < 0)
        return mb_error_set(err, MB_EPARSE, "'%s' is not a duration (like 20s, 100ms, 2m%s)", text,
                            allow_steps ? " or 50 steps" : "");
    while (*end == ' ')
        end++;
    double mult = 0;
    if (strcmp(end, "ns") == 0)
        mult = 1;
    else if (strcmp(end, "us") == 0)
        mult = 1e3;
    else if (strcmp(end, "ms") == 0)
        mult = 1e6;
    else if (strcmp(end, "s") == 0)
        mult = 1e9;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        mult = 60e9;
    else if (strcmp(end, "h") == 0)
        mult = 3600e9;
    else if (strcmp(end, "steps") == 0 || strcmp(end, "step") == 0) {
        if (!allow_steps)
            return mb_error_set(err, MB_EPARSE, "'%s': a time is needed here, not steps", text);
        /* 0 steps is a warm-up of none; a window of 0 steps is refused by its caller. */
        if (v != floor(v) || v < 0 || v > 1e12)
            return mb_error_set(err, MB_EPARSE, "'%s': steps must be a whole number >= 0", text);
        out->kind = MB_AMOUNT_STEPS;
        out->steps = (uint64_t)v;
        return MB_OK;
    } else if (!*end)
        return mb_error_set(err, MB_EPARSE, "'%s' needs a unit (ms, s, m, h%s)", text,
                            allow_steps ? " or steps" : "");
    else
        return mb_error_set(err, MB_EPARSE, "'%s': unknown unit '%s' (ms, s, m, h%s)", text, end,
                            allow_steps ? " or steps" : "");
    double ns = v * mult;
    if (ns > 30.0 * 24 * 3600 * 1e9)
        return mb_error_set(err, MB_EPARSE, "'%s' is longer than 30 days", text);
    out->kind = MB_AMOUNT_TIME;
    out->ns = (int64_t)llround(ns);
    return MB_OK;
}

void mb_amount_format(const struct mb_amount *a, char *buf, size_t cap)
{
    if (a->kind == MB_AMOUNT_STABLE)
        snprintf(buf, cap, "stable");
    else if (a->kind == MB_AMOUNT_COMPLETION)
        snprintf(buf, cap, "completion");
    else if (a->kind == MB_AMOUNT_STEPS)
        snprintf(buf, cap, "%llu steps", (unsigned long long)a->steps);
    else if (a->ns % NS_PER_S == 0)
        snprintf(buf, cap, "%llds", (long long)(a->ns / NS_PER_S));
    else if (a->ns % 1000000 == 0)
        snprintf(buf, cap, "%lldms", (long long)(a->ns / 1000000));
    else
        snprintf(buf, cap, "%.6gs", (double)a->ns / 1e9);
}

static int get_amount(struct mb__yread *c, const struct mb__ynode *n, const char *field, bool steps,
                      bool stable, struct mb_amount *out)
{
    int rc = mb__yread_want(c, n, MB__Y_SCALAR, field, "a duration");
    if (rc)
        return rc;
    struct mb_error e;
    if (mb_amount_parse(n->str, steps, stable, out, &e) != MB_OK)
        return mb__yread_fail(c, n->line, n->origin, field, "%s", e.msg);
    return MB_OK;
}

static int get_time(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                    int64_t min_ns, int64_t *out)
{
    struct mb_amount a;
    int rc = get_amount(c, n, field, false, false, &a);
    if (rc)
        return rc;
    if (a.ns < min_ns)
        return mb__yread_fail(c, n->line, n->origin, field, "'%s' is shorter than the minimum %gs",
                              n->str, (double)min_ns / 1e9);
    *out = a.ns;
    return MB_OK;
}

/* A MIG profile name as NVIDIA spells them: "3g.40gb", "1g.10gb+me". */
static bool profile_syntax(const char *s)
{
    if (!isdigit((unsigned char)s[0]) || s[1] != 'g' || s[2] != '.')
        return false;
    const char *p = s + 3;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (strncmp(p, "gb", 2) != 0)
        return false;
    p += 2;
    if (!*p)
        return true;
    if (*p != '+' || !p[1])
        return false;
    for (p++; *p; p++)
        if (!islower((unsigned char)*p))
            return false;
    return true;
}

static int get_profiles(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                        char (*out)[MB_PROFILE_NAME_MAX], size_t *n_out)
{
    int rc = mb__yread_want(c, n, MB__Y_SEQ, field, "a list of MIG profile names");
    if (rc)
        return rc;
    if (n->n == 0 || n->n > MB_EXP_MAX_JOBS)
        return mb__yread_fail(c, n->line, n->origin, field, "needs 1..%d profiles",
                              MB_EXP_MAX_JOBS);
    for (size_t i = 0; i < n->n; i++) {
        char f[FIELD_MAX];
        fieldf(f, "%s[%zu]", field, i);
        rc = mb__yread_string(c, n->items[i], f, out[i], MB_PROFILE_NAME_MAX);
        if (rc)
            return rc;
        for (char *p = out[i]; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (!profile_syntax(out[i]) && !mb_profile_is_size(out[i]))
            return mb__yread_fail(
                c, n->items[i]->line, n->items[i]->origin, f,
                "'%s' is neither a MIG size (1g, 2g, 3g, 4g, 7g, 1g+me, 1g.2m) nor a "
                "profile name (like 3g.40gb or 1g.10gb+me)",
                n->items[i]->str);
    }
    *n_out = n->n;
    return MB_OK;
}

/* ---- sections ---------------------------------------------------------------------------- */

static int parse_workload(struct mb__yread *c, const char *name, unsigned key_line,
                          const struct mb__ynode *n, struct mb_exp_workload *w)
{
    static const char *const keys[] = {
        "command",          "unit",       "host_args", "gpu_args",          "progress_regex",
        "samples_per_step", "memory_mib", "pty",       "python_unbuffered", NULL};
    char field[FIELD_MAX];
    fieldf(field, "workloads.%s", name);
    if (!safe_name(name) || strlen(name) >= MB_EXP_NAME_MAX)
        return mb__yread_fail(c, key_line, n->origin, field,
                              "'%s' is not a usable workload name (letters, digits, '-', '_', '.')",
                              name);
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->line = key_line ? key_line : n->line;
    w->memory_mib = -1;
    w->python_unbuffered = true;
    snprintf(w->unit, sizeof(w->unit), "samples");
    int rc = mb__yread_want(c, n, MB__Y_MAP, field, "a mapping with command, unit, ...");
    if (rc || (rc = check_keys(c, n, field, keys)))
        return rc;
    char f[FIELD_MAX];
    const struct mb__ynode *v;
    fieldf(f, "%s.command", field);
    if (!(v = mb__ymap_get(n, "command", NULL)))
        return mb__yread_fail(c, w->line, n->origin, f,
                              "missing (an argv list such as [\"{python}\", "
                              "\"{workloads}/vision.py\"])");
    if ((rc = get_argv(c, v, f, w->command, &w->n_command)))
        return rc;
    if (w->n_command == 0 || !w->command[0][0])
        return mb__yread_fail(c, v->line, v->origin, f, "the command is empty");
    if ((v = mb__ymap_get(n, "unit", NULL))) {
        fieldf(f, "%s.unit", field);
        if ((rc = mb__yread_string(c, v, f, w->unit, sizeof(w->unit))))
            return rc;
        if (strcmp(w->unit, "images") && strcmp(w->unit, "tokens") && strcmp(w->unit, "samples") &&
            strcmp(w->unit, "steps"))
            return mb__yread_fail(c, v->line, v->origin, f,
                                  "'%s' is not a unit (images, tokens, samples or steps)", w->unit);
    }
    if ((v = mb__ymap_get(n, "host_args", NULL))) {
        fieldf(f, "%s.host_args", field);
        if ((rc = get_argv(c, v, f, w->host_args, &w->n_host_args)))
            return rc;
    }
    if ((v = mb__ymap_get(n, "gpu_args", NULL))) {
        fieldf(f, "%s.gpu_args", field);
        if ((rc = get_argv(c, v, f, w->gpu_args, &w->n_gpu_args)))
            return rc;
    }
    if (w->n_command + w->n_host_args > MB_EXP_MAX_ARGS ||
        w->n_command + w->n_gpu_args > MB_EXP_MAX_ARGS)
        return mb__yread_fail(c, w->line, n->origin, field, "more than %d arguments in all",
                              MB_EXP_MAX_ARGS);
    if ((v = mb__ymap_get(n, "progress_regex", NULL))) {
        fieldf(f, "%s.progress_regex", field);
        if ((rc = mb__yread_string(c, v, f, w->progress_regex, sizeof(w->progress_regex))))
            return rc;
        regex_t re;
        int rerr = regcomp(&re, w->progress_regex, REG_EXTENDED);
        if (rerr) {
            char buf[128];
            regerror(rerr, &re, buf, sizeof(buf));
            return mb__yread_fail(c, v->line, v->origin, f, "not a POSIX extended regex: %s", buf);
        }
        size_t nsub = re.re_nsub;
        regfree(&re);
        if (nsub < 1)
            return mb__yread_fail(
                c, v->line, v->origin, f,
                "needs a group that captures the step number, like 'iter ([0-9]+)'");
    }
    if ((v = mb__ymap_get(n, "samples_per_step", NULL))) {
        fieldf(f, "%s.samples_per_step", field);
        if (!w->progress_regex[0])
            return mb__yread_fail(
                c, v->line, v->origin, f,
                "only with progress_regex (jobs on MIGBENCH_PROGRESS_FD report samples=)");
        if ((rc = mb__yread_number(c, v, f, 1e-9, 1e12, &w->samples_per_step)))
            return rc;
    }
    if ((v = mb__ymap_get(n, "memory_mib", NULL))) {
        fieldf(f, "%s.memory_mib", field);
        long m;
        if ((rc = mb__yread_int(c, v, f, 1, 16L * 1024 * 1024, &m)))
            return rc;
        w->memory_mib = m;
    }
    if ((v = mb__ymap_get(n, "pty", NULL))) {
        fieldf(f, "%s.pty", field);
        if ((rc = mb__yread_bool(c, v, f, &w->pty)))
            return rc;
    }
    if ((v = mb__ymap_get(n, "python_unbuffered", NULL))) {
        fieldf(f, "%s.python_unbuffered", field);
        if ((rc = mb__yread_bool(c, v, f, &w->python_unbuffered)))
            return rc;
    }
    return MB_OK;
}

static int find_workload(const struct mb_experiment *exp, const char *name)
{
    for (size_t i = 0; i < exp->n_workloads; i++)
        if (strcmp(exp->workloads[i].name, name) == 0)
            return (int)i;
    return -1;
}

/*
 * A list of power limits ("default", "80%", "250W"): each one parsed into its type here, where
 * it is written (a file line or --set), and never again.
 */
static int get_power_limits(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                            struct mb_power_setting *out, size_t *n_out)
{
    int rc = mb__yread_want(c, n, MB__Y_SEQ, field, "a list of power limits (default, 80%, 250W)");
    if (rc)
        return rc;
    if (n->n == 0 || n->n > MB_EXP_MAX_POWER_LIMITS)
        return mb__yread_failn(c, n, field, "needs 1..%d power limits", MB_EXP_MAX_POWER_LIMITS);
    for (size_t i = 0; i < n->n; i++) {
        char f[FIELD_MAX], text[MB_EXP_POWER_TEXT_MAX];
        fieldf(f, "%s[%zu]", field, i);
        if ((rc = mb__yread_string(c, n->items[i], f, text, sizeof(text))))
            return rc;
        struct mb_error e;
        if (mb_power_setting_parse(text, &out[i], &e) != MB_OK)
            return mb__yread_failn(c, n->items[i], f, "%s", e.msg);
        for (size_t k = 0; k < i; k++)
            if (mb_power_setting_same(&out[k], &out[i]))
                return mb__yread_failn(c, n->items[i], f, "'%s' is listed twice (also [%zu])", text,
                                       k);
    }
    *n_out = n->n;
    return MB_OK;
}

/*
 * `on: mig-7g` (exclusive only): the jobs run one after another on one MIG instance of that size
 * instead of the whole GPU, a baseline for a GPU that cannot leave MIG mode; `on: gpu` is the
 * default.
 */
static int parse_run_on(struct mb__yread *c, const struct mb__ynode *n, const char *field,
                        struct mb_exp_run *r)
{
    unsigned kl = 0;
    const struct mb__ynode *v = mb__ymap_get(n, "on", &kl);
    if (!v)
        return MB_OK;
    char f[FIELD_MAX], on[MB_PROFILE_NAME_MAX + 8];
    fieldf(f, "%s.on", field);
    int rc = mb__yread_string(c, v, f, on, sizeof(on));
    if (rc)
        return rc;
    if (r->mode != MB_MODE_EXCLUSIVE)
        return mb__yread_fail(c, kl ? kl : v->line, v->origin, f,
                              "only for mode: exclusive (this run is %s)",
                              mb_exp_mode_str(r->mode));
    if (strcmp(on, "gpu") == 0)
        return MB_OK;
    if (strncmp(on, "mig-", 4) != 0 || !on[4] || strlen(on + 4) >= MB_PROFILE_NAME_MAX)
        return mb__yread_fail(c, v->line, v->origin, f,
                              "'%s': expected gpu or mig-SIZE (e.g. mig-7g, the largest instance)",
                              on);
    snprintf(r->on, sizeof(r->on), "%s", on + 4);
    snprintf(r->layout[0], sizeof(r->layout[0]), "%s", on + 4);
    r->n_layout = 1;
    return MB_OK;
}

/* runs[idx].name: a usable name, not one that reads as a cell index or range, not taken. */
static int parse_run_name(struct mb__yread *c, struct mb_experiment *exp, size_t idx,
                          const struct mb__ynode *n, const char *field)
{
    struct mb_exp_run *r = &exp->runs[idx];
    char f[FIELD_MAX];
    fieldf(f, "%s.name", field);
    const struct mb__ynode *v = mb__ymap_get(n, "name", NULL);
    if (!v)
        return mb__yread_fail(c, n->line, n->origin, f, "missing");
    int rc = get_name(c, v, f, r->name);
    if (rc)
        return rc;
    if (mb__selection_is_index(r->name, strlen(r->name)))
        return mb__yread_fail(c, v->line, v->origin, f,
                              "'%s' reads as a cell index or range: --cells %s would select "
                              "cells by position, never this run; give the run a name with a "
                              "letter",
                              r->name, r->name);
    for (size_t i = 0; i < idx; i++)
        if (strcmp(exp->runs[i].name, r->name) == 0)
            return mb__yread_fail(c, v->line, v->origin, f,
                                  "duplicate run name '%s' (also runs[%zu], line %u)", r->name, i,
                                  exp->runs[i].line);
    return MB_OK;
}

/* runs[i].jobs: workload names, each job named after its workload (-2, -3 when repeated). */
static int parse_run_jobs(struct mb__yread *c, const struct mb_experiment *exp,
                          struct mb_exp_run *r, const struct mb__ynode *n, const char *field)
{
    char f[FIELD_MAX];
    const struct mb__ynode *v;
    int rc;
    fieldf(f, "%s.jobs", field);
    if (!(v = mb__ymap_get(n, "jobs", NULL)))
        return mb__yread_fail(c, n->line, n->origin, f, "missing (a list of workload names)");
    if ((rc = mb__yread_want(c, v, MB__Y_SEQ, f, "a list of workload names")))
        return rc;
    if (v->n == 0 || v->n > MB_EXP_MAX_JOBS)
        return mb__yread_fail(c, v->line, v->origin, f, "needs 1..%d jobs", MB_EXP_MAX_JOBS);
    for (size_t i = 0; i < v->n; i++) {
        char jf[FIELD_MAX], wname[MB_EXP_NAME_MAX];
        fieldf(jf, "%s[%zu]", f, i);
        if ((rc = mb__yread_string(c, v->items[i], jf, wname, sizeof(wname))))
            return rc;
        int w = find_workload(exp, wname);
        if (w < 0)
            return mb__yread_fail(c, v->items[i]->line, v->items[i]->origin, jf,
                                  "unknown workload '%s' (not under workloads:)", wname);
        r->job_workload[i] = (size_t)w;
        /* Job names label logs and results; a workload used twice gets -2, -3, ... */
        snprintf(r->job_name[i], MB_EXP_NAME_MAX, "%s", wname);
        for (unsigned k = 2;; k++) {
            bool clash = false;
            for (size_t j = 0; j < i; j++)
                if (strcmp(r->job_name[j], r->job_name[i]) == 0)
                    clash = true;
            if (!clash)
                break;
            snprintf(r->job_name[i], MB_EXP_NAME_MAX, "%.50s-%u", wname, k % 100000u);
        }
    }
    r->n_jobs = v->n;
    return MB_OK;
}

/* runs[i].thread_percentage and match_layout: the MPS shares, one way or the other. */
static int parse_run_mps(struct mb__yread *c, struct mb_exp_run *r, const struct mb__ynode *n,
                         const char *field, const char *mode)
{
    char f[FIELD_MAX];
    const struct mb__ynode *v;
    unsigned lkl = 0;
    int rc;
    if ((v = mb__ymap_get(n, "thread_percentage", &lkl))) {
        fieldf(f, "%s.thread_percentage", field);
        if (r->mode != MB_MODE_MPS)
            return mb__yread_fail(c, lkl ? lkl : v->line, v->origin, f,
                                  "only for mode: mps (this run is %s)", mode);
        if ((rc = mb__yread_want(c, v, MB__Y_SEQ, f, "a list of percentages")))
            return rc;
        if (v->n != r->n_jobs)
            return mb__yread_fail(c, v->line, v->origin, f, "%zu percentages for %zu jobs", v->n,
                                  r->n_jobs);
        for (size_t i = 0; i < v->n; i++) {
            char pf[FIELD_MAX];
            fieldf(pf, "%s[%zu]", f, i);
            long p;
            if ((rc = mb__yread_int(c, v->items[i], pf, 1, 100, &p)))
                return rc;
            r->thread_pct[i] = (unsigned)p;
        }
        r->n_thread_pct = v->n;
    }
    if ((v = mb__ymap_get(n, "match_layout", &lkl))) {
        fieldf(f, "%s.match_layout", field);
        if (r->mode != MB_MODE_MPS)
            return mb__yread_fail(c, lkl ? lkl : v->line, v->origin, f,
                                  "only for mode: mps (this run is %s)", mode);
        if (r->n_thread_pct)
            return mb__yread_fail(c, lkl ? lkl : v->line, v->origin, f,
                                  "give thread_percentage or match_layout, not both");
        if ((rc = get_profiles(c, v, f, r->match_layout, &r->n_match_layout)))
            return rc;
        if (r->n_match_layout != r->n_jobs)
            return mb__yread_fail(c, v->line, v->origin, f, "%zu profiles for %zu jobs",
                                  r->n_match_layout, r->n_jobs);
    }
    return MB_OK;
}

static int parse_run(struct mb__yread *c, struct mb_experiment *exp, size_t idx,
                     const struct mb__ynode *n)
{
    static const char *const keys[] = {
        "name",         "mode",         "jobs", "layout", "only", "thread_percentage",
        "match_layout", "power_limits", "on",   NULL};
    struct mb_exp_run *r = &exp->runs[idx];
    r->line = n->line;
    char field[FIELD_MAX], f[FIELD_MAX];
    fieldf(field, "runs[%zu]", idx);
    int rc = mb__yread_want(c, n, MB__Y_MAP, field, "a mapping with name, mode, jobs");
    if (rc || (rc = check_keys(c, n, field, keys)))
        return rc;
    const struct mb__ynode *v;
    if ((rc = parse_run_name(c, exp, idx, n, field)))
        return rc;
    fieldf(f, "%s.mode", field);
    if (!(v = mb__ymap_get(n, "mode", NULL)))
        return mb__yread_fail(c, n->line, n->origin, f,
                              "missing (exclusive, timeslice, partition, mig or mps)");
    char mode[32];
    if ((rc = mb__yread_string(c, v, f, mode, sizeof(mode))))
        return rc;
    static const enum mb_exp_mode modes[] = {MB_MODE_EXCLUSIVE, MB_MODE_TIMESLICE,
                                             MB_MODE_PARTITION, MB_MODE_MIG, MB_MODE_MPS};
    bool found = false;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(mode, mb_exp_mode_str(modes[i])) == 0) {
            r->mode = modes[i];
            found = true;
        }
    if (!found)
        return mb__yread_fail(c, v->line, v->origin, f,
                              "unknown mode '%s' (exclusive, timeslice, partition, mig or mps)",
                              mode);
    if ((rc = parse_run_jobs(c, exp, r, n, field)))
        return rc;
    unsigned lkl = 0;
    if ((v = mb__ymap_get(n, "layout", &lkl))) {
        fieldf(f, "%s.layout", field);
        if (r->mode != MB_MODE_MIG)
            return mb__yread_fail(c, lkl ? lkl : v->line, v->origin, f,
                                  "only for mode: mig (this run is %s)", mode);
        if ((rc = get_profiles(c, v, f, r->layout, &r->n_layout)))
            return rc;
        if (r->n_layout != r->n_jobs)
            return mb__yread_fail(c, v->line, v->origin, f,
                                  "%zu profiles for %zu jobs (job i runs on instance i)",
                                  r->n_layout, r->n_jobs);
    } else if (r->mode == MB_MODE_MIG) {
        fieldf(f, "%s.layout", field);
        return mb__yread_fail(c, n->line, n->origin, f,
                              "missing: mode mig needs a layout, e.g. [4g.40gb, 2g.20gb, 1g.10gb]");
    }
    if ((rc = parse_run_mps(c, r, n, field, mode)))
        return rc;
    if ((v = mb__ymap_get(n, "only", NULL))) {
        fieldf(f, "%s.only", field);
        size_t cnt = v->kind == MB__Y_SEQ ? v->n : 1;
        if (v->kind == MB__Y_MAP || cnt == 0)
            return mb__yread_fail(c, v->line, v->origin, f, "expected host, gpu or a list of them");
        for (size_t i = 0; i < cnt; i++) {
            const struct mb__ynode *it = v->kind == MB__Y_SEQ ? v->items[i] : v;
            if (it->kind != MB__Y_SCALAR)
                return mb__yread_fail(c, it->line, it->origin, f, "expected host or gpu");
            if (strcmp(it->str, "host") == 0)
                r->only |= MB_ONLY_HOST;
            else if (strcmp(it->str, "gpu") == 0)
                r->only |= MB_ONLY_GPU;
            else
                return mb__yread_fail(c, it->line, it->origin, f, "'%s' is not host or gpu",
                                      it->str);
        }
    }
    if (r->mode == MB_MODE_MIG && r->n_jobs > 7)
        return mb__yread_fail(c, n->line, n->origin, field, "a MIG layout has at most 7 instances");
    if ((v = mb__ymap_get(n, "power_limits", NULL))) {
        fieldf(f, "%s.power_limits", field);
        r->power_limits_line = v->line;
        if ((rc = get_power_limits(c, v, f, r->power_limits, &r->n_power_limits)))
            return rc;
    }
    return parse_run_on(c, n, field, r);
}

static int parse_measure(struct mb__yread *c, const struct mb__ynode *n, struct mb_exp_measure *m)
{
    static const char *const keys[] = {"warmup",       "duration",         "ci_target",
                                       "max_duration", "repetitions",      "sample_interval",
                                       "idle",         "cooldown",         "cooldown_margin",
                                       "grace",        "progress_timeout", NULL};
    int rc = mb__yread_want(c, n, MB__Y_MAP, "measure", "a mapping");
    if (rc || (rc = check_keys(c, n, "measure", keys)))
        return rc;
    const struct mb__ynode *v;
    if ((v = mb__ymap_get(n, "warmup", NULL)) &&
        (rc = get_amount(c, v, "measure.warmup", true, false, &m->warmup)))
        return rc;
    if ((v = mb__ymap_get(n, "duration", NULL))) {
        if ((rc = get_amount(c, v, "measure.duration", true, true, &m->duration)))
            return rc;
        if ((m->duration.kind == MB_AMOUNT_TIME && m->duration.ns <= 0) ||
            (m->duration.kind == MB_AMOUNT_STEPS && m->duration.steps == 0))
            return mb__yread_fail(c, v->line, v->origin, "measure.duration",
                                  "must be longer than 0");
    }
    bool stable = m->duration.kind == MB_AMOUNT_STABLE;
    bool completion = m->duration.kind == MB_AMOUNT_COMPLETION;
    if (completion)
        m->max_duration_ns = 0; /* no cap unless one is given */
    unsigned kl = 0;
    if ((v = mb__ymap_get(n, "ci_target", &kl))) {
        if (!stable)
            return mb__yread_fail(c, kl ? kl : v->line, v->origin, "measure.ci_target",
                                  "only with duration: stable");
        if ((rc = mb__yread_number(c, v, "measure.ci_target", 1e-4, 0.5, &m->ci_target)))
            return rc;
    }
    if ((v = mb__ymap_get(n, "max_duration", &kl))) {
        if (!stable && !completion)
            return mb__yread_fail(c, kl ? kl : v->line, v->origin, "measure.max_duration",
                                  "only with duration: stable or completion");
        if ((rc = get_time(c, v, "measure.max_duration", NS_PER_S, &m->max_duration_ns)))
            return rc;
    }
    if ((v = mb__ymap_get(n, "repetitions", NULL))) {
        long r;
        if ((rc = mb__yread_int(c, v, "measure.repetitions", 1, 1000, &r)))
            return rc;
        m->repetitions = (int)r;
    }
    if ((v = mb__ymap_get(n, "sample_interval", NULL))) {
        if ((rc = get_time(c, v, "measure.sample_interval", 1000000, &m->sample_interval_ns)))
            return rc;
        if (m->sample_interval_ns > 10 * NS_PER_S)
            return mb__yread_fail(c, v->line, v->origin, "measure.sample_interval",
                                  "longer than 10s");
    }
    if ((v = mb__ymap_get(n, "idle", NULL)) &&
        (rc = get_time(c, v, "measure.idle", 0, &m->idle_ns)))
        return rc;
    if ((v = mb__ymap_get(n, "cooldown", NULL)) &&
        (rc = get_time(c, v, "measure.cooldown", 0, &m->cooldown_ns)))
        return rc;
    if ((v = mb__ymap_get(n, "cooldown_margin", NULL)) &&
        (rc = mb__yread_fraction(c, v, "measure.cooldown_margin", &m->cooldown_margin)))
        return rc;
    if ((v = mb__ymap_get(n, "grace", NULL)) &&
        (rc = get_time(c, v, "measure.grace", 0, &m->grace_ns)))
        return rc;
    if ((v = mb__ymap_get(n, "progress_timeout", NULL)) &&
        (rc = get_time(c, v, "measure.progress_timeout", 100000000, &m->progress_timeout_ns)))
        return rc;
    return MB_OK;
}

/* A value that goes onto an #SBATCH line as it is: no blank, quote, '#', '%', '$' or control. */
static int slurm_value(struct mb__yread *c, const struct mb__ynode *v, const char *field, char *out,
                       size_t cap)
{
    int rc = mb__yread_string(c, v, field, out, cap);
    if (rc)
        return rc;
    for (const unsigned char *p = (const unsigned char *)out; *p; p++)
        if (*p <= ' ' || *p == 0x7f || strchr("'\"\\#%`$;&|<>", *p))
            return mb__yread_failn(c, v, field,
                                   "'%s': character '%c' is not allowed (sbatch reads "
                                   "this line without a shell)",
                                   out, *p > ' ' ? *p : '?');
    if (!out[0])
        return mb__yread_failn(c, v, field, "empty");
    return MB_OK;
}

/* slurm.gpu numbers the cells as on the nodes' GPU model: it must be a model of the catalog. */
static int slurm_gpu_known(struct mb__yread *c, const struct mb__ynode *v, const char *gpu)
{
    struct mb_catalog *cat = NULL;
    struct mb_error e;
    const struct mb_gpu_model *model = NULL;
    int rc = mb_catalog_create(&cat, &e);
    if (rc == MB_OK)
        rc = mb_catalog_find(cat, gpu, &model, &e);
    mb_catalog_destroy(cat);
    if (rc == MB_ENOMEM)
        return mb__yread_failn(c, v, "slurm.gpu", "out of memory");
    if (rc != MB_OK)
        return mb__yread_failn(c, v, "slurm.gpu", "'%s': %s", gpu, e.msg);
    return MB_OK;
}

static int parse_slurm(struct mb__yread *c, const struct mb__ynode *n, struct mb_exp_slurm *s)
{
    static const char *const keys[] = {"gpu",    "partition", "account", "time", "max_concurrent",
                                       "sbatch", NULL};
    int rc = mb__yread_want(c, n, MB__Y_MAP, "slurm", "a mapping");
    if (rc || (rc = check_keys(c, n, "slurm", keys)))
        return rc;
    const struct mb__ynode *v;
    if ((v = mb__ymap_get(n, "gpu", NULL)) &&
        ((rc = slurm_value(c, v, "slurm.gpu", s->gpu, sizeof(s->gpu))) ||
         (rc = slurm_gpu_known(c, v, s->gpu))))
        return rc;
    if ((v = mb__ymap_get(n, "partition", NULL)) &&
        (rc = slurm_value(c, v, "slurm.partition", s->partition, sizeof(s->partition))))
        return rc;
    if ((v = mb__ymap_get(n, "account", NULL)) &&
        (rc = slurm_value(c, v, "slurm.account", s->account, sizeof(s->account))))
        return rc;
    if ((v = mb__ymap_get(n, "time", NULL)) &&
        (rc = slurm_value(c, v, "slurm.time", s->time, sizeof(s->time))))
        return rc;
    if ((v = mb__ymap_get(n, "max_concurrent", NULL)) &&
        (rc = mb__yread_uint(c, v, "slurm.max_concurrent", 1000000, &s->max_concurrent)))
        return rc;
    if (!(v = mb__ymap_get(n, "sbatch", NULL)))
        return MB_OK;
    if ((rc = mb__yread_want(c, v, MB__Y_SEQ, "slurm.sbatch", "a list of sbatch options")))
        return rc;
    if (v->n > MB_EXP_SLURM_MAX_LINES)
        return mb__yread_failn(c, v, "slurm.sbatch", "at most %d options", MB_EXP_SLURM_MAX_LINES);
    for (size_t i = 0; i < v->n; i++) {
        char f[48];
        snprintf(f, sizeof(f), "slurm.sbatch[%zu]", i);
        if ((rc = slurm_value(c, v->items[i], f, s->sbatch[i], sizeof(s->sbatch[i]))))
            return rc;
        if (s->sbatch[i][0] != '-')
            return mb__yread_failn(c, v->items[i], f,
                                   "'%s': an sbatch option such as --qos=high "
                                   "was expected",
                                   s->sbatch[i]);
        s->n_sbatch = i + 1;
    }
    return MB_OK;
}

static int parse_root(struct mb__yread *c, const struct mb__ynode *root, struct mb_experiment *exp)
{
    static const char *const keys[] = {
        "version", "name",  "device",       "python",          "workloads", "runs",
        "measure", "slurm", "power_limits", "manage_mig_mode", NULL};
    if (!root)
        return mb__yread_fail(c, 1, NULL, NULL,
                              "the file is empty (expected version: 1, name, workloads, "
                              "runs)");
    int rc = mb__yread_want(c, root, MB__Y_MAP, "", "a mapping at the top level");
    if (rc || (rc = check_keys(c, root, "", keys)))
        return rc;
    const struct mb__ynode *v;
    if (!(v = mb__ymap_get(root, "version", NULL)))
        return mb__yread_fail(c, root->line, NULL, "version", "missing (write version: 1)");
    long version;
    if ((rc = mb__yread_int(c, v, "version", 0, 1000, &version)))
        return rc;
    if (version != 1)
        return mb__yread_fail(c, v->line, v->origin, "version",
                              "version %ld is not supported (only 1)", version);
    if (!(v = mb__ymap_get(root, "name", NULL)))
        return mb__yread_fail(c, root->line, NULL, "name", "missing");
    if ((rc = get_name(c, v, "name", exp->name)))
        return rc;
    if ((v = mb__ymap_get(root, "device", NULL)) &&
        (rc = mb__yread_string(c, v, "device", exp->device, sizeof(exp->device))))
        return rc;
    if (!exp->device[0])
        return mb__yread_fail(c, v ? v->line : 0, v ? v->origin : NULL, "device", "empty");
    if ((v = mb__ymap_get(root, "python", NULL)) &&
        (rc = mb__yread_string(c, v, "python", exp->python, sizeof(exp->python))))
        return rc;
    if (!exp->python[0])
        return mb__yread_fail(c, v ? v->line : 0, v ? v->origin : NULL, "python", "empty");
    if ((v = mb__ymap_get(root, "manage_mig_mode", NULL)) &&
        (rc = mb__yread_bool(c, v, "manage_mig_mode", &exp->manage_mig_mode)))
        return rc;
    if (!(v = mb__ymap_get(root, "workloads", NULL)))
        return mb__yread_fail(c, root->line, NULL, "workloads", "missing");
    if ((rc = mb__yread_want(c, v, MB__Y_MAP, "workloads", "a mapping of workload names")))
        return rc;
    if (v->n == 0 || v->n > MB_EXP_MAX_WORKLOADS)
        return mb__yread_fail(c, v->line, v->origin, "workloads", "needs 1..%d workloads",
                              MB_EXP_MAX_WORKLOADS);
    for (size_t i = 0; i < v->n; i++) {
        if ((rc = parse_workload(c, v->keys[i], v->key_lines[i], v->items[i], &exp->workloads[i])))
            return rc;
        exp->n_workloads = i + 1;
    }
    if ((v = mb__ymap_get(root, "measure", NULL)) && (rc = parse_measure(c, v, &exp->measure)))
        return rc;
    if ((v = mb__ymap_get(root, "power_limits", NULL))) {
        exp->power_limits_line = v->line;
        if ((rc = get_power_limits(c, v, "power_limits", exp->power_limits, &exp->n_power_limits)))
            return rc;
    }
    if ((v = mb__ymap_get(root, "slurm", NULL)) && (rc = parse_slurm(c, v, &exp->slurm)))
        return rc;
    if (!(v = mb__ymap_get(root, "runs", NULL)))
        return mb__yread_fail(c, root->line, NULL, "runs", "missing");
    if ((rc = mb__yread_want(c, v, MB__Y_SEQ, "runs", "a list of runs")))
        return rc;
    if (v->n == 0 || v->n > MB_EXP_MAX_RUNS)
        return mb__yread_fail(c, v->line, v->origin, "runs", "needs 1..%d runs", MB_EXP_MAX_RUNS);
    for (size_t i = 0; i < v->n; i++) {
        if ((rc = parse_run(c, exp, i, v->items[i])))
            return rc;
        exp->n_runs = i + 1;
    }
    return MB_OK;
}

static void set_defaults(struct mb_experiment *exp)
{
    snprintf(exp->device, sizeof(exp->device), "auto");
    snprintf(exp->python, sizeof(exp->python), "auto");
    struct mb_exp_measure *m = &exp->measure;
    m->warmup.kind = MB_AMOUNT_TIME;
    m->warmup.ns = 0;
    m->duration.kind = MB_AMOUNT_TIME;
    m->duration.ns = 60 * NS_PER_S;
    m->ci_target = 0.02;
    m->max_duration_ns = 600 * NS_PER_S;
    m->repetitions = -1;
    m->sample_interval_ns = 100000000;
    m->cooldown_margin = 0.1;
    m->grace_ns = 10 * NS_PER_S;
    m->progress_timeout_ns = 120 * NS_PER_S;
}

int mb_experiment_parse(const char *path, const char *text, size_t len,
                        const char *const *overrides, size_t n_overrides,
                        struct mb_experiment **out, struct mb_error *err)
{
    *out = NULL;
    struct mb__yread c = {.path = path,
                          .err = err,
                          .max_depth = MB__EXP_YAML_MAX_DEPTH,
                          .max_nodes = MB__EXP_YAML_MAX_NODES};
    struct mb__ynode *root = NULL;
    if (n_overrides > MB_EXP_MAX_OVERRIDES)
        return mb_error_set(err, MB_EINVAL, "more than %d --set overrides", MB_EXP_MAX_OVERRIDES);
    struct mb_experiment *exp = calloc(1, sizeof(*exp));
    if (!exp)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    set_defaults(exp);
    snprintf(exp->path, sizeof(exp->path), "%s", path);
    uint64_t h = mb_fnv1a64(MB_FNV1A_INIT, text, len);
    for (size_t i = 0; i < n_overrides; i++) {
        h = mb_fnv1a64(h, "\0", 1);
        h = mb_fnv1a64(h, overrides[i], strlen(overrides[i]));
        exp->overrides[i] = strdup(overrides[i]);
        if (!exp->overrides[i]) {
            mb_experiment_destroy(exp);
            return mb_error_set(err, MB_ENOMEM, "out of memory");
        }
        exp->n_overrides = i + 1;
    }
    snprintf(exp->sha, sizeof(exp->sha), "%016llx", (unsigned long long)h);
    int rc = mb__yread_load(&c, text, len, NULL, &root);
    if (rc)
        goto fail;
    for (size_t i = 0; i < n_overrides; i++) {
        if (!root) {
            rc = mb__yread_fail(&c, 1, NULL, NULL, "the file is empty");
            goto fail;
        }
        if (root->kind != MB__Y_MAP) {
            rc = mb__yread_fail(&c, root->line, NULL, NULL, "expected a mapping at the top level");
            goto fail;
        }
        /* Overrides point into exp->overrides so that node origins outlive the call. */
        if ((rc = apply_override(&c, root, exp->overrides[i])))
            goto fail;
    }
    if ((rc = parse_root(&c, root, exp)) || (rc = mb_experiment_expand_power(exp, err)))
        goto fail;
    mb__ynode_free(root);
    *out = exp;
    return MB_OK;
fail:
    mb__ynode_free(root);
    mb_experiment_destroy(exp);
    return rc;
}

int mb_experiment_load(const char *path, const char *const *overrides, size_t n_overrides,
                       struct mb_experiment **out, struct mb_error *err)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = mb_file_read(path, MB_EXP_FILE_MAX, &buf, &len, err);
    if (rc == MB_ENOTFOUND) { /* documented: MB_EIO whenever it cannot be read */
        rc = MB_EIO;
        if (err)
            err->status = MB_EIO;
    } else if (rc == MB_ERANGE)
        rc = mb_error_set(err, MB_EPARSE, "%s: larger than %d bytes", path, MB_EXP_FILE_MAX);
    if (rc == MB_OK)
        rc = mb_experiment_parse(path, buf, len, overrides, n_overrides, out, err);
    free(buf);
    return rc;
}

void mb_experiment_destroy(struct mb_experiment *exp)
{
    if (!exp)
        return;
    for (size_t i = 0; i < exp->n_overrides; i++)
        free(exp->overrides[i]);
    for (size_t i = 0; i < MB_EXP_MAX_WORKLOADS; i++) {
        struct mb_exp_workload *w = &exp->workloads[i];
        for (size_t j = 0; j < MB_EXP_MAX_ARGS; j++) {
            free(w->command[j]);
            free(w->host_args[j]);
            free(w->gpu_args[j]);
        }
    }
    free(exp);
}
