/* SPDX-License-Identifier: Apache-2.0 */
/* The power-limit restore ledger (include/migbench/powercap.h). */
#include "migbench/powercap.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/state.h"
#include "base/json_io.h"
#include "migbench/fileio.h"
#include "migbench/num.h"
#include "migbench/proc.h"

#define RECORD_MAX 8192
#define HELPER_TIMEOUT_MS 30000

const char *mb_powercap_outcome_str(enum mb_powercap_outcome o)
{
    switch (o) {
    case MB_PC_NONE:
        return "none";
    case MB_PC_RESTORED:
        return "restored";
    case MB_PC_UNCHANGED:
        return "unchanged";
    case MB_PC_FOREIGN:
        return "foreign";
    case MB_PC_STALE:
        return "stale";
    case MB_PC_HELD:
        return "held";
    }
    return "unknown";
}

/* ---- the owner: pid, its start time, the boot ------------------------------------------- */

/* The start time of pid in clock ticks since boot (/proc/PID/stat field 22); 0 when unknown. */
static unsigned long long pid_start(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields resume after the last ')'. */
    const char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 2; field < 22 && *p; field++) {
        p += strspn(p, " ");
        p += strcspn(p, " ");
    }
    return strtoull(p, NULL, 10);
}

static void boot_id(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (fgets(out, (int)cap, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

static void self_owner(struct mb_powercap_record *r)
{
    r->pid = (long)getpid();
    r->pid_start = pid_start(r->pid);
    boot_id(r->boot_id, sizeof(r->boot_id));
    r->t_unix_s = (long long)time(NULL);
}

enum owner { OWNER_SELF, OWNER_LIVE, OWNER_DEAD, OWNER_OLD_BOOT };

static enum owner owner_of(const struct mb_powercap_record *r)
{
    char boot[40];
    boot_id(boot, sizeof(boot));
    if (boot[0] && r->boot_id[0] && strcmp(boot, r->boot_id) != 0)
        return OWNER_OLD_BOOT;
    if (r->pid <= 0)
        return OWNER_DEAD;
    unsigned long long start = pid_start(r->pid);
    if (r->pid == (long)getpid() && start == r->pid_start)
        return OWNER_SELF;
    if (kill((pid_t)r->pid, 0) != 0 && errno == ESRCH)
        return OWNER_DEAD;
    /* A pid that lives again with another start time is another process: the owner died. */
    if (start && r->pid_start && start != r->pid_start)
        return OWNER_DEAD;
    return OWNER_LIVE;
}

/* ---- the record file ---------------------------------------------------------------------- */

/*
 * A whole number in lo..hi from field of the record: through the one number parser's range
 * check, so that a value no integer holds (1e300, -1e300) is refused before any cast.
 */
static int json_int(const cJSON *o, const char *field, int64_t lo, int64_t hi, const char *what,
                    int64_t *out, const char *path, struct mb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!cJSON_IsNumber(v) || mb_num_to_i64(v->valuedouble, lo, hi, out) != MB_OK)
        return mb_error_set(err, MB_EPARSE,
                            "%s: field '%s': expected %s (a whole number in %lld..%lld)", path,
                            field, what, (long long)lo, (long long)hi);
    return MB_OK;
}

static int json_mw(const cJSON *o, const char *field, uint32_t *out, const char *path,
                   struct mb_error *err)
{
    int64_t v;
    int rc = json_int(o, field, 1, 4000000000, "a limit in mW", &v, path, err);
    if (rc == MB_OK)
        *out = (uint32_t)v;
    return rc;
}

/* The owner's fields; pid_start and time_unix_s may be absent (0: unknown), never out of range. */
static int record_owner(const cJSON *root, struct mb_powercap_record *out, const char *path,
                        struct mb_error *err)
{
    int64_t v;
    int rc = json_int(root, "pid", 1, 4194304, "a process id", &v, path, err);
    if (rc != MB_OK)
        return rc;
    out->pid = (long)v;
    if (cJSON_GetObjectItemCaseSensitive(root, "pid_start")) {
        if ((rc = json_int(root, "pid_start", 0, INT64_MAX, "the owner's start time in ticks", &v,
                           path, err)) != MB_OK)
            return rc;
        out->pid_start = (unsigned long long)v;
    }
    if (cJSON_GetObjectItemCaseSensitive(root, "time_unix_s")) {
        /* Seconds since 1970, up to the year 9999. */
        if ((rc = json_int(root, "time_unix_s", 0, 253402300799, "a time in s since 1970", &v, path,
                           err)) != MB_OK)
            return rc;
        out->t_unix_s = (long long)v;
    }
    const cJSON *boot = cJSON_GetObjectItemCaseSensitive(root, "boot_id");
    if (cJSON_IsString(boot))
        snprintf(out->boot_id, sizeof(out->boot_id), "%s", boot->valuestring);
    return MB_OK;
}

int mb_powercap_read(const char *path, struct mb_powercap_record *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    char *text = NULL;
    size_t len = 0;
    int rc = mb_file_read(path, RECORD_MAX, &text, &len, err);
    if (rc != MB_OK)
        return rc;
    cJSON *root = NULL;
    if ((rc = mb_json_parse(text, len, path, &root, err)) != MB_OK)
        goto done;
    if (!cJSON_IsObject(root)) {
        rc = mb_error_set(err, MB_EPARSE, "%s: not a power-limit record (a JSON object)", path);
        goto done;
    }
    const cJSON *uuid = cJSON_GetObjectItemCaseSensitive(root, "uuid");
    if (!cJSON_IsString(uuid) || !uuid->valuestring[0] ||
        strlen(uuid->valuestring) >= sizeof(out->uuid)) {
        rc = mb_error_set(err, MB_EPARSE, "%s: field 'uuid': expected the GPU's UUID", path);
        goto done;
    }
    if ((rc = record_owner(root, out, path, err)) != MB_OK ||
        (rc = json_mw(root, "original_mw", &out->original_mw, path, err)) != MB_OK ||
        (rc = json_mw(root, "set_mw", &out->set_mw, path, err)) != MB_OK)
        goto done;
    if (cJSON_GetObjectItemCaseSensitive(root, "prev_mw") &&
        (rc = json_mw(root, "prev_mw", &out->prev_mw, path, err)))
        goto done;
    snprintf(out->uuid, sizeof(out->uuid), "%s", uuid->valuestring);
done:
    cJSON_Delete(root);
    free(text);
    return rc;
}

static int record_write(const char *path, const struct mb_powercap_record *r, struct mb_error *err)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return mb_error_set(err, MB_ENOMEM, "%s: out of memory", path);
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "uuid", r->uuid);
    cJSON_AddNumberToObject(o, "original_mw", r->original_mw);
    cJSON_AddNumberToObject(o, "set_mw", r->set_mw);
    if (r->prev_mw)
        cJSON_AddNumberToObject(o, "prev_mw", r->prev_mw);
    cJSON_AddNumberToObject(o, "pid", (double)r->pid);
    cJSON_AddNumberToObject(o, "pid_start", (double)r->pid_start);
    cJSON_AddStringToObject(o, "boot_id", r->boot_id);
    cJSON_AddNumberToObject(o, "time_unix_s", (double)r->t_unix_s);
    int rc = mb_file_write_json_atomic(path, o, 0644, err);
    cJSON_Delete(o);
    if (rc != MB_OK)
        mb_error_prefix(err, "cannot record the power limit before changing it: ");
    return rc;
}

static int record_remove(const char *path, struct mb_error *err)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return mb_error_set(err, MB_EIO, "%s: cannot remove the power-limit record: %s", path,
                            strerror(errno));
    return MB_OK;
}

int mb_powercap_ledger_path(const char *device_spec, const char *uuid, const char *state_dir,
                            char *out, size_t cap, struct mb_error *err)
{
    int w;
    char state[MB__STATE_PATH_MAX];
    if (mb__device_state_in_file(device_spec)) {
        /* The device layer reads its spec: an emulated GPU's state file, if it has one. */
        if (!mb__device_state_file(device_spec, state, sizeof(state)))
            return mb_error_set(
                err, MB_EUNSUPPORTED,
                "device '%s': an emulated GPU's power limit needs a state file "
                "(state=PATH) so that the meter sees it and a crash leaves a record",
                device_spec);
        w = snprintf(out, cap, "%s.powercap.json", state);
    } else {
        if (!uuid || !uuid[0])
            return mb_error_set(err, MB_EUNSUPPORTED, "the device has no UUID to key its record");
        char safe[MB_UUID_MAX];
        size_t n = 0;
        for (const char *s = uuid; *s && n + 1 < sizeof(safe); s++)
            safe[n++] = isalnum((unsigned char)*s) || *s == '-' ? *s : '_';
        safe[n] = '\0';
        w = snprintf(out, cap, "%s/powercap-%s.json",
                     state_dir && state_dir[0] ? state_dir : "/var/lib/migbench", safe);
    }
    if (w < 0 || (size_t)w >= cap)
        return mb_error_set(err, MB_ERANGE, "power-limit record path too long");
    return MB_OK;
}

/* ---- changing the limit ------------------------------------------------------------------- */

static int read_limit(struct mb_device *dev, struct mb_power_limit *pl, struct mb_error *err)
{
    int rc = mb_device_power_limit(dev, pl, err);
    if (rc == MB_OK && !(pl->valid & MB_PL_LIMIT))
        rc = mb_error_set(err, MB_EUNSUPPORTED, "the device does not report its power limit");
    return rc;
}

/* Runs the site's helper as {helper, "set", uuid, mw}: no shell, a bounded wait. */
static int helper_set(const char *helper, const char *uuid, uint32_t mw, struct mb_error *err)
{
    char prog[MB_POWERCAP_PATH_MAX], verb[] = "set", gpu[MB_UUID_MAX], num[16];
    snprintf(prog, sizeof(prog), "%s", helper);
    snprintf(gpu, sizeof(gpu), "%s", uuid);
    snprintf(num, sizeof(num), "%u", mw);
    char *argv[] = {prog, verb, gpu, num, NULL};
    struct mb_proc_spec spec = {.argv = argv, .stdin_null = true};
    struct mb_proc *p = NULL;
    int rc = mb_proc_spawn(&spec, &p, err);
    if (rc != MB_OK) {
        mb_error_prefix(err, "power helper %s: ", helper);
        return rc == MB_ENOTFOUND ? MB_EPERM : rc;
    }
    rc = mb_proc_wait(p, HELPER_TIMEOUT_MS, err);
    if (rc == MB_ETIMEDOUT) {
        mb_proc_signal(p, SIGKILL);
        mb_proc_wait(p, -1, NULL);
        rc = mb_error_set(err, MB_ETIMEDOUT, "power helper %s did not finish in %d s", helper,
                          HELPER_TIMEOUT_MS / 1000);
    } else if (rc == MB_OK && mb_proc_exit_code(p) != 0) {
        rc = mb_error_set(err, MB_EPERM, "power helper %s set %s %u: exit status %d", helper, uuid,
                          mw, mb_proc_exit_code(p));
    }
    mb_proc_destroy(p);
    return rc;
}

static int apply(const struct mb_powercap *pc, const char *uuid, uint32_t mw, struct mb_error *err)
{
    if (pc->helper && pc->helper[0])
        return helper_set(pc->helper, uuid, mw, err);
    return mb_device_set_power_limit(pc->dev, mw, err);
}

static int device_uuid(struct mb_device *dev, char *out, size_t cap, struct mb_error *err)
{
    struct mb_device_info info;
    int rc = mb_device_info(dev, &info, err);
    if (rc == MB_OK)
        snprintf(out, cap, "%s", info.uuid);
    return rc;
}

/* Restores rec (owned by us or a dead process): the original if the limit is still ours. */
static int put_back(const struct mb_powercap *pc, const struct mb_powercap_record *rec,
                    enum mb_powercap_outcome *out, struct mb_error *err)
{
    struct mb_power_limit pl;
    int rc = read_limit(pc->dev, &pl, err);
    if (rc != MB_OK)
        return rc;
    if (pl.limit_mw == rec->original_mw) {
        *out = MB_PC_UNCHANGED;
    } else if (pl.limit_mw == rec->set_mw || (rec->prev_mw && pl.limit_mw == rec->prev_mw)) {
        if ((rc = apply(pc, rec->uuid, rec->original_mw, err)) != MB_OK) {
            mb_error_prefix(err,
                            "%s: cannot restore the power limit of %s to %u mW (the record of "
                            "the run that changed it); set the limit by hand, then remove the "
                            "record: ",
                            pc->ledger_path, rec->uuid, rec->original_mw);
            return rc;
        }
        *out = MB_PC_RESTORED;
    } else {
        *out = MB_PC_FOREIGN;
    }
    return record_remove(pc->ledger_path, err);
}

static int settle(const struct mb_powercap *pc, bool only_dead, enum mb_powercap_outcome *out,
                  struct mb_error *err)
{
    *out = MB_PC_NONE;
    struct mb_powercap_record rec;
    int rc = mb_powercap_read(pc->ledger_path, &rec, err);
    if (rc == MB_ENOTFOUND) {
        mb_error_clear(err);
        return MB_OK;
    }
    if (rc != MB_OK)
        return rc;
    char uuid[MB_UUID_MAX];
    if ((rc = device_uuid(pc->dev, uuid, sizeof(uuid), err)) != MB_OK)
        return rc;
    if (strcmp(uuid, rec.uuid) != 0)
        return mb_error_set(err, MB_ESTATE,
                            "%s: the record is for GPU %s, this device is %s; left alone",
                            pc->ledger_path, rec.uuid, uuid);
    switch (owner_of(&rec)) {
    case OWNER_OLD_BOOT:
        *out = MB_PC_STALE;
        return record_remove(pc->ledger_path, err);
    case OWNER_LIVE:
        *out = MB_PC_HELD;
        return MB_OK;
    case OWNER_SELF:
        if (only_dead) {
            *out = MB_PC_HELD;
            return MB_OK;
        }
        break;
    case OWNER_DEAD:
        break;
    }
    return put_back(pc, &rec, out, err);
}

int mb_powercap_restore(const struct mb_powercap *pc, enum mb_powercap_outcome *out,
                        struct mb_error *err)
{
    enum mb_powercap_outcome ignored;
    return settle(pc, false, out ? out : &ignored, err);
}

int mb_powercap_recover(const struct mb_powercap *pc, enum mb_powercap_outcome *out,
                        struct mb_error *err)
{
    enum mb_powercap_outcome ignored;
    return settle(pc, true, out ? out : &ignored, err);
}

int mb_powercap_set(const struct mb_powercap *pc, uint32_t limit_mw, uint32_t *enforced_mw,
                    struct mb_error *err)
{
    enum mb_powercap_outcome o;
    int rc = mb_powercap_recover(pc, &o, err);
    if (rc != MB_OK)
        return rc;
    struct mb_powercap_record rec;
    bool created = false;
    rc = mb_powercap_read(pc->ledger_path, &rec, err);
    if (rc == MB_OK) {
        if (owner_of(&rec) != OWNER_SELF)
            return mb_error_set(err, MB_EBUSY,
                                "GPU %s: its power limit is held by another migbench (pid %ld, "
                                "record %s)",
                                rec.uuid, rec.pid, pc->ledger_path);
    } else if (rc == MB_ENOTFOUND) {
        mb_error_clear(err);
        struct mb_power_limit pl;
        memset(&rec, 0, sizeof(rec));
        if ((rc = read_limit(pc->dev, &pl, err)) != MB_OK ||
            (rc = device_uuid(pc->dev, rec.uuid, sizeof(rec.uuid), err)) != MB_OK)
            return rc;
        rec.original_mw = pl.limit_mw;
        created = true;
    } else {
        return rc;
    }
    self_owner(&rec);
    struct mb_powercap_record before = rec;
    rec.prev_mw = created ? 0 : rec.set_mw;
    rec.set_mw = limit_mw;
    if ((rc = record_write(pc->ledger_path, &rec, err)) != MB_OK)
        return rc;
    if ((rc = apply(pc, rec.uuid, limit_mw, err)) != MB_OK) {
        /* Nothing changed: the record goes back to what it said. */
        if (created)
            record_remove(pc->ledger_path, NULL);
        else
            record_write(pc->ledger_path, &before, NULL);
        return rc;
    }
    if (enforced_mw) {
        struct mb_power_limit pl;
        *enforced_mw = 0;
        if (mb_device_power_limit(pc->dev, &pl, NULL) == MB_OK && (pl.valid & MB_PL_ENFORCED))
            *enforced_mw = pl.enforced_mw;
    }
    return MB_OK;
}

int mb_powercap_begin(struct mb_device *dev, const char *device_spec, const char *state_dir,
                      const char *helper, char *ledger, size_t cap, char *why, size_t why_cap,
                      enum mb_powercap_outcome *recovered, struct mb_error *err)
{
    ledger[0] = '\0';
    if (why && why_cap)
        why[0] = '\0';
    if (recovered)
        *recovered = MB_PC_NONE;
    if (!(mb_device_caps(dev) & MB_CAP_SET_POWER_LIMIT)) {
        if (why)
            snprintf(why, why_cap, "the device cannot set its power limit");
        return MB_OK;
    }
    char uuid[MB_UUID_MAX];
    int rc = device_uuid(dev, uuid, sizeof(uuid), err);
    if (rc != MB_OK)
        return rc;
    struct mb_error e;
    if (mb_powercap_ledger_path(device_spec, uuid, state_dir, ledger, cap, &e) != MB_OK) {
        ledger[0] = '\0';
        if (why)
            snprintf(why, why_cap, "%s", e.msg);
        return MB_OK;
    }
    struct mb_powercap pc = {dev, ledger, helper};
    return mb_powercap_recover(&pc, recovered, err);
}

/* ---- limits as text ----------------------------------------------------------------------- */

static int setting_bad(const char *text, struct mb_power_setting *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    return mb_error_set(err, MB_EINVAL,
                        "power limit '%s': expected default, a percentage (80%%) or watts (250W)",
                        text);
}

int mb_power_setting_parse(const char *text, struct mb_power_setting *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!text)
        return mb_error_set(err, MB_EINVAL, "power limit: empty");
    if (strcmp(text, "default") == 0) {
        out->kind = MB_PSET_DEFAULT;
        snprintf(out->text, sizeof(out->text), "%s", text);
        return MB_OK;
    }
    double v;
    const char *end = NULL;
    int nrc = mb_num_parse(text, &v, &end);
    if (nrc == MB_ERANGE)
        return mb_error_set(err, MB_EINVAL,
                            "power limit '%s': out of range (a percentage in (0, 100] or watts in "
                            "(0, 100000))",
                            text);
    if (nrc != MB_OK || !end || end == text)
        return setting_bad(text, out, err);
    if (strcmp(end, "%") == 0) {
        if (!(v > 0 && v <= 100))
            return mb_error_set(err, MB_EINVAL,
                                "power limit '%s': a percentage of the default in (0, 100]", text);
        out->kind = MB_PSET_PERCENT;
    } else if (strcmp(end, "W") == 0 || strcmp(end, "w") == 0 || *end == '\0') {
        if (!(v > 0 && v < 100000))
            return mb_error_set(err, MB_EINVAL, "power limit '%s': watts in (0, 100000)", text);
        out->kind = MB_PSET_WATTS;
    } else {
        return setting_bad(text, out, err);
    }
    if (strlen(text) >= sizeof(out->text)) {
        memset(out, 0, sizeof(*out));
        return mb_error_set(err, MB_EINVAL, "power limit '%.40s': longer than %zu characters", text,
                            sizeof(out->text) - 1);
    }
    out->value = v;
    snprintf(out->text, sizeof(out->text), "%s", text);
    return MB_OK;
}

void mb_power_setting_format(const struct mb_power_setting *s, enum mb_power_setting_style style,
                             char *out, size_t cap)
{
    switch (s->kind) {
    case MB_PSET_NONE:
        snprintf(out, cap, "%s", style == MB_PSET_SLUG ? "default" : "");
        return;
    case MB_PSET_DEFAULT:
        snprintf(out, cap, "default");
        return;
    case MB_PSET_PERCENT:
        snprintf(out, cap, style == MB_PSET_SLUG ? "%gpct" : "%g%%", s->value);
        return;
    case MB_PSET_WATTS:
        snprintf(out, cap, "%gW", s->value);
        return;
    }
    snprintf(out, cap, "%s", "");
}

bool mb_power_setting_same(const struct mb_power_setting *a, const struct mb_power_setting *b)
{
    return a->kind == b->kind && a->value == b->value;
}

int mb_powercap_resolve(const struct mb_power_setting *s, const struct mb_power_limit *pl,
                        uint32_t *out_mw, struct mb_error *err)
{
    if (s->kind == MB_PSET_NONE)
        return mb_error_set(err, MB_EINVAL, "no power limit to resolve");
    if (!(pl->valid & MB_PL_DEFAULT) || !(pl->valid & MB_PL_RANGE))
        return mb_error_set(err, MB_EUNSUPPORTED,
                            "the device does not report its default power limit and range");
    double mw = s->kind == MB_PSET_DEFAULT   ? (double)pl->default_mw
                : s->kind == MB_PSET_PERCENT ? (double)pl->default_mw * s->value / 100.0
                                             : s->value * 1000.0;
    mw = floor(mw + 0.5);
    if (mw < pl->min_mw || mw > pl->max_mw)
        return mb_error_set(err, MB_ERANGE,
                            "power limit %.0f W is outside the device's range %.0f..%.0f W",
                            mw / 1000.0, pl->min_mw / 1000.0, pl->max_mw / 1000.0);
    *out_mw = (uint32_t)mw;
    return MB_OK;
}
