/* SPDX-License-Identifier: Apache-2.0 */
/* The verb documents built in the library (include/migbench/report_verbs.h): a device report on
 * the emulated device, layout and --check documents, the catalog, and measure's nulls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/measure.h"
#include "migbench/report_verbs.h"

static void test_device_report_emu(void **state)
{
    (void)state;
    struct mb_device *dev = NULL;
    struct mb_error err;
    assert_int_equal(mb_device_open("emu:A100-SXM4-40GB:mig=1", &dev, &err), MB_OK);
    struct mb_device_report *r = malloc(sizeof(*r));
    assert_non_null(r);
    assert_int_equal(mb_device_report_collect(dev, "emu:A100-SXM4-40GB:mig=1", r, &err), MB_OK);
    assert_string_equal(r->spec, "emu:A100-SXM4-40GB:mig=1");
    assert_true(r->caps & MB_CAP_EMULATED);
    assert_true(r->caps & MB_CAP_MIG);
    assert_false(r->caps & MB_CAP_DELTA_TELEMETRY);
    assert_int_equal(r->sensor_rc, MB_OK);
    assert_int_equal(r->mode_rc, MB_OK);
    assert_true(r->mode.current);
    assert_int_equal(r->prof_rc, MB_OK);
    assert_true(r->n_prof > 0);

    struct mb_devices_json *j = NULL;
    assert_int_equal(mb_devices_json_create(&j, &err), MB_OK);
    assert_int_equal(mb_devices_json_add(j, r, &err), MB_OK);
    char *text = mb_devices_json_text(j);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"devices\":"));
    assert_non_null(strstr(text, "\"emulated\":\ttrue"));
    assert_non_null(strstr(text, "\"util_gpu_pct\":"));
    assert_null(strstr(text, "\"util_cpu_pct\":"));
    /* The emulated device has no PCI bus: null, not "". */
    assert_non_null(strstr(text, "\"pci_bus_id\":\tnull"));
    free(text);
    mb_devices_json_destroy(j);

    /* The text: the emulated label, the MIG table, unknowns as n/a; a blank line before the
     * second device's block. */
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    mb_device_report_text_write(f, 0, r);
    r->tel_rc = MB_EUNSUPPORTED;
    r->pl_rc = MB_EUNSUPPORTED;
    r->proc_rc = MB_EUNSUPPORTED;
    mb_device_report_text_write(f, 1, r);
    assert_int_equal(fclose(f), 0);
    assert_ptr_equal(strstr(text, "device 0: NVIDIA A100-SXM4-40GB  [EMULATED: modelled numbers, "
                                  "not measurements]\n  backend        emu (spec "
                                  "emu:A100-SXM4-40GB:mig=1, index 0)\n"),
                     text);
    assert_non_null(strstr(text, "  versions       driver n/a, NVML n/a, PCI n/a\n"));
    assert_non_null(strstr(text, "  MIG mode       enabled\n  MIG profiles   name "));
    assert_non_null(
        strstr(text, "\n                 7g.40gb         0      4     7/8    1     1 "));
    assert_non_null(strstr(text, "  MIG instances  none\n  processes      none\n\ndevice 1: "));
    assert_non_null(strstr(text, "  telemetry      n/a\n  MIG mode "));
    assert_non_null(strstr(text, "  processes      n/a\n"));
    size_t limits = 0; /* only the first block has a power limit line */
    for (const char *s = text; (s = strstr(s, "\n  power limit    ")); s++)
        limits++;
    assert_int_equal(limits, 1);
    free(text);
    free(r);
    mb_device_close(dev);
}

static void test_layout_documents(void **state)
{
    (void)state;
    struct mb_catalog *cat = NULL;
    struct mb_error err;
    assert_int_equal(mb_catalog_create(&cat, &err), MB_OK);
    const struct mb_gpu_model *m = NULL;
    assert_int_equal(mb_catalog_find(cat, "A100-SXM4-40GB", &m, &err), MB_OK);
    const struct mb_gi_profile *p7 = mb_model_profile(m, "7g.40gb");
    assert_non_null(p7);
    unsigned want[2] = {(unsigned)(p7 - m->profiles), (unsigned)(p7 - m->profiles)};
    struct mb_layout placed;
    assert_int_equal(mb_layout_place(m, NULL, want, 1, &placed, &err), MB_OK);

    char *t = mb_layout_json(m, &placed, -1);
    assert_non_null(t);
    assert_string_equal(t, "{\"profiles\":[\"7g.40gb\"],\"placements\":[{\"profile\":\"7g.40gb\","
                           "\"start\":0,\"size\":8,\"status\":\"verified\"}]}");
    free(t);
    t = mb_layout_json(m, &placed, 3);
    assert_non_null(strstr(t, ",\"count\":3}"));
    free(t);

    /* Two 7g instances do not fit: invalid, with the reasons given and the change. */
    const char reasons[1][MB_LAYOUT_REASON_MAX] = {"no room"};
    const char *change[1] = {"drop 7g.40gb"};
    struct mb_layout_check c = {.valid = false,
                                .want = want,
                                .n_want = 2,
                                .reasons = reasons,
                                .n_reasons = 1,
                                .nearest = &placed,
                                .changes = change,
                                .n_nearest = 1};
    t = mb_layout_check_json(m, &c);
    assert_non_null(t);
    assert_non_null(strstr(t, "\"valid\":false,\"profiles\":[\"7g.40gb\",\"7g.40gb\"],"
                              "\"placements\":null,\"reasons\":[\"no room\"],\"nearest\":[{"));
    assert_non_null(strstr(t, "\"change\":\"drop 7g.40gb\"}]}"));
    free(t);
    c = (struct mb_layout_check){.valid = true, .placed = &placed, .want = want, .n_want = 1};
    t = mb_layout_check_json(m, &c);
    assert_non_null(strstr(t, "\"valid\":true,\"profiles\":[\"7g.40gb\"],\"placements\":[{"));
    assert_non_null(strstr(t, "\"reasons\":[]}"));
    free(t);

    t = mb_catalog_json(cat, m);
    assert_non_null(t);
    assert_non_null(strstr(t, "\"name\":\t\"A100-SXM4-40GB\""));
    assert_null(strstr(t, "H100"));
    free(t);

    /* The text forms: the change string, both verdicts, a listed line, the catalog. */
    char d[64];
    mb_layout_diff_str(m, want, 2, &placed, d, sizeof(d));
    assert_string_equal(d, "drop 7g.40gb");
    mb_layout_diff_str(m, want, 1, &placed, d, sizeof(d));
    assert_string_equal(d, "");
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    assert_non_null(f);
    mb_layout_check_text_write(f, m, &c);
    c = (struct mb_layout_check){.valid = false,
                                 .want = want,
                                 .n_want = 2,
                                 .reasons = reasons,
                                 .n_reasons = 1,
                                 .nearest = &placed,
                                 .changes = change,
                                 .n_nearest = 1};
    mb_layout_check_text_write(f, m, &c);
    mb_layout_line_write(f, m, &placed, 12);
    mb_catalog_text_write(f, cat, NULL);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(t, "fits on A100-SXM4-40GB: 7g.40gb\n"));
    assert_non_null(strstr(t, "\ncreation order (largest first):\n   1  7g.40gb      profile id "));
    assert_non_null(strstr(t, "start  0  size 8  (memory slices 0-7)\n"));
    assert_non_null(strstr(t, "does not fit on A100-SXM4-40GB: 7g.40gb,7g.40gb\n  - no room\n"
                              "nearest valid layouts:\n  7g.40gb   (drop 7g.40gb)\n"));
    assert_non_null(strstr(t, "  12  "));
    assert_non_null(strstr(t, "  7g.40gb@0:8\n"));
    assert_non_null(
        strstr(t, "# model                c/m  GIs memory_mib  placements  profiles\n"));
    assert_non_null(strstr(t, "\n  A100-SXM4-40GB       7/8    7      40960  verified    1g.5gb "));
    assert_non_null(strstr(t, "\n  H100-SXM5-80GB "));
    free(t);
    mb_catalog_destroy(cat);
}

static void test_measure_nulls(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "1", NULL};
    struct mb_measure_report r = {.argv = argv, .device_spec = "emu:H100", .unit = "steps"};
    snprintf(r.info.backend, sizeof(r.info.backend), "emu");
    r.tp.valid = false;
    snprintf(r.tp.reason, sizeof(r.tp.reason), "no progress");
    char *t = mb_measure_json(&r);
    assert_non_null(t);
    assert_non_null(strstr(t, "\"command\":\t[\"sleep\", \"1\"]"));
    assert_non_null(strstr(t, "\"counter_j\":\tnull"));
    assert_non_null(strstr(t, "\"idle\":\tnull"));
    assert_non_null(strstr(t, "\"steady\":\tnull"));
    assert_non_null(strstr(t, "\"energy_per_unit_j\":\tnull"));
    assert_non_null(strstr(t, "\"reason\":\t\"no progress\""));
    assert_non_null(strstr(t, "\"csv\":\tnull"));
    free(t);

    /* Nothing measured: derive fills nothing, the summary says n/a. */
    mb_measure_report_derive(&r);
    assert_false(r.epu_valid);
    assert_false(r.split_valid);
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    assert_non_null(f);
    mb_measure_text_write(f, &r);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(t, "\n Measurement of 'sleep 1':\n\n  device        ? (emu backend)\n"));
    assert_non_null(strstr(t, "  energy        n/a counter, n/a integrated, gap n/a\n"));
    assert_non_null(strstr(t, "  mean power    n/a\n"));
    assert_non_null(strstr(t, "  throughput    n/a (no progress)\n"));
    assert_non_null(strstr(t, "  energy/unit   n/a\n  exit status   0\n\n"));
    assert_null(strstr(t, "idle power"));
    free(t);
}

static void test_measure_derive(void **state)
{
    (void)state;
    char *argv[] = {"train", NULL};
    struct mb_measure_report r = {.argv = argv, .unit = "images", .warmup_steps = 5};
    double j = 0;
    assert_false(mb_energy_best(&r.job, &j));
    r.job.integral_valid = true;
    r.job.integral_j = 900;
    assert_true(mb_energy_best(&r.job, &j) && j == 900);
    r.job.counter_valid = true; /* the counter wins over the integral */
    r.job.counter_j = 1000;
    r.job.duration_s = 10;
    r.have_idle = true;
    r.idle.mean_power_valid = true;
    r.idle.mean_power_w = 40;
    r.have_steady = true;
    r.steady.mean_power_valid = true;
    r.steady.mean_power_w = 150;
    r.tp.valid = true;
    r.tp.rate.mean = 300;
    r.tp.batches = 4;
    r.tp.duration_s = 8;
    mb_measure_report_derive(&r);
    assert_true(r.epu_valid && r.epu_j == 0.5);
    assert_true(r.split_valid && r.static_j == 400 && r.dynamic_j == 600);
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    assert_non_null(f);
    mb_measure_text_write(f, &r);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(t, "; static 400.000 J, dynamic 600.000 J\n"));
    assert_non_null(strstr(t, "  throughput    300.000 images/s (95% CI, 4 batches over 8.000 s, "
                              "after 5 warm-up steps)\n"));
    assert_non_null(strstr(t, "  energy/unit   0.5 J/image (steady window)\n"));
    free(t);
}

static void test_slurm_status(void **state)
{
    (void)state;
    struct mb_slurm_cell cells[3];
    memset(cells, 0, sizeof(cells));
    static const enum mb_slurm_cell_state st[] = {MB_SLURM_CELL_DONE, MB_SLURM_CELL_FAILED,
                                                  MB_SLURM_CELL_DONE};
    for (size_t i = 0; i < 3; i++) {
        cells[i].index = i;
        snprintf(cells[i].run, sizeof(cells[i].run), "r%zu", i);
        cells[i].rep = (unsigned)i;
        cells[i].state = st[i];
    }
    snprintf(cells[1].job, sizeof(cells[1].job), "12_1");
    snprintf(cells[1].why, sizeof(cells[1].why), "exit 3");
    size_t count[MB_SLURM_CELL_STATES];
    char *t = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&t, &len);
    assert_non_null(f);
    mb_slurm_status_text_write(f, cells, 3, count);
    assert_int_equal(fclose(f), 0);
    char want[256];
    snprintf(want, sizeof(want),
             "cell\trun\trep\tstate\tjob\twhy\n0\tr0\t0\t%s\t-\t\n1\tr1\t1\t%s\t12_1\texit 3\n"
             "2\tr2\t2\t%s\t-\t\n",
             mb_slurm_cell_state_str(MB_SLURM_CELL_DONE),
             mb_slurm_cell_state_str(MB_SLURM_CELL_FAILED),
             mb_slurm_cell_state_str(MB_SLURM_CELL_DONE));
    assert_string_equal(t, want);
    assert_int_equal(count[MB_SLURM_CELL_DONE], 2);
    assert_int_equal(count[MB_SLURM_CELL_FAILED], 1);
    assert_int_equal(count[MB_SLURM_CELL_NOT_RUN], 0);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_report_emu), cmocka_unit_test(test_layout_documents),
        cmocka_unit_test(test_measure_nulls),     cmocka_unit_test(test_measure_derive),
        cmocka_unit_test(test_slurm_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
