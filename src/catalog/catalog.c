/* SPDX-License-Identifier: Apache-2.0 */
/* The MIG catalog: data/mig-catalog.json (built in) plus --catalog files, parsed with cJSON. */
#include "migbench/catalog.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "migbench/fileio.h"
#include "base/json_io.h"

extern const char mb__catalog_json[];
extern const size_t mb__catalog_json_len;

/* A --catalog file larger than this is refused rather than read (the built-in one is ~70 KB). */
#define CATALOG_FILE_MAX (4u << 20)
#define MAX_MODELS 256
#define MAX_USER_ALIASES 8
#define ALIAS_MAX 64
/* Names longer than this cannot be a model name; they are refused without a distance search. */
#define LOOKUP_NAME_MAX 128

struct model_entry {
    struct mb_gpu_model model;
    size_t n_aliases;
    char aliases[MAX_USER_ALIASES][ALIAS_MAX]; /* normalised, from the file's "aliases" */
};

struct mb_catalog {
    size_t n;
    struct model_entry *models[MAX_MODELS];
};

const char *mb_value_status_str(enum mb_value_status s)
{
    switch (s) {
    case MB_VALUE_VERIFIED:
        return "verified";
    case MB_VALUE_INFERRED:
        return "inferred";
    case MB_VALUE_DERIVED:
        return "derived";
    case MB_VALUE_UNVERIFIED:
        return "unverified";
    }
    return "unverified";
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 */

/* Where we are in the input, for messages: "FILE: model 'X': profile 'Y': field 'z': ...". */
const char *mb_power_kind_str(enum mb_power_kind k)
{
    switch (k) {
    case MB_POWER_INSTANT:
        return "instant";
    case MB_POWER_AVERAGED:
        return "averaged";
    case MB_POWER_NONE:
        return "none";
    case MB_POWER_UNKNOWN:
        break;
    }
    return "unknown";
}

struct ctx {
    const char *source;
    const char *model;
    const char *profile;
    struct mb_error *err;
};

static int fail_at(const struct ctx *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(const struct ctx *c, const char *field, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    char where[256] = "";
    int n = 0;
    if (c->model)
        n += snprintf(where + n, sizeof(where) - (size_t)n, "model '%.64s': ", c->model);
    if (c->profile && n >= 0 && (size_t)n < sizeof(where))
        n += snprintf(where + n, sizeof(where) - (size_t)n, "profile '%.40s': ", c->profile);
    if (field && n >= 0 && (size_t)n < sizeof(where))
        snprintf(where + n, sizeof(where) - (size_t)n, "field '%.64s': ", field);
    /* A long path gives up its beginning, never the model, profile and field after it. */
    const char *src = c->source;
    size_t len = strlen(src), used = strlen(where) + strlen(what) + 2;
    size_t room = used + 4 < MB_ERROR_MSG_MAX ? MB_ERROR_MSG_MAX - 1 - used : 0;
    if (len > room && room > 3)
        return mb_error_set(c->err, MB_EPARSE, "...%s: %s%s", src + len - (room - 3), where, what);
    return mb_error_set(c->err, MB_EPARSE, "%s: %s%s", src, where, what);
}

/* Reads an integer field. Missing or null: *out = dflt when !required. */
static int get_int(const struct ctx *c, const cJSON *obj, const char *field, bool required,
                   long long lo, long long hi, long long dflt, long long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return fail_at(c, field, v ? "must not be null" : "missing");
        *out = dflt;
        return MB_OK;
    }
    if (!cJSON_IsNumber(v))
        return fail_at(c, field, "expected an integer");
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return fail_at(c, field, "expected an integer, got %g", d);
    if (d < (double)lo || d > (double)hi)
        return fail_at(c, field, "%.0f is out of range %lld..%lld", d, lo, hi);
    *out = (long long)d;
    return MB_OK;
}

static int get_uint(const struct ctx *c, const cJSON *obj, const char *field, unsigned lo,
                    unsigned hi, unsigned *out)
{
    long long v;
    int rc = get_int(c, obj, field, true, lo, hi, 0, &v);
    if (rc == MB_OK)
        *out = (unsigned)v;
    return rc;
}

/* Optional engine/SM counts: null or missing means unknown (-1). */
static int get_opt_int(const struct ctx *c, const cJSON *obj, const char *field, int *out)
{
    long long v;
    int rc = get_int(c, obj, field, false, 0, INT_MAX, -1, &v);
    if (rc == MB_OK)
        *out = (int)v;
    return rc;
}

static bool name_char_ok(int ch)
{
    return isalnum(ch) || ch == '.' || ch == '+' || ch == '-' || ch == '_';
}

/* Parses the leading status word of strings like "INFERRED (no -lgipp output ...)". */
static bool parse_status_word(const char *s, enum mb_value_status *out)
{
    static const struct {
        const char *word;
        enum mb_value_status st;
    } words[] = {
        {"VERIFIED", MB_VALUE_VERIFIED},
        {"INFERRED", MB_VALUE_INFERRED},
        {"DERIVED", MB_VALUE_DERIVED},
        {"UNVERIFIED", MB_VALUE_UNVERIFIED},
    };
    while (*s == ' ')
        s++;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].word);
        if (strncasecmp(s, words[i].word, n) == 0 && !isalpha((unsigned char)s[n])) {
            *out = words[i].st;
            return true;
        }
    }
    return false;
}

static int parse_placements(const struct ctx *c, const cJSON *arr, const struct mb_gpu_model *m,
                            struct mb_gi_profile *p)
{
    if (!arr)
        return fail_at(c, "placements", "missing");
    if (!cJSON_IsArray(arr))
        return fail_at(c, "placements", "expected an array of [start, size] pairs");
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > MB_MAX_PLACEMENTS)
        return fail_at(c, "placements", "%d entries; expected 1..%d", n, MB_MAX_PLACEMENTS);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *s = cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 ? e->child : NULL;
        const cJSON *z = s ? s->next : NULL;
        if (!s || !z || !cJSON_IsNumber(s) || !cJSON_IsNumber(z) ||
            s->valuedouble != floor(s->valuedouble) || z->valuedouble != floor(z->valuedouble) ||
            s->valuedouble < 0 || z->valuedouble < 1 || s->valuedouble > 64 || z->valuedouble > 64)
            return fail_at(c, "placements", "entry %d is not a [start, size] pair of integers", i);
        unsigned start = (unsigned)s->valuedouble, size = (unsigned)z->valuedouble;
        if (size != p->memory_slices)
            return fail_at(c, "placements",
                           "entry %d [%u, %u] has size %u, but the profile has %u memory slices", i,
                           start, size, size, p->memory_slices);
        if (start + size > m->memory_slices)
            return fail_at(c, "placements",
                           "entry %d [%u, %u] runs past the model's %u memory slices", i, start,
                           size, m->memory_slices);
        for (size_t k = 0; k < p->n_placements; k++)
            if (p->placements[k].start == start)
                return fail_at(c, "placements", "entry %d repeats start %u", i, start);
        p->placements[p->n_placements].start = start;
        p->placements[p->n_placements].size = size;
        p->n_placements++;
        i++;
    }
    return MB_OK;
}

/* Appends "; " and text to a bounded note. */
static void note_append(char *note, size_t cap, const char *text, size_t len)
{
    size_t n = strlen(note);
    if (n && n + 2 < cap) {
        memcpy(note + n, "; ", 3);
        n += 2;
    }
    if (n + 1 >= cap)
        return;
    size_t room = cap - 1 - n;
    if (len > room)
        len = room;
    memcpy(note + n, text, len);
    note[n + len] = '\0';
}

static const char *const value_fields[] = {"memory_mib", "sm_count", "copy_engines", "decoders",
                                           "encoders",   "jpeg",     "ofa"};

/* A profile's name: 1..MB_PROFILE_NAME_MAX-1 of letters, digits, '.', '+', '-'. */
static int parse_profile_name(struct ctx *c, const cJSON *obj, struct mb_gi_profile *p)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    if (!cJSON_IsString(name))
        return fail_at(c, "name", name ? "expected a string" : "missing");
    size_t len = strlen(name->valuestring);
    if (len == 0 || len >= MB_PROFILE_NAME_MAX)
        return fail_at(c, "name", "must be 1..%d characters", MB_PROFILE_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok((unsigned char)name->valuestring[i]))
            return fail_at(c, "name", "'%s' contains '%c'; use letters, digits, '.', '+', '-'",
                           name->valuestring, name->valuestring[i]);
    memcpy(p->name, name->valuestring, len + 1);
    c->profile = p->name;
    return MB_OK;
}

/* A profile's statuses: the catalog's words, then the per-field list of what no source confirmed.
 */
static int parse_profile_status(struct ctx *c, const cJSON *obj, struct mb_gi_profile *p)
{
    p->placements_status = MB_VALUE_VERIFIED;
    p->values_status = MB_VALUE_VERIFIED;
    p->status_note[0] = '\0';
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(obj, "placements_status");
    if (ps && !cJSON_IsNull(ps)) {
        if (!cJSON_IsString(ps) || !parse_status_word(ps->valuestring, &p->placements_status))
            return fail_at(c, "placements_status",
                           "expected a string starting with VERIFIED, INFERRED, DERIVED or "
                           "UNVERIFIED");
    }
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(obj, "values_status");
    if (vs && !cJSON_IsNull(vs)) {
        if (!cJSON_IsString(vs) || !parse_status_word(vs->valuestring, &p->values_status))
            return fail_at(c, "values_status",
                           "expected a string starting with VERIFIED, INFERRED, DERIVED or "
                           "UNVERIFIED");
    }
    const cJSON *uf = cJSON_GetObjectItemCaseSensitive(obj, "unverified_fields");
    char unverified[MB_STATUS_NOTE_MAX] = "";
    if (uf && !cJSON_IsNull(uf)) {
        if (!cJSON_IsArray(uf))
            return fail_at(c, "unverified_fields", "expected an array of field names");
        const cJSON *f;
        cJSON_ArrayForEach(f, uf)
        {
            if (!cJSON_IsString(f))
                return fail_at(c, "unverified_fields", "expected an array of field names");
            const char *fn = f->valuestring;
            if (strcmp(fn, "placements") == 0)
                p->placements_status = MB_VALUE_UNVERIFIED;
            else if (strcmp(fn, "nvidia_smi_profile_id") == 0)
                p->driver_id_unverified = true;
            for (size_t i = 0; i < sizeof(value_fields) / sizeof(value_fields[0]); i++)
                if (strcmp(fn, value_fields[i]) == 0)
                    p->values_status = MB_VALUE_UNVERIFIED;
            const char *shown = strcmp(fn, "nvidia_smi_profile_id") == 0 ? "driver id" : fn;
            size_t n = strlen(unverified);
            snprintf(unverified + n, sizeof(unverified) - n, "%s%s",
                     n ? ", " : "unverified: ", shown);
        }
    }
    if (unverified[0]) {
        note_append(p->status_note, sizeof(p->status_note), unverified, strlen(unverified));
    } else if (p->placements_status != MB_VALUE_VERIFIED && ps && cJSON_IsString(ps)) {
        /* Keep the catalog's reason, up to its first ';' or ')'. */
        const char *why = strchr(ps->valuestring, '(');
        char buf[MB_STATUS_NOTE_MAX];
        int n =
            snprintf(buf, sizeof(buf), "placements %s", mb_value_status_str(p->placements_status));
        if (why && n > 0 && (size_t)n < sizeof(buf)) {
            why++;
            size_t wl = strcspn(why, ";)");
            snprintf(buf + n, sizeof(buf) - (size_t)n, ": %.*s", (int)wl, why);
        }
        note_append(p->status_note, sizeof(p->status_note), buf, strlen(buf));
    }
    return MB_OK;
}

static int parse_profile(struct ctx *c, const cJSON *obj, const struct mb_gpu_model *m,
                         struct mb_gi_profile *p)
{
    int rc;
    if (!cJSON_IsObject(obj))
        return fail_at(c, NULL, "profile entry is not an object");
    if ((rc = parse_profile_name(c, obj, p)))
        return rc;

    long long v;
    if ((rc = get_int(c, obj, "nvml_profile_id", true, 0, 255, 0, &v)))
        return rc;
    p->nvml_enum = (int)v;
    if ((rc = get_int(c, obj, "nvidia_smi_profile_id", false, 0, 4096, -1, &v)))
        return rc;
    p->driver_id = (int)v;
    if ((rc = get_uint(c, obj, "compute_slices", 1, m->compute_slices, &p->compute_slices)))
        return rc;
    if ((rc = get_uint(c, obj, "memory_slices", 1, m->memory_slices, &p->memory_slices)))
        return rc;
    if ((rc = get_int(c, obj, "memory_mib", false, 0, (long long)1 << 40, -1, &v)))
        return rc;
    p->memory_mib = (int64_t)v;
    if ((rc = get_opt_int(c, obj, "sm_count", &p->sm_count)) ||
        (rc = get_opt_int(c, obj, "copy_engines", &p->copy_engines)) ||
        (rc = get_opt_int(c, obj, "decoders", &p->decoders)) ||
        (rc = get_opt_int(c, obj, "encoders", &p->encoders)) ||
        (rc = get_opt_int(c, obj, "jpeg", &p->jpeg)) || (rc = get_opt_int(c, obj, "ofa", &p->ofa)))
        return rc;
    if ((rc = get_uint(c, obj, "max_count", 1, 64, &p->max_count)))
        return rc;
    const char *plus = strchr(p->name, '+');
    p->media_extension = plus && strcasecmp(plus, "+me") == 0;
    if ((rc = parse_placements(c, cJSON_GetObjectItemCaseSensitive(obj, "placements"), m, p)))
        return rc;

    if ((rc = parse_profile_status(c, obj, p)))
        return rc;
    c->profile = NULL;
    return MB_OK;
}

static int parse_ci_profiles(struct ctx *c, const cJSON *obj, struct mb_gpu_model *m)
{
    const char *field = "compute_instance_profiles_by_gi_compute_slices";
    if (!obj || cJSON_IsNull(obj))
        return MB_OK;
    if (!cJSON_IsObject(obj))
        return fail_at(c, field, "expected an object keyed by GI compute slices");
    const size_t cap = sizeof(m->ci_profiles) / sizeof(m->ci_profiles[0]);
    const cJSON *row;
    cJSON_ArrayForEach(row, obj)
    {
        char *end = NULL;
        errno = 0;
        unsigned long g = strtoul(row->string, &end, 10);
        if (errno || !end || *end || end == row->string || g < 1 || g > m->compute_slices)
            return fail_at(c, field, "key '%.20s' is not a compute-slice count 1..%u", row->string,
                           m->compute_slices);
        if (!cJSON_IsArray(row))
            return fail_at(c, field, "entry '%.20s' is not an array", row->string);
        const cJSON *e;
        cJSON_ArrayForEach(e, row)
        {
            if (m->n_ci_profiles >= cap)
                return fail_at(c, field, "more than %zu compute-instance options", cap);
            struct mb_ci_profile *ci = &m->ci_profiles[m->n_ci_profiles];
            if (!cJSON_IsObject(e))
                return fail_at(c, field, "entry in '%.20s' is not an object", row->string);
            long long id;
            int rc;
            if ((rc = get_uint(c, e, "ci_slices", 1, (unsigned)g, &ci->ci_slices)) ||
                (rc = get_int(c, e, "nvml_ci_profile_id", true, 0, 255, 0, &id)) ||
                (rc = get_uint(c, e, "max_count", 1, 64, &ci->max_count)))
                return rc;
            ci->gi_compute_slices = (unsigned)g;
            ci->nvml_ci_profile_id = (int)id;
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "default");
            if (d && !cJSON_IsBool(d) && !cJSON_IsNull(d))
                return fail_at(c, "default", "expected true or false");
            ci->is_default = cJSON_IsTrue(d);
            m->n_ci_profiles++;
        }
    }
    return MB_OK;
}

/* The optional "sensor" object of a model: see struct mb_model_sensor. */
static int parse_sensor(const struct ctx *c, const cJSON *obj, struct mb_model_sensor *s)
{
    memset(s, 0, sizeof(*s));
    s->average_field = -1;
    if (!obj || cJSON_IsNull(obj))
        return MB_OK;
    if (!cJSON_IsObject(obj))
        return fail_at(c, "sensor", "expected an object");
    s->known = true;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "power_kind");
    if (kind && !cJSON_IsNull(kind)) {
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "instant") == 0)
            s->power_kind = MB_POWER_INSTANT;
        else if (cJSON_IsString(kind) && strcmp(kind->valuestring, "averaged") == 0)
            s->power_kind = MB_POWER_AVERAGED;
        else
            return fail_at(c, "sensor.power_kind", "expected \"instant\" or \"averaged\"");
    }
    static const char *const ms_fields[] = {"power_avg_window_ms", "power_update_period_ms",
                                            "energy_update_period_ms"};
    uint32_t *ms_out[] = {&s->power_avg_window_ms, &s->power_update_period_ms,
                          &s->energy_update_period_ms};
    for (size_t i = 0; i < 3; i++) {
        long long v;
        int rc = get_int(c, obj, ms_fields[i], false, 1, 60000, 0, &v);
        if (rc != MB_OK)
            return rc;
        *ms_out[i] = (uint32_t)v;
    }
    const cJSON *avg = cJSON_GetObjectItemCaseSensitive(obj, "power_average_field");
    if (avg && !cJSON_IsNull(avg)) {
        if (!cJSON_IsBool(avg))
            return fail_at(c, "sensor.power_average_field", "expected true or false");
        s->average_field = cJSON_IsTrue(avg);
    }
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(obj, "scope");
    if (scope && !cJSON_IsNull(scope)) {
        if (!cJSON_IsString(scope) || strlen(scope->valuestring) >= sizeof(s->scope))
            return fail_at(c, "sensor.scope", "expected a string of at most %zu characters",
                           sizeof(s->scope) - 1);
        snprintf(s->scope, sizeof(s->scope), "%s", scope->valuestring);
    }
    /* A sensor entry without a status word is unverified: nobody said where it came from. */
    s->status = MB_VALUE_UNVERIFIED;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(obj, "status");
    if (st && !cJSON_IsNull(st)) {
        if (!cJSON_IsString(st) || !parse_status_word(st->valuestring, &s->status))
            return fail_at(c, "sensor.status",
                           "expected a string starting with VERIFIED, INFERRED, DERIVED or "
                           "UNVERIFIED");
        snprintf(s->note, sizeof(s->note), "%s", st->valuestring);
    }
    return MB_OK;
}

static void normalise(const char *in, char *out, size_t cap);

static int parse_model(struct ctx *c, const cJSON *obj, struct model_entry *me)
{
    struct mb_gpu_model *m = &me->model;
    int rc;
    size_t len = strlen(obj->string);
    c->model = obj->string;
    if (len == 0 || len >= MB_MODEL_NAME_MAX)
        return fail_at(c, NULL, "model name must be 1..%d characters", MB_MODEL_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok((unsigned char)obj->string[i]))
            return fail_at(c, NULL, "model name contains '%c'; use letters, digits, '.', '-'",
                           obj->string[i]);
    if (!cJSON_IsObject(obj))
        return fail_at(c, NULL, "expected an object");
    memcpy(m->name, obj->string, len + 1);
    if ((rc = get_uint(c, obj, "compute_slices", 1, MB_MAX_MEMORY_SLICES, &m->compute_slices)) ||
        (rc = get_uint(c, obj, "memory_slices", 1, MB_MAX_MEMORY_SLICES, &m->memory_slices)) ||
        (rc = get_uint(c, obj, "max_gpu_instances", 1, 64, &m->max_gpu_instances)))
        return rc;
    long long v;
    if ((rc = get_int(c, obj, "total_memory_mib", false, 0, (long long)1 << 40, -1, &v)))
        return rc;
    m->total_memory_mib = (int64_t)v;
    m->sm_full_gpu = -1;
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(obj, "sm_count");
    if (cJSON_IsObject(sm)) {
        if ((rc = get_opt_int(c, sm, "full_gpu", &m->sm_full_gpu)))
            return rc;
    } else if ((rc = get_opt_int(c, obj, "sm_count", &m->sm_full_gpu))) {
        return rc;
    }

    if ((rc = parse_sensor(c, cJSON_GetObjectItemCaseSensitive(obj, "sensor"), &m->sensor)))
        return rc;

    const cJSON *profiles = cJSON_GetObjectItemCaseSensitive(obj, "profiles");
    if (!cJSON_IsArray(profiles))
        return fail_at(c, "profiles", profiles ? "expected an array" : "missing");
    int np = cJSON_GetArraySize(profiles);
    if (np < 1 || np > MB_MAX_PROFILES)
        return fail_at(c, "profiles", "%d entries; expected 1..%d", np, MB_MAX_PROFILES);
    const cJSON *po;
    cJSON_ArrayForEach(po, profiles)
    {
        struct mb_gi_profile *p = &m->profiles[m->n_profiles];
        if ((rc = parse_profile(c, po, m, p)))
            return rc;
        for (size_t k = 0; k < m->n_profiles; k++)
            if (strcasecmp(m->profiles[k].name, p->name) == 0)
                return fail_at(c, "profiles", "profile '%s' appears twice", p->name);
        m->n_profiles++;
    }
    if ((rc = parse_ci_profiles(c,
                                cJSON_GetObjectItemCaseSensitive(
                                    obj, "compute_instance_profiles_by_gi_compute_slices"),
                                m)))
        return rc;

    const cJSON *aliases = cJSON_GetObjectItemCaseSensitive(obj, "aliases");
    if (aliases && !cJSON_IsNull(aliases)) {
        if (!cJSON_IsArray(aliases) || cJSON_GetArraySize(aliases) > MAX_USER_ALIASES)
            return fail_at(c, "aliases", "expected an array of at most %d names", MAX_USER_ALIASES);
        const cJSON *a;
        cJSON_ArrayForEach(a, aliases)
        {
            if (!cJSON_IsString(a) || !a->valuestring[0] || strlen(a->valuestring) >= ALIAS_MAX)
                return fail_at(c, "aliases", "expected names of 1..%d characters", ALIAS_MAX - 1);
            normalise(a->valuestring, me->aliases[me->n_aliases], ALIAS_MAX);
            me->n_aliases++;
        }
    }
    c->model = NULL;
    return MB_OK;
}

/* 1-based line and column of byte offset off in text, for JSON syntax errors. */
static void free_entries(struct model_entry **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
}

/* Parses a whole document into freshly allocated entries; nothing is kept on failure. */
static int parse_document(const char *source, const char *text, size_t len, bool user,
                          struct model_entry **out, size_t *n_out, struct mb_error *err)
{
    struct ctx c = {.source = source, .err = err};
    cJSON *root;
    size_t n = 0;
    int rc = mb_json_parse(text, len, source, &root, err);
    if (rc != MB_OK)
        return rc;
    if (!cJSON_IsObject(root)) {
        rc = fail_at(&c, NULL, "expected a JSON object mapping model names to models");
        goto fail;
    }
    const cJSON *mo;
    cJSON_ArrayForEach(mo, root)
    {
        /* Keys starting with '_' are comments or metadata, as in hand-edited catalogs. */
        if (mo->string[0] == '_')
            continue;
        if (n >= MAX_MODELS) {
            rc = fail_at(&c, NULL, "more than %d models", MAX_MODELS);
            goto fail;
        }
        for (size_t k = 0; k < n; k++)
            if (strcasecmp(out[k]->model.name, mo->string) == 0) {
                c.model = mo->string;
                rc = fail_at(&c, NULL, "model appears twice");
                goto fail;
            }
        out[n] = calloc(1, sizeof(*out[n]));
        if (!out[n]) {
            rc = mb_error_set(err, MB_ENOMEM, "%s: out of memory", source);
            goto fail;
        }
        n++;
        if ((rc = parse_model(&c, mo, out[n - 1])))
            goto fail;
        out[n - 1]->model.user_supplied = user;
    }
    if (n == 0) {
        rc = fail_at(&c, NULL, "no models in the file");
        goto fail;
    }
    cJSON_Delete(root);
    *n_out = n;
    return MB_OK;
fail:
    free_entries(out, n);
    cJSON_Delete(root);
    return rc;
}

int mb_catalog_create(struct mb_catalog **out, struct mb_error *err)
{
    *out = NULL;
    struct mb_catalog *cat = calloc(1, sizeof(*cat));
    if (!cat)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = parse_document("built-in catalog", mb__catalog_json, mb__catalog_json_len, false,
                            cat->models, &cat->n, err);
    if (rc) {
        free(cat);
        return rc;
    }
    *out = cat;
    return MB_OK;
}

void mb_catalog_destroy(struct mb_catalog *cat)
{
    if (!cat)
        return;
    free_entries(cat->models, cat->n);
    free(cat);
}

int mb_catalog_load_file(struct mb_catalog *cat, const char *path, struct mb_error *err)
{
    struct model_entry *loaded[MAX_MODELS];
    size_t n = 0;
    char *text = NULL;
    int rc = MB_OK;
    size_t len = 0;
    rc = mb_file_read(path, CATALOG_FILE_MAX, &text, &len, err);
    if (rc == MB_ENOTFOUND) { /* documented: MB_EIO whenever it cannot be read */
        rc = MB_EIO;
        if (err)
            err->status = MB_EIO;
    } else if (rc == MB_ERANGE) {
        rc = mb_error_set(err, MB_EPARSE, "%s: larger than %u bytes; not a catalog", path,
                          CATALOG_FILE_MAX);
    }
    if (rc != MB_OK)
        goto fail;
    if (memchr(text, '\0', len)) {
        rc = mb_error_set(err, MB_EPARSE, "%s: contains a NUL byte; not a JSON catalog", path);
        goto fail;
    }
    if ((rc = parse_document(path, text, len, true, loaded, &n, err)))
        goto fail;

    /* Count the slots needed before changing anything, so failure leaves cat as it was. */
    size_t added = 0;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < cat->n && !found; k++)
            found = strcasecmp(cat->models[k]->model.name, loaded[i]->model.name) == 0;
        added += !found;
    }
    if (cat->n + added > MAX_MODELS) {
        free_entries(loaded, n);
        rc = mb_error_set(err, MB_ERANGE, "%s: the catalog would hold more than %d models", path,
                          MAX_MODELS);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < cat->n && strcasecmp(cat->models[k]->model.name, loaded[i]->model.name) != 0)
            k++;
        if (k < cat->n)
            free(cat->models[k]);
        else
            cat->n++;
        cat->models[k] = loaded[i];
    }
fail:
    free(text);
    return rc;
}

size_t mb_catalog_count(const struct mb_catalog *cat)
{
    return cat ? cat->n : 0;
}

const struct mb_gpu_model *mb_catalog_model(const struct mb_catalog *cat, size_t i)
{
    return cat && i < cat->n ? &cat->models[i]->model : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Names
 */

/*
 * Lower case, spaces and '_' as '-', runs of '-' collapsed, a leading "nvidia-" dropped:
 * "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3".
 */
static void normalise(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        int ch = tolower((unsigned char)*in);
        if (ch == ' ' || ch == '_' || ch == '\t')
            ch = '-';
        if (ch == '-' && (n == 0 || out[n - 1] == '-'))
            continue;
        out[n++] = (char)ch;
    }
    while (n && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    if (strncmp(out, "nvidia-", 7) == 0)
        memmove(out, out + 7, n - 7 + 1);
}

/*
 * The canonical form also drops tokens that name a package or memory type, so that nvidia-smi's
 * "A100-SXM4-40GB", "A100-PCIE-40GB" and "A100 40GB PCIe" all become "a100-40gb".
 */
static void canonical(const char *in, char *out, size_t cap)
{
    static const char *const noise[] = {"sxm",  "sxm4",  "sxm5", "pcie",
                                        "hbm2", "hbm2e", "hbm3", "hbm3e"};
    char tmp[LOOKUP_NAME_MAX + 1];
    normalise(in, tmp, sizeof(tmp));
    size_t n = 0;
    out[0] = '\0';
    for (char *save = NULL, *tok = strtok_r(tmp, "-", &save); tok;
         tok = strtok_r(NULL, "-", &save)) {
        bool drop = false;
        for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
            drop = drop || strcmp(tok, noise[i]) == 0;
        if (drop)
            continue;
        size_t tl = strlen(tok);
        if (n + (n ? 1 : 0) + tl + 1 > cap)
            break;
        if (n)
            out[n++] = '-';
        memcpy(out + n, tok, tl + 1);
        n += tl;
    }
}

/*
 * Short and vendor names, in canonical form, and the catalog models they mean. A list of more
 * than one model is an ambiguous name: it is reported with its candidates, never guessed.
 * "h100" means the SXM5 80GB part (nvidia-smi: "NVIDIA H100 80GB HBM3"), the common H100; the
 * NVL part has its own names. The PCIe H100 80GB also lands there (same profiles; SM counts on
 * PCIe are unverified, as the catalog says). The catalog's H200 table does not say whether it
 * came from an SXM or an NVL part, so "H200 NVL" shares it.
 */
static const struct {
    const char *alias;
    const char *models; /* space-separated */
} builtin_aliases[] = {
    {"a30", "A30-24GB"},
    {"a30-24gb", "A30-24GB"},
    {"a100", "A100-SXM4-40GB A100-SXM4-80GB"},
    {"a100-40gb", "A100-SXM4-40GB"},
    {"a100-80gb", "A100-SXM4-80GB"},
    {"h100", "H100-SXM5-80GB"},
    {"h100-80gb", "H100-SXM5-80GB"},
    {"h100-nvl", "H100-NVL-94GB"},
    {"h100-94gb", "H100-NVL-94GB"},
    {"h100-nvl-94gb", "H100-NVL-94GB"},
    {"gh200", "GH200-H100-96GB"},
    {"gh200-96gb", "GH200-H100-96GB"},
    {"gh200-480gb", "GH200-H100-96GB"},
    {"h100-96gb", "GH200-H100-96GB"},
    {"h200", "H200-141GB"},
    {"h200-141gb", "H200-141GB"},
    {"h200-nvl", "H200-141GB"},
    {"b200", "B200-180GB"},
    {"b200-180gb", "B200-180GB"},
    {"gb200", "GB200-186GB"},
    {"gb200-186gb", "GB200-186GB"},
};

static const struct mb_gpu_model *by_key(const struct mb_catalog *cat, const char *key, size_t len)
{
    for (size_t i = 0; i < cat->n; i++)
        if (strlen(cat->models[i]->model.name) == len &&
            strncasecmp(cat->models[i]->model.name, key, len) == 0)
            return &cat->models[i]->model;
    return NULL;
}

/* Levenshtein distance of two short strings (bounded by LOOKUP_NAME_MAX). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strnlen(a, LOOKUP_NAME_MAX), lb = strnlen(b, LOOKUP_NAME_MAX);
    size_t row[LOOKUP_NAME_MAX + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int not_found(const struct mb_catalog *cat, const char *name, const char *canon,
                     struct mb_error *err)
{
    size_t best[MAX_MODELS];
    for (size_t i = 0; i < cat->n; i++) {
        char kc[LOOKUP_NAME_MAX + 1];
        canonical(cat->models[i]->model.name, kc, sizeof(kc));
        best[i] = distance(canon, kc);
        for (size_t a = 0; a < sizeof(builtin_aliases) / sizeof(builtin_aliases[0]); a++) {
            if (!strstr(builtin_aliases[a].models, cat->models[i]->model.name))
                continue;
            size_t d = distance(canon, builtin_aliases[a].alias);
            if (d < best[i])
                best[i] = d;
        }
        for (size_t a = 0; a < cat->models[i]->n_aliases; a++) {
            size_t d = distance(canon, cat->models[i]->aliases[a]);
            if (d < best[i])
                best[i] = d;
        }
    }
    /* Up to three closest models within a distance a typo could explain. */
    size_t limit = strlen(canon) / 2 + 2;
    char list[256] = "";
    size_t shown = 0;
    size_t min_d = SIZE_MAX;
    for (size_t i = 0; i < cat->n; i++)
        if (best[i] < min_d)
            min_d = best[i];
    /* Only the closest ones: a worse match next to a good one is noise. */
    if (min_d <= limit)
        for (size_t i = 0; i < cat->n && shown < 3; i++)
            if (best[i] == min_d) {
                size_t n = strlen(list);
                snprintf(list + n, sizeof(list) - n, "%s%s", shown ? ", " : "",
                         cat->models[i]->model.name);
                shown++;
            }
    if (shown)
        return mb_error_set(err, MB_ENOTFOUND, "unknown GPU model '%.80s'; did you mean %s?", name,
                            list);
    return mb_error_set(err, MB_ENOTFOUND,
                        "unknown GPU model '%.80s'; the catalog has %zu models (list them, or add "
                        "yours with a catalog file)",
                        name, cat->n);
}

int mb_catalog_find(const struct mb_catalog *cat, const char *name, const struct mb_gpu_model **out,
                    struct mb_error *err)
{
    *out = NULL;
    if (!cat || !name)
        return mb_error_set(err, MB_EINVAL, "no GPU model name");
    size_t len = strlen(name);
    char norm[LOOKUP_NAME_MAX + 1], canon[LOOKUP_NAME_MAX + 1];
    normalise(name, norm, sizeof(norm));
    if (!norm[0])
        return mb_error_set(err, MB_EINVAL, "empty GPU model name");
    if (len > LOOKUP_NAME_MAX)
        return mb_error_set(err, MB_ENOTFOUND, "unknown GPU model '%.40s...' (name too long)",
                            name);
    canonical(name, canon, sizeof(canon));

    /* 1. The catalog key or a file-supplied alias, spelled in any case or spacing. */
    for (size_t i = 0; i < cat->n; i++) {
        char kn[LOOKUP_NAME_MAX + 1];
        normalise(cat->models[i]->model.name, kn, sizeof(kn));
        bool hit = strcmp(kn, norm) == 0;
        for (size_t a = 0; !hit && a < cat->models[i]->n_aliases; a++)
            hit = strcmp(cat->models[i]->aliases[a], norm) == 0;
        if (hit) {
            *out = &cat->models[i]->model;
            return MB_OK;
        }
    }

    /* 2. Same canonical form as a key ("A100 40GB PCIe" ~ "A100-SXM4-40GB"). */
    const struct mb_gpu_model *hits[MAX_MODELS];
    size_t nh = 0;
    for (size_t i = 0; i < cat->n; i++) {
        char kc[LOOKUP_NAME_MAX + 1];
        canonical(cat->models[i]->model.name, kc, sizeof(kc));
        bool hit = strcmp(kc, canon) == 0;
        for (size_t a = 0; !hit && a < cat->models[i]->n_aliases; a++) {
            char ac[LOOKUP_NAME_MAX + 1];
            canonical(cat->models[i]->aliases[a], ac, sizeof(ac));
            hit = strcmp(ac, canon) == 0;
        }
        if (hit)
            hits[nh++] = &cat->models[i]->model;
    }

    /* 3. The built-in short and vendor names. */
    if (nh == 0) {
        for (size_t a = 0; a < sizeof(builtin_aliases) / sizeof(builtin_aliases[0]); a++) {
            if (strcmp(builtin_aliases[a].alias, canon) != 0)
                continue;
            const char *p = builtin_aliases[a].models;
            while (*p) {
                size_t wl = strcspn(p, " ");
                const struct mb_gpu_model *m = by_key(cat, p, wl);
                if (m && nh < MAX_MODELS)
                    hits[nh++] = m;
                p += wl;
                p += strspn(p, " ");
            }
            break;
        }
    }
    if (nh == 1) {
        *out = hits[0];
        return MB_OK;
    }
    if (nh > 1) {
        char list[256] = "";
        for (size_t i = 0; i < nh; i++) {
            size_t n = strlen(list);
            snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", hits[i]->name);
        }
        return mb_error_set(err, MB_EINVAL, "GPU model name '%s' is ambiguous: it could be %s",
                            name, list);
    }
    return not_found(cat, name, canon, err);
}

const struct mb_gi_profile *mb_model_profile(const struct mb_gpu_model *model, const char *name)
{
    if (!model || !name)
        return NULL;
    for (size_t i = 0; i < model->n_profiles; i++)
        if (strcasecmp(model->profiles[i].name, name) == 0)
            return &model->profiles[i];
    return NULL;
}

const struct mb_gi_profile *mb_model_profile_by_driver_id(const struct mb_gpu_model *model,
                                                          int driver_id)
{
    if (!model || driver_id < 0)
        return NULL;
    for (size_t i = 0; i < model->n_profiles; i++)
        if (model->profiles[i].driver_id == driver_id)
            return &model->profiles[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Model-independent sizes
 */

struct size_spec {
    unsigned compute;
    unsigned memory; /* 0: the fewest the model offers */
    bool media;
};

/* Parses "<c>g[.<m>m][+me]" (case-insensitive); false when name is not spelled that way. */
static bool parse_size(const char *name, struct size_spec *out)
{
    if (!name)
        return false;
    const char *p = name;
    if (*p != '1' && *p != '2' && *p != '3' && *p != '4' && *p != '7')
        return false;
    out->compute = (unsigned)(*p - '0');
    out->memory = 0;
    out->media = false;
    p++;
    if (*p != 'g' && *p != 'G')
        return false;
    p++;
    if (*p == '.') {
        p++;
        if (*p != '1' && *p != '2' && *p != '4' && *p != '8')
            return false;
        out->memory = (unsigned)(*p - '0');
        p++;
        if (*p != 'm' && *p != 'M')
            return false;
        p++;
    }
    if (*p == '+') {
        if (strcasecmp(p, "+me") != 0)
            return false;
        out->media = true;
        p += 3;
    }
    return *p == '\0';
}

bool mb_profile_is_size(const char *name)
{
    struct size_spec s;
    return parse_size(name, &s);
}

/* The profile a size means on model, or NULL. */
static const struct mb_gi_profile *size_profile(const struct mb_gpu_model *model,
                                                const struct size_spec *s)
{
    const struct mb_gi_profile *best = NULL;
    for (size_t i = 0; i < model->n_profiles; i++) {
        const struct mb_gi_profile *p = &model->profiles[i];
        if (p->compute_slices != s->compute || p->media_extension != s->media)
            continue;
        if (s->memory && p->memory_slices != s->memory)
            continue;
        if (!best || p->memory_slices < best->memory_slices)
            best = p;
    }
    return best;
}

void mb_model_profile_size_name(const struct mb_gpu_model *model, const struct mb_gi_profile *p,
                                char *buf, size_t cap)
{
    if (!cap)
        return;
    struct size_spec s = {.compute = p->compute_slices, .memory = 0, .media = p->media_extension};
    const struct mb_gi_profile *plain = size_profile(model, &s);
    if (plain == p)
        snprintf(buf, cap, "%ug%s", p->compute_slices, p->media_extension ? "+me" : "");
    else
        snprintf(buf, cap, "%ug.%um%s", p->compute_slices, p->memory_slices,
                 p->media_extension ? "+me" : "");
}

/* "1g.10gb, 1g.10gb+me, ..." and "1g, 1g+me, 1g.2m, ..." for messages. */
static void profile_lists(const struct mb_gpu_model *model, char *names, size_t ncap, char *sizes,
                          size_t scap)
{
    names[0] = sizes[0] = '\0';
    for (size_t i = 0; i < model->n_profiles; i++) {
        char sz[MB_SIZE_NAME_MAX];
        mb_model_profile_size_name(model, &model->profiles[i], sz, sizeof(sz));
        size_t n = strlen(names);
        snprintf(names + n, ncap - n, "%s%s", i ? ", " : "", model->profiles[i].name);
        n = strlen(sizes);
        snprintf(sizes + n, scap - n, "%s%s", i ? ", " : "", sz);
    }
}

int mb_model_profile_resolve(const struct mb_gpu_model *model, const char *name,
                             const struct mb_gi_profile **out, struct mb_error *err)
{
    *out = NULL;
    if (!model || !name)
        return mb_error_set(err, MB_EINVAL, "no model or profile name");
    const struct mb_gi_profile *p = mb_model_profile(model, name);
    struct size_spec s;
    bool is_size = !p && parse_size(name, &s);
    if (is_size)
        p = size_profile(model, &s);
    if (p) {
        *out = p;
        return MB_OK;
    }
    char names[200], sizes[120];
    profile_lists(model, names, sizeof(names), sizes, sizeof(sizes));
    if (is_size)
        return mb_error_set(err, MB_ENOTFOUND, "%s has no %s (its sizes: %s; its profiles: %s)",
                            model->name, name, sizes, names);
    return mb_error_set(err, MB_EINVAL,
                        "%s has no profile '%.40s' (its profiles: %s; or a size: %s)", model->name,
                        name, names, sizes);
}
