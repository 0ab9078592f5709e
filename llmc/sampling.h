/*
llmc/sampling.h — text generation, shared by both trainers: each supplies the model's next-token distribution, the
loop (a sliding window of T tokens, one uniform number per token) and the printing (logs stay valid UTF-8 text) are
the same.
*/
#ifndef GPTFP8_SAMPLING_H
#define GPTFP8_SAMPLING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "tokenizer.h"
#include "utils.h"

// probs (V) = the model's distribution of the token after position t - 1 of tokens (1, T)
typedef void (*NextTokenProbs)(void* model, const int* tokens, int t, float* probs);

// The length of the valid UTF-8 sequence at s (2 to 4 bytes, no overlong forms, surrogates or code points past
// U+10FFFF), or 0 when s does not start one. s is NUL-terminated, so a cut-off sequence stops at a byte that is not
// a continuation byte.
static inline int utf8_sequence_length(const unsigned char* s) {
    int n;
    unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
    if (s[0] >= 0xc2 && s[0] <= 0xdf) { n = 2; }
    else if (s[0] >= 0xe0 && s[0] <= 0xef) { n = 3; if (s[0] == 0xe0) { lo = 0xa0; } if (s[0] == 0xed) { hi = 0x9f; } }
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) { n = 4; if (s[0] == 0xf0) { lo = 0x90; } if (s[0] == 0xf4) { hi = 0x8f; } }
    else { return 0; }
    if (s[1] < lo || s[1] > hi) { return 0; }
    for (int i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) { return 0; }
    }
    return n;
}

// Prints a decoded token so that logs stay text (valid UTF-8 without control characters): newline, tab, printable
// ASCII and whole UTF-8 sequences as they are; every other byte (control bytes, DEL, a byte of a UTF-8 character cut
// across tokens, a byte that is not UTF-8 at all) as \xHH.
static inline void print_token_piece(FILE* out, const char* piece) {
    const unsigned char* c = (const unsigned char*)piece;
    while (*c) {
        int n = *c >= 0x80 ? utf8_sequence_length(c) : 0;
        if (n > 0) {
            fwrite(c, 1, (size_t)n, out);
            c += n;
            continue;
        }
        if (*c >= 0x80 || (*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f) { fprintf(out, "\\x%02x", *c); }
        else { fputc(*c, out); }
        c++;
    }
}

// Generates gen_tokens tokens after an end-of-text token and prints them to `out` as they come. The model sees a
// window of T tokens (its sequence length): once the window is full it slides by one token per new token, so a sample
// may be longer than T. Evaluation mode: the trainer turns amax recording off around this. One uniform number per token.
static inline void sample_text_with(FILE* out, void* model, NextTokenProbs next_token_probs, int T, int V,
                             const Tokenizer* tokenizer, int gen_tokens, Rng* rng) {
    int* tokens = (int*)calloc_or_die((size_t)T, sizeof(int), "sample tokens");  // (T) the window
    float* probs = (float*)calloc_or_die((size_t)V, sizeof(float), "sample probabilities");  // (V)
    int eot = tokenizer->eot_token;  // tokenizer_init checked it against the vocabulary, run_setup the vocabulary against V
    for (int i = 0; i < T; i++) { tokens[i] = eot; }
    fprintf(out, "generating:\n---\n");
    int filled = 1;  // tokens[0, filled) are known: the model predicts the token after them
    for (int i = 0; i < gen_tokens; i++) {
        next_token_probs(model, tokens, filled, probs);
        float coin = rng_uniform(rng), cdf = 0.0f;
        int next = V - 1;
        for (int v = 0; v < V; v++) {
            cdf += probs[v];
            if (coin < cdf) { next = v; break; }
        }
        if (filled < T) {
            tokens[filled++] = next;
        } else {  // the window is full: drop its oldest token
            memmove(tokens, tokens + 1, (size_t)(T - 1) * sizeof(int));
            tokens[T - 1] = next;
        }
        const char* piece = tokenizer_decode(tokenizer, (uint32_t)next);
        if (piece) { print_token_piece(out, piece); }
        fflush(out);
    }
    fprintf(out, "\n---\n");
    free(probs);
    free(tokens);
}

#endif  // GPTFP8_SAMPLING_H
