/* SPDX-License-Identifier: Apache-2.0 */
/* The running library's version (migbench/version.h). */
#include "migbench/version.h"

const char *mb_version(void)
{
    return MB_VERSION_TEXT;
}

int mb_version_number(void)
{
    return MB_VERSION_NUMBER;
}

int mb_abi_version(void)
{
    return MB_ABI_VERSION;
}
