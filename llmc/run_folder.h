/*
llmc/run_folder.h — a run's output folder (-o), shared by both mains: one run at a time in it (a lock held for the
run's whole life), what a new run does with an earlier run's files (refuses; with -start_over 1 replaces them; -y 1 in
a folder without a complete checkpoint starts from step 0 and keeps the earlier attempt's logs as main.log.N and
fp8_diag.tsv.N), which checkpoint -y 1 resumes (the newest complete one, or -resume_step N, after which the later ones
go), a folder that cannot be written (refused unless -y 1 finds nothing left to train), and the logs, main.log and
fp8_diag.tsv, whose every write is checked: a log that cannot be written stops the run.

The lock is an flock(2) on the folder itself, through a descriptor opened read-only (so a read-only folder can be
locked too) and never closed: the kernel releases it when the process ends, however it ends, so a killed run never
leaves a stale lock. There is no lock file: nothing in the folder can be deleted or renamed to free the lock while its
run lives, and a finished run leaves nothing behind that could look like a lock. flock has no F_GETLK, so a second run
finds the holder's pid in /proc/locks. With several processes, rank 0 holds it for the job. Earlier versions locked
the file .lock with a POSIX record lock (fcntl), which anyone could delete from under a live run: a run refuses a
folder whose .lock an earlier version's live run still holds, and otherwise removes that meaningless leftover.

Network file systems: Linux's NFS client sends flock on a regular file to the server (as a byte-range lock), but a
directory's flock stays on the machine that took it. So two runs on one machine are kept apart on NFS too, but two
machines sharing one NFS folder are not; the old .lock file's fcntl lock was arbitrated by the server where the mount
had locking (not with -o nolock or local_lock), though the pid it named then belonged to another machine.
*/
#ifndef GPTFP8_RUN_FOLDER_H
#define GPTFP8_RUN_FOLDER_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../fp8/diag.h"
#include "args.h"
#include "checkpoint.h"
#include "utils.h"

// ----------------------------------------------------------------------------
// the lock: one run per folder

// The pid of the process holding an flock on the file with device `dev` and inode `inode`, from /proc/locks; 0 when
// it cannot be told (no /proc, the holder gone meanwhile, a pid outside this process's namespace). A holder's line is
// "ID: FLOCK ADVISORY WRITE PID MAJOR:MINOR:INODE START END", MAJOR and MINOR in hex; a waiter's has "->" after the ID.
static inline long flock_holder_pid(dev_t dev, ino_t inode) {
    FILE* f = fopen("/proc/locks", "r");
    if (!f) { return 0; }
    char* line = NULL;
    size_t capacity = 0;
    long holder = 0;
    while (holder == 0 && getline(&line, &capacity, f) > 0) {
        char kind[16], mode[16], access[16];
        long pid;
        unsigned int major_dev, minor_dev;
        unsigned long long line_inode;
        int end = 0;
        if (sscanf(line, "%*s %15s %15s %15s %ld %x:%x:%llu%n", kind, mode, access, &pid, &major_dev, &minor_dev,
                   &line_inode, &end) == 7 &&
            (line[end] == ' ' || line[end] == '\n') && strcmp(kind, "FLOCK") == 0 && major_dev == major(dev) &&
            minor_dev == minor(dev) && line_inode == (unsigned long long)inode && pid > 0) {
            holder = pid;
        }
    }
    free(line);
    fclose(f);
    return holder;
}

static inline void run_folder_in_use(const char* dir, long pid, const char* what) __attribute__((noreturn));
static inline void run_folder_in_use(const char* dir, long pid, const char* what) {
    char holder[32] = "another process";
    if (pid > 0) { snprintf(holder, sizeof(holder), "pid %ld", pid); }
    die("%s is in use by another run (%s holds %s): one run per output folder; wait for it to end, or give another -o",
        dir, holder, what);
}

// Takes the folder's lock for the life of this process (the descriptor stays open; it is never closed, so the lock
// goes only with the process). A folder another process holds is one line naming it and the holder's pid.
static inline void run_folder_lock(const char* dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) { die("cannot open output folder %s: %s", dir, strerror(errno)); }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) { die("cannot lock output folder %s: %s", dir, strerror(errno)); }
        struct stat st;
        run_folder_in_use(dir, fstat(fd, &st) == 0 ? flock_holder_pid(st.st_dev, st.st_ino) : 0, "its lock");
    }
}

// The .lock file of an earlier version, found once this run holds the folder: a run of that version still holding
// its POSIX lock is refused like any holder (it does not see the folder lock); otherwise the file means nothing now
// and goes. Called only for a folder this run can write.
static inline void run_folder_remove_old_lock_file(const char* dir) {
    char* path = alloc_printf("%s/.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct flock holder;
        memset(&holder, 0, sizeof(holder));
        holder.l_type = F_WRLCK;
        holder.l_whence = SEEK_SET;  // the whole file (l_start 0, l_len 0)
        int held = fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
        close(fd);  // this process held no record lock on it, so closing drops none
        if (held) {
            char* what = alloc_printf("%s, an earlier version's lock", path);
            run_folder_in_use(dir, (long)holder.l_pid, what);
        }
        unlink(path);  // one that cannot be removed is harmless: nothing reads it any more
    }
    free(path);
}

// ----------------------------------------------------------------------------
// removing checkpoints: stale temporary files, an earlier run's checkpoints, the ones after a chosen step

typedef struct {
    long long after;  // remove the checkpoint files of steps after this one (-1: all)
    int pass;         // 0: DONE markers first (so no step looks complete while its files go), 1: the rest
    int temporaries_only;
    long long removed;
} CheckpointRemoval;

static inline void checkpoint_remove_visit(const char* dir, const char* name, int kind, long long step, int temporary,
                                           void* context) {
    CheckpointRemoval* r = (CheckpointRemoval*)context;
    if (r->temporaries_only ? !temporary : (step <= r->after || (r->pass == 0) != (kind == CHECKPOINT_FILE_DONE))) {
        return;
    }
    char* path = alloc_printf("%s/%s", dir, name);
    if (unlink(path) != 0 && errno != ENOENT) { die("cannot remove %s: %s", path, strerror(errno)); }
    free(path);
    r->removed++;
}

// Removes dir's checkpoint files of the steps after `after` (-1: every one), DONE markers first; returns how many.
static inline long long checkpoint_remove_after(const char* dir, long long after) {
    CheckpointRemoval r = {after, 0, 0, 0};
    checkpoint_files_visit(dir, checkpoint_remove_visit, &r);
    r.pass = 1;
    checkpoint_files_visit(dir, checkpoint_remove_visit, &r);
    return r.removed;
}

// The temporary files (NAME.tmp.PID) an earlier run left when it was killed mid-write; called under the lock.
static inline void checkpoint_remove_temporaries(const char* dir) {
    CheckpointRemoval r = {-1, 1, 1, 0};
    checkpoint_files_visit(dir, checkpoint_remove_visit, &r);
}

// ----------------------------------------------------------------------------
// the folder at the start of a run

// -y 1: the checkpoint to resume from, -1 for none: -resume_step N (whose DONE marker must be there), else the
// newest complete one.
static inline long long run_folder_resume_step(const TrainArgs* args) {
    if (!args->resume) { return -1; }
    if (args->resume_step < 0) { return latest_checkpoint_step(args->output_dir); }
    char* done = alloc_printf("%s/DONE_%08d", args->output_dir, args->resume_step);
    int complete = access(done, F_OK) == 0;
    free(done);
    if (!complete) {
        die("-resume_step %d: %s holds no complete checkpoint of step %d (no DONE_%08d)", args->resume_step,
            args->output_dir, args->resume_step, args->resume_step);
    }
    return args->resume_step;
}

// The logs an earlier run left in dir that hold a record: main.log when it is a regular file (or a link to one) of a
// nonzero size, fp8_diag.tsv when it holds more than its first line, the column names (a run that failed before its
// first step wrote those alone); /dev/null or a pipe keeps no record. Sets held[i] for RUN_LOG_NAMES[i] and returns
// how many, their names ", "-joined in `names` (when not NULL; at least 32 bytes).
static const char* const RUN_LOG_NAMES[2] = {"main.log", "fp8_diag.tsv"};
static inline int earlier_run_logs(const char* dir, int held[2], char* names) {
    int count = 0;
    if (names) { names[0] = '\0'; }
    for (int i = 0; i < 2; i++) {
        char* path = alloc_printf("%s/%s", dir, RUN_LOG_NAMES[i]);
        struct stat st;
        held[i] = stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
        if (held[i] && i == 1) {
            FILE* f = fopen(path, "rb");
            char* line = NULL;
            size_t capacity = 0;
            ssize_t first = f ? getline(&line, &capacity, f) : -1;
            held[i] = first < 0 || (off_t)first < st.st_size;  // unreadable: counted as a record, kept safe
            free(line);
            if (f) { fclose(f); }
        }
        free(path);
        if (!held[i]) { continue; }
        if (names) { strcat(strcat(names, count > 0 ? ", " : ""), RUN_LOG_NAMES[i]); }
        count++;
    }
    return count;
}

// -y 1 in a folder without a complete checkpoint trains from step 0, and its logs must read as those of a run never
// interrupted, so the earlier attempt's logs are not appended to; nor are they cut (they are the only record of what
// that attempt did): they are kept as main.log.N and fp8_diag.tsv.N, N the first number free for both. Rank 0.
static inline void run_logs_set_aside(const char* dir) {
    int held[2];
    if (earlier_run_logs(dir, held, NULL) == 0) { return; }
    for (int n = 1;; n++) {
        int taken = 0;
        for (int i = 0; i < 2 && !taken; i++) {
            char* path = alloc_printf("%s/%s.%d", dir, RUN_LOG_NAMES[i], n);
            struct stat st;
            taken = lstat(path, &st) == 0 || errno != ENOENT;
            free(path);
        }
        if (taken) { continue; }
        printf("resume: no complete checkpoint in %s: the logs of the attempt before are kept as", dir);
        for (int i = 0; i < 2; i++) {
            if (!held[i]) { continue; }
            char* from = alloc_printf("%s/%s", dir, RUN_LOG_NAMES[i]);
            char* to = alloc_printf("%s.%d", from, n);
            if (rename(from, to) != 0) { die("cannot keep %s as %s: %s", from, to, strerror(errno)); }
            printf(" %s.%d", RUN_LOG_NAMES[i], n);
            free(from);
            free(to);
        }
        printf("\n");
        return;
    }
}

// A folder this process cannot write (a read-only mount, no write permission, an immutable folder) can only hold a run
// that writes nothing: -y 1 whose checkpoint is at or past the last step (which says so and exits 0), or -estimate 1.
// Any other run is refused here, in one line, rather than at its first log line or checkpoint.
static inline void run_folder_check_unwritable(const TrainArgs* args, int train_steps, int error) {
    const char* dir = args->output_dir;
    if (args->estimate_only) { return; }
    if (!args->resume) {
        die("-o %s cannot be written (%s): a run writes its logs and checkpoints there; make it writable, or give "
            "another -o", dir, strerror(error));
    }
    long long latest = run_folder_resume_step(args);
    if (latest < 0) {
        die("-o %s cannot be written (%s): -y 1 finds no complete checkpoint there, so it would train from step 0 and "
            "write its logs and checkpoints there; make it writable, or give another -o", dir, strerror(error));
    }
    if (latest < train_steps) {
        die("-o %s cannot be written (%s): -y 1 would train from its checkpoint of step %lld to step %d and write its "
            "logs and checkpoints there; make it writable, or give another -o", dir, strerror(error), latest,
            train_steps);
    }
}

// Creates the folder, takes its lock (rank 0), and decides what to do with an earlier run's files. A folder that cannot
// be written is refused unless this run writes nothing (above). In one that can, stale temporary files and an earlier
// version's .lock go; then a run without -y 1 in a folder that holds an earlier run's checkpoints, or its non-empty
// logs and no checkpoint (a run killed before its first), refuses in one line that says how to resume or start over;
// -start_over 1 removes them first. -y 1 without a complete checkpoint sets the earlier attempt's logs aside. -estimate
// 1 writes nothing, so it neither refuses nor removes.
static inline void run_folder_prepare(const TrainArgs* args, int train_steps, int rank0) {
    const char* dir = args->output_dir;
    if (!dir) { return; }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { die("cannot create output folder %s: %s", dir, strerror(errno)); }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) { die("-o %s is not a folder", dir); }
    if (rank0) { run_folder_lock(dir); }
    if (access(dir, W_OK | X_OK) != 0) {
        run_folder_check_unwritable(args, train_steps, errno);
        return;
    }
    if (rank0) {
        run_folder_remove_old_lock_file(dir);
        checkpoint_remove_temporaries(dir);
    }
    if (args->estimate_only) { return; }
    if (args->resume) {
        if (rank0 && run_folder_resume_step(args) < 0) { run_logs_set_aside(dir); }
        return;
    }
    CheckpointSteps steps = checkpoint_steps(dir, 0);
    int held[2];
    char names[32];
    int logs = earlier_run_logs(dir, held, names);
    if (steps.newest_any < 0 && logs == 0) { return; }
    if (!args->start_over) {
        if (steps.newest_any >= 0) {
            die("%s holds the checkpoints of an earlier run (newest: step %lld): -y 1 resumes it, -start_over 1 "
                "removes them and starts a new run there, or give another -o", dir, steps.newest_any);
        }
        die("%s holds the logs of an earlier run (%s) but no checkpoint: -start_over 1 removes them and starts a new "
            "run there, -y 1 restarts that run from step 0 keeping them under numbered names, or give another -o", dir,
            names);
    }
    if (!rank0) { return; }
    if (steps.newest_any >= 0) {
        long long removed = checkpoint_remove_after(dir, -1);
        printf("start over: removed the %lld checkpoint files of an earlier run from %s (newest: step %lld)\n", removed,
               dir, steps.newest_any);
    }
    // the logs too, fp8_diag.tsv included when this run writes none: nothing of the earlier run may pass for this one's
    for (int i = 0; i < 2; i++) {
        char* path = alloc_printf("%s/%s", dir, RUN_LOG_NAMES[i]);
        if (held[i] && unlink(path) != 0) { die("cannot remove %s: %s", path, strerror(errno)); }
        free(path);
    }
    if (logs > 0) { printf("start over: removed the logs of an earlier run from %s (%s)\n", dir, names); }
}

// After resuming from `step` (rank 0): the checkpoints after it belong to a past the run no longer has (-resume_step
// chose an older one), so they go, lest a later -y 1 resume them.
static inline void run_folder_drop_later_checkpoints(const char* dir, long long step) {
    long long newest = checkpoint_steps(dir, 0).newest_any;
    if (newest <= step) { return; }
    long long removed = checkpoint_remove_after(dir, step);
    printf("resume: removed the %lld checkpoint files after step %lld from %s (newest was step %lld)\n", removed, step,
           dir, newest);
}

// ----------------------------------------------------------------------------
// logs: every write checked

typedef struct {
    FILE* file;  // NULL: this log is not written
    char* path;
} LogFile;

// A write that failed (disk full, a device that refuses writes): the run cannot keep its record, so it stops; what it
// saved so far stays intact, and -y 1 goes on from its newest checkpoint.
static inline void log_failed(const LogFile* log, int error) __attribute__((noreturn));
static inline void log_failed(const LogFile* log, int error) {
    die("cannot write %s: %s; the run stops here (its checkpoints are intact: once it can be written, -y 1 resumes "
        "from the newest)", log->path, strerror(error ? error : EIO));
}

// After writing to log->file (by fprintf or a helper that takes a FILE*): flushed, and any failure stops the run.
static inline void log_flush(LogFile* log) {
    if (!log->file) { return; }
    errno = 0;
    if (fflush(log->file) != 0 || ferror(log->file)) { log_failed(log, errno); }
}

static inline void log_printf(LogFile* log, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void log_printf(LogFile* log, const char* fmt, ...) {
    if (!log->file) { return; }
    va_list args;
    va_start(args, fmt);
    errno = 0;
    int written = vfprintf(log->file, fmt, args);
    va_end(args);
    if (written < 0) { log_failed(log, errno); }
    log_flush(log);
}

static inline void log_close(LogFile* log) {
    if (log->file) {
        log_flush(log);
        errno = 0;
        if (fclose(log->file) != 0) { log_failed(log, errno); }
    }
    free(log->path);
    log->file = NULL;
    log->path = NULL;
}

static inline void log_open(LogFile* log, const char* dir, const char* name, int append) {
    log->path = alloc_printf("%s/%s", dir, name);
    log->file = fopen(log->path, append ? "a" : "w");
    if (!log->file) { die("cannot open %s for writing: %s", log->path, strerror(errno)); }
}

// The step a log line belongs to: main.log's "s:N trl:..." and "s:N tel:...", fp8_diag.tsv's "N\t...". Returns 0 for
// a line without one (fp8_diag.tsv's column names).
static inline int log_line_step(const char* line, long long* step) {
    const char* digits = strncmp(line, "s:", 2) == 0 ? line + 2 : line;
    char* end = NULL;
    errno = 0;
    long long value = strtoll(digits, &end, 10);
    if (end == digits || errno == ERANGE || (*end != ' ' && *end != '\t')) { return 0; }
    *step = value;
    return 1;
}

// Resuming from the checkpoint of `step`: cuts dir/name back to what the run had written when it saved that
// checkpoint, so that the resumed run's lines follow as in a run never interrupted. The logs are in step order and
// everything up to a checkpoint was flushed before it was saved: a main.log line of step N (the train line after step
// N - 1, the evaluation at the start of step N) and an fp8_diag.tsv block of step N (after step N - 1) were written
// before the checkpoint of step N. The first line of a later step, or an unfinished last line (a kill mid-write),
// and everything after it go. A missing file stays missing, and what is not a file (a device such as /dev/null, a
// pipe) keeps no lines to cut.
static inline void log_trim_to_step(const char* dir, const char* name, long long step) {
    char* path = alloc_printf("%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        free(path);
        return;
    }
    FILE* f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            free(path);
            return;
        }
        die("cannot open %s to resume it: %s", path, strerror(errno));
    }
    char* line = NULL;
    size_t capacity = 0;
    long long keep = 0;  // bytes of the lines that stay
    ssize_t length;
    while ((length = getline(&line, &capacity, f)) > 0) {
        long long line_step;
        if (line[length - 1] != '\n' || (log_line_step(line, &line_step) && line_step > step)) { break; }
        keep += length;
    }
    int read_failed = ferror(f);
    free(line);
    fclose(f);
    if (read_failed) { die("cannot read %s to resume it", path); }
    if (truncate(path, (off_t)keep) != 0) { die("cannot cut %s back to step %lld: %s", path, step, strerror(errno)); }
    free(path);
}

// Which columns dir/fp8_diag.tsv has, from its first line: FP8_DIAG_FILE_NONE (no such regular file, or empty),
// _CURRENT (FP8_DIAG_COLUMNS), _PER_TENSOR_ONLY (an earlier commit's, before the block recipes' two columns), or
// _FOREIGN (other column names: not this run's diagnostics). The file is only read.
enum { FP8_DIAG_FILE_NONE = 0, FP8_DIAG_FILE_CURRENT, FP8_DIAG_FILE_PER_TENSOR_ONLY, FP8_DIAG_FILE_FOREIGN };
static inline int fp8_diag_file_columns(const char* path) {
    struct stat st;
    FILE* f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    if (!f) { return FP8_DIAG_FILE_NONE; }
    char* line = NULL;
    size_t capacity = 0;
    ssize_t length = getline(&line, &capacity, f);
    int columns = length <= 0                                        ? FP8_DIAG_FILE_NONE
                : strcmp(line, FP8_DIAG_COLUMNS) == 0                ? FP8_DIAG_FILE_CURRENT
                : strcmp(line, FP8_DIAG_COLUMNS_PER_TENSOR_ONLY) == 0 ? FP8_DIAG_FILE_PER_TENSOR_ONLY
                                                                     : FP8_DIAG_FILE_FOREIGN;
    free(line);
    fclose(f);
    return columns;
}

// Resuming a run whose fp8_diag.tsv an earlier commit began, before the block recipes added two columns: the file
// (already cut back to the checkpoint's step, so every line is whole) is rewritten atomically with today's columns,
// each row given its one scale (column 9) as its smallest and largest block scale, which is what today's trainer
// writes for a per-tensor recipe; so the resumed file is what an uninterrupted run of today's trainer writes, and
// scripts/plot_fp8_diag.py reads it.
static inline void fp8_diag_upgrade_columns(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) { die("cannot open %s to resume it: %s", path, strerror(errno)); }
    char err[ERROR_MESSAGE_MAX];
    AtomicFile af;
    if (atomic_open(&af, path, err, sizeof(err))) { die("cannot upgrade %s: %s", path, err); }
    atomic_write(&af, FP8_DIAG_COLUMNS, strlen(FP8_DIAG_COLUMNS));
    char* line = NULL;
    size_t capacity = 0;
    ssize_t length = getline(&line, &capacity, f);  // the old column names
    while ((length = getline(&line, &capacity, f)) > 0) {
        // column 9 (1-based) is the scale: after the eighth tab
        const char* scale = line;
        for (int tabs = 0; tabs < 8 && scale; tabs++) {
            scale = strchr(scale, '\t');
            if (scale) { scale++; }
        }
        size_t scale_length = scale ? strcspn(scale, "\t\n") : 0;
        if (scale_length == 0 || line[length - 1] != '\n') {
            die("cannot resume: %s has a line that is not an FP8 diagnostics row (move the file away to resume)", path);
        }
        atomic_write(&af, line, (size_t)length - 1);
        atomic_write(&af, "\t", 1);
        atomic_write(&af, scale, scale_length);
        atomic_write(&af, "\t", 1);
        atomic_write(&af, scale, scale_length);
        atomic_write(&af, "\n", 1);
    }
    int read_failed = ferror(f);
    free(line);
    fclose(f);
    if (read_failed) { die("cannot read %s to resume it", path); }
    if (atomic_commit(&af, err, sizeof(err))) { die("cannot upgrade %s: %s", path, err); }
}

// The run's logs in dir: main.log, and fp8_diag.tsv when `diagnostics` (diag_log->file NULL otherwise). A run from
// step 0 starts both empty; a resumed run cuts both back to its checkpoint's step (an earlier commit's fp8_diag.tsv
// upgraded to today's columns), then appends (fp8_diag.tsv gets its column names when it is new).
static inline void open_run_logs(const char* dir, int start_step, int diagnostics, LogFile* main_log,
                                 LogFile* diag_log) {
    if (start_step > 0) {
        // a diagnostics file with other column names is not this run's: refused before anything is changed
        char* diag_path = alloc_printf("%s/fp8_diag.tsv", dir);
        int columns = fp8_diag_file_columns(diag_path);
        if (columns == FP8_DIAG_FILE_FOREIGN) {
            die("cannot resume: %s does not start with the FP8 diagnostics' column names (move it away to resume)",
                diag_path);
        }
        log_trim_to_step(dir, "main.log", start_step);
        log_trim_to_step(dir, "fp8_diag.tsv", start_step);
        if (columns == FP8_DIAG_FILE_PER_TENSOR_ONLY) { fp8_diag_upgrade_columns(diag_path); }
        free(diag_path);
    }
    log_open(main_log, dir, "main.log", start_step > 0);
    memset(diag_log, 0, sizeof(*diag_log));
    if (diagnostics) {
        char* path = alloc_printf("%s/fp8_diag.tsv", dir);
        int is_new = start_step == 0 || file_size_of(path) <= 0;
        free(path);
        log_open(diag_log, dir, "fp8_diag.tsv", !is_new);
        if (is_new) {
            fp8_diag_write_header(diag_log->file);
            log_flush(diag_log);
        }
    }
}

#endif  // GPTFP8_RUN_FOLDER_H
