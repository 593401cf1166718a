/* The configuration every spate command starts from: the conf folder's
 * config.yaml (--conf-dir, else $SPATE_CONF_DIR, else conf/ beside the
 * installation), then -D overrides, validated as a whole; and the log level it
 * sets (SPATE_LOG_LEVEL wins). Runs on the main thread at start-up. */
#ifndef SPATE_CLI_CLI_CONFIG_H
#define SPATE_CLI_CLI_CONFIG_H

#include "core/config.h"

struct cli_config_source {
    const char *conf_dir;   /* NULL: $SPATE_CONF_DIR or the default */
    const char **overrides; /* "key=value" from -D */
    int override_count;
};

int cli_config_load(const struct cli_config_source *src, struct config **out, spate_error *err);
/* The folder the configuration came from (NULL when none was found). */
const char *cli_config_dir(void);

#endif
