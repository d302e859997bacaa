/* Progress lines -> timestamped cumulative work, with bounded memory. */
#include "migbench/progress.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/num.h"

enum unit { UNIT_UNSET, UNIT_SAMPLES, UNIT_STEPS };

struct mb_progress {
    bool use_regex;
    regex_t re;
    double samples_per_step;
    char *line;
    size_t line_max;
    size_t line_len;
    bool discarding; /* inside an over-long line: skip to its newline */
    struct mb_progress_counts counts;
    enum unit unit;
    struct mb_progress_point *pts;
    size_t pts_max;
    size_t n_pts;
    int64_t spacing_ns; /* minimum time between kept checkpoints */
    struct mb_progress_point last;
    bool have_last;
    struct mb_progress_point first;
};

int mb_progress_create(const struct mb_progress_opts *opts, struct mb_progress **out,
                       struct mb_error *err)
{
    *out = NULL;
    struct mb_progress *p = calloc(1, sizeof(*p));
    if (!p)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    p->samples_per_step = opts && opts->samples_per_step > 0 ? opts->samples_per_step : 0;
    p->line_max = opts && opts->max_line_bytes ? opts->max_line_bytes : MB_PROGRESS_LINE_DEFAULT;
    p->pts_max = opts && opts->max_points ? opts->max_points : MB_PROGRESS_POINTS_DEFAULT;
    if (p->pts_max < 8)
        p->pts_max = 8;
    p->line = malloc(p->line_max + 1);
    p->pts = calloc(p->pts_max, sizeof(*p->pts));
    if (!p->line || !p->pts) {
        mb_progress_destroy(p);
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    }
    if (opts && opts->regex) {
        int rc = regcomp(&p->re, opts->regex, REG_EXTENDED);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &p->re, msg, sizeof(msg));
            free(p->line);
            free(p->pts);
            free(p);
            return mb_error_set(err, MB_EINVAL, "bad progress regex '%s': %s", opts->regex, msg);
        }
        p->use_regex = true;
        if (p->re.re_nsub < 1) {
            mb_progress_destroy(p);
            return mb_error_set(err, MB_EINVAL,
                                "progress regex '%s' has no group: its first (...) must match "
                                "the step number",
                                opts->regex);
        }
    }
    *out = p;
    return MB_OK;
}

void mb_progress_destroy(struct mb_progress *p)
{
    if (!p)
        return;
    if (p->use_regex)
        regfree(&p->re);
    free(p->line);
    free(p->pts);
    free(p);
}

/* Parses a non-negative decimal integer spanning exactly [s, end). */
static bool parse_u64(const char *s, const char *end, uint64_t *out)
{
    if (s == end || end - s > 19)
        return false;
    uint64_t v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

static bool parse_double(const char *s, const char *end, double *out)
{
    char tmp[64];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof(tmp))
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    double v;
    if (mb_num_parse(tmp, &v, NULL) != MB_OK || !(v >= 0) || v > 1e18)
        return false;
    *out = v;
    return true;
}

static void keep_point(struct mb_progress *p, const struct mb_progress_point *pt)
{
    if (p->n_pts > 0 && pt->t_ns - p->pts[p->n_pts - 1].t_ns < p->spacing_ns)
        return;
    if (p->n_pts == p->pts_max) {
        /* Keep every other checkpoint (the first one included) and double the spacing. */
        size_t k = 0;
        for (size_t i = 0; i < p->n_pts; i += 2)
            p->pts[k++] = p->pts[i];
        p->n_pts = k;
        int64_t span = p->pts[k - 1].t_ns - p->pts[0].t_ns;
        int64_t even = k > 1 ? span / (int64_t)(k - 1) : 1;
        p->spacing_ns = p->spacing_ns * 2 > even ? p->spacing_ns * 2 : even;
        if (pt->t_ns - p->pts[p->n_pts - 1].t_ns < p->spacing_ns)
            return;
    }
    p->pts[p->n_pts++] = *pt;
}

static void record(struct mb_progress *p, uint64_t step, bool has_samples, double samples,
                   int64_t t_ns)
{
    if (p->unit == UNIT_UNSET)
        p->unit = has_samples || p->samples_per_step > 0 ? UNIT_SAMPLES : UNIT_STEPS;
    double work;
    if (p->unit == UNIT_STEPS)
        work = (double)step;
    else if (has_samples)
        work = samples;
    else if (p->samples_per_step > 0)
        work = (double)step * p->samples_per_step;
    else {
        p->counts.garbage++; /* samples missing from a job that reported them before */
        return;
    }
    if (p->have_last && (step < p->last.step || work < p->last.work || t_ns < p->last.t_ns)) {
        p->counts.rejected++;
        return;
    }
    struct mb_progress_point pt = {.t_ns = t_ns, .step = step, .work = work};
    if (!p->have_last)
        p->first = pt;
    p->last = pt;
    p->have_last = true;
    p->counts.records++;
    keep_point(p, &pt);
}

static void parse_protocol(struct mb_progress *p, const char *s, size_t n, int64_t t_ns)
{
    const char *end = s + n;
    bool has_step = false, has_samples = false;
    uint64_t step = 0;
    double samples = 0;
    while (s < end) {
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        if (s == end)
            break;
        const char *tok = s;
        while (s < end && *s != ' ' && *s != '\t')
            s++;
        const char *eq = memchr(tok, '=', (size_t)(s - tok));
        if (!eq) {
            p->counts.garbage++;
            return;
        }
        size_t klen = (size_t)(eq - tok);
        if (klen == 4 && memcmp(tok, "step", 4) == 0) {
            if (!parse_u64(eq + 1, s, &step)) {
                p->counts.garbage++;
                return;
            }
            has_step = true;
        } else if (klen == 7 && memcmp(tok, "samples", 7) == 0) {
            if (!parse_double(eq + 1, s, &samples)) {
                p->counts.garbage++;
                return;
            }
            has_samples = true;
        }
    }
    if (!has_step) {
        p->counts.garbage++;
        return;
    }
    record(p, step, has_samples, samples, t_ns);
}

static void parse_regex(struct mb_progress *p, const char *s, size_t n, int64_t t_ns)
{
    regmatch_t m[2];
    if (regexec(&p->re, s, 2, m, 0) != 0) {
        p->counts.ignored++;
        return;
    }
    uint64_t step;
    if (m[1].rm_so < 0 || !parse_u64(s + m[1].rm_so, s + m[1].rm_eo, &step)) {
        p->counts.garbage++;
        return;
    }
    (void)n;
    record(p, step, false, 0, t_ns);
}

static void handle_line(struct mb_progress *p, int64_t t_ns)
{
    size_t n = p->line_len;
    p->line_len = 0;
    p->counts.lines++;
    if (n > 0 && p->line[n - 1] == '\r')
        n--;
    p->line[n] = '\0';
    bool binary = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p->line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f || (!p->use_regex && c >= 0x80))
            binary = true;
    }
    if (binary) {
        p->counts.garbage++;
        return;
    }
    if (n == 0) {
        if (p->use_regex)
            p->counts.ignored++;
        else
            p->counts.garbage++;
        return;
    }
    if (p->use_regex)
        parse_regex(p, p->line, n, t_ns);
    else
        parse_protocol(p, p->line, n, t_ns);
}

void mb_progress_feed(struct mb_progress *p, const char *buf, size_t n, int64_t t_ns)
{
    p->counts.bytes += n;
    while (n > 0) {
        const char *nl = memchr(buf, '\n', n);
        size_t chunk = nl ? (size_t)(nl - buf) : n;
        if (p->discarding) {
            /* nothing to keep */
        } else if (p->line_len + chunk > p->line_max) {
            p->discarding = true;
            p->line_len = 0;
        } else {
            memcpy(p->line + p->line_len, buf, chunk);
            p->line_len += chunk;
        }
        if (!nl)
            return;
        if (p->discarding) {
            p->discarding = false;
            p->counts.lines++;
            p->counts.overlong++;
        } else {
            handle_line(p, t_ns);
        }
        buf = nl + 1;
        n -= chunk + 1;
    }
}

void mb_progress_end(struct mb_progress *p)
{
    if (p->line_len > 0 || p->discarding) {
        if (p->discarding)
            p->counts.overlong++;
        else
            p->counts.partial++;
    }
    p->line_len = 0;
    p->discarding = false;
}

void mb_progress_get_counts(const struct mb_progress *p, struct mb_progress_counts *out)
{
    *out = p->counts;
}

bool mb_progress_unit_is_samples(const struct mb_progress *p)
{
    return p->unit == UNIT_SAMPLES || (p->unit == UNIT_UNSET && p->samples_per_step > 0);
}

bool mb_progress_first(const struct mb_progress *p, struct mb_progress_point *out)
{
    if (!p->have_last)
        return false;
    *out = p->first;
    return true;
}

bool mb_progress_last(const struct mb_progress *p, struct mb_progress_point *out)
{
    if (!p->have_last)
        return false;
    *out = p->last;
    return true;
}

void mb_progress_throughput(const struct mb_progress *p, int64_t origin_ns, int64_t warmup_ns,
                            uint64_t warmup_steps, size_t batches, struct mb_throughput *out)
{
    *out = (struct mb_throughput){0};
    out->unit_is_samples = mb_progress_unit_is_samples(p);
    if (!p->have_last) {
        snprintf(out->reason, sizeof(out->reason), "the job reported no progress");
        return;
    }
    size_t i = 0;
    while (i < p->n_pts &&
           (p->pts[i].t_ns < origin_ns + warmup_ns || p->pts[i].step < warmup_steps))
        i++;
    /* Points in the window, the exact last record appended when it was not kept. */
    size_t n = p->n_pts - i + 1;
    double *t = malloc(n * sizeof(double));
    double *w = malloc(n * sizeof(double));
    if (!t || !w) {
        snprintf(out->reason, sizeof(out->reason), "out of memory");
        goto done;
    }
    size_t k = 0;
    for (size_t j = i; j < p->n_pts; j++) {
        t[k] = (double)(p->pts[j].t_ns - p->pts[i].t_ns) * 1e-9;
        w[k++] = p->pts[j].work;
    }
    bool last_kept = p->n_pts > 0 && p->pts[p->n_pts - 1].t_ns == p->last.t_ns &&
                     p->pts[p->n_pts - 1].step == p->last.step;
    if (k > 0 && !last_kept) {
        t[k] = (double)(p->last.t_ns - p->pts[i].t_ns) * 1e-9;
        w[k++] = p->last.work;
    }
    if (k < 2 || !(t[k - 1] > 0)) {
        snprintf(out->reason, sizeof(out->reason),
                 "fewer than two progress records after the warm-up (%llu records in all)",
                 (unsigned long long)p->counts.records);
        goto done;
    }
    out->t_start_ns = p->pts[i].t_ns;
    out->t_end_ns = p->last.t_ns;
    out->duration_s = t[k - 1];
    out->work = w[k - 1] - w[0];
    out->steps = (double)(p->last.step - p->pts[i].step);
    out->batches = mb_stats_batch_means(t, w, k, batches ? batches : 10, &out->rate);
    out->valid = out->batches > 0;
    if (!out->valid)
        snprintf(out->reason, sizeof(out->reason), "no time elapsed between progress records");
done:
    free(t);
    free(w);
}
