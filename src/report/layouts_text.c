/* SPDX-License-Identifier: Apache-2.0 */
/* The text of `migbench layouts`: listings, a --check verdict, the catalog (--list-gpus). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "migbench/report_verbs.h"

void mb_layout_profiles_csv_write(FILE *f, const struct mb_gpu_model *m, const struct mb_layout *l)
{
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%s%s", i ? "," : "", m->profiles[l->items[i].profile].name);
}

static void print_placements(const struct mb_gpu_model *m, const struct mb_layout *l, FILE *f)
{
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%s%s@%u:%u", i ? " " : "", m->profiles[l->items[i].profile].name,
                l->items[i].placement.start, l->items[i].placement.size);
}

void mb_layout_status_notes_write(FILE *f, const struct mb_gpu_model *m, uint32_t mask)
{
    for (int st = MB_VALUE_INFERRED; st <= MB_VALUE_UNVERIFIED; st++) {
        bool any = false;
        for (unsigned i = 0; i < m->n_profiles; i++) {
            if (!(mask & (1u << i)) || (int)m->profiles[i].placements_status != st)
                continue;
            fprintf(f, "%s%s", any ? ", " : "# placements of ", m->profiles[i].name);
            any = true;
        }
        if (any)
            fprintf(f, ": %s (not seen in an nvidia-smi -lgipp print for this model)\n",
                    mb_value_status_str((enum mb_value_status)st));
    }
    for (unsigned i = 0; i < m->n_profiles; i++)
        if ((mask & (1u << i)) && (m->profiles[i].driver_id_unverified ||
                                   m->profiles[i].values_status != MB_VALUE_VERIFIED))
            fprintf(f, "# %s: %s\n", m->profiles[i].name,
                    m->profiles[i].status_note[0] ? m->profiles[i].status_note
                                                  : "some values unverified");
    if (m->user_supplied)
        fprintf(f, "# %s comes from a --catalog file\n", m->name);
}

void mb_layouts_header_write(FILE *f, const struct mb_gpu_model *m, uint32_t mask)
{
    fprintf(f, "# %s: %u compute slices, %u memory slices, at most %u GPU instances\n", m->name,
            m->compute_slices, m->memory_slices, m->max_gpu_instances);
    fprintf(f, "# profiles:");
    for (unsigned i = 0; i < m->n_profiles; i++)
        if (mask & (1u << i))
            fprintf(f, " %s", m->profiles[i].name);
    fprintf(f, "\n");
    mb_layout_status_notes_write(f, m, mask);
}

void mb_layout_line_write(FILE *f, const struct mb_gpu_model *m, const struct mb_layout *l,
                          size_t n)
{
    char pic[MB_MAX_MEMORY_SLICES * 5 + 1];
    mb_layout_picture(m, l, pic, sizeof(pic));
    fprintf(f, "%4zu  %s  ", n, pic);
    print_placements(m, l, f);
    fputc('\n', f);
}

/* "drop 1g.10gb; add 2g.20gb" between a request and a layout. */
void mb_layout_diff_str(const struct mb_gpu_model *m, const unsigned *want, size_t n_want,
                        const struct mb_layout *l, char *buf, size_t cap)
{
    unsigned have[MB_MAX_PROFILES] = {0}, asked[MB_MAX_PROFILES] = {0};
    for (size_t i = 0; i < l->n; i++)
        have[l->items[i].profile]++;
    for (size_t i = 0; i < n_want; i++)
        asked[want[i]]++;
    size_t n = 0;
    buf[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        bool first = true;
        for (unsigned k = 0; k < m->n_profiles; k++) {
            unsigned d = pass == 0 ? (asked[k] > have[k] ? asked[k] - have[k] : 0)
                                   : (have[k] > asked[k] ? have[k] - asked[k] : 0);
            if (!d || n + 1 >= cap)
                continue;
            int w = snprintf(buf + n, cap - n, "%s%s", first ? (n ? "; " : "") : ", ",
                             first ? (pass == 0 ? "drop " : "add ") : "");
            if (w < 0)
                return;
            n += (size_t)w;
            if (n + 1 >= cap)
                return;
            w = d > 1 ? snprintf(buf + n, cap - n, "%u x %s", d, m->profiles[k].name)
                      : snprintf(buf + n, cap - n, "%s", m->profiles[k].name);
            if (w < 0)
                return;
            n += (size_t)w;
            first = false;
        }
    }
}

void mb_layout_check_text_write(FILE *f, const struct mb_gpu_model *m,
                                const struct mb_layout_check *c)
{
    uint32_t mask = 0;
    for (size_t i = 0; i < c->n_want; i++)
        mask |= 1u << c->want[i];
    if (c->valid) {
        char pic[MB_MAX_MEMORY_SLICES * 5 + 1];
        mb_layout_picture(m, c->placed, pic, sizeof(pic));
        fprintf(f, "fits on %s: ", m->name);
        mb_layout_profiles_csv_write(f, m, c->placed);
        fprintf(f, "\n%s\ncreation order (largest first):\n", pic);
        for (size_t i = 0; i < c->placed->n; i++) {
            const struct mb_gi_profile *p = &m->profiles[c->placed->items[i].profile];
            char sl[32], id[16];
            mb_layout_slices_str(c->placed->items[i].placement, sl, sizeof(sl));
            if (p->driver_id < 0)
                snprintf(id, sizeof(id), "n/a");
            else
                snprintf(id, sizeof(id), "%d%s", p->driver_id, p->driver_id_unverified ? "?" : "");
            fprintf(f, "%4zu  %-12s profile id %-4s start %2u  size %u  (memory slices %s)\n",
                    i + 1, p->name, id, c->placed->items[i].placement.start,
                    c->placed->items[i].placement.size, sl);
        }
        mb_layout_status_notes_write(f, m, mask);
        return;
    }
    fprintf(f, "does not fit on %s: ", m->name);
    for (size_t i = 0; i < c->n_want; i++)
        fprintf(f, "%s%s", i ? "," : "", m->profiles[c->want[i]].name);
    fprintf(f, "\n");
    for (size_t i = 0; i < c->n_reasons; i++)
        fprintf(f, "  - %s\n", c->reasons[i]);
    if (c->n_nearest) {
        fprintf(f, "nearest valid layouts:\n");
        for (size_t i = 0; i < c->n_nearest; i++) {
            fprintf(f, "  ");
            mb_layout_profiles_csv_write(f, m, &c->nearest[i]);
            fprintf(f, "   (%s)\n", c->changes[i]);
        }
    }
    mb_layout_status_notes_write(f, m, mask);
}

static enum mb_value_status worst_placements(const struct mb_gpu_model *m)
{
    enum mb_value_status w = MB_VALUE_VERIFIED;
    for (size_t i = 0; i < m->n_profiles; i++)
        if (m->profiles[i].placements_status > w)
            w = m->profiles[i].placements_status;
    return w;
}

static void print_int(FILE *f, long long v, int width)
{
    if (v < 0)
        fprintf(f, "%*s", width, "n/a");
    else
        fprintf(f, "%*lld", width, v);
}

static void print_model_profiles(FILE *f, const struct mb_gpu_model *m)
{
    fprintf(f, "# %s: %u compute slices, %u memory slices, at most %u GPU instances%s\n", m->name,
            m->compute_slices, m->memory_slices, m->max_gpu_instances,
            m->user_supplied ? " (from --catalog)" : "");
    fprintf(f, "# %-12s %5s %4s %5s %10s %4s %3s  %-22s %s\n", "profile", "id", "enum", "c/m",
            "memory_mib", "SMs", "max", "placements", "status");
    for (size_t i = 0; i < m->n_profiles; i++) {
        const struct mb_gi_profile *p = &m->profiles[i];
        char id[16], cm[16], pl[128] = "";
        if (p->driver_id < 0)
            snprintf(id, sizeof(id), "n/a");
        else
            snprintf(id, sizeof(id), "%d%s", p->driver_id, p->driver_id_unverified ? "?" : "");
        snprintf(cm, sizeof(cm), "%u/%u", p->compute_slices, p->memory_slices);
        size_t n = 0;
        for (size_t k = 0; k < p->n_placements && n + 1 < sizeof(pl); k++) {
            int w = snprintf(pl + n, sizeof(pl) - n, "%s%u", k ? "," : "", p->placements[k].start);
            if (w < 0)
                break;
            n += (size_t)w;
        }
        if (n + 1 < sizeof(pl))
            snprintf(pl + n, sizeof(pl) - n, ":%u", p->memory_slices);
        fprintf(f, "  %-12s %5s %4d %5s ", p->name, id, p->nvml_enum, cm);
        print_int(f, p->memory_mib, 10);
        fputc(' ', f);
        print_int(f, p->sm_count, 4);
        fprintf(f, " %3u  %-22s placements %s", p->max_count, pl,
                mb_value_status_str(p->placements_status));
        if (p->values_status != MB_VALUE_VERIFIED || p->driver_id_unverified)
            fprintf(f, "; %s", p->status_note[0] ? p->status_note : "values unverified");
        fputc('\n', f);
    }
}

void mb_catalog_text_write(FILE *f, const struct mb_catalog *cat, const struct mb_gpu_model *only)
{
    if (only) {
        print_model_profiles(f, only);
        return;
    }
    fprintf(f, "# %-18s %5s %4s %10s  %-11s %s\n", "model", "c/m", "GIs", "memory_mib",
            "placements", "profiles");
    for (size_t i = 0; i < mb_catalog_count(cat); i++) {
        const struct mb_gpu_model *m = mb_catalog_model(cat, i);
        char cm[16];
        snprintf(cm, sizeof(cm), "%u/%u", m->compute_slices, m->memory_slices);
        fprintf(f, "  %-18s %5s %4u ", m->name, cm, m->max_gpu_instances);
        print_int(f, m->total_memory_mib, 10);
        enum mb_value_status w = worst_placements(m);
        fprintf(f, "  %-11s", w == MB_VALUE_VERIFIED ? "verified" : mb_value_status_str(w));
        for (size_t k = 0; k < m->n_profiles; k++)
            fprintf(f, " %s", m->profiles[k].name);
        if (m->user_supplied)
            fprintf(f, "  (from --catalog)");
        fputc('\n', f);
    }
}
