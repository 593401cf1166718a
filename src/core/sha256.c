/* SHA-256 over OpenSSL's EVP interface (sha256.h). */
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include "core/sha256.h"
#include "core/util.h"

void
sha256_init(struct sha256_ctx *ctx)
{
    EVP_MD_CTX *evp = EVP_MD_CTX_new();

    SPATE_ASSERT(evp != NULL);
    SPATE_ASSERT(EVP_DigestInit_ex(evp, EVP_sha256(), NULL) == 1);
    ctx->evp = evp;
}

void
sha256_update(struct sha256_ctx *ctx, const void *data, size_t len)
{
    SPATE_ASSERT(EVP_DigestUpdate(ctx->evp, data, len) == 1);
}

void
sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_BYTES])
{
    unsigned int n = 0;

    SPATE_ASSERT(EVP_DigestFinal_ex(ctx->evp, out, &n) == 1 && n == SHA256_BYTES);
    EVP_MD_CTX_free(ctx->evp);
    ctx->evp = NULL;
}

void
sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES])
{
    struct sha256_ctx ctx;

    sha256_init(&ctx);
    sha256_update(&ctx, data, len);
    sha256_final(&ctx, out);
}

int
sha256_file(const char *path, uint8_t out[SHA256_BYTES], spate_error *err)
{
    struct sha256_ctx ctx;
    uint8_t buf[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return spate_error_set(err, -errno, "cannot open '%s': %s", path, spate_strerror(-errno));
    sha256_init(&ctx);
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0) {
            int code = -errno;

            if (code == SPATE_EAGAIN || code == -EINTR)
                continue;
            sha256_final(&ctx, out);
            close(fd);
            return spate_error_set(err, code, "cannot read '%s': %s", path, spate_strerror(code));
        }
        sha256_update(&ctx, buf, (size_t)n);
    }
    sha256_final(&ctx, out);
    close(fd);
    return 0;
}

char *
sha256_hex(const uint8_t digest[SHA256_BYTES], char out[SHA256_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 0; i < SHA256_BYTES; i++) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    out[SHA256_HEX_LEN] = '\0';
    return out;
}

int
sha256_equal(const uint8_t a[SHA256_BYTES], const uint8_t b[SHA256_BYTES])
{
    return CRYPTO_memcmp(a, b, SHA256_BYTES) == 0;
}
