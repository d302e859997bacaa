/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Costs of the experiment runner's bookkeeping, so that its overhead per cell can be judged:
 * parsing and validating an experiment file, appending an fsync'd journal event, and writing a
 * cell.json atomically (temporary file, fsync, rename, directory fsync).
 *
 *   bench_run [N]   (default 200 of each; files go to a temporary directory under $TMPDIR or /tmp)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "results/results_json.h"
#include "migbench/clock.h"
#include "migbench/experiment.h"
#include "migbench/results.h"

static double now_s(void)
{
    return (double)mb_clock_monotonic_ns() * 1e-9;
}

static const char *EXP =
    "version: 1\nname: bench\ndevice: auto\nworkloads:\n"
    "  resnet18:\n    command: [\"{python}\", \"{workloads}/vision.py\", --model, resnet18]\n"
    "    unit: images\n    host_args: [--device, cpu]\n    gpu_args: [--device, cuda]\n"
    "  gpt:\n    command: [\"{python}\", \"{workloads}/gpt.py\", --size, tiny]\n    unit: tokens\n"
    "runs:\n"
    "  - {name: alone, mode: exclusive, jobs: [resnet18, gpt]}\n"
    "  - {name: ts, mode: timeslice, jobs: [resnet18, gpt]}\n"
    "  - {name: mix, mode: mig, layout: [4g.40gb, 3g.40gb], jobs: [resnet18, gpt]}\n"
    "  - {name: mps, mode: mps, jobs: [resnet18, gpt], match_layout: [4g.40gb, 3g.40gb]}\n"
    "measure: {warmup: 20s, duration: 120s, repetitions: 4, idle: 5s}\n";

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    if (n < 1)
        n = 1;
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/mb-bench-run-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    struct mb_error err;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        struct mb_experiment *exp;
        if (mb_experiment_parse("bench.yaml", EXP, strlen(EXP), NULL, 0, &exp, &err) != MB_OK) {
            fprintf(stderr, "bench_run: %s\n", err.msg);
            return 1;
        }
        mb_experiment_destroy(exp);
    }
    double parse_us = (now_s() - t0) / n * 1e6;

    char path[320];
    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    struct mb_journal *j;
    if (mb_journal_open(path, &j, &err) != MB_OK) {
        fprintf(stderr, "bench_run: %s\n", err.msg);
        return 1;
    }
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "event", "mig_created");
        cJSON_AddNumberToObject(o, "gi_id", i);
        if (mb_journal_append(j, o, &err) != MB_OK) {
            fprintf(stderr, "bench_run: %s\n", err.msg);
            return 1;
        }
        cJSON_Delete(o);
    }
    double journal_us = (now_s() - t0) / n * 1e6;
    mb_journal_close(j);
    unlink(path);

    snprintf(path, sizeof(path), "%s/cell.json", dir);
    cJSON *cell = cJSON_CreateObject();
    cJSON_AddNumberToObject(cell, "schema", 1);
    cJSON *jobs = cJSON_AddArrayToObject(cell, "jobs");
    for (int k = 0; k < 7; k++) {
        cJSON *job = cJSON_CreateObject();
        cJSON_AddStringToObject(job, "name", "resnet18");
        cJSON_AddNumberToObject(job, "units", 123456.0);
        cJSON_AddItemToArray(jobs, job);
    }
    t0 = now_s();
    for (int i = 0; i < n; i++)
        if (mb_results_write_json(path, cell, &err) != MB_OK) {
            fprintf(stderr, "bench_run: %s\n", err.msg);
            return 1;
        }
    double cell_us = (now_s() - t0) / n * 1e6;
    cJSON_Delete(cell);
    unlink(path);
    rmdir(dir);
    printf("experiment parse+validate: %.1f us\n", parse_us);
    printf("journal append (fsync):    %.1f us\n", journal_us);
    printf("cell.json atomic write:    %.1f us\n", cell_us);
    return 0;
}
