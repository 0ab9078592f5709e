/*
fp8/test_fp8.c — CPU tests of the FP8 core: the E4M3/E5M2 codec down to the last bit, bf16 rounding, the recipe's
parsing and validation, the delayed-scaling update rule, the quantize/dequantize references, current scaling
(fp8/current.h: the scale from the cast tensor's own amax, with the zero/inf/NaN/overflow rules), and the block
recipes (fp8/block.h: their options and shapes; their casts in every instruction set and thread count, whose values
fp8/test_fp8_blocks.py checks against an independent implementation).

The codec is checked against references written differently from fp8.h: decoding by the textbook formula with ldexp,
encoding by searching all 128 non-negative codes for the nearest value (ties to the even code), so a shared mistake
in bit tricks cannot hide. The update rule is checked against a naive model that keeps every recorded amax in a list.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#else
static inline void omp_set_num_threads(int n) { (void)n; }
static inline int omp_get_max_threads(void) { return 1; }
#endif

#include "../llmc/testing.h"
#include "block.h"
#include "current.h"
#include "meta.h"
#include "quantize_cpu.h"
#include "recipe_parse.h"

// ----------------------------------------------------------------------------
// independent references

// Decode by the definition: (-1)^s * 2^(e-bias) * (1 + m/2^M), subnormal 2^(1-bias) * (m/2^M).
static double ref_decode(uint8_t code, Fp8Format f) {
    int M = f == FP8_E4M3 ? 3 : 2, E = 7 - M, bias = (1 << (E - 1)) - 1;
    int s = code >> 7, e = (code >> M) & ((1 << E) - 1), m = code & ((1 << M) - 1);
    double sign = s ? -1.0 : 1.0;
    if (f == FP8_E4M3 && e == 15 && m == 7) { return NAN; }
    if (f == FP8_E5M2 && e == 31) { return m == 0 ? sign * INFINITY : NAN; }
    if (e == 0) { return sign * ldexp((double)m / (1 << M), 1 - bias); }
    return sign * ldexp(1.0 + (double)m / (1 << M), e - bias);
}

static double ref_table[2][128];  // non-negative decoded values per format, filled once

static void ref_init(void) {
    for (int f = 0; f < 2; f++) {
        for (int c = 0; c < 128; c++) { ref_table[f][c] = ref_decode((uint8_t)c, (Fp8Format)f); }
    }
}

// Encode by search: the nearest finite non-negative code to |x|, ties to the even code; NaN -> 0x7F; >= max -> max.
static uint8_t ref_encode(float x, Fp8Format f) {
    if (isnan(x)) { return 0x7F; }
    uint8_t sign = signbit(x) ? 0x80 : 0x00;
    long double a = fabsl((long double)x);
    // at and above max the nearest finite value is max (and distances to huge inputs would tie in any precision)
    if (a >= (long double)ref_table[f][f == FP8_E4M3 ? 0x7E : 0x7B]) { return (uint8_t)(sign | (f == FP8_E4M3 ? 0x7E : 0x7B)); }
    int best = -1;
    long double best_diff = 0;
    for (int c = 0; c < 128; c++) {
        double v = ref_table[f][c];
        if (isnan(v) || isinf(v)) { continue; }
        long double d = fabsl(a - (long double)v);
        if (best < 0 || d < best_diff || (d == best_diff && (c & 1) == 0)) {
            best = c;
            best_diff = d;
        }
    }
    return (uint8_t)(sign | best);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void) {  // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}
static float rng_uniform(void) { return (rng_u32() >> 8) * (1.0f / 16777216.0f); }

static const Fp8Format formats[2] = {FP8_E4M3, FP8_E5M2};

// Compare fp8_from_float with ref_encode, with NaN codes compared as "both NaN" (fp8_from_float promises 0x7F).
static int encode_matches(float x, Fp8Format f, uint8_t* got_out, uint8_t* want_out) {
    uint8_t got = fp8_from_float(x, f), want = ref_encode(x, f);
    *got_out = got;
    *want_out = want;
    return got == want;
}

// ----------------------------------------------------------------------------
// codec

static void test_decode_all_codes(void) {
    for (int fi = 0; fi < 2; fi++) {
        for (int c = 0; c < 256; c++) {
            float got = fp8_to_float((uint8_t)c, formats[fi]);
            double want = ref_decode((uint8_t)c, formats[fi]);
            if (isnan(want)) {
                CHECK(isnan(got), "%s code 0x%02x should be NaN, got %g", fp8_format_name(formats[fi]), c, got);
            } else {
                CHECK((double)got == want && !!signbit(got) == !!signbit(want), "%s code 0x%02x: got %.9g want %.9g",
                      fp8_format_name(formats[fi]), c, got, want);
            }
        }
    }
    // the documented constants
    CHECK(fp8_to_float(0x7E, FP8_E4M3) == 448.0f, "E4M3 max");
    CHECK(fp8_to_float(0x01, FP8_E4M3) == ldexpf(1.0f, -9), "E4M3 min subnormal");
    CHECK(fp8_to_float(0x08, FP8_E4M3) == ldexpf(1.0f, -6), "E4M3 min normal");
    CHECK(fp8_to_float(0x7B, FP8_E5M2) == 57344.0f, "E5M2 max");
    CHECK(fp8_to_float(0x01, FP8_E5M2) == ldexpf(1.0f, -16), "E5M2 min subnormal");
    CHECK(fp8_to_float(0x04, FP8_E5M2) == ldexpf(1.0f, -14), "E5M2 min normal");
    CHECK(isinf(fp8_to_float(0x7C, FP8_E5M2)) && fp8_to_float(0xFC, FP8_E5M2) < 0, "E5M2 +-inf");
    CHECK(isnan(fp8_to_float(0xFF, FP8_E4M3)) && isnan(fp8_to_float(0x7D, FP8_E5M2)), "NaN codes");
    CHECK(fp8_max(FP8_E4M3) == 448.0f && fp8_max(FP8_E5M2) == 57344.0f, "fp8_max");
}

static void test_encode_all_bf16_patterns(void) {
    for (int fi = 0; fi < 2; fi++) {
        for (uint32_t p = 0; p < 65536; p++) {
            float x = fp8_bits_float(p << 16);
            uint8_t got, want;
            CHECK(encode_matches(x, formats[fi], &got, &want), "%s bf16 0x%04x (%g): got 0x%02x want 0x%02x",
                  fp8_format_name(formats[fi]), p, x, got, want);
        }
    }
}

static void test_encode_random_floats(void) {
    // Half uniformly random bit patterns (covers every exponent), half values near each format's range, where
    // rounding actually happens. 2 x 600k per format.
    for (int fi = 0; fi < 2; fi++) {
        float range = fp8_max(formats[fi]) * 1.1f;
        for (int i = 0; i < 600000; i++) {
            float a = fp8_bits_float(rng_u32());
            float b = (rng_uniform() * 2.0f - 1.0f) * range * ldexpf(1.0f, -(int)(rng_u32() % 24));
            uint8_t got, want;
            CHECK(encode_matches(a, formats[fi], &got, &want), "%s %a: got 0x%02x want 0x%02x",
                  fp8_format_name(formats[fi]), a, got, want);
            CHECK(encode_matches(b, formats[fi], &got, &want), "%s %a: got 0x%02x want 0x%02x",
                  fp8_format_name(formats[fi]), b, got, want);
        }
    }
}

static void test_encode_ties_and_boundaries(void) {
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = formats[fi];
        const char* name = fp8_format_name(f);
        uint8_t max_code = fp8_max_code(f);
        // every midpoint between neighbouring finite codes: ties to the even code; one float either side goes
        // to the nearer neighbour. Both signs.
        for (int c = 0; c < max_code; c++) {
            float lo = fp8_to_float((uint8_t)c, f), hi = fp8_to_float((uint8_t)(c + 1), f);
            float mid = (lo + hi) * 0.5f;  // exact: neighbours differ in the last FP8 bit only
            CHECK((double)mid == ((double)lo + (double)hi) / 2, "%s midpoint not exact", name);
            uint8_t even = (c & 1) ? (uint8_t)(c + 1) : (uint8_t)c;
            for (int s = 0; s < 2; s++) {
                float sg = s ? -1.0f : 1.0f;
                uint8_t sb = s ? 0x80 : 0x00;
                CHECK(fp8_from_float(sg * mid, f) == (sb | even), "%s tie %g -> 0x%02x, want 0x%02x", name,
                      sg * mid, fp8_from_float(sg * mid, f), sb | even);
                CHECK(fp8_from_float(sg * nextafterf(mid, 0.0f), f) == (sb | c), "%s below tie %g", name, mid);
                CHECK(fp8_from_float(sg * nextafterf(mid, INFINITY), f) == (sb | (c + 1)), "%s above tie %g", name,
                      mid);
                CHECK(fp8_from_float(sg * lo, f) == (sb | c), "%s exact value %g", name, lo);
            }
        }
        // saturation: max, the tie above max (rounds to max: even), just above it, far above, +-inf
        float maxv = fp8_max(f);
        float max_ulp = maxv - fp8_to_float((uint8_t)(max_code - 1), f);
        float above[] = {maxv, maxv + max_ulp * 0.5f, nextafterf(maxv + max_ulp * 0.5f, INFINITY), maxv + max_ulp,
                         maxv * 2, 1e30f, FLT_MAX, INFINITY};
        for (size_t i = 0; i < sizeof(above) / sizeof(above[0]); i++) {
            CHECK(fp8_from_float(above[i], f) == max_code, "%s %g should saturate to +max", name, above[i]);
            CHECK(fp8_from_float(-above[i], f) == (0x80 | max_code), "%s %g should saturate to -max", name,
                  -above[i]);
        }
        // subnormal boundaries: half the smallest subnormal ties to 0 (even), anything above goes up
        float min_sub = fp8_to_float(0x01, f);
        CHECK(fp8_from_float(min_sub * 0.5f, f) == 0x00, "%s half min subnormal -> 0", name);
        CHECK(fp8_from_float(-min_sub * 0.5f, f) == 0x80, "%s -half min subnormal -> -0", name);
        CHECK(fp8_from_float(nextafterf(min_sub * 0.5f, 1.0f), f) == 0x01, "%s just above half min sub", name);
        CHECK(fp8_from_float(min_sub * 0.75f, f) == 0x01, "%s 3/4 min subnormal", name);
        CHECK(fp8_from_float(min_sub * 1.5f, f) == 0x02, "%s 1.5 min subnormal ties to even 0x02", name);
        CHECK(fp8_from_float(FLT_MIN, f) == 0x00 && fp8_from_float(-FLT_TRUE_MIN, f) == 0x80, "%s float tiny",
              name);
        CHECK(fp8_from_float(0.0f, f) == 0x00 && fp8_from_float(-0.0f, f) == 0x80, "%s signed zeros", name);
        // NaN of both signs and payloads -> canonical 0x7F
        CHECK(fp8_from_float(NAN, f) == 0x7F && fp8_from_float(-NAN, f) == 0x7F, "%s NaN -> 0x7F", name);
        CHECK(fp8_from_float(fp8_bits_float(0x7F800001u), f) == 0x7F, "%s signalling NaN -> 0x7F", name);
        CHECK(fp8_from_float(fp8_bits_float(0xFFFFFFFFu), f) == 0x7F, "%s negative NaN payload -> 0x7F", name);
    }
    // the documented thresholds, spelled out
    CHECK(fp8_from_float(464.0f, FP8_E4M3) == 0x7E && fp8_from_float(465.0f, FP8_E4M3) == 0x7E, "E4M3 464/465");
    CHECK(fp8_from_float(61440.0f, FP8_E5M2) == 0x7B, "E5M2 61440 saturates");
    CHECK(fp8_from_float(ldexpf(1.0f, -10), FP8_E4M3) == 0x00, "E4M3 2^-10 -> 0");
    CHECK(fp8_from_float(ldexpf(1.0f, -17), FP8_E5M2) == 0x00, "E5M2 2^-17 -> 0");
    CHECK(fp8_from_float(ldexpf(15.0f, -10), FP8_E4M3) == 0x08, "E4M3 7.5 * 2^-9 -> min normal");
}

static void test_round_trip_exact(void) {
    // every finite code decodes to a float that encodes back to the same code
    for (int fi = 0; fi < 2; fi++) {
        for (int c = 0; c < 256; c++) {
            float v = fp8_to_float((uint8_t)c, formats[fi]);
            if (isnan(v) || isinf(v)) { continue; }
            CHECK(fp8_from_float(v, formats[fi]) == c, "%s code 0x%02x round trip", fp8_format_name(formats[fi]), c);
        }
    }
}

static void test_bf16_rounding(void) {
    // reference: round the 32-bit pattern to the nearest multiple of 2^16 in value, ties to even, by search over the
    // two candidates in double
    for (int i = 0; i < 1000000; i++) {
        uint32_t bits = rng_u32();
        float x = fp8_bits_float(bits);
        uint16_t got = bf16_from_float(x);
        if (isnan(x)) {
            CHECK(isnan(bf16_to_float(got)), "NaN stays NaN");
            continue;
        }
        uint16_t down = (uint16_t)(bits >> 16), up = (uint16_t)(down + 1);
        double dx = x, dd = bf16_to_float(down), du = bf16_to_float(up);
        uint16_t want;
        if (isinf(x)) {
            want = down;
        } else if (isnan(du) || isinf(du)) {  // rounding up would overflow: RNE decides by distance to 2^128
            double next = ldexp(signbit(x) ? -1.0 : 1.0, 128);
            double e_down = fabs(dx - dd), e_up = fabs(next - dx);
            want = (e_up < e_down || (e_up == e_down && (up & 1) == 0)) ? (uint16_t)(down + 1) : down;
            if (isnan(du)) { want = down; }  // cannot happen for finite x; keeps the model total
        } else {
            double e_down = fabs(dx - dd), e_up = fabs(du - dx);
            want = (e_up < e_down || (e_up == e_down && (up & 1) == 0)) ? up : down;
        }
        CHECK(got == want, "bf16 of %a: got 0x%04x want 0x%04x", x, got, want);
    }
    CHECK(bf16_round(1.0f + ldexpf(1.0f, -8)) == 1.0f, "tie to even down");
    CHECK(bf16_round(1.0f + 3 * ldexpf(1.0f, -8)) == 1.0f + ldexpf(1.0f, -6), "tie to even up");
    CHECK(isinf(bf16_round(FLT_MAX)), "FLT_MAX rounds to inf in bf16 (no saturation)");
    CHECK(isnan(bf16_round(NAN)), "NaN");
}

// ----------------------------------------------------------------------------
// recipe

static void test_recipe_defaults_and_parse(void) {
    Fp8Recipe r;
    fp8_recipe_default(&r);
    CHECK(r.scaling == FP8_SCALING_DELAYED && r.margin == 0 && r.fp8_format == FP8_RECIPE_HYBRID && !r.override_fprop &&
              !r.override_dgrad && !r.override_wgrad && r.delayed.interval == 1 && r.delayed.amax_history_len == 1024 &&
              r.delayed.amax_compute_algo == AMAX_COMPUTE_MAX && r.delayed.reduce_amax == 1 &&
              !r.delayed.amax_compute_fn && !r.delayed.scaling_factor_compute_fn,
          "TE defaults");
    CHECK(fp8_recipe_forward_format(&r) == FP8_E4M3 && fp8_recipe_backward_format(&r) == FP8_E5M2,
          "HYBRID is E4M3 forward, E5M2 backward");
    char err[256];
    CHECK(fp8_recipe_set(&r, "fp8_format", "e4m3", "-fp8", err, sizeof(err)) == 0, "%s", err);
    CHECK(fp8_recipe_backward_format(&r) == FP8_E4M3, "E4M3 everywhere");
    CHECK(fp8_recipe_set(&r, "fp8_format", "E5M2", "-fp8", err, sizeof(err)) == 0, "%s", err);
    CHECK(fp8_recipe_forward_format(&r) == FP8_E5M2, "E5M2 everywhere");
    CHECK(fp8_recipe_set(&r, "fp8_format", "HYBRID", "-fp8", err, sizeof(err)) == 0, "%s", err);
    CHECK(fp8_recipe_set(&r, "margin", "3", "-fp8_margin", err, sizeof(err)) == 0 && r.margin == 3, "margin");
    CHECK(fp8_recipe_set(&r, "interval", "4", "-fp8_interval", err, sizeof(err)) == 0 && r.delayed.interval == 4, "iv");
    CHECK(fp8_recipe_set(&r, "amax_history_len", "16", "-fp8_amax_history_len", err, sizeof(err)) == 0 &&
              r.delayed.amax_history_len == 16, "len");
    CHECK(fp8_recipe_set(&r, "amax_compute_algo", "most_recent", "-fp8_amax_compute_algo", err, sizeof(err)) ==
                  0 && r.delayed.amax_compute_algo == AMAX_COMPUTE_MOST_RECENT, "algo");
    CHECK(fp8_recipe_set(&r, "fprop", "0", "-fp8_fprop", err, sizeof(err)) == 0 && r.override_fprop == 1,
          "-fp8_fprop 0 means override_linear_precision.fprop = True");
    CHECK(fp8_recipe_set(&r, "wgrad", "1", "-fp8_wgrad", err, sizeof(err)) == 0 && r.override_wgrad == 0, "w");
    CHECK(fp8_recipe_set(&r, "reduce_amax", "0", "-fp8_reduce_amax", err, sizeof(err)) == 0 &&
              r.delayed.reduce_amax == 0, "reduce");
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == 0, "valid after parsing: %s", err);
    char line[1024];
    FILE* mem = fmemopen(line, sizeof(line), "w");
    fp8_recipe_print(&r, mem);
    fclose(mem);
    CHECK(strstr(line, "margin=3") && strstr(line, "interval=4") && strstr(line, "amax_history_len=16") &&
              strstr(line, "most_recent") && strstr(line, "fprop=bf16") && strstr(line, "fwd E4M3, bwd E5M2"),
          "banner: %s", line);
}

static void test_recipe_rejects_bad_values(void) {
    struct { const char *key, *value, *flag, *must_say; } bad[] = {
        {"margin", "-1", "-fp8_margin", "[0, 64]"},
        {"margin", "65", "-fp8_margin", "-fp8_margin"},
        {"margin", "abc", "-fp8_margin", "expected an integer"},
        {"margin", "", "-fp8_margin", "-fp8_margin"},
        {"margin", "1.5", "-fp8_margin", "'1.5'"},
        {"margin", "99999999999999999999", "-fp8_margin", "expected an integer"},
        {"interval", "0", "-fp8_interval", "[1, 1000000]"},
        {"interval", "3x", "-fp8_interval", "-fp8_interval"},
        {"amax_history_len", "0", "-fp8_amax_history_len", "[1, 65536]"},
        {"amax_history_len", "65537", "-fp8_amax_history_len", "-fp8_amax_history_len"},
        {"fp8_format", "e3m4", "-fp8", "hybrid, e4m3, e5m2"},
        {"fp8_format", "", "-fp8", "-fp8"},
        {"amax_compute_algo", "mean", "-fp8_amax_compute_algo", "max, most_recent"},
        {"amax_compute_algo", "MAX ", "-fp8_amax_compute_algo", "'MAX '"},
        {"fprop", "2", "-fp8_fprop", "[0, 1]"},
        {"dgrad", "yes", "-fp8_dgrad", "-fp8_dgrad"},
        {"wgrad", "-1", "-fp8_wgrad", "[0, 1]"},
        {"reduce_amax", "true", "-fp8_reduce_amax", "-fp8_reduce_amax"},
        {"no_such_option", "1", "-fp8_foo", "unknown"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        Fp8Recipe r;
        fp8_recipe_default(&r);
        Fp8Recipe before = r;
        char err[256] = "";
        int rc = fp8_recipe_set(&r, bad[i].key, bad[i].value, bad[i].flag, err, sizeof(err));
        CHECK(rc == -1, "%s '%s' accepted", bad[i].key, bad[i].value);
        CHECK(strstr(err, bad[i].must_say) != NULL && strstr(err, bad[i].flag) != NULL && !strchr(err, '\n'),
              "message for %s '%s' should name the flag and say '%s', got: %s", bad[i].key, bad[i].value,
              bad[i].must_say, err);
        CHECK(memcmp(&r, &before, sizeof(r)) == 0, "a rejected value must not change the recipe (%s)", bad[i].key);
    }
    // structs built in code
    Fp8Recipe r;
    char err[256];
    fp8_recipe_default(&r);
    r.delayed.amax_compute_algo = AMAX_COMPUTE_CALLBACK;
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1 && strstr(err, "amax_compute_fn"), "callback w/o fn");
    fp8_recipe_default(&r);
    r.delayed.interval = 0;
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1 && strstr(err, "interval"), "interval 0");
    fp8_recipe_default(&r);
    r.delayed.amax_history_len = -5;
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1 && strstr(err, "amax_history_len"), "len");
    fp8_recipe_default(&r);
    r.margin = -2;
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1 && strstr(err, "margin"), "margin");
    fp8_recipe_default(&r);
    r.override_dgrad = 7;
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1, "override must be 0/1");
    fp8_recipe_default(&r);
    r.delayed.amax_history_len = 0;
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 4, &r, err, sizeof(err)) == -1, "meta init rejects a bad recipe");
}

// ----------------------------------------------------------------------------
// update rule

static Fp8Recipe recipe_with(int len, AmaxComputeAlgo algo, int margin, int interval, Fp8RecipeFormat f) {
    Fp8Recipe r;
    fp8_recipe_default(&r);
    r.delayed.amax_history_len = len;
    r.delayed.amax_compute_algo = algo;
    r.margin = margin;
    r.delayed.interval = interval;
    r.fp8_format = f;
    return r;
}

// TE's numeric scenarios, for a forward (E4M3) and a backward (E5M2) slot of one module.
static void test_update_te_scenarios(void) {
    char err[256];
    for (int margin = 0; margin <= 3; margin++) {
        Fp8Recipe r = recipe_with(4, AMAX_COMPUTE_MAX, margin, 1, FP8_RECIPE_HYBRID);
        Fp8Meta meta;
        CHECK(fp8_meta_init(&meta, 1, &r, err, sizeof(err)) == 0, "%s", err);
        int slots[2] = {fp8_meta_fwd_slot(&meta, 0, FP8_FWD_INPUT), fp8_meta_bwd_slot(&meta, 0, FP8_BWD_GRAD_OUTPUT)};
        float maxes[2] = {448.0f, 57344.0f};
        for (int k = 0; k < 2; k++) {
            int s = slots[k];
            float fmax = maxes[k];
            CHECK(fp8_meta_slot_format(&meta, s) == (k ? FP8_E5M2 : FP8_E4M3), "slot format");
            // zero amax: previous scale, no roll
            meta.scale[s] = 3.0f;
            meta.scale_inv[s] = 1.0f / 3.0f;
            meta.amax_history[(size_t)2 * meta.num_slots + s] = 5.0f;  // something in the window
            fp8_meta_update(&meta, &r, 0);
            CHECK(meta.scale[s] == 3.0f && meta.amax_history[(size_t)2 * meta.num_slots + s] == 5.0f,
                  "zero amax keeps the scale and does not roll");
            meta.amax_history[(size_t)2 * meta.num_slots + s] = 0.0f;
            // normal amax
            *fp8_meta_amax_row0(&meta, s) = 2.5f;
            fp8_meta_update(&meta, &r, 0);
            float want = (fmax / 2.5f) / ldexpf(1.0f, margin);
            CHECK(meta.scale[s] == want && meta.scale_inv[s] == 1.0f / want, "margin %d: scale %g want %g", margin,
                  meta.scale[s], want);
            CHECK(meta.amax_history[s] == 0.0f && meta.amax_history[(size_t)3 * meta.num_slots + s] == 2.5f,
                  "rolled into the last row, row 0 zeroed");
            // tiny amax: the quotient overflows -> FLT_MAX. Needs a window holding only the tiny value.
            for (int row = 0; row < 4; row++) { meta.amax_history[(size_t)row * meta.num_slots + s] = 0.0f; }
            *fp8_meta_amax_row0(&meta, s) = fmax / FLT_MAX / 2.0f;
            fp8_meta_update(&meta, &r, 0);
            if (margin == 0) {
                CHECK(meta.scale[s] == FLT_MAX, "tiny amax gives FLT_MAX, got %g", meta.scale[s]);
            } else {  // 2^margin brings it back into range
                CHECK(isfinite(meta.scale[s]) && meta.scale[s] > FLT_MAX / 16, "tiny amax with margin");
            }
            CHECK(meta.scale_inv[s] > 0.0f, "scale_inv stays positive");
            // inf and NaN amax: previous scale (but the value is recorded and rolls)
            float before = meta.scale[s];
            for (int row = 0; row < 4; row++) { meta.amax_history[(size_t)row * meta.num_slots + s] = 0.0f; }
            *fp8_meta_amax_row0(&meta, s) = INFINITY;
            fp8_meta_update(&meta, &r, 0);
            CHECK(meta.scale[s] == before, "inf amax keeps the scale");
            for (int row = 0; row < 4; row++) { meta.amax_history[(size_t)row * meta.num_slots + s] = 0.0f; }
            *fp8_meta_amax_row0(&meta, s) = NAN;
            fp8_meta_update(&meta, &r, 0);
            CHECK(meta.scale[s] == before, "NaN amax keeps the scale");
            CHECK(isnan(meta.amax_history[(size_t)3 * meta.num_slots + s]), "NaN recorded");
        }
        fp8_meta_free(&meta);
    }
    // the pieces directly
    CHECK(fp8_compute_scale(0.0f, 7.0f, 448.0f, 0) == 7.0f, "0");
    CHECK(fp8_compute_scale(-1.0f, 7.0f, 448.0f, 0) == 7.0f, "negative");
    CHECK(fp8_compute_scale(INFINITY, 7.0f, 448.0f, 0) == 7.0f, "inf");
    CHECK(fp8_compute_scale(NAN, 7.0f, 448.0f, 0) == 7.0f, "nan");
    CHECK(fp8_compute_scale(448.0f / FLT_MAX / 2, 7.0f, 448.0f, 0) == FLT_MAX, "FLT_MAX");
    CHECK(fp8_compute_scale(1.0f, 7.0f, 57344.0f, 2) == 14336.0f, "57344/1/4");
    CHECK(fp8_compute_scale(FLT_MAX, 7.0f, 448.0f, 0) == 448.0f / FLT_MAX, "largest finite amax");
}

static void test_update_rotation_order(void) {
    // history_len 4, one slot followed explicitly: TE's [a_N, a_1, a_2, a_3] -> [0, a_2, a_3, a_N]
    char err[256];
    Fp8Recipe r = recipe_with(4, AMAX_COMPUTE_MAX, 0, 1, FP8_RECIPE_HYBRID);
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 2, &r, err, sizeof(err)) == 0, "%s", err);
    int s = fp8_meta_fwd_slot(&meta, 1, FP8_FWD_WEIGHT);
    CHECK(s == 4, "module 1 weight is column 4");
    CHECK(fp8_meta_bwd_slot(&meta, 1, FP8_BWD_GRAD_INPUT) == 9, "module 1 grad_input is column 3M+3 = 9");
    float col[4] = {40.0f, 10.0f, 20.0f, 30.0f};
    for (int row = 0; row < 4; row++) { meta.amax_history[(size_t)row * meta.num_slots + s] = col[row]; }
    fp8_meta_update(&meta, &r, 0);
    float want[4] = {0.0f, 20.0f, 30.0f, 40.0f};
    for (int row = 0; row < 4; row++) {
        CHECK(meta.amax_history[(size_t)row * meta.num_slots + s] == want[row], "row %d: %g want %g", row,
              meta.amax_history[(size_t)row * meta.num_slots + s], want[row]);
    }
    CHECK(meta.scale[s] == 448.0f / 40.0f, "max over the window before the roll (includes the oldest, 10 < 40)");
    // the same with the max in the oldest row: it still counts, then drops out
    float col2[4] = {1.0f, 100.0f, 2.0f, 3.0f};
    for (int row = 0; row < 4; row++) { meta.amax_history[(size_t)row * meta.num_slots + s] = col2[row]; }
    fp8_meta_update(&meta, &r, 0);
    CHECK(meta.scale[s] == 448.0f / 100.0f, "oldest row counts in this update");
    *fp8_meta_amax_row0(&meta, s) = 1.0f;
    fp8_meta_update(&meta, &r, 1);
    CHECK(meta.scale[s] == 448.0f / 3.0f, "then it is gone: window is {1, 2, 3, 1}");
    // every other column untouched
    for (int row = 0; row < 4; row++) {
        for (int c = 0; c < meta.num_slots; c++) {
            if (c != s) { CHECK(meta.amax_history[(size_t)row * meta.num_slots + c] == 0.0f, "other columns"); }
        }
    }
    fp8_meta_free(&meta);
}

static void test_update_history_len_1(void) {
    char err[256];
    Fp8Recipe r = recipe_with(1, AMAX_COMPUTE_MAX, 0, 1, FP8_RECIPE_HYBRID);
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 1, &r, err, sizeof(err)) == 0, "%s", err);
    float amaxes[5] = {3.0f, 0.5f, 0.0f, 8.0f, 1.0f};
    float expect_scale = 1.0f;
    for (int step = 0; step < 5; step++) {
        *fp8_meta_amax_row0(&meta, 0) = amaxes[step];
        fp8_meta_update(&meta, &r, step);
        if (amaxes[step] > 0) { expect_scale = 448.0f / amaxes[step]; }
        CHECK(meta.scale[0] == expect_scale, "len 1 step %d: scale %g want %g", step, meta.scale[0], expect_scale);
        CHECK(meta.amax_history[0] == 0.0f, "len 1: the only row is the staging row, zeroed");
    }
    fp8_meta_free(&meta);
}

// The naive model: every recorded (non-zero) amax of one slot in a list. The window of an update is this step's amax
// plus the last len-1 recorded ones; the history matrix must read [0, L[-(len-1)], ..., L[-1]].
static void test_update_random_against_naive(void) {
    char err[256];
    enum { STEPS = 3000, MODULES = 3 };
    int lens[4] = {1, 2, 7, 32};
    for (int li = 0; li < 4; li++) {
        for (int algo = 0; algo < 2; algo++) {
            int len = lens[li], margin = (int)(rng_u32() % 4), interval = 1 + (int)(rng_u32() % 3);
            Fp8Recipe r = recipe_with(len, (AmaxComputeAlgo)algo, margin, interval, FP8_RECIPE_HYBRID);
            Fp8Meta meta;
            CHECK(fp8_meta_init(&meta, MODULES, &r, err, sizeof(err)) == 0, "%s", err);
            int S = meta.num_slots;
            float* recorded = calloc((size_t)S * STEPS, sizeof(float));  // (S, STEPS)
            int* count = calloc((size_t)S, sizeof(int));
            float* scale = malloc((size_t)S * sizeof(float));
            for (int s = 0; s < S; s++) { scale[s] = 1.0f; }
            int mismatches = 0;
            for (int step = 0; step < STEPS; step++) {
                float now[MODULES * 5];
                for (int s = 0; s < S; s++) {
                    uint32_t u = rng_u32();
                    // 1 in 8: slot unused this step; else amaxes spread over 10 octaves, occasionally tiny
                    now[s] = (u % 8 == 0) ? 0.0f : ldexpf(0.5f + rng_uniform(), (int)(u % 11) - 5 - (u % 97 == 1) * 130);
                    // quantizations max-reduce into row 0: feed two values, the model takes their max
                    float other = now[s] * rng_uniform();
                    float* row0 = fp8_meta_amax_row0(&meta, s);
                    *row0 = fp8_amax_merge(*row0, now[s]);
                    *row0 = fp8_amax_merge(*row0, other);
                }
                fp8_meta_update(&meta, &r, step);
                for (int s = 0; s < S; s++) {
                    float a = now[s];
                    if (a == 0.0f) { continue; }
                    if (step % interval == 0) {
                        float amax = a;
                        if (algo == AMAX_COMPUTE_MAX) {
                            for (int k = count[s] - 1; k >= 0 && k >= count[s] - (len - 1); k--) {
                                float v = recorded[(size_t)s * STEPS + k];
                                amax = v > amax ? v : amax;
                            }
                        }
                        float fmax = s < 3 * MODULES ? 448.0f : 57344.0f;
                        double q = (double)fmax / (double)amax;  // same two roundings as fp8_compute_scale
                        float sc = (float)((double)(float)q / ldexp(1.0, margin));
                        if (isinf(sc) || sc > FLT_MAX) { sc = FLT_MAX; }
                        scale[s] = sc;
                    }
                    recorded[(size_t)s * STEPS + count[s]++] = a;
                }
                for (int s = 0; s < S; s++) {
                    if (meta.scale[s] != scale[s] || meta.scale_inv[s] != 1.0f / scale[s]) { mismatches++; }
                    for (int row = 0; row < len; row++) {
                        int k = count[s] - len + row;  // row 1 holds L[count-(len-1)], row len-1 holds L[count-1]
                        float want = (row == 0 || k < 0) ? 0.0f : recorded[(size_t)s * STEPS + k];
                        if (meta.amax_history[(size_t)row * S + s] != want) { mismatches++; }
                    }
                }
            }
            CHECK(mismatches == 0, "len %d algo %s margin %d interval %d: %d mismatches", len,
                  amax_compute_algo_name((AmaxComputeAlgo)algo), margin, interval, mismatches);
            free(recorded);
            free(count);
            free(scale);
            fp8_meta_free(&meta);
        }
    }
}

static void test_update_interval(void) {
    char err[256];
    Fp8Recipe r = recipe_with(8, AMAX_COMPUTE_MAX, 0, 3, FP8_RECIPE_HYBRID);
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 1, &r, err, sizeof(err)) == 0, "%s", err);
    // amaxes 1, 2, 4, 8, 16, 32, 64: scales recomputed at the end of steps 0, 3 and 6 only
    float want_scale[7] = {448.0f, 448.0f, 448.0f, 448.0f / 8, 448.0f / 8, 448.0f / 8, 448.0f / 64};
    for (int step = 0; step < 7; step++) {
        *fp8_meta_amax_row0(&meta, 0) = (float)(1 << step);
        fp8_meta_update(&meta, &r, step);
        CHECK(meta.scale[0] == want_scale[step], "interval 3, step %d: scale %g want %g", step, meta.scale[0],
              want_scale[step]);
        // histories roll on every step regardless
        CHECK(meta.amax_history[7 * meta.num_slots] == (float)(1 << step) && meta.amax_history[0] == 0.0f,
              "interval 3, step %d: rolled", step);
    }
    // with most_recent, a non-update step's amax is not used later
    Fp8Recipe m = recipe_with(8, AMAX_COMPUTE_MOST_RECENT, 0, 2, FP8_RECIPE_HYBRID);
    Fp8Meta meta2;
    CHECK(fp8_meta_init(&meta2, 1, &m, err, sizeof(err)) == 0, "%s", err);
    float amaxes[4] = {1.0f, 100.0f, 2.0f, 50.0f};
    float want_mr[4] = {448.0f, 448.0f, 224.0f, 224.0f};
    for (int step = 0; step < 4; step++) {
        *fp8_meta_amax_row0(&meta2, 0) = amaxes[step];
        fp8_meta_update(&meta2, &m, step);
        CHECK(meta2.scale[0] == want_mr[step], "most_recent interval 2 step %d: %g want %g", step, meta2.scale[0],
              want_mr[step]);
    }
    CHECK(fp8_is_scale_update_step(0, 5) && !fp8_is_scale_update_step(4, 5) && fp8_is_scale_update_step(5, 5),
          "update steps are multiples of interval");
    fp8_meta_free(&meta);
    fp8_meta_free(&meta2);
}

typedef struct {
    int amax_calls, scale_calls;
    const Fp8Recipe* seen_recipe;
} CallbackLog;

// mean of the window's non-zero rows (a made-up algorithm the built-ins cannot produce)
static float amax_mean_callback(const float* column, int len, int stride, void* user) {
    CallbackLog* log = (CallbackLog*)user;
    log->amax_calls++;
    float sum = 0.0f;
    int n = 0;
    for (int row = 0; row < len; row++) {
        if (column[(size_t)row * stride] > 0) {
            sum += column[(size_t)row * stride];
            n++;
        }
    }
    return sum / (float)n;
}

static float scale_halving_callback(float amax, float old_scale, float fp8_max_value, const Fp8Recipe* recipe,
                                    void* user) {
    CallbackLog* log = (CallbackLog*)user;
    log->scale_calls++;
    log->seen_recipe = recipe;
    (void)old_scale;
    return fp8_max_value / amax * 0.5f;
}

static void test_update_callbacks(void) {
    char err[256];
    CallbackLog log = {0, 0, NULL};
    Fp8Recipe r = recipe_with(4, AMAX_COMPUTE_CALLBACK, 0, 1, FP8_RECIPE_HYBRID);
    r.delayed.amax_compute_fn = amax_mean_callback;
    r.delayed.callback_user = &log;
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 2, &r, err, sizeof(err)) == 0, "%s", err);
    int s = fp8_meta_fwd_slot(&meta, 0, FP8_FWD_INPUT);
    *fp8_meta_amax_row0(&meta, s) = 2.0f;
    fp8_meta_update(&meta, &r, 0);
    *fp8_meta_amax_row0(&meta, s) = 6.0f;
    fp8_meta_update(&meta, &r, 1);
    CHECK(log.amax_calls == 2, "amax callback called once per used slot per update, got %d", log.amax_calls);
    CHECK(meta.scale[s] == 448.0f / 4.0f, "scale from the callback's amax (mean of 2 and 6): %g", meta.scale[s]);
    CHECK(meta.amax_history[3 * meta.num_slots + s] == 6.0f && meta.amax_history[s] == 0.0f, "still rolls");
    // the scaling-factor callback, with the built-in max
    r.delayed.amax_compute_algo = AMAX_COMPUTE_MAX;
    r.delayed.scaling_factor_compute_fn = scale_halving_callback;
    int g = fp8_meta_bwd_slot(&meta, 1, FP8_BWD_GRAD_OUTPUT);
    *fp8_meta_amax_row0(&meta, g) = 8.0f;
    fp8_meta_update(&meta, &r, 2);
    CHECK(log.scale_calls == 1 && log.seen_recipe == &r, "scale callback called once with the recipe");
    CHECK(meta.scale[g] == 57344.0f / 8.0f * 0.5f && meta.scale_inv[g] == 1.0f / meta.scale[g],
          "scale from the callback: %g", meta.scale[g]);
    CHECK(meta.scale[s] == 448.0f / 4.0f, "unused slot untouched by the callback path");
    fp8_meta_free(&meta);
}

static void test_update_many_modules_one_call(void) {
    char err[256];
    enum { M = 12 };
    Fp8Recipe r = recipe_with(5, AMAX_COMPUTE_MAX, 1, 1, FP8_RECIPE_HYBRID);
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, M, &r, err, sizeof(err)) == 0, "%s", err);
    CHECK(meta.num_slots == 5 * M && meta.num_floats == (size_t)(5 + 2) * 5 * M, "one buffer of (len+2)*5M floats");
    CHECK(meta.scale == meta.memory + 5 * 5 * M && meta.scale_inv == meta.scale + 5 * M, "layout");
    for (int m = 0; m < M; m++) {
        for (int k = 0; k < 3; k++) { *fp8_meta_amax_row0(&meta, fp8_meta_fwd_slot(&meta, m, k)) = (float)(m + 1); }
        for (int k = 0; k < 2; k++) {
            *fp8_meta_amax_row0(&meta, fp8_meta_bwd_slot(&meta, m, k)) = (float)(m + 1) * 1000.0f;
        }
    }
    // leave module 5's output and grad_input unused
    *fp8_meta_amax_row0(&meta, fp8_meta_fwd_slot(&meta, 5, FP8_FWD_OUTPUT)) = 0.0f;
    *fp8_meta_amax_row0(&meta, fp8_meta_bwd_slot(&meta, 5, FP8_BWD_GRAD_INPUT)) = 0.0f;
    fp8_meta_update(&meta, &r, 0);
    for (int m = 0; m < M; m++) {
        for (int k = 0; k < 3; k++) {
            int s = fp8_meta_fwd_slot(&meta, m, k);
            float want = (m == 5 && k == FP8_FWD_OUTPUT) ? 1.0f : 448.0f / (float)(m + 1) / 2.0f;
            CHECK(meta.scale[s] == want, "fwd module %d tensor %d: %g want %g", m, k, meta.scale[s], want);
        }
        for (int k = 0; k < 2; k++) {
            int s = fp8_meta_bwd_slot(&meta, m, k);
            float want = (m == 5 && k == FP8_BWD_GRAD_INPUT) ? 1.0f : 57344.0f / ((float)(m + 1) * 1000.0f) / 2.0f;
            CHECK(meta.scale[s] == want, "bwd module %d tensor %d: %g want %g", m, k, meta.scale[s], want);
        }
    }
    for (int s = 0; s < meta.num_slots; s++) { CHECK(meta.amax_history[s] == 0.0f, "row 0 zeroed everywhere"); }
    fp8_meta_free(&meta);
}

// A skipped step's end (fp8_meta_drop_step_amaxes): row 0 of every input, output, grad_output and grad_input slot
// zeroed, the weights' row 0 kept (each module's, found by fp8_meta_fwd_slot, not by the rule's arithmetic), and
// nothing else touched: no older row, no scale, no scale_inv.
static void test_drop_step_amaxes(void) {
    char err[256];
    enum { M = 7 };
    Fp8Recipe r = recipe_with(4, AMAX_COMPUTE_MAX, 0, 1, FP8_RECIPE_HYBRID);
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, M, &r, err, sizeof(err)) == 0, "%s", err);
    for (size_t i = 0; i < meta.num_floats; i++) { meta.memory[i] = (float)(i + 1); }
    float* before = (float*)malloc(meta.num_floats * sizeof(float));
    memcpy(before, meta.memory, meta.num_floats * sizeof(float));
    fp8_meta_drop_step_amaxes(&meta);
    int kept = 0;
    for (int m = 0; m < M; m++) {
        for (int k = 0; k < FP8_FWD_SLOTS; k++) {
            int s = fp8_meta_fwd_slot(&meta, m, k);
            float want = k == FP8_FWD_WEIGHT ? before[s] : 0.0f;
            CHECK(meta.amax_history[s] == want, "module %d forward tensor %d: row 0 %g, want %g", m, k,
                  meta.amax_history[s], want);
            kept += k == FP8_FWD_WEIGHT && fp8_slot_kept_when_skipped(s, M);
        }
        for (int k = 0; k < FP8_BWD_SLOTS; k++) {
            int s = fp8_meta_bwd_slot(&meta, m, k);
            CHECK(meta.amax_history[s] == 0.0f, "module %d backward tensor %d: row 0 zeroed", m, k);
        }
    }
    CHECK(kept == M, "the rule keeps each module's weight slot (%d of %d)", kept, M);
    size_t rest = (size_t)meta.num_slots;  // row 0 ends here: older rows, scales and scale_invs unchanged
    CHECK(memcmp(meta.memory + rest, before + rest, (meta.num_floats - rest) * sizeof(float)) == 0,
          "older rows, scales and scale_invs untouched");
    free(before);
    fp8_meta_free(&meta);
}

typedef struct {
    int calls;
    float* other_rank_row0;  // a second simulated rank's row 0
} ReduceSim;

static void reduce_max_with_other_rank(float* row0, int num_slots, void* user) {
    ReduceSim* sim = (ReduceSim*)user;
    sim->calls++;
    for (int s = 0; s < num_slots; s++) {
        float m = fp8_amax_merge(row0[s], sim->other_rank_row0[s]);
        row0[s] = m;
        sim->other_rank_row0[s] = m;
    }
}

static void test_reduce_amax_hook(void) {
    char err[256];
    Fp8Recipe r = recipe_with(3, AMAX_COMPUTE_MAX, 0, 1, FP8_RECIPE_HYBRID);
    Fp8Meta rank0, rank1, single;
    CHECK(fp8_meta_init(&rank0, 3, &r, err, sizeof(err)) == 0 && fp8_meta_init(&rank1, 3, &r, err, sizeof(err)) == 0 &&
              fp8_meta_init(&single, 3, &r, err, sizeof(err)) == 0, "%s", err);
    // single process: the hook is a no-op
    for (int s = 0; s < single.num_slots; s++) { single.amax_history[s] = (float)(s + 1); }
    fp8_meta_reduce_amax(&single, &r);
    for (int s = 0; s < single.num_slots; s++) { CHECK(single.amax_history[s] == (float)(s + 1), "no-op"); }
    // two ranks, each seeing half the data; their reduced state must equal one process that saw all of it
    for (int step = 0; step < 6; step++) {
        for (int s = 0; s < single.num_slots; s++) {
            float a = ldexpf(0.5f + rng_uniform(), (int)(rng_u32() % 9) - 4);
            float b = ldexpf(0.5f + rng_uniform(), (int)(rng_u32() % 9) - 4);
            if (s % 7 == 3) { b = 0.0f; }  // only rank 0 used this slot
            rank0.amax_history[s] = a;
            rank1.amax_history[s] = b;
            single.amax_history[s] = fp8_amax_merge(a, b);
        }
        ReduceSim sim = {0, rank1.amax_history};
        rank0.amax_reduce_fn = reduce_max_with_other_rank;
        rank0.amax_reduce_user = &sim;
        fp8_meta_reduce_amax(&rank0, &r);  // rank 1's copy is written by the simulated collective
        CHECK(sim.calls == 1, "one call for all slots, got %d", sim.calls);
        fp8_meta_update(&rank0, &r, step);
        fp8_meta_update(&rank1, &r, step);
        fp8_meta_update(&single, &r, step);
        CHECK(memcmp(rank0.memory, single.memory, single.num_floats * sizeof(float)) == 0 &&
                  memcmp(rank1.memory, single.memory, single.num_floats * sizeof(float)) == 0,
              "step %d: reduced ranks equal the single-process state", step);
    }
    // reduce_amax off: the hook is not called
    r.delayed.reduce_amax = 0;
    ReduceSim sim = {0, rank1.amax_history};
    rank0.amax_reduce_user = &sim;
    fp8_meta_reduce_amax(&rank0, &r);
    CHECK(sim.calls == 0, "reduce_amax=0 skips the collective");
    fp8_meta_free(&rank0);
    fp8_meta_free(&rank1);
    fp8_meta_free(&single);
}

// ----------------------------------------------------------------------------
// quantize / dequantize

static void test_quantize_dequantize(void) {
    enum { N = 10000 };
    float* x = malloc(N * sizeof(float));
    uint8_t* q = malloc(N);
    float* back = malloc(N * sizeof(float));
    uint16_t* xb = malloc(N * sizeof(uint16_t));
    float max_abs = 0.0f;
    for (int i = 0; i < N; i++) {
        x[i] = (rng_uniform() * 2 - 1) * ldexpf(1.0f, (int)(rng_u32() % 30) - 20);
        if (i % 1000 == 0) { x[i] = 0.0f; }
        max_abs = fabsf(x[i]) > max_abs ? fabsf(x[i]) : max_abs;
    }
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = formats[fi];
        float scale = fp8_max(f) / 100.0f;  // values above 100 saturate, tiny ones flush
        float amax = 0.25f;                 // an earlier quantization of the same slot this step
        Fp8QuantStats stats = {0, 0, 0};
        fp8_quantize(q, x, N, f, scale, &amax, &stats);
        CHECK(amax == (max_abs > 0.25f ? max_abs : 0.25f), "amax is the unscaled max |x|, merged with row 0");
        long long sat = 0, flush = 0;
        for (int i = 0; i < N; i++) {
            float scaled = x[i] * scale;
            CHECK(q[i] == ref_encode(scaled, f), "%s element %d", fp8_format_name(f), i);
            if (fabsf(scaled) > fp8_max(f)) { sat++; }
            if (x[i] != 0.0f && ref_decode(ref_encode(scaled, f), f) == 0.0) { flush++; }
        }
        CHECK(stats.count == N && stats.saturated == sat && stats.flushed == flush && sat > 0 && flush > 0,
              "%s stats: sat %lld/%lld flushed %lld/%lld", fp8_format_name(f), stats.saturated, sat, stats.flushed,
              flush);
        fp8_dequantize(back, q, N, f, 1.0f / scale);
        for (int i = 0; i < N; i++) {
            float want = (float)ref_decode(q[i], f) * (1.0f / scale);
            CHECK(back[i] == want, "dequantize %d", i);
            // quantization error: within half an ULP of the format (relative 2^-(M+1)) for in-range normals
            if (fabsf(x[i] * scale) <= fp8_max(f) && fabsf(x[i] * scale) >= ldexpf(1.0f, f == FP8_E4M3 ? -6 : -14)) {
                float rel = fabsf(back[i] - x[i]) / fabsf(x[i]);
                CHECK(rel <= ldexpf(1.0f, -(fp8_mantissa_bits(f) + 1)) * 1.0001f, "relative error %g", rel);
            }
        }
        // bf16 input: same as quantizing the widened values
        for (int i = 0; i < N; i++) { xb[i] = bf16_from_float(x[i]); }
        uint8_t* qb = malloc(N);
        float amax_b = 0.0f;
        fp8_quantize_bf16(qb, xb, N, f, scale, &amax_b, NULL);
        for (int i = 0; i < N; i++) {
            CHECK(qb[i] == fp8_from_float(bf16_to_float(xb[i]) * scale, f), "bf16 quantize %d", i);
        }
        CHECK(amax_b == bf16_round(max_abs), "bf16 amax");
        free(qb);
    }
    // a NaN in the tensor makes the amax NaN (so the update keeps the scale)
    x[17] = NAN;
    float amax = 1.0f;
    fp8_quantize(q, x, N, FP8_E4M3, 1.0f, &amax, NULL);
    CHECK(isnan(amax) && q[17] == 0x7F, "NaN propagates to the amax");
    CHECK(fp8_amax_merge(INFINITY, NAN) != fp8_amax_merge(INFINITY, NAN) && fp8_amax_merge(2.0f, 3.0f) == 3.0f,
          "merge orders NaN above inf");
    free(x);
    free(q);
    free(back);
    free(xb);
}

// ----------------------------------------------------------------------------
// current scaling (fp8/current.h)

// -fp8_recipe's parsing and what current scaling keeps of a recipe: format, margin, overrides; no history.
static void test_recipe_current_scaling(void) {
    char err[256];
    Fp8ScalingRecipe scaling = FP8_SCALING_DELAYED;
    CHECK(parse_fp8_scaling_recipe("current", "-fp8_recipe", &scaling, err, sizeof(err)) == 0 &&
              scaling == FP8_SCALING_CURRENT, "current");
    CHECK(parse_fp8_scaling_recipe("delayed", "-fp8_recipe", &scaling, err, sizeof(err)) == 0 &&
              scaling == FP8_SCALING_DELAYED, "delayed");
    CHECK(parse_fp8_scaling_recipe("Current", "-fp8_recipe", &scaling, err, sizeof(err)) == -1 &&
              strstr(err, "'Current' for -fp8_recipe: expected one of delayed, current") && scaling == FP8_SCALING_DELAYED,
          "rejected with a message naming the flag: %s", err);
    Fp8Recipe r;
    fp8_recipe_default(&r);
    CHECK(r.scaling == FP8_SCALING_DELAYED, "delayed by default");
    r.margin = 2;
    r.fp8_format = FP8_RECIPE_E4M3;
    r.override_wgrad = 1;
    float8_current_scaling_apply(&r);
    CHECK(r.scaling == FP8_SCALING_CURRENT && r.delayed.amax_history_len == 1 && r.delayed.interval == 1 &&
              r.delayed.reduce_amax == 0 && r.margin == 2 && r.fp8_format == FP8_RECIPE_E4M3 && r.override_wgrad == 1,
          "current scaling: one history row, no interval or reduction; format, margin and overrides kept");
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == 0, "valid: %s", err);
    char line[1024];
    FILE* mem = fmemopen(line, sizeof(line), "w");
    fp8_recipe_print(&r, mem);
    fclose(mem);
    CHECK(strstr(line, "Float8CurrentScaling(fp8_format=E4M3 [fwd E4M3, bwd E4M3], margin=2") &&
              strstr(line, "wgrad=bf16") && !strstr(line, "amax_history_len"),
          "banner: %s", line);
    Fp8Recipe bad = r;
    bad.delayed.amax_history_len = 16;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1 && strstr(err, "current scaling"), "history refused");
    bad = r;
    bad.delayed.reduce_amax = 1;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1, "amax reduction refused");
    bad = r;
    bad.scaling = FP8_NUM_SCALING_RECIPES;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1 && strstr(err, "unknown scaling"), "unknown recipe");
    // the end-of-step pass of current scaling leaves every scale alone and only clears row 0
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 2, &r, err, sizeof(err)) == 0 && meta.amax_history_len == 1, "%s", err);
    for (int s = 0; s < meta.num_slots; s++) {
        meta.amax_history[s] = 0.5f + s;
        meta.scale[s] = 3.0f + s;
        meta.scale_inv[s] = 1.0f / (3.0f + s);
    }
    for (int step = 0; step < 3; step++) { fp8_meta_update(&meta, &r, step); }
    for (int s = 0; s < meta.num_slots; s++) {
        CHECK(meta.amax_history[s] == 0.0f && meta.scale[s] == 3.0f + s && meta.scale_inv[s] == 1.0f / (3.0f + s),
              "slot %d: row 0 cleared, scale kept", s);
    }
    fp8_meta_free(&meta);
}

// A current-scaling cast takes its scale from exactly the amax of the tensor it casts (not from row 0, not from an
// earlier tensor), with fp8_compute_scale's special cases, and casts exactly as fp8_quantize does with that scale.
static void test_quantize_current_scaling(void) {
    enum { N = 4096 };
    float* x = malloc(N * sizeof(float));
    uint16_t* xb = malloc(N * sizeof(uint16_t));
    uint8_t* q = malloc(N);
    uint8_t* want = malloc(N);
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = formats[fi];
        for (int margin = 0; margin <= 3; margin += 3) {
            float max_abs = 0.0f;
            int at_max = 0;
            for (int i = 0; i < N; i++) {
                x[i] = bf16_round((rng_uniform() * 2 - 1) * ldexpf(1.0f, (int)(rng_u32() % 20) - 12));
                max_abs = fabsf(x[i]) > max_abs ? fabsf(x[i]) : max_abs;
            }
            for (int i = 0; i < N; i++) { at_max += fabsf(x[i]) == max_abs; }
            float scale = 5.0f, scale_inv = 0.2f;  // the slot's previous scale: must not matter
            float row0 = 1e6f;                     // an earlier, larger tensor of this step: must not matter either
            Fp8QuantStats stats = {0, 0, 0};
            float amax = fp8_quantize_current(q, x, N, f, margin, &scale, &scale_inv, &row0, &stats);
            float want_scale = (fp8_max(f) / max_abs) / ldexpf(1.0f, margin);
            CHECK(amax == max_abs && scale == want_scale && scale_inv == 1.0f / want_scale,
                  "%s margin %d: amax %g scale %g, want %g and %g", fp8_format_name(f), margin, amax, scale, max_abs,
                  want_scale);
            CHECK(row0 == 1e6f, "the tensor's amax is merged into row 0, which does not feed the scale");
            float discarded = 0.0f;
            fp8_quantize(want, x, N, f, want_scale, &discarded, NULL);
            CHECK(memcmp(q, want, N) == 0, "%s margin %d: bytes = fp8_quantize with the tensor's own scale",
                  fp8_format_name(f), margin);
            // nothing saturates but, at most, the elements at the amax itself, by a float rounding of x * scale
            CHECK(stats.count == N && stats.saturated <= at_max && (margin > 0 ? stats.saturated == 0 : 1),
                  "%s margin %d: %lld saturated (%d elements at the amax)", fp8_format_name(f), margin,
                  stats.saturated, at_max);
            // the bf16 twin (what the GPU computes) on the same values: same bytes, scale, amax
            for (int i = 0; i < N; i++) { xb[i] = bf16_from_float(x[i]); }
            float scale_b = 5.0f, scale_inv_b = 0.2f, row0_b = 0.0f;
            float amax_b = fp8_quantize_current_bf16(want, xb, N, f, margin, &scale_b, &scale_inv_b, &row0_b, NULL);
            CHECK(memcmp(q, want, N) == 0 && scale_b == scale && scale_inv_b == scale_inv && amax_b == amax &&
                      row0_b == amax, "%s margin %d: bf16 storage gives the same cast", fp8_format_name(f), margin);
        }
    }
    // special amaxes: zeros, an inf, a NaN keep the slot's previous scale; a tiny amax gives FLT_MAX
    for (int i = 0; i < N; i++) { x[i] = 0.0f; }
    float scale = 2.5f, scale_inv = 0.4f, row0 = 0.0f;
    float amax = fp8_quantize_current(q, x, N, FP8_E4M3, 0, &scale, &scale_inv, &row0, NULL);
    int nonzero = 0;
    for (int i = 0; i < N; i++) { nonzero += q[i] != 0; }
    CHECK(amax == 0.0f && scale == 2.5f && scale_inv == 1.0f / 2.5f && nonzero == 0 && row0 == 0.0f,
          "all zeros: previous scale kept (%g), zero bytes", scale);
    x[7] = 1.5f;
    x[99] = -INFINITY;
    scale = 2.5f;
    amax = fp8_quantize_current(q, x, N, FP8_E5M2, 0, &scale, &scale_inv, &row0, NULL);
    CHECK(isinf(amax) && scale == 2.5f && q[99] == (0x80 | 0x7B) && q[7] == fp8_from_float(1.5f * 2.5f, FP8_E5M2),
          "an inf: previous scale kept, the inf saturates to -max");
    x[99] = NAN;
    scale = 2.5f;
    amax = fp8_quantize_current(q, x, N, FP8_E4M3, 0, &scale, &scale_inv, &row0, NULL);
    CHECK(isnan(amax) && scale == 2.5f && isnan(row0), "a NaN: previous scale kept, the NaN reaches row 0");
    x[99] = 0.0f;
    x[7] = ldexpf(1.0f, -140);  // a denormal: 448 / 2^-140 overflows float
    scale = 2.5f;
    row0 = 0.0f;
    amax = fp8_quantize_current(q, x, N, FP8_E4M3, 0, &scale, &scale_inv, &row0, NULL);
    CHECK(amax == ldexpf(1.0f, -140) && scale == FLT_MAX && scale_inv == 1.0f / FLT_MAX && scale_inv > 0.0f,
          "tiny amax: FLT_MAX, got %g", scale);
    free(x);
    free(xb);
    free(q);
    free(want);
}

// The vectorized, chunked loops (several chunks of 65536 and a tail, on however many threads, each instruction set the
// CPU has) give every element's code and the amax and counts exactly as element-by-element references do, across
// every exponent, inf and NaN; the fused and the separate dequantize give fp8_to_float(code) * scale_inv for all 256
// codes, NaN bit patterns included.
static void test_quantize_chunks_and_dequantize_every_code(void) {
    size_t n = 3 * 65536 + 1234;
    float* x = malloc(n * sizeof(float));
    uint8_t* q = malloc(n);
    float* back = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) { x[i] = fp8_bits_float(rng_u32()); }  // every exponent, subnormals, inf, NaN
    for (size_t i = 0; i < n; i += 7) { x[i] = (rng_uniform() * 2 - 1) * ldexpf(1.0f, (int)(rng_u32() % 40) - 30); }
    for (int fi = 0; fi < 2; fi++) {
        Fp8Format f = formats[fi];
        float scale = 3.0f;
        for (int with_nan = 1; with_nan >= 0; with_nan--) {
            if (with_nan) {  // NaNs in a later chunk and in the tail (the random bits gave some too)
                x[70001] = NAN;
                x[n - 1] = -NAN;
            }
            uint32_t want_amax = 0;
            long long want_sat = 0, want_flush = 0;
            for (size_t i = 0; i < n; i++) {
                if (!with_nan && isnan(x[i])) { x[i] = 1.0f; }
                uint32_t m = fp8_float_bits(x[i]) & 0x7FFFFFFFu;
                want_amax = m > want_amax ? m : want_amax;
                float scaled = x[i] * scale;
                want_sat += fabsf(scaled) > fp8_max(f);
                want_flush += x[i] != 0.0f && (ref_encode(scaled, f) & 0x7F) == 0 && !isnan(scaled);
            }
            for (int isa = 0; isa < CPU_NUM_ISAS; isa++) {  // every version of the loop this CPU can run
                if (!cpu_isa_supported((CpuIsa)isa)) { continue; }
                const char* name = cpu_isa_name((CpuIsa)isa);
                float amax = 0.0f;
                Fp8QuantStats stats = {0, 0, 0};
                memset(q, 0xAB, n);
                memset(back, 0xAB, n * sizeof(float));
                fp8_quantize_isa((CpuIsa)isa, q, x, n, f, scale, &amax, &stats, back, 0.375f);
                size_t wrong = 0;
                for (size_t i = 0; i < n; i++) {
                    uint8_t want = isnan(x[i] * scale) ? FP8_NAN_CODE : ref_encode(x[i] * scale, f);
                    wrong += q[i] != want;
                }
                CHECK(wrong == 0, "%s %s: %zu of %zu codes differ from the reference", name, fp8_format_name(f),
                      wrong, n);
                size_t wrong_back = 0;  // the fused dequantize: fp8_to_float(code) * scale_inv, bit for bit
                for (size_t i = 0; i < n; i++) {
                    float want = fp8_to_float(q[i], f) * 0.375f;
                    wrong_back += memcmp(&want, &back[i], sizeof(float)) != 0;
                }
                CHECK(wrong_back == 0, "%s %s: %zu dequantized values differ", name, fp8_format_name(f), wrong_back);
                CHECK(fp8_float_bits(amax) == want_amax, "%s %s amax bits 0x%08x, want 0x%08x", name,
                      fp8_format_name(f), fp8_float_bits(amax), want_amax);
                CHECK(stats.count == (long long)n && stats.saturated == want_sat && stats.flushed == want_flush,
                      "%s %s counts: saturated %lld/%lld, flushed %lld/%lld", name, fp8_format_name(f),
                      stats.saturated, want_sat, stats.flushed, want_flush);
                CHECK(!with_nan || isnan(amax), "a NaN anywhere makes the amax NaN");
            }
        }
        // every code, in several chunks
        for (size_t i = 0; i < n; i++) { q[i] = (uint8_t)(i * 7); }
        fp8_dequantize(back, q, n, f, 0.375f);
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) {
            float want = fp8_to_float(q[i], f) * 0.375f;
            wrong += memcmp(&back[i], &want, sizeof(float)) != 0;
        }
        CHECK(wrong == 0, "%s dequantize: %zu of %zu values differ", fp8_format_name(f), wrong, n);
    }
    free(x);
    free(q);
    free(back);
}

// ----------------------------------------------------------------------------
// block scaling (fp8/block.h): the recipes, their shapes, and the casts' plumbing. The casts' values are checked bit
// for bit against an independent implementation in fp8/test_fp8_blocks.py; here: every instruction set and thread
// count gives the same bytes, the columnwise path equals the generic one, and the diagnostics count what the bytes say.

// -fp8_recipe blockwise | mxfp8: parsing, what float8_block_scaling_apply keeps and sets, what validation refuses.
static void test_recipe_block_scaling(void) {
    char err[256];
    Fp8ScalingRecipe scaling = FP8_SCALING_DELAYED;
    CHECK(parse_fp8_scaling_recipe("blockwise", "-fp8_recipe", &scaling, err, sizeof(err)) == 0 &&
              scaling == FP8_SCALING_BLOCKWISE, "blockwise");
    CHECK(parse_fp8_scaling_recipe("mxfp8", "-fp8_recipe", &scaling, err, sizeof(err)) == 0 &&
              scaling == FP8_SCALING_MXFP8, "mxfp8");
    CHECK(parse_fp8_scaling_recipe("tensorwise", "-fp8_recipe", &scaling, err, sizeof(err)) == -1 &&
              strstr(err, "expected one of delayed, current, blockwise, mxfp8"), "%s", err);
    Fp8Recipe r;
    fp8_recipe_default(&r);
    CHECK(r.blockwise.amax_epsilon == 0.0f && r.blockwise.power_2_scale == 1,
          "TE's defaults: amax_epsilon 0, power_2_scale True");
    CHECK(fp8_recipe_set(&r, "amax_epsilon", "0.001", "-fp8_amax_epsilon", err, sizeof(err)) == 0 &&
              r.blockwise.amax_epsilon == 0.001f, "epsilon parsed");
    CHECK(fp8_recipe_set(&r, "amax_epsilon", "-1", "-fp8_amax_epsilon", err, sizeof(err)) == -1 &&
              strstr(err, "-fp8_amax_epsilon"), "negative epsilon refused: %s", err);
    CHECK(fp8_recipe_set(&r, "amax_epsilon", "inf", "-fp8_amax_epsilon", err, sizeof(err)) == -1, "inf refused");
    CHECK(fp8_recipe_set(&r, "amax_epsilon", "-0", "-fp8_amax_epsilon", err, sizeof(err)) == 0 &&
              fp8_float_bits(r.blockwise.amax_epsilon) == 0u, "-0 is +0 (one value, one set of bits in a checkpoint)");
    CHECK(fp8_recipe_set(&r, "amax_epsilon", "0.001", "-fp8_amax_epsilon", err, sizeof(err)) == 0, "%s", err);
    CHECK(fp8_recipe_set(&r, "pow2_scales", "0", "-fp8_pow2_scales", err, sizeof(err)) == 0 &&
              r.blockwise.power_2_scale == 0, "pow2 parsed");
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == -1 && strstr(err, "blockwise scaling only"),
          "epsilon and pow2 belong to blockwise: %s", err);
    r.fp8_format = FP8_RECIPE_HYBRID;
    r.override_dgrad = 1;
    r.delayed.amax_history_len = 16;
    float8_block_scaling_apply(&r, FP8_SCALING_BLOCKWISE);
    CHECK(r.scaling == FP8_SCALING_BLOCKWISE && r.delayed.amax_history_len == 1 && r.delayed.interval == 1 &&
              r.delayed.reduce_amax == 0 && r.margin == 0 && r.fp8_format == FP8_RECIPE_HYBRID &&
              r.override_dgrad == 1 && r.blockwise.amax_epsilon == 0.001f && r.blockwise.power_2_scale == 0 &&
              !fp8_recipe_has_history(&r) && fp8_recipe_is_block_scaled(&r),
          "blockwise: no history; format, overrides, epsilon and pow2 kept");
    CHECK(fp8_recipe_validate(&r, err, sizeof(err)) == 0, "valid: %s", err);
    char line[1024];
    FILE* mem = fmemopen(line, sizeof(line), "w");
    fp8_recipe_print(&r, mem);
    fclose(mem);
    CHECK(strstr(line, "Float8BlockScaling(fp8_format=HYBRID [fwd E4M3, bwd E5M2], blocks=1x128") &&
              strstr(line, "power_2_scale=False, amax_epsilon=0.001") && strstr(line, "dgrad=bf16"), "banner: %s", line);
    Fp8Recipe bad = r;
    bad.fp8_format = FP8_RECIPE_E5M2;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1 && strstr(err, "no E5M2"), "E5M2 refused");
    bad = r;
    bad.margin = 1;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1 && strstr(err, "no margin"), "margin refused");
    bad = r;
    bad.blockwise.amax_epsilon = NAN;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1, "NaN epsilon refused");
    Fp8Recipe mx = r;
    float8_block_scaling_apply(&mx, FP8_SCALING_MXFP8);
    CHECK(mx.scaling == FP8_SCALING_MXFP8 && mx.blockwise.amax_epsilon == 0.0f && mx.blockwise.power_2_scale == 1 &&
              fp8_recipe_validate(&mx, err, sizeof(err)) == 0,
          "mxfp8: the blockwise options reset (E8M0 scales are powers of two, no epsilon): %s", err);
    mem = fmemopen(line, sizeof(line), "w");
    fp8_recipe_print(&mx, mem);
    fclose(mem);
    CHECK(strstr(line, "MXFP8BlockScaling(fp8_format=HYBRID [fwd E4M3, bwd E5M2], blocks=1x32") &&
              strstr(line, "E8M0 scales"), "banner: %s", line);
    bad = mx;
    bad.delayed.amax_history_len = 2;
    CHECK(fp8_recipe_validate(&bad, err, sizeof(err)) == -1 && strstr(err, "mxfp8 scaling has no amax history"),
          "history refused: %s", err);
    // the block shapes of every operand copy
    Fp8BlockShape s = fp8_block_shape(FP8_SCALING_BLOCKWISE, 1, 0), t = fp8_block_shape(FP8_SCALING_BLOCKWISE, 1, 1);
    CHECK(s.rows == 128 && s.cols == 128 && t.rows == 128 && t.cols == 128, "blockwise weights: 128x128 both ways");
    s = fp8_block_shape(FP8_SCALING_BLOCKWISE, 0, 0), t = fp8_block_shape(FP8_SCALING_BLOCKWISE, 0, 1);
    CHECK(s.rows == 1 && s.cols == 128 && t.rows == 128 && t.cols == 1, "blockwise activations: 1x128, 128x1");
    s = fp8_block_shape(FP8_SCALING_MXFP8, 1, 0), t = fp8_block_shape(FP8_SCALING_MXFP8, 1, 1);
    CHECK(s.rows == 1 && s.cols == 32 && t.rows == 32 && t.cols == 1, "mxfp8 weights: 1x32, 32x1");
    // the end-of-step pass keeps every scale and only clears row 0, as for current scaling
    Fp8Meta meta;
    CHECK(fp8_meta_init(&meta, 1, &mx, err, sizeof(err)) == 0 && meta.amax_history_len == 1, "%s", err);
    for (int slot = 0; slot < meta.num_slots; slot++) { meta.amax_history[slot] = 2.0f; }
    fp8_meta_update(&meta, &mx, 0);
    for (int slot = 0; slot < meta.num_slots; slot++) {
        CHECK(meta.amax_history[slot] == 0.0f && meta.scale[slot] == 1.0f, "slot %d: row 0 cleared, scale kept", slot);
    }
    fp8_meta_free(&meta);
}

// TE's current edge rules (fp8/block.h names the commit): the cast's E8M0 multiplier 2^(127 - e) with byte 0 -> 2^127
// and 0xFE -> the subnormal 2^-127 (the older rule gave 1 and 0), 0xFF -> NaN; the GEMM's 2^(e - 127) with byte 0 ->
// 2^-127; every byte's pair multiplies to 1; the block amax skips NaN and keeps inf.
static void test_block_edge_rules(void) {
    CHECK(fp8_float_bits(fp8_e8m0_cast_scale(0)) == 0x7F000000u && fp8_float_bits(fp8_e8m0_to_float(0)) == 0x00400000u,
          "byte 0: the cast multiplies by 2^127, the GEMM by 2^-127");
    CHECK(fp8_float_bits(fp8_e8m0_cast_scale(0xFE)) == 0x00400000u &&
              fp8_float_bits(fp8_e8m0_to_float(0xFE)) == 0x7F000000u, "byte 0xFE: 2^-127 and 2^127");
    CHECK(isnan(fp8_e8m0_cast_scale(0xFF)) && isnan(fp8_e8m0_to_float(0xFF)), "byte 0xFF: NaN both ways");
    int products_one = 1;
    for (int e = 0; e < 0xFF; e++) {
        float cast = fp8_e8m0_cast_scale((uint8_t)e), gemm = fp8_e8m0_to_float((uint8_t)e);
        products_one &= cast == ldexpf(1.0f, 127 - e) && gemm == ldexpf(1.0f, e - 127) && cast * gemm == 1.0f;
    }
    CHECK(products_one, "bytes 0..254: 2^(127 - e) and 2^(e - 127), whose product is 1");
    // an inf in an mxfp8 block: byte 0xFE, the inf clips to fp8_max's code, which dequantizes to inf again
    Fp8BlockCast mx = {FP8_SCALING_MXFP8, FP8_E4M3, 0.0f, 1};
    Fp8BlockScale s = fp8_block_scale(&mx, INFINITY);
    uint8_t code = fp8_from_float(INFINITY * s.scale, FP8_E4M3);
    CHECK(s.e8m0 == 0xFE && code == 0x7E && fp8_to_float(code, FP8_E4M3) * s.scale_inv == INFINITY,
          "inf: byte 0x%02x, code 0x%02x, back %g", s.e8m0, code, fp8_to_float(code, FP8_E4M3) * s.scale_inv);
    // a tiny mxfp8 block (amax 2^-130 < 2^-127 * 448): byte 0, its values scaled up and kept
    s = fp8_block_scale(&mx, ldexpf(1.0f, -130));
    code = fp8_from_float(ldexpf(1.0f, -130) * s.scale, FP8_E4M3);
    CHECK(s.e8m0 == 0 && fp8_to_float(code, FP8_E4M3) * s.scale_inv == ldexpf(1.0f, -130),
          "2^-130: byte %u, kept as %g", s.e8m0, fp8_to_float(code, FP8_E4M3) * s.scale_inv);
    uint32_t amax_bits = 0;
    const float block[] = {1.0f, NAN, -3.0f, -NAN, 2.0f};
    for (int i = 0; i < 5; i++) { amax_bits = fp8_block_amax_merge(amax_bits, fp8_float_bits(block[i]) & 0x7FFFFFFFu); }
    CHECK(fp8_bits_float(amax_bits) == 3.0f, "the block amax skips NaN: %g", fp8_bits_float(amax_bits));
    amax_bits = fp8_block_amax_merge(amax_bits, 0x7F800000u);
    CHECK(amax_bits == 0x7F800000u, "and keeps inf");
}

// cuBLASLt's scale layouts (fp8/block.h): every block of an (M, K) operand gets its own cell, the cells of one K-block
// (VEC128) or one row of tiles (BLK128x128) start 16 bytes apart (4 floats), and the arrays hold exactly the padded
// sizes. Worked values: M 5, K 256 has 2 K-blocks of round_up(5, 4) = 8 rows each (16 floats), row 4's second block at
// 1 * 8 + 4 = 12; M 256, K 384 has 2 x round_up(3, 4) = 8 tiles' floats, tile (1, 2) at 1 * 4 + 2 = 6.
static void test_block_scale_layouts(void) {
    CHECK(fp8_vec128_scale_floats(5, 256) == 16 && fp8_vec128_scale_index(4, 1, 5) == 12, "VEC128 (5, 256)");
    CHECK(fp8_blk128_scale_floats(256, 384) == 8 && fp8_blk128_scale_index(1, 2, 384) == 6, "BLK128x128 (256, 384)");
    static const size_t shapes[][2] = {{1, 128}, {5, 256}, {64, 128}, {128, 384}, {130, 640}, {768, 3072}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        size_t M = shapes[s][0], K = shapes[s][1], k_blocks = fp8_ceil_div(K, 128), m_blocks = fp8_ceil_div(M, 128);
        size_t vec_floats = fp8_vec128_scale_floats(M, K), blk_floats = fp8_blk128_scale_floats(M, K);
        unsigned char* seen = (unsigned char*)calloc(vec_floats > blk_floats ? vec_floats : blk_floats, 1);
        int ok = 1;
        for (size_t k = 0; k < k_blocks; k++) {
            ok &= fp8_vec128_scale_index(0, k, M) % 4 == 0;  // each K-block's column 16-byte aligned
            for (size_t m = 0; m < M; m++) {
                size_t i = fp8_vec128_scale_index(m, k, M);
                ok &= i < vec_floats && !seen[i];
                if (i < vec_floats) { seen[i] = 1; }
            }
        }
        CHECK(ok, "VEC128 (%zu, %zu): one cell per block, inside %zu floats, columns 16-byte aligned", M, K, vec_floats);
        memset(seen, 0, blk_floats);
        ok = 1;
        for (size_t i = 0; i < m_blocks; i++) {
            ok &= fp8_blk128_scale_index(i, 0, K) % 4 == 0;  // each row of tiles 16-byte aligned
            for (size_t k = 0; k < k_blocks; k++) {
                size_t cell = fp8_blk128_scale_index(i, k, K);
                ok &= cell < blk_floats && !seen[cell];
                if (cell < blk_floats) { seen[cell] = 1; }
            }
        }
        CHECK(ok, "BLK128x128 (%zu, %zu): one cell per tile, inside %zu floats, rows 16-byte aligned", M, K, blk_floats);
        free(seen);
    }
}

// A block cast in every instruction set and with 1 and 4 threads: the same codes, dequantized values and scales, and
// the diagnostics count what the codes say (saturated: |x * the block's scale| > max; flushed: x != 0 cast to +-0;
// the scale range over the blocks with a finite non-zero amax, which skips NaN; the tensor's amax NaN-propagating).
// The columnwise cast gives the generic len x 1 blocks' codes, transposed, and the same values.
static void test_quantize_blocks_isas_threads_columnwise(void) {
    // ragged edges: rows end inside a block of 128, and each row of blocks is cast in three whole tiles of columns and
    // a part of one (FP8_BLOCK_TILE_COLS); above the threads' threshold
    const size_t rows = 300, cols = 3 * FP8_BLOCK_TILE_COLS + 428, n = rows * cols;
    CHECK(n > CPU_PARALLEL_MIN_PASS_ELEMENTS && cols % 128 != 0, "the sizes exercise the threads and the edges");
    int saved_threads = omp_get_max_threads();
    float* x = malloc(n * sizeof(float));
    uint8_t* q = malloc(n);
    uint8_t* q_ref = malloc(n);
    uint8_t* q_col = malloc(n);
    float* back = malloc(n * sizeof(float));
    float* back_ref = malloc(n * sizeof(float));
    float* scale_inv = malloc(n * sizeof(float));
    float* scale_inv_ref = malloc(n * sizeof(float));
    float* scratch = malloc(2 * n * sizeof(float));
    for (size_t i = 0; i < n; i++) {  // magnitudes over 2^-30..2^10 per row, a zero row block, one inf and one NaN
        x[i] = (rng_uniform() * 2 - 1) * ldexpf(1.0f, (int)((i / cols) % 40) - 30);
        if (i / cols >= 64 && i / cols < 96 && i % cols < 128) { x[i] = 0.0f; }
    }
    x[5 * cols + 7] = INFINITY;
    x[200 * cols + 250] = NAN;
    struct { Fp8ScalingRecipe scaling; Fp8Format format; Fp8BlockShape shape; float epsilon; int pow2; } cases[] = {
        {FP8_SCALING_BLOCKWISE, FP8_E4M3, {1, 128}, 0.0f, 1}, {FP8_SCALING_BLOCKWISE, FP8_E4M3, {128, 128}, 0.0f, 0},
        {FP8_SCALING_BLOCKWISE, FP8_E5M2, {128, 1}, 1e-6f, 1}, {FP8_SCALING_MXFP8, FP8_E4M3, {1, 32}, 0.0f, 1},
        {FP8_SCALING_MXFP8, FP8_E5M2, {32, 1}, 0.0f, 1},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        Fp8BlockCast cast = {cases[c].scaling, cases[c].format, cases[c].epsilon, cases[c].pow2};
        Fp8BlockShape shape = cases[c].shape;
        const char* name = fp8_scaling_recipe_name(cast.scaling);
        size_t block_rows = (rows + shape.rows - 1) / shape.rows, block_cols = (cols + shape.cols - 1) / shape.cols;
        // the reference run: baseline instruction set, one thread
        float amax_ref = 0.0f;
        Fp8QuantStats stats_ref = {0, 0, 0};
        Fp8BlockScaleRange range_ref;
        fp8_block_scale_range_reset(&range_ref);
        omp_set_num_threads(1);
        fp8_quantize_blocks_isa(CPU_ISA_BASELINE, q_ref, back_ref, scale_inv_ref, x, rows, cols, shape, &cast,
                                &amax_ref, &stats_ref, &range_ref);
        // what the bytes say
        long long saturated = 0, flushed = 0;
        float scale_min = INFINITY, scale_max = 0.0f;
        for (size_t b = 0; b < block_rows * block_cols; b++) {
            size_t r0 = b / block_cols * shape.rows, c0 = b % block_cols * shape.cols;
            uint32_t amax_bits = 0;
            for (size_t r = r0; r < r0 + shape.rows && r < rows; r++) {
                for (size_t k = c0; k < c0 + shape.cols && k < cols; k++) {
                    uint32_t m = fp8_float_bits(x[r * cols + k]) & 0x7FFFFFFFu;
                    amax_bits = m <= 0x7F800000u && m > amax_bits ? m : amax_bits;  // the block's scale skips NaN
                }
            }
            float amax = fp8_bits_float(amax_bits);
            Fp8BlockScale s = fp8_block_scale(&cast, amax);
            CHECK(fp8_float_bits(scale_inv_ref[b]) == fp8_float_bits(s.scale_inv) || (isnan(s.scale_inv) && isnan(scale_inv_ref[b])),
                  "%s block %zu scale_inv", name, b);
            if (amax > 0.0f && amax <= FLT_MAX) {
                scale_min = fminf(scale_min, s.scale);
                scale_max = fmaxf(scale_max, s.scale);
            }
            for (size_t r = r0; r < r0 + shape.rows && r < rows; r++) {
                for (size_t k = c0; k < c0 + shape.cols && k < cols; k++) {
                    float v = x[r * cols + k], scaled = v * s.scale;
                    saturated += fabsf(scaled) > fp8_max(cast.format);
                    flushed += v != 0.0f && (q_ref[r * cols + k] & 0x7F) == 0;
                }
            }
        }
        CHECK(stats_ref.count == (long long)n && stats_ref.saturated == saturated && stats_ref.flushed == flushed,
              "%s counts: %lld/%lld saturated, %lld/%lld flushed", name, stats_ref.saturated, saturated,
              stats_ref.flushed, flushed);
        CHECK(range_ref.scale_min == scale_min && range_ref.scale_max == scale_max && scale_max > 0.0f,
              "%s scale range [%g, %g], want [%g, %g]", name, range_ref.scale_min, range_ref.scale_max, scale_min,
              scale_max);
        CHECK(isnan(amax_ref), "%s: the NaN makes the tensor's amax NaN", name);
        // every instruction set, 1 and 4 threads: the same bytes, values, scales and diagnostics
        for (int isa = 0; isa < CPU_NUM_ISAS; isa++) {
            if (!cpu_isa_supported((CpuIsa)isa)) { continue; }
            for (int threads = 1; threads <= 4; threads += 3) {
                omp_set_num_threads(threads);
                float amax = 0.0f;
                Fp8QuantStats stats = {0, 0, 0};
                Fp8BlockScaleRange range;
                fp8_block_scale_range_reset(&range);
                fp8_quantize_blocks_isa((CpuIsa)isa, q, back, scale_inv, x, rows, cols, shape, &cast, &amax, &stats,
                                        &range);
                CHECK(memcmp(q, q_ref, n) == 0 && memcmp(back, back_ref, n * sizeof(float)) == 0 &&
                          memcmp(scale_inv, scale_inv_ref, block_rows * block_cols * sizeof(float)) == 0 &&
                          memcmp(&stats, &stats_ref, sizeof(stats)) == 0 &&
                          memcmp(&range, &range_ref, sizeof(range)) == 0 && isnan(amax),
                      "%s %s, %d threads: differs from the baseline on one thread", name, cpu_isa_name((CpuIsa)isa),
                      threads);
            }
        }
        omp_set_num_threads(1);
        if (shape.cols != 1) { continue; }
        // the columnwise path: codes transposed, values and scales equal, the same diagnostics
        float amax = 0.0f;
        Fp8QuantStats stats = {0, 0, 0};
        Fp8BlockScaleRange range;
        fp8_block_scale_range_reset(&range);
        fp8_quantize_blocks_columnwise(q_col, back, scale_inv, x, rows, cols, shape.rows, &cast, &amax, &stats, &range,
                                       scratch);
        size_t wrong = 0;
        for (size_t r = 0; r < rows; r++) {
            for (size_t k = 0; k < cols; k++) { wrong += q_col[k * rows + r] != q_ref[r * cols + k]; }
        }
        size_t wrong_scales = 0;  // the generic grid is (block_rows, cols); the columnwise one (cols, block_rows)
        for (size_t br = 0; br < block_rows; br++) {
            for (size_t k = 0; k < cols; k++) {
                wrong_scales += fp8_float_bits(scale_inv[k * block_rows + br]) != fp8_float_bits(scale_inv_ref[br * cols + k]);
            }
        }
        CHECK(wrong == 0 && wrong_scales == 0 && memcmp(back, back_ref, n * sizeof(float)) == 0 &&
                  memcmp(&stats, &stats_ref, sizeof(stats)) == 0 && memcmp(&range, &range_ref, sizeof(range)) == 0,
              "%s columnwise: %zu codes, %zu scales differ from the generic %dx1 blocks", name, wrong, wrong_scales,
              shape.rows);
    }
    omp_set_num_threads(saved_threads);
    free(x), free(q), free(q_ref), free(q_col), free(back), free(back_ref), free(scale_inv), free(scale_inv_ref);
    free(scratch);
}

int main(void) {
    ref_init();
    RUN_TEST(test_decode_all_codes);
    RUN_TEST(test_encode_all_bf16_patterns);
    RUN_TEST(test_encode_random_floats);
    RUN_TEST(test_encode_ties_and_boundaries);
    RUN_TEST(test_round_trip_exact);
    RUN_TEST(test_bf16_rounding);
    RUN_TEST(test_recipe_defaults_and_parse);
    RUN_TEST(test_recipe_rejects_bad_values);
    RUN_TEST(test_update_te_scenarios);
    RUN_TEST(test_update_rotation_order);
    RUN_TEST(test_update_history_len_1);
    RUN_TEST(test_update_random_against_naive);
    RUN_TEST(test_update_interval);
    RUN_TEST(test_update_callbacks);
    RUN_TEST(test_update_many_modules_one_call);
    RUN_TEST(test_drop_step_amaxes);
    RUN_TEST(test_reduce_amax_hook);
    RUN_TEST(test_quantize_dequantize);
    RUN_TEST(test_recipe_current_scaling);
    RUN_TEST(test_quantize_current_scaling);
    RUN_TEST(test_quantize_chunks_and_dequantize_every_code);
    RUN_TEST(test_recipe_block_scaling);
    RUN_TEST(test_block_edge_rules);
    RUN_TEST(test_quantize_blocks_isas_threads_columnwise);
    RUN_TEST(test_block_scale_layouts);
    return test_summary("fp8");
}
