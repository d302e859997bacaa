/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition: samples grouped by family, written atomically. */
#include "migbench/prom.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/fileio.h"

#define NAME_MAX_LEN 200

struct family {
    char name[NAME_MAX_LEN];
    enum mb_prom_type type;
    char *help;
    char *samples; /* "name{labels} value\n" lines */
    size_t len, cap;
};

struct mb_prom {
    size_t n;
    struct family fam[MB_PROM_MAX_FAMILIES];
    size_t total; /* bytes of sample text, against MB_PROM_MAX_BYTES */
};

int mb_prom_create(struct mb_prom **out, struct mb_error *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
    return MB_OK;
}

void mb_prom_reset(struct mb_prom *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->fam[i].help);
        p->fam[i].help = NULL;
        p->fam[i].len = 0;
    }
    p->n = 0;
    p->total = 0;
}

void mb_prom_destroy(struct mb_prom *p)
{
    if (!p)
        return;
    mb_prom_reset(p);
    for (size_t i = 0; i < MB_PROM_MAX_FAMILIES; i++)
        free(p->fam[i].samples);
    free(p);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; label names take no colon. */
static bool valid_name(const char *s, bool colon)
{
    if (!s || !*s || strlen(s) >= NAME_MAX_LEN)
        return false;
    for (const char *c = s; *c; c++) {
        bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
        bool digit = *c >= '0' && *c <= '9';
        if (!(alpha || (colon && *c == ':') || (digit && c != s)))
            return false;
    }
    return true;
}

static int append(struct family *f, const char *s, size_t n)
{
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 256;
        while (cap < f->len + n + 1)
            cap *= 2;
        char *b = realloc(f->samples, cap);
        if (!b)
            return MB_ENOMEM;
        f->samples = b;
        f->cap = cap;
    }
    memcpy(f->samples + f->len, s, n);
    f->len += n;
    f->samples[f->len] = '\0';
    return MB_OK;
}

static int append_str(struct family *f, const char *s)
{
    return append(f, s, strlen(s));
}

/*
 * Label values escape backslash, double quote and newline; HELP text backslash and newline. Any
 * other control character becomes '?'.
 */
static int append_escaped(struct family *f, const char *s, bool quote)
{
    for (const char *c = s; *c; c++) {
        const char *e = NULL;
        if (*c == '\\')
            e = "\\\\";
        else if (*c == '\n')
            e = "\\n";
        else if (quote && *c == '"')
            e = "\\\"";
        else if ((unsigned char)*c < 0x20 || *c == 0x7f)
            e = "?"; /* no other control character reaches a textfile */
        int rc = e ? append_str(f, e) : append(f, c, 1);
        if (rc)
            return rc;
    }
    return MB_OK;
}

static struct family *find_family(struct mb_prom *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->fam[i].name, name) == 0)
            return &p->fam[i];
    return NULL;
}

int mb_prom_add(struct mb_prom *p, const char *name, enum mb_prom_type type, const char *help,
                const struct mb_prom_label *labels, size_t n_labels, double value,
                struct mb_error *err)
{
    if (!valid_name(name, true))
        return mb_error_set(err, MB_EINVAL, "prometheus: bad metric name '%s'", name ? name : "");
    if (!isfinite(value))
        return mb_error_set(err, MB_EINVAL, "prometheus: %s: value is not a finite number", name);
    if (n_labels > MB_PROM_MAX_LABELS)
        return mb_error_set(err, MB_ERANGE, "prometheus: %s: more than %d labels", name,
                            MB_PROM_MAX_LABELS);
    for (size_t i = 0; i < n_labels; i++) {
        if (!valid_name(labels[i].name, false) || strncmp(labels[i].name, "__", 2) == 0)
            return mb_error_set(err, MB_EINVAL, "prometheus: %s: bad label name '%s'", name,
                                labels[i].name ? labels[i].name : "");
        for (size_t j = 0; j < i; j++)
            if (strcmp(labels[i].name, labels[j].name) == 0)
                return mb_error_set(err, MB_EINVAL, "prometheus: %s: label '%s' twice", name,
                                    labels[i].name);
    }
    struct family *f = find_family(p, name);
    if (f && f->type != type)
        return mb_error_set(err, MB_EINVAL, "prometheus: %s: added as gauge and as counter", name);
    if (!f) {
        if (p->n == MB_PROM_MAX_FAMILIES)
            return mb_error_set(err, MB_ERANGE, "prometheus: more than %d metric families",
                                MB_PROM_MAX_FAMILIES);
        f = &p->fam[p->n];
        snprintf(f->name, sizeof(f->name), "%s", name);
        f->type = type;
        f->len = 0;
        f->help = strdup(help ? help : name);
        if (!f->help)
            return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
        p->n++;
    }
    size_t before = f->len;
    int rc = append_str(f, name);
    for (size_t i = 0; rc == MB_OK && i < n_labels; i++) {
        rc = append_str(f, i == 0 ? "{" : ",");
        if (!rc)
            rc = append_str(f, labels[i].name);
        if (!rc)
            rc = append_str(f, "=\"");
        if (!rc)
            rc = append_escaped(f, labels[i].value ? labels[i].value : "", true);
        if (!rc)
            rc = append_str(f, "\"");
    }
    if (!rc && n_labels)
        rc = append_str(f, "}");
    char num[64];
    /* Integers print without an exponent up to 2^53. */
    if (value == floor(value) && fabs(value) < 9007199254740992.0)
        snprintf(num, sizeof(num), " %.0f\n", value);
    else {
        /* The shortest of %.15g and %.17g that reads back as the same double. */
        snprintf(num, sizeof(num), " %.15g\n", value);
        if (strtod(num, NULL) != value)
            snprintf(num, sizeof(num), " %.17g\n", value);
    }
    if (!rc)
        rc = append_str(f, num);
    if (rc) {
        f->len = before;
        return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
    }
    p->total += f->len - before;
    if (p->total > MB_PROM_MAX_BYTES) {
        p->total -= f->len - before;
        f->len = before;
        f->samples[f->len] = '\0';
        return mb_error_set(err, MB_ERANGE, "prometheus: exposition larger than %u bytes",
                            MB_PROM_MAX_BYTES);
    }
    return MB_OK;
}

int mb_prom_text(const struct mb_prom *p, char **out, size_t *len, struct mb_error *err)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
    for (size_t i = 0; i < p->n; i++) {
        const struct family *fam = &p->fam[i];
        fprintf(f, "# HELP %s ", fam->name);
        for (const char *c = fam->help; *c; c++) {
            if (*c == '\\')
                fputs("\\\\", f);
            else if (*c == '\n')
                fputs("\\n", f);
            else
                fputc(*c, f);
        }
        fprintf(f, "\n# TYPE %s %s\n", fam->name,
                fam->type == MB_PROM_COUNTER ? "counter" : "gauge");
        if (fam->len)
            fwrite(fam->samples, 1, fam->len, f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return mb_error_set(err, MB_ENOMEM, "prometheus: out of memory");
    }
    *out = buf;
    if (len)
        *len = n;
    return MB_OK;
}

int mb_prom_write(const struct mb_prom *p, const char *path, struct mb_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = mb_prom_text(p, &text, &len, err);
    if (rc)
        return rc;
    rc = mb_file_write_atomic(path, text, len, 0644, err);
    free(text);
    return rc;
}
