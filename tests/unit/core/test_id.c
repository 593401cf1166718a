/* Unit tests of src/core/id.c. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <string.h>

#include "core/id.h"

Test(id, random_ids_differ_and_format_as_32_lowercase_hex)
{
    spate_id a, b;
    char text[ID_HEX_LEN + 1];

    id_random(&a);
    id_random(&b);
    cr_assert(!id_equal(&a, &b));
    cr_assert(!id_is_zero(&a));
    id_format(&a, text);
    cr_assert_eq(strlen(text), 32);
    for (int i = 0; i < 32; i++)
        cr_assert(isdigit((unsigned char)text[i]) || (text[i] >= 'a' && text[i] <= 'f'));
}

Test(id, parse_round_trips_and_accepts_upper_case)
{
    spate_id a, b;
    spate_error err;

    id_random(&a);
    cr_assert_eq(id_parse(id_str(&a).s, &b, &err), 0);
    cr_assert(id_equal(&a, &b));
    cr_assert_eq(id_parse("00000000000000000000000000000ABC", &b, &err), 0);
    cr_assert_str_eq(id_str(&b).s, "00000000000000000000000000000abc");
    cr_assert_eq(id_hash(&a), id_hash(&a));
}

Test(id, malformed_ids_are_refused_with_the_reason)
{
    spate_id b;
    spate_error err;

    cr_assert_eq(id_parse("abc", &b, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "expected 32 hex digits") != NULL);
    cr_assert_eq(id_parse("0000000000000000000000000000000g", &b, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "'g' is not a hex digit") != NULL, "%s", err.message);
    cr_assert_eq(id_parse("000000000000000000000000000000000", &b, &err), SPATE_EINVAL);
    cr_assert_eq(id_parse("", &b, &err), SPATE_EINVAL);
}
