/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog and its H100-80GB model as a cmocka group fixture, for the planner's tests:
 * cmocka_run_group_tests(tests, setup, teardown) with `cat` and `h100` set in between.
 * Header-only: each test includes it once.
 */
#ifndef MB_TEST_H100_FIXTURE_H
#define MB_TEST_H100_FIXTURE_H

#include "migbench/catalog.h"

static struct mb_catalog *cat;
static const struct mb_gpu_model *h100;

static int setup(void **state)
{
    (void)state;
    struct mb_error err;
    if (mb_catalog_create(&cat, &err) != MB_OK)
        return -1;
    return mb_catalog_find(cat, "H100-80GB", &h100, &err) == MB_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    mb_catalog_destroy(cat);
    return 0;
}

#endif
