/* Error codes and messages (include/spate/error.h). Used by every layer;
 * stateless and thread-safe. */
#include <stdio.h>
#include <string.h>

#include <spate/error.h>

int
spate_error_setv(spate_error *err, int code, const char *fmt, va_list ap)
{
    if (err != NULL) {
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return code;
}

int
spate_error_set(spate_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    spate_error_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int
spate_error_wrap(spate_error *err, const char *fmt, ...)
{
    char prefix[SPATE_ERROR_MESSAGE_MAX];
    char old[SPATE_ERROR_MESSAGE_MAX];
    va_list ap;

    if (err == NULL)
        return SPATE_EINVAL;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    /* Truncation is fine: a message is for people, and stays terminated. */
    if (snprintf(err->message, sizeof err->message, "%s: %s", prefix, old) < 0)
        err->message[0] = '\0';
    return err->code;
}

void
spate_error_clear(spate_error *err)
{
    if (err != NULL) {
        err->code = 0;
        err->message[0] = '\0';
    }
}

const char *
spate_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
#define SPATE_STRERROR_CASE(name, value, desc) \
    case (value):                              \
        return desc;
        SPATE_ERRNO_MAP(SPATE_STRERROR_CASE)
#undef SPATE_STRERROR_CASE
    default:
        if (code < 0 && code > -4000 && strerrordesc_np(-code) != NULL)
            return strerrordesc_np(-code); /* thread-safe, unlike strerror */
        return "unknown error";
    }
}

const char *
spate_err_name(int code)
{
    switch (code) {
    case 0:
        return "OK";
#define SPATE_ERRNAME_CASE(name, value, desc) \
    case (value):                             \
        return "SPATE_" #name;
        SPATE_ERRNO_MAP(SPATE_ERRNAME_CASE)
#undef SPATE_ERRNAME_CASE
    default:
        return "SPATE_EUNKNOWN";
    }
}
