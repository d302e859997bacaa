/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The MIG catalog: GPU models, their GPU-instance profiles and placements.
 *
 * The built-in catalog is data/mig-catalog.json compiled into the library; --catalog FILE.json
 * adds or replaces models in the same shape. Every value that the catalog does not mark as
 * verified keeps its status so that output can say "inferred" or "unverified".
 */
#ifndef MIGBENCH_CATALOG_H
#define MIGBENCH_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/status.h"

#define MB_PROFILE_NAME_MAX 32
#define MB_MODEL_NAME_MAX 64
#define MB_MAX_PLACEMENTS 16
#define MB_MAX_PROFILES 24
#define MB_MAX_CI_PROFILES 8
#define MB_MAX_MEMORY_SLICES 16
#define MB_STATUS_NOTE_MAX 160

/* How sure the catalog is of a value (mig-geometry.md's status words). */
enum mb_value_status {
    MB_VALUE_VERIFIED = 0,
    MB_VALUE_INFERRED,
    MB_VALUE_DERIVED,
    MB_VALUE_UNVERIFIED,
};

/* Returns "verified", "inferred", "derived" or "unverified". */
const char *mb_value_status_str(enum mb_value_status s);

/* What the default power reading means. */
enum mb_power_kind {
    MB_POWER_UNKNOWN = 0,
    MB_POWER_INSTANT,  /* a short boxcar (e.g. A100: 25 ms every 100 ms) */
    MB_POWER_AVERAGED, /* a moving average (e.g. H100/H200: 1 s) */
    MB_POWER_NONE,     /* the device has no power reading */
};

/* Returns "unknown", "instant", "averaged" or "none". */
const char *mb_power_kind_str(enum mb_power_kind k);

#define MB_SENSOR_SCOPE_MAX 32

/*
 * A model's power sensor as the catalog records it (the model's "sensor" object): what NVML's
 * default power reading means, how often it and the energy counter are published. Both the nvml
 * and the emu backend read it. Unknown numbers are 0; `known` is false when the catalog has no
 * sensor entry for the model.
 */
struct mb_model_sensor {
    bool known;
    enum mb_power_kind power_kind;    /* MB_POWER_UNKNOWN when not given */
    uint32_t power_avg_window_ms;     /* window of the default reading */
    uint32_t power_update_period_ms;  /* how often a new power value is published */
    int average_field;                /* NVML_FI_DEV_POWER_AVERAGE exists: 1, 0, -1 unknown */
    uint32_t energy_update_period_ms; /* how often the energy counter moves */
    char scope[MB_SENSOR_SCOPE_MAX];  /* "board", "module (GPU+CPU)"; "" unknown */
    enum mb_value_status status;      /* the least sure of the values above */
    char note[MB_STATUS_NOTE_MAX];    /* the catalog's status text (source, reasoning) */
};

/* A GPU-instance placement, in memory slices: occupies start .. start+size-1. */
struct mb_placement {
    unsigned start;
    unsigned size;
};

/* One GPU-instance profile of a model. Unknown numbers are -1, never 0. */
struct mb_gi_profile {
    char name[MB_PROFILE_NAME_MAX]; /* "3g.40gb", "1g.10gb+me" */
    int nvml_enum;                  /* NVML_GPU_INSTANCE_PROFILE_* value passed to ProfileInfo */
    int driver_id;             /* info.id, what nvidia-smi prints and create takes; -1 unknown */
    bool driver_id_unverified; /* driver_id assumed by analogy */
    unsigned compute_slices;
    unsigned memory_slices;                          /* placement size */
    int64_t memory_mib;                              /* -1 unknown */
    int sm_count;                                    /* -1 unknown */
    int copy_engines, decoders, encoders, jpeg, ofa; /* -1 unknown */
    unsigned max_count;
    bool media_extension; /* a "+me" profile: at most one +me instance per GPU */
    size_t n_placements;
    struct mb_placement placements[MB_MAX_PLACEMENTS];
    enum mb_value_status placements_status;
    enum mb_value_status values_status;   /* memory/SM/engine numbers as a whole */
    char status_note[MB_STATUS_NOTE_MAX]; /* short reason when not verified, else "" */
};

/* A compute-instance option inside a GPU instance of a given compute-slice count. */
struct mb_ci_profile {
    unsigned gi_compute_slices;
    unsigned ci_slices;
    int nvml_ci_profile_id;
    unsigned max_count;
    bool is_default;
};

/* One GPU model. */
struct mb_gpu_model {
    char name[MB_MODEL_NAME_MAX]; /* catalog key, e.g. "H100-SXM5-80GB" */
    unsigned compute_slices;      /* 7, or 4 on the A30 */
    unsigned memory_slices;       /* 8, or 4 on the A30 */
    unsigned max_gpu_instances;
    int64_t total_memory_mib; /* -1 unknown */
    int sm_full_gpu;          /* -1 unknown */
    size_t n_profiles;
    struct mb_gi_profile profiles[MB_MAX_PROFILES];
    size_t n_ci_profiles;
    struct mb_ci_profile ci_profiles[MB_MAX_CI_PROFILES * 5];
    bool user_supplied; /* came from --catalog rather than the built-in data */
    struct mb_model_sensor sensor;
};

struct mb_catalog;

/*
 * Creates a catalog holding the built-in models. *out is owned by the caller and released with
 * mb_catalog_destroy. Fails only on memory exhaustion or a corrupt build (MB_EPARSE).
 */
int mb_catalog_create(struct mb_catalog **out, struct mb_error *err);

/* Releases a catalog; NULL is a no-op. Pointers into it become invalid. */
void mb_catalog_destroy(struct mb_catalog *cat);

/*
 * Loads a JSON file in mig-catalog.json's shape and adds its models, replacing built-in models of
 * the same name. On failure (MB_EIO, MB_EPARSE with the file, model and field named in err) the
 * catalog is unchanged.
 */
int mb_catalog_load_file(struct mb_catalog *cat, const char *path, struct mb_error *err);

/* Number of models, and the i-th model (stable order: built-in order, then loaded ones). */
size_t mb_catalog_count(const struct mb_catalog *cat);
const struct mb_gpu_model *mb_catalog_model(const struct mb_catalog *cat, size_t i);

/*
 * Finds a model by any name a user or nvidia-smi would use ("H100", "h100-80gb",
 * "NVIDIA H100 80GB HBM3", "A100-SXM4-40GB"), case-insensitively. On MB_ENOTFOUND, err names the
 * closest catalog models; on an ambiguous short name (MB_EINVAL) it lists the candidates.
 */
int mb_catalog_find(const struct mb_catalog *cat, const char *name, const struct mb_gpu_model **out,
                    struct mb_error *err);

/* Finds a profile of model by name, case-insensitively; NULL if none. */
const struct mb_gi_profile *mb_model_profile(const struct mb_gpu_model *model, const char *name);

/*
 * Model-independent MIG sizes. Profile names carry the model's memory ("3g.40gb" on an 80 GB
 * H100 is "3g.71gb" on an H200), so an experiment meant for any GPU names sizes instead:
 *
 *   <c>g[.<m>m][+me]     c compute slices: 1, 2, 3, 4 or 7; m memory slices: 1, 2, 4 or 8
 *
 * "<c>g" is the model's profile with c compute slices and the fewest memory slices, without the
 * media extension ("3g" -> 3g.40gb on an H100, 3g.71gb on an H200). ".<m>m" asks for exactly m
 * memory slices: "1g.2m" is the double-memory 1g (1g.20gb on an H100, 1g.35gb on an H200).
 * "+me" asks for the media-extension variant ("1g+me" -> 1g.10gb+me). Case is ignored.
 * The A30 (4 compute slices) has 1g, 2g and 4g only.
 */
#define MB_SIZE_NAME_MAX 16

/* Whether name is spelled as a model-independent size (syntax only; no model consulted). */
bool mb_profile_is_size(const char *name);

/*
 * Resolves a profile name the user wrote for model: an exact profile name of the model (any
 * case), else a model-independent size (above). MB_OK with *out set; else *out is NULL and:
 * MB_ENOTFOUND for a well-formed size the model does not have ("3g" on an A30), MB_EINVAL for
 * anything else; err names the model, lists its profile names and its sizes.
 */
int mb_model_profile_resolve(const struct mb_gpu_model *model, const char *name,
                             const struct mb_gi_profile **out, struct mb_error *err);

/*
 * Writes profile p's shortest model-independent spelling ("3g", "1g+me", "1g.2m") to buf
 * (always terminated, cap >= MB_SIZE_NAME_MAX suffices).
 */
void mb_model_profile_size_name(const struct mb_gpu_model *model, const struct mb_gi_profile *p,
                                char *buf, size_t cap);

/* Finds a profile of model by driver profile id (info.id); NULL if none. */
const struct mb_gi_profile *mb_model_profile_by_driver_id(const struct mb_gpu_model *model,
                                                          int driver_id);

#endif
