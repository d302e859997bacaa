/* SPDX-License-Identifier: Apache-2.0 */
/* Output files written whole: composed in memory, then replaced atomically. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "migbench/fileio.h"

int mb_cli_outfile_open(struct mb_cli_outfile *o, const char *cmd, const char *path)
{
    o->buf = NULL;
    o->len = 0;
    o->path = path;
    o->f = open_memstream(&o->buf, &o->len);
    if (!o->f) {
        mb_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}

void mb_cli_outfile_abort(struct mb_cli_outfile *o)
{
    fclose(o->f);
    free(o->buf);
    o->buf = NULL;
}

int mb_cli_outfile_commit(struct mb_cli_outfile *o, const char *cmd)
{
    /* A memory stream fails only when memory runs out. */
    bool bad = ferror(o->f) != 0;
    if (fclose(o->f) != 0)
        bad = true;
    struct mb_error err;
    mb_error_clear(&err);
    int st = bad ? mb_error_set(&err, MB_ENOMEM, "cannot write %s: out of memory", o->path)
                 : mb_file_write_atomic(o->path, o->buf, o->len, 0666, &err);
    free(o->buf);
    o->buf = NULL;
    if (st != MB_OK) {
        mb_cli_error(cmd, "%s", err.msg);
        return MB_EXIT_FAIL;
    }
    return MB_EXIT_OK;
}
