/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/submissions.jsonl's one codec (src/fleet/fleet_submissions.c): a line that `slurm submit`
 * writes and a line that the generated submit.sh prints (its printf format, from the golden
 * script, filled as the shell fills it) both come from the one encoder and decode through the one
 * decoder that `slurm status` reads with; lines written before (cells first, no cap) still read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet/fleet_internal.h"
#include "migbench/fileio.h"

/* A printf format with only %s conversions (and %%), filled with args in order. */
static char *fill(const char *format, const char *const *args, size_t n)
{
    size_t cap = strlen(format) + 1;
    for (size_t i = 0; i < n; i++)
        cap += strlen(args[i]);
    char *out = malloc(cap), *o = out;
    assert_non_null(out);
    size_t k = 0;
    for (const char *p = format; *p; p++) {
        if (p[0] == '%' && p[1] == '%') {
            *o++ = '%';
            p++;
        } else if (p[0] == '%' && p[1] == 's') {
            assert_true(k < n);
            strcpy(o, args[k]);
            o += strlen(args[k++]);
            p++;
        } else {
            assert_true(*p != '%' && *p != '\\' && *p != '\'');
            *o++ = *p;
        }
    }
    *o = '\0';
    assert_int_equal(k, n);
    return out;
}

static void check_cells(const struct mb__submission *s, const size_t *want, size_t n)
{
    assert_int_equal(s->n_cells, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(s->cells[i], want[i]);
}

static void test_submit_line(void **state)
{
    (void)state;
    const size_t cells[] = {0, 2, 5};
    struct mb__submission in = {.array_job = "4711",
                                .report_job = "4712",
                                .submitted_unix = 1765000000,
                                .max_attempts = 3,
                                .cells = cells,
                                .n_cells = 3};
    char *line = NULL;
    struct mb_error err;
    assert_int_equal(mb__submission_encode(&in, false, &line, &err), MB_OK);
    assert_string_equal(line,
                        "{\"array_job\":\"4711\",\"report_job\":\"4712\","
                        "\"submitted_unix\":1765000000,\"max_attempts\":3,\"cells\":[0,2,5]}");
    struct mb__submission out;
    assert_int_equal(mb__submission_decode(line, &out, &err), MB_OK);
    assert_string_equal(out.array_job, "4711");
    assert_string_equal(out.report_job, "4712");
    assert_int_equal(out.submitted_unix, 1765000000);
    assert_int_equal(out.max_attempts, 3);
    assert_string_equal(out.by, "");
    check_cells(&out, cells, 3);
    mb__submission_free(&out);
    free(line);
    /* No cap: none written. */
    in.max_attempts = 0;
    assert_int_equal(mb__submission_encode(&in, false, &line, &err), MB_OK);
    assert_null(strstr(line, "max_attempts"));
    free(line);
}

/* The golden submit.sh's printf format is the encoder's template; what the shell prints from it
 * decodes like a line of `slurm submit`. */
static void test_submit_sh_line(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof(path), "%s/tests/golden/fleet/array/submit.sh.golden", MB_SOURCE_DIR);
    char *script = NULL;
    struct mb_error err;
    assert_int_equal(mb_file_read(path, 1u << 20, &script, NULL, &err), MB_OK);
    const char *p = strstr(script, "\nprintf '");
    assert_non_null(p);
    p += strlen("\nprintf '");
    const char *end = strstr(p, "\\n' \\\n");
    assert_non_null(end);
    char *format = strndup(p, (size_t)(end - p));
    assert_non_null(format);
    /* The cells the script passes: the quoted word before >>"$out/submissions.jsonl". */
    const char *c = strstr(end, "\"$(date +%s)\" '");
    assert_non_null(c);
    c += strlen("\"$(date +%s)\" '");
    char *cells_arg = strndup(c, strcspn(c, "'"));
    assert_non_null(cells_arg);

    struct mb__submission tpl = {.max_attempts = 3, .by = "submit.sh"};
    char *want = NULL;
    assert_int_equal(mb__submission_encode(&tpl, true, &want, &err), MB_OK);
    assert_string_equal(format, want);

    const char *args[] = {"4711", "4712", "1765000000", cells_arg};
    char *line = fill(format, args, 4);
    struct mb__submission out;
    assert_int_equal(mb__submission_decode(line, &out, &err), MB_OK);
    assert_string_equal(out.array_job, "4711");
    assert_string_equal(out.report_job, "4712");
    assert_int_equal(out.submitted_unix, 1765000000);
    assert_int_equal(out.max_attempts, 3);
    assert_string_equal(out.by, "submit.sh");
    const size_t all[] = {0, 1, 2, 3};
    check_cells(&out, all, 4);
    mb__submission_free(&out);
    free(line);
    free(want);
    free(cells_arg);
    free(format);
    free(script);

    /* A by that the shell would read differently is refused in a template. */
    struct mb__submission odd = {.by = "it's"};
    assert_int_equal(mb__submission_encode(&odd, true, &want, &err), MB_EINVAL);
    assert_null(want);
}

/* Lines as earlier versions wrote them, and what the decoder skips. */
static void test_older_lines(void **state)
{
    (void)state;
    struct mb__submission out;
    struct mb_error err;
    assert_int_equal(mb__submission_decode("{\"cells\":[1,4],\"array_job\":\"7\","
                                           "\"report_job\":\"8\",\"submitted_unix\":5}",
                                           &out, &err),
                     MB_OK);
    const size_t want[] = {1, 4};
    check_cells(&out, want, 2);
    assert_string_equal(out.array_job, "7");
    assert_int_equal(out.max_attempts, 0);
    mb__submission_free(&out);
    assert_int_equal(
        mb__submission_decode("{\"max_attempts\":0,\"cells\":[1.5,-1,\"2\",3]}", &out, &err),
        MB_OK);
    const size_t three[] = {3};
    check_cells(&out, three, 1);
    assert_int_equal(out.max_attempts, 0);
    assert_string_equal(out.array_job, "");
    mb__submission_free(&out);
    assert_int_equal(mb__submission_decode("{\"cells\":{\"a\":1}}", &out, &err), MB_OK);
    assert_int_equal(out.n_cells, 0);
    mb__submission_free(&out);
    assert_int_equal(mb__submission_decode("[1,2]", &out, &err), MB_EPARSE);
    mb__submission_free(&out);
    assert_int_equal(mb__submission_decode("{\"array_job\":", &out, &err), MB_EPARSE);
    mb__submission_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_submit_line),
        cmocka_unit_test(test_submit_sh_line),
        cmocka_unit_test(test_older_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
