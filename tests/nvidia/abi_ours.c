/* SPDX-License-Identifier: Apache-2.0 */
/* abi_list.h compiled against our restatement (device/nvml_types.h). */
#include "abi.h"
#include "abi_list.h"
#include "device/nvml_types.h"

#define ABI_PRESENT(g) 1
const struct abi_entry mb_abi_ours[] = {MB_ABI_LIST(ABI_ST, ABI_FI, ABI_CO, ABI_GE, ABI_GS)};
const size_t mb_abi_ours_n = sizeof(mb_abi_ours) / sizeof(mb_abi_ours[0]);
