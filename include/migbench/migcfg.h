/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mig-parted's configuration format, read with libyaml:
 *
 *   version: v1
 *   mig-configs:
 *     NAME:
 *       - devices: all            # or [0, 1]
 *         mig-enabled: true
 *         mig-devices:
 *           "3g.40gb": 1
 *           "1g.10gb": 2
 *
 * Parsing checks the shape; profile names are checked against a GPU model when a config is
 * applied. Errors name the file, line and field. Compute-instance splits ("1c.3g.40gb") are
 * refused with a message rather than misread; an entry with device-filter is kept but marked, so
 * that applying it (not merely reading the file) is refused.
 */
#ifndef MIGBENCH_MIGCFG_H
#define MIGBENCH_MIGCFG_H

#include <stdbool.h>
#include <stddef.h>

#include "migbench/catalog.h"
#include "migbench/status.h"

#define MB_MIGCFG_NAME_MAX 64
#define MB_MIGCFG_MAX_DEVICES 64
#define MB_MIGCFG_MAX_ENTRIES 16
#define MB_MIGCFG_MAX_CONFIGS 64
#define MB_MIGCFG_MAX_COUNT 64

/* One "profile: count" line of mig-devices. */
struct mb_migcfg_profile {
    char name[MB_PROFILE_NAME_MAX];
    unsigned count;
    unsigned line; /* 1-based line in the file */
};

/* One element of a config's list: which devices, MIG on or off, and the instances. */
struct mb_migcfg_entry {
    bool all_devices;
    size_t n_devices;
    unsigned devices[MB_MIGCFG_MAX_DEVICES];
    bool mig_enabled;
    bool device_filter; /* the entry selects GPUs by PCI id: refused when applied */
    size_t n_profiles;
    struct mb_migcfg_profile profiles[MB_MAX_PROFILES];
    unsigned line;
};

/* A named config. */
struct mb_migcfg_config {
    char name[MB_MIGCFG_NAME_MAX];
    size_t n_entries;
    struct mb_migcfg_entry entries[MB_MIGCFG_MAX_ENTRIES];
    unsigned line;
};

struct mb_migcfg;

/*
 * Parses a mig-parted config file. *out is owned by the caller (mb_migcfg_destroy). On failure
 * (MB_EIO unreadable, MB_EPARSE with "FILE:LINE: field 'x': what") nothing is allocated.
 */
int mb_migcfg_load(const char *path, struct mb_migcfg **out, struct mb_error *err);

/* As mb_migcfg_load, from a buffer; source names it in messages. */
int mb_migcfg_parse(const char *text, size_t len, const char *source, struct mb_migcfg **out,
                    struct mb_error *err);

/* Releases a parsed config; NULL is a no-op. */
void mb_migcfg_destroy(struct mb_migcfg *cfg);

/* The name the file was read from (as given to load or parse). */
const char *mb_migcfg_source(const struct mb_migcfg *cfg);

/* Number of configs, and the i-th (file order); NULL past the end. */
size_t mb_migcfg_count(const struct mb_migcfg *cfg);
const struct mb_migcfg_config *mb_migcfg_config(const struct mb_migcfg *cfg, size_t i);

/* The config called name (exact match); NULL if none. */
const struct mb_migcfg_config *mb_migcfg_find(const struct mb_migcfg *cfg, const char *name);

/* The entry of config that names device index dev (or "all"); NULL if none does. */
const struct mb_migcfg_entry *mb_migcfg_entry_for(const struct mb_migcfg_config *config,
                                                  unsigned dev);

/*
 * Turns an entry's mig-devices into profile indices of model (each repeated count times), largest
 * first. MB_EINVAL with "FILE:LINE: field 'mig-devices': unknown profile 'x' for MODEL; its
 * profiles are: ..." when a name is not the model's; MB_ERANGE when more than cap instances.
 */
int mb_migcfg_profiles(const struct mb_migcfg *cfg, const struct mb_migcfg_entry *entry,
                       const struct mb_gpu_model *model, unsigned *out, size_t cap, size_t *n,
                       struct mb_error *err);

#endif
