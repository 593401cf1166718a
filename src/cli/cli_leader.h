/* Finding the leaders from a client (the CLI): the Dispatcher's RPC address
 * and the REST endpoint's URL, through the HA services (standalone: the
 * configured ones), so that commands
 * follow the leading JobManager. Main thread. */
#ifndef SPATE_CLI_CLI_LEADER_H
#define SPATE_CLI_CLI_LEADER_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

enum cli_leader { CLI_LEADER_DISPATCHER, CLI_LEADER_REST };

/* Waits up to timeout_ms for the current leader's address ("host:port/
 * dispatcher", or "http://host:port"). Standalone: the configured one. */
int cli_find_leader(const struct config *conf, enum cli_leader which, char *out, size_t size,
                    int64_t timeout_ms, spate_error *err);

#endif
