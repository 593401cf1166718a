/* Checkpoint storage (checkpoint_storage.h): pointers parsed and handed to
 * the implementation of their scheme; a job's checkpoint locations. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/checkpoint_storage_int.h"
#include "core/alloc.h"
#include "core/util.h"

struct checkpoint_storage {
    const struct checkpoint_storage_ops *ops;
    char *job_dir; /* <checkpoints dir>/<job id>, in the storage's form */
};

/* Every storage spate has; a pointer without a scheme is a local path. */
static const struct checkpoint_storage_ops *const storages[] = {
    &checkpoint_storage_fs_ops,
};

/* ---- pointers --------------------------------------------------------------------- */

/* The length of p's URI scheme (RFC 3986: a letter, then letters, digits,
 * '+', '-', '.'; then ':' before any '/'), or 0 when p has none. */
static size_t
scheme_len(const char *p)
{
    size_t n = 0;

    if (!isalpha((unsigned char)p[0]))
        return 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '+' || p[n] == '-' || p[n] == '.')
        n++;
    return p[n] == ':' ? n : 0;
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A `file:` URI's path part (after "file:"), %XX decoded (malloc'd). */
static int
file_uri_path(const char *uri, const char *rest, char **out, spate_error *err)
{
    char *path, *w;

    if (rest[0] == '/' && rest[1] == '/') {
        const char *host = rest + 2, *slash = strchr(host, '/');
        size_t hlen = slash ? (size_t)(slash - host) : strlen(host);

        if (slash == NULL)
            return spate_error_set(err, SPATE_EINVAL, "'%s' is a file: URI without a path", uri);
        if (hlen != 0 && !(hlen == 9 && strncasecmp(host, "localhost", 9) == 0))
            return spate_error_set(err, SPATE_EINVAL,
                                   "'%s' names the host '%.*s': file: URIs name local paths "
                                   "(file:///path)",
                                   uri, (int)hlen, host);
        rest = slash;
    }
    path = w = xmalloc(strlen(rest) + 1);
    for (const char *r = rest; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        if (hex_value(r[1]) < 0 || hex_value(r[2]) < 0) {
            free(path);
            return spate_error_set(err, SPATE_EINVAL,
                                   "'%s' has a '%%' that is not followed by two hex digits", uri);
        }
        *w++ = (char)(hex_value(r[1]) << 4 | hex_value(r[2]));
        r += 2;
    }
    *w = '\0';
    *out = path;
    return 0;
}

/* The storage of pointer and its path in the storage's form. */
static int
storage_for(const char *pointer, const char *base, const struct checkpoint_storage_ops **ops,
            char **out, spate_error *err)
{
    size_t n = pointer ? scheme_len(pointer) : 0;
    char *path = NULL;
    size_t len;
    int rc;

    if (pointer == NULL || pointer[0] == '\0')
        return spate_error_set(err, SPATE_EINVAL, "an empty checkpoint or savepoint path");
    if (n > 0 && !(n == 4 && strncasecmp(pointer, "file", 4) == 0)) {
        for (size_t i = 0; i < ARRAY_SIZE(storages); i++)
            if (strlen(storages[i]->scheme) == n &&
                strncasecmp(pointer, storages[i]->scheme, n) == 0) {
                *ops = storages[i];
                *out = xstrdup(pointer);
                return 0;
            }
        return spate_error_set(err, SPATE_EINVAL,
                               "'%s': the scheme '%.*s' is not supported: checkpoints and "
                               "savepoints are local paths or file: URIs",
                               pointer, (int)n, pointer);
    }
    if (n > 0 && (rc = file_uri_path(pointer, pointer + n + 1, &path, err)) != 0)
        return rc;
    if (path == NULL)
        path = xstrdup(pointer);
    if (path[0] == '\0') {
        free(path);
        return spate_error_set(err, SPATE_EINVAL, "'%s' names no path", pointer);
    }
    if (path[0] != '/') {
        char *abs;

        if (base == NULL) {
            rc = spate_error_set(err, SPATE_EINVAL,
                                 "'%s' is not an absolute path (file:///path or /path)", pointer);
            free(path);
            return rc;
        }
        abs = xasprintf("%s/%s", base, path);
        free(path);
        path = abs;
    }
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    *ops = &checkpoint_storage_fs_ops;
    *out = path;
    return 0;
}

int
checkpoint_storage_path(const char *pointer, const char *base, char **path, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;

    return storage_for(pointer, base, &ops, path, err);
}

int
checkpoint_storage_resolve(const char *pointer, char **metadata, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *path;
    int rc;

    if ((rc = storage_for(pointer, NULL, &ops, &path, err)) != 0)
        return rc;
    rc = ops->resolve(path, metadata, err);
    free(path);
    return rc;
}

int
checkpoint_storage_read(const char *pointer, Checkpoint__CheckpointMetadata **md, char **metadata,
                        spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *path, *file = NULL;
    int rc;

    if ((rc = storage_for(pointer, NULL, &ops, &path, err)) != 0)
        return rc;
    if ((rc = ops->resolve(path, &file, err)) == 0)
        rc = ops->read_metadata(file, md, err);
    if (rc == 0 && metadata != NULL) {
        *metadata = file;
        file = NULL;
    }
    free(file);
    free(path);
    return rc;
}

int
checkpoint_storage_dispose_savepoint(const char *pointer, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *path, *file = NULL;
    int rc;

    if ((rc = storage_for(pointer, NULL, &ops, &path, err)) != 0)
        return rc;
    if ((rc = ops->resolve(path, &file, err)) == 0)
        rc = ops->dispose_savepoint(file, err);
    free(file);
    free(path);
    return rc;
}

int
checkpoint_storage_init_savepoint(const char *target, const spate_id *job, char **location,
                                  spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    spate_id rnd;
    char *dir, *name;
    int rc;

    if ((rc = storage_for(target, NULL, &ops, &dir, err)) != 0)
        return rc;
    id_random(&rnd);
    name =
        xasprintf(CHECKPOINT_STORAGE_SAVEPOINT_PREFIX "%.6s-%.12s", id_str(job).s, id_str(&rnd).s);
    rc = ops->init_location(dir, name, location, err);
    free(name);
    free(dir);
    return rc;
}

/* ---- locations -------------------------------------------------------------------- */

int
checkpoint_storage_state_file(const char *location, const spate_id *vertex, int subtask,
                              char **path, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *loc;
    int rc;

    if ((rc = storage_for(location, NULL, &ops, &loc, err)) != 0)
        return rc;
    *path = ops->state_file(loc, vertex, subtask);
    free(loc);
    return 0;
}

char *
checkpoint_storage_shared_dir(const char *location)
{
    const struct checkpoint_storage_ops *ops;
    spate_error err = { 0 };
    char *loc, *slash, *dir;

    if (storage_for(location, NULL, &ops, &loc, &err) != 0)
        return NULL;
    slash = strrchr(loc, '/');
    dir = slash != NULL && slash != loc
              ? xasprintf("%.*s/%s", (int)(slash - loc), loc, CHECKPOINT_STORAGE_SHARED_DIR)
              : NULL;
    free(loc);
    return dir;
}

int
checkpoint_storage_write_metadata(const char *location, const Checkpoint__CheckpointMetadata *md,
                                  char **metadata, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *loc;
    int rc;

    if ((rc = storage_for(location, NULL, &ops, &loc, err)) != 0)
        return rc;
    rc = ops->write_metadata(loc, md, metadata, err);
    free(loc);
    return rc;
}

int
checkpoint_storage_dispose_location(const char *location, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    char *loc;
    int rc;

    if ((rc = storage_for(location, NULL, &ops, &loc, err)) != 0)
        return rc;
    rc = ops->dispose_location(loc, err);
    free(loc);
    return rc;
}

/* ---- a job's checkpoints ---------------------------------------------------------- */

int
checkpoint_storage_new(const char *checkpoints_dir, const spate_id *job,
                       struct checkpoint_storage **out, spate_error *err)
{
    const struct checkpoint_storage_ops *ops;
    struct checkpoint_storage *s;
    char *dir;
    int rc;

    if ((rc = storage_for(checkpoints_dir, NULL, &ops, &dir, err)) != 0)
        return spate_error_wrap(err, "state.checkpoints.dir");
    s = xcalloc(1, sizeof *s);
    s->ops = ops;
    s->job_dir = xasprintf("%s/%s", dir, id_str(job).s);
    free(dir);
    *out = s;
    return 0;
}

void
checkpoint_storage_free(struct checkpoint_storage *s)
{
    if (s == NULL)
        return;
    free(s->job_dir);
    free(s);
}

const char *
checkpoint_storage_job_dir(const struct checkpoint_storage *s)
{
    return s->job_dir;
}

int
checkpoint_storage_init_checkpoint(const struct checkpoint_storage *s, uint64_t id, char **location,
                                   spate_error *err)
{
    char name[32];

    snprintf(name, sizeof name, CHECKPOINT_STORAGE_CHK_PREFIX "%llu", (unsigned long long)id);
    return s->ops->init_location(s->job_dir, name, location, err);
}

int
checkpoint_storage_list(const struct checkpoint_storage *s, uint64_t **ids, size_t *n,
                        spate_error *err)
{
    return s->ops->list_checkpoints(s->job_dir, ids, n, err);
}

int
checkpoint_storage_dispose_checkpoint(const struct checkpoint_storage *s, uint64_t id,
                                      spate_error *err)
{
    char *loc =
        xasprintf("%s/" CHECKPOINT_STORAGE_CHK_PREFIX "%llu", s->job_dir, (unsigned long long)id);
    int rc = s->ops->dispose_location(loc, err);

    free(loc);
    return rc;
}

void
checkpoint_storage_dispose_job(const struct checkpoint_storage *s)
{
    s->ops->remove_if_empty(s->job_dir);
}
