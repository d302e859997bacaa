/* SPDX-License-Identifier: Apache-2.0 */
/* One cell's record through the library's cell.json codec (migbench/api.h). */
#include <stdlib.h>

#include "migbench/api.h"
#include "results/cell.h"

int mb_cell_json(const char *path, char **json, struct mb_error *err)
{
    if (!json)
        return mb_error_set(err, MB_EINVAL, "cell record: NULL result");
    *json = NULL;
    if (!path || !path[0])
        return mb_error_set(err, MB_EINVAL, "cell record: no path");
    return mb__cell_read_json(path, json, err);
}
