/* SPDX-License-Identifier: Apache-2.0 */
/* A results directory's analysis as the report's JSON text (migbench/api.h). */
#include <stdlib.h>

#include "migbench/analysis.h"
#include "migbench/api.h"
#include "migbench/powersel.h"
#include "migbench/report.h"

int mb_report_json(const char *dir, const char *power_rule, char **json, struct mb_error *err)
{
    if (!json)
        return mb_error_set(err, MB_EINVAL, "report: NULL result");
    *json = NULL;
    if (!dir || !dir[0])
        return mb_error_set(err, MB_EINVAL, "report: no results directory");
    struct mb_power_rule_opts rule = {.rule = MB_PSEL_ENERGY};
    if (power_rule) {
        int st = mb_power_rule_parse(power_rule, &rule, err);
        if (st != MB_OK)
            return mb_error_prefix(err, "power rule: ");
    }
    struct mb_analysis *a = NULL;
    const char *dirs[1] = {dir};
    int st = mb_analysis_load(&a, dirs, 1, err);
    if (st != MB_OK)
        return st;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        mb_analysis_destroy(a);
        return mb_error_set(err, MB_ENOMEM, "report: out of memory");
    }
    st = mb_report_write_rule(f, a, MB_REPORT_JSON, &rule);
    mb_analysis_destroy(a);
    if (fclose(f) != 0 && st == MB_OK)
        st = MB_ENOMEM;
    if (st != MB_OK) {
        free(text);
        return mb_error_set(err, st, "report: cannot render %s as JSON: %s", dir,
                            mb_status_str(st));
    }
    *json = text;
    return MB_OK;
}
