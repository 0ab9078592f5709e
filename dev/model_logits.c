/*
dev/model_logits.c — the logits the CPU trainer computes for a model file on a window of a data shard: the reference
an exported model (scripts/export_hf.py, a Hugging Face GPT-2 folder) is compared against, logit for logit
(scripts/test_export_hf.sh).

    model_logits MODEL.bin SHARD.bin B T OUT.f32 [OFFSET]

loads MODEL.bin with the trainer's own reader (read_model_file, what -e FILE reads, with every check the trainer
makes) into a model in -precision fp32, reads B*T tokens of SHARD.bin starting at token OFFSET (default 0) with the
trainer's data loader (inputs (B, T) and their next tokens as targets, as a training or validation batch), runs the
trainer's forward (gpt2_forward: train_gpt_fp8.c included with TESTING) and writes the logits (B, T, V) as float32,
row-major, the padded vocabulary columns dropped, to OUT.f32 (atomically; a symlink is written through, a device or
a FIFO in place: llmc/checkpoint.h's atomic_open). A model from a run folder whose dataset.txt records a tokenizer is
refused data encoded with another one (the shard's manifest names it), as the trainer refuses it. Prints the mean cross-entropy loss of
the batch, the number the trainer's val loss averages. With OFFSET = i*B*T it is the trainer's i-th val batch.
*/
#define TESTING
// the trainer's main() is compiled out, so its helpers look unused here
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../train_gpt_fp8.c"

static long long parse_count(const char* what, const char* text, long long min, long long max) {
    char* end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v < min || v > max) {
        die("invalid %s '%s': expected an integer in [%lld, %lld]", what, text, min, max);
    }
    return v;
}

int main(int argc, char** argv) {
    fail_at_exit_if_stdout_fails();  // the mean loss line is read by the callers
    int help = argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
    if (help || (argc != 6 && argc != 7)) {  // -h: on stdout, exit 0; a wrong call: on stderr, exit 2
        fprintf(help ? stdout : stderr, "usage: model_logits MODEL.bin SHARD.bin B T OUT.f32 [OFFSET]: the CPU trainer's "
                "fp32 logits (B, T, V) of MODEL.bin on B*T tokens of SHARD.bin from token OFFSET\n");
        return help ? 0 : 2;
    }
    const char *model_path = argv[1], *shard_path = argv[2], *out_path = argv[5];
    int B = (int)parse_count("B", argv[3], 1, INT_MAX);
    int T = (int)parse_count("T", argv[4], 1, INT_MAX);
    size_t offset = argc == 7 ? (size_t)parse_count("OFFSET", argv[6], 0, INT32_MAX) : 0;
    char err[ERROR_MESSAGE_MAX];

    GPT2Config config;
    size_t loaded_count;
    float* loaded = read_model_file(model_path, &config, &loaded_count);  // dies with one line on a bad file
    if (T > config.max_seq_len) {
        die("T %d is longer than the model's maximum sequence length %d", T, config.max_seq_len);
    }
    if ((long long)B * T > INT_MAX) { die("B %d x T %d: more tokens than one forward takes (%d)", B, T, INT_MAX); }

    DataLoader loader;
    if (dataloader_init(&loader, shard_path, (size_t)B, (size_t)T, 0, 1, config.vocab_size, err, sizeof(err))) {
        die("%s", err);
    }
    if (loader.num_shards != 1) { die("%s names %zu shards: give one file", shard_path, loader.num_shards); }
    // the loader would move on (wrap to the shard's start) rather than read past the end: a window that does not fit
    // is refused instead, so the logits are always the tokens asked for
    size_t BT = (size_t)B * T;
    if (offset + BT + 1 > loader.shard_tokens[0]) {
        die("%s: tokens %zu..%zu (B*T %zu and one target past them, from OFFSET %zu) are past its %zu tokens",
            shard_path, offset, offset + BT, BT, offset, loader.shard_tokens[0]);
    }
    if (dataloader_resume(&loader, 0, offset, err, sizeof(err)) || dataloader_next_batch(&loader, err, sizeof(err))) {
        die("%s", err);
    }

    // a model whose run recorded its tokenizer meets data encoded with another (its manifest says): refused, as the
    // trainer refuses it
    char* record_path = run_data_path_beside(model_path);
    RunData record;
    int record_rc = run_data_read(record_path, &record, err, sizeof(err));
    if (record_rc < 0) { die("%s", err); }
    if (record_rc == 0) {
        if (record.have_tokenizer && run_data_check_shard_tokenizer(shard_path, &record.tokenizer, err, sizeof(err))) {
            die("%s: %s was trained with the tokenizer %s records", err, model_path, record_path);
        }
        run_data_free(&record);
    }
    free(record_path);

    ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config = config;
    opt.precision = PRECISION_FP32;
    GPT2 model;
    gpt2_allocate(&model, &opt, B, T);
    memcpy(model.master_memory, loaded, loaded_count * sizeof(float));  // fp32: params_memory is master_memory
    free(loaded);
    model.training = 0;  // evaluation, as the val loop
    gpt2_forward(&model, loader.inputs, loader.targets, B, T);

    int V = config.vocab_size, Vp = config.padded_vocab_size;
    AtomicFile out;
    if (atomic_open(&out, out_path, err, sizeof(err))) { die("%s", err); }
    for (size_t row = 0; row < BT; row++) {
        atomic_write(&out, model.acts.logits + row * Vp, (size_t)V * sizeof(float));
    }
    if (atomic_commit(&out, err, sizeof(err))) { die("%s", err); }
    printf("model_logits: %s (L %d, C %d, NH %d, V %d), %d x %d tokens of %s from token %zu -> %s (%d, %d, %d) "
           "float32\n", model_path, config.num_layers, config.channels, config.num_heads, V, B, T, shard_path, offset,
           out_path, B, T, V);
    printf("mean loss %.6f\n", (double)model.mean_loss);
    dataloader_free(&loader);
    gpt2_free(&model);
    return 0;
}
