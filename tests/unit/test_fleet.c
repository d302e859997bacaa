/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet emitters (src/fleet*.c): Slurm GRES from an emulated GPU (fake_gpus.conf), the job
 * array of an experiment, a fleet plan for Slurm and Kubernetes. Output is compared with golden
 * files under tests/golden/fleet (MB_UPDATE_GOLDEN=1 rewrites them); the YAML files are parsed
 * back with libyaml (the mig-parted configs through migbench's own mig-parted reader), and the
 * shell scripts through bash -n.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <yaml.h>

#include "migbench/catalog.h"
#include "migbench/experiment.h"
#include "migbench/fileio.h"
#include "migbench/fleet.h"
#include "migbench/migcfg.h"
#include "migbench/plan.h"
#include "migbench/results.h"

static char tmp[256];

static char *slurp(const char *path)
{
    char *buf = NULL;
    struct mb_error err;
    if (mb_file_read(path, 1u << 20, &buf, NULL, &err) != MB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return NULL;
    }
    return buf;
}

/* Compares dir/name with tests/golden/fleet/<golden>/<name>.golden; rewrites it under
 * MB_UPDATE_GOLDEN. */
static void check_golden(const char *dir, const char *name, const char *golden)
{
    char got_path[600], want_path[600];
    snprintf(got_path, sizeof(got_path), "%s/%s", dir, name);
    /* ".golden": a golden shell script is output, not one of the project's scripts. */
    snprintf(want_path, sizeof(want_path), "%s/tests/golden/fleet/%s/%s.golden", MB_SOURCE_DIR,
             golden, name);
    char *got = slurp(got_path);
    assert_non_null(got);
    /* The temporary directory's name varies: the goldens say TMP. */
    char *norm = malloc(strlen(got) * 2 + 1);
    assert_non_null(norm);
    size_t n = 0, tl = strlen(tmp);
    for (const char *p = got; *p;) {
        if (strncmp(p, tmp, tl) == 0) {
            memcpy(norm + n, "TMP", 3);
            n += 3;
            p += tl;
        } else {
            norm[n++] = *p++;
        }
    }
    norm[n] = '\0';
    if (getenv("MB_UPDATE_GOLDEN")) {
        char d[600];
        snprintf(d, sizeof(d), "%s/tests/golden/fleet/%s", MB_SOURCE_DIR, golden);
        mkdir(d, 0755);
        assert_int_equal(mb_file_write_atomic(want_path, norm, n, 0644, NULL), MB_OK);
    }
    char *want = slurp(want_path);
    assert_non_null(want);
    if (strcmp(norm, want) != 0)
        fprintf(stderr, "%s differs from %s:\n%s\n", got_path, want_path, norm);
    assert_string_equal(norm, want);
    free(want);
    free(norm);
    free(got);
}

/* bash -n on a generated script: it must at least parse. */
static void check_bash(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execlp("bash", "bash", "-n", path, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(sb.st_mode & S_IXUSR);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof(tmp), "/tmp/mb-test-fleet-%ld", (long)getpid());
    mkdir(tmp, 0755);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_gres_type(void **state)
{
    (void)state;
    char t[MB_SLURM_TYPE_MAX];
    mb_slurm_gres_type("NVIDIA H100 80GB HBM3", "3g.40gb", t, sizeof(t));
    assert_string_equal(t, "nvidia_h100_80gb_hbm3_3g.40gb");
    mb_slurm_gres_type("NVIDIA A100-SXM4-40GB", NULL, t, sizeof(t));
    assert_string_equal(t, "nvidia_a100-sxm4-40gb");
    mb_slurm_gres_type("  odd  (name) ", "1g.10gb", t, sizeof(t));
    assert_string_equal(t, "odd_name_1g.10gb");
    mb_slurm_gres_type("NVIDIA H100 80GB HBM3", "3g.40gb", t, 8);
    assert_string_equal(t, "nvidia"); /* cut at a separator, never mid-word with a stray _ */
}

/* fake_gpus.conf from an emulated GPU's MIG instances: one line per instance, its UUID. */
static void test_node_gres_from_emu(void **state)
{
    (void)state;
    char spec[400], dir[300];
    snprintf(spec, sizeof(spec), "emu:H100-80GB:mig=on:state=%s/gpu.json", tmp);
    snprintf(dir, sizeof(dir), "%s/etc", tmp);
    struct mb_error err;
    struct mb_device *dev = NULL;
    assert_int_equal(mb_device_open(spec, &dev, &err), MB_OK);
    unsigned gi, ci;
    assert_int_equal(mb_device_mig_create_gi(dev, 9, NULL, &gi, &err), MB_OK);
    assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK);
        assert_int_equal(mb_device_mig_create_ci(dev, gi, -1, &ci, &err), MB_OK);
    }
    assert_int_equal(mb_device_mig_create_gi(dev, 19, NULL, &gi, &err), MB_OK); /* no CI */
    struct mb_slurm_gres_dev g[8];
    size_t n = 0;
    assert_int_equal(mb_slurm_device_gres(dev, g, 8, &n, &err), MB_OK);
    assert_int_equal(n, 3);
    struct mb_slurm_node_opts o = {.node = "localhost", .cpus = 2, .fake = true};
    assert_int_equal(mb_slurm_write_node_gres(g, n, &o, dir, &err), MB_OK);
    char path[400];
    snprintf(path, sizeof(path), "%s/fake_gpus.conf", dir);
    char *fake = slurp(path);
    assert_non_null(fake);
    char want[2048];
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(want + used, sizeof(want) - used,
                                 "nvidia_h100_80gb_hbm3_%s|2|0-1|-1|/dev/nvidia%zu|%s|"
                                 "nvidia_gpu_env\n",
                                 g[i].short_type, i, g[i].uuid);
    assert_string_equal(fake, want);
    assert_int_equal(strncmp(g[0].uuid, "MIG-", 4), 0);
    free(fake);
    snprintf(path, sizeof(path), "%s/slurm-node.conf", dir);
    char *line = slurp(path);
    assert_non_null(line);
    bool three_first = strcmp(g[0].short_type, "3g.40gb") == 0;
    assert_string_equal(line, three_first
                                  ? "NodeName=localhost Gres=gpu:3g.40gb:1,gpu:1g.10gb:2\n"
                                  : "NodeName=localhost Gres=gpu:1g.10gb:2,gpu:3g.40gb:1\n");
    free(line);
    check_golden(dir, "gres.conf", "node");

    /* MIG off: the whole GPU, by its GPU UUID. */
    mb_device_close(dev);
    assert_int_equal(mb_device_open("emu:A100-40GB", &dev, &err), MB_OK);
    assert_int_equal(mb_slurm_device_gres(dev, g, 8, &n, &err), MB_OK);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].type, "nvidia_a100-sxm4-40gb");
    assert_int_equal(strncmp(g[0].uuid, "GPU-", 4), 0);
    mb_device_close(dev);

    o.node = "bad name";
    assert_int_equal(mb_slurm_write_node_gres(g, n, &o, dir, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "bad name"));
    assert_int_equal(mb_device_open("host", &dev, &err), MB_OK);
    assert_int_equal(mb_slurm_device_gres(dev, g, 8, &n, &err), MB_EUNSUPPORTED);
    mb_device_close(dev);
}

static struct mb_experiment *load_exp(void)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/exp.yaml", tmp);
    const char *text = "version: 1\nname: small\ndevice: emu:H100-80GB\n"
                       "workloads:\n  w: {command: [/bin/true], unit: samples}\n"
                       "runs:\n  - {name: solo, mode: exclusive, jobs: [w]}\n"
                       "  - {name: pair, mode: timeslice, jobs: [w, w]}\n"
                       "measure: {warmup: 0s, duration: 1s, repetitions: 2}\n";
    assert_int_equal(mb_file_write_atomic(path, text, strlen(text), 0644, NULL), MB_OK);
    struct mb_experiment *exp = NULL;
    struct mb_error err;
    int rc = mb_experiment_load(path, NULL, 0, &exp, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    return exp;
}

static void test_array(void **state)
{
    (void)state;
    struct mb_experiment *exp = load_exp();
    struct mb_cell *cells = NULL;
    size_t n = 0, n_notes = 0;
    char **notes = NULL;
    struct mb_error err;
    assert_int_equal(mb_experiment_cells(exp, MB_CAP_EMULATED | MB_CAP_GPU, NULL, &cells, &n,
                                         &notes, &n_notes, &err),
                     MB_OK);
    assert_int_equal(n, 4);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/array", tmp);
    const char *sets[] = {"measure.duration=2s"};
    struct mb_slurm_array_opts o = {.migbench = "/opt/mig bench/bin/migbench",
                                    .experiment = "/data/it's here/exp.yaml",
                                    .results = "/scratch/results/small",
                                    .partition = "gpu",
                                    .account = "proj-1",
                                    .time_limit = "1:00:00",
                                    .max_concurrent = 2,
                                    .n_extra = 1,
                                    .extra = {"--qos=high"},
                                    .overrides = sets,
                                    .n_overrides = 1};
    assert_int_equal(mb_slurm_write_array(exp, cells, n, NULL, 0, &o, dir, &err), MB_OK);
    const char *files[] = {"array.sbatch", "report.sbatch", "cells.tsv", "submit.sh"};
    for (size_t i = 0; i < 4; i++)
        check_golden(dir, files[i], "array");
    check_bash(dir, "array.sbatch");
    check_bash(dir, "report.sbatch");
    check_bash(dir, "submit.sh");

    /* A resubmission: only some cells, as ranges. */
    size_t some[] = {0, 2, 3};
    snprintf(dir, sizeof(dir), "%s/again", tmp);
    o = (struct mb_slurm_array_opts){.migbench = "/usr/bin/migbench",
                                     .experiment = "/e.yaml",
                                     .results = "/r",
                                     .device = "emu:H100-80GB:mig=on,state=/var/lib/x y.json"};
    assert_int_equal(mb_slurm_write_array(exp, cells, n, some, 3, &o, dir, &err), MB_OK);
    check_golden(dir, "array.sbatch", "again");
    check_golden(dir, "cells.tsv", "array"); /* every cell, submitted or not */

    /* Refused: what would change the line sbatch reads, relative paths, bad indices. */
    struct mb_slurm_array_opts bad = o;
    bad.partition = "gpu --account=x";
    assert_int_equal(mb_slurm_write_array(exp, cells, n, NULL, 0, &bad, dir, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "--partition"));
    bad = o;
    bad.extra[0] = "qos=high";
    bad.n_extra = 1;
    assert_int_equal(mb_slurm_write_array(exp, cells, n, NULL, 0, &bad, dir, &err), MB_EINVAL);
    bad = o;
    bad.extra[0] = "--comment=a\n#SBATCH --x";
    bad.n_extra = 1;
    assert_int_equal(mb_slurm_write_array(exp, cells, n, NULL, 0, &bad, dir, &err), MB_EINVAL);
    bad = o;
    bad.results = "results/small";
    assert_int_equal(mb_slurm_write_array(exp, cells, n, NULL, 0, &bad, dir, &err), MB_EINVAL);
    assert_non_null(strstr(err.msg, "absolute"));
    size_t backwards[] = {2, 1};
    assert_int_equal(mb_slurm_write_array(exp, cells, n, backwards, 2, &o, dir, &err), MB_EINVAL);
    size_t past[] = {4};
    assert_int_equal(mb_slurm_write_array(exp, cells, n, past, 1, &o, dir, &err), MB_EINVAL);
    free(cells);
    mb_notes_free(notes, n_notes);
    mb_experiment_destroy(exp);
}

/* A solved two-GPU plan of the planner's example jobs, for the plan emitters. */
struct plan_fixture {
    struct mb_catalog *cat;
    const struct mb_gpu_model *model;
    struct mb_plan_profiles *prof;
    struct mb_plan_jobset *js;
    struct mb_plan *plan;
};

static void plan_fixture(struct plan_fixture *p)
{
    memset(p, 0, sizeof(*p));
    struct mb_error err;
    char path[600];
    assert_int_equal(mb_catalog_create(&p->cat, &err), MB_OK);
    assert_int_equal(mb_catalog_find(p->cat, "H100-80GB", &p->model, &err), MB_OK);
    assert_int_equal(mb_plan_profiles_create(&p->prof, &err), MB_OK);
    snprintf(path, sizeof(path), "%s/tests/cli/plan-data/profiles.csv", MB_SOURCE_DIR);
    assert_int_equal(mb_plan_profiles_load_csv(p->prof, p->cat, path, &err), MB_OK);
    snprintf(path, sizeof(path), "%s/tests/cli/plan-data/jobs.yaml", MB_SOURCE_DIR);
    assert_int_equal(mb_plan_jobset_load(path, &p->js, &err), MB_OK);
    struct mb_plan_options opt = {.objective = MB_PLAN_ENERGY, .count = 2};
    int rc = mb_plan_solve(p->model, p->prof, p->js->jobs, p->js->n_jobs, &opt, &p->plan, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
}

static void plan_fixture_free(struct plan_fixture *p)
{
    mb_plan_destroy(p->plan);
    mb_plan_jobset_destroy(p->js);
    mb_plan_profiles_destroy(p->prof);
    mb_catalog_destroy(p->cat);
}

/* The instances per profile that plan GPUs first..first+n-1 hold. */
static void plan_counts(const struct plan_fixture *p, unsigned first, unsigned n,
                        unsigned cnt[MB_MAX_PROFILES])
{
    memset(cnt, 0, sizeof(unsigned) * MB_MAX_PROFILES);
    for (unsigned g = first; g < first + n; g++)
        for (size_t i = 0; p->plan->gpus[g].mig && i < p->plan->gpus[g].layout.n; i++)
            cnt[p->plan->gpus[g].layout.items[i].profile]++;
}

/* A mig-parted config read back by migbench's reader holds exactly the plan's instances. */
static void check_migcfg(const struct plan_fixture *p, const char *text, const char *source,
                         const char *config, unsigned first, unsigned n)
{
    struct mb_migcfg *cfg = NULL;
    struct mb_error err;
    int rc = mb_migcfg_parse(text, strlen(text), source, &cfg, &err);
    if (rc != MB_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, MB_OK);
    const struct mb_migcfg_config *c = NULL;
    for (size_t i = 0; i < mb_migcfg_count(cfg); i++)
        if (strcmp(mb_migcfg_config(cfg, i)->name, config) == 0)
            c = mb_migcfg_config(cfg, i);
    assert_non_null(c);
    unsigned want[MB_MAX_PROFILES], got[MB_MAX_PROFILES] = {0};
    plan_counts(p, first, n, want);
    for (size_t e = 0; e < c->n_entries; e++)
        for (size_t k = 0; k < c->entries[e].n_profiles; k++) {
            const struct mb_gi_profile *gp =
                mb_model_profile(p->model, c->entries[e].profiles[k].name);
            assert_non_null(gp);
            unsigned devs = c->entries[e].all_devices ? n : (unsigned)c->entries[e].n_devices;
            got[gp - p->model->profiles] += c->entries[e].profiles[k].count * devs;
        }
    assert_memory_equal(got, want, sizeof(got));
    mb_migcfg_destroy(cfg);
}

static void test_plan_slurm(void **state)
{
    (void)state;
    struct plan_fixture p;
    plan_fixture(&p);
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/plan-slurm", tmp);
    const char *nodes[] = {"gpu-a", "gpu-b"};
    struct mb_fleet_plan_opts o = {.n_nodes = 2,
                                   .nodes = nodes,
                                   .gpus_per_node = 1,
                                   .device_name = "NVIDIA H100 80GB HBM3",
                                   .migbench = "/usr/bin/migbench",
                                   .jobset = p.js};
    struct mb_error err;
    assert_int_equal(mb_slurm_write_plan(p.model, p.plan, p.js->jobs, p.js->n_jobs, &o, dir, &err),
                     MB_OK);
    check_golden(dir, "jobs.sh", "plan-slurm");
    check_bash(dir, "jobs.sh");
    for (unsigned k = 0; k < 2; k++) {
        char nd[400], path[500], golden[64];
        snprintf(nd, sizeof(nd), "%s/%s", dir, nodes[k]);
        snprintf(golden, sizeof(golden), "plan-slurm/%s", nodes[k]);
        check_golden(nd, "mig-parted.yaml", golden);
        check_golden(nd, "slurm-node.conf", golden);
        check_golden(nd, "rollout.sh", golden);
        check_bash(nd, "rollout.sh");
        snprintf(path, sizeof(path), "%s/mig-parted.yaml", nd);
        char *text = slurp(path);
        assert_non_null(text);
        check_migcfg(&p, text, path, "migbench-plan", k, 1);
        free(text);
    }
    /* Too few node names for the GPUs. */
    o.n_nodes = 1;
    assert_int_equal(mb_slurm_write_plan(p.model, p.plan, p.js->jobs, p.js->n_jobs, &o, dir, &err),
                     MB_EINVAL);
    assert_non_null(strstr(err.msg, "2 nodes needed, 1 named"));
    plan_fixture_free(&p);
}

/* The scalar under a path of mapping keys in a YAML document (libyaml's document API). */
static const char *yaml_get(yaml_document_t *doc, yaml_node_t *node, const char *const *keys,
                            size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!node || node->type != YAML_MAPPING_NODE)
            return NULL;
        yaml_node_t *next = NULL;
        for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
             pr < node->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(doc, pr->key);
            if (k && k->type == YAML_SCALAR_NODE &&
                strcmp((char *)k->data.scalar.value, keys[i]) == 0)
                next = yaml_document_get_node(doc, pr->value);
        }
        node = next;
    }
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

/* Every document of a YAML file, each handed to fn. Returns the number of documents. */
static size_t yaml_each(const char *path, void (*fn)(yaml_document_t *, void *), void *arg)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    yaml_parser_t parser;
    assert_true(yaml_parser_initialize(&parser));
    yaml_parser_set_input_file(&parser, f);
    size_t n = 0;
    for (;;) {
        yaml_document_t doc;
        assert_true(yaml_parser_load(&parser, &doc));
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root) {
            yaml_document_delete(&doc);
            break;
        }
        fn(&doc, arg);
        n++;
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return n;
}

struct cm_check {
    const struct plan_fixture *p;
    const char *path;
};

static void check_configmap(yaml_document_t *doc, void *arg)
{
    const struct cm_check *c = arg;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    const char *kind[] = {"kind"}, *name[] = {"metadata", "name"}, *cfg[] = {"data", "config.yaml"};
    assert_string_equal(yaml_get(doc, root, kind, 1), "ConfigMap");
    assert_string_equal(yaml_get(doc, root, name, 2), "migbench-mig-parted");
    const char *text = yaml_get(doc, root, cfg, 2);
    assert_non_null(text);
    check_migcfg(c->p, text, c->path, "migbench-gpu-a", 0, 1);
    check_migcfg(c->p, text, c->path, "migbench-gpu-b", 1, 1);
}

struct job_check {
    const struct plan_fixture *p;
    size_t jobs;
    unsigned completions;
};

static void check_job(yaml_document_t *doc, void *arg)
{
    struct job_check *c = arg;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    const char *kind[] = {"kind"}, *mode[] = {"spec", "completionMode"},
               *comp[] = {"spec", "completions"}, *name[] = {"metadata", "name"};
    assert_string_equal(yaml_get(doc, root, kind, 1), "Job");
    assert_string_equal(yaml_get(doc, root, mode, 2), "Indexed");
    const char *n = yaml_get(doc, root, name, 2);
    assert_non_null(n);
    assert_int_equal(strncmp(n, "migbench-", 9), 0);
    c->completions += (unsigned)atoi(yaml_get(doc, root, comp, 2));
    c->jobs++;
}

static void test_plan_k8s(void **state)
{
    (void)state;
    struct plan_fixture p;
    plan_fixture(&p);
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/plan-k8s", tmp);
    const char *nodes[] = {"gpu-a", "gpu-b"};
    struct mb_fleet_plan_opts o = {.n_nodes = 2,
                                   .nodes = nodes,
                                   .gpus_per_node = 1,
                                   .jobset = p.js,
                                   .image = "registry.example/migbench:1",
                                   .k8s_namespace = "ml"};
    struct mb_error err;
    assert_int_equal(mb_k8s_write_plan(p.model, p.plan, p.js->jobs, p.js->n_jobs, &o, dir, &err),
                     MB_OK);
    const char *files[] = {"mig-parted-configmap.yaml", "label-nodes.sh", "jobs.yaml"};
    for (size_t i = 0; i < 3; i++)
        check_golden(dir, files[i], "plan-k8s");
    check_bash(dir, "label-nodes.sh");
    snprintf(path, sizeof(path), "%s/mig-parted-configmap.yaml", dir);
    struct cm_check cm = {&p, path};
    assert_int_equal(yaml_each(path, check_configmap, &cm), 1);
    snprintf(path, sizeof(path), "%s/jobs.yaml", dir);
    struct job_check jc = {&p, 0, 0};
    size_t docs = yaml_each(path, check_job, &jc);
    assert_true(docs >= 1);
    assert_int_equal(jc.completions, p.js->n_jobs); /* every planned job, once */
    plan_fixture_free(&p);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(mb_file_write_atomic(path, text, strlen(text), 0644, NULL), MB_OK);
}

/* What a stand-in Slurm says of each job: 7_2 was cancelled, 7_3 waits, the rest are gone. */
static int fake_job_state(void *ctx, const char *job, char *state, size_t cap, struct mb_error *err)
{
    (void)err;
    (*(int *)ctx)++;
    snprintf(state, cap, "%s",
             strcmp(job, "7_2") == 0   ? "CANCELLED"
             : strcmp(job, "7_3") == 0 ? "PENDING"
             : strcmp(job, "9_2") == 0 ? "PENDING"  /* started before: requeued */
             : strcmp(job, "9_4") == 0 ? "REQUEUED" /* the state fn saw a restart */
             : strcmp(job, "9_1") == 0 ? "PENDING"  /* a failed cell's new task */
                                       : "");
    return MB_OK;
}

static void test_status(void **state)
{
    (void)state;
    char res[300], d[400];
    snprintf(res, sizeof(res), "%s/status", tmp);
    const char *dirs[] = {"slurm", "a/0", "a/1"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(d, sizeof(d), "%s/%s", res, dirs[i]);
        assert_int_equal(mb_results_mkdirs(d, 0755, NULL), MB_OK);
    }
    snprintf(d, sizeof(d), "%s/slurm", res);
    write_text(d, "cells.tsv",
               "index\trun\trepetition\tmode\tjobs\n0\ta\t0\texclusive\tw\n"
               "1\ta\t1\texclusive\tw\n2\tb\t0\ttimeslice\tw,w-2\n"
               "3\tb\t1\ttimeslice\tw,w-2\n4\tc\t0\texclusive\tw\n");
    write_text(d, "submissions.jsonl",
               "{\"array_job\":\"7\",\"report_job\":\"8\","
               "\"cells\":[0,1,2,3,4]}\n");
    snprintf(d, sizeof(d), "%s/a/0", res);
    write_text(d, "cell.json", "{\"status\":\"ok\",\"slurm\":{\"job\":\"7_0\"}}");
    snprintf(d, sizeof(d), "%s/a/1", res);
    write_text(d, "cell.json",
               "{\"status\":\"failed\",\"failure\":{\"reason\":\"job w: exit 3\"}}");
    write_text(res, "journal.jsonl",
               "{\"event\":\"cell_started\",\"run\":\"b\",\"rep\":0,\"slurm\":{\"job\":\"7_2\"}}\n"
               "{\"event\":\"cell_started\",\"run\":\"c\",\"rep\":9}\n");
    struct mb_slurm_cell *c = NULL;
    size_t n = 0;
    int asked = 0;
    struct mb_error err;
    assert_int_equal(mb_slurm_status(res, fake_job_state, &asked, &c, &n, &err), MB_OK);
    assert_int_equal(n, 5);
    enum mb_slurm_cell_state want[] = {MB_SLURM_CELL_DONE, MB_SLURM_CELL_FAILED,
                                       MB_SLURM_CELL_FAILED, MB_SLURM_CELL_QUEUED,
                                       MB_SLURM_CELL_NOT_RUN};
    /* A recorded cell that names no job gets the task its submission gave it. */
    const char *jobs[] = {"7_0", "7_1", "7_2", "7_3", "7_4"};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(c[i].index, i);
        assert_int_equal(c[i].state, want[i]);
        assert_string_equal(c[i].job, jobs[i]);
    }
    assert_string_equal(c[1].why, "job w: exit 3");
    assert_true(c[0].recorded && c[1].recorded);
    assert_false(c[2].recorded || c[3].recorded || c[4].recorded);
    assert_non_null(strstr(c[2].why, "CANCELLED"));
    /* The unrecorded cells are asked about, and the failed one whose result names no job (its
     * task may be a newer one, waiting): not the done one. */
    assert_int_equal(asked, 4);
    assert_string_equal(mb_slurm_cell_state_str(c[3].state), "queued");
    free(c);

    /* Slurm not asked: the started cell counts as failed, the others as not run. */
    assert_int_equal(mb_slurm_status(res, NULL, NULL, &c, &n, &err), MB_OK);
    assert_int_equal(c[2].state, MB_SLURM_CELL_FAILED);
    assert_int_equal(c[3].state, MB_SLURM_CELL_NOT_RUN);
    free(c);

    /* Resubmitted (cells 1, 2, 4, cap 2): the failed cell waits under its new task, a started
     * cell pending again is requeued, as is one whose job says so. */
    snprintf(d, sizeof(d), "%s/slurm", res);
    write_text(d, "submissions.jsonl",
               "{\"array_job\":\"7\",\"report_job\":\"8\",\"cells\":[0,1,2,3,4]}\n"
               "{\"array_job\":\"9\",\"report_job\":\"10\",\"max_attempts\":2,"
               "\"cells\":[1,2,4]}\n");
    write_text(
        res, "journal-9_2.jsonl",
        "{\"event\":\"cell_started\",\"run\":\"b\",\"rep\":0,\"slurm\":{\"job\":\"9_2\"}}\n");
    assert_int_equal(mb_slurm_status(res, fake_job_state, &asked, &c, &n, &err), MB_OK);
    assert_int_equal(c[1].state, MB_SLURM_CELL_QUEUED);
    assert_string_equal(c[1].job, "9_1");
    assert_int_equal(c[2].state, MB_SLURM_CELL_REQUEUED);
    assert_int_equal(c[4].state, MB_SLURM_CELL_REQUEUED);
    assert_string_equal(mb_slurm_cell_state_str(c[4].state), "requeued");
    assert_int_equal(c[1].attempts, 2);
    assert_int_equal(c[0].attempts, 1);
    assert_int_equal(c[1].max_attempts, 2);
    free(c);
    /* Its new task gone without a start: failed, and out of attempts. */
    write_text(d, "submissions.jsonl",
               "{\"array_job\":\"7\",\"report_job\":\"8\",\"cells\":[0,1,2,3,4]}\n"
               "{\"array_job\":\"11\",\"report_job\":\"12\",\"max_attempts\":2,"
               "\"cells\":[1]}\n");
    assert_int_equal(mb_slurm_status(res, fake_job_state, &asked, &c, &n, &err), MB_OK);
    assert_int_equal(c[1].state, MB_SLURM_CELL_FAILED);
    assert_non_null(strstr(c[1].why, "2 of 2 attempts: not resubmitted"));
    free(c);

    write_text(d, "cells.tsv", "index\trun\trepetition\n0\ta\n");
    assert_int_equal(mb_slurm_status(res, NULL, NULL, &c, &n, &err), MB_EPARSE);
    assert_non_null(strstr(err.msg, "cells.tsv:2"));
    snprintf(d, sizeof(d), "%s/none", tmp);
    assert_int_equal(mb_slurm_status(d, NULL, NULL, &c, &n, &err), MB_ENOTFOUND);
}

static void test_command(void **state)
{
    (void)state;
    char out[64];
    struct mb_error err;
    char *echo[] = {"echo", "hello", "world", NULL};
    assert_int_equal(mb_fleet_command(echo, out, sizeof(out), 10000, &err), MB_OK);
    assert_string_equal(out, "hello world");
    char *sh[] = {"sh", "-c", "echo no such job >&2; exit 3", NULL};
    assert_int_equal(mb_fleet_command(sh, out, sizeof(out), 10000, &err), MB_ECHILD);
    assert_non_null(strstr(err.msg, "status 3: no such job"));
    char *none[] = {"/nonexistent/sbatch", NULL};
    assert_int_equal(mb_fleet_command(none, out, sizeof(out), 10000, &err), MB_ENOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gres_type), cmocka_unit_test(test_node_gres_from_emu),
        cmocka_unit_test(test_array),     cmocka_unit_test(test_plan_slurm),
        cmocka_unit_test(test_plan_k8s),  cmocka_unit_test(test_status),
        cmocka_unit_test(test_command),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
