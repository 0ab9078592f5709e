/*
dev/compare_runs.c — two training runs that should agree, compared step by step: the GPU trainer's run against the
CPU reference's from the same model file, data and flags (scripts/gpu_check.sh's xcheck stage), or any two runs.

  dev/compare_runs [-loss_first R] [-loss R] [-norm R] [-amax R] [-scale R] [-skipped STEPS] RUN REFERENCE

RUN and REFERENCE are -o folders. From each main.log (llm.c's "s:N trl:X lr:Y norm:Z" and "s:N tel:X" lines) and the
state file of each one's newest complete checkpoint (state_%08d_00000.bin, read and checksummed by llmc/checkpoint.h):
  train loss, step 1      -loss_first: both sides start from the same weights, so only one forward's rounding differs
  val loss, step 0        -loss_first, for the same reason
  train loss, later       -loss
  val loss, later         -loss
  gradient norm           -norm, every step (a skipped step's norm is not finite on both sides)
  learning rate           the same text at every step (both trainers compute it on the host, same expression)
  skipped steps           a step skipped (its norm not finite) on one side is skipped on the other; with -skipped
                          (a comma-separated list of steps, as main.log numbers them), exactly those are
  FP8 amax histories      -amax, every row of every slot; an entry 0 on one side only is always a failure (a slot
                          recorded or rolled on one side only)
  FP8 scales              -scale, scale and scale_inv of every slot
Every tolerance is relative to the REFERENCE's value (R = 0.01 is 1%). The logs print losses with 4 decimals and
norms with 2, so each side's number is off by up to half its last digit: the comparison adds 1e-4 (losses) and 1e-2
(norms) to the tolerance. Every step must appear on both sides; the two state files must be of the same step,
precision and FP8 recipe. Defaults (-loss_first 0 ...) demand equality, for runs that must be bit-identical.

Prints, for each quantity, one line: PASS or FAIL, the largest difference (where, and the two values) and the
tolerance; then, under a FAIL, one line per entry out of tolerance (the first 10) naming the step (or the slot and
history row) and the quantity. The last line is "compare_runs: N passed, M failed" (one check per quantity compared).
Exit: 0 when everything is within tolerance, 1 when not, 2 on bad arguments or a file that cannot be read.
*/
#include "../llmc/args.h"  // MAX_STEPS_MAX: the largest step a run can have
#include "../llmc/checkpoint.h"
#include "../llmc/linear.h"

#define LOSS_PRINT_RESOLUTION 1e-4  // main.log's %.4f: each side rounded by at most half of it
#define NORM_PRINT_RESOLUTION 1e-2  // main.log's %.2f
#define MAX_PRINTED_FAILURES 10
#define USAGE "dev/compare_runs [-loss_first R] [-loss R] [-norm R] [-fp8_forward R] [-fp8_backward R] [-skipped STEPS] RUN REFERENCE"

typedef struct {
    double loss_first, loss, norm;    // relative tolerances of the logs' numbers
    double fp8_forward, fp8_backward;  // of the FP8 forward and backward slots' histories and scales
    const char* expected_skipped;      // -skipped: "4" or "4,9", or NULL
} Tolerances;

static void usage_error(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "compare_runs: error: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, " (usage: %s)\n", USAGE);
    va_end(args);
    exit(2);
}

// ----------------------------------------------------------------------------
// main.log

typedef struct {
    int has_train, has_val;
    double train_loss, norm, val_loss;
    char lr[32];  // as printed
} LogStep;

typedef struct {
    LogStep* steps;  // indexed by step
    int num_steps;   // one past the largest step seen
} RunLog;

static LogStep* log_step(RunLog* log, long long step, const char* path) {
    if (step < 0 || step > MAX_STEPS_MAX) { usage_error("%s: step %lld out of range", path, step); }
    if (step >= log->num_steps) {
        int n = (int)step + 1;
        log->steps = (LogStep*)realloc(log->steps, (size_t)n * sizeof(LogStep));
        if (!log->steps) { usage_error("out of memory reading %s", path); }
        memset(log->steps + log->num_steps, 0, (size_t)(n - log->num_steps) * sizeof(LogStep));
        log->num_steps = n;
    }
    return &log->steps[step];
}

static void read_main_log(const char* dir, RunLog* log) {
    char* path = alloc_printf("%s/main.log", dir);
    FILE* f = fopen(path, "r");
    if (!f) { usage_error("cannot open %s: %s", path, strerror(errno)); }
    memset(log, 0, sizeof(*log));
    char line[512];
    int number = 0, lines = 0;
    while (fgets(line, sizeof(line), f)) {
        number++;
        long long step;
        double loss, norm;
        char lr[32], tail;
        if (sscanf(line, "s:%lld trl:%lf lr:%31s norm:%lf %c", &step, &loss, lr, &norm, &tail) == 4) {
            LogStep* s = log_step(log, step, path);
            if (s->has_train) { usage_error("%s:%d: a second train line for step %lld", path, number, step); }
            s->has_train = 1, s->train_loss = loss, s->norm = norm;
            snprintf(s->lr, sizeof(s->lr), "%s", lr);
        } else if (sscanf(line, "s:%lld tel:%lf %c", &step, &loss, &tail) == 2) {
            LogStep* s = log_step(log, step, path);
            if (s->has_val) { usage_error("%s:%d: a second val line for step %lld", path, number, step); }
            s->has_val = 1, s->val_loss = loss;
        } else {
            line[strcspn(line, "\r\n")] = '\0';
            usage_error("%s:%d: not a main.log line: %.80s", path, number, line);
        }
        lines++;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) { usage_error("cannot read %s", path); }
    if (lines == 0) { usage_error("%s is empty", path); }
    free(path);
}

// ----------------------------------------------------------------------------
// one quantity's comparison: its largest difference and the entries out of tolerance

typedef struct {
    const char* name;
    double resolution;  // allowed |a - b| = tolerance * |reference| + resolution (the logs' print rounding)
    char tolerance_text[64];  // the tolerance as the report states it
    long compared, failed;
    double worst;  // the largest |a - b| / |reference| (inf when one side is not finite, or for a structural failure)
    char worst_at[160];
    char failures[MAX_PRINTED_FAILURES][220];
} Quantity;

static int checks_passed = 0, checks_failed = 0;

static Quantity quantity(const char* name, double tolerance, double resolution) {
    Quantity q;
    memset(&q, 0, sizeof(q));
    q.name = name;
    q.resolution = resolution;
    snprintf(q.tolerance_text, sizeof(q.tolerance_text), "%.3g + %g", tolerance, resolution);
    return q;
}

// A failure that is not a pair of numbers (a step on one side only, a slot used on one side only).
static void quantity_fail(Quantity* q, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void quantity_fail(Quantity* q, const char* fmt, ...) {
    q->compared++;
    if (q->failed < MAX_PRINTED_FAILURES) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(q->failures[q->failed], sizeof(q->failures[0]), fmt, args);
        va_end(args);
    }
    q->failed++;
    q->worst = INFINITY;
    snprintf(q->worst_at, sizeof(q->worst_at), "see below");
}

// value (RUN's) against reference (REFERENCE's) at `where` ("step 7", "slot 12 (block 1 qkv input) history row 3"),
// within tolerance * |reference| + the quantity's resolution. Equal values pass, NaN included.
static void quantity_compare(Quantity* q, double value, double reference, double tolerance, const char* where) {
    q->compared++;
    int equal = value == reference || (isnan(value) && isnan(reference));
    double difference = equal ? 0.0 : fabs(value - reference);
    double relative = equal ? 0.0 : isfinite(difference) ? difference / fmax(fabs(reference), 1e-30) : INFINITY;
    // (the slack: 1.74 - 1.73 is a hair above 0.01 in binary)
    int ok = equal || difference <= (tolerance * fabs(reference) + q->resolution) * (1.0 + 1e-9);
    if (q->compared == 1 || relative > q->worst) {
        q->worst = relative;
        snprintf(q->worst_at, sizeof(q->worst_at), "%s: %.7g vs %.7g", where, value, reference);
    }
    if (!ok) {
        if (q->failed < MAX_PRINTED_FAILURES) {
            snprintf(q->failures[q->failed], sizeof(q->failures[0]), "%s at %s: %.7g vs %.7g (relative %.3g, "
                     "tolerance %.3g + %g)", q->name, where, value, reference, relative, tolerance, q->resolution);
        }
        q->failed++;
    }
}

// An exact check's pass (a step's learning rate, a skipped step): counted, nothing to measure.
static void quantity_agree(Quantity* q) { q->compared++; }

static void quantity_report(const Quantity* q, const char* summary) {
    int ok = q->failed == 0;
    if (summary && ok) {
        printf("PASS %s: %s\n", q->name, summary);
    } else if (summary) {
        printf("FAIL %s: %ld of %ld differ\n", q->name, q->failed, q->compared);
    } else {
        printf("%s %s: %ld compared, largest relative difference %.3g (%s), tolerance %s\n", ok ? "PASS" : "FAIL",
               q->name, q->compared, q->worst, q->worst_at[0] ? q->worst_at : "-", q->tolerance_text);
    }
    for (long i = 0; i < q->failed && i < MAX_PRINTED_FAILURES; i++) { printf("  FAIL %s\n", q->failures[i]); }
    if (q->failed > MAX_PRINTED_FAILURES) { printf("  ... %ld more out of tolerance\n", q->failed - MAX_PRINTED_FAILURES); }
    if (ok) {
        checks_passed++;
    } else {
        checks_failed++;
    }
}

// ----------------------------------------------------------------------------
// the logs


// whether `step` is in the comma-separated list (NULL: no list)
static int in_step_list(const char* list, int step) {
    for (const char* p = list; p && *p;) {
        char* end;
        long v = strtol(p, &end, 10);
        if (v == step) { return 1; }
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static void compare_logs(const RunLog* run, const RunLog* ref, const Tolerances* tol) {
    Quantity first_train = quantity("train loss of step 1", tol->loss_first, LOSS_PRINT_RESOLUTION);
    Quantity first_val = quantity("val loss of step 0", tol->loss_first, LOSS_PRINT_RESOLUTION);
    Quantity train = quantity("train loss", tol->loss, LOSS_PRINT_RESOLUTION);
    Quantity val = quantity("val loss", tol->loss, LOSS_PRINT_RESOLUTION);
    Quantity norms = quantity("gradient norm", tol->norm, NORM_PRINT_RESOLUTION);
    Quantity lr = quantity("learning rate", 0.0, 0.0);
    Quantity skipped = quantity("skipped steps", 0.0, 0.0);
    char skipped_list[256] = "";
    int n = run->num_steps > ref->num_steps ? run->num_steps : ref->num_steps;
    static const LogStep none;
    for (int step = 0; step < n; step++) {
        const LogStep* a = step < run->num_steps ? &run->steps[step] : &none;
        const LogStep* b = step < ref->num_steps ? &ref->steps[step] : &none;
        char where[32];
        snprintf(where, sizeof(where), "step %d", step);
        Quantity* train_q = step == 1 ? &first_train : &train;
        if (a->has_train != b->has_train) {
            quantity_fail(train_q, "train loss at step %d: in %s only", step, a->has_train ? "RUN" : "REFERENCE");
        } else if (a->has_train) {
            quantity_compare(train_q, a->train_loss, b->train_loss, step == 1 ? tol->loss_first : tol->loss, where);
            quantity_compare(&norms, a->norm, b->norm, tol->norm, where);
            if (strcmp(a->lr, b->lr) != 0) {
                quantity_fail(&lr, "learning rate at step %d: %s vs %s", step, a->lr, b->lr);
            } else {
                quantity_agree(&lr);
            }
            int skipped_a = !isfinite(a->norm), skipped_b = !isfinite(b->norm);
            int expected = in_step_list(tol->expected_skipped, step);
            if (skipped_a != skipped_b) {
                quantity_fail(&skipped, "step %d skipped (gradient norm %g vs %g) in %s only", step, a->norm, b->norm,
                              skipped_a ? "RUN" : "REFERENCE");
            } else if (tol->expected_skipped && skipped_a != expected) {
                quantity_fail(&skipped, "step %d %s on both sides, -skipped %s", step,
                              skipped_a ? "skipped" : "not skipped", tol->expected_skipped);
            } else {
                quantity_agree(&skipped);
                if (skipped_a) {
                    size_t used = strlen(skipped_list);
                    snprintf(skipped_list + used, sizeof(skipped_list) - used, "%s%d", used ? "," : "", step);
                }
            }
        }
        if (a->has_val != b->has_val) {
            quantity_fail(step == 0 ? &first_val : &val, "val loss at step %d: in %s only", step,
                          a->has_val ? "RUN" : "REFERENCE");
        } else if (a->has_val) {
            quantity_compare(step == 0 ? &first_val : &val, a->val_loss, b->val_loss,
                             step == 0 ? tol->loss_first : tol->loss, where);
        }
    }
    // a step expected skipped that neither log has
    for (const char* p = tol->expected_skipped; p && *p;) {
        char* end;
        long step = strtol(p, &end, 10);
        if (step < 0 || step >= n || !(step < run->num_steps && run->steps[step].has_train)) {
            quantity_fail(&skipped, "step %ld: -skipped names it, but the logs have no train line for it", step);
        }
        p = *end == ',' ? end + 1 : end;
    }
    char lr_summary[64], skipped_summary[300];
    snprintf(lr_summary, sizeof(lr_summary), "the same at %ld steps", lr.compared);
    snprintf(skipped_summary, sizeof(skipped_summary), "%s on both sides%s%s", skipped_list[0] ? skipped_list : "none",
             tol->expected_skipped ? ", as -skipped " : "", tol->expected_skipped ? tol->expected_skipped : "");
    quantity_report(&first_train, NULL);
    quantity_report(&first_val, NULL);
    quantity_report(&train, NULL);
    quantity_report(&val, NULL);
    quantity_report(&norms, NULL);
    quantity_report(&lr, lr_summary);
    quantity_report(&skipped, skipped_summary);
}

// ----------------------------------------------------------------------------
// the FP8 state of the newest checkpoint

typedef struct {
    char* path;  // (allocated)
    StateHeader header;
    float *m, *v;
    StateFp8Arrays fp8;
} RunState;

static void read_state(const char* dir, long long step, RunState* s) {
    char err[ERROR_MESSAGE_MAX];
    memset(s, 0, sizeof(*s));
    s->path = checkpoint_state_path(dir, step, 0);
    if (state_file_read_header(s->path, &s->header, err, sizeof(err))) { usage_error("%s", err); }
    size_t slots = state_fp8_slots(&s->header);
    s->m = (float*)calloc_or_die((size_t)s->header.opt_count, sizeof(float), "AdamW m");
    s->v = (float*)calloc_or_die((size_t)s->header.opt_count, sizeof(float), "AdamW v");
    state_fp8_arrays_alloc(&s->header, &s->fp8);
    if (state_file_read_body(s->path, &s->header, s->m, s->v, slots ? &s->fp8 : NULL, err, sizeof(err))) {
        usage_error("%s", err);
    }
}

static void free_state(RunState* s) {
    free(s->path);
    free(s->m);
    free(s->v);
    state_fp8_arrays_free(&s->fp8);
}

// "block 1 fc input", "lm_head grad_output", "block 0 attention softmax_output": the module and tensor of slot s of M
// modules (fp8/diag.h's tensor names)
static void slot_name(char* out, size_t len, int slot, int num_modules, int num_layers) {
    int forward = fp8_slot_is_forward(slot, num_modules);
    int index = forward ? slot : slot - FP8_FWD_SLOTS * num_modules;
    int per = forward ? FP8_FWD_SLOTS : FP8_BWD_SLOTS, module = index / per, k = index % per;
    int attention = module >= linear_num_modules(num_layers);
    const char* const* tensors = attention ? fp8_diag_attention_tensors : fp8_diag_linear_tensors;
    const char* tensor = tensors[forward ? k : FP8_FWD_SLOTS + k];
    if (attention) {
        snprintf(out, len, "block %d attention %s", module - linear_num_modules(num_layers), tensor);
    } else if (module >= linear_lm_head(num_layers)) {
        snprintf(out, len, "lm_head %s", tensor);
    } else {
        snprintf(out, len, "block %d %s %s", module / LINEARS_PER_BLOCK, linear_names[module % LINEARS_PER_BLOCK],
                 tensor);
    }
}

// The settings both state files must share for their FP8 states to be comparable; a line naming the first that
// differs, or NULL.
static const char* state_mismatch(const StateHeader* a, const StateHeader* b) {
    if (a->step != b->step) { return "step"; }
    if (a->precision != b->precision) { return "precision"; }
    if (a->fp8_attention != b->fp8_attention) { return "-fp8_attention"; }
    if (a->fp8_modules != b->fp8_modules) { return "number of FP8 modules"; }
    if (a->num_parameters != b->num_parameters) { return "number of parameters"; }
    if (a->B != b->B || a->T != b->T || a->total_batch != b->total_batch) { return "batch (B, T, -d)"; }
    if (a->fp8_modules == 0) { return NULL; }
    const Fp8Recipe *x = &a->recipe, *y = &b->recipe;
    if (x->scaling != y->scaling) { return "FP8 recipe"; }
    if (x->delayed.amax_history_len != y->delayed.amax_history_len ||
        x->delayed.amax_compute_algo != y->delayed.amax_compute_algo || x->margin != y->margin ||
        x->delayed.interval != y->delayed.interval || x->fp8_format != y->fp8_format ||
        x->blockwise.amax_epsilon != y->blockwise.amax_epsilon ||
        x->blockwise.power_2_scale != y->blockwise.power_2_scale) {
        return "FP8 recipe settings";
    }
    return NULL;
}

static void compare_states(const char* run_dir, const char* ref_dir, const Tolerances* tol) {
    long long run_step = latest_checkpoint_step(run_dir), ref_step = latest_checkpoint_step(ref_dir);
    Quantity state = quantity("checkpoint", 0.0, 0.0);
    if (run_step < 0 || ref_step < 0 || run_step != ref_step) {
        quantity_fail(&state, "newest complete checkpoint: step %lld in RUN, %lld in REFERENCE (-1: none)", run_step,
                      ref_step);
        quantity_report(&state, NULL);
        return;
    }
    RunState a, b;
    read_state(run_dir, run_step, &a);
    read_state(ref_dir, ref_step, &b);
    const char* mismatch = state_mismatch(&a.header, &b.header);
    if (mismatch) {
        quantity_fail(&state, "%s and %s differ in their %s", a.path, b.path, mismatch);
        quantity_report(&state, NULL);
    } else if (a.header.fp8_modules == 0) {
        printf("---- FP8 state: none (%s run)\n", precision_name((Precision)a.header.precision));
    } else {
        int M = a.header.fp8_modules, S = (int)state_fp8_slots(&a.header);
        int rows = a.header.recipe.delayed.amax_history_len;
        int num_layers = (M - 1) / LINEARS_PER_BLOCK;  // 4 modules a block, then the LM head's (always there)
        // the scale comes from the window's amax (fp8_max / amax / 2^margin), so it differs as relatively as that
        // amax does: a slot's histories and scales take one tolerance
        Quantity forward = quantity("FP8 forward slots (amax histories, scales)", tol->fp8_forward, 0.0);
        Quantity backward = quantity("FP8 backward slots (amax histories, scales)", tol->fp8_backward, 0.0);
        for (int row = 0; row < rows + 2; row++) {
            for (int slot = 0; slot < S; slot++) {
                size_t i = (size_t)row * S + slot;
                float x = a.fp8.meta[i], y = b.fp8.meta[i];
                char name[64], where[160];
                slot_name(name, sizeof(name), slot, M, num_layers);
                if (row < rows) {
                    snprintf(where, sizeof(where), "slot %d (%s) history row %d", slot, name, row);
                } else {
                    snprintf(where, sizeof(where), "slot %d (%s) %s", slot, name, row == rows ? "scale" : "scale_inv");
                }
                int is_forward = fp8_slot_is_forward(slot, M);
                Quantity* q = is_forward ? &forward : &backward;
                if ((x == 0.0f) != (y == 0.0f)) {  // a step's amax recorded, or a history rolled, on one side only
                    quantity_fail(q, "%s at %s: %.7g vs %.7g (0 on one side only)", q->name, where, x, y);
                } else {
                    quantity_compare(q, x, y, is_forward ? tol->fp8_forward : tol->fp8_backward, where);
                }
            }
        }
        quantity_report(&forward, NULL);
        quantity_report(&backward, NULL);
    }
    free_state(&a);
    free_state(&b);
}

static double parse_tolerance(const char* flag, const char* value) {
    char* end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || errno == ERANGE || !(v >= 0.0) || !isfinite(v)) {
        usage_error("invalid value '%s' for %s: expected a relative tolerance >= 0", value, flag);
    }
    return v;
}

// -skipped's value: step numbers >= 0 separated by commas
static const char* parse_step_list(const char* value) {
    const char* p = value;
    do {
        char* end;
        errno = 0;
        long step = strtol(p, &end, 10);
        if (end == p || errno == ERANGE || step < 0 || step > MAX_STEPS_MAX || (*end != ',' && *end != '\0')) {
            usage_error("invalid value '%s' for -skipped: expected steps separated by commas, e.g. 4 or 4,9", value);
        }
        p = *end == ',' ? end + 1 : end;
    } while (*p);
    return value;
}

int main(int argc, char** argv) {
    Tolerances tol;
    memset(&tol, 0, sizeof(tol));
    const char* dirs[2] = {NULL, NULL};
    int num_dirs = 0;
    for (int i = 1; i < argc; i++) {
        const char* arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            printf("usage: %s\n  compares two -o folders: main.log losses, norms, learning rates and skipped steps, "
                   "and the FP8 state of the newest checkpoint;\n  every R is relative to REFERENCE's value (default 0: "
                   "equal); -skipped: the steps both runs must have skipped\n", USAGE);
            return 0;
        }
        if (arg[0] == '-') {
            if (i + 1 >= argc) { usage_error("flag %s needs a value", arg); }
            const char* value = argv[++i];
            if (strcmp(arg, "-skipped") == 0) {
                tol.expected_skipped = parse_step_list(value);
                continue;
            }
            double* target = strcmp(arg, "-loss_first") == 0 ? &tol.loss_first : strcmp(arg, "-loss") == 0 ? &tol.loss
                           : strcmp(arg, "-norm") == 0 ? &tol.norm : strcmp(arg, "-fp8_forward") == 0 ? &tol.fp8_forward
                           : strcmp(arg, "-fp8_backward") == 0 ? &tol.fp8_backward : NULL;
            if (!target) { usage_error("unknown flag %s", arg); }
            *target = parse_tolerance(arg, value);
        } else {
            if (num_dirs == 2) { usage_error("unexpected argument '%s'", arg); }
            dirs[num_dirs++] = arg;
        }
    }
    if (num_dirs != 2) { usage_error("needs two run folders"); }
    RunLog run, ref;
    read_main_log(dirs[0], &run);
    read_main_log(dirs[1], &ref);
    printf("RUN %s against REFERENCE %s\n", dirs[0], dirs[1]);
    compare_logs(&run, &ref, &tol);
    compare_states(dirs[0], dirs[1], &tol);
    free(run.steps);
    free(ref.steps);
    printf("compare_runs: %d passed, %d failed\n", checks_passed, checks_failed);
    // the PASS/FAIL lines are the report, and the last ones are still in stdio's buffer: a failure to write them is
    // an error (2), not a verdict, and exit() would not say so
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "compare_runs: error: cannot write the report to stdout: %s\n", strerror(errno));
        return 2;
    }
    return checks_failed == 0 ? 0 : 1;
}
