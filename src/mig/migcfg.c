/* SPDX-License-Identifier: Apache-2.0 */
/* mig-parted configuration files (version v1), read through the library's YAML reader. */
#include "migbench/migcfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "migbench/fileio.h"
#include "base/yaml_internal.h"
#include "base/yaml_read.h"

/* A config file larger than this is refused (mig-parted's own default file is ~20 KB). */
#define MIGCFG_FILE_MAX (1u << 20)
#define SOURCE_MAX 256
/* mig-parted files nest five levels; the limits bound what a hostile file costs. */
#define MIGCFG_MAX_DEPTH 32
#define MIGCFG_MAX_NODES 100000

struct mb_migcfg {
    char source[SOURCE_MAX];
    size_t n;
    struct mb_migcfg_config configs[MB_MIGCFG_MAX_CONFIGS];
};

/* The tree's line of n (its mapping key's line is kept by the caller where it matters). */
static unsigned line_of(const struct mb__ynode *n)
{
    return n ? n->line : 0;
}

static int parse_devices(struct mb__yread *c, const struct mb__ynode *n, struct mb_migcfg_entry *e)
{
    const char *s = mb__yread_scalar(n);
    if (s) {
        if (strcmp(s, "all") == 0) {
            e->all_devices = true;
            return MB_OK;
        }
        /* A single index is accepted as mig-parted does. */
        unsigned v;
        if (mb__yread_uint(c, n, "devices", MB_MIGCFG_MAX_DEVICES - 1, &v) != MB_OK)
            return mb__yread_failn(c, n, "devices",
                                   "expected 'all' or a list of GPU indices like [0, 1]");
        e->devices[e->n_devices++] = v;
        return MB_OK;
    }
    if (!n || n->kind != MB__Y_SEQ)
        return mb__yread_failn(c, n, "devices",
                               "expected 'all' or a list of GPU indices like [0, 1]");
    for (size_t i = 0; i < n->n; i++) {
        const struct mb__ynode *d = n->items[i];
        if (e->n_devices >= MB_MIGCFG_MAX_DEVICES)
            return mb__yread_failn(c, d, "devices", "more than %d devices", MB_MIGCFG_MAX_DEVICES);
        unsigned v;
        int rc = mb__yread_uint(c, d, "devices", MB_MIGCFG_MAX_DEVICES - 1, &v);
        if (rc)
            return rc;
        for (size_t k = 0; k < e->n_devices; k++)
            if (e->devices[k] == v)
                return mb__yread_failn(c, d, "devices", "device %u is listed twice", v);
        e->devices[e->n_devices++] = v;
    }
    if (e->n_devices == 0)
        return mb__yread_failn(c, n, "devices", "empty list; use 'all' or list GPU indices");
    return MB_OK;
}

static bool profile_name_ok(const char *s)
{
    if (!*s || strlen(s) >= MB_PROFILE_NAME_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '+' && *p != '-' && *p != '_')
            return false;
    return true;
}

static int parse_mig_devices(struct mb__yread *c, const struct mb__ynode *n,
                             struct mb_migcfg_entry *e)
{
    const char *field = "mig-devices";
    if (mb__yread_scalar(n) && !*mb__yread_scalar(n))
        return MB_OK; /* "mig-devices:" with nothing after it */
    if (!n || n->kind != MB__Y_MAP)
        return mb__yread_failn(c, n, field,
                               "expected a mapping of profile names to counts, e.g. "
                               "{\"1g.10gb\": 2}");
    for (size_t ki = 0; ki < n->n; ki++) {
        /* The key's own line, for messages and for the profile's line. */
        const struct mb__ynode key_at = {.line = n->key_lines[ki]}, *k = &key_at, *v = n->items[ki];
        const char *name = n->keys[ki];
        size_t digits = strspn(name, "0123456789");
        if (digits && name[digits] == 'c' && name[digits + 1] == '.')
            return mb__yread_failn(
                c, k, field,
                "'%.40s' splits a GPU instance into compute instances; migbench creates "
                "one full-size compute instance per GPU instance, so name the GPU-instance "
                "profile alone",
                name);
        if (!profile_name_ok(name))
            return mb__yread_failn(c, k, field, "'%.40s' is not a profile name (like 1g.10gb)",
                                   name);
        for (size_t i = 0; i < e->n_profiles; i++)
            if (strcasecmp(e->profiles[i].name, name) == 0)
                return mb__yread_failn(c, k, field, "profile '%s' is listed twice", name);
        if (e->n_profiles >= MB_MAX_PROFILES)
            return mb__yread_failn(c, k, field, "more than %d profiles", MB_MAX_PROFILES);
        struct mb_migcfg_profile *mp = &e->profiles[e->n_profiles];
        int rc = mb__yread_uint(c, v, field, MB_MIGCFG_MAX_COUNT, &mp->count);
        if (rc)
            return rc;
        snprintf(mp->name, sizeof(mp->name), "%s", name);
        mp->line = line_of(k);
        e->n_profiles++;
    }
    return MB_OK;
}

static int parse_entry(struct mb__yread *c, const struct mb__ynode *n, struct mb_migcfg_entry *e)
{
    if (!n || n->kind != MB__Y_MAP)
        return mb__yread_failn(c, n, NULL,
                               "a config entry must be a mapping with devices and mig-enabled");
    e->line = line_of(n);
    const struct mb__ynode *devices = NULL, *enabled = NULL, *mdev = NULL;
    for (size_t i = 0; i < n->n; i++) {
        const struct mb__ynode key_at = {.line = n->key_lines[i]}, *k = &key_at, *v = n->items[i];
        const char *key = n->keys[i];
        const struct mb__ynode **slot = NULL;
        if (strcmp(key, "devices") == 0)
            slot = &devices;
        else if (strcmp(key, "mig-enabled") == 0)
            slot = &enabled;
        else if (strcmp(key, "mig-devices") == 0)
            slot = &mdev;
        else if (strcmp(key, "device-filter") == 0)
            e->device_filter = true;
        else
            return mb__yread_failn(c, k, key,
                                   "unknown field (expected devices, mig-enabled, mig-devices, "
                                   "device-filter)");
        if (slot) {
            if (*slot)
                return mb__yread_failn(c, k, key, "given twice");
            *slot = v;
        }
    }
    int rc;
    if (!devices)
        return mb__yread_failn(c, n, "devices", "missing (use 'all' or a list of GPU indices)");
    if (!enabled)
        return mb__yread_failn(c, n, "mig-enabled", "missing (true or false)");
    if ((rc = parse_devices(c, devices, e)) ||
        (rc = mb__yread_yesno(c, enabled, "mig-enabled", &e->mig_enabled)))
        return rc;
    if (mdev && (rc = parse_mig_devices(c, mdev, e)))
        return rc;
    if (!e->mig_enabled) {
        for (size_t i = 0; i < e->n_profiles; i++)
            if (e->profiles[i].count)
                return mb__yread_failn(c, mdev, "mig-devices",
                                       "instances are listed but mig-enabled is false");
    }
    return MB_OK;
}

static int parse_configs(struct mb__yread *c, const struct mb__ynode *configs,
                         struct mb_migcfg *cfg);

static int parse_root(struct mb__yread *c, const struct mb__ynode *root, struct mb_migcfg *cfg)
{
    if (!root || root->kind != MB__Y_MAP)
        return mb__yread_failn(c, root, NULL,
                               "expected a mapping with 'version: v1' and 'mig-configs'");
    const struct mb__ynode *version = NULL, *configs = NULL;
    for (size_t i = 0; i < root->n; i++) {
        const struct mb__ynode key_at = {.line = root->key_lines[i]}, *k = &key_at,
                               *v = root->items[i];
        const char *key = root->keys[i];
        if (key && strcmp(key, "version") == 0 && !version)
            version = v;
        else if (key && strcmp(key, "mig-configs") == 0 && !configs)
            configs = v;
        else
            return mb__yread_failn(c, k, key ? key : "?",
                                   key && (!strcmp(key, "version") || !strcmp(key, "mig-configs"))
                                       ? "given twice"
                                       : "unknown top-level field (expected version, mig-configs)");
    }
    if (!version)
        return mb__yread_failn(c, root, "version", "missing (expected v1)");
    if (!mb__yread_scalar(version) || strcmp(mb__yread_scalar(version), "v1") != 0)
        return mb__yread_failn(c, version, "version", "'%.20s' is not supported (expected v1)",
                               mb__yread_scalar(version) ? mb__yread_scalar(version) : "?");
    if (!configs)
        return mb__yread_failn(c, root, "mig-configs", "missing");
    return parse_configs(c, configs, cfg);
}

static int parse_configs(struct mb__yread *c, const struct mb__ynode *configs,
                         struct mb_migcfg *cfg)
{
    if (configs->kind != MB__Y_MAP)
        return mb__yread_failn(c, configs, "mig-configs",
                               "expected a mapping of config names to lists");
    for (size_t ki = 0; ki < configs->n; ki++) {
        const struct mb__ynode key_at = {.line = configs->key_lines[ki]}, *k = &key_at,
                               *v = configs->items[ki];
        const char *name = configs->keys[ki];
        if (!name || !*name || strlen(name) >= MB_MIGCFG_NAME_MAX)
            return mb__yread_failn(c, k, "mig-configs",
                                   "config names must be strings of 1..%d characters",
                                   MB_MIGCFG_NAME_MAX - 1);
        for (size_t i = 0; i < cfg->n; i++)
            if (strcmp(cfg->configs[i].name, name) == 0)
                return mb__yread_failn(c, k, "mig-configs", "config '%s' is defined twice", name);
        if (cfg->n >= MB_MIGCFG_MAX_CONFIGS)
            return mb__yread_failn(c, k, "mig-configs", "more than %d configs",
                                   MB_MIGCFG_MAX_CONFIGS);
        struct mb_migcfg_config *mc = &cfg->configs[cfg->n];
        memset(mc, 0, sizeof(*mc));
        snprintf(mc->name, sizeof(mc->name), "%s", name);
        mc->line = line_of(k);
        if (!v || v->kind != MB__Y_SEQ)
            return mb__yread_failn(c, v, name, "expected a list of entries (- devices: ...)");
        for (size_t j = 0; j < v->n; j++) {
            if (mc->n_entries >= MB_MIGCFG_MAX_ENTRIES)
                return mb__yread_failn(c, v->items[j], name, "more than %d entries",
                                       MB_MIGCFG_MAX_ENTRIES);
            int rc = parse_entry(c, v->items[j], &mc->entries[mc->n_entries]);
            if (rc)
                return rc;
            mc->n_entries++;
        }
        if (mc->n_entries == 0)
            return mb__yread_failn(c, v, name, "no entries");
        cfg->n++;
    }
    if (cfg->n == 0)
        return mb__yread_failn(c, configs, "mig-configs", "no configs");
    return MB_OK;
}

int mb_migcfg_parse(const char *text, size_t len, const char *source, struct mb_migcfg **out,
                    struct mb_error *err)
{
    *out = NULL;
    if (len > MIGCFG_FILE_MAX)
        return mb_error_set(err, MB_EPARSE, "%s: larger than %u bytes; not a MIG config", source,
                            MIGCFG_FILE_MAX);
    if (memchr(text, '\0', len))
        return mb_error_set(err, MB_EPARSE, "%s: contains a NUL byte; not a YAML file", source);
    struct mb_migcfg *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    snprintf(cfg->source, sizeof(cfg->source), "%s", source);
    struct mb__ynode *root = NULL;
    yaml_document_t doc;
    bool have_doc = false;
    struct mb__yaml_fail f;
    int rc = mb__yaml_load(text, len, MIGCFG_MAX_DEPTH, MIGCFG_MAX_NODES, &doc, &have_doc, &f);
    if (rc == MB_ENOMEM) {
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
        goto fail;
    }
    if (rc != MB_OK) {
        rc = mb_error_set(err, MB_EPARSE, "%s:%u:%u: %s", source, f.line, f.column, f.msg);
        goto fail;
    }
    struct mb__yread c = {
        .path = source, .err = err, .max_depth = MIGCFG_MAX_DEPTH, .max_nodes = MIGCFG_MAX_NODES};
    if (have_doc && (rc = mb__yread_tree(&c, &doc, &root)) != MB_OK)
        goto fail;
    if (!root) {
        rc = mb_error_set(err, MB_EPARSE,
                          "%s: empty file; expected 'version: v1' and "
                          "'mig-configs'",
                          source);
        goto fail;
    }
    if ((rc = parse_root(&c, root, cfg)))
        goto fail;
    mb__ynode_free(root);
    yaml_document_delete(&doc);
    *out = cfg;
    return MB_OK;
fail:
    mb__ynode_free(root);
    if (have_doc)
        yaml_document_delete(&doc);
    free(cfg);
    return rc;
}

int mb_migcfg_load(const char *path, struct mb_migcfg **out, struct mb_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = mb_file_read(path, MIGCFG_FILE_MAX, &text, &len, err);
    if (rc == MB_ERANGE)
        return mb_error_set(err, MB_EPARSE, "%s: larger than %u bytes; not a MIG config", path,
                            MIGCFG_FILE_MAX);
    if (rc == MB_ENOTFOUND)
        rc = mb_error_restatus(err, MB_EIO); /* the contract: every unreadable file is MB_EIO */
    if (rc != MB_OK)
        return rc;
    rc = mb_migcfg_parse(text, len, path, out, err);
    free(text);
    return rc;
}

void mb_migcfg_destroy(struct mb_migcfg *cfg)
{
    free(cfg);
}

const char *mb_migcfg_source(const struct mb_migcfg *cfg)
{
    return cfg->source;
}

size_t mb_migcfg_count(const struct mb_migcfg *cfg)
{
    return cfg ? cfg->n : 0;
}

const struct mb_migcfg_config *mb_migcfg_config(const struct mb_migcfg *cfg, size_t i)
{
    return cfg && i < cfg->n ? &cfg->configs[i] : NULL;
}

const struct mb_migcfg_config *mb_migcfg_find(const struct mb_migcfg *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->n; i++)
        if (strcmp(cfg->configs[i].name, name) == 0)
            return &cfg->configs[i];
    return NULL;
}

const struct mb_migcfg_entry *mb_migcfg_entry_for(const struct mb_migcfg_config *config,
                                                  unsigned dev)
{
    for (size_t i = 0; config && i < config->n_entries; i++) {
        const struct mb_migcfg_entry *e = &config->entries[i];
        if (e->all_devices)
            return e;
        for (size_t k = 0; k < e->n_devices; k++)
            if (e->devices[k] == dev)
                return e;
    }
    return NULL;
}

int mb_migcfg_profiles(const struct mb_migcfg *cfg, const struct mb_migcfg_entry *entry,
                       const struct mb_gpu_model *model, unsigned *out, size_t cap, size_t *n,
                       struct mb_error *err)
{
    *n = 0;
    for (size_t i = 0; i < entry->n_profiles; i++) {
        const struct mb_migcfg_profile *mp = &entry->profiles[i];
        const struct mb_gi_profile *p = mb_model_profile(model, mp->name);
        if (!p) {
            char names[384] = "";
            size_t len = 0;
            for (size_t k = 0; k < model->n_profiles && len + 1 < sizeof(names); k++) {
                int w = snprintf(names + len, sizeof(names) - len, "%s%s", k ? ", " : "",
                                 model->profiles[k].name);
                if (w < 0)
                    break;
                len += (size_t)w;
            }
            return mb_error_set(err, MB_EINVAL,
                                "%s:%u: field 'mig-devices': unknown profile '%s' for %s; its "
                                "profiles are: %s",
                                cfg->source, mp->line, mp->name, model->name, names);
        }
        for (unsigned k = 0; k < mp->count; k++) {
            if (*n >= cap)
                return mb_error_set(err, MB_ERANGE,
                                    "%s:%u: field 'mig-devices': more than %zu instances",
                                    cfg->source, mp->line, cap);
            out[(*n)++] = (unsigned)(p - model->profiles);
        }
    }
    /* Largest first: the creation order. */
    for (size_t i = 1; i < *n; i++)
        for (size_t j = i; j > 0; j--) {
            const struct mb_gi_profile *a = &model->profiles[out[j - 1]],
                                       *b = &model->profiles[out[j]];
            if (a->memory_slices > b->memory_slices ||
                (a->memory_slices == b->memory_slices && a->compute_slices >= b->compute_slices))
                break;
            unsigned t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return MB_OK;
}
