/* SPDX-License-Identifier: Apache-2.0 */
/* Internal text helpers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/text_internal.h"

void mb__copy_str(char *dst, size_t cap, const char *src)
{
    if (!src)
        src = "";
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static size_t slot_of(const char *key, size_t mask)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return (size_t)(h ^ (h >> 32)) & mask;
}

static int grow(struct mb__strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    char **keys = calloc(cap, sizeof(*keys));
    size_t *vals = calloc(cap, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot_of(m->keys[i], cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int mb__strmap_put(struct mb__strmap *m, const char *key, size_t *val)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t j = slot_of(key, m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            *val = m->vals[j];
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = strdup(key);
    if (!m->keys[j])
        return -1;
    m->vals[j] = *val;
    m->n++;
    return 0;
}

void mb__strmap_clear(struct mb__strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    *m = (struct mb__strmap){0};
}
