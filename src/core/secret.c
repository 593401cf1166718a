/* The cluster's shared secret (secret.h): the key, or the secret file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/secret.h"

#define SECRET_BYTES 32   /* drawn at random: 64 hex digits in the file */
#define SECRET_MAX   1024 /* longest secret read from a file */

/* "~/x" with the user's home folder. */
static int
secret_expand(const char *path, char *out, size_t cap, spate_error *err)
{
    const char *home;

    if (path[0] != '~' || (path[1] != '/' && path[1] != '\0')) {
        snprintf(out, cap, "%s", path);
        return 0;
    }
    home = getenv("HOME");
    if (home == NULL || home[0] == '\0') {
        struct passwd *pw = getpwuid(getuid());

        home = pw != NULL ? pw->pw_dir : NULL;
    }
    if (home == NULL)
        return spate_error_set(err, SPATE_ECONFIG,
                               "security.rpc.secret-file '%s': no home folder to expand '~' "
                               "(set HOME, security.rpc.secret-file or security.rpc.secret)",
                               path);
    if ((size_t)snprintf(out, cap, "%s%s", home, path + 1) >= cap)
        return spate_error_set(err, SPATE_ECONFIG, "security.rpc.secret-file '%s' is too long",
                               path);
    return 0;
}

/* Makes the file with a fresh secret unless it exists; racing processes
 * agree: the first link wins and the others read its file. */
static int
secret_create(const char *path, spate_error *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 32], text[2 * SECRET_BYTES + 2];
    unsigned char raw[SECRET_BYTES];
    size_t got = 0;
    char *slash;
    int fd, rc;

    snprintf(dir, sizeof dir, "%s", path);
    if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST && (rc = fs_mkdirs(dir, err)) != 0)
            return spate_error_wrap(err, "cannot make the folder of security.rpc.secret-file");
    }
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);

        if (n < 0 && errno != EINTR)
            return spate_error_set(err, -errno, "no random bytes for a secret: %s",
                                   spate_strerror(-errno));
        if (n > 0)
            got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    text[2 * SECRET_BYTES] = '\n';
    text[2 * SECRET_BYTES + 1] = '\0';
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return spate_error_set(err, -errno,
                               "cannot make the secret file '%s': %s (set security.rpc.secret "
                               "or security.rpc.secret-file)",
                               path, spate_strerror(-errno));
    rc = write(fd, text, strlen(text)) == (ssize_t)strlen(text) && fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    if (rc == 0 && link(tmp, path) != 0 && errno != EEXIST)
        rc = -errno;
    unlink(tmp);
    if (rc != 0)
        return spate_error_set(err, rc, "cannot write the secret file '%s': %s", path,
                               spate_strerror(rc));
    return 0;
}

int
secret_file_read(const char *path, char *out, size_t cap, spate_error *err)
{
    struct stat st;
    ssize_t n;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return spate_error_set(err, -errno, "cannot read the secret file '%s': %s", path,
                               spate_strerror(-errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return spate_error_set(err, SPATE_ECONFIG, "the secret file '%s' is not a regular file",
                               path);
    }
    if ((st.st_mode & 077) != 0 || st.st_uid != getuid()) {
        close(fd);
        return spate_error_set(err, SPATE_ECONFIG,
                               "the secret file '%s' may be read by others (mode %04o, owner "
                               "%u): make it the owner's alone (chmod 600)",
                               path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
    }
    if (st.st_size >= (off_t)cap) {
        close(fd);
        return spate_error_set(err, SPATE_ECONFIG,
                               "the secret file '%s' has %lld bytes, more than %zu", path,
                               (long long)st.st_size, cap - 1);
    }
    n = read(fd, out, cap - 1);
    close(fd);
    if (n < 0)
        return spate_error_set(err, -errno, "cannot read the secret file '%s': %s", path,
                               spate_strerror(-errno));
    out[n] = '\0';
    return 0;
}

int
secret_resolve(struct config *conf, spate_error *err)
{
    const char *file, *value;
    char path[PATH_MAX], secret[SECRET_MAX + 1], origin[PATH_MAX + 16];
    int rc;

    if (config_is_set(conf, CFG(SECURITY_RPC_SECRET))) {
        if ((rc = config_get_string(conf, CFG(SECURITY_RPC_SECRET), &value, err)) != 0)
            return rc;
        if (value[0] == '\0')
            SPATE_LOG_WARN("security",
                           "security.rpc.secret is empty: RPC, data and blob connections are "
                           "not authenticated, and whoever reaches these ports controls the "
                           "cluster");
        return 0;
    }
    if ((rc = config_get_string(conf, CFG(SECURITY_RPC_SECRET_FILE), &file, err)) != 0 ||
        (rc = secret_expand(file, path, sizeof path, err)) != 0)
        return rc;
    if (access(path, F_OK) != 0 && (rc = secret_create(path, err)) != 0)
        return rc;
    if ((rc = secret_file_read(path, secret, sizeof secret, err)) != 0)
        return rc;
    secret[strcspn(secret, "\r\n")] = '\0';
    if (secret[0] == '\0')
        return spate_error_set(err, SPATE_ECONFIG, "the secret file '%s' is empty", path);
    snprintf(origin, sizeof origin, "file %s", path);
    config_set(conf, CFG(SECURITY_RPC_SECRET)->key, secret, origin);
    explicit_bzero(secret, sizeof secret);
    return 0;
}
