/*
llmc/multi_process.h — the host side of a multi-process run, with no NCCL or CUDA in it (so the CPU tests can run it):
who this process is (rank, number of ranks, which GPU of its node), read from the launcher's environment or flags,
and how the ranks agree on one NCCL unique id before NCCL exists, without MPI:
  - mpirun (OpenMPI): OMPI_COMM_WORLD_SIZE / _RANK / _LOCAL_RANK; the id goes through MPI_Bcast when the trainer
    is built with MPI (llmc/multi_gpu.cuh), else through one of the two ways below;
  - Slurm (srun, no MPI needed): SLURM_NTASKS / SLURM_PROCID / SLURM_LOCALID;
  - by hand: -pn N -pr R [-pg GPUs per node].
  The id exchange without MPI (as llm.c does it):
  - "fs": rank 0 writes the id to a file in a folder every rank sees (-pf, e.g. a shared home on the cluster), the
    others poll for it. The file name carries the Slurm job and step ids, so a file left by a crashed earlier job is
    never read by this one; rank 0 removes the file once every rank has joined.
  - "tcp": rank 0 listens on port GPTFP8_PORT (default 12345), every other rank connects to -ps <rank 0's address>,
    says its rank and receives the id.
*/
#ifndef GPTFP8_MULTI_PROCESS_H
#define GPTFP8_MULTI_PROCESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "utils.h"

#define PROCESS_GROUP_DEFAULT_PORT 12345
#define ID_FILE_MAGIC 0x49383850u  // "P88I"

typedef struct {
    int num_processes, process_rank;
    int local_rank;      // this process's index among the ranks of its node: its GPU
    int gpus_per_node;   // -pg, or 0: unknown (the launcher's local rank is used)
    char init_method[8]; // "mpi", "fs", "tcp", or "" (one process, no NCCL)
    const char* fs_path; // "fs": the shared folder (-pf, as given), or NULL
    char server_ip[64];  // "tcp": rank 0's address
    int server_port;
    char job_key[96];    // names the "fs" id file: Slurm job.step, or "local"
    const char* launcher; // "mpirun", "slurm", "flags" or "single"
} ProcessGroupConfig;

static inline int env_int(const char* name, int* value) {
    const char* s = getenv(name);
    if (!s || !*s) { return 0; }
    char* end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > (1 << 20)) { return -1; }
    *value = (int)v;
    return 1;
}

// Fills pg from the launcher's environment, then the flags (-pn, -pr, -pg, -pi, -pf, -ps: < 0 or NULL when not
// given) override it. Returns 0, or -1 with a one-line reason in err.
static inline int process_group_resolve(ProcessGroupConfig* pg, int flag_num_processes, int flag_rank,
                                        int flag_gpus_per_node, const char* flag_init_method, const char* flag_fs_path,
                                        const char* flag_server_ip, char* err, size_t errlen) {
    memset(pg, 0, sizeof(*pg));
    pg->num_processes = 1;
    pg->launcher = "single";
    pg->server_port = PROCESS_GROUP_DEFAULT_PORT;
    snprintf(pg->job_key, sizeof(pg->job_key), "local");
    int size = 0, rank = 0, local = 0, bad = 0;
    if (env_int("OMPI_COMM_WORLD_SIZE", &size) > 0) {
        bad |= env_int("OMPI_COMM_WORLD_RANK", &rank) < 0 || env_int("OMPI_COMM_WORLD_LOCAL_RANK", &local) < 0;
        pg->launcher = "mpirun";
        snprintf(pg->init_method, sizeof(pg->init_method), "mpi");
    } else if (env_int("SLURM_NTASKS", &size) > 0) {
        bad |= env_int("SLURM_PROCID", &rank) < 0 || env_int("SLURM_LOCALID", &local) < 0;
        pg->launcher = "slurm";
        const char* job = getenv("SLURM_JOB_ID");
        const char* job_step = getenv("SLURM_STEP_ID");
        snprintf(pg->job_key, sizeof(pg->job_key), "%s.%s", job ? job : "0", job_step ? job_step : "0");
    }
    if (bad) {
        snprintf(err, errlen, "the launcher's rank variables (%s) are not integers", pg->launcher);
        return -1;
    }
    if (size > 0) {
        pg->num_processes = size;
        pg->process_rank = rank;
        pg->local_rank = local;
    }
    if (flag_num_processes > 0) { pg->num_processes = flag_num_processes; pg->launcher = "flags"; }
    if (flag_rank >= 0) { pg->process_rank = flag_rank; }
    if (flag_gpus_per_node > 0) { pg->gpus_per_node = flag_gpus_per_node; }
    if (flag_init_method) { snprintf(pg->init_method, sizeof(pg->init_method), "%s", flag_init_method); }
    if (flag_fs_path) { pg->fs_path = flag_fs_path; }
    if (flag_server_ip) { snprintf(pg->server_ip, sizeof(pg->server_ip), "%s", flag_server_ip); }
    const char* port = getenv("GPTFP8_PORT");
    if (port && *port) {
        int p = 0;
        if (env_int("GPTFP8_PORT", &p) <= 0 || p < 1 || p > 65535) {
            snprintf(err, errlen, "GPTFP8_PORT='%s' is not a port number", port);
            return -1;
        }
        pg->server_port = p;
    }
    if (pg->process_rank >= pg->num_processes) {
        snprintf(err, errlen, "process rank %d is not below the number of processes %d", pg->process_rank,
                 pg->num_processes);
        return -1;
    }
    // the GPU of this process: the launcher's local rank, or (by hand) the rank modulo the GPUs per node
    if (size == 0) { pg->local_rank = pg->gpus_per_node > 0 ? pg->process_rank % pg->gpus_per_node : pg->process_rank; }
    if (pg->num_processes > 1 && !pg->init_method[0]) {
        snprintf(err, errlen, "%d processes need -pi fs (with -pf shared/folder) or -pi tcp (with -ps rank0_address)",
                 pg->num_processes);
        return -1;
    }
    if (pg->init_method[0] && strcmp(pg->init_method, "mpi") != 0 && strcmp(pg->init_method, "fs") != 0 &&
        strcmp(pg->init_method, "tcp") != 0) {
        snprintf(err, errlen, "invalid value '%s' for -pi: expected one of mpi, fs, tcp", pg->init_method);
        return -1;
    }
    if (strcmp(pg->init_method, "fs") == 0 && (!pg->fs_path || !pg->fs_path[0])) {
        snprintf(err, errlen, "-pi fs needs -pf: a folder every rank can read and write");
        return -1;
    }
    if (strcmp(pg->init_method, "tcp") == 0 && !pg->server_ip[0] && pg->process_rank != 0) {
        snprintf(err, errlen, "-pi tcp needs -ps: the address rank 0 listens on");
        return -1;
    }
    return 0;
}

static inline double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// (allocated: free it)
static inline char* id_file_path(const ProcessGroupConfig* pg) {
    return alloc_printf("%s/gptfp8_nccl_id_%s.bin", pg->fs_path, pg->job_key);
}

// "fs": rank 0 publishes `bytes` (n of them) atomically, the others wait up to timeout_s for them.
static inline int exchange_id_fs(void* bytes, size_t n, const ProcessGroupConfig* pg, double timeout_s, char* err,
                                 size_t errlen) {
    char* path = id_file_path(pg);
    if (pg->process_rank == 0) {
        char* tmp = alloc_printf("%s.tmp.%ld", path, (long)getpid());
        FILE* f = fopen(tmp, "wb");
        uint32_t header[2] = {ID_FILE_MAGIC, (uint32_t)n};
        int rc = 0;
        if (!f || fwrite(header, sizeof(header), 1, f) != 1 || fwrite(bytes, 1, n, f) != n || fclose(f) != 0 ||
            rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot write the NCCL id to %s: %s", path, strerror(errno));
            rc = -1;
        }
        free(tmp);
        free(path);
        return rc;
    }
    double deadline = wall_seconds() + timeout_s;
    while (wall_seconds() < deadline) {
        FILE* f = fopen(path, "rb");
        if (f) {
            uint32_t header[2];
            int ok = fread(header, sizeof(header), 1, f) == 1 && header[0] == ID_FILE_MAGIC && header[1] == n &&
                     fread(bytes, 1, n, f) == n;
            fclose(f);
            if (ok) {
                free(path);
                return 0;
            }
        }
        usleep(20000);
    }
    snprintf(err, errlen, "rank %d: no NCCL id from rank 0 in %s after %.0f s (is -pf a folder all ranks share?)",
             pg->process_rank, path, timeout_s);
    free(path);
    return -1;
}

// "fs": rank 0 removes the id file once every rank has joined (called after the communicator exists).
static inline void exchange_id_fs_cleanup(const ProcessGroupConfig* pg) {
    if (pg->process_rank != 0) { return; }
    char* path = id_file_path(pg);
    unlink(path);
    free(path);
}

static inline int send_all(int fd, const void* data, size_t n) {
    const char* p = (const char*)data;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) { return -1; }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static inline int recv_all(int fd, void* data, size_t n, double deadline) {
    char* p = (char*)data;
    while (n > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int wait_ms = (int)((deadline - wall_seconds()) * 1000);
        if (wait_ms <= 0 || poll(&pfd, 1, wait_ms) <= 0) { return -1; }
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) { return -1; }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

// "tcp": rank 0 serves `bytes` to the other num_processes - 1 ranks; they connect (retrying while rank 0 starts).
static inline int exchange_id_tcp(void* bytes, size_t n, const ProcessGroupConfig* pg, double timeout_s, char* err,
                                  size_t errlen) {
    double deadline = wall_seconds() + timeout_s;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)pg->server_port);
    if (pg->process_rank == 0) {
        int server = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        if (server < 0 || setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
            bind(server, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(server, 64) != 0) {
            snprintf(err, errlen, "rank 0: cannot listen on port %d: %s (another port: GPTFP8_PORT)", pg->server_port,
                     strerror(errno));
            if (server >= 0) { close(server); }
            return -1;
        }
        for (int joined = 1; joined < pg->num_processes; joined++) {
            struct pollfd pfd = {server, POLLIN, 0};
            int wait_ms = (int)((deadline - wall_seconds()) * 1000);
            int client = -1;
            int32_t their_rank = -1;
            if (wait_ms > 0 && poll(&pfd, 1, wait_ms) > 0) { client = accept(server, NULL, NULL); }
            if (client < 0 || recv_all(client, &their_rank, sizeof(their_rank), deadline) != 0 ||
                send_all(client, bytes, n) != 0) {
                snprintf(err, errlen, "rank 0: only %d of %d ranks connected on port %d within %.0f s", joined,
                         pg->num_processes, pg->server_port, timeout_s);
                if (client >= 0) { close(client); }
                close(server);
                return -1;
            }
            close(client);
        }
        close(server);
        return 0;
    }
    if (inet_pton(AF_INET, pg->server_ip, &addr.sin_addr) != 1) {
        snprintf(err, errlen, "-ps '%s' is not an IPv4 address", pg->server_ip);
        return -1;
    }
    while (wall_seconds() < deadline) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) { break; }
        if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0) {
            int32_t me = pg->process_rank;
            int ok = send_all(fd, &me, sizeof(me)) == 0 && recv_all(fd, bytes, n, deadline) == 0;
            close(fd);
            if (ok) { return 0; }
        } else {
            close(fd);
        }
        usleep(50000);
    }
    snprintf(err, errlen, "rank %d: could not get the NCCL id from %s:%d within %.0f s", pg->process_rank,
             pg->server_ip, pg->server_port, timeout_s);
    return -1;
}

#endif  // GPTFP8_MULTI_PROCESS_H
