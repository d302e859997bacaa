/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MIG geometry algebra: which sets of GPU instances a GPU model allows, and where each one sits.
 *
 * A layout is a set of GPU instances of one model, each a profile of that model at one of the
 * profile's placements. It is valid when no two instances share a memory slice, no profile is
 * used more often than its max_count, at most one "+me" instance is present (the +me profiles
 * exclude each other), the instances need no more compute slices than the GPU has, and there are
 * at most max_gpu_instances of them. Everything works on the catalog's placement tables; values the
 * catalog marks as inferred stay inferred (see catalog.h).
 *
 * All functions are pure computations on caller-owned data: no allocation that outlives a call,
 * safe to call from several threads on distinct or const data.
 */
#ifndef MIGBENCH_LAYOUT_H
#define MIGBENCH_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migbench/catalog.h"
#include "migbench/status.h"

/* The most GPU instances a layout can hold (one per memory slice at most). */
#define MB_LAYOUT_MAX MB_MAX_MEMORY_SLICES
/* Longest reason text produced by mb_layout_explain. */
#define MB_LAYOUT_REASON_MAX 320

/* One GPU instance: an index into model->profiles and a placement in memory slices. */
struct mb_layout_item {
    unsigned profile;
    struct mb_placement placement;
};

/* A layout. Items are kept largest first (the creation order) by the functions below. */
struct mb_layout {
    size_t n;
    struct mb_layout_item items[MB_LAYOUT_MAX];
};

/* Flags of mb_layout_enumerate. */
enum {
    MB_LAYOUT_MAXIMAL = 0, /* only layouts to which no instance of a considered profile fits */
    MB_LAYOUT_ALL = 1,     /* every non-empty valid layout */
};

/*
 * The default profile set, as a bit mask over model->profiles (bit i = profile i): every profile
 * except the "+me" media variants.
 */
uint32_t mb_layout_default_profiles(const struct mb_gpu_model *model);

/*
 * Calls fn once for every valid layout that uses only the profiles in `profiles` (a bit mask as
 * above; 0 means the default set), maximal ones only unless flags has MB_LAYOUT_ALL. Layouts come
 * in a stable order (those with larger instances first) and each exactly once; the layout passed to
 * fn is valid only during the call. If fn returns non-zero, enumeration stops and that value is
 * returned; otherwise MB_OK, with the number of layouts in *count (count may be NULL). MB_EINVAL
 * for a mask naming profiles the model lacks.
 */
int mb_layout_enumerate(const struct mb_gpu_model *model, uint32_t profiles, unsigned flags,
                        int (*fn)(const struct mb_layout *layout, void *arg), void *arg,
                        size_t *count, struct mb_error *err);

/*
 * Checks a concrete layout: every placement must be one of its profile's placements and the rules
 * above must hold. MB_OK when valid; MB_EINFEASIBLE (or MB_EINVAL for a profile index out of
 * range) with the first broken rule in err.
 */
int mb_layout_validate(const struct mb_gpu_model *model, const struct mb_layout *layout,
                       struct mb_error *err);

/*
 * Finds placements for the instances `add` (n_add profile indices, in any order, repeats allowed)
 * on a GPU that already holds `existing` (NULL or empty for an empty GPU; its placements are taken
 * as they are, even outside the catalog's table, so a live GPU can be described). On success *out
 * holds only the new instances, in creation order (largest first), at the placements that leave
 * the most room for further instances. MB_EINFEASIBLE when they do not fit, with the reasons
 * (mb_layout_explain's, joined by "; ") in err; MB_EINVAL for a bad profile index or for existing
 * instances that overlap each other.
 */
int mb_layout_place(const struct mb_gpu_model *model, const struct mb_layout *existing,
                    const unsigned *add, size_t n_add, struct mb_layout *out, struct mb_error *err);

/*
 * Says why `add` does not fit beside `existing`, in words a user can act on ("only one 4g.40gb
 * fits", "needs 9 memory slices; the GPU has 8", "3g.40gb needs memory slices 0-3 or 4-7; ...").
 * Writes up to cap reasons into reasons[] and their number into *n (0 when it does fit). Returns
 * MB_OK, or MB_EINVAL as mb_layout_place does.
 */
int mb_layout_explain(const struct mb_gpu_model *model, const struct mb_layout *existing,
                      const unsigned *add, size_t n_add, char (*reasons)[MB_LAYOUT_REASON_MAX],
                      size_t cap, size_t *n, struct mb_error *err);

/*
 * The valid layouts nearest to the multiset `want` (fewest instances to drop or add, dropping
 * preferred, then the most compute slices used), drawn from the maximal layouts over the default
 * profiles plus those in want, so that a suggestion never leaves room unused; up to cap of them
 * into out[], their number in *n. MB_EINVAL for a bad profile index.
 */
int mb_layout_nearest(const struct mb_gpu_model *model, const unsigned *want, size_t n_want,
                      struct mb_layout *out, size_t cap, size_t *n, struct mb_error *err);

/* Sorts a layout's items into creation order: largest first, then by start. */
void mb_layout_sort(const struct mb_gpu_model *model, struct mb_layout *layout);

/*
 * Writes a one-line picture of the memory slices into buf (always NUL-terminated when cap > 0):
 * five characters per slice, "[3g----------------]" for a 3g instance over four slices, "[1g+]"
 * for a +me one, " ... " for a free slice. Returns the length the full picture needs.
 */
size_t mb_layout_picture(const struct mb_gpu_model *model, const struct mb_layout *layout,
                         char *buf, size_t cap);

/* Writes a memory-slice range as text: "4" for one slice, "4-7" for several. */
void mb_layout_slices_str(struct mb_placement p, char *buf, size_t cap);

#endif
