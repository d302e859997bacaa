/* SPDX-License-Identifier: Apache-2.0 */
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
    char unit_name[16];     /* from unit=; "" none */
    bool read_counted;      /* the current mb_progress_feed call already completed a record */
    uint64_t last_no_job_t; /* seq of the last record without the job's own clock; 0 none */
    int64_t started_ns;     /* opts.started_ns */
};

int mb_progress_create(const struct mb_progress_opts *opts, struct mb_progress **out,
                       struct mb_error *err)
{
    *out = NULL;
    struct mb_progress *p = calloc(1, sizeof(*p));
    if (!p)
        return mb_error_set(err, MB_ENOMEM, "out of memory");
    p->samples_per_step = opts && opts->samples_per_step > 0 ? opts->samples_per_step : 0;
    p->started_ns = opts ? opts->started_ns : 0;
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
                   double job_t_s, int64_t t_ns)
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
    if (p->have_last && (step < p->last.step || work < p->last.work || t_ns < p->last.t_ns ||
                         (job_t_s >= 0 && p->last.job_t_s >= 0 && job_t_s < p->last.job_t_s))) {
        p->counts.rejected++;
        return;
    }
    if (!p->read_counted) {
        p->counts.reads++;
        p->read_counted = true;
    }
    p->counts.records++;
    struct mb_progress_point pt = {.t_ns = t_ns,
                                   .step = step,
                                   .work = work,
                                   .job_t_s = job_t_s,
                                   .seq = p->counts.records,
                                   .read = p->counts.reads};
    if (job_t_s < 0)
        p->last_no_job_t = pt.seq;
    if (!p->have_last)
        p->first = pt;
    p->last = pt;
    p->have_last = true;
    keep_point(p, &pt);
}

static void parse_protocol(struct mb_progress *p, const char *s, size_t n, int64_t t_ns)
{
    const char *end = s + n;
    bool has_step = false, has_samples = false;
    uint64_t step = 0;
    double samples = 0, job_t = -1;
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
        } else if (klen == 4 && memcmp(tok, "unit", 4) == 0) {
            const char *v = eq + 1;
            size_t vlen = (size_t)(s - v);
            bool ok = vlen > 0 && vlen < sizeof(p->unit_name);
            for (size_t i = 0; ok && i < vlen; i++)
                ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') || v[i] == '_';
            if (ok && !p->unit_name[0]) {
                memcpy(p->unit_name, v, vlen);
                p->unit_name[vlen] = '\0';
            }
        } else if (klen == 1 && tok[0] == 't') {
            if (!parse_double(eq + 1, s, &job_t)) {
                p->counts.garbage++;
                return;
            }
        }
    }
    if (!has_step) {
        p->counts.garbage++;
        return;
    }
    record(p, step, has_samples, samples, job_t, t_ns);
}

static void parse_regex(struct mb_progress *p, const char *s, size_t n, int64_t t_ns)
{
    regmatch_t m[3];
    if (regexec(&p->re, s, 3, m, 0) != 0) {
        p->counts.ignored++;
        return;
    }
    uint64_t step;
    if (m[1].rm_so < 0 || !parse_u64(s + m[1].rm_so, s + m[1].rm_eo, &step)) {
        p->counts.garbage++;
        return;
    }
    /* The job's own clock, when the regex has a second group and it matched. */
    double job_t = -1;
    if (p->re.re_nsub >= 2 && m[2].rm_so >= 0 &&
        !parse_double(s + m[2].rm_so, s + m[2].rm_eo, &job_t)) {
        p->counts.garbage++;
        return;
    }
    (void)n;
    record(p, step, false, 0, job_t, t_ns);
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
    p->read_counted = false;
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

const char *mb_progress_unit_name(const struct mb_progress *p)
{
    return p->unit_name[0] ? p->unit_name : NULL;
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

/* How to get progress that arrives line by line, or timed by the job itself. */
#define BURST_FIX                                                                                  \
    "run the job with PYTHONUNBUFFERED=1 (migbench's default) or on a pseudo-terminal "            \
    "(--pty, or pty: true in the experiment), or have it print its own clock "                     \
    "(t=SECONDS, or a second regex group)"

/* Most records rejected (they went backwards): true, with out->reason set. */
static bool mostly_rejected(const struct mb_progress *p, struct mb_throughput *out)
{
    const struct mb_progress_counts *c = &p->counts;
    if (c->rejected <= c->records)
        return false;
    snprintf(out->reason, sizeof(out->reason),
             "%llu of %llu progress records were rejected (their step, samples or the job's "
             "clock went backwards)%s",
             (unsigned long long)c->rejected, (unsigned long long)(c->rejected + c->records),
             p->last.job_t_s >= 0 ? ": the clock group is not a clock (a per-iteration time?)"
                                  : ": the regex may match the wrong numbers");
    return true;
}

/*
 * A window on the job's clock longer than the job has run (allowing 2% and 0.2 s for another
 * clock's rate and resolution): true, with out->reason set, when the throughput is refused.
 */
static bool clock_insane(const struct mb_progress *p, struct mb_throughput *out, double span_s)
{
    if (!out->job_clock || p->started_ns <= 0 || p->last.t_ns <= p->started_ns)
        return false;
    double wall_s = (double)(p->last.t_ns - p->started_ns) * 1e-9;
    if (span_s <= wall_s * 1.02 + 0.2)
        return false;
    snprintf(out->reason, sizeof(out->reason),
             "the job's own clock spans %.3f s over the window, but the job had run only %.3f s "
             "by its last record: the clock is not in seconds (milliseconds?)",
             span_s, wall_s);
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
    if (mostly_rejected(p, out))
        return;
    size_t i = 0;
    while (i < p->n_pts &&
           (p->pts[i].t_ns < origin_ns + warmup_ns || p->pts[i].step < warmup_steps))
        i++;
    /* The records of one read share its arrival time, which is its last record's: a window
     * timed by arrival that opened on an earlier one would count their work in no time (a reader
     * scheduled late at the start gets the first lines in one read: 1.9 % too fast on a loaded
     * machine). So it opens on the last record of its first read; the counts start at the first. */
    size_t i0 = i;
    if (i < p->n_pts && p->last_no_job_t >= p->pts[i].seq)
        while (i + 1 < p->n_pts && p->pts[i + 1].read == p->pts[i].read)
            i++;
    /* Points in the window, the exact last record appended when it was not kept. */
    size_t n = p->n_pts - i + 1;
    double *t = malloc(n * sizeof(double));
    double *w = malloc(n * sizeof(double));
    if (!t || !w) {
        snprintf(out->reason, sizeof(out->reason), "out of memory");
        goto done;
    }
    bool bursty_all = p->counts.records >= 2 * p->counts.reads && p->counts.records > 1;
    if (i == p->n_pts) {
        snprintf(out->reason, sizeof(out->reason),
                 "fewer than two progress records after the warm-up: %llu arrived in all, in %llu "
                 "read%s, the first %.1f s and the last %.1f s after the start%s%s",
                 (unsigned long long)p->counts.records, (unsigned long long)p->counts.reads,
                 p->counts.reads == 1 ? "" : "s", (double)(p->first.t_ns - origin_ns) * 1e-9,
                 (double)(p->last.t_ns - origin_ns) * 1e-9,
                 bursty_all ? "; progress arrived in bursts (output buffered?): " : "",
                 bursty_all ? BURST_FIX : "");
        goto done;
    }
    const struct mb_progress_point *p0 = &p->pts[i];
    out->job_clock = p->last_no_job_t < p0->seq;
    out->records = p->last.seq - p->pts[i0].seq + 1;
    out->reads = p->last.read - p->pts[i0].read + 1;
    size_t k = 0;
    for (size_t j = i; j < p->n_pts; j++) {
        t[k] = out->job_clock ? p->pts[j].job_t_s - p0->job_t_s
                              : (double)(p->pts[j].t_ns - p0->t_ns) * 1e-9;
        w[k++] = p->pts[j].work;
    }
    bool last_kept = p->n_pts > 0 && p->pts[p->n_pts - 1].seq == p->last.seq;
    if (!last_kept) {
        t[k] = out->job_clock ? p->last.job_t_s - p0->job_t_s
                              : (double)(p->last.t_ns - p0->t_ns) * 1e-9;
        w[k++] = p->last.work;
    }
    bool bursty = out->records >= 2 * out->reads;
    if (k < 2 || !(t[k - 1] > 0)) {
        snprintf(out->reason, sizeof(out->reason),
                 "fewer than two progress records %safter the warm-up: %llu arrived after it "
                 "(%llu in all), in %llu read%s, from %.1f s to %.1f s after the start%s%s",
                 out->records < 2 ? "" : "apart in time ", (unsigned long long)out->records,
                 (unsigned long long)p->counts.records, (unsigned long long)out->reads,
                 out->reads == 1 ? "" : "s", (double)(p0->t_ns - origin_ns) * 1e-9,
                 (double)(p->last.t_ns - origin_ns) * 1e-9,
                 bursty ? "; progress arrived in bursts (output buffered?): " : "",
                 bursty ? BURST_FIX : "");
        goto done;
    }
    if (!out->job_clock && bursty && out->reads < MB_PROGRESS_MIN_READS) {
        snprintf(out->reason, sizeof(out->reason),
                 "progress arrived in bursts (output buffered?): %llu records in %llu reads over "
                 "the window, so arrival times are off by up to 1/%llu of it; " BURST_FIX,
                 (unsigned long long)out->records, (unsigned long long)out->reads,
                 (unsigned long long)out->reads);
        goto done;
    }
    if (clock_insane(p, out, t[k - 1]))
        goto done;
    out->t_start_ns = p0->t_ns;
    out->t_end_ns = p->last.t_ns;
    out->duration_s = t[k - 1];
    out->work = w[k - 1] - w[0];
    out->steps = (double)(p->last.step - p0->step);
    out->batches = mb_stats_batch_means(t, w, k, batches ? batches : 10, &out->rate);
    out->valid = out->batches > 0;
    if (!out->valid)
        snprintf(out->reason, sizeof(out->reason), "no time elapsed between progress records");
done:
    free(t);
    free(w);
}
