/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA's nvml.h as the oracle for device/nvml_types.h: every struct size, field offset and
 * size, and constant value restated there, compared with the same expression compiled against
 * NVIDIA's header. Prints every mismatch and every entry skipped because the vendor header
 * predates it, then the function types checked at compile time. Exit 0: all present entries
 * agree; 1: a mismatch.
 */
#include <stdio.h>
#include <string.h>

#include "abi.h"

static int compare(const struct abi_entry *o, const struct abi_entry *v)
{
    if (!v->present) {
        printf("skipped  %-62s (newer than this nvml.h)\n", o->what);
        return 0;
    }
    int bad = o->ours_may_exceed ? o->value < v->value : o->value != v->value;
    bad = bad || o->size != v->size;
    if (bad) {
        printf("MISMATCH %-62s ours %llu (size %llu), NVIDIA's %llu (size %llu)\n", o->what,
               o->value, o->size, v->value, v->size);
        return 1;
    }
    if (o->ours_may_exceed && o->value != v->value)
        printf("larger   %-62s ours %llu >= NVIDIA's %llu (by design)\n", o->what, o->value,
               v->value);
    return 0;
}

int main(void)
{
    if (mb_abi_ours_n != mb_abi_vendor_n) {
        printf("MISMATCH the two tables differ in length (%zu, %zu)\n", mb_abi_ours_n,
               mb_abi_vendor_n);
        return 1;
    }
    printf("vendor header: %s\n", mb_abi_vendor_version);
    int bad = 0;
    size_t skipped = 0;
    for (size_t i = 0; i < mb_abi_ours_n; i++) {
        if (strcmp(mb_abi_ours[i].what, mb_abi_vendor[i].what) != 0) {
            printf("MISMATCH entry %zu: %s vs %s\n", i, mb_abi_ours[i].what, mb_abi_vendor[i].what);
            return 1;
        }
        bad |= compare(&mb_abi_ours[i], &mb_abi_vendor[i]);
        skipped += !mb_abi_vendor[i].present;
    }
    size_t checked = 0;
    for (size_t i = 0; i < mb_abi_fns_n; i++) {
        if (mb_abi_fns[i].checked)
            checked++;
        else
            printf("skipped  function %s (this nvml.h does not declare it)\n", mb_abi_fns[i].name);
    }
    printf("%zu entries compared, %zu skipped, %s; %zu of %zu function prototypes checked by the "
           "compiler\n",
           mb_abi_ours_n - skipped, skipped, bad ? "MISMATCHES above" : "all agree", checked,
           mb_abi_fns_n);
    return bad;
}
