/* SPDX-License-Identifier: Apache-2.0 */
/* The experiment's power_limits axis as written in YAML: expansion, and errors with
 * file/line/field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/device.h"
#include "migbench/experiment.h"

/* What an emulated MIG GPU can do (device.h). */
#define EMU_CAPS (MB_CAP_EMULATED | MB_CAP_GPU | MB_CAP_MIG | MB_CAP_SET_MIG_MODE | MB_CAP_MPS)

static int parse(const char *body, struct mb_experiment **exp, struct mb_error *err)
{
    char yaml[2048];
    snprintf(yaml, sizeof(yaml), "version: 1\nname: caps\nworkloads:\n  m: {command: [x]}\n%s",
             body);
    return mb_experiment_parse("p.yaml", yaml, strlen(yaml), NULL, 0, exp, err);
}

static void test_expansion(void **state)
{
    (void)state;
    struct mb_experiment *exp;
    struct mb_error err;
    int rc = parse("power_limits: [default, 80%]\n"
                   "runs:\n"
                   "  - {name: a, mode: exclusive, jobs: [m]}\n"
                   "  - {name: b, mode: mig, layout: [3g.40gb], jobs: [m],\n"
                   "     power_limits: [250W, 60%, default]}\n",
                   &exp, &err);
    if (rc != MB_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(exp->n_runs, 5);
    const char *names[] = {"a.cap-default", "a.cap-80pct", "b.cap-250W", "b.cap-60pct",
                           "b.cap-default"};
    const char *limits[] = {"default", "80%", "250W", "60%", "default"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(exp->runs[i].name, names[i]);
        assert_string_equal(exp->runs[i].power_limit.text, limits[i]);
        assert_string_equal(exp->runs[i].base_run, i < 2 ? "a" : "b");
    }
    assert_int_equal(exp->runs[3].mode, MB_MODE_MIG);
    assert_string_equal(exp->runs[3].layout[0], "3g.40gb");
    /* Cells are run x limit x repetition. */
    struct mb_cell *cells;
    size_t n, nn;
    char **notes;
    assert_int_equal(mb_experiment_cells(exp, EMU_CAPS, NULL, &cells, &n, &notes, &nn, &err),
                     MB_OK);
    assert_int_equal(n, 5 * mb_experiment_repetitions(exp, EMU_CAPS));
    free(cells);
    mb_notes_free(notes, nn);
    mb_experiment_destroy(exp);
    /* Without the axis nothing changes. */
    assert_int_equal(parse("runs:\n  - {name: a, mode: exclusive, jobs: [m]}\n", &exp, &err),
                     MB_OK);
    assert_int_equal(exp->n_runs, 1);
    assert_string_equal(exp->runs[0].name, "a");
    assert_int_equal(exp->runs[0].power_limit.kind, MB_PSET_NONE);
    mb_experiment_destroy(exp);
}

static void test_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"power_limits: [default, fast]\nruns:\n  - {name: a, mode: exclusive, jobs: [m]}\n",
         "p.yaml:5: field 'power_limits[1]': power limit 'fast'"},
        {"power_limits: 80%\nruns:\n  - {name: a, mode: exclusive, jobs: [m]}\n",
         "p.yaml:5: field 'power_limits': expected a list of power limits"},
        {"power_limits: []\nruns:\n  - {name: a, mode: exclusive, jobs: [m]}\n",
         "field 'power_limits': needs 1..16 power limits"},
        {"runs:\n  - {name: a, mode: exclusive, jobs: [m],\n     power_limits: [80%, 80pct]}\n",
         "p.yaml:7: field 'runs[0].power_limits[1]'"},
        {"runs:\n  - {name: a, mode: exclusive, jobs: [m],\n     power_limits: [80%, 80%]}\n",
         "p.yaml:7: field 'runs[0].power_limits[1]': '80%' is listed twice (also [0])"},
        {"runs:\n  - {name: a, mode: exclusive, jobs: [m], power_limits: [120%]}\n",
         "field 'runs[0].power_limits[0]': power limit '120%': a percentage"},
        {"runs:\n  - {name: a.cap-default, mode: exclusive, jobs: [m]}\n"
         "  - {name: a, mode: exclusive, jobs: [m], power_limits: [default]}\n",
         "run 'a.cap-default' (from power_limits) has the name of another run"},
        {"runs:\n  - {name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, mode: "
         "exclusive,"
         " jobs: [m], power_limits: [250W]}\n",
         "is longer than 63"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mb_experiment *exp = NULL;
        struct mb_error err;
        mb_error_clear(&err);
        int rc = parse(cases[i].body, &exp, &err);
        if (rc != MB_EPARSE || !strstr(err.msg, cases[i].want))
            fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, err.msg, cases[i].want);
        assert_null(exp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expansion),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
