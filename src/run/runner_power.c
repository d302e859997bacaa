/* SPDX-License-Identifier: Apache-2.0 */
/* A cell's power limit: set through the restore ledger before the cell, restored after it. */
#include "run/runner_power.h"

#include <stdio.h>
#include <string.h>

int mb__cell_power_prepare(struct mb__cell_power *p, const struct mb_runner_opts *o,
                           const struct mb_exp_run *run, struct mb_error *why)
{
    memset(p, 0, sizeof(*p));
    if (run->power_limit.kind == MB_PSET_NONE)
        return MB_OK;
    p->active = true;
    p->requested = run->power_limit;
    snprintf(p->base_run, sizeof(p->base_run), "%s", run->base_run);
    const char *text = run->power_limit.text;
    int rc;
    struct mb_power_limit pl;
    struct mb_error e;
    bool read_ok = mb_device_power_limit(o->dev, &pl, &e) == MB_OK;
    bool settable = (mb_device_caps(o->dev) & MB_CAP_SET_POWER_LIMIT) != 0;
    if (!settable) {
        if (run->power_limit.kind != MB_PSET_DEFAULT)
            return mb_error_set(why, MB_EUNSUPPORTED,
                                "power limit %s: the device cannot set its power limit", text);
        /* The default on a device that cannot change it: nothing to set, only to record. */
        p->enforced_ok = read_ok && (pl.valid & MB_PL_ENFORCED);
        p->enforced_mw = pl.enforced_mw;
        return MB_OK;
    }
    if (!read_ok)
        return mb_error_set(why, e.status, "power limit %s: %s", text, e.msg);
    if ((rc = mb_powercap_resolve(&run->power_limit, &pl, &p->requested_mw, &e)) != MB_OK)
        return mb_error_set(why, rc, "power limit %s: %s", text, e.msg);
    p->requested_ok = true;
    if (!o->power_ledger || !o->power_ledger[0])
        return mb_error_set(why, MB_EUNSUPPORTED,
                            "power limit %s: no restore ledger for this device, so the limit is "
                            "not changed",
                            text);
    struct mb_powercap pc = {o->dev, o->power_ledger, o->power_helper};
    uint32_t enforced = 0;
    if ((rc = mb_powercap_set(&pc, p->requested_mw, &enforced, &e)) != MB_OK)
        return mb_error_set(why, rc, "cannot set the power limit to %s (%u mW): %s", text,
                            p->requested_mw, e.msg);
    p->set = true;
    p->enforced_ok = enforced > 0;
    p->enforced_mw = enforced;
    return MB_OK;
}

int mb__cell_power_restore(struct mb__cell_power *p, const struct mb_runner_opts *o,
                           struct mb_error *why)
{
    if (!p->set || p->restored)
        return MB_OK;
    struct mb_powercap pc = {o->dev, o->power_ledger, o->power_helper};
    struct mb_error e;
    int rc = mb_powercap_restore(&pc, &p->outcome, &e);
    if (rc != MB_OK)
        return mb_error_set(why, rc, "%s (the record stays; the next start restores it)", e.msg);
    p->restored = true;
    return MB_OK;
}
