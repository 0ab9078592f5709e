/*
llmc/run.h — a training run's setup and its reporting, shared by both mains: the tokenizer, the model's shape, the
batch and the data loaders from the flags (run_setup), the start-up box, the per-step progress line, when to sample,
and the steps skipped in a row (the output folder, its lock, checkpoints and logs are run_folder.h's).
*/
#ifndef GPTFP8_RUN_H
#define GPTFP8_RUN_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fp8/diag.h"
#include "args.h"
#include "checkpoint.h"
#include "dataloader.h"
#include "gpt2.h"
#include "run_data.h"
#include "run_folder.h"
#include "tokenizer.h"
#include "utils.h"

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ----------------------------------------------------------------------------
// a run's setup, shared by both mains: tokenizer, model shape, batch, data loaders, step counts, output folder

typedef struct {
    Tokenizer tokenizer;
    int have_tokenizer;
    char* tokenizer_path;  // (allocated) -tk, or tokenizer.bin beside the training data
    RunDataFile tokenizer_file;   // its absolute path, size and checksum (when have_tokenizer)
    uint64_t tokenizer_checksum;  // XXH3-64 of the tokenizer, 0 without one: what the state files record
    RunData model_record;         // -e FILE's run record (dataset.txt beside FILE), when have_model_record
    int have_model_record;
    char* model_record_path;      // (allocated) where it was read
    char from_model_record[16];   // the flags taken from it: "-i -j -tk", or ""
    RunData data;                 // what this run reads, for its own record (rank 0 with -o; have_data)
    int have_data;
    GPT2Config config;
    float* loaded_params;  // (num_parameters) from -e model.bin, else NULL: initialise from the seed
    size_t loaded_count;
    int B, T, total_batch, grad_accum_steps;
    DataLoader train_loader, val_loader;
    int have_val, train_steps, val_steps;
} RunSetup;

// ----------------------------------------------------------------------------
// what the run was trained on (llmc/run_data.h): the model's record, the tokenizer's checks, the run's own record

// A tokenizer that is not the model's or the data's: refused, or with -other_tokenizer 1 a warning.
static inline void run_tokenizer_mismatch(const TrainArgs* args, const char* what) {
    if (!args->other_tokenizer) {
        die("%s: give the tokenizer it was made with (-tk), or -other_tokenizer 1 to go on with this one", what);
    }
    fprintf(stderr, "warning: %s (-other_tokenizer 1: going on with it)\n", what);
}

// -e FILE: the record of the run that wrote FILE (dataset.txt in FILE's folder) sets the -i, -j and -tk not given, so
// the model is evaluated, sampled and trained on with its own data and tokenizer; a model file without one (llm.c's,
// or moved out of its folder) is one warning.
static inline void run_apply_model_record(TrainArgs* args, RunSetup* run) {
    char err[ERROR_MESSAGE_MAX];
    run->model_record_path = run_data_path_beside(args->model_spec);
    int rc = run_data_read(run->model_record_path, &run->model_record, err, sizeof(err));
    if (rc < 0) { die("%s (the record of the run that wrote -e %s)", err, args->model_spec); }
    if (rc == 1) {
        fprintf(stderr, "warning: -e %s: no %s beside it (an llm.c model file, or one moved out of its run folder), "
                "so nothing says which tokenizer and data it was trained with: the ones given (or the defaults) are "
                "used unchecked\n", args->model_spec, RUN_DATA_FILE);
        return;
    }
    run->have_model_record = 1;
    const RunData* r = &run->model_record;
    char* taken = run->from_model_record;
    if (!args->train_explicit) {
        args->train_pattern = r->train_pattern;
        strcat(taken, "-i ");
    }
    if (!args->val_explicit && r->val_pattern) {
        args->val_pattern = r->val_pattern;
        strcat(taken, "-j ");
    }
    if (!args->tokenizer_explicit && r->have_tokenizer) {
        if (access(r->tokenizer.path, R_OK) != 0) {
            die("%s records the tokenizer %s, which cannot be read now (%s): give the model's tokenizer with -tk",
                run->model_record_path, r->tokenizer.path, strerror(errno));
        }
        args->tokenizer_path = r->tokenizer.path;
        args->tokenizer_explicit = 1;
        strcat(taken, "-tk ");
    }
    size_t n = strlen(taken);
    if (n) {
        taken[n - 1] = '\0';
        printf("-e %s: %s from its run's record %s\n", args->model_spec, taken, run->model_record_path);
    }
}

// The tokenizer in use against the one the model's run recorded.
static inline void run_check_model_tokenizer(const TrainArgs* args, const RunSetup* run) {
    const RunData* r = &run->model_record;
    if (!r->have_tokenizer) { return; }  // that run had none: nothing to check against
    char what[ERROR_MESSAGE_MAX], a[CHECKSUM_HEX_CHARS], b[CHECKSUM_HEX_CHARS];
    checksum_hex(r->tokenizer.checksum, a);
    if (!run->have_tokenizer) {
        snprintf(what, sizeof(what), "-e %s was trained with the tokenizer %s (XXH3 %s, %s), and this run has none",
                 args->model_spec, r->tokenizer.path, a, run->model_record_path);
        run_tokenizer_mismatch(args, what);
        return;
    }
    if (run->tokenizer_checksum == r->tokenizer.checksum) { return; }
    checksum_hex(run->tokenizer_checksum, b);
    snprintf(what, sizeof(what), "tokenizer %s (XXH3 %s) is not the one -e %s was trained with: %s recorded %s (XXH3 %s)",
             run->tokenizer_path, b, args->model_spec, run->model_record_path, r->tokenizer.path, a);
    run_tokenizer_mismatch(args, what);
}

// Every shard whose manifest names the tokenizer that encoded it, against the run's tokenizer.
static inline void run_check_data_tokenizer(const TrainArgs* args, const RunSetup* run) {
    if (!run->have_tokenizer) { return; }
    char err[ERROR_MESSAGE_MAX];
    const glob_t* sets[2] = {&run->train_loader.glob_result, run->have_val ? &run->val_loader.glob_result : NULL};
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; sets[s] && i < sets[s]->gl_pathc; i++) {
            if (run_data_check_shard_tokenizer(sets[s]->gl_pathv[i], &run->tokenizer_file, err, sizeof(err))) {
                run_tokenizer_mismatch(args, err);
                return;  // one line says it; the other shards of the set were made the same way
            }
        }
    }
}

// process_rank / num_processes: this rank's slice of every batch (each rank reads its own B*T of every stride).
static inline void run_setup(TrainArgs* args, RunSetup* run, int process_rank, int num_processes) {
    char err[ERROR_MESSAGE_MAX];
    memset(run, 0, sizeof(*run));
    // -e FILE: a model file (not a preset) whose run recorded its data gives the -i, -j and -tk not given
    int model_file = args->model_spec[0] &&
                     gpt2_depth_preset(args->model_spec, &args->num_layers, &args->channels, &args->num_heads) != 0;
    if (model_file) { run_apply_model_record(args, run); }
    // tokenizer: an explicit path must load; otherwise tokenizer.bin beside the training data, if there is one
    if (args->tokenizer_explicit) {
        run->tokenizer_path = alloc_printf("%s", args->tokenizer_path);
    } else {
        const char* slash = strrchr(args->train_pattern, '/');
        run->tokenizer_path = slash ? alloc_printf("%.*s/tokenizer.bin", (int)(slash - args->train_pattern),
                                                   args->train_pattern)
                                    : alloc_printf("tokenizer.bin");
    }
    if (args->tokenizer_explicit || access(run->tokenizer_path, F_OK) == 0) {
        if (tokenizer_init(&run->tokenizer, run->tokenizer_path, err, sizeof(err))) { die("%s", err); }
        run->have_tokenizer = 1;
        if (run_data_file_of(run->tokenizer_path, &run->tokenizer_file, err, sizeof(err))) { die("%s", err); }
        run->tokenizer_checksum = run->tokenizer_file.checksum;
    }
    if (run->have_model_record) { run_check_model_tokenizer(args, run); }
    // the model's shape: from a model file, a preset, or the free sizes; vocabulary from file, tokenizer or -V
    GPT2Config* cfg = &run->config;
    if (model_file) {
        run->loaded_params = read_model_file(args->model_spec, cfg, &run->loaded_count);
    } else {
        cfg->num_layers = args->num_layers;
        cfg->channels = args->channels;
        cfg->num_heads = args->num_heads;
        cfg->max_seq_len = args->max_seq_len ? args->max_seq_len : (args->model_spec[0] ? 1024 : args->T);
        cfg->vocab_size = args->vocab_override ? args->vocab_override : run->have_tokenizer ? (int)run->tokenizer.vocab_size : 0;
        if (!cfg->vocab_size) { die("cannot tell the vocabulary size: give -tk tokenizer.bin, -V, or -e model.bin"); }
        cfg->padded_vocab_size = padded_vocab(cfg->vocab_size);
        if (cfg->channels % cfg->num_heads != 0) { die("-C %d is not divisible by -NH %d", cfg->channels, cfg->num_heads); }
    }
    if (run->have_tokenizer && (int)run->tokenizer.vocab_size != cfg->vocab_size) {
        die("tokenizer %s has %u tokens but the model has a vocabulary of %d", run->tokenizer_path,
            run->tokenizer.vocab_size, cfg->vocab_size);
    }
    run->B = args->B;
    run->T = args->T;
    // every product of sizes in 64 bits: -b and -t alone fit an int, their product need not
    long long BT = (long long)run->B * run->T, global_BT = BT * num_processes;
    if (run->T > cfg->max_seq_len) { die("-t %d is longer than the model's maximum sequence length %d", run->T, cfg->max_seq_len); }
    if (BT > INT_MAX) {  // token positions of a micro-batch are int indices in both trainers
        die("-b %d -t %d: B*T = %lld tokens per micro-batch, more than %d", run->B, run->T, BT, INT_MAX);
    }
    if (global_BT > TOTAL_BATCH_MAX) {  // -d, the total batch, is at most this, and it is a multiple of B*T*processes
        die("-b %d -t %d with %d processes: %lld tokens per micro-step, more than the largest total batch (%d)", run->B,
            run->T, num_processes, global_BT, TOTAL_BATCH_MAX);
    }
    run->total_batch = args->total_batch_size == -1 ? (int)global_BT : args->total_batch_size;
    if (run->total_batch <= 0 || run->total_batch % global_BT != 0) {
        if (num_processes > 1) {
            die("-d %d must be a positive multiple of B*T*processes = %d*%d*%d = %lld", run->total_batch, run->B, run->T,
                num_processes, global_BT);
        }
        die("-d %d must be a positive multiple of B*T = %d*%d = %lld", run->total_batch, run->B, run->T, BT);
    }
    run->grad_accum_steps = (int)(run->total_batch / global_BT);
    if (2 * args->fp8_bf16_first_last > cfg->num_layers) {
        die("-fp8_bf16_first_last %d leaves no FP8 block in a %d-layer model (at most %d)", args->fp8_bf16_first_last,
            cfg->num_layers, cfg->num_layers / 2);
    }
    // data
    if (dataloader_init(&run->train_loader, args->train_pattern, (size_t)run->B, (size_t)run->T, process_rank,
                        num_processes, cfg->vocab_size, err, sizeof(err))) {
        die("%s", err);
    }
    run->have_val = args->val_every > 0;
    if (run->have_val && dataloader_init(&run->val_loader, args->val_pattern, (size_t)run->B, (size_t)run->T,
                                         process_rank, num_processes, cfg->vocab_size, err, sizeof(err))) {
        die("%s", err);
    }
    run_check_data_tokenizer(args, run);
    if (args->output_dir && !args->estimate_only && process_rank == 0) {
        run_data_collect(&run->data, run->have_tokenizer ? &run->tokenizer_file : NULL, args->train_pattern,
                         &run->train_loader.glob_result, args->val_pattern,
                         run->have_val ? &run->val_loader.glob_result : NULL);
        run->have_data = 1;
    }
    run->train_steps = args->max_steps;
    if (run->train_steps == -1) {
        size_t epoch = dataloader_num_batches(&run->train_loader) / (size_t)run->grad_accum_steps;
        if (epoch > MAX_STEPS_MAX) { die("-x -1: one epoch of this data is %zu steps, more than %d: give -x", epoch, MAX_STEPS_MAX); }
        run->train_steps = epoch < 1 ? 1 : (int)epoch;
    }
    size_t val_batches = run->have_val ? dataloader_num_batches(&run->val_loader) : 0;
    run->val_steps = val_batches > (size_t)args->val_max_steps ? args->val_max_steps : (int)val_batches;
}

static inline void run_free(RunSetup* run) {
    dataloader_free(&run->train_loader);
    if (run->have_val) { dataloader_free(&run->val_loader); }
    if (run->have_tokenizer) { tokenizer_free(&run->tokenizer); }
    free(run->tokenizer_path);
    run_data_file_free(&run->tokenizer_file);
    run_data_free(&run->model_record);
    free(run->model_record_path);
    run_data_free(&run->data);
    free(run->loaded_params);
}

// ----------------------------------------------------------------------------
// the start-up configuration box, drawn the same way by both trainers

// Rows "| key | value |" of one width: a value longer than its column wraps onto continuation rows (at the last space
// that fits, else mid-word), so no row spills past the right border.
enum { BOX_KEY_WIDTH = 21, BOX_VALUE_WIDTH = 72 };

static inline void box_rule(FILE* out) {
    fputc('+', out);
    for (int i = 0; i < BOX_KEY_WIDTH + 2; i++) { fputc('-', out); }
    fputc('+', out);
    for (int i = 0; i < BOX_VALUE_WIDTH + 2; i++) { fputc('-', out); }
    fputs("+\n", out);
}

static inline void box_row(FILE* out, const char* key, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void box_row(FILE* out, const char* key, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    char* value = alloc_vprintf(fmt, args);
    va_end(args);
    const char* rest = value;
    do {
        size_t take = strlen(rest);
        if (take > BOX_VALUE_WIDTH) {  // break before the last space that keeps the row within the column
            take = BOX_VALUE_WIDTH;
            for (size_t i = BOX_VALUE_WIDTH; i > 0; i--) {
                if (rest[i] == ' ') { take = i; break; }
            }
        }
        fprintf(out, "| %-*.*s | %-*.*s |\n", BOX_KEY_WIDTH, BOX_KEY_WIDTH, key, BOX_VALUE_WIDTH, (int)take, rest);
        key = "";
        rest += take;
        while (*rest == ' ') { rest++; }
    } while (*rest);
    free(value);
}

// The rows both trainers show: data, output, model, batch, optimizer, precision and the FP8 recipe. Each trainer
// draws the rules and adds its own rows (threads; device, processes, attention).
static inline void box_run_rows(FILE* out, const TrainArgs* args, const RunSetup* run, size_t num_parameters,
                         int num_processes) {
    const GPT2Config* c = &run->config;
    box_row(out, "train data", "%s", args->train_pattern);
    box_row(out, "val data", "%s", run->have_val ? args->val_pattern : "(none: -v 0)");
    if (run->have_tokenizer) {
        char hex[CHECKSUM_HEX_CHARS];
        checksum_hex(run->tokenizer_checksum, hex);
        box_row(out, "tokenizer", "%s (V %u, XXH3 %s)", run->tokenizer_path, run->tokenizer.vocab_size, hex);
    } else {
        box_row(out, "tokenizer", "(none: no sampling; -tk gives one)");
    }
    if (run->from_model_record[0]) {
        box_row(out, "data of the model", "%s from %s", run->from_model_record, run->model_record_path);
    }
    box_row(out, "output dir", "%s", args->output_dir ? args->output_dir : "(none: no logs or checkpoints)");
    box_row(out, "model", "L %d, C %d, NH %d, V %d (Vp %d), maxT %d, %zu params", c->num_layers, c->channels,
            c->num_heads, c->vocab_size, c->padded_vocab_size, c->max_seq_len, num_parameters);
    box_row(out, "batch", "B %d, T %d%s, total %d tokens, %d accumulation steps", run->B, run->T,
            num_processes > 1 ? " per rank" : "", run->total_batch, run->grad_accum_steps);
    box_row(out, "optimizer", "AdamW lr %.2e, warmup %d, final fraction %.3f, wd %.3f, clip %.2f, %d steps",
            args->learning_rate, args->warmup_steps, args->final_lr_fraction, args->weight_decay, args->grad_clip,
            run->train_steps);
    if (args->precision != PRECISION_FP8) {
        box_row(out, "precision", "%s", precision_name(args->precision));
        return;
    }
    int first = args->fp8_bf16_first_last, last = c->num_layers - 1 - args->fp8_bf16_first_last;
    box_row(out, "precision", "fp8 in blocks %d..%d (%s, %s, %s, %s), the LM head in %s", first, last, linear_names[0],
            linear_names[1], linear_names[2], linear_names[3], args->fp8_lm_head ? "fp8" : "bf16");
    char recipe[1024] = "";
    FILE* text = fmemopen(recipe, sizeof(recipe), "w");  // fp8_recipe_print writes to a FILE
    if (text) {
        fp8_recipe_print(&args->recipe, text);
        fclose(text);
    }
    recipe[strcspn(recipe, "\n")] = '\0';
    box_row(out, "fp8 recipe", "%s", recipe);
}

// The per-step progress line on stdout and the llm.c train line in main.log. `seconds`: this step's time; the ETA
// averages the steps after the first of this process (which pays for warm-up). mfu_percent < 0: not shown.
typedef struct {
    double total_time;
    int timed_steps;
} StepTimer;

static inline void report_step(StepTimer* timer, LogFile* main_log, int step, int start_step, int train_steps, double loss,
                        float norm, float lr, double seconds, int total_batch, double mfu_percent) {
    if (step > start_step) {
        timer->total_time += seconds;
        timer->timed_steps++;
    }
    double avg = timer->timed_steps ? timer->total_time / timer->timed_steps : seconds;
    double eta = avg * (train_steps - step - 1);
    printf("step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s", step + 1, train_steps, loss, norm, lr,
           seconds * 1000, total_batch / seconds);
    if (mfu_percent >= 0) { printf(" | mfu %.1f%%", mfu_percent); }
    printf(" | ETA %dm%02ds\n", (int)(eta / 60), (int)eta % 60);
    fflush(stdout);
    log_printf(main_log, "s:%d trl:%.4f lr:%.6f norm:%.2f\n", step + 1, loss, lr, norm);
}


// Whether the trainer samples at the start of `step`: every -s steps and at the end of training; with -x 0 (no
// training: evaluate and sample a model given with -e) once, at step 0. Needs a tokenizer; -x 0 without one says so.
static inline int sample_due(const TrainArgs* args, const RunSetup* run, int step) {
    if (args->sample_every <= 0) { return 0; }
    int due = run->train_steps == 0 || (step > 0 && (step % args->sample_every == 0 || step == run->train_steps));
    if (due && !run->have_tokenizer) {
        if (run->train_steps == 0) { printf("sample: none, no tokenizer (give -tk tokenizer.bin)\n"); }
        return 0;
    }
    return due;
}

// Steps skipped for a non-finite loss or gradient norm. A few in a row are weathered (the FP8 state drops their
// amaxes and the weights stay), but a run that keeps skipping trains nothing and must not end as if it had: more than
// -max_skipped in a row stop it, and so does reaching its end with every step it ran skipped. Either is one line and a
// non-zero exit, and no checkpoint is written after it (the newest one holds the last weights a step changed, or the
// input's).
typedef struct {
    int in_a_row, first_in_row;  // the current run of skipped steps (1-based step numbers, as the progress line's)
    int ran, skipped;            // steps this process ran, and how many of them it skipped
} SkippedSteps;

static inline void skipped_steps_record(SkippedSteps* s, const TrainArgs* args, int step, int skipped) {
    s->ran++;
    if (!skipped) {
        s->in_a_row = 0;
        return;
    }
    s->skipped++;
    if (s->in_a_row++ == 0) { s->first_in_row = step + 1; }
    if (s->in_a_row > args->max_skipped) {
        die("steps %d..%d: %d steps in a row skipped (non-finite loss or gradient norm), more than -max_skipped %d: "
            "the run stops, as it trains nothing (its newest checkpoint is kept; a smaller -l or another -e may help)",
            s->first_in_row, step + 1, s->in_a_row, args->max_skipped);
    }
}

// At the end of training, before the final checkpoint: a run whose every step was skipped stops instead.
static inline void skipped_steps_check_end(const SkippedSteps* s) {
    if (s->ran > 0 && s->skipped == s->ran) {
        die("all %d steps of this run were skipped (non-finite loss or gradient norm): it trained nothing, so it stops "
            "without a final checkpoint (a smaller -l or another -e may help)", s->ran);
    }
}

// -y 1 found a checkpoint (the newest complete one is at step `latest`, -1 when none) at or past -x: nothing is left
// to train. One line, and the caller exits 0 before loading or writing anything: the run asked for is complete, so
// re-submitting a finished job succeeds.
static inline int resume_is_complete(const TrainArgs* args, long long latest, int train_steps) {
    if (!args->resume || latest < 0 || latest < train_steps) { return 0; }
    printf("resume: the newest checkpoint in %s is at step %lld, %s -x %d: nothing to train (raise -x to go on)\n",
           args->output_dir, latest, latest == train_steps ? "the end of" : "past", train_steps);
    return 1;
}

// ----------------------------------------------------------------------------
// the run's data record and its checkpoints

// After the resume decision (rank 0 with -o): a run from step 0 records its data in dataset.txt; a resumed one checks
// that it reads what its run began on. A folder of a run that began before runs recorded their data gets its record
// now, saying so.
static inline void run_record_data(const TrainArgs* args, RunSetup* run, int start_step) {
    if (!run->have_data) { return; }
    char err[ERROR_MESSAGE_MAX];
    if (start_step == 0) {
        run_data_write(args->output_dir, &run->data, NULL);
        return;
    }
    char* path = alloc_printf("%s/%s", args->output_dir, RUN_DATA_FILE);
    RunData was;
    int rc = run_data_read(path, &was, err, sizeof(err));
    if (rc < 0) { die("cannot resume: %s (move it away and -y 1 records the data anew)", err); }
    if (rc == 1) {
        char* note = alloc_printf("recorded at the resume from step %d: the run began before runs recorded their data",
                                  start_step);
        run_data_write(args->output_dir, &run->data, note);
        printf("resume: %s recorded the data now (the run began before runs recorded theirs)\n", path);
        free(note);
        free(path);
        return;
    }
    char what[ERROR_MESSAGE_MAX];
    run_data_tokenizer_difference(&was, &run->data, what, sizeof(what));  // its override is -other_tokenizer's
    if (what[0]) {
        char line[ERROR_MESSAGE_MAX + 64];
        snprintf(line, sizeof(line), "cannot resume with another tokenizer: %s (%s)", what, path);
        run_tokenizer_mismatch(args, line);
    } else {
        run_data_shards_difference(&was, &run->data, what, sizeof(what));
        if (what[0]) {
            if (!args->other_data) {
                die("cannot resume: the data changed since the run began: %s (%s); -other_data 1 resumes on it and "
                    "records it", what, path);
            }
            fprintf(stderr, "warning: the data changed since the run began: %s (-other_data 1: resuming on it)\n",
                    what);
            char* note = alloc_printf("recorded anew at the resume from step %d (-other_data 1): the steps before it "
                                      "read other data", start_step);
            run_data_write(args->output_dir, &run->data, note);
            free(note);
        }
    }
    run_data_free(&was);
    free(path);
}

// What sets each number of this run's model shape (field: "L", "C", "NH", "V" or "maxT"): its flag, -e's preset or
// model file, -t (maxT without -maxT) or the tokenizer (V without -V), into `flag`; how, when that is not the field's
// own flag, into `how` (else ""). For the line that refuses a checkpoint of another shape, which names the flag that
// differs, as every other setting's line does.
static inline void run_shape_origin(const TrainArgs* args, const char* field, char* flag, size_t flaglen,
                                    const char** how) {
    int L, C, NH, preset = args->model_spec[0] && gpt2_depth_preset(args->model_spec, &L, &C, &NH) == 0;
    int v = strcmp(field, "V") == 0, max_t = strcmp(field, "maxT") == 0;
    *how = "";
    if (args->model_spec[0] && !preset) {
        snprintf(flag, flaglen, "-e %s", args->model_spec);
        *how = "a model file's shape is its own; ";
    } else if (v && !args->vocab_override) {
        snprintf(flag, flaglen, "the tokenizer (-tk)");
        *how = "without -V, V is the tokenizer's; ";
    } else if (max_t && !args->max_seq_len) {
        snprintf(flag, flaglen, preset ? "-e %s" : "-t", args->model_spec);
        *how = preset ? "without -maxT, a preset's maxT is 1024; " : "without -maxT, maxT is -t; ";
    } else if (preset && !v && !max_t) {
        snprintf(flag, flaglen, "-e %s", args->model_spec);
    } else {
        snprintf(flag, flaglen, "-%s", field);
    }
}

// Before -y 1 loads checkpoint `step`: a checkpoint of another model shape is refused in one line that names the flag
// setting the first number that differs. Only an intact checkpoint is judged so (its model header read, its files
// checked): a damaged one, or any other mismatch, is left to checkpoint_load, which says what it is.
static inline void run_check_resume_shape(const TrainArgs* args, const RunSetup* run, long long step, int rank) {
    char err[ERROR_MESSAGE_MAX];
    char* path = checkpoint_model_path(args->output_dir, step);
    FILE* f = fopen(path, "rb");
    int32_t header[256];
    GPT2Config file;
    int readable = f && fread(header, sizeof(header), 1, f) == 1 && model_header_parse(header, path, &file, err,
                                                                                        sizeof(err)) == 0;
    if (f) { fclose(f); }
    const GPT2Config* c = &run->config;
    if (!readable || same_config(&file, c) || checkpoint_verify(args->output_dir, step, rank, err, sizeof(err))) {
        free(path);
        return;
    }
    const char* fields[] = {"L", "C", "NH", "V", "maxT"};
    int was[] = {file.num_layers, file.channels, file.num_heads, file.vocab_size, file.max_seq_len};
    int now[] = {c->num_layers, c->channels, c->num_heads, c->vocab_size, c->max_seq_len};
    int i = 0;
    while (i < 4 && was[i] == now[i]) { i++; }
    char flag[256];
    const char* how;
    run_shape_origin(args, fields[i], flag, sizeof(flag), &how);
    die("%s: checkpoint model (L %d, C %d, NH %d, V %d, maxT %d) differs from the run's (L %d, C %d, NH %d, V %d, "
        "maxT %d): %s sets %s, %d in the checkpoint but %d in this run (%sresume with the checkpoint's, or start a new "
        "run in another -o)", path, was[0], was[1], was[2], was[3], was[4], now[0], now[1], now[2], now[3], now[4],
        flag, fields[i], was[i], now[i], how);
}

// What a checkpoint keeps of the run around the model.
static inline CheckpointRunState run_checkpoint_state(const RunSetup* run, const SkippedSteps* skipped) {
    CheckpointRunState state = {skipped->in_a_row, skipped->in_a_row ? skipped->first_in_row : 0,
                                run->tokenizer_checksum};
    return state;
}

// After loading a checkpoint: its tokenizer must be this run's, and its skipped steps in a row go on counting.
static inline void run_resume_state(const TrainArgs* args, const RunSetup* run, const CheckpointRunState* state,
                                    SkippedSteps* skipped) {
    if (state->tokenizer_checksum && state->tokenizer_checksum != run->tokenizer_checksum) {
        char what[ERROR_MESSAGE_MAX], a[CHECKSUM_HEX_CHARS], b[CHECKSUM_HEX_CHARS];
        checksum_hex(state->tokenizer_checksum, a);
        checksum_hex(run->tokenizer_checksum, b);
        if (run->have_tokenizer) {
            snprintf(what, sizeof(what), "cannot resume with another tokenizer: the checkpoint's run read one of XXH3 "
                     "%s, %s is XXH3 %s", a, run->tokenizer_path, b);
        } else {
            snprintf(what, sizeof(what), "cannot resume without a tokenizer: the checkpoint's run read one of XXH3 %s",
                     a);
        }
        run_tokenizer_mismatch(args, what);
    }
    skipped->in_a_row = state->skipped_in_a_row;
    skipped->first_in_row = state->first_skipped_step;
}

#endif  // GPTFP8_RUN_H
