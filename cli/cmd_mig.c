/* SPDX-License-Identifier: Apache-2.0 */
/* migbench mig apply/show/clear: MIG layouts from mig-parted configs, removing only our own. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "migbench/catalog.h"
#include "migbench/device.h"
#include "migbench/fileio.h"
#include "migbench/layout.h"
#include "migbench/mig.h"
#include "migbench/migcfg.h"
#include "migbench/report_verbs.h"

#define NAME "mig"
#define MAX_GPUS 64

struct opts {
    const char *sub;
    const char *file;
    const char *config;
    const char *device;
    bool enable_mig, force, dry_run, yaml, ours;
};

struct target {
    struct mb_device *dev;
    struct mb_device_info info;
    const struct mb_gpu_model *model;
    struct mb_mig_ledger *ledger; /* what migbench made on this GPU (mig.h) */
    char label[160];              /* "emu 0 (H100-SXM5-80GB, emulated)" for messages */
};

#define MAX_GIS MB_MIG_MAX_GIS

/* ---------------------------------------------------------------------------------------------
 * Devices
 */

static int open_target(const char *spec, const struct mb_catalog *cat, struct target *t,
                       bool quiet_missing)
{
    struct mb_error err;
    memset(t, 0, sizeof(*t));
    int rc = mb_device_open(spec, &t->dev, &err);
    if (rc) {
        if (!quiet_missing)
            mb_cli_error(NAME, "--device %s: %s", spec, err.msg);
        return mb_cli_exit_for(rc);
    }
    if ((rc = mb_device_info(t->dev, &t->info, &err))) {
        mb_cli_error(NAME, "%s: %s", spec, err.msg);
        return MB_EXIT_FAIL;
    }
    const char *name = t->info.model[0] ? t->info.model : t->info.name;
    if (mb_catalog_find(cat, name, &t->model, &err)) {
        mb_cli_error(NAME, "%s: %s is not in the MIG catalog: %s", spec, name, err.msg);
        return MB_EXIT_FAIL;
    }
    snprintf(t->label, sizeof(t->label), "%s %u (%s%s)", t->info.backend, t->info.index,
             t->model->name, t->info.emulated ? ", emulated" : "");
    if (mb_mig_ledger_open(t->dev, spec, &t->ledger, &err)) {
        mb_cli_error(NAME, "%s: %s", spec, err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

static void close_targets(struct target *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mb_mig_ledger_close(t[i].ledger);
        mb_device_close(t[i].dev);
    }
}

/* --device SPEC, or every NVIDIA GPU. */
static int open_targets(const struct opts *o, const struct mb_catalog *cat, struct target *t,
                        size_t *n)
{
    *n = 0;
    if (o->device) {
        int ex = open_target(o->device, cat, &t[0], false);
        if (ex == MB_EXIT_OK || t[0].dev)
            (*n)++;
        return ex;
    }
    for (unsigned i = 0; i < MAX_GPUS; i++) {
        char spec[32];
        snprintf(spec, sizeof(spec), "nvml:%u", i);
        int ex = open_target(spec, cat, &t[*n], true);
        if (ex != MB_EXIT_OK) {
            if (t[*n].dev)
                mb_device_close(t[*n].dev);
            break;
        }
        (*n)++;
    }
    if (*n == 0) {
        mb_cli_error(NAME, "no NVIDIA GPU could be opened; name one with --device (nvml:N, or "
                           "emu:MODEL:state=FILE for an emulated GPU)");
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

static const char *label(const struct target *t)
{
    return t->label;
}

/* The GPU instances, with their compute instances and processes. */
static int list_gis(struct target *t, struct mb_mig_gi *gis, size_t *n)
{
    struct mb_error err;
    if (mb_mig_list(t->dev, gis, MAX_GIS, n, &err) != MB_OK) {
        mb_cli_error(NAME, "%s: %s", label(t), err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

/* Reads the ledger of what migbench made on this GPU. */
static int ledger_load(struct target *t)
{
    struct mb_error err;
    if (mb_mig_ledger_load(t->ledger, &err) != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

static bool ours(const struct target *t, const struct mb_mig_gi *g)
{
    return mb_mig_ledger_owner(t->ledger, g) != NULL;
}

/* Refuses (unless --force) when processes run on any of the instances to remove. */
static int check_busy(const struct target *t, const struct mb_mig_gi *const *rm, size_t n,
                      bool force)
{
    size_t busy = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rm[i]->n_procs)
            continue;
        char sl[32];
        mb_layout_slices_str(rm[i]->placement, sl, sizeof(sl));
        mb_cli_error(NAME,
                     "%s: GPU instance %u (%s, memory slices %s) has %zu running process%s "
                     "(pid %u)",
                     label(t), rm[i]->id, rm[i]->profile_name, sl, rm[i]->n_procs,
                     rm[i]->n_procs == 1 ? "" : "es", rm[i]->first_pid);
        busy++;
    }
    if (busy && !force) {
        mb_cli_error(NAME, "nothing changed: stop those processes first, or pass --force (the "
                           "driver still refuses to destroy an instance a process uses)");
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

/* Destroys a GPU instance's compute instances, then the instance; forgets it in the ledger. */
static int destroy_gi(struct target *t, const struct mb_mig_gi *g)
{
    struct mb_error err;
    if (mb_mig_destroy(t->dev, t->ledger, g, NULL, &err) != MB_OK) {
        mb_cli_error(NAME, "%s: %s", label(t), err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * show
 */

static int do_show(struct target *ts, size_t nt, const struct opts *o)
{
    if (o->yaml)
        printf("version: v1\nmig-configs:\n  current:\n");
    for (size_t i = 0; i < nt; i++) {
        struct target *t = &ts[i];
        struct mb_mig_mode mode;
        struct mb_error err;
        int rc = mb_device_mig_mode(t->dev, &mode, &err);
        if (rc) {
            mb_cli_error(NAME, "%s: %s", label(t),
                         rc == MB_EUNSUPPORTED ? "MIG is not supported" : err.msg);
            return MB_EXIT_FAIL;
        }
        struct mb_mig_gi gis[MAX_GIS];
        size_t n = 0;
        if (mode.current && list_gis(t, gis, &n) != MB_EXIT_OK)
            return MB_EXIT_FAIL;
        if (ledger_load(t) != MB_EXIT_OK)
            return MB_EXIT_FAIL;
        if (o->yaml)
            mb_mig_show_yaml_write(stdout, t->info.index, &mode, gis, n);
        else
            mb_mig_show_text_write(stdout, label(t), &t->info, t->model, &mode, gis, n, t->ledger);
    }
    return MB_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * clear
 */

static int do_clear(struct target *ts, size_t nt, const struct opts *o)
{
    int ex = MB_EXIT_OK;
    for (size_t i = 0; i < nt; i++) {
        struct target *t = &ts[i];
        struct mb_mig_mode mode;
        struct mb_error err;
        if (mb_device_mig_mode(t->dev, &mode, &err) || !mode.current) {
            mb_cli_info(NAME, "%s: MIG is not enabled; nothing to clear", label(t));
            continue;
        }
        struct mb_mig_gi gis[MAX_GIS];
        size_t n = 0;
        if (list_gis(t, gis, &n) != MB_EXIT_OK || ledger_load(t) != MB_EXIT_OK)
            return MB_EXIT_FAIL;
        if (o->ours && !mb_mig_ledger_path(t->ledger)[0]) {
            mb_cli_error(NAME,
                         "%s: no record of what migbench made is kept for this device (an "
                         "emulated GPU needs state=FILE)",
                         label(t));
            return MB_EXIT_FAIL;
        }
        const struct mb_mig_gi *rm[MAX_GIS];
        size_t nrm = 0;
        for (size_t k = 0; k < n; k++)
            if (!o->ours || ours(t, &gis[k]))
                rm[nrm++] = &gis[k];
        if (check_busy(t, rm, nrm, o->force) != MB_EXIT_OK)
            return MB_EXIT_FAIL;
        size_t done = 0, failed = 0;
        for (size_t k = 0; k < nrm; k++) {
            char sl[32];
            mb_layout_slices_str(rm[k]->placement, sl, sizeof(sl));
            if (o->dry_run) {
                printf("would remove GPU instance %u (%s, memory slices %s)\n", rm[k]->id,
                       rm[k]->profile_name, sl);
                continue;
            }
            /* With --force, a busy instance the driver refuses is reported and skipped. */
            if (destroy_gi(t, rm[k]) != MB_EXIT_OK) {
                failed++;
                continue;
            }
            printf("removed GPU instance %u (%s, memory slices %s)\n", rm[k]->id,
                   rm[k]->profile_name, sl);
            done++;
        }
        /* Records of instances that no longer exist are dropped too. */
        if (!o->dry_run && o->ours) {
            if (list_gis(t, gis, &n) != MB_EXIT_OK)
                return MB_EXIT_FAIL;
            if (mb_mig_ledger_prune(t->ledger, gis, n, &err) != MB_OK) {
                mb_cli_error(NAME, "%s", err.msg);
                return MB_EXIT_FAIL;
            }
        }
        mb_cli_info(NAME, "%s: %s %zu GPU instance%s%s", label(t),
                    o->dry_run ? "would remove" : "removed", o->dry_run ? nrm : done,
                    (o->dry_run ? nrm : done) == 1 ? "" : "s",
                    o->ours ? " that migbench made" : "");
        if (failed) {
            mb_cli_error(NAME, "%s: %zu GPU instance%s could not be removed", label(t), failed,
                         failed == 1 ? "" : "s");
            ex = MB_EXIT_FAIL;
        }
    }
    return ex;
}

/* ---------------------------------------------------------------------------------------------
 * apply
 */

static int check_mode(struct target *t, const struct mb_migcfg_entry *e, const struct opts *o,
                      bool *skip)
{
    struct mb_mig_mode mode;
    struct mb_error err;
    *skip = false;
    int rc = mb_device_mig_mode(t->dev, &mode, &err);
    if (rc) {
        mb_cli_error(NAME, "%s: %s", label(t),
                     rc == MB_EUNSUPPORTED ? "MIG is not supported on this device" : err.msg);
        return MB_EXIT_FAIL;
    }
    if (!e->mig_enabled) {
        if (mode.current) {
            mb_cli_error(NAME,
                         "%s: the config turns MIG off; migbench never changes MIG mode to "
                         "off (that needs a GPU reset): run 'migbench mig clear', then "
                         "'nvidia-smi -i %u -mig 0' and a GPU reset",
                         label(t), t->info.index);
            return MB_EXIT_FAIL;
        }
        mb_cli_info(NAME, "%s: MIG is off, as the config asks", label(t));
        *skip = true;
        return MB_EXIT_OK;
    }
    if (mode.current)
        return MB_EXIT_OK;
    if (mode.pending) {
        mb_cli_error(NAME,
                     "%s: MIG mode is pending enable; it takes effect after a GPU reset "
                     "(nvidia-smi --gpu-reset -i %u) or a reboot, which migbench never does",
                     label(t), t->info.index);
        return MB_EXIT_FAIL;
    }
    if (!o->enable_mig) {
        mb_cli_error(NAME,
                     "%s: MIG mode is disabled; rerun with --enable-mig to set it (a GPU "
                     "reset is then still needed)",
                     label(t));
        return MB_EXIT_FAIL;
    }
    if (o->dry_run) {
        printf("would enable MIG mode on %s (pending until a GPU reset)\n", label(t));
        *skip = true;
        return MB_EXIT_OK;
    }
    if ((rc = mb_device_mig_set_mode(t->dev, 1, &err))) {
        mb_cli_error(NAME, "%s: cannot enable MIG mode: %s", label(t), err.msg);
        return MB_EXIT_FAIL;
    }
    if (mb_device_mig_mode(t->dev, &mode, &err) == MB_OK && mode.current)
        return MB_EXIT_OK;
    printf("MIG mode on %s is now pending enable\n", label(t));
    mb_cli_error(NAME,
                 "%s: MIG mode is set but takes effect only after a GPU reset "
                 "(nvidia-smi --gpu-reset -i %u) or a reboot; migbench never resets a GPU. "
                 "Run this again afterwards.",
                 label(t), t->info.index);
    return MB_EXIT_FAIL;
}

static void print_reasons(const struct target *t, const char *config, const unsigned *want,
                          size_t n)
{
    char reasons[6][MB_LAYOUT_REASON_MAX];
    size_t nr = 0;
    if (mb_layout_explain(t->model, NULL, want, n, reasons, 6, &nr, NULL) != MB_OK)
        nr = 0;
    mb_cli_error(NAME, "config '%s' does not fit on %s; nothing changed", config, label(t));
    for (size_t i = 0; i < nr; i++)
        fprintf(stderr, "  - %s\n", reasons[i]);
    fprintf(stderr, "  (migbench layouts --gpu %s lists the layouts that fit)\n", t->model->name);
}

/* Creates one GPU instance and its compute instance (mb_mig_create: the ledger's intent first). */
static int create_one(struct target *t, const struct mb_layout_item *it, bool some_made)
{
    struct mb_error err;
    const struct mb_gi_profile *p = &t->model->profiles[it->profile];
    if (p->driver_id < 0) {
        mb_cli_error(NAME, "%s: the catalog has no driver profile id for %s", label(t), p->name);
        return MB_EXIT_FAIL;
    }
    const struct mb_mig_new req = {(unsigned)p->driver_id, p->name, it->placement, MB_MIG_BY_MIG,
                                   NULL};
    struct mb_mig_made m;
    if (mb_mig_create(t->dev, t->ledger, &req, NULL, &m, &err) != MB_OK) {
        if (m.failed == MB_MIG_STEP_LEDGER)
            mb_cli_error(NAME, "%s", err.msg);
        else if (m.failed == MB_MIG_STEP_GI)
            mb_cli_error(NAME, "%s: cannot create %s at %u:%u: %s%s", label(t), p->name,
                         it->placement.start, it->placement.size, err.msg,
                         some_made ? "; what was created is recorded: 'migbench mig clear --ours' "
                                     "removes it"
                                   : "");
        else
            mb_cli_error(NAME,
                         "%s: created GPU instance %u (%s) but not its compute instance: %s; "
                         "'migbench mig clear --ours' removes what was created",
                         label(t), m.gi_id, p->name, err.msg);
        return MB_EXIT_FAIL;
    }
    if (m.ledger_note[0]) {
        mb_cli_error(NAME, "%s", m.ledger_note);
        return MB_EXIT_FAIL;
    }
    printf("created GPU instance %u (%s at %u:%u) with compute instance %u\n", m.gi_id, p->name,
           it->placement.start, it->placement.size, m.ci_id);
    return MB_EXIT_OK;
}

/* Verify: the device must now hold exactly the config's multiset. */
static int verify_applied(struct target *t, const unsigned *want, size_t nw)
{
    struct mb_error err;
    struct mb_mig_gi gis[MAX_GIS];
    size_t n = 0;
    if (list_gis(t, gis, &n) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    bool match = false;
    if (mb_mig_matches(t->model, gis, n, want, nw, &match, &err) != MB_OK) {
        mb_cli_error(NAME, "%s: %s", label(t), err.msg);
        return MB_EXIT_FAIL;
    }
    for (size_t i = 0; i < n; i++)
        if (gis[i].n_ci == 0)
            mb_cli_warn(NAME, "%s: GPU instance %u has no compute instance", label(t), gis[i].id);
    if (!match) {
        mb_cli_error(NAME,
                     "%s: verification failed: the GPU does not hold the config's "
                     "instances afterwards ('migbench mig show' shows what it holds)",
                     label(t));
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

static int apply_one(struct target *t, const struct mb_migcfg *cfg,
                     const struct mb_migcfg_config *config, const struct opts *o)
{
    struct mb_error err;
    const struct mb_migcfg_entry *e = mb_migcfg_entry_for(config, t->info.index);
    if (!e) {
        mb_cli_info(NAME, "%s: config '%s' has no entry for device %u; left alone", label(t),
                    config->name, t->info.index);
        return MB_EXIT_OK;
    }
    if (e->device_filter) {
        mb_cli_error(NAME,
                     "%s:%u: device-filter (PCI device ids) is not supported by migbench; "
                     "select GPUs with devices: [indices]",
                     mb_migcfg_source(cfg), e->line);
        return MB_EXIT_USAGE;
    }
    /* Bad input first, before anything is looked at on the device. */
    unsigned want[MB_LAYOUT_MAX];
    size_t nw = 0;
    int rc = mb_migcfg_profiles(cfg, e, t->model, want, MB_LAYOUT_MAX, &nw, &err);
    if (rc) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_USAGE;
    }
    struct mb_layout fresh;
    if (mb_layout_place(t->model, NULL, want, nw, &fresh, &err) != MB_OK) {
        print_reasons(t, config->name, want, nw);
        return MB_EXIT_USAGE;
    }
    bool skip;
    int ex = check_mode(t, e, o, &skip);
    if (ex != MB_EXIT_OK || skip)
        return ex;

    struct mb_mig_gi gis[MAX_GIS];
    size_t n = 0;
    if (list_gis(t, gis, &n) != MB_EXIT_OK || ledger_load(t) != MB_EXIT_OK)
        return MB_EXIT_FAIL;

    /* Keep what already matches, remove the rest, and place the missing ones beside the kept. */
    struct mb_mig_diff d;
    if (mb_mig_diff(t->model, gis, n, want, nw, &d, &err) != MB_OK) {
        mb_cli_error(NAME, "%s: %s", label(t), err.msg);
        return MB_EXIT_FAIL;
    }
    const struct mb_mig_gi *rm[MAX_GIS];
    size_t nrm = d.n_remove, kept = d.kept;
    for (size_t i = 0; i < nrm; i++)
        rm[i] = &gis[d.remove[i]];
    const struct mb_layout placed = d.create;
    if (d.replaced_all)
        mb_cli_info(NAME,
                    "%s: the instances already there leave no room for the config's "
                    "placement; all of them are replaced",
                    label(t));
    if (check_busy(t, rm, nrm, o->force) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    if (!o->dry_run && mb_mig_ledger_check_writable(t->ledger, &err) != MB_OK) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    if (!mb_mig_ledger_path(t->ledger)[0] && !o->dry_run && placed.n)
        mb_cli_warn(NAME,
                    "%s: no record of what migbench creates is kept for this device (an "
                    "emulated GPU needs state=FILE), so 'clear --ours' cannot find it",
                    label(t));
    if (o->dry_run) {
        mb_mig_apply_dry_run_write(stdout, t->model, rm, nrm, &placed, kept);
        return MB_EXIT_OK;
    }

    for (size_t i = 0; i < nrm; i++) {
        if (destroy_gi(t, rm[i]) != MB_EXIT_OK)
            return MB_EXIT_FAIL;
        printf("removed GPU instance %u (%s at %u:%u)\n", rm[i]->id, rm[i]->profile_name,
               rm[i]->placement.start, rm[i]->placement.size);
    }
    for (size_t i = 0; i < placed.n; i++)
        if (create_one(t, &placed.items[i], i > 0) != MB_EXIT_OK)
            return MB_EXIT_FAIL;

    if (verify_applied(t, want, nw) != MB_EXIT_OK)
        return MB_EXIT_FAIL;
    mb_cli_info(NAME, "%s: config '%s' applied and verified (%zu kept, %zu removed, %zu created)",
                label(t), config->name, kept, nrm, placed.n);
    return MB_EXIT_OK;
}

static int do_apply(struct target *ts, size_t nt, const struct opts *o)
{
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    if (mb_migcfg_load(o->file, &cfg, &err)) {
        mb_cli_error(NAME, "%s", err.msg);
        return err.status == MB_ENOMEM ? MB_EXIT_FAIL : MB_EXIT_USAGE;
    }
    const struct mb_migcfg_config *config = NULL;
    int ex = MB_EXIT_OK;
    if (o->config) {
        config = mb_migcfg_find(cfg, o->config);
        if (!config) {
            mb_cli_error(NAME, "%s: no config named '%s'", o->file, o->config);
            ex = MB_EXIT_USAGE;
        }
    } else if (mb_migcfg_count(cfg) == 1) {
        config = mb_migcfg_config(cfg, 0);
    } else {
        char names[512] = "";
        size_t len = 0;
        for (size_t i = 0; i < mb_migcfg_count(cfg) && len + 1 < sizeof(names); i++) {
            int w = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                             mb_migcfg_config(cfg, i)->name);
            if (w < 0)
                break;
            len += (size_t)w;
        }
        mb_cli_error(NAME, "%s has %zu configs; choose one with -c (%s)", o->file,
                     mb_migcfg_count(cfg), names);
        ex = MB_EXIT_USAGE;
    }
    for (size_t i = 0; ex == MB_EXIT_OK && i < nt; i++)
        ex = apply_one(&ts[i], cfg, config, o);
    mb_migcfg_destroy(cfg);
    return ex;
}

/* ---------------------------------------------------------------------------------------------
 * Command
 */

static const struct option long_opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"device", required_argument, NULL, 'D'},
    {"enable-mig", no_argument, NULL, 'E'},
    {"force", no_argument, NULL, 'f'},
    {"dry-run", no_argument, NULL, 'n'},
    {"yaml", no_argument, NULL, 'y'},
    {"ours", no_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int mig_run(int argc, char **argv)
{
    struct opts o = {0};
    if (argc < 2)
        return mb_cli_usage_error(&mb_cmd_mig, "expected apply, show or clear");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        mb_cli_print_help(&mb_cmd_mig, stdout);
        return MB_EXIT_OK;
    }
    o.sub = argv[1];
    if (strcmp(o.sub, "apply") != 0 && strcmp(o.sub, "show") != 0 && strcmp(o.sub, "clear") != 0)
        return mb_cli_usage_error(&mb_cmd_mig, "unknown subcommand '%s' (apply, show, clear)",
                                  o.sub);
    optind = 0;
    opterr = 0;
    int ch;
    char **av = argv + 1;
    while ((ch = getopt_long(argc - 1, av, ":c:hf", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o.config = optarg;
            break;
        case 'D':
            o.device = optarg;
            break;
        case 'E':
            o.enable_mig = true;
            break;
        case 'f':
            o.force = true;
            break;
        case 'n':
            o.dry_run = true;
            break;
        case 'y':
            o.yaml = true;
            break;
        case 'o':
            o.ours = true;
            break;
        case 'h':
            mb_cli_print_help(&mb_cmd_mig, stdout);
            return MB_EXIT_OK;
        case ':':
            return mb_cli_usage_error(&mb_cmd_mig, "option '%s' needs a value", av[optind - 1]);
        default:
            return mb_cli_usage_error(&mb_cmd_mig, "unknown option '%s'", av[optind - 1]);
        }
    }
    int rest = argc - 1 - optind;
    char **args = av + optind;
    bool is_apply = strcmp(o.sub, "apply") == 0, is_show = strcmp(o.sub, "show") == 0;
    if (is_apply) {
        if (rest != 1)
            return mb_cli_usage_error(&mb_cmd_mig, "apply takes one FILE.yaml");
        o.file = args[0];
        if (o.yaml || o.ours)
            return mb_cli_usage_error(&mb_cmd_mig, "apply takes no --yaml or --ours");
    } else {
        if (rest != 0)
            return mb_cli_usage_error(&mb_cmd_mig, "unexpected argument '%s'", args[0]);
        if (o.config || o.enable_mig)
            return mb_cli_usage_error(&mb_cmd_mig, "%s takes no -c or --enable-mig", o.sub);
        if (is_show && (o.ours || o.force || o.dry_run))
            return mb_cli_usage_error(&mb_cmd_mig, "show takes only --yaml and --device");
        if (!is_show && o.yaml)
            return mb_cli_usage_error(&mb_cmd_mig, "clear takes no --yaml");
    }

    struct mb_catalog *cat = NULL;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err)) {
        mb_cli_error(NAME, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    struct target *ts = calloc(MAX_GPUS, sizeof(*ts));
    size_t nt = 0;
    int ex = ts ? open_targets(&o, cat, ts, &nt) : MB_EXIT_FAIL;
    if (ex == MB_EXIT_OK) {
        if (is_apply)
            ex = do_apply(ts, nt, &o);
        else if (is_show)
            ex = do_show(ts, nt, &o);
        else
            ex = do_clear(ts, nt, &o);
    }
    if (ts)
        close_targets(ts, nt);
    free(ts);
    mb_catalog_destroy(cat);
    if (fflush(stdout) != 0 && ex == MB_EXIT_OK)
        ex = MB_EXIT_FAIL;
    return ex;
}

const struct mb_cmd mb_cmd_mig = {
    .name = NAME,
    .summary = "Apply, show or clear MIG instances (mig-parted config format).",
    .usage = "migbench mig apply FILE.yaml [-c CONFIG] [--device SPEC] [--enable-mig] [--force] "
             "[--dry-run]\n"
             "       migbench mig show [--yaml] [--device SPEC]\n"
             "       migbench mig clear [--ours] [--force] [--dry-run] [--device SPEC]",
    .help =
        "options:\n"
        "  -c, --config NAME  the config of FILE to apply (needed when FILE has several)\n"
        "  --device SPEC      nvml:N, nvml:UUID or emu:MODEL[:state=FILE,...]; default: every\n"
        "                     NVIDIA GPU, matched against the config's devices by index\n"
        "  --enable-mig       set MIG mode pending when it is off (a GPU reset is then\n"
        "                     needed; migbench never resets a GPU)\n"
        "  --force            do not refuse up front when processes run on instances to\n"
        "                     remove (the driver still refuses to destroy a busy instance)\n"
        "  --dry-run          say what would change, change nothing\n"
        "  --yaml             show: print the layout as a mig-parted config (apply accepts it)\n"
        "  --ours             clear: remove only the instances migbench created\n\n"
        "apply keeps instances that already match, removes the others, and creates the rest\n"
        "at placements from the layout engine, largest first, each with its default compute\n"
        "instance; then it verifies the result. A config that does not fit changes nothing.\n"
        "What apply creates is recorded (emulated GPU with state=PATH: PATH.owned.json; real\n"
        "GPUs: $MIGBENCH_STATE_DIR or /var/lib/migbench) for 'clear --ours'.\n"
        "Exit status: 0 done, 1 refused or failed on the device, 2 bad input.\n",
    .run = mig_run,
};
