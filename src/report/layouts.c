/* SPDX-License-Identifier: Apache-2.0 */
/* The `migbench layouts --json` documents: layouts, a --check verdict, the catalog. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_io.h"
#include "migbench/report_verbs.h"

static cJSON *layout_json(const struct mb_gpu_model *m, const struct mb_layout *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *names = cJSON_AddArrayToObject(o, "profiles");
    cJSON *pls = cJSON_AddArrayToObject(o, "placements");
    if (!names || !pls)
        return o;
    for (size_t i = 0; i < l->n; i++) {
        const struct mb_gi_profile *p = &m->profiles[l->items[i].profile];
        cJSON_AddItemToArray(names, cJSON_CreateString(p->name));
        cJSON *pl = cJSON_CreateObject();
        cJSON_AddStringToObject(pl, "profile", p->name);
        cJSON_AddNumberToObject(pl, "start", l->items[i].placement.start);
        cJSON_AddNumberToObject(pl, "size", l->items[i].placement.size);
        cJSON_AddStringToObject(pl, "status", mb_value_status_str(p->placements_status));
        cJSON_AddItemToArray(pls, pl);
    }
    return o;
}

char *mb_layout_json(const struct mb_gpu_model *m, const struct mb_layout *l, long long count)
{
    cJSON *o = layout_json(m, l);
    if (o && count >= 0)
        cJSON_AddNumberToObject(o, "count", (double)count);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

char *mb_layout_check_json(const struct mb_gpu_model *m, const struct mb_layout_check *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gpu", m->name);
    cJSON_AddBoolToObject(o, "valid", c->valid);
    cJSON *names = cJSON_AddArrayToObject(o, "profiles");
    if (c->valid) {
        cJSON *lj = layout_json(m, c->placed);
        cJSON_Delete(cJSON_DetachItemFromObject(o, "profiles"));
        cJSON_AddItemToObject(o, "profiles", cJSON_DetachItemFromObject(lj, "profiles"));
        cJSON_AddItemToObject(o, "placements", cJSON_DetachItemFromObject(lj, "placements"));
        cJSON_Delete(lj);
        cJSON_AddArrayToObject(o, "reasons");
    } else {
        unsigned *sorted = malloc((c->n_want ? c->n_want : 1) * sizeof(*sorted));
        if (!sorted) {
            cJSON_Delete(o);
            return NULL;
        }
        memcpy(sorted, c->want, c->n_want * sizeof(*sorted));
        /* Largest first, as the layouts are shown. */
        for (size_t i = 1; i < c->n_want; i++)
            for (size_t j = i; j > 0; j--) {
                const struct mb_gi_profile *a = &m->profiles[sorted[j - 1]],
                                           *b = &m->profiles[sorted[j]];
                bool swap =
                    a->memory_slices < b->memory_slices ||
                    (a->memory_slices == b->memory_slices && a->compute_slices < b->compute_slices);
                if (!swap)
                    break;
                unsigned t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        for (size_t i = 0; i < c->n_want; i++)
            cJSON_AddItemToArray(names, cJSON_CreateString(m->profiles[sorted[i]].name));
        free(sorted);
        cJSON_AddNullToObject(o, "placements");
        cJSON *rs = cJSON_AddArrayToObject(o, "reasons");
        for (size_t i = 0; i < c->n_reasons; i++)
            cJSON_AddItemToArray(rs, cJSON_CreateString(c->reasons[i]));
        cJSON *nj = cJSON_AddArrayToObject(o, "nearest");
        for (size_t i = 0; i < c->n_nearest; i++) {
            cJSON *lj = layout_json(m, &c->nearest[i]);
            cJSON_AddStringToObject(lj, "change", c->changes[i]);
            cJSON_AddItemToArray(nj, lj);
        }
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static cJSON *int_or_null(long long v)
{
    return v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)v);
}

static cJSON *model_json(const struct mb_gpu_model *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddNumberToObject(o, "compute_slices", m->compute_slices);
    cJSON_AddNumberToObject(o, "memory_slices", m->memory_slices);
    cJSON_AddNumberToObject(o, "max_gpu_instances", m->max_gpu_instances);
    cJSON_AddItemToObject(o, "total_memory_mib", int_or_null(m->total_memory_mib));
    cJSON_AddItemToObject(o, "sm_count", int_or_null(m->sm_full_gpu));
    cJSON_AddBoolToObject(o, "user_supplied", m->user_supplied);
    cJSON *ps = cJSON_AddArrayToObject(o, "profiles");
    for (size_t i = 0; ps && i < m->n_profiles; i++) {
        const struct mb_gi_profile *p = &m->profiles[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", p->name);
        cJSON_AddItemToObject(j, "driver_id", int_or_null(p->driver_id));
        cJSON_AddBoolToObject(j, "driver_id_unverified", p->driver_id_unverified);
        cJSON_AddNumberToObject(j, "nvml_enum", p->nvml_enum);
        cJSON_AddNumberToObject(j, "compute_slices", p->compute_slices);
        cJSON_AddNumberToObject(j, "memory_slices", p->memory_slices);
        cJSON_AddItemToObject(j, "memory_mib", int_or_null(p->memory_mib));
        cJSON_AddItemToObject(j, "sm_count", int_or_null(p->sm_count));
        cJSON_AddItemToObject(j, "copy_engines", int_or_null(p->copy_engines));
        cJSON_AddItemToObject(j, "decoders", int_or_null(p->decoders));
        cJSON_AddItemToObject(j, "encoders", int_or_null(p->encoders));
        cJSON_AddItemToObject(j, "jpeg", int_or_null(p->jpeg));
        cJSON_AddItemToObject(j, "ofa", int_or_null(p->ofa));
        cJSON_AddNumberToObject(j, "max_count", p->max_count);
        cJSON_AddBoolToObject(j, "media_extension", p->media_extension);
        cJSON *pl = cJSON_AddArrayToObject(j, "placements");
        for (size_t k = 0; pl && k < p->n_placements; k++) {
            cJSON *pair = cJSON_CreateArray();
            cJSON_AddItemToArray(pair, cJSON_CreateNumber(p->placements[k].start));
            cJSON_AddItemToArray(pair, cJSON_CreateNumber(p->placements[k].size));
            cJSON_AddItemToArray(pl, pair);
        }
        cJSON_AddStringToObject(j, "placements_status", mb_value_status_str(p->placements_status));
        cJSON_AddStringToObject(j, "values_status", mb_value_status_str(p->values_status));
        if (p->status_note[0])
            cJSON_AddStringToObject(j, "status_note", p->status_note);
        else
            cJSON_AddNullToObject(j, "status_note");
        cJSON_AddItemToArray(ps, j);
    }
    return o;
}

char *mb_catalog_json(const struct mb_catalog *cat, const struct mb_gpu_model *only)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        if (!only || only == m)
            cJSON_AddItemToArray(arr, model_json(m));
    }
    char *s = arr ? cJSON_Print(arr) : NULL;
    cJSON_Delete(arr);
    return s;
}
