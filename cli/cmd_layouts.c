/* SPDX-License-Identifier: Apache-2.0 */
/* migbench layouts: the valid MIG layouts of a GPU model, checks of one layout, the catalog. */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "migbench/catalog.h"
#include "migbench/layout.h"
#include "migbench/report_verbs.h"

#define NAME "layouts"
/* A profile list longer than this is not a layout anyone means; refuse it as bad input. */
#define LIST_MAX 64
#define CATALOGS_MAX 8
/* --distinct keeps every layout in memory; a model with more than this is refused. */
#define DISTINCT_MAX (1u << 20)

struct opts {
    const char *gpu;
    const char *profiles;
    const char *check;
    const char *catalogs[CATALOGS_MAX];
    size_t n_catalogs;
    bool all, distinct, json, list_gpus;
};

/* ---------------------------------------------------------------------------------------------
 * Profile lists
 */

static void profile_names(const struct mb_gpu_model *m, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < m->n_profiles && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", m->profiles[i].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

/*
 * Splits "1g.10gb, 2g.20gb,..." into profile indices. Returns MB_EXIT_OK or prints the problem
 * and returns MB_EXIT_USAGE.
 */
static int parse_list(const struct mb_gpu_model *m, const char *opt, const char *text,
                      unsigned *out, size_t *n)
{
    *n = 0;
    const char *p = text;
    size_t entry = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0') {
        mb_cli_error(NAME, "%s: empty profile list; give names such as %s", opt,
                     m->profiles[0].name);
        return MB_EXIT_USAGE;
    }
    for (;;) {
        entry++;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        while (len && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        if (len == 0) {
            mb_cli_error(NAME,
                         "%s: entry %zu of '%.80s%s' is empty (two commas in a row, or a "
                         "comma at an end?)",
                         opt, entry, text, strlen(text) > 80 ? "..." : "");
            return MB_EXIT_USAGE;
        }
        if (*n >= LIST_MAX) {
            mb_cli_error(NAME, "%s: more than %d entries; a GPU holds at most %u instances", opt,
                         LIST_MAX, m->max_gpu_instances);
            return MB_EXIT_USAGE;
        }
        char name[MB_PROFILE_NAME_MAX];
        const struct mb_gi_profile *prof = NULL;
        struct mb_error e;
        if (len >= sizeof(name)) {
            char all[512];
            profile_names(m, all, sizeof(all));
            mb_cli_error(NAME, "%s: unknown profile '%.*s...' for %s; its profiles are: %s", opt,
                         40, s, m->name, all);
            return MB_EXIT_USAGE;
        }
        memcpy(name, s, len);
        name[len] = '\0';
        /* An exact profile name of the model, or a size such as 3g or 1g.2m. */
        if (mb_model_profile_resolve(m, name, &prof, &e) != MB_OK) {
            mb_cli_error(NAME, "%s: %s", opt, e.msg);
            return MB_EXIT_USAGE;
        }
        out[(*n)++] = (unsigned)(prof - m->profiles);
        if (!end)
            break;
        p = end + 1;
    }
    return MB_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Output pieces
 */

/* Prints one JSON text and frees it; returns false on memory exhaustion (text NULL). */
static bool print_json(char *text, FILE *f)
{
    if (!text)
        return false;
    fputs(text, f);
    free(text);
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Listing layouts
 */

struct list_ctx {
    const struct mb_gpu_model *m;
    bool json;
    size_t n;
    FILE *out;
    bool oom;
};

static int print_one(const struct mb_layout *l, void *arg)
{
    struct list_ctx *c = arg;
    c->n++;
    if (c->json) {
        fputs(c->n == 1 ? "[\n  " : ",\n  ", c->out);
        if (!print_json(mb_layout_json(c->m, l, -1), c->out)) {
            c->oom = true;
            return 1;
        }
        return 0;
    }
    mb_layout_line_write(c->out, c->m, l, c->n);
    return 0;
}

struct group {
    struct mb_layout first;
    unsigned count[MB_MAX_PROFILES];
    size_t n;
};

struct distinct_ctx {
    const struct mb_gpu_model *m;
    struct group *g;
    size_t n, cap, total;
    bool oom;
};

static int collect(const struct mb_layout *l, void *arg)
{
    struct distinct_ctx *c = arg;
    unsigned count[MB_MAX_PROFILES] = {0};
    for (size_t i = 0; i < l->n; i++)
        count[l->items[i].profile]++;
    if (++c->total > DISTINCT_MAX)
        return 1;
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(c->g[i].count, count, sizeof(count)) == 0) {
            c->g[i].n++;
            return 0;
        }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct group *g = realloc(c->g, cap * sizeof(*g));
        if (!g) {
            c->oom = true;
            return 1;
        }
        c->g = g;
        c->cap = cap;
    }
    c->g[c->n].first = *l;
    memcpy(c->g[c->n].count, count, sizeof(count));
    c->g[c->n].n = 1;
    c->n++;
    return 0;
}

static int list_layouts(const struct mb_gpu_model *m, uint32_t mask, const struct opts *o)
{
    struct mb_error err;
    unsigned flags = o->all ? MB_LAYOUT_ALL : MB_LAYOUT_MAXIMAL;
    const char *kind = o->all ? "layouts" : "maximal layouts";
    if (!o->json) {
        mb_layouts_header_write(stdout, m, mask);
    }
    if (o->distinct) {
        struct distinct_ctx c = {.m = m};
        int rc = mb_layout_enumerate(m, mask, flags, collect, &c, NULL, &err);
        if (c.oom || c.total > DISTINCT_MAX || rc) {
            free(c.g);
            mb_cli_error(NAME, "%s",
                         c.oom ? "out of memory"
                         : rc  ? err.msg
                               : "too many layouts to group; drop --distinct");
            return MB_EXIT_FAIL;
        }
        if (o->json) {
            fputs("[", stdout);
            for (size_t i = 0; i < c.n; i++) {
                fputs(i ? ",\n  " : "\n  ", stdout);
                if (!print_json(mb_layout_json(m, &c.g[i].first, (long long)c.g[i].n), stdout)) {
                    free(c.g);
                    mb_cli_error(NAME, "out of memory");
                    return MB_EXIT_FAIL;
                }
            }
            fputs(c.n ? "\n]\n" : "]\n", stdout);
        } else {
            printf("# %zu distinct profile sets over %zu %s\n", c.n, c.total, kind);
            printf("#  n  placements  profiles (largest first)\n");
            for (size_t i = 0; i < c.n; i++) {
                printf("%4zu  %10zu  ", i + 1, c.g[i].n);
                mb_layout_profiles_csv_write(stdout, m, &c.g[i].first);
                putchar('\n');
            }
        }
        free(c.g);
        return MB_EXIT_OK;
    }
    if (!o->json) {
        printf("#    n  memory slices 0..%u, five columns each", m->memory_slices - 1);
        printf("%*s  placements (profile@start:size)\n",
               (int)(m->memory_slices * 5 > 39 ? m->memory_slices * 5 - 39 : 0), "");
    }
    struct list_ctx c = {.m = m, .json = o->json, .out = stdout};
    int rc = mb_layout_enumerate(m, mask, flags, print_one, &c, NULL, &err);
    if (c.oom || rc) {
        mb_cli_error(NAME, "%s", c.oom ? "out of memory" : err.msg);
        return MB_EXIT_FAIL;
    }
    if (o->json)
        fputs(c.n ? "\n]\n" : "[]\n", stdout);
    else
        printf("# %zu %s\n", c.n, kind);
    return MB_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * --check
 */

static int check_layout(const struct mb_gpu_model *m, const unsigned *want, size_t n_want,
                        bool json)
{
    struct mb_error err;
    char reasons[6][MB_LAYOUT_REASON_MAX];
    size_t n_reasons = 0;
    int rc = mb_layout_explain(m, NULL, want, n_want, reasons, 6, &n_reasons, &err);
    struct mb_layout placed = {0};
    if (!rc && n_reasons == 0)
        rc = mb_layout_place(m, NULL, want, n_want, &placed, &err);
    struct mb_layout near[3];
    size_t n_near = 0;
    if (!rc && n_reasons > 0)
        rc = mb_layout_nearest(m, want, n_want, near, 3, &n_near, &err);
    if (rc) {
        mb_cli_error(NAME, "%s", err.msg);
        return mb_cli_exit_for(rc);
    }
    bool valid = n_reasons == 0;
    char changes[3][256];
    const char *change[3];
    for (size_t i = 0; i < n_near; i++) {
        mb_layout_diff_str(m, want, n_want, &near[i], changes[i], sizeof(changes[i]));
        change[i] = changes[i];
    }
    struct mb_layout_check chk = {.valid = valid,
                                  .placed = &placed,
                                  .want = want,
                                  .n_want = n_want,
                                  .reasons = (const char(*)[MB_LAYOUT_REASON_MAX])reasons,
                                  .n_reasons = n_reasons,
                                  .nearest = near,
                                  .changes = change,
                                  .n_nearest = n_near};
    if (!json) {
        mb_layout_check_text_write(stdout, m, &chk);
    } else if (print_json(mb_layout_check_json(m, &chk), stdout)) {
        putchar('\n');
    } else {
        mb_cli_error(NAME, "out of memory");
        return MB_EXIT_FAIL;
    }
    return valid ? MB_EXIT_OK : MB_EXIT_FAIL;
}

/* ---------------------------------------------------------------------------------------------
 * --list-gpus
 */

static int list_gpus(const struct mb_catalog *cat, const struct mb_gpu_model *only, bool json)
{
    if (json) {
        char *s = mb_catalog_json(cat, only);
        if (!s) {
            mb_cli_error(NAME, "out of memory");
            return MB_EXIT_FAIL;
        }
        puts(s);
        free(s);
        return MB_EXIT_OK;
    }
    mb_catalog_text_write(stdout, cat, only);
    return MB_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Command
 */

static const struct option long_opts[] = {
    {"gpu", required_argument, NULL, 'g'}, {"profiles", required_argument, NULL, 'p'},
    {"all", no_argument, NULL, 'a'},       {"distinct", no_argument, NULL, 'd'},
    {"json", no_argument, NULL, 'j'},      {"check", required_argument, NULL, 'c'},
    {"list-gpus", no_argument, NULL, 'l'}, {"catalog", required_argument, NULL, 'C'},
    {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0},
};

/* Parses argv into o; returns -1 to go on, else the exit status (--help, a usage error). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'g':
            o->gpu = optarg;
            break;
        case 'p':
            o->profiles = optarg;
            break;
        case 'a':
            o->all = true;
            break;
        case 'd':
            o->distinct = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'c':
            o->check = optarg;
            break;
        case 'l':
            o->list_gpus = true;
            break;
        case 'C':
            if (o->n_catalogs == CATALOGS_MAX)
                return mb_cli_usage_error(&mb_cmd_layouts, "at most %d --catalog files",
                                          CATALOGS_MAX);
            o->catalogs[o->n_catalogs++] = optarg;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_layouts, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_layouts, "option '%s' needs a value",
                                      argv[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_layouts, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return mb_cli_usage_error(&mb_cmd_layouts, "unexpected argument '%s'", argv[optind]);
    if (!o->list_gpus && !o->gpu)
        return mb_cli_usage_error(&mb_cmd_layouts, "--gpu MODEL is required");
    if (o->check && (o->all || o->distinct || o->profiles))
        return mb_cli_usage_error(&mb_cmd_layouts,
                                  "--check takes no --all, --distinct or --profiles");
    if (o->list_gpus && (o->check || o->all || o->distinct || o->profiles))
        return mb_cli_usage_error(&mb_cmd_layouts,
                                  "--list-gpus takes only --gpu, --json and --catalog");
    return -1;
}

static int layouts_run(int argc, char **argv)
{
    struct opts o = {0};
    int parsed = parse_opts(argc, argv, &o);
    if (parsed >= 0)
        return parsed;

    struct mb_catalog *cat = NULL;
    struct mb_error err;
    int rc = mb_catalog_create(&cat, &err);
    if (rc) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    int exit_code = MB_EXIT_OK;
    for (size_t i = 0; i < o.n_catalogs; i++) {
        rc = mb_catalog_load_file(cat, o.catalogs[i], &err);
        if (rc) {
            mb_cli_error(NAME, "--catalog %s", err.msg);
            exit_code = rc == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
            goto done;
        }
    }
    const struct mb_gpu_model *m = NULL;
    if (o.gpu) {
        rc = mb_catalog_find(cat, o.gpu, &m, &err);
        if (rc) {
            mb_cli_error(NAME, "--gpu: %s", err.msg);
            exit_code = MB_EXIT_USAGE;
            goto done;
        }
    }
    if (o.list_gpus) {
        exit_code = list_gpus(cat, m, o.json);
        goto done;
    }
    unsigned list[LIST_MAX];
    size_t n = 0;
    if (o.check) {
        exit_code = parse_list(m, "--check", o.check, list, &n);
        if (exit_code == MB_EXIT_OK)
            exit_code = check_layout(m, list, n, o.json);
        goto done;
    }
    uint32_t mask = mb_layout_default_profiles(m);
    if (o.profiles) {
        exit_code = parse_list(m, "--profiles", o.profiles, list, &n);
        if (exit_code != MB_EXIT_OK)
            goto done;
        mask = 0;
        for (size_t i = 0; i < n; i++)
            mask |= 1u << list[i];
    }
    exit_code = list_layouts(m, mask, &o);
done:
    mb_catalog_destroy(cat);
    if (fflush(stdout) != 0 && exit_code == MB_EXIT_OK) {
        mb_cli_error(NAME, "cannot write the output");
        exit_code = MB_EXIT_FAIL;
    }
    return exit_code;
}

const struct mb_cmd mb_cmd_layouts = {
    .name = NAME,
    .summary = "List the valid MIG layouts of a GPU model, or check one.",
    .usage = "migbench layouts --gpu MODEL [--profiles LIST] [--all] [--distinct] [--json]\n"
             "       migbench layouts --gpu MODEL --check LIST [--json]\n"
             "       migbench layouts --list-gpus [--gpu MODEL] [--json]\n"
             "       (each form also takes --catalog FILE.json)",
    .help = "Works offline from the MIG catalog (no GPU needed).\n\n"
            "options:\n"
            "  --gpu MODEL        catalog model, or a name nvidia-smi prints (H100, A100-40GB,\n"
            "                     \"NVIDIA H100 80GB HBM3\", ...); case does not matter\n"
            "  --profiles LIST    comma-separated profiles to consider (default: every profile\n"
            "                     except the +me media variants)\n"
            "  --all              every valid non-empty layout, not only the maximal ones\n"
            "  --distinct         one line per set of profiles, with its number of placements\n"
            "  --json             JSON output\n"
            "  --check LIST       does this multiset fit? prints a placement and the creation\n"
            "                     order, or the reasons and the nearest valid layouts\n"
            "  --list-gpus        the catalog's models (with --gpu: that model's profiles)\n"
            "  --catalog FILE     load extra or corrected models (mig-catalog.json's shape);\n"
            "                     may be given up to 8 times\n\n"
            "A profile in LIST is the model's name for it (3g.40gb) or a size that means the\n"
            "same profile on every model: 1g 2g 3g 4g 7g (fewest memory slices), 1g+me (media\n"
            "variant), 1g.2m (1g with 2 memory slices); e.g. --check 4g,3g.\n\n"
            "A layout is maximal when no further instance of a considered profile fits.\n"
            "Exit status: 0 ok (or --check fits), 1 --check does not fit, 2 bad input.\n",
    .run = layouts_run,
};
