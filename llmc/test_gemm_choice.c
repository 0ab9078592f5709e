/*
llmc/test_gemm_choice.c — CPU tests of the GEMM algorithm choices' file (llmc/gemm_choice.h), which makes a resumed
GPU run multiply with the algorithms it chose by timing: what is written reads back word for word (algorithm bits,
times, the device line); a missing file is "none", not an error; every way a file can be wrong (a cut last line, a
changed header, a column short, a hex digit or an integer out of form, a problem twice) is refused naming its line;
another GPU or cuBLASLt is told apart, and its file kept beside under a free name; rows are found by the whole key and replaced, not duplicated.
*/
#include "gemm_choice.h"

#include "testing.h"

static char dir[] = "/tmp/test_gemm_choice_XXXXXX";

static GemmChoice sample_row(int32_t m, uint64_t seed) {
    GemmChoice row;
    memset(&row, 0, sizeof(row));
    for (int i = 0; i < GEMM_CHOICE_KEY_WORDS; i++) { row.key[i] = i; }
    row.key[0] = m;
    row.key[1] = 65536;
    row.key[2] = 768;
    row.key[3] = 28;  // cudaDataType_t values (CUDA_R_8F_E4M3)
    row.answer = 3;
    row.answers = 8;
    row.ms = 0.1234567890123;
    row.first_ms = 0.2 + 1e-16;
    for (int i = 0; i < GEMM_CHOICE_ALGO_WORDS; i++) { row.algo[i] = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i; }
    row.algo[7] = 0xFFFFFFFFFFFFFFFFull;  // every digit, the highest bits too
    return row;
}

static GemmChoices sample_choices(void) {
    GemmChoices c;
    memset(&c, 0, sizeof(c));
    strcpy(c.device.device, "NVIDIA H100 80GB HBM3");
    c.device.compute_capability = 90;
    c.device.cublaslt_version = 130100;
    for (int r = 0; r < 70; r++) {  // past the first capacity (64)
        GemmChoice row = sample_row(768 + 16 * r, (uint64_t)r + 1);
        gemm_choices_put(&c, &row);
    }
    return c;
}

static char* write_text(const char* name, const char* text) {
    char* path = alloc_printf("%s/%s", dir, name);
    FILE* f = fopen(path, "wb");
    if (!f) { die("test: cannot write %s", path); }
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_round_trip(void) {
    GemmChoices c = sample_choices();
    char* path = gemm_choices_path(dir, 3);
    CHECK(strstr(path, "/gemm_algos_00003.tsv") != NULL, "path %s", path);
    char err[512] = "";
    CHECK(gemm_choices_write(path, &c, err, sizeof(err)) == 0, "write: %s", err);
    GemmChoices back;
    int rc = gemm_choices_read(path, &back, err, sizeof(err));
    CHECK(rc == 1, "read rc %d: %s", rc, err);
    CHECK(back.count == c.count, "%d rows read, %d written", back.count, c.count);
    CHECK(gemm_choice_device_same(&back.device, &c.device), "device line: %s %d %ld", back.device.device,
          back.device.compute_capability, back.device.cublaslt_version);
    for (int r = 0; r < c.count && r < back.count; r++) {
        CHECK(memcmp(&back.rows[r].key, &c.rows[r].key, sizeof(c.rows[r].key)) == 0, "row %d key", r);
        CHECK(memcmp(back.rows[r].algo, c.rows[r].algo, sizeof(c.rows[r].algo)) == 0, "row %d algorithm", r);
        CHECK(back.rows[r].ms == c.rows[r].ms && back.rows[r].first_ms == c.rows[r].first_ms, "row %d times %.17g %.17g",
              r, back.rows[r].ms, back.rows[r].first_ms);
        CHECK(back.rows[r].answer == 3 && back.rows[r].answers == 8, "row %d answer %d of %d", r, back.rows[r].answer,
              back.rows[r].answers);
    }
    // written again, the same bytes (a resumed run that chose nothing new rewrites its file unchanged)
    char* again = alloc_printf("%s/again.tsv", dir);
    CHECK(gemm_choices_write(again, &back, err, sizeof(err)) == 0, "write again: %s", err);
    FILE* a = fopen(path, "rb");
    FILE* b = fopen(again, "rb");
    int same = a && b;
    for (int ca = 0, cb = 0; same && ca != EOF;) {
        ca = fgetc(a);
        cb = fgetc(b);
        same = ca == cb;
    }
    CHECK(same, "%s and %s differ", path, again);
    if (a) { fclose(a); }
    if (b) { fclose(b); }
    gemm_choices_free(&back);
    gemm_choices_free(&c);
    free(again);
    free(path);
}

static void test_missing_file_is_none(void) {
    char* path = alloc_printf("%s/absent.tsv", dir);
    GemmChoices c;
    char err[256] = "";
    CHECK(gemm_choices_read(path, &c, err, sizeof(err)) == 0, "missing: %s", err);
    CHECK(c.count == 0 && c.rows == NULL, "rows of a missing file");
    free(path);
}

static void test_find_and_replace(void) {
    GemmChoices c = sample_choices();
    GemmChoice probe = sample_row(768 + 16 * 5, 99);
    const GemmChoice* found = gemm_choices_find(&c, probe.key);
    CHECK(found && found->algo[0] == c.rows[5].algo[0], "row 5 by its key");
    probe.key[16] = 1;  // one word of the key differs (b_scale_mode): another problem
    CHECK(gemm_choices_find(&c, probe.key) == NULL, "a key differing in its last word found");
    probe.key[16] = 16;
    gemm_choices_put(&c, &probe);
    CHECK(c.count == 70, "putting a problem that has a row added one (%d rows)", c.count);
    found = gemm_choices_find(&c, probe.key);
    CHECK(found && memcmp(found->algo, probe.algo, sizeof(probe.algo)) == 0, "row replaced");
    gemm_choices_free(&c);
}

static void test_device_told_apart(void) {
    GemmChoiceDevice a = {"NVIDIA H100 80GB HBM3", 90, 130100}, b = a;
    CHECK(gemm_choice_device_same(&a, &b), "same device");
    strcpy(b.device, "NVIDIA H200");
    CHECK(!gemm_choice_device_same(&a, &b), "another GPU");
    b = a;
    b.cublaslt_version = 130200;
    CHECK(!gemm_choice_device_same(&a, &b), "another cuBLASLt");
    b = a;
    b.compute_capability = 100;
    CHECK(!gemm_choice_device_same(&a, &b), "another architecture");
}

// A file of another GPU is kept beside, as NAME.1, then NAME.2 (never over an earlier one).
static void test_set_aside(void) {
    char* path = write_text("aside.tsv", "first\n");
    char err[256] = "";
    char* kept = gemm_choices_set_aside(path, err, sizeof(err));
    CHECK(kept && strcmp(kept + strlen(path), ".1") == 0 && access(path, F_OK) != 0, "first kept as %s (%s)",
          kept ? kept : "-", err);
    free(path);
    path = write_text("aside.tsv", "second\n");
    char* kept2 = gemm_choices_set_aside(path, err, sizeof(err));
    CHECK(kept2 && strcmp(kept2 + strlen(path), ".2") == 0, "second kept as %s (%s)", kept2 ? kept2 : "-", err);
    FILE* f = kept ? fopen(kept, "rb") : NULL;
    char text[16] = "";
    if (f) {
        if (!fgets(text, sizeof(text), f)) { text[0] = '\0'; }
        fclose(f);
    }
    CHECK(strcmp(text, "first\n") == 0, "the first file's text kept: %s", text);
    free(kept);
    free(kept2);
    free(path);
}

// Each damaged file is refused naming its line and what is wrong there.
static void test_damaged_files_refused(void) {
    GemmChoices c = sample_choices();
    c.count = 2;
    char* good_path = alloc_printf("%s/good.tsv", dir);
    char err[512] = "";
    CHECK(gemm_choices_write(good_path, &c, err, sizeof(err)) == 0, "write: %s", err);
    FILE* f = fopen(good_path, "rb");
    char good[8192];
    size_t n = f ? fread(good, 1, sizeof(good) - 1, f) : 0;
    good[n] = '\0';
    if (f) { fclose(f); }
    char* row3 = strchr(strchr(strchr(good, '\n') + 1, '\n') + 1, '\n') + 1;  // the first problem's row (line 4)
    size_t head = (size_t)(row3 - good);
    struct {
        const char* name;
        char text[8192];
        const char* expect;  // in the error
    } cases[12];
    int k = 0;
    // a cut file: the last line without its newline
    snprintf(cases[k].text, sizeof(cases[k].text), "%.*s", (int)(n - 5), good);
    cases[k].name = "cut", cases[k++].expect = "line 5: a line without its newline";
    snprintf(cases[k].text, sizeof(cases[k].text), "# gptfp8 gemm_algos 2\n%s", strchr(good, '\n') + 1);
    cases[k].name = "version", cases[k++].expect = "line 1: not \"# gptfp8 gemm_algos 1\"";
    snprintf(cases[k].text, sizeof(cases[k].text), "%s", good);
    memcpy(strstr(cases[k].text, "\tcc\t"), "\tCC\t", 4);
    cases[k].name = "device", cases[k++].expect = "line 2: not a device line";
    snprintf(cases[k].text, sizeof(cases[k].text), "%s", good);
    memcpy(strstr(cases[k].text, "first_ms"), "first_us", 8);
    cases[k].name = "columns", cases[k++].expect = "line 3: not the column names";
    // a row a column short: its first field gone
    snprintf(cases[k].text, sizeof(cases[k].text), "%.*s%s", (int)head, good, strchr(row3, '\t') + 1);
    cases[k].name = "short", cases[k++].expect = "line 4: not the 22 columns";
    // an algorithm with an uppercase digit
    snprintf(cases[k].text, sizeof(cases[k].text), "%s", good);
    {
        char* hex = strrchr(cases[k].text, '\t') + 1;  // the last row's algorithm
        hex[0] = 'A';
    }
    cases[k].name = "hex", cases[k++].expect = "line 5: an algorithm that is not 128 lowercase hex digits";
    // a negative key word
    snprintf(cases[k].text, sizeof(cases[k].text), "%.*s-%s", (int)head, good, row3);
    cases[k].name = "negative", cases[k++].expect = "line 4: a key column that is not an integer >= 0";
    // answer 8 of 8
    snprintf(cases[k].text, sizeof(cases[k].text), "%s", good);
    {
        char* at = strstr(cases[k].text + head, "\t3\t8\t");
        at[1] = '8';
    }
    cases[k].name = "answer", cases[k++].expect = "line 4: answer and answers not 0 <= answer < answers";
    // the first row twice
    snprintf(cases[k].text, sizeof(cases[k].text), "%s%.*s", good, (int)(strchr(row3, '\n') + 1 - row3), row3);
    cases[k].name = "twice", cases[k++].expect = "line 6: a problem that has a row already";
    // the header alone
    snprintf(cases[k].text, sizeof(cases[k].text), "%s\n", GEMM_CHOICE_MAGIC);
    cases[k].name = "header", cases[k++].expect = "line 2: fewer than its three header lines";
    cases[k].text[0] = '\0';  // an empty file: its first line missing
    cases[k].name = "empty", cases[k++].expect = "line 1: fewer than its three header lines";
    // a key word with a '+' (strtol would take it; the writer never writes one)
    snprintf(cases[k].text, sizeof(cases[k].text), "%.*s+%s", (int)head, good, row3);
    cases[k].name = "plus", cases[k++].expect = "line 4: a key column that is not an integer >= 0";
    for (int i = 0; i < k; i++) {
        char* path = write_text(cases[i].name, cases[i].text);
        GemmChoices back;
        err[0] = '\0';
        int rc = gemm_choices_read(path, &back, err, sizeof(err));
        CHECK(rc == -1 && strstr(err, cases[i].expect) && strstr(err, path) && back.rows == NULL,
              "%s: rc %d, error \"%s\", expected \"%s\"", cases[i].name, rc, err, cases[i].expect);
        free(path);
    }
    free(good_path);
    gemm_choices_free(&c);
}

int main(int argc, char** argv) {
    test_select(argc, argv);
    if (!mkdtemp(dir)) { die("test: cannot make a temporary folder"); }
    RUN_TEST(test_round_trip);
    RUN_TEST(test_missing_file_is_none);
    RUN_TEST(test_find_and_replace);
    RUN_TEST(test_device_told_apart);
    RUN_TEST(test_set_aside);
    RUN_TEST(test_damaged_files_refused);
    char* cmd = alloc_printf("rm -rf '%s'", dir);
    if (system(cmd) != 0) { fprintf(stderr, "test: could not remove %s\n", dir); }
    free(cmd);
    return test_summary("gemm-choice");
}
