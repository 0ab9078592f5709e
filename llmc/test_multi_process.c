/*
llmc/test_multi_process.c — CPU tests of llmc/multi_process.h: the rank/size/GPU read from mpirun's, Slurm's or the
flags' values (and the one-line errors for bad ones), and the NCCL id exchange without MPI, through a folder and
through TCP, with 4 forked processes playing the ranks: every rank must end with rank 0's exact bytes.
*/
#include <signal.h>
#include <sys/wait.h>

#include "multi_process.h"
#include "testing.h"

#define ID_BYTES 128  // sizeof(ncclUniqueId)

static void clear_launcher_env(void) {
    const char* names[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_NTASKS",
                           "SLURM_PROCID", "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID", "GPTFP8_PORT"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) { unsetenv(names[i]); }
}

static void test_resolve(void) {
    ProcessGroupConfig pg;
    char err[256] = "";
    clear_launcher_env();
    CHECK(process_group_resolve(&pg, -1, -1, -1, NULL, NULL, NULL, err, sizeof(err)) == 0 && pg.num_processes == 1 &&
              pg.process_rank == 0 && !pg.init_method[0] && strcmp(pg.launcher, "single") == 0,
          "no launcher, no flags: one process without NCCL (%s)", err);
    // mpirun
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    CHECK(process_group_resolve(&pg, -1, -1, -1, NULL, NULL, NULL, err, sizeof(err)) == 0 && pg.num_processes == 8 &&
              pg.process_rank == 5 && pg.local_rank == 1 && strcmp(pg.init_method, "mpi") == 0,
          "mpirun: 8 ranks, rank 5, GPU 1, MPI exchange (%s)", err);
    setenv("OMPI_COMM_WORLD_RANK", "x5", 1);
    CHECK(process_group_resolve(&pg, -1, -1, -1, NULL, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "mpirun"),
          "a non-integer rank variable: %s", err);
    clear_launcher_env();
    // Slurm, id through a shared folder; the file name carries the job and step
    setenv("SLURM_NTASKS", "16", 1);
    setenv("SLURM_PROCID", "9", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    CHECK(process_group_resolve(&pg, -1, -1, -1, NULL, NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "-pi fs"),
          "Slurm without -pi: %s", err);
    CHECK(process_group_resolve(&pg, -1, -1, -1, "fs", NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "-pf"),
          "-pi fs without -pf: %s", err);
    CHECK(process_group_resolve(&pg, -1, -1, -1, "fs", "/shared/x", NULL, err, sizeof(err)) == 0 &&
              pg.num_processes == 16 && pg.process_rank == 9 && pg.local_rank == 1 && strcmp(pg.job_key, "4242.3") == 0,
          "Slurm: 16 ranks, rank 9, GPU 1, key %s (%s)", pg.job_key, err);
    char* path = id_file_path(&pg);
    CHECK(strcmp(path, "/shared/x/gptfp8_nccl_id_4242.3.bin") == 0, "id file %s", path);
    free(path);
    CHECK(process_group_resolve(&pg, -1, -1, -1, "tcp", NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "-ps"),
          "-pi tcp on rank 9 without -ps: %s", err);
    clear_launcher_env();
    // by hand
    CHECK(process_group_resolve(&pg, 4, 3, 2, "tcp", NULL, "10.0.0.1", err, sizeof(err)) == 0 && pg.num_processes == 4 &&
              pg.process_rank == 3 && pg.local_rank == 1 && pg.server_port == PROCESS_GROUP_DEFAULT_PORT,
          "flags: rank 3 of 4 with 2 GPUs per node is GPU 1 (%s)", err);
    CHECK(process_group_resolve(&pg, 4, 4, -1, "tcp", NULL, "10.0.0.1", err, sizeof(err)) == -1 &&
              strstr(err, "process rank 4 is not below the number of processes 4"), "rank out of range: %s", err);
    CHECK(process_group_resolve(&pg, 2, 0, -1, "udp", NULL, NULL, err, sizeof(err)) == -1 &&
              strstr(err, "invalid value 'udp' for -pi"), "bad -pi: %s", err);
    setenv("GPTFP8_PORT", "70000", 1);
    CHECK(process_group_resolve(&pg, 2, 0, -1, "tcp", NULL, NULL, err, sizeof(err)) == -1 && strstr(err, "GPTFP8_PORT"),
          "bad port: %s", err);
    setenv("GPTFP8_PORT", "23456", 1);
    CHECK(process_group_resolve(&pg, 1, 0, -1, "fs", "/tmp", NULL, err, sizeof(err)) == 0 && pg.server_port == 23456 &&
              strcmp(pg.init_method, "fs") == 0, "one rank through NCCL on request, port from the environment (%s)", err);
    clear_launcher_env();
}

// A free TCP port on this machine (the kernel picks one; we release it and hand it to the ranks).
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, (struct sockaddr*)&addr, sizeof(addr)) != 0 || getsockname(fd, (struct sockaddr*)&addr, &len) != 0) {
        return -1;
    }
    close(fd);
    return ntohs(addr.sin_port);
}

// Forks `ranks` processes; each runs the exchange as its rank (rank 0 holds the id) and exits 0 iff it ended with
// rank 0's bytes. Non-zero ranks start first, so they really wait for rank 0. Returns how many ranks succeeded.
static int run_exchange(const char* method, int ranks, const char* fs_path, int port) {
    unsigned char id[ID_BYTES];
    for (int i = 0; i < ID_BYTES; i++) { id[i] = (unsigned char)(i * 37 + 11); }
    pid_t pids[8];
    for (int r = ranks - 1; r >= 0; r--) {
        fflush(stdout);
        pids[r] = fork();
        if (pids[r] == 0) {
            ProcessGroupConfig pg;
            memset(&pg, 0, sizeof(pg));
            pg.num_processes = ranks;
            pg.process_rank = r;
            pg.server_port = port;
            snprintf(pg.init_method, sizeof(pg.init_method), "%s", method);
            pg.fs_path = fs_path ? fs_path : "";
            snprintf(pg.server_ip, sizeof(pg.server_ip), "127.0.0.1");
            snprintf(pg.job_key, sizeof(pg.job_key), "test");
            if (r == 0) { usleep(200000); }  // the others are already waiting
            unsigned char got[ID_BYTES];
            if (r == 0) { memcpy(got, id, ID_BYTES); } else { memset(got, 0, ID_BYTES); }
            char err[256];
            int rc = strcmp(method, "fs") == 0 ? exchange_id_fs(got, ID_BYTES, &pg, 10.0, err, sizeof(err))
                                               : exchange_id_tcp(got, ID_BYTES, &pg, 10.0, err, sizeof(err));
            if (rc != 0) { fprintf(stderr, "  rank %d: %s\n", r, err); }
            _exit(rc == 0 && memcmp(got, id, ID_BYTES) == 0 ? 0 : 1);
        }
    }
    int ok = 0;
    for (int r = 0; r < ranks; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return ok;
}

static void test_exchange_fs(void) {
    char dir[] = "/tmp/gptfp8_pg_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    // a stale file from another job must not be read: it has another job key
    char stale[256];
    snprintf(stale, sizeof(stale), "%s/gptfp8_nccl_id_otherjob.bin", dir);
    FILE* f = fopen(stale, "wb");
    CHECK(f && fwrite("garbage-garbage!", 16, 1, f) == 1 && fclose(f) == 0, "stale file");
    CHECK(run_exchange("fs", 4, dir, 0) == 4, "4 ranks through a folder");
    ProcessGroupConfig pg;
    memset(&pg, 0, sizeof(pg));
    pg.fs_path = dir;
    snprintf(pg.job_key, sizeof(pg.job_key), "test");
    char* path = id_file_path(&pg);
    CHECK(access(path, F_OK) == 0, "the id file exists until rank 0 cleans up");
    exchange_id_fs_cleanup(&pg);
    CHECK(access(path, F_OK) != 0, "rank 0 removed it");
    free(path);
    // a rank waiting for a rank 0 that never comes: a clear error after the timeout
    pg.num_processes = 2;
    pg.process_rank = 1;
    unsigned char id[ID_BYTES];
    char err[256] = "";
    CHECK(exchange_id_fs(id, ID_BYTES, &pg, 0.2, err, sizeof(err)) == -1 && strstr(err, "no NCCL id from rank 0"),
          "timeout: %s", err);
    unlink(stale);
    rmdir(dir);
}

static void test_exchange_tcp(void) {
    int port = free_port();
    CHECK(port > 0, "a free port");
    CHECK(run_exchange("tcp", 4, NULL, port) == 4, "4 ranks through TCP on port %d", port);
    ProcessGroupConfig pg;
    memset(&pg, 0, sizeof(pg));
    pg.num_processes = 2;
    pg.process_rank = 1;
    pg.server_port = free_port();
    snprintf(pg.server_ip, sizeof(pg.server_ip), "127.0.0.1");
    unsigned char id[ID_BYTES];
    char err[256] = "";
    CHECK(exchange_id_tcp(id, ID_BYTES, &pg, 0.3, err, sizeof(err)) == -1 && strstr(err, "could not get the NCCL id"),
          "no rank 0: %s", err);
    snprintf(pg.server_ip, sizeof(pg.server_ip), "not-an-ip");
    CHECK(exchange_id_tcp(id, ID_BYTES, &pg, 0.3, err, sizeof(err)) == -1 && strstr(err, "is not an IPv4 address"),
          "bad address: %s", err);
    pg.process_rank = 0;  // rank 0 whose peers never come
    CHECK(exchange_id_tcp(id, ID_BYTES, &pg, 0.3, err, sizeof(err)) == -1 && strstr(err, "only 1 of 2 ranks connected"),
          "rank 0 alone: %s", err);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    RUN_TEST(test_resolve);
    RUN_TEST(test_exchange_fs);
    RUN_TEST(test_exchange_tcp);
    return test_summary("multi-process");
}
