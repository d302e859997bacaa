/* SPDX-License-Identifier: Apache-2.0 */
/* Zeus's power-limit selection rules over measured points (include/migbench/powersel.h). */
#include "migbench/powersel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "migbench/num.h"

const char *mb_power_rule_str(enum mb_power_rule r)
{
    switch (r) {
    case MB_PSEL_ENERGY:
        return "energy";
    case MB_PSEL_TIME:
        return "time";
    case MB_PSEL_COST:
        return "cost";
    case MB_PSEL_SLOWDOWN:
        return "slowdown";
    }
    return "unknown";
}

int mb_power_rule_parse(const char *text, struct mb_power_rule_opts *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    out->eta = NAN;
    out->max_slowdown = NAN;
    out->max_power_w = NAN;
    if (!text)
        return mb_error_set(err, MB_EINVAL, "power rule: empty");
    if (strcmp(text, "energy") == 0) {
        out->rule = MB_PSEL_ENERGY;
        return MB_OK;
    }
    if (strcmp(text, "time") == 0) {
        out->rule = MB_PSEL_TIME;
        return MB_OK;
    }
    double v;
    const char *end = NULL;
    if (strncmp(text, "cost:", 5) == 0) {
        if (mb_num_parse(text + 5, &v, NULL) != MB_OK || v < 0 || v > 1)
            return mb_error_set(err, MB_EINVAL,
                                "power rule '%s': cost:ETA takes a weight of energy in 0..1", text);
        out->rule = MB_PSEL_COST;
        out->eta = v;
        return MB_OK;
    }
    if (strncmp(text, "slowdown:", 9) == 0) {
        if (mb_num_parse(text + 9, &v, &end) == MB_OK && strcmp(end, "%") == 0)
            v /= 100.0;
        else if (mb_num_parse(text + 9, &v, NULL) != MB_OK)
            v = -1;
        if (!(v >= 0 && v <= 10))
            return mb_error_set(err, MB_EINVAL,
                                "power rule '%s': slowdown:S takes a bound such as 10%% or 0.1",
                                text);
        out->rule = MB_PSEL_SLOWDOWN;
        out->max_slowdown = v;
        return MB_OK;
    }
    return mb_error_set(err, MB_EINVAL,
                        "power rule '%s': expected energy, time, cost:ETA or slowdown:S", text);
}

/* The point's figure under the rule and its half-width; false when it lacks what is needed. */
static bool figure(const struct mb_power_point *p, const struct mb_power_rule_opts *o, double *v,
                   double *ci)
{
    bool has_e = isfinite(p->energy_per_unit);
    bool has_t = isfinite(p->throughput) && p->throughput > 0;
    double ci_t = has_t && isfinite(p->throughput_ci95)
                      ? p->throughput_ci95 / (p->throughput * p->throughput)
                      : NAN;
    switch (o->rule) {
    case MB_PSEL_ENERGY:
    case MB_PSEL_SLOWDOWN:
        *v = p->energy_per_unit;
        *ci = p->energy_ci95;
        return has_e && (o->rule == MB_PSEL_ENERGY || has_t);
    case MB_PSEL_TIME:
        *v = has_t ? 1.0 / p->throughput : NAN;
        *ci = ci_t; /* first-order: d(1/x) = dx / x^2 */
        return has_t;
    case MB_PSEL_COST:
        *v = o->eta * p->energy_per_unit + (1 - o->eta) * o->max_power_w / p->throughput;
        *ci = o->eta * p->energy_ci95 + (1 - o->eta) * o->max_power_w * ci_t;
        return has_e && has_t;
    }
    return false;
}

int mb_power_select(const struct mb_power_point *pts, size_t n, const struct mb_power_rule_opts *o,
                    struct mb_power_choice *out, struct mb_error *err)
{
    memset(out, 0, sizeof(*out));
    if (o->rule == MB_PSEL_COST && !(o->max_power_w > 0 && o->eta >= 0 && o->eta <= 1))
        return mb_error_set(err, MB_EINVAL,
                            "power rule cost: needs ETA in 0..1 and the maximum "
                            "power limit");
    if (o->rule == MB_PSEL_SLOWDOWN && !(o->max_slowdown >= 0))
        return mb_error_set(err, MB_EINVAL, "power rule slowdown: needs a bound >= 0");
    double fastest = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(pts[i].throughput) && pts[i].throughput > fastest)
            fastest = pts[i].throughput;
    bool have = false;
    double best_v = INFINITY, best_ci = NAN, run_v = INFINITY, run_ci = NAN;
    for (size_t i = 0; i < n; i++) {
        double v, ci;
        if (!figure(&pts[i], o, &v, &ci))
            continue;
        if (o->rule == MB_PSEL_SLOWDOWN &&
            !(fastest / pts[i].throughput <= 1 + o->max_slowdown + 1e-12))
            continue;
        if (!have || v < best_v) {
            if (have) {
                out->has_runner = true;
                out->runner_up = out->index;
                run_v = best_v;
                run_ci = best_ci;
            }
            have = true;
            out->index = i;
            best_v = v;
            best_ci = ci;
        } else if (!out->has_runner || v < run_v) {
            out->has_runner = true;
            out->runner_up = i;
            run_v = v;
            run_ci = ci;
        }
    }
    if (!have)
        return mb_error_set(err, MB_ENOTFOUND,
                            o->rule == MB_PSEL_SLOWDOWN
                                ? "no power limit measured within the slowdown bound"
                                : "no power limit with the figures this rule needs");
    out->value = best_v;
    out->ci95 = best_ci;
    out->intervals = out->has_runner && isfinite(best_ci) && isfinite(run_ci);
    out->distinct = out->intervals && best_v + best_ci < run_v - run_ci;
    return MB_OK;
}
