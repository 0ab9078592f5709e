/*
test_tiny_model.h — the tiny model the CPU model tests share (test_gpt_fp8.c, test_data_parallel.c): small enough that
a step takes microseconds, big enough for every layer to matter (2 blocks, 2 heads, a vocabulary that is not padded
to itself). Included after train_gpt_fp8.c.
*/
#ifndef GPTFP8_TEST_TINY_MODEL_H
#define GPTFP8_TEST_TINY_MODEL_H

// L 2, C 16, NH 2, V 37 (Vp 128), maxT 8, amax_history_len 4, TE's other defaults
static ModelOptions tiny_options(Precision precision) {
    ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config.num_layers = 2;
    opt.config.channels = 16;
    opt.config.num_heads = 2;
    opt.config.vocab_size = 37;
    opt.config.padded_vocab_size = padded_vocab(37);
    opt.config.max_seq_len = 8;
    opt.precision = precision;
    fp8_recipe_default(&opt.recipe);
    opt.recipe.delayed.amax_history_len = 4;
    return opt;
}

#endif  // GPTFP8_TEST_TINY_MODEL_H
