/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The emulated GPU's ids, its state file (the MIG state, processes and power limit that
 * processes share through state=PATH, read and written under flock) and the framing of every
 * operation: injected faults, the lock, loading the state and saving what changed.
 */
#include "device/emu_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/backends.h"
#include "migbench/clock.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "base/json_io.h"

const char *const mb__emu_op_names[] = {
#define EMU_OP_NAME(n) #n,
    EMU_OP_LIST(EMU_OP_NAME)
#undef EMU_OP_NAME
};

/* ---- ids, names, hashing --------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A deterministic UUID-shaped string from text: prefix + 8-4-4-4-12 hex digits. */
void mb__emu_make_uuid(const char *prefix, const char *text, char *out, size_t cap)
{
    uint64_t a = fnv1a(text, 0xcbf29ce484222325ull);
    uint64_t b = fnv1a(text, a ^ 0x9e3779b97f4a7c15ull);
    snprintf(out, cap, "%s%08x-%04x-%04x-%04x-%012llx", prefix, (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffull));
}

/*
 * The GPU's UUID, distinct per emulated GPU: from the state file's absolute path when there is
 * one (the GPU a state file describes, whoever opens it and from wherever), else from the
 * model, index and the spec's options. Two users' emulated H100s with their own state files never
 * share a UUID, so monitor and the journals cannot mix their runs up.
 */
void mb__emu_gpu_uuid(const struct emu *e, const char *args, char *out, size_t cap)
{
    char text[2 * EMU_PATH_MAX + MB_MODEL_NAME_MAX + 64];
    char cwd[EMU_PATH_MAX] = "";
    if (e->state_path[0]) {
        if (e->state_path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
            cwd[0] = '\0';
        snprintf(text, sizeof(text), "migbench-emu/%s/%u/state:%s%s%s", e->model->name, e->index,
                 cwd, cwd[0] ? "/" : "", e->state_path);
    } else {
        const char *opts = args ? strchr(args, ':') : NULL; /* the options, not the alias */
        snprintf(text, sizeof(text), "migbench-emu/%s/%u/spec:%s", e->model->name, e->index,
                 opts ? opts + 1 : "");
    }
    mb__emu_make_uuid("GPU-", text, out, cap);
}

void mb__emu_mig_uuid(const struct emu *e, unsigned gi, unsigned ci, char *out, size_t cap)
{
    char text[MB_UUID_MAX + 32];
    snprintf(text, sizeof(text), "%s/gi%u/ci%u", e->uuid, gi, ci);
    mb__emu_make_uuid("MIG-", text, out, cap);
}

/* ---- the state file -------------------------------------------------------------------- */

void mb__emu_state_init(struct emu_state *st, int mig)
{
    memset(st, 0, sizeof(*st));
    st->mig_current = mig;
    st->mig_pending = mig;
}

static int json_uint(const cJSON *obj, const char *field, unsigned max, unsigned *out,
                     const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max ||
        v->valuedouble != floor(v->valuedouble))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s' missing or out of range (0..%u)", path,
                            field, max);
    *out = (unsigned)v->valuedouble;
    return MB_OK;
}

static int json_int(const cJSON *obj, const char *field, int min, int max, int *out,
                    const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
        v->valuedouble != floor(v->valuedouble))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s' missing or out of range (%d..%d)", path,
                            field, min, max);
    *out = (int)v->valuedouble;
    return MB_OK;
}

/* A state file is outside input: every GI, CI and process must be one the emulator could make. */
static int state_check(const struct emu *e, const struct emu_state *st, struct mb_error *err)
{
    const char *path = e->state_path;
    for (unsigned g = 0; g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &st->gi[g];
        if (!gi->used)
            continue;
        if (!st->mig_current)
            return mb_error_set(err, MB_EPARSE, "%s: gpu_instances: GI %u exists with MIG disabled",
                                path, g);
        const struct mb_gi_profile *p = mb__emu_profile_by_id(e, gi->profile_id);
        if (!p)
            return mb_error_set(err, MB_EPARSE,
                                "%s: gpu_instances: GI %u: profile_id %u is not a %s profile", path,
                                g, gi->profile_id, e->model->name);
        bool valid = false;
        for (size_t i = 0; i < p->n_placements; i++)
            valid =
                valid || (p->placements[i].start == gi->start && p->placements[i].size == gi->size);
        if (!valid)
            return mb_error_set(err, MB_EPARSE,
                                "%s: gpu_instances: GI %u: %u:%u is not a placement of %s", path, g,
                                gi->start, gi->size, p->name);
        for (unsigned h = 0; h < g; h++) {
            const struct emu_gi *o = &st->gi[h];
            if (o->used && gi->start < o->start + o->size && o->start < gi->start + gi->size)
                return mb_error_set(err, MB_EPARSE, "%s: gpu_instances: GIs %u and %u overlap",
                                    path, h, g);
        }
        unsigned used = 0;
        for (unsigned c = 0; c < EMU_MAX_CI; c++) {
            const struct emu_ci *ci = &gi->ci[c];
            if (!ci->used)
                continue;
            used += ci->slices;
            if (ci->slices == 0 || ci->start + ci->slices > p->compute_slices ||
                used > p->compute_slices)
                return mb_error_set(err, MB_EPARSE,
                                    "%s: compute_instances: GI %u CI %u does not fit in %s", path,
                                    g, c, p->name);
        }
    }
    for (size_t i = 0; i < st->n_procs; i++) {
        const struct emu_proc *pr = &st->procs[i];
        bool ok = st->mig_current ? (pr->gi >= 0 && pr->ci >= 0 && st->gi[pr->gi].used &&
                                     st->gi[pr->gi].ci[pr->ci].used)
                                  : (pr->gi < 0 && pr->ci < 0);
        if (!ok)
            return mb_error_set(err, MB_EPARSE,
                                "%s: processes: pid %u runs on GI %d CI %d, which does not exist",
                                path, pr->pid, pr->gi, pr->ci);
    }
    return MB_OK;
}

/* A list field of the state: absent is empty; anything but an array of objects is refused. */
static int json_list(const cJSON *obj, const char *field, const char *where, const cJSON **out,
                     const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = v;
    if (!v)
        return MB_OK;
    if (!cJSON_IsArray(v))
        return mb_error_set(err, MB_EPARSE, "%s: field '%s%s': expected a list", path, where,
                            field);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsObject(it))
            return mb_error_set(err, MB_EPARSE, "%s: field '%s%s[%zu]': expected an object", path,
                                where, field, i);
        i++;
    }
    return MB_OK;
}

/* The optional power limit of a state: absent is the default; else within the device's range. */
static int limit_from_json(const struct emu *e, const cJSON *root, struct emu_state *st,
                           struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "power_limit_mw");
    if (!v)
        return MB_OK;
    double lo = floor(e->min_limit_w * 1000.0), hi = ceil(e->max_w * 1000.0);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'power_limit_mw' out of range (%.0f..%.0f mW for this GPU)",
                            e->state_path, lo, hi);
    st->limit_mw = (uint32_t)v->valuedouble;
    return MB_OK;
}

/* A process's modelled job (workload, batch, mps_pct), all optional; a workload must be a preset.
 */
static int job_from_json(const cJSON *p, struct emu_proc *pr, size_t i, const char *path,
                         struct mb_error *err)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(p, "workload");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, "batch");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "mps_pct");
    if (!w)
        return MB_OK;
    if (!cJSON_IsString(w) || !mb__gm_workload(w->valuestring))
        return mb_error_set(err, MB_EPARSE, "%s: field 'processes[%zu].workload': not a preset",
                            path, i);
    if (!cJSON_IsNumber(b) || b->valuedouble <= 0 || b->valuedouble > 1e7)
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'processes[%zu].batch' missing or out of "
                            "range",
                            path, i);
    if (m && (!cJSON_IsNumber(m) || m->valuedouble < 0 || m->valuedouble > 100))
        return mb_error_set(err, MB_EPARSE,
                            "%s: field 'processes[%zu].mps_pct' out of range "
                            "(0..100)",
                            path, i);
    snprintf(pr->workload, sizeof(pr->workload), "%s", w->valuestring);
    pr->batch = b->valuedouble;
    pr->mps_pct = m ? m->valuedouble : 0;
    return MB_OK;
}

/* The state's processes, each checked as outside input. */
static int procs_from_json(const cJSON *procs, struct emu_state *st, const char *path,
                           struct mb_error *err)
{
    int rc = MB_OK;
    const cJSON *p;
    cJSON_ArrayForEach(p, procs)
    {
        if (st->n_procs == MB_MAX_PROCESSES) {
            rc = mb_error_set(err, MB_EPARSE, "%s: too many processes", path);
            return rc;
        }
        struct emu_proc *pr = &st->procs[st->n_procs];
        unsigned pid;
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(p, "mem_bytes");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        if ((rc = json_uint(p, "pid", 0x7fffffff, &pid, path, err)) ||
            (rc = json_int(p, "gi", -1, EMU_MAX_GI - 1, &pr->gi, path, err)) ||
            (rc = json_int(p, "ci", -1, EMU_MAX_CI - 1, &pr->ci, path, err)))
            return rc;
        if (!cJSON_IsNumber(mem) || mem->valuedouble < 0 || mem->valuedouble > 0x1p62) {
            rc = mb_error_set(err, MB_EPARSE,
                              "%s: field 'processes[%zu].mem_bytes' missing or out of range", path,
                              st->n_procs);
            return rc;
        }
        for (size_t k = 0; k < st->n_procs; k++)
            if (st->procs[k].pid == pid) {
                rc = mb_error_set(err, MB_EPARSE,
                                  "%s: field 'processes[%zu].pid': pid %u appears twice", path,
                                  st->n_procs, pid);
                return rc;
            }
        pr->pid = pid;
        pr->mem_bytes = (uint64_t)mem->valuedouble;
        pr->live = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "live"));
        if ((rc = job_from_json(p, pr, st->n_procs, path, err)) != MB_OK)
            return rc;
        if (cJSON_IsString(name))
            snprintf(pr->name, sizeof(pr->name), "%s", name->valuestring);
        st->n_procs++;
    }
    return rc;
}

static int state_from_json(const struct emu *e, const char *text, struct emu_state *st,
                           struct mb_error *err)
{
    const char *path = e->state_path;
    int rc = MB_OK;
    cJSON *root = NULL;
    if ((rc = mb_json_parse(text, strlen(text), path, &root, err)) != MB_OK) {
        mb_error_prefix(err, "not a migbench emulator state: ");
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        rc =
            mb_error_set(err, MB_EPARSE, "%s: not a migbench emulator state (not an object)", path);
        goto done;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(model)) {
        rc = mb_error_set(err, MB_EPARSE, "%s: field 'model' missing", path);
        goto done;
    }
    if (strcmp(model->valuestring, e->model->name) != 0) {
        rc = mb_error_set(err, MB_EINVAL, "%s: state belongs to a %s, not a %s", path,
                          model->valuestring, e->model->name);
        goto done;
    }
    memset(st, 0, sizeof(*st));
    if ((rc = limit_from_json(e, root, st, err)) != MB_OK)
        goto done;
    unsigned cur = 0, pend = 0;
    if ((rc = json_uint(root, "mig_current", 1, &cur, path, err)) ||
        (rc = json_uint(root, "mig_pending", 1, &pend, path, err)))
        goto done;
    st->mig_current = (int)cur;
    st->mig_pending = (int)pend;
    const cJSON *gis, *procs;
    if ((rc = json_list(root, "gpu_instances", "", &gis, path, err)) ||
        (rc = json_list(root, "processes", "", &procs, path, err)))
        goto done;
    const cJSON *g;
    size_t gi_index = 0;
    cJSON_ArrayForEach(g, gis)
    {
        unsigned id, prof, start, size;
        char where[64];
        snprintf(where, sizeof(where), "gpu_instances[%zu].", gi_index++);
        const cJSON *cis;
        if ((rc = json_uint(g, "id", EMU_MAX_GI - 1, &id, path, err)) ||
            (rc = json_uint(g, "profile_id", 1000, &prof, path, err)) ||
            (rc = json_uint(g, "start", MB_MAX_MEMORY_SLICES, &start, path, err)) ||
            (rc = json_uint(g, "size", MB_MAX_MEMORY_SLICES, &size, path, err)) ||
            (rc = json_list(g, "compute_instances", where, &cis, path, err)))
            goto done;
        struct emu_gi *gi = &st->gi[id];
        if (gi->used) {
            rc = mb_error_set(err, MB_EPARSE, "%s: field '%sid': GI id %u appears twice", path,
                              where, id);
            goto done;
        }
        gi->used = true;
        gi->profile_id = prof;
        gi->start = start;
        gi->size = size;
        const cJSON *c;
        cJSON_ArrayForEach(c, cis)
        {
            unsigned cid, cprof, cstart, cslices;
            if ((rc = json_uint(c, "id", EMU_MAX_CI - 1, &cid, path, err)) ||
                (rc = json_uint(c, "profile_id", 100, &cprof, path, err)) ||
                (rc = json_uint(c, "start", 8, &cstart, path, err)) ||
                (rc = json_uint(c, "slices", 8, &cslices, path, err)))
                goto done;
            if (gi->ci[cid].used) {
                rc = mb_error_set(err, MB_EPARSE,
                                  "%s: field '%scompute_instances': CI id %u appears twice", path,
                                  where, cid);
                goto done;
            }
            gi->ci[cid] = (struct emu_ci){true, cprof, cstart, cslices};
        }
    }
    if ((rc = procs_from_json(procs, st, path, err)) != MB_OK)
        goto done;
    rc = state_check(e, st, err);
done:
    cJSON_Delete(root);
    return rc;
}

static cJSON *state_to_json(const struct emu *e)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "model", e->model->name);
    cJSON_AddStringToObject(root, "uuid", e->uuid);
    cJSON_AddNumberToObject(root, "mig_current", e->st.mig_current);
    cJSON_AddNumberToObject(root, "mig_pending", e->st.mig_pending);
    if (e->st.limit_mw)
        cJSON_AddNumberToObject(root, "power_limit_mw", e->st.limit_mw);
    cJSON *gis = cJSON_AddArrayToObject(root, "gpu_instances");
    for (unsigned g = 0; gis && g < EMU_MAX_GI; g++) {
        const struct emu_gi *gi = &e->st.gi[g];
        if (!gi->used)
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(gis, o);
        cJSON_AddNumberToObject(o, "id", g);
        cJSON_AddNumberToObject(o, "profile_id", gi->profile_id);
        cJSON_AddNumberToObject(o, "start", gi->start);
        cJSON_AddNumberToObject(o, "size", gi->size);
        cJSON *cis = cJSON_AddArrayToObject(o, "compute_instances");
        for (unsigned c = 0; cis && c < EMU_MAX_CI; c++) {
            if (!gi->ci[c].used)
                continue;
            cJSON *co = cJSON_CreateObject();
            if (!co)
                break;
            cJSON_AddItemToArray(cis, co);
            cJSON_AddNumberToObject(co, "id", c);
            cJSON_AddNumberToObject(co, "profile_id", gi->ci[c].profile_id);
            cJSON_AddNumberToObject(co, "start", gi->ci[c].start);
            cJSON_AddNumberToObject(co, "slices", gi->ci[c].slices);
        }
    }
    cJSON *procs = cJSON_AddArrayToObject(root, "processes");
    for (size_t i = 0; procs && i < e->st.n_procs; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(procs, o);
        cJSON_AddNumberToObject(o, "pid", p->pid);
        cJSON_AddNumberToObject(o, "gi", p->gi);
        cJSON_AddNumberToObject(o, "ci", p->ci);
        cJSON_AddNumberToObject(o, "mem_bytes", (double)p->mem_bytes);
        cJSON_AddStringToObject(o, "name", p->name);
        if (p->live)
            cJSON_AddBoolToObject(o, "live", true);
        if (p->workload[0]) {
            cJSON_AddStringToObject(o, "workload", p->workload);
            cJSON_AddNumberToObject(o, "batch", p->batch);
            if (p->mps_pct > 0)
                cJSON_AddNumberToObject(o, "mps_pct", p->mps_pct);
        }
    }
    return root;
}

/* Reads the state file into e->st. *found is false when the file does not exist yet. */
int mb__emu_state_load(struct emu *e, bool *found, struct mb_error *err)
{
    *found = false;
    char *buf = NULL;
    int rc = mb_file_read(e->state_path, EMU_STATE_MAX, &buf, NULL, err);
    if (rc == MB_ENOTFOUND)
        return MB_OK;
    if (rc == MB_ERANGE)
        return mb_error_set(err, MB_EPARSE, "%s: not a migbench emulator state (size)",
                            e->state_path);
    if (rc != MB_OK)
        return rc;
    struct emu_state st;
    rc = state_from_json(e, buf, &st, err);
    if (rc == MB_OK) {
        e->st = st;
        *found = true;
    }
    free(buf);
    return rc;
}

/* Writes the state atomically, so a process that dies mid-write leaves the previous state. */
int mb__emu_state_save(struct emu *e, struct mb_error *err)
{
    cJSON *root = state_to_json(e);
    int rc = root ? mb_file_write_json_atomic(e->state_path, root, 0666, err)
                  : mb_error_set(err, MB_ENOMEM, "%s: out of memory", e->state_path);
    cJSON_Delete(root);
    if (rc != MB_OK)
        mb_error_prefix(err, "cannot write the emulator state: ");
    return rc;
}

/* ---- operation framing: faults, locking, state ----------------------------------------- */

/* True when pid is gone or a zombie: it has exited, and a driver has torn its context down. */
static bool pid_dead(unsigned pid)
{
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X');
}

/* Drops live processes whose pid is gone (a job that was killed cannot detach itself); true if
 * any was dropped. */
static bool prune_dead(struct emu *e)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->st.n_procs; i++) {
        const struct emu_proc *p = &e->st.procs[i];
        if (p->live && pid_dead(p->pid))
            continue;
        e->st.procs[kept++] = *p;
    }
    bool pruned = kept != e->st.n_procs;
    e->st.n_procs = kept;
    return pruned;
}

/* Counts the call and applies injected faults, then locks and loads the shared state. */
int mb__emu_op_begin(struct emu *e, enum emu_op op, struct mb_error *err)
{
    e->calls++;
    e->op_calls[op]++;
    if (e->lost_set && e->calls > e->lost_after)
        return mb_error_set(err, MB_EGONE,
                            "emu: the GPU has fallen off the bus (injected: lost_after=%llu)",
                            e->lost_after);
    if (e->lost_when[0] && access(e->lost_when, F_OK) == 0)
        return mb_error_set(err, MB_EGONE,
                            "emu: the GPU has fallen off the bus (injected: lost_when=%s exists)",
                            e->lost_when);
    for (size_t i = 0; i < e->n_faults; i++) {
        if (e->faults[i].op != op || e->faults[i].nth != e->op_calls[op])
            continue;
        if (e->faults[i].status == EMU_CRASH) {
            /* A crash for tests of recovery: a switch dies halfway, anything else at once. */
            if (op == OP_mig_switch_mode) {
                e->crash_midway = true;
                continue;
            }
            raise(SIGKILL);
        }
        return mb_error_set(err, e->faults[i].status, "emu: %s (injected failure of %s call %llu)",
                            mb_status_str(e->faults[i].status), mb__emu_op_names[op],
                            e->faults[i].nth);
    }
    if (!e->state_path[0]) {
        if (prune_dead(e))
            mb__emu_update_load(e);
        return MB_OK;
    }
    if (flock(e->lock_fd, LOCK_EX) != 0)
        return mb_error_set(err, MB_EIO, "%s: lock: %s", e->state_path, strerror(errno));
    bool found;
    int rc = mb__emu_state_load(e, &found, err);
    if (rc == MB_OK && prune_dead(e))
        rc = mb__emu_state_save(e, err);
    if (rc != MB_OK) {
        flock(e->lock_fd, LOCK_UN);
        return rc;
    }
    mb__emu_update_load(e);
    return MB_OK;
}

/* Saves the state when the operation changed it and releases the lock; returns rc. */
int mb__emu_op_end(struct emu *e, int rc, bool changed, struct mb_error *err)
{
    if (changed)
        mb__emu_update_load(e);
    if (!e->state_path[0])
        return rc;
    if (changed && rc == MB_OK)
        rc = mb__emu_state_save(e, err);
    flock(e->lock_fd, LOCK_UN);
    return rc;
}

int mb__emu_need_mig(const struct emu *e, const char *what, struct mb_error *err)
{
    if (e->st.mig_current)
        return MB_OK;
    if (e->st.mig_pending)
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "emu %s: cannot %s: MIG mode is pending enable; a GPU reset is "
                            "required before it takes effect",
                            e->model->name, what);
    return mb_error_set(err, MB_EUNSUPPORTED,
                        "emu %s: cannot %s: MIG mode is disabled (enable it, then reset the GPU)",
                        e->model->name, what);
}
