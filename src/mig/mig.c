/* SPDX-License-Identifier: Apache-2.0 */
/* MIG instances over the device layer and the ledger of what migbench created (mig.h). */
#define _DEFAULT_SOURCE /* realpath, flock */
#include "base/json_io.h"
#include "migbench/mig.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device/state.h"
#include "migbench/fileio.h"

#define LEDGER_FILE_MAX (1u << 20)
#define LEDGER_MAX 64 /* entries per GPU: every GI the largest GPU can hold, several times */
#define DEFAULT_STATE_DIR "/var/lib/migbench"

struct mb_mig_ledger {
    char path[MB_MIG_PATH_MAX]; /* "" when the device has none */
    char dir[MB_MIG_PATH_MAX];
    char device_uuid[MB_UUID_MAX];
    int lock_fd;
    size_t n;
    struct mb_mig_owned e[LEDGER_MAX];
};

const char *mb_mig_creator_str(enum mb_mig_creator c)
{
    return c == MB_MIG_BY_RUN ? "run" : "mig";
}

/* ---- where the ledger lives ----------------------------------------------------------------- */

static void ledger_path(struct mb_mig_ledger *l, struct mb_device *dev, const char *spec)
{
    char state[MB_MIG_PATH_MAX];
    int w = -1;
    if (mb_device_caps(dev) & MB_CAP_EMULATED) {
        /* The device layer reads its spec: an emulated GPU's state file, if it has one. */
        if (mb__device_state_file(spec, state, sizeof(state)))
            w = snprintf(l->path, sizeof(l->path), "%s.owned.json", state);
    } else if (l->device_uuid[0]) {
        const char *dir = getenv("MIGBENCH_STATE_DIR");
        if (!dir || !dir[0])
            dir = DEFAULT_STATE_DIR;
        char safe[MB_UUID_MAX];
        size_t n = 0;
        for (const char *s = l->device_uuid; *s && n + 1 < sizeof(safe); s++)
            safe[n++] = isalnum((unsigned char)*s) || *s == '-' ? *s : '_';
        safe[n] = '\0';
        w = snprintf(l->path, sizeof(l->path), "%s/owned-%s.json", dir, safe);
    }
    if (w < 0 || (size_t)w >= sizeof(l->path)) {
        l->path[0] = '\0';
        return;
    }
    snprintf(l->dir, sizeof(l->dir), "%s", l->path);
    char *slash = strrchr(l->dir, '/');
    if (!slash)
        snprintf(l->dir, sizeof(l->dir), ".");
    else if (slash == l->dir)
        slash[1] = '\0';
    else
        *slash = '\0';
}

int mb_mig_ledger_open(struct mb_device *dev, const char *device_spec, struct mb_mig_ledger **out,
                       struct mb_error *err)
{
    *out = NULL;
    struct mb_mig_ledger *l = calloc(1, sizeof(*l));
    if (!l)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    l->lock_fd = -1;
    struct mb_device_info info;
    memset(&info, 0, sizeof(info));
    int rc = mb_device_info(dev, &info, err);
    if (rc != MB_OK) {
        free(l);
        return rc;
    }
    snprintf(l->device_uuid, sizeof(l->device_uuid), "%s", info.uuid);
    ledger_path(l, dev, device_spec);
    *out = l;
    return MB_OK;
}

void mb_mig_ledger_close(struct mb_mig_ledger *l)
{
    if (!l)
        return;
    if (l->lock_fd >= 0)
        close(l->lock_fd);
    free(l);
}

const char *mb_mig_ledger_path(const struct mb_mig_ledger *l)
{
    return l ? l->path : "";
}

size_t mb_mig_ledger_count(const struct mb_mig_ledger *l)
{
    return l ? l->n : 0;
}

const struct mb_mig_owned *mb_mig_ledger_entry(const struct mb_mig_ledger *l, size_t i)
{
    return l && i < l->n ? &l->e[i] : NULL;
}

/* ---- locking -------------------------------------------------------------------------------- */

static int ledger_lock(struct mb_mig_ledger *l, struct mb_error *err)
{
    if (strcmp(l->dir, DEFAULT_STATE_DIR) == 0)
        mkdir(DEFAULT_STATE_DIR, 0755); /* its absence is reported by open below */
    int fd = open(l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mb_error_set(err, MB_EIO, "%s: %s", l->dir, strerror(errno));
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return mb_error_set(err, MB_EIO, "%s: cannot lock: %s", l->dir, strerror(e));
        }
    }
    l->lock_fd = fd;
    return MB_OK;
}

static void ledger_unlock(struct mb_mig_ledger *l)
{
    if (l->lock_fd >= 0) {
        flock(l->lock_fd, LOCK_UN);
        close(l->lock_fd);
        l->lock_fd = -1;
    }
}

/* ---- reading and writing -------------------------------------------------------------------- */

static bool num_in(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi;
}

static int bad_entry(const struct mb_mig_ledger *l, size_t i, struct mb_error *err)
{
    /* Skipping the entry would let the next save drop it: refuse, change nothing. */
    return mb_error_set(err, MB_EPARSE,
                        "%s: field 'gpu_instances[%zu]': expected gi_id, profile_id, profile, "
                        "start and size in range; move the record away to continue",
                        l->path, i);
}

static int parse_entry(const struct mb_mig_ledger *l, const cJSON *j, size_t i,
                       struct mb_mig_owned *o, struct mb_error *err)
{
    memset(o, 0, sizeof(*o));
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "gi_id");
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(j, "ci_id");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(j, "profile_id");
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(j, "profile");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "start");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(j, "size");
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(j, "state");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(j, "creator");
    o->confirmed = !cJSON_IsString(state) || strcmp(state->valuestring, "intent") != 0;
    bool gi_ok = num_in(id, 0, 1e6) || (!o->confirmed && (!id || cJSON_IsNull(id)));
    if (!gi_ok || !num_in(pid, 0, 1e6) || !cJSON_IsString(pn) || !num_in(st, 0, 64) ||
        !num_in(sz, 1, 64) || (ci && !cJSON_IsNull(ci) && !num_in(ci, 0, 1e6)))
        return bad_entry(l, i, err);
    o->has_gi = cJSON_IsNumber(id);
    o->gi_id = o->has_gi ? (unsigned)id->valuedouble : 0;
    o->has_ci = cJSON_IsNumber(ci);
    o->ci_id = o->has_ci ? (unsigned)ci->valuedouble : 0;
    o->profile_id = (unsigned)pid->valuedouble;
    snprintf(o->profile, sizeof(o->profile), "%s", pn->valuestring);
    o->placement.start = (unsigned)st->valuedouble;
    o->placement.size = (unsigned)sz->valuedouble;
    o->creator =
        cJSON_IsString(by) && strcmp(by->valuestring, "run") == 0 ? MB_MIG_BY_RUN : MB_MIG_BY_MIG;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "pid");
    o->pid = num_in(v, 0, 1e9) ? (long)v->valuedouble : 0;
    v = cJSON_GetObjectItemCaseSensitive(j, "time");
    o->time_unix = cJSON_IsNumber(v) ? v->valuedouble : 0;
    v = cJSON_GetObjectItemCaseSensitive(j, "mig_uuid");
    if (cJSON_IsString(v))
        snprintf(o->mig_uuid, sizeof(o->mig_uuid), "%s", v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(j, "experiment");
    if (cJSON_IsString(v))
        snprintf(o->experiment, sizeof(o->experiment), "%s", v->valuestring);
    return MB_OK;
}

static int parse_ledger(struct mb_mig_ledger *l, const cJSON *root, struct mb_error *err)
{
    const cJSON *uuid = cJSON_GetObjectItemCaseSensitive(root, "device_uuid");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "gpu_instances");
    if (!cJSON_IsString(uuid) || !cJSON_IsArray(arr))
        return mb_error_set(err, MB_EPARSE,
                            "%s: not a migbench ownership record; move it away to continue",
                            l->path);
    if (strcmp(uuid->valuestring, l->device_uuid) != 0)
        return mb_error_set(err, MB_EINVAL,
                            "%s: the record is for GPU %s, not %s; move it away to continue",
                            l->path, uuid->valuestring, l->device_uuid);
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, arr)
    {
        if (l->n >= LEDGER_MAX)
            return bad_entry(l, i, err);
        int rc = parse_entry(l, e, i++, &l->e[l->n], err);
        if (rc != MB_OK)
            return rc;
        l->n++;
    }
    return MB_OK;
}

/* Reads the file into l (the caller holds the lock, or accepts a snapshot). */
static int ledger_read(struct mb_mig_ledger *l, struct mb_error *err)
{
    l->n = 0;
    char *buf = NULL;
    struct mb_error e;
    mb_error_clear(&e);
    int rc = mb_file_read(l->path, LEDGER_FILE_MAX, &buf, NULL, &e);
    if (rc == MB_ENOTFOUND)
        return MB_OK;
    if (rc != MB_OK)
        return mb_error_set(err, rc, "cannot read the record of instances migbench made: %s",
                            e.msg);
    cJSON *root = NULL;
    rc = mb_json_parse(buf, strlen(buf), l->path, &root, &e);
    free(buf);
    if (rc != MB_OK)
        return mb_error_set(err, rc,
                            "%s; not a migbench ownership record; move it away to continue", e.msg);
    rc = parse_ledger(l, root, err);
    cJSON_Delete(root);
    if (rc != MB_OK)
        l->n = 0;
    return rc;
}

static cJSON *entry_json(const struct mb_mig_owned *o)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    if (o->has_gi)
        cJSON_AddNumberToObject(e, "gi_id", o->gi_id);
    else
        cJSON_AddNullToObject(e, "gi_id");
    if (o->has_ci)
        cJSON_AddNumberToObject(e, "ci_id", o->ci_id);
    else
        cJSON_AddNullToObject(e, "ci_id");
    cJSON_AddNumberToObject(e, "profile_id", o->profile_id);
    cJSON_AddStringToObject(e, "profile", o->profile);
    cJSON_AddNumberToObject(e, "start", o->placement.start);
    cJSON_AddNumberToObject(e, "size", o->placement.size);
    if (o->mig_uuid[0])
        cJSON_AddStringToObject(e, "mig_uuid", o->mig_uuid);
    else
        cJSON_AddNullToObject(e, "mig_uuid");
    cJSON_AddStringToObject(e, "state", o->confirmed ? "confirmed" : "intent");
    cJSON_AddStringToObject(e, "creator", mb_mig_creator_str(o->creator));
    cJSON_AddNumberToObject(e, "pid", (double)o->pid);
    if (o->experiment[0])
        cJSON_AddStringToObject(e, "experiment", o->experiment);
    else
        cJSON_AddNullToObject(e, "experiment");
    cJSON_AddNumberToObject(e, "time", o->time_unix);
    return e;
}

/* Writes l atomically (temporary file, then rename); an empty ledger is removed. */
static int ledger_write(const struct mb_mig_ledger *l, struct mb_error *err)
{
    if (l->n == 0) {
        if (unlink(l->path) != 0 && errno != ENOENT)
            return mb_error_set(err, MB_EIO, "%s: cannot remove: %s", l->path, strerror(errno));
        return MB_OK;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = NULL;
    if (root) {
        cJSON_AddNumberToObject(root, "version", 2);
        cJSON_AddStringToObject(root, "device_uuid", l->device_uuid);
        arr = cJSON_AddArrayToObject(root, "gpu_instances");
    }
    for (size_t i = 0; arr && i < l->n; i++) {
        cJSON *e = entry_json(&l->e[i]);
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(root);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    struct mb_error e;
    mb_error_clear(&e);
    int rc = mb_file_write_json_atomic(l->path, root, 0666, &e);
    cJSON_Delete(root);
    if (rc != MB_OK)
        return mb_error_set(err, rc, "cannot write the record of instances migbench made: %s",
                            e.msg);
    return MB_OK;
}

int mb_mig_ledger_load(struct mb_mig_ledger *l, struct mb_error *err)
{
    if (!l || !l->path[0]) {
        if (l)
            l->n = 0;
        return MB_OK;
    }
    /* A missing directory holds no ledger: nothing to read, nothing to lock. */
    struct stat sb;
    if (stat(l->dir, &sb) != 0) {
        l->n = 0;
        return MB_OK;
    }
    int rc = ledger_lock(l, err);
    if (rc != MB_OK)
        return rc;
    rc = ledger_read(l, err);
    ledger_unlock(l);
    return rc;
}

/* Read-modify-write under the lock: fn changes l's entries, which are then written. */
typedef int (*ledger_change_fn)(struct mb_mig_ledger *l, const void *arg, struct mb_error *err);

static int ledger_update(struct mb_mig_ledger *l, ledger_change_fn fn, const void *arg,
                         struct mb_error *err)
{
    if (!l || !l->path[0])
        return MB_OK;
    int rc = ledger_lock(l, err);
    if (rc != MB_OK)
        return rc;
    rc = ledger_read(l, err);
    if (rc == MB_OK)
        rc = fn(l, arg, err);
    if (rc == MB_OK)
        rc = ledger_write(l, err);
    ledger_unlock(l);
    return rc;
}

int mb_mig_ledger_check_writable(struct mb_mig_ledger *l, struct mb_error *err)
{
    if (!l || !l->path[0])
        return MB_OK;
    if (strcmp(l->dir, DEFAULT_STATE_DIR) == 0)
        mkdir(DEFAULT_STATE_DIR, 0755); /* its absence is reported by fopen below */
    char probe[MB_MIG_PATH_MAX + 32];
    int w = snprintf(probe, sizeof(probe), "%s.probe.%ld", l->path, (long)getpid());
    FILE *f = w > 0 && (size_t)w < sizeof(probe) ? fopen(probe, "w") : NULL;
    if (!f)
        return mb_error_set(err, MB_EIO,
                            "cannot write the record of instances migbench makes (%s): %s; "
                            "nothing changed (set MIGBENCH_STATE_DIR to a writable directory)",
                            l->path, strerror(errno));
    fclose(f);
    unlink(probe);
    return MB_OK;
}

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool same_place(struct mb_placement a, struct mb_placement b)
{
    return a.start == b.start && a.size == b.size;
}

static int change_intend(struct mb_mig_ledger *l, const void *arg, struct mb_error *err)
{
    const struct mb_mig_owned *e = arg;
    /* An older entry at this placement is stale (the instance it names is gone). */
    for (size_t i = 0; i < l->n;)
        if (same_place(l->e[i].placement, e->placement))
            l->e[i] = l->e[--l->n];
        else
            i++;
    if (l->n >= LEDGER_MAX)
        return mb_error_set(err, MB_ENORESOURCES, "%s: more than %d entries", l->path, LEDGER_MAX);
    l->e[l->n++] = *e;
    return MB_OK;
}

int mb_mig_ledger_intend(struct mb_mig_ledger *l, const struct mb_mig_owned *e,
                         struct mb_error *err)
{
    struct mb_mig_owned o = *e;
    o.confirmed = false;
    if (!o.pid)
        o.pid = (long)getpid();
    if (o.time_unix <= 0)
        o.time_unix = now_unix();
    return ledger_update(l, change_intend, &o, err);
}

static int change_confirm(struct mb_mig_ledger *l, const void *arg, struct mb_error *err)
{
    const struct mb_mig_owned *c = arg;
    for (size_t i = 0; i < l->n; i++) {
        struct mb_mig_owned *o = &l->e[i];
        if (!same_place(o->placement, c->placement) || o->pid != (long)getpid())
            continue;
        o->confirmed = true;
        o->has_gi = true;
        o->gi_id = c->gi_id;
        if (c->has_ci) {
            o->has_ci = true;
            o->ci_id = c->ci_id;
        }
        if (c->mig_uuid[0])
            snprintf(o->mig_uuid, sizeof(o->mig_uuid), "%s", c->mig_uuid);
        return MB_OK;
    }
    return mb_error_set(err, MB_ENOTFOUND, "%s: no intent for slice %u of this process", l->path,
                        c->placement.start);
}

int mb_mig_ledger_confirm(struct mb_mig_ledger *l, struct mb_placement placement, unsigned gi_id,
                          bool has_ci, unsigned ci_id, const char *mig_uuid, struct mb_error *err)
{
    struct mb_mig_owned c;
    memset(&c, 0, sizeof(c));
    c.placement = placement;
    c.gi_id = gi_id;
    c.has_ci = has_ci;
    c.ci_id = ci_id;
    snprintf(c.mig_uuid, sizeof(c.mig_uuid), "%s", mig_uuid ? mig_uuid : "");
    return ledger_update(l, change_confirm, &c, err);
}

static int change_forget(struct mb_mig_ledger *l, const void *arg, struct mb_error *err)
{
    (void)err;
    const struct mb_placement *p = arg;
    for (size_t i = 0; i < l->n;)
        if (same_place(l->e[i].placement, *p))
            l->e[i] = l->e[--l->n];
        else
            i++;
    return MB_OK;
}

int mb_mig_ledger_forget(struct mb_mig_ledger *l, struct mb_placement placement,
                         struct mb_error *err)
{
    return ledger_update(l, change_forget, &placement, err);
}

static bool owns(const struct mb_mig_owned *o, const struct mb_mig_gi *g)
{
    if (!same_place(o->placement, g->placement) || o->profile_id != g->profile_id)
        return false;
    return o->has_gi ? o->gi_id == g->id : !o->confirmed;
}

const struct mb_mig_owned *mb_mig_ledger_owner(const struct mb_mig_ledger *l,
                                               const struct mb_mig_gi *g)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (owns(&l->e[i], g))
            return &l->e[i];
    return NULL;
}

struct live {
    const struct mb_mig_gi *gis;
    size_t n;
};

static int change_prune(struct mb_mig_ledger *l, const void *arg, struct mb_error *err)
{
    (void)err;
    const struct live *lv = arg;
    for (size_t i = 0; i < l->n;) {
        bool live = false;
        for (size_t k = 0; k < lv->n && !live; k++)
            live = owns(&l->e[i], &lv->gis[k]);
        /* An intent of a process that still runs may be about to be created: kept. */
        if (!l->e[i].confirmed && l->e[i].pid > 0 && l->e[i].pid != (long)getpid())
            live = live || kill((pid_t)l->e[i].pid, 0) == 0 || errno != ESRCH;
        if (live)
            i++;
        else
            l->e[i] = l->e[--l->n];
    }
    return MB_OK;
}

int mb_mig_ledger_prune(struct mb_mig_ledger *l, const struct mb_mig_gi *gis, size_t n,
                        struct mb_error *err)
{
    struct live lv = {gis, n};
    return ledger_update(l, change_prune, &lv, err);
}

/* ---- instances on the device ---------------------------------------------------------------- */

static void sort_gis(struct mb_mig_gi *gis, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            const struct mb_mig_gi *a = &gis[j - 1], *b = &gis[j];
            bool swap =
                a->placement.size < b->placement.size ||
                (a->placement.size == b->placement.size && a->placement.start > b->placement.start);
            if (!swap)
                break;
            struct mb_mig_gi tmp = gis[j];
            gis[j] = gis[j - 1];
            gis[j - 1] = tmp;
        }
}

static void add_instance(struct mb_mig_gi *gis, size_t cap, size_t *n,
                         const struct mb_mig_instance *in)
{
    struct mb_mig_gi *g = NULL;
    for (size_t k = 0; k < *n && !g; k++)
        if (gis[k].id == in->gi_id)
            g = &gis[k];
    if (!g) {
        if (*n >= cap)
            return;
        g = &gis[(*n)++];
        memset(g, 0, sizeof(*g));
        g->id = in->gi_id;
        g->profile_id = in->profile_id;
        snprintf(g->profile_name, sizeof(g->profile_name), "%s", in->profile_name);
        g->placement = in->placement;
    }
    if (in->has_ci && g->n_ci < MB_MIG_MAX_CIS) {
        if (g->n_ci == 0)
            snprintf(g->uuid, sizeof(g->uuid), "%s", in->uuid);
        g->ci[g->n_ci++] = in->ci_id;
    }
}

int mb_mig_list(struct mb_device *dev, struct mb_mig_gi *out, size_t cap, size_t *n,
                struct mb_error *err)
{
    struct mb_mig_instance inst[MB_MAX_MIG_INSTANCES * 4];
    size_t ni = 0;
    *n = 0;
    struct mb_error e;
    int rc = mb_device_mig_instances(dev, inst, sizeof(inst) / sizeof(inst[0]), &ni, &e);
    if (rc != MB_OK)
        return mb_error_set(err, rc, "cannot list MIG instances: %s", e.msg);
    for (size_t i = 0; i < ni; i++)
        add_instance(out, cap, n, &inst[i]);
    struct mb_process procs[MB_MAX_PROCESSES];
    size_t np = 0;
    rc = mb_device_processes(dev, procs, MB_MAX_PROCESSES, &np, &e);
    if (rc != MB_OK && rc != MB_EUNSUPPORTED)
        return mb_error_set(err, rc, "cannot list processes: %s", e.msg);
    for (size_t i = 0; rc == MB_OK && i < np && i < MB_MAX_PROCESSES; i++)
        for (size_t k = 0; k < *n; k++)
            if (procs[i].gi_id >= 0 && (unsigned)procs[i].gi_id == out[k].id &&
                out[k].n_procs++ == 0)
                out[k].first_pid = procs[i].pid;
    sort_gis(out, *n);
    return MB_OK;
}

int mb_mig_current_layout(struct mb_device *dev, const struct mb_gpu_model *m,
                          struct mb_layout *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    struct mb_mig_instance cur[MB_MAX_MIG_INSTANCES * 2];
    size_t n = 0;
    int rc = mb_device_mig_instances(dev, cur, sizeof(cur) / sizeof(cur[0]), &n, err);
    if (rc != MB_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen = seen || cur[k].gi_id == cur[i].gi_id;
        if (seen)
            continue;
        const struct mb_gi_profile *p = mb_model_profile(m, cur[i].profile_name);
        if (!p || out->n == MB_LAYOUT_MAX)
            return mb_error_set(err, MB_EDEVICE, "GPU instance %u has profile '%s', unknown to %s",
                                cur[i].gi_id, cur[i].profile_name, m->name);
        out->items[out->n].profile = (unsigned)(p - m->profiles);
        out->items[out->n].placement = cur[i].placement;
        out->n++;
    }
    return MB_OK;
}

/* ---- the lifecycle: the one create and the one destroy ------------------------------------ */

static int hook_made(const struct mb_mig_hooks *h, enum mb_mig_step step, unsigned gi, unsigned ci,
                     struct mb_error *err)
{
    return h && h->made ? h->made(h->ctx, step, gi, ci, err) : MB_OK;
}

static int hook_destroyed(const struct mb_mig_hooks *h, enum mb_mig_step step, unsigned gi,
                          unsigned ci, struct mb_error *err)
{
    return h && h->destroyed ? h->destroyed(h->ctx, step, gi, ci, err) : MB_OK;
}

/* A confirmation the ledger refused: noted, the create goes on (the intent names the GI). */
static void confirm(struct mb_mig_ledger *l, const struct mb_mig_new *req, struct mb_mig_made *m)
{
    struct mb_error e;
    if (mb_mig_ledger_confirm(l, req->placement, m->gi_id, m->ci_made, m->ci_id, m->uuid, &e) !=
            MB_OK &&
        !m->ledger_note[0])
        snprintf(m->ledger_note, sizeof(m->ledger_note), "%s", e.msg);
}

/* The MIG UUID of compute instance ci of GPU instance gi ("" when the device names none). */
static void find_uuid(struct mb_device *dev, unsigned gi, unsigned ci, char *out, size_t cap)
{
    struct mb_mig_instance cur[MB_MAX_MIG_INSTANCES * 2];
    size_t n = 0;
    out[0] = '\0';
    if (mb_device_mig_instances(dev, cur, sizeof(cur) / sizeof(cur[0]), &n, NULL) != MB_OK)
        return;
    for (size_t k = 0; k < n; k++)
        if (cur[k].gi_id == gi && cur[k].has_ci && cur[k].ci_id == ci)
            snprintf(out, cap, "%s", cur[k].uuid);
}

static int intend(struct mb_mig_ledger *l, const struct mb_mig_new *req, struct mb_error *err)
{
    struct mb_mig_owned o;
    memset(&o, 0, sizeof(o));
    o.profile_id = req->profile_id;
    snprintf(o.profile, sizeof(o.profile), "%s", req->profile ? req->profile : "");
    o.placement = req->placement;
    o.creator = req->creator;
    if (req->experiment && req->experiment[0]) {
        char real[PATH_MAX];
        snprintf(o.experiment, sizeof(o.experiment), "%s",
                 realpath(req->experiment, real) ? real : req->experiment);
    }
    return mb_mig_ledger_intend(l, &o, err);
}

int mb_mig_create(struct mb_device *dev, struct mb_mig_ledger *l, const struct mb_mig_new *req,
                  const struct mb_mig_hooks *hooks, struct mb_mig_made *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = intend(l, req, err);
    if (rc != MB_OK) {
        out->failed = MB_MIG_STEP_LEDGER;
        return rc;
    }
    out->failed = MB_MIG_STEP_GI;
    if ((rc = mb_device_mig_create_gi(dev, req->profile_id, &req->placement, &out->gi_id, err)) !=
        MB_OK) {
        mb_mig_ledger_forget(l, req->placement, NULL); /* nothing was made */
        return rc;
    }
    out->gi_made = true;
    confirm(l, req, out);
    if ((rc = hook_made(hooks, MB_MIG_STEP_GI, out->gi_id, 0, err)) != MB_OK)
        return rc;
    out->failed = MB_MIG_STEP_CI;
    if ((rc = mb_device_mig_create_ci(dev, out->gi_id, -1, &out->ci_id, err)) != MB_OK)
        return rc;
    out->ci_made = true;
    find_uuid(dev, out->gi_id, out->ci_id, out->uuid, sizeof(out->uuid));
    confirm(l, req, out);
    if ((rc = hook_made(hooks, MB_MIG_STEP_CI, out->gi_id, out->ci_id, err)) != MB_OK)
        return rc;
    out->failed = MB_MIG_STEP_NONE;
    return MB_OK;
}

int mb_mig_destroy(struct mb_device *dev, struct mb_mig_ledger *l, const struct mb_mig_gi *g,
                   const struct mb_mig_hooks *hooks, struct mb_error *err)
{
    struct mb_error e;
    int hook_rc = MB_OK;
    for (size_t c = 0; c < g->n_ci; c++) {
        int rc = mb_device_mig_destroy_ci(dev, g->id, g->ci[c], &e);
        if (rc != MB_OK && rc != MB_ENOTFOUND)
            return mb_error_set(err, rc, "cannot destroy compute instance %u/%u: %s", g->id,
                                g->ci[c], e.msg);
        if (hook_destroyed(hooks, MB_MIG_STEP_CI, g->id, g->ci[c], &e) != MB_OK && !hook_rc)
            hook_rc = mb_error_set(err, e.status, "%s", e.msg);
    }
    int rc = mb_device_mig_destroy_gi(dev, g->id, &e);
    if (rc != MB_OK && rc != MB_ENOTFOUND)
        return mb_error_set(err, rc, "cannot destroy GPU instance %u (%s): %s", g->id,
                            g->profile_name, e.msg);
    rc = mb_mig_ledger_forget(l, g->placement, err);
    if (hook_destroyed(hooks, MB_MIG_STEP_GI, g->id, 0, &e) != MB_OK && !hook_rc)
        hook_rc = mb_error_set(err, e.status, "%s", e.msg);
    return rc != MB_OK ? rc : hook_rc;
}

void mb_mig_gi_of(const struct mb_mig_instance *in, struct mb_mig_gi *out)
{
    memset(out, 0, sizeof(*out));
    out->id = in->gi_id;
    out->profile_id = in->profile_id;
    snprintf(out->profile_name, sizeof(out->profile_name), "%s", in->profile_name);
    out->placement = in->placement;
    if (in->has_ci) {
        out->n_ci = 1;
        out->ci[0] = in->ci_id;
        snprintf(out->uuid, sizeof(out->uuid), "%s", in->uuid);
    }
}

/* ---- what a dead run left ------------------------------------------------------------------- */

static bool same_dir(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return true;
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* Whether live instance g is, by the ledger, one a dead run of results_dir made. */
static bool dead_runs(const struct mb_mig_ledger *l, const struct mb_mig_gi *g,
                      const char *results_dir)
{
    const struct mb_mig_owned *o = mb_mig_ledger_owner(l, g);
    return o && o->creator == MB_MIG_BY_RUN && o->pid != (long)getpid() &&
           same_dir(o->experiment, results_dir);
}

/*
 * Loads the ledger and lists the live instances (*listed); not listed when nothing can be the
 * dead run's.
 */
static int dead_run_view(struct mb_device *dev, struct mb_mig_ledger *l, struct mb_mig_gi *gis,
                         size_t *n, bool *listed, struct mb_error *err)
{
    *n = 0;
    *listed = false;
    if (!l || !l->path[0])
        return MB_OK;
    int rc = mb_mig_ledger_load(l, err);
    if (rc != MB_OK)
        return rc;
    /* Nothing recorded, or MIG not active (a GPU with MIG off holds no instance, and its
     * instances cannot even be listed): nothing of the dead run can be on it. */
    struct mb_mig_mode mode;
    if (l->n == 0 || (mb_device_mig_mode(dev, &mode, NULL) == MB_OK && !mode.current))
        return MB_OK;
    *listed = true;
    return mb_mig_list(dev, gis, MB_MIG_MAX_GIS, n, err);
}

int mb_mig_run_leftovers(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                         size_t *n, struct mb_error *err)
{
    *n = 0;
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t ng = 0;
    bool listed;
    int rc = dead_run_view(dev, l, gis, &ng, &listed, err);
    for (size_t k = 0; rc == MB_OK && k < ng; k++)
        *n += dead_runs(l, &gis[k], results_dir);
    return rc;
}

static int change_adopt(struct mb_mig_ledger *l, const void *arg, struct mb_error *err)
{
    const struct mb_mig_owned *e = arg;
    for (size_t i = 0; i < l->n; i++)
        if (same_place(l->e[i].placement, e->placement) && l->e[i].has_gi &&
            l->e[i].gi_id == e->gi_id)
            return MB_OK; /* already recorded */
    return change_intend(l, e, err);
}

int mb_mig_ledger_adopt(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                        unsigned gi_id, const char *profile, struct mb_placement placement,
                        bool *adopted, struct mb_error *err)
{
    *adopted = false;
    if (!l || !l->path[0])
        return MB_OK;
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t n = 0;
    struct mb_mig_mode mode;
    if (mb_device_mig_mode(dev, &mode, NULL) == MB_OK && !mode.current)
        return MB_OK;
    int rc = mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, err);
    if (rc != MB_OK)
        return rc;
    const struct mb_mig_gi *g = NULL;
    for (size_t k = 0; k < n && !g; k++)
        if (gis[k].id == gi_id)
            g = &gis[k];
    /* Gone, or the id now names someone else's instance: not ours to record. */
    if (!g || (profile && profile[0] && strcasecmp(g->profile_name, profile) != 0) ||
        (placement.size && !same_place(g->placement, placement)))
        return MB_OK;
    struct mb_mig_owned o;
    memset(&o, 0, sizeof(o));
    o.confirmed = o.has_gi = true;
    o.gi_id = g->id;
    o.has_ci = g->n_ci > 0;
    o.ci_id = g->n_ci ? g->ci[0] : 0;
    o.profile_id = g->profile_id;
    snprintf(o.profile, sizeof(o.profile), "%s", g->profile_name);
    o.placement = g->placement;
    snprintf(o.mig_uuid, sizeof(o.mig_uuid), "%s", g->uuid);
    o.creator = MB_MIG_BY_RUN;
    o.pid = 0; /* the dead run's, unknown */
    char real[PATH_MAX];
    snprintf(o.experiment, sizeof(o.experiment), "%s",
             realpath(results_dir, real) ? real : results_dir);
    o.time_unix = now_unix();
    if ((rc = ledger_update(l, change_adopt, &o, err)) == MB_OK)
        *adopted = true;
    return rc;
}

int mb_mig_clear_run(struct mb_device *dev, struct mb_mig_ledger *l, const char *results_dir,
                     size_t *removed, struct mb_error *err)
{
    *removed = 0;
    struct mb_mig_gi gis[MB_MIG_MAX_GIS];
    size_t n = 0;
    bool listed;
    int rc = dead_run_view(dev, l, gis, &n, &listed, err);
    if (rc != MB_OK || !listed)
        return rc;
    int first = MB_OK;
    for (size_t k = 0; k < n; k++) {
        if (!dead_runs(l, &gis[k], results_dir))
            continue;
        struct mb_error e;
        rc = mb_mig_destroy(dev, l, &gis[k], NULL, &e);
        if (rc == MB_OK)
            (*removed)++;
        else if (first == MB_OK)
            first = mb_error_set(err, rc, "%s", e.msg);
        /* The destroy rewrote the ledger: read it again for the next match. */
        if (mb_mig_ledger_load(l, &e) != MB_OK && first == MB_OK)
            first = mb_error_set(err, e.status, "%s", e.msg);
    }
    /* Entries of that run whose instances are gone are dropped. */
    if (first == MB_OK && (rc = mb_mig_list(dev, gis, MB_MIG_MAX_GIS, &n, err)) == MB_OK)
        rc = mb_mig_ledger_prune(l, gis, n, err);
    return first != MB_OK ? first : rc;
}

/* ---- layouts -------------------------------------------------------------------------------- */

int mb_mig_profile_index(const struct mb_gpu_model *m, const struct mb_mig_gi *g, unsigned *out,
                         struct mb_error *err)
{
    const struct mb_gi_profile *p = mb_model_profile_by_driver_id(m, (int)g->profile_id);
    if (!p)
        p = mb_model_profile(m, g->profile_name);
    if (!p)
        return mb_error_set(err, MB_EDEVICE,
                            "GPU instance %u has profile id %u, unknown to the catalog's %s; "
                            "migbench will not plan around it",
                            g->id, g->profile_id, m->name);
    *out = (unsigned)(p - m->profiles);
    return MB_OK;
}

int mb_mig_diff(const struct mb_gpu_model *m, const struct mb_mig_gi *gis, size_t n,
                const unsigned *want, size_t nw, struct mb_mig_diff *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    struct mb_layout fresh;
    int rc = mb_layout_place(m, NULL, want, nw, &fresh, err);
    if (rc != MB_OK)
        return rc;
    unsigned need[MB_MAX_PROFILES] = {0};
    for (size_t i = 0; i < nw; i++)
        need[want[i]]++;
    struct mb_layout keep = {0};
    for (size_t i = 0; i < n && i < MB_MIG_MAX_GIS; i++) {
        unsigned idx = 0; /* set by mb_mig_profile_index on MB_OK */
        if ((rc = mb_mig_profile_index(m, &gis[i], &idx, err)) != MB_OK)
            return rc;
        if (need[idx] > 0 && keep.n < MB_LAYOUT_MAX) {
            need[idx]--;
            keep.items[keep.n].profile = idx;
            keep.items[keep.n++].placement = gis[i].placement;
        } else {
            out->remove[out->n_remove++] = i;
        }
    }
    unsigned add[MB_LAYOUT_MAX];
    size_t nadd = 0;
    for (unsigned p = 0; p < m->n_profiles; p++)
        for (unsigned k = 0; k < need[p] && nadd < MB_LAYOUT_MAX; k++)
            add[nadd++] = p;
    out->kept = keep.n;
    if (mb_layout_place(m, &keep, add, nadd, &out->create, NULL) != MB_OK) {
        /* The kept instances are in the way: start from an empty GPU. */
        out->create = fresh;
        out->kept = 0;
        out->replaced_all = true;
        out->n_remove = 0;
        for (size_t i = 0; i < n && i < MB_MIG_MAX_GIS; i++)
            out->remove[out->n_remove++] = i;
    }
    return MB_OK;
}

int mb_mig_matches(const struct mb_gpu_model *m, const struct mb_mig_gi *gis, size_t n,
                   const unsigned *want, size_t nw, bool *match, struct mb_error *err)
{
    unsigned have[MB_MAX_PROFILES] = {0}, asked[MB_MAX_PROFILES] = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned idx = 0; /* set by mb_mig_profile_index on MB_OK */
        int rc = mb_mig_profile_index(m, &gis[i], &idx, err);
        if (rc != MB_OK)
            return rc;
        have[idx]++;
    }
    for (size_t i = 0; i < nw; i++)
        asked[want[i]]++;
    *match = memcmp(have, asked, sizeof(have)) == 0;
    return MB_OK;
}
