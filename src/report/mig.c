/* SPDX-License-Identifier: Apache-2.0 */
/* The text of `migbench mig`: show (table or mig-parted YAML) and apply --dry-run. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "migbench/report_verbs.h"

void mb_mig_show_text_write(FILE *f, const char *label, const struct mb_device_info *info,
                            const struct mb_gpu_model *model, const struct mb_mig_mode *mode,
                            const struct mb_mig_gi *gis, size_t n,
                            const struct mb_mig_ledger *ledger)
{
    fprintf(f, "# %s: %s %s, MIG %s (pending %s)\n", label, info->name,
            info->uuid[0] ? info->uuid : "", mode->current ? "enabled" : "disabled",
            mode->pending ? "enabled" : "disabled");
    if (!mode->current)
        return;
    struct mb_layout l = {0};
    for (size_t i = 0; i < n && l.n < MB_LAYOUT_MAX; i++) {
        unsigned idx;
        const struct mb_gi_profile *p =
            mb_model_profile_by_driver_id(model, (int)gis[i].profile_id);
        if (!p)
            continue;
        idx = (unsigned)(p - model->profiles);
        l.items[l.n].profile = idx;
        l.items[l.n++].placement = gis[i].placement;
    }
    char pic[MB_MAX_MEMORY_SLICES * 5 + 1];
    mb_layout_picture(model, &l, pic, sizeof(pic));
    fprintf(f, "# %s\n", pic);
    fprintf(f, "# %3s  %-12s %-9s %-6s %4s  %-8s  %s\n", "gi", "profile", "placement", "slices",
            "cis", "owner", "uuid");
    for (size_t i = 0; i < n; i++) {
        char sl[32], pl[32];
        mb_layout_slices_str(gis[i].placement, sl, sizeof(sl));
        snprintf(pl, sizeof(pl), "%u:%u", gis[i].placement.start, gis[i].placement.size);
        fprintf(f, "  %3u  %-12s %-9s %-6s %4zu  %-8s  %s\n", gis[i].id, gis[i].profile_name, pl,
                sl, gis[i].n_ci, mb_mig_ledger_owner(ledger, &gis[i]) ? "migbench" : "-",
                gis[i].uuid[0] ? gis[i].uuid : "n/a");
    }
    if (n == 0)
        fprintf(f, "# no GPU instances\n");
}

/* One mig-parted entry for this GPU; the profile list in largest-first order. */
void mb_mig_show_yaml_write(FILE *f, unsigned index, const struct mb_mig_mode *mode,
                            const struct mb_mig_gi *gis, size_t n)
{
    fprintf(f, "    - devices: [%u]\n      mig-enabled: %s\n", index,
            mode->current ? "true" : "false");
    if (!mode->current)
        return;
    /* gis are sorted largest first, so names come out grouped in that order. */
    char done[MB_MIG_MAX_GIS][MB_PROFILE_NAME_MAX];
    size_t nd = 0;
    bool header = false;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < nd; k++)
            seen = seen || strcmp(done[k], gis[i].profile_name) == 0;
        if (seen)
            continue;
        size_t count = 0;
        for (size_t k = 0; k < n; k++)
            count += strcmp(gis[k].profile_name, gis[i].profile_name) == 0;
        if (!header) {
            fprintf(f, "      mig-devices:\n");
            header = true;
        }
        fprintf(f, "        \"%s\": %zu\n", gis[i].profile_name, count);
        snprintf(done[nd++], MB_PROFILE_NAME_MAX, "%s", gis[i].profile_name);
    }
    if (!header)
        fprintf(f, "      mig-devices: {}\n");
}

void mb_mig_apply_dry_run_write(FILE *f, const struct mb_gpu_model *model,
                                const struct mb_mig_gi *const *rm, size_t nrm,
                                const struct mb_layout *placed, size_t kept)
{
    for (size_t i = 0; i < nrm; i++)
        fprintf(f, "would remove GPU instance %u (%s at %u:%u)\n", rm[i]->id, rm[i]->profile_name,
                rm[i]->placement.start, rm[i]->placement.size);
    for (size_t i = 0; i < placed->n; i++) {
        const struct mb_gi_profile *p = &model->profiles[placed->items[i].profile];
        fprintf(f, "would create %s at %u:%u (profile id %d)\n", p->name,
                placed->items[i].placement.start, placed->items[i].placement.size, p->driver_id);
    }
    fprintf(f, "would keep %zu GPU instance%s\n", kept, kept == 1 ? "" : "s");
}
