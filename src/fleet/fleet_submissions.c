/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one codec of slurm/submissions.jsonl, one line per submission of a job array: the encoder
 * that `slurm submit` (fleet_submit.c) writes a line with, and that gives the generated submit.sh
 * (fleet_slurm.c) its printf format, and the decoder that status (fleet_status.c) reads lines
 * with. It calls no other file of fleet/.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet_internal.h"
#include "base/text_internal.h"

/* s as a JSON string (quoted, escaped) on f; MB_ENOMEM. */
static int json_string(FILE *f, const char *s)
{
    cJSON *j = cJSON_CreateString(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        return MB_ENOMEM;
    fputs(text, f);
    free(text);
    return MB_OK;
}

/* A word a shell template can carry inside a single-quoted printf format as it is. */
static bool template_plain(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

static void write_fields(FILE *f, const struct mb__submission *s, bool shell, int *rc)
{
    fputs("{\"array_job\":", f);
    if (shell)
        fputs("\"%s\"", f);
    else if (*rc == MB_OK)
        *rc = json_string(f, s->array_job);
    fputs(",\"report_job\":", f);
    if (shell)
        fputs("\"%s\"", f);
    else if (*rc == MB_OK)
        *rc = json_string(f, s->report_job);
    if (shell)
        fputs(",\"submitted_unix\":%s", f);
    else
        fprintf(f, ",\"submitted_unix\":%lld", s->submitted_unix);
    if (s->max_attempts)
        fprintf(f, ",\"max_attempts\":%u", s->max_attempts);
    if (s->by[0]) {
        fputs(",\"by\":", f);
        if (*rc == MB_OK)
            *rc = json_string(f, s->by);
    }
    fputs(",\"cells\":[", f);
    if (shell)
        fputs("%s", f);
    for (size_t i = 0; !shell && i < s->n_cells; i++)
        fprintf(f, "%s%zu", i ? "," : "", s->cells[i]);
    fputs("]}", f);
}

int mb__submission_encode(const struct mb__submission *s, bool shell_template, char **line,
                          struct mb_error *err)
{
    *line = NULL;
    if (shell_template && !template_plain(s->by))
        return mb_error_set(err, MB_EINVAL, "submissions.jsonl: '%s' cannot go in a template",
                            s->by);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    int rc = MB_OK;
    write_fields(f, s, shell_template, &rc);
    if (fclose(f) != 0 || rc != MB_OK) {
        free(buf);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    *line = buf;
    return MB_OK;
}

/* A cell index: a whole number 0..2^53 (what a double holds exactly). */
static bool cell_index(const cJSON *i, size_t *out)
{
    if (!cJSON_IsNumber(i) || !(i->valuedouble >= 0) || i->valuedouble > 9007199254740992.0 ||
        floor(i->valuedouble) != i->valuedouble)
        return false;
    *out = (size_t)i->valuedouble;
    return true;
}

int mb__submission_decode(const char *line, struct mb__submission *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    cJSON *o = cJSON_Parse(line);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return mb_error_set(err, MB_EPARSE, "submissions.jsonl: a line is not a JSON object");
    }
    const cJSON *aj = cJSON_GetObjectItemCaseSensitive(o, "array_job");
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(o, "report_job");
    const cJSON *when = cJSON_GetObjectItemCaseSensitive(o, "submitted_unix");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(o, "max_attempts");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(o, "by");
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(o, "cells");
    if (cJSON_IsString(aj))
        mb__copy_str(out->array_job, sizeof(out->array_job), aj->valuestring);
    if (cJSON_IsString(rj))
        mb__copy_str(out->report_job, sizeof(out->report_job), rj->valuestring);
    if (cJSON_IsNumber(when) && fabs(when->valuedouble) < 1e15)
        out->submitted_unix = (long long)when->valuedouble;
    if (cJSON_IsNumber(max) && max->valuedouble >= 1 && max->valuedouble <= 1e6)
        out->max_attempts = (unsigned)max->valuedouble;
    if (cJSON_IsString(by))
        mb__copy_str(out->by, sizeof(out->by), by->valuestring);
    int n = cJSON_IsArray(cells) ? cJSON_GetArraySize(cells) : 0;
    int rc = MB_OK;
    if (n > 0 && !(out->owned = malloc((size_t)n * sizeof(*out->owned))))
        rc = mb_error_set(err, MB_ENOMEM, "out of memory");
    const cJSON *i;
    const cJSON *list = rc == MB_OK && n > 0 ? cells : NULL;
    cJSON_ArrayForEach(i, list)
    {
        if (cell_index(i, &out->owned[out->n_cells]))
            out->n_cells++;
    }
    out->cells = out->owned;
    cJSON_Delete(o);
    return rc;
}

void mb__submission_free(struct mb__submission *s)
{
    free(s->owned);
    s->owned = NULL;
    s->cells = NULL;
    s->n_cells = 0;
}
