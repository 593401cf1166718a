/* The deterministic data of the benchmarks (identical in every
 * system): the counter-based generator h(seed, j), the word-count text, the
 * keyed-window tuples and the YSB-like events. Header only; pure functions. */
#ifndef SPATE_BENCH_DATA_H
#define SPATE_BENCH_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t
bench_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z;
}

static inline uint64_t
bench_h(uint64_t seed, uint64_t j)
{
    return bench_mix64(seed * 0xD1B54A32D192ED03ULL + (j + 1) * 0x9E3779B97F4A7C15ULL);
}

#define BENCH_VOCAB      10000
#define BENCH_WORD_MAX   12
#define BENCH_LINE_WORDS 10

/* The vocabulary: word v has length 3 + h(1, 16v) % 10 and letter i is
 * 'a' + h(1, 16v + 1 + i) % 26. */
struct bench_vocab {
    char words[BENCH_VOCAB][BENCH_WORD_MAX + 1];
    uint8_t len[BENCH_VOCAB];
};

static inline void
bench_vocab_init(struct bench_vocab *v)
{
    for (uint64_t w = 0; w < BENCH_VOCAB; w++) {
        size_t len = 3 + bench_h(1, 16 * w) % 10;

        for (size_t i = 0; i < len; i++)
            v->words[w][i] = (char)('a' + bench_h(1, 16 * w + 1 + i) % 26);
        v->words[w][len] = '\0';
        v->len[w] = (uint8_t)len;
    }
}

/* Line l: 10 words vocab[h(2, 10l + p) % 10000] separated by single spaces,
 * without the newline. Returns its length; buf holds at least 10 * 13 bytes. */
static inline size_t
bench_line(const struct bench_vocab *v, uint64_t l, char *buf)
{
    size_t n = 0;

    for (uint64_t p = 0; p < BENCH_LINE_WORDS; p++) {
        uint64_t w = bench_h(2, 10 * l + p) % BENCH_VOCAB;

        if (p > 0)
            buf[n++] = ' ';
        memcpy(buf + n, v->words[w], v->len[w]);
        n += v->len[w];
    }
    return n;
}

#endif
