/* Internal text helpers shared by the library's source files. */
#ifndef MIGBENCH_TEXT_INTERNAL_H
#define MIGBENCH_TEXT_INTERNAL_H

#include <stddef.h>

/*
 * Copies src into dst (cap bytes, cap >= 1), cutting it to fit; always terminates dst. A NULL
 * src copies as "". Unlike snprintf it does not read src past what fits.
 */
void mb__copy_str(char *dst, size_t cap, const char *src);

#endif
