/*
fp8/recipe_parse.h — the recipe's options from strings, as the trainers' -fp8_* flags give them (TE's option names as
keys), each value range-checked: a bad one is a one-line message naming the flag, never a silent default.
*/
#ifndef GPTFP8_RECIPE_PARSE_H
#define GPTFP8_RECIPE_PARSE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "recipe.h"

// A whole-string base-10 integer within [lo, hi]; "12abc", "", " 3" and overflow are errors.
static inline int parse_int_in_range(const char* text, long lo, long hi, const char* flag, long* out, char* err,
                                     size_t errlen) {
    char* end = NULL;
    errno = 0;
    long value = (text && *text && *text != ' ') ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *text == ' ' || errno == ERANGE || end == text || *end != '\0') {
        snprintf(err, errlen, "invalid value '%s' for %s: expected an integer in [%ld, %ld]", text ? text : "(null)",
                 flag, lo, hi);
        return -1;
    }
    if (value < lo || value > hi) {
        snprintf(err, errlen, "invalid value '%s' for %s: must be in [%ld, %ld]", text, flag, lo, hi);
        return -1;
    }
    *out = value;
    return 0;
}

static inline int parse_fp8_recipe_format(const char* text, const char* flag, Fp8RecipeFormat* out, char* err,
                                          size_t errlen) {
    if (text && strcasecmp(text, "hybrid") == 0) { *out = FP8_RECIPE_HYBRID; return 0; }
    if (text && strcasecmp(text, "e4m3") == 0) { *out = FP8_RECIPE_E4M3; return 0; }
    if (text && strcasecmp(text, "e5m2") == 0) { *out = FP8_RECIPE_E5M2; return 0; }
    snprintf(err, errlen, "invalid value '%s' for %s: expected one of hybrid, e4m3, e5m2", text ? text : "(null)",
             flag);
    return -1;
}

static inline int parse_amax_compute_algo(const char* text, const char* flag, AmaxComputeAlgo* out, char* err,
                                          size_t errlen) {
    if (text && strcmp(text, "max") == 0) { *out = AMAX_COMPUTE_MAX; return 0; }
    if (text && strcmp(text, "most_recent") == 0) { *out = AMAX_COMPUTE_MOST_RECENT; return 0; }
    snprintf(err, errlen, "invalid value '%s' for %s: expected one of max, most_recent", text ? text : "(null)", flag);
    return -1;
}

static inline int parse_fp8_scaling_recipe(const char* text, const char* flag, Fp8ScalingRecipe* out, char* err,
                                           size_t errlen) {
    for (int r = 0; r < FP8_NUM_SCALING_RECIPES; r++) {
        if (text && strcmp(text, fp8_scaling_recipe_names[r]) == 0) {
            *out = (Fp8ScalingRecipe)r;
            return 0;
        }
    }
    snprintf(err, errlen, "invalid value '%s' for %s: expected one of delayed, current, blockwise, mxfp8",
             text ? text : "(null)", flag);
    return -1;
}

// A whole-string finite float within [lo, hi].
static inline int parse_float_in_range(const char* text, float lo, float hi, const char* flag, float* out, char* err,
                                       size_t errlen) {
    char* end = NULL;
    errno = 0;
    float value = text && *text && *text != ' ' ? strtof(text, &end) : 0.0f;
    if (!text || !*text || *text == ' ' || errno == ERANGE || end == text || *end != '\0' || !(value == value) ||
        value < lo || value > hi) {
        snprintf(err, errlen, "invalid value '%s' for %s: expected a number in [%g, %g]", text ? text : "(null)", flag,
                 (double)lo, (double)hi);
        return -1;
    }
    *out = value + 0.0f;  // -0 is 0
    return 0;
}

// Set one option from its string value. `key` is the TE option name; `fprop`, `dgrad`, `wgrad` take the trainer's
// sense (1 = that GEMM in FP8, 0 = BF16 override). `flag` is how the caller names it in messages ("-fp8_margin").
static inline int fp8_recipe_set(Fp8Recipe* recipe, const char* key, const char* value, const char* flag, char* err,
                                 size_t errlen) {
    long v = 0;
    if (strcmp(key, "margin") == 0) {
        if (parse_int_in_range(value, 0, FP8_MARGIN_MAX, flag, &v, err, errlen)) { return -1; }
        recipe->margin = (int)v;
    } else if (strcmp(key, "interval") == 0) {
        if (parse_int_in_range(value, 1, FP8_INTERVAL_MAX, flag, &v, err, errlen)) { return -1; }
        recipe->delayed.interval = (int)v;
    } else if (strcmp(key, "amax_history_len") == 0) {
        if (parse_int_in_range(value, 1, FP8_AMAX_HISTORY_LEN_MAX, flag, &v, err, errlen)) { return -1; }
        recipe->delayed.amax_history_len = (int)v;
    } else if (strcmp(key, "fp8_format") == 0) {
        return parse_fp8_recipe_format(value, flag, &recipe->fp8_format, err, errlen);
    } else if (strcmp(key, "amax_compute_algo") == 0) {
        return parse_amax_compute_algo(value, flag, &recipe->delayed.amax_compute_algo, err, errlen);
    } else if (strcmp(key, "fprop") == 0 || strcmp(key, "dgrad") == 0 || strcmp(key, "wgrad") == 0) {
        if (parse_int_in_range(value, 0, 1, flag, &v, err, errlen)) { return -1; }
        int* override = key[0] == 'f' ? &recipe->override_fprop
                      : key[0] == 'd' ? &recipe->override_dgrad : &recipe->override_wgrad;
        *override = v ? 0 : 1;
    } else if (strcmp(key, "reduce_amax") == 0) {
        if (parse_int_in_range(value, 0, 1, flag, &v, err, errlen)) { return -1; }
        recipe->delayed.reduce_amax = (int)v;
    } else if (strcmp(key, "amax_epsilon") == 0) {
        return parse_float_in_range(value, 0.0f, FP8_AMAX_EPSILON_MAX, flag, &recipe->blockwise.amax_epsilon, err,
                                    errlen);
    } else if (strcmp(key, "pow2_scales") == 0) {  // TE's power_2_scale
        if (parse_int_in_range(value, 0, 1, flag, &v, err, errlen)) { return -1; }
        recipe->blockwise.power_2_scale = (int)v;
    } else {
        snprintf(err, errlen, "unknown FP8 recipe option '%s' (%s)", key, flag);
        return -1;
    }
    return 0;
}

#endif  // GPTFP8_RECIPE_PARSE_H
