/* SHA-256 (OpenSSL's libcrypto): content addresses of job libraries and blobs,
 * and the handshake's secret proof. Thread-safe; a context belongs to its
 * caller. */
#ifndef SPATE_CORE_SHA256_H
#define SPATE_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#define SHA256_BYTES   32
#define SHA256_HEX_LEN 64

struct sha256_ctx {
    void *evp; /* EVP_MD_CTX */
};

void sha256_init(struct sha256_ctx *ctx);
void sha256_update(struct sha256_ctx *ctx, const void *data, size_t len);
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_BYTES]);

void sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES]);
/* The digest of a whole file, read in blocks. */
int sha256_file(const char *path, uint8_t out[SHA256_BYTES], spate_error *err);
/* 64 lowercase hex digits and a NUL. */
char *sha256_hex(const uint8_t digest[SHA256_BYTES], char out[SHA256_HEX_LEN + 1]);
/* Compares in constant time (secrets). */
int sha256_equal(const uint8_t a[SHA256_BYTES], const uint8_t b[SHA256_BYTES]);

#endif
