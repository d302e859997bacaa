/* Internal text helpers. */
#include <string.h>

#include "text_internal.h"

void mb__copy_str(char *dst, size_t cap, const char *src)
{
    if (!src)
        src = "";
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}
