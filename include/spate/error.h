/* Error codes and the error object of spate's C API.
 * Functions that can fail return 0 or a negative SPATE_E* code; system errors
 * are -errno. An optional spate_error carries a readable message. */
#ifndef SPATE_ERROR_H
#define SPATE_ERROR_H

#include <errno.h>
#include <stdarg.h>

#include <spate/export.h>

/* X(name, value, description). System errors keep their -errno values, as in
 * libuv; spate's own codes live below -4000. */
#define SPATE_ERRNO_MAP(X)                                 \
    X(EPERM, -EPERM, "operation not permitted")            \
    X(ENOENT, -ENOENT, "no such file or directory")        \
    X(EIO, -EIO, "i/o error")                              \
    X(E2BIG, -E2BIG, "argument list too long")             \
    X(ENOMEM, -ENOMEM, "out of memory")                    \
    X(EACCES, -EACCES, "permission denied")                \
    X(EBUSY, -EBUSY, "resource busy")                      \
    X(EEXIST, -EEXIST, "already exists")                   \
    X(EINVAL, -EINVAL, "invalid argument")                 \
    X(ENOSPC, -ENOSPC, "no space left on device")          \
    X(EPIPE, -EPIPE, "broken pipe")                        \
    X(ERANGE, -ERANGE, "value out of range")               \
    X(EAGAIN, -EAGAIN, "resource temporarily unavailable") \
    X(EPROTO, -EPROTO, "protocol error")                   \
    X(EMSGSIZE, -EMSGSIZE, "message too long")             \
    X(EADDRINUSE, -EADDRINUSE, "address already in use")   \
    X(ECONNRESET, -ECONNRESET, "connection reset by peer") \
    X(ECONNREFUSED, -ECONNREFUSED, "connection refused")   \
    X(ETIMEDOUT, -ETIMEDOUT, "timed out")                  \
    X(ECANCELED, -ECANCELED, "operation canceled")         \
    X(ENOTSUP, -ENOTSUP, "operation not supported")        \
    X(ECONFIG, -4001, "invalid configuration")             \
    X(ESTATE, -4002, "illegal state")                      \
    X(EFENCED, -4003, "fencing token rejected")            \
    X(ENOENDPOINT, -4004, "unknown endpoint")              \
    X(ENOMETHOD, -4005, "unknown method")                  \
    X(EREMOTE, -4006, "remote error")                      \
    X(ECONNLOST, -4007, "connection lost")                 \
    X(EJOB, -4008, "job failed")                           \
    X(EUSER, -4009, "user code failed")

enum {
#define SPATE_ERRNO_ENUM(name, value, desc) SPATE_##name = (value),
    SPATE_ERRNO_MAP(SPATE_ERRNO_ENUM)
#undef SPATE_ERRNO_ENUM
};

#define SPATE_ERROR_MESSAGE_MAX 512

/* A failure's code and message, in the caller's storage. */
typedef struct spate_error {
    int code;
    char message[SPATE_ERROR_MESSAGE_MAX];
} spate_error;

/* Records code and message in err (which may be NULL) and returns code, so
 * that `return spate_error_set(err, SPATE_EIO, "cannot open '%s'", p);` reads
 * as one statement. */
SPATE_API int spate_error_set(spate_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
SPATE_API int spate_error_setv(spate_error *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Prefixes err's message with "<fmt>: ", keeping its code; returns the code. */
SPATE_API int spate_error_wrap(spate_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
SPATE_API void spate_error_clear(spate_error *err);

/* "invalid argument"; never NULL, also for unknown codes. */
SPATE_API const char *spate_strerror(int code);
/* "SPATE_EINVAL"; never NULL. */
SPATE_API const char *spate_err_name(int code);

#endif
