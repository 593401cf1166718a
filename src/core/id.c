/* Random 16-byte ids and their hex form (id.h). */
#include <string.h>
#include <sys/random.h>

#include "core/id.h"
#include "core/util.h"

void
id_random(spate_id *id)
{
    size_t got = 0;

    while (got < sizeof id->bytes) {
        ssize_t n = getrandom(id->bytes + got, sizeof id->bytes - got, 0);

        if (n < 0) {
            SPATE_ASSERT(errno == EINTR);
            continue;
        }
        got += (size_t)n;
    }
}

static int
id_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
id_parse(const char *text, spate_id *id, spate_error *err)
{
    size_t len = strnlen(text, ID_HEX_LEN + 1);

    if (len != ID_HEX_LEN)
        return spate_error_set(err, SPATE_EINVAL, "malformed id '%.40s': expected %d hex digits",
                               text, ID_HEX_LEN);
    for (int i = 0; i < ID_BYTES; i++) {
        int hi = id_hexval(text[2 * i]);
        int lo = id_hexval(text[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return spate_error_set(err, SPATE_EINVAL, "malformed id '%s': '%c' is not a hex digit",
                                   text, hi < 0 ? text[2 * i] : text[2 * i + 1]);
        id->bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

char *
id_format(const spate_id *id, char out[ID_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 0; i < ID_BYTES; i++) {
        out[2 * i] = digits[id->bytes[i] >> 4];
        out[2 * i + 1] = digits[id->bytes[i] & 15];
    }
    out[ID_HEX_LEN] = '\0';
    return out;
}

id_text
id_str(const spate_id *id)
{
    id_text t;

    id_format(id, t.s);
    return t;
}

bool
id_equal(const spate_id *a, const spate_id *b)
{
    return memcmp(a->bytes, b->bytes, ID_BYTES) == 0;
}

bool
id_is_zero(const spate_id *id)
{
    static const spate_id zero;

    return id_equal(id, &zero);
}

uint64_t
id_hash(const spate_id *id)
{
    uint64_t h;

    /* Random bytes: any 8 of them are a good hash. */
    memcpy(&h, id->bytes, sizeof h);
    return h;
}
