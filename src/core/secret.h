/* The cluster's shared secret (security.rpc.secret), which every RPC, data
 * and blob connection proves in its handshake. A daemon resolves it once at
 * start: the key's value if set (an empty value turns authentication off,
 * with a warning); else the file security.rpc.secret-file (default
 * ~/.spate/secret), made with a fresh random secret, readable by its owner
 * only, when it does not exist yet (as Erlang's cookie): every process of
 * one user on one host shares it without configuration. Blocking; the
 * thread that builds the configuration. */
#ifndef SPATE_CORE_SECRET_H
#define SPATE_CORE_SECRET_H

#include <spate/error.h>

#include "core/config.h"

/* Sets security.rpc.secret in conf from the file when the key is unset. A
 * secret file that others may read, or that cannot be made, is an error
 * naming the file and the fix. */
int secret_resolve(struct config *conf, spate_error *err);

/* Reads a file holding secrets (this one, REST tokens and credentials)
 * into out (NUL-terminated); refused when it is not a regular file of this
 * user's that only this user may read and write, or holds cap bytes or
 * more. */
int secret_file_read(const char *path, char *out, size_t cap, spate_error *err);

#endif
