/* Loading a command's configuration (cli_config.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_config.h"
#include "core/log.h"

static char cli_conf_dir[PATH_MAX];

const char *
cli_config_dir(void)
{
    return cli_conf_dir[0] ? cli_conf_dir : NULL;
}

/* conf/ beside the installation: <dir of the executable>/../conf. */
static int
cli_default_conf_dir(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    if (n <= 0)
        return SPATE_ENOENT;
    exe[n] = '\0';
    if ((slash = strrchr(exe, '/')) == NULL)
        return SPATE_ENOENT;
    *slash = '\0';
    if ((size_t)snprintf(out, size, "%s/../conf", exe) >= size)
        return SPATE_ENOENT;
    return access(out, F_OK) == 0 ? 0 : SPATE_ENOENT;
}

int
cli_config_load(const struct cli_config_source *src, struct config **out, spate_error *err)
{
    struct config *conf = config_new();
    const char *dir = src->conf_dir;
    const char *env_level = getenv("SPATE_LOG_LEVEL");
    enum log_level level;
    char path[PATH_MAX + 32];
    int level_index;
    int rc;

    if (dir == NULL)
        dir = getenv("SPATE_CONF_DIR");
    if (dir != NULL) {
        snprintf(cli_conf_dir, sizeof cli_conf_dir, "%s", dir);
    } else if (cli_default_conf_dir(cli_conf_dir, sizeof cli_conf_dir) != 0) {
        cli_conf_dir[0] = '\0';
    }

    if (cli_conf_dir[0] != '\0') {
        snprintf(path, sizeof path, "%s/config.yaml", cli_conf_dir);
        rc = config_load_file(conf, path, err);
        /* A folder named on purpose must hold a config; the default may not. */
        if (rc != 0 && !(rc == SPATE_ENOENT && dir == NULL))
            goto fail;
    }
    for (int i = 0; i < src->override_count; i++)
        if ((rc = config_apply_override(conf, src->overrides[i], err)) != 0)
            goto fail;
    if ((rc = config_validate(conf, err)) != 0)
        goto fail;

    if ((rc = config_get_enum(conf, CFG(LOG_LEVEL), &level_index, err)) != 0)
        goto fail;
    level = (enum log_level)level_index;
    if (env_level != NULL && *env_level && (rc = log_parse_level(env_level, &level, err)) != 0) {
        spate_error_wrap(err, "SPATE_LOG_LEVEL");
        goto fail;
    }
    log_set_level(level);
    *out = conf;
    return 0;
fail:
    config_free(conf);
    return rc;
}
